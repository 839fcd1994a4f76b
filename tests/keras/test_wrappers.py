"""keras/wrappers.py: `TimeDistributed` and `Bidirectional`.

Without TensorFlow: TimeDistributed equals its layer applied at each time step (Dense,
Conv2D, an LSTM, a layer of the user's own, which runs step by step, NOTE(time-distributed)),
its masks, shapes, weight names and configs; Bidirectional equals its forward layer
merged with its backward copy run on the reversed sequence, for every merge mode, with
states, initial states, masks and the tf_keras errors; derivatives against finite
differences in float64; both in Sequential and functional models and traced. With
TensorFlow (peers): outputs, gradients, weight names and shapes, configs and masks
against tf_keras 2.21 on the same weights.
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

from keras_helpers import _rand, tf_keras

keras = tf.keras
get_mask = keras.masks.get_mask


def _randomize(layer, scale=0.5, seed=0):
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.standard_normal(w.shape) * scale for w in layer.get_weights()])


MASK = np.array([[True, True, False, True, False], [False, True, True, True, True]])


# ================================================================ TimeDistributed
def test_time_distributed_dense_is_dense_at_each_step():
    dense = layers.Dense(3, dtype="float64", name="inner")
    td = layers.TimeDistributed(dense, dtype="float64", name="td")
    x = _rand(2, 5, 4, dtype=np.float64)
    y = td(tf.constant(x))
    assert [v.name for v in td.weights] == ["td/kernel:0", "td/bias:0"]
    assert td.weights == dense.weights and td.input_spec.shape == (None, None, 4)
    _randomize(td)
    kernel, bias = dense.get_weights()
    np.testing.assert_allclose(td(tf.constant(x)).numpy(), x @ kernel + bias, rtol=1e-12)
    for t in range(5):
        np.testing.assert_array_equal(td(tf.constant(x)).numpy()[:, t],
                                      dense(tf.constant(x[:, t])).numpy())
    assert y.shape == (2, 5, 3) and td.compute_output_shape((None, 5, 4)) == (None, 5, 3)
    tf.testing.check_grads(lambda v: td(v), [x], order=2)


def test_time_distributed_conv2d_and_lstm():
    conv = layers.Conv2D(2, 3, dtype="float64")
    td = layers.TimeDistributed(conv, dtype="float64")
    x = _rand(2, 3, 6, 5, 1, dtype=np.float64)
    y = td(tf.constant(x))
    assert y.shape == (2, 3, 4, 3, 2) and td.compute_output_shape((None, 3, 6, 5, 1)) == \
        (None, 3, 4, 3, 2)
    for t in range(3):
        np.testing.assert_allclose(y.numpy()[:, t], conv(tf.constant(x[:, t])).numpy(),
                                   rtol=1e-12)
    tf.testing.check_grads(lambda v: td(v), [x[:1, :2]], order=1)
    lstm = layers.LSTM(3, return_sequences=True)
    td = layers.TimeDistributed(lstm, name="td_lstm")
    x = _rand(2, 3, 4, 5)
    y = td(tf.constant(x))
    assert y.shape == (2, 3, 4, 3)
    assert [v.name for v in td.weights] == ["td_lstm/lstm_cell/kernel:0",
                                            "td_lstm/lstm_cell/recurrent_kernel:0",
                                            "td_lstm/lstm_cell/bias:0"]
    np.testing.assert_allclose(y.numpy()[:, 1], lstm(tf.constant(x[:, 1])).numpy(), rtol=1e-6)


class Doubler(keras.layers.Layer):
    """A layer of the user's own: TimeDistributed runs it step by step."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.calls = 0

    def call(self, inputs):
        self.calls += 1
        return inputs * 2.0


