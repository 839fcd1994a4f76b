"""Indexing: slicing (`x[key]`), gather, gather_nd, the scatters (tensor_scatter_nd_update,
tensor_scatter_nd_add, scatter_nd), and the bounds check of indices.

Slicing and gathering are linear, and each has its transpose as a primitive of its own
(`getitem_transpose` puts a slice back into zeros, `gather_transpose` adds gathered rows
back, repeated indices accumulating): each pair's rules are written with each other,
so every derivative of any order stays in the family. gather_nd and gather with
`batch_dims` are composites: index tuples become offsets into a flattening of params,
then one `gather`. The scatters work on the same flattening: tensor_scatter_nd_update
is a primitive (`scatter_update`, rows replaced), tensor_scatter_nd_add and scatter_nd
are composites of `gather_transpose` (rows added).
"""

from __future__ import annotations

import math

import builtins
from typing import Any, Sequence

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, Hints, Lowering, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..hessian_patterns import LINEAR
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, convert_like, int_arg, int_tensor, static_shape
from .structural import (full_of, add_p, broadcast_to_p, cast_p, dtype_of, linear, move_to_front,
                         moved_deps, multiply_p, per_input, reduce_sum_p, reshape_p,
                         scatter_deps, shape_of, shape_source, transpose_p)
from .elementwise import floormod_p
from .sizes import shape_p

_brange = builtins.range

