"""Op-table rows of the transcendental primitives (src/tapeflow/ops/transcendental.py):
pow, exp and log (and expm1, log1p), the trigonometric and hyperbolic functions and
their inverses, atan2, sigmoid, softplus, erf, lgamma, digamma and polygamma.

Each unary function also has a row on complex inputs (`<name>_complex`, built by
`complex_row`); tf.nn.softplus is tf.math.softplus.
"""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from op_table import Row, args, away_from_zero, complex_row, normal, scaled_normal, uniform

_erf = np.vectorize(math.erf, otypes=[np.float64])
_lgamma = np.vectorize(math.lgamma, otypes=[np.float64])
_ORDERS = np.array([[1.], [2.]])
try:
    from scipy.special import polygamma as _polygamma, psi as _psi
except ImportError:  # SciPy is optional: the NumPy fallbacks, checked against SciPy elsewhere
    from tapeflow.ops.transcendental import _digamma_numpy as _psi, _polygamma_numpy as _polygamma

# NumPy references of the unary ops that also have a row on complex inputs
_COMPLEX_UNARY = {
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
    "sigmoid": lambda z: 1 / (1 + np.exp(-z)),
}

ROWS: list = [
    Row("pow", tf.pow, args(uniform(0.5, 2.0, 3, 4), normal(4)), np.power),
    Row("exp", tf.exp, args(normal(5)), np.exp),
    Row("log", tf.math.log, args(uniform(0.5, 3.0, 5)), np.log),
    Row("sin", tf.sin, args(normal(5)), np.sin),
    Row("cos", tf.cos, args(normal(5)), np.cos),
    Row("tanh", tf.tanh, args(normal(5)), np.tanh),
    Row("sigmoid", tf.sigmoid, args(normal(5)), lambda x: 1 / (1 + np.exp(-x))),
    # unary, on each function's domain
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
    # the gamma family, on both sides of the poles (the reflection formula below 0)
    Row("lgamma", tf.math.lgamma, args(uniform(0.3, 6.0, 5)), _lgamma),
    Row("lgamma_negative", tf.math.lgamma, args(uniform(-2.8, -2.2, 3)), _lgamma,
        prims=("lgamma",)),
    Row("digamma", tf.math.digamma, args(uniform(0.3, 6.0, 5)), _psi),
    Row("digamma_negative", tf.math.digamma, args(uniform(-1.8, -1.2, 3)), _psi,
        prims=("digamma",)),
    Row("polygamma", lambda x: tf.math.polygamma(tf.cast(_ORDERS, x.dtype), x),
        args(uniform(0.4, 5.0, 2, 3)), lambda x: _polygamma(_ORDERS.astype(int), x)),
    # binary
    Row("atan2", tf.math.atan2, args(normal(3, 4), away_from_zero(4)), np.arctan2),
    # complex inputs
    *[complex_row(name, ref) for name, ref in _COMPLEX_UNARY.items()],
    Row("softplus_nn", tf.nn.softplus, args(scaled_normal(3.0, 6)),
        lambda x: np.maximum(x, 0) + np.log1p(np.exp(-np.abs(x))), prims=("softplus",)),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
