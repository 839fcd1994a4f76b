"""tf.math ops beyond the shared rule checks: bad input, TensorFlow's special values,
numerical edge cases and the complex-gradient convention (the rows of every
primitive are in tests/op_table_math.py)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError


def _grad(f, *xs):
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return y, tape.gradient(y, xs)


# ------------------------------------------------------------------ names and namespaces
@pytest.mark.parametrize("name", sorted(set(tf.ops.namespace("math")) & set(tf.ops.namespace("tf"))))
def test_every_op_is_in_both_namespaces(name):
    assert getattr(tf, name) is getattr(tf.math, name)


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("op", [tf.math.rsqrt, tf.math.reciprocal, tf.math.expm1, tf.math.log1p,
                                tf.math.tan, tf.math.asin, tf.math.acos, tf.math.atan,
                                tf.math.sinh, tf.math.cosh, tf.math.asinh, tf.math.acosh,
                                tf.math.atanh, tf.math.softplus, tf.math.erf, tf.math.floor,
                                tf.math.ceil, tf.math.is_finite, tf.math.is_nan, tf.math.is_inf])
def test_integer_input_to_a_floating_op_names_op_and_dtype(op):
    with pytest.raises(InvalidArgumentError, match="int32") as err:
        op(tf.constant([1, 2]))
    assert op.__name__ in str(err.value)


def test_exp_of_integers_is_an_invalid_argument_error():
    with pytest.raises(InvalidArgumentError, match=r"exp.*int32"):
        tf.exp(tf.constant([1, 2]))


@pytest.mark.parametrize("op", [tf.math.erf, tf.math.softplus, tf.math.floor, tf.math.round])
def test_real_only_ops_refuse_complex(op):
    with pytest.raises(InvalidArgumentError, match="complex128"):
        op(tf.constant([1 + 1j]))


def test_atan2_refuses_integers_and_mixed_dtypes():
    with pytest.raises(InvalidArgumentError, match="atan2.*int32"):
        tf.math.atan2(tf.constant([1]), tf.constant([1]))
    with pytest.raises(InvalidArgumentError, match="float32.*float64"):
        tf.math.atan2(tf.constant([1.]), tf.constant([1.], tf.float64))


@pytest.mark.parametrize("op", [tf.reduce_prod, tf.reduce_logsumexp, tf.math.reduce_variance,
                                tf.math.reduce_std])
def test_reduction_axis_out_of_range(op):
    with pytest.raises(InvalidArgumentError, match="out of range") as err:
        op(tf.constant([[1., 2.]]), axis=2)
    assert str(err.value).startswith(op.__name__)


@pytest.mark.parametrize("op", [tf.reduce_all, tf.reduce_any])
def test_boolean_reductions_need_bool(op):
    with pytest.raises(InvalidArgumentError, match="float32"):
        op(tf.constant([1., 0.]))
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(tf.constant([True]), axis=1)


def test_logsumexp_needs_real_floats():
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.reduce_logsumexp(tf.constant([1, 2]))


@pytest.mark.parametrize("op", [tf.math.reduce_variance, tf.math.reduce_std])
def test_moments_of_integers_are_a_type_error_as_tensorflow(op):
    with pytest.raises(TypeError, match="int32"):
        op(tf.constant([1, 2]))


@pytest.mark.parametrize("op", [tf.argmax, tf.argmin])
def test_arg_extrema_bad_input(op):
    x = tf.constant([[1., 2.], [3., 0.]])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(x, axis=2)
    with pytest.raises(TypeError, match="single int"):
        op(x, axis=[1])
    with pytest.raises(InvalidArgumentError, match="scalar"):
        op(tf.constant(1.))
    with pytest.raises(InvalidArgumentError, match="empty"):
        op(tf.zeros([0, 2]))
    with pytest.raises(InvalidArgumentError, match="output_type"):
        op(x, output_type=tf.float32)
    with pytest.raises(InvalidArgumentError, match="complex128"):
        op(tf.constant([1j]))


@pytest.mark.parametrize("op", [tf.cumsum, tf.math.cumprod])
def test_scans_bad_input(op):
    x = tf.constant([1., 2.])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(x, axis=1)
    with pytest.raises(InvalidArgumentError, match="single int"):
        op(x, axis=[0])
    with pytest.raises(TypeError, match="must be an int"):
        op(x, axis=0.0)
    with pytest.raises(InvalidArgumentError, match="scalar"):
        op(tf.constant(1.))
    with pytest.raises(InvalidArgumentError, match="bool"):
        op(tf.constant([True]))


def test_complex_needs_matching_float32_or_float64_parts():
    with pytest.raises(TypeError, match="float32.*float64"):
        tf.complex(tf.constant([1.]), tf.constant([1.], tf.float64))
    with pytest.raises(TypeError, match="int32"):
        tf.complex(tf.constant([1]), tf.constant([1]))


def test_clip_by_value_bounds_must_broadcast_to_t():
    with pytest.raises(InvalidArgumentError, match="clip_value_min"):
        tf.clip_by_value(tf.constant([1., 2.]), tf.zeros([3]), 1.)
    with pytest.raises(InvalidArgumentError, match="clip_value_max"):
        tf.clip_by_value(tf.constant([1., 2.]), 0., tf.ones([2, 2]))


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
    _, (g,) = _grad(tf.sign, np.array([-1., 0., 2.]))
    np.testing.assert_array_equal(g, [0., 0., 0.])


def test_sqrt_at_zero_has_an_infinite_gradient_and_does_not_crash():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        y, (g,) = _grad(tf.sqrt, np.array([0., 4.]))
    np.testing.assert_array_equal(y, [0., 2.])
    np.testing.assert_array_equal(g, [np.inf, 0.25])


def test_rsqrt_and_reciprocal_gradients_are_zero_where_the_cotangent_is_zero():
    """TensorFlow's kernels: an element that does not reach the loss gets 0, not inf * 0."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        _, (g,) = _grad(lambda x: tf.math.rsqrt(x)[0], np.array([1., 0.]))
        np.testing.assert_array_equal(g, [-0.5, 0.])
        _, (g,) = _grad(lambda x: tf.math.reciprocal(x)[0], np.array([2., 0.]))
        np.testing.assert_array_equal(g, [-0.25, 0.])
        _, (g,) = _grad(tf.math.rsqrt, np.array([0.]))
        np.testing.assert_array_equal(g, [-np.inf])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softplus_is_stable_at_large_magnitudes(dtype):
    x = np.array([-1000., -30., 0., 30., 1000.], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (g,) = _grad(tf.math.softplus, x)
    assert y.dtype == tf.as_dtype(dtype) and g.dtype == tf.as_dtype(dtype)
    want = np.logaddexp(0., x.astype(np.float64))
    np.testing.assert_allclose(np.asarray(y, np.float64), want, rtol=1e-3, atol=1e-7)
    sig = 0.5 * (1 + np.tanh(x.astype(np.float64) / 2))
    np.testing.assert_allclose(np.asarray(g, np.float64), sig, rtol=1e-3, atol=1e-7)
    assert np.asarray(y)[-1] == 1000.


def test_softplus_keeps_precision_for_very_negative_inputs():
    y = tf.math.softplus(tf.constant([-40.], tf.float64))
    np.testing.assert_allclose(y, np.exp(-40.), rtol=1e-14)


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_dtypes_are_kept(dtype):
    x = tf.constant(np.array([0.25, 0.5], dtype))
    for op in (tf.math.erf, tf.math.softplus, tf.math.rsqrt, tf.math.log1p, tf.math.atanh,
               tf.math.floor, lambda v: tf.math.atan2(v, v), tf.math.reduce_prod,
               tf.reduce_logsumexp, tf.math.reduce_std, tf.math.cumprod, tf.cumsum):
        assert op(x).dtype == tf.as_dtype(dtype)


def test_erf_values():
    x = np.array([-3., -0.5, 0., 0.1, 2.])
    want = [-0.9999779095030014, -0.5204998778130465, 0., 0.1124629160182849, 0.9953222650189527]
    np.testing.assert_allclose(tf.math.erf(tf.constant(x)), want, rtol=1e-14)


def test_inverse_functions_at_their_domain_edges_as_tensorflow():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for op, x, value, grad in [(tf.math.acosh, 1., 0., np.inf),
                                   (tf.math.log1p, -1., -np.inf, np.inf),
                                   (tf.math.asin, 1., np.pi / 2, np.inf),
                                   (tf.math.atanh, 1., np.inf, np.inf)]:
            y, (g,) = _grad(op, np.array([x]))
            np.testing.assert_allclose(y, [value])
            np.testing.assert_array_equal(g, [grad])
        y, (gy, gx) = _grad(tf.math.atan2, np.array([0.]), np.array([0.]))
    np.testing.assert_array_equal(y, [0.])
    assert np.isnan(gy).all() and np.isnan(gx).all()


def test_clip_by_value_gradient_passes_inside_the_closed_interval_as_tensorflow():
    y, (gt, glo, ghi) = _grad(tf.clip_by_value, np.array([-1., 0., 0.5, 1., 2.]), np.array(0.),
                              np.array(1.))
    np.testing.assert_array_equal(y, [0., 0., 0.5, 1., 1.])
    np.testing.assert_array_equal(gt, [0., 1., 1., 1., 0.])
    assert float(glo) == 1. and float(ghi) == 1.
    np.testing.assert_array_equal(tf.clip_by_value(tf.constant([1, 5]), 0, 3), [1, 3])


# ------------------------------------------------------------------ reductions and scans
def test_reduce_prod_gradient_with_zeros_never_divides():
    _, (g,) = _grad(tf.reduce_prod, np.array([2., 0., 3.]))
    np.testing.assert_array_equal(g, [0., 6., 0.])
    _, (g,) = _grad(tf.reduce_prod, np.array([2., 0., 0.]))
    np.testing.assert_array_equal(g, [0., 0., 0.])
    x = tf.constant([2., 0., 3., 5.], tf.float64)   # exact Hessian: d2/dxi dxj = prod of the others
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_prod(x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    xs = np.asarray(x)
    want = np.array([[0. if i == j else np.prod(np.delete(xs, [i, j])) for j in range(4)]
                     for i in range(4)])
    np.testing.assert_array_equal(h, want)


def test_reduce_prod_integers_empty_and_keepdims():
    y = tf.reduce_prod(tf.constant([[2, 3], [4, 5]]), axis=0)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(y, [8, 15])
    assert float(tf.reduce_prod(tf.zeros([0]))) == 1.
    assert tf.reduce_prod(tf.ones([2, 3, 4]), axis=[0, 2], keepdims=True).shape == (1, 3, 1)


def test_cumprod_gradient_with_zeros_is_exact():
    """TensorFlow's cumprod gradient divides by x and gives [1, 0, 0] here."""
    _, (g,) = _grad(lambda x: tf.reduce_sum(tf.math.cumprod(x)), np.array([2., 0., 3.]))
    np.testing.assert_array_equal(g, [1., 8., 0.])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_match_numpy_and_keep_integer_dtypes(exclusive, reverse):
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    for axis in (0, 1, -1):
        flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
        s = np.cumsum(flip(x), axis=axis)
        p = np.cumprod(flip(x), axis=axis)
        if exclusive:
            s = s - flip(x)
            p = p // flip(x)
        got_s = tf.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse)
        got_p = tf.math.cumprod(x, axis=axis, exclusive=exclusive, reverse=reverse)
        assert got_s.dtype == tf.int32 and got_p.dtype == tf.int32
        np.testing.assert_array_equal(got_s, flip(s))
        np.testing.assert_array_equal(got_p, flip(p))


def test_reduce_logsumexp_special_values_as_tensorflow():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert float(tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf]))) == -np.inf
        assert float(tf.reduce_logsumexp(tf.constant([np.inf, 1.]))) == np.inf
        assert float(tf.reduce_logsumexp(tf.zeros([0]))) == -np.inf
    got = tf.reduce_logsumexp(tf.constant([[1., 2.], [3., 4.]]), axis=1, keepdims=True)
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got, [[2.3132617], [4.3132615]], rtol=1e-6)


