"""Transcendental functions: powers, exponentials and logarithms, trigonometric and
hyperbolic functions and their inverses, sigmoid, softplus, erf, and the gamma family
(lgamma, digamma, polygamma).

Most are `unary` primitives (ops/structural.py): the rules multiply by the derivative
written beside each one, conjugated in reverse mode for complex inputs
(NOTE(complex-gradients) in ops/complex.py).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..catalog import Lowering, define
from ..core import Primitive, bind
from ..optional import module_or_none
from ..tensor import Tensor
from .convert import as_tensor, binary_args, check_dtype
from .elementwise import (FLOAT, REAL_FLOAT, add, divide, doc, greater, multiply, negative,
                          on_branch_cut, reciprocal_p, rsqrt_p, square, subtract, unary_op)
from .structural import (full_of, shape_of, batch_elementwise, binary, elementwise_deps, is_one, neutral_right,
                         per_input, select_p, unary, zeros_of)

# ------------------------------------------------------------------ exponentials and logarithms
exp_p = unary("exp", np.exp, lambda ans, x: ans, reads="ans")                      # exp x
expm1_p = unary("expm1", np.expm1, lambda ans, x: exp(x), reads="x")               # e^x
log_p = unary("log", np.log, lambda ans, x: divide(1, x), reads="x")               # 1 / x
log1p_p = unary("log1p", np.log1p, lambda ans, x: bind(reciprocal_p, add(x, 1)),   # 1/(1+x)
                reads="x")


# ------------------------------------------------------------------ pow: d(x^y) = y x^(y-1) dx + log(x) x^y dy
def _pow_dx(x: Tensor, y: Tensor) -> Tensor:
    return multiply(y, pow(x, subtract(y, 1)))


def _pow_dy(ans: Tensor, x: Tensor) -> Tensor:
    # log(x) only where x > 0 (TensorFlow's choice: the y-derivative is 0 elsewhere);
    # the inner where keeps log's own derivative finite in the unused branch.
    positive = greater(x, 0)
    safe_x = bind(select_p, positive, x, full_of(shape_of(x), 1, x._value.dtype))
    return bind(select_p, positive, multiply(log(safe_x), ans), zeros_of(ans))


pow_p = binary(
    "pow", np.power, lambda ans, x, y: _pow_dx(x, y), lambda ans, x, y: _pow_dy(ans, x),
    reads=("x y", "ans x"), simplify=neutral_right(is_one),
    # The check is False where the impl raises (an integer to a negative integer power, as
    # NumPy and TensorFlow): the compiled call reruns on NumPy, which raises the error.
    lower=Lowering(lambda jax, x, y: jax.numpy.power(x, y),
                   check=lambda jax, x, y: jax.numpy.all(y >= 0),
                   check_needed=lambda x, y: np.dtype(y[1]).kind == "i"))


# ------------------------------------------------------------------ trigonometric
def _one_minus_x2(x: Tensor) -> Tensor:
    return subtract(1, square(x))


sin_p = unary("sin", np.sin, lambda ans, x: cos(x), reads="x")                    # cos x
cos_p = unary("cos", np.cos, lambda ans, x: negative(sin(x)), reads="x")          # -sin x
tan_p = unary("tan", np.tan, lambda ans, x: add(square(ans), 1), reads="ans")     # 1 + tan^2 x
asin_p = unary("asin", np.arcsin, lambda ans, x: bind(rsqrt_p, _one_minus_x2(x)),  # 1/sqrt(1-x^2)
               reads="x", lower=on_branch_cut("arcsin"))
acos_p = unary("acos", np.arccos,                                                  # -1/sqrt(1-x^2)
               lambda ans, x: negative(bind(rsqrt_p, _one_minus_x2(x))),
               reads="x", lower=on_branch_cut("arccos"))
atan_p = unary("atan", np.arctan,                                                  # 1/(1+x^2)
               lambda ans, x: bind(reciprocal_p, add(square(x), 1)), reads="x")


# atan2(y, x): d = (x dy - y dx) / (x^2 + y^2)
def _atan2_scale(y: Tensor, x: Tensor) -> Tensor:
    return bind(reciprocal_p, add(square(x), square(y)))


# (binary names its inputs x and y: here the first is y, the second x; both partials read both.)
atan2_p = binary("atan2", np.arctan2,
                 lambda ans, y, x: multiply(x, _atan2_scale(y, x)),
                 lambda ans, y, x: negative(multiply(y, _atan2_scale(y, x))),
                 reads=("x y", "x y"))

# ------------------------------------------------------------------ hyperbolic
sinh_p = unary("sinh", np.sinh, lambda ans, x: bind(cosh_p, x), reads="x")        # cosh x
cosh_p = unary("cosh", np.cosh, lambda ans, x: bind(sinh_p, x), reads="x")        # sinh x
tanh_p = unary("tanh", np.tanh, lambda ans, x: subtract(1, square(ans)),           # 1 - tanh^2
               reads="ans")
# asinh and acosh use the output, as TensorFlow: no x^2 that could overflow.
asinh_p = unary("asinh", np.arcsinh,                                               # 1/cosh(asinh x)
                lambda ans, x: bind(reciprocal_p, bind(cosh_p, ans)),
                reads="ans", lower=on_branch_cut("arcsinh", odd=True))
acosh_p = unary("acosh", np.arccosh,                                               # 1/sinh(acosh x)
                lambda ans, x: bind(reciprocal_p, bind(sinh_p, ans)),
                reads="ans", lower=on_branch_cut("arccosh"))
atanh_p = unary("atanh", np.arctanh,                                               # 1/(1-x^2)
                lambda ans, x: bind(reciprocal_p, _one_minus_x2(x)), reads="x")


# ------------------------------------------------------------------ SciPy's ufuncs, if installed
_SPECIAL: dict[str, Any] = {}


def _special(name: str, fallback: Any) -> Any:
    """scipy.special's ufunc `name` when SciPy is installed (an optional dependency, loaded
    on first use: it takes longer to import than tapeflow), else `fallback`."""
    fn = _SPECIAL.get(name)
    if fn is None:
        special = module_or_none("scipy.special")
        fn = _SPECIAL[name] = fallback if special is None else getattr(special, name)
    return fn


# ------------------------------------------------------------------ sigmoid, softplus: s (1 - s), s
def _sigmoid_numpy(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only: no overflow at large |x|. With e = exp(-|x|),
    # sigmoid is 1 / (1 + e) at x >= 0 and e / (1 + e) below, written in place.
    e = np.exp(-np.abs(x))
    s = 1 / (1 + e)
    if np.ndim(s) == 0:  # a NumPy scalar: nothing to write into
        return s * e if x < 0 else s
    np.multiply(s, e, out=s, where=np.signbit(x))
    return s


def _sigmoid_impl(x: np.ndarray) -> np.ndarray:
    if x.dtype.kind == "c":
        # 1 / (1 + exp(-x)), and exp(x) / (1 + exp(x)) where Re x < 0: exp of a
        # non-positive real part only, which cannot overflow to inf + inf j (whose
        # quotient is nan; TensorFlow gives 0 there).
        e = np.exp(np.where(x.real < 0, x, -x))
        return np.where(x.real < 0, e, 1) / (1 + e)
    # SciPy's expit is one ufunc call (within 1.3 ulp, float32 kept); NumPy alone takes
    # seven calls, which dominate on small arrays.
    s = _special("expit", _sigmoid_numpy)(x)
    return s if s.dtype == x.dtype else s.astype(x.dtype)  # expit computes float16 in float64


def _sigmoid_lower(jax: Any, x: Any) -> Any:
    # XLA's own logistic. The impl's form (exp of -|x| only, e / (1 + e) below 0) keeps
    # the subnormal results of x below -87 (float32) that 1 / (1 + exp(-x)) rounds to 0,
    # but XLA's CPU code flushes subnormals to zero anyway, and the form's abs, sign test
    # and select made an unrolled LSTM gradient slower than JAX jit's, which XLA's
    # logistic is not (docs/performance-notes.md, #sigmoid-lower).
    if jax.numpy.iscomplexobj(x):  # as the impl
        jnp = jax.numpy
        e = jnp.exp(jnp.where(x.real < 0, x, -x))
        return jnp.where(x.real < 0, e, 1) / (1 + e)
    return jax.lax.logistic(x)


# In a loop kernel, on one real element (catalog `kernel`): where exp(-x) overflows the
# quotient is 0, as expit's (to a subnormal). Numba computes a float32 element's form in
# float64 (its scalar promotion of the integer literals), rounded once where stored.
sigmoid_p = unary("sigmoid", _sigmoid_impl, lambda ans, x: multiply(ans, subtract(1, ans)),
                  reads="ans", lower=_sigmoid_lower, kernel=lambda shapes: "1 / (1 + np.exp(-{0}))")


def _softplus_impl(x: np.ndarray) -> np.ndarray:
    # log(e^0 + e^x) without forming e^x: no overflow at large x, full precision at
    # very negative x.
    return np.logaddexp(x.dtype.type(0), x)


softplus_p = unary("softplus", _softplus_impl, lambda ans, x: sigmoid(x), reads="x",
                   lower=lambda jax, x: jax.numpy.logaddexp(jax.numpy.zeros((), x.dtype), x))


# ------------------------------------------------------------------ erf: 2/sqrt(pi) e^(-x^2)
def _erf_impl(x: np.ndarray) -> np.ndarray:
    return np.asarray(_special("erf", _erf_scalar)(x)).astype(x.dtype, copy=False)


_erf_scalar = np.vectorize(math.erf, otypes=[np.float64])  # exact, but one call per element


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erf_p = unary("erf", _erf_impl,
              lambda ans, x: multiply(exp(negative(square(x))), _TWO_OVER_SQRT_PI),
              reads="x", lower=lambda jax, x: jax.lax.erf(x))


# ------------------------------------------------------------------ lgamma, digamma, polygamma
# d lgamma = digamma, d digamma = polygamma(1, .), d polygamma(n, .) = polygamma(n + 1, .);
# no derivative in the order n (TensorFlow's gradient for `a` is None). Computed in float64
# by SciPy when installed, else by the NumPy fallbacks below, then TensorFlow's values at
# the poles (x a non-positive integer or -inf): lgamma inf, digamma nan, polygamma of
# odd order inf and of even order nan.
def _lgamma_scalar(v: float) -> float:
    try:
        return math.lgamma(v)
    except ValueError:  # a pole: math raises where TensorFlow gives inf
        return math.inf


_lgamma_numpy = np.vectorize(_lgamma_scalar, otypes=[np.float64])  # exact, one call per element

# Bernoulli numbers B_2 .. B_20 for the asymptotic series
_BERNOULLI = (1 / 6, -1 / 30, 1 / 42, -1 / 30, 5 / 66, -691 / 2730, 7 / 6, -3617 / 510,
              43867 / 798, -174611 / 330)


def _polygamma_positive(n: int, x: np.ndarray) -> np.ndarray:
    """psi^(n)(x) for x > 0: the recurrence psi^(n)(x) = psi^(n)(x + 1) - (-1)^n n! / x^(n+1)
    shifts x to at least 15 + n, where the asymptotic series converges to double precision."""
    big = 15.0 + n
    shift = np.zeros_like(x)
    y = x.copy()
    with np.errstate(divide="ignore", over="ignore"):
        while True:
            low = y < big
            if not low.any():
                break
            shift[low] += y[low] ** -(n + 1.0)
            y[low] += 1.0
        sign = -1.0 if n % 2 else 1.0  # (-1)^n
        shift *= sign * math.factorial(n)
        inv2 = 1.0 / (y * y)
        if n == 0:
            series = np.zeros_like(y)
            for k in range(len(_BERNOULLI), 0, -1):
                series = (series + _BERNOULLI[k - 1] / (2 * k)) * inv2
            asym = np.log(y) - 0.5 / y - series
        else:
            series = np.zeros_like(y)
            for k in range(len(_BERNOULLI), 0, -1):
                coef = _BERNOULLI[k - 1] * math.factorial(2 * k + n - 1) / math.factorial(2 * k)
                series = (series + coef) * inv2
            asym = -sign * (math.factorial(n - 1) + n * math.factorial(n - 1) * 0.5 / y +
                            series) / y ** n
        return asym - shift


def _cot_derivative(n: int, c: np.ndarray) -> np.ndarray:
    """d^n/dz^n cot(z) as a polynomial in c = cot(z): P_0 = c, P_(k+1) = -(1 + c^2) P_k'."""
    poly = np.polynomial.Polynomial([0.0, 1.0])
    for _ in range(n):
        poly = -poly.deriv() * np.polynomial.Polynomial([1.0, 0.0, 1.0])
    return poly(c)


