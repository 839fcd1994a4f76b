"""Op-table rows of src/tapeflow/ops/nn_composites.py: moments, weighted_moments,
normalize_moments, batch_normalization, l2_normalize, silu/swish and softsign, all
composites (the family defines no primitive; each row names primitives it runs).

Rows return one tensor: the two results of the moments ops are stacked. The mean inside
`moments`' variance carries no gradient (as TensorFlow's): its first derivatives are
exact, its second are not, so its rows are not `smooth`. dropout has no
row: its flags are draws, which differ between the eager run, the replays and the
examples of a vmap that the table's checks compare; tests/ops/test_nn_composites.py
checks its values, gradient, seeds, replays, vmap and compiled calls.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf

from op_table import COMPLEX_ARGS, Row, args, away_from_zero, complex_part_mix, normal, uniform


def np_moments(x, axes, keepdims=False):
    mean = x.mean(axis=axes, keepdims=True)
    var = ((x - mean) ** 2).mean(axis=axes, keepdims=True)
    if not keepdims:
        mean, var = mean.squeeze(axis=axes), var.squeeze(axis=axes)
    return np.stack([mean, var])


def np_weighted_moments(x, w, axes):
    w = w + np.zeros_like(x)
    mean = (w * x).sum(axes, keepdims=True) / w.sum(axes, keepdims=True)
    var = (w * (x - mean) ** 2).sum(axes, keepdims=True) / w.sum(axes, keepdims=True)
    return np.stack([mean.squeeze(axes), var.squeeze(axes)])


def np_batch_norm(x, mean, var, offset, scale, eps):
    return scale * (x - mean) / np.sqrt(var + eps) + offset


def np_l2_normalize(x, axis, eps=1e-12):
    return x / np.sqrt(np.maximum((np.abs(x) ** 2).sum(axis, keepdims=True), eps))


def _sigmoid(x):
    return 1 / (1 + np.exp(-x))


ROWS: list = [
    Row("moments", lambda x: tf.stack(tf.nn.moments(x, axes=[0, 2])), args(normal(3, 2, 4)),
        lambda x: np_moments(x, (0, 2)), prims=("reduce_sum", "square"),
        smooth=False),
    Row("moments_keepdims_negative_axis",
        lambda x: tf.concat(tf.nn.moments(x, axes=-1, keepdims=True), axis=-1),
        args(normal(3, 5)), lambda x: np.concatenate(np_moments(x, -1, True), axis=-1),
        prims=("reduce_sum",), smooth=False),
    Row("weighted_moments",
        lambda x, w: tf.stack(tf.nn.weighted_moments(x, [1], w)),
        args(normal(2, 4, 3), uniform(0.5, 2.0, 2, 4, 1)),
        lambda x, w: np_weighted_moments(x, w, 1), prims=("reduce_sum", "select", "divide")),
    Row("normalize_moments",
        lambda c, m, v, s: tf.stack(tf.nn.normalize_moments(c, m, v, s)),
        args(uniform(2.0, 5.0), normal(3), uniform(4.0, 6.0, 3), normal(3)),
        lambda c, m, v, s: np.stack([m / c + s, v / c - (m / c) ** 2]),
        prims=("reciprocal",)),
    Row("batch_normalization",
        lambda x, m, v, o, s: tf.nn.batch_normalization(x, m, v, o, s, 1e-3),
        args(normal(4, 3), normal(3), uniform(0.5, 2.0, 3), normal(3), normal(3)),
        lambda x, m, v, o, s: np_batch_norm(x, m, v, o, s, 1e-3), prims=("rsqrt",)),
    Row("batch_normalization_no_offset_no_scale",
        lambda x, m, v: tf.nn.batch_normalization(x, m, v, None, None, 0.01),
        args(normal(2, 3, 2), normal(2), uniform(0.5, 2.0, 2)),
        lambda x, m, v: np_batch_norm(x, m, v, 0.0, 1.0, 0.01), prims=("rsqrt", "negative")),
    Row("l2_normalize", lambda x: tf.math.l2_normalize(x, axis=1), args(normal(3, 4)),
        lambda x: np_l2_normalize(x, 1), prims=("rsqrt", "maximum")),
    Row("l2_normalize_every_axis", tf.math.l2_normalize, args(normal(2, 3)),
        lambda x: np_l2_normalize(x, None), prims=("rsqrt",)),
    Row("l2_normalize_complex",
        lambda a, b: complex_part_mix(tf.math.l2_normalize(tf.complex(a, b), axis=0)),
        COMPLEX_ARGS,
        lambda a, b: (lambda w: w.real + 0.5 * w.imag)(np_l2_normalize(a + 1j * b, 0)),
        prims=("complex", "real", "imag")),
    Row("silu", tf.nn.silu, args(normal(6)), lambda x: x * _sigmoid(x), prims=("sigmoid",)),
    Row("swish_beta", lambda x, b: tf.nn.swish(x, b), args(normal(2, 3), uniform(0.5, 2.0)),
        lambda x, b: x * _sigmoid(b * x), prims=("sigmoid",)),
    Row("softsign", tf.nn.softsign, args(away_from_zero(6)), lambda x: x / (1 + np.abs(x)),
        prims=("abs", "divide")),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
