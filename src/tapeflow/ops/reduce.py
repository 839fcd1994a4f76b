"""Reductions: one definition block per primitive, composites below."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, bind
from ..tensor import Tensor
from ._rules import (as_tensor, batch_reduction, check_dtype, defjvp, defvjp, linear,
                     normalize_axis, shape_of)


def _kept_shape(shape: tuple, axis: tuple | None) -> tuple:
    """The shape of a keepdims=True reduction of `shape` over `axis`."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else d for i, d in enumerate(shape))


def _expand_back(g: Tensor, x: Tensor, axis: tuple | None, keepdims: bool) -> Tensor:
    """Broadcast a reduction's cotangent back over the reduced axes of x."""
    from .shape import broadcast_to, reshape

    kept = _kept_shape(shape_of(x), axis)
    if not keepdims:
        g = reshape(g, kept)
    return broadcast_to(g, shape_of(x))


# ------------------------------------------------------------------ reduce_sum: linear
def _sum_impl(x: np.ndarray, axis: tuple | None, keepdims: bool) -> Any:
    # Integers keep their dtype (NumPy would widen int32 sums to int64; TensorFlow does not).
    return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype if x.dtype.kind in "iu" else None)


reduce_sum_p = Primitive("reduce_sum", _sum_impl)
linear(reduce_sum_p, lambda g, x, axis, keepdims: _expand_back(g, x, axis, keepdims))
batch_reduction(reduce_sum_p)


# ------------------------------------------------------------------ reduce_max / reduce_min
def _extremum(name: str, impl: Any) -> Primitive:
    """max/min: the derivative is split equally among tied extrema (as TensorFlow)."""
    from .elementwise import _mask, divide, equal, multiply

    def weights(ans: Tensor, x: Tensor, axis: tuple | None, keepdims: bool) -> Tensor:
        from .shape import reshape

        kept = ans if keepdims else reshape(ans, _kept_shape(shape_of(x), axis))
        hit = _mask(equal(x, kept), x)
        return divide(hit, reduce_sum(hit, axis=axis, keepdims=True))

    prim = Primitive(name, impl)
    defjvp(prim, lambda t, ans, x, axis, keepdims: bind(
        reduce_sum_p, multiply(t, weights(ans, x, axis, keepdims)), axis=axis, keepdims=keepdims))
    defvjp(prim, lambda g, ans, x, axis, keepdims: multiply(
        _expand_back(g, x, axis, keepdims), weights(ans, x, axis, keepdims)))
    batch_reduction(prim)
    return prim


reduce_max_p = _extremum("reduce_max", lambda x, axis, keepdims: np.max(x, axis=axis, keepdims=keepdims))
reduce_min_p = _extremum("reduce_min", lambda x, axis, keepdims: np.min(x, axis=axis, keepdims=keepdims))


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
    if x._value.size == 0:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError("reduce_max: `input_tensor` is empty.")
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
    if x._value.size == 0:
        from ..errors import InvalidArgumentError
        raise InvalidArgumentError("reduce_min: `input_tensor` is empty.")
    return bind(reduce_min_p, x, axis=axis, keepdims=bool(keepdims))


def reduce_mean(input_tensor: Any, axis: Any = None, keepdims: bool = False,
                name: str | None = None) -> Tensor:
    """Mean over `axis`; integer tensors give the integer (floor) mean, as TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.reduce_mean(tf.constant([1., 2., 6.])).numpy()
        np.float32(3.0)
    """
    from .elementwise import floordiv, multiply

    x, axis = _reduce_args(input_tensor, axis, "reduce_mean", "fciu")
    shape = shape_of(x)
    count = int(np.prod([shape[i] for i in (axis if axis is not None else range(len(shape)))],
                        dtype=np.int64))
    total = bind(reduce_sum_p, x, axis=axis, keepdims=bool(keepdims))
    if x._value.dtype.kind in "iu":
        return floordiv(total, max(count, 1))
    return multiply(total, 1.0 / count if count else np.nan)
