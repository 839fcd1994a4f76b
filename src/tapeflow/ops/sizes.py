"""Shapes as tensors: the sizes of values as integer tensors, and the ops that take
their shape from one.

NOTE(dynamic-shapes): a shape can be a tensor (tf.shape(x), and what code computes from
it), which ops that take a shape argument (tf.reshape, tf.zeros, tf.fill,
tf.broadcast_to) read when they run: the *_dyn primitives here. A shape tensor is 1-D
int64 (never batched: every example of a vmap has the same shape); `lead` leading axes
of the data pass through (a batch axis, from the batching rules). `shape` and `size`
make such tensors from an input's sizes: no inputs, their sizes params, so a graph of
fixed sizes folds them to constants and a size-generic trace's graph reads the sizes
when it runs (NOTE(sized-params) in graph/polymorphic.py).
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..catalog import DATA_SHAPE, NO_DERIVATIVE, SHAPE_OPERAND, define
from ..core import Primitive, bind
from ..hessian_patterns import LINEAR
from ..tensor import Tensor
from .structural import (batch_no_inputs, dense_deps, move_to_front, moved_deps, per_input,
                         shape_source)

__all__ = ["shape_p", "size_p", "size_check_p", "shape_tensor", "filled", "broadcast_dyn_p", "sum_dyn_p",
           "reshape_dyn_p"]


def filled(shape: Tensor, value: Any, dtype: Any) -> Tensor:
    """`value` (of `dtype`) in the shape a 1-D int64 tensor holds, read when the graph
    runs (NOTE(dynamic-shapes))."""
    return bind(broadcast_dyn_p, Tensor(np.array(value, np.dtype(dtype))), shape, lead=0,
                expand=())


def _shape_impl(sizes: tuple, dtype: np.dtype) -> np.ndarray:
    return np.array(sizes, dtype) if sizes else np.zeros(0, dtype)


def _size_impl(sizes: tuple, dtype: np.dtype, at_least: int = 0,
               reciprocal: bool = False) -> Any:
    """The product of `sizes` (at least `at_least`), or its reciprocal rounded from float64
    (NaN for 0): a mean's divisor and scale."""
    count = max(math.prod(sizes), at_least)
    if reciprocal:
        return np.array(1.0 / count if count else np.nan, np.float64).astype(dtype)[()]
    return np.array(count, dtype)[()]


# The sizes are NumPy values in a JAX trace: static, as graph/xla.py keeps them.
shape_p = define(Primitive("shape", _shape_impl, effects=(NO_DERIVATIVE,)), batch_no_inputs,
                 lower=lambda jax, sizes, dtype: _shape_impl(sizes, dtype))
size_p = define(Primitive("size", _size_impl, effects=(NO_DERIVATIVE,)), batch_no_inputs,
                lower=lambda jax, **params: _size_impl(**params))


# A decision Python made on sizes while tracing (NOTE(symbolic-sizes) in graph/dims.py):
# `check`, a comparison of sizes, computed from the sizes when the graph runs; a guard on
# it sends a replay at sizes that decide otherwise back to tracing.
size_check_p = define(Primitive("size_check", lambda check: np.bool_(check),
                                effects=(NO_DERIVATIVE,)), batch_no_inputs,
                      lower=lambda jax, check: np.bool_(check))


def shape_tensor(x: Any, start: int = 0) -> Tensor:
    """x's shape from axis `start` as a 1-D int64 tensor (sizes read when a size-generic
    graph runs)."""
    return bind(shape_p, sizes=tuple(shape_source(x)[start:]), dtype=np.dtype(np.int64))


def _dims(shape: Any) -> tuple:
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _inserted(shape: tuple, expand: tuple) -> tuple:
    """`shape` with 1s inserted at the (negative) axes `expand` of the result."""
    if not expand:
        return shape
    rank = len(shape) + len(expand)
    at = sorted(a % rank for a in expand)
    out, rest = [], iter(shape)
    for i in range(rank):
        out.append(1 if i in at else next(rest))
    return tuple(out)


def _aligned(shape: tuple, lead: int, expand: tuple, rank: int) -> tuple:
    """`shape` with 1s inserted at `expand` and after its `lead` axes, so that its trailing
    axes line up with a broadcast target's `rank` trailing axes."""
    trailing = _inserted(shape[lead:], expand)
    return shape[:lead] + (1,) * (rank - len(trailing)) + trailing


def _broadcast_dyn_impl(x: Any, shape: Any, lead: int, expand: tuple) -> Any:
    x = np.asarray(x)
    dims = _dims(shape)
    return np.broadcast_to(x.reshape(_aligned(x.shape, lead, expand, len(dims))),
                           x.shape[:lead] + dims)


