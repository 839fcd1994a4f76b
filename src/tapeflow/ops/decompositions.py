"""Factorizations and solvers: inv, det, slogdet, solve, triangular_solve, cholesky, eigh;
and `norm`, whose matrix 2-norm is built on eigh.

Each is a primitive because LAPACK does the work in one call and the derivative
rules reuse the result (the inverse, the factor, the eigenvectors) instead of
differentiating through a factorization written op by op. Every op takes a batch
of matrices in its last two axes.

Complex inputs follow TensorFlow's convention (the gradient of a real loss L is
dL/d(conj z), so reverse rules use adjoints: NOTE(complex-gradients) in ops/complex.py).
NumPy's LAPACK has no float16 or bfloat16 routines: such inputs are computed in float32
and rounded back (`dtypes.half_in_float32`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..dtypes import half_in_float32
from ..catalog import Lowering, define
from ..core import Primitive, Zero, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .complex import abs as abs_
from .convert import as_tensor, binary_args, check_dtype, matrix_arg
from .elementwise import add, cast, divide, greater, multiply, negative, sqrt, subtract
from .linalg import adjoint_of, diag_part, matmul_p, trace
from .reduction import reduce_max, reduce_sum
from .shape import reshape, transpose
from .structural import (add_any, batch_elementwise, conj_if_complex, float_mask, instantiate,
                         move_to_front, ones_of, per_input, per_matrix_deps, reshape_p, select_p,
                         shape_of, unbroadcast)
from .transcendental import pow as pow_


def _lapack(op: str, failure: str, fn: Any, *arrays: np.ndarray) -> Any:
    """Run a NumPy linalg routine; LinAlgError -> InvalidArgumentError."""
    try:
        out = half_in_float32(fn)(*arrays)
    except np.linalg.LinAlgError:
        raise InvalidArgumentError(f"{op}: {failure}") from None
    # Results keep the input dtype (rank 0 as a NumPy scalar, like every op's value).
    dtype = arrays[0].dtype
    if isinstance(out, tuple):
        return [np.asarray(r).astype(dtype, copy=False)[()] for r in out]
    return np.asarray(out).astype(dtype, copy=False)[()]


def _lowered(fn: Any) -> Any:
    """A lowering rule running `fn(jax, *arrays)` as `_lapack` runs its routine (halves in
    float32, results in the input dtype). XLA cannot raise: where the impl raises (a
    singular matrix, one not positive definite) the results hold inf or nan, caught by
    `_finite_check`."""
    def lower(jax: Any, *arrays: Any) -> Any:
        arrays = tuple(jax.numpy.asarray(a) for a in arrays)
        if _dt.is_half(np.dtype(dtype := arrays[0].dtype)):
            arrays = tuple(a.astype(np.float32) for a in arrays)
        out = fn(jax, *arrays)
        if isinstance(out, tuple):
            return tuple(r.astype(dtype) for r in out)
        return out.astype(dtype)
    return lower


def _broadcast_batch(jax: Any, a: Any, b: Any) -> tuple:
    """a [..., n, n] and b [..., n, k] with their batch axes broadcast together."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    return (jax.numpy.broadcast_to(a, batch + a.shape[-2:]),
            jax.numpy.broadcast_to(b, batch + b.shape[-2:]))


def _mm(a: Tensor, b: Tensor) -> Tensor:
    return bind(matmul_p, a, b)


def _mask(x: Tensor, kind: str) -> Tensor:
    """A constant n x n mask in x's dtype: "lower"/"upper" triangle, "half" (strict lower
    triangle plus half the diagonal), "offdiag"."""
    n = shape_of(x)[-1]
    ones = np.ones((n, n), dtype=x._value.dtype)
    m = {"lower": np.tril(ones), "upper": np.triu(ones), "offdiag": ones - np.eye(n),
         "half": np.tril(ones, -1) + 0.5 * np.eye(n)}[kind]
    return Tensor(m.astype(x._value.dtype))


def _trailing(x: Tensor, extra: tuple) -> Tensor:
    """x reshaped with `extra` length-1 axes appended (a scalar per matrix -> [..., 1, 1])."""
    return bind(reshape_p, x, shape=shape_of(x) + extra)


def _real(x: Tensor) -> Tensor:
    """Re(x), kept in x's dtype (a complex tensor with zero imaginary part)."""
    if x._value.dtype.kind != "c":
        return x
    return cast(cast(x, x._value.real.dtype), x._value.dtype)


