"""RNN cells and `keras.layers.RNN`: `SimpleRNNCell`, `LSTMCell`, `GRUCell` one step at a
time against NumPy references of Keras' formulas; `RNN(cell)` equal to `SimpleRNN`,
`LSTM` and `GRU`; cells of the user's own (and subclasses overriding `call`) run by
`RNN`; weight names as tf_keras gives them; `go_backwards`, `return_state`,
`initial_state`; gradients against central differences in float64; the errors of bad
arguments. Last, outputs on weights copied from tf_keras 2.21 and its weight names,
where TensorFlow is installed.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

from keras_helpers import (_rand, assert_tape_gradients_match, central_differences,
                           np_gru_step, np_lstm_step, np_rnn, np_simple_rnn_step, tf_keras)

CELLS = {
    "simple": (lambda **kw: layers.SimpleRNNCell(3, **kw), np_simple_rnn_step, 1),
    "lstm": (lambda **kw: layers.LSTMCell(3, **kw), np_lstm_step, 2),
    "gru": (lambda **kw: layers.GRUCell(3, **kw), np_gru_step, 1),
    "gru_reset_before": (lambda **kw: layers.GRUCell(3, reset_after=False, **kw),
                         lambda *a: np_gru_step(*a, reset_after=False), 1),
}


def _randomize(layer, scale=0.5, seed=0):
    """Weights drawn at random (biases too, which start at 0/1)."""
    rng = np.random.default_rng(seed)
    layer.set_weights([rng.standard_normal(w.shape) * scale for w in layer.get_weights()])


def _np_weights(layer):
    return [w.numpy().astype(np.float64) for w in layer.weights]


# ================================================================ one step
@pytest.mark.parametrize("name", sorted(CELLS))
def test_one_step_matches_numpy(name):
    make, step, n_states = CELLS[name]
    cell = make(dtype="float64")
    x = _rand(2, 4, dtype=np.float64)
    states = [_rand(2, 3, dtype=np.float64) for _ in range(n_states)]
    cell.build((None, 4))
    _randomize(cell)
    out, new = cell(tf.constant(x), [tf.constant(s) for s in states])
    want_out, want_new = step(x, states, *_np_weights(cell))
    np.testing.assert_allclose(out.numpy(), want_out, rtol=1e-12)
    assert isinstance(new, list) and len(new) == n_states
    for got, want in zip(new, want_new, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    if n_states == 1:  # one tensor in, one tensor out, as tf_keras
        out2, single = cell(tf.constant(x), tf.constant(states[0]))
        assert isinstance(single, tf.Tensor)
        np.testing.assert_allclose(single.numpy(), want_new[0], rtol=1e-12)


def test_hand_computed_simple_rnn_step():
    cell = layers.SimpleRNNCell(2, kernel_initializer="ones", recurrent_initializer="ones",
                                bias_initializer="zeros", dtype="float64")
    out, _ = cell(tf.constant(np.array([[0.5, -0.25]])), [tf.constant(np.array([[0.1, 0.2]]))])
    np.testing.assert_allclose(out.numpy(), np.tanh([[0.25 + 0.3, 0.25 + 0.3]]), rtol=1e-15)


def test_state_sizes_and_initial_states():
    lstm, gru = layers.LSTMCell(5), layers.GRUCell(4)
    assert lstm.state_size == [5, 5] and lstm.output_size == 5
    assert gru.state_size == 4 and layers.SimpleRNNCell(2).state_size == 2
    zeros = lstm.get_initial_state(batch_size=3, dtype="float64")
    assert isinstance(zeros, list) and [z.shape for z in zeros] == [(3, 5)] * 2
    assert zeros[0].dtype == tf.float64 and not zeros[0].numpy().any()
    single = gru.get_initial_state(inputs=tf.ones([2, 7]))
    assert single.shape == (2, 4) and single.dtype == tf.float32


# ================================================================ RNN of a cell
@pytest.mark.parametrize("name, layer_cls", [("simple", layers.SimpleRNN), ("lstm", layers.LSTM),
                                             ("gru", layers.GRU)])
def test_rnn_of_a_cell_equals_the_layer_and_numpy(name, layer_cls):
    make, step, n_states = CELLS[name]
    rnn = layers.RNN(make(dtype="float64"), return_sequences=True, return_state=True,
                     dtype="float64")
    x = _rand(2, 5, 4, dtype=np.float64)
    rnn(tf.constant(x))
    _randomize(rnn)
    seq, *states = rnn(tf.constant(x))
    want_seq, want_states = np_rnn(step, _np_weights(rnn.cell), x, [np.zeros((2, 3))] * n_states)
    np.testing.assert_allclose(seq.numpy(), want_seq, rtol=1e-12, atol=1e-14)
    for got, want in zip(states, want_states, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-14)
    layer = layer_cls(3, return_sequences=True, return_state=True, dtype="float64")
    layer(tf.constant(x))
    layer.set_weights(rnn.get_weights())
    for a, b in zip(layer(tf.constant(x)), (seq, *states), strict=True):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_go_backwards_initial_state_and_list_inputs():
    rnn = layers.RNN(layers.LSTMCell(3, dtype="float64"), return_sequences=True,
                     return_state=True, go_backwards=True, dtype="float64")
    x = _rand(2, 5, 4, dtype=np.float64)
    h0, c0 = _rand(2, 3, dtype=np.float64), _rand(2, 3, dtype=np.float64)
    rnn(tf.constant(x))
    _randomize(rnn)
    seq, h, c = rnn(tf.constant(x), initial_state=[tf.constant(h0), tf.constant(c0)])
    want_seq, (want_h, want_c) = np_rnn(np_lstm_step, _np_weights(rnn.cell), x, [h0, c0],
                                        go_backwards=True)
    np.testing.assert_allclose(seq.numpy(), want_seq, rtol=1e-12)
    np.testing.assert_allclose(c.numpy(), want_c, rtol=1e-12)
    np.testing.assert_allclose(h.numpy(), seq.numpy()[:, -1], rtol=1e-15)
    # tf_keras' other spelling: the initial states after the inputs, in one list
    seq2, _, _ = rnn([tf.constant(x), tf.constant(h0), tf.constant(c0)])
    np.testing.assert_array_equal(seq2.numpy(), seq.numpy())


class MinimalRNNCell(keras.layers.Layer):
    """tf_keras' documented example cell: h = x @ W + tanh(h_prev @ U), two states."""

    def __init__(self, units, **kwargs):
        super().__init__(**kwargs)
        self.units = units
        self.state_size = [units, 1]
        self.calls = 0

    def build(self, input_shape):
        self.kernel = self.add_weight("kernel", (input_shape[-1], self.units))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, self.units))

    def call(self, inputs, states):
        self.calls += 1
        prev, count = states
        h = tf.matmul(inputs, self.kernel) + tf.tanh(tf.matmul(prev, self.recurrent_kernel))
        return h, [h, count + 1.0]


