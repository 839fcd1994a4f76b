"""tf.keras layers, Sequential, activations and initializers (Keras 2 behaviour)."""

from __future__ import annotations

import contextlib
import io

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.testing import check_grads

keras = tf.keras
layers = keras.layers
RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)


# ================================================================ shapes
def _conv_len(n, k, s, d, padding):
    span = (k - 1) * d + 1
    return -(-n // s) if padding == "same" else (n - span) // s + 1


CONV_CASES = [
    # filters, kernel, strides, padding, dilation, input shape
    (4, 3, 1, "valid", 1, (2, 8, 8, 1)),
    (2, (3, 2), (2, 1), "same", 1, (1, 7, 6, 3)),
    (5, 1, 1, "valid", 1, (3, 4, 4, 2)),
    (3, 3, 1, "same", 2, (2, 9, 9, 2)),
    (6, (2, 4), 3, "valid", 1, (1, 10, 11, 4)),
    (2, 3, 1, "valid", (2, 1), (1, 8, 5, 1)),
    (4, 5, 2, "SAME", 1, (2, 5, 5, 1)),
]


@pytest.mark.parametrize("filters, kernel, strides, padding, dilation, shape", CONV_CASES)
def test_conv2d_shapes_and_matches_tf_nn_conv2d(filters, kernel, strides, padding, dilation, shape):
    conv = layers.Conv2D(filters, kernel, strides=strides, padding=padding, dilation_rate=dilation,
                         bias_initializer="random_normal")
    x = tf.constant(_rand(*shape))
    y = conv(x)
    kh, kw = (kernel, kernel) if isinstance(kernel, int) else kernel
    sh, sw = (strides, strides) if isinstance(strides, int) else strides
    dh, dw = (dilation, dilation) if isinstance(dilation, int) else dilation
    p = padding.lower()
    want = (shape[0], _conv_len(shape[1], kh, sh, dh, p), _conv_len(shape[2], kw, sw, dw, p), filters)
    assert y.shape == want and y.dtype == tf.float32
    assert conv.kernel.shape == (kh, kw, shape[3], filters) and conv.bias.shape == (filters,)
    assert conv.compute_output_shape((None,) + shape[1:]) == (None,) + want[1:]
    by_hand = tf.nn.bias_add(tf.nn.conv2d(x, conv.kernel, strides=[sh, sw], padding=p.upper(),
                                          dilations=[dh, dw]), conv.bias)
    np.testing.assert_allclose(y, by_hand, rtol=1e-6, atol=1e-6)


def test_conv2d_activation_no_bias_and_initializers():
    conv = layers.Conv2D(2, 2, activation="relu", use_bias=False, kernel_initializer="ones")
    x = tf.constant(_rand(1, 3, 3, 1))
    y = conv(x)
    assert conv.bias is None and len(conv.weights) == 1
    np.testing.assert_allclose(y, tf.nn.relu(tf.nn.conv2d(x, tf.ones([2, 2, 1, 2]), 1, "VALID")),
                               rtol=1e-6)


def test_conv2d_channels_first_groups_and_extra_batch_dims():
    x = _rand(2, 6, 6, 4)
    ref = layers.Conv2D(6, 3, bias_initializer="random_normal")
    y = ref(x)
    cf = layers.Conv2D(6, 3, data_format="channels_first")
    cf.build((None, 4, 6, 6))
    cf.set_weights(ref.get_weights())
    np.testing.assert_allclose(cf(np.transpose(x, (0, 3, 1, 2))), np.transpose(y, (0, 3, 1, 2)),
                               rtol=1e-5, atol=1e-6)
    grouped = layers.Conv2D(6, 3, groups=2, bias_initializer="random_normal")
    out = grouped(x)
    assert grouped.kernel.shape == (3, 3, 2, 6) and out.shape == (2, 4, 4, 6)
    k, b = grouped.kernel.numpy(), grouped.bias.numpy()
    halves = [tf.nn.conv2d(x[..., 2 * i:2 * i + 2], k[..., 3 * i:3 * i + 3], 1, "VALID")
              for i in range(2)]
    np.testing.assert_allclose(out, np.concatenate(halves, -1) + b, rtol=1e-5, atol=1e-6)
    # Keras allows extra leading batch dims.
    np.testing.assert_allclose(ref(x.reshape(1, 2, 6, 6, 4)), y.numpy()[None], rtol=1e-6)


POOL_CASES = [
    ((2, 2), None, "valid", (2, 8, 8, 3)),
    (3, 2, "valid", (1, 7, 7, 2)),
    (3, 2, "same", (1, 7, 7, 2)),
    ((2, 3), (1, 2), "same", (2, 5, 6, 1)),
    (2, 1, "valid", (1, 3, 3, 4)),
]


@pytest.mark.parametrize("pool, strides, padding, shape", POOL_CASES)
def test_pooling_shapes_and_matches_tf_nn(pool, strides, padding, shape):
    x = tf.constant(_rand(*shape))
    ph, pw = (pool, pool) if isinstance(pool, int) else pool
    st = (ph, pw) if strides is None else ((strides, strides) if isinstance(strides, int)
                                           else strides)
    want = (shape[0], _conv_len(shape[1], ph, st[0], 1, padding),
            _conv_len(shape[2], pw, st[1], 1, padding), shape[3])
    mp = layers.MaxPooling2D(pool, strides=strides, padding=padding)
    y = mp(x)
    assert y.shape == want and mp.compute_output_shape((None,) + shape[1:]) == (None,) + want[1:]
    np.testing.assert_array_equal(y, tf.nn.max_pool2d(x, (ph, pw), st, padding.upper()))
    assert mp.weights == [] and mp.built
    ap = layers.AveragePooling2D(pool, strides=strides, padding=padding)
    np.testing.assert_allclose(ap(x), tf.nn.avg_pool2d(x, (ph, pw), st, padding.upper()),
                               rtol=1e-6)


def test_max_pooling_default_and_channels_first():
    x = _rand(2, 4, 6, 3)
    assert layers.MaxPooling2D()(x).shape == (2, 2, 3, 3)
    cf = layers.MaxPooling2D(data_format="channels_first")(np.transpose(x, (0, 3, 1, 2)))
    np.testing.assert_array_equal(cf, np.transpose(layers.MaxPooling2D()(x), (0, 3, 1, 2)))
    assert layers.MaxPool2D is layers.MaxPooling2D


@pytest.mark.parametrize("shape, want", [
    ((2, 3, 4, 5), (2, 60)), ((4,), (4, 1)), ((0, 2, 3), (0, 6)), ((3, 1), (3, 1)),
    ((1, 2, 2), (1, 4)),
])
def test_flatten_shapes(shape, want):
    x = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    flat = layers.Flatten()
    y = flat(x)
    assert y.shape == want
    np.testing.assert_array_equal(y, x.reshape(want))
    assert flat.compute_output_shape((None,) + shape[1:]) == (None,) + want[1:]


def test_flatten_channels_first_matches_channels_last_order_and_keeps_int_dtype():
    x = _rand(2, 3, 4, 5)
    cf = layers.Flatten(data_format="channels_first")(x)
    np.testing.assert_array_equal(cf, np.transpose(x, (0, 2, 3, 1)).reshape(2, -1))
    assert layers.Flatten()(tf.zeros([2, 3], tf.int32)).dtype == tf.int32


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (2, 1, 2, 3)])
def test_dense_shapes(shape):
    dense = layers.Dense(7, activation="tanh", bias_initializer="random_normal")
    x = _rand(*shape)
    y = dense(x)
    assert y.shape == shape[:-1] + (7,)
    np.testing.assert_allclose(y, np.tanh(x @ dense.kernel.numpy() + dense.bias.numpy()),
                               rtol=1e-5, atol=1e-6)
    assert dense.compute_output_shape((None,) + shape[1:]) == (None,) + shape[1:-1] + (7,)