# ------------------------------------------------------------------ getitem (basic slicing)
def _scatter_into_zeros(g: np.ndarray, key: tuple, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    out[key] = g
    return out


def _slice_transpose(g: Tensor, shape: Any, key: tuple) -> Tensor:
    """g put into zeros of `shape` (a tuple or a `shape_source`) at `key`."""
    if isinstance(shape, tuple):
        return bind(getitem_transpose_p, g, key=key, shape=shape)
    sizes = bind(shape_p, shape, start=0, dtype=np.dtype(np.int64))
    return bind(getitem_transpose_dyn_p, g, sizes, key=key, lead=0)


def _has_index_array(key: tuple) -> bool:
    return any(isinstance(k, (np.ndarray, list)) for k in key)


def _getitem_transpose_lower(jax: Any, g: Any, key: tuple, shape: tuple) -> Any:
    jnp = jax.numpy
    zeros = jnp.zeros(shape, jnp.result_type(g))
    if not _has_index_array(key):  # basic indexing: every position written once
        return zeros.at[key].set(g)
    # Index arrays may repeat a position: NumPy's assignment keeps the last value written.
    # The positions are static (the key is a param): keep each one's last occurrence.
    where = np.arange(int(np.prod(shape, dtype=np.int64))).reshape(shape)[key]
    flat = np.broadcast_to(where, np.shape(where)).reshape(-1)
    last = flat.size - 1 - np.unique(flat[::-1], return_index=True)[1]
    values = jnp.broadcast_to(g, np.shape(where)).reshape(-1)[last]
    return zeros.reshape(-1).at[flat[last]].set(values, unique_indices=True).reshape(shape)


def _kernel_index(k: Any) -> str | None:
    """One entry of a basic key as loop-kernel text: an int, or a slice of ints; None for
    anything else (an array, None, Ellipsis), which a kernel does not take."""
    ints = lambda v: isinstance(v, (int, np.integer)) and not isinstance(v, bool)  # noqa: E731
    if ints(k):
        return str(int(k))
    if isinstance(k, slice) and all(v is None or ints(v) for v in (k.start, k.stop, k.step)):
        return ":".join("" if v is None else str(int(v)) for v in (k.start, k.stop, k.step))
    return None


def _getitem_kernel(shapes: list, key: tuple) -> str | None:
    # catalog `kernel`: Numba's arrays take ints and slices as NumPy's do
    parts = [_kernel_index(k) for k in key]
    return None if None in parts else "{0}" if not parts else "{0}[" + ", ".join(parts) + "]"


def _scatter_kernel(shapes: list, key: tuple, shape: tuple) -> str | None:
    # catalog `kernel`, for a scalar put at one position: exact zeros elsewhere (an inf
    # times 0 would be NaN)
    parts = [_kernel_index(k) for k in key]
    if shapes[0] or len(key) != len(shape) or any(p is None or ":" in p for p in parts):
        return None
    at = int(np.ravel_multi_index(tuple(int(k) % d for k, d in zip(key, shape)), shape))
    n, full = math.prod(shape), f"np.full({math.prod(shape)}, {{0}})"
    return f"np.where(np.arange({n}) == {at}, {full}, np.zeros_like({full})).reshape({tuple(shape)!r})"


getitem_p = define(
    Primitive("getitem", lambda x, key: x[key]),
    linear(lambda g, x, key: _slice_transpose(g, shape_source(x), key)),
    moved_deps(0),
    # Batched: the batch axis goes first and the key gets a leading `:`.
    batch=lambda vals, dims, key: (
        bind(getitem_p, move_to_front(vals[0], dims[0]), key=(slice(None),) + key), 0),
    lower=lambda jax, x, key: jax.numpy.asarray(x)[key], passes=Hints(moves=True),
    curvature=LINEAR, kernel=_getitem_kernel)
# getitem_transpose(g) puts g into zeros at `key`: the transpose of slicing.
getitem_transpose_p = define(
    Primitive("getitem_transpose", _scatter_into_zeros),
    linear(lambda g, x, key, shape: bind(getitem_p, g, key=key)),
    batch=lambda vals, dims, key, shape: (
        bind(getitem_transpose_p, move_to_front(vals[0], dims[0]), key=(slice(None),) + key,
             shape=(shape_of(vals[0])[dims[0]],) + shape), 0),
    sparsity=scatter_deps(lambda numbered, vals, key, shape: numbered[key]),
    lower=_getitem_transpose_lower, passes=Hints(moves=True), curvature=LINEAR,
    kernel=_scatter_kernel)


# The same with the zeros' shape read when the graph runs (NOTE(dynamic-shapes) in
# ops/structural.py): `lead` leading axes of g (a batch axis) pass through.
def _dyn_target(g: Any, sizes: Any, lead: int) -> tuple:
    return tuple(np.shape(g)[:lead]) + tuple(int(d) for d in np.asarray(sizes).reshape(-1))


def _getitem_transpose_dyn_batch(vals: tuple, dims: tuple, key: tuple, lead: int) -> tuple:
    if dims[1] is not None:
        raise ValueError("getitem_transpose_dyn: the shape argument is batched; every example "
                         "of a vmap has the same shape.")
    return bind(getitem_transpose_dyn_p, move_to_front(vals[0], dims[0]), vals[1],
                key=(slice(None),) + key, lead=lead + 1), 0


getitem_transpose_dyn_p = define(
    Primitive("getitem_transpose_dyn",
              lambda g, sizes, key, lead: _scatter_into_zeros(g, key, _dyn_target(g, sizes, lead))),
    per_input(jvp=(lambda t, ans, g, sizes, key, lead: bind(
                  getitem_transpose_dyn_p, t, sizes, key=key, lead=lead), None),
              vjp=(lambda ct, ans, g, sizes, key, lead: bind(getitem_p, ct, key=key), None),
              reads=("", "")),
    batch=_getitem_transpose_dyn_batch,
    sparsity=scatter_deps(lambda numbered, vals, key, lead: numbered[key]),
    lower=lambda jax, g, sizes, key, lead: _getitem_transpose_lower(
        jax, g, key, _dyn_target(g, sizes, lead)), curvature=LINEAR)


# ------------------------------------------------------------------ gather along one axis
def _gather_transpose_impl(g: np.ndarray, indices: np.ndarray, axis: int, shape: tuple) -> np.ndarray:
    # Repeated indices accumulate, the dense form of TensorFlow's IndexedSlices.
    out = np.zeros(shape, dtype=g.dtype)
    moved = np.moveaxis(out, axis, 0)
    gm = np.moveaxis(np.reshape(g, shape[:axis] + (np.size(indices),) + shape[axis + 1:]), axis, 0)
    flat = np.reshape(indices, -1)
    if flat.size > 1 and gm[0].size >= _WIDE_ROWS:
        # np.add.at handles one element at a time: for rows of many elements, sorting the
        # indices and summing each run of equal ones (np.add.reduceat) is faster
        # (docs/performance-notes.md, #gather-transpose).
        flat = np.where(flat < 0, flat + shape[axis], flat)  # -1 and n-1: one row, one run
        order = np.argsort(flat, kind="stable")
        ranked = flat[order]
        starts = np.flatnonzero(np.concatenate(([True], ranked[1:] != ranked[:-1])))
        moved[ranked[starts]] = np.add.reduceat(gm[order], starts, axis=0)
    else:
        np.add.at(moved, flat, gm)
    return out


_WIDE_ROWS = 16  # elements per gathered row from which the scatter sorts (above)


def _offset_indices(i: Tensor, size: int, n: int) -> Tensor:
    """Batched indices [B, ...] shifted by b * n, to index a [B * n, ...] flattening."""
    offsets = (np.arange(size) * n).astype(i._value.dtype)
    return bind(add_p, i, Tensor(offsets.reshape((size,) + (1,) * (len(shape_of(i)) - 1))))


def _gather_batch(vals: tuple, dims: tuple, axis: int) -> tuple:
    (p, i), (dp, di) = vals, dims
    if di is None:
        return bind(gather_p, move_to_front(p, dp), i, axis=axis + 1), 0
    if dp is None:  # np.take puts the indices' axes, batch included, at `axis`
        return bind(gather_p, p, i, axis=axis), axis + di
    # Both batched: gather from the [B * n, ...] flattening with offset indices.
    p, i = move_to_front(p, dp), move_to_front(i, di)
    size, n = shape_of(p)[0], shape_of(p)[axis + 1]
    rank = len(shape_of(p))
    lead = (0, axis + 1) + tuple(a for a in range(1, rank) if a != axis + 1)
    flat = bind(reshape_p, bind(transpose_p, p, perm=lead),
                shape=(size * n,) + tuple(shape_of(p)[a] for a in lead[2:]))
    out = bind(gather_p, flat, _offset_indices(i, size, n), axis=0)  # [B, *I, *pre, *post]
    ni = len(shape_of(i)) - 1
    perm = (0,) + tuple(range(1 + ni, 1 + ni + axis)) + tuple(range(1, 1 + ni)) + \
        tuple(range(1 + ni + axis, len(shape_of(out))))
    return bind(transpose_p, out, perm=perm), 0


def _gather_transpose_batch(vals: tuple, dims: tuple, axis: int, shape: tuple) -> tuple:
    (g, i), (dg, di) = vals, dims
    size = dims.size
    if di is None:
        return bind(gather_transpose_p, move_to_front(g, dg), i, axis=axis + 1,
                    shape=(size,) + shape), 0
    i = move_to_front(i, di)
    if dg is None:
        g = bind(broadcast_to_p, bind(reshape_p, g, shape=(1,) + shape_of(g)),
                 shape=(size,) + shape_of(g))
    g = move_to_front(g, dg)
    # g is [B, *pre, *I, *post]; scatter from its [B * |I|, *pre, *post] flattening.
    ni, n = len(shape_of(i)) - 1, shape[axis]
    rank = len(shape_of(g))
    perm = (0,) + tuple(range(1 + axis, 1 + axis + ni)) + tuple(range(1, 1 + axis)) + \
        tuple(range(1 + axis + ni, rank))
    gt = bind(transpose_p, g, perm=perm)
    rest = shape[:axis] + shape[axis + 1:]
    m = math.prod(shape_of(i)[1:])
    gflat = bind(reshape_p, gt, shape=(size * m,) + rest)
    idx = bind(reshape_p, _offset_indices(i, size, n), shape=(size * m,))
    out = bind(gather_transpose_p, gflat, idx, axis=0, shape=(size * n,) + rest)
    out = bind(reshape_p, out, shape=(size, n) + rest)
    back = (0,) + tuple(range(2, 2 + axis)) + (1,) + tuple(range(2 + axis, len(rest) + 2))
    return bind(transpose_p, out, perm=back), 0


def _wrapped(jax: Any, indices: Any, n: int) -> Any:
    """Negative indices counted from the end, as np.take and NumPy's assignment do; below
    -n, n (out of range: JAX would wrap it again)."""
    where = jax.numpy.where
    indices = jax.numpy.asarray(indices)
    indices = where(indices < 0, indices + n, indices)
    return where(indices < 0, n, indices)


# Out of range (where the impl raises; check_indices guards the public ops): "fill" gives
# NaN (or the dtype's fill value) for a gathered row, "drop" skips a scattered one.
def _gather_lower(jax: Any, params: Any, indices: Any, axis: int) -> Any:
    params = jax.numpy.asarray(params)
    return jax.numpy.take(params, _wrapped(jax, indices, params.shape[axis]), axis=axis,
                          mode="fill")


def _gather_transpose_lower(jax: Any, g: Any, indices: Any, axis: int, shape: tuple) -> Any:
    jnp = jax.numpy
    flat = _wrapped(jax, jnp.reshape(indices, -1), shape[axis])
    gm = jnp.reshape(g, shape[:axis] + (flat.size,) + shape[axis + 1:])
    out = jnp.zeros(shape, jnp.result_type(g))
    return out.at[(slice(None),) * axis + (flat,)].add(gm, mode="drop")  # repeats accumulate


gather_p = define(
    Primitive("gather", lambda params, indices, axis: np.take(params, indices, axis=axis)),
    per_input(jvp=(lambda t, ans, p, i, axis: bind(gather_p, t, i, axis=axis), None),
              vjp=(lambda g, ans, p, i, axis: bind(gather_transpose_p, g, i, axis=axis,
                                                   shape=shape_of(p)), None),
              reads=("i", "")),
    moved_deps(0),  # indices that change with the input: every output on all of params
    batch=_gather_batch, lower=_gather_lower, curvature=LINEAR)
gather_transpose_p = define(
    Primitive("gather_transpose", _gather_transpose_impl),
    per_input(jvp=(lambda t, ans, g, i, axis, shape: bind(
                  gather_transpose_p, t, i, axis=axis, shape=shape), None),
              vjp=(lambda c, ans, g, i, axis, shape: bind(gather_p, c, i, axis=axis), None),
              reads=("i", "")),
    batch=_gather_transpose_batch,
    sparsity=scatter_deps(lambda numbered, vals, axis, shape: np.take(
        numbered, vals[1], axis=axis)),
    lower=_gather_transpose_lower, curvature=LINEAR)


# ------------------------------------------------------------------ scatter_update
# tensor_scatter_nd_update on the flattened form: rows `indices` of x replaced by those of
# u. With repeated indices the last row written wins (NumPy's assignment; TensorFlow's
# order is unspecified, its CPU kernel also keeps the last). Linear in (x, u) together:
# d out = scatter_update(dx, i, du). Reverse, as TensorFlow: x gets g with the updated
# rows zeroed, u gets g's rows at i (every repeated row, winner or not).
def _scatter_update_impl(x: np.ndarray, indices: np.ndarray, u: np.ndarray) -> np.ndarray:
    out = x.copy()
    out[indices] = u
    return out


def _zeros(shape: tuple, dtype: np.dtype) -> Tensor:
    return full_of(shape, 0, dtype)


def _batch_front(v: Tensor, d: int | None, size: int) -> Tensor:
    if d is None:
        return bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape_of(v)),
                    shape=(size,) + shape_of(v))
    return move_to_front(v, d)