def test_a_cell_of_the_users_own():
    cell = MinimalRNNCell(3, dtype="float64", name="minimal")
    rnn = layers.RNN(cell, return_state=True, dtype="float64", name="outer")
    x = _rand(2, 4, 5, dtype=np.float64)
    out, h, count = rnn(tf.constant(x))
    assert cell.calls == 4
    np.testing.assert_array_equal(count.numpy(), np.full((2, 1), 4.0))
    w, u = cell.kernel.numpy(), cell.recurrent_kernel.numpy()
    state = np.zeros((2, 3))
    for t in range(4):
        state = x[:, t] @ w + np.tanh(state @ u)
    np.testing.assert_allclose(out.numpy(), state, rtol=1e-12)
    assert [v.name for v in rnn.weights] == ["outer/minimal/kernel:0",
                                             "outer/minimal/recurrent_kernel:0"]
    mask = np.array([[True, True, False, True], [False, False, False, False]])
    _, _, masked_count = rnn(tf.constant(x), mask=tf.constant(mask))
    np.testing.assert_array_equal(masked_count.numpy(), [[3.0], [0.0]])


def test_a_subclass_overriding_call_is_called():
    class Doubled(layers.GRUCell):
        def call(self, inputs, states, training=None):
            out, new = super().call(inputs * 2.0, states, training=training)
            return out, new

    x = _rand(2, 3, 4)
    plain = layers.RNN(layers.GRUCell(3))
    plain(tf.constant(x))
    doubled = layers.RNN(Doubled(3))
    doubled(tf.constant(x))
    doubled.set_weights(plain.get_weights())
    np.testing.assert_allclose(doubled(tf.constant(x)).numpy(),
                               plain(tf.constant(2.0 * x)).numpy(), rtol=1e-6, atol=1e-7)


