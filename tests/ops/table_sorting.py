"""Op-table rows of src/tapeflow/ops/sorting.py: sort and top_k (gathers at argsort
indices), unique's values (a gather at the first occurrences), roll (slices and a
concatenation per axis), and the primitives without a derivative: argsort, searchsorted,
unique and line_count.

Random normal inputs have no ties, so every sort has one order and its derivative is
the gather's. unique's rows repeat values in a fixed pattern: the number of distinct
values, which the op reads, is the same at every seed.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, normal

_PATTERN = [0, 1, 0, 2, 3, 1, 3]  # four distinct values, repeated


def _repeating(rng):
    return rng.standard_normal(4)[_PATTERN]


def _np_unique(x):
    """TensorFlow's unique: values in order of first occurrence, each entry's index."""
    _, first, inverse, counts = np.unique(x, return_index=True, return_inverse=True,
                                          return_counts=True)
    order = np.argsort(first)
    rank = np.argsort(order)
    return x[first[order]], rank[inverse], counts[order]


def _np_searchsorted(s, v, side):
    return np.stack([np.searchsorted(a, b, side=side) for a, b in zip(s, v)])


ROWS: list = [
    Row("sort", lambda x: tf.sort(x), args(normal(3, 5)), lambda x: np.sort(x, -1),
        prims=("gather",)),
    Row("sort_descending_axis0", lambda x: tf.sort(x, axis=0, direction="DESCENDING"),
        args(normal(4, 3)), lambda x: -np.sort(-x, 0), prims=("gather",)),
    Row("top_k", lambda x: tf.math.top_k(x, 3).values, args(normal(2, 5)),
        lambda x: -np.sort(-x, -1)[..., :3], prims=("gather",)),
    Row("top_k_all", lambda x: tf.nn.top_k(x, k=4).values, args(normal(4)),
        lambda x: -np.sort(-x), prims=("gather",)),
    Row("unique_values", lambda x: tf.unique(x).y, args(normal(6)), lambda x: x,
        prims=("gather",)),
    Row("roll", lambda x: tf.roll(x, [1, -7], [0, 1]), args(normal(3, 4)),
        lambda x: np.roll(x, (1, -7), (0, 1)), prims=("getitem", "concat")),
    Row("roll_repeated_axis", lambda x: tf.roll(x, [2, 3], [-1, -1]), args(normal(2, 7)),
        lambda x: np.roll(x, 5, -1), prims=("getitem", "concat")),
]

NONDIFF_ROWS: list = [
    NondiffRow("argsort", lambda x: tf.argsort(x, axis=0, direction="DESCENDING"),
               args(normal(4, 3)), lambda x: np.argsort(-x, 0, kind="stable")),
    NondiffRow("argsort_ascending", lambda x: tf.argsort(x), args(normal(2, 5)),
               lambda x: np.argsort(x, -1, kind="stable"), prims=("argsort",)),
    NondiffRow("searchsorted", lambda s, v: tf.searchsorted(tf.sort(s), v, side="right"),
               args(normal(2, 5), normal(2, 3)),
               lambda s, v: _np_searchsorted(np.sort(s, -1), v, "right")),
    NondiffRow("unique", lambda x: tf.unique(x).idx, args(_repeating),
               lambda x: _np_unique(x)[1], prims=("unique", "line_count")),
    NondiffRow("unique_with_counts", lambda x: tf.unique_with_counts(x, tf.int64).count,
               args(_repeating), lambda x: _np_unique(x)[2], prims=("unique", "line_count")),
]

EXEMPT: dict = {}
