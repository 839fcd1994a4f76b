"""Reductions and scans: reduce_sum/max/min/mean/prod, reduce_logsumexp,
reduce_variance/std, reduce_all/any, argmax/argmin, cumsum, cumprod.

reduce_sum is a structural primitive (ops/structural.py); reduce_max, reduce_min,
cumsum, reduce_all/any and argmax/argmin are primitives here; the rest are composites.
reduce_prod and cumprod are built from pairwise multiplications (a balanced tree,
a Hillis-Steele scan), never from a division by x: their derivatives are exact
when inputs contain zeros (TensorFlow's cumprod gradient divides by x and is wrong
there), at every order, and need no rules of their own.
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..dtypes import half_in_float32
from ..catalog import NO_DERIVATIVE, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..hessian_patterns import LINEAR, PIECEWISE_LINEAR
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, check_dtype, normalize_axis
from .complex import real
from .elementwise import (abs_p, add, divide, equal, floordiv, is_finite, multiply, sign_p, square, subtract)
from .indexing import getitem_p
from .shape import concat_p, stop_gradient
from .structural import (full_of, along_axis_deps, batch_along_axis, batch_reduction, conj_if_complex, expand_reduced, float_mask, kept_shape, linear, per_input, reduce_sum_p, reduction_deps, reshape_p, select_p, shape_of, shape_source, transpose_p, zeros_of)
from .sizes import size_p
from .transcendental import exp, log, pow


# ------------------------------------------------------------------ reduce_max / reduce_min
# max/min: the derivative is split equally among tied extrema (as TensorFlow).
def _extremum_weights(ans: Tensor, x: Tensor, axis: tuple | None, keepdims: bool) -> Tensor:
    kept = ans if keepdims else bind(reshape_p, ans, shape=kept_shape(shape_source(x), axis))
    hit = float_mask(equal(x, kept), x)
    return divide(hit, bind(reduce_sum_p, hit, axis=axis, keepdims=True))


# The rules of max and min (a family: catalog.define).
_extremum = per_input(
    jvp=(lambda t, ans, x, axis, keepdims: bind(
        reduce_sum_p, multiply(t, _extremum_weights(ans, x, axis, keepdims)), axis=axis,
        keepdims=keepdims),),
    vjp=(lambda g, ans, x, axis, keepdims: multiply(
        expand_reduced(g, shape_source(x), axis, keepdims),
        _extremum_weights(ans, x, axis, keepdims)),),
    reads=("ans x",))

# np.max and np.min without their Python wrappers (the same reductions: 1.3 us of a small
# array's 2.4)
_max, _min = np.maximum.reduce, np.minimum.reduce
reduce_max_p = define(
    Primitive("reduce_max", lambda x, axis, keepdims: _max(x, axis=axis, keepdims=keepdims)),
    _extremum, batch_reduction, sparsity=reduction_deps,
    lower=lambda jax, x, axis, keepdims: jax.numpy.max(x, axis=axis, keepdims=keepdims),
    curvature=PIECEWISE_LINEAR)
reduce_min_p = define(
    Primitive("reduce_min", lambda x, axis, keepdims: _min(x, axis=axis, keepdims=keepdims)),
    _extremum, batch_reduction, sparsity=reduction_deps,
    lower=lambda jax, x, axis, keepdims: jax.numpy.min(x, axis=axis, keepdims=keepdims),
    curvature=PIECEWISE_LINEAR)


def _scan_axis(axis: Any, ndim: int, op: str, list_error: type) -> int:
    """A scan/arg-reduction axis: one int in [-ndim, ndim), as a non-negative int."""
    if isinstance(axis, TensorBase):
        axis = np.asarray(axis)
    if np.ndim(axis) != 0:
        raise list_error(f"{op}: `axis` must be a single int; got {axis!r}.")
    if isinstance(axis, (bool, float, np.floating)) or not isinstance(
            axis, (int, np.integer, np.ndarray)) or np.asarray(axis).dtype.kind not in "iu":
        raise TypeError(f"{op}: `axis` must be an int; got {axis!r}.")
    a = int(axis)
    if not -ndim <= a < ndim:
        raise InvalidArgumentError(f"{op}: `axis`={a} is out of range for a tensor of rank {ndim} "
                                   f"(valid: [{-ndim}, {ndim}) ).")
    return a % ndim


def _along(axis: int, sl: slice) -> tuple:
    """The getitem key selecting `sl` along `axis` (and everything along the other axes)."""
    return (slice(None),) * axis + (sl,)


# ------------------------------------------------------------------ cumsum: linear
def _cumsum_impl(x: np.ndarray, axis: int, exclusive: bool, reverse: bool) -> np.ndarray:
    if reverse:
        x = np.flip(x, axis)
    # Integers keep their dtype (NumPy would widen them; TensorFlow does not).
    out = np.cumsum(x, axis=axis, dtype=x.dtype)
    if exclusive:
        first = np.zeros_like(np.take(out, [0], axis=axis))
        out = np.concatenate([first, out[_along(axis, slice(0, -1))]], axis=axis)
    return np.flip(out, axis) if reverse else out


def _cumsum_lower(jax: Any, x: Any, axis: int, exclusive: bool, reverse: bool) -> Any:
    jnp = jax.numpy
    if reverse:
        x = jnp.flip(x, axis)
    out = jnp.cumsum(x, axis=axis, dtype=x.dtype)  # integers keep their dtype
    if exclusive:
        first = jnp.zeros_like(out[_along(axis, slice(0, 1))])
        out = jnp.concatenate([first, out[_along(axis, slice(0, -1))]], axis=axis)
    return jnp.flip(out, axis) if reverse else out


cumsum_p = define(
    Primitive("cumsum", half_in_float32(_cumsum_impl)),
    # The transpose of a running sum is the running sum in the other direction.
    linear(lambda g, x, axis, exclusive, reverse: bind(
        cumsum_p, g, axis=axis, exclusive=exclusive, reverse=not reverse)),
    batch_along_axis, sparsity=along_axis_deps, lower=_cumsum_lower, curvature=LINEAR)

# ------------------------------------------------------------------ boolean reductions, arg-extrema
reduce_all_p = define(
    Primitive("reduce_all", lambda x, axis, keepdims: np.all(x, axis=axis, keepdims=keepdims),
              effects=(NO_DERIVATIVE,)),
    batch_reduction,
    lower=lambda jax, x, axis, keepdims: jax.numpy.all(x, axis=axis, keepdims=keepdims))
reduce_any_p = define(
    Primitive("reduce_any", lambda x, axis, keepdims: np.any(x, axis=axis, keepdims=keepdims),
              effects=(NO_DERIVATIVE,)),
    batch_reduction,
    lower=lambda jax, x, axis, keepdims: jax.numpy.any(x, axis=axis, keepdims=keepdims))

# Lowered: the first extremum, or the first nan, as NumPy.
argmax_p = define(
    Primitive("argmax", lambda x, axis, output_type: np.argmax(x, axis=axis).astype(output_type),
              effects=(NO_DERIVATIVE,)),
    batch_along_axis,
    lower=lambda jax, x, axis, output_type: jax.numpy.argmax(x, axis=axis).astype(output_type))
argmin_p = define(
    Primitive("argmin", lambda x, axis, output_type: np.argmin(x, axis=axis).astype(output_type),
              effects=(NO_DERIVATIVE,)),
    batch_along_axis,
    lower=lambda jax, x, axis, output_type: jax.numpy.argmin(x, axis=axis).astype(output_type))


# ================================================================== composites
def _tree_prod(x: Tensor, axis: tuple | None, keepdims: bool) -> Tensor:
    """Product over `axis` as a balanced tree of elementwise multiplications."""
    shape = shape_of(x)
    axes = tuple(range(len(shape))) if axis is None else axis
    kept = [i for i in range(len(shape)) if i not in axes]
    out_shape = kept_shape(shape, axes) if keepdims else tuple(shape[i] for i in kept)
    n = math.prod([shape[a] for a in axes])
    if n == 0:  # the empty product; still connected to x, so its (empty) gradient is zeros
        return add(bind(reduce_sum_p, x, axis=axes, keepdims=keepdims), 1)
    perm = tuple(kept) + axes
    if perm != tuple(range(len(shape))):
        x = bind(transpose_p, x, perm=perm)
    lead = tuple(shape[i] for i in kept)
    y = bind(reshape_p, x, shape=lead + (n,))
    r = len(lead)
    while n > 1:
        if n % 2:
            y = bind(concat_p, y, full_of(lead + (1,), 1, x._value.dtype), axis=r)
            n += 1
        y = multiply(bind(getitem_p, y, key=_along(r, slice(0, None, 2))),
                     bind(getitem_p, y, key=_along(r, slice(1, None, 2))))
        n //= 2
    return bind(reshape_p, y, shape=out_shape)


def _scan_prod(x: Tensor, axis: int, exclusive: bool, reverse: bool) -> Tensor:
    """Running product along `axis` by doubling steps: y_i *= y_{i - s} for s = 1, 2, 4, ..."""
    shape = shape_of(x)
    n = shape[axis]
    if n == 0:
        return x

    def ones(k: int) -> Tensor:
        return full_of(shape[:axis] + (k,) + shape[axis + 1:], 1, x._value.dtype)

    flip = _along(axis, slice(None, None, -1))
    y = bind(getitem_p, x, key=flip) if reverse else x
    s = 1
    while s < n:
        shifted = bind(concat_p, ones(s), bind(getitem_p, y, key=_along(axis, slice(0, n - s))),
                       axis=axis)
        y = multiply(y, shifted)
        s *= 2
    if exclusive:
        y = bind(concat_p, ones(1), bind(getitem_p, y, key=_along(axis, slice(0, n - 1))),
                 axis=axis)
    return bind(getitem_p, y, key=flip) if reverse else y


# ================================================================== public ops
def _reduce_args(input_tensor: Any, axis: Any, op: str, kinds: str) -> tuple[Tensor, Any]:
    x = as_tensor(input_tensor, op, "input_tensor")
    check_dtype(x, kinds, op, "input_tensor")
    return x, normalize_axis(axis, np.ndim(x._value), op)


def reduce_sum(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Sum over `axis` (all axes if None); `keepdims` keeps reduced axes with length 1.

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_sum(tf.constant([[1., 2.], [3., 4.]]), axis=0).numpy()
        array([4., 6.], dtype=float32)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_sum", "fciu")
    return bind(reduce_sum_p, x, axis=axis, keepdims=bool(keepdims))


def _check_not_empty(x: Tensor, axis: tuple | None, op: str) -> None:
    """An extremum over no values is undefined; over a non-empty axis of an empty tensor
    it is an empty result."""
    shape = shape_of(x)
    empty = [a for a in (range(len(shape)) if axis is None else axis) if shape[a] == 0]
    if empty:
        raise InvalidArgumentError(f"{op}: axis {empty[0]} of `input_tensor` (shape {shape}) "
                                   "is empty: there is no value to take the extremum of.")


def reduce_max(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Maximum over `axis`. At ties the gradient is split equally among the maxima
    (as TensorFlow), so it stays a valid subgradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_max(tf.constant([[1., 5.], [3., 4.]]), axis=1).numpy()
        array([5., 4.], dtype=float32)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_max", "fiu")
    _check_not_empty(x, axis, "reduce_max")
    return bind(reduce_max_p, x, axis=axis, keepdims=bool(keepdims))


def reduce_min(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Minimum over `axis`; ties split the gradient equally (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_min(tf.constant([[1., 5.], [3., 4.]]), axis=1).numpy()
        array([1., 3.], dtype=float32)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_min", "fiu")
    _check_not_empty(x, axis, "reduce_min")
    return bind(reduce_min_p, x, axis=axis, keepdims=bool(keepdims))


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """Mean over `axis`; integer tensors give the integer mean truncated toward zero, as
    TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_mean(tf.constant([1., 2., 6.])).numpy()
        np.float32(3.0)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_mean", "fciu")
    total = bind(reduce_sum_p, x, axis=axis, keepdims=bool(keepdims))
    # The count from the sizes (read when a size-generic graph runs, NOTE(dynamic-shapes)
    # in ops/structural.py): integers floor-divided by max(count, 1), the others multiplied
    # by the reciprocal rounded from float64.
    shape = shape_source(x)
    sizes = tuple(shape[i] for i in (axis if axis is not None else range(len(shape))))
    kind, dtype = x._value.dtype.kind, x._value.dtype  # ints only: bfloat16 (V) is not one
    if kind in "iu":
        count = bind(size_p, sizes=sizes, dtype=dtype, at_least=1)
        if kind == "u":
            return floordiv(total, count)
        # truncated toward zero: |total| // count with total's sign
        return multiply(floordiv(bind(abs_p, total), count), bind(sign_p, total))
    return multiply(total, bind(size_p, sizes=sizes, dtype=dtype, reciprocal=True))


