"""Elementwise primitives: one definition block each (impl, then its rules).

Derivative conventions: real inputs follow calculus; for complex inputs the
reverse rule multiplies by the conjugate derivative, TensorFlow's convention
(the gradient of a real loss L of z = x + iy is dL/dx + i dL/dy = 2 dL/d(conj z)).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core import Primitive, Zero, bind
from ..tensor import Tensor
from ._rules import (as_tensor, batch_elementwise, batch_unary, binary_args, check_dtype,
                     defjvp, defvjp, instantiate, linear, shape_of, unary)

FLOAT = "fc"        # floating or complex
NUMERIC = "fciu"    # any number


def conj_if_complex(x: Tensor) -> Tensor:
    """conj(x) for complex tensors, x itself otherwise (rules use it to stay real-cheap)."""
    return bind(conj_p, x) if x._value.dtype.kind == "c" else x


def _mask(cond: Tensor, like: Tensor) -> Tensor:
    """A 0/1 tensor of `like`'s dtype from a bool tensor (masks in max/min/relu rules)."""
    return bind(cast_p, cond, dtype=like._value.dtype)


def _binary(prim: Primitive, doc: str) -> Callable[..., Tensor]:
    opname = prim.name

    def op(x: Any, y: Any, name: str | None = None) -> Tensor:
        x, y = binary_args(x, y, opname)
        return bind(prim, x, y)

    op.__name__ = op.__qualname__ = opname
    op.__doc__ = doc
    return op


def _unary(prim: Primitive, kinds: str, doc: str) -> Callable[..., Tensor]:
    opname = prim.name

    def op(x: Any, name: str | None = None) -> Tensor:
        x = x if type(x) is Tensor else as_tensor(x, opname, "x")
        if x._value.dtype.kind not in kinds:
            check_dtype(x, kinds, opname)
        return bind(prim, x)

    op.__name__ = op.__qualname__ = opname
    op.__doc__ = doc
    return op


# ------------------------------------------------------------------ add, subtract
add_p = Primitive("add", np.add)
defjvp(add_p, lambda t, ans, x, y: t, lambda t, ans, x, y: t, broadcasting=True)
defvjp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g, broadcasting=True)
batch_elementwise(add_p)

subtract_p = Primitive("subtract", np.subtract)
defjvp(subtract_p, lambda t, ans, x, y: t, lambda t, ans, x, y: negative(t), broadcasting=True)
defvjp(subtract_p, lambda g, ans, x, y: g, lambda g, ans, x, y: negative(g), broadcasting=True)
batch_elementwise(subtract_p)

# ------------------------------------------------------------------ multiply: d(xy) = y dx + x dy
multiply_p = Primitive("multiply", np.multiply)
defjvp(multiply_p, lambda t, ans, x, y: multiply(t, y), lambda t, ans, x, y: multiply(x, t),
       broadcasting=True)
defvjp(multiply_p, lambda g, ans, x, y: multiply(g, conj_if_complex(y)),
       lambda g, ans, x, y: multiply(conj_if_complex(x), g), broadcasting=True)
batch_elementwise(multiply_p)

# ------------------------------------------------------------------ divide: d(x/y) = dx/y - (x/y) dy/y
divide_p = Primitive("divide", np.true_divide)
defjvp(divide_p, lambda t, ans, x, y: divide(t, y),
       lambda t, ans, x, y: negative(multiply(t, divide(ans, y))), broadcasting=True)
defvjp(divide_p, lambda g, ans, x, y: divide(g, conj_if_complex(y)),
       lambda g, ans, x, y: negative(multiply(g, conj_if_complex(divide(ans, y)))),
       broadcasting=True)
batch_elementwise(divide_p)


# ------------------------------------------------------------------ pow: d(x^y) = y x^(y-1) dx + log(x) x^y dy
def _pow_dx(x: Tensor, y: Tensor) -> Tensor:
    return multiply(y, pow(x, subtract(y, 1)))