def _batch_matrices(prim: Primitive) -> dict:
    """Batching rule (a family: catalog.define) of a one-input op on [..., n, n]: the batch
    axis joins the leading ones."""
    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        out = bind(prim, move_to_front(vals[0], dims[0]), **params)
        return (out, [0] * len(out)) if prim.multiple_results else (out, 0)
    return {"batch": rule}


def _finite_check(lower: Any) -> Any:
    """The check of a factorization's lowering `lower` whose impl raises where XLA's
    returns inf or nan (a singular matrix, one not positive definite): it fails where
    finite inputs give a result that is not finite, and the call then reruns on NumPy,
    which raises the impl's error (or, for an overflow, returns the same inf). XLA
    computes the result once: the check's copy of the op is merged with the node's own."""
    def check(jax: Any, *args: Any, **params: Any) -> Any:
        jnp = jax.numpy
        outs = lower(jax, *args, **params)
        outs = outs if isinstance(outs, tuple) else (outs,)
        finite_in = jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in args]))
        finite_out = jnp.all(jnp.stack([jnp.all(jnp.isfinite(o)) for o in outs]))
        return finite_out | ~finite_in
    return check


def _finite_checked(lower: Any) -> Lowering:
    """The lowering `lower` with its `_finite_check`."""
    return Lowering(lower, check=_finite_check(lower))


# Every decomposition acts per matrix: its dependencies are block diagonal over the batch
# (sparsity=per_matrix_deps(2) in each definition below).

# ------------------------------------------------------------------ inv
_SINGULAR = ("is not invertible: its LU factorization has an exact zero pivot (a singular "
             "matrix).")
inv_p = define(
    Primitive("inv", lambda a: _lapack("inv", "`input` " + _SINGULAR, np.linalg.inv, a)),
    # d(A^-1) = -A^-1 dA A^-1
    per_input(jvp=(lambda t, ans, a: negative(_mm(ans, _mm(t, ans))),),
              # gA = -A^-H G A^-H
              vjp=(lambda g, ans, a: negative(_mm(adjoint_of(ans), _mm(g, adjoint_of(ans)))),),
              reads=("ans",)),
    _batch_matrices, sparsity=per_matrix_deps(2),
    lower=_finite_checked(_lowered(lambda jax, a: jax.numpy.linalg.inv(a))))  # singular: inf/nan

# ------------------------------------------------------------------ det
det_p = define(
    Primitive("det", lambda a: _lapack("det", "", np.linalg.det, a)),
    # d det A = det A * tr(A^-1 dA)
    per_input(jvp=(lambda t, ans, a: multiply(ans, trace(bind(solve_p, a, t))),),
              # gA = g conj(det A) A^-H (TensorFlow's registered gradient omits the conjugate)
              vjp=(lambda g, ans, a: multiply(_trailing(multiply(g, conj_if_complex(ans)),
                                                        (1, 1)),
                                              bind(inv_p, adjoint_of(a))),),
              reads=("ans a",)),
    _batch_matrices, sparsity=per_matrix_deps(2),
    lower=_lowered(lambda jax, a: jax.numpy.linalg.det(a)))


# ------------------------------------------------------------------ slogdet: (sign, log|det|)
def _slogdet_jvp(tangents: tuple, outs: tuple, primals: tuple) -> tuple:
    # d log|det A| = Re tr(A^-1 dA); the sign carries no derivative (as TensorFlow).
    (a,), (t,) = primals, tangents
    if type(t) is Zero:
        return Zero.like(outs[0]), Zero.like(outs[1])
    return Zero.like(outs[0]), _real(trace(bind(solve_p, a, t)))


def _slogdet_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple) -> tuple:
    # gA = Re(g) A^-H
    g = cts[1]
    if type(g) is Zero:
        return (None,)
    return (multiply(_trailing(_real(g), (1, 1)), bind(inv_p, adjoint_of(primals[0]))),)


slogdet_p = define(
    Primitive("slogdet", lambda a: _lapack("slogdet", "", np.linalg.slogdet, a),
              multiple_results=True),
    _batch_matrices, jvp=_slogdet_jvp, vjp=_slogdet_vjp, sparsity=per_matrix_deps(2),
    # (sign, log|det|), both in the input dtype (a complex log|det| for complex input, as
    # the impl); a singular matrix gives (0, -inf) as NumPy.
    lower=_lowered(lambda jax, a: tuple(jax.numpy.linalg.slogdet(a))))