def test_reduce_logsumexp_gradient_is_softmax_without_overflow():
    x = np.array([1., 2., 1000.])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (g,) = _grad(tf.reduce_logsumexp, x)
    np.testing.assert_allclose(y, 1000.)
    np.testing.assert_allclose(g, [0., 0., 1.], atol=1e-300)
    x = np.array([[0.5, -1., 2.], [3., 3., 3.]])
    _, (g,) = _grad(lambda v: tf.reduce_logsumexp(v, axis=1), x)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(1, keepdims=True), rtol=1e-14)


def test_variance_and_std():
    x = np.array([[1., 2.], [3., 6.]])
    np.testing.assert_allclose(tf.math.reduce_variance(x), x.var())
    np.testing.assert_allclose(tf.math.reduce_std(x, axis=1, keepdims=True),
                               x.std(1, keepdims=True))
    z = tf.constant([1 + 1j, 2 - 1j])
    v = tf.math.reduce_variance(z)
    assert v.dtype == tf.float64
    np.testing.assert_allclose(v, 1.25)
    with warnings.catch_warnings():   # sqrt at 0: nan, as TensorFlow
        warnings.simplefilter("ignore", RuntimeWarning)
        _, (g,) = _grad(tf.math.reduce_std, np.array([1., 1.]))
    assert np.isnan(g).all()