def _scatter_update_batch(vals: tuple, dims: tuple) -> tuple:
    # Every example's rows of one [B * n, ...] flattening, its indices offset by b * n.
    size = dims.size
    x, i, u = (_batch_front(v, d, size) for v, d in zip(vals, dims, strict=True))
    n, m, rest = shape_of(x)[1], shape_of(i)[1], shape_of(x)[2:]
    out = bind(scatter_update_p, bind(reshape_p, x, shape=(size * n,) + rest),
               bind(reshape_p, _offset_indices(i, size, n), shape=(size * m,)),
               bind(reshape_p, u, shape=(size * m,) + rest))
    return bind(reshape_p, out, shape=(size, n) + rest), 0


def _scatter_update_lower(jax: Any, x: Any, indices: Any, u: Any) -> Any:
    # XLA leaves the order of a scatter's repeated indices unspecified: keep the impl's
    # last-wins by sending every update but the last one to each row out of range (dropped).
    jnp = jax.numpy
    x = jnp.asarray(x)
    n = x.shape[0]
    winner = _last_writes_lower(jax, indices, n)
    return x.at[jnp.where(winner, _wrapped(jax, indices, n), n)].set(u, mode="drop")


# ------------------------------------------------------------------ last_writes
# Which of a scatter's updates land: NumPy's assignment keeps the last of several updates
# to one row (and the lowering does too), so the others' cotangents are 0, not the row's.
def _last_writes_impl(indices: np.ndarray, n: int) -> np.ndarray:
    i = np.where(indices < 0, indices + n, indices)  # negative rows count from the end
    order = np.arange(i.shape[0])
    last = np.full(n, -1, order.dtype)
    last[i] = order  # repeated rows: the last assignment stays, as the impl's
    return last[i] == order


