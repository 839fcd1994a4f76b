"""A constrained minimum differentiable in the tensors of `args`: its KKT conditions.

`tapeflow.scipy.minimize` under `constraints` or `bounds` (scipy_implicit.minimize hands
such calls here) returns `res.x` connected to the tensors of `args` (and of the
constraints' own `args`) through the Karush-Kuhn-Tucker conditions of the solution, as a
`custom_root` (NOTE(implicit)) in the unknowns z = (x, the multipliers):

- stationarity: ``grad f(x) - sum_i w_i grad c_i(x) - nu_lo + nu_hi = 0``, w_i the
  multiplier of constraint component i (that of an equality, or mu_lo_i - mu_hi_i of an
  inequality's two sides), nu the multipliers of the bounds;
- an equality: ``c_i(x) - b_i = 0``;
- each side of an inequality and each finite bound: ``min(mu, slack) = 0``.

NOTE(kkt-min): the last conditions are the complementarity conditions, written with the
min function, so the trace does not decide which constraints are active: a derivative
takes the branch the values choose at each solution (an active side, mu > 0 = slack,
differentiates its slack and so holds the constraint; an inactive one, slack > 0 = mu,
keeps mu at 0). The same graph serves every solution under vmap and every replay of a
traced function, whatever its active set. A side that is active with a zero multiplier
(weakly active: the derivative is one-sided there) is reported as nonconvergence is.

The solver is SciPy's `minimize`, given the objective and the constraints through the
root's companions (so each call solves the problem at the current values of the
tensors); the multipliers are then the least-squares solution of stationarity on the
constraints within `ACTIVE` of their bounds, the bounds' from the residual.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    from scipy.optimize import Bounds, NonlinearConstraint
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.scipy needs SciPy: pip install 'tapeflow[scipy]'") from _missing

from .batching import vmap
from .core import no_recorders
from .errors import InvalidArgumentError
from .implicit import bind_root
from .ops.elementwise import minimum
from .ops.indexing import gather
from .ops.reduction import reduce_sum
from .ops.shape import concat, reshape
from .scipy_sparse_nlp import _blocks, _joined, as_float64
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, convert_to_tensor

__all__ = ["minimize_kkt", "bound_arrays", "ACTIVE"]

# A constraint side or bound is a candidate for being active within this distance,
# relative to 1 + |bound|; its multiplier decides (a weakly active one is reported).
ACTIVE = 1e-6
# Stationarity must hold to this, relative to 1 + |grad f|, for a KKT point.
STATIONARY = 1e-4
OK, NOT_CONVERGED, NOT_KKT, WEAK = 0, 1, 4, 5
WHY = {
    NOT_KKT: "the KKT conditions do not hold (a constraint or bound is violated, or the "
             "objective's gradient is no combination of the active constraints' gradients)",
    WEAK: "a constraint or bound is active with a zero multiplier (weakly active: the "
          "derivative is one-sided there)",
}


def bound_arrays(bounds: Any, n: int, who: str) -> tuple:
    """minimize's `bounds` (a Bounds, or n (low, high) pairs with None for no bound) as
    two float64 arrays of n values (infinite where unbounded).

    Example:
        >>> from tapeflow.scipy_kkt import bound_arrays
        >>> [a.tolist() for a in bound_arrays([(0, None), (None, 2)], 2, "f")]
        [[0.0, -inf], [inf, 2.0]]
    """
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    if isinstance(bounds, Bounds):
        lo, hi = bounds.lb, bounds.ub
    else:
        pairs = list(bounds)
        if len(pairs) != n:
            raise InvalidArgumentError(f"{who}: `bounds` has {len(pairs)} pairs for {n} "
                                       "unknowns.")
        lo = [-np.inf if p[0] is None else p[0] for p in pairs]
        hi = [np.inf if p[1] is None else p[1] for p in pairs]
    return (np.broadcast_to(np.asarray(lo, np.float64), (n,)).copy(),
            np.broadcast_to(np.asarray(hi, np.float64), (n,)).copy())


class _Layout:
    """Where each multiplier sits in z after x: the equalities, the lower and upper sides
    of the inequalities, the lower and upper bounds."""

    def __init__(self, n: int, lb: np.ndarray, ub: np.ndarray, lo: np.ndarray,
                 hi: np.ndarray) -> None:
        eq = lb == ub
        self.n, self.lb, self.ub, self.lo, self.hi = n, lb, ub, lo, hi
        self.eq = np.flatnonzero(eq)
        self.c_lo = np.flatnonzero(~eq & np.isfinite(lb))
        self.c_hi = np.flatnonzero(~eq & np.isfinite(ub))
        self.b_lo = np.flatnonzero(np.isfinite(lo))
        self.b_hi = np.flatnonzero(np.isfinite(hi))
        sizes = [n, self.eq.size, self.c_lo.size, self.c_hi.size, self.b_lo.size,
                 self.b_hi.size]
        self.at = np.concatenate([[0], np.cumsum(sizes)])
        self.size = int(self.at[-1])
        m = lb.size
        # w = [0, eq, lo][w_plus] - [0, hi][w_minus]: each component's net multiplier
        self.w_plus = np.zeros(m, np.int64)
        self.w_plus[self.eq] = 1 + np.arange(self.eq.size)
        self.w_plus[self.c_lo] = 1 + self.eq.size + np.arange(self.c_lo.size)
        self.w_minus = np.zeros(m, np.int64)
        self.w_minus[self.c_hi] = 1 + np.arange(self.c_hi.size)
        self.nu_plus = np.zeros(n, np.int64)
        self.nu_plus[self.b_lo] = 1 + np.arange(self.b_lo.size)
        self.nu_minus = np.zeros(n, np.int64)
        self.nu_minus[self.b_hi] = 1 + np.arange(self.b_hi.size)

    def part(self, z: Any, k: int) -> Any:
        return z[int(self.at[k]):int(self.at[k + 1])]


def minimize_kkt(objective: Callable, x0: Any, kwargs: dict, bounds: tuple, run: Callable,
                 who: str, tangent_solve: Callable, check: Callable, result: Callable) -> Any:
    """A minimum of `objective` under kwargs' `constraints` and the arrays `bounds` (lo,
    hi) with `res.x` differentiable through its KKT conditions (the module's docstring).
    ``objective(x)`` is (the scalar value, a list of more companion results, for the
    solver); ``run(at, x0, options)`` is SciPy's solve, ``at(y)`` giving [the value, the
    constraints' values, *those companions] at the tensors' current values, `options`
    kwargs with the constraints in that form. The other helpers are scipy_implicit's.

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> c = tf.constant(0.3, tf.float64)   # argmin (x - 1)^2 with x <= c is x = c
        >>> fit = lambda c: tfs.minimize(lambda x, c: tf.reduce_sum((x - 1.0) ** 2),
        ...     np.zeros(1), args=(c,), method="SLSQP",
        ...     constraints={"type": "ineq", "fun": lambda x, c: c - x[0], "args": (c,)}).x[0]
        >>> round(float(fit(c)), 6), round(float(tf.grad(fit)(c)), 6)
        (0.3, 1.0)
    """
    start = np.asarray(x0.numpy() if hasattr(x0, "numpy") else x0, np.float64).ravel()
    n = start.size
    blocks = _blocks(kwargs.get("constraints"), start, who)
    lb = np.concatenate([b.lb for b in blocks] + [np.zeros(0)])
    ub = np.concatenate([b.ub for b in blocks] + [np.zeros(0)])
    lo, hi = bounds
    lay = _Layout(n, lb, ub, lo, hi)
    zero = convert_to_tensor(np.zeros(1))

    def conditions(zs: list) -> tuple:
        (z,) = zs
        x = lay.part(z, 0)
        mult = [concat([zero, lay.part(z, k)], 0) for k in range(1, 6)]
        with GradientTape() as tape:
            tape.watch(x)
            value, more = objective(x)
            c = _joined(blocks)(x, *[a for b in blocks for a in b.args])
            lagrangian = value - reduce_sum(_net(mult, lay) * c)
        g = tape.gradient(lagrangian, x, unconnected_gradients=UnconnectedGradients.ZERO)
        g = g - gather(mult[3], lay.nu_plus) + gather(mult[4], lay.nu_minus)
        parts = [g, gather(c, lay.eq) - lb[lay.eq],
                 minimum(lay.part(z, 2), gather(c, lay.c_lo) - lb[lay.c_lo]),
                 minimum(lay.part(z, 3), ub[lay.c_hi] - gather(c, lay.c_hi)),
                 minimum(lay.part(z, 4), gather(x, lay.b_lo) - lo[lay.b_lo]),
                 minimum(lay.part(z, 5), hi[lay.b_hi] - gather(x, lay.b_hi))]
        return concat(parts, 0), [value, c, *more]

    ran: dict = {}

    def solve(f: Callable, z: Tensor, companions: Callable) -> tuple:
        pad = np.zeros(lay.size - n)

        def at(y: Any) -> list:
            return companions(concat([reshape(convert_to_tensor(y), [-1]),
                                      convert_to_tensor(pad)], 0))

        options = dict(kwargs)
        if blocks:  # SciPy sees the constraints at the tensors' current values, its
            # equalities apart from its inequalities (as SLSQP wants them)
            options["constraints"] = [
                NonlinearConstraint(lambda y, idx=idx: gather(at(y)[1], idx), lb[idx], ub[idx])
                for idx in (lay.eq, np.flatnonzero(lb != ub)) if idx.size]
        res = run(at, as_float64(z)[:n], options)
        ran["res"] = res
        x = np.asarray(res.x, np.float64).ravel()
        zstar, status = _multipliers(f, x, as_float64(at(x)[1]), lay, pad)
        if not res.success:
            status = NOT_CONVERGED
        return Tensor(zstar), np.int32(status)

    guess = Tensor(np.concatenate([start, np.zeros(lay.size - n)]))
    with no_recorders():  # the number of companions, read off one evaluation
        extra = 2 + len(objective(Tensor(start))[1])
    outs, _ = bind_root(conditions, [guess], None, solve, tangent_solve, has_aux=True,
                        extra=extra, check=check)
    return result(ran, outs[0][:n])


def _net(mult: list, lay: _Layout) -> Tensor:
    """Each constraint component's net multiplier w (equality, or lower minus upper)."""
    plus = concat([mult[0][:1], mult[0][1:], mult[1][1:]], 0)
    return gather(plus, lay.w_plus) - gather(mult[2], lay.w_minus)


def _multipliers(f: Callable, x: np.ndarray, c: np.ndarray, lay: _Layout,
                 pad: np.ndarray) -> tuple:
    """z at the solution x (constraint values c) and its status: the multipliers of the
    candidate active sides by least squares on the stationarity of the free unknowns, the
    bounds' from what is left. f(z) is the conditions; its stationarity part is affine in
    the multipliers, which gives the candidates' gradients (one vectorized call of f)."""
    n = lay.n

    def stationarity(z: np.ndarray) -> np.ndarray:
        return as_float64(f(Tensor(z)))[:n]

    base = np.concatenate([x, pad])
    g = stationarity(base)

    def near(v: np.ndarray, b: np.ndarray) -> np.ndarray:
        return np.isfinite(b) & (np.abs(v - b) <= ACTIVE * (1 + np.abs(b)))

    cand = [(k, i) for k, idx, bound in ((1, lay.eq, lay.lb), (2, lay.c_lo, lay.lb),
                                         (3, lay.c_hi, lay.ub))
            for i, j in enumerate(idx) if k == 1 or near(c[j], bound[j])]
    at_lo = near(x, lay.lo)
    at_hi = near(x, lay.hi) & ~at_lo
    free = ~(at_lo | at_hi)
    z = base.copy()
    status = OK
    # -(a_i) for each candidate side (k, i): the column its multiplier adds, all at once
    units = np.repeat(base[None], len(cand), axis=0)
    for row, (k, i) in enumerate(cand):
        units[row, lay.at[k] + i] = 1.0
    A = (as_float64(vmap(f)(Tensor(units)))[:, :n] - g).T if cand else np.zeros((n, 0))
    keep = list(range(len(cand)))
    while True:
        mu = np.linalg.lstsq(A[free][:, keep], -g[free], rcond=None)[0] if keep else \
            np.zeros(0)
        wrong = [j for j, col in enumerate(keep) if cand[col][0] > 1 and mu[j] < 0]
        if not wrong:
            break
        keep.pop(wrong[int(np.argmin(mu[wrong]))])  # not active: drop it and solve again
    cand, A = [cand[j] for j in keep], A[:, keep]
    r = g + A @ mu
    scale = 1.0 + float(np.abs(g).max(initial=0.0))
    for (k, i), m in zip(cand, mu, strict=True):
        z[lay.at[k] + i] = m
        if k > 1 and m <= 1e-8 * scale:
            status = WEAK
    for k, mask, idx, sign in ((4, at_lo, lay.b_lo, 1.0), (5, at_hi, lay.b_hi, -1.0)):
        for i, j in enumerate(idx):
            if mask[j]:
                z[lay.at[k] + i] = max(sign * r[j], 0.0)
                if sign * r[j] <= 1e-8 * scale:
                    status = WEAK

    def outside(v: np.ndarray, low: np.ndarray, high: np.ndarray) -> bool:
        slack = ACTIVE * (1 + np.abs(np.where(np.isfinite(low), low, high)))
        return bool(np.any(v < low - slack) or np.any(v > high + slack))

    if (np.abs(r[free]).max(initial=0.0) > STATIONARY * scale
            or outside(c, lay.lb, lay.ub) or outside(x, lay.lo, lay.hi)):
        status = NOT_KKT
    return z, status
