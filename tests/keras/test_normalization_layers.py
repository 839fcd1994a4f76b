"""LayerNormalization, UnitNormalization and GroupNormalization (keras/normalization.py):
values against NumPy, gradients against finite differences (and the float32 fused path
against the float64 one), weights, configs, models, masks, traces with a None batch
size, half precision, errors, and tf_keras's values, gradients, weights and configs
(peers). BatchNormalization's regularizers and constraints too."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import normalization
from tapeflow.keras.normalization import GroupNormalization, LayerNormalization, UnitNormalization

CLASSES = {"LayerNormalization": LayerNormalization, "UnitNormalization": UnitNormalization,
           "GroupNormalization": GroupNormalization}
RANDOM_INIT = {"beta_initializer": "random_normal", "gamma_initializer": "random_uniform"}


def _input(shape, seed=0, offset=0.0):
    return offset + np.random.default_rng(seed).standard_normal(shape)


def _np_layer_norm(x, axes, gamma, beta, eps):
    mean = x.mean(axis=tuple(axes), keepdims=True)
    var = ((x - mean) ** 2).mean(axis=tuple(axes), keepdims=True)
    shape = [1] * x.ndim
    for a in axes:
        shape[a] = x.shape[a]
    out = (x - mean) / np.sqrt(var + eps)
    out = out if gamma is None else out * gamma.reshape(shape)
    return out if beta is None else out + beta.reshape(shape)


def _np_unit_norm(x, axes):
    return x / np.sqrt(np.maximum((x ** 2).sum(axis=tuple(axes), keepdims=True), 1e-12))


def _np_group_norm(x, groups, axis, gamma, beta, eps, mask=None):
    axis %= x.ndim
    shape = x.shape
    grouped = shape[:axis] + (groups, shape[axis] // groups) + shape[axis + 1:]
    g = x.reshape(grouped)
    w = np.ones_like(g) if mask is None else np.broadcast_to(mask, shape).reshape(grouped)
    axes = tuple(a for a in range(1, len(grouped)) if a != axis)
    mean = (w * g).sum(axes, keepdims=True) / w.sum(axes, keepdims=True)
    var = (w * (g - mean) ** 2).sum(axes, keepdims=True) / w.sum(axes, keepdims=True)
    out = ((g - mean) / np.sqrt(var + eps)).reshape(shape)
    pshape = [1] * x.ndim
    pshape[axis] = shape[axis]
    return out * gamma.reshape(pshape) + beta.reshape(pshape)


def _reference(name, kwargs, layer, x):
    weights = {w.name.rpartition("/")[2].partition(":")[0]: w.numpy() for w in layer.weights}
    if name == "LayerNormalization":
        axes = [a % x.ndim for a in np.atleast_1d(kwargs.get("axis", -1))]
        return _np_layer_norm(x, axes, weights.get("gamma"), weights.get("beta"),
                              kwargs.get("epsilon", 1e-3))
    if name == "UnitNormalization":
        return _np_unit_norm(x, [a % x.ndim for a in np.atleast_1d(kwargs.get("axis", -1))])
    groups = layer.groups
    return _np_group_norm(x, groups, kwargs.get("axis", -1), weights["gamma"], weights["beta"],
                          kwargs.get("epsilon", 1e-3))


CASES = [  # (name, kwargs, input shape)
    ("LayerNormalization", {}, (3, 4)),
    ("LayerNormalization", {"axis": 1}, (2, 3, 4)),
    ("LayerNormalization", {"axis": [1, 2]}, (2, 3, 4)),
    ("LayerNormalization", {"axis": (-3, -1), "epsilon": 1e-6}, (2, 3, 2, 4)),
    ("LayerNormalization", {"center": False, "scale": False}, (2, 5)),
    ("LayerNormalization", {"center": False}, (2, 2, 5)),
    ("UnitNormalization", {}, (3, 4)),
    ("UnitNormalization", {"axis": [1, 2]}, (2, 3, 4)),
    ("GroupNormalization", {"groups": 2}, (2, 3, 4)),
    ("GroupNormalization", {"groups": -1, "epsilon": 0.01}, (2, 5, 3)),
    ("GroupNormalization", {"groups": 3, "axis": 1}, (2, 6, 2, 2)),
]
IDS = [f"{name}-{kwargs}" for name, kwargs, _ in CASES]


def _make(name, kwargs, **more):
    init = RANDOM_INIT if name != "UnitNormalization" else {}
    return CLASSES[name](**init, **kwargs, **more)


@pytest.mark.parametrize("name, kwargs, shape", CASES, ids=IDS)
def test_values_gradients_and_config(name, kwargs, shape):
    layer = _make(name, kwargs, dtype="float64")
    x = _input(shape)
    y = layer(tf.constant(x))
    assert y.dtype == tf.float64
    np.testing.assert_allclose(y.numpy(), _reference(name, kwargs, layer, x), rtol=1e-10,
                               atol=1e-12)
    tf.testing.check_grads(lambda u: layer(u), [x], order=1)
    config = layer.get_config()
    again = CLASSES[name].from_config(config)
    again.build(shape)
    again.set_weights(layer.get_weights())
    np.testing.assert_allclose(again(tf.constant(x)).numpy(), y.numpy(), rtol=1e-14)
    copy = tf.keras.layers.deserialize(tf.keras.layers.serialize(layer))
    assert type(copy) is type(layer) and copy.get_config() == config
    assert tuple(layer.compute_output_shape((None,) + shape[1:])) == (None,) + shape[1:]


@pytest.mark.parametrize("name, kwargs, shape", CASES, ids=IDS)
def test_weight_gradients_float32_and_traces(name, kwargs, shape):
    layer64 = _make(name, kwargs, dtype="float64")
    layer32 = _make(name, kwargs)
    x = _input(shape)
    layer64(tf.constant(x))
    layer32(tf.constant(x, tf.float32))
    layer32.set_weights(layer64.get_weights())
    grads = []
    for layer, dtype in ((layer64, tf.float64), (layer32, tf.float32)):
        xt = tf.constant(x, dtype)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            total = tf.reduce_sum(tf.sin(layer(xt)))
        grads.append(tape.gradient(total, [xt] + layer.trainable_weights))
    for g64, g32 in zip(*grads, strict=True):  # float32 (tf_keras' fused path for LN)
        np.testing.assert_allclose(g32.numpy(), g64.numpy(), rtol=2e-4, atol=2e-5)
    if layer64.weights:
        shift = layer64.trainable_weights[-1] if layer64.beta is not None else None
        if shift is not None:  # d sum(sin y) / d beta = the cos(y) summed over what beta spans
            xt = tf.constant(x)
            with tf.GradientTape() as tape:
                y = layer64(xt)
                total = tf.reduce_sum(tf.sin(y))
            np.testing.assert_allclose(tape.gradient(total, shift).numpy().sum(),
                                       np.cos(y.numpy()).sum(), rtol=1e-10)
    traced = tf.function(lambda t: layer32(t),
                         input_signature=[tf.TensorSpec((None,) + shape[1:], tf.float32)])
    for n in (2, 3, 5, 1):
        xs = tf.constant(_input((n,) + shape[1:], seed=n), tf.float32)
        np.testing.assert_allclose(traced(xs).numpy(), layer32(xs).numpy(), rtol=1e-5, atol=1e-6)
    four = tf.constant(_input((4,) + shape[1:]), tf.float32)
    assert traced.get_concrete_function(four).serves_all_sizes


@pytest.mark.parametrize("name, kwargs, shape", CASES, ids=IDS)
def test_in_models_with_masks(name, kwargs, shape):
    x = tf.constant(_input(shape), tf.float32)
    layer = _make(name, kwargs)
    want = layer(x).numpy()
    model = tf.keras.Sequential([tf.keras.Input(shape[1:]), layer])
    np.testing.assert_allclose(model(x).numpy(), want, rtol=1e-6)
    inputs = tf.keras.Input(shape=shape[1:])
    functional = tf.keras.Model(inputs, layer(inputs))
    np.testing.assert_allclose(functional(x).numpy(), want, rtol=1e-6)
    mask = tf.constant(np.arange(shape[1]) < shape[1] - 1)[None] & tf.ones([shape[0], 1], tf.bool)
    tf.keras.masks.set_mask(x, mask)
    out = layer(x)
    np.testing.assert_array_equal(tf.keras.masks.get_mask(out).numpy(), mask.numpy())


def test_compiled_calls_and_their_gradients_give_eager_values():
    pytest.importorskip("jax")  # the xla extra
    x = tf.constant(_input((2, 4, 6)), tf.float32)
    for layer in (LayerNormalization(**RANDOM_INIT), LayerNormalization(axis=1),
                  GroupNormalization(groups=3, **RANDOM_INIT), UnitNormalization()):
        layer(x)

        def loss(t, layer=layer):
            with tf.GradientTape() as tape:
                tape.watch(t)
                y = tf.reduce_sum(tf.sin(layer(t)))
            return [y] + tape.gradient(y, [t] + layer.trainable_weights)
        for got, want in zip(tf.function(loss, jit_compile=True)(x), loss(x), strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5)


def test_fit_and_a_saved_model_predicts_alike(tmp_path):
    model = tf.keras.Sequential([
        tf.keras.Input((6, 4)), LayerNormalization(), GroupNormalization(groups=2),
        UnitNormalization(axis=[1, 2]), tf.keras.layers.Flatten(), tf.keras.layers.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=(16, 6, 4)).astype(np.float32), rng.uniform(size=(16, 1))
    history = model.fit(x, y.astype(np.float32), epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = str(tmp_path / "normalized.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_layer_normalization_paths_and_weights():
    ln = LayerNormalization(axis=[1, 2], name="ln")
    ln.build((None, 3, 4))
    assert [(w.name, tuple(w.shape)) for w in ln.weights] == [("ln/gamma:0", (3, 4)),
                                                              ("ln/beta:0", (3, 4))]
    assert ln.get_config()["axis"] == [1, 2] and ln._use_fused
    assert not LayerNormalization(epsilon=1e-6)._use_fused
    cases = ((LayerNormalization(axis=1), (2, 3, 4)), (LayerNormalization(epsilon=1e-6), (2, 3)),
             (LayerNormalization(dtype="float64"), (2, 3)))
    for layer, shape in cases:
        layer.build(shape)
        assert not layer._use_fused
    assert LayerNormalization().get_config()["axis"] == -1  # as given until built


def test_layer_normalization_fused_path_keeps_precision_at_large_offsets():
    x = _input((4, 64), offset=3e4).astype(np.float32)
    y = LayerNormalization(epsilon=1e-3)(tf.constant(x)).numpy()
    x64 = x.astype(np.float64)
    want = _np_layer_norm(x64, [1], None, None, 1e-3)
    np.testing.assert_allclose(y, want, atol=2e-3)


def test_layer_normalization_in_float16_takes_moments_in_float32():
    x = _input((3, 8), offset=20.).astype(np.float16)
    y = LayerNormalization(dtype="float16")(tf.constant(x))
    assert y.dtype == tf.float16
    want = _np_layer_norm(x.astype(np.float64), [1], None, None, 1e-3)
    np.testing.assert_allclose(y.numpy().astype(np.float64), want, atol=3e-2)
    for layer in (LayerNormalization(autocast=False), UnitNormalization(autocast=False)):
        assert layer(tf.constant(x)).dtype == tf.float32  # TF: cast to the layer's dtype


def test_unit_normalization_zero_vectors():
    y = UnitNormalization()(tf.constant([[0., 0.], [3., 4.]]))
    np.testing.assert_allclose(y.numpy(), [[0., 0.], [0.6, 0.8]])
    assert UnitNormalization(axis=(1,)).get_config()["axis"] == [1]


def test_group_normalization_with_a_mask_leaves_masked_entries_out():
    x = _input((2, 3, 4))
    mask = np.array([[True, True, False], [True, False, False]])
    layer = GroupNormalization(groups=2, dtype="float64", **RANDOM_INIT)
    y = layer(tf.constant(x), mask=tf.constant(mask[:, :, None]))
    gamma, beta = layer.get_weights()
    want = _np_group_norm(x, 2, -1, gamma, beta, 1e-3, mask[:, :, None].astype(np.float64))
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-10)
    steps = layer(tf.constant(x), mask=tf.constant(mask))  # a Keras mask of (batch, steps)
    np.testing.assert_allclose(steps.numpy(), want, rtol=1e-10)
    assert layer.get_config()["groups"] == 2


def test_batch_normalization_passes_regularizers_and_constraints():
    bn = tf.keras.layers.BatchNormalization(gamma_regularizer=tf.keras.regularizers.L2(0.5),
                                            beta_constraint=tf.keras.constraints.NonNeg())
    bn(tf.ones([2, 3]))
    np.testing.assert_allclose([float(v) for v in bn.losses], [1.5])
    config = bn.get_config()
    assert config["gamma_regularizer"]["class_name"] == "L2"
    assert config["beta_constraint"]["class_name"] == "NonNeg"
    assert config["beta_regularizer"] is None
    ln = LayerNormalization(beta_regularizer="l1")
    ln(tf.ones([2, 3]))
    assert ln.get_config()["beta_regularizer"]["class_name"] == "L1"
    assert [float(v) for v in ln.losses] == [0.0]


@pytest.mark.parametrize("make, error, match", [
    (lambda: LayerNormalization(axis="a"), TypeError, "int or a list/tuple"),
    (lambda: LayerNormalization(axis=3)(tf.ones([2, 3])), ValueError, "Invalid value for `axis`"),
    (lambda: LayerNormalization(axis=[1, -1])(tf.ones([2, 3])), ValueError, "Duplicate axis"),
    (lambda: LayerNormalization()(tf.ones([])), ValueError, "rank"),
    (lambda: LayerNormalization().build((None, None)), ValueError, "known sizes"),
    (lambda: LayerNormalization(gamma_constraint="nope"), ValueError, "nope"),
    (lambda: UnitNormalization(axis=1.5), TypeError, "Invalid value for `axis`"),
    (lambda: UnitNormalization(axis=-3)(tf.ones([2, 3])), ValueError, "Invalid value for `axis`"),
    (lambda: GroupNormalization(groups=4)(tf.ones([2, 6])), ValueError, "must divide"),
    (lambda: GroupNormalization(groups=4)(tf.ones([2, 3])), ValueError, "cannot be more"),
    (lambda: GroupNormalization(groups=0)(tf.ones([2, 3])), ValueError, "nor below 1"),
    (lambda: GroupNormalization(groups=1).build((2, None)), ValueError, "defined dimension"),
    (lambda: (lambda g: (g(tf.ones([2, 4])), g(tf.ones([2, 6]))))(GroupNormalization(groups=2)),
     ValueError, "incompatible"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_module_lists_its_layers():
    assert set(normalization.__all__) == {"BatchNormalization", *CLASSES}


# ---------------------------------------------------------------- tf_keras (peers)
PEER_CASES = CASES + [
    ("LayerNormalization", {"axis": -1}, (2, 64)),  # with a large offset below: fused numerics
]


@pytest.mark.peers
@pytest.mark.parametrize("name, kwargs, shape", PEER_CASES,
                         ids=[f"{n}-{k}-{s}" for n, k, s in PEER_CASES])
def test_against_tf_keras(name, kwargs, shape):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    offset = 3e3 if shape == (2, 64) else 0.
    x = _input(shape, offset=offset).astype(np.float32)
    init = RANDOM_INIT if name != "UnitNormalization" else {}
    ours, theirs = CLASSES[name](**init, **kwargs), getattr(keras.layers, name)(**init, **kwargs)
    theirs(real.constant(x))
    ours(tf.constant(x))
    assert [(w.name.rpartition("/")[2], tuple(w.shape)) for w in ours.weights] == \
        [(w.name.rpartition("/")[2], tuple(w.shape)) for w in theirs.weights]
    ours.set_weights(theirs.get_weights())
    xt, xr = tf.constant(x), real.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = ours(xt)
        s = tf.reduce_sum(tf.sin(y))
    with real.GradientTape() as rtape:
        rtape.watch(xr)
        yr = theirs(xr)
        sr = real.reduce_sum(real.sin(yr))
    np.testing.assert_allclose(y.numpy(), yr.numpy(), rtol=2e-5, atol=2e-5)
    mine = tape.gradient(s, [xt] + ours.trainable_weights)
    yours = rtape.gradient(sr, [xr] + theirs.trainable_weights)
    # at the large offset, x's own float32 spacing (2e-4) bounds both gradients' accuracy
    tol = 1e-3 if offset else 1e-4
    for a, b in zip(mine, yours, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=tol, atol=tol)
    mine_config, your_config = ours.get_config(), theirs.get_config()
    assert set(mine_config) == set(your_config)
    for key in set(mine_config) - {"name"}:
        a, b = mine_config[key], your_config[key]
        if isinstance(b, (list, tuple)):
            a, b = list(a), list(b)
        assert a == b, (key, a, b)


@pytest.mark.peers
def test_layer_normalization_float16_against_tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    x = _input((3, 8), offset=20.).astype(np.float16)
    ours = LayerNormalization(dtype="float16")(tf.constant(x)).numpy()
    theirs = keras.layers.LayerNormalization(dtype="float16")(real.constant(x)).numpy()
    np.testing.assert_allclose(ours.astype(np.float32), theirs.astype(np.float32), atol=2e-3)


@pytest.mark.peers
def test_keras_files_open_in_tf_keras_and_back(tmp_path):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    L = tf.keras.layers
    x = np.random.default_rng(2).uniform(size=(4, 6, 4)).astype(np.float32)
    ours = tf.keras.Sequential([
        tf.keras.Input((6, 4)), L.GaussianNoise(0.1), L.SpatialDropout1D(0.2), L.ZeroPadding1D(1),
        LayerNormalization(**RANDOM_INIT), GroupNormalization(2, **RANDOM_INIT),
        UnitNormalization(), L.UpSampling1D(2), L.Cropping1D(1), L.PReLU(), L.AlphaDropout(0.1),
        L.Flatten(), L.Dense(1)])
    ours.save(tmp_path / "ours.keras")
    theirs = keras.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(theirs.predict(x, verbose=0), ours.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
    theirs = keras.Sequential([
        keras.Input((6, 4)), keras.layers.LayerNormalization(axis=[1, 2]),
        keras.layers.PReLU(alpha_initializer="random_uniform", shared_axes=[1]),
        keras.layers.GroupNormalization(2), keras.layers.UpSampling1D(3),
        keras.layers.UnitNormalization(), keras.layers.GaussianDropout(0.2)])
    theirs.save(tmp_path / "theirs.keras")
    ours = tf.keras.models.load_model(str(tmp_path / "theirs.keras"))
    np.testing.assert_allclose(ours.predict(x, verbose=0), theirs.predict(x, verbose=0),
                               rtol=1e-5, atol=1e-6)