def _last_writes_batch(vals: tuple, dims: tuple, n: int) -> tuple:
    # Every example's indices into one [B * n] flattening: the rows of different
    # examples never collide.
    size = dims.size
    i = move_to_front(vals[0], dims[0])
    i = bind(floormod_p, i, Tensor(np.array(n, dtype_of(i))))  # negative rows from the end
    m = shape_of(i)[1]
    flat = bind(last_writes_p, bind(reshape_p, _offset_indices(i, size, n), shape=(size * m,)),
                n=size * n)
    return bind(reshape_p, flat, shape=(size, m)), 0


def _last_writes_lower(jax: Any, indices: Any, n: int) -> Any:
    jnp = jax.numpy
    i = _wrapped(jax, indices, n)
    order = jnp.arange(i.shape[0])
    last = jnp.full((n,), -1, order.dtype).at[i].max(order, mode="drop")
    return last.at[i].get(mode="fill", fill_value=-1) == order


last_writes_p = define(Primitive("last_writes", _last_writes_impl, effects=(NO_DERIVATIVE,)),
                       batch=_last_writes_batch, lower=_last_writes_lower)


def _landed(g: Tensor, i: Tensor, u: Tensor, n: int) -> Tensor:
    """The rows of `g` the updates `u` were written to, 0 for an update a later one with
    the same row overwrote."""
    rows = bind(gather_p, g, i, axis=0)
    hit = bind(cast_p, bind(last_writes_p, i, n=n), dtype=dtype_of(g))
    return bind(multiply_p, rows, bind(reshape_p, hit, shape=shape_of(hit) + (1,) * (
        len(shape_of(u)) - 1)))


