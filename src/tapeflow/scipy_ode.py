"""solve_ivp differentiable with respect to y0 and the tensors of `args`.

`solve_ivp` binds one primitive, `solve_ivp`, whose impl is SciPy's solve of the system
(ode_systems.System) at `t_eval` and whose rules are the two sensitivity methods:

- forward mode (the JVP rule) solves the forward-sensitivity system, the state and its
  tangent columns ``s' = J_y s + J_p p'`` in one SciPy solve (the `solve_ivp` primitive
  again, on the Tangent system: so tangents of tangents, second derivatives, need no
  more code). Under jacfwd or vmap of JVPs the batching rule makes the columns of one
  solve, never a loop;
- reverse mode (the VJP rule) binds `solve_ivp_vjp`: the adjoint method (a backward solve
  of ``lambda' = -J_y^T lambda`` with the forward solve's dense output, each `t_eval`
  point adding its cotangent; ode_systems.adjoint_vjp) or, when the forward-sensitivity
  system is small against the cotangent rows asked for at once, a sensitivity column per
  input element contracted with them. `sensitivity=` chooses ("forward", "adjoint", or
  "auto": NOTE(ode-auto)). Either way it computes the cotangents of every differentiable
  input, so a gradient does not depend on what a tape watches. Its own derivatives
  (second order) are those of the forward formulation.

Both primitives are host callbacks (SciPy is Python): a traced function replays them
with NumPy at every call, and they are never compiled or saved in a SavedModel.

NOTE(ode-auto): `tf.jacobian(mode="auto")` takes forward mode when the inputs are fewer
than the outputs. A reverse-mode request here asks for k cotangent rows at once (1 for a
gradient; all of them under jacrev's vmap, which the batching rule folds into one call).
Forward sensitivities cost one solve of the state and a column per differentiated input
element, n (1 + n_in) values, whatever k is. The adjoint costs the forward solve again
and a backward pass of k rows: under BDF the discrete adjoint of a recorded solve
(NOTE(ode-discrete-adjoint)), under the other methods a backward solve of k (n +
parameters) values restarted at every output time. "auto" takes forward sensitivities
when ``n (1 + n_in) <= k * AUTO_FORWARD_STATES[kind]``, the kind being "implicit" (BDF,
Radau, LSODA: the Newton matrix of the sensitivity system grows with it) or "explicit",
the adjoint otherwise. The limits are the measured crossovers of
benchmarks/ode_sensitivity.py (a gradient, k = 1): with BDF, forward sensitivities were
2x faster at 528 values and the adjoint 2x faster at 1,152 (14x at 5,472); with RK45,
forward sensitivities were 2x faster at 2,080 and the adjoint 1.4x at 32,896.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

try:
    import scipy.optimize as _optimize
except ImportError as _missing:  # an optional extra
    raise ImportError("tapeflow.scipy_ode needs SciPy: pip install 'tapeflow[scipy]'") \
        from _missing

from . import dtypes as _dt
from . import nest
from .batching import by_loop, vmap
from .catalog import (CALLS_USER_CODE, HOST_CALLBACK, STATEFUL, Codec,
                      define)
from .core import Primitive, Zero, bind, no_recorders, substack
from .custom import VariableReads
from .errors import InvalidArgumentError
from .ode_systems import IMPLICIT, Solver, System, Tangent, adjoint_vjp
from .ops.convert import as_tensor
from .ops.einsum import einsum
from .ops.elementwise import cast
from .ops.shape import broadcast_to, reshape, stack, stop_gradient
from .ops.structural import dense_deps, instantiate, move_axis, shape_of
from .tensor import Tensor, TensorBase, Variable, convert_to_tensor
from .transforms import jvp, vjp

__all__ = ["solve_ivp", "differentiable", "times_move", "OdeResult"]

SENSITIVITIES = ("auto", "forward", "adjoint")
AUTO_FORWARD_STATES = {"implicit": 1024, "explicit": 8192}
# sensitivity="forward" in reverse mode refuses a sensitivity system larger than this (its
# basis and solve would exhaust memory where the adjoint needs two solves of the state).
FORWARD_STATES_LIMIT = 1 << 26
_INFO = 4   # status, nfev, njev, nlu; then SciPy's message, one byte an entry
_MESSAGE = 240


def _info(res: Any) -> np.ndarray:
    msg = str(res.message).encode("utf-8", "replace")[:_MESSAGE]
    out = np.zeros(_INFO + _MESSAGE, np.int64)
    out[:_INFO] = [res.status, res.nfev, res.njev, res.nlu]
    out[_INFO:_INFO + len(msg)] = np.frombuffer(msg, np.uint8)
    return out


# ------------------------------------------------------------------------ the solve
def _solve_impl(*arrays: np.ndarray, system: System) -> list:
    system.check(arrays)
    nb = len(system.pieces)
    res = system.solve(list(arrays[:nb]), list(arrays[nb:]))
    T = len(system.solver.t_eval)
    Y = np.full((system.n, T), np.nan)  # a failed solve's missing times stay NaN
    if res.y is not None and res.y.size:
        Y[:, :res.y.shape[1]] = res.y
    outs, at = [], 0
    for shape, size in zip(system.pieces, system.sizes, strict=True):
        outs.append(Y[at:at + size].reshape(shape + (T,)))
        at += size
    return outs + [_info(res)]


# Forward mode: the tangent system along the one direction given (Zero tangents of
# parameters leave them fixed; a state's Zero tangent starts its column at 0).
def _solve_jvp(tangents: tuple, outs: tuple, primals: tuple, system: System) -> tuple:
    nb = len(system.pieces)
    moving = tuple(j for j, d in enumerate(system.diff)
                   if d and type(tangents[nb + j]) is not Zero)
    if not moving and all(type(t) is Zero for t in tangents[:nb]):
        return tuple(Zero.like(o) for o in outs)
    tp = [reshape(instantiate(t), (1,) + shape)
          for t, shape in zip(tangents[:nb], system.pieces, strict=True)]
    tq = [reshape(tangents[nb + j], (1,) + system.params[j][0]) for j in moving]
    res = bind(solve_ivp_p, *primals[:nb], *tp, *primals[nb:], *tq,
               system=system.tangent(1, moving))
    return tuple(reshape(res[nb + i], shape_of(outs[i])) for i in range(nb)) + \
        (Zero.like(outs[-1]),)


# Reverse mode: solve_ivp_vjp with one cotangent row. It computes the cotangents of every
# differentiable input, whichever a tape needs: the solves (their sizes, so their steps)
# are then the same whatever is watched, and so are the gradients, to the last bit.
def _solve_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, system: System) -> tuple:
    nb = len(system.pieces)
    wanted = tuple(range(nb)) + tuple(nb + j for j, d in enumerate(system.diff) if d)
    if all(type(c) is Zero for c in cts[:nb]):
        return (None,) * len(primals)
    rows = [reshape(instantiate(c), (1,) + shape_of(c)) for c in cts[:nb]]
    res = bind(solve_ivp_vjp_p, *primals, *rows, system=system, wanted=wanted)
    grads: list = [None] * len(primals)
    for i, r in zip(wanted, res, strict=True):
        if needs[i]:
            grads[i] = cast(reshape(r, shape_of(primals[i])), primals[i].dtype)
    return tuple(grads)


def _fold(v: Tensor, d: int | None, size: int) -> Tensor:
    """v's leading k rows with a batch of `size` on axis d (None: unbatched, repeated) as
    k * size rows, row-major in (k, batch)."""
    if d is None:
        shape = shape_of(v)
        v = broadcast_to(reshape(v, shape[:1] + (1,) + shape[1:]),
                         shape[:1] + (size,) + shape[1:])
    else:
        v = move_axis(v, d, 1)
    shape = shape_of(v)
    return reshape(v, (shape[0] * shape[1],) + shape[2:])


def _unfold(r: Tensor, k: int, size: int) -> Tensor:
    return reshape(r, (k, size) + shape_of(r)[1:])


# Batching: a batch of tangent directions (jacfwd, vmap of a JVP) is more columns of one
# tangent solve; a batch of states or parameters is one adaptive solve per example.
def _solve_batch(vals: tuple, dims: Any, system: System) -> tuple:
    if isinstance(system, Tangent):
        nb, mb = len(system.base.pieces), len(system.base.params)
        fixed = list(range(nb)) + list(range(2 * nb, 2 * nb + mb))
        if all(dims[i] is None for i in fixed):
            size, k = dims.size, system.k
            new = [v if i in fixed else _fold(v, dims[i], size) for i, v in enumerate(vals)]
            res = bind(solve_ivp_p, *new, system=system.base.tangent(k * size, system.moving))
            outs = list(res[:nb]) + [_unfold(r, k, size) for r in res[nb:2 * nb]] + [res[-1]]
            return outs, [None] * nb + [1] * nb + [None]
    return by_loop(solve_ivp_p)(vals, dims, system=system)


_CALLBACK = (STATEFUL, HOST_CALLBACK, CALLS_USER_CODE)
_UNSAVED = Codec(refuse="it calls a Python function at every run (SciPy's solver, on `fun`), "
                 "which a SavedModel does not hold (as TensorFlow's py_function).")
solve_ivp_p = define(
    Primitive("solve_ivp", _solve_impl, multiple_results=True, effects=_CALLBACK),
    jvp=_solve_jvp, vjp=_solve_vjp, batch=_solve_batch, sparsity=dense_deps, save=_UNSAVED)


# ------------------------------------------------------------------------ the times
# The solution at an output time t moves with t along y' = f(t, y); the state at the
# start moves against t0. `_carried` carries states along the flow over durations that are
# zero in value (a time's tensor minus its value): a solve over s in [0, 1] of
# ``z' = d f(c + s d, z)``, which returns the states unchanged but whose derivatives in d,
# in the states and in the parameters, to every order, are the flow's own, from this
# module's own rules (d^2 y/dt^2 = f_t + J f; the gradient in p moving with t0 by f_p...).
def _carried(rhs: Callable, Z: Tensor, at: np.ndarray, d: Tensor, inputs: list,
             backwards: bool) -> Tensor:
    """The states Z (n, T) carried along ``y' = rhs(t, y, params)`` from the times `at`
    over the durations d (T,), or from at + d back to `at`."""
    n, T = shape_of(Z)
    sign = -1.0 if backwards else 1.0

    def g(s: Tensor, z: Tensor, dd: Tensor, *params: Tensor) -> Tensor:
        times = at + ((1.0 - s) if backwards else s) * dd
        F = vmap(lambda tt, y: rhs(tt, y, list(params)), in_axes=(0, 1), out_axes=1)(
            times, reshape(z, (n, T)))
        return reshape(sign * reshape(dd, (1, T)) * F, [-1])

    sol = solve_ivp(g, (0.0, 1.0), reshape(Z, [-1]), method="RK45", t_eval=[1.0],
                    args=(d, *inputs), rtol=1e-12, atol=1e-14)
    return reshape(sol.y, (n, T))


# ------------------------------------------------------------------------ its VJP
def use_forward(sensitivity: str, n: int, n_in: int, k: int, method: str) -> bool:
    """Whether k cotangent rows of a solve of n states with n_in differentiated input
    elements are computed by forward sensitivities (NOTE(ode-auto)), for `sensitivity`
    "auto", "forward" or "adjoint" and SciPy's `method`.

    Example:
        >>> from tapeflow.scipy_ode import use_forward
        >>> use_forward("auto", 3, 6, 1, "BDF"), use_forward("auto", 72, 75, 1, "BDF")
        (True, False)
        >>> use_forward("auto", 72, 75, 11, "BDF"), use_forward("auto", 32, 64, 1, "RK45")
        (True, True)
    """
    if sensitivity == "auto":
        kind = "implicit" if method.lower() in IMPLICIT else "explicit"
        return n * (1 + n_in) <= k * AUTO_FORWARD_STATES[kind]
    return sensitivity == "forward"


def _split3(system: System, xs: tuple) -> tuple:
    nb, m = len(system.pieces), len(system.params)
    return xs[:nb], xs[nb:nb + m], xs[nb + m:]


def _vjp_by_forward(system: System, wanted: tuple, *inputs: Tensor) -> list:
    """The VJP of k cotangent rows for the `wanted` inputs by forward sensitivities, with
    tapeflow ops: one tangent solve with a column per element of those inputs,
    contracted with the rows."""
    pieces, params, cts = _split3(system, inputs)
    nb = len(pieces)
    k, T = shape_of(cts[0])[0], len(system.solver.t_eval)
    shapes = [shape_of(inputs[i]) for i in wanted]
    sizes = [int(np.prod(s, dtype=np.int64)) for s in shapes]
    n_in = sum(sizes)
    eye, at, basis = np.eye(n_in), 0, {}
    for i, shape, size in zip(wanted, shapes, sizes, strict=True):
        basis[i] = convert_to_tensor(eye[:, at:at + size].reshape((n_in,) + shape).astype(
            inputs[i]._value.dtype))
        at += size
    tp = [basis.get(i, convert_to_tensor(np.zeros((n_in,) + shape)))
          for i, shape in enumerate(system.pieces)]
    moving = tuple(i - nb for i in wanted if i >= nb)
    res = bind(solve_ivp_p, *pieces, *tp, *params, *[basis[nb + j] for j in moving],
               system=system.tangent(n_in, moving))
    G = None
    for i, size in enumerate(system.sizes):
        term = einsum("kxt,nxt->kn", reshape(cts[i], (k, size, T)),
                      reshape(res[nb + i], (n_in, size, T)))
        G = term if G is None else G + term
    out, at = [], 0
    for shape, size in zip(shapes, sizes, strict=True):
        out.append(reshape(G[:, at:at + size], (k,) + shape))
        at += size
    return out


def _vjp_impl(*arrays: np.ndarray, system: System, wanted: tuple) -> list:
    system.check(arrays)
    pieces, params, cts = _split3(system, arrays)
    nb = len(pieces)
    n_in = sum(int(np.size(arrays[i])) for i in wanted)
    if use_forward(system.solver.sensitivity, system.n, n_in, int(cts[0].shape[0]),
                   system.solver.method):
        if system.n * (1 + n_in) > FORWARD_STATES_LIMIT:
            raise InvalidArgumentError(
                f"solve_ivp: sensitivity='forward' would solve {system.n} states with "
                f"{n_in} sensitivity columns ({system.n * (1 + n_in)} values) for this "
                "gradient; use sensitivity='adjoint' (or 'auto'), or forward mode (jacfwd, "
                "jvp) for the few directions wanted.")
        with no_recorders():
            outs = _vjp_by_forward(system, wanted, *[convert_to_tensor(a) for a in arrays])
        return [np.asarray(o._value) for o in outs]
    slots = tuple(i - nb for i in wanted if i >= nb)
    got = adjoint_vjp(system, slots, list(pieces), list(params), list(cts))
    return [got[i] for i in wanted if i < nb] + got[nb:]


def _floating(xs: tuple) -> list:
    return [i for i, x in enumerate(xs) if _dt.kind(x._value.dtype) == "f"]


def _composite(system: System, wanted: tuple, primals: tuple, idx: list) -> Callable:
    def f(*xs: Tensor) -> list:
        full = list(primals)
        for i, x in zip(idx, xs, strict=True):
            full[i] = x
        return _vjp_by_forward(system, wanted, *full)
    return f


# The second derivatives: those of the forward formulation (the same function of the
# inputs and the cotangent rows), whichever method computed the first.
def _vjp_jvp(tangents: tuple, outs: tuple, primals: tuple, system: System,
             wanted: tuple) -> tuple:
    idx = _floating(primals)
    _, tans = jvp(_composite(system, wanted, primals, idx), [primals[i] for i in idx],
                  [instantiate(tangents[i]) for i in idx])
    return tuple(tans)


def _vjp_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, system: System,
             wanted: tuple) -> tuple:
    idx = _floating(primals)
    _, pull = vjp(_composite(system, wanted, primals, idx), *[primals[i] for i in idx])
    got = pull([instantiate(c) for c in cts])
    grads: list = [None] * len(primals)
    for i, g in zip(idx, got, strict=True):
        grads[i] = g if needs[i] else None
    return tuple(grads)


# A batch of cotangent rows (jacrev, vmap of a VJP) is more rows of one call.
def _vjp_batch(vals: tuple, dims: Any, system: System, wanted: tuple) -> tuple:
    n = len(system.pieces) + len(system.params)
    if all(d is None for d in dims[:n]):
        size = dims.size
        rows = [_fold(v, d, size) for v, d in zip(vals[n:], dims[n:], strict=True)]
        k = shape_of(rows[0])[0] // max(size, 1)
        res = bind(solve_ivp_vjp_p, *vals[:n], *rows, system=system, wanted=wanted)
        return [_unfold(r, k, size) for r in res], [1] * len(res)
    return by_loop(solve_ivp_vjp_p)(vals, dims, system=system, wanted=wanted)


solve_ivp_vjp_p = define(
    Primitive("solve_ivp_vjp", _vjp_impl, multiple_results=True, effects=_CALLBACK),
    jvp=_vjp_jvp, vjp=_vjp_vjp, batch=_vjp_batch, sparsity=dense_deps, save=_UNSAVED)


# ------------------------------------------------------------------------ public
class OdeResult(_optimize.OptimizeResult):
    """SciPy's result of a differentiable solve: ``y`` is a tensor (states x len(t_eval))
    and ``t`` is `t_eval`; ``status``, ``success``, ``message``, ``nfev``, ``njev`` and
    ``nlu`` are read from the solve when asked (inside a traced function, a read is a
    guard). ``sol``, ``t_events`` and ``y_events`` are None.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.scipy_ode import solve_ivp
        >>> sol = solve_ivp(lambda t, y: -y, (0.0, 1.0), tf.ones(2, tf.float64),
        ...                 method="RK45", t_eval=[0.5, 1.0])
        >>> type(sol.y).__name__, sol.y.shape, sol.success, sol.status
        ('Tensor', TensorShape([2, 2]), True, 0)
    """

    def _read(self) -> np.ndarray:
        return np.asarray(object.__getattribute__(self, "_info").numpy())

    status = property(lambda self: int(self._read()[0]))
    success = property(lambda self: int(self._read()[0]) >= 0)
    nfev = property(lambda self: int(self._read()[1]))
    njev = property(lambda self: int(self._read()[2]))
    nlu = property(lambda self: int(self._read()[3]))

    @property
    def message(self) -> str:
        raw = self._read()[_INFO:]
        return bytes(raw[:np.argmin(raw) if (raw == 0).any() else raw.size].astype(np.uint8)
                     ).decode("utf-8", "replace")


def differentiable(y0: Any, args: Any) -> bool:
    """Whether a solve_ivp call takes the differentiable path: y0 or a leaf of `args` is a
    tapeflow tensor or variable.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.scipy_ode import differentiable
        >>> differentiable(np.ones(2), (2.0,)), differentiable(np.ones(2), (tf.constant(2.0),))
        (False, True)
    """
    leaves = nest.flatten(list(args)) if isinstance(args, (tuple, list)) else [args]
    return any(isinstance(x, TensorBase) for x in [y0] + leaves)


def _moving_time(t: Any) -> Tensor | None:
    """A time given as a floating tensor (or variable), as float64: the solution gets its
    derivative in it; None for a number or an array."""
    if not isinstance(t, TensorBase):
        return None
    t = t.value() if isinstance(t, Variable) else t
    return cast(t, "float64") if _dt.kind(t._value.dtype) == "f" else None


def times_move(t_span: Any, t_eval: Any) -> bool:
    """Whether t_span[0] or t_eval is a tapeflow tensor (the solve is then differentiable
    in it).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.scipy_ode import times_move
        >>> times_move((0.0, 1.0), [0.5]), times_move((0.0, 1.0), tf.constant([0.5]))
        (False, True)
        >>> times_move(tf.constant([0.0, 1.0]), [0.5])   # a tensor t_span: its start
        True
    """
    first = t_span[0] if isinstance(t_span, (tuple, list, TensorBase)) else None
    return any(isinstance(x, TensorBase) for x in (first, t_eval))


def _rhs_value(out: Any, n: int) -> Tensor:
    """fun's result as a float64 vector of n values (a list of scalars is stacked)."""
    if isinstance(out, (list, tuple)):
        out = stack([_rhs_value(o, 1)[0] for o in out]) if out else as_tensor(
            np.zeros(0), "solve_ivp", "fun's result")
    out = as_tensor(out, "solve_ivp", "fun's result")
    if out.dtype.name != "float64":
        if _dt.kind(out._value.dtype) not in "fiu":
            raise TypeError(f"solve_ivp: `fun` returned dtype {out.dtype.name}; the "
                            "differentiable solve takes real values.")
        out = cast(out, "float64")
    if int(np.prod(shape_of(out), dtype=np.int64)) != n:
        raise ValueError(f"solve_ivp: `fun` returned shape {shape_of(out)}; expected ({n},), "
                         "the shape of y0.")
    return reshape(out, (n,))