def test_time_distributed_runs_a_users_layer_at_each_step_with_masks():
    inner = Doubler()
    td = layers.TimeDistributed(inner)
    x = _rand(2, 5, 3)
    np.testing.assert_allclose(td(tf.constant(x)).numpy(), 2 * x, rtol=1e-7)
    assert inner.calls == 5
    y = td(tf.constant(x), mask=tf.constant(MASK))
    # masked steps repeat the previous step's output (zeros before the first kept step)
    want = 2 * x.copy()
    want[0, 2], want[0, 4], want[1, 0] = want[0, 1], want[0, 3], 0.0
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-7)
    np.testing.assert_array_equal(get_mask(y).numpy(), MASK)


def test_time_distributed_masks():
    x = _rand(2, 5, 4)
    y = layers.TimeDistributed(layers.Dense(3))(tf.constant(x), mask=tf.constant(MASK))
    np.testing.assert_array_equal(get_mask(y).numpy(), MASK)  # Dense passes the mask on
    z = np.array([[[0.0, 0.0], [1.0, 2.0]], [[3.0, 4.0], [0.0, 0.0]]])
    y = layers.TimeDistributed(layers.Masking())(tf.constant(z))  # Masking makes one
    np.testing.assert_array_equal(get_mask(y).numpy(), [[False, True], [True, False]])
    assert get_mask(layers.TimeDistributed(layers.Dense(2))(tf.constant(x))) is None
    # a 3-D mask, of a layer that makes no mask of its own, is reduced to (batch, time)
    class Summing(layers.Dense):  # a subclass of a built-in layer: folded, not per step
        def call(self, inputs):
            return tf.reduce_sum(super().call(inputs), axis=1)

        def compute_mask(self, inputs, mask=None):
            return None

    td = layers.TimeDistributed(Summing(4))
    mask = np.zeros((2, 5, 3), bool)
    mask[0, 1, 2] = True
    y = td(tf.constant(_rand(2, 5, 3, 4)), mask=tf.constant(mask))
    assert y.shape == (2, 5, 4)
    np.testing.assert_array_equal(get_mask(y).numpy(), mask.any(-1))
    # an embedding's mask, per step: (batch, time, length)
    emb = layers.TimeDistributed(layers.Embedding(5, 2, mask_zero=True))
    y = emb(tf.constant(np.array([[[1, 0], [2, 3]], [[0, 0], [4, 1]]])))
    assert y.shape == (2, 2, 2, 2)
    np.testing.assert_array_equal(get_mask(y).numpy(), [[[True, False], [True, True]],
                                                        [[False, False], [True, True]]])


def test_time_distributed_config_models_and_traces():
    td = layers.TimeDistributed(layers.Dense(3, name="dense_in_td"), name="td_config")
    td(tf.ones([2, 4, 5]))
    config = td.get_config()
    assert config["layer"]["class_name"] == "Dense"
    assert config["layer"]["config"]["name"] == "dense_in_td"
    assert config["layer"]["build_config"] == {"input_shape": (2, 5)}
    again = layers.TimeDistributed.from_config(config)
    assert again.get_config() == config and again.layer.built
    again.set_weights(td.get_weights())
    x = tf.constant(_rand(2, 4, 5))
    np.testing.assert_array_equal(again(x).numpy(), td(x).numpy())
    restored = keras.layers.deserialize(keras.layers.serialize(td))
    assert type(restored) is layers.TimeDistributed and restored.get_config() == config
    # Sequential and functional, with a None batch and time
    seq = keras.Sequential([layers.TimeDistributed(layers.Dense(2), input_shape=(None, 5)),
                            layers.TimeDistributed(layers.Dense(1))])
    assert tuple(seq(x).shape) == (2, 4, 1)
    inputs = keras.Input((None, 6, 6, 1))
    out = layers.TimeDistributed(layers.Conv2D(3, 3))(inputs)
    assert tuple(out.shape) == (None, None, 4, 4, 3)
    model = keras.Model(inputs, out)
    assert model(tf.ones([2, 3, 6, 6, 1])).shape == (2, 3, 4, 4, 3)
    f = tf.function(lambda v: seq(v), input_signature=[tf.TensorSpec([None, None, 5])])
    for shape in ((2, 4, 5), (3, 2, 5), (5, 7, 5)):
        v = tf.constant(_rand(*shape))
        np.testing.assert_allclose(f(v).numpy(), seq(v).numpy(), rtol=1e-6)


