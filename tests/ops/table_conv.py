"""Op-table rows of the convolution primitives (src/tapeflow/ops/conv.py): conv2d (NHWC,
with padding, strides and dilations) and its two transposes, bound directly with the
parameters conv2d's reverse rule gives them.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.conv import conv2d_filter_grad_p, conv2d_input_grad_p

from op_table import Row, args, normal


def conv_reference(x, w, strides=(1, 1), dilations=(1, 1), padding="VALID"):
    """Naive NHWC cross-correlation, one output pixel at a time (TensorFlow's SAME padding)."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    pads = []
    for size, k, s, d in ((h, kh, strides[0], dilations[0]), (wd, kw, strides[1], dilations[1])):
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            pads.append((0, 0))
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    oh = (xp.shape[1] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * strides[0]:i * strides[0] + (kh - 1) * dilations[0] + 1:dilations[0],
                       j * strides[1]:j * strides[1] + (kw - 1) * dilations[1] + 1:dilations[1], :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


ROWS: list = [
    Row("conv2d", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="SAME"),
        args(normal(2, 5, 6, 3), normal(3, 3, 3, 4)),
        lambda x, w: conv_reference(x, w, padding="SAME")),
    Row("conv2d_strided", lambda x, w: tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"),
        args(normal(1, 7, 6, 2), normal(3, 2, 2, 3)),
        lambda x, w: conv_reference(x, w, (2, 2), padding="SAME"), prims=("conv2d",)),
    Row("conv2d_dilated", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="VALID",
                                                    dilations=2),
        args(normal(1, 7, 7, 2), normal(2, 3, 2, 2)),
        lambda x, w: conv_reference(x, w, dilations=(2, 2)), prims=("conv2d",)),
    Row("conv2d_input_grad", lambda g, w: bind(conv2d_input_grad_p, g, w, strides=(2, 1),
                                               dilations=(1, 1), pads=((1, 1), (0, 1)),
                                               input_shape=(2, 6, 5, 3)),
        args(normal(2, 3, 5, 4), normal(3, 2, 3, 4)), None),
    Row("conv2d_filter_grad", lambda x, g: bind(conv2d_filter_grad_p, x, g, strides=(2, 1),
                                                dilations=(1, 1), pads=((1, 1), (0, 1)),
                                                filter_shape=(3, 2, 3, 4)),
        args(normal(2, 6, 5, 3), normal(2, 3, 5, 4)), None),
    # banded products (NOTE(banded-conv)): one channel, and the transposes with padding
    Row("conv2d_banded", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="VALID"),
        args(normal(2, 8, 10, 1), normal(5, 5, 1, 6)),
        lambda x, w: conv_reference(x, w), prims=("conv2d",)),
    Row("conv2d_input_grad_banded", lambda g, w: bind(conv2d_input_grad_p, g, w, strides=(1, 1),
                                                      dilations=(1, 1), pads=((2, 2), (1, 1)),
                                                      input_shape=(2, 6, 7, 2)),
        args(normal(2, 6, 7, 4), normal(5, 3, 2, 4)), None, prims=("conv2d_input_grad",)),
    Row("conv2d_filter_grad_banded", lambda x, g: bind(conv2d_filter_grad_p, x, g,
                                                       strides=(1, 1), dilations=(1, 1),
                                                       pads=((2, 2), (1, 1)),
                                                       filter_shape=(5, 3, 2, 4)),
        args(normal(2, 6, 7, 2), normal(2, 6, 7, 4)), None, prims=("conv2d_filter_grad",)),
    # a strided input gradient over output phases (NOTE(phase-conv)): 3x3 at stride 2 with
    # SAME padding; and 3x2 at strides (3, 2), whose blocks overhang an odd-sized image
    Row("conv2d_input_grad_phases", lambda g, w: bind(conv2d_input_grad_p, g, w,
                                                      strides=(2, 2), dilations=(1, 1),
                                                      pads=((0, 1), (1, 1)),
                                                      input_shape=(2, 7, 6, 3)),
        args(normal(2, 3, 3, 5), normal(3, 3, 3, 5)), None, prims=("conv2d_input_grad",)),
    Row("conv2d_input_grad_phases_odd", lambda g, w: bind(conv2d_input_grad_p, g, w,
                                                          strides=(3, 2), dilations=(1, 1),
                                                          pads=((1, 0), (0, 0)),
                                                          input_shape=(1, 8, 7, 2)),
        args(normal(1, 3, 3, 3), normal(3, 2, 2, 3)), None, prims=("conv2d_input_grad",)),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