# ------------------------------------------------------------------ solve: X = A^-1 B
def _solve_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple) -> tuple:
    # gB = A^-H G, gA = -gB X^H (both summed back over broadcast batch axes)
    a, b = primals
    gb = bind(solve_p, adjoint_of(a), instantiate(cts[0]))
    ga = negative(_mm(gb, adjoint_of(outs[0]))) if needs[0] else None
    return (None if ga is None else unbroadcast(ga, shape_of(a)),
            unbroadcast(gb, shape_of(b)) if needs[1] else None)


solve_p = define(
    Primitive("solve", lambda a, b: _lapack("solve", "`matrix` " + _SINGULAR,
                                            np.linalg.solve, a, b)),
    # dX = A^-1 (dB - dA X)
    per_input(jvp=(lambda t, ans, a, b: negative(bind(solve_p, a, _mm(t, ans))),
                   lambda t, ans, a, b: bind(solve_p, a, t)), broadcasting=True),
    batch_elementwise, vjp=_solve_vjp, sparsity=per_matrix_deps(2),
    # LU with partial pivoting, as LAPACK's gesv; singular: inf/nan.
    lower=_finite_checked(_lowered(
        lambda jax, a, b: jax.numpy.linalg.solve(*_broadcast_batch(jax, a, b)))))


# ------------------------------------------------------------------ triangular_solve: op(T) X = B
def _triangle(m: np.ndarray, lower: bool, adjoint: bool) -> np.ndarray:
    t = np.tril(m) if lower else np.triu(m)
    return np.conj(np.swapaxes(t, -1, -2)) if adjoint else t


_TRI_SINGULAR = "`matrix` is singular: its triangle has a zero on the diagonal."


def _triangular_solve_impl(m: np.ndarray, b: np.ndarray, lower: bool,
                           adjoint: bool) -> np.ndarray:
    n = m.shape[-1]
    # The blocked solve has a fixed cost: LU wins on a few small systems
    # (NOTE(triangular-blocks)).
    if n >= _TRI_BLOCKED_FROM and (n >= 128 or np.prod(m.shape[:-2]) * n >= 512):
        return _lapack("triangular_solve", _TRI_SINGULAR, _blocked_triangular_solve, m, b,
                       lower, adjoint)
    # NumPy has no triangular solver: LU of the (masked) triangle gives the same solution.
    return _lapack("triangular_solve", _TRI_SINGULAR, np.linalg.solve,
                   _triangle(m, lower, adjoint), b)


# NOTE(triangular-blocks): NumPy has no triangular solver, and its LU solver calls LAPACK
# once per matrix of a batch, a slow call even for a mid-sized matrix. Blocked
# substitution does the same work in a few calls over the whole batch: the 16x16 diagonal
# blocks are inverted by substitution (vectorized over the batch and the blocks), and
# each block row of X is its right-hand side, less the rows already solved, times its
# block's inverse. Only the small blocks are inverted, so the error stays that of
# substitution (a few ulps of the solution in float32, as LU). It is several times faster
# for batches of mid-sized systems and for a single large one; its fixed cost leaves
# fewer than 512 rows in all (8 systems of 32) to LU (docs/performance-notes.md,
# #triangular-blocks).
_TRI_BLOCK = 16
_TRI_BLOCKED_FROM = 32


def _blocked_triangular_solve(m: np.ndarray, b: np.ndarray, lower: bool,
                              adjoint: bool) -> np.ndarray:
    """X with op(T) X = b, T the lower or upper triangle of m (the other never read)."""
    # op(T) as a lower triangle: an upper one is reversed (P U P is lower, P the reversal
    # of rows and columns: U X = b <=> (P U P)(P X) = P b).
    t = np.conj(np.swapaxes(m, -1, -2)) if adjoint else m
    reverse = lower == adjoint
    if reverse:
        t, b = t[..., ::-1, ::-1], b[..., ::-1, :]
    diag = np.diagonal(t, axis1=-2, axis2=-1)
    if (diag == 0).any():
        raise np.linalg.LinAlgError("singular")
    x = _lower_solve(t, b)
    return x[..., ::-1, :] if reverse else x