@pytest.mark.parametrize("shape", [(0, 3, 4), (2, 0, 4), (1, 1, 4)])
def test_empty_and_single_steps_and_batches(shape):
    x = tf.zeros(shape)
    for inner in (layers.Dense(3), Doubler()):
        out = layers.TimeDistributed(inner)(x)
        assert tuple(out.shape) == shape[:2] + ((3,) if isinstance(inner, layers.Dense) else (4,))
    if shape[1]:  # an RNN needs a step
        bi = layers.Bidirectional(layers.LSTM(2, return_sequences=True))
        assert tuple(bi(x).shape) == shape[:2] + (4,)


def test_time_distributed_errors():
    with pytest.raises(ValueError, match="Please initialize `TimeDistributed` layer with a "
                                         "`tf.keras.layers.Layer` instance. Received: dense"):
        layers.TimeDistributed("dense")
    with pytest.raises(ValueError, match=r"should be passed an `input_shape ` with at least 3 "
                                         r"dimensions, received: \(2, 3\)"):
        layers.TimeDistributed(layers.Dense(3))(tf.ones([2, 3]))
    td = layers.TimeDistributed(layers.Dense(3), name="td_err")
    td(tf.ones([2, 4, 5]))
    with pytest.raises(ValueError, match=r'layer "td_err".*expected shape=\(None, None, 5\), '
                                         r"found shape=\(2, 4, 6\)"):
        td(tf.ones([2, 4, 6]))


# ================================================================ Bidirectional
RNNS = {
    "simple": lambda **kw: layers.SimpleRNN(3, **kw),
    "lstm": lambda **kw: layers.LSTM(3, **kw),
    "gru": lambda **kw: layers.GRU(3, **kw),
    "rnn_cell": lambda **kw: layers.RNN(layers.GRUCell(3, dtype=kw.get("dtype")), **kw),
}


def _by_hand(bi, x, mask=None, initial=None):
    """Bidirectional by hand: its two layers' weights in separate plain layers, the
    backward one run on the reversed steps (go_backwards), merged."""
    forward, backward = bi.forward_layer, bi.backward_layer
    half = None if initial is None else len(initial) // 2
    y = forward(x, mask=mask, initial_state=None if initial is None else initial[:half])
    y_rev = backward(x, mask=mask, initial_state=None if initial is None else initial[half:])
    states = []
    if bi.return_state:
        states = list(y[1:]) + list(y_rev[1:])
        y, y_rev = y[0], y_rev[0]
    y, y_rev = y.numpy(), y_rev.numpy()
    if bi.return_sequences:
        y_rev = y_rev[:, ::-1]
    merged = {"concat": lambda: np.concatenate([y, y_rev], -1), "sum": lambda: y + y_rev,
              "mul": lambda: y * y_rev, "ave": lambda: (y + y_rev) / 2,
              None: lambda: [y, y_rev]}[bi.merge_mode]()
    return (merged if isinstance(merged, list) else [merged]) + [s.numpy() for s in states]


@pytest.mark.parametrize("kind", sorted(RNNS))
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
@pytest.mark.parametrize("options", [{}, {"return_sequences": True, "return_state": True}],
                         ids=["last", "sequences-states"])
