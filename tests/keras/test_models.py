"""`keras.Sequential`: building (on the first call, from an input shape, through add),
add and pop, trainable flags of nested models, weights in layer order, get_layer,
set_weights round trips and summary; a small CNN's output equal to its layers applied
by hand, its gradients checked against finite differences (with respect to the
weights and to the inputs), a tf.function training step equal to the eager loop; the
errors of misusing a Sequential model. Last, opt-in, a deeper CNN's outputs and
gradients against tf_keras.
"""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers
from tapeflow.testing import check_grads

from keras_helpers import RNG, _rand


# ================================================================ Sequential
def _cnn(dtype="float32", seed=0, activation="tanh"):
    return keras.Sequential([
        layers.Conv2D(3, 3, activation=activation, dtype=dtype,
                      kernel_initializer=keras.initializers.GlorotUniform(seed),
                      bias_initializer=keras.initializers.RandomNormal(stddev=0.1, seed=seed)),
        layers.MaxPooling2D(dtype=dtype),
        layers.Flatten(dtype=dtype),
        layers.Dense(4, dtype=dtype, kernel_initializer=keras.initializers.GlorotUniform(seed + 1),
                     bias_initializer=keras.initializers.RandomNormal(stddev=0.1, seed=seed + 1)),
    ])


def test_sequential_call_build_add_layers_and_weights():
    model = _cnn()
    assert not model.built and len(model.layers) == 4
    with pytest.raises(ValueError, match="have not yet been created"):
        model.weights
    y = model(_rand(2, 6, 6, 2))
    assert y.shape == (2, 4) and model.built
    conv, _, _, dense = model.layers
    assert model.trainable_variables == [conv.kernel, conv.bias, dense.kernel, dense.bias]
    assert model.weights == model.trainable_weights and model.non_trainable_weights == []
    assert model.count_params() == 3 * 3 * 2 * 3 + 3 + 12 * 4 + 4
    model.add(layers.Dense(1))  # a built model builds the new layer at once
    assert model.layers[-1].built and model.layers[-1].kernel.shape == (4, 1)
    assert model(_rand(2, 6, 6, 2)).shape == (2, 1)
    model.pop()
    assert model(_rand(2, 6, 6, 2)).shape == (2, 4)


def test_sequential_equals_layers_applied_by_hand():
    model = _cnn()
    x = tf.constant(_rand(2, 7, 7, 2))
    conv, pool, flat, dense = model.layers
    want = model(x)
    h = tf.nn.max_pool2d(tf.tanh(tf.nn.bias_add(tf.nn.conv2d(x, conv.kernel, 1, "VALID"),
                                                conv.bias)), 2, 2, "VALID")
    h = tf.reshape(h, [2, -1])
    np.testing.assert_allclose(want, tf.matmul(h, dense.kernel) + dense.bias, rtol=1e-5, atol=1e-6)


def test_sequential_build_from_input_shape():
    model = keras.Sequential([layers.Conv2D(2, 3), layers.Flatten(), layers.Dense(5)])
    model.build((None, 8, 8, 1))
    assert model.built and model.layers[2].kernel.shape == (6 * 6 * 2, 5)
    assert model.compute_output_shape((None, 8, 8, 1)) == (None, 5)
    assert model.layers[0].output_shape == (None, 6, 6, 2)
    first = keras.Sequential([layers.Dense(4, input_shape=(3,)), layers.Dense(2)])
    assert first.built and [w.shape for w in first.weights][2] == (4, 2)
    via_add = keras.Sequential()
    via_add.add(layers.Dense(4, input_dim=3))
    assert via_add.built and via_add.weights[0].shape == (3, 4)
    assert keras.models.Sequential is keras.Sequential


def test_sequential_trainable_flags_nested_models_and_weights_order():
    inner = keras.Sequential([layers.Dense(3), layers.Dense(2)])
    model = keras.Sequential([layers.Dense(4), inner, layers.Dense(1)])
    model(tf.ones([2, 5]))
    assert len(model.trainable_variables) == 8
    model.layers[0].trainable = False
    assert len(model.trainable_variables) == 6
    assert model.weights[0] is model.layers[0].kernel  # weights stay in layer order
    assert len(model.non_trainable_variables) == 2
    model.trainable = False
    assert model.trainable_variables == [] and not inner.layers[1].trainable
    assert len(model.non_trainable_variables) == 8


def test_sequential_get_layer_and_set_weights_roundtrip():
    a, b = _cnn(seed=0), _cnn(seed=5)
    x = _rand(1, 6, 6, 2)
    a(x), b(x)
    b.set_weights(a.get_weights())
    np.testing.assert_array_equal(a(x), b(x))
    assert a.get_layer(index=3) is a.layers[3]
    assert a.get_layer(a.layers[1].name) is a.layers[1]


def test_sequential_summary():
    model = keras.Sequential([layers.Conv2D(8, 3, input_shape=(10, 10, 1), name="c"),
                              layers.Flatten(name="f"), layers.Dense(2, name="d")], name="net")
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "net"'
    assert " c (Conv2D)                  (None, 8, 8, 8)           80" in text
    assert "Total params: 1106 (4.32 KB)" in text and "Non-trainable params: 0" in text
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        keras.Sequential([layers.Dense(1, input_shape=(2,))]).summary()
    assert "Trainable params: 3" in out.getvalue()


# ================================================================ gradients
def _param_slots(model):
    """(layer, attribute) of each trainable variable, in model.trainable_variables order."""
    slots = []
    for v in model.trainable_variables:
        for layer in model.layers:
            for attr in ("kernel", "bias"):
                if getattr(layer, attr, None) is v:
                    slots.append((layer, attr))
    assert len(slots) == len(model.trainable_variables)
    return slots


