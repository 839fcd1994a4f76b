"""Op-table rows for the ops in src/tapeflow/ops/math_ops.py and math_reduce_ops.py
(see tests/op_table.py).

Complex rules are checked through real functions of real inputs: a row builds
z = complex(a, b), applies the op and mixes real and imaginary parts of the
result, so finite differences, JVP/VJP consistency and second order all see the
complex rules (NOTE(complex-gradients) in math_ops).
"""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, away_from_zero, normal, uniform

_erf = np.vectorize(math.erf, otypes=[np.float64])

# Composite rows name the primitives they are built from.
_PROD = ("multiply", "getitem", "reshape", "concat", "transpose")
_SCAN = ("multiply", "getitem", "concat")


def _with_zeros(shape, flat_zeros=(1, 4, 5)):
    """Normal values with exact zeros at `flat_zeros`: products must not divide by x."""
    def make(rng):
        x = rng.standard_normal(shape)
        x.reshape(-1)[list(flat_zeros)] = 0.0
        return x
    return make


def _clip_input(rng):
    """Values inside (-0.4, 0.4) and outside +-[0.6, 2], away from the bounds +-0.5."""
    inside = rng.uniform(-0.4, 0.4, 4)
    outside = rng.uniform(0.6, 2.0, 4) * rng.choice([-1.0, 1.0], 4)
    return np.concatenate([inside, outside]).reshape(2, 4)


def _specials(x):
    """inf where x > 0.5, nan where x < -0.5, x elsewhere."""
    return tf.where(x > 0.5, np.inf, tf.where(x < -0.5, np.nan, x))


def _lse_ref(x, axis=None, keepdims=False):
    m = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


def _np_cumprod_exclusive_reverse(x, axis):
    y = np.flip(x, axis)
    out = np.cumprod(y, axis=axis)
    shifted = np.concatenate([np.ones_like(np.take(out, [0], axis)),
                              np.take(out, range(out.shape[axis] - 1), axis)], axis)
    return np.flip(shifted, axis)


def _complex_part_mix(w):
    """A real function of both parts of w, so both parts' rules are checked."""
    return tf.math.real(w) + 0.5 * tf.math.imag(w)


# z = a + ib with a in (0.2, 0.6), b in (0.3, 0.8): off every branch cut of these functions.
_COMPLEX_ARGS = args(uniform(0.2, 0.6, 4), uniform(0.3, 0.8, 4))
_COMPLEX_UNARY = {
    "rsqrt": lambda z: 1 / np.sqrt(z),
    "reciprocal": lambda z: 1 / z,
    "expm1": np.expm1,
    "log1p": np.log1p,
    "tan": np.tan,
    "asin": np.arcsin,
    "acos": np.arccos,
    "atan": np.arctan,
    "sinh": np.sinh,
    "cosh": np.cosh,
    "asinh": np.arcsinh,
    "acosh": np.arccosh,
    "atanh": np.arctanh,
}


def _complex_row(name, ref):
    # The op is looked up by name when called, so the differential suite can run the
    # same row with TensorFlow bound to `tf`.
    return Row(f"{name}_complex",
               lambda a, b: _complex_part_mix(getattr(tf.math, name)(tf.complex(a, b))),
               _COMPLEX_ARGS, lambda a, b: (lambda w: w.real + 0.5 * w.imag)(ref(a + 1j * b)),
               prims=(name, "complex", "real", "imag"))


