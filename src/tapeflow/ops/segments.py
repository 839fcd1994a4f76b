"""Segments, masks and bands: the segment reductions (segment_sum/mean/max/min/prod over
sorted ids, unsorted_segment_sum/mean/max/min/prod/sqrt_n), bincount, boolean_mask,
sequence_mask, band_part and count_nonzero.

Rows of the data with the same segment id are reduced into that segment's row. Sums are
gather's transpose (ops/indexing.py: rows added at their ids), means and sqrt_n sums
divided by the counts, products a segmented running product over the rows sorted by id
(pairwise multiplications only, so the derivative stays exact where the data has zeros),
and max/min the primitives `segment_max` and `segment_min`, whose derivative splits each
segment's cotangent equally among the entries equal to its extremum, as TensorFlow's.
The unsorted ops drop rows of negative id, as TensorFlow: they are routed to one spare
row past the last segment, cut off at the end. Segment ids are checked where they are
used (`check_segment_ids`, at every run, as indexing's bounds check). The number of
segments of a sorted op, of bins of bincount and of entries of boolean_mask and of
sequence_mask without maxlen are read from the values (NOTE(counted-shape) in
ops/sorting.py).
"""

from __future__ import annotations

import math

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, Lowering, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..hessian_patterns import PIECEWISE_LINEAR
from ..tensor import Tensor
from .convert import as_tensor, check_dtype, int_arg, int_tensor, normalize_axis
from .elementwise import (abs_p, divide_p, equal_p, floordiv_p, greater_equal_p, less_p,
                          not_equal_p, sign_p, sqrt_p, truediv)
from .indexing import gather_p, gather_transpose_p, getitem_p, scatter_update_p
from .shape import concat_p
from .sorting import argsort_p, line_count
from .structural import (full_of, add_p, broadcast_to_p, cast_p, float_mask, move_axis, move_to_front,
                         multiply_p, per_input, reduce_sum_p, reshape_p, scatter_deps,
                         select_p, shape_of, zeros_of)

_INT64 = np.dtype(np.int64)


# ------------------------------------------------------------------ check_segment_ids
# Returns the ids unchanged; raises where they are wrong, at every evaluation (eagerly,
# per example under vmap, at each replay; compiled, a failed check reruns on NumPy).
# "sorted": non-negative and non-decreasing along the last axis; "unsorted": below
# `num_segments` (negative ids are dropped); "bincount": non-negative.
def _check_segment_ids_impl(ids: np.ndarray, mode: str, num_segments: int | None,
                            op: str) -> np.ndarray:
    if mode == "unsorted":
        bad = ids >= num_segments
        if bad.any():
            pos = tuple(np.argwhere(bad)[0].tolist())
            raise InvalidArgumentError(
                f"{op}: segment_ids{list(pos)} = {ids[pos]} is out of range [0, "
                f"{num_segments}) (`num_segments`={num_segments}; negative ids are dropped).")
        return ids
    if (ids < 0).any():
        pos = tuple(np.argwhere(ids < 0)[0].tolist())
        if mode == "bincount":
            raise InvalidArgumentError(f"{op}: `arr` must be non-negative; arr{list(pos)} = "
                                       f"{ids[pos]}.")
        raise InvalidArgumentError(f"{op}: segment_ids{list(pos)} = {ids[pos]} is negative; "
                                   "segment ids must be sorted non-negative integers.")
    if mode == "sorted" and ids.shape[-1] > 1 and (np.diff(ids, axis=-1) < 0).any():
        pos = tuple(np.argwhere(np.diff(ids, axis=-1) < 0)[0].tolist())
        after = pos[:-1] + (pos[-1] + 1,)
        raise InvalidArgumentError(
            f"{op}: segment ids are not increasing: segment_ids{list(after)} = {ids[after]} "
            f"comes after {ids[pos]}; sort them, or use the unsorted_ op.")
    return ids


def _check_segment_ids_ok(jax: Any, ids: Any, mode: str, num_segments: int | None,
                          op: str) -> Any:
    jnp = jax.numpy
    if mode == "unsorted":
        return jnp.all(ids < num_segments)
    ok = jnp.all(ids >= 0)
    if mode == "sorted" and ids.shape[-1] > 1:
        ok = ok & jnp.all(ids[..., 1:] >= ids[..., :-1])
    return ok


