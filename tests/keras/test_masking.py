"""Masks, as tf_keras passes them: `Embedding(mask_zero=True)` and `Masking` make them,
`compute_mask`/`supports_masking` decide what each layer passes on, a layer's `call`
that takes `mask` receives its input's mask, and Sequential and functional models carry
masks from layer to layer (also in tf.function). Masked `SimpleRNN`/`LSTM`/`GRU`
against a NumPy reference of tf_keras' rule (the states stay and the output repeats at
masked steps), padding that changes nothing, gradients against central differences,
`BatchNormalization`'s masked statistics; then the same against tf_keras 2.21 where
TensorFlow is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers
from tapeflow.keras.masks import get_mask, set_mask

from keras_helpers import (_rand, assert_tape_gradients_match, np_gru_step, np_lstm_step,
                           np_rnn, np_simple_rnn_step, tf_keras)

IDS = np.array([[4, 2, 0, 0, 0], [1, 3, 3, 0, 0], [5, 0, 2, 0, 0]])
MASK = IDS != 0


# ================================================================ making masks
def test_embedding_mask_zero_makes_the_mask():
    emb = layers.Embedding(6, 3, mask_zero=True)
    out = emb(tf.constant(IDS))
    np.testing.assert_array_equal(get_mask(out).numpy(), MASK)
    np.testing.assert_array_equal(emb.compute_mask(tf.constant(IDS)).numpy(), MASK)
    assert emb.supports_masking
    plain = layers.Embedding(6, 3)
    assert get_mask(plain(tf.constant(IDS))) is None and not plain.supports_masking


def test_masking_layer_zeroes_and_masks_the_padded_steps():
    x = np.array([[[1., 2.], [0., 0.], [0., 3.]], [[0., 0.], [0., 0.], [5., 0.]]], np.float32)
    out = layers.Masking()(tf.constant(x))
    np.testing.assert_array_equal(get_mask(out).numpy(), [[True, False, True],
                                                          [False, False, True]])
    np.testing.assert_array_equal(out.numpy(), x)  # masked steps were already 0
    y = x + 1.0  # mask value 1: steps that are all ones
    y[0, 2] = 1.0
    out = layers.Masking(mask_value=1.0)(tf.constant(y))
    np.testing.assert_array_equal(get_mask(out).numpy(), [[True, False, False],
                                                          [False, False, True]])
    np.testing.assert_array_equal(out.numpy()[0, 2], [0., 0.])  # zeroed, not left at 1
    np.testing.assert_array_equal(out.numpy()[0, 0], y[0, 0])


# ================================================================ passing masks on
def test_layers_that_pass_masks_on_and_layers_that_drop_them():
    x = tf.ones([2, 3, 4])
    set_mask(x, tf.constant([[True, False, True], [True, True, False]]))
    want = get_mask(x).numpy()
    for layer in (layers.Dense(2), layers.Dropout(0.5), layers.Activation("relu"),
                  layers.BatchNormalization(), layers.Lambda(lambda t: t, mask=lambda i, m: m)):
        assert layer.supports_masking, type(layer).__name__
        np.testing.assert_array_equal(get_mask(layer(x)).numpy(), want)
    for layer in (layers.Flatten(), layers.Lambda(lambda t: t * 2)):
        assert get_mask(layer(x)) is None, type(layer).__name__
    assert not layers.Flatten().supports_masking and not layers.Conv2D(2, 3).supports_masking


def test_base_compute_mask_rules():
    mask = tf.constant([[True, False]])
    with pytest.raises(TypeError, match="does not support masking, but was passed an input_mask"):
        layers.Flatten().compute_mask(tf.ones([1, 2, 3]), mask)
    assert layers.Flatten().compute_mask(tf.ones([1, 2, 3]), None) is None
    assert layers.Dense(2).compute_mask(tf.ones([1, 2, 3]), mask) is mask
    flat = layers.Flatten()
    flat.supports_masking = True
    assert flat.compute_mask(tf.ones([1, 2, 3]), mask) is mask


class _SeesMask(keras.layers.Layer):
    def call(self, inputs, mask=None):
        self.seen = mask
        return inputs * 2.0


def test_call_receives_the_implicit_mask_and_an_explicit_one_wins():
    x = tf.ones([1, 3, 2])
    m = tf.constant([[True, True, False]])
    set_mask(x, m)
    layer = _SeesMask()
    out = layer(x)
    assert layer.seen is m
    assert get_mask(out) is None  # it does not support masking: the mask stops here
    other = tf.constant([[False, True, True]])
    layer(x, mask=other)
    assert layer.seen is other
    layer(tf.ones([1, 3, 2]))
    assert layer.seen is None


def test_a_layer_returning_its_input_keeps_its_mask():
    class Identity(keras.layers.Layer):
        def compute_mask(self, inputs, mask=None):
            return tf.constant([[False, False, False]])

        def call(self, inputs):
            return inputs

    x = tf.ones([1, 3, 2])
    set_mask(x, tf.constant([[True, False, True]]))
    out = Identity()(x)
    assert out is x
    np.testing.assert_array_equal(get_mask(out).numpy(), [[True, False, True]])


def test_masks_are_forgotten_with_their_tensors():
    from tapeflow.keras import masks

    before = len(masks._MASKS)
    t = tf.ones([2, 3])  # a tensor carries its mask, as tf_keras' do
    set_mask(t, tf.constant([True, False]))
    assert len(masks._MASKS) == before and get_mask(t) is t._keras_mask
    x = tf.Variable(tf.ones([2, 3]))  # a variable has no room: the table holds it
    set_mask(x, tf.constant([True, False]))
    assert len(masks._MASKS) == before + 1
    assert get_mask(x).numpy().tolist() == [True, False]
    del x
    assert len(masks._MASKS) == before
    y = tf.ones([2])
    assert get_mask(y) is None
    set_mask(y, tf.constant([True, True]))
    set_mask(y, None)
    assert get_mask(y) is None


# ================================================================ masked RNNs against NumPy
RNN_CASES = {
    "simple_rnn": (lambda **kw: layers.SimpleRNN(4, **kw), np_simple_rnn_step, 1),
    "lstm": (lambda **kw: layers.LSTM(4, **kw), np_lstm_step, 4),
    "gru": (lambda **kw: layers.GRU(4, **kw), np_gru_step, 3),
    "gru_reset_before": (lambda **kw: layers.GRU(4, reset_after=False, **kw),
                         lambda *a: np_gru_step(*a, reset_after=False), 3),
}
TIME_MASK = np.array([[True, False, True, True, False, True],
                      [False, True, True, False, False, False],
                      [True, True, True, True, True, True]])


def _weights(layer):
    return [w.numpy().astype(np.float64) for w in layer.weights]


@pytest.mark.parametrize("name", sorted(RNN_CASES))
@pytest.mark.parametrize("go_backwards", [False, True])
def test_masked_rnn_matches_numpy_reference(name, go_backwards):
    make, step, _ = RNN_CASES[name]
    layer = make(return_sequences=True, return_state=True, go_backwards=go_backwards,
                 dtype="float64")
    x = _rand(3, 6, 5, dtype=np.float64)
    seq, *states = layer(tf.constant(x), mask=tf.constant(TIME_MASK))
    zeros = [np.zeros((3, 4))] * len(states)
    want_seq, want_states = np_rnn(step, _weights(layer), x, zeros, TIME_MASK, go_backwards)
    np.testing.assert_allclose(seq.numpy(), want_seq, rtol=1e-12, atol=1e-12)
    for got, want in zip(states, want_states, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)
    # the rule itself: a masked step repeats the previous output (zeros before any kept one)
    order = list(range(5, -1, -1)) if go_backwards else list(range(6))
    np.testing.assert_array_equal(seq.numpy()[1, 0], 0.0)
    row = TIME_MASK[1, order]
    for i in range(1, 6):
        if not row[i]:
            np.testing.assert_array_equal(seq.numpy()[1, i], seq.numpy()[1, i - 1])
    last = layer.__class__.from_config(dict(layer.get_config(), return_sequences=False,
                                            return_state=False))
    last.build((None, 6, 5))
    last.set_weights(layer.get_weights())
    np.testing.assert_allclose(last(tf.constant(x), mask=tf.constant(TIME_MASK)).numpy(),
                               want_seq[:, -1], rtol=1e-12)


def test_zero_output_for_mask():
    layer = layers.RNN(layers.SimpleRNNCell(3, dtype="float64"), return_sequences=True,
                       zero_output_for_mask=True, dtype="float64")
    x = _rand(3, 6, 2, dtype=np.float64)
    seq = layer(tf.constant(x), mask=tf.constant(TIME_MASK)).numpy()
    want, _ = np_rnn(np_simple_rnn_step, _weights(layer.cell), x, [np.zeros((3, 3))],
                     TIME_MASK, zero_output_for_mask=True)
    np.testing.assert_allclose(seq, want, rtol=1e-12)
    np.testing.assert_array_equal(seq[~TIME_MASK], 0.0)


@pytest.mark.parametrize("name", ["lstm", "gru"])
def test_trailing_padding_changes_nothing(name):
    make, _, _ = RNN_CASES[name]
    model = keras.Sequential([layers.Embedding(7, 3, mask_zero=True), make()])
    short = np.array([[3, 1, 4], [1, 5, 6]])
    padded = np.concatenate([short, np.zeros((2, 4), int)], axis=1)
    np.testing.assert_allclose(model(tf.constant(padded)).numpy(),
                               model(tf.constant(short)).numpy(), rtol=1e-6, atol=1e-7)
    unmasked = keras.Sequential([layers.Embedding(7, 3), make()])
    unmasked(tf.constant(short))
    unmasked.set_weights(model.get_weights())
    assert not np.allclose(unmasked(tf.constant(padded)).numpy(), model(tf.constant(padded)))


def test_sequential_and_functional_models_carry_the_mask():
    emb, lstm = layers.Embedding(6, 3, mask_zero=True), layers.LSTM(4, return_sequences=True)
    dense = layers.Dense(2)
    model = keras.Sequential([emb, lstm, dense])
    ids = tf.constant(IDS)
    out = model(ids)
    by_hand = dense(lstm(emb(ids), mask=tf.constant(MASK)))
    np.testing.assert_allclose(out.numpy(), by_hand.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(get_mask(out).numpy(), MASK)  # Dense passed it on
    np.testing.assert_array_equal(model.compute_mask(ids).numpy(), MASK)

    inp = keras.Input((None,), dtype="int32")
    seq = lstm(emb(inp))
    assert seq._keras_mask.shape == (None, None) and seq._keras_mask.dtype == tf.bool
    functional = keras.Model(inp, dense(seq))
    np.testing.assert_allclose(functional(ids).numpy(), by_hand.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(functional.compute_mask(ids).numpy(), MASK)
    np.testing.assert_array_equal(get_mask(functional(ids)).numpy(), MASK)


def test_model_mask_argument_and_symbolic_masks_passed_by_hand():
    x = keras.Input((None, 2))
    lstm = layers.LSTM(3)
    model = keras.Model(x, lstm(x))
    v = _rand(3, 6, 2)
    np.testing.assert_allclose(model(v, mask=tf.constant(TIME_MASK)).numpy(),
                               lstm(tf.constant(v), mask=tf.constant(TIME_MASK)).numpy(),
                               rtol=1e-6, atol=1e-7)
    ids = keras.Input((None,), dtype="int32")
    vectors = layers.Embedding(6, 2, mask_zero=True)(ids)
    plain = layers.Lambda(lambda t: t * 1.0)(vectors)  # drops the mask
    assert getattr(plain, "_keras_mask", None) is None
    out = lstm(plain, mask=vectors._keras_mask)  # hand it on explicitly
    hand = keras.Model(ids, [out, vectors._keras_mask])
    got, got_mask = hand(tf.constant(IDS))
    np.testing.assert_array_equal(got_mask.numpy(), MASK)
    emb = hand.layers[1]
    np.testing.assert_allclose(
        got.numpy(), lstm(emb(tf.constant(IDS)), mask=tf.constant(MASK)).numpy(), rtol=1e-6, atol=1e-7)


def test_masks_in_a_traced_function():
    model = keras.Sequential([layers.Embedding(6, 3, mask_zero=True), layers.GRU(4)])
    model(tf.constant(IDS))

    @tf.function
    def f(ids):
        return model(ids)

    first = f(tf.constant(IDS)).numpy()
    other = np.array([[1, 0, 0, 0, 0], [2, 2, 2, 2, 2], [0, 0, 0, 0, 0]])
    np.testing.assert_allclose(f(tf.constant(other)).numpy(), model(tf.constant(other)).numpy(),
                               rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(first, model(tf.constant(IDS)).numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_array_equal(f(tf.constant(other)).numpy()[2], 0.0)  # all masked
    assert f.experimental_get_tracing_count() == 1


@pytest.mark.parametrize("name", sorted(RNN_CASES))
def test_masked_rnn_gradients_match_central_differences(name):
    make, _, _ = RNN_CASES[name]
    layer = make(return_sequences=True, dtype="float64")
    x = _rand(3, 6, 2, dtype=np.float64)
    mask = tf.constant(TIME_MASK)
    layer(tf.constant(x), mask=mask)
    probe = tf.constant(np.linspace(-1, 1, 3 * 6 * 4).reshape(3, 6, 4))
    weights = _weights(layer)

    def loss(x, *ws):
        layer.set_weights([w.numpy() for w in ws])
        return tf.reduce_sum(layer(x, mask=mask) * probe)

    # inputs by the tape; weights through set_weights need their own tape
    assert_tape_gradients_match(lambda x: loss(x, *[tf.constant(w) for w in weights]), [x])
    with tf.GradientTape() as tape:
        value = tf.reduce_sum(layer(tf.constant(x), mask=mask) * probe)
    grads = tape.gradient(value, layer.trainable_variables)
    from keras_helpers import central_differences
    want = central_differences(lambda *ws: loss(tf.constant(x), *[tf.constant(w) for w in ws]),
                               weights)
    for g, w, v in zip(grads, want, layer.trainable_variables, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-8, err_msg=v.name)


# ================================================================ BatchNormalization
def test_batch_normalization_statistics_over_unmasked_steps():
    x = _rand(2, 4, 3, dtype=np.float64)
    mask = np.array([[True, True, False, False], [True, False, True, False]])
    bn = layers.BatchNormalization(momentum=0.5, dtype="float64")
    out = bn(tf.constant(x), training=True, mask=tf.constant(mask))
    kept = x[mask]
    mean, var = kept.mean(0), kept.var(0)
    np.testing.assert_allclose(out.numpy(), (x - mean) / np.sqrt(var + 1e-3), rtol=1e-10)
    np.testing.assert_allclose(bn.moving_mean.numpy(), 0.5 * mean, rtol=1e-12)
    np.testing.assert_allclose(bn.moving_variance.numpy(), 0.5 + 0.5 * var, rtol=1e-12)
    seq = keras.Sequential([layers.Embedding(6, 3, mask_zero=True), layers.BatchNormalization()])
    seq(tf.constant(IDS), training=True)  # the Embedding's mask reaches the layer
    vectors = seq.layers[0](tf.constant(IDS)).numpy()
    np.testing.assert_allclose(seq.layers[1].moving_mean.numpy(),
                               0.01 * vectors[MASK].mean(0), rtol=1e-5, atol=1e-9)
    assert_tape_gradients_match(
        lambda v: tf.reduce_sum(tf.sin(layers.BatchNormalization(dtype="float64")(
            v, training=True, mask=tf.constant(mask)))), [x])


# ================================================================ against tf_keras
def test_supports_masking_matches_tf_keras():
    _, tk = tf_keras()
    makers = {"Dense": lambda L: L.Dense(2), "Flatten": lambda L: L.Flatten(),
              "Dropout": lambda L: L.Dropout(0.5), "Activation": lambda L: L.Activation("relu"),
              "BatchNormalization": lambda L: L.BatchNormalization(),
              "Conv2D": lambda L: L.Conv2D(2, 3), "MaxPooling2D": lambda L: L.MaxPooling2D(),
              "Lambda": lambda L: L.Lambda(lambda t: t), "Masking": lambda L: L.Masking(),
              "Embedding": lambda L: L.Embedding(3, 2),
              "EmbeddingMasked": lambda L: L.Embedding(3, 2, mask_zero=True),
              "LSTM": lambda L: L.LSTM(2), "GRU": lambda L: L.GRU(2),
              "SimpleRNN": lambda L: L.SimpleRNN(2), "Add": lambda L: L.Add(),
              "Concatenate": lambda L: L.Concatenate(), "Dot": lambda L: L.Dot(1)}
    for name, make in makers.items():
        assert make(layers).supports_masking == make(tk.layers).supports_masking, name


@pytest.mark.parametrize("name", ["simple_rnn", "lstm", "gru", "gru_reset_before"])
@pytest.mark.parametrize("go_backwards", [False, True])
def test_masked_rnn_matches_tf_keras(name, go_backwards):
    tensorflow, tk = tf_keras()
    make, _, _ = RNN_CASES[name]
    kw = dict(return_sequences=True, return_state=True, go_backwards=go_backwards)
    ours = make(**kw)
    theirs = {"simple_rnn": lambda: tk.layers.SimpleRNN(4, **kw),
              "lstm": lambda: tk.layers.LSTM(4, **kw), "gru": lambda: tk.layers.GRU(4, **kw),
              "gru_reset_before": lambda: tk.layers.GRU(4, reset_after=False, **kw)}[name]()
    x = _rand(3, 6, 5)
    ours(tf.constant(x))
    theirs(tensorflow.constant(x))
    theirs.set_weights(ours.get_weights())
    got = ours(tf.constant(x), mask=tf.constant(TIME_MASK))
    want = theirs(tensorflow.constant(x), mask=tensorflow.constant(TIME_MASK))
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(get_mask(got[0]).numpy(), want[0]._keras_mask.numpy())


def test_masked_models_match_tf_keras():
    tensorflow, tk = tf_keras()

    def build(k):
        return k.Sequential([k.layers.Embedding(6, 3, mask_zero=True),
                             k.layers.LSTM(4, return_sequences=True),
                             k.layers.Dense(3), k.layers.BatchNormalization(),
                             k.layers.GRU(2)])

    ours, theirs = build(keras), build(tk)
    ours(tf.constant(IDS))
    theirs(tensorflow.constant(IDS))
    theirs.set_weights(ours.get_weights())
    np.testing.assert_allclose(ours(tf.constant(IDS), training=True).numpy(),
                               theirs(tensorflow.constant(IDS), training=True).numpy(),
                               rtol=1e-5, atol=1e-6)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):  # BN statistics
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
    x = np.array([[[1., 2.], [0., 0.], [3., 0.]]], np.float32)
    np.testing.assert_array_equal(get_mask(layers.Masking()(tf.constant(x))).numpy(),
                                  tk.layers.Masking()(tensorflow.constant(x))._keras_mask.numpy())