def _lower_solve(t: np.ndarray, b: np.ndarray) -> np.ndarray:
    n, blk = t.shape[-1], _TRI_BLOCK
    lead = np.broadcast_shapes(t.shape[:-2], b.shape[:-2])
    x = np.empty(lead + b.shape[-2:], np.result_type(t, b))
    full = n // blk
    # The full-size diagonal blocks, all inverted in one pass: [..., full, blk, blk].
    square = t[..., :full * blk, :full * blk].reshape(t.shape[:-2] + (full, blk, full, blk))
    inverses = _small_lower_inverse(np.moveaxis(np.diagonal(square, axis1=-4, axis2=-2), -1, -3))
    rest = _small_lower_inverse(t[..., full * blk:, full * blk:]) if n % blk else None
    for k, start in enumerate(range(0, n, blk)):
        stop = min(n, start + blk)
        rhs = b[..., start:stop, :]
        if start:
            rhs = rhs - np.matmul(t[..., start:stop, :start], x[..., :start, :])
        inv = inverses[..., k, :, :] if k < full else rest
        x[..., start:stop, :] = np.matmul(inv, rhs)
    return x


def _small_lower_inverse(t: np.ndarray) -> np.ndarray:
    """The inverses of the lower triangles of small matrices [..., m, m], by substitution
    one row at a time over every matrix at once."""
    m = t.shape[-1]
    out = np.zeros(t.shape, t.dtype)
    recip = 1 / np.diagonal(t, axis1=-2, axis2=-1)
    out[..., 0, 0] = recip[..., 0]
    for i in range(1, m):
        out[..., i, :i] = -np.einsum("...k,...kj->...j", t[..., i, :i], out[..., :i, :i]) \
            * recip[..., i, None]
        out[..., i, i] = recip[..., i]
    return out


def _op_triangle(x: Tensor, lower: bool, adjoint: bool) -> Tensor:
    t = multiply(x, _mask(x, "lower" if lower else "upper"))
    return adjoint_of(t) if adjoint else t


def _triangular_solve_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, lower: bool,
                          adjoint: bool) -> tuple:
    # gB = op(T)^-H G; gT = -gB X^H (or -X gB^H for the adjoint), kept to the triangle
    m, b = primals
    x = outs[0]
    gb = bind(triangular_solve_p, m, instantiate(cts[0]), lower=lower, adjoint=not adjoint)
    gm = None
    if needs[0]:
        gt = _mm(x, adjoint_of(gb)) if adjoint else _mm(gb, adjoint_of(x))
        gm = unbroadcast(negative(multiply(gt, _mask(gt, "lower" if lower else "upper"))),
                         shape_of(m))
    return gm, unbroadcast(gb, shape_of(b)) if needs[1] else None


def _triangular_solve_lower(jax: Any, m: Any, b: Any, lower: bool, adjoint: bool) -> Any:
    # Substitution on the triangle (the other one masked off, as the impl): the same
    # solution as the impl's LU of it; a zero on the diagonal gives inf/nan.
    def solve(jax: Any, m: Any, b: Any) -> Any:
        t = jax.numpy.tril(m) if lower else jax.numpy.triu(m)
        t, b = _broadcast_batch(jax, t, b)
        return jax.lax.linalg.triangular_solve(t, b, left_side=True, lower=lower,
                                               transpose_a=adjoint, conjugate_a=adjoint)
    return _lowered(solve)(jax, m, b)


triangular_solve_p = define(
    Primitive("triangular_solve", half_in_float32(_triangular_solve_impl)),
    # dX = op(T)^-1 (dB - op(dT) X), dT the same triangle of dM
    per_input(jvp=(lambda t, ans, m, b, lower, adjoint: negative(bind(
                       triangular_solve_p, m, _mm(_op_triangle(t, lower, adjoint), ans),
                       lower=lower, adjoint=adjoint)),
                   lambda t, ans, m, b, lower, adjoint: bind(triangular_solve_p, m, t,
                                                             lower=lower, adjoint=adjoint)),
              broadcasting=True),
    batch_elementwise, vjp=_triangular_solve_vjp, sparsity=per_matrix_deps(2),
    lower=_finite_checked(_triangular_solve_lower))


# ------------------------------------------------------------------ cholesky: A = L L^H
def _cholesky_jvp(t: Tensor, ans: Tensor, a: Tensor) -> Tensor:
    # dL = L Phi(L^-1 S L^-H), S = (dA + dA^H)/2, Phi = lower triangle with half the diagonal
    s = multiply(add(t, adjoint_of(t)), 0.5)
    y = bind(triangular_solve_p, ans, s, lower=True, adjoint=False)
    p = bind(triangular_solve_p, ans, adjoint_of(y), lower=True, adjoint=False)
    return _mm(ans, multiply(p, _mask(p, "half")))


