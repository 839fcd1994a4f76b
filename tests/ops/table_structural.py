"""Op-table rows of the structural primitives (src/tapeflow/ops/structural.py): add,
multiply, conj, cast, select, reshape, transpose, broadcast_to, reduce_sum.

Their public ops belong to other families (tf.add to elementwise, tf.reshape to shape,
...), but their rows are here, beside the primitives' definitions.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.structural import (broadcast_dyn_p, conj_p, reshape_dyn_p, shape_p, size_p,
                                     sum_dyn_p)

from op_table import NondiffRow, Row, args, normal


def _sizes(*dims):
    # A shape operand as a size-generic trace makes it (NOTE(dynamic-shapes)): int64, 1-D.
    return tf.constant(np.array(dims, np.int64))

_COND = np.array([[True, False, True, False]] * 3)

# reduce_prod and cumprod are built from these
ROWS: list = [
    Row("add", tf.add, args(normal(3, 4), normal(4)), np.add),
    Row("multiply", tf.multiply, args(normal(3, 4), normal(4)), np.multiply),
    Row("conj", lambda x: bind(conj_p, x), args(normal(5)), np.conj),
    Row("select", lambda x, y: tf.where(_COND, x, y), args(normal(3, 4), normal(4)),
        lambda x, y: np.where(_COND, x, y)),
    Row("cast", lambda x: tf.cast(tf.cast(x, tf.complex128) * 2., x.dtype),
        args(normal(5)), lambda x: 2 * x),
    # reductions
    Row("reduce_sum", lambda x: tf.reduce_sum(x, axis=1, keepdims=True), args(normal(3, 4)),
        lambda x: x.sum(1, keepdims=True)),
    Row("reduce_sum_all", lambda x: tf.reduce_sum(x), args(normal(3, 4)), np.sum,
        prims=("reduce_sum",)),
    # shape
    Row("reshape", lambda x: tf.reshape(x, [4, -1]), args(normal(2, 6)),
        lambda x: x.reshape(4, -1)),
    Row("transpose", lambda x: tf.transpose(x, [2, 0, 1]), args(normal(2, 3, 4)),
        lambda x: x.transpose(2, 0, 1)),
    Row("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]), args(normal(3, 1)),
        lambda x: np.broadcast_to(x, (2, 3, 4))),
    # sizes read at replay (NOTE(dynamic-shapes)): an axis inserted, then broadcast; its
    # transpose; a reshape with -1; and each with a leading axis passed through (`lead`)
    Row("broadcast_dyn", lambda x: bind(broadcast_dyn_p, x, _sizes(2, 3, 4), lead=0,
                                        expand=(-2,)),
        args(normal(2, 4)), lambda x: np.broadcast_to(x[:, None, :], (2, 3, 4))),
    Row("broadcast_dyn_lead", lambda x: bind(broadcast_dyn_p, x, _sizes(3, 4), lead=1,
                                             expand=()),
        args(normal(2, 1, 4)), lambda x: np.broadcast_to(x, (2, 3, 4)),
        prims=("broadcast_dyn",)),
    Row("sum_dyn", lambda x: bind(sum_dyn_p, x, _sizes(2, 4), lead=0, expand=(-2,)),
        args(normal(3, 2, 3, 4)), lambda x: x.sum(axis=(0, 2))),
    Row("sum_dyn_lead", lambda x: bind(sum_dyn_p, x, _sizes(1, 4), lead=1, expand=()),
        args(normal(2, 3, 4)), lambda x: x.sum(axis=1, keepdims=True), prims=("sum_dyn",)),
    Row("reshape_dyn", lambda x: bind(reshape_dyn_p, x, _sizes(3, -1), lead=0),
        args(normal(2, 6)), lambda x: x.reshape(3, 4)),
    Row("reshape_dyn_lead", lambda x: bind(reshape_dyn_p, x, _sizes(3, 2), lead=1),
        args(normal(2, 6)), lambda x: x.reshape(2, 3, 2), prims=("reshape_dyn",)),
]

NONDIFF_ROWS: list = [
    NondiffRow("shape", lambda x: bind(shape_p, x, start=1, dtype=np.dtype(np.int64)),
               args(normal(2, 3, 4)), lambda x: np.array(x.shape[1:])),
    NondiffRow("size", lambda x: bind(size_p, x, axis=(0, 2), dtype=np.dtype(np.float32)),
               args(normal(2, 3, 4)), lambda x: np.float32(8)),
]

EXEMPT: dict = {}
