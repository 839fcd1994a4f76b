"""Linear algebra: products and matrix views: matmul, matvec, matrix_transpose,
adjoint, diag_part, trace, cross. (Einstein summation, einsum and tensordot:
ops/einsum.py. Factorizations and solvers, and `norm`: ops/decompositions.py.)

matmul is a primitive, and so is matmul_rows (one matrix times many vectors held as
rows, what vmap makes of a matrix times a column), whose NumPy impl and XLA lowering
each run the product in the form their backend runs fastest. diag_part and trace are
composites on einsum_p (a repeated label is a diagonal) and need no rules of their own,
as are matvec (a matmul with a column) and cross (slices, products and a stack).

Complex inputs follow NOTE(complex-gradients) in ops/complex.py: reverse rules use
adjoints (`adjoint_of`).
"""

from __future__ import annotations

import math

import string
from typing import Any

import numpy as np

from ..dtypes import half_in_float32
from .. import blas
from ..catalog import Hints, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError, UnimplementedError
from ..hessian_patterns import MULTILINEAR
from ..patterns import Abstract, Pattern
from ..tensor import Tensor, TensorBase
from .convert import binary_args, check_dtype, matrix_arg
from .einsum import einsum_p
from .elementwise import multiply, subtract
from .indexing import getitem_p
from .shape import stack
from .structural import (align_batched, conj_if_complex, dense_deps, move_to_front, per_input,
                         reshape_p, shape_of, swap_last_axes, transpose_p)


def adjoint_of(x: Tensor) -> Tensor:
    """The conjugate transpose of each matrix in the last two axes (rules use it)."""
    return conj_if_complex(swap_last_axes(x))


# ------------------------------------------------------------------ matmul: d(AB) = dA B + A dB
def _example_shape(x: Tensor, dim: int) -> tuple:
    """The shape of one example of `x`, batched along axis `dim`."""
    s = shape_of(x)
    return s[:dim] + s[dim + 1:]


def _matmul_batch(vals: tuple, dims: tuple) -> tuple:
    (a, b), (da, db) = vals, dims
    if db is None and len(shape_of(b)) == 2:
        # Only `a` is batched and `b` is one matrix: fold every batch row into one GEMM
        # (NumPy would otherwise loop over the batch, e.g. one matvec per example).
        a = move_to_front(a, da)
        sa = shape_of(a)
        flat = bind(reshape_p, a, shape=(math.prod(sa[:-1]), sa[-1]))
        out = bind(matmul_p, flat, b)
        return bind(reshape_p, out, shape=sa[:-1] + shape_of(b)[-1:]), 0
    if da is None and len(shape_of(a)) == 2 and _example_shape(b, db)[-1] == 1:
        # Only `b` is batched, one column per example (matrix times vector): the examples
        # as the rows of one matrix times a^T, one GEMM instead of a matvec per example,
        # whose result is already batch-major (with wider examples, moving b's batch costs
        # more than NumPy's loop of GEMMs, the general case below:
        # docs/performance-notes.md, #matmul-batch). matmul_rows_p runs it in each
        # backend's fast form (NOTE(matmul-rows)).
        b = move_to_front(b, db)
        sb = shape_of(b)
        examples = math.prod(sb[:-2])
        m = shape_of(a)[0]
        out = _matmul_rows(bind(reshape_p, b, shape=(examples, sb[-2])), a, transpose_b=True)
        return bind(reshape_p, out, shape=sb[:-2] + (m, 1)), 0
    # General case: batch axis first, padded left of every (broadcasting) matrix batch dim.
    rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims, strict=True))
    return bind(matmul_p, *align_batched(vals, dims, rank)), 0


