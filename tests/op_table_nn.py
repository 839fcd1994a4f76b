"""Op-table rows for src/tapeflow/ops/nn_ops.py and nn_pool.py (see tests/op_table.py)."""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.nn import normal_cdf_p, one_hot_labels_p
from tapeflow.ops.pooling import max_pool2d_grad_grad_p, max_pool2d_grad_p

from op_table import NondiffRow, Row, args, away_from_zero, normal, uniform  # noqa: F401


def pieces(*intervals: tuple, shape: tuple = (6,)):
    """Values drawn from the union of `intervals`: inputs kept away from an op's kinks."""
    def make(rng: np.random.Generator) -> np.ndarray:
        which = rng.integers(0, len(intervals), shape)
        lo = np.array([a for a, _ in intervals])[which]
        hi = np.array([b for _, b in intervals])[which]
        return rng.uniform(lo, hi)
    return make


def probabilities(*shape: int):
    """Rows that sum to 1 along the last axis (label distributions)."""
    def make(rng: np.random.Generator) -> np.ndarray:
        p = rng.uniform(0.1, 1.0, shape)
        return p / p.sum(-1, keepdims=True)
    return make


def scaled_normal(scale: float, *shape: int):
    return lambda rng: scale * rng.standard_normal(shape)


_erfc = np.vectorize(math.erfc)


def normal_cdf_ref(x):
    return 0.5 * _erfc(-x / math.sqrt(2))


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax_ref(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


def pool_reference(x, k, s, padding, reduce):
    """Naive NHWC pooling, one window at a time (TensorFlow's SAME padding; the mean
    over unpadded elements)."""
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph = max((oh - 1) * s[0] + k[0] - h, 0)
        pw = max((ow - 1) * s[1] + k[1] - w, 0)
        top, left = ph // 2, pw // 2
    else:
        oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
        top = left = 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - top, j * s[1] - left
            win = x[:, max(r0, 0):r0 + k[0], max(c0, 0):c0 + k[1], :]
            out[:, i, j, :] = reduce(win, axis=(1, 2))
    return out


_POOL = {"ksize": (3, 2), "strides": (2, 1), "pads": ((1, 1), (0, 1))}  # overlapping windows
_LABELS = np.array([2, 0, 1])

ROWS: list = [
    # activations
    Row("relu6", tf.nn.relu6, args(pieces((-2, -0.3), (0.3, 5.7), (6.3, 8))),
        lambda x: np.clip(x, 0, 6)),
    Row("elu", tf.nn.elu, args(away_from_zero(6)),
        lambda x: np.where(x > 0, x, np.expm1(np.minimum(x, 0)))),
    Row("selu", tf.nn.selu, args(away_from_zero(6)),
        lambda x: 1.0507009873554805 * np.where(x > 0, x, 1.6732632423543772 * np.expm1(
            np.minimum(x, 0))), prims=("elu", "select")),
    Row("normal_cdf", lambda x: bind(normal_cdf_p, x), args(scaled_normal(3.0, 8)),
        normal_cdf_ref),
    Row("gelu", tf.nn.gelu, args(scaled_normal(2.0, 6)), lambda x: x * normal_cdf_ref(x),
        prims=("normal_cdf",)),
    Row("gelu_tanh", lambda x: tf.nn.gelu(x, approximate=True), args(scaled_normal(2.0, 6)),
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
        prims=("tanh",)),
    Row("leaky_relu", lambda x: tf.nn.leaky_relu(x, alpha=0.3), args(away_from_zero(6)),
        lambda x: np.where(x > 0, x, 0.3 * x), prims=("select",)),
    Row("nn_softplus", tf.nn.softplus, args(scaled_normal(3.0, 6)),
        lambda x: np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), prims=("softplus",)),
    # softmax family
    Row("softmax", tf.nn.softmax, args(normal(3, 4)), softmax_ref),
    Row("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0), args(normal(3, 4)),
        lambda x: softmax_ref(x, 0), prims=("softmax",)),
    Row("log_softmax", lambda x: tf.nn.log_softmax(x, axis=1), args(normal(2, 4, 3)),
        lambda x: log_softmax_ref(x, 1)),
    # losses and bias_add
    Row("sigmoid_cross_entropy_with_logits",
        lambda z, x: tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x),
        args(uniform(0, 1, 2, 3), scaled_normal(3.0, 2, 3)),
        lambda z, x: np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))),
    Row("softmax_cross_entropy_with_logits",
        lambda z, x: tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x),
        args(probabilities(3, 4), normal(3, 4)),
        lambda z, x: -(z * log_softmax_ref(x)).sum(-1), prims=("log_softmax",)),
    Row("sparse_softmax_cross_entropy_with_logits",
        lambda x: tf.nn.sparse_softmax_cross_entropy_with_logits(labels=_LABELS, logits=x),
        args(normal(3, 4)), lambda x: -log_softmax_ref(x)[np.arange(3), _LABELS],
        prims=("log_softmax",)),
    Row("bias_add", tf.nn.bias_add, args(normal(2, 3, 4), normal(4)), np.add, prims=("add",)),
    Row("l2_loss", tf.nn.l2_loss, args(normal(3, 2)), lambda x: (x ** 2).sum() / 2,
        prims=("reduce_sum", "square")),
    # pooling (random inputs: every window has one clear maximum)
    Row("max_pool2d", lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"), args(normal(2, 4, 5, 3)),
        lambda x: pool_reference(x, (2, 2), (2, 2), "VALID", np.max)),
    Row("max_pool2d_same_overlapping", lambda x: tf.nn.max_pool2d(x, 3, [1, 2, 1, 1], "SAME"),
        args(normal(1, 5, 4, 2)), lambda x: pool_reference(x, (3, 3), (2, 1), "SAME", np.max),
        prims=("max_pool2d",)),
    Row("max_pool2d_grad", lambda x, g: bind(max_pool2d_grad_p, x, g, **_POOL),
        args(normal(2, 6, 4, 2), normal(2, 3, 4, 2)), None),
    Row("max_pool2d_grad_grad", lambda x, t: bind(max_pool2d_grad_grad_p, x, t, **_POOL),
        args(normal(2, 6, 4, 2), normal(2, 6, 4, 2)), None),
    Row("avg_pool2d", lambda x: tf.nn.avg_pool2d(x, [2, 3], 2, "SAME"), args(normal(2, 5, 5, 2)),
        lambda x: pool_reference(x, (2, 3), (2, 2), "SAME", np.mean), prims=("conv2d",)),
]

NONDIFF_ROWS: list = [
    NondiffRow("one_hot_labels",
               lambda x: bind(one_hot_labels_p, tf.cast(x > 0, tf.int32), depth=3,
                              dtype=np.dtype(np.float64)),
               args(normal(4, 2)),
               lambda x: ((x > 0).astype(int)[..., None] == np.arange(3)).astype(np.float64)),
]

EXEMPT: dict = {
    name: "a draw's numbers differ from call to call, so the table's batching-vs-loop checks "
          "do not apply: tests/test_random.py checks values, seeds, replay and vmap"
    for name in ("random_standard_normal", "random_uniform", "random_uniform_int")
}
