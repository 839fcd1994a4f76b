"""Linear-algebra primitives: matmul (batched, broadcasting batch dims)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor
from ._rules import (align_batched, binary_args, check_dtype, defjvp, defvjp, move_to_front,
                     shape_of)


def matrix_transpose_t(x: Tensor) -> Tensor:
    """Swap the last two axes (internal, on a converted tensor)."""
    from .shape import transpose_p

    nd = len(shape_of(x))
    perm = tuple(range(nd - 2)) + (nd - 1, nd - 2)
    return bind(transpose_p, x, perm=perm)


def _adjoint(x: Tensor) -> Tensor:
    from .elementwise import conj_if_complex

    return conj_if_complex(matrix_transpose_t(x))


# ------------------------------------------------------------------ matmul: d(AB) = dA B + A dB
matmul_p = Primitive("matmul", np.matmul)
defjvp(matmul_p, lambda t, ans, a, b: bind(matmul_p, t, b),
       lambda t, ans, a, b: bind(matmul_p, a, t), broadcasting=True)
defvjp(matmul_p, lambda g, ans, a, b: bind(matmul_p, g, _adjoint(b)),     # G B^H
       lambda g, ans, a, b: bind(matmul_p, _adjoint(a), g), broadcasting=True)  # A^H G


def _matmul_batch(vals: tuple, dims: tuple) -> tuple:
    from .shape import reshape_p, transpose_p

    (a, b), (da, db) = vals, dims
    if db is None and len(shape_of(b)) == 2:
        # Only `a` is batched and `b` is one matrix: fold every batch row into one GEMM
        # (NumPy would otherwise loop over the batch, e.g. one matvec per example).
        a = move_to_front(a, da)
        sa = shape_of(a)
        flat = bind(reshape_p, a, shape=(int(np.prod(sa[:-1], dtype=np.int64)), sa[-1]))
        out = bind(matmul_p, flat, b)
        return bind(reshape_p, out, shape=sa[:-1] + shape_of(b)[-1:]), 0
    if da is None and len(shape_of(a)) == 2:
        # Only `b` is batched: move the batch into b's columns, one GEMM, move it back.
        b = move_to_front(b, db)
        sb = shape_of(b)
        rank = len(sb)
        cols = bind(transpose_p, b, perm=(rank - 2,) + tuple(range(rank - 2)) + (rank - 1,))
        flat = bind(reshape_p, cols, shape=(sb[-2], int(np.prod(sb, dtype=np.int64)) // sb[-2]))
        out = bind(matmul_p, a, flat)  # [m, B * ... * n]
        m = shape_of(a)[0]
        out = bind(reshape_p, out, shape=(m,) + sb[:-2] + sb[-1:])
        perm = tuple(range(1, rank - 1)) + (0, rank - 1)
        return bind(transpose_p, out, perm=perm), 0
    # General case: batch axis first, padded left of every (broadcasting) matrix batch dim.
    rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims))
    return bind(matmul_p, *align_batched(vals, dims, rank)), 0


matmul_p.batch = _matmul_batch


def matmul(a: Any, b: Any, transpose_a: bool = False, transpose_b: bool = False,
           adjoint_a: bool = False, adjoint_b: bool = False, a_is_sparse: bool = False,
           b_is_sparse: bool = False, output_type: Any = None, grad_a: bool = False,
           grad_b: bool = False, name: str | None = None) -> Tensor:
    """Matrix product of the last two axes of `a` and `b`; leading (batch) axes broadcast.

    Both inputs need rank >= 2 (as TensorFlow); `transpose_*`/`adjoint_*`
    apply to the last two axes before multiplying.

    Example:
        >>> import tapeflow as tf
        >>> tf.matmul(tf.ones([2, 3]), tf.ones([3, 4])).shape
        TensorShape([2, 4])
    """
    a, b = binary_args(a, b, "matmul")
    check_dtype(a, "fciu", "matmul", "a")
    for arg, x in (("a", a), ("b", b)):
        if np.ndim(x._value) < 2:
            raise InvalidArgumentError(f"matmul: `{arg}` must have rank >= 2; got shape "
                                       f"{shape_of(x)}. Use tf.tensordot or reshape vectors to "
                                       "matrices.")
    if transpose_a or adjoint_a:
        a = _adjoint(a) if adjoint_a else matrix_transpose_t(a)
    if transpose_b or adjoint_b:
        b = _adjoint(b) if adjoint_b else matrix_transpose_t(b)
    sa, sb = shape_of(a), shape_of(b)
    if sa[-1] != sb[-2]:
        raise InvalidArgumentError(f"matmul: inner dimensions differ: `a` has shape {sa} and `b` "
                                   f"has shape {sb} (after transposes); a.shape[-1] must equal "
                                   "b.shape[-2].")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise InvalidArgumentError(f"matmul: batch dimensions do not broadcast: {sa[:-2]} and "
                                   f"{sb[:-2]}.") from None
    return bind(matmul_p, a, b)