def _matmul_deps(pats: tuple, vals: tuple, outs: tuple) -> tuple:
    # out[..., m, n] depends on row m of a and column n of b; where the other operand is one
    # fixed matrix, only through its nonzeros (a fixed difference matrix D @ u: a stencil).
    shape = outs[0].shape
    if min(len(v.shape) for v in vals) < 2:
        return dense_deps(pats, vals, outs)
    numbered = np.arange(int(np.prod(shape))).reshape(shape)
    parts = []
    for k, (p, v) in enumerate(zip(pats, vals, strict=True)):
        if p is None:
            continue
        other = vals[1 - k]
        mine = np.broadcast_to(np.arange(v.size).reshape(v.shape), shape[:-2] + v.shape[-2:])
        if isinstance(other, np.ndarray) and other.ndim == 2:
            if k == 0:  # b fixed: a[..., m, i] reaches out[..., m, j] where b[i, j] != 0
                i, j = np.nonzero(other)
                parts.append((p, numbered[..., j], mine[..., i]))
            else:       # a fixed: b[..., i, n] reaches out[..., j, n] where a[j, i] != 0
                j, i = np.nonzero(other)
                parts.append((p, numbered[..., j, :], mine[..., i, :]))
        else:
            line = p.reduce((len(v.shape) - 1 - k,), True)
            parts.append((line.broadcast_to(shape), numbered, numbered))
    if not parts:
        return (None,)
    rows, cols = zip(*(p.pairs(dst, src) for p, dst, src in parts), strict=True)
    return (Pattern.from_entries(shape, parts[0][0].n, np.concatenate(rows), np.concatenate(cols)),)


matmul_p = define(
    Primitive("matmul", half_in_float32(blas.matmul)),  # np.matmul, BLAS threads by size
    per_input(jvp=(lambda t, ans, a, b: bind(matmul_p, t, b),
                   lambda t, ans, a, b: bind(matmul_p, a, t)),
              vjp=(lambda g, ans, a, b: bind(matmul_p, g, adjoint_of(b)),     # G B^H
                   lambda g, ans, a, b: bind(matmul_p, adjoint_of(a), g)),    # A^H G
              reads=("b", "a"), broadcasting=True),
    batch=_matmul_batch, sparsity=_matmul_deps,
    # Full precision: XLA may otherwise multiply float32 in lower precision on accelerators.
    lower=lambda jax, a, b: jax.numpy.matmul(a, b, precision=jax.lax.Precision.HIGHEST),
    # Every row of a times one matrix b: a's leading axes index examples (NOTE(example-grid)).
    passes=Hints(examples=lambda shape, a, b: (
        (len(shape(a)) - 1, (0,)) if len(shape(b)) == 2 and len(shape(a)) >= 2 else None)),
    curvature=MULTILINEAR)


# ------------------------------------------------------------------ matmul_rows
# NOTE(matmul-rows): one matrix a [m, k] times many vectors held as the rows of `rows`
# [E, k]: out = rows @ a^T [E, m], batch-major, what vmap makes of a matrix times a column
# (`_matmul_batch`). A primitive apart from matmul so that each backend runs it in its own
# fast form: NumPy's impl picks one by the example count (`_by_columns`), XLA always takes
# the rows form (`lower`), whose result is batch-major as a reverse-mode Jacobian's is
# (compiled, a wide Jacobian keeps up with JAX's jit this way and falls behind it by
# columns); a forward-mode one, returned batch-last, would transpose the result (a tall
# jacfwd compiled falls behind JAX's), so a graph pass computes its last product as
# a @ rows^T instead, through the `swap` rule below (NOTE(swapped-layout)).
# Each form also reads the matrix faster in one layout, in OpenBLAS and XLA alike: by
# columns, a contiguous; as rows, a^T contiguous (slower through a transposed view). So
# the operand `b` is a (`transpose_b`) or a^T, and `_matmul_rows` hands NumPy's form its
# layout: a transpose of a fixed matrix is folded into a contiguous constant
# (graph/passes.py). The lowering transposes a fixed `a` once. The timings:
# docs/performance-notes.md, #matmul-rows.
def _by_columns(examples: int, m: int) -> bool:
    """Whether NumPy runs `examples` rows times a^T ([m, k]) as a @ rows^T, transposed back.

    In OpenBLAS (one thread): with as many examples as an eighth of a's rows or more,
    rows @ a^T is the faster form; with fewer, by columns, where a [E, k] x [k, m]
    product with few rows and many columns is slow (docs/performance-notes.md,
    #by-columns).
    """
    return 8 * examples < m