def test_bidirectional_is_forward_and_backward_merged(kind, merge_mode, options):
    bi = layers.Bidirectional(RNNS[kind](dtype="float64", **options), merge_mode=merge_mode,
                              dtype="float64")
    x = tf.constant(_rand(2, 5, 4, dtype=np.float64))
    bi(x)
    _randomize(bi)
    assert bi.backward_layer.go_backwards and not bi.forward_layer.go_backwards
    got = tf.nest.flatten(bi(x))
    want = _by_hand(bi, x)
    assert len(got) == len(want)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-14)
    shapes = bi.compute_output_shape((None, 5, 4))
    shapes = shapes if isinstance(shapes, list) else [shapes]
    assert [tuple(s)[1:] for s in shapes] == [tuple(a.shape)[1:] for a in got]


def test_bidirectional_weights_names_and_the_wrapped_layer():
    lstm = layers.LSTM(3, name="lstm_w")
    bi = layers.Bidirectional(lstm, name="bi_w")
    bi(tf.ones([2, 5, 4]))
    assert [v.name for v in bi.weights] == [
        f"bi_w/{d}_lstm_w/lstm_cell/{w}:0" for d in ("forward", "backward")
        for w in ("kernel", "recurrent_kernel", "bias")]
    assert bi.forward_layer.name == "forward_lstm_w" and bi.layer is lstm
    assert not lstm.built and lstm.name == "lstm_w"
    assert bi.trainable_weights == bi.forward_layer.weights + bi.backward_layer.weights
    bi.trainable = False
    assert not bi.trainable_weights and not bi.forward_layer.trainable
    assert bi.count_params() == 2 * (4 * 12 + 3 * 12 + 12)


