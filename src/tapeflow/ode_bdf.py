"""A variable-order BDF integrator that records its steps, and its discrete adjoint.

`ndf` integrates ``y' = f(t, y)`` with the numerical differentiation formulas of orders
1 to 5 (Shampine and Reichelt's NDFs, the method behind SciPy's and MATLAB's BDF solvers)
in the backward-difference form: a step changes the array D of backward differences of
y by linear maps and one implicit solve. It records each of them (`Record`), so
`adjoint` can pull cotangents of the outputs back through exactly the computation that
produced them: the transposes of the linear maps, and for each implicit solve one
transposed linear system ``(I - c J)^T w = d_bar``, solved by iterating with the LU
factors the forward step already made (one VJP of f and one triangular solve per
iteration) instead of a backward ODE solve.

NOTE(ode-discrete-adjoint): the continuous adjoint (ode_systems.adjoint_vjp) solves
``lambda' = -J^T lambda`` backwards with its own error control, restarting at every
output time: each restart begins with a small first-order step, and a rough cotangent
(data noise) starts a fast transient that the error control must follow, so on a 2-D
Brusselator its backward solve took 4x the forward's steps and 8x its LU
factorizations. The discrete adjoint takes the forward's steps as they are: its cost is
one pass of VJPs and triangular solves, with no factorization while the forward's LU
factors are kept (`LU_BYTES` of them; older ones are refactored once each). Its
derivatives are those of the discrete solution, which follow the exact solution's to
the solve's tolerance, as SciPy's solution follows the exact one. Step sizes, orders and
the Jacobians used to factor are treated as constants (they are decisions of the error
control, not functions of the inputs); the Newton iteration is replaced by the equation
it solves.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable

import numpy as np

try:
    import scipy.linalg as _linalg
    import scipy.sparse as _sparse
    import scipy.sparse.linalg as _splinalg
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.ode_bdf needs SciPy: pip install 'tapeflow[scipy]'") \
        from _missing

__all__ = ["ndf", "adjoint", "Record", "change_matrix"]

MAX_ORDER = 5
# The NDF coefficients (Shampine and Reichelt, 1997): kappa of each order, gamma_k the
# harmonic numbers, alpha_k = (1 - kappa_k) gamma_k, and the local error constants.
_KAPPA = np.array([0.0, -0.1850, -1 / 9, -0.0823, -0.0415, 0.0])
_GAMMA = np.concatenate(([0.0], np.cumsum(1.0 / np.arange(1, MAX_ORDER + 1))))
_ALPHA = (1.0 - _KAPPA) * _GAMMA
_ERROR = _KAPPA * _GAMMA + 1.0 / np.arange(1, MAX_ORDER + 2)
_NEWTON_ITERS = 4
_MIN_FACTOR, _MAX_FACTOR = 0.2, 10.0
_ADJOINT_ITERS = 12
# Up to this many states with a dense Jacobian, the adjoint factors each step's exact
# matrix (one Jacobian, a small LU, one VJP) instead of iterating with the forward's
# factors (a VJP and a triangular solve an iteration, about three, and GMRES's own
# Python): Robertson's 542 steps took 1.0 s by GMRES.
EXACT_STATES = 64
# LU factors of the forward steps kept for the adjoint, in bytes of their nonzeros; the
# oldest beyond this are dropped and refactored (once each) when the adjoint gets there.
LU_BYTES = 1 << 28


def _rms(x: np.ndarray) -> float:
    return float(np.sqrt(np.mean(np.square(x)))) if x.size else 0.0


def _binom_poly(s: float, i: int) -> float:
    """B_i(s) = s (s + 1) ... (s + i - 1) / i!: the weight of the i-th backward difference
    in the interpolating polynomial at t_n + s h."""
    out = 1.0
    for m in range(i):
        out *= (s + m) / (m + 1)
    return out


def change_matrix(order: int, factor: float) -> np.ndarray:
    """T with ``D_new[j] = sum_i T[i, j] D[i]`` (i, j <= order): the backward differences of
    the same interpolating polynomial on a grid whose step is `factor` times the old one.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_bdf import change_matrix
        >>> np.allclose(change_matrix(3, 1.0), np.eye(4))
        True
        >>> change_matrix(1, 0.5).tolist()   # a line: the new difference is half the old
        [[1.0, 0.0], [0.0, 0.5]]
    """
    k = order + 1
    T = np.zeros((k, k))
    for j in range(k):
        for r in range(j + 1):
            coef = (-1.0) ** r * math.comb(j, r)
            for i in range(k):
                T[i, j] += coef * _binom_poly(-r * factor, i)
    return T


def _dense_weights(order: int, x: float) -> np.ndarray:
    """Weights of D[0..order] for y at t_n + x h (x in [-1, 0]: inside the last step)."""
    return np.array([_binom_poly(x, i) for i in range(order + 1)])


class _Factors:
    """LU factors of I - c J, sparse or dense, solved plain or transposed; `drop` frees
    them (the adjoint then refactors). A sparse matrix is ordered by `ordering`, SuperLU's
    permc_spec; None tries COLAMD (SuperLU's default) and the minimum degree of A + A^T
    and keeps the factors with fewer nonzeros, their ordering in ``self.ordering``.
    (The Jacobians of discretized PDEs have symmetric patterns, where the second is
    about half the fill: factors 1.5x and solves 2-3x faster on a 2-D Brusselator.)"""

    def __init__(self, J: Any, c: float, ordering: str | None = None) -> None:
        self.sparse = _sparse.issparse(J)
        self.ordering = ordering
        n = J.shape[0]
        if self.sparse:
            A = (_sparse.identity(n, format="csc") - c * J).tocsc()
            tries = [ordering] if ordering else ["COLAMD", "MMD_AT_PLUS_A"]
            made = [(_splinalg.splu(A, permc_spec=spec), spec) for spec in tries]
            self.lu, self.ordering = min(made, key=lambda m: m[0].L.nnz + m[0].U.nnz)
            self.bytes = 12 * (self.lu.L.nnz + self.lu.U.nnz)
        else:
            self.lu = _linalg.lu_factor(np.eye(n) - c * J, check_finite=False)
            self.bytes = 8 * n * n
        self.J, self.c = J, c

    def drop(self) -> None:
        self.lu = None

    def solve(self, b: np.ndarray, transposed: bool = False) -> np.ndarray:
        if self.sparse:
            return self.lu.solve(b, trans="T" if transposed else "N")
        return _linalg.lu_solve(self.lu, b, trans=1 if transposed else 0, check_finite=False)


@dataclasses.dataclass
class _Step:
    order: int
    c: float
    t: float
    y: np.ndarray          # the step's solution, where the adjoint takes f's VJP
    lu: _Factors           # the factors of I - c J the forward step iterated with


@dataclasses.dataclass
class Record:
    """What `ndf` did, for `adjoint`: the initial point and first step, then the
    operations in order: ("change", order, T), ("step", _Step) and ("out", index,
    weights) for an output time inside the step just taken (weights of D[0..order]).
    ``y`` holds the solution at the output times (n x len(t_eval)), of which the first
    `at_start` are t0 itself; ``status`` is 0 on success and -1 on failure, with
    ``message``."""

    t0: float
    y0: np.ndarray
    h0: float
    ops: list
    y: np.ndarray
    at_start: int = 0
    status: int = 0
    message: str = "The solver successfully reached the end of the integration interval."
    nfev: int = 0
    njev: int = 0
    nlu: int = 0


def _initial_step(fun: Callable, t0: float, y0: np.ndarray, f0: np.ndarray, direction: float,
                  rtol: float, atol: np.ndarray, span: float) -> float:
    """A first step whose explicit Euler error is about the tolerance (Hairer, Norsett and
    Wanner, II.4), for a first-order method."""
    scale = atol + rtol * np.abs(y0)
    d0, d1 = _rms(y0 / scale), _rms(f0 / scale)
    h0 = 1e-6 if d0 < 1e-5 or d1 < 1e-5 else 0.01 * d0 / d1
    h0 = min(h0, span)
    f1 = fun(t0 + direction * h0, y0 + direction * h0 * f0)
    d2 = _rms((f1 - f0) / scale) / h0
    h1 = max(1e-6, h0 * 1e-3) if max(d1, d2) <= 1e-15 else (0.01 / max(d1, d2)) ** 0.5
    return min(100 * h0, h1, span)


def ndf(fun: Callable, jac: Callable, t_span: tuple, y0: np.ndarray, t_eval: np.ndarray,
        rtol: float, atol: np.ndarray, max_step: float = np.inf,
        first_step: float | None = None) -> Record:
    """Integrate ``y' = fun(t, y)`` over `t_span` from `y0` with the variable-order NDF
    method, `jac(t, y)` giving the Jacobian (dense or scipy.sparse); the solution at the
    increasing (or, backwards in time, decreasing) times `t_eval` is ``record.y``.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_bdf import ndf
        >>> rec = ndf(lambda t, y: -50.0 * y, lambda t, y: np.array([[-50.0]]), (0.0, 1.0),
        ...           np.ones(1), np.array([0.02, 0.1]), 1e-8, np.full(1, 1e-10))
        >>> np.allclose(rec.y[0], np.exp(-50.0 * np.array([0.02, 0.1])), rtol=1e-6)
        True
    """
    t0, t_end = float(t_span[0]), float(t_span[1])
    direction = 1.0 if t_end >= t0 else -1.0
    n = y0.size
    y = np.array(y0, np.float64)
    Y = np.full((n, len(t_eval)), np.nan)
    rec = Record(t0, y.copy(), 0.0, [], Y)
    f = fun(t0, y)
    rec.nfev += 1
    span = abs(t_end - t0)
    if first_step is None:
        h_abs = _initial_step(fun, t0, y, f, direction, rtol, atol, span)
        rec.nfev += 1
    else:
        h_abs = float(first_step)
    h_abs = min(h_abs, max_step, span) if span > 0 else 0.0
    rec.h0 = direction * h_abs
    D = np.zeros((MAX_ORDER + 3, n))
    D[0], D[1] = y, f * rec.h0
    at = 0
    while at < len(t_eval) and t_eval[at] == t0:
        Y[:, at] = y
        at += 1
    rec.at_start = at
    order, n_equal, t = 1, 0, t0
    J, fresh = jac(t0, y), True
    rec.njev += 1
    lu: _Factors | None = None
    made: list = []   # every factorization, oldest first, for the LU_BYTES budget

    def change(factor: float) -> None:
        T = change_matrix(order, factor)
        D[:order + 1] = T.T @ D[:order + 1]
        rec.ops.append(("change", order, T))

    while direction * (t_end - t) > 0:
        min_step = 10 * np.abs(np.nextafter(t, direction * np.inf) - t)
        if h_abs > max_step:
            change(max_step / h_abs)
            h_abs, n_equal, lu = max_step, 0, None
        elif h_abs < min_step:
            change(min_step / h_abs)
            h_abs, n_equal, lu = min_step, 0, None
        while True:
            if h_abs < min_step:
                rec.status, rec.message = -1, "Required step size is less than spacing " \
                    "between numbers."
                return rec
            t_new = t + direction * h_abs
            if direction * (t_new - t_end) > 0:
                t_new = t_end
                change(abs(t_new - t) / h_abs)
                n_equal, lu = 0, None
            h = t_new - t
            h_abs = abs(h)
            y_pred = D[:order + 1].sum(axis=0)
            scale = atol + rtol * np.abs(y_pred)
            psi = D[1:order + 1].T @ _GAMMA[1:order + 1] / _ALPHA[order]
            c = h / _ALPHA[order]
            tol = max(10 * np.finfo(float).eps / rtol, min(0.03, rtol ** 0.5))
            while True:
                if lu is None:
                    lu = _Factors(J, c, made[-1].ordering if made else None)
                    rec.nlu += 1
                    made.append(lu)
                    _budget(made)
                ok, iters, y_new, d, used = _newton(fun, t_new, y_pred, c, psi, lu, scale, tol)
                rec.nfev += used
                if ok or fresh:
                    break
                J, fresh, lu = jac(t_new, y_pred), True, None
                rec.njev += 1
            if not ok:
                change(0.5)
                h_abs, n_equal, lu = h_abs * 0.5, 0, None
                continue
            safety = 0.9 * (2 * _NEWTON_ITERS + 1) / (2 * _NEWTON_ITERS + iters)
            err = _rms(_ERROR[order] * d / (atol + rtol * np.abs(y_new)))
            if err > 1:
                factor = max(_MIN_FACTOR, safety * err ** (-1 / (order + 1)))
                change(factor)
                h_abs, n_equal, lu = h_abs * factor, 0, None
                continue
            break
        rec.ops.append(("step", _Step(order, c, t_new, y_new.copy(), lu)))
        n_equal += 1
        D[order + 2] = d - D[order + 1]
        D[order + 1] = d
        for i in range(order, -1, -1):
            D[i] += D[i + 1]
        fresh = False
        while at < len(t_eval) and direction * (t_eval[at] - t_new) <= 0:
            w = _dense_weights(order, (t_eval[at] - t_new) / h)
            Y[:, at] = w @ D[:order + 1]
            rec.ops.append(("out", at, w))
            at += 1
        t = t_new
        if n_equal < order + 1:
            continue
        norms = [np.inf, err, np.inf]
        if order > 1:
            norms[0] = _rms(_ERROR[order - 1] * D[order] / (atol + rtol * np.abs(y_new)))
        if order < MAX_ORDER:
            norms[2] = _rms(_ERROR[order + 1] * D[order + 2] / (atol + rtol * np.abs(y_new)))
        with np.errstate(divide="ignore"):
            factors = np.array(norms) ** (-1.0 / np.arange(order, order + 3))
        best = int(np.argmax(factors))
        order += best - 1
        factor = min(_MAX_FACTOR, safety * float(factors[best]))
        change(factor)
        h_abs, n_equal, lu = h_abs * factor, 0, None
    return rec


def _budget(made: list) -> None:
    """Drop the oldest factors (but the newest) while all of them exceed LU_BYTES."""
    total = sum(f.bytes for f in made if f.lu is not None)
    for f in made[:-1]:
        if total <= LU_BYTES:
            break
        if f.lu is not None:
            total -= f.bytes
            f.drop()


def _newton(fun: Callable, t: float, y_pred: np.ndarray, c: float, psi: np.ndarray,
            lu: _Factors, scale: np.ndarray, tol: float) -> tuple:
    """Solve ``d = c fun(t, y_pred + d) - psi`` by simplified Newton with `lu`; returns
    (converged, iterations, y, d, evaluations)."""
    d = np.zeros_like(y_pred)
    y = y_pred.copy()
    last = rate = None
    for it in range(_NEWTON_ITERS):
        f = fun(t, y)
        if not np.all(np.isfinite(f)):
            return False, it + 1, y, d, it + 1
        dy = lu.solve(c * f - psi - d)
        size = _rms(dy / scale)
        if last is not None:
            rate = size / last
            if rate >= 1 or rate ** (_NEWTON_ITERS - it) / (1 - rate) * size > tol:
                return False, it + 1, y, d, it + 1
        y += dy
        d += dy
        if size == 0 or (rate is not None and rate / (1 - rate) * size < tol):
            return True, it + 1, y, d, it + 1
        last = size
    return False, _NEWTON_ITERS, y, d, _NEWTON_ITERS


def adjoint(rec: Record, C: np.ndarray, vjp: Callable, jac: Callable, rtol: float) -> tuple:
    """Pull the cotangents `C` (k rows, n states, len(t_eval) times) of `rec.y` back
    through the recorded solve: returns (the cotangent of y0, (k, n); the sum of f's
    parameter cotangents, (k, P)). ``vjp(t, y, V)`` returns ``(V J_y, V J_p)`` for k rows
    V of f at (t, y); `jac(t, y)` is used only to refactor dropped LU factors.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_bdf import adjoint, ndf
        >>> f = lambda t, y: -2.0 * y                       # y = y0 e^(-2t); dy/dk too
        >>> J = lambda t, y: np.array([[-2.0]])
        >>> vjp = lambda t, y, V: (-2.0 * V, -V * y)       # parameter k in f = -k y
        >>> rec = ndf(f, J, (0.0, 1.0), np.ones(1), np.array([1.0]), 1e-9, np.full(1, 1e-12))
        >>> g_y0, g_k = adjoint(rec, np.ones((1, 1, 1)), vjp, J, 1e-9)
        >>> np.allclose([g_y0[0, 0], g_k[0, 0]], [np.exp(-2.0), -np.exp(-2.0)], rtol=1e-6)
        True
    """
    k, n = C.shape[0], rec.y0.size
    Db = np.zeros((k, MAX_ORDER + 3, n))
    gp: Any = 0.0
    cache: dict = {}
    for op in reversed(rec.ops):
        kind = op[0]
        if kind == "out":
            _, at, w = op
            Db[:, :w.size] += w[None, :, None] * C[:, None, :, at]
        elif kind == "change":
            _, order, T = op
            Db[:, :order + 1] = np.einsum("ij,kjn->kin", T, Db[:, :order + 1])
        else:
            gp = gp + _step_back(op[1], Db, vjp, jac, rtol, cache)
    gy = Db[:, 0] + C[:, :, :rec.at_start].sum(axis=2)
    if rec.h0 != 0:
        vy, vp = vjp(rec.t0, rec.y0, rec.h0 * Db[:, 1])
        gy += vy
        gp = gp + vp
    return gy, gp


def _step_back(step: _Step, Db: np.ndarray, vjp: Callable, jac: Callable, rtol: float,
               cache: dict) -> Any:
    """Pull Db (the cotangent of D after the step) back through it, in place; return the
    step's parameter cotangents."""
    q = step.order
    # D[i] += D[i + 1] for i = q..0, then D[q + 1] = d and D[q + 2] = d - D_before[q + 1]
    for i in range(q + 1):
        Db[:, i + 1] += Db[:, i]
    d_bar = Db[:, q + 1] + Db[:, q + 2]
    Db[:, q + 1] = -Db[:, q + 2]
    Db[:, q + 2] = 0.0
    # d solves d = c f(t, y_pred + d) - psi: with (I - c J)^T w = d_bar, y_pred gets
    # c J^T w, psi gets -w and the parameters c J_p^T w.
    w, vy, vp = _transposed_solve(step, d_bar, vjp, jac, rtol, cache)
    Db[:, :q + 1] += vy[:, None, :]
    Db[:, 1:q + 1] -= (_GAMMA[1:q + 1] / _ALPHA[q])[None, :, None] * w[:, None, :]
    return vp


def _transposed_solve(step: _Step, rhs: np.ndarray, vjp: Callable, jac: Callable,
                      rtol: float, cache: dict) -> tuple:
    """w with ``w - c J(y)^T w = rhs`` (k rows), J at the step's solution: GMRES
    preconditioned by the forward step's factors (of I - c J_old, refactored if dropped),
    all rows at once; returns w and ``vjp(t, y, c w)``."""
    c, lu = step.c, step.lu
    if not lu.sparse and step.y.size <= EXACT_STATES:
        w = _Factors(jac(step.t, step.y), c).solve(rhs.T, transposed=True).T
        return w, *vjp(step.t, step.y, c * w)
    if lu.lu is None:
        if id(lu) not in cache:  # steps sharing factors are consecutive: keep the last
            cache.clear()
            cache[id(lu)] = _Factors(lu.J, lu.c, lu.ordering)
        lu = cache[id(lu)]
    got = _gmres(lambda x: vjp(step.t, step.y, c * x),
                 lambda b: lu.solve(b.T, transposed=True).T, rhs, max(1e-2 * rtol, 1e-13))
    if got is None:  # the forward's Jacobian was too stale to precondition: factor the exact one
        w = _Factors(jac(step.t, step.y), c, lu.ordering).solve(rhs.T, transposed=True).T
        return w, *vjp(step.t, step.y, c * w)
    return got


def _gmres(pull: Callable, precondition: Callable, b: np.ndarray, tol: float) -> Any:
    """(x, *pull(x)) with ``x - pull(x)[0] = b`` for each of the k rows of b, to a residual
    of `tol` times the row's norm, by right-preconditioned GMRES: every row's Krylov basis
    is advanced by one batched `pull` (linear in x), and pull(x) is assembled from the
    basis's, so a converged solve costs one call per iteration. None if _ADJOINT_ITERS
    iterations do not get there."""
    k = b.shape[0]
    x = precondition(b)
    base = pull(x)
    r = b - x + base[0]
    goal = tol * np.linalg.norm(b, axis=1)
    beta = np.linalg.norm(r, axis=1)
    if np.all(beta <= goal):
        return (x, *base)
    V = [r / np.where(beta > 0, beta, 1.0)[:, None]]
    Z: list = []
    pulled: list = []
    H = np.zeros((k, _ADJOINT_ITERS + 1, _ADJOINT_ITERS))
    for j in range(_ADJOINT_ITERS):
        Z.append(precondition(V[j]))
        pulled.append(pull(Z[j]))
        v = Z[j] - pulled[j][0]
        for i in range(j + 1):
            H[:, i, j] = np.einsum("kn,kn->k", v, V[i])
            v = v - H[:, i, j, None] * V[i]
        H[:, j + 1, j] = np.linalg.norm(v, axis=1)
        V.append(v / np.where(H[:, j + 1, j] > 0, H[:, j + 1, j], 1.0)[:, None])
        # each row's least-squares coefficients, min |beta e1 - H y|, and its residual
        Q, R = np.linalg.qr(H[:, :j + 2, :j + 1], mode="complete")
        if np.all(np.abs(beta * Q[:, 0, j + 1]) <= goal) or np.all(H[:, j + 1, j] == 0):
            y = np.linalg.solve(R[:, :j + 1] + (R[:, :j + 1] == 0) * np.eye(j + 1),
                                (beta[:, None] * Q[:, 0, :j + 1])[..., None])[..., 0]
            def combine(first: np.ndarray, parts: list) -> np.ndarray:
                return first + np.einsum("kj,jk...->k...", y, np.array(parts))
            return (combine(x, Z), combine(base[0], [p[0] for p in pulled]),
                    combine(base[1], [p[1] for p in pulled]))
    return None