def _sum_dyn_impl(x: Any, shape: Any, lead: int, expand: tuple) -> Any:
    x = np.asarray(x)
    dims = _dims(shape)
    kept = _inserted(dims, expand)  # the broadcast operand's trailing shape, axes inserted
    extra = x.ndim - lead - len(kept)
    axes = tuple(range(lead, lead + extra)) + tuple(
        lead + extra + i for i, d in enumerate(kept) if d == 1 and x.shape[lead + extra + i] != 1)
    out = x.sum(axis=axes, keepdims=True) if axes else x
    return out.reshape(x.shape[:lead] + dims)


def _reshape_dyn_impl(x: Any, shape: Any, lead: int) -> Any:
    x = np.asarray(x)
    out = x.reshape(x.shape[:lead] + _dims(shape))
    return out[()] if not out.shape else out


def _unbatched_shape(prim: Primitive, dims: tuple) -> None:
    if dims[1] is not None:
        raise ValueError(f"{prim.name}: the shape argument is batched (vmap over a tensor of "
                         "shapes); every example must have the same shape.")


def _dyn_batch(prim: Primitive) -> Callable:
    def rule(vals: tuple, dims: tuple, lead: int, **params: Any) -> tuple:
        _unbatched_shape(prim, dims)
        return bind(prim, move_to_front(vals[0], dims[0]), vals[1], lead=lead + 1, **params), 0
    return rule


# broadcast_dyn and sum_dyn are linear in the data, each the other's transpose; reshape_dyn
# is its own. The shape carries no derivative.
def _dyn_rules(transpose: Callable[[], Primitive]) -> Callable[[Primitive], dict]:
    def family(prim: Primitive) -> dict:
        def tangent(t: Tensor, ans: Tensor, x: Tensor, s: Tensor, lead: int, **p: Any) -> Tensor:
            return bind(prim, t, s, lead=lead, **p)

        def cotangent(g: Tensor, ans: Tensor, x: Tensor, s: Tensor, lead: int,
                      **p: Any) -> Tensor:
            return bind(transpose(), g, shape_tensor(x, lead), lead=lead, **p)
        return {"batch": _dyn_batch(prim),
                **per_input(jvp=(tangent, None), vjp=(cotangent, None), reads=("", ""))(prim)}
    return family


def _broadcast_dyn_lower(jax: Any, x: Any, s: Any, lead: int, expand: tuple) -> Any:
    return jax.numpy.broadcast_to(jax.numpy.reshape(x, _aligned(x.shape, lead, expand,
                                                                len(_dims(s)))),
                                  x.shape[:lead] + _dims(s))


def _sum_dyn_lower(jax: Any, x: Any, s: Any, lead: int, expand: tuple) -> Any:
    dims = _dims(s)
    kept = _inserted(dims, expand)
    extra = x.ndim - lead - len(kept)
    axes = tuple(range(lead, lead + extra)) + tuple(
        lead + extra + i for i, d in enumerate(kept) if d == 1 and x.shape[lead + extra + i] != 1)
    out = jax.numpy.sum(x, axis=axes, keepdims=True) if axes else x
    return jax.numpy.reshape(out, x.shape[:lead] + dims)


# graph/xla.py keeps shapes static (NumPy), so these lower to JAX's static-shape ops.
broadcast_dyn_p = define(Primitive("broadcast_dyn", _broadcast_dyn_impl,
                                   effects=(DATA_SHAPE, SHAPE_OPERAND)),
                         _dyn_rules(lambda: sum_dyn_p), moved_deps(0),
                         lower=_broadcast_dyn_lower, curvature=LINEAR)
sum_dyn_p = define(Primitive("sum_dyn", _sum_dyn_impl, effects=(DATA_SHAPE, SHAPE_OPERAND)),
                   _dyn_rules(lambda: broadcast_dyn_p),
                   sparsity=dense_deps, lower=_sum_dyn_lower, curvature=LINEAR)
reshape_dyn_p = define(Primitive("reshape_dyn", _reshape_dyn_impl,
                                 effects=(DATA_SHAPE, SHAPE_OPERAND)),
                       _dyn_rules(lambda: reshape_dyn_p), moved_deps(0),
                       lower=lambda jax, x, s, lead: jax.numpy.reshape(
                           x, x.shape[:lead] + _dims(s)), curvature=LINEAR)




EXPORTS: dict = {}  # the public ops of shapes (tf.shape, tf.reshape, ...) are their families'
