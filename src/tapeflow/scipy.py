"""SciPy's solvers with exact derivatives from tapeflow, traced once per solve.

Each adapter takes a plain tapeflow function of NumPy arrays (the function SciPy would
call, written with `tf` ops), traces it and its derivative once with
`tapeflow.function`, and hands SciPy callables that replay the traces at every
iterate. The results are SciPy's own objects (`res.x`, `res.jac`, `res.njev`, ...).

- `minimize`: the exact gradient (``jac=True``: value and gradient from one pass);
  Hessian-vector products by forward-over-reverse for the methods that take `hessp`
  (Newton-CG, trust-ncg, trust-krylov, trust-constr), the Hessian for dogleg and
  trust-exact.
- `least_squares`, `root`: the exact Jacobian from `tapeflow.SparseJacobian`, as a
  scipy.sparse matrix when its pattern is sparse (least_squares then solves with LSMR)
  and dense otherwise; `jac_sparsity=` is passed on to it as a checked pattern.
- `solve_ivp`: the exact Jacobian in y of ``fun(t, y)`` for the implicit methods (BDF,
  Radau, LSODA), sparse for large systems with sparse patterns (BDF and Radau take
  scipy.sparse Jacobians and factor them sparsely).

SciPy is the `scipy` extra: ``pip install 'tapeflow[scipy]'``.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import scipy.integrate as _integrate
    import scipy.optimize as _optimize
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.scipy needs SciPy: pip install 'tapeflow[scipy]'") from _missing

from . import scipy_implicit
from .graph import function
from . import scipy_ode  # solve_ivp's differentiable path
# the errors of differentiating an unconverged solution, as tapeflow.scipy's names
from .scipy_implicit import ConvergenceError, ConvergenceWarning, differentiable  # noqa: F401
from .sparse_jacobians import SparseJacobian, arguments, sparse_pays
from .scipy_sparse_nlp import as_float64, iterate, minimize_ipopt, trust_constr_arguments
from .transforms import hessian, hvp, value_and_grad

__all__ = ["minimize", "least_squares", "root", "solve_ivp", "minimize_ipopt",
           "ConvergenceError", "ConvergenceWarning"]

_HESSP_METHODS = {"newton-cg", "trust-ncg", "trust-krylov", "trust-constr"}
_HESS_METHODS = {"dogleg", "trust-exact"}
_SPARSE_JAC_METHODS = {"bdf", "radau"}


def minimize(fun: Callable, x0: Any, args: tuple = (), method: str | None = None,
             implicit: bool | str = True, **kwargs: Any) -> Any:
    """`scipy.optimize.minimize` of a scalar tapeflow function, with its exact gradient
    and (for the Newton methods) exact Hessian-vector products or Hessian.

    When `args` holds tapeflow tensors or variables, `res.x` is a tensor differentiable in
    them (tapeflow/scipy_implicit.py: the gradient's root, its derivative solved by CG on
    Hessian-vector products); differentiating a solution that did not converge warns, or
    raises with ``implicit="strict"``; ``implicit=False`` gives SciPy's array.

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> rosen = lambda x: tf.reduce_sum(100. * (x[1:] - x[:-1] ** 2) ** 2 + (1. - x[:-1]) ** 2)
        >>> res = tfs.minimize(rosen, np.zeros(5), method="trust-ncg")
        >>> bool(res.success), np.round(res.x, 4).tolist()
        (True, [1.0, 1.0, 1.0, 1.0, 1.0])
        >>> c = tf.constant(3.0, tf.float64)  # argmin (x - c) ** 2 + x ** 2 is c / 2
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(c)
        ...     x = tfs.minimize(lambda x, c: tf.reduce_sum((x - c) ** 2 + x ** 2), np.zeros(1),
        ...                      args=(c,)).x
        >>> np.round(x.numpy(), 6).tolist(), round(float(tape.gradient(x, c)), 6)
        ([1.5], 0.5)
    """
    for given in ("jac", "hess", "hessp"):
        if given in kwargs:
            raise TypeError(f"tapeflow.scipy.minimize computes `{given}` itself; remove it "
                            "(or call scipy.optimize.minimize directly).")
    if differentiable(args, implicit, "tapeflow.scipy.minimize"):
        return scipy_implicit.minimize(fun, x0, args, method, kwargs, implicit, _minimize)
    return _minimize(fun, x0, args, method, kwargs)


def _minimize(fun: Callable, x0: Any, args: tuple, method: str | None, kwargs: dict) -> Any:
    """minimize's SciPy call: SciPy's result, `res.x` SciPy's array."""
    targs = arguments(args)
    both = function(lambda x, *a: value_and_grad(lambda y: fun(y, *a))(x))

    def value_and_gradient(x: np.ndarray) -> tuple:
        v, g = both(iterate(x), *targs)
        return float(as_float64(v)), as_float64(g).reshape(np.shape(x))

    name = (method or "").lower()
    if name in _HESSP_METHODS:
        product = function(lambda x, p, *a: hvp(lambda y: fun(y, *a), (x,), (p,)))
        kwargs["hessp"] = lambda x, p: as_float64(product(iterate(x), iterate(p), *targs)).reshape(np.shape(x))
    elif name in _HESS_METHODS:
        full = function(lambda x, *a: hessian(lambda y: fun(y, *a))(x))
        kwargs["hess"] = lambda x: as_float64(full(iterate(x), *targs)).reshape(np.size(x), np.size(x))
    if name == "trust-constr":  # sparse Lagrangian Hessians and constraint Jacobians
        kwargs = trust_constr_arguments(fun, x0, args, kwargs)
    return _optimize.minimize(value_and_gradient, np.asarray(x0, np.float64), method=method,
                              jac=True, **kwargs)