def _polygamma_order(n: int, x: np.ndarray) -> np.ndarray:
    out = np.full(x.shape, np.nan)
    pos = x > 0
    out[pos] = _polygamma_positive(n, x[pos])
    neg = (x < 0) & (x != np.floor(x))
    if neg.any():
        # Reflection: psi^(n)(x) = (-1)^n psi^(n)(1 - x) - pi^(n+1) P_n(cot(pi x)), with cot
        # taken of x - round(x), exact in floating point (cot has period 1).
        xn = x[neg]
        c = 1.0 / np.tan(np.pi * (xn - np.round(xn)))
        sign = -1.0 if n % 2 else 1.0
        out[neg] = sign * _polygamma_positive(n, 1.0 - xn) - np.pi ** (n + 1) * _cot_derivative(n, c)
    return out


def _digamma_numpy(x: np.ndarray) -> np.ndarray:
    return _polygamma_order(0, np.asarray(x, np.float64))


def _polygamma_numpy(n: np.ndarray, x: np.ndarray) -> np.ndarray:
    n, x = np.broadcast_arrays(np.asarray(n, np.float64), np.asarray(x, np.float64))
    out = np.full(x.shape, np.nan)
    for order in np.unique(n[np.isfinite(n)]):
        at = n == order
        out[at] = _polygamma_order(int(order), x[at])
    return out