def test_weight_names_follow_tf_keras():
    def names(layer):
        layer(tf.ones([1, 2, 3]))
        return [v.name for v in layer.weights]

    assert names(layers.LSTM(2, name="enc")) == ["enc/lstm_cell/kernel:0",
                                                 "enc/lstm_cell/recurrent_kernel:0",
                                                 "enc/lstm_cell/bias:0"]
    assert names(layers.GRU(2, name="g")) == ["g/gru_cell/kernel:0", "g/gru_cell/recurrent_kernel:0",
                                              "g/gru_cell/bias:0"]
    assert names(layers.SimpleRNN(2, name="s"))[0] == "s/simple_rnn_cell/kernel:0"
    assert names(layers.RNN(layers.LSTMCell(2, name="c"), name="r"))[2] == "r/c/bias:0"
    cell = layers.GRUCell(2, name="alone")
    cell(tf.ones([1, 3]), tf.zeros([1, 2]))
    assert [v.name for v in cell.weights][0] == "alone/kernel:0"

    class Net(keras.Model):
        def __init__(self):
            super().__init__(name="net")
            self.lstm = layers.LSTM(2, name="lstm")

        def call(self, x):
            return self.lstm(x)

    assert names(Net())[0] == "net/lstm/lstm_cell/kernel:0"


def test_layer_attributes_read_the_cell():
    lstm = layers.LSTM(3, activation="relu", unit_forget_bias=False, use_bias=False)
    assert lstm.units == 3 and lstm.activation is keras.activations.relu
    assert lstm.unit_forget_bias is False and lstm.use_bias is False
    lstm(tf.ones([1, 2, 4]))
    assert lstm.kernel is lstm.cell.kernel and lstm.bias is None
    assert layers.GRU(2).reset_after is True
    assert layers.GRU(2).cell.recurrent_activation is keras.activations.sigmoid


# ================================================================ gradients
@pytest.mark.parametrize("name", sorted(CELLS))
def test_cell_gradients_match_central_differences(name):
    make, _, n_states = CELLS[name]
    cell = make(dtype="float64")
    cell.build((None, 4))
    _randomize(cell, seed=1)
    x = _rand(2, 4, dtype=np.float64)
    states = [_rand(2, 3, dtype=np.float64) for _ in range(n_states)]
    probe = np.linspace(-1, 1, 6).reshape(2, 3)

    def loss(x, *states):
        out, new = cell(x, list(states))
        return tf.reduce_sum(out * probe) + tf.reduce_sum(new[-1] ** 2)

    assert_tape_gradients_match(loss, [x] + states)
    weights = _np_weights(cell)
    with tf.GradientTape() as tape:
        value = loss(tf.constant(x), *[tf.constant(s) for s in states])
    grads = tape.gradient(value, cell.trainable_variables)

    def by_weights(*ws):
        cell.set_weights(ws)
        return loss(tf.constant(x), *[tf.constant(s) for s in states])

    want = central_differences(by_weights, weights)
    cell.set_weights(weights)
    for g, w, v in zip(grads, want, cell.trainable_variables, strict=True):
        np.testing.assert_allclose(g.numpy(), w, rtol=1e-6, atol=1e-8, err_msg=v.name)


@pytest.mark.parametrize("name", ["simple", "lstm", "gru"])
def test_rnn_gradients_match_central_differences(name):
    make, _, _ = CELLS[name]
    rnn = layers.RNN(make(dtype="float64"), return_sequences=True, go_backwards=True,
                     dtype="float64")
    x = _rand(2, 4, 3, dtype=np.float64)
    rnn(tf.constant(x))
    _randomize(rnn, seed=2)
    probe = np.cos(np.arange(2 * 4 * 3)).reshape(2, 4, 3)
    assert_tape_gradients_match(lambda v: tf.reduce_sum(rnn(v) * probe), [x])


