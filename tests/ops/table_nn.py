"""Op-table rows of the neural-network primitives (src/tapeflow/ops/nn.py): relu,
relu6, elu, normal_cdf (gelu's), softmax, log_softmax, the sigmoid cross-entropy, and
one_hot_labels (no derivative).

Also here: the composites selu, gelu (both forms), leaky_relu, the softmax
cross-entropies, bias_add, l2_loss and the clipping by norms. Inputs stay away from each activation's kinks.
"""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.nn import normal_cdf_p, one_hot_labels_p

from op_table import NondiffRow, Row, args, away_from_zero, normal, scaled_normal, uniform


def _global_clip(a, b, c):
    (ca, none, cb), _ = tf.clip_by_global_norm([a, None, b], c)
    assert none is None
    return tf.concat([ca, tf.reshape(cb, [-1])], 0)


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


_erfc = np.vectorize(math.erfc)


def normal_cdf_ref(x):
    return 0.5 * _erfc(-x / math.sqrt(2))


def softmax_ref(x, axis=-1):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def log_softmax_ref(x, axis=-1):
    m = x.max(axis, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis, keepdims=True))


_LABELS = np.array([2, 0, 1])

ROWS: list = [
    # activations
    Row("relu", tf.nn.relu, args(away_from_zero(5)), lambda x: np.maximum(x, 0)),
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
    # softmax family
    Row("softmax", tf.nn.softmax, args(normal(3, 4)), softmax_ref),
    Row("softmax_axis0", lambda x: tf.nn.softmax(x, axis=0), args(normal(3, 4)),
        lambda x: softmax_ref(x, 0), prims=("softmax",)),
    Row("log_softmax", lambda x: tf.nn.log_softmax(x, axis=1), args(normal(2, 4, 3)),
        lambda x: log_softmax_ref(x, 1)),
    # losses
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
    # composites
    Row("leaky_relu", lambda x: tf.nn.leaky_relu(x, alpha=0.3), args(away_from_zero(6)),
        lambda x: np.where(x > 0, x, 0.3 * x), prims=("select",)),
    Row("bias_add", tf.nn.bias_add, args(normal(2, 3, 4), normal(4)), np.add, prims=("add",)),
    Row("l2_loss", tf.nn.l2_loss, args(normal(3, 2)), lambda x: (x ** 2).sum() / 2,
        prims=("reduce_sum", "square")),
    Row("gelu_tanh", lambda x: tf.nn.gelu(x, approximate=True), args(scaled_normal(2.0, 6)),
        lambda x: 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3))),
        prims=("tanh",)),
    # Norms well above clip_norm: away from the kink of max(norm, clip_norm).
    Row("clip_by_norm", lambda t, c: tf.clip_by_norm(t, c, axes=[1]),
        args(scaled_normal(3.0, 3, 4), uniform(0.5, 1.0)),
        lambda t, c: t * c / np.maximum(np.sqrt((t ** 2).sum(1, keepdims=True)), c),
        prims=("select", "sqrt", "maximum", "divide")),
    Row("global_norm", lambda a, b: tf.linalg.global_norm([a, None, b]),
        args(normal(3), normal(2, 2)),
        lambda a, b: np.sqrt((a ** 2).sum() + (b ** 2).sum()), prims=("sqrt", "concat")),
    Row("clip_by_global_norm", lambda a, b, c: _global_clip(a, b, c),
        args(normal(3), normal(2, 2), uniform(0.3, 0.6)),
        lambda a, b, c: np.concatenate([a * c / np.sqrt((a ** 2).sum() + (b ** 2).sum()),
                                        b.ravel() * c / np.sqrt((a ** 2).sum() + (b ** 2).sum())]),
        prims=("minimum", "reciprocal", "sqrt")),
]

NONDIFF_ROWS: list = [
    NondiffRow("one_hot_labels",
               lambda x: bind(one_hot_labels_p, tf.cast(x > 0, tf.int32), depth=3,
                              dtype=np.dtype(np.float64)),
               args(normal(4, 2)),
               lambda x: ((x > 0).astype(int)[..., None] == np.arange(3)).astype(np.float64)),
]

EXEMPT: dict = {}
