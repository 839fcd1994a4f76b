"""Shape and indexing ops beyond shape.py: split, unstack, tile, pad, gather_nd, gather
with batch_dims, reverse, one_hot (the shape queries and creators: array_create.py).

Most are composites of shape.py's primitives: exact, cheap, and they need no rules
of their own. Two primitives are new, each saying why in its block: `split` (the
backward pass of a split into n pieces costs one concat instead of n full-size
scatters) and `check_indices` (bounds checks that run wherever the gather runs:
on every example under vmap and on every replay, never a silently wrong index).
"""

from __future__ import annotations

import builtins
from typing import Any, Sequence

import numpy as np

from .. import dtypes as _dt
from ..core import Primitive, Zero, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, _TensorLike, convert_to_tensor
from ._rules import as_tensor, binary_args, instantiate, move_to_front, normalize_axis, shape_of
from .array_create import (_int, _ints, eye, fill, linspace, range, rank, shape,  # noqa: F401
                           size)
from .elementwise import add_p, cast_p, equal_p, multiply_p, select_p
from .reduce import reduce_sum_p
from .shape import (broadcast_to_p, concat_p, expand_dims, gather_p, getitem_p,
                    getitem_transpose_p, reshape, reshape_p, stop_gradient, transpose)

_brange = builtins.range  # `range` here is TensorFlow's, re-exported from array_create

# The group's public names; shape, size, rank, fill, eye, range and linspace live in
# array_create.py (this module would pass 500 lines) and are re-exported from here.
EXPORTS: dict[str, list[str]] = {
    "top": ["unstack", "split", "tile", "pad", "gather_nd", "gather", "reverse", "one_hot",
            "shape", "size", "rank", "fill", "eye", "range", "linspace"],
    "math": [],
    "linalg": ["eye"],
    "nn": [],
}


# ------------------------------------------------------------------ split (multiple results)
# A primitive for speed: as a composite of getitem, each piece's VJP scatters into a
# zeros array of the whole input, O(n * size) for n pieces (unstack of a long axis);
# split's VJP is one concat of the pieces' cotangents, O(size).
def _split_impl(x: np.ndarray, sizes: tuple, axis: int) -> list:
    return np.split(x, np.cumsum(sizes[:-1]).tolist(), axis=axis)


def _split_jvp(primals: tuple, tangents: tuple, outs: tuple, sizes: tuple, axis: int) -> tuple:
    # split is linear: the tangents of the pieces are the pieces of the tangent
    (t,) = tangents
    if type(t) is Zero:
        return tuple(Zero.like(o) for o in outs)
    return tuple(bind(split_p, t, sizes=sizes, axis=axis))


def _split_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, sizes: tuple,
               axis: int) -> tuple:
    # transpose of split: concatenate the pieces' cotangents (unused pieces give zeros)
    if not needs[0]:
        return (None,)
    return (bind(concat_p, *[instantiate(c) for c in cts], axis=axis),)


def _split_batch(vals: tuple, dims: tuple, sizes: tuple, axis: int) -> tuple:
    # The batch axis stays where it is; the split axis shifts past it.
    d = dims[0]
    pieces = bind(split_p, vals[0], sizes=sizes, axis=axis + (d <= axis))
    return tuple(pieces), (d,) * len(sizes)


split_p = Primitive("split", _split_impl, multiple_results=True)
split_p.jvp = _split_jvp
split_p.vjp = _split_vjp
split_p.batch = _split_batch


