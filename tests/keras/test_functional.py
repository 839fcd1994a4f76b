"""The functional API: `keras.Input`, layers called on KerasTensors, `keras.Model(inputs,
outputs)`. Chains, shared layers, several inputs and outputs (lists, dicts), gradients,
tf.function, `training=`, nesting (in models and Sequential), shapes with unknown dims,
operators on KerasTensors, summary (tf_keras' table), and the errors of misuse. Last,
outputs, gradients and moving statistics of small models against numbers recorded from
tf_keras 2.21 with the same weights.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers

from keras_helpers import _rand


def _summary(model) -> list[str]:
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        model.summary()
    return [line.rstrip() for line in buf.getvalue().splitlines()]


# ================================================================ Input and KerasTensor
def test_input_is_symbolic():
    x = keras.Input(shape=(4,), name="feat")
    assert x.shape == (None, 4) and x.dtype == tf.float32 and x.name == "feat"
    assert keras.Input(shape=(2, 3), batch_size=8, dtype="int32").shape == (8, 2, 3)
    assert keras.Input(batch_shape=(None, 5)).shape == (None, 5)
    assert "created by layer 'feat'" in repr(x)
    assert isinstance(x.node.layer, keras.InputLayer)


def test_default_input_and_model_names_follow_keras():
    a, b = keras.Input((1,)), keras.Input((1,))
    assert a.name.startswith("input_") and b.name != a.name
    m = keras.Model(a, layers.Dense(1)(a))
    assert m.name.startswith("model") and type(m).__name__ == "Functional"


def test_layer_call_records_shapes_and_dtypes():
    x = keras.Input((None,), dtype="int32")
    e = layers.Embedding(10, 4)(x)
    assert e.shape == (None, None, 4) and e.dtype == tf.float32
    seq, h, c = layers.LSTM(3, return_sequences=True, return_state=True)(e)
    assert (seq.shape, h.shape, c.shape) == ((None, None, 3), (None, 3), (None, 3))
    img = keras.Input((None, None, 3))
    y = layers.Conv2D(4, 3)(img)
    for _ in range(6):  # deeper than the probe's size: compute_output_shape answers
        y = layers.MaxPooling2D()(y)
    assert y.shape == (None, None, None, 4)
    z = layers.Flatten()(layers.Conv2D(2, 3)(keras.Input((8, 8, 1))))
    assert z.shape == (None, 72)
    lam = layers.Lambda(lambda t: t[:, :2] * 2.0)(keras.Input((None, 5)))
    assert lam.shape == (None, 2, 5)


def test_lambda_without_output_shape_finds_unknown_dims():
    t = layers.Lambda(lambda v: tf.reduce_sum(v, axis=1))(keras.Input((None, 3)))
    assert t.shape == (None, 3)
    u = layers.Lambda(lambda v: tf.concat([v, v], axis=1))(keras.Input((None, 3)))
    assert u.shape == (None, None, 3)


# ================================================================ models
def test_chain_equals_layers_applied_by_hand():
    x = keras.Input((4,))
    d1, d2 = layers.Dense(3, activation="relu"), layers.Dense(2)
    model = keras.Model(x, d2(d1(x)))
    v = _rand(5, 4)
    np.testing.assert_allclose(model(v).numpy(), d2(d1(tf.constant(v))).numpy(), rtol=1e-6)
    assert model.layers[1:] == [d1, d2]
    assert model.trainable_variables == d1.trainable_variables + d2.trainable_variables
    assert [w.name for w in model.weights] == [w.name for w in d1.weights + d2.weights]
    assert model.count_params() == 4 * 3 + 3 + 3 * 2 + 2
    assert model.inputs == [x] and len(model.outputs) == 1
    np.testing.assert_allclose(model.predict(v), model(v).numpy())


def test_shared_layer_uses_one_set_of_weights():
    a, b = keras.Input((3,)), keras.Input((3,))
    shared = layers.Dense(2, name="twice")
    model = keras.Model([a, b], [shared(a), shared(b)])
    assert [l.name for l in model.layers].count("twice") == 1
    assert len(model.trainable_variables) == 2
    va, vb = _rand(2, 3), _rand(2, 3)
    ya, yb = model([va, vb])
    np.testing.assert_allclose(ya.numpy(), shared(tf.constant(va)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(yb.numpy(), shared(tf.constant(vb)).numpy(), rtol=1e-6)
    with tf.GradientTape() as tape:
        ya, yb = model([va, vb])
        loss = tf.reduce_sum(ya) + tf.reduce_sum(yb)
    gk, gb = tape.gradient(loss, model.trainable_variables)
    np.testing.assert_allclose(gk.numpy(), np.repeat((va + vb).sum(0)[:, None], 2, 1),
                               rtol=1e-5)
    np.testing.assert_allclose(gb.numpy(), [4.0, 4.0])


def test_dict_inputs_and_outputs():
    p, q = keras.Input((2,), name="p"), keras.Input((3,), name="q")
    o1, o2 = layers.Dense(1)(p), layers.Dense(2)(q)
    model = keras.Model({"p": p, "q": q}, {"one": o1, "two": o2})
    out = model({"q": tf.ones([4, 3]), "p": tf.ones([4, 2])})
    assert set(out) == {"one", "two"} and out["two"].shape == (4, 2)
    listed = keras.Model([p, q], [o1, o2])
    by_name = listed({"p": tf.ones([1, 2]), "q": tf.ones([1, 3])})
    np.testing.assert_allclose(by_name[0].numpy(), out["one"].numpy()[:1])
    with pytest.raises(ValueError, match=r"missing input\(s\) \['q'\]"):
        model({"p": tf.ones([1, 2])})


def test_inputs_are_cast_to_the_input_dtype():
    x = keras.Input((2,))
    model = keras.Model(x, layers.Dense(1)(x))
    assert model(np.ones((1, 2))).dtype == tf.float32
    assert model([[1.0, 2.0]]).shape == (1, 1)  # one input given as nested lists


def test_gradients_match_finite_differences():
    x = keras.Input((3,))
    h = layers.Dense(4, activation="tanh", dtype="float64")(x)
    model = keras.Model(x, layers.Dense(1, dtype="float64")(h))
    v = tf.constant(_rand(2, 3, dtype=np.float64))
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(model(v) ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    k = model.trainable_variables[0]
    eps, base = 1e-6, k.numpy()
    for idx in [(0, 0), (2, 3)]:
        bumped = base.copy(); bumped[idx] += eps
        k.assign(bumped); up = float(tf.reduce_sum(model(v) ** 2))
        bumped[idx] -= 2 * eps
        k.assign(bumped); down = float(tf.reduce_sum(model(v) ** 2))
        k.assign(base)
        assert abs((up - down) / (2 * eps) - grads[0].numpy()[idx]) < 1e-6


def test_tf_function_traces_once_and_trains():
    x = keras.Input((3,))
    model = keras.Model(x, layers.Dense(1)(layers.Dense(4, activation="relu")(x)))
    opt = keras.optimizers.SGD(0.1)
    traces = []

    @tf.function
    def step(v, y):
        traces.append(1)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean((model(v, training=True) - y) ** 2)
        grads = tape.gradient(loss, model.trainable_variables)
        opt.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    v, y = tf.constant(_rand(8, 3)), tf.constant(_rand(8, 1))
    losses = [float(step(v, y)) for _ in range(20)]
    assert len(traces) == 1 and losses[-1] < losses[0]


def test_training_reaches_dropout_and_batch_normalization():
    x = keras.Input((6,))
    bn = layers.BatchNormalization()
    model = keras.Model(x, bn(layers.Dropout(0.5)(x)))
    v = tf.constant(_rand(4, 6) + 3.0)
    np.testing.assert_allclose(model(v).numpy(), model(v, training=False).numpy())
    assert np.all(bn.moving_mean.numpy() == 0)
    tf.random.set_seed(0)
    out = model(v, training=True).numpy()
    assert not np.allclose(out, model(v).numpy())
    assert np.all(bn.moving_mean.numpy() != 0)
    # training fixed at the graph's call wins over the model call's
    fixed = keras.Model(x, layers.Dropout(0.999, seed=1)(x, training=True))
    assert np.count_nonzero(fixed(tf.ones([4, 6]), training=False).numpy()) < 24


def test_functional_model_nests_in_models_and_sequential():
    x = keras.Input((4,), name="xi")
    inner = keras.Model(x, layers.Dense(3, name="inner_d")(x), name="inner")
    y = keras.Input((4,))
    outer = keras.Model(y, layers.Dense(1, name="outer_d")(inner(y)), name="outer")
    assert [l.name for l in outer.layers][1:] == ["inner", "outer_d"]
    assert [v.name for v in outer.trainable_variables] == [
        "inner_d/kernel:0", "inner_d/bias:0", "outer_d/kernel:0", "outer_d/bias:0"]
    v = _rand(2, 4)
    expect = outer.layers[2](inner(tf.constant(v)))
    np.testing.assert_allclose(outer(v).numpy(), expect.numpy(), rtol=1e-6)
    seq = keras.Sequential([inner, layers.Dense(2)])
    assert seq(v).shape == (2, 2) and len(seq.trainable_variables) == 4
    z = keras.Input((4,))
    stack = keras.Sequential([layers.Dense(3), layers.Dense(2)], name="stack")
    model = keras.Model(z, stack(z))
    assert model.layers[1] is stack and model(v).shape == (2, 2)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(outer(v))
    assert all(g is not None for g in tape.gradient(loss, outer.trainable_variables))


def test_subclassed_model_called_on_inputs_is_one_node():
    class Twice(keras.Model):
        def __init__(self):
            super().__init__(name="twice")
            self.d = layers.Dense(2, name="td")

        def call(self, t, training=False):
            return self.d(t) * 2.0

    x = keras.Input((3,))
    sub = Twice()
    model = keras.Model(x, sub(x))
    assert model.layers[1] is sub and model(tf.ones([1, 3])).shape == (1, 2)


def test_operators_record_op_layers():
    u = keras.Input((3,))
    v = (u * 2.0 + 1.0) / u[:, :1] - (-u)
    model = keras.Model(u, 2.0 - v)
    x = np.array([[1.0, 2.0, 4.0]], np.float32)
    expect = 2.0 - ((x * 2 + 1) / x[:, :1] + x)
    np.testing.assert_allclose(model(x).numpy(), expect, rtol=1e-6)
    assert any(l.name.startswith("tf.__operators__.add") for l in model.layers)


# ================================================================ summary
def test_summary_with_connections_matches_tf_keras():
    a, b = keras.Input((4,), name="a"), keras.Input((3,), name="b")
    shared = layers.Dense(5, name="shared")
    h1 = shared(layers.Dense(5, name="pa")(a))
    h3 = shared(layers.Dense(5, name="pb")(b))
    c = layers.Lambda(lambda t: tf.concat(t, -1), name="cat")([h1, h3])
    model = keras.Model([a, b], layers.Dense(2, name="out")(c), name="two")
    lines = _summary(model)
    # tf_keras 2.21's table for the same graph (its Concatenate layer here a Lambda)
    assert lines[:3] == ['Model: "two"', "_" * 98,
                         " Layer (type)                Output Shape                 Param #   "
                         "Connected to"]
    body = [l for l in lines[4:-5] if l]
    assert body == [
        " a (InputLayer)              [(None, 4)]                  0         []",
        " b (InputLayer)              [(None, 3)]                  0         []",
        " pa (Dense)                  (None, 5)                    25        ['a[0][0]']",
        " pb (Dense)                  (None, 5)                    20        ['b[0][0]']",
        " shared (Dense)              (None, 5)                    30        ['pa[0][0]',",
        "                                                                     'pb[0][0]']",
        " cat (Lambda)                (None, 10)                   0         ['shared[0][0]',",
        "                                                                     'shared[1][0]']",
        " out (Dense)                 (None, 2)                    22        ['cat[0][0]']",
    ]
    assert lines[-4] == "Total params: 97 (388.00 Byte)"


def test_summary_of_a_chain_is_sequential_like():
    x = keras.Input((4,), name="x")
    y = layers.Dense(2, name="d2")(layers.Dropout(0.1, name="dr")(layers.Dense(3, name="d1")(x)))
    lines = _summary(keras.Model(x, y, name="chain"))
    assert [l for l in lines[4:-5] if l] == [
        " x (InputLayer)              [(None, 4)]               0",
        " d1 (Dense)                  (None, 3)                 15",
        " dr (Dropout)                (None, 3)                 0",
        " d2 (Dense)                  (None, 2)                 8",
    ]


# ================================================================ errors
def test_symbolic_tensor_has_no_value():
    x = keras.Input((4,), name="sym")
    for use in (x.numpy, lambda: bool(x), lambda: float(x), lambda: np.asarray(x)):
        with pytest.raises(TypeError, match="symbolic KerasTensor.*Lambda"):
            use()
    # the namespaces' ops record layers (test_symbolic_ops.py); a family's own function,
    # which no namespace wraps, names the problem
    with pytest.raises(TypeError, match="could not be converted.*Lambda"):
        tf.ops.shape.concat([x, x], axis=1)
    with pytest.raises(TypeError, match="Lambda"):
        tf.ops.transcendental.exp(x)


def test_disconnected_graph_names_the_missing_input():
    a, b = keras.Input((2,), name="a_in"), keras.Input((2,), name="b_in")
    out = layers.Lambda(lambda t: t[0] + t[1])([layers.Dense(2)(a), layers.Dense(2)(b)])
    with pytest.raises(ValueError, match="Graph disconnected.*b_in.*inputs="):
        keras.Model(a, out)


def test_wrong_inputs_to_the_model():
    a, b = keras.Input((2,)), keras.Input((3,))
    model = keras.Model([a, b], layers.Dense(1)(a))
    with pytest.raises(ValueError, match=r"expects 2 input\(s\), but it received 1"):
        model(tf.ones([1, 2]))
    with pytest.raises(ValueError, match=r"Input 1 of layer .* expected shape=\(None, 3\), "
                                         r"found shape=\(1, 4\)"):
        model([tf.ones([1, 2]), tf.ones([1, 4])])
    single = keras.Model(a, layers.Dense(1)(a))
    with pytest.raises(ValueError, match=r"expects 1 input\(s\), but it received 2"):
        single([tf.ones([1, 2]), tf.ones([1, 2])])


def test_bad_model_arguments():
    x = keras.Input((2,))
    with pytest.raises(TypeError, match="must be a KerasTensor"):
        keras.Model(x, tf.ones([1, 2]))
    with pytest.raises(TypeError, match=r"shape=\(4,\)"):
        keras.Input(4)
    with pytest.raises(ValueError, match="shape"):
        keras.Input()
    with pytest.raises(ValueError, match="expected min_ndim=4"):
        layers.Conv2D(2, 3)(x)


# ================================================================ tf_keras numbers
def _w(shape, k):
    n = int(np.prod(shape))
    return (np.sin(np.arange(n) * 0.7 + k) * 0.5).reshape(shape).astype(np.float32)


def _set_weights(model, k=1):
    for i, layer in enumerate(model.layers):
        if layer.weights:
            layer.set_weights([_w(v.shape, k * i + j) for j, v in enumerate(layer.weights)])


# tf_keras 2.21 (TF_USE_LEGACY_KERAS=1), the same graph and weights
TF_OUT = [[0.6361112594604492, 0.8595129251480103], [0.5934095978736877, 0.7665917277336121],
          [0.6294862031936646, 0.8331494331359863], [0.6050419211387634, 0.8011530637741089],
          [0.6082146167755127, 0.786505937576294]]
TF_H = [[0.06019780412316322, -0.2581017017364502, -0.4335172772407532],
        [0.10072493553161621, -0.21799969673156738, -0.4136253297328949]]
TF_OUT_TRAINING = [[0.19940185546875, 0.6132569313049316],
                   [-0.009234234690666199, -0.052081212401390076],
                   [0.20603930950164795, 0.4369366765022278],
                   [0.014825999736785889, 0.1842232495546341],
                   [0.10509492456912994, 0.10440942645072937]]
TF_LOSS = 0.7081130146980286
TF_GRADS = [
    [2.5229899883270264, -0.46155476570129395, -0.5015336275100708, 2.925825595855713,
     -0.5717011094093323, -0.6687091588973999, 1.9525997638702393, -0.4129675030708313,
     -0.5213803648948669, 0.061035752296447754, -0.060008853673934937, -0.12883824110031128],
    [0.01644785702228546, 0.029400542378425598, 0.06147097051143646],
    [0.658409833908081, -0.8390360474586487, -1.2346385717391968],
    [-1.203519582748413, 0.9981516003608704, 1.54282546043396],
    [-0.337080717086792, -0.6039075255393982, 0.04877554997801781, 0.38906946778297424,
     0.33424878120422363, 1.0020686388015747],
    [1.0322556495666504, 2.5734901428222656]]
TF_MOVING_MEAN = [-0.13692405819892883, 0.1952059268951416, 0.43600961565971375]
TF_SEQ = [[-0.3467530906200409], [-0.34551355242729187]]


def test_two_input_model_against_tf_keras():
    a, b = keras.Input((4,), name="a"), keras.Input((4,), name="b")
    shared = layers.Dense(3, activation="tanh", name="shared")
    ha, hb = shared(a), shared(b)
    out = layers.Dense(2, name="out")(layers.BatchNormalization(name="bn")(ha + hb))
    model = keras.Model([a, b], [out, ha])
    _set_weights(model)
    assert [v.name for v in model.trainable_variables] == [
        "shared/kernel:0", "shared/bias:0", "bn/gamma:0", "bn/beta:0", "out/kernel:0",
        "out/bias:0"]
    xa, xb = tf.constant(_w((5, 4), 10)), tf.constant(_w((5, 4), 20) * 2)
    o, h = model([xa, xb])
    np.testing.assert_allclose(o.numpy(), TF_OUT, rtol=1e-5)
    np.testing.assert_allclose(h.numpy()[:2], TF_H, rtol=1e-5, atol=1e-7)
    with tf.GradientTape() as tape:
        ot, _ = model([xa, xb], training=True)
        loss = tf.reduce_sum(ot ** 2)
    grads = tape.gradient(loss, model.trainable_variables)
    np.testing.assert_allclose(ot.numpy(), TF_OUT_TRAINING, rtol=1e-5, atol=1e-6)
    assert abs(float(loss) - TF_LOSS) < 1e-6
    for g, want in zip(grads, TF_GRADS, strict=True):
        # the shared bias' gradient passes a near cancellation in BatchNormalization
        np.testing.assert_allclose(g.numpy().ravel(), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(model.get_layer("bn").moving_mean.numpy(), TF_MOVING_MEAN,
                               rtol=1e-5)


def test_embedding_lstm_model_against_tf_keras():
    tokens = keras.Input((None,), dtype="int32", name="tok")
    r = layers.LSTM(4, name="lstm")(layers.Embedding(7, 3, name="emb")(tokens))
    model = keras.Model(tokens, layers.Dense(1, name="head")(r))
    _set_weights(model, k=3)
    out = model(tf.constant([[1, 2, 3], [6, 0, 5]]))
    np.testing.assert_allclose(out.numpy(), TF_SEQ, rtol=1e-6)
