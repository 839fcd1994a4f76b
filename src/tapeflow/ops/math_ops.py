"""tf.math elementwise ops: one definition block per primitive, composites and public ops below.

Reductions and scans live in `math_reduce_ops` and are re-exported from here.

Complex numbers (NOTE(complex-gradients)): for a real loss L of a complex
tensor z = x + iy, the gradient a tape returns is ``dL/dx + i dL/dy``
(= 2 dL/d(conj z) in Wirtinger terms), TensorFlow's convention. Reverse rules
therefore multiply the incoming cotangent by the *conjugate* derivative of a
holomorphic op: ``grad(real(f(z))) = conj(f'(z))``, and for the non-holomorphic
ones ``abs(z)`` gives ``g * z / |z|`` (0 at z = 0), ``real(z)`` gives ``g + 0i``,
``imag(z)`` gives ``0 + ig`` and ``complex(a, b)`` sends ``real(g)`` to a and
``imag(g)`` to b. So ``tf.abs(z) ** 2`` has gradient ``2 z`` and
``tf.math.real(tf.exp(z))`` has gradient ``conj(exp(z))``, as in TensorFlow.
Forward rules are plain complex-linear JVPs ``f'(z) t``.

Derivatives that TensorFlow leaves undefined follow TensorFlow: floor, ceil
and round have no gradient (None), and the gradients of rsqrt and reciprocal
are 0 wherever the incoming cotangent is 0, even at x = 0 (TensorFlow's
kernels do the same), so an element that does not reach the loss cannot
poison the gradient with inf * 0.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor
from ._rules import (as_tensor, batch_elementwise, batch_unary, binary_args, check_dtype,
                     defjvp, defvjp, linear, shape_of, unary)
from .elementwise import (FLOAT, _unary, add, conj, divide, equal, exp, greater, maximum, minimum,
                          multiply, negative, ones_like_t, select, sigmoid, square, subtract,
                          zeros_like_t)
from .math_reduce_ops import (argmax, argmin, cumprod, cumsum, reduce_all,  # noqa: F401
                              reduce_any, reduce_logsumexp, reduce_prod, reduce_std,
                              reduce_variance)

REAL_FLOAT = "f"


def _mul_no_nan(a: Tensor, d: Tensor) -> Tensor:
    """a * d, exactly 0 where a == 0 even if d is inf or nan (TensorFlow's mul_no_nan)."""
    return multiply(a, select(equal(a, 0), zeros_like_t(d), d))


# ------------------------------------------------------------------ rsqrt, reciprocal
# Primitives rather than `unary`: their rules skip zero (co)tangents (see the module note).
def _rsqrt_deriv(ans: Tensor) -> Tensor:
    return multiply(multiply(ans, square(ans)), -0.5)


rsqrt_p = Primitive("rsqrt", lambda x: 1 / np.sqrt(x))
defjvp(rsqrt_p, lambda t, ans, x: _mul_no_nan(t, _rsqrt_deriv(ans)))           # -x^(-3/2) / 2
defvjp(rsqrt_p, lambda g, ans, x: _mul_no_nan(g, conj(_rsqrt_deriv(ans))))
batch_unary(rsqrt_p)

reciprocal_p = Primitive("reciprocal", np.reciprocal)
defjvp(reciprocal_p, lambda t, ans, x: _mul_no_nan(t, negative(square(ans))))   # -1 / x^2
defvjp(reciprocal_p, lambda g, ans, x: _mul_no_nan(g, conj(negative(square(ans)))))
batch_unary(reciprocal_p)

# ------------------------------------------------------------------ smooth unary ops: f'(x)
def _one_minus_x2(x: Tensor) -> Tensor:
    return subtract(1, square(x))


expm1_p = unary("expm1", np.expm1, lambda ans, x: exp(x))                          # e^x
log1p_p = unary("log1p", np.log1p, lambda ans, x: bind(reciprocal_p, add(x, 1)))   # 1/(1+x)
tan_p = unary("tan", np.tan, lambda ans, x: add(square(ans), 1))                   # 1 + tan^2 x
asin_p = unary("asin", np.arcsin, lambda ans, x: bind(rsqrt_p, _one_minus_x2(x)))  # 1/sqrt(1-x^2)
acos_p = unary("acos", np.arccos,                                                  # -1/sqrt(1-x^2)
               lambda ans, x: negative(bind(rsqrt_p, _one_minus_x2(x))))
atan_p = unary("atan", np.arctan,                                                  # 1/(1+x^2)
               lambda ans, x: bind(reciprocal_p, add(square(x), 1)))
sinh_p = unary("sinh", np.sinh, lambda ans, x: bind(cosh_p, x))                    # cosh x
cosh_p = unary("cosh", np.cosh, lambda ans, x: bind(sinh_p, x))                    # sinh x
# asinh and acosh use the output, as TensorFlow: no x^2 that could overflow.
asinh_p = unary("asinh", np.arcsinh,                                               # 1/cosh(asinh x)
                lambda ans, x: bind(reciprocal_p, bind(cosh_p, ans)))
acosh_p = unary("acosh", np.arccosh,                                               # 1/sinh(acosh x)
                lambda ans, x: bind(reciprocal_p, bind(sinh_p, ans)))
atanh_p = unary("atanh", np.arctanh,                                               # 1/(1-x^2)
                lambda ans, x: bind(reciprocal_p, _one_minus_x2(x)))


def _softplus_impl(x: np.ndarray) -> np.ndarray:
    # log(e^0 + e^x) without forming e^x: no overflow at large x, full precision at
    # very negative x.
    return np.logaddexp(x.dtype.type(0), x)


softplus_p = unary("softplus", _softplus_impl, lambda ans, x: sigmoid(x))          # sigmoid x

try:  # SciPy's erf is a vectorized ufunc; the standard library's is exact but scalar.
    from scipy.special import erf as _erf_ufunc
except ImportError:  # pragma: no cover - SciPy is optional
    _erf_ufunc = np.vectorize(math.erf, otypes=[np.float64])


def _erf_impl(x: np.ndarray) -> np.ndarray:
    return np.asarray(_erf_ufunc(x)).astype(x.dtype, copy=False)


_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
erf_p = unary("erf", _erf_impl,                                           # 2/sqrt(pi) e^(-x^2)
              lambda ans, x: multiply(exp(negative(square(x))), _TWO_OVER_SQRT_PI))


# ------------------------------------------------------------------ atan2(y, x)
# d atan2(y, x) = (x dy - y dx) / (x^2 + y^2)
def _atan2_scale(y: Tensor, x: Tensor) -> Tensor:
    return bind(reciprocal_p, add(square(x), square(y)))


atan2_p = Primitive("atan2", np.arctan2)
defjvp(atan2_p, lambda t, ans, y, x: multiply(t, multiply(x, _atan2_scale(y, x))),
       lambda t, ans, y, x: multiply(t, negative(multiply(y, _atan2_scale(y, x)))),
       broadcasting=True)
defvjp(atan2_p, lambda g, ans, y, x: multiply(g, multiply(x, _atan2_scale(y, x))),
       lambda g, ans, y, x: multiply(g, negative(multiply(y, _atan2_scale(y, x)))),
       broadcasting=True)
batch_elementwise(atan2_p)

# ------------------------------------------------------------------ no derivative
# floor, ceil, round are piecewise constant: TensorFlow gives them no gradient (None).
floor_p = Primitive("floor", np.floor, differentiable=False)
ceil_p = Primitive("ceil", np.ceil, differentiable=False)
round_p = Primitive("round", np.round, differentiable=False)  # half to even, as TensorFlow
is_finite_p = Primitive("is_finite", np.isfinite, differentiable=False)
is_nan_p = Primitive("is_nan", np.isnan, differentiable=False)
is_inf_p = Primitive("is_inf", np.isinf, differentiable=False)
for _p in (floor_p, ceil_p, round_p, is_finite_p, is_nan_p, is_inf_p):
    batch_unary(_p)


# ------------------------------------------------------------------ complex numbers
# Rules follow NOTE(complex-gradients) in the module docstring.
def _complex_impl(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    # Assigning the parts (not re + 1j * im) keeps inf parts exact: 1j * inf would be nan + inf j.
    shape = np.broadcast_shapes(re.shape, im.shape)
    out = np.empty(shape, np.result_type(re.dtype, np.complex64))
    out.real = re
    out.imag = im
    return out


complex_p = Primitive("complex", _complex_impl)
# d complex(a, b) = da + i db; cotangent g -> (real g, imag g).
defjvp(complex_p, lambda t, ans, a, b: bind(complex_p, t, zeros_like_t(t)),
       lambda t, ans, a, b: bind(complex_p, zeros_like_t(t), t), broadcasting=True)
defvjp(complex_p, lambda g, ans, a, b: bind(real_p, g),
       lambda g, ans, a, b: bind(imag_p, g), broadcasting=True)
batch_elementwise(complex_p)

# real and imag are real-linear: JVP real(t); the transpose puts g back as g + 0i (or 0 + ig).
real_p = Primitive("real", np.real)
linear(real_p, lambda g, z: bind(complex_p, g, zeros_like_t(g)))
batch_unary(real_p)

imag_p = Primitive("imag", np.imag)
linear(imag_p, lambda g, z: bind(complex_p, zeros_like_t(g), g))
batch_unary(imag_p)


def _complex_sign(z: Tensor, r: Tensor) -> Tensor:
    """z / |z|, and 0 where z == 0 (TensorFlow's choice: |z| has no gradient at 0)."""
    nonzero = greater(r, 0)
    safe = select(nonzero, r, ones_like_t(r))
    ratio = divide(z, bind(complex_p, safe, zeros_like_t(safe)))
    return select(nonzero, ratio, zeros_like_t(ratio))


# |z| for complex z: JVP real(conj(z/|z|) t); VJP (g + 0i) z/|z|.
complex_abs_p = Primitive("complex_abs", np.abs)
defjvp(complex_abs_p, lambda t, ans, z: bind(real_p, multiply(conj(_complex_sign(z, ans)), t)))
defvjp(complex_abs_p, lambda g, ans, z: multiply(bind(complex_p, g, zeros_like_t(g)),
                                                 _complex_sign(z, ans)))
batch_unary(complex_abs_p)


# ================================================================== public ops
def _doc(summary: str, example: str, result: str) -> str:
    return (f"{summary}\n\nExample:\n    >>> import tapeflow as tf\n    >>> {example}\n"
            f"    {result}\n")


rsqrt = _unary(rsqrt_p, FLOAT, _doc(
    "1 / sqrt(x) elementwise. Its gradient is -x^(-3/2) / 2 (-inf at 0), and exactly 0\n"
    "where the incoming gradient is 0, as TensorFlow.",
    "tf.math.rsqrt(tf.constant([4., 16.])).numpy()", "array([0.5 , 0.25], dtype=float32)"))
reciprocal = _unary(reciprocal_p, FLOAT, _doc(
    "1 / x elementwise (floating and complex tensors). Its gradient is -1/x^2, and\n"
    "exactly 0 where the incoming gradient is 0, as TensorFlow.",
    "tf.math.reciprocal(tf.constant([2., -4.])).numpy()", "array([ 0.5 , -0.25], dtype=float32)"))
expm1 = _unary(expm1_p, FLOAT, _doc(
    "exp(x) - 1 elementwise, accurate for small |x|.",
    "tf.math.expm1(tf.constant([0., 1e-10], tf.float64)).numpy()", "array([0.e+00, 1.e-10])"))
log1p = _unary(log1p_p, FLOAT, _doc(
    "log(1 + x) elementwise, accurate for small |x|; defined for x > -1.",
    "tf.math.log1p(tf.constant([0., 1e-10], tf.float64)).numpy()", "array([0.e+00, 1.e-10])"))
tan = _unary(tan_p, FLOAT, _doc(
    "Tangent elementwise; its derivative is 1 + tan(x)^2.",
    "tf.math.tan(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
asin = _unary(asin_p, FLOAT, _doc(
    "Inverse sine elementwise, for |x| <= 1 (nan outside); derivative 1/sqrt(1 - x^2).",
    "tf.math.asin(tf.constant([0., 1.], tf.float64)).numpy()", "array([0.        , 1.57079633])"))
acos = _unary(acos_p, FLOAT, _doc(
    "Inverse cosine elementwise, for |x| <= 1 (nan outside); derivative -1/sqrt(1 - x^2).",
    "tf.math.acos(tf.constant([1.])).numpy()", "array([0.], dtype=float32)"))
atan = _unary(atan_p, FLOAT, _doc(
    "Inverse tangent elementwise; derivative 1/(1 + x^2).",
    "tf.math.atan(tf.constant([0., 1.], tf.float64)).numpy()", "array([0.        , 0.78539816])"))
sinh = _unary(sinh_p, FLOAT, _doc(
    "Hyperbolic sine elementwise.",
    "tf.math.sinh(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
cosh = _unary(cosh_p, FLOAT, _doc(
    "Hyperbolic cosine elementwise.",
    "tf.math.cosh(tf.constant([0.])).numpy()", "array([1.], dtype=float32)"))
asinh = _unary(asinh_p, FLOAT, _doc(
    "Inverse hyperbolic sine elementwise; the gradient is 1/cosh(asinh x).",
    "tf.math.asinh(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
acosh = _unary(acosh_p, FLOAT, _doc(
    "Inverse hyperbolic cosine, for x >= 1 (nan below); the gradient is 1/sinh(acosh x),\n"
    "inf at x = 1.",
    "tf.math.acosh(tf.constant([1.])).numpy()", "array([0.], dtype=float32)"))
atanh = _unary(atanh_p, FLOAT, _doc(
    "Inverse hyperbolic tangent, for |x| < 1 (+-inf at +-1); derivative 1/(1 - x^2).",
    "tf.math.atanh(tf.constant([0.])).numpy()", "array([0.], dtype=float32)"))
erf = _unary(erf_p, REAL_FLOAT, _doc(
    "The Gauss error function elementwise (real floating tensors); derivative\n"
    "2/sqrt(pi) exp(-x^2).",
    "tf.math.erf(tf.constant([0., 10.])).numpy()", "array([0., 1.], dtype=float32)"))
floor = _unary(floor_p, REAL_FLOAT, _doc(
    "Largest integer <= x, elementwise (real floating tensors); no gradient (None), as\n"
    "TensorFlow.",
    "tf.math.floor(tf.constant([1.5, -1.5])).numpy()", "array([ 1., -2.], dtype=float32)"))
ceil = _unary(ceil_p, REAL_FLOAT, _doc(
    "Smallest integer >= x, elementwise (real floating tensors); no gradient (None), as\n"
    "TensorFlow.",
    "tf.math.ceil(tf.constant([1.5, -1.5])).numpy()", "array([ 2., -1.], dtype=float32)"))
is_finite = _unary(is_finite_p, REAL_FLOAT, _doc(
    "True where x is neither inf nor nan (real floating tensors).",
    "tf.math.is_finite(tf.constant([1., float('inf'), float('nan')])).numpy()",
    "array([ True, False, False])"))
is_nan = _unary(is_nan_p, REAL_FLOAT, _doc(
    "True where x is nan (real floating tensors).",
    "tf.math.is_nan(tf.constant([1., float('nan')])).numpy()", "array([False,  True])"))
is_inf = _unary(is_inf_p, REAL_FLOAT, _doc(
    "True where x is +inf or -inf (real floating tensors).",
    "tf.math.is_inf(tf.constant([1., float('-inf')])).numpy()", "array([False,  True])"))

for _op in (rsqrt, reciprocal, expm1, log1p, tan, asin, acos, atan, sinh, cosh, asinh, acosh,
            atanh, erf, floor, ceil, is_finite, is_nan, is_inf):
    _op.__module__ = __name__  # so doctest runs their examples here


def round(x: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """Round to the nearest integer, halves to even ("banker's rounding"), as TensorFlow.

    Integer tensors are returned unchanged. No gradient (None), as TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.round(tf.constant([0.5, 1.5, 2.5, -2.5, 2.7])).numpy()
        array([ 0.,  2.,  2., -2.,  3.], dtype=float32)
    """
    x = as_tensor(x, "round", "x")
    check_dtype(x, "fiu", "round")
    if x._value.dtype.kind in "iu":
        return x
    return bind(round_p, x)


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


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """(x - y) * conj(x - y) elementwise with broadcasting: (x - y)^2 for real tensors, and
    |x - y|^2 (with a zero imaginary part, exactly) for complex ones.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.squared_difference(tf.constant([1., 5.]), 2.).numpy()
        array([1., 9.], dtype=float32)
    """
    x, y = binary_args(x, y, "squared_difference")
    check_dtype(x, "fciu", "squared_difference")
    d = subtract(x, y)
    if d._value.dtype.kind != "c":
        return square(d)
    # |d|^2 from the parts: NumPy's d * conj(d) can leave a rounding-error imaginary part.
    magnitude2 = add(square(bind(real_p, d)), square(bind(imag_p, d)))
    return bind(complex_p, magnitude2, zeros_like_t(magnitude2))


def clip_by_value(t: Any, clip_value_min: Any, clip_value_max: Any,
                  name: str | None = None) -> Tensor:
    """Clip `t` to [clip_value_min, clip_value_max] (bounds broadcast to t's shape).

    Computed as TensorFlow: ``maximum(minimum(t, max), min)``, so the gradient reaches t
    where min <= t <= max (boundaries included) and reaches a bound where it is
    active. With min > max every element is min (TensorFlow leaves that undefined).

    Example:
        >>> import tapeflow as tf
        >>> tf.clip_by_value(tf.constant([-2., 0.5, 3.]), -1., 1.).numpy()
        array([-1. ,  0.5,  1. ], dtype=float32)
    """
    t = as_tensor(t, "clip_by_value", "t")
    check_dtype(t, "fiu", "clip_by_value", "t")
    _, lo = binary_args(t, clip_value_min, "clip_by_value")
    _, hi = binary_args(t, clip_value_max, "clip_by_value")
    for arg, bound in (("clip_value_min", lo), ("clip_value_max", hi)):
        try:
            ok = np.broadcast_shapes(shape_of(t), shape_of(bound)) == shape_of(t)
        except ValueError:
            ok = False
        if not ok:
            raise InvalidArgumentError(
                f"clip_by_value: `{arg}` of shape {shape_of(bound)} does not broadcast to the "
                f"shape {shape_of(t)} of `t`.")
    return maximum(minimum(t, hi), lo)


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The real part of a complex tensor (a real tensor is returned unchanged).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.real(tf.constant([1 + 2j])).numpy()
        array([1.])
    """
    z = as_tensor(input, "real", "input")
    return bind(real_p, z) if z._value.dtype.kind == "c" else z


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The imaginary part of a complex tensor (zeros for a real tensor, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.imag(tf.constant([1 + 2j])).numpy()
        array([2.])
    """
    z = as_tensor(input, "imag", "input")
    return bind(imag_p, z) if z._value.dtype.kind == "c" else zeros_like_t(z)


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """real + i imag elementwise, with broadcasting: float32 parts give complex64,
    float64 parts complex128 (both parts must have the same dtype, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.complex(tf.constant([1., 2.]), 3.).numpy()
        array([1.+3.j, 2.+3.j], dtype=complex64)
    """
    re, im = binary_args(real, imag, "complex")
    kind = re._value.dtype
    if kind not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"complex: `real` and `imag` have dtype {kind}; expected float32 or "
                        "float64 (both the same).")
    return bind(complex_p, re, im)


_ELEMENTWISE = ["rsqrt", "reciprocal", "expm1", "log1p", "tan", "asin", "acos", "atan", "atan2",
                "sinh", "cosh", "asinh", "acosh", "atanh", "softplus", "erf", "floor", "ceil",
                "round", "squared_difference", "clip_by_value", "real", "imag", "complex",
                "is_finite", "is_nan", "is_inf"]
_REDUCTIONS = ["reduce_prod", "reduce_logsumexp", "reduce_std", "reduce_variance", "reduce_all",
               "reduce_any", "argmax", "argmin", "cumsum", "cumprod"]

# Public names by namespace: "top" (tf.X), "math" (tf.math.X), "linalg", "nn".
EXPORTS: dict[str, list[str]] = {"top": _ELEMENTWISE + _REDUCTIONS,
                                 "math": _ELEMENTWISE + _REDUCTIONS, "linalg": [], "nn": []}