ROWS: list = [
    # elementwise, unary, on each function's domain
    Row("rsqrt", tf.math.rsqrt, args(uniform(0.5, 3.0, 5)), lambda x: 1 / np.sqrt(x)),
    Row("reciprocal", tf.math.reciprocal, args(away_from_zero(5)), lambda x: 1 / x),
    Row("expm1", tf.math.expm1, args(normal(5)), np.expm1),
    Row("log1p", tf.math.log1p, args(uniform(-0.7, 3.0, 5)), np.log1p),
    Row("tan", tf.math.tan, args(uniform(-1.2, 1.2, 5)), np.tan),
    Row("asin", tf.math.asin, args(uniform(-0.9, 0.9, 5)), np.arcsin),
    Row("acos", tf.math.acos, args(uniform(-0.9, 0.9, 5)), np.arccos),
    Row("atan", tf.math.atan, args(normal(5)), np.arctan),
    Row("sinh", tf.math.sinh, args(normal(5)), np.sinh),
    Row("cosh", tf.math.cosh, args(normal(5)), np.cosh),
    Row("asinh", tf.math.asinh, args(normal(5)), np.arcsinh),
    Row("acosh", tf.math.acosh, args(uniform(1.2, 4.0, 5)), np.arccosh),
    Row("atanh", tf.math.atanh, args(uniform(-0.9, 0.9, 5)), np.arctanh),
    Row("softplus", tf.math.softplus, args(lambda rng: rng.standard_normal(6) * 4),
        lambda x: np.logaddexp(0, x)),
    Row("erf", tf.math.erf, args(normal(5)), _erf),
    # elementwise, binary
    Row("atan2", tf.math.atan2, args(normal(3, 4), away_from_zero(4)), np.arctan2),
    Row("squared_difference", tf.math.squared_difference, args(normal(3, 4), normal(4)),
        lambda x, y: (x - y) ** 2, prims=("subtract", "square")),
    Row("clip_by_value", lambda x, lo, hi: tf.clip_by_value(x, lo, hi),
        args(_clip_input, lambda rng: np.full(4, -0.5), lambda rng: np.array(0.5)),
        lambda x, lo, hi: np.clip(x, lo, hi), smooth=False, prims=("minimum", "maximum")),
    # complex numbers: construction, parts, magnitude
    Row("complex", lambda a, b: _complex_part_mix(tf.complex(a, b) * tf.complex(b, a)),
        args(normal(3, 4), normal(4)),
        lambda a, b: (lambda w: w.real + 0.5 * w.imag)((a + 1j * b) * (b + 1j * a)),
        prims=("complex", "real", "imag", "multiply")),
    Row("complex_abs", lambda a, b: tf.abs(tf.complex(a, b)), args(normal(5), away_from_zero(5)),
        np.hypot, prims=("complex_abs", "complex")),
    Row("complex_squared_difference",
        lambda a, b: tf.math.real(
            tf.math.squared_difference(tf.complex(a, b), tf.complex(b, a * a))),
        args(normal(5), normal(5)), lambda a, b: (a - b) ** 2 + (b - a * a) ** 2,
        prims=("complex", "subtract", "real", "imag", "square")),
    *[_complex_row(name, ref) for name, ref in _COMPLEX_UNARY.items()],
    # reductions
    Row("reduce_prod", lambda x: tf.reduce_prod(x, axis=1), args(normal(3, 5)),
        lambda x: x.prod(1), prims=_PROD),
    Row("reduce_prod_zeros", lambda x: tf.reduce_prod(x, axis=[0, 2], keepdims=True),
        args(_with_zeros((2, 3, 2))), lambda x: x.prod((0, 2), keepdims=True), prims=_PROD),
    Row("reduce_prod_all", lambda x: tf.reduce_prod(x), args(_with_zeros((7,), (2,))), np.prod,
        prims=_PROD),
    Row("reduce_prod_complex",
        lambda a, b: _complex_part_mix(tf.reduce_prod(tf.complex(a, b), axis=0)),
        args(normal(3, 2), normal(3, 2)),
        lambda a, b: (lambda w: w.real + 0.5 * w.imag)((a + 1j * b).prod(0)),
        prims=_PROD + ("complex", "real", "imag")),
    Row("reduce_logsumexp", lambda x: tf.reduce_logsumexp(x, axis=1), args(normal(3, 4)),
        lambda x: _lse_ref(x, axis=1), prims=("reduce_sum", "exp", "log", "subtract", "add")),
    # exp(800) overflows even float64: the max shift must carry the computation
    Row("reduce_logsumexp_large", lambda x: tf.reduce_logsumexp(x, keepdims=True),
        args(lambda rng: rng.standard_normal((2, 3)) * 3 + 800),
        lambda x: _lse_ref(x, keepdims=True),
        prims=("reduce_sum", "exp", "log"), f32_tol=0.1),
    Row("reduce_variance", lambda x: tf.math.reduce_variance(x, axis=0), args(normal(4, 3)),
        lambda x: x.var(0), prims=("reduce_sum", "subtract", "square")),
    Row("reduce_variance_complex",
        lambda a, b: tf.math.reduce_variance(tf.complex(a, b), axis=1, keepdims=True),
        args(normal(2, 4), normal(2, 4)), lambda a, b: (a + 1j * b).var(1, keepdims=True),
        prims=("complex", "real", "conj", "multiply")),
    Row("reduce_std", lambda x: tf.math.reduce_std(x, axis=[0, 1]), args(normal(2, 3, 2)),
        lambda x: x.std((0, 1)), prims=("sqrt", "reduce_sum")),
    # scans
    Row("cumsum", lambda x: tf.cumsum(x, axis=1), args(normal(3, 4)),
        lambda x: np.cumsum(x, 1)),
    Row("cumsum_exclusive_reverse", lambda x: tf.cumsum(x, axis=-2, exclusive=True, reverse=True),
        args(normal(4, 3)), lambda x: _np_cumsum(x, 0, True, True), prims=("cumsum",)),
    Row("cumprod", lambda x: tf.math.cumprod(x, axis=1), args(_with_zeros((2, 6))),
        lambda x: np.cumprod(x, 1), prims=_SCAN),
    Row("cumprod_exclusive_reverse",
        lambda x: tf.math.cumprod(x, axis=0, exclusive=True, reverse=True),
        args(_with_zeros((7, 2))), lambda x: _np_cumprod_exclusive_reverse(x, 0), prims=_SCAN),
]

NONDIFF_ROWS: list = [
    NondiffRow("floor", tf.math.floor, args(normal(5)), np.floor),
    NondiffRow("ceil", tf.math.ceil, args(normal(5)), np.ceil),
    NondiffRow("round", lambda x: tf.round(x * 2.), args(normal(6)), lambda x: np.round(x * 2)),
    NondiffRow("is_finite", lambda x: tf.math.is_finite(_specials(x)), args(normal(8)),
               lambda x: np.abs(x) <= 0.5),
    NondiffRow("is_nan", lambda x: tf.math.is_nan(_specials(x)), args(normal(8)),
               lambda x: x < -0.5),
    NondiffRow("is_inf", lambda x: tf.math.is_inf(_specials(x)), args(normal(8)),
               lambda x: x > 0.5),
    NondiffRow("reduce_all", lambda x: tf.reduce_all(x > -1., axis=1), args(normal(3, 4)),
               lambda x: (x > -1).all(1)),
    NondiffRow("reduce_any", lambda x: tf.reduce_any(x > 1., axis=0, keepdims=True),
               args(normal(3, 4)), lambda x: (x > 1).any(0, keepdims=True)),
    NondiffRow("argmax", lambda x: tf.argmax(x, axis=1), args(normal(3, 4)),
               lambda x: np.argmax(x, 1)),
    NondiffRow("argmin", lambda x: tf.argmin(x), args(normal(3, 4)), lambda x: np.argmin(x, 0)),
]

EXEMPT: dict = {}