class _Jacobian:
    """SciPy's `jac` callable: the exact Jacobian from one SparseJacobian, sparse or dense
    as decided at the first call (SciPy wants one kind throughout)."""

    def __init__(self, fun: Callable, sparsity: Any, allow_sparse: bool, swap: bool = False,
                 args: tuple = ()) -> None:
        self.swap = swap  # solve_ivp's fun(t, y): the Jacobian is in the second argument
        f = (lambda y, t, *a: fun(t, y, *a)) if swap else fun
        self.jac = SparseJacobian(f, sparsity)
        self.allow_sparse = allow_sparse
        self.args = args
        self.sparse: bool | None = None

    def __call__(self, *call: Any) -> Any:
        if self.swap:
            t, y = call[0], call[1]
            J = self.jac(np.array(y, np.float64), np.float64(t), *self.args)
        else:
            J = self.jac(np.array(call[0], np.float64), *self.args)
        if self.sparse is None:
            self.sparse = bool(self.allow_sparse and sparse_pays(J.shape, J.nnz))
        return J if self.sparse else J.toarray()

    @property
    def info(self) -> Any:
        return self.jac.info


def _vector_fun(fun: Callable, targs: tuple, swap: bool = False) -> Callable:
    """SciPy's `fun`: the traced function's output as a float64 vector, whose shape must
    stay the one of the first call (a Jacobian of changing shape is no Jacobian)."""
    traced = function(fun)
    first: list = []

    def call(*given: Any) -> np.ndarray:
        ins = (iterate(given[0]), iterate(given[1])) if swap else (iterate(given[0]),)
        out = as_float64(traced(*ins, *targs))
        if not first:
            first.append(out.shape)
        elif out.shape != first[0]:
            raise ValueError(f"tapeflow.scipy: `fun` returned shape {out.shape} here but "
                             f"{first[0]} at the first call; SciPy's solvers need an output "
                             "of one shape (check data-dependent indexing such as boolean "
                             "masks).")
        return out.reshape(-1)

    return call


def least_squares(fun: Callable, x0: Any, args: tuple = (), jac_sparsity: Any = None,
                  implicit: bool | str = True, **kwargs: Any) -> Any:
    """`scipy.optimize.least_squares` of a tapeflow residual function, with its exact
    Jacobian: sparse (solved with LSMR) when its pattern, detected from the program or
    given as `jac_sparsity` (checked), is sparse; dense otherwise and for method="lm".

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> t = np.linspace(0., 3., 20); y = 2. * np.exp(-1.5 * t)
        >>> res = tfs.least_squares(lambda p: p[0] * tf.exp(-p[1] * t) - y, np.ones(2))
        >>> np.round(res.x, 6).tolist()
        [2.0, 1.5]

    When `args` holds tapeflow tensors or variables, `res.x` is a tensor differentiable in
    them (tapeflow/scipy_implicit.py: the normal equations J^T r = 0, with the loss's
    weights, or a square system's residuals = 0); `implicit` as for `minimize`.
    """
    if "jac" in kwargs:
        raise TypeError("tapeflow.scipy.least_squares computes `jac` itself; remove it.")
    if differentiable(args, implicit, "tapeflow.scipy.least_squares"):
        return scipy_implicit.least_squares(fun, x0, args, jac_sparsity, kwargs, implicit,
                                            _least_squares)
    return _least_squares(fun, x0, args, jac_sparsity, kwargs)


