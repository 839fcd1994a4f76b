"""Op-table rows of the factorizations and solvers (src/tapeflow/ops/decompositions.py):
inv, det, slogdet, solve, triangular_solve, cholesky and eigh, batched, and the norms
(composites: the vector and matrix norms, the spectral 2-norm built on eigh).

Inputs are well conditioned: diagonally dominant matrices for inv/det/solve,
M M^T + 3 I for cholesky (symmetric by construction, as its symmetric gradient
assumes), well-separated eigenvalues for eigh with outputs invariant to the
eigenvectors' signs.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import Row, args, away_from_zero, normal


def dominant(*shape: int):
    """Random matrices whose positive diagonal outweighs the rest of its row by at least
    1: far from singular (the inverse's max-norm is at most 1). Random matrices plus 3 I
    were not: one of a random program's two 3x3 matrices had condition number 1,748."""
    def make(rng):
        a = rng.standard_normal(shape)
        k = np.arange(shape[-1])
        rows = np.abs(a).sum(axis=-1)  # the diagonal's own magnitude included
        a[..., k, k] = rows + 1.0
        return a
    return make


def negative_det(n: int):
    """A well-conditioned matrix with a negative determinant (first row flipped)."""
    def make(rng):
        a = rng.standard_normal((n, n)) + 3 * np.eye(n)
        a[0] *= -1
        return a
    return make


def separated_spectrum(*batch: int, n: int = 4):
    """Symmetric matrices with eigenvalues about 1.5 apart (random eigenvectors)."""
    def make(rng):
        q, _ = np.linalg.qr(rng.standard_normal(batch + (n, n)))
        e = np.arange(n) * 1.5 - 2 + rng.uniform(-0.2, 0.2, batch + (n,))
        return (q * e[..., None, :]) @ np.swapaxes(q, -1, -2)
    return make


def _spd(m):
    return tf.matmul(m, m, transpose_b=True) + 3 * np.eye(m.shape[-1])


def _spd_ref(m):
    return m @ np.swapaxes(m, -1, -2) + 3 * np.eye(m.shape[-1])


def _eigh_fn(a):
    e, v = tf.linalg.eigh(a)
    return tf.matmul(v * tf.sin(e)[..., None, :], v, transpose_b=True)


def _eigh_ref(a):
    e, v = np.linalg.eigh(a)
    return (v * np.sin(e)[..., None, :]) @ np.swapaxes(v, -1, -2)


def _eigh_vectors_fn(a):
    return tf.square(tf.linalg.eigh(a)[1])


def _slogdet_fn(a):
    sign, logdet = tf.linalg.slogdet(a)
    return sign * logdet


ROWS: list = [
    Row("inv", tf.linalg.inv, args(dominant(2, 3, 3)), np.linalg.inv),
    Row("inv_adjoint", lambda a: tf.linalg.inv(a, adjoint=True), args(dominant(3, 3)),
        lambda a: np.linalg.inv(a.T), prims=("inv", "transpose")),
    Row("det", tf.linalg.det, args(dominant(2, 3, 3)), np.linalg.det),
    Row("slogdet", _slogdet_fn, args(negative_det(3)),
        lambda a: np.prod(np.linalg.slogdet(a))),
    Row("solve", tf.linalg.solve, args(dominant(2, 3, 3), normal(2, 3, 2)), np.linalg.solve),
    Row("solve_broadcast_adjoint", lambda a, b: tf.linalg.solve(a, b, adjoint=True),
        args(dominant(3, 3), normal(2, 3, 2)), lambda a, b: np.linalg.solve(a.T, b),
        prims=("solve", "transpose")),
    Row("triangular_solve", tf.linalg.triangular_solve, args(dominant(2, 3, 3), normal(2, 3, 2)),
        lambda m, b: np.linalg.solve(np.tril(m), b)),
    Row("triangular_solve_upper_adjoint",
        lambda m, b: tf.linalg.triangular_solve(m, b, lower=False, adjoint=True),
        args(dominant(3, 3), normal(2, 3, 1)),
        lambda m, b: np.linalg.solve(np.triu(m).T, b), prims=("triangular_solve",)),
    Row("cholesky", lambda m: tf.linalg.cholesky(_spd(m)), args(normal(2, 3, 3)),
        lambda m: np.linalg.cholesky(_spd_ref(m)), prims=("cholesky", "matmul")),
    Row("eigh", _eigh_fn, args(separated_spectrum(2)), _eigh_ref),
    Row("eigh_values", lambda a: tf.linalg.eigh(a)[0], args(separated_spectrum()),
        lambda a: np.linalg.eigh(a)[0], prims=("eigh",)),
    Row("eigh_vectors", _eigh_vectors_fn, args(separated_spectrum(n=3)),
        lambda a: np.linalg.eigh(a)[1] ** 2, prims=("eigh",)),
    # norms: composites (the spectral norm through eigh)
    Row("norm_matrix_2", lambda x: tf.norm(x, ord=2, axis=[0, 2]), args(normal(3, 2, 4)),
        lambda x: np.linalg.norm(x, ord=2, axis=(0, 2)), prims=("eigh",)),
    Row("norm", tf.norm, args(normal(3, 4)), lambda x: np.linalg.norm(x.ravel()),
        prims=("reduce_sum",)),
    Row("norm_axis_keepdims", lambda x: tf.norm(x, ord=2, axis=1, keepdims=True),
        args(normal(3, 4)), lambda x: np.linalg.norm(x, axis=1, keepdims=True),
        prims=("reduce_sum",)),
    Row("norm_fro", lambda x: tf.norm(x, ord="fro", axis=[-2, -1]), args(normal(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord="fro", axis=(-2, -1)), prims=("reduce_sum",)),
    Row("norm_1", lambda x: tf.norm(x, ord=1, axis=0), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=1, axis=0), prims=("abs",)),
    Row("norm_p3", lambda x: tf.norm(x, ord=3, axis=1), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=3, axis=1), prims=("pow",)),
    Row("norm_inf", lambda x: tf.norm(x, ord=np.inf, axis=-1), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=np.inf, axis=-1), prims=("reduce_max",), smooth=False),
    Row("norm_matrix_1", lambda x: tf.norm(x, ord=1, axis=(1, 2)), args(away_from_zero(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord=1, axis=(1, 2)), prims=("reduce_max",), smooth=False),
    Row("norm_matrix_inf", lambda x: tf.norm(x, ord=np.inf, axis=(2, 1), keepdims=True),
        args(away_from_zero(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord=np.inf, axis=(2, 1), keepdims=True),
        prims=("reduce_max",), smooth=False),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