def _matmul_rows_impl(rows: np.ndarray, b: np.ndarray, transpose_b: bool) -> np.ndarray:
    # b is a [m, k] with transpose_b, else a^T [k, m]; out = rows @ a^T. `_by_columns`
    # written out: a Python call is a noticeable part of a small product
    # (docs/performance-notes.md, #by-columns).
    if transpose_b:
        if 8 * rows.shape[0] < b.shape[0]:
            return blas.matmul(b, rows.T).T
        return blas.matmul(rows, b.T)
    if 8 * rows.shape[0] < b.shape[1]:
        return blas.matmul(b.T, rows.T).T
    return blas.matmul(rows, b)


def _matmul_rows(rows: Tensor, b: Tensor, transpose_b: bool) -> Tensor:
    """rows @ b (b^T with `transpose_b`) as matmul_rows, the matrix handed over in the
    layout that NumPy's form for these sizes reads fastest (NOTE(matmul-rows)): `b` as it
    is, or its transpose, which for a fixed `b` the graph folds into a constant."""
    m = shape_of(b)[0 if transpose_b else 1]
    if _by_columns(shape_of(rows)[0], m) != transpose_b:
        b, transpose_b = swap_last_axes(b), not transpose_b
    return bind(matmul_rows_p, rows, b, transpose_b=transpose_b)


def _matmul_rows_b_cotangent(g: Tensor, ans: Tensor, rows: Tensor, b: Tensor,
                             transpose_b: bool) -> Tensor:
    # Products of the cotangent and the primal: no fixed matrix to lay out.
    if transpose_b:  # (R^H G)^T = G^T conj(R)
        return bind(matmul_rows_p, swap_last_axes(g), conj_if_complex(rows), transpose_b=False)
    return bind(matmul_rows_p, adjoint_of(rows), g, transpose_b=False)  # R^H G


def _matmul_rows_batch(vals: tuple, dims: tuple, transpose_b: bool) -> tuple:
    (rows, b), (dr, db) = vals, dims
    if db is None:
        # More vectors for the same matrix: the batch folds into more rows.
        rows = move_to_front(rows, dr)
        n, e, k = shape_of(rows)
        out = _matmul_rows(bind(reshape_p, rows, shape=(n * e, k)), b, transpose_b)
        return bind(reshape_p, out, shape=(n, e, shape_of(out)[-1])), 0
    # A matrix per example: a batched matmul.
    b = move_to_front(b, db)
    b = swap_last_axes(b) if transpose_b else b
    return bind(matmul_p, *align_batched((rows, b), (dr, 0), 2)), 0


def _matmul_rows_deps(pats: tuple, vals: tuple, outs: tuple, transpose_b: bool) -> tuple:
    # matmul's rule, given b^T's pattern (and zeros, where b is fixed) for transpose_b.
    rows, b = vals
    pb = pats[1]
    if transpose_b:
        if pb is not None:
            pb = pb.take(np.arange(pb.size).reshape(pb.shape).T)
        b = b.T if isinstance(b, np.ndarray) else Abstract(b.shape[::-1], b.dtype)
    return _matmul_deps((pats[0], pb), (rows, b), outs)


def _matmul_rows_lower(jax: Any, rows: Any, b: Any, transpose_b: bool) -> Any:
    if transpose_b:  # the rows form reads b^T: a fixed b is transposed once, here
        b = np.ascontiguousarray(b.T) if isinstance(b, np.ndarray) else b.T
    return jax.numpy.matmul(rows, b, precision=jax.lax.Precision.HIGHEST)


def _matmul_rows_swap(emit: Any, shape: Any, rows: int, b: int, transpose_b: bool) -> int:
    # (rows a^T)^T = a rows^T: a forward-mode Jacobian's last product in the layout its
    # transpose wants (NOTE(swapped-layout) in graph/transposes.py).
    e, k = shape(rows)
    rows_t = emit(transpose_p, [rows], (k, e), {"perm": (1, 0)})
    if not transpose_b:  # b is a^T
        b = emit(transpose_p, [b], shape(b)[::-1], {"perm": (1, 0)})
    return emit(matmul_p, [b, rows_t], (shape(b)[0], e))