check_segment_ids_p = define(
    Primitive("check_segment_ids", _check_segment_ids_impl, effects=(NO_DERIVATIVE,)),
    # Batched: the batch axis first, so a sorted line stays on the last axis.
    batch=lambda vals, dims, **params: (
        bind(check_segment_ids_p, move_to_front(vals[0], dims[0]), **params), 0),
    lower=Lowering(lambda jax, ids, **params: ids, check=_check_segment_ids_ok))


# ------------------------------------------------------------------ segment_max, segment_min
# out[s] = the extremum of the rows x[i] with ids[i] = s (ids in [0, num_segments)),
# starting from the identity: the dtype's finite extreme (`finite`, the unsorted ops') or
# infinity (the sorted ops'); a segment without rows gets `empty` where it is not None.
# Derivative: each row's share of its segment's extremum, 1/k for the k entries equal to
# it (0 for the others), as reduce_max's.
def _identity(dtype: np.dtype, which: str, finite: bool) -> Any:
    if _dt.kind(dtype) == "f":
        if not finite:
            return -np.inf if which == "max" else np.inf
        info: Any = np.finfo(dtype)
    else:
        info = np.iinfo(dtype)
    return info.min if which == "max" else info.max


def _extremum_impl(which: str) -> Any:
    ufunc = np.maximum if which == "max" else np.minimum

    def impl(x: np.ndarray, ids: np.ndarray, num_segments: int, empty: Any,
             finite: bool) -> np.ndarray:
        # float16 and bfloat16 in float32: exact for an extremum, and what ufunc.at handles
        work = x.astype(np.float32) if x.dtype.itemsize == 2 and _dt.kind(x.dtype) == "f" else x
        out = np.full((num_segments,) + x.shape[1:], _identity(x.dtype, which, finite),
                      work.dtype)
        ufunc.at(out, ids, work)
        if empty is not None:
            out[np.bincount(ids, minlength=num_segments) == 0] = empty
        return out.astype(x.dtype, copy=False)
    return impl


def _extremum_lower(which: str) -> Any:
    def lower(jax: Any, x: Any, ids: Any, num_segments: int, empty: Any, finite: bool) -> Any:
        jnp = jax.numpy
        out = jnp.full((num_segments,) + x.shape[1:], _identity(np.dtype(x.dtype), which,
                                                                finite), x.dtype)
        out = out.at[ids].max(x) if which == "max" else out.at[ids].min(x)
        if empty is None:
            return out
        count = jnp.zeros((num_segments,), np.int32).at[ids].add(1)
        return jnp.where(jnp.reshape(count, (-1,) + (1,) * (x.ndim - 1)) > 0, out,
                         jnp.asarray(empty, x.dtype))
    return lower


def _shares(ans: Tensor, x: Tensor, ids: Tensor, num_segments: int) -> Tensor:
    """Each entry's share of its segment's extremum: 1/k for the k entries equal to it."""
    hit = float_mask(bind(equal_p, x, bind(gather_p, ans, ids, axis=0)), x)
    count = bind(gather_transpose_p, hit, ids, axis=0,
                 shape=(num_segments,) + shape_of(x)[1:])
    # A segment none of whose entries equals its value (an infinite one, held at the
    # finite extreme) has no share to give: divide by at least 1.
    count = bind(select_p, bind(greater_equal_p, count, Tensor(np.ones((), count._value.dtype))),
                 count, Tensor(np.ones((), count._value.dtype)))
    return bind(divide_p, hit, bind(gather_p, count, ids, axis=0))


def _front(v: Tensor, d: int | None, size: int) -> Tensor:
    """v with its batch axis first, an unbatched v broadcast to `size` examples."""
    if d is not None:
        return move_to_front(v, d)
    return bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape_of(v)),
                shape=(size,) + shape_of(v))


