"""Sparse nonlinear programs: IPOPT and SciPy's trust-constr handed exact sparse
derivatives of tapeflow functions.

- `minimize_ipopt`: cyipopt's `minimize_ipopt` (its arguments and result) for a tapeflow
  objective and constraints (SciPy's constraint dicts, `NonlinearConstraint`,
  `LinearConstraint`), with IPOPT given the exact gradient, the constraints' Jacobian
  (sparse: its structure read off the program, NOTE(sparsity)) and the Hessian of the
  Lagrangian (sparse, its lower triangle: NOTE(curvature)), each traced once and
  replayed at every iterate.
- `trust_constr_arguments`: what `tapeflow.scipy.minimize(method="trust-constr")` hands
  SciPy: each nonlinear constraint's Jacobian as a `SparseJacobian` and its Hessian
  term, sum_i v_i d2 c_i (SciPy passes the multipliers v), as a `SparseHessian`; the
  objective's Hessian as a `SparseHessian` where its pattern is sparse.

The Lagrangian sigma f(x) + lambda . c(x) is one traced function whose multipliers are
arguments: its pattern is the union of the objective's and every constraint's, found
once, and each Hessian of it costs one vectorized pass of as many Hessian-vector
products as its star coloring has colors. IPOPT is the `ipopt` extra
(``pip install 'tapeflow[ipopt]'``, which installs cyipopt with IPOPT built in).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

try:
    import scipy.optimize as _optimize
    import scipy.sparse as _sparse
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.scipy_sparse_nlp needs SciPy: pip install 'tapeflow[scipy]'"
                      ) from _missing

from .graph import function
from .ops.elementwise import cast
from .ops.reduction import reduce_sum
from .ops.shape import concat, reshape
from .optional import required
from .sparse_hessians import SparseHessian
from .sparse_jacobians import SparseJacobian, arguments, sparse_pays
from .tensor import TensorBase, convert_to_tensor
from .transforms import value_and_grad

__all__ = ["minimize_ipopt", "trust_constr_arguments"]

# IPOPT takes bounds beyond +-1e19 as absent (its nlp_lower/upper_bound_inf).
_IPOPT_INF = 2e19
def iterate(a: Any) -> Any:
    """A solver's float64 iterate as a tensor (a copy: solvers reuse their buffers)."""
    return convert_to_tensor(np.array(a, dtype=np.float64))


def as_float64(t: Any) -> np.ndarray:
    """A tensor's (or array's) values as a float64 array, as SciPy's solvers take them."""
    return np.asarray(t.numpy() if hasattr(t, "numpy") else t, dtype=np.float64)



# ---------------------------------------------------------------------------- constraints
@dataclasses.dataclass
class _Block:
    """One constraint of the user's: lb <= fun(x, *args) <= ub, or lb <= A x <= ub."""

    fun: Callable | None
    args: tuple
    lb: np.ndarray
    ub: np.ndarray
    matrix: Any = None  # a LinearConstraint's A, as CSR


def _blocks(constraints: Any, x0: np.ndarray, fname: str) -> list:
    """The user's constraints (a dict, a SciPy constraint object, or a sequence of them)
    as blocks, each evaluated once at x0 for its size."""
    if isinstance(constraints, (dict, _optimize.NonlinearConstraint,
                                _optimize.LinearConstraint)):
        constraints = (constraints,)
    out = []
    for i, con in enumerate(constraints or ()):
        if isinstance(con, _optimize.LinearConstraint):
            a = _sparse.csr_matrix(np.atleast_2d(con.A) if not _sparse.issparse(con.A)
                                   else con.A, dtype=np.float64)
            if a.shape[1] != x0.size:
                raise ValueError(f"{fname}: constraints[{i}] (LinearConstraint) has A of shape "
                                 f"{a.shape}; expected {x0.size} columns (x's size).")
            lb, ub = _bounds_of(con.lb, con.ub, a.shape[0], fname, i)
            out.append(_Block(None, (), lb, ub, a))
            continue
        if isinstance(con, _optimize.NonlinearConstraint):
            fun, args = con.fun, ()
            m = _size_at(fun, args, x0, fname, i)
            lb, ub = _bounds_of(con.lb, con.ub, m, fname, i)
        elif isinstance(con, dict):
            kind = con.get("type")
            if kind not in ("eq", "ineq") or not callable(con.get("fun")):
                raise ValueError(f"{fname}: constraints[{i}] must have 'type' 'eq' or 'ineq' "
                                 f"and a callable 'fun'; got {sorted(con)} with type "
                                 f"{kind!r}.")
            fun, args = con["fun"], arguments(tuple(con.get("args", ())))
            m = _size_at(fun, args, x0, fname, i)
            lb = np.zeros(m)
            ub = np.zeros(m) if kind == "eq" else np.full(m, np.inf)
        else:
            raise TypeError(f"{fname}: constraints[{i}] must be a dict, a NonlinearConstraint "
                            f"or a LinearConstraint; got {type(con).__name__}.")
        out.append(_Block(fun, args, lb, ub))
    return out