def _cholesky_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple) -> tuple:
    # gA = sym(L^-H Phi(L^H G) L^-1), sym(X) = (X + X^H)/2: TensorFlow's symmetric gradient
    l = outs[0]
    mid = _mm(adjoint_of(l), instantiate(cts[0]))
    mid = multiply(mid, _mask(mid, "half"))
    x = bind(triangular_solve_p, l, mid, lower=True, adjoint=True)
    y = adjoint_of(bind(triangular_solve_p, l, adjoint_of(x), lower=True, adjoint=True))
    return (multiply(add(y, adjoint_of(y)), 0.5),)


cholesky_p = define(
    Primitive("cholesky", lambda a: _lapack(
        "cholesky", "Cholesky decomposition was not successful: `input` is not (numerically) "
        "positive definite.", np.linalg.cholesky, a)),
    per_input(jvp=(_cholesky_jvp,)), _batch_matrices, vjp=_cholesky_vjp,
    sparsity=per_matrix_deps(2),
    # As NumPy: reads the lower triangle only (no symmetrizing), returns L with zeros above
    # the diagonal; not positive definite: nan.
    lower=_finite_checked(_lowered(lambda jax, a: jax.numpy.tril(
        jax.lax.linalg.cholesky(a, symmetrize_input=False)))))


# ------------------------------------------------------------------ eigh: A V = V diag(e)
def _column(x: Tensor, axis: int) -> Tensor:
    """[..., n] -> [..., 1, n] (axis=-2) or [..., n, 1] (axis=-1)."""
    s = shape_of(x)
    return bind(reshape_p, x, shape=s[:-1] + ((1,) + s[-1:] if axis == -2 else s[-1:] + (1,)))


def _gaps(e: Tensor) -> Tensor:
    """F[i, j] = 1 / (e[j] - e[i]) off the diagonal, 0 on it; TensorFlow's broadened
    reciprocal x / (x^2 + 1e-20) keeps F finite for repeated eigenvalues (in float32 for
    half types: 1e-20 is 0 in float16, and 0 / 0 on the diagonal made every entry NaN)."""
    low = e.dtype if e.dtype.size == 2 else None
    w = e if low is None else cast(e, "float32")
    d = subtract(_column(w, -2), _column(w, -1))
    f = multiply(divide(d, add(multiply(d, d), 1e-20)), _mask(d, "offdiag"))
    return f if low is None else cast(f, low)


def _eigh_jvp(tangents: tuple, outs: tuple, primals: tuple) -> tuple:
    # S = P + P^H with P = half-lower(dA) (eigh reads the lower triangle), Q = V^H S V:
    # de = diag(Q), dV = V (F * Q)
    (t,), (e, v) = tangents, outs
    if type(t) is Zero:
        return Zero.like(e), Zero.like(v)
    p = multiply(t, _mask(t, "half"))
    q = _mm(adjoint_of(v), _mm(add(p, adjoint_of(p)), v))
    return diag_part(q), _mm(v, multiply(_gaps(e), q))


def _eigh_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple) -> tuple:
    # M = V (diag(ge) + F * (V^H gV)) V^H; gA = half-lower(M + M^H), as TensorFlow
    (ge, gv), (e, v) = cts, outs
    vh = adjoint_of(v)
    inner = None
    if type(ge) is not Zero:
        inner = multiply(_column(ge, -2), Tensor(np.eye(shape_of(v)[-1], dtype=v._value.dtype)))
    if type(gv) is not Zero:
        inner = add_any(inner, multiply(_gaps(e), _mm(vh, gv)))
    if inner is None:
        return (None,)
    m = _mm(v, _mm(inner, vh))
    m = add(m, adjoint_of(m))
    return (multiply(m, _mask(m, "half")),)


def _eigh_lower(jax: Any, a: Any) -> tuple:
    # As NumPy: the lower triangle read as is, eigenvalues ascending, eigenvectors in the
    # columns (each one's sign is LAPACK's choice, as in the impl).
    v, e = jax.lax.linalg.eigh(a, lower=True, symmetrize_input=False, sort_eigenvalues=True)
    return e, v


eigh_p = define(
    Primitive("eigh", lambda a: _lapack("eigh", "the eigenvalue iteration did not converge.",
                                        np.linalg.eigh, a), multiple_results=True),
    _batch_matrices, jvp=_eigh_jvp, vjp=_eigh_vjp, sparsity=per_matrix_deps(2),
    lower=_finite_checked(_lowered(_eigh_lower)))