def test_bidirectional_masks_initial_states_and_list_inputs():
    bi = layers.Bidirectional(layers.LSTM(3, return_sequences=True, return_state=True,
                                          dtype="float64"), dtype="float64")
    x = tf.constant(_rand(2, 5, 4, dtype=np.float64))
    bi(x)
    _randomize(bi)
    mask = tf.constant(MASK)
    got = bi(x, mask=mask)
    for a, b in zip(got, _by_hand(bi, x, mask=mask), strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(get_mask(got[0]).numpy(), MASK)
    assert all(get_mask(s) is None for s in got[1:])
    # masked steps output zeros with return_sequences (zero_output_for_mask, as tf_keras)
    assert not np.any(got[0].numpy()[~MASK])
    initial = [tf.constant(_rand(2, 3, dtype=np.float64)) for _ in range(4)]
    got = bi(x, initial_state=initial)
    for a, b in zip(got, _by_hand(bi, x, initial=initial), strict=True):
        np.testing.assert_allclose(a.numpy(), b, rtol=1e-12, atol=1e-14)
    again = bi([x] + initial)  # tf_keras' [inputs, *initial_states]
    for a, b in zip(again, got, strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())
    unmerged = layers.Bidirectional(layers.GRU(2, return_sequences=True), merge_mode=None)
    outs = unmerged(tf.constant(_rand(2, 5, 4)), mask=mask)
    assert [get_mask(o) is not None for o in outs] == [True, True]


def test_bidirectional_gradients_match_finite_differences():
    bi = layers.Bidirectional(layers.GRU(2, return_sequences=True, dtype="float64"),
                              merge_mode="mul", dtype="float64")
    x = _rand(2, 4, 3, dtype=np.float64)
    bi(tf.constant(x))
    _randomize(bi)
    tf.testing.check_grads(lambda v: bi(v), [x], order=1)
    h0 = _rand(2, 2, dtype=np.float64)
    tf.testing.check_grads(lambda v, h: bi(v, initial_state=[h, 2.0 * h]), [x, h0], order=1)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(bi(tf.constant(x)) ** 2)
    grads = tape.gradient(loss, bi.trainable_variables)
    assert len(grads) == 6 and all(g is not None for g in grads)


def test_bidirectional_backward_layer_weights_and_config():
    forward = layers.LSTM(2, return_sequences=True, name="fwd")
    backward = layers.GRU(2, return_sequences=True, go_backwards=True, name="bwd")
    bi = layers.Bidirectional(forward, backward_layer=backward, merge_mode="sum", name="bi_cfg")
    assert bi.backward_layer is backward and backward.name == "backward_bwd"
    bi(tf.ones([2, 3, 4]))
    config = bi.get_config()
    assert config["merge_mode"] == "sum" and config["layer"]["config"]["name"] == "fwd"
    assert config["backward_layer"]["config"]["name"] == "bwd"
    again = layers.Bidirectional.from_config(config)
    assert type(again.backward_layer) is layers.GRU and again.get_config() == config
    restored = keras.layers.deserialize(keras.layers.serialize(bi))
    restored.set_weights(bi.get_weights())
    x = tf.constant(_rand(2, 3, 4))
    np.testing.assert_array_equal(restored(x).numpy(), bi(x).numpy())
    # weights= sets the layers' weights at build, forward first
    values = [w + 1.0 for w in bi.get_weights()]
    given = layers.Bidirectional(layers.LSTM(2, return_sequences=True),
                                 backward_layer=layers.GRU(2, return_sequences=True,
                                                           go_backwards=True),
                                 merge_mode="sum", weights=values)
    given(x)
    for a, b in zip(given.get_weights(), values, strict=True):
        np.testing.assert_array_equal(a, b)


def test_bidirectional_in_models():
    x = _rand(3, 5, 4)
    seq = keras.Sequential([
        layers.Bidirectional(layers.LSTM(3, return_sequences=True), input_shape=(5, 4)),
        layers.Bidirectional(layers.GRU(2)), layers.Dense(1)])
    assert tuple(seq(tf.constant(x)).shape) == (3, 1)
    inputs = keras.Input((None, 4))
    seqs, fh, fc, bh, bc = layers.Bidirectional(
        layers.LSTM(3, return_sequences=True, return_state=True))(inputs)
    assert tuple(seqs.shape) == (None, None, 6) and tuple(bc.shape) == (None, 3)
    model = keras.Model(inputs, [seqs, fh, bc])
    outs = model(tf.constant(x))
    assert [tuple(o.shape) for o in outs] == [(3, 5, 6), (3, 3), (3, 3)]
    model.compile("adam", "mse")
    seq.compile("adam", "mse")
    history = seq.fit(x, np.ones((3, 1)), epochs=2, verbose=0)
    assert len(history.history["loss"]) == 2
    f = tf.function(lambda v: seq(v), input_signature=[tf.TensorSpec([None, 5, 4])])
    for n in (2, 3, 4):
        v = tf.constant(_rand(n, 5, 4))
        np.testing.assert_allclose(f(v).numpy(), seq(v).numpy(), rtol=1e-5, atol=1e-6)


def test_bidirectional_errors():
    with pytest.raises(ValueError, match="Please initialize `Bidirectional` layer with a"):
        layers.Bidirectional(3)
    with pytest.raises(ValueError, match="`backward_layer` need to be a"):
        layers.Bidirectional(layers.LSTM(2), backward_layer="lstm")
    with pytest.raises(ValueError, match="Invalid merge mode. Received: max"):
        layers.Bidirectional(layers.LSTM(2), merge_mode="max")
    with pytest.raises(ValueError, match="should have different `go_backwards` value"):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(2))
    with pytest.raises(ValueError, match='same value for attribute "return_sequences", got '
                                         '"False" for forward layer and "True"'):
        layers.Bidirectional(layers.LSTM(2), backward_layer=layers.LSTM(
            2, go_backwards=True, return_sequences=True))
    bi = layers.Bidirectional(layers.LSTM(2, return_state=True))
    with pytest.raises(ValueError, match="the state should be a list containing the states"):
        bi(tf.ones([2, 3, 4]), initial_state=[tf.zeros([2, 2])] * 3)


# ================================================================ against tf_keras
def _tk():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    return tf_keras()