def _extremum_batch(prim: Primitive) -> dict:
    def rule(vals: tuple, dims: tuple, num_segments: int, **params: Any) -> tuple:
        (x, ids), (dx, di) = vals, dims
        if di is None:  # one set of ids: the examples become a column of the rows
            return bind(prim, move_axis(x, dx, 1), ids, num_segments=num_segments,
                        **params), 1
        # Each example's ids offset by b * num_segments, into one [B * n] set of segments.
        size = dims.size
        x, ids = _front(x, dx, size), move_to_front(ids, di)
        m, rest = shape_of(ids)[1], shape_of(x)[2:]
        offsets = (np.arange(size) * num_segments).astype(ids._value.dtype).reshape(size, 1)
        flat = bind(reshape_p, bind(add_p, ids, Tensor(offsets)), shape=(size * m,))
        out = bind(prim, bind(reshape_p, x, shape=(size * m,) + rest), flat,
                   num_segments=size * num_segments, **params)
        return bind(reshape_p, out, shape=(size, num_segments) + rest), 0
    return {"batch": rule}


def _extremum_tangent(t: Tensor, ans: Tensor, x: Tensor, ids: Tensor, num_segments: int,
                      **params: Any) -> Tensor:
    return bind(gather_transpose_p, bind(multiply_p, t, _shares(ans, x, ids, num_segments)),
                ids, axis=0, shape=(num_segments,) + shape_of(x)[1:])


def _extremum_cotangent(g: Tensor, ans: Tensor, x: Tensor, ids: Tensor, num_segments: int,
                        **params: Any) -> Tensor:
    return bind(multiply_p, bind(gather_p, g, ids, axis=0), _shares(ans, x, ids, num_segments))


def _extremum(which: str) -> Primitive:
    return define(
        Primitive(f"segment_{which}", _extremum_impl(which)),
        per_input(jvp=(_extremum_tangent, None), vjp=(_extremum_cotangent, None),
                  reads=("ans x ids", "")),
        _extremum_batch, lower=_extremum_lower(which), curvature=PIECEWISE_LINEAR,
        sparsity=scatter_deps(lambda numbered, vals, **params: np.take(numbered, vals[1], 0)))


segment_max_p = _extremum("max")
segment_min_p = _extremum("min")


# ------------------------------------------------------------------ mask_indices
# The positions of the `size` nonzero entries of each line (last axis) of a mask, which
# the op read (NOTE(counted-shape) in ops/sorting.py); leading axes are a vmap's examples.
def _mask_indices_impl(mask: np.ndarray, size: int) -> np.ndarray:
    lines = mask.reshape((int(np.prod(mask.shape[:-1], dtype=np.int64)), mask.shape[-1]))
    rows, cols = np.nonzero(lines)
    if rows.size != size * lines.shape[0] or np.ptp(np.bincount(rows, minlength=lines.shape[0])):
        raise InvalidArgumentError(f"boolean_mask: the mask selects other than {size} entries "
                                   "per example, the count it was traced or batched with.")
    return cols.astype(_INT64).reshape(mask.shape[:-1] + (size,))


def _mask_indices_lower(jax: Any, mask: Any, size: int) -> Any:
    jnp = jax.numpy
    lines = jnp.reshape(mask, (int(np.prod(mask.shape[:-1], dtype=np.int64)), mask.shape[-1]))
    cols = jax.vmap(lambda line: jnp.nonzero(line, size=size)[0])(lines)
    return jnp.reshape(cols, mask.shape[:-1] + (size,)).astype(_INT64)


mask_indices_p = define(
    Primitive("mask_indices", _mask_indices_impl, effects=(NO_DERIVATIVE,)),
    batch=lambda vals, dims, size: (
        bind(mask_indices_p, move_to_front(vals[0], dims[0]), size=size), 0),
    lower=_mask_indices_lower)


# ================================================================== helpers
def _rows(x: Tensor, rows: int) -> Tensor:
    """The first `rows` rows of x."""
    return x if shape_of(x)[0] == rows else bind(getitem_p, x, key=(slice(0, rows),))


def _reshaped(x: Tensor, shape: tuple) -> Tensor:
    return x if shape_of(x) == shape else bind(reshape_p, x, shape=shape)


