"""Op-table rows of src/tapeflow/ops/conv_variants.py: 1-D convolution, `convolution`,
the transposed convolutions, depthwise and separable convolution and 1-D pooling.

The family defines no primitive: each row names the primitives of ops/conv.py and
ops/pooling.py its op binds. The geometries are the remainder cases of SAME padding
(odd sizes, strides 2), grouped and channels-first operands, and dilations; the
references are naive NumPy loops, one output (or, for a transpose, one input) pixel at a
time.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf

from op_table import Row, args, normal, pool_reference
from table_conv import conv_reference


def same_pads(size, k, s, d=1):
    """TensorFlow's SAME padding (before, after) of one axis."""
    out = -(-size // s)
    total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
    return total // 2, total - total // 2


def grouped_reference(x, w, strides=(1, 1), dilations=(1, 1), padding="VALID"):
    """NHWC x with [kh, kw, c, O] w, grouped where x has G * c channels."""
    g = x.shape[-1] // w.shape[2]
    o = w.shape[3] // g
    return np.concatenate([conv_reference(x[..., i * w.shape[2]:(i + 1) * w.shape[2]],
                                          w[..., i * o:(i + 1) * o], strides, dilations, padding)
                           for i in range(g)], axis=-1)


def conv1d_reference(x, w, stride=1, dilation=1, padding="VALID"):
    """NWC x with [kw, c, O] w (grouped where x has G * c channels)."""
    return grouped_reference(x[:, None], w[None], (1, stride), (1, dilation), padding)[:, 0]


def depthwise_reference(x, w, strides=(1, 1), dilations=(1, 1), padding="VALID"):
    """NHWC x with [kh, kw, C, M] w: channel c * M + m from input channel c."""
    kh, kw, c, m = w.shape
    return grouped_reference(x, w.reshape(kh, kw, 1, c * m), strides, dilations, padding)


def transpose_reference(x, w, out_shape, strides, padding, dilations=(1, 1)):
    """conv2d_transpose by its definition: each input pixel spreads its values, times the
    filter taps, onto the padded output, which is then cropped."""
    n, h, wd, _ = x.shape
    kh, kw, co, _ = w.shape
    pads = [same_pads(out_shape[1 + a], (kh, kw)[a], strides[a], dilations[a])
            if padding == "SAME" else (0, 0) for a in range(2)]
    out = np.zeros((n, out_shape[1] + sum(pads[0]), out_shape[2] + sum(pads[1]), co))
    for i in range(h):
        for j in range(wd):
            for a in range(kh):
                for b in range(kw):
                    out[:, i * strides[0] + a * dilations[0], j * strides[1] + b * dilations[1]] \
                        += x[:, i, j] @ w[a, b].T
    return out[:, pads[0][0]:pads[0][0] + out_shape[1], pads[1][0]:pads[1][0] + out_shape[2]]


def pool1d_reference(x, k, s, padding, reduce):
    return pool_reference(x[:, None], (1, k), (1, s), padding, reduce)[:, 0]


_CONV = ("conv2d",)

ROWS: list = [
    # SAME with a remainder: width 7, stride 2
    Row("conv1d", lambda x, w: tf.nn.conv1d(x, w, stride=2, padding="SAME"),
        args(normal(2, 7, 3), normal(3, 3, 4)),
        lambda x, w: conv1d_reference(x, w, 2, padding="SAME"), prims=_CONV),
    # NCW, grouped (4 channels, filters of 2: 2 groups), dilated
    Row("conv1d_ncw_grouped_dilated",
        lambda x, w: tf.nn.conv1d(x, w, 1, "VALID", data_format="NCW", dilations=2),
        args(normal(2, 4, 9), normal(3, 2, 6)),
        lambda x, w: conv1d_reference(x.transpose(0, 2, 1), w, 1, 2).transpose(0, 2, 1),
        prims=_CONV),
    Row("convolution_grouped_strided",
        lambda x, w: tf.nn.convolution(x, w, strides=[2, 1], padding="SAME"),
        args(normal(2, 5, 6, 4), normal(3, 2, 2, 6)),
        lambda x, w: grouped_reference(x, w, (2, 1), padding="SAME"), prims=_CONV),
    Row("conv2d_transpose",
        lambda x, w: tf.nn.conv2d_transpose(x, w, [2, 7, 6, 2], strides=2, padding="SAME"),
        args(normal(2, 4, 3, 3), normal(3, 3, 2, 3)),
        lambda x, w: transpose_reference(x, w, (2, 7, 6, 2), (2, 2), "SAME"),
        prims=("conv2d_input_grad",)),
    Row("conv2d_transpose_valid_dilated_nchw",
        lambda x, w: tf.nn.conv2d_transpose(x, w, [1, 2, 7, 6], 1, "VALID", data_format="NCHW",
                                            dilations=[1, 2]),
        args(normal(1, 3, 5, 4), normal(3, 2, 2, 3)),
        lambda x, w: transpose_reference(x.transpose(0, 2, 3, 1), w, (1, 7, 6, 2), (1, 1),
                                         "VALID", (1, 2)).transpose(0, 3, 1, 2),
        prims=("conv2d_input_grad",)),
    Row("conv1d_transpose",
        lambda x, w: tf.nn.conv1d_transpose(x, w, [2, 9, 2], strides=2, padding="VALID"),
        args(normal(2, 4, 3), normal(3, 2, 3)),
        lambda x, w: transpose_reference(x[:, None], w[None], (2, 1, 9, 2), (1, 2),
                                         "VALID")[:, 0],
        prims=("conv2d_input_grad",)),
    Row("depthwise_conv2d",
        lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
        args(normal(2, 5, 6, 3), normal(3, 3, 3, 2)),
        lambda x, w: depthwise_reference(x, w, (2, 2), padding="SAME"), prims=_CONV),
    Row("depthwise_conv2d_nchw_dilated",
        lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID", data_format="NCHW",
                                            dilations=[2, 1]),
        args(normal(1, 2, 7, 5), normal(3, 2, 2, 2)),
        lambda x, w: depthwise_reference(x.transpose(0, 2, 3, 1), w,
                                         dilations=(2, 1)).transpose(0, 3, 1, 2),
        prims=_CONV),
    Row("separable_conv2d",
        lambda x, d, p: tf.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "SAME"),
        args(normal(2, 5, 5, 2), normal(3, 3, 2, 2), normal(1, 1, 4, 3)),
        lambda x, d, p: np.einsum("nhwc,co->nhwo", depthwise_reference(x, d, padding="SAME"),
                                  p[0, 0]),
        prims=_CONV),
    # overlapping windows, SAME with a remainder
    Row("max_pool1d", lambda x: tf.nn.max_pool1d(x, 3, 2, "SAME"), args(normal(2, 7, 3)),
        lambda x: pool1d_reference(x, 3, 2, "SAME", np.max),
        prims=("max_pool2d", "max_pool2d_argmax")),
    Row("avg_pool1d", lambda x: tf.nn.avg_pool1d(x, 2, 2, "SAME"), args(normal(2, 7, 3)),
        lambda x: pool1d_reference(x, 2, 2, "SAME", np.mean), prims=("window_sum",)),
    Row("avg_pool1d_ncw", lambda x: tf.nn.avg_pool1d(x, [1, 1, 3], 1, "VALID", data_format="NCW"),
        args(normal(2, 3, 6)),
        lambda x: pool1d_reference(x.transpose(0, 2, 1), 3, 1, "VALID", np.mean).transpose(0, 2, 1),
        prims=("window_sum",)),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
