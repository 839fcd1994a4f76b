"""Solutions of tapeflow.scipy's solvers differentiable in their `args`.

When `args` holds tapeflow tensors or variables, `minimize`, `root` and `least_squares`
(tapeflow/scipy.py) return `res.x` as a tensor connected to them through the conditions
the solution satisfies (NOTE(implicit) in implicit.py: a `custom_root`, whose solver is
the SciPy call, run unrecorded at every call, every replay of a traced function and once
per example under vmap):

- `minimize`: the gradient of `fun` in x is zero; its linearization is the Hessian,
  solved by conjugate gradients on Hessian-vector products (GMRES where CG fails: an
  indefinite Hessian); under `constraints` or `bounds`, the KKT conditions
  (scipy_kkt.py), GMRES;
- `root`: `fun` is zero; Jacobian-vector products, GMRES;
- `least_squares`: the gradient of the cost is zero (the normal equations J^T r = 0,
  with the robust loss's weights), CG; a square system with the linear loss and no
  bounds: the residuals are zero, GMRES; under bounds, the KKT conditions of the cost's
  minimum (scipy_kkt.py).

Every linear system is solved matrix-free (scipy.sparse.linalg on the products tapeflow
computes). The other fields of SciPy's OptimizeResult are SciPy's own (those of the call
that ran: under vmap, the last example's; in a traced function, the traced call's).

A derivative of a solution that does not satisfy its conditions is no derivative: a
solve that did not converge (`res.success` False), a constrained or bounded minimum where the KKT conditions fail or a constraint is weakly active, or
a square least-squares system solved with residuals left is reported whenever it is
differentiated: `implicit="warn"` (the default, `implicit=True`) warns
(`ConvergenceWarning`), `implicit="strict"` raises `ConvergenceError`, and
``implicit=False`` returns `res.x` as SciPy's array, connected to nothing.
"""

from __future__ import annotations

import warnings
from typing import Any, Callable

import numpy as np

try:
    import scipy.sparse.linalg as _linalg
    from scipy.optimize import OptimizeResult
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.scipy needs SciPy: pip install 'tapeflow[scipy]'") from _missing

from .core import no_recorders
from .errors import InvalidArgumentError
from .implicit import bind_root
from .scipy_kkt import WHY as KKT_WHY
from .scipy_kkt import bound_arrays, minimize_kkt
from .ops.elementwise import sqrt, where
from .ops.reduction import reduce_sum
from .ops.shape import reshape
from .ops.transcendental import atan, log
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, TensorBase

__all__ = ["ConvergenceError", "ConvergenceWarning", "differentiable", "minimize", "root",
           "least_squares"]

# Relative residual the derivative's linear systems are solved to.
TOLERANCE = 1e-10
# A square least-squares system's solution is a root when its residuals are this small,
# relative to those at the initial guess (at least 1).
ROOT_TOLERANCE = 1e-6
_OK, _NOT_CONVERGED, _NOT_A_ROOT = 0, 1, 3
_WHY = {
    _NOT_CONVERGED: "the solver did not converge (res.success is False)",
    _NOT_A_ROOT: "the square system's solution leaves residuals: it is no root of them",
    **KKT_WHY,
}


class ConvergenceError(RuntimeError):
    """A solution that does not satisfy its optimality conditions was differentiated under
    ``implicit="strict"`` (tapeflow.scipy).

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> def fit(c):  # one BFGS step: no minimum yet
        ...     return tfs.minimize(lambda x, c: tf.reduce_sum((x - c) ** 4), np.zeros(2),
        ...                         args=(c,), options={"maxiter": 1}, implicit="strict").x
        >>> try:
        ...     tf.jacfwd(fit)(tf.constant(3.0, tf.float64))
        ... except tfs.ConvergenceError:
        ...     print("not converged")
        not converged
    """


class ConvergenceWarning(RuntimeWarning):
    """A solution that does not satisfy its optimality conditions was differentiated
    (tapeflow.scipy, ``implicit="warn"``): its derivative is that of conditions that do
    not hold there.

    Example:
        >>> import warnings, numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> def fit(c):
        ...     return tfs.minimize(lambda x, c: tf.reduce_sum((x - c) ** 4), np.zeros(2),
        ...                         args=(c,), options={"maxiter": 1}).x
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     _ = tf.jacfwd(fit)(tf.constant(3.0, tf.float64))
        >>> caught[0].category.__name__
        'ConvergenceWarning'
    """


