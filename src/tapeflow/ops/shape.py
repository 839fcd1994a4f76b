"""Shape ops: reshape, transpose, expand_dims, squeeze, broadcast_to, concat, stack,
unstack, split, tile, reverse, pad, identity, stop_gradient.

All of them are linear. reshape, transpose and broadcast_to are structural primitives
(ops/structural.py); concat and split are primitives here, each the other's
transpose (split is one for speed: as a composite of slices, the backward pass of a
split into n pieces would scatter n full-size arrays; as a primitive it is one concat).
The rest are composites of those and of slicing (ops/indexing.py), exact and with no
rules of their own.
"""

from __future__ import annotations

import math

from typing import Any, Sequence

import numpy as np

from ..catalog import IDENTITY, NO_DERIVATIVE, Hints, define
from ..core import Primitive, Zero, bind
from ..errors import DTypeMismatchError, InvalidArgumentError
from ..hessian_patterns import LINEAR
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, binary_args, convert_like, int_arg, int_list, normalize_axis
from .indexing import gather_p, getitem_p, getitem_transpose_p
from .structural import (batch_unary, broadcast_to_p, cast_p, conj_p, elementwise_deps, instantiate, linear, move_to_front, moved_deps, reshape_p, same_as_input, select_p, shape_of, transpose_p)
from .sizes import broadcast_dyn_p, reshape_dyn_p

# ------------------------------------------------------------------ identity, stop_gradient
identity_p = define(Primitive("identity", lambda x: x, effects=(IDENTITY,)),
                    linear(lambda g, x: g), batch_unary, sparsity=elementwise_deps,
                    lower=lambda jax, x: x, passes=Hints(simplify=same_as_input), curvature=LINEAR)


# stop_gradient: the outputs carry no derivative, so no recorder follows them.
stop_gradient_p = define(Primitive("stop_gradient", lambda x: x, effects=(NO_DERIVATIVE,)),
                         batch_unary,
                         lower=lambda jax, x: x)  # the compiled graph computes values only


# ------------------------------------------------------------------ concat
def _concat_jvp(tangents: tuple, outs: tuple, primals: tuple, axis: int) -> tuple:
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


def _concat_batch(vals: tuple, dims: tuple, axis: int) -> tuple:
    size = dims.size
    parts = []
    for v, d in zip(vals, dims, strict=True):
        if d is None:  # an unbatched piece is the same for every example
            v = bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape_of(v)),
                     shape=(size,) + shape_of(v))
        parts.append(move_to_front(v, d))
    return bind(concat_p, *parts, axis=axis + 1), 0


# Its VJP reads only the inputs' shapes, but their number varies: `reads` stays the
# default (every input and output).
concat_p = define(Primitive("concat", lambda *xs, axis: np.concatenate(xs, axis=axis)),
                  moved_deps(),  # every input is data
                  jvp=_concat_jvp, vjp=_concat_vjp, batch=_concat_batch,
                  lower=lambda jax, *xs, axis: jax.numpy.concatenate(xs, axis=axis),
                  passes=Hints(moves=True), curvature=LINEAR,
                  kernel=lambda shapes, axis: "np.concatenate(({},), axis={})".format(
                      ", ".join("{%d}" % i for i in range(len(shapes))), axis % len(shapes[0])))


# ------------------------------------------------------------------ split (multiple results)
# A primitive for speed: as a composite of getitem, each piece's VJP scatters into a
# zeros array of the whole input, O(n * size) for n pieces (unstack of a long axis);
# split's VJP is one concat of the pieces' cotangents, O(size).
def _split_impl(x: np.ndarray, sizes: tuple, axis: int) -> list:
    return np.split(x, np.cumsum(sizes[:-1]).tolist(), axis=axis)


def _split_jvp(tangents: tuple, outs: tuple, primals: tuple, sizes: tuple, axis: int) -> tuple:
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


split_p = define(Primitive("split", _split_impl, multiple_results=True),
                 moved_deps(0), jvp=_split_jvp, vjp=_split_vjp, batch=_split_batch,
                 lower=lambda jax, x, sizes, axis: tuple(
                     jax.numpy.split(x, np.cumsum(sizes[:-1]).tolist(), axis=axis)),
                 passes=Hints(moves=True), curvature=LINEAR)