matmul_rows_p = define(
    Primitive("matmul_rows", half_in_float32(_matmul_rows_impl)),
    # d(R B) = dR B + R dB, for B = b or b^T alike
    per_input(jvp=(lambda t, ans, rows, b, transpose_b: bind(matmul_rows_p, t, b,
                                                              transpose_b=transpose_b),
                   lambda t, ans, rows, b, transpose_b: bind(matmul_rows_p, rows, t,
                                                              transpose_b=transpose_b)),
              # rows: G B^H, that is G conj(b)^T or G conj(b); b: R^H G, or its transpose
              vjp=(lambda g, ans, rows, b, transpose_b: _matmul_rows(g, conj_if_complex(b),
                                                                      not transpose_b),
                   _matmul_rows_b_cotangent),
              reads=("b", "rows")),
    batch=_matmul_rows_batch, sparsity=_matmul_rows_deps, lower=_matmul_rows_lower,
    passes=Hints(swap=_matmul_rows_swap, examples=lambda shape, rows, b, transpose_b: (
        (1, (0,)) if len(shape(rows)) == 2 and len(shape(b)) == 2 else None)),
    curvature=MULTILINEAR)


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
        a = adjoint_of(a) if adjoint_a else swap_last_axes(a)
    if transpose_b or adjoint_b:
        b = adjoint_of(b) if adjoint_b else swap_last_axes(b)
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


# ------------------------------------------------------------------ matrix views
def matrix_transpose(a: Any, name: str = "matrix_transpose", conjugate: bool = False) -> Tensor:
    """Swap the last two axes of `a` (a batch of matrices); `conjugate=True` also
    conjugates, giving the adjoint.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.matrix_transpose(tf.zeros([5, 2, 3])).shape
        TensorShape([5, 3, 2])
    """
    out = swap_last_axes(matrix_arg(a, "matrix_transpose", "a"))
    return conj_if_complex(out) if conjugate else out


def adjoint(matrix: Any, name: str | None = None) -> Tensor:
    """Conjugate transpose of the last two axes (the transpose for real tensors).

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.adjoint(tf.constant([[1 + 2j, 3j]])).numpy()
        array([[1.-2.j],
               [0.-3.j]])
    """
    return adjoint_of(matrix_arg(matrix, "adjoint", "matrix"))


def _diagonal_window(x: Tensor, k: int, op: str) -> Tensor:
    """The square block of x whose main diagonal is x's k-th diagonal."""
    m, n = shape_of(x)[-2:]
    if k != 0 and not -m < k < n:
        raise InvalidArgumentError(f"{op}: diagonal k={k} is out of range for matrices of shape "
                                   f"{(m, n)} (valid: ({-m}, {n})).")
    size = min(m, n - k) if k >= 0 else min(m + k, n)
    rows = slice(max(-k, 0), max(-k, 0) + size)
    cols = slice(max(k, 0), max(k, 0) + size)
    if (rows.start, rows.stop, cols.start, cols.stop) == (0, m, 0, n):
        return x
    return bind(getitem_p, x, key=(Ellipsis, rows, cols))


def diag_part(input: Any, name: str = "diag_part", k: Any = 0,  # noqa: A002
              padding_value: Any = 0, align: str = "RIGHT_LEFT") -> Tensor:
    """The k-th diagonal of each matrix in the last two axes: ``out[..., i] = x[..., i, i + k]``.

    Matrices may be rectangular; k > 0 is above the main diagonal, k < 0 below.
    One diagonal only: a band ``k=(lo, hi)`` raises UnimplementedError
    (`padding_value` and `align` matter only for bands).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[0., 1., 2.], [3., 4., 5.]])
        >>> tf.linalg.diag_part(x).numpy(), tf.linalg.diag_part(x, k=1).numpy()
        (array([0., 4.], dtype=float32), array([1., 5.], dtype=float32))
    """
    x = matrix_arg(input, "diag_part", "input")
    if isinstance(k, TensorBase):
        k = k.numpy().tolist()
    if isinstance(k, (list, tuple)):
        if len(k) == 1 or (len(k) == 2 and k[0] == k[1]):
            k = k[0]
        else:
            raise UnimplementedError(f"diag_part: a band of diagonals k={k!r} is not supported; "
                                     "pass one int.")
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)):
        raise TypeError(f"diag_part: `k` must be an int; got {k!r}.")
    lead = _batch_labels(x)
    return bind(einsum_p, _diagonal_window(x, int(k), "diag_part"), spec=f"{lead}ii->{lead}i")