def _segment_prod(x: Tensor, ids: Tensor, rows: int, ordered: bool) -> Tensor:
    """Per segment, the product of the rows x[i] with ids[i] = s (1 for none): a running
    product along the rows sorted by id, doubling its reach at each step and never
    crossing into another segment, whose last row per segment is scattered into ones."""
    m, rest = shape_of(x)[0], shape_of(x)[1:]
    one = np.ones((), x._value.dtype)
    if m == 0:  # the empty product, still connected to x
        summed = bind(gather_transpose_p, x, ids, axis=0, shape=(rows,) + rest)
        return bind(add_p, summed, Tensor(one))
    if not ordered:
        perm = bind(argsort_p, ids, axis=0, descending=False, dtype=_INT64)
        ids, x = bind(gather_p, ids, perm, axis=0), bind(gather_p, x, perm, axis=0)
    lift = (1,) * len(rest)
    y, step = x, 1
    while step < m:
        head = bind(getitem_p, y, key=(slice(0, step),))
        later = bind(getitem_p, ids, key=(slice(step, None),))
        same = bind(equal_p, later, bind(getitem_p, ids, key=(slice(0, m - step),)))
        earlier = bind(getitem_p, y, key=(slice(0, m - step),))
        factor = bind(select_p, _reshaped(same, (m - step,) + lift), earlier, Tensor(one))
        y = bind(concat_p, head, bind(multiply_p, bind(getitem_p, y, key=(slice(step, None),)),
                                      factor), axis=0)
        step *= 2
    # The last row of each run of equal ids holds its segment's product; the others go
    # to a spare row past the end.
    nxt = bind(concat_p, bind(getitem_p, ids, key=(slice(1, None),)),
               Tensor(np.full((1,), -1, ids._value.dtype)), axis=0)
    target = bind(select_p, bind(not_equal_p, ids, nxt), ids,
                  Tensor(np.asarray(rows, ids._value.dtype)))
    ones = full_of((rows + 1,) + tuple(rest), 1, x._value.dtype)
    return _rows(bind(scatter_update_p, ones, target, y), rows)


def _counts(ids: Tensor, rows: int, like: Tensor) -> Tensor:
    """How many rows each segment has (at least 1), of like's dtype (counted in its real
    counterpart), shaped to divide a result of like's rank."""
    dtype = like._value.dtype
    real = np.dtype(dtype.char.lower()) if dtype.kind == "c" else dtype
    one = Tensor(np.ones((), real))
    count = bind(gather_transpose_p, full_of(shape_of(ids), 1, real), ids, axis=0,
                 shape=(rows,))
    count = bind(select_p, bind(greater_equal_p, count, one), count, one)
    if real != dtype:
        count = bind(cast_p, count, dtype=dtype)
    return _reshaped(count, (rows,) + (1,) * (len(shape_of(like)) - 1))


def _reduce(kind: str, x: Tensor, ids: Tensor, rows: int, ordered: bool) -> Tensor:
    """Rows of x [m, ...] reduced into `rows` segments by ids [m] (each in [0, rows))."""
    rest = shape_of(x)[1:]
    if kind in ("max", "min"):
        prim = segment_max_p if kind == "max" else segment_min_p
        return bind(prim, x, ids, num_segments=rows, empty=0 if ordered else None,
                    finite=not ordered)
    if kind == "prod":
        return _segment_prod(x, ids, rows, ordered)
    return bind(gather_transpose_p, x, ids, axis=0, shape=(rows,) + rest)


_KINDS = {"sum": "fciu", "mean": "fciu", "max": "fiu", "min": "fiu", "prod": "fciu",
          "sqrt_n": "fc"}


def _data(data: Any, kind: str, op: str) -> Tensor:
    x = as_tensor(data, op, "data")
    check_dtype(x, _KINDS[kind], op, "data")
    return x


def _finish(kind: str, total: Tensor, ids: Tensor, rows: int, x: Tensor,
            ordered: bool) -> Tensor:
    """The mean or sqrt_n from a sum; the others as they are."""
    if kind not in ("mean", "sqrt_n"):
        return total
    count = _counts(ids, rows, total)
    if kind == "sqrt_n":
        return bind(divide_p, total, bind(sqrt_p, count))
    if _dt.kind(x._value.dtype) not in "iu":
        return bind(divide_p, total, count)
    if not ordered:
        return truediv(total, count)  # as TensorFlow: a float mean of integers
    # The sorted op's integer mean truncates toward zero, as TensorFlow's kernel.
    return bind(multiply_p, bind(floordiv_p, bind(abs_p, total), count),
                bind(sign_p, total))


