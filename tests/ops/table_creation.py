"""Op-table rows of the creation family (src/tapeflow/ops/creation.py).

The family defines no primitive: zeros, ones, eye, range and the shape queries compute
constants, and fill, linspace, one_hot and meshgrid are composites, whose rows are here.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
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
]

EXEMPT: dict = {}
