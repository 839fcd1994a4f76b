"""Sorting and ordering: sort, argsort, top_k, searchsorted, unique, unique_with_counts,
roll.

Four primitives, none with a derivative: `argsort` (stable, so ties keep their index
order in both directions, as TensorFlow's sort, whose ascending order is a top_k of the
negated values), `searchsorted`, `unique` (first-occurrence indices, the inverse indices
and the counts) and `line_count` (how many distinct or nonzero entries lines hold). sort
and top_k's values are gathers at the argsort indices, unique's values a gather at the
first occurrences, roll slices and concatenations: their derivatives are those of
`gather`, `getitem` and `concat` (ops/indexing.py, ops/shape.py).

NOTE(counted-shape): unique's length depends on the values. The op reads it
(`line_count`, a scalar: a traced function guards that one number, as any value read, and
retraces when it changes) and passes it to `unique` as a param, so every interpreter, XLA
included, knows it before it runs. Under vmap every example must have the same count (the count's
batching rule checks it and returns one number, which the op may read). ops/segments.py's
boolean_mask reads its count of selected entries the same way.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, Lowering, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, check_dtype, convert_like, int_arg, int_list
from .indexing import gather_p, getitem_p
from .shape import concat_p
from .structural import (add_p, batch_along_axis, broadcast_to_p, cast_p, move_to_front,
                         multiply_p, reshape_p, shape_of)

TopKV2 = collections.namedtuple("TopKV2", ["values", "indices"])
TopKV2.__doc__ = """top_k's result, as TensorFlow's: the values and their int indices.

Example:
    >>> import tapeflow as tf
    >>> tf.math.top_k(tf.constant([1., 3., 2.]), 2).indices.numpy()
    array([1, 2], dtype=int32)
"""
Unique = collections.namedtuple("Unique", ["y", "idx"])
Unique.__doc__ = """unique's result, as TensorFlow's: the distinct values and each entry's index.

Example:
    >>> import tapeflow as tf
    >>> tf.unique(tf.constant([5, 5, 4])).y.numpy()
    array([5, 4], dtype=int32)
"""
UniqueWithCounts = collections.namedtuple("UniqueWithCounts", ["y", "idx", "count"])
UniqueWithCounts.__doc__ = """unique_with_counts's result: unique's and how often each value occurs.

Example:
    >>> import tapeflow as tf
    >>> tf.unique_with_counts(tf.constant([5, 5, 4])).count.numpy()
    array([2, 1], dtype=int32)
