"""The attention layers of keras/attention.py (Attention, AdditiveAttention,
MultiHeadAttention) and EinsumDense (keras/einsum_dense.py): values and scores against
NumPy references of dot-product, additive and multi-head scaled dot-product attention
with every kind of mask, gradients against finite differences in float64, errors,
dropout, configs, Sequential and functional models, and traced calls with None
dimensions against eager calls; then tf_keras 2.21's weights, values, scores, gradients,
configs and models (peers)."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras.masks import get_mask, set_mask

L = tf.keras.layers
RNG = np.random.default_rng(7)


def _rand(*shape, dtype=np.float64):
    return RNG.standard_normal(shape).astype(dtype)


def _softmax(x, axes=(-1,)):
    e = np.exp(x - x.max(axis=axes, keepdims=True))
    return e / e.sum(axis=axes, keepdims=True)


def _masked(scores, mask):
    """tf_keras's masking: -1e9 added where the mask is False."""
    return scores if mask is None else scores + (1.0 - mask) * -1e9


def _causal(t, s):
    return np.arange(t)[:, None] >= np.arange(s)[None, :]


# ================================================================ NumPy references
def np_dense_attention(q, v, k=None, q_mask=None, v_mask=None, causal=False, scale=1.0):
    k = v if k is None else k
    scores = scale * q @ np.swapaxes(k, -1, -2)
    mask = None if v_mask is None else v_mask[..., None, :]
    if causal:
        c = _causal(*scores.shape[-2:])
        mask = c if mask is None else mask & c
    weights = _softmax(_masked(scores, mask))
    out = weights @ v
    if q_mask is not None:
        out = out * q_mask[..., None]
    return out, weights


def np_additive_scores(q, k, scale):
    return (scale * np.tanh(q[..., :, None, :] + k[..., None, :, :])).sum(-1)


def np_mha(layer, q, v, k=None, mask=None, form="bt,bs"):
    """Multi-head attention with `layer`'s weights: `form` names the query's and the key's
    attention layout ("bt,bs": one attention axis; "bxt,bxs": the last of two; "btu,bsv":
    both)."""
    k = v if k is None else k
    w = layer.get_weights()
    wq, bq, wk, bk, wv, bv, wo, bo = w if len(w) == 8 else \
        (w[0], 0, w[1], 0, w[2], 0, w[3], 0)
    proj = lambda x, kernel, bias: np.einsum("...d,dnh->...nh", x, kernel) + bias  # noqa: E731
    qp, kp, vp = proj(q, wq, bq) / np.sqrt(wq.shape[-1]), proj(k, wk, bk), proj(v, wv, bv)
    eq, axes = {"bt,bs": ("btnh,bsnh->bnts", (-1,)), "bxt,bxs": ("bxtnh,bxsnh->bxnts", (-1,)),
                "btu,bsv": ("btunh,bsvnh->bntusv", (-2, -1))}[form]
    scores = _softmax(_masked(np.einsum(eq, qp, kp), mask), axes)
    q_side, k_side = eq.split("->")[0].split(",")
    combine = f"{eq.split('->')[1]},{k_side}->{q_side}"
    heads = np.einsum(combine, scores, vp)
    return np.einsum("...nh,nho->...o", heads, wo) + bo, scores


def _weights_like(layer, scale=1.0):
    """Give `layer` float64 weights of unit scale (busier than Glorot's)."""
    layer.set_weights([scale * _rand(*w.shape) for w in layer.get_weights()])


# ================================================================ Attention, AdditiveAttention
DENSE_CASES = [  # (kwargs, call kwargs, masks?)
    ({}, {}, False),
    ({}, {"use_causal_mask": True}, False),
    ({"use_scale": True}, {}, True),
    ({}, {"use_causal_mask": True}, True),
]


@pytest.mark.parametrize("kwargs, call, masks", DENSE_CASES)
def test_attention_against_numpy(kwargs, call, masks):
    layer = L.Attention(dtype="float64", **kwargs)
    q, v, k = _rand(2, 4, 3), _rand(2, 5, 2), _rand(2, 5, 3)
    q_mask = np.array([[1, 1, 0, 1], [1, 0, 1, 1]], bool) if masks else None
    v_mask = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 0]], bool) if masks else None
    extra = {"mask": [tf.constant(q_mask), tf.constant(v_mask)]} if masks else {}
    out, scores = layer([tf.constant(q), tf.constant(v), tf.constant(k)],
                        return_attention_scores=True, **extra, **call)
    if kwargs.get("use_scale"):
        layer.scale.assign(1.7)
        out, scores = layer([tf.constant(q), tf.constant(v), tf.constant(k)],
                            return_attention_scores=True, **extra, **call)
    want, want_scores = np_dense_attention(q, v, k, q_mask, v_mask, call.get("use_causal_mask"),
                                           1.7 if kwargs.get("use_scale") else 1.0)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-12, atol=1e-14)
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-12, atol=1e-14)
    if masks:  # a masked value gets no weight; a masked query gives zeros
        assert np.all(scores.numpy()[np.broadcast_to(~v_mask[:, None, :], scores.shape)] == 0)
        assert np.all(out.numpy()[~q_mask] == 0)
        np.testing.assert_array_equal(get_mask(out).numpy(), q_mask)


def test_attention_concat_and_additive_scores_against_numpy():
    q, v = _rand(2, 3, 4), _rand(2, 5, 4)
    concat = L.Attention(use_scale=True, score_mode="concat", dtype="float64")
    concat([tf.constant(q), tf.constant(v)])
    concat.set_weights([np.array(0.6), np.array(1.3)])
    _, scores = concat([tf.constant(q), tf.constant(v)], return_attention_scores=True)
    raw = 1.3 * np.tanh(0.6 * (q[:, :, None] + v[:, None])).sum(-1)
    np.testing.assert_allclose(scores.numpy(), _softmax(raw), rtol=1e-12)
    additive = L.AdditiveAttention(dtype="float64")
    out, scores = additive([tf.constant(q), tf.constant(v)], return_attention_scores=True)
    scale = additive.scale.numpy()
    assert additive.scale.shape == (4,)
    want = _softmax(np_additive_scores(q, v, scale))
    np.testing.assert_allclose(scores.numpy(), want, rtol=1e-12)
    np.testing.assert_allclose(out.numpy(), want @ v, rtol=1e-12)
    plain = L.AdditiveAttention(use_scale=False, dtype="float64")
    _, scores = plain([tf.constant(q), tf.constant(v)], return_attention_scores=True,
                      use_causal_mask=True)
    np.testing.assert_allclose(scores.numpy(), _softmax(_masked(
        np_additive_scores(q, v, 1.0), _causal(3, 5))), rtol=1e-12, atol=1e-300)
    assert plain.weights == []