def _mode(implicit: Any, who: str) -> str | None:
    if implicit is True or implicit == "warn":
        return "warn"
    if implicit == "strict":
        return "strict"
    if implicit is False or implicit is None:
        return None
    raise InvalidArgumentError(f"{who}: `implicit` must be True or 'warn' (the default), "
                               f"'strict' or False; got {implicit!r}.")


def differentiable(args: tuple, implicit: Any, who: str) -> bool:
    """Whether a call's solution is made differentiable: `args` holds a tapeflow tensor or
    variable and `implicit` is not False (an invalid `implicit` is an error).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.scipy_implicit import differentiable
        >>> differentiable((tf.constant(1.0), 2), True, "f")
        True
        >>> differentiable((np.ones(2),), True, "f")  # arrays only: SciPy's array, as before
        False
    """
    mode = _mode(implicit, who)
    return mode is not None and any(isinstance(a, TensorBase) for a in _tuple(args))


def _report(mode: str, who: str, why: str) -> None:
    message = (f"{who}: differentiating a solution where {why}; its derivative is that of "
               "optimality conditions that do not hold there.")
    if mode == "strict":
        raise ConvergenceError(message)
    warnings.warn(message + " (implicit='strict' makes this an error.)", ConvergenceWarning,
                  stacklevel=2)


class _Check:
    """Run before every solve of a derivative of the solution (implicit.bind_root's
    `check`), on the solve's status code."""

    def __init__(self, mode: str, who: str) -> None:
        self.mode, self.who = mode, who

    def __eq__(self, other: Any) -> bool:  # two traces' checks agree (graph/polymorphic.py)
        return type(other) is _Check and (self.mode, self.who) == (other.mode, other.who)

    def __hash__(self) -> int:
        return hash((self.mode, self.who))

    def __call__(self, status: Any) -> None:
        code = int(np.asarray(status))
        if code != _OK:
            _report(self.mode, self.who, _WHY[code])


def _tangent_solver(symmetric: bool, mode: str, who: str) -> Callable:
    """The derivative's linear solve, matrix-free: CG for a symmetric map (GMRES if it does
    not converge), GMRES otherwise; one that fails is reported as the solution is."""
    def tangent_solve(g: Callable, y: Any) -> Tensor:
        shape, dtype = tuple(y.shape), y.numpy().dtype
        b = np.asarray(y.numpy(), np.float64).ravel()
        n = b.size
        norm = np.linalg.norm(b)
        if n == 0 or norm == 0:
            return Tensor(np.zeros(shape, dtype))

        def product(v: np.ndarray) -> np.ndarray:
            out = g(Tensor(np.asarray(v, dtype).reshape(shape)))
            return np.asarray(out.numpy(), np.float64).ravel()

        op = _linalg.LinearOperator((n, n), matvec=product, dtype=np.float64)
        x = None
        if symmetric:
            x, _ = _linalg.cg(op, b, rtol=TOLERANCE, atol=0.0, maxiter=max(10 * n, 100))
            if np.linalg.norm(product(x) - b) > 1e3 * TOLERANCE * norm:
                x = None
        if x is None:
            x, _ = _linalg.gmres(op, b, rtol=TOLERANCE, atol=0.0, restart=min(n, 50),
                                 maxiter=max(n, 100))
            if np.linalg.norm(product(x) - b) > 1e3 * TOLERANCE * norm:
                _report(mode, who, "the linear system of its derivative (the Hessian or "
                        "Jacobian at the solution) could not be solved: it is singular or "
                        "ill-conditioned there")
        return Tensor(np.asarray(x, dtype).reshape(shape))

    return tangent_solve


def _result(ran: dict, x: Tensor) -> Any:
    """SciPy's OptimizeResult of the solve that ran (none under vmap of an empty batch)
    with `x` the differentiable solution."""
    out = OptimizeResult(ran.get("res", {}))
    out.x = x
    return out


def _flat_guess(x0: Any) -> Tensor:
    value = np.asarray(x0.numpy() if isinstance(x0, TensorBase) else x0, np.float64)
    return Tensor(value.ravel())


def _tuple(args: Any) -> tuple:
    return args if isinstance(args, tuple) else (args,)  # as SciPy takes a lone argument