scatter_update_p = define(
    Primitive("scatter_update", _scatter_update_impl),
    per_input(jvp=(lambda t, ans, x, i, u: bind(scatter_update_p, t, i,
                                                _zeros(shape_of(u), dtype_of(t))),
                   None,
                   lambda t, ans, x, i, u: bind(scatter_update_p,
                                                _zeros(shape_of(x), dtype_of(t)), i, t)),
              vjp=(lambda g, ans, x, i, u: bind(scatter_update_p, g, i,
                                                _zeros(shape_of(u), dtype_of(g))),
                   None,
                   lambda g, ans, x, i, u: _landed(g, i, u, shape_source(x)[0])),
              reads=("i", "", "i")),
    moved_deps(0, 2), batch=_scatter_update_batch, lower=_scatter_update_lower, curvature=LINEAR)


# ------------------------------------------------------------------ check_indices
# A primitive so the check runs where the indices are used: a Python-level check sees
# only vmap's example-0 stand-ins and is skipped when a traced graph is replayed, while
# an out-of-range component of a gather_nd index would still land inside the flattened
# params and give a wrong number. Returns the indices unchanged; carries no derivative.
def _check_indices_impl(indices: np.ndarray, limits: tuple, rows: bool, op: str,
                        params_shape: tuple, target: str = "params") -> np.ndarray:
    bad = (indices < 0) | (indices >= np.asarray(limits, np.int64))
    if bad.any():
        pos = tuple(np.argwhere(bad)[0].tolist())
        if rows:  # the last axis holds one index tuple
            pos = pos[:-1]
        # A scalar index broadcasts against the limits: read it at the flagged position.
        value = np.broadcast_to(np.asarray(indices), bad.shape)[pos].tolist()
        where = list(pos) if pos and np.ndim(indices) else ""
        ranges = " and ".join(f"[0, {n})" for n in limits)
        raise InvalidArgumentError(
            f"{op}: `indices`{where} = {value} is out of bounds for {target} of shape "
            f"{params_shape}: {'the entries of an index tuple' if rows else 'indices'} must lie "
            f"in {ranges}.")
    return indices


check_indices_p = define(
    Primitive("check_indices", _check_indices_impl, effects=(NO_DERIVATIVE,)),
    # Batched: the batch axis goes first, so the index tuples stay on the last axis.
    batch=lambda vals, dims, **params: (
        bind(check_indices_p, move_to_front(vals[0], dims[0]), **params), 0),
    # Compiled: the indices unchanged, and a check that reruns the call on NumPy (which
    # raises the impl's error) when one is out of range: XLA cannot raise.
    lower=Lowering(lambda jax, indices, **params: indices,
                   check=lambda jax, indices, limits, **params: jax.numpy.all(
                       (indices >= 0) & (indices < jax.numpy.asarray(limits, indices.dtype)))))


def _index_dtype(t: Tensor) -> Tensor:
    # Flat offsets can pass 2**31 on large params: compute them in int64.
    return t if t._value.dtype == np.int64 else bind(cast_p, t, dtype=np.dtype(np.int64))


def _prod(dims: Sequence[int]) -> int:
    return math.prod(dims)


def _reshaped(x: Tensor, shape: tuple) -> Tensor:
    return x if shape_of(x) == shape else bind(reshape_p, x, shape=shape)


def _transposed(x: Tensor, perm: tuple) -> Tensor:
    return x if perm == tuple(_brange(len(perm))) else bind(transpose_p, x, perm=perm)


