"""Shape and indexing primitives: reshape, transpose, broadcast, concat, gather, slicing.

All of them are linear, so each gets its JVP from `linear` (the primitive
applied to the tangent) and its VJP from a transpose written with other
shape primitives.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..core import Primitive, Zero, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, _TensorLike
from ._rules import (as_tensor, batch_size, batch_unary, defjvp, defvjp, instantiate, linear,
                     move_to_front, normalize_axis, shape_of, static_shape)

# ------------------------------------------------------------------ reshape
# [()] gives rank-0 results as NumPy scalars, like every other op
reshape_p = Primitive("reshape", lambda x, shape: np.reshape(x, shape)[()])
linear(reshape_p, lambda g, x, shape: bind(reshape_p, g, shape=shape_of(x)))
reshape_p.batch = lambda vals, dims, shape: (
    bind(reshape_p, move_to_front(vals[0], dims[0]), shape=(shape_of(vals[0])[dims[0]],) + shape), 0)

# ------------------------------------------------------------------ transpose
transpose_p = Primitive("transpose", lambda x, perm: np.transpose(x, perm))
linear(transpose_p, lambda g, x, perm: bind(transpose_p, g, perm=tuple(np.argsort(perm).tolist())))
transpose_p.batch = lambda vals, dims, perm: (
    bind(transpose_p, move_to_front(vals[0], dims[0]), perm=(0,) + tuple(p + 1 for p in perm)), 0)


# ------------------------------------------------------------------ broadcast_to
def _unbroadcast(g: Tensor, x: Tensor, shape: tuple) -> Tensor:
    from ._rules import unbroadcast
    return unbroadcast(g, shape_of(x))


broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape))
linear(broadcast_to_p, _unbroadcast)


def _broadcast_to_batch(vals: tuple, dims: tuple, shape: tuple) -> tuple:
    from ._rules import align_batched
    (x,) = align_batched(vals, dims, len(shape))
    return bind(broadcast_to_p, x, shape=shape_of(x)[:1] + shape), 0


broadcast_to_p.batch = _broadcast_to_batch

# ------------------------------------------------------------------ identity and variable reads
identity_p = Primitive("identity", lambda x: x)
linear(identity_p, lambda g, x: g)
batch_unary(identity_p)

# Reading a variable is an op of its own, so tapes can watch the variable and keep
# the value read at that moment (a later assign does not change recorded values).
read_variable_p = Primitive("read_variable", lambda v: v)
linear(read_variable_p, lambda g, v: g)
batch_unary(read_variable_p)  # a variable is never batched; kept for completeness

# stop_gradient: outputs carry no derivative, so no recorder follows them.
stop_gradient_p = Primitive("stop_gradient", lambda x: x, differentiable=False)
batch_unary(stop_gradient_p)


# ------------------------------------------------------------------ getitem (basic slicing)
def _scatter_into_zeros(g: np.ndarray, key: tuple, shape: tuple) -> np.ndarray:
    out = np.zeros(shape, dtype=g.dtype)
    out[key] = g
    return out


getitem_p = Primitive("getitem", lambda x, key: x[key])
# getitem_transpose(g) puts g into zeros at `key`: the transpose of slicing.
getitem_transpose_p = Primitive("getitem_transpose", _scatter_into_zeros)
linear(getitem_p, lambda g, x, key: bind(getitem_transpose_p, g, key=key, shape=shape_of(x)))
linear(getitem_transpose_p, lambda g, x, key, shape: bind(getitem_p, g, key=key))
# Batched: the batch axis goes first and the key gets a leading `:`.
getitem_p.batch = lambda vals, dims, key: (
    bind(getitem_p, move_to_front(vals[0], dims[0]), key=(slice(None),) + key), 0)
getitem_transpose_p.batch = lambda vals, dims, key, shape: (
    bind(getitem_transpose_p, move_to_front(vals[0], dims[0]), key=(slice(None),) + key,
         shape=(shape_of(vals[0])[dims[0]],) + shape), 0)


# ------------------------------------------------------------------ concat
def _concat_jvp(primals: tuple, tangents: tuple, outs: tuple, axis: int) -> tuple:
    if all(type(t) is Zero for t in tangents):
        return (Zero.like(outs[0]),)
    return (bind(concat_p, *[instantiate(t) for t in tangents], axis=axis),)


def _concat_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, axis: int) -> tuple:
    g = instantiate(cts[0])
    result, start = [], 0
    for x, need in zip(primals, needs, strict=True):
        size = shape_of(x)[axis]
        if need:
            key = (slice(None),) * axis + (slice(start, start + size),)
            result.append(bind(getitem_p, g, key=key))
        else:
            result.append(None)
        start += size
    return tuple(result)


concat_p = Primitive("concat", lambda *xs, axis: np.concatenate(xs, axis=axis))
def _concat_batch(vals: tuple, dims: tuple, axis: int) -> tuple:
    size = batch_size(vals, dims)
    parts = []
    for v, d in zip(vals, dims):
        if d is None:  # an unbatched piece is the same for every example
            v = bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape_of(v)),
                     shape=(size,) + shape_of(v))
        parts.append(move_to_front(v, d))
    return bind(concat_p, *parts, axis=axis + 1), 0


concat_p.jvp = _concat_jvp
concat_p.vjp = _concat_vjp
concat_p.batch = _concat_batch


# ------------------------------------------------------------------ gather along one axis
def _gather_transpose_impl(g: np.ndarray, indices: np.ndarray, axis: int, shape: tuple) -> np.ndarray:
    # Repeated indices accumulate (np.add.at), the dense form of TensorFlow's IndexedSlices.
    out = np.zeros(shape, dtype=g.dtype)
    moved = np.moveaxis(out, axis, 0)
    gm = np.reshape(g, shape[:axis] + (np.size(indices),) + shape[axis + 1:])
    np.add.at(moved, np.reshape(indices, -1), np.moveaxis(gm, axis, 0))
    return out


gather_p = Primitive("gather", lambda params, indices, axis: np.take(params, indices, axis=axis))
gather_transpose_p = Primitive("gather_transpose", _gather_transpose_impl)
defjvp(gather_p, lambda t, ans, p, i, axis: bind(gather_p, t, i, axis=axis), None)
defvjp(gather_p, lambda g, ans, p, i, axis: bind(gather_transpose_p, g, i, axis=axis,
                                                 shape=shape_of(p)), None)
defjvp(gather_transpose_p, lambda t, ans, g, i, axis, shape: bind(
    gather_transpose_p, t, i, axis=axis, shape=shape), None)
defvjp(gather_transpose_p, lambda c, ans, g, i, axis, shape: bind(gather_p, c, i, axis=axis), None)


def _offset_indices(i: Tensor, size: int, n: int) -> Tensor:
    """Batched indices [B, ...] shifted by b * n, to index a [B * n, ...] flattening."""
    from .elementwise import add_p
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
    size = batch_size(vals, dims)
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
    m = int(np.prod(shape_of(i)[1:], dtype=np.int64))
    gflat = bind(reshape_p, gt, shape=(size * m,) + rest)
    idx = bind(reshape_p, _offset_indices(i, size, n), shape=(size * m,))
    out = bind(gather_transpose_p, gflat, idx, axis=0, shape=(size * n,) + rest)
    out = bind(reshape_p, out, shape=(size, n) + rest)
    back = (0,) + tuple(range(2, 2 + axis)) + (1,) + tuple(range(2 + axis, len(rest) + 2))
    return bind(transpose_p, out, perm=back), 0


gather_p.batch = _gather_batch
gather_transpose_p.batch = _gather_transpose_batch


# ================================================================== public ops
def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """Give `tensor` a new shape with the same number of elements (one dim may be -1).

    Example:
        >>> import tapeflow as tf
        >>> tf.reshape(tf.constant([1., 2., 3., 4.]), [2, -1]).shape
        TensorShape([2, 2])
    """
    x = as_tensor(tensor, "reshape", "tensor")
    target = [int(d) for d in (np.asarray(shape).reshape(-1).tolist()
                               if not isinstance(shape, int) else [shape])]
    size = np.size(x._value)
    if target.count(-1) > 1:
        raise InvalidArgumentError(f"reshape: `shape` {target} has more than one -1.")
    if -1 in target:
        known = int(np.prod([d for d in target if d != -1], dtype=np.int64))
        if known == 0 or size % known:
            raise InvalidArgumentError(f"reshape: cannot reshape a tensor of {size} elements "
                                       f"(shape {shape_of(x)}) to {target}.")
        target[target.index(-1)] = size // known
    if int(np.prod(target, dtype=np.int64)) != size:
        raise InvalidArgumentError(f"reshape: cannot reshape a tensor of {size} elements "
                                   f"(shape {shape_of(x)}) to {target}.")
    target = tuple(target)
    if target == shape_of(x):
        return x
    return bind(reshape_p, x, shape=target)


def transpose(a: Any, perm: Sequence[int] | None = None, conjugate: bool = False,
              name: str | None = None) -> Tensor:
    """Permute the axes of `a` (reverse them if `perm` is None).

    Example:
        >>> import tapeflow as tf
        >>> tf.transpose(tf.zeros([2, 3, 4]), perm=[2, 0, 1]).shape
        TensorShape([4, 2, 3])
    """
    from .elementwise import conj

    x = as_tensor(a, "transpose", "a")
    ndim = np.ndim(x._value)
    perm = tuple(range(ndim))[::-1] if perm is None else tuple(int(p) % max(ndim, 1) for p in
                                                               np.asarray(perm).tolist())
    if sorted(perm) != list(range(ndim)):
        raise InvalidArgumentError(f"transpose: `perm` must be a permutation of 0..{ndim - 1}; "
                                   f"got {perm}.")
    out = x if perm == tuple(range(ndim)) else bind(transpose_p, x, perm=perm)
    return conj(out) if conjugate else out


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:  # noqa: A002
    """Insert a length-1 axis at `axis` (negative counts from the end of the result).

    Example:
        >>> import tapeflow as tf
        >>> tf.expand_dims(tf.constant([1., 2.]), -1).shape
        TensorShape([2, 1])
    """
    x = as_tensor(input, "expand_dims", "input")
    shape = list(shape_of(x))
    ax = int(axis)
    if not -len(shape) - 1 <= ax <= len(shape):
        raise InvalidArgumentError(f"expand_dims: `axis`={axis} is out of range for a tensor of "
                                   f"rank {len(shape)} (valid: [{-len(shape) - 1}, {len(shape)}]).")
    shape.insert(ax % (len(shape) + 1), 1)
    return bind(reshape_p, x, shape=tuple(shape))


def squeeze(input: Any, axis: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """Remove length-1 axes (all of them, or those in `axis`, which must have length 1).

    Example:
        >>> import tapeflow as tf
        >>> tf.squeeze(tf.zeros([1, 2, 1])).shape
        TensorShape([2])
    """
    x = as_tensor(input, "squeeze", "input")
    shape = shape_of(x)
    axes = normalize_axis(axis, len(shape), "squeeze")
    if axes is None:
        axes = tuple(i for i, d in enumerate(shape) if d == 1)
    for a in axes:
        if shape[a] != 1:
            raise InvalidArgumentError(f"squeeze: cannot squeeze axis {a} of shape {shape}: "
                                       f"its length is {shape[a]}, not 1.")
    new = tuple(d for i, d in enumerate(shape) if i not in axes)
    return x if new == shape else bind(reshape_p, x, shape=new)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Broadcast `input` to `shape` (NumPy rules); the gradient sums back.

    Example:
        >>> import tapeflow as tf
        >>> tf.broadcast_to(tf.constant([1., 2.]), [2, 2]).numpy()
        array([[1., 2.],
               [1., 2.]], dtype=float32)
    """
    x = as_tensor(input, "broadcast_to", "input")
    target = tuple(int(d) for d in np.asarray(shape).reshape(-1).tolist())
    try:
        np.broadcast_shapes(shape_of(x), target)
        if np.broadcast_shapes(shape_of(x), target) != target:
            raise ValueError
    except ValueError:
        raise InvalidArgumentError(f"broadcast_to: cannot broadcast shape {shape_of(x)} "
                                   f"to {target}.") from None
    return x if target == shape_of(x) else bind(broadcast_to_p, x, shape=target)


