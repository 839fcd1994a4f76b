"""Op-table rows for the ops in src/tapeflow/ops/array_ops.py (see tests/op_table.py).

The new primitives are `split` (multiple results; its rows return one tensor, the
pieces joined again or one piece alone, so the table's checks apply) and
`check_indices` (no derivative). Every composite has a row of its own, naming the
primitives it is built from.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, away_from_zero, normal, uniform  # noqa: F401

_ND_IDX = np.array([[1, 2], [0, 0], [1, 2], [2, 3]])    # a repeated tuple: the gradient adds up
_ND_BATCH_IDX = np.array([[[1], [0], [1]], [[2], [2], [0]]])  # batch_dims=1 over (2, 3, 4)
_BATCH_IDX = np.array([[3, 0, 3], [1, 2, 2]])            # gather batch_dims=1, axis=2
_TABLE = np.arange(12.).reshape(3, 4)


def _np_split(x, sizes, axis):
    return np.split(x, np.cumsum(sizes[:-1]), axis=axis)


ROWS: list = [
    # split: pieces joined in another order (every cotangent present)
    Row("split", lambda x: tf.concat(tf.split(x, [1, 3, 2], axis=1)[::-1], axis=1),
        args(normal(2, 6)), lambda x: np.concatenate(_np_split(x, [1, 3, 2], 1)[::-1], 1),
        prims=("split", "concat")),
    # one piece used: the others' cotangents are symbolic zeros
    Row("split_one_piece", lambda x: tf.split(x, 3)[1], args(normal(6, 2)),
        lambda x: np.split(x, 3)[1], prims=("split",)),
    Row("unstack", lambda x: tf.stack(tf.unstack(x, axis=1)[::-1]), args(normal(3, 4)),
        lambda x: x.T[::-1], prims=("split", "reshape", "concat")),
    Row("tile", lambda x: tf.tile(x, [2, 1, 3]), args(normal(2, 3, 2)),
        lambda x: np.tile(x, (2, 1, 3)), prims=("reshape", "broadcast_to")),
    Row("reverse", lambda x: tf.reverse(x, [0, -1]), args(normal(2, 3, 4)),
        lambda x: x[::-1, :, ::-1], prims=("getitem",)),
    Row("pad", lambda x: tf.pad(x, [[1, 2], [0, 1]]), args(normal(3, 4)),
        lambda x: np.pad(x, [(1, 2), (0, 1)]), prims=("getitem_transpose",)),
    Row("pad_constant_values", lambda x: tf.pad(x, [[1, 0], [2, 1]], constant_values=-1.5),
        args(normal(3, 4)), lambda x: np.pad(x, [(1, 0), (2, 1)], constant_values=-1.5),
        prims=("getitem_transpose", "select")),
    Row("pad_reflect", lambda x: tf.pad(x, [[2, 1], [1, 3]], mode="REFLECT"), args(normal(3, 4)),
        lambda x: np.pad(x, [(2, 1), (1, 3)], mode="reflect"), prims=("gather",)),
    Row("pad_symmetric", lambda x: tf.pad(x, [[3, 1], [0, 4]], mode="symmetric"),
        args(normal(3, 4)), lambda x: np.pad(x, [(3, 1), (0, 4)], mode="symmetric"),
        prims=("gather",)),
    Row("gather_nd", lambda p: tf.gather_nd(p, _ND_IDX), args(normal(3, 4, 2)),
        lambda p: p[tuple(_ND_IDX.T)], prims=("gather", "reshape")),
    Row("gather_nd_batch_dims", lambda p: tf.gather_nd(p, _ND_BATCH_IDX, batch_dims=1),
        args(normal(2, 3, 4)), lambda p: np.stack([p[b][_ND_BATCH_IDX[b, :, 0]] for b in range(2)]),
        prims=("gather", "reshape")),
    Row("gather_batch_dims", lambda p: tf.gather(p, _BATCH_IDX, axis=2, batch_dims=1),
        args(normal(2, 3, 4, 2)),
        lambda p: np.stack([np.take(p[b], _BATCH_IDX[b], axis=1) for b in range(2)]),
        prims=("gather", "transpose", "reshape")),
    Row("fill", lambda v: tf.fill([2, 3], v), args(normal()), lambda v: np.full((2, 3), v),
        prims=("broadcast_to",)),
    Row("linspace", lambda a, b: tf.linspace(a, b, 5, axis=-1), args(normal(2, 1), normal(3)),
        lambda a, b: np.linspace(a, b, 5, axis=-1),
        prims=("broadcast_to", "reshape", "subtract", "divide", "multiply", "add", "concat")),
]

NONDIFF_ROWS: list = [
    # Indices from floats (truncated); a gather_nd from a constant table carries no derivative.
    NondiffRow("check_indices", lambda x: tf.gather_nd(_TABLE, tf.cast(x, tf.int32)),
               args(uniform(0.0, 2.99, 5, 2)), lambda x: _TABLE[tuple(x.astype(int).T)]),
    # one_hot is a composite; the harness names a row by a non-differentiable primitive.
    # Indices -1 and 4 fall outside [0, 4): rows of off_value.
    NondiffRow("equal", lambda x: tf.one_hot(tf.cast(x, tf.int32), 4, axis=0),
               args(uniform(-1.99, 4.99, 6)),
               lambda x: (np.arange(4)[:, None] == np.trunc(x).astype(int)).astype(np.float32),
               prims=("equal", "select", "cast", "reshape")),
]

EXEMPT: dict = {}
