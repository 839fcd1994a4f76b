"""Linear algebra: products, contractions and matrix views: matmul, matvec, einsum,
tensordot, matrix_transpose, adjoint, diag_part, trace, cross. (Factorizations and
solvers, and `norm`: ops/decompositions.py.)

matmul and einsum are primitives, and so is matmul_rows (one matrix times many vectors
held as rows, what vmap makes of a matrix times a column), whose NumPy impl and XLA
lowering each run the product in the form their backend runs fastest.
einsum's derivative in each operand is another einsum (with the cotangent in place of
that operand), so tensordot, diag_part and trace are composites that need no rules of
their own, as are matvec (a matmul with a column) and cross (slices, products and a
stack). einsum's `spec` is explicit and canonical: letters only, no ellipsis, an
output after "->", every label of one size in all operands (the public `einsum`
expands ellipses and squeezes broadcast size-1 axes before binding).

Complex inputs follow NOTE(complex-gradients) in ops/complex.py: reverse rules use
adjoints (`adjoint_of`).
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from .. import blas
from ..core import Primitive, Zero, bind
from ..errors import DTypeMismatchError, InvalidArgumentError, UnimplementedError
from ..patterns import Abstract, Pattern, union
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, binary_args, check_dtype, convert_like, matrix_arg
from .elementwise import multiply, subtract
from .indexing import getitem_p
from .shape import stack
from .structural import (add_any, align_batched, conj_if_complex, defjvp, defvjp, dense_deps,
                         instantiate, move_to_front, reshape_p, shape_of, swap_last_axes,
                         transpose_p)

_LETTERS = string.ascii_letters


def adjoint_of(x: Tensor) -> Tensor:
    """The conjugate transpose of each matrix in the last two axes (rules use it)."""
    return conj_if_complex(swap_last_axes(x))


# ------------------------------------------------------------------ matmul: d(AB) = dA B + A dB
matmul_p = Primitive("matmul", blas.matmul)  # np.matmul, BLAS threads by size
defjvp(matmul_p, lambda t, ans, a, b: bind(matmul_p, t, b),
       lambda t, ans, a, b: bind(matmul_p, a, t), broadcasting=True)
defvjp(matmul_p, lambda g, ans, a, b: bind(matmul_p, g, adjoint_of(b)),     # G B^H
       lambda g, ans, a, b: bind(matmul_p, adjoint_of(a), g), broadcasting=True)  # A^H G
# Full precision: XLA may otherwise multiply float32 in lower precision on accelerators.
matmul_p.lower = lambda jax, a, b: jax.numpy.matmul(a, b, precision=jax.lax.Precision.HIGHEST)
# Every row of a times one matrix b: a's leading axes index examples (NOTE(example-grid)).
matmul_p.examples = lambda shape, a, b: (
    (len(shape(a)) - 1, (0,)) if len(shape(b)) == 2 and len(shape(a)) >= 2 else None)


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
        flat = bind(reshape_p, a, shape=(int(np.prod(sa[:-1], dtype=np.int64)), sa[-1]))
        out = bind(matmul_p, flat, b)
        return bind(reshape_p, out, shape=sa[:-1] + shape_of(b)[-1:]), 0
    if da is None and len(shape_of(a)) == 2 and _example_shape(b, db)[-1] == 1:
        # Only `b` is batched, one column per example (matrix times vector): the examples
        # as the rows of one matrix times a^T, one GEMM instead of a matvec per example,
        # whose result is already batch-major (with wider examples, moving b's batch costs
        # more than NumPy's loop of GEMMs, the general case below: 7x at 128 examples of
        # 784x64). matmul_rows_p runs it in each backend's fast form (NOTE(matmul-rows)).
        b = move_to_front(b, db)
        sb = shape_of(b)
        examples = int(np.prod(sb[:-2], dtype=np.int64))
        m = shape_of(a)[0]
        out = _matmul_rows(bind(reshape_p, b, shape=(examples, sb[-2])), a, transpose_b=True)
        return bind(reshape_p, out, shape=sb[:-2] + (m, 1)), 0
    # General case: batch axis first, padded left of every (broadcasting) matrix batch dim.
    rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims, strict=True))
    return bind(matmul_p, *align_batched(vals, dims, rank)), 0


matmul_p.batch = _matmul_batch


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


matmul_p.sparsity = _matmul_deps


# ------------------------------------------------------------------ matmul_rows
# NOTE(matmul-rows): one matrix a [m, k] times many vectors held as the rows of `rows`
# [E, k]: out = rows @ a^T [E, m], batch-major, what vmap makes of a matrix times a column
# (`_matmul_batch`). A primitive apart from matmul so that each backend runs it in its own
# fast form: NumPy's impl picks one by the example count (`_by_columns`), XLA always takes
# the rows form (`lower`), whose result is batch-major as a reverse-mode Jacobian's is
# (compiled, the 8 x 4096 Jacobian of a 256-wide MLP: 1.0-1.1x JAX jit's time, 1.3-1.6x by
# columns); a forward-mode one, returned batch-last, would transpose the result (the
# 4096 x 8 jacfwd compiled: 1.5x JAX's time), so a graph pass computes its last product
# as a @ rows^T instead, through the `swap` rule below (NOTE(swapped-layout)).
# Each form also reads the matrix faster in one layout: by columns, a contiguous; as rows,
# a^T contiguous (OpenBLAS, [13, 50] x [50, 100]: 2.4 us against 5.2 us through a
# transposed view; XLA, [8, 256] x [256, 4096]: 0.34 ms against 0.48 ms). So the operand
# `b` is a (`transpose_b`) or a^T, and `_matmul_rows` hands NumPy's form its layout: a
# transpose of a fixed matrix is folded into a contiguous constant (graph/passes.py). The
# lowering transposes a fixed `a` once.
def _by_columns(examples: int, m: int) -> bool:
    """Whether NumPy runs `examples` rows times a^T ([m, k]) as a @ rows^T, transposed back.

    Timed in OpenBLAS (one thread): with as many examples as an eighth of a's rows or
    more, rows @ a^T ([640, 784] x [784, 64]: 0.36 ms against 0.79 ms by columns); with
    fewer, by columns, where a [E, k] x [k, m] product with few rows and many columns is
    slow (8 examples of a 4096x256 matrix: 0.39 ms by columns, 0.72 ms as rows; the
    8 x 4096 Jacobians of a 256-wide MLP 1.6x slower replayed).
    """
    return 8 * examples < m


def _matmul_rows_impl(rows: np.ndarray, b: np.ndarray, transpose_b: bool) -> np.ndarray:
    # b is a [m, k] with transpose_b, else a^T [k, m]; out = rows @ a^T. `_by_columns`
    # written out: a call costs 0.2 us, 7% of a [13, 50] x [50, 100] product.
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


matmul_rows_p = Primitive("matmul_rows", _matmul_rows_impl)
# d(R B) = dR B + R dB, for B = b or b^T alike
defjvp(matmul_rows_p,
       lambda t, ans, rows, b, transpose_b: bind(matmul_rows_p, t, b, transpose_b=transpose_b),
       lambda t, ans, rows, b, transpose_b: bind(matmul_rows_p, rows, t,
                                                 transpose_b=transpose_b))
# rows: G B^H, that is G conj(b)^T or G conj(b); b: R^H G, or its transpose
defvjp(matmul_rows_p,
       lambda g, ans, rows, b, transpose_b: _matmul_rows(g, conj_if_complex(b),
                                                         not transpose_b),
       _matmul_rows_b_cotangent)
matmul_rows_p.batch = _matmul_rows_batch
matmul_rows_p.sparsity = _matmul_rows_deps
matmul_rows_p.lower = _matmul_rows_lower


def _matmul_rows_swap(emit: Any, shape: Any, rows: int, b: int, transpose_b: bool) -> int:
    # (rows a^T)^T = a rows^T: a forward-mode Jacobian's last product in the layout its
    # transpose wants (NOTE(swapped-layout) in graph/transposes.py).
    e, k = shape(rows)
    rows_t = emit(transpose_p, [rows], (k, e), {"perm": (1, 0)})
    if not transpose_b:  # b is a^T
        b = emit(transpose_p, [b], shape(b)[::-1], {"perm": (1, 0)})
    return emit(matmul_p, [b, rows_t], (shape(b)[0], e))


matmul_rows_p.swap = _matmul_rows_swap
matmul_rows_p.examples = lambda shape, rows, b, transpose_b: (
    (1, (0,)) if len(shape(rows)) == 2 and len(shape(b)) == 2 else None)


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


def _split(spec: str) -> tuple[list[str], str]:
    lhs, out = spec.split("->")
    return lhs.split(","), out


def _fresh(used: str, count: int, why: str) -> list[str]:
    """`count` labels not in `used` (einsum has 52 labels: a-z, A-Z)."""
    free = [c for c in _LETTERS if c not in used]
    if len(free) < count:
        raise InvalidArgumentError(f"einsum: {why} needs {count} more axis labels than the 52 "
                                   "letters left free; use fewer axes.")
    return free[:count]


# ------------------------------------------------------------------ einsum
def _einsum_impl(*operands: np.ndarray, spec: str) -> np.ndarray:
    # Pairwise contraction through BLAS (optimize=True) pays a path search of tens of
    # microseconds: worth it for three or more operands or for large ones only.
    big = len(operands) > 2 or sum(np.size(o) for o in operands) > 4096
    # The naive contraction's multiply-adds (every label's size, once) bound each BLAS
    # product of the path: small ones run on one thread (NOTE(blas-threads)).
    sizes = {}
    for sub, o in zip(spec.split("->")[0].split(","), operands, strict=True):
        sizes.update(zip(sub, np.shape(o), strict=True))
    out = blas.sized(math.prod(sizes.values()), np.einsum, spec, *operands, optimize=big)
    return np.asarray(out)[()]  # rank 0: a NumPy scalar


def _einsum_cotangent(g: Tensor, primals: tuple, spec: str, k: int) -> Tensor:
    """Cotangent of operand k: an einsum of g with the (conjugated) other operands.

    Labels repeated in operand k (diagonals, traces) get a fresh label per extra
    occurrence, tied to the first by an identity matrix; labels of operand k found
    nowhere else (summed out) are broadcast back by a vector of ones.
    """
    ins, out = _split(spec)
    sub, shape = ins[k], shape_of(primals[k])
    dtype = np.result_type(g._value.dtype, primals[k]._value.dtype)
    repeats = len(sub) - len(set(sub))
    fresh = iter(_fresh(spec, repeats, "the derivative of a repeated label"))
    target, extra_subs, extra_ops, seen = [], [], [], set()
    for label, n in zip(sub, shape, strict=True):
        if label in seen:
            f = next(fresh)
            target.append(f)
            extra_subs.append(label + f)
            extra_ops.append(Tensor(np.eye(n, dtype=dtype)))
        else:
            seen.add(label)
            target.append(label)
    elsewhere = set(out).union(*[ins[j] for j in range(len(ins)) if j != k], *extra_subs)
    for label, n in zip(sub, shape, strict=True):
        if label not in elsewhere:
            elsewhere.add(label)
            extra_subs.append(label)
            extra_ops.append(Tensor(np.ones(n, dtype=dtype)))
    others = [j for j in range(len(ins)) if j != k]
    operands = [g] + [conj_if_complex(primals[j]) for j in others] + extra_ops
    subs = [out] + [ins[j] for j in others] + extra_subs
    return bind(einsum_p, *operands, spec=",".join(subs) + "->" + "".join(target))


def _einsum_jvp(tangents: tuple, outs: tuple, primals: tuple, spec: str) -> tuple:
    # Multilinear: d einsum(x1..xn) = sum_k einsum(x1, .., dxk, .., xn).
    total = None
    for k, t in enumerate(tangents):
        if type(t) is Zero:
            continue
        args = list(primals)
        args[k] = t
        total = add_any(total, bind(einsum_p, *args, spec=spec))
    return (Zero.like(outs[0]) if total is None else total,)


def _einsum_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, spec: str) -> tuple:
    # x_k's cotangent: einsum(g, conj(x_j) for j != k) back to x_k's labels (see above).
    g = instantiate(cts[0])
    return tuple(_einsum_cotangent(g, primals, spec, k) if need else None
                 for k, need in enumerate(needs))


def _einsum_batch(vals: tuple, dims: tuple, spec: str) -> tuple:
    # The batch axis gets a label of its own, where it already is: no transposes.
    ins, out = _split(spec)
    (b,) = _fresh(spec, 1, "vmap")
    subs = [s if d is None else s[:d] + b + s[d:] for s, d in zip(ins, dims, strict=True)]
    return bind(einsum_p, *vals, spec=",".join(subs) + "->" + b + out), 0


einsum_p = Primitive("einsum", _einsum_impl)
einsum_p.jvp = _einsum_jvp
einsum_p.vjp = _einsum_vjp
einsum_p.batch = _einsum_batch
einsum_p.lower = lambda jax, *operands, spec: jax.numpy.einsum(
    spec, *operands, precision=jax.lax.Precision.HIGHEST)


def _einsum_deps(pats: tuple, vals: tuple, outs: tuple, spec: str) -> tuple:
    # An output element depends on the elements of each operand that agree with it on the
    # operand's output labels, over every value of the summed ones. A label repeated within
    # one term (a diagonal) is over-approximated: the whole operand.
    subs, target = _split(spec)
    shape = outs[0].shape
    parts = []
    for p, sub in zip(pats, subs, strict=True):
        if p is None:
            continue
        if len(set(sub)) < len(sub) or len(set(target)) < len(target):
            parts.append((p.reduce(None, False), np.zeros(shape, np.int64)))
            continue
        kept = p.reduce(tuple(i for i, c in enumerate(sub) if c not in target), False)
        labels = [c for c in sub if c in target]
        numbered = np.arange(kept.size).reshape(kept.shape)
        numbered = np.transpose(numbered, [labels.index(c) for c in target if c in labels])
        placed = iter(numbered.shape)
        numbered = numbered.reshape([next(placed) if c in labels else 1 for c in target])
        parts.append((kept, np.broadcast_to(numbered, shape)))
    return (union(parts, shape),)


einsum_p.sparsity = _einsum_deps


def _operands(inputs: tuple, op: str) -> list[Tensor]:
    """All operands in one dtype (TensorFlow's no-promotion rule); non-tensors adapt."""
    ts = [as_tensor(x, op, f"inputs[{i}]") if isinstance(x, TensorBase) else None
          for i, x in enumerate(inputs)]
    first = next((t for t in ts if t is not None), None)
    out = [t if t is not None else as_tensor(x, op, f"inputs[{i}]") if first is None
           else convert_like(x, first, op, f"inputs[{i}]") for i, (x, t) in enumerate(zip(inputs, ts, strict=True))]
    for i, t in enumerate(out):
        if t._value.dtype != out[0]._value.dtype:
            raise DTypeMismatchError(f"{op}: inputs[0] has dtype {out[0].dtype.name} and "
                                     f"inputs[{i}] has dtype {t.dtype.name}; all operands "
                                     "must share one dtype (use tf.cast).")
        check_dtype(t, "fciu", op, f"inputs[{i}]")
    return out


def _parse_subscripts(sub: str, where: str) -> tuple[str, str | None]:
    """(labels before '...', labels after '...') or (labels, None) without ellipsis."""
    if sub.count("...") > 1:
        raise InvalidArgumentError(f"einsum: {where} {sub!r} has more than one ellipsis.")
    head, _, tail = sub.partition("...")
    for c in head + tail:
        if c not in _LETTERS:
            raise InvalidArgumentError(f"einsum: {where} {sub!r} contains {c!r}; labels must "
                                       "be letters (a-z, A-Z), with at most one '...'.")
    return (head, tail) if "..." in sub else (sub, None)


def _explicit_einsum(equation: str, shapes: list[tuple]) -> tuple[str, list[tuple]]:
    """An explicit spec for `equation` and, per operand, the size-1 axes to squeeze
    (ellipsis axes that broadcast against a longer one)."""
    eq = "".join(equation.split())
    if eq.count("->") > 1:
        raise InvalidArgumentError(f"einsum: equation {equation!r} has more than one '->'.")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise InvalidArgumentError(f"einsum: equation {equation!r} names {len(subs)} operand(s) "
                                   f"but {len(shapes)} input(s) were given.")
    parsed = [_parse_subscripts(s, f"the subscripts of inputs[{i}]") for i, s in enumerate(subs)]
    named = "".join(h + (t or "") for h, t in parsed)
    ell_ranks = []
    for i, ((head, tail), shape) in enumerate(zip(parsed, shapes, strict=True)):
        n = len(head) + len(tail or "")
        if (tail is None and n != len(shape)) or len(shape) < n:
            raise InvalidArgumentError(f"einsum: inputs[{i}] has rank {len(shape)} (shape "
                                       f"{shape}) but its subscripts {subs[i]!r} name {n} axes.")
        ell_ranks.append(len(shape) - n)
    n_ell = max(ell_ranks)
    ell = _fresh(named + rhs, n_ell, "the ellipsis")
    # Broadcast the ellipsis axes (right-aligned), remembering size-1 axes that stretch.
    ell_size = [1] * n_ell
    for (head, tail), shape, r in zip(parsed, shapes, ell_ranks, strict=True):
        for j, n in enumerate(shape[len(head):len(head) + r]):
            pos = n_ell - r + j
            if n != 1 and ell_size[pos] not in (1, n):
                raise InvalidArgumentError(f"einsum: the '...' axes of the inputs do not "
                                           f"broadcast: shapes {shapes}, equation {equation!r}.")
            ell_size[pos] = max(ell_size[pos], n)
    sizes: dict[str, int] = {}
    explicit, squeezes = [], []
    for i, ((head, tail), shape, r) in enumerate(zip(parsed, shapes, ell_ranks, strict=True)):
        labels, drop = [], []
        for axis, n in enumerate(shape):
            if axis < len(head):
                label = head[axis]
            elif axis < len(head) + r:
                pos = n_ell - r + axis - len(head)
                if n == 1 and ell_size[pos] != 1:
                    drop.append(axis)
                    continue
                label = ell[pos]
            else:
                label = tail[axis - len(head) - r]
            if sizes.setdefault(label, n) != n:
                raise InvalidArgumentError(f"einsum: label {label!r} has size {sizes[label]} in "
                                           f"one place and {n} in inputs[{i}] (shapes {shapes}, "
                                           f"equation {equation!r}).")
            labels.append(label)
        explicit.append("".join(labels))
        squeezes.append(tuple(drop))
    if arrow:
        head, tail = _parse_subscripts(rhs, "the output subscripts")
        if tail is None and n_ell:
            raise InvalidArgumentError(f"einsum: the inputs have {n_ell} '...' axes but the "
                                       f"output subscripts {rhs!r} have no ellipsis.")
        out = head + ("".join(ell) if tail is not None else "") + (tail or "")
        for c in out:
            if out.count(c) > 1:
                raise InvalidArgumentError(f"einsum: output label {c!r} is repeated in {rhs!r}.")
            if c not in named and c not in ell:
                raise InvalidArgumentError(f"einsum: output label {c!r} appears in no input "
                                           f"subscripts ({lhs!r}).")
    else:  # implicit mode: labels seen exactly once, in alphabetical order
        out = "".join(ell) + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    return ",".join(explicit) + "->" + out, squeezes


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """Einstein summation: multiply `inputs` along shared labels and sum the labels
    missing from the output, as `tf.einsum`.

    Labels are letters; a label repeated within one operand takes its diagonal
    (``"ii->i"``, ``"ii->"`` is the trace); ``...`` stands for broadcast
    (batch) axes; without ``->`` the output is the labels used once, sorted.
    Any number of operands. The gradient with respect to each operand is itself
    an einsum, so every order of derivative and vmap work. ``optimize`` is
    accepted and ignored (NumPy chooses the contraction order).

    Example:
        >>> import tapeflow as tf
        >>> a = tf.constant([[1., 2.], [3., 4.]])
        >>> tf.einsum("ij,jk->ik", a, a).numpy()
        array([[ 7., 10.],
               [15., 22.]], dtype=float32)
        >>> tf.einsum("ii", a).numpy()
        np.float32(5.0)
    """
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword argument(s) {sorted(unknown)}; accepted: "
                        "name, optimize.")
    if not isinstance(equation, str):
        raise TypeError(f"einsum: `equation` must be a string; got {type(equation).__name__}.")
    if not inputs:
        raise InvalidArgumentError("einsum: no inputs were given.")
    ops = _operands(inputs, "einsum")
    spec, squeezes = _explicit_einsum(equation, [shape_of(t) for t in ops])
    for i, drop in enumerate(squeezes):
        if drop:
            shape = tuple(n for a, n in enumerate(shape_of(ops[i])) if a not in drop)
            ops[i] = bind(reshape_p, ops[i], shape=shape)
    return bind(einsum_p, *ops, spec=spec)