def _batch_labels(x: Tensor) -> str:
    """Labels for the batch axes of a batch of matrices (never "i", the diagonal's)."""
    return "".join([c for c in string.ascii_letters if c != "i"][:len(shape_of(x)) - 2])


def trace(x: Any, name: str | None = None) -> Tensor:
    """Sum of the main diagonal of each matrix in the last two axes (rectangular allowed).

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.trace(tf.constant([[1., 2.], [3., 4.]])).numpy()
        np.float32(5.0)
    """
    x = matrix_arg(x, "trace", "x")
    lead = _batch_labels(x)
    return bind(einsum_p, _diagonal_window(x, 0, "trace"), spec=f"{lead}ii->{lead}")


def matvec(a: Any, b: Any, transpose_a: bool = False, adjoint_a: bool = False,
           a_is_sparse: bool = False, b_is_sparse: bool = False,
           name: str | None = None) -> Tensor:
    """Matrix-vector product of the last two axes of `a` with the last axis of `b`;
    leading (batch) axes broadcast, as `matmul` with `b` as a column.

    `transpose_a` or `adjoint_a` (not both) applies to `a` first.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.matvec(tf.constant([[1., 2.], [3., 4.]]), tf.constant([1., 1.])).numpy()
        array([3., 7.], dtype=float32)
    """
    if transpose_a and adjoint_a:
        raise ValueError("matvec: only one of `transpose_a` and `adjoint_a` can be True; "
                         f"received `transpose_a`={transpose_a}, `adjoint_a`={adjoint_a}.")
    a, b = binary_args(a, b, "matvec")
    check_dtype(a, "fciu", "matvec", "a")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) < 2:
        raise InvalidArgumentError(f"matvec: `a` must have rank >= 2 (a batch of matrices); got "
                                   f"shape {sa}.")
    if not sb:
        raise InvalidArgumentError("matvec: `b` must have rank >= 1 (a batch of vectors); got a "
                                   "scalar.")
    inner = sa[-2] if transpose_a or adjoint_a else sa[-1]
    if inner != sb[-1]:
        raise InvalidArgumentError(
            f"matvec: `a` of shape {sa}{' (transposed)' if transpose_a or adjoint_a else ''} "
            f"multiplies vectors of length {inner}; `b` has shape {sb}, with length {sb[-1]}.")
    column = bind(reshape_p, b, shape=sb + (1,))
    out = matmul(a, column, transpose_a=transpose_a, adjoint_a=adjoint_a)
    return bind(reshape_p, out, shape=shape_of(out)[:-1])


def cross(a: Any, b: Any, name: str | None = None) -> Tensor:
    """The cross product of the 3-element vectors on the last axis of `a` and `b`, which
    must have one shape (no broadcasting, as TensorFlow) and one real dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.cross(tf.constant([1., 0., 0.]), tf.constant([0., 1., 0.])).numpy()
        array([0., 0., 1.], dtype=float32)
    """
    a, b = binary_args(a, b, "cross")
    check_dtype(a, "fiu", "cross", "a")
    sa, sb = shape_of(a), shape_of(b)
    if sa != sb:
        raise InvalidArgumentError(f"cross: both inputs must have the same shape; `a` has shape "
                                   f"{sa} and `b` has shape {sb}.")
    if not sa or sa[-1] != 3:
        raise InvalidArgumentError(f"cross: cross products are only defined for 3-element "
                                   f"vectors: the last axis must have length 3; got shape {sa}.")
    ai = [bind(getitem_p, a, key=(Ellipsis, i)) for i in range(3)]
    bi = [bind(getitem_p, b, key=(Ellipsis, i)) for i in range(3)]
    parts = [subtract(multiply(ai[j], bi[k]), multiply(ai[k], bi[j]))
             for j, k in ((1, 2), (2, 0), (0, 1))]
    return stack(parts, axis=-1)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "matmul": "tf linalg", "matrix_transpose": "linalg", "adjoint": "linalg",
    "diag_part": "linalg", "trace": "linalg", "matvec": "linalg", "cross": "linalg",
}