def _poles(x: np.ndarray) -> np.ndarray:
    return (x <= 0) & (x == np.floor(x)) | (x == -np.inf)


def _lgamma_impl(x: np.ndarray) -> np.ndarray:
    out = np.asarray(_special("gammaln", _lgamma_numpy)(np.asarray(x, np.float64)))
    return np.where(x == -np.inf, np.inf, out).astype(x.dtype, copy=False)[()]


def _digamma_impl(x: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.asarray(_special("psi", _digamma_numpy)(np.asarray(x, np.float64)))
    return np.where(_poles(x), np.nan, out).astype(x.dtype, copy=False)[()]


def _polygamma_impl(a: np.ndarray, x: np.ndarray) -> np.ndarray:
    a64, x64 = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    order = (a64 >= 0) & (a64 == np.floor(a64)) & np.isfinite(a64)
    n = np.where(order, a64, 0.0)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        out = np.asarray(_special("polygamma", _polygamma_numpy)(n, x64), np.float64)
        pole = np.where((n % 2 == 1), np.inf, np.nan)
    out = np.where(_poles(x64), pole, out)
    return np.where(order, out, np.nan).astype(np.result_type(a, x), copy=False)[()]


# XLA's lgamma, digamma and polygamma in the input's dtype (the impls compute in float64),
# with the impls' values at the poles, at -inf and, for polygamma, at +inf (0; XLA: nan).
def _poles_lower(jax: Any, x: Any) -> Any:
    return (x <= 0) & (x == jax.numpy.floor(x)) | (x == -jax.numpy.inf)


def _lgamma_lower(jax: Any, x: Any) -> Any:
    return jax.numpy.where(_poles_lower(jax, x), jax.numpy.inf, jax.lax.lgamma(x))


def _digamma_lower(jax: Any, x: Any) -> Any:
    return jax.numpy.where(_poles_lower(jax, x), jax.numpy.nan, jax.lax.digamma(x))


def _polygamma_lower(jax: Any, a: Any, x: Any) -> Any:
    jnp = jax.numpy
    a, x = jnp.broadcast_arrays(a, x)
    order = (a >= 0) & (a == jnp.floor(a)) & jnp.isfinite(a)
    n = jnp.where(order, a, 0)
    out = jax.lax.polygamma(n, x)
    out = jnp.where((x == jnp.inf) & (n >= 1), jnp.where(n % 2 == 1, 0.0, -0.0), out)  # SciPy's zeros
    pole = jnp.where(n % 2 == 1, jnp.inf, jnp.nan)
    out = jnp.where(_poles_lower(jax, x), pole, out)
    return jnp.where(order, out, jnp.nan).astype(out.dtype)


lgamma_p = unary("lgamma", _lgamma_impl, lambda ans, x: bind(digamma_p, x), reads="x",
                 lower=_lgamma_lower)
digamma_p = unary("digamma", _digamma_impl,
                  lambda ans, x: bind(polygamma_p, Tensor(np.ones((), x._value.dtype)), x),
                  reads="x", lower=_digamma_lower)


def _polygamma_next(a: Tensor, x: Tensor) -> Tensor:
    return bind(polygamma_p, add(a, 1), x)


polygamma_p = define(
    Primitive("polygamma", _polygamma_impl),
    per_input(jvp=(None, lambda t, ans, a, x: multiply(t, _polygamma_next(a, x))),
              vjp=(None, lambda g, ans, a, x: multiply(g, _polygamma_next(a, x))),
              reads=("", "a x"), broadcasting=True),
    batch_elementwise, lower=_polygamma_lower,
    # The order carries no derivative: only x's elements reach the output's.
    sparsity=lambda pats, vals, outs: elementwise_deps((None, pats[1]), vals, outs))


# ================================================================== public ops
def pow(x: Any, y: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """x ** y elementwise, with broadcasting.

    The derivative with respect to y is log(x) x**y where x > 0 and 0 elsewhere
    (TensorFlow's choice, so a negative base with an integral exponent stays finite).

    Example:
        >>> import tapeflow as tf
        >>> tf.pow(tf.constant([2., 3.]), 2.).numpy()
        array([4., 9.], dtype=float32)
    """
    x, y = binary_args(x, y, "pow")
    return bind(pow_p, x, y)


exp = unary_op(exp_p, FLOAT, doc("e ** x elementwise.",
                                 "tf.exp(tf.constant([0.])).numpy()",
                                 "array([1.], dtype=float32)"))
expm1 = unary_op(expm1_p, FLOAT, doc(
    "exp(x) - 1 elementwise, accurate for small |x|.",
    "tf.math.expm1(tf.constant([0., 1e-10], tf.float64)).numpy()", "array([0.e+00, 1.e-10])"))
log = unary_op(log_p, FLOAT, doc("Natural logarithm elementwise.",
                                 "tf.math.log(tf.constant([1.])).numpy()",
                                 "array([0.], dtype=float32)"))
log1p = unary_op(log1p_p, FLOAT, doc(
    "log(1 + x) elementwise, accurate for small |x|; defined for x > -1.",
    "tf.math.log1p(tf.constant([0., 1e-10], tf.float64)).numpy()", "array([0.e+00, 1.e-10])"))
sin = unary_op(sin_p, FLOAT, doc("Sine elementwise.", "tf.sin(tf.constant([0.])).numpy()",
                                 "array([0.], dtype=float32)"))
cos = unary_op(cos_p, FLOAT, doc("Cosine elementwise.", "tf.cos(tf.constant([0.])).numpy()",
                                 "array([1.], dtype=float32)"))
tan = unary_op(tan_p, FLOAT, doc(
    "Tangent elementwise; its derivative is 1 + tan(x)^2.",
    "tf.math.tan(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
asin = unary_op(asin_p, FLOAT, doc(
    "Inverse sine elementwise, for |x| <= 1 (nan outside); derivative 1/sqrt(1 - x^2).",
    "tf.math.asin(tf.constant([0., 1.], tf.float64)).numpy()", "array([0.        , 1.57079633])"))
acos = unary_op(acos_p, FLOAT, doc(
    "Inverse cosine elementwise, for |x| <= 1 (nan outside); derivative -1/sqrt(1 - x^2).",
    "tf.math.acos(tf.constant([1.])).numpy()", "array([0.], dtype=float32)"))
atan = unary_op(atan_p, FLOAT, doc(
    "Inverse tangent elementwise; derivative 1/(1 + x^2).",
    "tf.math.atan(tf.constant([0., 1.], tf.float64)).numpy()", "array([0.        , 0.78539816])"))
sinh = unary_op(sinh_p, FLOAT, doc("Hyperbolic sine elementwise.",
                                   "tf.math.sinh(tf.constant([0.])).numpy()",
                                   "array([0.], dtype=float32)"))
cosh = unary_op(cosh_p, FLOAT, doc("Hyperbolic cosine elementwise.",
                                   "tf.math.cosh(tf.constant([0.])).numpy()",
                                   "array([1.], dtype=float32)"))
tanh = unary_op(tanh_p, FLOAT, doc("Hyperbolic tangent elementwise.",
                                   "tf.tanh(tf.constant([0.])).numpy()",
                                   "array([0.], dtype=float32)"))
asinh = unary_op(asinh_p, FLOAT, doc(
    "Inverse hyperbolic sine elementwise; the gradient is 1/cosh(asinh x).",
    "tf.math.asinh(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
acosh = unary_op(acosh_p, FLOAT, doc(
    "Inverse hyperbolic cosine, for x >= 1 (nan below); the gradient is 1/sinh(acosh x),\n"
    "inf at x = 1.",
    "tf.math.acosh(tf.constant([1.])).numpy()", "array([0.], dtype=float32)"))
atanh = unary_op(atanh_p, FLOAT, doc(
    "Inverse hyperbolic tangent, for |x| < 1 (+-inf at +-1); derivative 1/(1 - x^2).",
    "tf.math.atanh(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
sigmoid = unary_op(sigmoid_p, FLOAT, doc(
    "1 / (1 + exp(-x)), computed without overflow at large |x|.",
    "tf.sigmoid(tf.constant([0., 1000., -1000.])).numpy()",
    "array([0.5, 1. , 0. ], dtype=float32)"))
erf = unary_op(erf_p, REAL_FLOAT, doc(
    "The Gauss error function elementwise (real floating tensors); derivative\n"
    "2/sqrt(pi) exp(-x^2).",
    "tf.math.erf(tf.constant([0., 10.])).numpy()", "array([0., 1.], dtype=float32)"))

lgamma = unary_op(lgamma_p, REAL_FLOAT, doc(
    "log|Gamma(x)| elementwise (real floating tensors; inf at the poles, the non-positive\n"
    "integers); derivative digamma(x).",
    "tf.math.lgamma(tf.constant([0.5, 3.], tf.float64)).numpy()",
    "array([0.57236494, 0.69314718])"))
digamma = unary_op(digamma_p, REAL_FLOAT, doc(
    "The digamma function psi(x) = d lgamma(x) / dx elementwise (real floating tensors; nan\n"
    "at the poles); derivative polygamma(1, x).",
    "tf.math.digamma(tf.constant([1., 0.5], tf.float64)).numpy()",
    "array([-0.57721566, -1.96351003])"))


def polygamma(a: Any, x: Any, name: str | None = None) -> Tensor:
    """The polygamma function psi^(a)(x), the a-th derivative of digamma, elementwise with
    broadcasting (`a` and `x` of one real floating dtype).

    `a` must hold non-negative integers (nan elsewhere, as TensorFlow); at the poles (x a
    non-positive integer) the result is inf for odd `a` and nan for even `a`. The
    derivative in x is polygamma(a + 1, x); `a` carries none.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.polygamma(1., tf.constant([1., 2.], tf.float64)).numpy()
        array([1.64493407, 0.64493407])
    """
    a, x = binary_args(a, x, "polygamma")
    check_dtype(x, REAL_FLOAT, "polygamma", "x")
    return bind(polygamma_p, a, x)


def atan2(y: Any, x: Any, name: str | None = None) -> Tensor:
    """The angle of the point (x, y), in [-pi, pi], elementwise with broadcasting.

    Real floating tensors. The gradient is (x, -y) / (x^2 + y^2) for (y, x) (nan at the
    origin, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.atan2(tf.constant([1.], tf.float64), tf.constant([-1.], tf.float64)).numpy()
        array([2.35619449])
    """
    y, x = binary_args(y, x, "atan2")
    check_dtype(y, REAL_FLOAT, "atan2", "y")
    return bind(atan2_p, y, x)


def softplus(features: Any, name: str | None = None) -> Tensor:
    """log(1 + exp(features)), computed without overflow; its gradient is sigmoid(features).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.softplus(tf.constant([-1000., 1000.])).numpy()
        array([   0., 1000.], dtype=float32)
    """
    x = as_tensor(features, "softplus", "features")
    check_dtype(x, REAL_FLOAT, "softplus", "features")
    return bind(softplus_p, x)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "pow": "tf math", "exp": "tf math", "expm1": "tf math", "log": "tf math",
    "log1p": "tf math", "sin": "tf math", "cos": "tf math", "tan": "tf math",
    "asin": "tf math", "acos": "tf math", "atan": "tf math", "atan2": "tf math",
    "sinh": "tf math", "cosh": "tf math", "tanh": "tf math nn", "asinh": "tf math",
    "acosh": "tf math", "atanh": "tf math", "sigmoid": "tf math nn", "softplus": "tf math nn",
    "erf": "tf math", "lgamma": "math", "digamma": "math", "polygamma": "math",
}