# ------------------------------------------------------------------ check_indices
# A primitive so the check runs where the indices are used: a Python-level check sees
# only vmap's example-0 stand-ins and is skipped when a traced graph is replayed, while
# an out-of-range component of a gather_nd index would still land inside the flattened
# params and give a wrong number. Returns the indices unchanged; carries no derivative.
def _check_indices_impl(indices: np.ndarray, limits: tuple, rows: bool, op: str,
                        params_shape: tuple) -> np.ndarray:
    bad = (indices < 0) | (indices >= np.asarray(limits, np.int64))
    if bad.any():
        pos = tuple(np.argwhere(bad)[0].tolist())
        if rows:  # the last axis holds one index tuple
            pos = pos[:-1]
        value = np.asarray(indices[pos]).tolist()
        ranges = " and ".join(f"[0, {n})" for n in limits)
        raise InvalidArgumentError(
            f"{op}: `indices`{list(pos)} = {value} is out of bounds for params of shape "
            f"{params_shape}: {'the entries of an index tuple' if rows else 'indices'} must lie "
            f"in {ranges}.")
    return indices


check_indices_p = Primitive("check_indices", _check_indices_impl, differentiable=False)
# Batched: the batch axis goes first, so the index tuples stay on the last axis.
check_indices_p.batch = lambda vals, dims, **params: (
    bind(check_indices_p, move_to_front(vals[0], dims[0]), **params), 0)


# ================================================================== argument helpers
def _int_tensor(x: Any, op: str, arg: str) -> Tensor:
    t = as_tensor(x, op, arg)
    if t._value.dtype.kind not in "iu":
        raise TypeError(f"{op}: `{arg}` must be an integer tensor; got dtype "
                        f"{_dt.from_numpy(t._value.dtype).name}.")
    return t


def _index_dtype(t: Tensor) -> Tensor:
    # Flat offsets can pass 2**31 on large params: compute them in int64.
    return t if t._value.dtype == np.int64 else bind(cast_p, t, dtype=np.dtype(np.int64))


def _prod(dims: Sequence[int]) -> int:
    return int(np.prod(dims, dtype=np.int64))


