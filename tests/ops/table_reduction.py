"""Op-table rows of the reduction primitives (src/tapeflow/ops/reduction.py):
reduce_max, reduce_min and cumsum, and argmax, argmin, reduce_all and reduce_any
(no derivative); the composites reduce_mean, reduce_prod and cumprod (products that
never divide by x), reduce_logsumexp, reduce_variance and reduce_std. (reduce_sum is a
structural primitive: table_structural.py.)
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, complex_part_mix, normal


def _np_cumsum(x, axis, exclusive, reverse):
    if reverse:
        x = np.flip(x, axis)
    out = np.cumsum(x, axis=axis)
    if exclusive:
        out = out - x
    return np.flip(out, axis) if reverse else out


_PROD = ("multiply", "getitem", "reshape", "concat", "transpose")


_SCAN = ("multiply", "getitem", "concat")


def _with_zeros(shape, flat_zeros=(1, 4, 5)):
    """Normal values with exact zeros at `flat_zeros`: products must not divide by x."""
    def make(rng):
        x = rng.standard_normal(shape)
        x.reshape(-1)[list(flat_zeros)] = 0.0
        return x
    return make


def _lse_ref(x, axis=None, keepdims=False):
    m = x.max(axis=axis, keepdims=True)
    out = np.log(np.exp(x - m).sum(axis=axis, keepdims=True)) + m
    return out if keepdims else np.squeeze(out, axis=axis)


def _np_cumprod_exclusive_reverse(x, axis):
    y = np.flip(x, axis)
    out = np.cumprod(y, axis=axis)
    shifted = np.concatenate([np.ones_like(np.take(out, [0], axis)),
                              np.take(out, range(out.shape[axis] - 1), axis)], axis)
    return np.flip(shifted, axis)


ROWS: list = [
    Row("reduce_max", lambda x: tf.reduce_max(x, axis=[0, 2]), args(normal(3, 4, 2)),
        lambda x: x.max((0, 2)), smooth=False),
    Row("reduce_min", lambda x: tf.reduce_min(x, axis=1), args(normal(3, 4)),
        lambda x: x.min(1), smooth=False),
    # scans
    Row("cumsum", lambda x: tf.cumsum(x, axis=1), args(normal(3, 4)),
        lambda x: np.cumsum(x, 1)),
    Row("cumsum_exclusive_reverse", lambda x: tf.cumsum(x, axis=-2, exclusive=True, reverse=True),
        args(normal(4, 3)), lambda x: _np_cumsum(x, 0, True, True), prims=("cumsum",)),
    # composites: means, products (never a division by x), log-sum-exp, moments
    Row("reduce_mean", lambda x: tf.reduce_mean(x, axis=0), args(normal(3, 4)),
        lambda x: x.mean(0), prims=("reduce_sum",)),
    Row("reduce_prod", lambda x: tf.reduce_prod(x, axis=1), args(normal(3, 5)),
        lambda x: x.prod(1), prims=_PROD),
    Row("reduce_prod_zeros", lambda x: tf.reduce_prod(x, axis=[0, 2], keepdims=True),
        args(_with_zeros((2, 3, 2))), lambda x: x.prod((0, 2), keepdims=True), prims=_PROD),
    Row("reduce_prod_all", lambda x: tf.reduce_prod(x), args(_with_zeros((7,), (2,))), np.prod,
        prims=_PROD),
    Row("reduce_prod_complex",
        lambda a, b: complex_part_mix(tf.reduce_prod(tf.complex(a, b), axis=0)),
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
    # scans built from products
    Row("cumprod", lambda x: tf.math.cumprod(x, axis=1), args(_with_zeros((2, 6))),
        lambda x: np.cumprod(x, 1), prims=_SCAN),
    Row("cumprod_exclusive_reverse",
        lambda x: tf.math.cumprod(x, axis=0, exclusive=True, reverse=True),
        args(_with_zeros((7, 2))), lambda x: _np_cumprod_exclusive_reverse(x, 0), prims=_SCAN),
    Row("reduce_std", lambda x: tf.math.reduce_std(x, axis=[0, 1]), args(normal(2, 3, 2)),
        lambda x: x.std((0, 1)), prims=("pow", "reduce_sum")),
    Row("reduce_variance_complex",
        lambda a, b: tf.math.reduce_variance(tf.complex(a, b), axis=1, keepdims=True),
        args(normal(2, 4), normal(2, 4)), lambda a, b: (a + 1j * b).var(1, keepdims=True),
        prims=("complex", "real", "conj", "multiply")),
]

NONDIFF_ROWS: list = [
    NondiffRow("reduce_all", lambda x: tf.reduce_all(x > -1., axis=1), args(normal(3, 4)),
               lambda x: (x > -1).all(1)),
    NondiffRow("reduce_any", lambda x: tf.reduce_any(x > 1., axis=0, keepdims=True),
               args(normal(3, 4)), lambda x: (x > 1).any(0, keepdims=True)),
    NondiffRow("argmax", lambda x: tf.argmax(x, axis=1), args(normal(3, 4)),
               lambda x: np.argmax(x, 1)),
    NondiffRow("argmin", lambda x: tf.argmin(x), args(normal(3, 4)), lambda x: np.argmin(x, 0)),
]

EXEMPT: dict = {}