"""

_INT64 = np.dtype(np.int64)


# ------------------------------------------------------------------ argsort
# Stable in both directions: descending is the ascending order of the reversed line,
# read backwards, so equal values keep their index order (TensorFlow's, whose sort is a
# top_k). NaN sorts last ascending and first descending (NumPy's and XLA's order). With
# `top`, only the first `top` positions (top_k's), checked against the axis at every run:
# a trace for every size may meet a shorter one.
def _argsort_impl(x: np.ndarray, axis: int, descending: bool, dtype: np.dtype,
                  top: int | None = None) -> np.ndarray:
    if not descending:
        out = np.argsort(x, axis=axis, kind="stable")
    else:
        backwards = np.argsort(np.flip(x, axis), axis=axis, kind="stable")
        out = x.shape[axis] - 1 - np.flip(backwards, axis)
    if top is not None:
        if top > x.shape[axis]:
            raise InvalidArgumentError(
                f"top_k: `k`={top} must lie in [0, {x.shape[axis]}]: `input` (shape "
                f"{x.shape}) has {x.shape[axis]} entries along its last axis.")
        out = out[(slice(None),) * axis + (slice(0, top),)]
    return out.astype(dtype, copy=False)


def _argsort_lower(jax: Any, x: Any, axis: int, descending: bool, dtype: np.dtype,
                   top: int | None = None) -> Any:
    jnp = jax.numpy
    if not descending:
        out = jnp.argsort(x, axis=axis, stable=True)
    else:
        backwards = jnp.argsort(jnp.flip(x, axis), axis=axis, stable=True)
        out = x.shape[axis] - 1 - jnp.flip(backwards, axis)
    if top is not None:
        out = out[(slice(None),) * axis + (slice(0, top),)]
    return out.astype(dtype)


argsort_p = define(Primitive("argsort", _argsort_impl, effects=(NO_DERIVATIVE,)),
                   batch_along_axis,
                   lower=Lowering(_argsort_lower, check=lambda jax, x, axis, top=None, **params:
                                  jax.numpy.asarray(top is None or top <= x.shape[axis])))


# ------------------------------------------------------------------ searchsorted
# Each line of `values` (its last axis) searched in the same line of `sorted_sequence`;
# the leading axes are lines (a vmap's batch axis becomes one more).
def _lines(a: Any, rows: int) -> Any:
    return a.reshape((rows, a.shape[-1]))


def _searchsorted_impl(s: np.ndarray, v: np.ndarray, right: bool, dtype: np.dtype) -> np.ndarray:
    side = "right" if right else "left"
    if s.ndim == 1:
        return np.searchsorted(s, v, side=side).astype(dtype)
    rows = int(np.prod(s.shape[:-1], dtype=np.int64))
    s2, v2 = _lines(s, rows), _lines(v, rows)
    out = np.empty(v2.shape, dtype)
    for r in range(rows):
        out[r] = np.searchsorted(s2[r], v2[r], side=side)
    return out.reshape(v.shape)


def _searchsorted_lower(jax: Any, s: Any, v: Any, right: bool, dtype: np.dtype) -> Any:
    jnp = jax.numpy
    rows = int(np.prod(s.shape[:-1], dtype=np.int64))
    side = "right" if right else "left"
    out = jax.vmap(lambda a, b: jnp.searchsorted(a, b, side=side))(_lines(s, rows),
                                                                   _lines(v, rows))
    return jnp.reshape(out, v.shape).astype(dtype)


def _front(v: Tensor, d: int | None, size: int) -> Tensor:
    """v with its batch axis first, an unbatched v broadcast to `size` examples."""
    if d is not None:
        return move_to_front(v, d)
    return bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape_of(v)),
                shape=(size,) + shape_of(v))


def _searchsorted_batch(vals: tuple, dims: tuple, **params: Any) -> tuple:
    s, v = (_front(x, d, dims.size) for x, d in zip(vals, dims, strict=True))
    return bind(searchsorted_p, s, v, **params), 0


searchsorted_p = define(Primitive("searchsorted", _searchsorted_impl, effects=(NO_DERIVATIVE,)),
                        batch=_searchsorted_batch, lower=_searchsorted_lower)


# ------------------------------------------------------------------ line_count
# How many distinct entries, nonzero entries or bins (0 .. the largest entry rounded up)
# each line (last axis) holds, which every line must share: a scalar (NOTE(counted-shape)).
# A vmap's examples are lines too, so the batched count is one number, unbatched, that
# the op may read.
_COUNTED = {"distinct": "distinct entries", "nonzero": "selected entries",
            "bins": "bins (1 + the largest entry)"}


def _distinct(lines: Any, xp: Any) -> Any:
    """Distinct entries per line: one plus the changes along each sorted line (NaN, never
    equal to itself, counts once per NaN; -0.0 equals 0.0)."""
    s = xp.sort(lines, axis=-1)
    return 1 + xp.sum(s[..., 1:] != s[..., :-1], axis=-1, dtype=_INT64)


def _line_counts(x: Any, what: str, xp: Any) -> Any:
    if what == "nonzero":
        return xp.sum(x != 0, axis=-1, dtype=_INT64)
    if x.shape[-1] == 0:
        return xp.zeros(x.shape[:-1], _INT64)
    if what == "distinct":
        return _distinct(x, xp)
    top = xp.max(x, axis=-1)
    if _dt.kind(np.dtype(x.dtype)) == "f":
        top = xp.ceil(top)
    return top.astype(_INT64) + 1


def _line_count_impl(x: np.ndarray, what: str, op: str) -> np.int64:
    if x.dtype.kind == "V":
        x = x.astype(np.float32)  # bfloat16: exact in float32
    counts = np.unique(_line_counts(x, what, np)).tolist()
    if len(counts) > 1:
        raise InvalidArgumentError(
            f"{op}: the examples of a vmap have different numbers of {_COUNTED[what]} "
            f"({counts[0]} and {counts[-1]}), so their results would differ in shape; every "
            "example of a vmap has the same shape.")
    return np.int64(counts[0] if counts else 0)


def _line_count_lower(jax: Any, x: Any, what: str, op: str) -> Any:
    counts = jax.numpy.reshape(_line_counts(x, what, jax.numpy), (-1,))
    return counts[0] if counts.size else jax.numpy.zeros((), _INT64)


line_count_p = define(
    Primitive("line_count", _line_count_impl, effects=(NO_DERIVATIVE,)),
    batch=lambda vals, dims, **params: (
        bind(line_count_p, move_to_front(vals[0], dims[0]), **params), None),
    # Lines whose counts differ: the impl's error, from a rerun on NumPy.
    lower=Lowering(_line_count_lower, check=lambda jax, x, what, op: jax.numpy.all(
        _line_counts(x, what, jax.numpy) == jax.numpy.reshape(
            _line_counts(x, what, jax.numpy), (-1,))[:1])))


def line_count(x: Tensor, what: str, op: str) -> int:
    """The number of distinct or nonzero entries, or of bins, every line of x holds
    ("distinct", "nonzero", "bins"), read: a traced function guards it (`op` names the
    caller in errors).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.sorting import line_count
        >>> line_count(tf.constant([3, 1, 3]), "distinct", "my_op")
        2
    """
    return int(bind(line_count_p, x, what=what, op=op))


# ------------------------------------------------------------------ unique
# Outputs: the index of each distinct value's first occurrence, in order of first
# occurrence (TensorFlow's order); each element's position among them; their counts.
# `size` distinct values per line (NOTE(counted-shape)); leading axes are a vmap's examples.
# Equality is NumPy's: -0.0 equals 0.0 (the first occurrence's value is kept), and every
# NaN is distinct, as in TensorFlow.
def _unique_line(x: np.ndarray, size: int) -> tuple:
    if x.dtype.kind == "V":
        x = x.astype(np.float32)  # bfloat16: exact in float32
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True, equal_nan=False)
    if first.size != size:
        raise InvalidArgumentError(f"unique: found {first.size} distinct values where the "
                                   f"traced call had {size}.")
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(order.size)
    return first[order], rank[inverse.reshape(-1)], counts[order]


def _unique_impl(x: np.ndarray, size: int, dtype: np.dtype) -> list:
    lead, n = x.shape[:-1], x.shape[-1]
    rows = int(np.prod(lead, dtype=np.int64))
    lines = [_unique_line(line, size) for line in x.reshape((rows, n))]
    keep, idx, counts = (np.stack([line[j] for line in lines]) if lines else
                         np.zeros((0, size), _INT64) for j in range(3))
    return [keep.astype(_INT64).reshape(lead + (size,)), idx.astype(dtype).reshape(x.shape),
            counts.astype(dtype).reshape(lead + (size,))]


def _unique_line_lower(jax: Any, x: Any, size: int) -> tuple:
    jnp = jax.numpy
    if size == 0:  # an empty line
        return jnp.zeros((0,), _INT64), jnp.zeros(x.shape, _INT64), jnp.zeros((0,), _INT64)
    _, first, inverse, counts = jnp.unique(x, return_index=True, return_inverse=True,
                                           return_counts=True, size=size, equal_nan=False)
    order = jnp.argsort(first, stable=True)
    rank = jnp.zeros((size,), order.dtype).at[order].set(jnp.arange(size, dtype=order.dtype))
    return first[order], rank[jnp.reshape(inverse, (-1,))], counts[order]


def _unique_lower(jax: Any, x: Any, size: int, dtype: np.dtype) -> tuple:
    jnp = jax.numpy
    lead = x.shape[:-1]
    rows = int(np.prod(lead, dtype=np.int64))
    keep, idx, counts = jax.vmap(lambda line: _unique_line_lower(jax, line, size))(
        jnp.reshape(x, (rows, x.shape[-1])))
    return (jnp.reshape(keep, lead + (size,)).astype(_INT64),
            jnp.reshape(idx, x.shape).astype(dtype),
            jnp.reshape(counts, lead + (size,)).astype(dtype))


unique_p = define(
    Primitive("unique", _unique_impl, multiple_results=True, effects=(NO_DERIVATIVE,)),
    batch=lambda vals, dims, **params: (
        tuple(bind(unique_p, move_to_front(vals[0], dims[0]), **params)), (0, 0, 0)),
    lower=_unique_lower)


# ================================================================== public ops
def _one_axis(axis: Any, ndim: int, op: str) -> int:
    """One int axis (a tensor's value is read) in [-ndim, ndim), as a non-negative int."""
    if isinstance(axis, bool) or np.ndim(axis) != 0:
        raise InvalidArgumentError(f"{op}: `axis` must be a single int; got {axis!r}.")
    a = int_arg(axis, op, "axis")
    if not -ndim <= a < ndim:
        raise InvalidArgumentError(f"{op}: `axis`={a} is out of range for a tensor of rank "
                                   f"{ndim} (valid: [{-ndim}, {ndim}) ).")
    return a % ndim


def _ordered(values: Any, axis: Any, op: str, arg: str) -> tuple[Tensor, int]:
    x = as_tensor(values, op, arg)
    check_dtype(x, "fiu", op, arg)
    if not shape_of(x):
        raise InvalidArgumentError(f"{op}: `{arg}` must have rank >= 1; got a scalar.")
    return x, _one_axis(axis, len(shape_of(x)), op)


def _descending(direction: Any, op: str) -> bool:
    if direction not in ("ASCENDING", "DESCENDING"):
        raise InvalidArgumentError(f"{op}: `direction` should be one of ASCENDING, DESCENDING; "
                                   f"got {direction!r}.")
    return direction == "DESCENDING"


def _index_dtype(dtype: Any, allowed: tuple, op: str, arg: str) -> np.dtype:
    d = _dt.as_dtype(dtype)
    if d.name not in allowed:
        raise InvalidArgumentError(f"{op}: `{arg}` is {d.name}; expected one of "
                                   f"{', '.join(allowed)}.")
    return d._np


def take_along(x: Tensor, idx: Tensor, axis: int) -> Tensor:
    """The entries of `x` at the int64 positions `idx` along `axis` (idx has x's shape but
    any length along `axis`): one `gather` from x flattened, so the derivative is
    gather's; the indices must lie in [0, x.shape[axis]) (they are not checked).

    Example:
        >>> import numpy as np
        >>> import tapeflow as tf
        >>> from tapeflow.ops.sorting import take_along
        >>> take_along(tf.constant([[1., 2.], [3., 4.]]), tf.constant(np.array([[1], [0]])), 1).numpy()
        array([[2.],
               [3.]], dtype=float32)
    """
    shape, k = shape_of(x), shape_of(idx)[axis]
    kshape = shape[:axis] + (k,) + shape[axis + 1:]
    if 0 in kshape:
        return bind(reshape_p, bind(getitem_p, bind(reshape_p, x, shape=(-1,)),
                                    key=(slice(0, 0),)), shape=kshape)
    stride = int(np.prod(shape[axis + 1:], dtype=np.int64))
    # The flat position of each line's first entry, broadcast along `axis`.
    first = np.arange(int(np.prod(shape, dtype=np.int64)), dtype=np.int64).reshape(shape)
    first = np.take(first, [0], axis=axis)
    flat = idx if stride == 1 else bind(multiply_p, idx, Tensor(np.int64(stride)))
    flat = bind(add_p, flat, Tensor(first))
    return bind(gather_p, bind(reshape_p, x, shape=(-1,)), flat, axis=0)


def sort(values: Any, axis: Any = -1, direction: str = "ASCENDING",
         name: str | None = None) -> Tensor:
    """The values sorted along `axis` (the last by default), "ASCENDING" or "DESCENDING".

    Real floating and integer tensors. Equal values keep their order in both directions
    (as TensorFlow), so the gradient, which sends each output's cotangent back to the
    input it came from, is TensorFlow's at ties too. NaN sorts last ascending and first
    descending (TensorFlow leaves NaN's place unspecified).

    Example:
        >>> import tapeflow as tf
        >>> tf.sort(tf.constant([[3., 1., 2.], [0., 5., 4.]]), direction="DESCENDING").numpy()
        array([[3., 2., 1.],
               [5., 4., 0.]], dtype=float32)
    """
    x, ax = _ordered(values, axis, "sort", "values")
    idx = bind(argsort_p, x, axis=ax, descending=_descending(direction, "sort"), dtype=_INT64)
    return take_along(x, idx, ax)


def argsort(values: Any, axis: Any = -1, direction: str = "ASCENDING", stable: bool = False,
            name: str | None = None) -> Tensor:
    """The int32 indices that sort `values` along `axis` ("ASCENDING" or "DESCENDING").

    The order is always stable: equal values keep their index order in both directions,
    TensorFlow's result whether or not `stable` is asked for. No gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.argsort(tf.constant([3., 1., 3., 2.]), direction="DESCENDING").numpy()
        array([0, 2, 3, 1], dtype=int32)
    """
    x, ax = _ordered(values, axis, "argsort", "values")
    return bind(argsort_p, x, axis=ax, descending=_descending(direction, "argsort"),
                dtype=np.dtype(np.int32))


def top_k(input: Any, k: Any = 1, sorted: bool = True, index_type: Any = _dt.int32,  # noqa: A002
          name: str | None = None) -> TopKV2:
    """The `k` largest entries of each line along the last axis, largest first, and their
    indices: a namedtuple (values, indices), as TensorFlow.

    Ties go to the lower index first. `sorted=False` returns them sorted too (TensorFlow
    leaves that order unspecified). The gradient of the values sends each cotangent to
    the entry it came from. `k` must lie in [0, n] for lines of n entries.

    Example:
        >>> import tapeflow as tf
        >>> values, indices = tf.math.top_k(tf.constant([1., 5., 3., 5.]), k=3)
        >>> values.numpy(), indices.numpy()
        (array([5., 5., 3.], dtype=float32), array([1, 3, 2], dtype=int32))
    """
    x = as_tensor(input, "top_k", "input")
    check_dtype(x, "fiu", "top_k", "input")
    shape = shape_of(x)
    if not shape:
        raise InvalidArgumentError("top_k: `input` must have rank >= 1; got a scalar.")
    count = int_arg(k, "top_k", "k")
    if not 0 <= count <= shape[-1]:
        raise InvalidArgumentError(
            f"top_k: `k`={count} must lie in [0, {shape[-1]}]: `input` (shape {shape}) has "
            f"{shape[-1]} entries along its last axis.")
    out = _index_dtype(index_type, ("int16", "int32", "int64"), "top_k", "index_type")
    last = len(shape) - 1
    idx = bind(argsort_p, x, axis=last, descending=True, dtype=_INT64, top=count)
    return TopKV2(take_along(x, idx, last), bind(cast_p, idx, dtype=out))


def searchsorted(sorted_sequence: Any, values: Any, side: str = "left",
                 out_type: Any = _dt.int32, name: str | None = None) -> Tensor:
    """For each entry of `values`, the index in the same line (last axis) of
    `sorted_sequence` where inserting it keeps the line sorted: before equal entries with
    side="left", after them with "right". The leading axes of both must match. No
    gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.searchsorted(tf.constant([1., 2., 2., 3.]), tf.constant([2., 0., 5.])).numpy()
        array([1, 0, 4], dtype=int32)
    """
    op = "searchsorted"
    s = as_tensor(sorted_sequence, op, "sorted_sequence")
    if isinstance(values, TensorBase):
        v = as_tensor(values, op, "values")
        if v._value.dtype != s._value.dtype:
            raise InvalidArgumentError(
                f"{op}: `values` has dtype {_dt.from_numpy(v._value.dtype).name} and "
                f"`sorted_sequence` {_dt.from_numpy(s._value.dtype).name}; they must match.")
    else:
        v = convert_like(values, s, op, "values")
    check_dtype(s, "fiu", op, "sorted_sequence")
    ss, vs = shape_of(s), shape_of(v)
    if not ss or not vs or ss[:-1] != vs[:-1]:
        raise InvalidArgumentError(
            f"{op}: `sorted_sequence` (shape {ss}) and `values` (shape {vs}) must have rank "
            ">= 1 and the same leading dimensions (all but the last).")
    if side not in ("left", "right"):
        raise InvalidArgumentError(f"{op}: `side` must be either 'right' or 'left'; got "
                                   f"{side!r}.")
    out = _index_dtype(out_type, ("int32", "int64"), op, "out_type")
    return bind(searchsorted_p, s, v, right=side == "right", dtype=out)


def _unique(x: Any, out_idx: Any, op: str) -> tuple:
    t = as_tensor(x, op, "x")
    if len(shape_of(t)) != 1:
        raise InvalidArgumentError(f"{op}: `x` must be 1-D; got shape {shape_of(t)}.")
    check_dtype(t, "biufc", op)
    dtype = _index_dtype(out_idx, ("int32", "int64"), op, "out_idx")
    keep, idx, counts = bind(unique_p, t, size=line_count(t, "distinct", op), dtype=dtype)
    return bind(gather_p, t, keep, axis=0), idx, counts


def unique(x: Any, out_idx: Any = _dt.int32, name: str | None = None) -> Unique:
    """The distinct values of the 1-D tensor `x` in order of first occurrence, and for each
    entry of x the index of its value among them: a namedtuple (y, idx), as TensorFlow.

    Every NaN is distinct; -0.0 and 0.0 are one value (the first one seen). The values
    have a gradient (TensorFlow's has none): each goes to the value's first occurrence.
    The length of y depends on the values: a traced function guards it.

    Example:
        >>> import tapeflow as tf
        >>> y, idx = tf.unique(tf.constant([3, 1, 3, 2, 1]))
        >>> y.numpy(), idx.numpy()
        (array([3, 1, 2], dtype=int32), array([0, 1, 0, 2, 1], dtype=int32))
    """
    y, idx, _ = _unique(x, out_idx, "unique")
    return Unique(y, idx)


def unique_with_counts(x: Any, out_idx: Any = _dt.int32,
                       name: str | None = None) -> UniqueWithCounts:
    """`unique` and how often each distinct value occurs: a namedtuple (y, idx, count)
    whose counts have the dtype `out_idx`.

    Example:
        >>> import tapeflow as tf
        >>> tf.unique_with_counts(tf.constant([3, 1, 3, 2, 1])).count.numpy()
        array([2, 2, 1], dtype=int32)
    """
    return UniqueWithCounts(*_unique(x, out_idx, "unique_with_counts"))


def _int_vector(value: Any, arg: str) -> list[int]:
    if np.ndim(value) > 1:
        raise InvalidArgumentError(f"roll: `{arg}` must be a scalar or a 1-D vector; got shape "
                                   f"{np.shape(value)}.")
    if isinstance(value, bool) or np.asarray(value).dtype == np.bool_:
        raise TypeError(f"roll: `{arg}` must be integers; got {value!r}.")
    return int_list(value, "roll", arg)


def roll(input: Any, shift: Any, axis: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """`input` rolled along `axis`: entry i moves to i + shift, those that fall off the end
    coming back at the start. `shift` and `axis` may be lists of the same length; shifts
    of one axis add up, and may be negative or larger than the axis.

    A composite of slices and one concatenation per rolled axis, so the gradient rolls
    the cotangent back.

    Example:
        >>> import tapeflow as tf
        >>> tf.roll(tf.constant([[0, 1, 2], [3, 4, 5]]), shift=[1, -1], axis=[0, 1]).numpy()
        array([[4, 5, 3],
               [1, 2, 0]], dtype=int32)
    """
    x = as_tensor(input, "roll", "input")
    shape = shape_of(x)
    if not shape:
        raise InvalidArgumentError("roll: `input` must have rank >= 1; got a scalar.")
    shifts, axes = _int_vector(shift, "shift"), _int_vector(axis, "axis")
    if len(shifts) != len(axes):
        raise InvalidArgumentError(f"roll: `shift` and `axis` must have the same size; got "
                                   f"{len(shifts)} shifts and {len(axes)} axes.")
    total = [0] * len(shape)
    for s, a in zip(shifts, axes, strict=True):
        if not -len(shape) <= a < len(shape):
            raise InvalidArgumentError(f"roll: `axis`={a} is out of range for a tensor of "
                                       f"rank {len(shape)} (valid: [{-len(shape)}, "
                                       f"{len(shape)}) ).")
        total[a % len(shape)] += s
    for a, s in enumerate(total):
        n = shape[a]
        if n == 0 or s % n == 0:
            continue
        cut = n - s % n
        lead = (slice(None),) * a
        x = bind(concat_p, bind(getitem_p, x, key=lead + (slice(cut, None),)),
                 bind(getitem_p, x, key=lead + (slice(0, cut),)), axis=a)
    return x


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {
    "sort": "tf", "argsort": "tf", "top_k": "math nn", "searchsorted": "tf", "unique": "tf",
    "unique_with_counts": "tf", "roll": "tf",
}