def reduce_prod(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """Product over `axis` (all axes if None); `keepdims` keeps reduced axes with length 1.

    The gradient is exact with zeros in the input (it never divides by x).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[2., 0., 3.], [1., 2., 3.]])
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = tf.reduce_prod(x, axis=1)
        >>> y.numpy()
        array([0., 6.], dtype=float32)
        >>> tape.gradient(y, x).numpy()
        array([[0., 6., 0.],
               [6., 3., 2.]], dtype=float32)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_prod", "fciu")
    return _tree_prod(x, axis, bool(keepdims))


def reduce_logsumexp(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                     name: str | None = None) -> Tensor:
    """log(sum(exp(x))) over `axis`, computed as m + log(sum(exp(x - m))) with m the
    (finite) maximum, so it neither overflows nor underflows; its gradient is softmax(x)
    along `axis`. Real floating tensors; empty reductions give -inf, as TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_logsumexp(tf.constant([1000., 1000.], tf.float64)).numpy()
        np.float64(1000.6931471805599)
    """
    x, axis = _reduce_args(input_tensor, axis, "reduce_logsumexp", "f")
    shape = shape_of(x)
    kept = kept_shape(shape, axis)
    if x._value.size == 0:
        m = full_of(kept, 0, x._value.dtype)
    else:
        raw = bind(reduce_max_p, x, axis=axis, keepdims=True)
        # The shift cancels exactly, so it carries no gradient; an infinite max would make
        # x - m nan, so it is replaced by 0 there (the result is then +-inf, correctly).
        m = stop_gradient(bind(select_p, is_finite(raw), raw, zeros_of(raw)))
    total = bind(reduce_sum_p, exp(subtract(x, m)), axis=axis, keepdims=bool(keepdims))
    if not keepdims:
        m = bind(reshape_p, m, shape=shape_of(total))
    return add(log(total), m)


def _variance(input_tensor: Any, axis: Any, keepdims: bool, op: str) -> Tensor:
    x = as_tensor(input_tensor, op, "input_tensor")
    if _dt.kind(x._value.dtype) not in "fc":
        raise TypeError(f"{op}: `input_tensor` has dtype {_dt.from_numpy(x._value.dtype).name}; "
                        "expected a real or complex floating dtype.")
    axis = normalize_axis(axis, np.ndim(x._value), op)
    d = subtract(x, reduce_mean(x, axis=axis, keepdims=True))
    sq = real(multiply(d, conj_if_complex(d))) if _dt.kind(x._value.dtype) == "c" else square(d)
    return reduce_mean(sq, axis=axis, keepdims=keepdims)


def reduce_variance(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                    name: str | None = None) -> Tensor:
    """Population variance over `axis`: mean(|x - mean(x)|^2). Complex tensors give a real
    result; integer tensors are a TypeError, as TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.reduce_variance(tf.constant([[1., 2.], [3., 6.]]), axis=0).numpy()
        array([1., 4.], dtype=float32)
    """
    return _variance(input_tensor, axis, keepdims, "reduce_variance")


def reduce_std(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Population standard deviation over `axis`: sqrt(reduce_variance(x)). Where all
    reduced values are equal the derivative is nan in forward and reverse mode alike, as
    TensorFlow (sqrt is not differentiable at 0).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.reduce_std(tf.constant([1., 3.])).numpy()
        np.float32(1.0)
    """
    var = _variance(input_tensor, axis, keepdims, "reduce_std")
    # var ** 0.5 rather than sqrt: sqrt's forward rule keeps a zero tangent zero at 0 (its
    # reverse rule, a zero cotangent), but the tangent of var is zero at zero variance
    # while the cotangent of std is not, so the two modes would disagree (0 against nan);
    # the power's rules give nan in both.
    return pow(var, Tensor(np.asarray(0.5, var._value.dtype)))


def _bool_reduction(prim: Primitive, input_tensor: Any, axis: Any, keepdims: bool) -> Tensor:
    x, axis = _reduce_args(input_tensor, axis, prim.name, "b")
    return bind(prim, x, axis=axis, keepdims=bool(keepdims))


def reduce_all(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Logical and over `axis` of a bool tensor (True for an empty reduction).

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_all(tf.constant([[True, False], [True, True]]), axis=1).numpy()
        array([False,  True])
    """
    return _bool_reduction(reduce_all_p, input_tensor, axis, keepdims)


def reduce_any(input_tensor: Any, axis: Any = None, keepdims: bool = False,
               name: str | None = None) -> Tensor:
    """Logical or over `axis` of a bool tensor (False for an empty reduction).

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_any(tf.constant([[True, False], [False, False]]), axis=1).numpy()
        array([ True, False])
    """
    return _bool_reduction(reduce_any_p, input_tensor, axis, keepdims)


_INDEX_TYPES = ("int16", "uint16", "int32", "int64")


def _arg_extremum(prim: Primitive, input: Any, axis: Any, output_type: Any) -> Tensor:  # noqa: A002
    op = prim.name
    x = as_tensor(input, op, "input")
    check_dtype(x, "fiub", op, "input")
    ndim = np.ndim(x._value)
    if ndim == 0:
        raise InvalidArgumentError(f"{op}: `input` is a scalar; it needs at least one axis.")
    ax = _scan_axis(0 if axis is None else axis, ndim, op, TypeError)
    if shape_of(x)[ax] == 0:
        raise InvalidArgumentError(f"{op}: axis {ax} of `input` (shape {shape_of(x)}) is empty.")
    out = _dt.as_dtype(output_type)
    if out.name not in _INDEX_TYPES:
        raise InvalidArgumentError(f"{op}: `output_type` is {out.name}; expected one of "
                                   f"{', '.join(_INDEX_TYPES)}.")
    return bind(prim, x, axis=ax, output_type=out._np)


def argmax(input: Any, axis: Any = None, output_type: Any = _dt.int64,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Index of the largest value along `axis` (0 if None, as TensorFlow); int64 by default.

    Ties give the first index; a nan counts as the largest value (as NumPy and
    tf.reduce_max, which propagate nan; TensorFlow's argmax skips nans). No gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.argmax(tf.constant([[1., 5.], [3., 4.]]), axis=1).numpy()
        array([1, 1])
    """
    return _arg_extremum(argmax_p, input, axis, output_type)


def argmin(input: Any, axis: Any = None, output_type: Any = _dt.int64,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Index of the smallest value along `axis` (0 if None, as TensorFlow); int64 by default.

    Ties give the first index; a nan counts as the smallest value (see argmax). No gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.argmin(tf.constant([[1., 5.], [3., 4.]]), axis=0, output_type=tf.int32).numpy()
        array([0, 1], dtype=int32)
    """
    return _arg_extremum(argmin_p, input, axis, output_type)


def _scan_args(x: Any, axis: Any, op: str) -> tuple[Tensor, int]:
    x = as_tensor(x, op, "x")
    check_dtype(x, "fciu", op)
    ndim = np.ndim(x._value)
    if ndim == 0:
        raise InvalidArgumentError(f"{op}: `x` is a scalar; it needs at least one axis.")
    return x, _scan_axis(axis, ndim, op, InvalidArgumentError)


def cumsum(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
           name: str | None = None) -> Tensor:
    """Running sum along `axis`. `exclusive` leaves each element out of its own sum;
    `reverse` sums from the end. Integer tensors keep their dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.cumsum(tf.constant([1., 2., 3.])).numpy()
        array([1., 3., 6.], dtype=float32)
        >>> tf.cumsum(tf.constant([1., 2., 3.]), exclusive=True, reverse=True).numpy()
        array([5., 3., 0.], dtype=float32)
    """
    x, ax = _scan_args(x, axis, "cumsum")
    return bind(cumsum_p, x, axis=ax, exclusive=bool(exclusive), reverse=bool(reverse))


def cumprod(x: Any, axis: Any = 0, exclusive: bool = False, reverse: bool = False,
            name: str | None = None) -> Tensor:
    """Running product along `axis`, with `exclusive` and `reverse` as in cumsum.

    The gradient is exact with zeros in the input (TensorFlow's divides by x and is
    wrong there).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.cumprod(tf.constant([1., 2., 3.])).numpy()
        array([1., 2., 6.], dtype=float32)
        >>> tf.math.cumprod(tf.constant([1., 2., 3.]), exclusive=True, reverse=True).numpy()
        array([6., 3., 1.], dtype=float32)
    """
    x, ax = _scan_args(x, axis, "cumprod")
    return _scan_prod(x, ax, bool(exclusive), bool(reverse))


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "reduce_sum": "tf math", "reduce_max": "tf math", "reduce_min": "tf math",
    "reduce_mean": "tf math", "reduce_prod": "tf math", "reduce_logsumexp": "tf math",
    "reduce_variance": "tf math", "reduce_std": "tf math", "reduce_all": "tf math",
    "reduce_any": "tf math", "argmax": "tf math", "argmin": "tf math", "cumsum": "tf math",
    "cumprod": "tf math",
}