def test_dense_attention_of_other_ranks():
    # one query and value sequence without a batch axis, and two batch axes
    for shape_q, shape_v in (((4, 3), (5, 3)), ((2, 3, 4, 3), (1, 3, 5, 3))):
        q, v = _rand(*shape_q), _rand(*shape_v)
        out, scores = L.Attention(dtype="float64")([tf.constant(q), tf.constant(v)],
                                                   return_attention_scores=True,
                                                   use_causal_mask=True)
        want, want_scores = np_dense_attention(q, v, causal=True)
        np.testing.assert_allclose(out.numpy(), want, rtol=1e-12)
        np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-12, atol=1e-300)


def test_dense_attention_masks_from_embeddings():
    ids_q = np.array([[3, 1, 0], [2, 0, 0]])
    ids_v = np.array([[4, 4, 2, 0], [1, 0, 0, 0]])
    emb = L.Embedding(6, 4, mask_zero=True, dtype="float64")
    q, v = emb(tf.constant(ids_q)), emb(tf.constant(ids_v))
    for layer in (L.Attention(dtype="float64"), L.AdditiveAttention(dtype="float64")):
        implicit = layer([q, v])
        explicit = layer([tf.constant(q.numpy()), tf.constant(v.numpy())],
                         mask=[tf.constant(ids_q != 0), tf.constant(ids_v != 0)])
        np.testing.assert_array_equal(implicit.numpy(), explicit.numpy())
        np.testing.assert_array_equal(get_mask(implicit).numpy(), ids_q != 0)


@pytest.mark.parametrize("cls", ["Attention", "AdditiveAttention"])
def test_dense_attention_gradients_against_finite_differences(cls):
    layer = getattr(L, cls)(dtype="float64")
    q, v, k = _rand(2, 3, 4), _rand(2, 5, 4), _rand(2, 5, 4)
    v_mask = tf.constant([[True, True, False, True, True], [True] * 5])
    tf.testing.check_grads(lambda a, b, c: layer([a, b, c], mask=[None, v_mask],
                                                 use_causal_mask=True), [q, v, k], order=2)


def test_dense_attention_dropout_only_while_training():
    layer = L.Attention(dropout=0.5)
    q, v = tf.constant(_rand(2, 6, 3, dtype=np.float32)), tf.constant(_rand(2, 8, 3,
                                                                            dtype=np.float32))
    _, plain = layer([q, v], return_attention_scores=True)
    _, again = layer([q, v], return_attention_scores=True, training=False)
    np.testing.assert_array_equal(plain.numpy(), again.numpy())
    tf.random.set_seed(3)
    _, dropped = layer([q, v], return_attention_scores=True, training=True)
    kept = dropped.numpy() != 0
    assert 0 < kept.mean() < 1
    np.testing.assert_allclose(dropped.numpy()[kept], 2 * plain.numpy()[kept], rtol=1e-6)
    assert L.Attention(dropout=1.0)([q, v], training=True).numpy().max() == 0


# ================================================================ MultiHeadAttention
MHA_CASES = [  # (kwargs, query shape, value shape, form)
    ({"num_heads": 2, "key_dim": 3}, (2, 4, 5), (2, 6, 5), "bt,bs"),
    ({"num_heads": 3, "key_dim": 2, "value_dim": 4, "output_shape": 7}, (2, 4, 5), (2, 3, 6),
     "bt,bs"),
    ({"num_heads": 2, "key_dim": 2, "use_bias": False}, (1, 5, 4), (1, 5, 4), "bt,bs"),
    ({"num_heads": 2, "key_dim": 3, "attention_axes": (2,)}, (2, 3, 4, 5), (2, 3, 6, 5),
     "bxt,bxs"),
    ({"num_heads": 2, "key_dim": 3, "attention_axes": (1, 2)}, (2, 3, 2, 5), (2, 2, 3, 5),
     "btu,bsv"),
]


@pytest.mark.parametrize("kwargs, qshape, vshape, form", MHA_CASES)
def test_multi_head_attention_against_numpy(kwargs, qshape, vshape, form):
    layer = L.MultiHeadAttention(dtype="float64", **kwargs)
    q, v = _rand(*qshape), _rand(*vshape)
    layer(tf.constant(q), tf.constant(v))
    _weights_like(layer, 0.5)
    out, scores = layer(tf.constant(q), tf.constant(v), return_attention_scores=True)
    want, want_scores = np_mha(layer, q, v, form=form)
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), want.reshape(out.shape), rtol=1e-11, atol=1e-13)
    dims = kwargs.get("output_shape", qshape[-1])
    assert out.shape == qshape[:-1] + (dims,)


def test_multi_head_attention_weights_names_and_order():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, value_dim=4, output_shape=(2, 7),
                                 name="mha")
    layer(tf.ones([1, 4, 5]), tf.ones([1, 6, 8]), tf.ones([1, 6, 9]))
    assert [(w.name, tuple(w.shape)) for w in layer.weights] == [
        ("mha/query/kernel:0", (5, 2, 3)), ("mha/query/bias:0", (2, 3)),
        ("mha/key/kernel:0", (9, 2, 3)), ("mha/key/bias:0", (2, 3)),
        ("mha/value/kernel:0", (8, 2, 4)), ("mha/value/bias:0", (2, 4)),
        ("mha/attention_output/kernel:0", (2, 4, 2, 7)),
        ("mha/attention_output/bias:0", (2, 7))]
    assert layer.count_params() == sum(int(np.prod(w.shape)) for w in layer.weights)


MASK_CASES = ["attention_mask", "causal", "implicit", "all"]


@pytest.mark.parametrize("which", MASK_CASES)
def test_multi_head_attention_masks_against_numpy(which):
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, dtype="float64")
    q, v = _rand(2, 4, 5), _rand(2, 6, 5)
    layer(tf.constant(q), tf.constant(v))
    _weights_like(layer, 0.5)
    q_mask = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], bool)
    v_mask = np.array([[1, 0, 1, 1, 1, 1], [1, 1, 1, 0, 0, 1]], bool)
    explicit = RNG.random((2, 4, 6)) > 0.3
    explicit[:, :, 0] = True
    qt, vt = tf.constant(q), tf.constant(v)
    kwargs, mask = {}, np.ones((2, 4, 6), bool)
    if which in ("attention_mask", "all"):
        kwargs["attention_mask"] = tf.constant(explicit)
        mask &= explicit
    if which in ("causal", "all"):
        kwargs["use_causal_mask"] = True
        mask &= _causal(4, 6)
    if which in ("implicit", "all"):
        set_mask(qt, tf.constant(q_mask))
        set_mask(vt, tf.constant(v_mask))
        mask &= q_mask[:, :, None] & v_mask[:, None, :]
    out, scores = layer(qt, vt, return_attention_scores=True, **kwargs)
    want, want_scores = np_mha(layer, q, v, mask=mask[:, None])
    np.testing.assert_allclose(scores.numpy(), want_scores, rtol=1e-11, atol=1e-14)
    np.testing.assert_allclose(out.numpy(), want, rtol=1e-11, atol=1e-13)
    # a row with a key left gives the masked keys no weight
    shape = scores.shape
    masked = ~np.broadcast_to(mask[:, None], shape) & \
        np.broadcast_to(mask.any(-1)[:, None, :, None], shape)
    assert np.all(scores.numpy()[masked] == 0)
    if which in ("implicit", "all"):
        np.testing.assert_array_equal(get_mask(out).numpy(), q_mask)