# ================================================================== public ops
def _normalize_key(key: Any) -> tuple:
    """A hashable basic-indexing key: ints, slices, None (newaxis) and Ellipsis."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(k if k is None or k is Ellipsis else int(k))
        elif isinstance(k, slice):
            parts = [None if v is None else _index_int(v) for v in (k.start, k.stop, k.step)]
            if parts[2] == 0:
                raise InvalidArgumentError(f"getitem: slice step cannot be zero; got {k!r}.")
            out.append(slice(*parts))
        elif isinstance(k, TensorBase) and np.ndim(k._value) == 0 and k._value.dtype.kind in "iu":
            out.append(int(k))  # a value read: tracing guards it (NOTE(value-reads))
        else:
            raise TypeError(f"getitem: only integers, slices (`:`), ellipsis (`...`), tf.newaxis "
                            f"and scalar integer tensors are valid indices; got {k!r}. Use "
                            "tf.gather for index lists.")
    return tuple(out)


def _index_int(v: Any) -> int:
    if isinstance(v, TensorBase):
        return int(v)  # a value read: tracing guards it
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)) and not (
            isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "iu"):
        raise TypeError(f"getitem: slice bounds must be integers; got {v!r}.")
    return int(v)


def getitem(x: Any, key: Any) -> Tensor:
    """`x[key]` with NumPy's basic indexing (ints, slices incl. negative steps, newaxis, ...)."""
    x = as_tensor(x, "getitem", "x")
    key = _normalize_key(key)
    try:
        np.broadcast_to(np.empty((), dtype=np.bool_), shape_of(x))[key]
    except IndexError as e:
        raise IndexError(f"getitem: index {key} is invalid for a tensor of shape "
                         f"{shape_of(x)}: {e}") from None
    return bind(getitem_p, x, key=key)


# ================================================================== gathers
def gather_nd(params: Any, indices: Any, batch_dims: int = 0, name: str | None = None) -> Tensor:
    """Gather slices of `params` at index tuples: the last axis of `indices` (length k)
    indexes the first k axes of `params` after its `batch_dims` leading batch axes.

    The result has shape ``indices.shape[:-1] + params.shape[batch_dims + k:]``.
    Out-of-range indices raise (as TensorFlow on CPU). The gradient is dense, and
    repeated indices accumulate. A composite: the index tuples become offsets into
    the params flattened over the indexed axes, then one `gather`.

    Example:
        >>> import tapeflow as tf
        >>> tf.gather_nd(tf.constant([[1., 2.], [3., 4.]]), [[1, 0], [0, 1]]).numpy()
        array([3., 2.], dtype=float32)
    """
    p = as_tensor(params, "gather_nd", "params")
    i = int_tensor(indices, "gather_nd", "indices")
    pshape, ishape = shape_of(p), shape_of(i)
    if not ishape:
        raise InvalidArgumentError("gather_nd: `indices` must have rank >= 1 (its last axis "
                                   "holds the index tuples); got a scalar.")
    b = int_arg(batch_dims, "gather_nd", "batch_dims")
    if not 0 <= b < len(ishape) or b > len(pshape) or pshape[:b] != ishape[:b]:
        raise InvalidArgumentError(
            f"gather_nd: `batch_dims`={batch_dims} must lie in [0, rank(indices)) and the "
            f"batch axes must match: params {pshape}, indices {ishape}.")
    k = ishape[-1]
    if k > len(pshape) - b:
        raise InvalidArgumentError(f"gather_nd: index tuples of length {k} (indices {ishape}) "
                                   f"exceed the {len(pshape) - b} non-batch axes of params "
                                   f"{pshape}.")
    inner, rest = pshape[b:b + k], pshape[b + k:]
    i = bind(check_indices_p, i, limits=inner, rows=True, op="gather_nd", params_shape=pshape)
    strides = np.array([_prod(inner[j + 1:]) for j in _brange(k)], np.int64)
    flat_index = bind(reduce_sum_p, bind(multiply_p, _index_dtype(i), Tensor(strides)),
                      axis=(len(ishape) - 1,), keepdims=False)
    if b:
        offsets = np.arange(_prod(pshape[:b]), dtype=np.int64) * _prod(inner)
        shaped = offsets.reshape(pshape[:b] + (1,) * (len(ishape) - 1 - b))
        flat_index = bind(add_p, flat_index, Tensor(shaped))
    flat = _reshaped(p, (_prod(pshape[:b + k]),) + rest)
    return bind(gather_p, flat, flat_index, axis=0)