def _size_at(fun: Callable, args: tuple, x0: np.ndarray, fname: str, i: int) -> int:
    value = fun(iterate(x0), *args)  # its size from its shape: no read under vmap
    shape = value.shape if isinstance(value, TensorBase) else np.shape(value)
    return int(np.prod(tuple(shape), dtype=np.int64))


def _bounds_of(lb: Any, ub: Any, m: int, fname: str, i: int) -> tuple:
    try:
        lo, hi = (np.broadcast_to(np.asarray(b, np.float64), (m,)).copy() for b in (lb, ub))
    except ValueError:
        raise ValueError(f"{fname}: constraints[{i}] has bounds of shapes {np.shape(lb)} and "
                         f"{np.shape(ub)}; expected {m} values (or one).") from None
    return lo, hi


def _joined(blocks: list) -> Callable:
    """The blocks as one function of (x, *their args, in order): their values (A x for a
    linear block), flattened and joined."""
    def c(x: Any, *flat: Any) -> Any:
        parts, at = [], 0
        for b in blocks:
            if b.fun is None:
                value = convert_to_tensor(b.matrix.toarray()) @ reshape(x, [-1, 1])
            else:
                value = b.fun(x, *flat[at:at + len(b.args)])
            at += len(b.args)
            parts.append(reshape(cast(value, x.dtype), [-1]))
        return concat(parts + [reshape(cast(convert_to_tensor(np.zeros(0)), x.dtype), [0])], 0)
    return c


def _lagrangian(f: Callable, n_fargs: int, c: Callable | None) -> Callable:
    """sigma f(x) + lam . c(x), a function of (x, sigma, lam, *f's args, *c's args)."""
    def lagrangian(x: Any, sigma: Any, lam: Any, *flat: Any) -> Any:
        value = sigma * reduce_sum(f(x, *flat[:n_fargs]))
        if c is not None:
            value = value + reduce_sum(lam * c(x, *flat[n_fargs:]))
        return value
    return lagrangian


# ---------------------------------------------------------------------------- trust-constr
def _sparse_or_dense(matrix: Any, decided: list) -> Any:
    """The first call decides for all (SciPy wants one kind throughout)."""
    if not decided:
        decided.append(sparse_pays(matrix.shape, matrix.nnz))
    return matrix if decided[0] else matrix.toarray()


