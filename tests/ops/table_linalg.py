"""Op-table rows of the linear-algebra primitives (src/tapeflow/ops/linalg.py): matmul
and matmul_rows; diag_part and trace as composites of einsum (whose own rows, with
tensordot's, are in table_einsum.py), the matrix views, matvec and cross.
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.linalg import matmul_rows_p
from op_table import Row, args, normal

ROWS: list = [
    Row("matmul", tf.matmul, args(normal(2, 3, 4), normal(4, 5)), np.matmul),
    # a matrix times one column: batching the column alone takes the batch as the rows of
    # one matmul_rows (_matmul_batch), given a^T and run by its impl as rows @ a^T ...
    Row("matmul_column", tf.matmul, args(normal(3, 4), normal(4, 1)), np.matmul,
        prims=("matmul",)),
    # ... and with more rows of a than 8x the examples, given a and run as (a @ rows^T)^T
    Row("matmul_column_tall", tf.matmul, args(normal(30, 4), normal(4, 1)), np.matmul,
        prims=("matmul",)),
    # matmul_rows itself, rows @ b (or b^T), in both of its impl's forms: few examples for
    # the matrix's rows (8 * 2 < 30: by columns), many (8 * 6 >= 5: as rows), one example;
    # each with the matrix in either layout
    Row("matmul_rows", lambda r, b: bind(matmul_rows_p, r, b, transpose_b=True),
        args(normal(2, 4), normal(30, 4)), lambda r, b: r @ b.T),
    Row("matmul_rows_many", lambda r, b: bind(matmul_rows_p, r, b, transpose_b=False),
        args(normal(6, 4), normal(4, 5)), lambda r, b: r @ b, prims=("matmul_rows",)),
    Row("matmul_rows_few_untransposed", lambda r, b: bind(matmul_rows_p, r, b, transpose_b=False),
        args(normal(2, 4), normal(4, 30)), lambda r, b: r @ b, prims=("matmul_rows",)),
    Row("matmul_rows_many_transposed", lambda r, b: bind(matmul_rows_p, r, b, transpose_b=True),
        args(normal(6, 4), normal(5, 4)), lambda r, b: r @ b.T, prims=("matmul_rows",)),
    Row("matmul_rows_one", lambda r, b: bind(matmul_rows_p, r, b, transpose_b=True),
        args(normal(1, 3), normal(9, 3)), lambda r, b: r @ b.T, prims=("matmul_rows",)),
    Row("matmul_transposed", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
        args(normal(4, 3), normal(5, 4)), lambda a, b: a.T @ b.T, prims=("matmul", "transpose")),
    # composites on einsum_p (einsum's own rows: table_einsum.py)
    Row("diag_part", tf.linalg.diag_part, args(normal(2, 3, 3)),
        lambda a: np.diagonal(a, axis1=-2, axis2=-1), prims=("einsum",)),
    Row("diag_part_offset", lambda a: tf.linalg.diag_part(a, k=1), args(normal(3, 4)),
        lambda a: np.diagonal(a, 1), prims=("einsum", "getitem")),
    Row("diag_part_below", lambda a: tf.linalg.diag_part(a, k=-1), args(normal(4, 3)),
        lambda a: np.diagonal(a, -1), prims=("einsum", "getitem")),
    Row("trace", tf.linalg.trace, args(normal(2, 3, 4)),
        lambda a: np.trace(a[..., :3, :3], axis1=-2, axis2=-1), prims=("einsum", "getitem")),
    # matrix views: composites of transpose
    Row("matrix_transpose", tf.linalg.matrix_transpose, args(normal(2, 3, 4)),
        lambda a: np.swapaxes(a, -1, -2), prims=("transpose",)),
    Row("adjoint", tf.linalg.adjoint, args(normal(3, 2)), lambda a: a.T, prims=("transpose",)),
    Row("matvec", lambda a, b: tf.linalg.matvec(a, b, transpose_a=True),
        args(normal(2, 4, 3), normal(4)), lambda a, b: np.einsum("bji,j->bi", a, b),
        prims=("matmul", "reshape", "transpose")),
    Row("cross", tf.linalg.cross, args(normal(2, 3), normal(2, 3)), np.cross,
        prims=("getitem", "multiply", "subtract", "concat")),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