def _check(fun: Callable, y: Any, t_eval: Any, args: Any, sensitivity: str,
           method: Any, options: dict) -> np.ndarray:
    if sensitivity not in SENSITIVITIES:
        raise ValueError(f"solve_ivp: `sensitivity` must be 'auto', 'forward' or 'adjoint'; "
                         f"got {sensitivity!r}.")
    if not callable(fun):
        raise TypeError(f"solve_ivp: `fun` must be callable; got {type(fun).__name__}.")
    if not isinstance(method, str):
        raise TypeError("solve_ivp: the differentiable solve takes `method` by name ('BDF', "
                        f"'Radau', 'LSODA', 'RK45', ...); got {type(method).__name__}.")
    if "jac" in options:
        raise TypeError("tapeflow.scipy.solve_ivp computes `jac` itself; remove it.")
    for name in ("events", "dense_output", "vectorized"):
        if options.get(name):
            raise ValueError(f"solve_ivp: `{name}` is not supported when y0 or args hold "
                             "tensors (the differentiable solve returns y at t_eval); pass "
                             "NumPy arrays for SciPy's own solve.")
        options.pop(name, None)
    if t_eval is None:
        raise ValueError("solve_ivp: y0 or args hold tensors, so sol.y is a differentiable "
                         "tensor at the times `t_eval`, which must be given (pass NumPy "
                         "arrays instead for SciPy's own steps).")
    times = np.asarray(t_eval, np.float64)
    if times.ndim != 1:
        raise ValueError(f"solve_ivp: `t_eval` must be 1-dimensional; got shape {times.shape}.")
    if _dt.kind(y._value.dtype) != "f":
        raise TypeError(f"solve_ivp: y0 has dtype {y.dtype.name}; the differentiable solve "
                        "takes real floating y0 (cast it).")
    if len(shape_of(y)) != 1:
        raise ValueError(f"solve_ivp: `y0` must be 1-dimensional; got shape {shape_of(y)}.")
    return times


