"""Op-table rows of the pooling primitives (src/tapeflow/ops/pooling.py): max_pool2d and
its two companions, the reverse rule's primitive and that one's own derivative, bound
directly with overlapping windows.

Random inputs give every window one clear maximum. avg_pool2d, a composite (a window
sum times a constant), has its rows here too, beside the window sum and its transpose.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.pooling import (_argmax, max_pool2d_argmax_p, max_pool2d_grad_grad_p,
                                  max_pool2d_grad_p, max_pool2d_p, max_pool2d_pick_p,
                                  max_pool2d_route_p, window_sum_p, window_sum_transpose_p)

from op_table import Row, args, normal, pool_reference

_POOL = {"ksize": (3, 2), "strides": (2, 1), "pads": ((1, 1), (0, 1))}  # overlapping windows
# A fixed argmax (the kernel offset of each window's maximum) of a [2, 6, 4, 2] image.
_ARG = _argmax(np.random.default_rng(7).standard_normal((2, 6, 4, 2)), **_POOL)

ROWS: list = [
    # The public op: the plain maximum, and under a tape or an accumulator the maximum with
    # its argmax kept (the rules route through it).
    Row("max_pool2d", lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), args(normal(2, 4, 5, 3)),
        lambda x: pool_reference(x, (2, 2), (2, 2), "VALID", np.max),
        prims=("max_pool2d", "max_pool2d_argmax")),
    Row("max_pool2d_same_overlapping", lambda x: tf.nn.max_pool2d(x, 3, [1, 2, 1, 1], "SAME"),
        args(normal(1, 5, 4, 2)), lambda x: pool_reference(x, (3, 3), (2, 1), "SAME", np.max),
        prims=("max_pool2d", "max_pool2d_argmax")),
    Row("max_pool2d_plain", lambda x: bind(max_pool2d_p, x, **_POOL), args(normal(2, 6, 4, 2)),
        lambda x: pool_reference(np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)),
                                        constant_values=-np.inf), (3, 2), (2, 1), "VALID", np.max),
        prims=("max_pool2d",)),
    Row("max_pool2d_argmax", lambda x: bind(max_pool2d_argmax_p, x, **_POOL)[0],
        args(normal(2, 6, 4, 2)),
        lambda x: pool_reference(np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0)),
                                        constant_values=-np.inf), (3, 2), (2, 1), "VALID", np.max)),
    Row("max_pool2d_route", lambda g: bind(max_pool2d_route_p, tf.constant(_ARG), g, input_hw=(6, 4), **_POOL),
        args(normal(2, 3, 4, 2)), None),
    Row("max_pool2d_pick", lambda t: bind(max_pool2d_pick_p, tf.constant(_ARG), t, **_POOL),
        args(normal(2, 6, 4, 2)), None),
    Row("max_pool2d_grad", lambda x, g: bind(max_pool2d_grad_p, x, g, **_POOL),
        args(normal(2, 6, 4, 2), normal(2, 3, 4, 2)), None),
    Row("max_pool2d_grad_grad", lambda x, t: bind(max_pool2d_grad_grad_p, x, t, **_POOL),
        args(normal(2, 6, 4, 2), normal(2, 6, 4, 2)), None),
    # average pooling is a window sum times a constant
    Row("avg_pool2d", lambda x: tf.nn.avg_pool2d(x, [2, 3], 2, "SAME"), args(normal(2, 5, 5, 2)),
        lambda x: pool_reference(x, (2, 3), (2, 2), "SAME", np.mean), prims=("window_sum",)),
    Row("avg_pool2d_apart", lambda x: tf.nn.avg_pool2d(x, 2, 2, "VALID"), args(normal(2, 4, 6, 3)),
        lambda x: pool_reference(x, (2, 2), (2, 2), "VALID", np.mean), prims=("window_sum",)),
    Row("window_sum", lambda x: bind(window_sum_p, x, **_POOL), args(normal(2, 6, 4, 2)),
        lambda x: pool_reference(np.pad(x, ((0, 0), (1, 1), (0, 1), (0, 0))), (3, 2), (2, 1),
                                 "VALID", np.sum)),
    Row("window_sum_transpose",
        lambda g: bind(window_sum_transpose_p, g, input_shape=(2, 6, 4, 2), **_POOL),
        args(normal(2, 3, 4, 2)), None),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
