"""Elementwise arithmetic, comparison, logic, casts, selection and rounding.

Arithmetic: add, subtract, multiply, divide/truediv, floordiv, floormod, maximum, minimum,
negative, square, sqrt, rsqrt, reciprocal, sign, clip_by_value. Comparison and
logic: equal, not_equal, less, less_equal, greater, greater_equal, logical_and/or/xor/not,
is_finite, is_nan, is_inf. Casts and selection: cast, where. Rounding: floor, ceil, round.
(`abs` and `squared_difference` handle complex inputs and live in ops/complex.py; `pow`,
whose derivative is a logarithm, in ops/transcendental.py; add, multiply, cast and select
are structural primitives, defined in ops/structural.py.)

Derivatives that TensorFlow leaves undefined follow TensorFlow: floor, ceil and round
have no gradient (None); sign's gradient is zero; sqrt, rsqrt and reciprocal give 0
wherever the incoming (co)tangent is 0, even at x = 0 (TensorFlow's kernels do the
same), so an element that does not reach the loss cannot poison the gradient with
inf * 0. Ties of maximum/minimum send the whole gradient to x.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, Hints, Lowering, define
from ..core import Primitive, Zero, bind
from ..errors import DTypeMismatchError, InvalidArgumentError
from ..hessian_patterns import Curvature, LINEAR, PIECEWISE_LINEAR
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, binary_args, check_dtype, convert_like
from .structural import (add_p, batch_elementwise, batch_unary, cast_p, conj_if_complex,
                         elementwise_deps, float_mask, is_one, is_plus_zero, linear, multiply_p,
                         neutral_right, no_derivative, per_input, select_p, shape_of, twin, unary,
                         zeros_of)

FLOAT = "fc"        # floating or complex
NUMERIC = "fciu"    # any number
REAL_FLOAT = "f"


# ================================================================== public-op makers
def doc(summary: str, example: str, result: str) -> str:
    """A docstring with one runnable example (the op makers' docs)."""
    return (f"{summary}\n\nExample:\n    >>> import tapeflow as tf\n    >>> {example}\n"
            f"    {result}\n")


def _named(op: Callable, prim: Primitive, docstring: str) -> Callable:
    op.__name__ = op.__qualname__ = prim.name
    op.__doc__ = docstring
    # The module that made the op (two frames up), so doctest runs its example there.
    op.__module__ = sys._getframe(2).f_globals.get("__name__", __name__)
    return op


def binary_op(prim: Primitive, docstring: str, kinds: str | None = None) -> Callable[..., Tensor]:
    """The public op of a two-input primitive: operands converted as TensorFlow does (no
    implicit promotion) and, if `kinds` is given, `x`'s dtype kind checked against it."""
    opname = prim.name

    if kinds is None:
        def op(x: Any, y: Any, name: str | None = None) -> Tensor:
            x, y = binary_args(x, y, opname)
            return bind(prim, x, y)
    else:
        def op(x: Any, y: Any, name: str | None = None) -> Tensor:
            x, y = binary_args(x, y, opname)
            check_dtype(x, kinds, opname)
            return bind(prim, x, y)

    return _named(op, prim, docstring)


def unary_op(prim: Primitive, kinds: str, docstring: str) -> Callable[..., Tensor]:
    """The public op of a one-input primitive, for inputs whose dtype kind is in `kinds`."""
    opname = prim.name

    def op(x: Any, name: str | None = None) -> Tensor:
        x = x if type(x) is Tensor else as_tensor(x, opname, "x")
        if (d := x._value.dtype).kind not in kinds and _dt.kind(d) not in kinds:  # bfloat16: V
            check_dtype(x, kinds, opname)
        return bind(prim, x)

    return _named(op, prim, docstring)


def _mul_no_nan(a: Tensor, d: Tensor) -> Tensor:
    """a * d, exactly 0 where a == 0 even if d is inf or nan (TensorFlow's mul_no_nan)."""
    return multiply(a, bind(select_p, equal(a, 0), zeros_of(d), d))


# ================================================================== arithmetic
# ------------------------------------------------------------------ subtract, negative
subtract_p = define(
    Primitive("subtract", np.subtract),
    per_input(jvp=(lambda t, ans, x, y: t, lambda t, ans, x, y: negative(t)),
              vjp=(lambda g, ans, x, y: g, lambda g, ans, x, y: negative(g)),
              reads=("", ""), broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps, lower=twin("subtract"),
    passes=Hints(simplify=neutral_right(is_plus_zero), elementwise=True), curvature=LINEAR)

negative_p = define(Primitive("negative", np.negative),
                    linear(lambda g, x: negative(g), reads=""), batch_unary,
                    sparsity=elementwise_deps, lower=twin("negative"),
                    passes=Hints(elementwise=True), curvature=LINEAR)

# ------------------------------------------------------------------ divide: d(x/y) = dx/y - (x/y) dy/y
divide_p = define(
    Primitive("divide", np.true_divide),
    per_input(jvp=(lambda t, ans, x, y: divide(t, y),
                   lambda t, ans, x, y: negative(multiply(t, divide(ans, y)))),
              vjp=(lambda g, ans, x, y: divide(g, conj_if_complex(y)),
                   lambda g, ans, x, y: negative(multiply(g, conj_if_complex(divide(ans, y))))),
              reads=("y", "ans y"), broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps, lower=twin("true_divide"),
    passes=Hints(simplify=neutral_right(is_one), elementwise=True),
    curvature=Curvature(alone=(1,), cross=((0, 1),)))


# ------------------------------------------------------------------ maximum / minimum
# Ties send the whole gradient to x, as TensorFlow: max -> x where x >= y.
# (Not `binary`: the VJP does not conjugate its mask, which a complex maximum would make a
# conj node.)
def _extremum(name: str, fn: np.ufunc, x_wins: Callable, y_wins: Callable) -> Primitive:
    """max or min: d = dx where x wins (ties included), dy where y does; nan propagates,
    as NumPy's."""
    return define(
        Primitive(name, fn),
        per_input(jvp=(lambda t, ans, x, y: multiply(t, float_mask(x_wins(x, y), t)),
                       lambda t, ans, x, y: multiply(t, float_mask(y_wins(x, y), t))),
                  vjp=(lambda g, ans, x, y: multiply(g, float_mask(x_wins(x, y), g)),
                       lambda g, ans, x, y: multiply(g, float_mask(y_wins(x, y), g))),
                  reads=("x y", "x y"), broadcasting=True),
        batch_elementwise, sparsity=elementwise_deps, lower=twin(name),
        passes=Hints(elementwise=True), curvature=PIECEWISE_LINEAR)


maximum_p = _extremum("maximum", np.maximum, lambda x, y: greater_equal(x, y),
                      lambda x, y: less(x, y))
minimum_p = _extremum("minimum", np.minimum, lambda x, y: less_equal(x, y),
                      lambda x, y: greater(x, y))


def _checked_division(name: str, fn: np.ufunc) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """An integer division that raises on a zero divisor (as TensorFlow) instead of
    NumPy's 0; inside the impl, so the check runs on every replay and every example."""
    def impl(x: np.ndarray, y: np.ndarray) -> np.ndarray:
        if y.dtype.kind in "iu" and not np.all(y):
            raise InvalidArgumentError(f"{name}: integer division by zero (`y` has a zero).")
        return fn(x, y)
    return impl


def _divisor_check(jax: Any, x: Any, y: Any) -> Any:
    # False where the impl raises (an integer zero divisor): the compiled call reruns on NumPy.
    return jax.numpy.all(y != 0)


def _integer_divisor(x: tuple, y: tuple) -> bool:
    return np.dtype(y[1]).kind in "iu"  # a float divisor never makes the impl raise


# ------------------------------------------------------------------ floormod: x - floor(x/y) y
def _floormod_lower(jax: Any, x: Any, y: Any) -> Any:
    """np.mod's values: the sign of y, a zero result signed as y (an integer zero divisor
    fails `_divisor_check`: the call reruns on NumPy, which raises)."""
    r = jax.numpy.mod(x, y)
    if _dt.kind(r.dtype) != "f":
        return r
    return jax.numpy.where(r == 0, jax.numpy.copysign(jax.numpy.zeros_like(r), y), r)


floormod_p = define(
    Primitive("floormod", _checked_division("floormod", np.mod)),
    per_input(jvp=(lambda t, ans, x, y: t,
                   lambda t, ans, x, y: negative(multiply(t, floordiv(x, y)))),
              vjp=(lambda g, ans, x, y: g,
                   lambda g, ans, x, y: negative(multiply(g, floordiv(x, y)))),
              reads=("", "x y"), broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps,
    lower=Lowering(_floormod_lower, check=_divisor_check, check_needed=_integer_divisor),
    passes=Hints(elementwise=True), curvature=PIECEWISE_LINEAR)


# floordiv is piecewise constant: no derivative (as TensorFlow).
def _floordiv_lower(jax: Any, x: Any, y: Any) -> Any:
    """np.floor_divide's values, a zero quotient signed as x / y (integers: as floormod)."""
    q = jax.numpy.floor_divide(x, y)
    if _dt.kind(q.dtype) != "f":
        return q
    zero = jax.numpy.zeros_like(q)
    signed = jax.numpy.where(jax.numpy.signbit(x) != jax.numpy.signbit(y), -zero, zero)
    return jax.numpy.where(q == 0, signed, q)


floordiv_p = define(
    Primitive("floordiv", _checked_division("floordiv", np.floor_divide),
              effects=(NO_DERIVATIVE,)),
    batch_elementwise,
    lower=Lowering(_floordiv_lower, check=_divisor_check, check_needed=_integer_divisor))


# ------------------------------------------------------------------ lowerings on a branch cut
def on_branch_cut(name: str, odd: bool = False) -> Callable[[Any, Any], Any]:
    """The lowering of jax.numpy's function `name`, with NumPy's values on its branch
    cut: XLA's complex sqrt, arcsin, arccos and arccosh take x + 0i and x - 0i to the same
    side of their cut along the real axis (arcsinh: 0 + yi and -0 + yi, on the imaginary
    axis), where NumPy, like TensorFlow, takes the signed zero's side. Each is
    conjugate-symmetric, f(conj z) = conj f(z) (arcsinh, odd too: f(-conj z) = -conj f(z)),
    so the half-plane whose sign bit is set is computed from its mirror image."""
    def lower(jax: Any, x: Any) -> Any:
        jnp = jax.numpy
        fn = getattr(jnp, name)
        if not jnp.iscomplexobj(x):
            return fn(x)
        flip = jnp.signbit(x.real if odd else x.imag)
        mirror = (lambda v: -jnp.conj(v)) if odd else jnp.conj
        out = fn(jnp.where(flip, mirror(x), x))
        return jnp.where(flip, mirror(out), out)
    return lower


# ------------------------------------------------------------------ square: 2x
square_p = unary("square", np.square, lambda ans, x: multiply(x, 2), reads="x")

# ------------------------------------------------------------------ sqrt: d sqrt(x) = dx / (2 sqrt x)
# A zero (co)tangent stays zero at x = 0, as TensorFlow (see the module note).
_sqrt_lower = on_branch_cut("sqrt")
sqrt_p = define(
    Primitive("sqrt", np.sqrt),
    per_input(jvp=(lambda t, ans, x: _mul_no_nan(t, divide(0.5, ans)),),
              vjp=(lambda g, ans, x: _mul_no_nan(g, conj_if_complex(divide(0.5, ans))),),
              reads=("ans",)),
    batch_unary, sparsity=elementwise_deps, lower=_sqrt_lower, passes=Hints(elementwise=True))


# ------------------------------------------------------------------ rsqrt: -x^(-3/2) / 2
def _rsqrt_deriv(ans: Tensor) -> Tensor:
    return multiply(multiply(ans, square(ans)), -0.5)


rsqrt_p = define(
    Primitive("rsqrt", lambda x: 1 / np.sqrt(x)),
    per_input(jvp=(lambda t, ans, x: _mul_no_nan(t, _rsqrt_deriv(ans)),),
              vjp=(lambda g, ans, x: _mul_no_nan(g, conj_if_complex(_rsqrt_deriv(ans))),),
              reads=("ans",)),
    batch_unary, sparsity=elementwise_deps,
    lower=lambda jax, x: 1 / _sqrt_lower(jax, x),  # the impl's formula, not lax.rsqrt
    passes=Hints(elementwise=True))

# ------------------------------------------------------------------ reciprocal: -1 / x^2
reciprocal_p = define(
    Primitive("reciprocal", np.reciprocal),
    per_input(jvp=(lambda t, ans, x: _mul_no_nan(t, negative(square(ans))),),
              vjp=(lambda g, ans, x: _mul_no_nan(g, conj_if_complex(negative(square(ans)))),),
              reads=("ans",)),
    batch_unary, sparsity=elementwise_deps, lower=twin("reciprocal"),
    passes=Hints(elementwise=True))

# ------------------------------------------------------------------ abs (real x): sign x, 0 at 0
# Complex inputs go to complex_abs (ops/complex.py), whose output is real. The lowering is
# jnp.abs (np.abs is NumPy's `absolute`; jnp.abs is its alias).
abs_p = unary("abs", np.abs, lambda ans, x: sign(x), reads="x", lower=twin("abs"),
              curvature=PIECEWISE_LINEAR)

# ------------------------------------------------------------------ sign: piecewise constant
# Its derivative is zero (TensorFlow returns zeros, not None).
sign_p = define(
    Primitive("sign", np.sign),
    per_input(jvp=(lambda t, ans, x: Zero.like(ans),), vjp=(lambda g, ans, x: zeros_of(x),),
              reads=("",)),  # its shape only
    batch_unary, sparsity=elementwise_deps,
    lower=lambda jax, x: jax.numpy.where(x == 0, jax.numpy.zeros_like(x), jax.numpy.sign(x)),  # +0 at -0
    passes=Hints(elementwise=True), curvature=PIECEWISE_LINEAR)

# ================================================================== no derivative
# Comparisons and logic give bools; floor, ceil and round are piecewise constant and, as
# TensorFlow, have no gradient (None).
equal_p = no_derivative("equal", np.equal, batch_elementwise)
not_equal_p = no_derivative("not_equal", np.not_equal, batch_elementwise)
less_p = no_derivative("less", np.less, batch_elementwise)
less_equal_p = no_derivative("less_equal", np.less_equal, batch_elementwise)
greater_p = no_derivative("greater", np.greater, batch_elementwise)
greater_equal_p = no_derivative("greater_equal", np.greater_equal, batch_elementwise)
logical_and_p = no_derivative("logical_and", np.bitwise_and, batch_elementwise)  # bitwise for
logical_or_p = no_derivative("logical_or", np.bitwise_or, batch_elementwise)     # integers
logical_xor_p = no_derivative("logical_xor", np.bitwise_xor, batch_elementwise)
logical_not_p = no_derivative("logical_not", np.invert, batch_unary)

floor_p = no_derivative("floor", np.floor, batch_unary)
ceil_p = no_derivative("ceil", np.ceil, batch_unary)
round_p = no_derivative("round", np.round, batch_unary)  # half to even, as TensorFlow (jnp too)
is_finite_p = no_derivative("is_finite", np.isfinite, batch_unary)
is_nan_p = no_derivative("is_nan", np.isnan, batch_unary)
is_inf_p = no_derivative("is_inf", np.isinf, batch_unary)


# ================================================================== public ops: arithmetic
add = binary_op(add_p, doc("x + y elementwise, with NumPy broadcasting.",
                           "tf.add(tf.constant([1., 2.]), 1.).numpy()",
                           "array([2., 3.], dtype=float32)"))
subtract = binary_op(subtract_p, doc("x - y elementwise, with broadcasting.",
                                     "tf.subtract(3., tf.constant([1., 2.])).numpy()",
                                     "array([2., 1.], dtype=float32)"))
multiply = binary_op(multiply_p, doc("x * y elementwise, with broadcasting.",
                                     "tf.multiply(tf.constant([1., 2.]), 3.).numpy()",
                                     "array([3., 6.], dtype=float32)"))
maximum = binary_op(maximum_p, doc("max(x, y) elementwise; at ties the gradient goes to x.",
                                   "tf.maximum(tf.constant([1., 5.]), 2.).numpy()",
                                   "array([2., 5.], dtype=float32)"))
minimum = binary_op(minimum_p, doc("min(x, y) elementwise; at ties the gradient goes to x.",
                                   "tf.minimum(tf.constant([1., 5.]), 2.).numpy()",
                                   "array([1., 2.], dtype=float32)"))
floormod = binary_op(floormod_p, doc("x mod y with the sign of y (Python's %).",
                                     "tf.math.floormod(tf.constant([5., -5.]), 3.).numpy()",
                                     "array([2., 1.], dtype=float32)"))
floordiv = binary_op(floordiv_p, doc("floor(x / y) elementwise (no gradient, as TensorFlow).",
                                     "tf.math.floordiv(tf.constant([5, -5]), 3).numpy()",
                                     "array([ 1, -2], dtype=int32)"))


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

negative = unary_op(negative_p, NUMERIC, doc("-x elementwise.",
                                             "tf.negative(tf.constant([1., -2.])).numpy()",
                                             "array([-1.,  2.], dtype=float32)"))
square = unary_op(square_p, NUMERIC, doc("x * x elementwise.",
                                         "tf.square(tf.constant([3.])).numpy()",
                                         "array([9.], dtype=float32)"))
sqrt = unary_op(sqrt_p, FLOAT, doc(
    "Square root elementwise; its gradient at 0 is inf (as TensorFlow).",
    "tf.sqrt(tf.constant([4.])).numpy()", "array([2.], dtype=float32)"))
rsqrt = unary_op(rsqrt_p, FLOAT, doc(
    "1 / sqrt(x) elementwise. Its gradient is -x^(-3/2) / 2 (-inf at 0), and exactly 0\n"
    "where the incoming gradient is 0, as TensorFlow.",
    "tf.math.rsqrt(tf.constant([4., 16.])).numpy()", "array([0.5 , 0.25], dtype=float32)"))
reciprocal = unary_op(reciprocal_p, FLOAT, doc(
    "1 / x elementwise (floating and complex tensors). Its gradient is -1/x^2, and\n"
    "exactly 0 where the incoming gradient is 0, as TensorFlow.",
    "tf.math.reciprocal(tf.constant([2., -4.])).numpy()", "array([ 0.5 , -0.25], dtype=float32)"))
sign = unary_op(sign_p, NUMERIC, doc("-1, 0 or 1 by the sign of x; its gradient is zero.",
                                     "tf.sign(tf.constant([-2., 0., 3.])).numpy()",
                                     "array([-1.,  0.,  1.], dtype=float32)"))


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


def _summands(inputs: Any, op: str) -> list[Tensor]:
    """add_n's operands: one dtype and one shape, no broadcasting (as TensorFlow's AddN)."""
    if isinstance(inputs, TensorBase):
        # TensorFlow iterates a tensor: its rows are the summands.
        whole = as_tensor(inputs, op, "inputs")
        if not shape_of(whole):
            raise TypeError(f"{op}: `inputs` is a scalar tensor; give a list of tensors.")
        inputs = [whole[i] for i in range(shape_of(whole)[0])]
    if isinstance(inputs, (str, bytes)) or not hasattr(inputs, "__iter__"):
        raise TypeError(f"{op}: `inputs` must be a list of tensors, got {type(inputs).__name__}.")
    items = list(inputs)
    if not items:
        raise ValueError(f"{op}: `inputs` must hold at least one tensor, got an empty "
                         f"{type(inputs).__name__}.")
    like = next((as_tensor(x, op, "inputs") for x in items if isinstance(x, TensorBase)), None)
    tensors = []
    for i, x in enumerate(items):
        if isinstance(x, (TensorBase, np.ndarray, np.generic)):  # an array keeps its dtype
            tensors.append(as_tensor(x, op, f"inputs[{i}]"))
        elif like is not None:
            tensors.append(convert_like(x, like, op, f"inputs[{i}]"))
        else:
            tensors.append(as_tensor(x, op, f"inputs[{i}]"))
    first = tensors[0]
    check_dtype(first, "fciu", op, "inputs[0]")
    for i, t in enumerate(tensors[1:], 1):
        if t._value.dtype != first._value.dtype:
            raise DTypeMismatchError(
                f"{op}: `inputs[{i}]` has dtype {_dt.from_numpy(t._value.dtype).name}, "
                f"`inputs[0]` {_dt.from_numpy(first._value.dtype).name}; every input must "
                "have one dtype (use tf.cast).")
        if shape_of(t) != shape_of(first):
            raise InvalidArgumentError(
                f"{op}: `inputs[{i}]` has shape {shape_of(t)}, `inputs[0]` {shape_of(first)}; "
                "every input must have one shape (add_n does not broadcast).")
    return tensors


def add_n(inputs: Any, name: str | None = None) -> Tensor:
    """The elementwise sum of a list of tensors of one dtype and one shape.

    Unlike `tf.add`, nothing broadcasts: a shape or dtype that differs from the first
    input's raises, naming the input (Python numbers and lists take the tensors' dtype;
    NumPy arrays keep their own). The sum runs left to right, as TensorFlow's CPU
    kernel. A single input comes back as a tensor (a Variable's current value).

    Example:
        >>> import tapeflow as tf
        >>> tf.add_n([tf.constant([1., 2.]), tf.constant([3., 4.]), [5., 6.]]).numpy()
        array([ 9., 12.], dtype=float32)
    """
    tensors = _summands(inputs, "add_n")
    total = tensors[0]
    for t in tensors[1:]:
        total = bind(add_p, total, t)
    return total


def accumulate_n(inputs: Any, shape: Any = None, tensor_dtype: Any = None,
                 name: str | None = None) -> Tensor:
    """`add_n`, with the expected shape and dtype checked when given (tf.math.accumulate_n).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.accumulate_n([tf.ones([2]), tf.ones([2])], shape=[2]).numpy()
        array([2., 2.], dtype=float32)
    """
    tensors = _summands(inputs, "accumulate_n")
    if shape is not None:
        have = shape_of(tensors[0])
        want = list(getattr(shape, "as_list", lambda: shape)())  # None: any size
        if len(want) != len(have) or any(w is not None and int(w) != h
                                         for w, h in zip(want, have)):
            raise InvalidArgumentError(f"accumulate_n: the inputs have shape {have}, "
                                       f"`shape` says {want}.")
    if tensor_dtype is not None and _dt.as_dtype(tensor_dtype)._np != tensors[0]._value.dtype:
        raise DTypeMismatchError(
            f"accumulate_n: the inputs have dtype "
            f"{_dt.from_numpy(tensors[0]._value.dtype).name}, `tensor_dtype` says "
            f"{_dt.as_dtype(tensor_dtype).name}.")
    return add_n(tensors)


# ================================================================== public ops: comparison and logic
equal = binary_op(equal_p, "x == y elementwise, a bool tensor.")
not_equal = binary_op(not_equal_p, "x != y elementwise, a bool tensor.")
less = binary_op(less_p, "x < y elementwise, a bool tensor.")
less_equal = binary_op(less_equal_p, "x <= y elementwise, a bool tensor.")
greater = binary_op(greater_p, doc("x > y elementwise, a bool tensor.",
                                   "tf.greater(tf.constant([1., 3.]), 2.).numpy()",
                                   "array([False,  True])"))
greater_equal = binary_op(greater_equal_p, "x >= y elementwise, a bool tensor.")
logical_and = binary_op(logical_and_p, "Elementwise and of bool tensors (bitwise for integers).",
                        kinds="biu")
logical_or = binary_op(logical_or_p, "Elementwise or of bool tensors (bitwise for integers).",
                       kinds="biu")
logical_xor = binary_op(logical_xor_p, "Elementwise xor of bool tensors (bitwise for integers).",
                        kinds="biu")
logical_not = unary_op(logical_not_p, "biu",
                       "Elementwise not of a bool tensor (bitwise invert for integers).")
is_finite = unary_op(is_finite_p, REAL_FLOAT, doc(
    "True where x is neither inf nor nan (real floating tensors).",
    "tf.math.is_finite(tf.constant([1., float('inf'), float('nan')])).numpy()",
    "array([ True, False, False])"))
is_nan = unary_op(is_nan_p, REAL_FLOAT, doc(
    "True where x is nan (real floating tensors).",
    "tf.math.is_nan(tf.constant([1., float('nan')])).numpy()", "array([False,  True])"))
is_inf = unary_op(is_inf_p, REAL_FLOAT, doc(
    "True where x is +inf or -inf (real floating tensors).",
    "tf.math.is_inf(tf.constant([1., float('-inf')])).numpy()", "array([False,  True])"))


# ================================================================== public ops: casts, selection, rounding
def cast(x: Any, dtype: Any, name: str | None = None) -> Tensor:
    """Convert x to `dtype`. Complex to real keeps the real part; float to int truncates
    toward zero and saturates: NaN gives 0, a value beyond the type's range its nearest
    bound (TensorFlow leaves those undefined; tapeflow gives the same in every mode,
    compiled included, see NOTE(float-to-int) in ops/structural.py).

    Gradients flow only between floating/complex dtypes.

    Example:
        >>> import tapeflow as tf
        >>> tf.cast(tf.constant([1.7, -1.7]), tf.int32).numpy()
        array([ 1, -1], dtype=int32)
    """
    x = as_tensor(x, "cast", "x")
    target = _dt.as_dtype(dtype)._np
    if x._value.dtype == target:
        return x
    return bind(cast_p, x, dtype=target)


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
        raise InvalidArgumentError(f"where: shapes do not broadcast: condition {shape_of(c)}, "
                                   f"x {shape_of(x)}, y {shape_of(y)}.") from None
    return bind(select_p, c, x, y)


floor = unary_op(floor_p, REAL_FLOAT, doc(
    "Largest integer <= x, elementwise (real floating tensors); no gradient (None), as\n"
    "TensorFlow.",
    "tf.math.floor(tf.constant([1.5, -1.5])).numpy()", "array([ 1., -2.], dtype=float32)"))
ceil = unary_op(ceil_p, REAL_FLOAT, doc(
    "Smallest integer >= x, elementwise (real floating tensors); no gradient (None), as\n"
    "TensorFlow.",
    "tf.math.ceil(tf.constant([1.5, -1.5])).numpy()", "array([ 2., -1.], dtype=float32)"))


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


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level);
# every name is also in tapeflow.ops.
EXPORTS = {
    "add": "tf math", "subtract": "tf math", "multiply": "tf math", "divide": "tf math",
    "truediv": "tf math", "floordiv": "tf math", "floormod": "tf math",
    "maximum": "tf math", "minimum": "tf math", "negative": "tf math", "square": "tf math",
    "sqrt": "tf math", "rsqrt": "tf math", "reciprocal": "tf math", "sign": "tf math",
    "clip_by_value": "tf math", "equal": "tf math", "not_equal": "tf math", "less": "tf math",
    "less_equal": "tf math", "greater": "tf math", "greater_equal": "tf math",
    "logical_and": "tf math", "logical_or": "tf math", "logical_xor": "math",
    "logical_not": "tf math", "is_finite": "tf math", "is_nan": "tf math", "is_inf": "tf math",
    "cast": "tf math", "where": "tf math", "floor": "tf math", "ceil": "tf math",
    "round": "tf math", "add_n": "tf math", "accumulate_n": "math",
}
