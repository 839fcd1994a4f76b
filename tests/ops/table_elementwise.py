"""Op-table rows of the elementwise primitives (src/tapeflow/ops/elementwise.py):
arithmetic, comparisons and logic, rounding and the finiteness tests; the composites
clip_by_value and add_n; rsqrt and reciprocal on complex inputs.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, away_from_zero, complex_row, normal, uniform


def _clip_input(rng):
    """Values inside (-0.4, 0.4) and outside +-[0.6, 2], away from the bounds +-0.5."""
    inside = rng.uniform(-0.4, 0.4, 4)
    outside = rng.uniform(0.6, 2.0, 4) * rng.choice([-1.0, 1.0], 4)
    return np.concatenate([inside, outside]).reshape(2, 4)


def _specials(x):
    """inf where x > 0.5, nan where x < -0.5, x elsewhere."""
    return tf.where(x > 0.5, np.inf, tf.where(x < -0.5, np.nan, x))


ROWS: list = [
    # binary (with broadcasting)
    Row("subtract", tf.subtract, args(normal(3, 4), normal(3, 1)), np.subtract),
    Row("divide", tf.divide, args(normal(3, 4), away_from_zero(4)), np.divide),
    Row("maximum", tf.maximum, args(normal(3, 4), normal(3, 4)), np.maximum, smooth=False),
    Row("minimum", tf.minimum, args(normal(3, 4), normal(4)), np.minimum, smooth=False),
    # x/y stays in (0.1, 0.6): away from the jumps of floor
    Row("floormod", tf.math.floormod, args(uniform(0.2, 0.8, 5), uniform(1.5, 2.0, 5)), np.mod),
    # unary, on each function's domain
    Row("negative", tf.negative, args(normal(5)), np.negative),
    Row("square", tf.square, args(normal(5)), np.square),
    Row("sqrt", tf.sqrt, args(uniform(0.5, 3.0, 5)), np.sqrt),
    Row("abs", tf.abs, args(away_from_zero(5)), np.abs),
    Row("sign", lambda x: tf.sign(x) * x, args(away_from_zero(5)), lambda x: np.sign(x) * x),
    Row("rsqrt", tf.math.rsqrt, args(uniform(0.5, 3.0, 5)), lambda x: 1 / np.sqrt(x)),
    Row("reciprocal", tf.math.reciprocal, args(away_from_zero(5)), lambda x: 1 / x),
    Row("clip_by_value", lambda x, lo, hi: tf.clip_by_value(x, lo, hi),
        args(_clip_input, lambda rng: np.full(4, -0.5), lambda rng: np.array(0.5)),
        lambda x, lo, hi: np.clip(x, lo, hi), smooth=False, prims=("minimum", "maximum")),
    Row("add_n", lambda a, b, c: tf.add_n([a, b, c]),
        args(normal(3, 4), normal(3, 4), normal(3, 4)), lambda a, b, c: a + b + c, prims=("add",)),
    # complex inputs
    complex_row("rsqrt", lambda z: 1 / np.sqrt(z)),
    complex_row("reciprocal", lambda z: 1 / z),
]

NONDIFF_ROWS: list = [
    NondiffRow("equal", tf.equal, args(normal(4), normal(4)), np.equal),
    NondiffRow("not_equal", tf.not_equal, args(normal(4), normal(4)), np.not_equal),
    NondiffRow("less", tf.less, args(normal(4), normal(4)), np.less),
    NondiffRow("less_equal", tf.less_equal, args(normal(4), normal(4)), np.less_equal),
    NondiffRow("greater", tf.greater, args(normal(4), normal(4)), np.greater),
    NondiffRow("greater_equal", tf.greater_equal, args(normal(4), normal(4)), np.greater_equal),
    NondiffRow("logical_and", lambda x, y: tf.logical_and(x > 0, y > 0), args(normal(4), normal(4)),
               lambda x, y: (x > 0) & (y > 0), prims=("logical_and", "greater")),
    NondiffRow("logical_or", lambda x, y: tf.logical_or(x > 0, y > 0), args(normal(4), normal(4)),
               lambda x, y: (x > 0) | (y > 0)),
    NondiffRow("logical_xor", lambda x, y: tf.math.logical_xor(x > 0, y > 0),
               args(normal(4), normal(4)), lambda x, y: (x > 0) ^ (y > 0)),
    NondiffRow("logical_not", lambda x: tf.logical_not(x > 0), args(normal(4)), lambda x: ~(x > 0)),
    NondiffRow("floordiv", tf.math.floordiv, args(normal(4), uniform(0.5, 1.0, 4)), np.floor_divide),
    NondiffRow("floor", tf.math.floor, args(normal(5)), np.floor),
    NondiffRow("ceil", tf.math.ceil, args(normal(5)), np.ceil),
    NondiffRow("round", lambda x: tf.round(x * 2.), args(normal(6)), lambda x: np.round(x * 2)),
    NondiffRow("is_finite", lambda x: tf.math.is_finite(_specials(x)), args(normal(8)),
               lambda x: np.abs(x) <= 0.5),
    NondiffRow("is_nan", lambda x: tf.math.is_nan(_specials(x)), args(normal(8)),
               lambda x: x < -0.5),
    NondiffRow("is_inf", lambda x: tf.math.is_inf(_specials(x)), args(normal(8)),
               lambda x: x > 0.5),
]

EXEMPT: dict = {}