def _pow_dy(ans: Tensor, x: Tensor) -> Tensor:
    # log(x) only where x > 0 (TensorFlow's choice: the y-derivative is 0 elsewhere);
    # the inner where keeps log's own derivative finite in the unused branch.
    pos = greater(x, 0)
    safe_x = select(pos, x, ones_like_t(x))
    return select(pos, multiply(log(safe_x), ans), zeros_like_t(ans))


pow_p = Primitive("pow", np.power)
defjvp(pow_p, lambda t, ans, x, y: multiply(t, _pow_dx(x, y)),
       lambda t, ans, x, y: multiply(t, _pow_dy(ans, x)), broadcasting=True)
defvjp(pow_p, lambda g, ans, x, y: multiply(g, conj_if_complex(_pow_dx(x, y))),
       lambda g, ans, x, y: multiply(g, conj_if_complex(_pow_dy(ans, x))), broadcasting=True)
batch_elementwise(pow_p)

# ------------------------------------------------------------------ maximum / minimum
# Ties send the whole gradient to x, as TensorFlow: max -> x where x >= y.
maximum_p = Primitive("maximum", np.maximum)
defjvp(maximum_p, lambda t, ans, x, y: multiply(t, _mask(greater_equal(x, y), t)),
       lambda t, ans, x, y: multiply(t, _mask(less(x, y), t)), broadcasting=True)
defvjp(maximum_p, lambda g, ans, x, y: multiply(g, _mask(greater_equal(x, y), g)),
       lambda g, ans, x, y: multiply(g, _mask(less(x, y), g)), broadcasting=True)
batch_elementwise(maximum_p)

minimum_p = Primitive("minimum", np.minimum)
defjvp(minimum_p, lambda t, ans, x, y: multiply(t, _mask(less_equal(x, y), t)),
       lambda t, ans, x, y: multiply(t, _mask(greater(x, y), t)), broadcasting=True)
defvjp(minimum_p, lambda g, ans, x, y: multiply(g, _mask(less_equal(x, y), g)),
       lambda g, ans, x, y: multiply(g, _mask(greater(x, y), g)), broadcasting=True)
batch_elementwise(minimum_p)

# ------------------------------------------------------------------ floormod: x - floor(x/y) y
floormod_p = Primitive("floormod", np.mod)
defjvp(floormod_p, lambda t, ans, x, y: t,
       lambda t, ans, x, y: negative(multiply(t, floordiv(x, y))), broadcasting=True)
defvjp(floormod_p, lambda g, ans, x, y: g,
       lambda g, ans, x, y: negative(multiply(g, floordiv(x, y))), broadcasting=True)
batch_elementwise(floormod_p)

# ------------------------------------------------------------------ linear unary ops
negative_p = Primitive("negative", np.negative)
linear(negative_p, lambda g, x: negative(g))
batch_unary(negative_p)

conj_p = Primitive("conj", np.conjugate)
linear(conj_p, lambda g, x: bind(conj_p, g))
batch_unary(conj_p)

# ------------------------------------------------------------------ smooth unary ops: f'(x)
square_p = unary("square", np.square, lambda ans, x: multiply(x, 2))       # 2x
def _mul_no_nan(a: Tensor, d: Tensor) -> Tensor:
    """a * d, but 0 where a is 0 even if d is inf (TensorFlow's sqrt gradient kernel)."""
    return multiply(a, select(equal(a, 0), zeros_like_t(d), d))


# sqrt: d sqrt(x) = dx / (2 sqrt x); a zero (co)tangent stays zero at x = 0, as TensorFlow
sqrt_p = Primitive("sqrt", np.sqrt)
defjvp(sqrt_p, lambda t, ans, x: _mul_no_nan(t, divide(0.5, ans)))
defvjp(sqrt_p, lambda g, ans, x: _mul_no_nan(g, conj_if_complex(divide(0.5, ans))))
batch_unary(sqrt_p)
exp_p = unary("exp", np.exp, lambda ans, x: ans)                           # exp x
log_p = unary("log", np.log, lambda ans, x: divide(1, x))                  # 1 / x
sin_p = unary("sin", np.sin, lambda ans, x: cos(x))                        # cos x
cos_p = unary("cos", np.cos, lambda ans, x: negative(sin(x)))              # -sin x
tanh_p = unary("tanh", np.tanh, lambda ans, x: subtract(1, square(ans)))   # 1 - tanh^2