def _tensors(values: Any, op: str) -> list[Tensor]:
    if isinstance(values, _TensorLike) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}: `values` must be a list or tuple of tensors; got {type(values).__name__}.")
    if not values:
        raise ValueError(f"{op}: `values` is empty.")
    ts = [as_tensor(v, op, f"values[{i}]") for i, v in enumerate(values)]
    first = ts[0]._value.dtype
    for i, t in enumerate(ts):
        if t._value.dtype != first:
            ts[i] = as_tensor(values[i], op, f"values[{i}]") if isinstance(values[i], _TensorLike) \
                else Tensor(np.asarray(t._value, first))
            if ts[i]._value.dtype != first:
                from ..errors import DTypeMismatchError
                raise DTypeMismatchError(f"{op}: values[0] has dtype {first} but values[{i}] "
                                         f"has dtype {t._value.dtype}.")
    return ts


def concat(values: Sequence[Any], axis: int, name: str | None = None) -> Tensor:
    """Join tensors along an existing axis; other dims must match.

    Example:
        >>> import tapeflow as tf
        >>> tf.concat([tf.zeros([2, 1]), tf.ones([2, 2])], axis=1).shape
        TensorShape([2, 3])
    """
    ts = _tensors(values, "concat")
    rank = np.ndim(ts[0]._value)
    if rank == 0:
        raise InvalidArgumentError("concat: the values are scalars; use tf.stack.")
    (ax,) = normalize_axis(axis, rank, "concat")
    for i, t in enumerate(ts):
        s = shape_of(t)
        if len(s) != rank or s[:ax] + s[ax + 1:] != shape_of(ts[0])[:ax] + shape_of(ts[0])[ax + 1:]:
            raise InvalidArgumentError(f"concat: values[{i}] has shape {s}, incompatible with "
                                       f"values[0] of shape {shape_of(ts[0])} along axis {ax}.")
    return ts[0] if len(ts) == 1 else bind(concat_p, *ts, axis=ax)


