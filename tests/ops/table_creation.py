"""Op-table rows of the creation family (src/tapeflow/ops/creation.py).

Zeros, ones, eye, range and the shape queries compute constants, and fill, linspace,
one_hot and meshgrid are composites, whose rows are here; so is the row of `range`, the
primitive of tf.range with tensor bounds in a size-generic trace.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.creation import basis, range_p
from op_table import NondiffRow, Row, args, normal, uniform

ROWS: list = [
    Row("fill", lambda v: tf.fill([2, 3], v), args(normal()), lambda v: np.full((2, 3), v),
        prims=("broadcast_to",)),
    Row("linspace", lambda a, b: tf.linspace(a, b, 5, axis=-1), args(normal(2, 1), normal(3)),
        lambda a, b: np.linspace(a, b, 5, axis=-1),
        prims=("broadcast_to", "reshape", "subtract", "divide", "multiply", "add", "concat")),
    Row("meshgrid", lambda x, y, z: tf.stack(tf.meshgrid(x, y, z)), args(normal(3), normal(2, 2),
                                                                      normal(2)),
        lambda x, y, z: np.stack(np.meshgrid(x, y.ravel(), z)), prims=("reshape", "broadcast_to")),
]

NONDIFF_ROWS: list = [
    # Indices -1 and 4 fall outside [0, 4): rows of off_value.
    NondiffRow("one_hot", lambda x: tf.one_hot(tf.cast(x, tf.int32), 4, axis=0),
               args(uniform(-1.99, 4.99, 6)),
               lambda x: (np.arange(4)[:, None] == np.trunc(x).astype(int)).astype(np.float32),
               prims=("equal", "select", "cast", "reshape")),
    # rows 1.. of the one-hot basis of x's shape; per example, repeated along x's first axis
    NondiffRow("basis", lambda x: basis(x, 1), args(normal(2, 3)),
               lambda x: np.eye(6)[1:].reshape(5, 2, 3)),
    NondiffRow("basis_per_example", lambda x: basis(x, 0, 2, per_example=True),
               args(normal(2, 3)),
               lambda x: np.broadcast_to(np.eye(3)[:2, None], (2, 2, 3)), prims=("basis",)),
    # range(1, 3 * size(x), 3): bounds that are tensors (read when a graph runs)
    NondiffRow("range", lambda x: bind(range_p, tf.constant(1), tf.size(x) * 3, tf.constant(3),
                                       dtype=np.dtype(np.int32)),
               args(normal(3)), lambda x: np.array([1, 4, 7], np.int32)),
]

EXEMPT: dict = {}
