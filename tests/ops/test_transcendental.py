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


# ------------------------------------------------------------------ lgamma, digamma, polygamma
_GAMMA_X = [-2.5, -1., 0., 0.5, 1., 3., 30., np.inf, -np.inf, np.nan]
_GAMMA_X_MORE = [0., -0., -1., -3., -np.inf, -2.5, -0.5, -10.3, 1e-8, 1e8]

# TensorFlow 2.21 (CPU, float64) at _GAMMA_X: where it differs from SciPy (lgamma(-inf),
# digamma(0), even orders at the poles) these are TensorFlow's.
_TF_LGAMMA = [-5.62437165e-02, np.inf, np.inf, 5.72364943e-01, 0., 6.93147181e-01,
              7.12570390e+01, np.inf, np.inf, np.nan]
_TF_DIGAMMA = [1.10315664, np.nan, np.nan, -1.96351003, -0.57721566, 0.92278434, 3.38443813,
               np.inf, np.nan, np.nan]
_TF_POLYGAMMA = {
    1: [9.53924664, np.inf, np.inf, 4.9348022, 1.64493407, 0.39493407, 0.03389506, 0., np.inf,
        np.nan],
    2: [-1.08204052e-01, np.nan, np.nan, -1.68287966e+01, -2.40411381e+00, -1.54113806e-01,
        -1.14876520e-03, -0., np.nan, np.nan],
}
# at _GAMMA_X_MORE, orders 3 and 4
_TF_POLYGAMMA_MORE = {
    3: [np.inf] * 5 + [1.94747876e+02, 1.93409091e+02, 7.69019333e+02, 6.00000000e+32,
                       2.00000003e-24],
    4: [np.nan] * 5 + [-6.79959995e-02, -3.47424983e+00, 9.73875986e+03, -2.40000000e+41,
                       -6.00000012e-32],
}


def test_gamma_family_values_as_tensorflow():
    x = tf.constant(_GAMMA_X, tf.float64)
    np.testing.assert_allclose(tf.math.lgamma(x), _TF_LGAMMA, rtol=2e-8)
    np.testing.assert_allclose(tf.math.digamma(x), _TF_DIGAMMA, rtol=2e-8)
    np.testing.assert_allclose(tf.math.polygamma(tf.constant(0., tf.float64), x), _TF_DIGAMMA,
                               rtol=2e-8)
    for n, want in _TF_POLYGAMMA.items():
        np.testing.assert_allclose(tf.math.polygamma(tf.constant(float(n), tf.float64), x), want,
                                   rtol=2e-8)
    x = tf.constant(_GAMMA_X_MORE, tf.float64)
    for n, want in _TF_POLYGAMMA_MORE.items():
        np.testing.assert_allclose(tf.math.polygamma(tf.constant(float(n), tf.float64), x), want,
                                   rtol=2e-8)
    # Orders that are not non-negative integers give nan; orders broadcast against x.
    for bad in (1.5, -1.):
        assert np.isnan(tf.math.polygamma(tf.constant(bad, tf.float64), x).numpy()).all()
    out = tf.math.polygamma(tf.constant([[1.], [2.]]), tf.constant([1., 2., 3.]))
    np.testing.assert_allclose(out, [[1.644934, 0.6449341, 0.39493406],
                                     [-2.404114, -0.40411383, -0.1541138]], rtol=1e-6)
    assert out.dtype == tf.float32
    assert tf.math.polygamma(1, tf.constant([1., 2.])).dtype == tf.float32
    half = tf.math.lgamma(tf.constant([1.5], tf.float16))
    assert half.dtype == tf.float16 and float(half[0]) == pytest.approx(-0.1208, abs=1e-4)
    assert not hasattr(tf, "lgamma") and not hasattr(tf, "digamma")  # tf.math only