# ================================================================ layer semantics
def test_layers_build_on_first_call_from_the_input_shape():
    conv = layers.Conv2D(4, 3)
    assert not conv.built and conv.kernel is None and conv.weights == []
    conv(tf.zeros([1, 5, 5, 3]))
    assert conv.built and conv.kernel.shape == (3, 3, 3, 4)
    assert [v.name for v in conv.weights] == [f"{conv.name}/kernel:0", f"{conv.name}/bias:0"]
    assert conv.trainable_variables == conv.weights == conv.variables == [conv.kernel, conv.bias]
    kernel = conv.kernel
    conv(tf.zeros([2, 9, 9, 3]))  # another spatial size: same weights
    assert conv.kernel is kernel


def test_default_names_are_keras_snake_case_and_unique():
    a, b = layers.Dense(1), layers.Dense(1)
    assert a.name.startswith("dense") and b.name.startswith("dense_") and a.name != b.name
    assert layers.MaxPooling2D().name.startswith("max_pooling2d")
    assert layers.Conv2D(1, 1).name.startswith("conv2d")
    assert keras.Sequential().name.startswith("sequential")


def test_trainable_false_exposes_no_trainable_variables():
    conv = layers.Conv2D(4, 3, trainable=False)
    conv(tf.zeros([1, 5, 5, 2]))
    assert conv.trainable_variables == [] and conv.trainable_weights == []
    assert conv.non_trainable_weights == [conv.kernel, conv.bias] == conv.weights
    dense = layers.Dense(2)
    dense.build((None, 3))
    dense.trainable = False
    assert dense.trainable_variables == [] and len(dense.non_trainable_variables) == 2
    dense.trainable = True
    assert dense.trainable_variables == [dense.kernel, dense.bias]


