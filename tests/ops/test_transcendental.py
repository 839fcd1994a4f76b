"""The transcendental ops beyond the op table: integer and complex arguments they refuse,
softplus and erf at extreme and exact values, the inverse functions at the edges of
their domains, dtypes kept, the complex derivative convention of the holomorphic
functions, and sigmoid, tanh and softplus being the same functions under tf.nn.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import value_and_grads


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


# ------------------------------------------------------------------ TensorFlow's values
@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_softplus_is_stable_at_large_magnitudes(dtype):
    x = np.array([-1000., -30., 0., 30., 1000.], dtype)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (g,) = value_and_grads(tf.math.softplus, x)
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
            y, (g,) = value_and_grads(op, np.array([x]))
            np.testing.assert_allclose(y, [value])
            np.testing.assert_array_equal(g, [grad])
        y, (gy, gx) = value_and_grads(tf.math.atan2, np.array([0.]), np.array([0.]))
    np.testing.assert_array_equal(y, [0.])
    assert np.isnan(gy).all() and np.isnan(gx).all()


# ------------------------------------------------------------------ complex arguments
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
    _, (g,) = value_and_grads(lambda v: tf.math.real(op(v)), z)
    np.testing.assert_allclose(g, np.conj(deriv(z)), rtol=1e-12)
    t = np.array([1 - 2j, 0.5j])
    zt = tf.constant(z)
    with tf.autodiff.ForwardAccumulator(zt, tf.constant(t)) as acc:
        y = op(zt)
    np.testing.assert_allclose(acc.jvp(y), deriv(z) * t, rtol=1e-12)


# ------------------------------------------------------------------ names
def test_sigmoid_and_tanh_are_the_math_ops():
    assert tf.nn.sigmoid is tf.math.sigmoid and tf.nn.tanh is tf.math.tanh
    assert tf.nn.softplus is tf.math.softplus


def test_sigmoid_without_scipy_matches_scipys_expit():
    """The NumPy fallback (SciPy absent) agrees with the one-call expit to a few ulp, keeps
    float32, and takes NumPy scalars (rank 0)."""
    special = pytest.importorskip("scipy.special")
    from tapeflow.ops.transcendental import _sigmoid_numpy

    for dtype, ulps in ((np.float64, 4), (np.float32, 4)):
        x = np.concatenate([np.linspace(-80, 80, 4001), [0.0, -0.0]]).astype(dtype)
        got, want = _sigmoid_numpy(x), special.expit(x)
        assert got.dtype == dtype
        np.testing.assert_allclose(got, want, rtol=ulps * np.finfo(dtype).eps, atol=0)
        for v in (dtype(-3.5), dtype(2.0)):
            assert type(_sigmoid_numpy(v)) is dtype
            np.testing.assert_allclose(_sigmoid_numpy(v), special.expit(v),
                                       rtol=ulps * np.finfo(dtype).eps)