# ================================================================ errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.LSTMCell(0), ValueError, "positive integer, got 0"),
    (lambda: layers.GRUCell(2.5), ValueError, "positive integer, got 2.5"),
    (lambda: layers.SimpleRNNCell(2, dropout=0.5), NotImplementedError, "dropout=0.5"),
    (lambda: layers.LSTM(2, recurrent_dropout=0.1), NotImplementedError, "recurrent_dropout"),
    (lambda: layers.GRUCell(2, kernel_regularizer="l2"), NotImplementedError, "kernel_regularizer"),
    (lambda: layers.GRUCell(2, implementation=3), ValueError, "`implementation` must be 1 or 2"),
    (lambda: layers.RNN(object()), ValueError, "should have a `call` method and a `state_size`"),
    (lambda: layers.RNN([layers.LSTMCell(2), layers.GRUCell(2)]), NotImplementedError,
     "StackedRNNCells"),
    (lambda: layers.LSTM(2, time_major=True), NotImplementedError, "time_major"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_call_errors_name_the_shapes():
    cell = layers.LSTMCell(3)
    cell(tf.ones([2, 4]), [tf.zeros([2, 3])] * 2)
    with pytest.raises(ValueError, match=r"`inputs` must have shape \(batch, 4\); received \(2, 5\)"):
        cell(tf.ones([2, 5]), [tf.zeros([2, 3])] * 2)
    with pytest.raises(ValueError, match=r"`states` must hold 2 tensor\(s\).*received 1"):
        cell(tf.ones([2, 4]), [tf.zeros([2, 3])])
    with pytest.raises(ValueError, match=r"states\[1\] must have shape \(2, 3\).*received \(2, 4\)"):
        cell(tf.ones([2, 4]), [tf.zeros([2, 3]), tf.zeros([2, 4])])
    rnn = layers.RNN(layers.GRUCell(3))
    with pytest.raises(ValueError, match=r"initial_state\[0\] must have shape \(2, 3\).*\(2, 2\)"):
        rnn(tf.ones([2, 5, 4]), initial_state=tf.zeros([2, 2]))
    with pytest.raises(ValueError, match=r"`mask` must have shape \(2, 5\).*received \(2, 4\)"):
        rnn(tf.ones([2, 5, 4]), mask=tf.ones([2, 4], tf.bool))
    with pytest.raises(ValueError, match=r"expected ndim=3, found ndim=2"):
        rnn(tf.ones([2, 4]))


# ================================================================ against tf_keras
@pytest.mark.parametrize("name", sorted(CELLS))
def test_cells_match_tf_keras_on_its_weights(name):
    tensorflow, tk = tf_keras()
    make, _, n_states = CELLS[name]
    theirs = {"simple": lambda: tk.layers.SimpleRNNCell(3), "lstm": lambda: tk.layers.LSTMCell(3),
              "gru": lambda: tk.layers.GRUCell(3),
              "gru_reset_before": lambda: tk.layers.GRUCell(3, reset_after=False)}[name]()
    x = _rand(2, 4)
    states = [_rand(2, 3) for _ in range(n_states)]
    want_out, want_new = theirs(tensorflow.constant(x), [tensorflow.constant(s) for s in states])
    theirs.set_weights([w * 3 for w in theirs.get_weights()])  # bias nonzero, larger weights
    want_out, want_new = theirs(tensorflow.constant(x), [tensorflow.constant(s) for s in states])
    ours = make()
    ours.build((None, 4))
    ours.set_weights(theirs.get_weights())  # TensorFlow's weights into ours
    out, new = ours(tf.constant(x), [tf.constant(s) for s in states])
    np.testing.assert_allclose(out.numpy(), want_out.numpy(), rtol=1e-5, atol=1e-6)
    for a, b in zip(new, want_new, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]


@pytest.mark.parametrize("name", ["simple", "lstm", "gru"])
def test_rnn_layers_match_tf_keras_on_its_weights_and_names(name):
    tensorflow, tk = tf_keras()
    kw = dict(return_sequences=True, return_state=True, go_backwards=True)
    pick = {"simple": ("SimpleRNN", "SimpleRNNCell"), "lstm": ("LSTM", "LSTMCell"),
            "gru": ("GRU", "GRUCell")}[name]
    x = _rand(2, 5, 4)
    for make in (lambda lib, n: getattr(lib.layers, pick[0])(3, name=n, **kw),
                 lambda lib, n: lib.layers.RNN(getattr(lib.layers, pick[1])(3, name="c"),
                                               name=n, **kw)):
        theirs, ours = make(tk, "their_rnn"), make(keras, "their_rnn")
        theirs(tensorflow.constant(x))
        ours(tf.constant(x))
        assert [v.name for v in ours.weights] == [v.name for v in theirs.weights]
        theirs.set_weights([w + 0.3 * np.sin(np.arange(w.size).reshape(w.shape))
                            for w in theirs.get_weights()])
        ours.set_weights(theirs.get_weights())
        for a, b in zip(ours(tf.constant(x)), theirs(tensorflow.constant(x)), strict=True):
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