# ================================================================== public ops: segments
def _segment(kind: str, data: Any, segment_ids: Any) -> Tensor:
    op = f"segment_{kind}"
    x = _data(data, kind, op)
    ids = int_tensor(segment_ids, op, "segment_ids")
    if len(shape_of(ids)) != 1:
        raise InvalidArgumentError(f"{op}: `segment_ids` should be a vector; got shape "
                                   f"{shape_of(ids)}.")
    if not shape_of(x) or shape_of(x)[0] != shape_of(ids)[0]:
        raise InvalidArgumentError(
            f"{op}: `segment_ids` (shape {shape_of(ids)}) should be the same size as "
            f"dimension 0 of `data` (shape {shape_of(x)}).")
    ids = bind(check_segment_ids_p, ids, mode="sorted", num_segments=None, op=op)
    rows = line_count(ids, "bins", op)
    total = _reduce("sum" if kind == "mean" else kind, x, ids, rows, ordered=True)
    return _finish(kind, total, ids, rows, x, ordered=True)


def _unsorted(kind: str, data: Any, segment_ids: Any, num_segments: Any) -> Tensor:
    op = f"unsorted_segment_{kind}"
    x = _data(data, kind, op)
    ids = int_tensor(segment_ids, op, "segment_ids")
    xs, ish = shape_of(x), shape_of(ids)
    if xs[:len(ish)] != ish:
        raise InvalidArgumentError(f"{op}: data.shape = {list(xs)} does not start with "
                                   f"segment_ids.shape = {list(ish)}.")
    if np.ndim(num_segments) != 0:
        raise InvalidArgumentError(f"{op}: `num_segments` should be a scalar, not shape "
                                   f"{np.shape(num_segments)}.")
    n = int_arg(num_segments, op, "num_segments")
    if n < 0:
        raise InvalidArgumentError(f"{op}: `num_segments` == {n} must not be negative.")
    ids = bind(check_segment_ids_p, ids, mode="unsorted", num_segments=n, op=op)
    m, rest = math.prod(ish), xs[len(ish):]
    flat = _reshaped(ids, (m,))
    if flat._value.dtype != _INT64:  # room for the spare segment n (int8 ids, n = 200)
        flat = bind(cast_p, flat, dtype=_INT64)
    # Rows of negative id go to a spare segment n, cut off below.
    spare = bind(select_p, bind(less_p, flat, Tensor(np.int64(0))), Tensor(np.int64(n)), flat)
    rows = _reshaped(x, (m,) + rest)
    total = _reduce("sum" if kind in ("mean", "sqrt_n") else kind, rows, spare, n + 1,
                    ordered=False)
    return _rows(_finish(kind, total, spare, n + 1, x, ordered=False), n)


