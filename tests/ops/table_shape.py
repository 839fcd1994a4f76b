"""Op-table rows of the shape primitives (src/tapeflow/ops/shape.py): identity,
stop_gradient (no derivative), concat and split.

split has several results: its rows return one tensor, the pieces joined again or one
piece alone, so the table's checks apply. Also here: the composites expand_dims,
stack, unstack, tile, reverse and pad. (reshape, transpose and broadcast_to are
structural primitives: table_structural.py.)
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, normal


def _np_split(x, sizes, axis):
    return np.split(x, np.cumsum(sizes[:-1]), axis=axis)


ROWS: list = [
    Row("identity", tf.identity, args(normal(5)), lambda x: x),
    Row("concat", lambda x, y: tf.concat([x, y, x], axis=1), args(normal(2, 3), normal(2, 1)),
        lambda x, y: np.concatenate([x, y, x], 1)),
    Row("stack", lambda x, y: tf.stack([x, y], axis=1), args(normal(2, 3), normal(2, 3)),
        lambda x, y: np.stack([x, y], 1), prims=("concat", "reshape")),
    # split: pieces joined in another order (every cotangent present)
    Row("split", lambda x: tf.concat(tf.split(x, [1, 3, 2], axis=1)[::-1], axis=1),
        args(normal(2, 6)), lambda x: np.concatenate(_np_split(x, [1, 3, 2], 1)[::-1], 1),
        prims=("split", "concat")),
    # one piece used: the others' cotangents are symbolic zeros
    Row("split_one_piece", lambda x: tf.split(x, 3)[1], args(normal(6, 2)),
        lambda x: np.split(x, 3)[1], prims=("split",)),
    Row("unstack", lambda x: tf.stack(tf.unstack(x, axis=1)[::-1]), args(normal(3, 4)),
        lambda x: x.T[::-1], prims=("split", "reshape", "concat")),
    # composites
    Row("expand_dims", lambda x: tf.squeeze(tf.expand_dims(x, 1) * 2., axis=1),
        args(normal(3, 2)), lambda x: 2 * x, prims=("reshape",)),
    Row("tile", lambda x: tf.tile(x, [2, 1, 3]), args(normal(2, 3, 2)),
        lambda x: np.tile(x, (2, 1, 3)), prims=("reshape", "broadcast_to")),
    Row("repeat", lambda x: tf.repeat(x, 3, axis=1), args(normal(2, 3, 2)),
        lambda x: np.repeat(x, 3, axis=1), prims=("reshape", "broadcast_to")),
    Row("repeat_counts", lambda x: tf.repeat(x, [2, 0, 1], axis=-2), args(normal(2, 3, 2)),
        lambda x: np.repeat(x, [2, 0, 1], axis=-2), prims=("gather",)),
    Row("repeat_flat", lambda x: tf.repeat(x, 2), args(normal(2, 3)),
        lambda x: np.repeat(x, 2), prims=("reshape", "broadcast_to")),
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
]

NONDIFF_ROWS: list = [
    NondiffRow("stop_gradient", tf.stop_gradient, args(normal(4)), lambda x: x),
]

EXEMPT: dict = {}