def trust_constr_arguments(fun: Callable, x0: Any, args: tuple, kwargs: dict) -> dict:
    """`scipy.optimize.minimize` keywords for method="trust-constr" with exact sparse
    derivatives: each constraint (dict or NonlinearConstraint of tapeflow functions; a
    LinearConstraint passes unchanged) becomes a NonlinearConstraint whose `jac` is its
    SparseJacobian and whose `hess(x, v)` is the SparseHessian of v . c(x) (a constraint's
    own callable `jac` or `hess` is kept); the objective's Hessian becomes its
    SparseHessian (instead of `hessp`) where its pattern is sparse. The constraints'
    Jacobians go to SciPy as scipy.sparse matrices when, taken together at x0, they are
    large and sparse (the `sparse_jacobian` option says so to SciPy), dense otherwise;
    each Hessian likewise.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.scipy_sparse_nlp import trust_constr_arguments
        >>> cons = {"type": "eq", "fun": lambda x: tf.reduce_sum(x) - 1.}
        >>> kw = trust_constr_arguments(lambda x: tf.reduce_sum(x ** 2), np.zeros(3), (),
        ...                             {"constraints": cons})
        >>> con = kw["constraints"][0]
        >>> con.jac(np.ones(3)), con.hess(np.ones(3), np.array([2.])).tolist()
        (array([[1., 1., 1.]]), [[0.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
    """
    kwargs = dict(kwargs)
    x0 = np.asarray(x0, np.float64).reshape(-1)
    targs = arguments(tuple(args))
    hess = SparseHessian(lambda x, *a: fun(x, *a))
    h0 = hess(x0, *targs)
    if sparse_pays(h0.shape, h0.nnz):
        kwargs.pop("hessp", None)
        kwargs["hess"] = lambda x: hess(np.array(x, np.float64), *targs)
    given = kwargs.get("constraints", ())
    if isinstance(given, (dict, _optimize.NonlinearConstraint, _optimize.LinearConstraint)):
        given = (given,)
    sparse: list = []  # the Jacobians' kind, decided below for all of them
    exact = [_exact(con, i, sparse) for i, con in enumerate(given)]
    firsts = [j(x0) for _, j in exact if j is not None]
    if firsts:
        rows = sum(j.shape[0] for j in firsts)
        sparse.append(sparse_pays((rows, x0.size), sum(j.nnz for j in firsts)))
        options = dict(kwargs.get("options") or {})
        options.setdefault("sparse_jacobian", sparse[0])
        kwargs["options"] = options
    kwargs["constraints"] = [con for con, _ in exact]
    return kwargs


def _exact(con: Any, i: int, sparse: list) -> tuple:
    """The constraint with exact derivatives, and its SparseJacobian's call (None where
    the constraint keeps its own Jacobian)."""
    if isinstance(con, _optimize.LinearConstraint):
        return con, None
    if isinstance(con, dict):
        if con.get("type") not in ("eq", "ineq") or not callable(con.get("fun")):
            raise ValueError(f"minimize: constraints[{i}] must have 'type' 'eq' or 'ineq' and a "
                             f"callable 'fun'; got {sorted(con)}.")
        raw = tuple(con.get("args", ()))
        fun, args = con["fun"], arguments(raw)
        lb, ub = 0.0, (0.0 if con["type"] == "eq" else np.inf)
        jac = con.get("jac")
        if callable(jac):  # SciPy's dicts pass the args to their jac too
            jac = (lambda given: lambda x: given(x, *raw))(jac)
        else:
            jac = None
        hess = None
    elif isinstance(con, _optimize.NonlinearConstraint):
        fun, args, lb, ub = con.fun, (), con.lb, con.ub
        jac = con.jac if callable(con.jac) else None
        hess = con.hess if callable(con.hess) and not isinstance(
            con.hess, _optimize.HessianUpdateStrategy) else None
    else:
        raise TypeError(f"minimize: constraints[{i}] must be a dict, a NonlinearConstraint or "
                        f"a LinearConstraint; got {type(con).__name__}.")
    values = function(lambda x, *a: reshape(fun(x, *a), [-1]))
    value = lambda x: as_float64(values(iterate(x), *args))  # noqa: E731
    exact_jac = None
    if jac is None:
        sj = SparseJacobian(lambda x, *a: reshape(fun(x, *a), [-1]))
        exact_jac = lambda x: sj(np.array(x, np.float64), *args)  # noqa: E731
        jac = lambda x: exact_jac(x) if sparse[0] else exact_jac(x).toarray()  # noqa: E731
    if hess is None:
        sh = SparseHessian(lambda x, v, *a: reduce_sum(v * reshape(cast(fun(x, *a), x.dtype),
                                                                   [-1])))
        kind_h: list = []
        hess = lambda x, v: _sparse_or_dense(  # noqa: E731
            sh(np.array(x, np.float64), np.array(v, np.float64), *args), kind_h)
    return _optimize.NonlinearConstraint(value, lb, ub, jac=jac, hess=hess), exact_jac