def segment_sum(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    return _segment("sum", data, segment_ids)


def segment_mean(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    return _segment("mean", data, segment_ids)


def segment_max(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    return _segment("max", data, segment_ids)


def segment_min(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    return _segment("min", data, segment_ids)


def segment_prod(data: Any, segment_ids: Any, name: str | None = None) -> Tensor:
    return _segment("prod", data, segment_ids)


def unsorted_segment_sum(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    return _unsorted("sum", data, segment_ids, num_segments)


def unsorted_segment_mean(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    return _unsorted("mean", data, segment_ids, num_segments)


def unsorted_segment_max(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    return _unsorted("max", data, segment_ids, num_segments)


def unsorted_segment_min(data: Any, segment_ids: Any, num_segments: Any,
                         name: str | None = None) -> Tensor:
    return _unsorted("min", data, segment_ids, num_segments)


def unsorted_segment_prod(data: Any, segment_ids: Any, num_segments: Any,
                          name: str | None = None) -> Tensor:
    return _unsorted("prod", data, segment_ids, num_segments)


def unsorted_segment_sqrt_n(data: Any, segment_ids: Any, num_segments: Any,
                            name: str | None = None) -> Tensor:
    return _unsorted("sqrt_n", data, segment_ids, num_segments)


# What each reduces, what a segment without rows gets, and an example's result.
_SEGMENT_DOCS = {
    "sum": ("sum", "0", "3., 0., 7.", "4., 2., 0., 4."),
    "mean": ("mean (integers: truncated toward zero by the sorted op, a float mean by the "
             "unsorted one, as TensorFlow)", "0", "1.5, 0. , 3.5", "2., 2., 0., 4."),
    "max": ("maximum; where several entries tie, the gradient is split equally among them, "
            "as TensorFlow's", "0 (the sorted op) or the dtype's lowest value (the unsorted "
            "one), as TensorFlow", "2., 0., 4.", " 3.0000000e+00,  2.0000000e+00, "
            "-3.4028235e+38,  4.0000000e+00"),
    "min": ("minimum, ties as the maximum's", "0 (the sorted op) or the dtype's highest "
            "value (the unsorted one)", "1., 0., 3.", "1.0000000e+00, 2.0000000e+00, "
            "3.4028235e+38, 4.0000000e+00"),
    "prod": ("product (a running product, never a division, so its gradient is exact where "
             "entries are 0)", "1", " 2.,  1., 12.", "3., 2., 1., 4."),
    "sqrt_n": ("sum divided by the square root of the segment's number of rows (floating "
               "dtypes)", "0", "", "2.828427, 2.      , 0.      , 4.      "),
}


def _document() -> None:
    for kind, (what, empty, sorted_out, unsorted_out) in _SEGMENT_DOCS.items():
        if sorted_out:
            fn = globals()[f"segment_{kind}"]
            fn.__doc__ = (
                f"The {what} of the rows of `data` in each segment: row s of the result "
                f"reduces the rows data[i] with segment_ids[i] = s.\n\n`segment_ids` is a "
                f"sorted vector of non-negative ids, one per row (unsorted or negative ids "
                f"raise). The result has max(segment_ids) + 1 rows, {empty} for an id "
                f"without rows; that number is read from the ids (a traced function guards "
                f"it).\n\nExample:\n    >>> import tapeflow as tf\n    >>> "
                f"tf.math.segment_{kind}(tf.constant([1., 2., 3., 4.]), [0, 0, 2, 2]).numpy()"
                f"\n    array([{sorted_out}], dtype=float32)\n")
        fn = globals()[f"unsorted_segment_{kind}"]
        fn.__doc__ = (
            f"The {what} of the slices of `data` in each of `num_segments` segments: row s "
            f"of the result reduces the slices data[i...] with segment_ids[i...] = s.\n\n"
            f"`segment_ids` has the shape of leading axes of `data`, in any order; slices of "
            f"negative id are dropped and an id >= num_segments raises. A segment without "
            f"slices gets {empty}.\n\nExample:\n    >>> import tapeflow as tf\n    >>> "
            f"tf.math.unsorted_segment_{kind}(tf.constant([1., 2., 3., 4.]), [0, 1, 0, 3], "
            f"4).numpy()\n    array([{unsorted_out}], dtype=float32)\n")


_document()


# ================================================================== public ops: the others
_BINCOUNT_TYPES = ("int32", "int64", "float32", "float64")


def bincount(arr: Any, weights: Any = None, minlength: Any = None, maxlength: Any = None,
             dtype: Any = _dt.int32, name: str | None = None, axis: Any = None,
             binary_output: bool = False) -> Tensor:
    """How often each value 0, 1, ..., occurs in the non-negative integer tensor `arr`
    (with `weights`, the sum of their weights, of the weights' dtype): max(arr) + 1 bins,
    at least `minlength` and at most `maxlength` (larger values are dropped).

    `axis` None or 0 counts all of arr; -1 counts each row of a 2-D arr. `binary_output`
    gives 1 for every value present. The number of bins is read from the values (a traced
    function guards it). The result's gradient with respect to `weights` adds up the
    cotangents of each entry's bin (TensorFlow's has none).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.bincount(tf.constant([1, 1, 3]), minlength=5).numpy()
        array([0, 2, 0, 1, 0], dtype=int32)
    """
    op = "bincount"
    a = as_tensor(arr, op, "arr")
    if _dt.kind(a._value.dtype) == "f":
        a = bind(cast_p, a, dtype=np.dtype(np.int32))  # as TensorFlow
    a = int_tensor(a, op, "arr")
    if weights is not None and binary_output:
        raise InvalidArgumentError(f"{op}: arguments `binary_output` and `weights` are "
                                   "mutually exclusive; give only one.")
    if axis not in (None, 0, -1):
        raise InvalidArgumentError(f"{op}: `axis` must be None, 0 or -1; got {axis!r}.")
    per_row = axis == -1 and len(shape_of(a)) == 2
    if axis == -1 and len(shape_of(a)) > 2:
        raise InvalidArgumentError(f"{op}: with axis=-1, `arr` must have rank at most 2; got "
                                   f"shape {shape_of(a)}.")
    if weights is None:
        out = _dt.as_dtype(dtype)
        if out.name not in _BINCOUNT_TYPES:
            raise InvalidArgumentError(f"{op}: `dtype` is {out.name}; expected one of "
                                       f"{', '.join(_BINCOUNT_TYPES)}.")
        w = full_of(shape_of(a), 1, out._np)
    else:
        w = as_tensor(weights, op, "weights")
        check_dtype(w, "fiu", op, "weights")
        if shape_of(w) != shape_of(a):
            raise InvalidArgumentError(f"{op}: `weights` (shape {shape_of(w)}) must have the "
                                       f"shape of `arr` ({shape_of(a)}).")
    a = bind(check_segment_ids_p, a, mode="bincount", num_segments=None, op=op)
    m = math.prod(shape_of(a))
    flat = bind(cast_p, _reshaped(a, (m,)), dtype=_INT64)
    n = line_count(flat, "bins", op)
    if minlength is not None:
        n = max(n, int_arg(minlength, op, "minlength"))
    if maxlength is not None:
        n = min(n, max(int_arg(maxlength, op, "maxlength"), 0))
    lines = shape_of(a)[0] if per_row else 1
    if per_row:  # row r's values count into bins r * n ...
        offsets = np.repeat(np.arange(lines, dtype=np.int64) * n, shape_of(a)[1])
        ids = bind(add_p, flat, Tensor(offsets))
    else:
        ids = flat
    # Values past the last bin (maxlength) go to a spare bin, cut off below.
    ids = bind(select_p, bind(less_p, flat, Tensor(np.int64(n))), ids,
               Tensor(np.int64(lines * n)))
    counts = _rows(bind(gather_transpose_p, _reshaped(w, (m,)), ids, axis=0,
                        shape=(lines * n + 1,)), lines * n)
    if binary_output:
        zero = np.zeros((), counts._value.dtype)
        counts = bind(cast_p, bind(not_equal_p, counts, Tensor(zero)), dtype=counts._value.dtype)
    return _reshaped(counts, (lines, n) if per_row else (n,))


def boolean_mask(tensor: Any, mask: Any, axis: Any = None, name: str = "boolean_mask") -> Tensor:
    """The entries of `tensor` where `mask` is true (nonzero): `mask` covers the axes
    axis .. axis + rank(mask) - 1 of tensor, which the result replaces by one axis of the
    selected entries, in row-major order.

    The gradient puts each cotangent back where its entry came from (zeros elsewhere).
    The number of selected entries is read from the mask (a traced function guards that
    number; under vmap every example must select as many).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
        >>> tf.boolean_mask(x, [True, False, True]).numpy()
        array([[1., 2.],
               [5., 6.]], dtype=float32)
    """
    op = "boolean_mask"
    x = as_tensor(tensor, op, "tensor")
    m = as_tensor(mask, op, "mask")
    check_dtype(m, "biuf", op, "mask")
    xs, ms = shape_of(x), shape_of(m)
    if not ms:
        raise InvalidArgumentError(f"{op}: `mask` cannot be a scalar.")
    ax = 0 if axis is None else int_arg(axis, op, "axis")
    ax = ax + len(xs) if ax < 0 else ax
    if not 0 <= ax <= len(xs) - len(ms) or xs[ax:ax + len(ms)] != ms:
        raise InvalidArgumentError(f"{op}: `mask` (shape {ms}) must match dimensions "
                                   f"{ax} .. {ax + len(ms) - 1} of `tensor` (shape {xs}).")
    p = math.prod(ms)
    flat = _reshaped(m, (p,))
    picked = bind(mask_indices_p, flat, size=line_count(flat, "nonzero", op))
    return bind(gather_p, _reshaped(x, xs[:ax] + (p,) + xs[ax + len(ms):]), picked, axis=ax)


def sequence_mask(lengths: Any, maxlen: Any = None, dtype: Any = _dt.bool,
                  name: str | None = None) -> Tensor:
    """A mask of shape lengths.shape + [maxlen] whose entry [..., j] is j < lengths[...].

    Without `maxlen` it is max(lengths) (read from the values: a traced function guards
    it), and float lengths are compared as they are; with it, they are truncated to
    integers first, as TensorFlow. The mask is cast to `dtype`.

    Example:
        >>> import tapeflow as tf
        >>> tf.sequence_mask([1, 3], 4).numpy()
        array([[ True, False, False, False],
               [ True,  True,  True, False]])
    """
    op = "sequence_mask"
    lens = as_tensor(lengths, op, "lengths")
    check_dtype(lens, "iuf", op, "lengths")
    if maxlen is None:
        n = max(line_count(_reshaped(lens, (-1,)), "bins", op) - 1, 0)
    else:
        if np.ndim(maxlen) != 0:
            raise InvalidArgumentError(f"{op}: `maxlen` must be a scalar; got shape "
                                       f"{np.shape(maxlen)}.")
        n = int_arg(maxlen, op, "maxlen")
        if n < 0:
            raise InvalidArgumentError(f"{op}: `maxlen` must be non-negative; got {n}.")
        if _dt.kind(lens._value.dtype) == "f":
            lens = bind(cast_p, lens, dtype=_INT64)
    positions = Tensor(np.arange(n).astype(lens._value.dtype))
    out = bind(less_p, positions, _reshaped(lens, shape_of(lens) + (1,)))
    target = _dt.as_dtype(dtype)._np
    return out if target == np.bool_ else bind(cast_p, out, dtype=target)


def band_part(input: Any, num_lower: Any, num_upper: Any,  # noqa: A002
              name: str | None = None) -> Tensor:
    """The band of each matrix (the last two axes): entry [i, j] is kept where
    i - j <= num_lower and j - i <= num_upper (a negative bound keeps that whole
    triangle), zeroed elsewhere. band_part(x, -1, 0) is the lower triangle.

    The gradient is the cotangent's band.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.band_part(tf.ones([3, 3]), 1, 0).numpy()
        array([[1., 0., 0.],
               [1., 1., 0.],
               [0., 1., 1.]], dtype=float32)
    """
    op = "band_part"
    x = as_tensor(input, op, "input")
    shape = shape_of(x)
    if len(shape) < 2:
        raise InvalidArgumentError(f"{op}: `input` must have rank >= 2 (a matrix or a batch "
                                   f"of matrices); got shape {shape}.")
    rows, cols = shape[-2:]
    lower, upper = int_arg(num_lower, op, "num_lower"), int_arg(num_upper, op, "num_upper")
    for bound, arg, size, what in ((lower, "num_lower", rows, "rows"),
                                   (upper, "num_upper", cols, "columns")):
        if bound > size:
            raise InvalidArgumentError(f"{op}: `{arg}` must be negative or at most the number "
                                       f"of {what} ({size}); got {bound}.")
    i, j = np.arange(rows)[:, None], np.arange(cols)[None, :]
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    if keep.all():
        return x
    return bind(select_p, Tensor(keep), x, zeros_of(x))


def count_nonzero(input: Any, axis: Any = None, keepdims: Any = None,  # noqa: A002
                  dtype: Any = _dt.int64, name: str | None = None) -> Tensor:
    """How many entries of `input` are not zero (not False) over `axis` (all axes if
    None), counted in int64 and cast to `dtype` (as TensorFlow). NaN counts.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.count_nonzero(tf.constant([[0., 1.], [2., 3.]]), axis=1).numpy()
        array([1, 2])
    """
    op = "count_nonzero"
    x = as_tensor(input, op, "input")
    check_dtype(x, "biufc", op, "input")
    axes = normalize_axis(axis, len(shape_of(x)), op)
    nonzero = x if x._value.dtype == np.bool_ else \
        bind(not_equal_p, x, Tensor(np.zeros((), x._value.dtype)))
    total = bind(reduce_sum_p, bind(cast_p, nonzero, dtype=_INT64), axis=axes,
                 keepdims=bool(keepdims))
    target = _dt.as_dtype(dtype)._np
    return total if target == _INT64 else bind(cast_p, total, dtype=target)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {
    **{f"{prefix}segment_{kind}": "math" for prefix in ("", "unsorted_")
       for kind in ("sum", "mean", "max", "min", "prod")},
    "unsorted_segment_sqrt_n": "math", "bincount": "math", "boolean_mask": "tf",
    "sequence_mask": "tf", "band_part": "linalg", "count_nonzero": "math",
}
