"""Op-table rows of the einsum primitive (src/tapeflow/ops/einsum.py): contraction,
ellipsis broadcasting, repeated labels, summed-out labels and three operands; and
tensordot, a composite of einsum. (diag_part and trace, also composites of einsum, are
linalg's ops: table_linalg.py.)
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf
from op_table import Row, args, normal

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
    # tensordot: a composite of einsum
    Row("tensordot", lambda a, b: tf.tensordot(a, b, axes=2),
        args(normal(2, 3, 4), normal(3, 4, 2)),
        lambda a, b: np.tensordot(a, b, axes=2), prims=("einsum",)),
    Row("tensordot_pairs", lambda a, b: tf.tensordot(a, b, axes=[[0, 2], [2, 0]]),
        args(normal(2, 3, 4), normal(4, 5, 2)),
        lambda a, b: np.tensordot(a, b, axes=([0, 2], [2, 0])), prims=("einsum",)),
]

NONDIFF_ROWS: list = []

EXEMPT: dict = {}