def _sigmoid_impl(x: np.ndarray) -> np.ndarray:
    # exp of a non-positive argument only: no overflow at large |x|.
    e = np.exp(-np.abs(x))
    return np.where(x >= 0, 1 / (1 + e), e / (1 + e)).astype(x.dtype, copy=False)


sigmoid_p = unary("sigmoid", _sigmoid_impl,
                  lambda ans, x: multiply(ans, subtract(1, ans)))          # s (1 - s)


def _abs_deriv(ans: Tensor, x: Tensor) -> Tensor:
    return sign(x)                                                         # sign x (0 at 0)


# abs of real numbers (complex inputs go to complex_abs, whose output is real)
abs_p = Primitive("abs", np.abs)
defjvp(abs_p, lambda t, ans, x: multiply(t, _abs_deriv(ans, x)))
defvjp(abs_p, lambda g, ans, x: multiply(g, _abs_deriv(ans, x)))
batch_unary(abs_p)

# sign is piecewise constant: derivative zero (TensorFlow returns zeros, not None).
sign_p = Primitive("sign", np.sign)
defjvp(sign_p, lambda t, ans, x: Zero.like(ans))
defvjp(sign_p, lambda g, ans, x: zeros_like_t(x))
batch_unary(sign_p)


# ------------------------------------------------------------------ select (where with x and y)
def _select_rule(take_x: bool) -> Callable[..., Tensor]:
    def rule(t: Tensor, ans: Tensor, c: Tensor, x: Tensor, y: Tensor) -> Tensor:
        zero = zeros_like_t(t)
        return select(c, t, zero) if take_x else select(c, zero, t)
    return rule


select_p = Primitive("select", lambda c, x, y: np.where(c, x, y)[()])  # rank 0 -> scalar
defjvp(select_p, None, _select_rule(True), _select_rule(False), broadcasting=True)
defvjp(select_p, None, _select_rule(True), _select_rule(False), broadcasting=True)
batch_elementwise(select_p)