def test_arg_extrema_as_tensorflow():
    x = tf.constant([[1., 3.], [4., 2.]])
    got = tf.argmax(x)                       # axis None is axis 0
    assert got.dtype == tf.int64
    np.testing.assert_array_equal(got, [1, 0])
    assert tf.argmin(x, axis=-1, output_type=tf.int32).dtype == tf.int32
    np.testing.assert_array_equal(tf.argmax(tf.constant([2., 5., 5.])), 1)   # first of ties
    np.testing.assert_array_equal(tf.argmax(tf.constant([True, False, True])), 0)
    np.testing.assert_array_equal(tf.argmax(tf.constant([1., np.nan, 3.])), 1)  # nan is the max


def test_boolean_reductions():
    x = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(tf.reduce_all(x, axis=0), [True, False])
    np.testing.assert_array_equal(tf.reduce_any(x, axis=1, keepdims=True), [[True], [True]])
    empty = tf.zeros([0], tf.bool)
    assert bool(tf.reduce_all(empty)) and not bool(tf.reduce_any(empty))


# ------------------------------------------------------------------ complex numbers
# NOTE(complex-gradients) in tapeflow/ops/math_ops.py
def test_complex_construction_and_parts():
    z = tf.complex(tf.constant([1., 2.]), 3.)
    assert z.dtype == tf.complex64
    assert tf.math.real(z).dtype == tf.float32
    np.testing.assert_array_equal(tf.math.imag(z), [3., 3.])
    inf = tf.complex(tf.constant([np.inf], tf.float64), tf.constant([0.], tf.float64))
    assert np.asarray(inf)[0] == complex(np.inf, 0.)
    x = tf.constant([1., 2.])
    assert tf.math.real(x) is x
    np.testing.assert_array_equal(tf.math.imag(x), [0., 0.])
    d = tf.math.squared_difference(tf.constant([1 + 2j]), tf.constant([0j]))
    assert np.asarray(d)[0] == 5 + 0j