# ================================================================== public ops
def _square(x: Any, op: str, arg: str) -> Tensor:
    """A floating/complex batch of square matrices, converted."""
    t = matrix_arg(x, op, arg, square=True)
    check_dtype(t, "fc", op, arg)
    return t


def _system(matrix: Any, rhs: Any, op: str) -> tuple[Tensor, Tensor]:
    """The operands of A X = B: A square, B [..., n, k], batch axes that broadcast."""
    a, b = binary_args(matrix, rhs, op)
    a, b = _square(a, op, "matrix"), matrix_arg(b, op, "rhs")
    sa, sb = shape_of(a), shape_of(b)
    if sb[-2] != sa[-1]:
        raise InvalidArgumentError(f"{op}: `rhs` has {sb[-2]} rows (shape {sb}) but `matrix` is "
                                   f"{sa[-1]} x {sa[-1]} (shape {sa}); they must match.")
    try:
        np.broadcast_shapes(sa[:-2], sb[:-2])
    except ValueError:
        raise InvalidArgumentError(f"{op}: the batch axes of `matrix` {sa[:-2]} and `rhs` "
                                   f"{sb[:-2]} do not broadcast.") from None
    return a, b


def inv(input: Any, adjoint: bool = False, name: str | None = None) -> Tensor:  # noqa: A002
    """Inverse of each square matrix in the last two axes (of its adjoint if `adjoint`).

    A matrix with an exact zero pivot raises InvalidArgumentError, as TensorFlow on CPU.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.inv(tf.constant([[2., 0.], [0., 4.]])).numpy()
        array([[0.5 , 0.  ],
               [0.  , 0.25]], dtype=float32)
    """
    a = _square(input, "inv", "input")
    return bind(inv_p, adjoint_of(a) if adjoint else a)


def det(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Determinant of each square matrix in the last two axes.

    The gradient is ``det(A) * inv(A)^H``, so at a singular matrix it raises
    InvalidArgumentError (as TensorFlow). For complex inputs the gradient is
    ``conj(det A) inv(A)^H``, TensorFlow's conjugate convention (its registered
    gradient omits the conjugate of det).

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.det(tf.constant([[1., 2.], [3., 4.]])).numpy()
        np.float32(-2.0)
    """
    return bind(det_p, _square(input, "det", "input"))


def slogdet(input: Any, name: str | None = None) -> tuple[Tensor, Tensor]:  # noqa: A002
    """``(sign, log_abs_determinant)`` of each square matrix, both in the input's dtype.

    Stable where det over- or underflows. Only `log_abs_determinant` carries a
    derivative, ``Re(g) inv(A)^H`` (TensorFlow uses g itself: the same for a real g);
    the sign is treated as constant, as TensorFlow.
    A singular matrix gives sign 0 and log_abs_determinant -inf.

    Example:
        >>> import tapeflow as tf
        >>> sign, logdet = tf.linalg.slogdet(tf.constant([[0., 2.], [3., 0.]]))
        >>> float(sign), round(float(logdet), 4)
        (-1.0, 1.7918)
    """
    sign, logdet = bind(slogdet_p, _square(input, "slogdet", "input"))
    return sign, logdet


def solve(matrix: Any, rhs: Any, adjoint: bool = False, name: str | None = None) -> Tensor:
    """X with ``matrix @ X = rhs`` (``adjoint(matrix) @ X = rhs`` if `adjoint`).

    `matrix` is [..., n, n] and `rhs` [..., n, k]; their batch axes broadcast. A
    singular matrix raises InvalidArgumentError.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.solve(tf.constant([[2., 0.], [0., 4.]]), tf.constant([[2.], [2.]])).numpy()
        array([[1. ],
               [0.5]], dtype=float32)
    """
    a, b = _system(matrix, rhs, "solve")
    return bind(solve_p, adjoint_of(a) if adjoint else a, b)


def triangular_solve(matrix: Any, rhs: Any, lower: bool = True, adjoint: bool = False,
                     name: str | None = None) -> Tensor:
    """X with ``T @ X = rhs`` where T is the lower (or upper, ``lower=False``) triangle of
    `matrix`; the other triangle is never read. ``adjoint=True`` solves ``T^H X = rhs``.

    Batch axes broadcast. A zero on the diagonal raises InvalidArgumentError
    (TensorFlow does not check and returns inf/nan). The gradient of `matrix` lies in the
    triangle used.

    Example:
        >>> import tapeflow as tf
        >>> m = tf.constant([[2., 9.], [1., 1.]])
        >>> tf.linalg.triangular_solve(m, tf.constant([[2.], [3.]])).numpy()
        array([[1.],
               [2.]], dtype=float32)
    """
    a, b = _system(matrix, rhs, "triangular_solve")
    return bind(triangular_solve_p, a, b, lower=bool(lower), adjoint=bool(adjoint))


def cholesky(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """Lower-triangular L with ``L @ L^H = input`` for each Hermitian positive-definite matrix.

    Only the lower triangle is read. As in TensorFlow, derivatives treat the input as
    symmetric: the gradient is symmetric (half of it in each triangle) and forward mode
    symmetrizes the tangent, so differentiate through a matrix that is symmetric by
    construction (e.g. ``M M^T + c I``). A matrix that is not positive definite raises
    InvalidArgumentError.

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.cholesky(tf.constant([[4., 2.], [2., 5.]])).numpy()
        array([[2., 0.],
               [1., 2.]], dtype=float32)
    """
    return bind(cholesky_p, _square(input, "cholesky", "input"))


def eigh(tensor: Any, name: str | None = None) -> tuple[Tensor, Tensor]:
    """Eigenvalues (ascending) and eigenvectors (columns) of each Hermitian matrix.

    Returns ``(e, v)`` with ``tensor @ v = v * e[..., None, :]``; only the lower
    triangle is read, and both results have the input's dtype (as TensorFlow).
    Derivatives are valid for distinct eigenvalues only: eigenvectors of a repeated
    eigenvalue are not unique (TensorFlow's broadened reciprocal keeps them finite,
    not meaningful). Eigenvectors are defined up to sign (phase), so differentiate
    functions invariant to it, such as ``v @ diag(f(e)) @ v^H``.

    Example:
        >>> import tapeflow as tf
        >>> e, v = tf.linalg.eigh(tf.constant([[2., 1.], [1., 2.]]))
        >>> e.numpy()
        array([1., 3.], dtype=float32)
    """
    e, v = bind(eigh_p, _square(tensor, "eigh", "tensor"))
    return e, v


# ------------------------------------------------------------------ norm (a composite)
def _safe_root(s: Tensor, root: Any) -> Tensor:
    """root(s) where s > 0 and 0 where s == 0, with a zero (not NaN) gradient there: the
    root's infinite slope at 0 is never evaluated (the where feeds it a 1 instead)."""
    pos = greater(s, 0)
    return multiply(root(bind(select_p, pos, s, ones_of(s))), float_mask(pos, s))