@contextlib.contextmanager
def _weights_replaced(slots, values):
    saved = [layer.__dict__[attr] for layer, attr in slots]
    for (layer, attr), value in zip(slots, values):
        layer.__dict__[attr] = value
    try:
        yield
    finally:
        for (layer, attr), value in zip(slots, saved):
            layer.__dict__[attr] = value


def test_sequential_cnn_gradients_match_finite_differences():
    model = _cnn("float64")
    x = tf.constant(_rand(2, 6, 6, 2, dtype=np.float64))
    target = tf.constant(_rand(2, 4, dtype=np.float64))
    model(x)
    params = model.trainable_variables
    assert all(p.dtype == tf.float64 for p in params)
    slots = _param_slots(model)

    def loss_of(*values):
        with _weights_replaced(slots, values):  # the model reads exactly these tensors
            return tf.reduce_sum(tf.square(model(x) - target))

    start = [p.numpy() for p in params]
    check_grads(loss_of, start)
    # The tape's gradient with respect to the variables themselves is the same.
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(tf.square(model(x) - target))
    grads = tape.gradient(loss, params)
    consts = [tf.constant(s) for s in start]
    with tf.GradientTape() as tape:
        for c in consts:
            tape.watch(c)
        loss2 = loss_of(*consts)
    for g, g2 in zip(grads, tape.gradient(loss2, consts)):
        np.testing.assert_allclose(g, g2, rtol=1e-12)
    # ... and a finite difference of the loss along a random direction in variable space.
    dirs = [RNG.standard_normal(s.shape) for s in start]
    eps = 1e-6

    def loss_at(sign):
        for p, s, d in zip(params, start, dirs):
            p.assign(s + sign * eps * d)
        return float(tf.reduce_sum(tf.square(model(x) - target)))

    fd = (loss_at(1) - loss_at(-1)) / (2 * eps)
    for p, s in zip(params, start):
        p.assign(s)
    np.testing.assert_allclose(sum(float(np.sum(g.numpy() * d)) for g, d in zip(grads, dirs)), fd,
                               rtol=1e-6)


def test_gradient_wrt_inputs_of_a_float64_cnn():
    model = _cnn("float64")
    check_grads(lambda x: model(x), [_rand(2, 6, 6, 2, dtype=np.float64)])


# ================================================================ tf.function
def _train_step(model, lr=0.1):
    def step(x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x) - y))
        grads = tape.gradient(loss, model.trainable_variables)
        for v, g in zip(model.trainable_variables, grads):
            v.assign_sub(lr * g)
        return loss
    return step


@pytest.mark.parametrize("prebuilt", [True, False])
def test_traced_training_step_equals_eager_loop(prebuilt):
    x, y = tf.constant(_rand(4, 8, 8, 1)), tf.constant(_rand(4, 4))
    traced_model, eager_model = _cnn(activation="relu"), _cnn(activation="relu")
    if prebuilt:
        traced_model(x), eager_model(x)
    traced, eager = tf.function(_train_step(traced_model)), _train_step(eager_model)
    losses = []
    for _ in range(5):
        losses.append((float(traced(x, y)), float(eager(x, y))))
    assert traced.experimental_get_tracing_count() == 1
    np.testing.assert_allclose([a for a, _ in losses], [b for _, b in losses], rtol=1e-6)
    assert losses[-1][1] < losses[0][1]  # it trains
    for a, b in zip(traced_model.weights, eager_model.weights):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-7)


# ================================================================ errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: keras.Sequential().add(3), TypeError, "must be an instance of class Layer"),
    (lambda: keras.Sequential().build(), ValueError, "must provide an `input_shape`"),
    (lambda: keras.Sequential().pop(), TypeError, "no layers"),
    (lambda: keras.Sequential([layers.Dense(1)]).summary(), ValueError, "not yet been built"),
    (lambda: keras.Sequential([layers.Dense(1)]).trainable_variables, ValueError,
     "have not yet been created"),
    (lambda: keras.Sequential([layers.Dense(1, name="x"), layers.Dense(1, name="x")]), ValueError,
     "unique names"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


# ================================================================ TensorFlow (optional)
@pytest.mark.peers
def test_sequential_cnn_matches_tf_keras():
    import os

    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    tensorflow = pytest.importorskip("tensorflow")
    tk = pytest.importorskip("tf_keras")

    def build(k):
        return k.Sequential([
            k.layers.Conv2D(4, 3, padding="same", activation="relu", dtype="float64"),
            k.layers.MaxPooling2D(dtype="float64"),
            k.layers.Conv2D(3, (2, 3), strides=(1, 2), activation="tanh", dtype="float64"),
            k.layers.Flatten(dtype="float64"),
            k.layers.Dense(5, activation="softmax", dtype="float64"),
        ])

    x = _rand(3, 10, 12, 2, dtype=np.float64)
    target = _rand(3, 5, dtype=np.float64)
    ours, theirs = build(keras), build(tk)
    ours(x), theirs(tensorflow.constant(x))
    ours.set_weights([w * 3 for w in ours.get_weights()])  # larger weights: busier activations
    theirs.set_weights(ours.get_weights())
    outs, grads = [], []
    for lib, model in ((tf, ours), (tensorflow, theirs)):
        with lib.GradientTape() as tape:
            y = model(lib.constant(x))
            loss = lib.reduce_sum(lib.square(y - target))
        outs.append(y.numpy())
        grads.append([g.numpy() for g in tape.gradient(loss, model.trainable_variables)])
    np.testing.assert_allclose(outs[0], outs[1], rtol=1e-10, atol=1e-12)
    for g0, g1 in zip(*grads):
        np.testing.assert_allclose(g0, g1, rtol=1e-8, atol=1e-10)
    assert [w.shape for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]