def test_complex_abs_is_the_real_magnitude():
    assert tf.abs(tf.constant([3 + 4j], tf.complex64)).dtype == tf.float32
    np.testing.assert_array_equal(tf.math.abs(tf.constant([3 + 4j, 0j])), [5., 0.])
    np.testing.assert_array_equal(tf.abs(tf.constant([-2., 3.])), [2., 3.])


def test_gradient_of_a_real_loss_is_dl_dx_plus_i_dl_dy():
    """TensorFlow's convention, checked against the values TensorFlow 2 returns."""
    z = np.array([3 + 4j, 0j, -1 + 0.5j])
    _, (g,) = _grad(lambda v: tf.abs(v) ** 2, z)
    np.testing.assert_allclose(g, 2 * z)                     # d|z|^2 -> 2 z
    _, (g,) = _grad(tf.abs, z)
    np.testing.assert_allclose(g, [0.6 + 0.8j, 0., z[2] / np.abs(z[2])])  # z/|z|, 0 at 0
    _, (g,) = _grad(tf.math.real, z)
    np.testing.assert_array_equal(g, [1, 1, 1])
    _, (g,) = _grad(tf.math.imag, z)
    np.testing.assert_array_equal(g, [1j, 1j, 1j])
    _, (g,) = _grad(lambda v: tf.math.real(tf.exp(v)), z)
    np.testing.assert_allclose(g, np.conj(np.exp(z)))        # holomorphic f: conj(f'(z))
    _, (ga, gb) = _grad(lambda a, b: tf.abs(tf.complex(a, b)), np.array([3.]), np.array([4.]))
    np.testing.assert_allclose([ga[0], gb[0]], [0.6, 0.8])


@pytest.mark.parametrize("name, deriv", [
    ("rsqrt", lambda z: -0.5 * z ** -1.5), ("reciprocal", lambda z: -1 / z ** 2),
    ("expm1", np.exp), ("log1p", lambda z: 1 / (1 + z)), ("tan", lambda z: 1 / np.cos(z) ** 2),
    ("asin", lambda z: 1 / np.sqrt(1 - z ** 2)), ("acos", lambda z: -1 / np.sqrt(1 - z ** 2)),
    ("atan", lambda z: 1 / (1 + z ** 2)), ("sinh", np.cosh), ("cosh", np.sinh),
    ("asinh", lambda z: 1 / np.sqrt(z ** 2 + 1)),
    ("acosh", lambda z: 1 / (np.sqrt(z - 1) * np.sqrt(z + 1))),
    ("atanh", lambda z: 1 / (1 - z ** 2))])
def test_holomorphic_ops_follow_the_convention(name, deriv):
    """grad of real(f(z)) is conj(f'(z)); the JVP along t is f'(z) t."""
    z = np.array([0.3 + 0.4j, -0.2 + 0.6j])
    op = getattr(tf.math, name)
    _, (g,) = _grad(lambda v: tf.math.real(op(v)), z)
    np.testing.assert_allclose(g, np.conj(deriv(z)), rtol=1e-12)
    t = np.array([1 - 2j, 0.5j])
    zt = tf.constant(z)
    with tf.autodiff.ForwardAccumulator(zt, tf.constant(t)) as acc:
        y = op(zt)
    np.testing.assert_allclose(acc.jvp(y), deriv(z) * t, rtol=1e-12)


def test_complex_abs_forward_mode():
    z = tf.constant([3 + 4j, 0j])
    with tf.autodiff.ForwardAccumulator(z, tf.constant([1 + 1j, 1 + 0j])) as acc:
        y = tf.abs(z)
    np.testing.assert_allclose(acc.jvp(y), [(3 + 4) / 5, 0.])