def solve_ivp(fun: Callable, t_span: Any, y0: Any, method: str = "BDF", t_eval: Any = None,
              args: Any = (), jac_sparsity: Any = None, sensitivity: str = "auto",
              **options: Any) -> OdeResult:
    """`scipy.integrate.solve_ivp` of ``dy/dt = fun(t, y, *args)`` differentiable with
    respect to `y0` and the tensors (and variables) in `args`, the trainable variables
    `fun` reads, and `t_eval` and `t_span[0]` when they are tensors (the module's
    `_carried`); `sol.y` is a tensor of shape (len(y0), len(t_eval)).

    Forward mode (ForwardAccumulator, jvp, jacfwd) solves the forward-sensitivity
    equations alongside the state; reverse mode (GradientTape, grad, vjp, jacrev) uses
    the adjoint method or forward sensitivities: `sensitivity` is "adjoint", "forward"
    or "auto" (forward when the differentiated inputs are few against the cotangent rows
    asked for, tapeflow.scipy_ode NOTE(ode-auto)). The implicit methods (BDF, Radau,
    LSODA) get exact Jacobians of the state, sensitivity and adjoint systems. Derivatives
    are accurate to the solve's `rtol`/`atol`. A failed solve returns NaN after the
    failure (``sol.success`` False); differentiating it raises with SciPy's message.
    The computation runs in float64; `sol.y` has y0's floating dtype.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.scipy_ode import solve_ivp
        >>> k = tf.constant(2.0, tf.float64)
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(k)
        ...     sol = solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.ones(1), t_eval=[1.0],
        ...                     args=(k,), rtol=1e-10, atol=1e-12)
        >>> round(float(sol.y[0, 0]), 8), round(float(tape.gradient(sol.y, k)), 7)  # e^-2, -e^-2
        (0.13533528, -0.1353353)
    """
    if not isinstance(args, (tuple, list)):
        raise TypeError(f"solve_ivp: `args` must be a tuple of fun's extra arguments; got a "
                        f"{type(args).__name__} (for one argument p, pass args=(p,)).")
    y = y0.value() if isinstance(y0, Variable) else as_tensor(y0, "solve_ivp", "y0")
    times = _check(fun, y, t_eval, args, sensitivity, method, options)
    moving = {"t0": _moving_time(t_span[0]), "t_eval": _moving_time(t_eval)}
    t_span = (float(np.asarray(t_span[0])), float(np.asarray(t_span[1])))
    leaves = nest.flatten(list(args))
    inputs, slots, diff = [], [], []
    for leaf in leaves:
        if isinstance(leaf, TensorBase):
            t = leaf.value() if isinstance(leaf, Variable) else leaf
            floating = _dt.kind(t._value.dtype) == "f"
            slots.append(len(inputs))
            inputs.append(cast(t, "float64") if floating else t)
            diff.append(floating)
        else:
            slots.append(None)
    statics = [convert_to_tensor(x) if isinstance(x, (np.ndarray, np.generic)) else x
               for x in leaves]

    def packed(params: list) -> list:
        return nest.pack_sequence_as(list(args), [statics[i] if s is None else params[s]
                                                  for i, s in enumerate(slots)])

    n = int(shape_of(y)[0])
    y64 = cast(y, "float64")
    watcher = VariableReads()
    # One evaluation at (t0, y0), seen by no recorder: it checks fun's result and finds
    # the trainable variables fun reads, which become parameters of the solve.
    with substack(lambda r: False, extra=(watcher,)):
        _rhs_value(fun(convert_to_tensor(np.float64(t_span[0])), y64, *packed(inputs)), n)
    taken = {id(x) for x in leaves}
    variables = {}
    for v in watcher.variables.values():
        if id(v) not in taken and _dt.kind(v._value.dtype) == "f":
            variables[len(inputs)] = v
            inputs.append(v.value())
            diff.append(True)

    def user(t: Tensor, pieces: list, params: list) -> list:
        return [_rhs_value(fun(t, pieces[0], *packed(params)), n)]

    solver = Solver(t_span, times, method, dict(options), sensitivity)
    system = System(user, [(n,)], [(shape_of(p), p._value.dtype) for p in inputs], diff,
                    solver, jac_sparsity, variables)
    rhs = lambda t, y, params: user(t, [y], params)[0]  # noqa: E731
    if moving["t0"] is not None:   # y0 is the state at t0, carried to the solve's start
        t0 = moving["t0"]
        y64 = reshape(_carried(rhs, reshape(y64, (n, 1)), np.array([t_span[0]]),
                               reshape(t0 - stop_gradient(t0), (1,)), inputs, True), (n,))
    outs = bind(solve_ivp_p, y64, *inputs, system=system)
    Y = outs[0]
    if moving["t_eval"] is not None:   # the solution at t_eval's values, carried to it
        te = moving["t_eval"]
        Y = _carried(rhs, Y, times, te - stop_gradient(te), inputs, False)
    ys = Y if y.dtype.name == "float64" else cast(Y, y.dtype)
    result = OdeResult(t=times.copy(), y=ys, sol=None, t_events=None, y_events=None)
    object.__setattr__(result, "_info", outs[1])
    return result
