"""Op-table rows of src/tapeflow/ops/segments.py: the segment reductions over fixed ids
(sorted ones with an empty segment; unsorted ones with negative, dropped ids and 2-D
ids), bincount's weights, boolean_mask, band_part, and the primitives segment_max and
segment_min (through their ops); without a derivative, bincount's counts,
sequence_mask, count_nonzero, mask_indices, check_segment_ids.

Random normal inputs have no ties, so each segment's extremum is one entry; the rows of
the unsorted extrema leave no segment empty (an empty one holds the dtype's lowest or
highest value, which float16 and float32 do not share: tests/ops/test_segments.py checks
it). Counts the ops read (segments, bins, selected entries) are the same at every seed.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, normal, uniform

_SORTED = np.array([0, 0, 1, 3, 3, 3])  # segment 2 is empty
_UNSORTED = np.array([2, 0, -1, 2, 0, 4])  # row 2 is dropped; segments 1 and 3 are empty
_COVERED = np.array([2, 0, -1, 2, 0, 1])  # every segment of 3 has a row: no lowest value
_GRID = np.array([[1, -1, 0], [1, 2, 1]])  # 2-D ids over the leading axes of [2, 3, 2]
_MASK = np.array([True, False, True])
_MASK2 = np.array([[True, False], [False, False], [True, True]])
_SIGNS = np.array([1., -1., 1., 1., -1., 1.])  # four entries selected at every seed


def _reference(reduce, empty):
    """NumPy's segment reduction of the rows of x by ids into n segments."""
    def ref(x, ids, n):
        out = np.full((n,) + x.shape[ids.ndim:], empty, np.float64)
        rows = x.reshape((-1,) + x.shape[ids.ndim:])
        for s in range(n):
            hit = rows[ids.reshape(-1) == s]
            if len(hit):
                out[s] = reduce(hit)
        return out
    return ref


_SUM = _reference(lambda r: r.sum(0), 0.)
_MEAN = _reference(lambda r: r.mean(0), 0.)
_MAX = _reference(lambda r: r.max(0), 0.)
_MIN = _reference(lambda r: r.min(0), 0.)
_PROD = _reference(lambda r: r.prod(0), 1.)
_SQRT_N = _reference(lambda r: r.sum(0) / np.sqrt(len(r)), 0.)
_LOWEST, _HIGHEST = np.finfo(np.float64).min, np.finfo(np.float64).max
_UMAX = _reference(lambda r: r.max(0), _LOWEST)
_UMIN = _reference(lambda r: r.min(0), _HIGHEST)

_PROD_PRIMS = ("multiply", "scatter_update", "concat", "getitem", "select", "gather")


def _band(x, lower, upper):
    i, j = np.indices(x.shape[-2:])
    keep = ((lower < 0) | (i - j <= lower)) & ((upper < 0) | (j - i <= upper))
    return np.where(keep, x, 0.)