# ------------------------------------------------------------------ cast
def _cast_impl(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = x.real  # TensorFlow keeps the real part
    return x.astype(dtype, copy=False)


def _cast_tangent(t: Tensor, ans: Tensor, x: Tensor, dtype: np.dtype) -> Any:
    if dtype.kind not in "fc":
        return Zero.like(ans)
    return bind(cast_p, t, dtype=dtype)


cast_p = Primitive("cast", _cast_impl)
defjvp(cast_p, _cast_tangent)
defvjp(cast_p, lambda g, ans, x, dtype: bind(cast_p, g, dtype=x._value.dtype)
       if x._value.dtype.kind in "fc" else None)
batch_unary(cast_p)

# ------------------------------------------------------------------ ops without derivatives
equal_p = Primitive("equal", np.equal, differentiable=False)
not_equal_p = Primitive("not_equal", np.not_equal, differentiable=False)
less_p = Primitive("less", np.less, differentiable=False)
less_equal_p = Primitive("less_equal", np.less_equal, differentiable=False)
greater_p = Primitive("greater", np.greater, differentiable=False)
greater_equal_p = Primitive("greater_equal", np.greater_equal, differentiable=False)
logical_and_p = Primitive("logical_and", np.bitwise_and, differentiable=False)
logical_or_p = Primitive("logical_or", np.bitwise_or, differentiable=False)
logical_xor_p = Primitive("logical_xor", np.bitwise_xor, differentiable=False)
logical_not_p = Primitive("logical_not", np.invert, differentiable=False)
floordiv_p = Primitive("floordiv", np.floor_divide, differentiable=False)
for _p in (equal_p, not_equal_p, less_p, less_equal_p, greater_p, greater_equal_p,
           logical_and_p, logical_or_p, logical_xor_p, floordiv_p):
    batch_elementwise(_p)
batch_unary(logical_not_p)


# ================================================================== public ops
add = _binary(add_p, "x + y elementwise, with NumPy broadcasting.\n\n"
              "Example:\n    >>> import tapeflow as tf\n"
              "    >>> tf.add(tf.constant([1., 2.]), 1.).numpy()\n"
              "    array([2., 3.], dtype=float32)\n")
subtract = _binary(subtract_p, "x - y elementwise, with broadcasting.\n\n"
                   "Example:\n    >>> import tapeflow as tf\n"
                   "    >>> tf.subtract(3., tf.constant([1., 2.])).numpy()\n"
                   "    array([2., 1.], dtype=float32)\n")
multiply = _binary(multiply_p, "x * y elementwise, with broadcasting.\n\n"
                   "Example:\n    >>> import tapeflow as tf\n"
                   "    >>> tf.multiply(tf.constant([1., 2.]), 3.).numpy()\n"
                   "    array([3., 6.], dtype=float32)\n")
maximum = _binary(maximum_p, "max(x, y) elementwise; at ties the gradient goes to x.\n\n"
                  "Example:\n    >>> import tapeflow as tf\n"
                  "    >>> tf.maximum(tf.constant([1., 5.]), 2.).numpy()\n"
                  "    array([2., 5.], dtype=float32)\n")
minimum = _binary(minimum_p, "min(x, y) elementwise; at ties the gradient goes to x.\n\n"
                  "Example:\n    >>> import tapeflow as tf\n"
                  "    >>> tf.minimum(tf.constant([1., 5.]), 2.).numpy()\n"
                  "    array([1., 2.], dtype=float32)\n")
floormod = _binary(floormod_p, "x mod y with the sign of y (Python's %).\n\n"
                   "Example:\n    >>> import tapeflow as tf\n"
                   "    >>> tf.math.floormod(tf.constant([5., -5.]), 3.).numpy()\n"
                   "    array([2., 1.], dtype=float32)\n")
floordiv = _binary(floordiv_p, "floor(x / y) elementwise (no gradient, as TensorFlow).\n\n"
                   "Example:\n    >>> import tapeflow as tf\n"
                   "    >>> tf.math.floordiv(tf.constant([5, -5]), 3).numpy()\n"
                   "    array([ 1, -2], dtype=int32)\n")
equal = _binary(equal_p, "x == y elementwise, a bool tensor.")
not_equal = _binary(not_equal_p, "x != y elementwise, a bool tensor.")
less = _binary(less_p, "x < y elementwise, a bool tensor.")
less_equal = _binary(less_equal_p, "x <= y elementwise, a bool tensor.")
greater = _binary(greater_p, "x > y elementwise, a bool tensor.\n\n"
                  "Example:\n    >>> import tapeflow as tf\n"
                  "    >>> tf.greater(tf.constant([1., 3.]), 2.).numpy()\n"
                  "    array([False,  True])\n")
greater_equal = _binary(greater_equal_p, "x >= y elementwise, a bool tensor.")


def _logical(prim: Primitive) -> Callable[..., Tensor]:
    def op(x: Any, y: Any, name: str | None = None) -> Tensor:
        x, y = binary_args(x, y, prim.name)
        check_dtype(x, "biu", prim.name, "x")
        return bind(prim, x, y)
    op.__name__ = prim.name
    op.__doc__ = f"Elementwise {prim.name.split('_')[1]} of bool tensors (bitwise for integers)."
    return op


logical_and = _logical(logical_and_p)
logical_or = _logical(logical_or_p)
logical_xor = _logical(logical_xor_p)


def logical_not(x: Any, name: str | None = None) -> Tensor:
    """Elementwise not of a bool tensor (bitwise invert for integers)."""
    x = as_tensor(x, "logical_not", "x")
    check_dtype(x, "biu", "logical_not")
    return bind(logical_not_p, x)


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


def _true_divide_dtype(x: Tensor) -> Any:
    kind, size = x._value.dtype.kind, x._value.dtype.itemsize
    if kind in "iu":
        return np.dtype(np.float32) if size <= 2 else np.dtype(np.float64)
    return None


def truediv(x: Any, y: Any, name: str | None = None) -> Tensor:
    """x / y elementwise; integer inputs are first cast to float (as TensorFlow).

    int8/int16/uint8/uint16 divide in float32, int32/int64 in float64.

    Example:
        >>> import tapeflow as tf
        >>> tf.truediv(tf.constant([1, 2]), 4).numpy()
        array([0.25, 0.5 ])
    """
    x, y = binary_args(x, y, "truediv")
    target = _true_divide_dtype(x)
    if target is not None:
        x, y = bind(cast_p, x, dtype=target), bind(cast_p, y, dtype=target)
    return bind(divide_p, x, y)


divide = truediv


negative = _unary(negative_p, NUMERIC, "-x elementwise.\n\n"
                  "Example:\n    >>> import tapeflow as tf\n"
                  "    >>> tf.negative(tf.constant([1., -2.])).numpy()\n"
                  "    array([-1.,  2.], dtype=float32)\n")
square = _unary(square_p, NUMERIC, "x * x elementwise.\n\n"
                "Example:\n    >>> import tapeflow as tf\n"
                "    >>> tf.square(tf.constant([3.])).numpy()\n"
                "    array([9.], dtype=float32)\n")
sqrt = _unary(sqrt_p, FLOAT, "Square root elementwise; its gradient at 0 is inf (as TensorFlow).\n\n"
              "Example:\n    >>> import tapeflow as tf\n"
              "    >>> tf.sqrt(tf.constant([4.])).numpy()\n"
              "    array([2.], dtype=float32)\n")
exp = _unary(exp_p, FLOAT, "e ** x elementwise.\n\n"
             "Example:\n    >>> import tapeflow as tf\n"
             "    >>> tf.exp(tf.constant([0.])).numpy()\n"
             "    array([1.], dtype=float32)\n")
log = _unary(log_p, FLOAT, "Natural logarithm elementwise.\n\n"
             "Example:\n    >>> import tapeflow as tf\n"
             "    >>> tf.math.log(tf.constant([1.])).numpy()\n"
             "    array([0.], dtype=float32)\n")
sin = _unary(sin_p, FLOAT, "Sine elementwise.\n\n"
             "Example:\n    >>> import tapeflow as tf\n"
             "    >>> tf.sin(tf.constant([0.])).numpy()\n"
             "    array([0.], dtype=float32)\n")
cos = _unary(cos_p, FLOAT, "Cosine elementwise.\n\n"
             "Example:\n    >>> import tapeflow as tf\n"
             "    >>> tf.cos(tf.constant([0.])).numpy()\n"
             "    array([1.], dtype=float32)\n")
tanh = _unary(tanh_p, FLOAT, "Hyperbolic tangent elementwise.\n\n"
              "Example:\n    >>> import tapeflow as tf\n"
              "    >>> tf.tanh(tf.constant([0.])).numpy()\n"
              "    array([0.], dtype=float32)\n")
sigmoid = _unary(sigmoid_p, FLOAT, "1 / (1 + exp(-x)), computed without overflow at large |x|.\n\n"
                 "Example:\n    >>> import tapeflow as tf\n"
                 "    >>> tf.sigmoid(tf.constant([0., 1000., -1000.])).numpy()\n"
                 "    array([0.5, 1. , 0. ], dtype=float32)\n")
_abs_real = _unary(abs_p, NUMERIC, "|x| elementwise; the gradient at 0 is 0 (sign(0)).\n\n"
             "Example:\n    >>> import tapeflow as tf\n"
             "    >>> tf.abs(tf.constant([-2., 3.])).numpy()\n"
             "    array([2., 3.], dtype=float32)\n")


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """|x| elementwise (the real magnitude for complex x); the gradient at 0 is 0.

    Example:
        >>> import tapeflow as tf
        >>> tf.abs(tf.constant([-2., 3.])).numpy()
        array([2., 3.], dtype=float32)
    """
    x = as_tensor(x, "abs", "x")
    if x._value.dtype.kind == "c":
        from ..core import _REGISTRY  # complex_abs is defined with the complex ops (math_ops)
        return bind(_REGISTRY["complex_abs"], x)
    return _abs_real(x)


sign = _unary(sign_p, NUMERIC, "-1, 0 or 1 by the sign of x; its gradient is zero.\n\n"
              "Example:\n    >>> import tapeflow as tf\n"
              "    >>> tf.sign(tf.constant([-2., 0., 3.])).numpy()\n"
              "    array([-1.,  0.,  1.], dtype=float32)\n")


def conj(x: Any, name: str | None = None) -> Tensor:
    """Complex conjugate (the identity for real tensors, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.conj(tf.constant([1 + 2j])).numpy()
        array([1.-2.j])
    """
    x = as_tensor(x, "conj", "x")
    return conj_if_complex(x)


def select(condition: Tensor, x: Tensor, y: Tensor) -> Tensor:
    """Internal `where(c, x, y)` on already-converted tensors (used by rules)."""
    return bind(select_p, condition, x, y)


def where(condition: Any, x: Any = None, y: Any = None, name: str | None = None) -> Tensor:
    """Elements of x where `condition` is true, else of y (broadcasting); with neither
    x nor y, the int64 coordinates of the true elements, shape [n, rank] (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.where(tf.constant([True, False]), 1., 2.).numpy()
        array([1., 2.], dtype=float32)
    """
    c = as_tensor(condition, "where", "condition")
    check_dtype(c, "b", "where", "condition")
    if x is None and y is None:
        return Tensor(np.argwhere(np.asarray(c)).astype(np.int64))  # a value read (guarded)
    if x is None or y is None:
        raise ValueError("where: give both `x` and `y`, or neither.")
    x, y = binary_args(x, y, "where")
    try:
        np.broadcast_shapes(shape_of(c), shape_of(x), shape_of(y))
    except ValueError:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError(f"where: shapes do not broadcast: condition {shape_of(c)}, "
                                   f"x {shape_of(x)}, y {shape_of(y)}.") from None
    return bind(select_p, c, x, y)


def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Convert x to `dtype`. Complex to real keeps the real part; float to int truncates.

    Gradients flow only between floating/complex dtypes.

    Example:
        >>> import tapeflow as tf
        >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy()
        array([ 1, -1], dtype=int32)
    """
    from .. import dtypes as _dt

    x = as_tensor(x, "cast", "x")
    target = _dt.as_dtype(dtype)._np
    if x._value.dtype == target:
        return x
    return bind(cast_p, x, dtype=target)


def zeros_like_t(x: Tensor) -> Tensor:
    """Zeros of x's shape and dtype, connected to nothing."""
    return Tensor(np.zeros_like(x._value))


def ones_like_t(x: Tensor) -> Tensor:
    """Ones of x's shape and dtype, connected to nothing."""
    return Tensor(np.ones_like(x._value))


def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """A tensor of zeros with `input`'s shape (and dtype unless given); carries no gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.zeros_like(tf.constant([1., 2.])).numpy()
        array([0., 0.], dtype=float32)
    """
    from .. import dtypes as _dt

    x = as_tensor(input, "zeros_like", "input")
    dt = None if dtype is None else _dt.as_dtype(dtype)._np
    return Tensor(np.zeros_like(x._value, dtype=dt))


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """A tensor of ones with `input`'s shape (and dtype unless given); carries no gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.ones_like(tf.constant([1, 2])).numpy()
        array([1, 1], dtype=int32)
    """
    from .. import dtypes as _dt

    x = as_tensor(input, "ones_like", "input")
    dt = None if dtype is None else _dt.as_dtype(dtype)._np
    return Tensor(np.ones_like(x._value, dtype=dt))


__all__ = ["add", "subtract", "multiply", "divide", "truediv", "floordiv", "floormod", "pow",
           "maximum", "minimum", "negative", "square", "sqrt", "exp", "log", "sin", "cos",
           "tanh", "sigmoid", "abs", "sign", "conj", "where", "cast", "equal", "not_equal",
           "less", "less_equal", "greater", "greater_equal", "logical_and", "logical_or",
           "logical_xor", "logical_not", "zeros_like", "ones_like", "instantiate"]