# ------------------------------------------------------------------ tensordot
def _tensordot_axes(axes: Any, ra: int, rb: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, TensorBase):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(ra, rb):
            raise InvalidArgumentError(f"tensordot: `axes`={n} must lie in [0, {min(ra, rb)}] "
                                       f"for inputs of ranks {ra} and {rb}.")
        return list(range(ra - n, ra)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise InvalidArgumentError(f"tensordot: `axes` must be an int or a pair [a_axes, b_axes]; "
                                   f"got {axes!r}.")
    pair = [[x] if np.ndim(x) == 0 else list(np.asarray(x).reshape(-1).tolist()) for x in axes]
    if len(pair[0]) != len(pair[1]):
        raise InvalidArgumentError(f"tensordot: `axes` pairs {len(pair[0])} axes of `a` with "
                                   f"{len(pair[1])} axes of `b`; the counts must match.")
    out = []
    for arg, lst, r in (("a", pair[0], ra), ("b", pair[1], rb)):
        fixed = []
        for x in lst:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"tensordot: `axes` must hold ints; got {x!r} for `{arg}`.")
            if not -r <= x < r:
                raise InvalidArgumentError(f"tensordot: axis {x} is out of range for `{arg}` of "
                                           f"rank {r}.")
            fixed.append(int(x) % r)
        if len(set(fixed)) != len(fixed):
            raise InvalidArgumentError(f"tensordot: `axes` repeats an axis of `{arg}`: {lst}.")
        out.append(fixed)
    return out[0], out[1]


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sum the products of `a` and `b` over the axes paired by `axes`, as `tf.tensordot`.

    `axes` is an int N (the last N axes of `a` with the first N of `b`; 0 is the
    outer product) or a pair ``[a_axes, b_axes]`` of ints or lists. The result's
    axes are the free axes of `a`, then those of `b`, each in order. Built on einsum.

    Example:
        >>> import tapeflow as tf
        >>> a, b = tf.ones([2, 3, 4]), tf.ones([4, 3, 5])
        >>> tf.tensordot(a, b, axes=[[1, 2], [1, 0]]).shape
        TensorShape([2, 5])
    """
    a, b = binary_args(a, b, "tensordot")
    check_dtype(a, "fciu", "tensordot", "a")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) + len(sb) > len(_LETTERS):
        raise InvalidArgumentError(f"tensordot: ranks {len(sa)} + {len(sb)} exceed 52 axes.")
    a_axes, b_axes = _tensordot_axes(axes, len(sa), len(sb))
    for i, j in zip(a_axes, b_axes, strict=True):
        if sa[i] != sb[j]:
            raise InvalidArgumentError(f"tensordot: axis {i} of `a` (shape {sa}) has size {sa[i]} "
                                       f"but axis {j} of `b` (shape {sb}) has size {sb[j]}.")
    la = _LETTERS[:len(sa)]
    free_b = iter(_LETTERS[len(sa):])
    lb = "".join(la[a_axes[b_axes.index(j)]] if j in b_axes else next(free_b)
                 for j in range(len(sb)))
    out = "".join(la[i] for i in range(len(sa)) if i not in a_axes) + \
        "".join(lb[j] for j in range(len(sb)) if j not in b_axes)
    return bind(einsum_p, a, b, spec=f"{la},{lb}->{out}")


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
    return "".join([c for c in _LETTERS if c != "i"][:len(shape_of(x)) - 2])


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
    "matmul": "tf linalg", "einsum": "tf linalg", "tensordot": "tf linalg",
    "matrix_transpose": "linalg", "adjoint": "linalg", "diag_part": "linalg", "trace": "linalg",
    "matvec": "linalg", "cross": "linalg",
}