# ---------------------------------------------------------------------------- IPOPT
class _Structured:
    """A sparse derivative's values in the order of the structure IPOPT was given at x0
    (`keep`: which entries of its CSR pattern go, e.g. a Hessian's lower triangle)."""

    def __init__(self, first: Any, keep: Callable[[np.ndarray, np.ndarray], np.ndarray],
                 what: str) -> None:
        rows = np.repeat(np.arange(first.shape[0]), np.diff(first.indptr))
        mask = keep(rows, first.indices)
        self.rows, self.cols = rows[mask], first.indices[mask].astype(np.int64)
        self.indptr, self.indices, self.mask = first.indptr, first.indices, mask
        self.keep, self.what = keep, what

    def values(self, matrix: Any) -> np.ndarray:
        if np.array_equal(matrix.indptr, self.indptr) and \
                np.array_equal(matrix.indices, self.indices):
            return np.asarray(matrix.data[self.mask], np.float64)
        # The pattern grew (a branch of f on x's values, NOTE(value-reads)): read the
        # structure's entries, and refuse one outside it that is not zero here.
        coo = matrix.tocoo()
        rows, cols, data = coo.row, coo.col, coo.data
        keep = self.keep(rows, cols)
        n = matrix.shape[1]
        inside = np.isin(rows.astype(np.int64) * n + cols, self.rows * n + self.cols)
        if np.any((data != 0) & keep & ~inside):
            raise ValueError(f"minimize_ipopt: the {self.what}'s sparsity pattern at this "
                             "iterate has nonzero entries outside the structure given to IPOPT "
                             "at x0 (a branch on x's values): make the functions' structure "
                             "the same at every x.")
        return np.asarray(matrix[self.rows, self.cols], np.float64).ravel()


class _Problem:
    """IPOPT's callbacks (cyipopt's problem object): every derivative from one traced
    replay, the objective's value and gradient from one pass, cached for the iterate."""

    def __init__(self, fun: Callable, fargs: tuple, blocks: list, x0: np.ndarray) -> None:
        self.n = x0.size
        self.nfev = self.njev = self.nit = 0
        self._both = function(lambda x, *a: value_and_grad(lambda y: fun(y, *a))(x))
        self._fargs = fargs
        nonlinear = [b for b in blocks if b.fun is not None]
        linear = [b for b in blocks if b.fun is None]
        # IPOPT's constraint i is the user's i-th; inside, nonlinear rows come first.
        sizes = [b.lb.size for b in blocks]
        starts = np.concatenate(([0], np.cumsum(sizes))).astype(np.int64)
        order = [i for i, b in enumerate(blocks) if b.fun is not None] + \
                [i for i, b in enumerate(blocks) if b.fun is None]
        self.to_user = np.concatenate([np.arange(starts[i], starts[i + 1]) for i in order]) \
            if blocks else np.zeros(0, np.int64)
        self.m_nonlinear = sum(b.lb.size for b in nonlinear)
        self.cl = np.concatenate([b.lb for b in blocks]) if blocks else np.zeros(0)
        self.cu = np.concatenate([b.ub for b in blocks]) if blocks else np.zeros(0)
        self._cargs = tuple(a for b in nonlinear for a in b.args)
        c = _joined(nonlinear) if nonlinear else None
        self._linear = _sparse.vstack([b.matrix for b in linear]).tocsr() if linear else None
        self._values = function(c) if c is not None else None
        self.jac = SparseJacobian(c) if c is not None else None
        self.hess = SparseHessian(_lagrangian(fun, len(fargs), c))
        self._x = None
        self._vg: tuple = ()
        j0 = self._jacobian_matrix(x0)
        self._jac = _Structured(j0, lambda r, c: np.ones(r.size, bool), "constraints' Jacobian")
        lam = np.ones(self.m_nonlinear)
        h0 = self.hess(x0, np.float64(1.0), lam, *fargs, *self._cargs)
        self._hess = _Structured(h0, lambda r, c: r >= c, "Lagrangian's Hessian")

    # the objective
    def _value_and_gradient(self, x: np.ndarray) -> tuple:
        if self._x is None or not np.array_equal(x, self._x):
            v, g = self._both(iterate(x), *self._fargs)
            self._x, self._vg = np.array(x), (float(as_float64(v)), as_float64(g).reshape(-1))
        return self._vg

    def objective(self, x: np.ndarray) -> float:
        self.nfev += 1
        return self._value_and_gradient(x)[0]

    def gradient(self, x: np.ndarray) -> np.ndarray:
        self.njev += 1
        return self._value_and_gradient(x)[1]

    # the constraints
    def constraints(self, x: np.ndarray) -> np.ndarray:
        parts = []
        if self._values is not None:
            parts.append(as_float64(self._values(iterate(x), *self._cargs)))
        if self._linear is not None:
            parts.append(self._linear @ x)
        inside = np.concatenate(parts) if parts else np.zeros(0)
        out = np.empty_like(inside)
        out[self.to_user] = inside
        return out

    def _jacobian_matrix(self, x: np.ndarray) -> Any:
        parts = []
        if self.jac is not None:
            parts.append(self.jac(np.array(x, np.float64), *self._cargs))
        if self._linear is not None:
            parts.append(self._linear)
        if not parts:
            return _sparse.csr_matrix((0, self.n))
        inside = _sparse.vstack(parts).tocsr() if len(parts) > 1 else parts[0].tocsr()
        back = np.empty_like(self.to_user)
        back[self.to_user] = np.arange(self.to_user.size)
        return inside[back] if back.size else inside

    def jacobianstructure(self) -> tuple:
        return self._jac.rows, self._jac.cols

    def jacobian(self, x: np.ndarray) -> np.ndarray:
        return self._jac.values(self._jacobian_matrix(x))

    # the Lagrangian
    def hessianstructure(self) -> tuple:
        return self._hess.rows, self._hess.cols

    def hessian(self, x: np.ndarray, lagrange: np.ndarray, obj_factor: float) -> np.ndarray:
        lam = np.asarray(lagrange, np.float64)[self.to_user[:self.m_nonlinear]]
        h = self.hess(np.array(x, np.float64), np.float64(obj_factor), lam, *self._fargs,
                      *self._cargs)
        return self._hess.values(h)

    def intermediate(self, *status: Any) -> bool:
        self.nit = int(status[1])
        return True


