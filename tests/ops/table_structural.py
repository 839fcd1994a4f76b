"""Op-table rows of the structural primitives (src/tapeflow/ops/structural.py): add,
multiply, conj, cast, select, reshape, transpose, broadcast_to, fill, reduce_sum.

Their public ops belong to other families (tf.add to elementwise, tf.reshape to shape,
...), but their rows are here, beside the primitives' definitions.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.structural import conj_p, fill_p, shape_source

from op_table import NondiffRow, Row, args, normal



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
]

NONDIFF_ROWS: list = [
    NondiffRow("fill", lambda x: bind(fill_p, shape=shape_source(x), value=2.5,
                                      dtype=np.dtype(np.float32)),
               args(normal(2, 3)), lambda x: np.full((2, 3), 2.5, np.float32)),
]

EXEMPT: dict = {}