# ================================================================== split, unstack, tile
def split(value: Any, num_or_size_splits: Any, axis: Any = 0, num: int | None = None,
          name: str | None = "split") -> list[Tensor]:
    """Split `value` along `axis` into equal pieces (an int) or pieces of given sizes (a
    list, which may hold one -1 for the rest); the sizes must add up to the axis length.

    Example:
        >>> import tapeflow as tf
        >>> a, b = tf.split(tf.constant([1., 2., 3., 4., 5.]), [2, -1])
        >>> b.numpy()
        array([3., 4., 5.], dtype=float32)
    """
    x = as_tensor(value, "split", "value")
    rank = np.ndim(x._value)
    if rank == 0:
        raise InvalidArgumentError("split: `value` is a scalar; it needs at least one axis.")
    (ax,) = normalize_axis(_int(axis, "split", "axis"), rank, "split")
    n = shape_of(x)[ax]
    if np.ndim(num_or_size_splits) == 0:
        k = _int(num_or_size_splits, "split", "num_or_size_splits")
        if k <= 0 or n % k:
            raise InvalidArgumentError(f"split: `num_or_size_splits`={k} must be a positive "
                                       f"divisor of the length {n} of axis {ax}.")
        sizes = [n // k] * k
    else:
        given = _ints(num_or_size_splits, "split", "num_or_size_splits")
        sizes = list(given)
        if not sizes or sizes.count(-1) > 1 or min(sizes) < -1:
            raise InvalidArgumentError(f"split: `num_or_size_splits`={sizes} must be non-negative "
                                       "sizes, at most one of them -1, and not empty.")
        if -1 in sizes:
            sizes[sizes.index(-1)] = n - (sum(sizes) + 1)
        if sum(sizes) != n or min(sizes) < 0:
            raise InvalidArgumentError(f"split: `num_or_size_splits`={given} do not add up to "
                                       f"the length {n} of axis {ax} of shape {shape_of(x)}.")
    if num is not None and int(num) != len(sizes):
        raise InvalidArgumentError(f"split: `num`={num} does not match the {len(sizes)} pieces.")
    return bind(split_p, x, sizes=tuple(sizes), axis=ax)


def unstack(value: Any, num: int | None = None, axis: int = 0,
            name: str | None = "unstack") -> list[Tensor]:
    """The slices of `value` along `axis`, each without that axis (inverse of `stack`).

    Example:
        >>> import tapeflow as tf
        >>> [t.numpy().tolist() for t in tf.unstack(tf.constant([[1., 2.], [3., 4.]]), axis=1)]
        [[1.0, 3.0], [2.0, 4.0]]
    """
    x = as_tensor(value, "unstack", "value")
    shape = shape_of(x)
    if not shape:
        raise InvalidArgumentError("unstack: `value` is a scalar; it needs at least one axis.")
    (ax,) = normalize_axis(_int(axis, "unstack", "axis"), len(shape), "unstack")
    n = shape[ax]
    if num is not None and int(num) != n:
        raise InvalidArgumentError(f"unstack: `num`={num} but axis {ax} of shape {shape} has "
                                   f"length {n}.")
    if n == 0:
        return []
    rest = shape[:ax] + shape[ax + 1:]
    return [bind(reshape_p, p, shape=rest) for p in bind(split_p, x, sizes=(1,) * n, axis=ax)]


def tile(input: Any, multiples: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Repeat `input` `multiples[i]` times along each axis i.

    A composite: a length-1 axis is put before each repeated axis and broadcast to the
    multiple, then merged into it (exact, and broadcast_to's gradient sums the copies).

    Example:
        >>> import tapeflow as tf
        >>> tf.tile(tf.constant([[1, 2]]), [2, 2]).numpy()
        array([[1, 2, 1, 2],
               [1, 2, 1, 2]], dtype=int32)
    """
    x = as_tensor(input, "tile", "input")
    shape = shape_of(x)
    reps = _ints(multiples, "tile", "multiples")
    if len(reps) != len(shape) or any(m < 0 for m in reps):
        raise InvalidArgumentError(f"tile: `multiples`={reps} must hold one non-negative int per "
                                   f"axis of `input` (shape {shape}).")
    if all(m == 1 for m in reps):
        return x
    spread, target = [], []
    for d, m in zip(shape, reps, strict=True):
        spread += [d] if m == 1 else [1, d]
        target += [d] if m == 1 else [m, d]
    y = bind(reshape_p, x, shape=tuple(spread)) if tuple(spread) != shape else x
    y = bind(broadcast_to_p, y, shape=tuple(target))
    return bind(reshape_p, y, shape=tuple(d * m for d, m in zip(shape, reps)))


def reverse(tensor: Any, axis: Any, name: str | None = None) -> Tensor:
    """Reverse `tensor` along each axis in `axis` (a list of distinct axes).

    A composite: slicing with step -1 (getitem), whose transpose is exact.

    Example:
        >>> import tapeflow as tf
        >>> tf.reverse(tf.constant([[1, 2], [3, 4]]), [1]).numpy()
        array([[2, 1],
               [4, 3]], dtype=int32)
    """
    x = as_tensor(tensor, "reverse", "tensor")
    rank = np.ndim(x._value)
    axes = normalize_axis(_ints(axis, "reverse", "axis"), rank, "reverse")
    if not axes:
        return x
    key = tuple(slice(None, None, -1) if a in axes else slice(None) for a in _brange(rank))
    return bind(getitem_p, x, key=key)


# ================================================================== pad
def _reflect_indices(n: int, before: int, after: int, symmetric: bool) -> np.ndarray:
    """Source positions of a reflected axis: REFLECT skips the edge, SYMMETRIC repeats it."""
    s = 0 if symmetric else 1
    left = np.arange(before - 1 + s, s - 1, -1)
    right = np.arange(n - 1 - s, n - 1 - s - after, -1)
    return np.concatenate([left, np.arange(n), right]).astype(np.int64)


def pad(tensor: Any, paddings: Any, mode: str = "CONSTANT", constant_values: Any = 0,
        name: str | None = None) -> Tensor:
    """Pad `tensor` with `paddings[i] = [before, after]` entries on each axis i.

    `mode` (any case): "CONSTANT" fills with `constant_values`; "REFLECT" mirrors
    without repeating the edge (pads at most length - 1); "SYMMETRIC" mirrors with
    the edge (pads at most the length). As TensorFlow, no gradient flows to
    `constant_values`. Composites: CONSTANT places the input into zeros (the transpose
    of slicing) and fills the border with a select; the mirrored modes gather, whose
    gradient adds the mirrored copies back.

    Example:
        >>> import tapeflow as tf
        >>> tf.pad(tf.constant([1, 2, 3]), [[2, 1]], mode="REFLECT").numpy()
        array([3, 2, 1, 2, 3, 2], dtype=int32)
    """
    x = as_tensor(tensor, "pad", "tensor")
    shape = shape_of(x)
    pads = np.asarray(paddings)
    if not shape and pads.size == 0:
        return x  # a scalar has no axes to pad
    if pads.shape != (len(shape), 2) or pads.size and pads.dtype.kind not in "iu":
        raise InvalidArgumentError(f"pad: `paddings` must be integers of shape [{len(shape)}, 2] "
                                   f"for a tensor of shape {shape}; got {paddings!r}.")
    pads = pads.astype(np.int64).reshape(len(shape), 2)
    if (pads < 0).any():
        raise InvalidArgumentError(f"pad: `paddings` must be non-negative; got {pads.tolist()}.")
    kind = mode.upper() if isinstance(mode, str) else None
    if kind not in ("CONSTANT", "REFLECT", "SYMMETRIC"):
        raise InvalidArgumentError(f"pad: `mode`={mode!r}; expected 'CONSTANT', 'REFLECT' or "
                                   "'SYMMETRIC'.")
    if kind == "CONSTANT":
        return _pad_constant(x, pads, constant_values)
    out = x
    for ax, (before, after) in enumerate(pads.tolist()):
        if before == after == 0:
            continue
        n = shape[ax]
        limit = n if kind == "SYMMETRIC" else n - 1
        if before > limit or after > limit:
            raise InvalidArgumentError(f"pad: {kind} padding {[before, after]} of axis {ax} "
                                       f"(length {n}) must be at most {limit} on each side.")
        idx = _reflect_indices(n, before, after, kind == "SYMMETRIC")
        out = bind(gather_p, out, Tensor(idx), axis=ax)
    return out


def _pad_constant(x: Tensor, pads: np.ndarray, constant_values: Any) -> Tensor:
    shape = shape_of(x)
    if isinstance(constant_values, _TensorLike):
        c = as_tensor(constant_values, "pad", "constant_values")
        if c._value.dtype != x._value.dtype:
            raise TypeError(f"pad: `constant_values` has dtype {c.dtype.name} but `tensor` has "
                            f"dtype {x.dtype.name}.")
        c = stop_gradient(c)
    else:
        c = binary_args(x, constant_values, "pad")[1]
    if np.ndim(c._value) != 0:
        raise InvalidArgumentError(f"pad: `constant_values` must be a scalar; got shape "
                                   f"{shape_of(c)}.")
    if not pads.any():
        return x
    key = tuple(slice(b, b + d) for (b, _), d in zip(pads.tolist(), shape))
    out_shape = tuple(int(d + b + a) for d, (b, a) in zip(shape, pads.tolist()))
    out = bind(getitem_transpose_p, x, key=key, shape=out_shape)
    if isinstance(constant_values, _TensorLike) or np.any(c._value != 0):
        inside = np.zeros(out_shape, np.bool_)
        inside[key] = True
        out = bind(select_p, Tensor(inside), out, c)
    return out


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
    i = _int_tensor(indices, "gather_nd", "indices")
    pshape, ishape = shape_of(p), shape_of(i)
    if not ishape:
        raise InvalidArgumentError("gather_nd: `indices` must have rank >= 1 (its last axis "
                                   "holds the index tuples); got a scalar.")
    b = _int(batch_dims, "gather_nd", "batch_dims")
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
    flat = reshape(p, (_prod(pshape[:b + k]),) + rest)
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
    i = _int_tensor(indices, "gather", "indices")
    pshape, ishape = shape_of(p), shape_of(i)
    b = _int(batch_dims, "gather", "batch_dims")
    b = b + len(ishape) if b < 0 else b
    ax = b if axis is None else _int(axis, "gather", "axis")
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
    flat = reshape(transpose(p, lead), (_prod(batch) * n,) + pre + post)
    offsets = np.arange(_prod(batch), dtype=np.int64) * n
    offsets = offsets.reshape(batch + (1,) * (len(ishape) - b))
    out = bind(gather_p, flat, bind(add_p, _index_dtype(i), Tensor(offsets)), axis=0)
    # out is [batch..., I..., pre..., post...]; TensorFlow puts pre before I.
    ni, npre = len(ishape) - b, len(pre)
    perm = tuple(_brange(b)) + tuple(_brange(b + ni, b + ni + npre)) + \
        tuple(_brange(b, b + ni)) + tuple(_brange(b + ni + npre, len(shape_of(out))))
    return transpose(out, perm)


def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None,
            axis: Any = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """A one-hot encoding of integer `indices`: a new axis of length `depth` (at `axis`,
    the last by default) holds `on_value` at each index and `off_value` elsewhere.

    Indices outside [0, depth) (e.g. -1) give a row of `off_value`. The dtype is
    `dtype`, else that of `on_value` or `off_value`, else float32. As TensorFlow, no
    gradient flows through one_hot.

    Example:
        >>> import tapeflow as tf
        >>> tf.one_hot([0, 2, -1], 3).numpy()
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]], dtype=float32)
    """
    i = _int_tensor(indices, "one_hot", "indices")
    n = _int(depth, "one_hot", "depth")
    if n < 0:
        raise InvalidArgumentError(f"one_hot: `depth` must be non-negative; got {n}.")
    rank = np.ndim(i._value)
    ax = -1 if axis is None else _int(axis, "one_hot", "axis")
    if ax == -1:
        ax = rank
    if not 0 <= ax <= rank:
        raise InvalidArgumentError(f"one_hot: `axis`={axis} must be -1 or in [0, {rank}] for "
                                   f"indices of rank {rank}.")
    if dtype is not None:
        target = _dt.as_dtype(dtype)._np
    elif on_value is not None:
        target = as_tensor(on_value, "one_hot", "on_value")._value.dtype
    elif off_value is not None:
        target = as_tensor(off_value, "one_hot", "off_value")._value.dtype
    else:
        target = np.dtype(np.float32)
    on = _one_hot_value(on_value, 1, target, "on_value")
    off = _one_hot_value(off_value, 0, target, "off_value")
    classes = np.arange(n, dtype=np.int64).reshape([n if a == ax else 1 for a in _brange(rank + 1)])
    hit = bind(equal_p, expand_dims(i, ax), Tensor(classes))
    return bind(select_p, hit, on, off)


def _one_hot_value(value: Any, default: int, target: np.dtype, arg: str) -> Tensor:
    if value is None:
        return Tensor(np.asarray(default, target))
    if isinstance(value, _TensorLike):
        v = as_tensor(value, "one_hot", arg)
        if v._value.dtype != target:
            raise TypeError(f"one_hot: `{arg}` has dtype {v.dtype.name}, expected "
                            f"{_dt.from_numpy(target).name}.")
        v = stop_gradient(v)
    else:
        try:
            v = convert_to_tensor(value, dtype=target)
        except (TypeError, ValueError) as e:
            raise TypeError(f"one_hot: `{arg}`={value!r} does not fit dtype "
                            f"{_dt.from_numpy(target).name}: {e}") from None
    if np.ndim(v._value) != 0:
        raise InvalidArgumentError(f"one_hot: `{arg}` must be a scalar; got shape {shape_of(v)}.")
    return v