# ================================================================== public ops
def reshape(tensor: Any, shape: Any, name: str | None = None) -> Tensor:
    """Give `tensor` a new shape with the same number of elements (one dim may be -1).

    Example:
        >>> import tapeflow as tf
        >>> tf.reshape(tf.constant([1., 2., 3., 4.]), [2, -1]).shape
        TensorShape([2, 2])
    """
    x = as_tensor(tensor, "reshape", "tensor")
    dynamic = shape_operand(shape, "reshape", "shape")
    if dynamic is not None:
        return bind(reshape_dyn_p, x, dynamic, lead=0)
    target = int_list(shape, "reshape", "shape")
    size = math.prod(shape_of(x))  # of sizes a size-generic trace reads (NOTE(symbolic-sizes))
    if target.count(-1) > 1 or any(d < -1 for d in target):  # no min(): sizes unordered
        raise InvalidArgumentError(f"reshape: `shape` {target} must hold non-negative sizes and "
                                   "at most one -1 (the size that makes the count right).")
    if -1 in target:
        known = math.prod(d for d in target if d != -1)
        if known == 0 or size % known:
            raise InvalidArgumentError(f"reshape: cannot reshape a tensor of {size} elements "
                                       f"(shape {shape_of(x)}) to {target}.")
        # The -1 stays: the graph finds it when it runs, at any size (NOTE(dynamic-shapes)).
        resolved = tuple(size // known if d == -1 else d for d in target)
        return x if resolved == shape_of(x) else bind(reshape_p, x, shape=tuple(target))
    if math.prod(target) != size:
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
    x = as_tensor(a, "transpose", "a")
    ndim = np.ndim(x._value)
    perm = tuple(range(ndim))[::-1] if perm is None else tuple(int_list(perm, "transpose", "perm"))
    if sorted(perm) != list(range(ndim)):
        raise InvalidArgumentError(f"transpose: `perm` must be a permutation of 0..{ndim - 1}; "
                                   f"got {perm}.")
    out = x if perm == tuple(range(ndim)) else bind(transpose_p, x, perm=perm)
    return bind(conj_p, out) if conjugate and out._value.dtype.kind == "c" else out


def expand_dims(input: Any, axis: int, name: str | None = None) -> Tensor:  # noqa: A002
    """Insert a length-1 axis at `axis` (negative counts from the end of the result).

    Example:
        >>> import tapeflow as tf
        >>> tf.expand_dims(tf.constant([1., 2.]), -1).shape
        TensorShape([2, 1])
    """
    x = as_tensor(input, "expand_dims", "input")
    shape = list(shape_of(x))
    ax = int_arg(axis, "expand_dims", "axis")
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


def shape_operand(value: Any, op: str, arg: str) -> Tensor | None:
    """A shape argument that holds tensors (``tf.shape(x)``, ``[tf.shape(x)[0], -1]``) as a
    1-D int64 tensor the op reads when it runs (NOTE(dynamic-shapes) in
    ops/structural.py); None for a shape of Python numbers, which the op reads now."""
    if isinstance(value, Tensor):
        parts = [value]
    elif isinstance(value, (list, tuple)) and any(isinstance(v, Tensor) for v in value):
        parts = list(value)
    else:
        return None
    pieces = []
    for v in parts:
        t = v if isinstance(v, Tensor) else Tensor(np.asarray(v))
        if t._value.dtype.kind not in "iu" or np.ndim(t._value) > 1 or (
                len(parts) > 1 and np.ndim(t._value) != 0):
            raise TypeError(f"{op}: `{arg}` must be a 1-D integer tensor or a list of integer "
                            f"scalars; got {value!r}.")
        if t._value.dtype != np.int64:
            t = bind(cast_p, t, dtype=np.dtype(np.int64))
        pieces.append(bind(reshape_p, t, shape=(1,)) if np.ndim(t._value) == 0 else t)
    return pieces[0] if len(pieces) == 1 else bind(concat_p, *pieces, axis=0)


def broadcast_to(input: Any, shape: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Broadcast `input` to `shape` (NumPy rules); the gradient sums back.

    Example:
        >>> import tapeflow as tf
        >>> tf.broadcast_to(tf.constant([1., 2.]), [2, 2]).numpy()
        array([[1., 2.],
               [1., 2.]], dtype=float32)
    """
    x = as_tensor(input, "broadcast_to", "input")
    dynamic = shape_operand(shape, "broadcast_to", "shape")
    if dynamic is not None:
        return bind(broadcast_dyn_p, x, dynamic, lead=0, expand=())
    target = tuple(int_list(shape, "broadcast_to", "shape"))
    try:
        np.broadcast_shapes(shape_of(x), target)
        if np.broadcast_shapes(shape_of(x), target) != target:
            raise ValueError
    except ValueError:
        raise InvalidArgumentError(f"broadcast_to: cannot broadcast shape {shape_of(x)} "
                                   f"to {target}.") from None
    return x if target == shape_of(x) else bind(broadcast_to_p, x, shape=target)


def _tensors(values: Any, op: str) -> list[Tensor]:
    if isinstance(values, TensorBase) or not isinstance(values, (list, tuple)):
        raise TypeError(f"{op}: `values` must be a list or tuple of tensors; got {type(values).__name__}.")
    if not values:
        raise ValueError(f"{op}: `values` is empty.")
    ts = [as_tensor(v, op, f"values[{i}]") for i, v in enumerate(values)]
    first = ts[0]._value.dtype
    for i, t in enumerate(ts):
        if t._value.dtype != first:
            ts[i] = as_tensor(values[i], op, f"values[{i}]") if isinstance(values[i], TensorBase) \
                else convert_like(values[i], ts[0], op, f"values[{i}]")
            if ts[i]._value.dtype != first:
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
    (ax,) = normalize_axis(int_arg(axis, "split", "axis"), rank, "split")
    n = shape_of(x)[ax]
    if np.ndim(num_or_size_splits) == 0:
        k = int_arg(num_or_size_splits, "split", "num_or_size_splits")
        if k <= 0 or n % k:
            raise InvalidArgumentError(f"split: `num_or_size_splits`={k} must be a positive "
                                       f"divisor of the length {n} of axis {ax}.")
        sizes = [n // k] * k
    else:
        given = int_list(num_or_size_splits, "split", "num_or_size_splits")
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
    (ax,) = normalize_axis(int_arg(axis, "unstack", "axis"), len(shape), "unstack")
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
    reps = int_list(multiples, "tile", "multiples")
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
    return bind(reshape_p, y, shape=tuple(d * m for d, m in zip(shape, reps, strict=True)))


def repeat(input: Any, repeats: Any, axis: int | None = None,  # noqa: A002
           name: str | None = None) -> Tensor:
    """Repeat each element of `input` along `axis` (of the flattened input when None):
    `repeats` times (an int or a 1-element list), or `repeats[i]` times the i-th (one
    count per element).

    A composite: one count is tile's broadcast along a new axis merged into `axis`; a
    count per element is a gather of each index that many times (its gradient sums the
    copies).

    Example:
        >>> import tapeflow as tf
        >>> tf.repeat(tf.constant([[1, 2], [3, 4]]), repeats=[1, 2], axis=0).numpy()
        array([[1, 2],
               [3, 4],
               [3, 4]], dtype=int32)
    """
    x = as_tensor(input, "repeat", "input")
    if axis is None:
        x = bind(reshape_p, x, shape=(math.prod(shape_of(x)),))
        axis = 0
    shape = shape_of(x)
    if not shape:
        raise InvalidArgumentError("repeat: `input` must have rank >= 1 when `axis` is given; "
                                   "got a scalar.")
    if np.ndim(axis) != 0:
        raise InvalidArgumentError(f"repeat: `axis` must be one int; got {axis!r}.")
    (ax,) = normalize_axis(axis, len(shape), "repeat")
    reps = int_list(repeats, "repeat", "repeats")
    if np.ndim(repeats) > 1 or any(r < 0 for r in reps) or len(reps) not in (1, shape[ax]):
        raise InvalidArgumentError(
            f"repeat: `repeats`={repeats!r} must be a non-negative int or a 1-D list of "
            f"{shape[ax]} non-negative ints (one per element of axis {ax} of `input`, shape "
            f"{shape}).")
    if len(reps) == 1:  # one count for all, as a 1-element list is in TensorFlow
        r = reps[0]
        spread = shape[:ax + 1] + (1,) + shape[ax + 1:]
        y = bind(broadcast_to_p, bind(reshape_p, x, shape=spread),
                 shape=shape[:ax + 1] + (r,) + shape[ax + 1:])
        return bind(reshape_p, y, shape=shape[:ax] + (shape[ax] * r,) + shape[ax + 1:])
    index = np.repeat(np.arange(shape[ax], dtype=np.int64), reps)
    return bind(gather_p, x, Tensor(index), axis=ax)


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
    axes = normalize_axis(int_list(axis, "reverse", "axis"), rank, "reverse")
    if not axes:
        return x
    key = tuple(slice(None, None, -1) if a in axes else slice(None) for a in range(rank))
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
    if isinstance(constant_values, TensorBase):
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
    key = tuple(slice(b, b + d) for (b, _), d in zip(pads.tolist(), shape, strict=True))
    out_shape = tuple(d + b + a for d, (b, a) in zip(shape, pads.tolist(), strict=True))
    out = bind(getitem_transpose_p, x, key=key, shape=out_shape)
    if isinstance(constant_values, TensorBase) or np.any(c._value != 0):
        inside = np.zeros(out_shape, np.bool_)
        inside[key] = True
        out = bind(select_p, Tensor(inside), out, c)
    return out


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "reshape": "tf", "transpose": "tf", "expand_dims": "tf", "squeeze": "tf",
    "broadcast_to": "tf", "concat": "tf", "stack": "tf", "unstack": "tf", "split": "tf",
    "tile": "tf", "repeat": "tf", "reverse": "tf", "pad": "tf", "identity": "tf", "stop_gradient": "tf",
}