def _modulus(x: Tensor) -> Tensor:
    """|x| elementwise in the real dtype; complex moduli go through |z|^2 so the gradient
    is z/|z| and 0 at z = 0 (TensorFlow's ComplexAbs gradient)."""
    if x._value.dtype.kind != "c":
        return abs_(x)
    return _safe_root(cast(multiply(x, conj_if_complex(x)), x._value.real.dtype), sqrt)


def _norm_axes(axis: Any, rank: int) -> tuple[tuple[int, ...] | None, bool]:
    """(axes in the caller's order, is a matrix norm) following tf.norm's rules."""
    if isinstance(axis, TensorBase):
        axis = axis.numpy().tolist()
    matrix = isinstance(axis, (list, tuple)) and len(axis) == 2
    if axis is None:
        return None, False
    items = list(axis) if matrix else [axis]
    if any(isinstance(a, bool) or not isinstance(a, (int, np.integer)) for a in items):
        raise InvalidArgumentError(f"norm: `axis` must be None, an int, or a pair of distinct "
                                   f"ints; got {axis!r}.")
    for a in items:
        if not -rank <= a < rank:
            raise InvalidArgumentError(f"norm: `axis`={axis!r} is out of range for a tensor of "
                                       f"rank {rank}.")
    axes = tuple(int(a) % rank for a in items)
    if matrix and axes[0] == axes[1]:
        raise InvalidArgumentError(f"norm: the two axes of a matrix norm must differ; "
                                   f"got {axis!r}.")
    return axes, matrix


def _matrix_two_norm(x: Tensor, rows: int, cols: int, keepdims: bool) -> Tensor:
    """Largest singular value over axes (rows, cols): the square root of the top
    eigenvalue of the smaller Gram matrix."""

    shape = shape_of(x)
    rest = [i for i in range(len(shape)) if i not in (rows, cols)]
    m = transpose(x, rest + [rows, cols])
    gram = _mm(adjoint_of(m), m) if shape[cols] <= shape[rows] else _mm(m, adjoint_of(m))
    e = bind(eigh_p, gram)[0]
    if e._value.dtype.kind == "c":
        e = cast(e, e._value.real.dtype)
    top = _safe_root(reduce_max(e, axis=-1), sqrt)
    if not keepdims:
        return top
    return reshape(top, [1 if i in (rows, cols) else n for i, n in enumerate(shape)])