def minimize(fun: Callable, x0: Any, args: tuple, method: Any, kwargs: dict, implicit: Any,
             run: Callable) -> Any:
    """tapeflow.scipy.minimize with `res.x` differentiable in the tensors of `args`:
    ``run(fun, x0, args, method, kwargs)`` is the SciPy call (scipy.py).

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> def fit(lam):  # ridge in one unknown: argmin (x - 1) ** 2 + lam x ** 2 = 1 / (1 + lam)
        ...     return tfs.minimize(lambda x, lam: tf.reduce_sum((x - 1.) ** 2 + lam * x ** 2),
        ...                         np.zeros(1), args=(lam,)).x[0]
        >>> round(float(tf.grad(fit)(tf.constant(1.0, tf.float64))), 6)  # -1 / (1 + lam) ** 2
        -0.25
    """
    who = "tapeflow.scipy.minimize"
    mode = _mode(implicit, who)
    if kwargs.get("constraints") or kwargs.get("bounds") is not None:
        targs = _tuple(args)
        return minimize_kkt(
            lambda x: (_scalar(fun(x, *targs), who), []), x0, kwargs,
            bound_arrays(kwargs.get("bounds"), _flat_guess(x0).shape[0], who),
            lambda at, y, options: run(lambda v: at(v)[0], y, (), method, options), who,
            _tangent_solver(False, mode, who), _Check(mode, who), _result)
    guess, args = _flat_guess(x0), _tuple(args)
    ran: dict = {}

    def gradient_and_value(xs: list) -> tuple:
        (x,) = xs
        with GradientTape() as tape:
            tape.watch(x)
            value = fun(x, *args)
        value = _scalar(value, who)
        grad = tape.gradient(value, x, unconnected_gradients=UnconnectedGradients.ZERO)
        return grad, [value]

    def solve(gradient: Callable, x: Tensor, objective: Callable) -> tuple:
        res = run(lambda y: objective(y)[0], x.numpy(), (), method, dict(kwargs))
        ran["res"] = res
        status = _OK if res.success else _NOT_CONVERGED
        return Tensor(np.asarray(res.x, np.float64).reshape(x.shape)), np.int32(status)

    outs, _ = bind_root(gradient_and_value, [guess], None, solve,
                        _tangent_solver(True, mode, who), has_aux=True, extra=1,
                        check=_Check(mode, who))
    return _result(ran, outs[0])


def _scalar(value: Any, who: str) -> Tensor:
    t = value if isinstance(value, TensorBase) else Tensor(np.asarray(value, np.float64))
    if t.shape.rank != 0 and t.shape.num_elements() != 1:
        raise InvalidArgumentError(f"{who}: `fun` must return a scalar; got shape "
                                   f"{tuple(t.shape)}.")
    return reshape(t, [])


def root(fun: Callable, x0: Any, args: tuple, method: str, kwargs: dict, implicit: Any,
         run: Callable) -> Any:
    """tapeflow.scipy.root with `res.x` differentiable in the tensors of `args`:
    ``run(fun, x0, args, method, kwargs)`` is the SciPy call (scipy.py).

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> def solve(a):  # x ** 3 + x = a; at a = 2, x = 1 and dx/da = 1 / (3 x ** 2 + 1)
        ...     return tfs.root(lambda x, a: x ** 3 + x - a, np.zeros(1), args=(a,)).x[0]
        >>> round(float(tf.grad(solve)(tf.constant(2.0, tf.float64))), 6)
        0.25
    """
    who = "tapeflow.scipy.root"
    mode = _mode(implicit, who)
    guess, args = _flat_guess(x0), _tuple(args)
    ran: dict = {}

    def residual(xs: list) -> Tensor:
        (x,) = xs
        r = fun(x, *args)
        size, n = int(np.size(r._value if isinstance(r, TensorBase) else r)), int(x.shape[0])
        if size != n:
            raise InvalidArgumentError(f"{who}: `fun` returned {size} values for {n} unknowns; "
                                       "a root is of a square system.")
        return reshape(r, list(x.shape))

    def solve(f: Callable, x: Tensor) -> tuple:
        res = run(f, x.numpy(), (), method, dict(kwargs))
        ran["res"] = res
        return (Tensor(np.asarray(res.x, np.float64).reshape(x.shape)),
                np.int32(_OK if res.success else _NOT_CONVERGED))

    outs, _ = bind_root(residual, [guess], None, solve, _tangent_solver(False, mode, who),
                        has_aux=True, check=_Check(mode, who))
    return _result(ran, outs[0])


