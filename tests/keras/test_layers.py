"""The built-in layers of `keras.layers`: Conv2D, MaxPooling2D/AveragePooling2D,
Flatten and Dense. Their output shapes (also from compute_output_shape) and values
against the tf.nn ops applied by hand, channels_first, grouped convolution and extra
leading batch axes; a Dense layer's forward-mode derivatives (ForwardAccumulator)
equal to its tape gradient; and the errors raised by inputs of the wrong rank, size,
channel count or dtype and by invalid constructor arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import layers

from keras_helpers import _rand


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
    (lambda: layers.MaxPooling2D((2, 2, 2)), ValueError, "`pool_size` argument must be"),
    (lambda: layers.Dense(0), ValueError, "expected a positive integer. Received: units=0"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()