def gather(params: Any, indices: Any, validate_indices: Any = None, axis: Any = None,
           batch_dims: int = 0, name: str | None = None) -> Tensor:
    """Take slices of `params` along `axis` at integer `indices`; with `batch_dims`
    leading axes shared by `params` and `indices`, each batch entry uses its own indices.

    `axis` defaults to `batch_dims`; negative `batch_dims` counts from the rank of
    `indices`. The result has shape ``params.shape[:axis] + indices.shape[batch_dims:]
    + params.shape[axis + 1:]``. The gradient is dense and repeated indices accumulate.
    Out-of-range indices raise, also for each example under vmap and on each replay of
    a traced function (negative indices never wrap around). With batch_dims > 0 it is
    a composite: the batch and gathered axes are flattened
    together and the indices offset per batch entry, then one `gather`.

    Example:
        >>> import tapeflow as tf
        >>> p = tf.constant([[10., 20., 30.], [40., 50., 60.]])
        >>> tf.gather(p, [[2, 0], [1, 1]], batch_dims=1).numpy()
        array([[30., 10.],
               [50., 50.]], dtype=float32)
    """
    p = as_tensor(params, "gather", "params")
    i = int_tensor(indices, "gather", "indices")
    pshape, ishape = shape_of(p), shape_of(i)
    b = int_arg(batch_dims, "gather", "batch_dims")
    b = b + len(ishape) if b < 0 else b
    ax = b if axis is None else int_arg(axis, "gather", "axis")
    ax = ax + len(pshape) if ax < 0 else ax
    if not 0 <= b <= len(ishape) or not b <= ax < len(pshape) or pshape[:b] != ishape[:b]:
        raise InvalidArgumentError(
            f"gather: need 0 <= batch_dims <= axis < rank(params) and batch_dims <= "
            f"rank(indices) with matching batch axes; got batch_dims={batch_dims}, axis={axis}, "
            f"params {pshape}, indices {ishape}.")
    n = pshape[ax]
    i = bind(check_indices_p, i, limits=(n,), rows=False, op="gather", params_shape=pshape)
    if b == 0:
        return bind(gather_p, p, i, axis=ax)
    batch, pre, post = pshape[:b], pshape[b:ax], pshape[ax + 1:]
    # params as [batch..., n, pre..., post...] flattened to [prod(batch) * n, pre..., post...]
    lead = tuple(_brange(b)) + (ax,) + tuple(_brange(b, ax)) + tuple(_brange(ax + 1, len(pshape)))
    flat = _reshaped(_transposed(p, lead), (_prod(batch) * n,) + pre + post)
    offsets = np.arange(_prod(batch), dtype=np.int64) * n
    offsets = offsets.reshape(batch + (1,) * (len(ishape) - b))
    out = bind(gather_p, flat, bind(add_p, _index_dtype(i), Tensor(offsets)), axis=0)
    # out is [batch..., I..., pre..., post...]; TensorFlow puts pre before I.
    ni, npre = len(ishape) - b, len(pre)
    perm = tuple(_brange(b)) + tuple(_brange(b + ni, b + ni + npre)) + \
        tuple(_brange(b, b + ni)) + tuple(_brange(b + ni + npre, len(shape_of(out))))
    return _transposed(out, perm)


# ================================================================== scatters
def _flat_index(i: Tensor, inner: tuple, op: str, shape: tuple, target: str) -> Tensor:
    """Index tuples (the last axis of `i`) as offsets into the first len(inner) axes of
    a tensor of `shape` flattened together, bounds checked at every evaluation."""
    ishape = shape_of(i)
    i = bind(check_indices_p, i, limits=inner, rows=True, op=op, params_shape=shape,
             target=target)
    strides = np.array([_prod(inner[j + 1:]) for j in _brange(len(inner))], np.int64)
    flat = bind(reduce_sum_p, bind(multiply_p, _index_dtype(i), Tensor(strides)),
                axis=(len(ishape) - 1,), keepdims=False)
    return _reshaped(flat, (_prod(ishape[:-1]),))


def _scatter_args(shape: tuple, indices: Any, updates: Any, dtype: Any, op: str,
                  target: str) -> tuple[Tensor, Tensor, tuple]:
    """The flat indices [M], the updates as [M, *rest] and the flattened target shape
    [N, *rest] of a scatter into a tensor of `shape`, with TensorFlow's checks."""
    i = int_tensor(indices, op, "indices")
    ishape = shape_of(i)
    if not ishape:
        raise InvalidArgumentError(f"{op}: `indices` must have rank >= 1 (its last axis holds "
                                   "the index tuples); got a scalar.")
    k = ishape[-1]
    if k > len(shape):
        raise InvalidArgumentError(f"{op}: index tuples of length {k} (indices {ishape}) exceed "
                                   f"the rank of {target} {shape}.")
    if isinstance(updates, TensorBase):
        u = as_tensor(updates, op, "updates")
        if dtype is not None and u._value.dtype != dtype:
            raise InvalidArgumentError(
                f"{op}: `updates` has dtype {_dt.from_numpy(u._value.dtype).name}; expected "
                f"{_dt.from_numpy(dtype).name}, the dtype of `{target}`.")
    else:
        u = as_tensor(updates, op, "updates") if dtype is None else \
            convert_like(updates, Tensor(np.zeros((), dtype)), op, "updates")
    want = ishape[:-1] + shape[k:]
    if shape_of(u) != want:
        raise InvalidArgumentError(
            f"{op}: `updates` has shape {shape_of(u)}; expected indices.shape[:-1] + "
            f"{target}.shape[{k}:] = {want} (indices {ishape}, {target} {shape}).")
    inner, rest = shape[:k], shape[k:]
    m = _prod(ishape[:-1])
    return (_flat_index(i, inner, op, shape, target), _reshaped(u, (m,) + rest),
            (_prod(inner),) + rest)


