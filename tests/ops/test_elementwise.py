"""The elementwise ops beyond the op table: rounding, sign, sqrt, rsqrt, reciprocal and
clip_by_value at their edges (TensorFlow's values and gradients there), and bad
arguments. Also here, for every family: an op under both tf.math and the top level is
the same function in both (most of those ops are elementwise).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import value_and_grads


# ------------------------------------------------------------------ names and namespaces
@pytest.mark.parametrize("name", sorted(set(tf.ops.namespace("math")) & set(tf.ops.namespace("tf"))))
def test_every_op_is_in_both_namespaces(name):
    assert getattr(tf, name) is getattr(tf.math, name)


# ------------------------------------------------------------------ bad input
def test_clip_by_value_bounds_must_broadcast_to_t():
    with pytest.raises(InvalidArgumentError, match="clip_value_min"):
        tf.clip_by_value(tf.constant([1., 2.]), tf.zeros([3]), 1.)
    with pytest.raises(InvalidArgumentError, match="clip_value_max"):
        tf.clip_by_value(tf.constant([1., 2.]), 0., tf.ones([2, 2]))



@pytest.mark.parametrize("inputs, error, match", [
    ([], ValueError, "at least one"),
    ([tf.constant([1.]), tf.constant([1., 2.])], InvalidArgumentError,
     r"inputs\[1\]. has shape \(2,\)"),
    ([tf.constant([1.]), tf.constant([1], tf.int32)], InvalidArgumentError,
     r"inputs\[1\]. has dtype int32"),
    ([tf.constant([1, 2]), [1.5, 2.5]], TypeError, r"inputs\[1\].*not integral"),
    ([tf.constant([True])], InvalidArgumentError, "bool"),
    ([tf.ones([2]), np.ones(2)], InvalidArgumentError, r"inputs\[1\]. has dtype float64"),
    (3.0, TypeError, "list of tensors"),
    (tf.constant(1.0), TypeError, "scalar tensor"),
])
def test_add_n_names_the_input_that_differs(inputs, error, match):
    with pytest.raises(error, match=match):
        tf.add_n(inputs)


def test_add_n_sums_in_order_like_tensorflow():
    v = tf.Variable([1., 2.])
    one = tf.add_n([v])
    v.assign([5., 5.])
    assert type(one) is tf.Tensor and one.numpy().tolist() == [1., 2.]  # a snapshot
    rows = tf.add_n(tf.constant([[1., 2.], [3., 4.], [5., 6.]]))  # a tensor's rows, as TensorFlow
    assert rows.numpy().tolist() == [9., 12.]
    mixed = tf.add_n([tf.constant([1., 2.], tf.float64), [3, 4], np.array([0.5, 0.5])])
    assert mixed.dtype == tf.float64 and mixed.numpy().tolist() == [4.5, 6.5]
    wraps = tf.add_n([tf.constant([100], tf.int8)] * 3)  # int8 wraps, as TensorFlow's kernel
    assert wraps.numpy().tolist() == [44]
    big, tiny = np.float32(1e8), np.float32(1.0)
    left_to_right = tf.add_n([tf.constant(big), tf.constant(tiny), tf.constant(-big)])
    assert left_to_right.numpy() == (big + tiny) - big
    with pytest.raises(InvalidArgumentError, match="shape"):
        tf.math.accumulate_n([tf.ones([2])], shape=[3])
    with pytest.raises(InvalidArgumentError, match="tensor_dtype"):
        tf.math.accumulate_n([tf.ones([2])], tensor_dtype=tf.float64)
    two = tf.math.accumulate_n([tf.ones([2])] * 2, shape=[2], tensor_dtype=tf.float32)
    assert tf.math.accumulate_n([tf.ones([2, 3])] * 2, shape=[None, 3]).shape == (2, 3)
    assert two.numpy().tolist() == [2., 2.]


def test_add_n_gradient_reaches_every_input_and_variable():
    x, v = tf.constant([1., 2.]), tf.Variable([3., 4.])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(tf.add_n([x, x * x, v, 2. * v]))
    gx, gv = tape.gradient(y, [x, v])
    assert gx.numpy().tolist() == [3., 5.] and gv.numpy().tolist() == [3., 3.]


@pytest.mark.parametrize("src", [tf.float16, tf.float32, tf.float64, tf.complex128])
def test_float_to_int_casts_saturate_and_send_nan_to_zero(src):
    # NOTE(float-to-int): TensorFlow leaves these undefined (its CPU kernel wraps 300 to
    # 44 in int8); tapeflow saturates, compiled or not.
    x = tf.constant([np.nan, np.inf, -np.inf, 300.0, -300.0, 6e4, -1.7, 1.7, -0.5, 255.9], src)
    assert tf.cast(x, tf.uint8).numpy().tolist() == [0, 255, 0, 255, 0, 255, 0, 1, 0, 255]
    assert tf.cast(x, tf.int8).numpy().tolist() == [0, 127, -128, 127, -128, 127, -1, 1, 0, 127]
    assert tf.cast(x, tf.int32).numpy().tolist() == [
        0, 2 ** 31 - 1, -2 ** 31, 300, -300, 60000, -1, 1, 0, 255]
    assert tf.cast(x[3:4], tf.int64).numpy().tolist() == [300]  # in range: truncation
    scalar = tf.cast(tf.constant(np.nan, src), tf.int32)
    assert scalar.shape == () and np.ndim(scalar.numpy()) == 0 and scalar.numpy() == 0
    assert tf.cast(tf.zeros([0], src), tf.int32).shape == (0,)

@pytest.mark.skipif(tf.bfloat16 is None, reason="bfloat16 needs ml_dtypes")
def test_bfloat16_to_int_casts_saturate_as_every_float_does():
    # bfloat16's NumPy kind is 'V', not 'f': the saturating path must not miss it (it gave
    # [0, 0, 300, -5, 99840] eagerly, and all zeros to uint8).
    x = tf.cast(tf.constant([3e38, -3e38, 300., -5.5, 1e5, np.nan]), tf.bfloat16)
    assert tf.cast(x, tf.int32).numpy().tolist() == [2 ** 31 - 1, -2 ** 31, 300, -5, 99840, 0]
    assert tf.cast(x, tf.uint8).numpy().tolist() == [255, 0, 255, 0, 255, 0]
    replayed = tf.function(lambda v: tf.cast(v, tf.int8))
    for _ in range(2):
        assert replayed(x).numpy().tolist() == [127, -128, 127, -5, 127, 0]
    assert tf.bfloat16.is_floating


# ------------------------------------------------------------------ TensorFlow's values
def test_round_is_bankers_rounding_and_keeps_integers():
    x = tf.constant([0.5, 1.5, 2.5, -0.5, -1.5, 2.4999, 2.5001])
    np.testing.assert_array_equal(tf.round(x), [0., 2., 2., -0., -2., 2., 3.])
    ints = tf.constant([1, -2])
    assert tf.round(ints) is ints


@pytest.mark.parametrize("op", [tf.math.floor, tf.math.ceil, tf.round])
def test_piecewise_constant_ops_have_no_gradient_as_tensorflow(op):
    x = tf.constant([0.3, 1.7, -2.5])
    with tf.autodiff.ForwardAccumulator(x, tf.ones_like(x)) as acc:
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(x)
            y = op(x)
            z = y + x
    assert tape.gradient(y, x) is None
    np.testing.assert_array_equal(tape.gradient(z, x), [1., 1., 1.])
    assert acc.jvp(y) is None
    zeros = tape.gradient(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(zeros, [0., 0., 0.])


def test_sign_gradient_is_zeros_as_tensorflow():
    _, (g,) = value_and_grads(tf.sign, np.array([-1., 0., 2.]))
    np.testing.assert_array_equal(g, [0., 0., 0.])


def test_sqrt_at_zero_has_an_infinite_gradient_and_does_not_crash():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y, (g,) = value_and_grads(tf.sqrt, np.array([0., 4.]))
    np.testing.assert_array_equal(y, [0., 2.])
    np.testing.assert_array_equal(g, [np.inf, 0.25])


def test_rsqrt_and_reciprocal_gradients_are_zero_where_the_cotangent_is_zero():
    """TensorFlow's kernels: an element that does not reach the loss gets 0, not inf * 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, (g,) = value_and_grads(lambda x: tf.math.rsqrt(x)[0], np.array([1., 0.]))
        np.testing.assert_array_equal(g, [-0.5, 0.])
        _, (g,) = value_and_grads(lambda x: tf.math.reciprocal(x)[0], np.array([2., 0.]))
        np.testing.assert_array_equal(g, [-0.25, 0.])
        _, (g,) = value_and_grads(tf.math.rsqrt, np.array([0.]))
        np.testing.assert_array_equal(g, [-np.inf])


def test_clip_by_value_gradient_passes_inside_the_closed_interval_as_tensorflow():
    y, (gt, glo, ghi) = value_and_grads(tf.clip_by_value, np.array([-1., 0., 0.5, 1., 2.]),
                                        np.array(0.), np.array(1.))
    np.testing.assert_array_equal(y, [0., 0., 0.5, 1., 1.])
    np.testing.assert_array_equal(gt, [0., 1., 1., 1., 0.])
    assert float(glo) == 1. and float(ghi) == 1.
    np.testing.assert_array_equal(tf.clip_by_value(tf.constant([1, 5]), 0, 3), [1, 3])