def _compare(tensorflow, theirs, ours, x, mask=None, atol=2e-6):
    """Outputs, masks and gradients (inputs, weights) of both layers on `x`."""
    xt, xo = tensorflow.constant(x), tf.constant(x)
    kw_t = {} if mask is None else {"mask": tensorflow.constant(mask)}
    kw_o = {} if mask is None else {"mask": tf.constant(mask)}
    with tensorflow.GradientTape() as tape:
        tape.watch(xt)
        want = tensorflow.nest.flatten(theirs(xt, **kw_t))
        loss = sum(tensorflow.reduce_sum(tensorflow.sin(o)) for o in want)
    want_grads = tape.gradient(loss, [xt] + theirs.trainable_variables)
    with tf.GradientTape() as tape:
        tape.watch(xo)
        got = tf.nest.flatten(ours(xo, **kw_o))
        loss = sum(tf.reduce_sum(tf.sin(o)) for o in got)
    grads = tape.gradient(loss, [xo] + ours.trainable_variables)
    assert len(got) == len(want)
    for a, b in zip(got + grads, want + want_grads, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=atol)
    for a, b in zip(got, want, strict=True):
        ma, mb = get_mask(a), getattr(b, "_keras_mask", None)
        assert (ma is None) == (mb is None)
        if ma is not None:
            np.testing.assert_array_equal(ma.numpy(), mb.numpy())


def _copy_weights(theirs, ours):
    theirs.set_weights([w + 0.3 * np.sin(np.arange(w.size).reshape(w.shape))
                        for w in theirs.get_weights()])
    ours.set_weights(theirs.get_weights())


def _same_configs(tk, theirs, ours):
    assert ours.get_config() == theirs.get_config()
    ours_s, theirs_s = keras.layers.serialize(ours), tk.layers.serialize(theirs)
    assert ours_s == theirs_s
    again = keras.layers.deserialize(theirs_s)
    assert again.get_config() == ours.get_config()


@pytest.mark.peers
@pytest.mark.parametrize("case", ["dense", "conv2d", "lstm", "masked_dense"])
def test_time_distributed_matches_tf_keras(case):
    tensorflow, tk = _tk()
    make, shape = {
        "dense": (lambda lib: lib.layers.Dense(3, activation="tanh"), (2, 4, 5)),
        "masked_dense": (lambda lib: lib.layers.Dense(3), (2, 5, 4)),
        "conv2d": (lambda lib: lib.layers.Conv2D(2, 3, padding="same"), (2, 3, 5, 4, 2)),
        "lstm": (lambda lib: lib.layers.LSTM(3, return_sequences=True), (2, 3, 4, 5)),
    }[case]
    theirs = tk.layers.TimeDistributed(make(tk), name="td_peer")
    ours = layers.TimeDistributed(make(keras), name="td_peer")
    x = _rand(*shape)
    theirs(tensorflow.constant(x))
    ours(tf.constant(x))
    assert [(v.name, tuple(v.shape)) for v in ours.weights] == \
        [(v.name, tuple(v.shape)) for v in theirs.weights]
    _copy_weights(theirs, ours)
    _compare(tensorflow, theirs, ours, x, mask=MASK if case == "masked_dense" else None)
    config = theirs.get_config()
    config["layer"]["config"]["name"] = ours.layer.name  # the inner layers' default names
    assert ours.get_config() == config
    assert tuple(ours.compute_output_shape((None,) + shape[1:])) == \
        tuple(theirs.compute_output_shape((None,) + shape[1:]))