def test_multi_head_attention_key_mask_and_robust_masking():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=2, softmax_robust_masking=True,
                                 dtype="float64")
    q, v, k = _rand(1, 3, 4), _rand(1, 5, 4), _rand(1, 5, 4)
    kt = tf.constant(k)
    k_mask = np.array([[1, 1, 0, 1, 0]], bool)
    set_mask(kt, tf.constant(k_mask))
    _, scores = layer(tf.constant(q), tf.constant(v), kt, return_attention_scores=True)
    _, want = np_mha(layer, q, v, k, mask=np.broadcast_to(k_mask[:, None, None], (1, 1, 3, 5)))
    np.testing.assert_allclose(scores.numpy(), want, rtol=1e-11, atol=1e-14)
    # a numeric attention mask counts as True above 0.5
    _, soft = layer(tf.constant(q), tf.constant(v), kt, return_attention_scores=True,
                    attention_mask=tf.constant(np.full((1, 3, 5), 0.7)))
    np.testing.assert_allclose(soft.numpy(), scores.numpy(), rtol=1e-14)


def test_multi_head_attention_gradients_against_finite_differences():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    q, v = _rand(2, 3, 4), _rand(2, 4, 4)
    layer(tf.constant(q), tf.constant(v))
    keep = RNG.random((2, 3, 4)) > 0.3
    keep[..., 0] = True  # no row masked whole: -1e9 everywhere defeats finite differences
    mask = tf.constant(keep)
    tf.testing.check_grads(lambda a, b: layer(a, b, attention_mask=mask, use_causal_mask=True),
                           [q, v], order=2)
    weights = layer.trainable_variables
    u = _rand(2, 3, 4)

    def loss():
        out, scores = layer(tf.constant(q), tf.constant(v), attention_mask=mask,
                            return_attention_scores=True)
        return tf.reduce_sum(tf.sin(out) * u) + tf.reduce_sum(scores ** 2)

    with tf.GradientTape() as tape:
        value = loss()
    grads = tape.gradient(value, weights)
    for w, g in zip(weights, grads, strict=True):
        base, eps = w.numpy(), 1e-6
        want = np.zeros_like(base)
        for idx in np.ndindex(base.shape):
            for sign in (1, -1):
                moved = base.copy()
                moved[idx] += sign * eps
                w.assign(moved)
                want[idx] += sign * float(loss()) / (2 * eps)
        w.assign(base)
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-6, atol=1e-8, err_msg=w.name)


def test_multi_head_attention_dropout_and_training():
    layer = L.MultiHeadAttention(num_heads=2, key_dim=3, dropout=0.5)
    q = tf.constant(_rand(2, 5, 4, dtype=np.float32))
    plain = layer(q, q)
    np.testing.assert_array_equal(plain.numpy(), layer(q, q, training=False).numpy())
    tf.random.set_seed(1)
    first = layer(q, q, training=True).numpy()
    tf.random.set_seed(1)
    np.testing.assert_array_equal(first, layer(q, q, training=True).numpy())
    assert not np.allclose(first, plain.numpy())
    # the returned scores are before dropout, as tf_keras's
    _, scores = layer(q, q, training=True, return_attention_scores=True)
    np.testing.assert_allclose(scores.numpy().sum(-1), 1, rtol=1e-6)


def test_self_attention_positional_and_named_arguments():
    layer = L.MultiHeadAttention(2, 3)
    x = tf.constant(_rand(2, 4, 5, dtype=np.float32))
    mask = tf.constant(_causal(4, 4)[None])
    a = layer(x, x, x, mask)
    b = layer(x, value=x, attention_mask=mask)
    np.testing.assert_array_equal(a.numpy(), b.numpy())
    np.testing.assert_array_equal(layer(x, x, use_causal_mask=True).numpy(), a.numpy())


# ================================================================ EinsumDense
EINSUM_CASES = [  # (equation, output_shape, bias_axes, input shape, kernel, bias, out)
    ("ab,bc->ac", 4, "c", (2, 3), (3, 4), (4,), (2, 4)),
    ("abc,cd->abd", (None, 4), "d", (2, 5, 3), (3, 4), (4,), (2, 5, 4)),
    ("abc,cde->abde", (None, 2, 3), "de", (2, 5, 3), (3, 2, 3), (2, 3), (2, 5, 2, 3)),
    ("abc,cde->abde", (3, 4, 6), "be", (2, 3, 5), (5, 4, 6), (3, 1, 6), (2, 3, 4, 6)),
    ("...b,bc->...c", 4, "c", (2, 5, 3), (3, 4), (4,), (2, 5, 4)),
    ("...b,bc->...c", 4, "c", (2, 3, 5, 3), (3, 4), (4,), (2, 3, 5, 4)),
    ("abc...,cd->abd...", (3, 4), "d", (2, 3, 5, 6), (5, 4), (4, 1), (2, 3, 4, 6)),
    ("ab,bc->ac", 4, None, (2, 3), (3, 4), None, (2, 4)),
]


@pytest.mark.parametrize("eq, out_shape, bias_axes, shape, kshape, bshape, oshape", EINSUM_CASES)
def test_einsum_dense_against_numpy(eq, out_shape, bias_axes, shape, kshape, bshape, oshape):
    layer = L.EinsumDense(eq, out_shape, bias_axes=bias_axes, activation="tanh",
                          dtype="float64")
    x = _rand(*shape)
    y = layer(tf.constant(x))
    assert tuple(layer.kernel.shape) == kshape
    assert (layer.bias is None and bshape is None) or tuple(layer.bias.shape) == bshape
    _weights_like(layer)
    bias = 0 if layer.bias is None else layer.bias.numpy()
    y = layer(tf.constant(x))
    np.testing.assert_allclose(y.numpy(), np.tanh(np.einsum(eq, x, layer.kernel.numpy()) + bias),
                               rtol=1e-12)
    assert y.shape == oshape == tuple(layer.compute_output_shape(shape))
    tf.testing.check_grads(lambda u: layer(u), [x])
    again = L.deserialize(L.serialize(layer))
    assert again.get_config() == layer.get_config()
    again.set_weights(layer.get_weights())
    np.testing.assert_array_equal(again(tf.constant(x)).numpy(), y.numpy())


