"""The ODE systems a differentiable `solve_ivp` hands to SciPy, and the adjoint solve.

A `System` is ``z' = F(t, z; p)`` with its state split into pieces (arrays of fixed
shapes) and its parameters p (tensors). The user's problem is one (one piece, y); its
forward-sensitivity system is another (`Tangent`: the pieces and their k tangent columns,
``s' = J_z s + J_p p'``), so a tangent of a tangent is a second-order system with no
extra code. Each system traces its right-hand side once (`tapeflow.function`) and, for
SciPy's implicit methods, its Jacobian in z (`SparseJacobian`: sparse for large sparse
systems), so the sensitivity and adjoint systems get exact Jacobians from tapeflow too.

`adjoint_vjp` is the reverse-mode rule's computation. Under BDF it is the discrete
adjoint of tapeflow's own recorded BDF solve (ode_bdf, NOTE(ode-discrete-adjoint)),
recorded at tolerances `TIGHTER` times the user's; under the other methods the
continuous adjoint: the forward solve again with its dense output, then ``lambda' =
-J_z^T lambda``, ``mu' = -J_p^T lambda`` backwards, segment by segment between the
`t_eval` points, where each point's cotangent is added to lambda (NOTE(ode-tolerances)
gives the tolerances of the derived systems).

NOTE(ode-tolerances): SciPy scales each component's error by ``atol_i + rtol |z_i|``.
A sensitivity column along a parameter p_j is about y / p_j in size, so it gets the
state's atol divided by |p_j| (CVODES' parameter scaling; 1 for p_j = 0 and for
directions in y0); a column along any direction takes the largest such factor of the
direction. The adjoint lambda of one cotangent c is about |c| in size: it gets |c| times
the state's relative floor atol_i / max|y_i|, and a parameter's integral
mu_j ~ |c| max|y| / p_j the smallest such floor times |c| max|y| / |p_j|. So gradients
come out to the solve's rtol whatever the scales of y and p (Robertson's rate constants
span 10^9).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

try:
    import scipy.integrate as _integrate
    import scipy.sparse as _sparse
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.ode_systems needs SciPy: pip install 'tapeflow[scipy]'") \
        from _missing

from . import ode_bdf
from .batching import vmap
from .core import no_recorders
from .errors import InvalidArgumentError
from .forward import ForwardAccumulator
from .graph import function
from .ops.creation import zeros_like
from .ops.elementwise import cast
from .ops.shape import concat, reshape
from .sparse_jacobians import SparseJacobian, sparse_pays
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, convert_to_tensor

__all__ = ["Solver", "System", "Tangent", "adjoint_vjp", "SolveFailed"]

# Methods that take a Jacobian, and whether they take it sparse (BDF and Radau factor
# scipy.sparse matrices sparsely; LSODA wants a dense one).
IMPLICIT = {"bdf": True, "radau": True, "lsoda": False}
# Options that belong to one solve and are not passed on to the adjoint's segments (each
# segment starts with the step SciPy picks: a cotangent's jump starts a fast transient
# there, where the last segment's final step would be rejected, again and again).
_PER_SOLVE = ("first_step", "atol", "rtol")
# The discrete adjoint differentiates its recorded solve, run this much tighter than the
# user's tolerances: a derivative of the discrete solution is about 15 rtol from the
# exact one at the user's own (a 20 x 20 Brusselator's diffusion gradient), 2 rtol here,
# as the continuous adjoint and forward sensitivities are (for 1.5x the steps).
TIGHTER = 10.0


class SolveFailed(InvalidArgumentError):
    """A solve that a derivative needs did not reach the end of its interval (SciPy's
    message in the error's text); an InvalidArgumentError.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ode_systems import SolveFailed
        >>> issubclass(SolveFailed, tf.errors.InvalidArgumentError)
        True
    """


def _failed(what: str, res: Any, method: str) -> SolveFailed:
    return SolveFailed(f"solve_ivp: cannot differentiate {what}: SciPy's {method} solver "
                       f"failed with: {res.message}")


@dataclasses.dataclass(frozen=True, eq=False)
class Solver:
    """How every solve of one problem runs: SciPy's method, the interval, the times of
    the result, the options given (rtol, atol, max_step, ...) and the reverse-mode
    method ("forward", "adjoint" or "auto").

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_systems import Solver
        >>> s = Solver((0.0, 1.0), np.array([1.0]), "BDF", {"atol": 1e-8}, "auto")
        >>> s.rtol, s.atol(2).tolist()
        (0.001, [1e-08, 1e-08])
    """

    t_span: tuple
    t_eval: np.ndarray
    method: str
    options: dict
    sensitivity: str

    @property
    def rtol(self) -> float:
        return float(self.options.get("rtol", 1e-3))

    def atol(self, n: int) -> np.ndarray:
        """The user's atol as one value per component of an n-state system."""
        a = np.asarray(self.options.get("atol", 1e-6), np.float64)
        return np.broadcast_to(a, (n,)).copy() if a.size in (1, n) else np.full(n, a.min())


def _sizes(shapes: tuple) -> tuple:
    return tuple(int(np.prod(s, dtype=np.int64)) for s in shapes)


def _pbar(value: np.ndarray) -> np.ndarray:
    """A parameter's scale per element: |p|, or 1 where p is 0 (NOTE(ode-tolerances))."""
    a = np.abs(np.asarray(value, np.float64)).reshape(-1)
    return np.where(a > 0, a, 1.0)


class System:
    """``z' = fun(t, pieces, params)``: a state of pieces (shapes `pieces`), parameters of
    (shape, dtype) `params` of which `diff` marks the differentiable ones; `variables`
    maps a parameter slot to the Variable the user's function reads itself (its
    derivatives are taken with respect to that variable). `solve` runs SciPy on NumPy
    values; `tangent(k, moving)` is its forward-sensitivity system.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_systems import Solver, System
        >>> solver = Solver((0.0, 1.0), np.array([1.0]), "RK45",
        ...                 {"rtol": 1e-10, "atol": 1e-12}, "auto")
        >>> decay = System(lambda t, y, p: [-p[0] * y[0]], [(1,)], [((), np.float64)],
        ...                [True], solver)                     # y' = -k y
        >>> round(float(decay.solve([np.ones(1)], [np.float64(2.0)]).y[0, -1]), 8)
        0.13533528
    """

    strict = False  # a derivative's own solve raises when it fails; the user's returns

    def __init__(self, fun: Callable, pieces: tuple, params: tuple, diff: tuple,
                 solver: Solver, sparsity: Any = None, variables: dict | None = None) -> None:
        self.fun = fun
        self.pieces = tuple(tuple(int(d) for d in s) for s in pieces)
        self.params = tuple((tuple(s), np.dtype(d)) for s, d in params)
        self.diff = tuple(bool(d) for d in diff)
        self.solver = solver
        self.sparsity = sparsity
        self.variables = dict(variables or {})
        self.sizes = _sizes(self.pieces)
        self.n = sum(self.sizes)
        self._rhs: Any = None
        self._jac: Any = None
        self._adjoints: dict = {}

    # ------------------------------------------------------------------ tapeflow side
    def split(self, z: Tensor) -> list:
        out, at = [], 0
        for shape, size in zip(self.pieces, self.sizes, strict=True):
            out.append(reshape(z[at:at + size], shape))
            at += size
        return out

    def flat(self, t: Tensor, z: Tensor, params: Any) -> Tensor:
        outs = self.fun(t, self.split(z), list(params))
        return concat([reshape(o, [-1]) for o in outs], 0)

    def sources(self, pieces: list, params: list) -> list:
        """What derivatives are taken with respect to: the pieces, then each parameter
        (the Variable for one the user's function reads itself)."""
        return list(pieces) + [self.variables.get(j, p) for j, p in enumerate(params)]

    def tangent(self, k: int, moving: tuple) -> "Tangent":
        return Tangent(self, k, moving)

    # ------------------------------------------------------------------ SciPy side
    def rhs(self) -> Callable:
        if self._rhs is None:
            self._rhs = function(lambda t, z, *p: self.flat(t, z, p))
        return self._rhs

    def jacobian(self) -> "_StateJacobian | None":
        sparse = IMPLICIT.get(self.solver.method.lower())
        if sparse is None:
            return None
        if self._jac is None:
            self._jac = _StateJacobian(lambda z, t, *p: self.flat(t, z, p), self.sparsity,
                                      sparse)
        return self._jac

    def atol(self, pieces: list, params: list) -> np.ndarray:
        return self.solver.atol(self.n)

    def solve_atol(self, pieces: list, params: list) -> Any:
        return self.solver.options.get("atol", 1e-6)

    def solve(self, pieces: list, params: list, dense: bool = False) -> Any:
        """SciPy's solve of this system from `pieces` with `params` (NumPy arrays), seen by
        no recorder; a strict system raises when it fails."""
        s = self.solver
        z0 = np.concatenate([np.asarray(p, np.float64).reshape(-1) for p in pieces] +
                            [np.zeros(0)])
        ptens = [convert_to_tensor(np.asarray(p)) for p in params]
        opts = dict(s.options, atol=self.solve_atol(pieces, params))
        with no_recorders():
            jac = self.jacobian()
            if jac is not None:
                opts["jac"] = jac.at(ptens)
            res = _integrate.solve_ivp(_numpy_fun(self.rhs(), ptens), s.t_span, z0,
                                       method=s.method, t_eval=s.t_eval, dense_output=dense,
                                       **opts)
        if (self.strict or dense) and res.status < 0:
            raise _failed("a solve that failed", res, s.method)
        return res

    def check(self, arrays: tuple) -> None:
        """Inputs of the shapes this system was made for (a traced call replayed at other
        sizes would be integrated as the wrong system)."""
        want = list(self.pieces) + [s for s, _ in self.params]
        got = [tuple(np.shape(a)) for a in arrays[:len(want)]]
        if got != want:
            raise InvalidArgumentError(
                f"solve_ivp: this solve was set up for y0 and args of shapes {want} but runs "
                f"on {got}; call solve_ivp again for new shapes (in a traced function, give "
                "y0 and the tensors of args fixed shapes).")

    def adjoint(self, wanted: tuple) -> "_Adjoint":
        if wanted not in self._adjoints:
            self._adjoints[wanted] = _Adjoint(self, wanted)
        return self._adjoints[wanted]


def _numpy_fun(traced: Callable, extra: list, *before: Callable) -> Callable:
    """SciPy's fun(t, z) of a traced fun(t, *before(t), z, *extra), as float64 arrays (z
    copied: SciPy reuses its buffers)."""
    def call(t: float, z: np.ndarray) -> np.ndarray:
        tt = convert_to_tensor(np.float64(t))
        pre = [convert_to_tensor(b(t)) for b in before]
        out = traced(tt, *pre, convert_to_tensor(np.array(z, np.float64)), *extra)
        return np.asarray(out._value, np.float64)
    return call


class _StateJacobian:
    """SciPy's `jac` of one system: its exact Jacobian in z from one SparseJacobian, sparse
    or dense as decided at the first call (SciPy wants one kind throughout)."""

    def __init__(self, f: Callable, sparsity: Any, allow_sparse: bool) -> None:
        self.jac = SparseJacobian(f, sparsity)
        self.allow_sparse = allow_sparse
        self.sparse: bool | None = None

    def at(self, extra: list, *before: Callable) -> Callable:
        def call(t: float, z: np.ndarray) -> Any:
            pre = [b(t) for b in before]
            J = self.jac(np.array(z, np.float64), np.float64(t), *pre, *extra)
            if self.sparse is None:
                self.sparse = bool(self.allow_sparse and sparse_pays(J.shape, J.nnz))
            return J if self.sparse else J.toarray()
        return call


class Tangent(System):
    """The forward-sensitivity system of `base` along k directions: base's pieces, then
    each piece's k tangent columns ((k,) + shape); base's parameters, then the k tangents
    of the parameters in `moving` (the others are held fixed). Its right-hand side is
    base's and k JVPs of it (one vectorized pass): ``s' = J_z s + J_p p'``.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_systems import Solver, System
        >>> solver = Solver((0.0, 1.0), np.array([1.0]), "RK45",
        ...                 {"rtol": 1e-10, "atol": 1e-12}, "auto")
        >>> decay = System(lambda t, y, p: [-p[0] * y[0]], [(1,)], [((), np.float64)],
        ...                [True], solver)
        >>> res = decay.tangent(1, (0,)).solve([np.ones(1), np.zeros((1, 1))],
        ...                                    [np.float64(2.0), np.ones(1)])
        >>> round(float(res.y[1, -1]), 8)    # d/dk e^-k at k = 2
        -0.13533528
    """

    strict = True

    def __init__(self, base: System, k: int, moving: tuple) -> None:
        self.base, self.k, self.moving = base, int(k), tuple(moving)
        pieces = base.pieces + tuple((self.k,) + s for s in base.pieces)
        params = base.params + tuple(((self.k,) + base.params[j][0], base.params[j][1])
                                     for j in self.moving)
        super().__init__(self._fun, pieces, params, base.diff + (True,) * len(self.moving),
                         base.solver, variables=base.variables)

    def _fun(self, t: Tensor, pieces: list, params: list) -> list:
        base = self.base
        nb, mb = len(base.pieces), len(base.params)
        y, p = pieces[:nb], params[:mb]
        f = base.fun(t, y, p)
        srcs = base.sources(y, p)
        watched = srcs[:nb] + [srcs[nb + j] for j in self.moving]

        def column(*tans: Tensor) -> list:
            with ForwardAccumulator(watched, list(tans)) as acc:
                out = base.fun(t, y, p)
            return [acc.jvp(o, unconnected_gradients=UnconnectedGradients.ZERO) for o in out]

        if self.k == 0:
            return f + [reshape(zeros_like(o), (0,) + tuple(o.shape)) for o in f]
        return f + list(vmap(column)(*pieces[nb:], *params[mb:]))

    def atol(self, pieces: list, params: list) -> np.ndarray:
        base = self.base
        nb, mb = len(base.pieces), len(base.params)
        a = base.atol(pieces[:nb], params[:mb])
        scale = np.zeros(self.k)
        for v in pieces[nb:]:
            scale = np.maximum(scale, np.abs(np.asarray(v).reshape(self.k, -1)).max(
                axis=1, initial=0.0))
        for j, v in zip(self.moving, params[mb:], strict=True):
            per = np.abs(np.asarray(v).reshape(self.k, -1)) / _pbar(params[j])
            scale = np.maximum(scale, per.max(axis=1, initial=0.0))
        scale = np.where(scale > 0, scale, 1.0)
        at, cols = 0, [a]
        for size in base.sizes:
            cols.append(np.outer(scale, a[at:at + size]).reshape(-1))
            at += size
        return np.concatenate(cols)

    def solve_atol(self, pieces: list, params: list) -> Any:
        return self.atol(pieces, params)


class _Adjoint:
    """The adjoint system of `system` for the parameters `wanted` (their slots): state
    ``(lambda (k, n), mu (k, P))``, right-hand side ``(-lambda J_z, -lambda J_p)`` at the
    forward solution z(t), traced for any k, with its Jacobian in the state."""

    def __init__(self, system: System, wanted: tuple) -> None:
        self.system, self.wanted = system, wanted
        self.rhs = function(self._flat)
        self.state_jac = system.jacobian()

    def jac(self, k: int, params: list, z_of: Callable) -> Callable | None:
        """SciPy's jac of the adjoint state for k rows: -J_z^T for each row's lambda, from
        the state's own Jacobian (its pattern and coloring already made for the forward
        solve). The integrals mu feed nothing back, so their rows are left out of the
        Newton matrix: they converge with lambda, one iteration behind."""
        state = self.state_jac
        if state is None:
            return None
        P = sum(_sizes([self.system.params[j][0] for j in self.wanted]))
        at = state.at(params)

        def call(t: float, a: np.ndarray) -> Any:
            J = at(t, z_of(t))
            if state.sparse:
                blocks = _sparse.kron(_sparse.identity(k, format="csr"), -J.T.tocsr())
                return _sparse.block_diag([blocks, _sparse.csr_matrix((k * P, k * P))],
                                          format="csr")
            out = np.zeros((k * (self.system.n + P),) * 2)
            out[:k * self.system.n, :k * self.system.n] = np.kron(np.eye(k), -J.T)
            return out
        return call

    def _flat(self, t: Tensor, z: Tensor, a: Tensor, *params: Tensor) -> Tensor:
        sysm = self.system
        n = sysm.n
        k = int(a.shape[0]) // (n + sum(_sizes([sysm.params[j][0] for j in self.wanted])))
        lam = reshape(a[:k * n], (k, n))
        srcs = sysm.sources([z], list(params))
        watched = [srcs[0]] + [srcs[1 + j] for j in self.wanted]
        with GradientTape(persistent=True) as tape:
            tape.watch(watched)
            out = sysm.flat(t, z, params)

        def pull(c: Tensor) -> Tensor:
            gs = tape.gradient(out, watched, output_gradients=c,
                               unconnected_gradients=UnconnectedGradients.ZERO)
            return concat([reshape(cast(g, "float64"), [-1]) for g in gs], 0)

        if k == 0:
            return a
        g = vmap(pull)(lam)  # (k, n + P): every lambda, then every mu, as the state
        return -concat([reshape(g[:, :n], [-1]), reshape(g[:, n:], [-1])], 0)


def adjoint_vjp(system: System, wanted: tuple, pieces: list, params: list,
                cts: list) -> list:
    """The cotangents of the pieces and of the parameters in `wanted` (slots), each with
    the k rows of the cotangents `cts` ((k,) + piece shape + (T,) per piece), by the
    adjoint method (NOTE(ode-tolerances)). NumPy arrays in and out.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ode_systems import Solver, System, adjoint_vjp
        >>> solver = Solver((0.0, 1.0), np.array([1.0]), "RK45",
        ...                 {"rtol": 1e-10, "atol": 1e-12}, "adjoint")
        >>> decay = System(lambda t, y, p: [-p[0] * y[0]], [(1,)], [((), np.float64)],
        ...                [True], solver)
        >>> dy0, dk = adjoint_vjp(decay, (0,), [np.ones(1)], [np.float64(2.0)],
        ...                       [np.ones((1, 1, 1))])
        >>> np.round([dy0[0, 0], dk[0]], 8).tolist()    # e^-2 and -e^-2
        [0.13533528, -0.13533528]
    """
    s = system.solver
    k, T, n = int(cts[0].shape[0]), len(s.t_eval), system.n
    C = np.concatenate([np.asarray(c, np.float64).reshape(k, size, T)
                        for c, size in zip(cts, system.sizes, strict=True)] +
                       [np.zeros((k, 0, T))], axis=1)
    psizes = _sizes([system.params[j][0] for j in wanted])
    P = sum(psizes)
    lam, mu = np.zeros((k, n)), np.zeros((k, P))
    live = np.flatnonzero(np.abs(C).reshape(-1, T).max(axis=0, initial=0.0) > 0)
    if live.size:
        solve = _discrete if s.method.lower() == "bdf" else _continuous
        lam, mu = solve(system, wanted, pieces, params, C, live)
    out, at = [], 0
    for shape, size in zip(system.pieces, system.sizes, strict=True):
        out.append(lam[:, at:at + size].reshape((k,) + shape))
        at += size
    at = 0
    for j, size in zip(wanted, psizes, strict=True):
        out.append(mu[:, at:at + size].reshape((k,) + system.params[j][0]))
        at += size
    return out


def _continuous(system: System, wanted: tuple, pieces: list, params: list, C: np.ndarray,
                live: np.ndarray) -> tuple:
    """The continuous adjoint: a backward solve of lambda and mu between output times."""
    s = system.solver
    k, n, P = C.shape[0], system.n, sum(_sizes([system.params[j][0] for j in wanted]))
    lam, mu = np.zeros((k, n)), np.zeros((k, P))
    res = system.solve(pieces, params, dense=True)
    adj = system.adjoint(wanted)
    ptens = [convert_to_tensor(np.asarray(p)) for p in params]
    z_of = res.sol
    with no_recorders():
        fun = _numpy_fun(adj.rhs, ptens, z_of)
        jac = adj.jac(k, ptens, z_of)
    atol = _adjoint_atol(system, pieces, params, wanted, C, res.y)
    opts = {key: v for key, v in s.options.items() if key not in _PER_SOLVE}
    times = list(s.t_eval[:live[-1] + 1])
    for j in range(len(times) - 1, -1, -1):
        lam += C[:, :, j]
        t_from, t_to = times[j], times[j - 1] if j else s.t_span[0]
        if t_from == t_to or not lam.any():
            continue
        a0 = np.concatenate([lam.reshape(-1), mu.reshape(-1)])
        # In time from the segment's start: a stiff adjoint starts each segment with a
        # fast transient, whose small steps at a large t would be rounded (Robertson's
        # at t = 1e5 by 3%: steps of 1e-9 where t's spacing is 1.5e-11).
        if jac is not None:
            opts["jac"] = _shifted(jac, t_from)
        with no_recorders():
            r = _integrate.solve_ivp(_shifted(fun, t_from), (0.0, t_to - t_from), a0,
                                     method=s.method, rtol=s.rtol, atol=atol, **opts)
        if r.status < 0:
            raise _failed("this solve: its adjoint solve failed", r, s.method)
        lam = r.y[:k * n, -1].reshape(k, n)
        mu = r.y[k * n:, -1].reshape(k, P)
    return lam, mu


def _discrete(system: System, wanted: tuple, pieces: list, params: list, C: np.ndarray,
              live: np.ndarray) -> tuple:
    """The discrete adjoint of BDF (NOTE(ode-discrete-adjoint)): the solve again with
    tapeflow's recorded NDF integrator, then its steps pulled back."""
    s = system.solver
    k, n = C.shape[0], system.n
    psizes = _sizes([system.params[j][0] for j in wanted])
    P = sum(psizes)
    ptens = [convert_to_tensor(np.asarray(p)) for p in params]
    z0 = np.concatenate([np.asarray(p, np.float64).reshape(-1) for p in pieces] + [np.zeros(0)])
    adj = system.adjoint(wanted)
    atol = np.broadcast_to(np.asarray(system.solve_atol(pieces, params), np.float64),
                           (n,)).copy()
    # SciPy's own floor on rtol, which a tightened user's 1e-13 would pass
    rtol = max(s.rtol / TIGHTER, 100 * np.finfo(np.float64).eps)
    with no_recorders():
        fun = _numpy_fun(system.rhs(), ptens)
        jac = system.jacobian().at(ptens)
        times = s.t_eval[:live[-1] + 1]
        rec = ode_bdf.ndf(fun, jac, (s.t_span[0], times[-1]), z0, times, rtol, atol / TIGHTER,
                          max_step=float(s.options.get("max_step", np.inf)),
                          first_step=s.options.get("first_step"))
        if rec.status < 0:
            raise _failed("this solve: its adjoint's forward solve failed", rec, s.method)

        def vjp(t: float, y: np.ndarray, V: np.ndarray) -> tuple:
            a = np.concatenate([V.reshape(-1), np.zeros(V.shape[0] * P)])
            g = -np.asarray(adj.rhs(convert_to_tensor(np.float64(t)), convert_to_tensor(y),
                                    convert_to_tensor(a), *ptens)._value, np.float64)
            return g[:V.shape[0] * n].reshape(-1, n), g[V.shape[0] * n:].reshape(-1, P)

        return ode_bdf.adjoint(rec, C[:, :, :times.size], vjp, jac, rtol)


def _shifted(f: Callable, t0: float) -> Callable:
    return lambda s, a: f(t0 + s, a)


def _adjoint_atol(system: System, pieces: list, params: list, wanted: tuple, C: np.ndarray,
                  y: np.ndarray) -> np.ndarray:
    """Absolute tolerances of the adjoint state (NOTE(ode-tolerances))."""
    k = C.shape[0]
    a = system.atol(pieces, params)
    z0 = np.concatenate([np.asarray(p, np.float64).reshape(-1) for p in pieces] + [np.zeros(0)])
    ymax = np.maximum(np.abs(z0), np.abs(y).max(axis=1, initial=0.0))
    floor = a / np.maximum(ymax, a)
    scale = np.abs(C).reshape(k, -1).max(axis=1, initial=0.0)
    scale = np.where(scale > 0, scale, 1.0)
    lam = np.outer(scale, floor).reshape(-1)
    top = max(float(ymax.max(initial=0.0)), 1e-300)
    per_p = np.concatenate([1.0 / _pbar(params[j]) for j in wanted] + [np.zeros(0)])
    mu = np.outer(scale * floor.min(initial=1.0) * top, per_p).reshape(-1)
    return np.concatenate([lam, mu])