def _variable_bounds(bounds: Any, n: int) -> tuple:
    if bounds is None:
        return np.full(n, -np.inf), np.full(n, np.inf)
    if isinstance(bounds, _optimize.Bounds):
        lb, ub = bounds.lb, bounds.ub
    else:
        pairs = np.atleast_2d(np.asarray(bounds, dtype=object))
        if pairs.ndim != 2 or pairs.shape[1] != 2:
            raise ValueError(f"minimize_ipopt: `bounds` must be a Bounds or a (min, max) pair "
                             f"per variable; got shape {pairs.shape}.")
        none = np.vectorize(lambda v: np.nan if v is None else v, otypes=[np.float64])
        lb, ub = none(pairs[:, 0]), none(pairs[:, 1])
    try:
        lb, ub = (np.broadcast_to(np.asarray(b, np.float64), (n,)).copy() for b in (lb, ub))
    except ValueError:
        raise ValueError(f"minimize_ipopt: `bounds` give {np.size(lb)} lower and {np.size(ub)} "
                         f"upper bounds; expected {n} (x0's size) or one.") from None
    lb[np.isnan(lb)], ub[np.isnan(ub)] = -np.inf, np.inf
    return lb, ub


def _finite(a: np.ndarray) -> np.ndarray:
    return np.clip(a, -_IPOPT_INF, _IPOPT_INF)


