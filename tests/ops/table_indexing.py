"""Op-table rows of the indexing primitives (src/tapeflow/ops/indexing.py): getitem,
gather, their transposes (bound directly: their rules are what the others' reverse
rules run), scatter_update (tensor_scatter_nd_update, a repeated row's last update landing) with
last_writes and check_indices (no derivative);
gather_nd and gather with batch_dims, composites built on gather; tensor_scatter_nd_add
and scatter_nd, composites built on gather_transpose.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.indexing import (gather_transpose_p, getitem_transpose_dyn_p,
                                   getitem_transpose_p, last_writes_p)

from op_table import NondiffRow, Row, args, normal, uniform

_IDX = np.array([2, 0, 2, 1, 2])
_KEY = (slice(None, None, -1), None, slice(1, 3))
_ND_IDX = np.array([[1, 2], [0, 0], [1, 2], [2, 3]])    # a repeated tuple: the gradient adds up
_ND_BATCH_IDX = np.array([[[1], [0], [1]], [[2], [2], [0]]])  # batch_dims=1 over (2, 3, 4)
_BATCH_IDX = np.array([[3, 0, 3], [1, 2, 2]])            # gather batch_dims=1, axis=2
_TABLE = np.arange(12.).reshape(3, 4)
_ROWS_IDX = np.array([[3], [1]])
_ELEM_IDX = np.array([[2, 1], [0, 3], [1, 1]])
_REPEATED_IDX = np.array([[1], [2], [1]])  # row 1 twice: the last update lands


def _np_last_writes(x):
    i = x.astype(int) - 2
    i = np.where(i < 0, i + 4, i)
    return np.array([j == max(k for k in range(len(i)) if i[k] == i[j]) for j in range(len(i))])


def _update_ref(idx):
    def ref(x, u):
        out = x.copy()
        out[tuple(idx.T)] = u
        return out
    return ref


def _add_ref(idx):
    def ref(x, u):
        out = x.copy()
        np.add.at(out, tuple(idx.T), u)
        return out
    return ref

ROWS: list = [
    Row("getitem", lambda x: x[::-1, tf.newaxis, 1:3], args(normal(3, 4)), lambda x: x[_KEY]),
    Row("getitem_transpose", lambda g: bind(getitem_transpose_p, g, key=_KEY, shape=(3, 4)),
        args(normal(3, 1, 2)), None),
    # the zeros' shape read when the graph runs (a size-generic trace's getitem gradient)
    Row("getitem_transpose_dyn", lambda g: bind(
        getitem_transpose_dyn_p, g, tf.constant(np.array([3, 4], np.int64)), key=_KEY, lead=0),
        args(normal(3, 1, 2)), None),
    Row("gather", lambda p: tf.gather(p, _IDX, axis=1), args(normal(2, 3, 2)),
        lambda p: np.take(p, _IDX, axis=1)),
    Row("gather_transpose", lambda g: bind(gather_transpose_p, g, tf.constant(_IDX), axis=0,
                                           shape=(3, 2)), args(normal(5, 2)), None),
    Row("gather_nd", lambda p: tf.gather_nd(p, _ND_IDX), args(normal(3, 4, 2)),
        lambda p: p[tuple(_ND_IDX.T)], prims=("gather", "reshape")),
    Row("gather_nd_batch_dims", lambda p: tf.gather_nd(p, _ND_BATCH_IDX, batch_dims=1),
        args(normal(2, 3, 4)), lambda p: np.stack([p[b][_ND_BATCH_IDX[b, :, 0]] for b in range(2)]),
        prims=("gather", "reshape")),
    Row("gather_batch_dims", lambda p: tf.gather(p, _BATCH_IDX, axis=2, batch_dims=1),
        args(normal(2, 3, 4, 2)),
        lambda p: np.stack([np.take(p[b], _BATCH_IDX[b], axis=1) for b in range(2)]),
        prims=("gather", "transpose", "reshape")),
    # the scatters: rows (k = 1) and elements (k = 2); adds with a repeated index
    Row("tensor_scatter_nd_update", lambda x, u: tf.tensor_scatter_nd_update(x, _ROWS_IDX, u),
        args(normal(4, 2), normal(2, 2)), _update_ref(_ROWS_IDX), prims=("scatter_update",)),
    # a repeated row: the last update lands, the first one is overwritten (derivative 0)
    Row("tensor_scatter_nd_update_repeated",
        lambda x, u: tf.tensor_scatter_nd_update(x, _REPEATED_IDX, u),
        args(normal(4, 2), normal(3, 2)), _update_ref(_REPEATED_IDX), prims=("scatter_update",)),
    Row("tensor_scatter_nd_update_elements",
        lambda x, u: tf.tensor_scatter_nd_update(x, _ELEM_IDX, u), args(normal(3, 4), normal(3)),
        _update_ref(_ELEM_IDX), prims=("scatter_update",)),
    Row("tensor_scatter_nd_add", lambda x, u: tf.tensor_scatter_nd_add(x, _ND_IDX, u),
        args(normal(3, 4, 2), normal(4, 2)), _add_ref(_ND_IDX), prims=("gather_transpose",)),
    Row("scatter_nd", lambda u: tf.scatter_nd(_ND_IDX, u, [3, 4, 2]), args(normal(4, 2)),
        lambda u: _add_ref(_ND_IDX)(np.zeros((3, 4, 2)), u), prims=("gather_transpose",)),
]

NONDIFF_ROWS: list = [
    # which updates land: the last of each repeated row, negative rows from the end
    NondiffRow("last_writes", lambda x: bind(last_writes_p, tf.cast(x, tf.int32) - 2, n=4),
               args(uniform(0.0, 5.99, 7)), _np_last_writes),
    # Indices from floats (truncated); a gather_nd from a constant table carries no derivative.
    NondiffRow("check_indices", lambda x: tf.gather_nd(_TABLE, tf.cast(x, tf.int32)),
               args(uniform(0.0, 2.99, 5, 2)), lambda x: _TABLE[tuple(x.astype(int).T)]),
]

EXEMPT: dict = {}