def _rho(z: Tensor, loss: str, who: str) -> Tensor:
    """SciPy's robust losses rho(z) of z = (r / f_scale) ** 2."""
    if loss == "linear":
        return z
    if loss == "soft_l1":
        return 2.0 * (sqrt(1.0 + z) - 1.0)
    if loss == "huber":
        return where(z <= 1.0, z, 2.0 * sqrt(where(z <= 1.0, 1.0, z)) - 1.0)
    if loss == "cauchy":
        return log(1.0 + z)
    if loss == "arctan":
        return atan(z)
    raise InvalidArgumentError(f"{who}: differentiating the solution needs the loss as "
                               f"tapeflow ops: one of 'linear', 'soft_l1', 'huber', 'cauchy', "
                               f"'arctan'; got {loss!r} (implicit=False gives SciPy's array).")


def least_squares(fun: Callable, x0: Any, args: tuple, jac_sparsity: Any, kwargs: dict,
                  implicit: Any, run: Callable) -> Any:
    """tapeflow.scipy.least_squares with `res.x` differentiable in the tensors of `args`:
    ``run(fun, x0, args, jac_sparsity, kwargs)`` is the SciPy call (scipy.py).

    Example:
        >>> import numpy as np, tapeflow as tf, tapeflow.scipy as tfs
        >>> t = np.array([1., 2., 3.])  # fit y = p t: p = sum(t y) / sum(t ** 2)
        >>> y = tf.constant([2., 4., 6.1], tf.float64)
        >>> fit = lambda y: tfs.least_squares(lambda p, y: p * t - y, np.ones(1), args=(y,)).x
        >>> np.round(tf.jacrev(fit)(y).numpy(), 6).tolist()  # t / sum(t ** 2)
        [[0.071429, 0.142857, 0.214286]]
    """
    who = "tapeflow.scipy.least_squares"
    mode = _mode(implicit, who)
    loss = kwargs.get("loss", "linear")
    if callable(loss):
        _rho(Tensor(0.0), "a callable", who)
    f_scale = float(kwargs.get("f_scale", 1.0))
    if np.ndim(np.asarray(x0.numpy() if isinstance(x0, TensorBase) else x0)) > 1:
        raise InvalidArgumentError(f"{who}: `x0` must have at most 1 dimension (as SciPy's).")
    guess, args = _flat_guess(x0), _tuple(args)
    bounds = kwargs.get("bounds")
    if bounds is not None and hasattr(bounds, "lb"):
        bounds = (bounds.lb, bounds.ub)
    bounded = bounds is not None and not all(np.all(np.isinf(np.asarray(b, np.float64)))
                                             for b in bounds)
    with no_recorders():  # the number of residuals, read off one evaluation
        r0 = fun(guess, *args)
        m = int(np.size(r0._value if isinstance(r0, TensorBase) else r0))
    square = m == int(np.size(guess._value)) and loss == "linear" and not bounded

    def cost(x: Tensor) -> tuple:
        r = reshape(fun(x, *args), [-1])
        return 0.5 * f_scale ** 2 * reduce_sum(_rho((r / f_scale) ** 2, loss, who)), r

    if bounded:  # the KKT conditions of the cost's minimum in the bounds (scipy_kkt.py)
        n = int(np.size(guess._value))
        lo, hi = (np.broadcast_to(np.asarray(b, np.float64), (n,)).copy() for b in bounds)
        return minimize_kkt(
            lambda x: (lambda c, r: (c, [r]))(*cost(x)), guess, kwargs, (lo, hi),
            lambda at, y, options: run(lambda v: at(v)[2], y, (), jac_sparsity, options),
            who, _tangent_solver(False, mode, who), _Check(mode, who), _result)
    ran: dict = {}

    def condition(xs: list) -> tuple:
        (x,) = xs
        if square:
            r = reshape(fun(x, *args), [-1])
            return r, [r]
        with GradientTape() as tape:
            tape.watch(x)
            value, r = cost(x)
        grad = tape.gradient(value, x, unconnected_gradients=UnconnectedGradients.ZERO)
        return grad, [r]

    def solve(f: Callable, x: Tensor, residuals: Callable) -> tuple:
        res = run(lambda y: residuals(y)[0], x.numpy(), (), jac_sparsity, dict(kwargs))
        ran["res"] = res
        status = _OK if res.success else _NOT_CONVERGED
        if status == _OK and square:
            start = np.linalg.norm(residuals(x)[0].numpy())
            if np.linalg.norm(res.fun) > ROOT_TOLERANCE * max(1.0, start):
                status = _NOT_A_ROOT
        return Tensor(np.asarray(res.x, np.float64).reshape(x.shape)), np.int32(status)

    outs, _ = bind_root(condition, [guess], None, solve,
                        _tangent_solver(not square, mode, who), has_aux=True, extra=1,
                        check=_Check(mode, who))
    return _result(ran, outs[0])