def minimize_ipopt(fun: Callable, x0: Any, args: tuple = (), kwargs: dict | None = None,
                   method: str | None = None, jac: Any = None, hess: Any = None,
                   hessp: Any = None, bounds: Any = None, constraints: Any = (),
                   tol: float | None = None, callback: Any = None,
                   options: dict | None = None) -> Any:
    """cyipopt's `minimize_ipopt` for a tapeflow objective ``fun(x, *args, **kwargs)`` and
    constraints (SciPy's dicts, ``{"type": "eq" | "ineq", "fun": c, "args": (...)}`` with
    c(x) = 0 or c(x) >= 0, and `NonlinearConstraint` / `LinearConstraint` objects), solved
    by IPOPT with exact derivatives: the gradient, the constraints' Jacobian and the
    Lagrangian's Hessian (sparse, with their structures read off the programs, the Hessian's
    lower triangle), each traced once and replayed at every iterate. `jac`, `hess` and
    `hessp` must stay None (computed here); `method` must be None (IPOPT: use
    `tapeflow.scipy.minimize` for SciPy's methods). `options` go to IPOPT (`disp` and
    `maxiter` as print_level and max_iter; `tol` is its tol, 1e-8 by default). Returns
    SciPy's OptimizeResult with cyipopt's fields (x, fun, success, status, message, info,
    nfev, njev, nit), plus jac_info and hess_info (how the sparse derivatives were
    computed). Needs the `ipopt` extra (cyipopt).

    Example:
        >>> import importlib.util, numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> if importlib.util.find_spec("cyipopt"):  # the ipopt extra
        ...     res = tfs.minimize_ipopt(lambda x: tf.reduce_sum((x - 2.) ** 2), np.zeros(3),
        ...                              constraints={"type": "ineq", "fun": lambda x: 1. - x})
        ...     assert res.success and np.allclose(res.x, 1.)
    """
    cyipopt = required("cyipopt", "ipopt", "minimize_ipopt (IPOPT)")
    for name, given in (("jac", jac), ("hess", hess), ("hessp", hessp)):
        if given is not None:
            raise TypeError(f"tapeflow.scipy.minimize_ipopt computes `{name}` itself; remove "
                            "it (or call cyipopt.minimize_ipopt directly).")
    if method is not None:
        raise ValueError(f"minimize_ipopt: method={method!r}: this is IPOPT's solver; use "
                         "tapeflow.scipy.minimize for SciPy's methods.")
    if callback is not None:
        raise NotImplementedError("minimize_ipopt: `callback` is not supported by IPOPT "
                                  "(as in cyipopt).")
    if options is not None and not isinstance(options, dict):
        raise ValueError(f"minimize_ipopt: `options` must be a dict; got "
                         f"{type(options).__name__}.")
    x0 = np.atleast_1d(np.asarray(x0))
    if x0.dtype.kind not in "biuf":
        raise ValueError(f"minimize_ipopt: `x0` must be a real numeric array; got dtype "
                         f"{x0.dtype}.")
    x0 = x0.astype(np.float64).reshape(-1)
    if tol is not None and not (np.ndim(tol) == 0 and float(tol) > 0):
        raise ValueError(f"minimize_ipopt: `tol` must be a positive number; got {tol!r}.")
    f = (lambda x, *a: fun(x, *a, **kwargs)) if kwargs else fun
    lb, ub = _variable_bounds(bounds, x0.size)
    problem = _Problem(f, arguments(tuple(args)), _blocks(constraints, x0, "minimize_ipopt"),
                       x0)
    nlp = cyipopt.Problem(n=x0.size, m=problem.cl.size, problem_obj=problem, lb=_finite(lb),
                          ub=_finite(ub), cl=_finite(problem.cl), cu=_finite(problem.cu))
    opts = dict(options or {})
    opts.pop("eps", None)  # finite-difference steps: none taken here
    for old, new in (("disp", "print_level"), ("maxiter", "max_iter")):
        if old in opts:
            opts.setdefault(new, opts.pop(old))
    opts["print_level"] = int(opts.get("print_level", 0))
    opts.setdefault("tol", float(tol) if tol is not None else 1e-8)
    opts.setdefault("mu_strategy", "adaptive")
    opts.setdefault("sb", "yes")  # no banner
    for key, value in opts.items():
        try:
            nlp.add_option(key, value)
        except TypeError as e:
            raise TypeError(f"minimize_ipopt: invalid option for IPOPT: {key}={value!r} "
                            f"({e}).") from None
    x, info = nlp.solve(x0)
    message = info["status_msg"]
    return _optimize.OptimizeResult(
        x=x, success=info["status"] == 0, status=info["status"],
        message=message.decode() if isinstance(message, bytes) else message,
        fun=info["obj_val"], info=info, nfev=problem.nfev, njev=problem.njev, nit=problem.nit,
        jac_info=problem.jac.info if problem.jac is not None else None,
        hess_info=problem.hess.info)