@pytest.mark.peers
@pytest.mark.parametrize("kind", ["SimpleRNN", "LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("merge_mode", ["concat", "sum", "mul", "ave", None])
def test_bidirectional_matches_tf_keras(kind, merge_mode):
    tensorflow, tk = _tk()
    kw = dict(return_sequences=True, return_state=merge_mode in ("concat", None), name="rnn")

    def make(lib):
        rnn = lib.layers.RNN(lib.layers.LSTMCell(3, name="cell"), **kw) if kind == "RNN" \
            else getattr(lib.layers, kind)(3, **kw)
        return lib.layers.Bidirectional(rnn, merge_mode=merge_mode, name="bi")

    theirs, ours = make(tk), make(keras)
    x = _rand(2, 5, 4)
    theirs(tensorflow.constant(x))
    ours(tf.constant(x))
    assert [(v.name, tuple(v.shape)) for v in ours.weights] == \
        [(v.name, tuple(v.shape)) for v in theirs.weights]
    _copy_weights(theirs, ours)
    _compare(tensorflow, theirs, ours, x)
    _compare(tensorflow, theirs, ours, x, mask=MASK)
    _same_configs(tk, theirs, ours)
    shapes = lambda s: [tuple(v) for v in s] if isinstance(s, list) else [tuple(s)]  # noqa: E731
    assert shapes(ours.compute_output_shape((None, 5, 4))) == \
        shapes(theirs.compute_output_shape((None, 5, 4)))


@pytest.mark.peers
def test_bidirectional_initial_state_backward_layer_and_models_match_tf_keras():
    tensorflow, tk = _tk()

    def make(lib):
        return lib.layers.Bidirectional(
            lib.layers.LSTM(3, return_state=True, name="f"),
            backward_layer=lib.layers.LSTM(3, activation="relu", return_state=True,
                                           go_backwards=True, name="b"),
            name="bi_init")

    theirs, ours = make(tk), make(keras)
    x = _rand(2, 5, 4)
    init = [_rand(2, 3) for _ in range(4)]
    theirs(tensorflow.constant(x))
    ours(tf.constant(x))
    _copy_weights(theirs, ours)
    want = theirs(tensorflow.constant(x), initial_state=[tensorflow.constant(s) for s in init])
    got = ours(tf.constant(x), initial_state=[tf.constant(s) for s in init])
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=2e-5, atol=2e-6)
    assert [v.name for v in ours.weights] == [v.name for v in theirs.weights]
    _same_configs(tk, theirs, ours)

    def model(lib):
        inputs = lib.Input((5, 4))
        h = lib.layers.TimeDistributed(lib.layers.Dense(4, name="d"), name="td")(inputs)
        h = lib.layers.Bidirectional(lib.layers.GRU(3, return_sequences=True, name="g"),
                                     name="bg")(h)
        return lib.Model(inputs, lib.layers.Bidirectional(lib.layers.LSTM(2, name="l"),
                                                          merge_mode="ave", name="bl")(h))

    theirs, ours = model(tk), model(keras)
    assert [v.name for v in ours.weights] == [v.name for v in theirs.weights]
    _copy_weights(theirs, ours)
    _compare(tensorflow, theirs, ours, x)


@pytest.mark.peers
def test_wrapped_models_load_from_and_into_tf_keras_files(tmp_path):
    tensorflow, tk = _tk()

    def model(lib):
        return lib.Sequential([
            lib.layers.TimeDistributed(lib.layers.Dense(3), input_shape=(4, 5)),
            lib.layers.Bidirectional(lib.layers.LSTM(2, return_sequences=True)),
            lib.layers.Bidirectional(lib.layers.GRU(2), merge_mode="sum")])

    theirs, ours = model(tk), model(keras)
    x = _rand(2, 4, 5)
    theirs.save_weights(str(tmp_path / "w.h5"))
    ours.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    for name in ("theirs.keras", "theirs.h5"):
        theirs.save(str(tmp_path / name))
        loaded = keras.models.load_model(str(tmp_path / name))
        np.testing.assert_allclose(loaded(x).numpy(), theirs(x).numpy(), rtol=1e-5, atol=1e-6)
    ours.save(str(tmp_path / "ours.keras"))
    loaded = tk.models.load_model(str(tmp_path / "ours.keras"))
    np.testing.assert_allclose(loaded(x).numpy(), ours(x).numpy(), rtol=1e-5, atol=1e-6)
