"""Op-table rows of the shape-tensor primitives (src/tapeflow/ops/sizes.py): shape and size,
which make integer tensors of an input's sizes, and broadcast_dyn, sum_dyn, reshape_dyn,
which take their shape from such a tensor (NOTE(dynamic-shapes))."""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.sizes import (broadcast_dyn_p, reshape_dyn_p, shape_p, size_check_p, size_p,
                                sum_dyn_p)
from tapeflow.ops.structural import shape_source

from op_table import NondiffRow, Row, args, normal


def _sizes(*dims):
    # A shape operand as tf.shape makes it: int64, 1-D.
    return tf.constant(np.array(dims, np.int64))


ROWS: list = [
    # an axis inserted, then broadcast; its transpose; a reshape with -1; and each with a
    # leading axis passed through (`lead`)
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
    # sizes as params: no inputs
    NondiffRow("shape", lambda x: bind(shape_p, sizes=shape_source(x)[1:],
                                       dtype=np.dtype(np.int64)),
               args(normal(2, 3, 4)), lambda x: np.array(x.shape[1:])),
    NondiffRow("size", lambda x: bind(size_p, sizes=shape_source(x)[::2],
                                      dtype=np.dtype(np.float32)),
               args(normal(2, 3, 4)), lambda x: np.float32(8)),
    NondiffRow("size_reciprocal", lambda x: bind(size_p, sizes=shape_source(x),
                                                 dtype=np.dtype(np.float64), reciprocal=True,
                                                 at_least=30),
               args(normal(2, 3, 4)), lambda x: np.float64(1 / 30), prims=("size",)),
    # a decision on sizes (NOTE(symbolic-sizes)): its answer, computed from them
    NondiffRow("size_check", lambda x: bind(size_check_p, check=shape_source(x)[1] > 2),
               args(normal(2, 3)), lambda x: np.bool_(True)),
]

EXEMPT: dict = {}