def tensor_scatter_nd_update(tensor: Any, indices: Any, updates: Any,
                             name: str | None = None) -> Tensor:
    """A copy of `tensor` with the slices at the index tuples of `indices` (its last
    axis) replaced by `updates`, of shape ``indices.shape[:-1] + tensor.shape[k:]``.

    Out-of-range indices raise. With a repeated index the last update wins (TensorFlow
    leaves the order unspecified). The gradient of `tensor` is zero at the updated
    positions; that of `updates` is the cotangent gathered at `indices`, zero for an
    update a later one with the same index overwrote: the derivative of the value
    computed, in every mode (TensorFlow, whose order is unspecified, gives every repeated
    update the cotangent).

    Example:
        >>> import tapeflow as tf
        >>> tf.tensor_scatter_nd_update(tf.zeros([3, 2]), [[0], [2]], [[1., 2.], [3., 4.]]).numpy()
        array([[1., 2.],
               [0., 0.],
               [3., 4.]], dtype=float32)
    """
    op = "tensor_scatter_nd_update"
    x = as_tensor(tensor, op, "tensor")
    shape = shape_of(x)
    idx, u, flat = _scatter_args(shape, indices, updates, x._value.dtype, op, "tensor")
    return _reshaped(bind(scatter_update_p, _reshaped(x, flat), idx, u), shape)


def tensor_scatter_nd_add(tensor: Any, indices: Any, updates: Any,
                          name: str | None = None) -> Tensor:
    """`tensor` plus `updates` added at the index tuples of `indices` (its last axis);
    repeated indices accumulate. `updates` has shape
    ``indices.shape[:-1] + tensor.shape[k:]``; out-of-range indices raise. A composite:
    `tensor` plus the scatter-add that is gather's transpose, so the gradient of
    `tensor` is the cotangent and that of `updates` the cotangent gathered at `indices`.

    Example:
        >>> import tapeflow as tf
        >>> tf.tensor_scatter_nd_add(tf.ones([4]), [[1], [3], [1]], [1., 2., 3.]).numpy()
        array([1., 5., 1., 3.], dtype=float32)
    """
    op = "tensor_scatter_nd_add"
    x = as_tensor(tensor, op, "tensor")
    shape = shape_of(x)
    idx, u, flat = _scatter_args(shape, indices, updates, x._value.dtype, op, "tensor")
    added = bind(gather_transpose_p, u, idx, axis=0, shape=flat)
    return bind(add_p, x, _reshaped(added, shape))


def scatter_nd(indices: Any, updates: Any, shape: Any, name: str | None = None) -> Tensor:
    """Zeros of `shape` with `updates` added at the index tuples of `indices` (its last
    axis); repeated indices accumulate, as TensorFlow. A composite: gather's transpose,
    so the gradient of `updates` is the cotangent gathered at `indices`.

    Example:
        >>> import tapeflow as tf
        >>> tf.scatter_nd([[1], [3], [1]], [1., 2., 3.], [5]).numpy()
        array([0., 4., 0., 2., 0.], dtype=float32)
    """
    op = "scatter_nd"
    dims = static_shape(shape, op)
    idx, u, flat = _scatter_args(dims, indices, updates, None, op, "output")
    return _reshaped(bind(gather_transpose_p, u, idx, axis=0, shape=flat), dims)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level);
# getitem is `x[key]`, reached through Tensor.__getitem__.
def embedding_lookup(params: Any, ids: Any, max_norm: Any = None, name: str | None = None) -> Tensor:
    """tf.nn.embedding_lookup: the rows of `params` at `ids` (a gather along axis 0), whose
    gradient with respect to `params` adds each id's cotangent into its row.

    Example:
        >>> import tapeflow as tf
        >>> table = tf.constant([[0.0, 1.0], [2.0, 3.0], [4.0, 5.0]])
        >>> tf.nn.embedding_lookup(table, [[2, 0]]).numpy()
        array([[[4., 5.],
                [0., 1.]]], dtype=float32)
    """
    if isinstance(params, (list, tuple)):
        if len(params) != 1:
            raise NotImplementedError("embedding_lookup: `params` split into several tensors "
                                      "(a partitioned table) is not supported; pass one tensor.")
        params = params[0]
    if max_norm is not None:
        raise NotImplementedError("embedding_lookup: `max_norm` is not supported by tapeflow.")
    return gather(params, ids)


EXPORTS = {"getitem": "", "gather": "tf", "gather_nd": "tf", "tensor_scatter_nd_update": "tf",
           "tensor_scatter_nd_add": "tf", "scatter_nd": "tf", "embedding_lookup": "nn"}