def test_float_inputs_are_cast_to_the_layer_dtype():
    dense = layers.Dense(2)
    assert dense(np.ones((1, 3))).dtype == tf.float32          # float64 array -> float32
    assert dense(tf.ones([1, 3], tf.int32)).dtype == tf.float32  # Dense casts any input
    d64 = layers.Dense(2, dtype="float64")
    out = d64(tf.ones([1, 3]))
    assert out.dtype == tf.float64 and d64.kernel.dtype == tf.float64 and d64.dtype == "float64"
    conv = layers.Conv2D(1, 1, dtype=tf.float64)
    assert conv(tf.ones([1, 2, 2, 1])).dtype == tf.float64
    assert layers.MaxPooling2D()(tf.ones([1, 2, 2, 1], tf.int32)).dtype == tf.int32


def test_variables_as_inputs_and_tape_through_layers():
    dense = layers.Dense(1, kernel_initializer="ones")
    v = tf.Variable([[1., 2.]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(dense(v))
    np.testing.assert_allclose(tape.gradient(y, v), [[1., 1.]])


def test_custom_layer_tracks_sublayers_and_variables():
    class Block(layers.Layer):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.inner = layers.Dense(3)
            self.scale = tf.Variable(2., name="scale")

        def call(self, inputs, training=None):
            out = self.inner(inputs) * self.scale
            return out if not training else out * 0

    block = Block()
    y = block(tf.ones([2, 4]))
    assert y.shape == (2, 3)
    names = {id(v) for v in block.trainable_variables}
    assert names == {id(block.scale), id(block.inner.kernel), id(block.inner.bias)}
    block.trainable = False
    assert block.trainable_variables == [] and not block.inner.trainable
    assert len(block.non_trainable_variables) == 3
    model = keras.Sequential([block])
    np.testing.assert_array_equal(model(tf.ones([2, 4]), training=True), np.zeros((2, 3)))


def test_add_weight_defaults_and_initial_weights_kwarg():
    layer = layers.Layer(name="holder")
    w = layer.add_weight("w", shape=(3, 2))
    assert abs(w.numpy()).max() <= np.sqrt(6 / 5) and w.dtype == tf.float32  # glorot_uniform
    assert layer.add_weight("i", shape=(2,), dtype="int32").numpy().tolist() == [0, 0]
    k, b = np.full((2, 3), 0.5, np.float32), np.arange(3, dtype=np.float32)
    dense = layers.Dense(3, weights=[k, b])
    np.testing.assert_allclose(dense(np.ones((1, 2), np.float32)), [[1., 2., 3.]])


def test_get_and_set_weights():
    dense = layers.Dense(2)
    dense.build((None, 3))
    values = [np.ones((3, 2)), np.array([1., 2.])]
    dense.set_weights(values)
    assert [w.dtype for w in dense.get_weights()] == [np.float32, np.float32]
    np.testing.assert_array_equal(dense.get_weights()[1], [1., 2.])
    assert dense.count_params() == 8


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


# ================================================================ the seed document's Dense
def test_seed_document_dense_example():
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    dense = tf.keras.layers.Dense(1)
    dense.build([None, 2])
    loss_fn = lambda: tf.reduce_sum((dense(x) - tf.constant([1., -1.])) ** 2.)  # noqa: E731
    kernel_fprop = []
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[1.], [0.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[0.], [1.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.bias, tf.constant([1.])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (dense.kernel, dense.bias))
    np.testing.assert_allclose(kernel_grad, tf.stack(kernel_fprop)[:, tf.newaxis], rtol=1e-6)
    np.testing.assert_allclose(bias_grad, bias_fprop[tf.newaxis], rtol=1e-6)


# ================================================================ activations
_X = np.array([[-3., -1., -0.25, 0., 0.5, 2., 7.]])
_SIG = 1 / (1 + np.exp(-_X))
ACTIVATIONS = {
    "relu": np.maximum(_X, 0), "sigmoid": _SIG, "tanh": np.tanh(_X),
    "softmax": np.exp(_X) / np.exp(_X).sum(-1, keepdims=True),
    "log_softmax": _X - np.log(np.exp(_X).sum(-1, keepdims=True)),
    "softplus": np.log1p(np.exp(_X)), "softsign": _X / (1 + np.abs(_X)),
    "elu": np.where(_X > 0, _X, np.expm1(_X)),
    "selu": 1.0507009873554805 * np.where(_X > 0, _X, 1.6732632423543772 * np.expm1(_X)),
    "swish": _X * _SIG, "silu": _X * _SIG, "mish": _X * np.tanh(np.log1p(np.exp(_X))),
    "exponential": np.exp(_X), "hard_sigmoid": np.clip(0.2 * _X + 0.5, 0, 1),
    "leaky_relu": np.where(_X > 0, _X, 0.2 * _X), "relu6": np.clip(_X, 0, 6), "linear": _X,
    "gelu": _X * 0.5 * (1 + np.vectorize(__import__("math").erf)(_X / np.sqrt(2))),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_get(name):
    fn = keras.activations.get(name)
    assert fn is getattr(keras.activations, name)
    np.testing.assert_allclose(fn(tf.constant(_X)), ACTIVATIONS[name], rtol=1e-12, atol=1e-15)
    out = layers.Dense(3, activation=name)(tf.ones([2, 4]))
    assert out.shape == (2, 3) and out.dtype == tf.float32


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "softmax", "softplus", "softsign",
                                  "elu", "selu", "gelu", "swish", "mish", "hard_sigmoid",
                                  "leaky_relu", "log_softmax"])
def test_activation_gradients(name):
    x = np.array([[-1.7, -0.3, 0.4, 1.1, 2.2], [0.9, -2.1, 1.3, -0.6, 0.2]])
    check_grads(getattr(keras.activations, name), [x], order=2 if name != "hard_sigmoid" else 1)


def test_relu_keras_options_and_other_signatures():
    x = tf.constant([-10., -5., 0., 5., 10.])
    r = keras.activations.relu
    np.testing.assert_allclose(r(x, alpha=0.5), [-5., -2.5, 0., 5., 10.])
    np.testing.assert_allclose(r(x, max_value=5.), [0., 0., 0., 5., 5.])
    np.testing.assert_allclose(r(x, max_value=6.), [0., 0., 0., 5., 6.])
    np.testing.assert_allclose(r(x, threshold=5.), [0., 0., 0., 0., 10.])
    np.testing.assert_allclose(r(x, alpha=0.5, max_value=7., threshold=1.),
                               [-5.5, -3., -0.5, 5., 7.])
    np.testing.assert_allclose(keras.activations.elu(tf.constant([-1., 1.]), alpha=2.),
                               [2 * np.expm1(-1.), 1.], rtol=1e-6)
    sm = keras.activations.softmax(tf.ones([2, 3, 4]), axis=(1, 2))
    np.testing.assert_allclose(sm, np.full((2, 3, 4), 1 / 12), rtol=1e-6)
    np.testing.assert_allclose(keras.activations.softmax(tf.constant([[1., 1.]]), axis=0),
                               [[1., 1.]])
    assert keras.activations.get(None) is keras.activations.linear
    custom = lambda t: t * 2  # noqa: E731
    assert keras.activations.get(custom) is custom
    assert keras.activations.serialize(keras.activations.gelu) == "gelu"


# ================================================================ initializers
INITS = ["GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal", "LecunUniform",
         "RandomNormal", "RandomUniform", "TruncatedNormal", "Orthogonal"]


@pytest.mark.parametrize("name", INITS)
def test_seeded_initializers_are_stateless_and_unseeded_ones_draw(name):
    cls = getattr(keras.initializers, name)
    a, b = cls(seed=3)((6, 5)), cls(seed=3)((6, 5))
    assert a.shape == (6, 5) and a.dtype == tf.float32
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, cls(seed=3)((6, 5)))
    assert not np.array_equal(a, cls(seed=4)((6, 5)))
    init = cls()
    assert not np.array_equal(init((6, 5)), init((6, 5)))
    assert cls(seed=1)((2, 3), dtype="float64").dtype == tf.float64
    tf.random.set_seed(11)
    c = cls()((4, 4))
    tf.random.set_seed(11)
    np.testing.assert_array_equal(c, cls()((4, 4)))
    tf.random.set_seed(None)


def _fans(shape):
    if len(shape) == 2:
        return shape
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


@pytest.mark.parametrize("name, kind, scale, mode", [
    ("GlorotUniform", "uniform", 1., "avg"), ("GlorotNormal", "normal", 1., "avg"),
    ("HeUniform", "uniform", 2., "in"), ("HeNormal", "normal", 2., "in"),
    ("LecunUniform", "uniform", 1., "in"), ("LecunNormal", "normal", 1., "in"),
])
@pytest.mark.parametrize("shape", [(300, 200), (3, 3, 16, 32)])
def test_variance_scaling_statistics(name, kind, scale, mode, shape):
    w = getattr(keras.initializers, name)(seed=0)(shape, dtype="float64").numpy()
    fan_in, fan_out = _fans(shape)
    n = fan_in if mode == "in" else (fan_in + fan_out) / 2
    std = np.sqrt(scale / n)
    if kind == "uniform":
        assert np.abs(w).max() <= np.sqrt(3) * std
    else:
        assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-12  # truncated at 2 sigma
    assert abs(w.std() / std - 1) < 0.05 and abs(w.mean()) < 0.1 * std


def test_constant_zeros_ones_identity_orthogonal():
    ki = keras.initializers
    np.testing.assert_array_equal(ki.Zeros()((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(ki.Ones()((2,), dtype="int32"), [1, 1])
    np.testing.assert_array_equal(ki.Constant(2.5)((2, 2)), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(ki.Constant([1, 2, 3, 4])((2, 2)), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(ki.Identity(3.)((2, 2)), 3 * np.eye(2))
    q = ki.Orthogonal(seed=0)((4, 6), dtype="float64").numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-12)
    r = ki.RandomUniform(0, 10, seed=0)((50,), dtype="int32").numpy()
    assert r.dtype == np.int32 and r.min() >= 0 and r.max() < 10
    u = ki.RandomUniform(-2., 3., seed=0)((1000,)).numpy()
    assert u.min() >= -2 and u.max() < 3
    n = ki.RandomNormal(1., 2., seed=0)((20000,)).numpy()
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05


@pytest.mark.parametrize("ident, cls", [
    ("glorot_uniform", "GlorotUniform"), ("GlorotNormal", "GlorotNormal"), ("he_normal", "HeNormal"),
    ("he_uniform", "HeUniform"), ("zeros", "Zeros"), ("ones", "Ones"), ("random_normal", "RandomNormal"),
    ("random_uniform", "RandomUniform"), ("constant", "Constant"), ("truncated_normal", "TruncatedNormal"),
    ("orthogonal", "Orthogonal"), ("identity", "Identity"), ("lecun_normal", "LecunNormal"),
    ({"class_name": "HeUniform", "config": {"seed": 2}}, "HeUniform"),
])
def test_initializers_get(ident, cls):
    init = keras.initializers.get(ident)
    assert type(init).__name__ == cls


def test_initializers_get_other_forms_and_layer_arguments():
    ki = keras.initializers
    inst = ki.HeNormal(seed=1)
    assert ki.get(inst) is inst and ki.get(None) is None
    assert isinstance(ki.get(ki.Ones), ki.Ones)
    fn = lambda shape, dtype=None: tf.ones(shape, dtype=dtype)  # noqa: E731
    assert ki.get(fn) is fn
    dense = layers.Dense(2, kernel_initializer=fn, bias_initializer=ki.Constant(3.))
    dense.build((None, 2))
    np.testing.assert_array_equal(dense.kernel, np.ones((2, 2)))
    np.testing.assert_array_equal(dense.bias, [3., 3.])
    assert ki.he_normal is ki.HeNormal and ki.zeros is ki.Zeros
    assert ki.get(ki.serialize(inst)).get_config() == {"seed": 1}


# ================================================================ errors
@pytest.mark.parametrize("make, x, match", [
    (lambda: layers.Conv2D(2, 3, name="conv_err"), np.zeros((5, 5, 1), np.float32),
     r'layer "conv_err" \(Conv2D\).*expected min_ndim=4, found ndim=3.*\(5, 5, 1\)'),
    (lambda: layers.MaxPooling2D(name="pool_err"), np.zeros((1, 5, 5), np.float32),
     r'"pool_err" \(MaxPooling2D\).*expected ndim=4, found ndim=3.*\(1, 5, 5\)'),
    (lambda: layers.Flatten(), np.float32(1.), r"expected min_ndim=1, found ndim=0"),
    (lambda: layers.Dense(2), np.zeros(3, np.float32),
     r"expected min_ndim=2, found ndim=1. Full shape received: \(3,\)"),
    (lambda: layers.Conv2D(2, 3, name="small"), np.zeros((1, 2, 2, 1), np.float32),
     r"output is <= 0 due to downsampling in small \(Conv2D\).*\(1, 2, 2, 1\)"),
    (lambda: layers.MaxPooling2D(3), np.zeros((1, 2, 2, 1), np.float32),
     r"spatial size \(2, 2\) is smaller than the pool size \(3, 3\)"),
])
def test_bad_inputs_raise_clear_errors(make, x, match):
    with pytest.raises(ValueError, match=match):
        make()(x)


def test_conv2d_error_names_the_fix():
    with pytest.raises(ValueError, match=r"add a batch axis"):
        layers.Conv2D(2, 3)(tf.zeros([5, 5, 1]))


def test_inputs_that_do_not_match_the_built_layer():
    conv = layers.Conv2D(2, 3)
    conv(tf.zeros([1, 5, 5, 1]))
    with pytest.raises(ValueError, match=r"expected axis -1 of input shape to have value 1, but "
                                         r"received input with shape \(1, 5, 5, 3\)"):
        conv(tf.zeros([1, 5, 5, 3]))
    dense = layers.Dense(2)
    dense.build([None, 2])
    with pytest.raises(ValueError, match="expected axis -1 of input shape to have value 2"):
        dense(tf.zeros([1, 3]))
    with pytest.raises(TypeError, match=r"Conv2D\) needs floating inputs; got dtype int32"):
        layers.Conv2D(1, 1)(tf.zeros([1, 2, 2, 1], tf.int32))
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        layers.Conv2D(1, 1).build((None, 3, 3, None))
    with pytest.raises(ValueError, match="evenly divisible"):
        layers.Conv2D(4, 1, groups=2)(tf.zeros([1, 2, 2, 3]))


@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.Conv2D(0, 3), ValueError, "strictly positive value. Received filters=0"),
    (lambda: layers.Conv2D(2, (3, 3, 3)), ValueError, "`kernel_size` argument must be a tuple of 2"),
    (lambda: layers.Conv2D(2, 0), ValueError, "does not satisfy the requirement `> 0`"),
    (lambda: layers.Conv2D(2, 3, padding="full"), ValueError, "`padding` argument must be"),
    (lambda: layers.Conv2D(2, 3, padding="causal"), ValueError, "Causal padding"),
    (lambda: layers.Conv2D(2, 3, strides=2, dilation_rate=2), ValueError, "`strides > 1` not"),
    (lambda: layers.Conv2D(3, 3, groups=2), ValueError, "filters must be evenly divisible"),
    (lambda: layers.Conv2D(2, 3, data_format="nhwc"), ValueError, "data_format"),
    (lambda: layers.Conv2D(2, 3, kernel_regularizer="l2"), NotImplementedError, "regularizers"),
    (lambda: layers.MaxPooling2D((2, 2, 2)), ValueError, "`pool_size` argument must be"),
    (lambda: layers.Dense(0), ValueError, "expected a positive integer. Received: units=0"),
    (lambda: layers.Dense(2, foo=1), TypeError, "Keyword argument not understood: 'foo'"),
    (lambda: layers.Dense(2, activation="nope"), ValueError, "Unknown activation function 'nope'"),
    (lambda: keras.activations.get(3), TypeError, "Could not interpret activation"),
    (lambda: keras.activations.softmax(tf.constant([1., 2.])), ValueError, "1D"),
    (lambda: keras.initializers.get("nope"), ValueError, "Unknown initializer: 'nope'"),
    (lambda: keras.initializers.get(3), ValueError, "Could not interpret initializer"),
    (lambda: keras.initializers.HeNormal()((2, 2), dtype="int32"), ValueError, "floating point"),
    (lambda: keras.initializers.Identity()((2, 2, 2)), ValueError, "2D matrices"),
    (lambda: keras.initializers.VarianceScaling(mode="fan"), ValueError, "Invalid `mode`"),
    (lambda: keras.initializers.VarianceScaling(distribution="x"), ValueError, "distribution"),
    (lambda: keras.Sequential().add(3), TypeError, "must be an instance of class Layer"),
    (lambda: keras.Sequential().build(), ValueError, "must provide an `input_shape`"),
    (lambda: keras.Sequential().pop(), TypeError, "no layers"),
    (lambda: keras.Sequential([layers.Dense(1)]).summary(), ValueError, "not yet been built"),
    (lambda: keras.Sequential([layers.Dense(1)]).trainable_variables, ValueError,
     "have not yet been created"),
    (lambda: keras.Sequential([layers.Dense(1, name="x"), layers.Dense(1, name="x")]), ValueError,
     "unique names"),
    (lambda: layers.Dense(1).count_params(), ValueError, "isn't built"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_set_weights_errors():
    dense = layers.Dense(2)
    dense.build((None, 3))
    with pytest.raises(ValueError, match="weight list of length 1, but the layer was expecting 2"):
        dense.set_weights([np.ones((3, 2))])
    with pytest.raises(ValueError, match=r"weight shape \(3, 2\) is not compatible with provided "
                                         r"weight shape \(2, 3\)"):
        dense.set_weights([np.ones((2, 3)), np.ones(2)])


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