def _least_squares(fun: Callable, x0: Any, args: tuple, jac_sparsity: Any,
                   kwargs: dict) -> Any:
    """least_squares's SciPy call: SciPy's result, `res.x` SciPy's array."""
    targs = arguments(args)
    jac = _Jacobian(fun, jac_sparsity, kwargs.get("method", "trf") != "lm", args=targs)
    res = _optimize.least_squares(_vector_fun(fun, targs), np.asarray(x0, np.float64),
                                  jac=jac, **kwargs)
    res.jac_info = jac.info  # how the Jacobian was computed (mode, colors)
    return res


def root(fun: Callable, x0: Any, args: tuple = (), method: str = "hybr",
         implicit: bool | str = True, **kwargs: Any) -> Any:
    """`scipy.optimize.root` of a tapeflow function, with its exact (dense) Jacobian for
    the methods that use one (hybr, lm); computed through its sparsity pattern, so a
    banded system costs a few products.

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> res = tfs.root(lambda x: x ** 3 + x - 2., np.zeros(3))
        >>> np.round(res.x, 8).tolist()
        [1.0, 1.0, 1.0]

    When `args` holds tapeflow tensors or variables, `res.x` is a tensor differentiable in
    them (tapeflow/scipy_implicit.py: the root of `fun`, its derivative solved by GMRES on
    Jacobian-vector products); `implicit` as for `minimize`.
    """
    if "jac" in kwargs:
        raise TypeError("tapeflow.scipy.root computes `jac` itself; remove it.")
    if differentiable(args, implicit, "tapeflow.scipy.root"):
        return scipy_implicit.root(fun, x0, args, method, kwargs, implicit, _root)
    return _root(fun, x0, args, method, kwargs)


def _root(fun: Callable, x0: Any, args: tuple, method: str, kwargs: dict) -> Any:
    """root's SciPy call: SciPy's result, `res.x` SciPy's array."""
    targs = arguments(args)
    if method in ("hybr", "lm"):
        kwargs["jac"] = _Jacobian(fun, None, allow_sparse=False, args=targs)
    return _optimize.root(_vector_fun(fun, targs), np.asarray(x0, np.float64), method=method,
                          **kwargs)


def solve_ivp(fun: Callable, t_span: Any, y0: Any, method: str = "BDF", args: tuple = (),
              jac_sparsity: Any = None, sensitivity: str = "auto", **options: Any) -> Any:
    """`scipy.integrate.solve_ivp` of ``dy/dt = fun(t, y)`` written with tapeflow ops,
    with the exact Jacobian in y for the implicit methods (BDF, Radau, LSODA): a
    scipy.sparse matrix for large sparse systems under BDF and Radau. `t` reaches `fun`
    as a float64 scalar tensor. When y0, a leaf of `args`, `t_eval` or `t_span[0]` is a
    tapeflow tensor or variable, the solve is differentiable (`tapeflow.scipy_ode.solve_ivp`): `t_eval` is
    required, `sol.y` is a tensor, and `sensitivity` ("auto", "forward", "adjoint")
    chooses how reverse mode computes (docs/ode-sensitivities.md).

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> res = tfs.solve_ivp(lambda t, y: -50. * (y - tf.cos(t)), (0., 1.), np.zeros(1))
        >>> bool(res.success), round(float(res.y[0, -1]), 3)
        (True, 0.557)
        >>> k = tf.constant(2.0, tf.float64)
        >>> g = tf.grad(lambda k: tfs.solve_ivp(lambda t, y, k: -k * y, (0., 1.), np.ones(1),
        ...     t_eval=[1.], args=(k,), rtol=1e-10, atol=1e-12).y[0, 0])(k)  # d/dk e^-k
        >>> round(float(g), 8)
        -0.13533528
    """
    if scipy_ode.differentiable(y0, args) or scipy_ode.times_move(t_span,
                                                                   options.get("t_eval")):
        return scipy_ode.solve_ivp(fun, t_span, y0, method=method, args=args,
                                   jac_sparsity=jac_sparsity, sensitivity=sensitivity,
                                   **options)
    if "jac" in options:
        raise TypeError("tapeflow.scipy.solve_ivp computes `jac` itself; remove it.")
    targs = arguments(args)
    if method.lower() in _SPARSE_JAC_METHODS | {"lsoda"}:
        options["jac"] = _Jacobian(fun, jac_sparsity, method.lower() in _SPARSE_JAC_METHODS,
                                   swap=True, args=targs)
    return _integrate.solve_ivp(_vector_fun(fun, targs, swap=True), t_span,
                                np.asarray(y0, np.float64), method=method, **options)