def test_gamma_family_gradients_as_tensorflow():
    # TF 2.21: d lgamma at [-2.5, 0.5, 3] is digamma there; d polygamma(2, x)/dx at x = 3 is
    # 0.1189394 (float32) and the order gets None.
    _, (g,) = value_and_grads(tf.math.lgamma, np.array([-2.5, 0.5, 3.]))
    np.testing.assert_allclose(g, [1.10315664, -1.96351003, 0.92278434], rtol=2e-8)
    a, x = tf.Variable(2.), tf.Variable(3.)
    with tf.GradientTape() as tape:
        y = tf.math.polygamma(a, x)
    ga, gx = tape.gradient(y, [a, x])
    assert ga is None
    np.testing.assert_allclose(gx, 0.1189394, rtol=1e-6)
    tf.testing.check_grads(tf.math.lgamma, [np.array([0.7, 2.5, -1.5])], order=3)
    tf.testing.check_grads(lambda x: tf.math.polygamma(tf.constant(3., tf.float64), x),
                           [np.array([0.7, 2.5, -1.5])], order=2)


def test_gamma_fallbacks_match_scipy(monkeypatch):
    """The NumPy fallbacks (SciPy absent) agree with SciPy to ~1e-12 relative in float64,
    on both sides of zero (the reflection formula), and the ops use them when forced."""
    special = pytest.importorskip("scipy.special")
    from tapeflow.ops import transcendental as T

    xs = np.concatenate([np.linspace(1e-3, 40, 2001), -np.linspace(0.01, 30, 2001),
                         np.logspace(-5, 5, 200), [1e-8, 1e8, 1e12]])
    xs = xs[xs != np.floor(xs)]

    def close(got, want):
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())

    close(T._lgamma_numpy(xs), special.gammaln(xs))
    close(T._digamma_numpy(xs), special.psi(xs))
    for n in range(1, 7):
        close(T._polygamma_numpy(n, xs), special.polygamma(n, xs))
    want_lg = tf.math.lgamma(tf.constant(_GAMMA_X, tf.float64)).numpy()
    want_dg = tf.math.digamma(tf.constant(_GAMMA_X, tf.float64)).numpy()
    a = tf.constant([[0.], [1.], [2.], [3.]], tf.float64)
    want_pg = tf.math.polygamma(a, tf.constant(_GAMMA_X, tf.float64)).numpy()
    for name, fallback in (("gammaln", T._lgamma_numpy), ("psi", T._digamma_numpy),
                           ("polygamma", T._polygamma_numpy)):
        monkeypatch.setitem(T._SPECIAL, name, fallback)
    x = tf.constant(_GAMMA_X, tf.float64)
    np.testing.assert_allclose(tf.math.lgamma(x), want_lg, rtol=1e-12)
    np.testing.assert_allclose(tf.math.digamma(x), want_dg, rtol=1e-12)
    np.testing.assert_allclose(tf.math.polygamma(a, x), want_pg, rtol=1e-12)


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.math.lgamma(tf.constant([1, 2])), InvalidArgumentError, "lgamma.*int32"),
    (lambda: tf.math.lgamma(tf.constant([1.5 + 1j])), InvalidArgumentError, "lgamma.*complex"),
    (lambda: tf.math.digamma(tf.constant([1, 2])), InvalidArgumentError, "digamma.*int32"),
    (lambda: tf.math.polygamma(tf.constant(1., tf.float64), tf.constant([1., 2.])),
     InvalidArgumentError, "polygamma.*float64.*float32"),
    (lambda: tf.math.polygamma(1.5, tf.constant([1, 2])), TypeError, "polygamma"),
    (lambda: tf.math.polygamma(tf.constant(1), tf.constant([1, 2])), InvalidArgumentError,
     "polygamma.*`x`.*int32"),
])
def test_gamma_family_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_sigmoid_stays_finite_far_out_on_either_side(dtype):
    # exp(-x) of a large negative real part is inf + inf j, whose quotient is nan:
    # the impl takes exp(x) / (1 + exp(x)) there.
    z = np.array([1 + 1j, -1 - 2j, 100 + 1j, -100 + 1j, -800 + 3j, 800 - 3j, -30 + 2j], dtype)
    with np.errstate(over="ignore"):
        want = np.array([1 / (1 + np.exp(-complex(v))) if v.real >= 0 else
                         np.exp(complex(v)) / (1 + np.exp(complex(v))) for v in z])
    x = tf.constant(z)
    got = tf.math.sigmoid(x).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, want.astype(dtype), rtol=1e-5, atol=1e-30)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.math.sigmoid(x)
    assert np.isfinite(tape.gradient(y, x).numpy()).all()