def norm(tensor: Any, ord: Any = "euclidean", axis: Any = None,  # noqa: A002
         keepdims: bool | None = None, name: str | None = None) -> Tensor:
    """Vector or matrix norm, as `tf.norm` (also `tf.linalg.norm`).

    `axis` None: the whole tensor as one vector; an int: vectors along it; a pair
    (rows, cols): matrices. Vector `ord`: 'euclidean' (= 2), 1, np.inf or any p > 0.
    Matrix `ord`: 'euclidean'/'fro' (Frobenius), 1 (max column sum), np.inf (max row
    sum), 2 (largest singular value, through eigh of the smaller Gram matrix).
    As TensorFlow, a complex input gives a complex result for 'euclidean'/'fro'/2-vector
    norms and a real one otherwise.

    Gradient at zero: TensorFlow gives NaN for 'euclidean', 'fro', vector 2 and p > 1
    norms (the square root's infinite slope times 0); tapeflow gives 0, a valid
    subgradient. ord 1, np.inf and matrix 2 give 0 in both. Ties in the max of 1/inf
    norms split the gradient equally. (p < 1 is not a norm: its slope at a zero entry
    is infinite in both.)

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> x = tf.constant([[3., -4.], [0., 0.]])
        >>> tf.norm(x).numpy(), tf.norm(x, ord=1, axis=1).numpy()
        (np.float32(5.0), array([7., 0.], dtype=float32))
        >>> tf.norm(x, ord=np.inf, axis=[0, 1]).numpy()
        np.float32(7.0)
    """
    x = as_tensor(tensor, "norm", "tensor")
    check_dtype(x, "fc", "norm", "tensor")
    shape = shape_of(x)
    axes, matrix = _norm_axes(axis, len(shape))
    is_str = isinstance(ord, str)
    if matrix:
        if not (ord in ("euclidean", "fro") if is_str else ord in (1, 2, np.inf)):
            raise InvalidArgumentError(f"norm: `ord`={ord!r} is not a matrix norm; use "
                                       "'euclidean', 'fro', 1, 2 or np.inf.")
    elif (ord != "euclidean") if is_str else (isinstance(ord, bool) or not np.isreal(ord)
                                              or not ord > 0):
        raise InvalidArgumentError(f"norm: `ord`={ord!r} is not a vector norm; use 'euclidean', "
                                   "1, 2, np.inf or any p > 0 ('fro' needs a pair of axes).")
    keep = bool(keepdims)
    red = list(axes) if axes is not None else None
    if matrix:
        # Two reductions in a row: without keepdims the second axis shifts down by one
        # when the first one removed an axis before it.
        first, second = axes if ord != np.inf else axes[::-1]
        second_after = second if keep or first > second else second - 1
    if is_str or (ord == 2 and not matrix):
        s = reduce_sum(multiply(x, conj_if_complex(x)), axis=red, keepdims=keep)
        if s._value.dtype.kind == "c":
            s = cast(s, s._value.real.dtype)
        out = _safe_root(s, sqrt)
        if x._value.dtype.kind == "c":
            out = cast(out, x._value.dtype)
    elif matrix and ord == 2:
        out = _matrix_two_norm(x, *axes, keep)
    elif matrix:  # 1: max over columns of column sums; inf: max over rows of row sums
        out = reduce_max(reduce_sum(_modulus(x), axis=first, keepdims=keep), axis=second_after,
                         keepdims=keep)
    elif ord == 1:
        out = reduce_sum(_modulus(x), axis=red, keepdims=keep)
    elif ord == np.inf:
        out = reduce_max(_modulus(x), axis=red, keepdims=keep)
    else:
        s = reduce_sum(pow_(_modulus(x), float(ord)), axis=red, keepdims=keep)
        out = _safe_root(s, lambda v: pow_(v, 1.0 / float(ord)))
    return out


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "inv": "linalg", "det": "linalg", "slogdet": "linalg", "solve": "linalg",
    "triangular_solve": "linalg", "cholesky": "linalg", "eigh": "linalg", "norm": "tf linalg",
}