ROWS: list = [
    Row("segment_sum", lambda x: tf.math.segment_sum(x, _SORTED), args(normal(6, 2)),
        lambda x: _SUM(x, _SORTED, 4), prims=("gather_transpose",)),
    Row("segment_mean", lambda x: tf.math.segment_mean(x, _SORTED), args(normal(6)),
        lambda x: _MEAN(x, _SORTED, 4), prims=("gather_transpose", "divide")),
    Row("segment_max", lambda x: tf.math.segment_max(x, _SORTED), args(normal(6, 2)),
        lambda x: _MAX(x, _SORTED, 4), smooth=False),
    Row("segment_min", lambda x: tf.math.segment_min(x, _SORTED), args(normal(6)),
        lambda x: _MIN(x, _SORTED, 4), smooth=False),
    Row("segment_prod", lambda x: tf.math.segment_prod(x, _SORTED), args(normal(6, 2)),
        lambda x: _PROD(x, _SORTED, 4), prims=_PROD_PRIMS[:-1]),
    Row("unsorted_segment_sum", lambda x: tf.math.unsorted_segment_sum(x, _UNSORTED, 5),
        args(normal(6, 2)), lambda x: _SUM(x, _UNSORTED, 5),
        prims=("gather_transpose", "getitem")),
    Row("unsorted_segment_sum_grid", lambda x: tf.math.unsorted_segment_sum(x, _GRID, 3),
        args(normal(2, 3, 2)), lambda x: _SUM(x, _GRID, 3),
        prims=("gather_transpose", "getitem", "reshape")),
    Row("unsorted_segment_mean", lambda x: tf.math.unsorted_segment_mean(x, _UNSORTED, 5),
        args(normal(6)), lambda x: _MEAN(x, _UNSORTED, 5),
        prims=("gather_transpose", "divide")),
    Row("unsorted_segment_max", lambda x: tf.math.unsorted_segment_max(x, _COVERED, 3),
        args(normal(6, 2)), lambda x: _UMAX(x, _COVERED, 3), smooth=False,
        prims=("segment_max", "getitem")),
    Row("unsorted_segment_min", lambda x: tf.math.unsorted_segment_min(x, _GRID, 3),
        args(normal(2, 3, 2)), lambda x: _UMIN(x, _GRID, 3), smooth=False,
        prims=("segment_min", "getitem")),
    Row("unsorted_segment_prod", lambda x: tf.math.unsorted_segment_prod(x, _UNSORTED, 5),
        args(normal(6, 2)), lambda x: _PROD(x, _UNSORTED, 5), prims=_PROD_PRIMS),
    Row("unsorted_segment_sqrt_n",
        lambda x: tf.math.unsorted_segment_sqrt_n(x, _UNSORTED, 5), args(normal(6, 2)),
        lambda x: _SQRT_N(x, _UNSORTED, 5), prims=("gather_transpose", "sqrt", "divide")),
    Row("bincount_weights",
        lambda w: tf.math.bincount(np.array([3, 0, 3, 1, 5]), weights=w, minlength=7),
        args(normal(5)), lambda w: np.bincount([3, 0, 3, 1, 5], w, 7),
        prims=("gather_transpose", "getitem")),
    Row("boolean_mask", lambda x: tf.boolean_mask(x, _MASK), args(normal(3, 4)),
        lambda x: x[_MASK], prims=("gather",)),
    Row("boolean_mask_inner", lambda x: tf.boolean_mask(x, _MASK2, axis=1),
        args(normal(2, 3, 2)), lambda x: x[:, _MASK2], prims=("gather", "reshape")),
    Row("band_part", lambda x: tf.linalg.band_part(x, 1, 0), args(normal(2, 4, 3)),
        lambda x: _band(x, 1, 0), prims=("select",)),
    Row("band_part_upper", lambda x: tf.linalg.band_part(x, 0, -1), args(normal(3, 5)),
        lambda x: _band(x, 0, -1), prims=("select",)),
]


def _bins(rng):
    """Values in 0..4 and one 5: six bins at every seed."""
    return np.concatenate([rng.uniform(0., 4.9, 7), [5.5]])


def _lengths(rng):
    """Lengths below 4.5 and one 4.5: a mask of 5 positions at every seed."""
    return np.concatenate([rng.uniform(0., 4.4, 5), [4.5]])


NONDIFF_ROWS: list = [
    NondiffRow("bincount", lambda x: tf.math.bincount(tf.cast(x, tf.int32)), args(_bins),
               lambda x: np.bincount(x.astype(int)), prims=("check_segment_ids", "line_count")),
    NondiffRow("sequence_mask", lambda x: tf.sequence_mask(tf.cast(x, tf.int32), 5),
               args(uniform(0., 5.9, 2, 3)),
               lambda x: np.arange(5) < x.astype(int)[..., None], prims=("less",)),
    NondiffRow("sequence_mask_longest", lambda x: tf.sequence_mask(x), args(_lengths),
               lambda x: np.arange(5) < x[..., None], prims=("less", "line_count")),
    NondiffRow("count_nonzero", lambda x: tf.math.count_nonzero(tf.maximum(x, 0.), axis=1),
               args(normal(3, 4)), lambda x: (x > 0).sum(1), prims=("not_equal",)),
    NondiffRow("mask_indices", lambda x: tf.boolean_mask(tf.range(6), x > 0),
               args(lambda rng: rng.uniform(0.3, 2., 6) * _SIGNS),
               lambda x: np.arange(6)[x > 0], prims=("mask_indices", "line_count")),
]

EXEMPT: dict = {}
