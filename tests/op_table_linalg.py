"""Op-table rows for the ops in src/tapeflow/ops/linalg_ops.py and linalg_decomp.py
(see tests/op_table.py).

Inputs are well conditioned: diagonally dominant matrices for inv/det/solve,
M M^T + 3 I for cholesky (symmetric by construction, as its symmetric gradient
assumes), well-separated eigenvalues for eigh with outputs invariant to the
eigenvectors' signs.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import NondiffRow, Row, args, away_from_zero, normal  # noqa: F401


def dominant(*shape: int):
    """Random matrices plus 3 I: far from singular."""
    return lambda rng: rng.standard_normal(shape) + 3 * np.eye(shape[-1])


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


def _tril(m, lower=True):
    return np.tril(m) if lower else np.triu(m)


ROWS: list = [
    # einsum: contraction, ellipsis broadcasting, repeated labels, summed-out labels, 3 operands
    Row("einsum", lambda a, b: tf.einsum("ij,jk->ik", a, b), args(normal(3, 4), normal(4, 2)),
        lambda a, b: a @ b),
    Row("einsum_ellipsis_broadcast", lambda a, b: tf.einsum("...ij,...jk->...ik", a, b),
        args(normal(2, 1, 3, 4), normal(3, 4, 2)),
        lambda a, b: np.einsum("...ij,...jk->...ik", a, b), prims=("einsum", "reshape")),
    Row("einsum_diagonal", lambda a, b: tf.einsum("iij,jk->ki", a, b),
        args(normal(3, 3, 4), normal(4, 2)), lambda a, b: np.einsum("iij,jk->ki", a, b),
        prims=("einsum",)),
    Row("einsum_summed_out", lambda a, b: tf.einsum("ijk,lk->l", a, b),
        args(normal(2, 3, 4), normal(2, 4)), lambda a, b: np.einsum("ijk,lk->l", a, b),
        prims=("einsum",)),
    Row("einsum_three_implicit", lambda a, b, c: tf.einsum("ab,bc,cd", a, b, c),
        args(normal(2, 3), normal(3, 4), normal(4, 2)), lambda a, b, c: a @ b @ c,
        prims=("einsum",)),
    Row("einsum_trace", lambda a: tf.einsum("...ii", a), args(normal(2, 3, 3)),
        lambda a: np.trace(a, axis1=-2, axis2=-1), prims=("einsum",)),
    # composites on einsum and transpose
    Row("tensordot", lambda a, b: tf.tensordot(a, b, axes=2),
        args(normal(2, 3, 4), normal(3, 4, 2)),
        lambda a, b: np.tensordot(a, b, axes=2), prims=("einsum",)),
    Row("tensordot_pairs", lambda a, b: tf.tensordot(a, b, axes=[[0, 2], [2, 0]]),
        args(normal(2, 3, 4), normal(4, 5, 2)),
        lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0])), prims=("einsum",)),
    Row("matrix_transpose", tf.linalg.matrix_transpose, args(normal(2, 3, 4)),
        lambda a: np.swapaxes(a, -1, -2), prims=("transpose",)),
    Row("adjoint", tf.linalg.adjoint, args(normal(3, 2)), lambda a: a.T, prims=("transpose",)),
    Row("diag_part", tf.linalg.diag_part, args(normal(2, 3, 3)),
        lambda a: np.diagonal(a, axis1=-2, axis2=-1), prims=("einsum",)),
    Row("diag_part_offset", lambda a: tf.linalg.diag_part(a, k=1), args(normal(3, 4)),
        lambda a: np.diagonal(a, 1), prims=("einsum", "getitem")),
    Row("diag_part_below", lambda a: tf.linalg.diag_part(a, k=-1), args(normal(4, 3)),
        lambda a: np.diagonal(a, -1), prims=("einsum", "getitem")),
    Row("trace", tf.linalg.trace, args(normal(2, 3, 4)),
        lambda a: np.trace(a[..., :3, :3], axis1=-2, axis2=-1), prims=("einsum", "getitem")),
    # factorizations and solvers (batched)
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
    # norms (composites)
    Row("norm", tf.norm, args(normal(3, 4)), lambda x: np.linalg.norm(x.ravel()),
        prims=("reduce_sum",)),
    Row("norm_axis_keepdims", lambda x: tf.norm(x, ord=2, axis=1, keepdims=True),
        args(normal(3, 4)), lambda x: np.linalg.norm(x, axis=1, keepdims=True),
        prims=("reduce_sum",)),
    Row("norm_1", lambda x: tf.norm(x, ord=1, axis=0), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=1, axis=0), prims=("abs",)),
    Row("norm_inf", lambda x: tf.norm(x, ord=np.inf, axis=-1), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=np.inf, axis=-1), prims=("reduce_max",), smooth=False),
    Row("norm_p3", lambda x: tf.norm(x, ord=3, axis=1), args(away_from_zero(3, 4)),
        lambda x: np.linalg.norm(x, ord=3, axis=1), prims=("pow",)),
    Row("norm_fro", lambda x: tf.norm(x, ord="fro", axis=[-2, -1]), args(normal(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord="fro", axis=(-2, -1)), prims=("reduce_sum",)),
    Row("norm_matrix_1", lambda x: tf.norm(x, ord=1, axis=(1, 2)), args(away_from_zero(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord=1, axis=(1, 2)), prims=("reduce_max",), smooth=False),
    Row("norm_matrix_inf", lambda x: tf.norm(x, ord=np.inf, axis=(2, 1), keepdims=True),
        args(away_from_zero(2, 3, 4)),
        lambda x: np.linalg.norm(x, ord=np.inf, axis=(2, 1), keepdims=True),
        prims=("reduce_max",), smooth=False),
    Row("norm_matrix_2", lambda x: tf.norm(x, ord=2, axis=[0, 2]), args(normal(3, 2, 4)),
        lambda x: np.linalg.norm(x, ord=2, axis=(0, 2)), prims=("eigh",)),
]

NONDIFF_ROWS: list = []
EXEMPT: dict = {}