def stack(values: Sequence[Any], axis: int = 0, name: str | None = "stack") -> Tensor:
    """Join same-shaped tensors along a new axis.

    Example:
        >>> import tapeflow as tf
        >>> tf.stack([tf.constant([1., 2.]), tf.constant([3., 4.])]).shape
        TensorShape([2, 2])
    """
    ts = _tensors(values, "stack")
    s0 = shape_of(ts[0])
    for i, t in enumerate(ts):
        if shape_of(t) != s0:
            raise InvalidArgumentError(f"stack: values[{i}] has shape {shape_of(t)}, "
                                       f"values[0] has shape {s0}; all must match.")
    rank = len(s0) + 1
    if not -rank <= int(axis) < rank:
        raise InvalidArgumentError(f"stack: `axis`={axis} is out of range for rank {rank} results.")
    ax = int(axis) % rank
    return concat([expand_dims(t, ax) for t in ts], axis=ax)


def identity(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """A tensor equal to `input` (a distinct tensor that gradients flow through).

    Example:
        >>> import tapeflow as tf
        >>> tf.identity(tf.constant(2.)).numpy()
        np.float32(2.0)
    """
    return bind(identity_p, as_tensor(input, "identity", "input"))


def stop_gradient(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`input`'s value, treated as a constant by tapes and accumulators.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant(3.)
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = x * tf.stop_gradient(x)
        >>> tape.gradient(y, x).numpy()
        np.float32(3.0)
    """
    return bind(stop_gradient_p, as_tensor(input, "stop_gradient", "input"))


def read_variable(var: Any) -> Tensor:
    """The value of a Variable now, as a Tensor that recorders see as a read of `var`."""
    from ..core import _state

    if not _state.stack:
        return Tensor(var._value)
    return bind(read_variable_p, var)


def _normalize_key(key: Any) -> tuple:
    """A hashable basic-indexing key: ints, slices, None (newaxis) and Ellipsis."""
    if not isinstance(key, tuple):
        key = (key,)
    out = []
    for k in key:
        if k is None or k is Ellipsis or isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(k if k is None or k is Ellipsis else int(k))
        elif isinstance(k, slice):
            out.append(slice(*(None if v is None else _index_int(v) for v in (k.start, k.stop, k.step))))
        elif isinstance(k, _TensorLike) and np.ndim(k._value) == 0 and k._value.dtype.kind in "iu":
            out.append(int(k))  # a value read: tracing guards it (NOTE(value-reads))
        else:
            raise TypeError(f"getitem: only integers, slices (`:`), ellipsis (`...`), tf.newaxis "
                            f"and scalar integer tensors are valid indices; got {k!r}. Use "
                            "tf.gather for index lists.")
    return tuple(out)


def _index_int(v: Any) -> int:
    if isinstance(v, _TensorLike):
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


def zeros(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` is given); a constant.

    Example:
        >>> import tapeflow as tf
        >>> tf.zeros([2]).numpy()
        array([0., 0.], dtype=float32)
    """
    from .. import dtypes as _dt
    return Tensor(np.zeros(static_shape(shape, "zeros"), _dt.as_dtype(dtype)._np))


def ones(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    """A tensor of ones (float32 unless `dtype` is given); a constant.

    Example:
        >>> import tapeflow as tf
        >>> tf.ones([2], tf.int32).numpy()
        array([1, 1], dtype=int32)
    """
    from .. import dtypes as _dt
    return Tensor(np.ones(static_shape(shape, "ones"), _dt.as_dtype(dtype)._np))