def test_einsum_dense_in_sequential_and_functional_models():
    x = _rand(3, 4, 5, dtype=np.float32)
    model = tf.keras.Sequential([
        L.EinsumDense("abc,cd->abd", (None, 6), bias_axes="d", activation="relu",
                      input_shape=(4, 5)),
        L.EinsumDense("abc,cd->abd", (None, 2), bias_axes="d")])
    inputs = tf.keras.Input((None, 5))
    functional = tf.keras.Model(inputs, model.layers[1](model.layers[0](inputs)))
    np.testing.assert_array_equal(model(x).numpy(), functional(x).numpy())
    assert functional.outputs[0].shape == (None, None, 2)
    clone = tf.keras.Sequential.from_config(model.get_config())
    clone.set_weights(model.get_weights())
    np.testing.assert_array_equal(clone(x).numpy(), model(x).numpy())


# ================================================================ models
class TransformerBlock(L.Layer):
    """The Keras guides' transformer block with residual connections and no layer
    normalization: self-attention, then a two-layer feed-forward network."""

    def __init__(self, dim, heads, hidden, causal=False, **kwargs):
        super().__init__(**kwargs)
        self.att = L.MultiHeadAttention(num_heads=heads, key_dim=dim // heads)
        self.hidden = L.Dense(hidden, activation="relu")
        self.out = L.Dense(dim)
        self.causal = causal

    def call(self, x, training=None):
        x = x + self.att(x, x, use_causal_mask=self.causal, training=training)
        return x + self.out(self.hidden(x))


def test_transformer_block_in_sequential_and_functional_models_trains():
    tf.random.set_seed(0)
    ids = RNG.integers(1, 20, (16, 6))
    ids[:, 4:] = 0
    labels = (ids[:, 0] > 10).astype(np.float32)
    model = tf.keras.Sequential([L.Embedding(20, 8, mask_zero=True), TransformerBlock(8, 2, 16),
                                 L.GlobalAveragePooling1D(), L.Dense(1, activation="sigmoid")])
    model.compile(optimizer="adam", loss="binary_crossentropy")
    history = model.fit(ids, labels, epochs=8, batch_size=8, verbose=0)
    assert history.history["loss"][-1] < history.history["loss"][0]
    inputs = tf.keras.Input((None,), dtype="int32")
    outputs = model.layers[3](model.layers[2](model.layers[1](model.layers[0](inputs))))
    functional = tf.keras.Model(inputs, outputs)
    np.testing.assert_allclose(functional(ids).numpy(), model(ids).numpy(), rtol=1e-6)


def test_functional_model_config_round_trip():
    q_in, v_in = tf.keras.Input((None, 6), name="q"), tf.keras.Input((5, 6), name="v")
    mha = L.MultiHeadAttention(num_heads=2, key_dim=4, name="mha")
    out, scores = mha(q_in, v_in, return_attention_scores=True, use_causal_mask=True)
    out = L.Attention(name="att")([out, v_in])
    model = tf.keras.Model([q_in, v_in], [out, scores])
    assert mha.get_config()["query_shape"] == [None, None, 6]
    config = model.get_config()
    node = [e for e in config["layers"] if e["name"] == "mha"][0]["inbound_nodes"][0][0]
    assert node[:3] == ["q", 0, 0] and node[3]["value"] == ["v", 0, 0]
    clone = tf.keras.Model.from_config(json.loads(json.dumps(config)))
    clone.set_weights(model.get_weights())
    q, v = _rand(2, 3, 6, dtype=np.float32), _rand(2, 5, 6, dtype=np.float32)
    outs = model([q, v])
    for a, b in zip(outs, clone([q, v]), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    assert outs[0].shape == (2, 3, 6) and outs[1].shape == (2, 2, 3, 5)
    assert [t.shape for t in model.outputs] == [(None, None, 6), (None, 2, None, 5)]


def test_configs_round_trip():
    layers = [L.Attention(use_scale=True, score_mode="concat", dropout=0.25),
              L.AdditiveAttention(use_scale=False, dropout=0.1),
              L.MultiHeadAttention(4, 8, value_dim=3, dropout=0.1, use_bias=False,
                                   output_shape=(2, 3), attention_axes=1,
                                   kernel_initializer="he_normal",
                                   softmax_robust_masking=True)]
    for layer in layers:
        config = layer.get_config()
        assert type(layer).from_config(config).get_config() == config
        assert L.deserialize(L.serialize(layer)).get_config() == config
    assert layers[2].get_config()["attention_axes"] == (1,)
    mha = L.MultiHeadAttention(2, 3)
    mha(tf.ones([2, 4, 5]), tf.ones([2, 6, 7]))
    again = L.deserialize(json.loads(json.dumps(L.serialize(mha))))
    assert [w.shape for w in again.weights] == [w.shape for w in mha.weights]
    again.set_weights(mha.get_weights())
    x, y = tf.constant(_rand(1, 3, 5, dtype=np.float32)), tf.constant(_rand(1, 2, 7,
                                                                          dtype=np.float32))
    np.testing.assert_array_equal(again(x, y).numpy(), mha(x, y).numpy())
    assert mha.compute_output_shape((None, 4, 5), (None, 6, 5)) == (None, 4, 5)
    assert L.MultiHeadAttention(2, 3, output_shape=(2, 7)).compute_output_shape(
        (None, 4, 5), (None, 6, 5)) == (None, 4, 2, 7)
    assert L.Attention().compute_output_shape([(None, 4, 5), (None, 6, 3)]) == (None, 4, 3)


def test_model_file_round_trip(tmp_path):
    pytest.importorskip("h5py")
    q_in, v_in = tf.keras.Input((None, 6)), tf.keras.Input((5, 6))
    out = L.MultiHeadAttention(2, 4)(q_in, v_in, use_causal_mask=True)
    out = L.EinsumDense("abc,cd->abd", (None, 3), bias_axes="d")(out)
    out = L.AdditiveAttention()([out, L.Dense(3)(v_in)])
    model = tf.keras.Model([q_in, v_in], out)
    q, v = _rand(2, 3, 6, dtype=np.float32), _rand(2, 5, 6, dtype=np.float32)
    model.save(tmp_path / "model.h5")
    again = tf.keras.models.load_model(tmp_path / "model.h5")
    np.testing.assert_array_equal(again([q, v]).numpy(), model([q, v]).numpy())


# ================================================================ traced calls
def test_traced_calls_with_none_dimensions_give_eager_values():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3)
    att = L.Attention(use_scale=True)
    add = L.AdditiveAttention()
    spec = tf.TensorSpec([None, None, 4], tf.float32)
    mask_spec = tf.TensorSpec([None, None], tf.bool)

    def run(q, v, v_mask):
        a = mha(q, v, use_causal_mask=True)
        b = att([q, v], mask=[None, v_mask], use_causal_mask=True)
        c = add([q, v], mask=[None, v_mask])
        return a, b, c

    traced = tf.function(run, input_signature=[spec, tf.TensorSpec([None, None, 4], tf.float32),
                                               mask_spec])
    for batch, t, s in [(2, 3, 5), (1, 1, 1), (3, 4, 2), (2, 7, 6), (4, 5, 9)]:
        q = tf.constant(_rand(batch, t, 4, dtype=np.float32))
        v = tf.constant(_rand(batch, s, 4, dtype=np.float32))
        v_mask = tf.constant(np.concatenate([np.ones((batch, 1), bool),
                                             RNG.random((batch, s - 1)) > 0.4], 1))
        for got, want in zip(traced(q, v, v_mask), run(q, v, v_mask)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    # one graph serves every size (sizes of 1 trace apart: they broadcast), the causal
    # mask included
    assert traced.experimental_get_tracing_count() <= 3


def test_compiled_calls_give_eager_values():
    pytest.importorskip("jax")
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, attention_axes=(1, 2))
    x = tf.constant(_rand(2, 3, 4, 5, dtype=np.float32))
    mha(x, x)
    compiled = tf.function(lambda u: mha(u, u, return_attention_scores=True), jit_compile=True)
    for got, want in zip(compiled(x), mha(x, x, return_attention_scores=True)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_small_sizes_and_dtypes():
    mha = L.MultiHeadAttention(num_heads=1, key_dim=1)
    assert mha(tf.ones([0, 3, 2]), tf.ones([0, 4, 2])).shape == (0, 3, 2)
    assert mha(tf.ones([2, 1, 2]), tf.ones([2, 1, 2])).shape == (2, 1, 2)
    for dtype in ("float16", "bfloat16", "float64"):
        x = tf.constant(_rand(2, 3, 4), dtype=dtype)
        calls = ((L.MultiHeadAttention(2, 2, dtype=dtype),
                  lambda f: f(x, x, use_causal_mask=True)),
                 (L.Attention(dtype=dtype), lambda f: f([x, x], use_causal_mask=True)),
                 (L.AdditiveAttention(dtype=dtype), lambda f: f([x, x])),
                 (L.EinsumDense("abc,cd->abd", (None, 3), dtype=dtype), lambda f: f(x)))
        for layer, call in calls:
            out = call(layer)
            assert out.dtype == tf.as_dtype(dtype)
            assert np.all(np.isfinite(out.numpy().astype(np.float64)))
    # float64 inputs to a float32 layer are cast, as tf_keras
    assert L.MultiHeadAttention(2, 2)(tf.ones([1, 2, 3], tf.float64),
                                      tf.ones([1, 2, 3], tf.float64)).dtype == tf.float32


def test_vmap_over_examples():
    mha = L.MultiHeadAttention(num_heads=2, key_dim=2, dtype="float64")
    x = _rand(3, 4, 5)
    mha(tf.constant(x), tf.constant(x))
    batched = tf.vectorized_map(lambda u: mha(u[None], u[None])[0], tf.constant(x))
    np.testing.assert_allclose(batched.numpy(), mha(tf.constant(x), tf.constant(x)).numpy(),
                               rtol=1e-12)


# ================================================================ errors
def test_dense_attention_errors():
    x, y = tf.ones([1, 2, 3]), tf.ones([1, 4, 3])
    with pytest.raises(ValueError, match="must be called on a list of inputs"):
        L.Attention()(x)
    with pytest.raises(ValueError, match="must be called on a list of inputs"):
        L.AdditiveAttention()((x, y))
    with pytest.raises(ValueError, match="length 2 or 3"):
        L.Attention()([x, y, y, y])
    with pytest.raises(ValueError, match="mask must be a list, namely"):
        L.Attention()([x, y], mask=(None, tf.ones([1, 4], tf.bool)))
    with pytest.raises(ValueError, match="list of length 2"):
        L.Attention()([x, y], mask=[tf.ones([1, 4], tf.bool)])
    with pytest.raises(ValueError, match="score_mode=foo"):
        L.Attention(score_mode="foo")
    with pytest.raises(ValueError, match="dropout"):
        L.Attention(dropout=1.5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"last dimension \(3\).*\(5\)"):
        L.Attention()([x, tf.ones([1, 4, 5])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="as many steps"):
        L.Attention()([x, y, tf.ones([1, 5, 3])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="do not broadcast"):
        L.Attention()([tf.ones([2, 2, 3]), tf.ones([3, 4, 3])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 2"):
        L.Attention()([tf.ones([3]), tf.ones([3])])
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be floating"):
        L.Attention()([tf.ones([1, 2, 3], tf.int32), tf.ones([1, 4, 3], tf.int32)])
    with pytest.raises(tf.errors.InvalidArgumentError, match="value mask must be bool"):
        L.Attention()([x, y], mask=[None, tf.ones([1, 4])])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"it must be \[batch, Tv\]"):
        L.Attention()([x, y], mask=[None, tf.ones([1, 5], tf.bool)])
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"it must be \[batch, Tq\]"):
        L.Attention()([x, y], mask=[tf.ones([1, 3], tf.bool), None])
    additive = L.AdditiveAttention()
    additive([x, y])
    with pytest.raises(tf.errors.InvalidArgumentError, match="`scale` has 3 entries"):
        additive([tf.ones([1, 2, 4]), tf.ones([1, 4, 4])])
    with pytest.warns(UserWarning, match="`causal` argument is deprecated"):
        causal = L.Attention(causal=True)
    np.testing.assert_array_equal(causal([x, y]).numpy(),
                                  L.Attention()([x, y], use_causal_mask=True).numpy())


def test_multi_head_attention_errors():
    x = tf.ones([1, 2, 3])
    for kwargs, match in (({"num_heads": 0, "key_dim": 2}, "num_heads"),
                          ({"num_heads": 2, "key_dim": -1}, "key_dim"),
                          ({"num_heads": 2, "key_dim": 2, "dropout": -0.1}, "dropout"),
                          ({"num_heads": 2, "key_dim": 2, "kernel_regularizer": "l3"},
                           "Unknown regularizer")):
        with pytest.raises(ValueError, match=match):
            L.MultiHeadAttention(**kwargs)
    with pytest.raises(ValueError, match="needs rank >= 3"):
        L.MultiHeadAttention(2, 3)(tf.ones([2, 3]), tf.ones([2, 3]))
    for axes in ((3,), (-2,), (2,), (1, 1)):
        with pytest.raises(ValueError, match="attention_axes"):
            L.MultiHeadAttention(2, 3, attention_axes=axes)(x, x)
    with pytest.raises(ValueError, match="same rank"):
        L.MultiHeadAttention(2, 3)(x, tf.ones([1, 2, 2, 3]))
    with pytest.raises(TypeError, match="'value'"):
        L.MultiHeadAttention(2, 3)(x)
    with pytest.raises(TypeError, match="multiple values"):
        L.MultiHeadAttention(2, 3)(x, x, value=x)
    layer = L.MultiHeadAttention(2, 3)
    layer(x, tf.ones([1, 4, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="same shape but for their last"):
        layer(x, tf.ones([1, 4, 3]), tf.ones([1, 6, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="agree on axis 0"):
        layer(tf.ones([2, 2, 3]), tf.ones([3, 4, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="input axis 2"):
        layer(x, tf.ones([1, 4, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank 3, as when"):
        layer(tf.ones([1, 2, 2, 3]), tf.ones([1, 2, 2, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError,
                       match=r"attention mask of shape \(1, 3, 4\)"):
        layer(x, tf.ones([1, 4, 3]), attention_mask=tf.ones([1, 3, 4], tf.bool))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"attention mask of shape \(4,\)"):
        layer(x, tf.ones([1, 4, 3]), attention_mask=tf.ones([4], tf.bool))
    q = tf.ones([1, 2, 3])
    set_mask(q, tf.ones([1, 5], tf.bool))
    with pytest.raises(tf.errors.InvalidArgumentError, match=r"query's mask has shape \(1, 5\)"):
        layer(q, tf.ones([1, 4, 3]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be floating"):
        L.MultiHeadAttention(2, 3)(tf.ones([1, 2, 3], tf.int32), tf.ones([1, 2, 3], tf.int32))


def test_einsum_dense_errors():
    x = tf.ones([2, 3])
    with pytest.raises(ValueError, match="Invalid einsum equation 'ab->b'"):
        L.EinsumDense("ab->b", 3)
    with pytest.raises(ValueError, match="do not match at shared dimension 'b'"):
        L.EinsumDense("abc,cd->abd", (4, 5))(tf.ones([2, 3, 3]))
    with pytest.raises(ValueError, match="Bias dimension 'b' was requested"):
        L.EinsumDense("ab,bc->ac", 4, bias_axes="b")(x)
    with pytest.raises(ValueError, match="Weight dimension 'd' did not have a match"):
        L.EinsumDense("ab,bcd->ac", 4)(x)
    with pytest.raises(ValueError, match="Dimension 'd' was specified in the output"):
        L.EinsumDense("ab,bc->acd", (4, 5))(x)
    with pytest.raises(ValueError, match="must give 1 size"):
        L.EinsumDense("ab,bc->ac", (4, 5))(x)
    with pytest.raises(ValueError, match="takes inputs of rank 2"):
        L.EinsumDense("ab,bc->ac", 4)(tf.ones([2, 3, 4]))
    with pytest.raises(ValueError, match="unknown size"):
        L.EinsumDense("ab,bc->ac", 4).build((None, None))
    with pytest.raises(ValueError, match="output_shape"):
        L.EinsumDense("ab,bc->ac", "four")
    layer = L.EinsumDense("ab,bc->ac", 4)
    layer(x)
    with pytest.raises(tf.errors.InvalidArgumentError, match="input axis 1 .* has size 5"):
        layer(tf.ones([2, 5]))
    with pytest.raises(tf.errors.InvalidArgumentError, match="must be floating"):
        layer(tf.ones([2, 3], tf.int32))
    with pytest.raises(ValueError, match="Unknown constraint"):
        L.EinsumDense("ab,bc->ac", 4, bias_constraint="non_negative")


def test_regularizers_reach_every_projection():
    """As tf_keras: MultiHeadAttention hands its regularizers and constraints to the four
    projections, whose penalties are its losses."""
    x = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)
    mha = L.MultiHeadAttention(2, 3, kernel_regularizer=tf.keras.regularizers.L2(0.5),
                               bias_regularizer="l1", bias_initializer="ones")
    mha(x, x)
    kernels = [mha._query_dense, mha._key_dense, mha._value_dense, mha._output_dense]
    want = [w for d in kernels for w in (0.5 * np.sum(d.kernel.numpy() ** 2),
                                          np.float32(0.01) * d.bias.numpy().size)]
    np.testing.assert_allclose(sorted(float(v) for v in mha.losses), sorted(want), rtol=1e-5)
    config = mha.get_config()
    assert L.MultiHeadAttention.from_config(config).get_config() == config
    # the activity penalty is the attention's output's alone (tf_keras's EinsumDense keeps
    # the argument in its config only)
    act = L.MultiHeadAttention(2, 3, activity_regularizer=tf.keras.regularizers.L1(0.1))
    y = act(x, x)
    np.testing.assert_allclose([float(v) for v in act.losses],
                               [np.float32(0.1) * np.abs(y.numpy()).sum() / 2], rtol=1e-5)
    dense = L.EinsumDense("ab,bc->ac", 4, bias_axes="c", kernel_regularizer="l1",
                          activity_regularizer="l2")
    dense(x[:, 0])
    assert len(dense.losses) == 1 and dense.get_config()["activity_regularizer"] is not None


# ================================================================ tf_keras (peers)
def _tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    return pytest.importorskip("tensorflow"), pytest.importorskip("tf_keras")


def _same_config(mine, theirs):
    def plain(v):
        if isinstance(v, (list, tuple)) or type(v).__name__ in ("TensorShape", "ListWrapper"):
            return [plain(x) for x in (v.as_list() if hasattr(v, "as_list") else v)]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v
    assert set(mine) == set(theirs), set(mine) ^ set(theirs)
    for key in set(mine) - {"name"}:
        assert plain(mine[key]) == plain(theirs[key]), (key, mine[key], theirs[key])


def _compare(ours, theirs, call, arrays, masks=None, rtol=1e-10, atol=1e-12):
    """Run `call(layer, lib, tensors)` in both libraries on `arrays` (masks by index set on
    the tensors), with copied weights: outputs, and gradients of one loss w.r.t. the inputs
    and the weights."""
    real, _ = _tf_keras()
    results = []
    for lib, layer in ((tf, ours), (real, theirs)):
        tensors = [lib.constant(a) for a in arrays]
        for i, m in (masks or {}).items():
            if lib is tf:
                set_mask(tensors[i], tf.constant(m))
            else:
                tensors[i]._keras_mask = real.constant(m)
        with lib.GradientTape() as tape:
            for t in tensors:
                tape.watch(t)
            outs = call(layer, lib, tensors)
            outs = list(outs) if isinstance(outs, (list, tuple)) else [outs]
            loss = sum(lib.reduce_sum(lib.sin(3 * o) * (k + 1)) for k, o in enumerate(outs))
        grads = tape.gradient(loss, tensors + list(layer.trainable_weights))
        results.append(([o.numpy() for o in outs],
                        [None if g is None else g.numpy() for g in grads]))
    (o1, g1), (o2, g2) = results
    for a, b in zip(o1, o2, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)
    for a, b in zip(g1, g2, strict=True):
        if a is None or b is None:
            assert a is None or not np.any(a), "a gradient tf_keras has as None"
            continue
        np.testing.assert_allclose(a, b, rtol=rtol, atol=atol)


def _copy_weights(ours, theirs):
    assert [(w.name, tuple(w.shape)) for w in ours.weights] == \
        [(w.name, tuple(w.shape)) for w in theirs.weights]
    values = [0.7 * _rand(*w.shape) for w in theirs.get_weights()]
    theirs.set_weights(values)
    ours.set_weights(theirs.get_weights())


PEER_MHA = [  # (kwargs, shapes [q, v(, k)], call kwargs, masks by input index)
    ({"num_heads": 2, "key_dim": 3}, [(2, 4, 5), (2, 6, 5)], {}, None),
    ({"num_heads": 2, "key_dim": 3}, [(2, 4, 5), (2, 6, 5)], {"use_causal_mask": True}, None),
    ({"num_heads": 3, "key_dim": 2, "value_dim": 4, "output_shape": (2, 3)},
     [(2, 4, 5), (2, 3, 7), (2, 3, 6)], {}, None),
    ({"num_heads": 2, "key_dim": 2, "use_bias": False}, [(2, 5, 4), (2, 5, 4)],
     {"attention_mask": "random"}, None),
    ({"num_heads": 2, "key_dim": 3}, [(2, 4, 5), (2, 6, 5)], {"use_causal_mask": True},
     {0: [[1, 1, 1, 0], [1, 1, 0, 0]], 1: [[1, 0, 1, 1, 1, 1], [1, 1, 1, 0, 0, 1]]}),
    ({"num_heads": 2, "key_dim": 3, "softmax_robust_masking": True}, [(2, 4, 5), (2, 6, 5)],
     {"attention_mask": "random"}, {1: [[1, 0, 1, 1, 1, 1], [1, 1, 1, 0, 0, 1]]}),
    ({"num_heads": 2, "key_dim": 3, "attention_axes": (2,)}, [(2, 3, 4, 5), (2, 3, 6, 5)], {},
     None),
    ({"num_heads": 2, "key_dim": 3, "attention_axes": (1, 2)}, [(2, 3, 2, 5), (2, 2, 3, 5)],
     {}, None),
]


@pytest.mark.peers
@pytest.mark.parametrize("kwargs, shapes, call_kwargs, masks", PEER_MHA,
                         ids=lambda c: str(c)[:50])
def test_multi_head_attention_against_tf_keras(kwargs, shapes, call_kwargs, masks):
    real, keras = _tf_keras()
    arrays = [_rand(*s) for s in shapes]
    kwargs = dict(kwargs, dtype="float64")
    ours, theirs = L.MultiHeadAttention(**kwargs), keras.layers.MultiHeadAttention(**kwargs)
    ours(*[tf.constant(a) for a in arrays])
    theirs(*[real.constant(a) for a in arrays])
    _copy_weights(ours, theirs)
    _same_config(ours.get_config(), theirs.get_config())
    extra = dict(call_kwargs)
    if extra.get("attention_mask") == "random":
        m = RNG.random(shapes[0][:-1] + shapes[1][1:-1]) > 0.3
        m[..., 0] = True
    masks = {i: np.array(m, bool) for i, m in (masks or {}).items()}

    def call(layer, lib, tensors):
        kw = dict(extra)
        if kw.get("attention_mask") == "random":
            kw["attention_mask"] = lib.constant(m)
        out, scores = layer(*tensors, return_attention_scores=True, **kw)
        if lib is tf and 0 in masks:
            np.testing.assert_array_equal(get_mask(out).numpy(), masks[0])
        return out, scores

    _compare(ours, theirs, call, arrays, masks)


PEER_DENSE = [  # (class, kwargs, call kwargs, masks, with key)
    ("Attention", {}, {}, False, False),
    ("Attention", {"use_scale": True}, {"use_causal_mask": True}, True, True),
    ("Attention", {"use_scale": True, "score_mode": "concat"}, {}, True, False),
    ("Attention", {"score_mode": "concat"}, {"use_causal_mask": True}, False, True),
    ("AdditiveAttention", {}, {}, True, False),
    ("AdditiveAttention", {"use_scale": False}, {"use_causal_mask": True}, True, True),
]


@pytest.mark.peers
@pytest.mark.parametrize("cls, kwargs, call_kwargs, masks, with_key", PEER_DENSE,
                         ids=lambda c: str(c)[:40])
def test_dense_attention_against_tf_keras(cls, kwargs, call_kwargs, masks, with_key):
    real, keras = _tf_keras()
    arrays = [_rand(2, 4, 3), _rand(2, 5, 3)]
    if with_key:
        arrays.append(_rand(2, 5, 3))
    kwargs = dict(kwargs, dtype="float64")
    ours, theirs = getattr(L, cls)(**kwargs), getattr(keras.layers, cls)(**kwargs)
    ours([tf.constant(a) for a in arrays])
    theirs([real.constant(a) for a in arrays])
    if ours.weights:
        _copy_weights(ours, theirs)
    _same_config(ours.get_config(), theirs.get_config())
    q_mask = np.array([[1, 1, 0, 1], [1, 0, 1, 1]], bool)
    v_mask = np.array([[1, 0, 1, 1, 0], [1, 1, 1, 1, 0]], bool)

    def call(layer, lib, tensors):
        kw = dict(call_kwargs)
        if masks:
            kw["mask"] = [lib.constant(q_mask), lib.constant(v_mask)]
        out, scores = layer(tensors, return_attention_scores=True, **kw)
        return out, scores

    _compare(ours, theirs, call, arrays)
    if masks:  # the same masks carried by the inputs
        def implicit(layer, lib, tensors):
            return layer(tensors, return_attention_scores=True, **call_kwargs)
        _compare(ours, theirs, implicit, arrays, {0: q_mask, 1: v_mask})


@pytest.mark.peers
@pytest.mark.parametrize("eq, out_shape, bias_axes, shape, kshape, bshape, oshape", EINSUM_CASES)
def test_einsum_dense_against_tf_keras(eq, out_shape, bias_axes, shape, kshape, bshape, oshape):
    real, keras = _tf_keras()
    kwargs = {"activation": "relu", "bias_axes": bias_axes, "dtype": "float64"}
    ours, theirs = L.EinsumDense(eq, out_shape, **kwargs), \
        keras.layers.EinsumDense(eq, out_shape, **kwargs)
    x = _rand(*shape)
    ours(tf.constant(x))
    theirs(real.constant(x))
    _copy_weights(ours, theirs)
    _same_config(ours.get_config(), theirs.get_config())
    _compare(ours, theirs, lambda layer, lib, t: layer(t[0]), [x])
    # tf_keras's rule gives the shape it built for, None where the output takes an input's
    # size (and, for three or more axes before "...", those axes reversed): ours gives the
    # output's shape
    assert tuple(ours.compute_output_shape(shape)) == tuple(theirs(real.constant(x)).shape)


@pytest.mark.peers
def test_configs_from_tf_keras_build_the_same_layers():
    real, keras = _tf_keras()
    theirs = keras.layers.MultiHeadAttention(num_heads=2, key_dim=4, value_dim=3,
                                             attention_axes=(1, 2), output_shape=6)
    q, v = _rand(2, 3, 2, 5, dtype=np.float32), _rand(2, 4, 3, 7, dtype=np.float32)
    theirs(real.constant(q), real.constant(v))
    ours = L.deserialize(json.loads(json.dumps(keras.layers.serialize(theirs))))
    assert [(w.name.split("/", 1)[1], tuple(w.shape)) for w in ours.weights] == \
        [(w.name.split("/", 1)[1], tuple(w.shape)) for w in theirs.weights]
    ours.set_weights(theirs.get_weights())
    np.testing.assert_allclose(ours(tf.constant(q), tf.constant(v)).numpy(),
                               theirs(real.constant(q), real.constant(v)).numpy(),
                               rtol=1e-5, atol=1e-6)
    _same_config(ours.get_config(), theirs.get_config())
    for shapes in (((None, 4, 5), (None, 6, 5)), ((2, 3, 2, 5), (2, 4, 3, 5), (2, 4, 3, 7))):
        assert tuple(ours.compute_output_shape(*shapes)) == \
            tuple(theirs.compute_output_shape(*shapes))
    for cls, kwargs in (("Attention", {"use_scale": True, "score_mode": "concat",
                                       "dropout": 0.2}),
                        ("AdditiveAttention", {"use_scale": False}),
                        ("EinsumDense", {"equation": "abc,cd->abd", "output_shape": (None, 4),
                                         "bias_axes": "d", "activation": "tanh"})):
        config = json.loads(json.dumps(getattr(keras.layers, cls)(**kwargs).get_config()))
        _same_config(getattr(L, cls).from_config(config).get_config(), config)


@pytest.mark.peers
def test_transformer_model_against_tf_keras():
    real, keras = _tf_keras()

    def build(k, lib):
        ids = k.Input((None,), dtype="int32")
        x = k.layers.Embedding(30, 8, mask_zero=True)(ids)
        att = k.layers.MultiHeadAttention(num_heads=2, key_dim=4)(x, x, use_causal_mask=True)
        x = k.layers.Add()([x, att])
        x = k.layers.Add()([x, k.layers.Dense(8)(k.layers.Dense(16, activation="relu")(x))])
        return k.Model(ids, k.layers.Dense(3)(x))

    ours, theirs = build(tf.keras, tf), build(keras, real)
    theirs.set_weights([0.5 * _rand(*w.shape, dtype=np.float32) for w in theirs.get_weights()])
    ours.set_weights(theirs.get_weights())
    ids = RNG.integers(1, 30, (4, 7))
    ids[:, 5:] = 0
    ids[1, 3:] = 0
    results = []
    for lib, model in ((tf, ours), (real, theirs)):
        with lib.GradientTape() as tape:
            y = model(lib.constant(ids))
            loss = lib.reduce_sum(lib.sin(y))
        results.append((y.numpy(), [g.numpy() if not hasattr(g, "values") else
                                    lib.convert_to_tensor(g).numpy()
                                    for g in tape.gradient(loss, model.trainable_variables)]))
    np.testing.assert_allclose(results[0][0], results[1][0], rtol=1e-5, atol=1e-6)
    for a, b in zip(results[0][1], results[1][1], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)
    mine = [e for e in ours.get_config()["layers"] if e["class_name"] == "MultiHeadAttention"]
    yours = [e for e in theirs.get_config()["layers"]
             if e["class_name"] == "MultiHeadAttention"]
    assert json.loads(json.dumps(mine[0]["inbound_nodes"])) == \
        json.loads(json.dumps(yours[0]["inbound_nodes"]))


def test_a_keras_file_keeps_the_attention_projections(tmp_path):
    """The projections are private attributes (`_query_dense`, ...), as in tf_keras, whose
    .keras files store them under those names: a reload must not make fresh ones."""
    inputs = tf.keras.Input((5, 8))
    out = tf.keras.layers.MultiHeadAttention(2, 4)(inputs, inputs)
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(3)(out))
    x = np.random.default_rng(0).standard_normal((2, 5, 8)).astype(np.float32)
    model.save(tmp_path / "mha.keras")
    again = tf.keras.models.load_model(tmp_path / "mha.keras")
    np.testing.assert_array_equal(again(x).numpy(), model(x).numpy())
    for a, b in zip(again.get_weights(), model.get_weights(), strict=True):
        np.testing.assert_array_equal(a, b)


@pytest.mark.peers
def test_regularized_attention_losses_against_tf_keras():
    real, keras = _tf_keras()
    x = np.random.default_rng(0).standard_normal((2, 4, 5)).astype(np.float32)

    def losses(k, t):
        mha = k.layers.MultiHeadAttention(
            2, 3, kernel_regularizer=k.regularizers.L2(0.5), bias_regularizer="l1",
            activity_regularizer=k.regularizers.L1(0.1),
            kernel_initializer=k.initializers.Constant(0.1), bias_initializer="ones")
        mha(t(x), t(x))
        return sorted(float(v) for v in mha.losses), mha.get_config()

    (ours, mine), (theirs, yours) = losses(tf.keras, tf.constant), losses(keras, real.constant)
    np.testing.assert_allclose(ours, theirs, rtol=1e-5)
    for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer"):
        assert mine[key] == yours[key]
