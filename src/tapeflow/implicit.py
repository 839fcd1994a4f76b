"""Implicit differentiation: `custom_root` and `custom_linear_solve`, as JAX's
`jax.lax.custom_root` and `jax.lax.custom_linear_solve`.

NOTE(implicit): each is one primitive whose impl runs the user's solver hidden from every
recorder (no tape, accumulator, batcher or trace sees its steps: it may loop until a
tolerance is met, read values, call SciPy), and whose derivatives come from the equation
its solution satisfies, never from the solver's steps:

- `custom_linear_solve`: x = A(c)^-1 b for a linear `matvec` that may close over tensors
  c. JVP: A xdot = bdot - (d_c A x) cdot, a solve of the same system; VJP: lambda =
  A^-T xbar (the user's `transpose_solve`, given the VJP of `matvec` as its map),
  bbar = lambda, cbar = -(d_c A x)^T lambda. Both rules bind the primitive again, so
  every derivative is a linear solve and differentiates again.
- `custom_root`: f(x*, c) = 0 for an `f` that may close over tensors c. By the implicit
  function theorem xdot* = -(d_x f)^-1 (d_c f) cdot: the JVP is a `custom_linear_solve`
  of f's linearization at x* solved by the user's `tangent_solve` (which also solves the
  transposed system: it is given the map to invert), the VJP cbar = -(d_c f)^T
  (d_x f)^-T xbar likewise, as JAX does; derivatives of any order follow where f has
  them.

The functions the solvers are given (`f`, `matvec`) are traced once into graphs, as a
loop body is (loops.trace_body): the tensors they close over and the variables they read
become inputs of the primitive, so tapes and accumulators reach them and a replay reads
them anew. The solver is not traced: what it closes over is no input, so it must take
what varies from call to call through the function it is given. A traced function keeps the primitive as one node and runs the solver at every
replay; vmap runs it once per example (as py_function: Python cannot be vectorized), the
rules' own ops vectorized; jit_compile=True compiles everything around it and calls the
solver back on the host (jax.pure_callback). The initial guess, and tensors only the
solver reads, get no derivative (as JAX's).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as _dt
from . import nest
from .batching import by_loop
from .catalog import CALLS_USER_CODE, Codec, Lowering, define
from .core import Primitive, Zero, bind, no_recorders, recording
from .errors import InvalidArgumentError
from .graph.ir import Graph
from .graph.polymorphic import resolved
from .graph.replay import Replay, interpret, plan_runner
from .graph.trace import TracingError
from .loops import trace_body
from .ops.convert import as_tensor
from .ops.structural import dense_deps, instantiate, zeros_of
from .tape import GradientTape, UnconnectedGradients
from .tensor import Tensor, TensorBase, Variable
from .transforms import jvp, linearize, vjp

__all__ = ["custom_root", "custom_linear_solve", "root_p", "linear_solve_p", "bind_root"]


# ------------------------------------------------------------------ structures and checks
class _Aux:
    """The structure, shapes and dtypes of a solver's auxiliary results (`has_aux`), noted
    each time it runs: outputs of the primitive that nothing knows before it runs."""

    __slots__ = ("structure", "avals")

    def __init__(self) -> None:
        self.structure: Any = None
        self.avals: tuple = ()

    def __eq__(self, other: Any) -> bool:  # two traces' notes agree (graph/polymorphic.py)
        return type(other) is _Aux and (self.structure, self.avals) == (other.structure,
                                                                           other.avals)

    def __hash__(self) -> int:
        return hash(repr(self.structure))


def _skeleton(structure: Any) -> Any:
    """`structure` with None for every leaf: what a primitive keeps of it."""
    return nest.map_structure(lambda _: None, structure)


def _count(tree: Any) -> int:
    return len(nest.flatten(tree))


def _floating(t: Any) -> bool:
    return _dt.kind(t._value.dtype) == "f"


def _avals(values: Sequence[Any]) -> list:
    return [(tuple(np.shape(v)), np.asarray(v).dtype) for v in values]


def _leaves(value: Any, who: str, what: str) -> tuple[Any, list]:
    """(the structure of `value`, its leaves as floating tensors), `what` naming it."""
    flat = nest.flatten(value)
    if not flat:
        raise InvalidArgumentError(f"{who}: `{what}` holds no tensor; expected a tensor or a "
                                   "structure of tensors.")
    out = []
    for i, leaf in enumerate(flat):
        t = as_tensor(leaf, who, what if len(flat) == 1 else f"{what} leaf {i}")
        if not _floating(t):
            name = f"`{what}`" if len(flat) == 1 else f"leaf {i} of `{what}`"
            raise InvalidArgumentError(f"{who}: {name} has dtype {t.dtype.name}; expected a "
                                       "floating dtype (float16, bfloat16, float32, float64).")
        out.append(t)
    return _skeleton(value), out


def _matched(value: Any, tree: Any, avals: list, who: str, what: str, like: str) -> list:
    """The leaves of `value` (what `what` names: a function's result or argument) as tensors
    of the structure `tree` and the shapes and dtypes `avals` (those of `like`): a tensor
    must have the dtype; a NumPy array or Python number of the same kind is cast."""
    try:
        flat = nest.flatten_up_to(tree, value)
        if tree is None and nest.is_nested(value) and any(
                isinstance(v, TensorBase) for v in nest.flatten(value)):
            raise ValueError(f"a {type(value).__name__} of tensors where one tensor goes")
    except (ValueError, TypeError) as e:
        raise InvalidArgumentError(f"{who}: {what} is a {type(value).__name__} whose structure "
                                   f"is not that of `{like}`: {e}.") from None
    out = []
    for i, (leaf, (shape, dtype)) in enumerate(zip(flat, avals, strict=True)):
        name = "" if len(flat) == 1 else f" leaf {i}"
        if isinstance(leaf, TensorBase):
            t = as_tensor(leaf, who, what)
        else:
            try:
                arr = np.asarray(leaf)
            except ValueError as e:
                raise InvalidArgumentError(f"{who}: {what}{name} is a {type(leaf).__name__}, "
                                           f"not a tensor: {e}") from None
            if arr.dtype != dtype and _dt.kind(arr.dtype) in "biuf" and _dt.kind(dtype) == "f":
                arr = arr.astype(dtype)
            t = Tensor(arr)
        got = t._value
        if tuple(np.shape(got)) != tuple(shape):
            raise InvalidArgumentError(f"{who}: {what}{name} has shape {tuple(np.shape(got))}; "
                                       f"expected shape {tuple(shape)}, that of `{like}`{name}.")
        if got.dtype != dtype:
            raise InvalidArgumentError(f"{who}: {what}{name} has dtype "
                                       f"{_dt.from_numpy(got.dtype).name}; expected "
                                       f"{_dt.from_numpy(dtype).name}, that of `{like}`{name}.")
        out.append(t)
    return out


def _results(out: Any, tree: Any, avals: list, aux: _Aux | None, who: str, what: str,
             like: str) -> list:
    """What a solver returned, checked, as the primitive's output arrays (copies: the
    solver may keep its buffers), the auxiliary results after the solution."""
    if aux is not None:
        if not (isinstance(out, (tuple, list)) and len(out) == 2):
            raise InvalidArgumentError(f"{who}: with has_aux=True, `{what}` returns a pair "
                                       f"(solution, aux); got a {type(out).__name__}.")
        out, extra = out
    xs = _matched(out, tree, avals, who, f"`{what}`'s result", like)
    arrays = [np.array(x._value, copy=True) for x in xs]
    if aux is not None:
        values = []
        for i, leaf in enumerate(nest.flatten(extra)):
            v = np.array(leaf.numpy() if isinstance(leaf, TensorBase) else leaf, copy=True)
            if _dt.kind(v.dtype) not in "biufc":
                raise InvalidArgumentError(f"{who}: `{what}`'s aux leaf {i} is a "
                                           f"{type(leaf).__name__}; aux holds tensors, arrays "
                                           "and numbers.")
            values.append(v)
        aux.structure, aux.avals = _skeleton(extra), tuple(_avals(values))
        arrays += values
    return arrays


# ------------------------------------------------------------------ graphs as functions
def _run(graph: Graph, args: list) -> list:
    """`graph` on tensors: re-bound where a recorder is active (a solver's own tape sees
    each op), else replayed with NumPy, made once per set of input shapes (a size-generic
    graph's at each, as a loop body's: graph/polymorphic.py)."""
    if recording():
        return interpret(graph, args)
    arrays = [a._value for a in args]
    shapes = tuple(np.shape(a) for a in arrays)
    replays = graph.__dict__.setdefault("_implicit_replays", {})
    run = replays.get(shapes)
    if run is None:
        if not graph.sized and shapes == tuple(tuple(graph.avals[s][0]) for s in graph.inputs):
            run = replays[shapes] = Replay(graph)
        else:
            avals: dict = {}
            out = plan_runner(graph, avals)(*arrays)
            replays[shapes] = Replay(resolved(graph, {**graph.avals, **avals}))
            return [Tensor(o) for o in out]
    return [Tensor(o) for o in run(*arrays)]


def _graph_fn(graph: Graph, consts: list, tree: Any, avals: list, n: int, who: str,
              what: str, like: str) -> Callable:
    """The user's `what`, traced into `graph`, on this call's tensors `consts`: a
    structure like `tree` in, its first `n` outputs as one out."""
    def fn(x: Any) -> Any:
        xs = _matched(x, tree, avals, who, f"the argument of `{what}`", like)
        return nest.pack_sequence_as(tree, _run(graph, xs + consts)[:n])
    return fn


def _trace(fn: Callable, example: list, who: str, what: str) -> tuple[Graph, list]:
    try:
        return trace_body(fn, example)
    except TracingError as e:  # the loop body's error, told of `what`
        detail = str(e).removeprefix("scan: ").replace("the loop body", f"`{what}`")
        raise TracingError(f"{who}: `{what}` is traced into one graph of tapeflow ops (as "
                           f"JAX traces it): {detail.replace('a loop body', 'it')}") from None


def _values(captured: list) -> list:
    """The captured tensors, each variable read now (an op the caller's tapes see)."""
    return [v.value() if isinstance(v, Variable) else v for v in captured]


def _replaced(items: list, where: list, values: Sequence[Any]) -> list:
    out = list(items)
    for j, v in zip(where, values, strict=True):
        out[j] = v
    return out


# ------------------------------------------------------------------ the linear solve
def _solve_impl(*arrays: Any, matvec: Graph, solve: Callable, transpose_solve: Any,
                symmetric: bool, tree: Any, aux: _Aux | None, names: tuple,
                check: Any, n_checked: int) -> list:
    n = _count(tree)
    avals = _avals(arrays[:n])
    if check is not None:
        check(*arrays[n:n + n_checked])
    consts = [Tensor(a) for a in arrays[n + n_checked:]]
    who, solve_name, _, like = names
    fn = _graph_fn(matvec, consts, tree, avals, n, who, "matvec", like)
    with no_recorders():
        out = solve(fn, nest.pack_sequence_as(tree, [Tensor(a) for a in arrays[:n]]))
    return _results(out, tree, avals, aux, who, solve_name, like)


def _split(primals: Sequence[Any], n: int, n_checked: int) -> tuple[list, list, list]:
    return (list(primals[:n]), list(primals[n:n + n_checked]), list(primals[n + n_checked:]))


def _solve_jvp(tangents: tuple, outs: tuple, primals: tuple, matvec: Graph, solve: Callable,
               transpose_solve: Any, symmetric: bool, tree: Any, aux: _Aux | None,
               names: tuple, check: Any, n_checked: int) -> tuple:
    n = _count(tree)
    _, checked, consts = _split(primals, n, n_checked)
    xs = list(outs[:n])
    off = n + n_checked
    live = [j for j, c in enumerate(consts)
            if type(tangents[off + j]) is not Zero and _floating(c)]
    if not live and all(type(t) is Zero for t in tangents[:n]):
        return tuple(Zero.like(o) for o in outs)
    # A xdot = bdot - (d_c A x) cdot
    rhs = [instantiate(t) for t in tangents[:n]]
    if live:
        _, moved = jvp(lambda *cs: interpret(matvec, xs + _replaced(consts, live, cs)),
                       [consts[j] for j in live], [tangents[off + j] for j in live])
        rhs = [r - d for r, d in zip(rhs, moved, strict=True)]
    xdot = bind(linear_solve_p, *rhs, *checked, *consts, matvec=matvec, solve=solve,
                transpose_solve=transpose_solve, symmetric=symmetric, tree=tree,
                aux=None if aux is None else _Aux(), names=names, check=check,
                n_checked=n_checked)
    return tuple(xdot[:n]) + tuple(Zero.like(o) for o in outs[n:])


def _transposed(matvec: Graph, n: int, example: list) -> tuple[Graph, list]:
    """The transpose of the linear map `matvec` (its VJP), a graph of the same inputs:
    the vector, then the tensors `matvec` reads; traced once per matvec and shapes."""
    key = tuple((tuple(np.shape(e._value)), e._value.dtype) for e in example)
    cache = matvec.__dict__.setdefault("_implicit_transposed", {})
    if key not in cache:
        def vecmat(*a: Any) -> list:
            u, cs = list(a[:n]), list(a[n:])
            at = [zeros_of(t) for t in u]  # the map is linear: any point will do
            with GradientTape() as tape:
                tape.watch(at)
                out = interpret(matvec, at + cs)
            return tape.gradient(out, at, output_gradients=u,
                                 unconnected_gradients=UnconnectedGradients.ZERO)
        cache[key] = trace_body(vecmat, example)
    return cache[key]


def _solve_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, matvec: Graph,
               solve: Callable, transpose_solve: Any, symmetric: bool, tree: Any,
               aux: _Aux | None, names: tuple, check: Any, n_checked: int) -> tuple:
    n = _count(tree)
    _, checked, consts = _split(primals, n, n_checked)
    off = n + n_checked
    grads: list = [None] * len(primals)
    if all(type(c) is Zero for c in cts[:n]) or not any(needs[:n] + needs[off:]):
        return tuple(grads)
    who, solve_name, transpose_name, like = names
    if transpose_solve is None:
        raise TypeError(f"{who}: reverse-mode differentiation solves the transposed system, "
                        "which needs `transpose_solve` (or symmetric=True, when matvec is "
                        "its own transpose).")
    xbar = [instantiate(c) for c in cts[:n]]
    if symmetric:
        vecmat, extra = matvec, []
    else:
        vecmat, captured = _transposed(matvec, n, xbar + consts)
        extra = _values(captured)
    # lambda = A^-T xbar: the transposed system, its solvers swapped
    lam = bind(linear_solve_p, *xbar, *checked, *consts, *extra, matvec=vecmat,
               solve=transpose_solve, transpose_solve=solve, symmetric=symmetric, tree=tree,
               aux=None if aux is None else _Aux(),
               names=(who, transpose_name, solve_name, like), check=check,
               n_checked=n_checked)[:n]
    for i in range(n):
        if needs[i]:
            grads[i] = lam[i]
    want = [j for j, c in enumerate(consts) if needs[off + j] and _floating(c)]
    if want:
        # cbar = -(d_c A x)^T lambda
        xs = list(outs[:n])
        _, pull = vjp(lambda *cs: interpret(matvec, xs + _replaced(consts, want, cs)),
                      *[consts[j] for j in want])
        for j, g in zip(want, pull([-v for v in lam]), strict=True):
            grads[off + j] = g
    return tuple(grads)


def _by_example(prim: Primitive) -> Callable:
    """The batching rule: the solver once per example (it is Python); an empty batch
    solves nothing."""
    loop = by_loop(prim)

    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        if dims.size:
            return loop(vals, dims, **params)
        if params["aux"] is not None:
            raise InvalidArgumentError(f"vmap: {prim.name} with has_aux=True over an empty "
                                       "batch: the auxiliary results' shapes are known only "
                                       "once the solver runs.")
        n = _count(params["tree"])
        outs = []
        for v, d in zip(vals[:n], dims[:n], strict=True):
            shape = list(np.shape(v._value))
            if d is not None:
                del shape[d]
            outs.append(Tensor(np.zeros([0] + shape, v._value.dtype)))
        return outs, [0] * n
    return {"batch": rule}


def _lowering(impl: Callable) -> Lowering:
    """XLA: the solver is Python, called back on the host (jax.pure_callback) with the
    NumPy values; everything around it compiles."""
    def lower(jax: Any, *args: Any, **params: Any) -> list:
        n = _count(params["tree"])
        aux = params["aux"]
        avals = [(tuple(a.shape), np.dtype(a.dtype)) for a in args[:n]]
        avals += list(aux.avals if aux is not None else ())
        shapes = tuple(jax.ShapeDtypeStruct(s, d) for s, d in avals)

        def call(*arrays: Any) -> tuple:
            outs = impl(*[np.asarray(a) for a in arrays], **params)
            return tuple(np.asarray(o, d) for o, (_, d) in zip(outs, avals, strict=True))

        return list(jax.pure_callback(call, shapes, *args))
    return Lowering(lower)


# The solvers are the user's Python, which a SavedModel does not hold.
_UNSAVED = Codec(refuse="it calls a Python function (the user's solver) at every run, "
                 "which a SavedModel does not hold; save the function without it.")

# Inputs: b (the tree's leaves), what `check` reads (a root's aux results), the tensors
# matvec reads; outputs: x, then the aux results. Any output may depend on any input.
linear_solve_p = define(
    Primitive("custom_linear_solve", _solve_impl, multiple_results=True,
              effects=(CALLS_USER_CODE,)),
    _by_example, jvp=_solve_jvp, vjp=_solve_vjp, sparsity=dense_deps,
    lower=_lowering(_solve_impl), save=_UNSAVED)


def _bind_solve(matvec: Callable[[list], list], b: list, tree: Any, solve: Callable,
                transpose_solve: Any, symmetric: bool, has_aux: bool, names: tuple,
                matvec_name: str, check: Any = None, checked: Sequence[Any] = ()) -> tuple:
    """(the outputs of linear_solve_p for the linear map `matvec`, leaves in and leaves
    out, the aux note)."""
    graph, captured = _trace(lambda *u: matvec(list(u)), list(b), names[0], matvec_name)
    aux = _Aux() if has_aux else None
    outs = bind(linear_solve_p, *b, *checked, *_values(captured), matvec=graph, solve=solve,
                transpose_solve=transpose_solve, symmetric=symmetric, tree=tree, aux=aux,
                names=names, check=check, n_checked=len(checked))
    return outs, aux


def _callable(fn: Any, who: str, what: str) -> None:
    if not callable(fn):
        raise TypeError(f"{who}: `{what}` must be callable; got a {type(fn).__name__}.")


def custom_linear_solve(matvec: Callable, b: Any, solve: Callable,
                        transpose_solve: Callable | None = None, symmetric: bool = False,
                        has_aux: bool = False) -> Any:
    """Solve ``matvec(x) == b`` with `solve`, differentiated implicitly, as JAX's
    `jax.lax.custom_linear_solve`.

    `matvec` is a linear function of a structure of tensors like `b` (it may close over
    tensors, which get derivatives); ``solve(matvec, b)`` returns x (and, with `has_aux`,
    ``(x, aux)``: aux gets no derivative). The solver runs unrecorded (NOTE(implicit) in
    implicit.py): it need not be differentiable, and it gets what varies from call to call
    through the `matvec` it is given (tensors it closes over itself keep, under vmap and in
    a traced function's replays, the values they had when it was made). Derivatives solve the same system
    (forward mode) or the transposed one with ``transpose_solve(vecmat, xbar)``, whose
    `vecmat` is matvec's transpose (reverse mode; with `symmetric`, matvec itself and,
    by default, `solve`), so they hold to any order `matvec` allows.

    Example:
        >>> import tapeflow as tf
        >>> d, b = tf.constant([2., 4.]), tf.constant([1., 2.])
        >>> solve = lambda mv, rhs: rhs / mv(tf.ones_like(rhs))  # mv is diagonal here
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(d)
        ...     x = tf.custom_linear_solve(lambda v: d * v, b, solve, symmetric=True)
        >>> x.numpy(), tape.gradient(x, d).numpy()  # b / d, -b / d ** 2
        (array([0.5, 0.5], dtype=float32), array([-0.25 , -0.125], dtype=float32))
    """
    who = "custom_linear_solve"
    _callable(matvec, who, "matvec")
    _callable(solve, who, "solve")
    if transpose_solve is not None:
        _callable(transpose_solve, who, "transpose_solve")
    if transpose_solve is None and symmetric:
        transpose_solve = solve
    tree, leaves = _leaves(b, who, "b")
    avals = _avals([t._value for t in leaves])
    outs, aux = _bind_solve(lambda u: _matched(matvec(nest.pack_sequence_as(tree, u)), tree,
                                               avals, who, "`matvec`'s result", "b"), leaves, tree,
                            solve, transpose_solve, bool(symmetric), bool(has_aux),
                            (who, "solve", "transpose_solve", "b"), "matvec")
    n = len(leaves)
    x = nest.pack_sequence_as(tree, outs[:n])
    return (x, nest.pack_sequence_as(aux.structure, outs[n:])) if has_aux else x


# ------------------------------------------------------------------ the root
def _root_impl(*arrays: Any, f: Graph, solve: Callable, tangent_solve: Callable,
               tree: Any, aux: _Aux | None, extra: int, check: Any) -> list:
    n = _count(tree)
    avals = _avals(arrays[:n])
    consts = [Tensor(a) for a in arrays[n:]]
    fn = _graph_fn(f, consts, tree, avals, n, "custom_root", "f", "initial_guess")
    guess = nest.pack_sequence_as(tree, [Tensor(a) for a in arrays[:n]])
    with no_recorders():
        if extra:  # the companion results of f (tapeflow.scipy's objective), for the solver
            out = solve(fn, guess, lambda x: _run(f, _matched(
                x, tree, avals, "custom_root", "the argument of the companion",
                "initial_guess") + consts)[n:])
        else:
            out = solve(fn, guess)
    return _results(out, tree, avals, aux, "custom_root", "solve", "initial_guess")


def _root_jvp(tangents: tuple, outs: tuple, primals: tuple, f: Graph, solve: Callable,
              tangent_solve: Callable, tree: Any, aux: _Aux | None, extra: int,
              check: Any) -> tuple:
    n = _count(tree)
    xs, consts = list(outs[:n]), list(primals[n:])
    live = [j for j, c in enumerate(consts)
            if type(tangents[n + j]) is not Zero and _floating(c)]
    if not live:  # the initial guess has no derivative
        return tuple(Zero.like(o) for o in outs)
    # xdot = -(d_x f)^-1 (d_c f) cdot, at the root
    _, rhs = jvp(lambda *cs: interpret(f, xs + _replaced(consts, live, cs))[:n],
                 [consts[j] for j in live], [tangents[n + j] for j in live])
    _, lin = linearize(lambda *x: interpret(f, list(x) + consts)[:n], *xs)
    dx, _ = _bind_solve(lambda u: lin(*u), rhs, tree, tangent_solve, tangent_solve, False,
                        False, ("custom_root", "tangent_solve", "tangent_solve", "initial_guess"),
                        "f's linearization", check, outs[n:] if check is not None else ())
    return tuple(-d for d in dx) + tuple(Zero.like(o) for o in outs[n:])


def _root_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, f: Graph,
              solve: Callable, tangent_solve: Callable, tree: Any, aux: _Aux | None,
              extra: int, check: Any) -> tuple:
    n = _count(tree)
    xs, consts = list(outs[:n]), list(primals[n:])
    grads: list = [None] * len(primals)
    want = [j for j, c in enumerate(consts) if needs[n + j] and _floating(c)]
    if not want or all(type(c) is Zero for c in cts[:n]):
        return tuple(grads)
    # cbar = -(d_c f)^T (d_x f)^-T xbar, at the root
    _, pull = vjp(lambda *a: interpret(f, list(a[:n]) + _replaced(consts, want, a[n:]))[:n],
                  *xs, *[consts[j] for j in want])
    lam, _ = _bind_solve(lambda u: list(pull(list(u))[:n]), [instantiate(c) for c in cts[:n]],
                         tree, tangent_solve, tangent_solve, False, False,
                         ("custom_root", "tangent_solve", "tangent_solve", "initial_guess"),
                         "f's transposed linearization", check,
                         outs[n:] if check is not None else ())
    for j, g in zip(want, pull([-v for v in lam[:n]])[n:], strict=True):
        grads[n + j] = g
    return tuple(grads)


# Inputs: the initial guess (the tree's leaves, no derivative), the tensors f reads;
# outputs: the root, then the aux results.
root_p = define(
    Primitive("custom_root", _root_impl, multiple_results=True, effects=(CALLS_USER_CODE,)),
    _by_example, jvp=_root_jvp, vjp=_root_vjp, sparsity=dense_deps,
    lower=_lowering(_root_impl), save=_UNSAVED)


def bind_root(f: Callable[[list], list], guess: list, tree: Any, solve: Callable,
              tangent_solve: Callable, has_aux: bool = False, extra: int = 0,
              check: Callable | None = None) -> tuple[list, _Aux | None]:
    """(root_p's outputs, the aux note) for `f` (the guess's leaves in, a structure like
    the guess's out; with `extra`, a pair of that and a list of `extra` companion results,
    which the solver is given as a third argument, a function of x);
    ``check(*aux)`` runs, on the aux results' values, before every solve of a derivative
    (tapeflow.scipy's convergence check)."""
    avals = _avals([t._value for t in guess])

    def step(*x: Any) -> list:
        root, more = f(list(x)) if extra else (f(list(x)), [])
        return (_matched(root, tree, avals, "custom_root", "`f`'s result", "initial_guess")
                + [as_tensor(o, "custom_root", "a companion result") for o in more])

    graph, captured = _trace(step, list(guess), "custom_root", "f")
    aux = _Aux() if has_aux else None
    outs = bind(root_p, *guess, *_values(captured), f=graph, solve=solve,
                tangent_solve=tangent_solve, tree=tree, aux=aux, extra=extra, check=check)
    return outs, aux


def custom_root(f: Callable, initial_guess: Any, solve: Callable, tangent_solve: Callable,
                has_aux: bool = False) -> Any:
    """A root of `f` found by `solve`, differentiated implicitly, as JAX's
    `jax.lax.custom_root`.

    `f` maps a structure of tensors like `initial_guess` to one like it and may close over
    tensors (and read variables), which get derivatives; ``solve(f, initial_guess)``
    returns x with ``f(x) == 0`` (and, with `has_aux`, ``(x, aux)``: aux gets no
    derivative). The solver runs unrecorded (NOTE(implicit) in implicit.py): it may loop
    until converged and read values, and it gets what varies from call to call through the
    `f` it is given (tensors it closes over itself keep, under vmap and in a traced
    function's replays, the values they had when it was made). Derivatives come from the implicit function theorem, with
    ``tangent_solve(g, y)`` solving ``g(x) == y`` for the linear map g (f linearized at
    the root, or its transpose): ``lambda g, y: y / g(1.0)`` for a scalar. The initial
    guess gets no derivative.

    Example:
        >>> import tapeflow as tf
        >>> def newton(f, x):
        ...     for _ in range(20):
        ...         x = x - f(x) / (2. * x)  # f(x) = x ** 2 - a
        ...     return x
        >>> a = tf.constant(2.0)
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(a)
        ...     r = tf.custom_root(lambda x: x ** 2 - a, 1.0, newton, lambda g, y: y / g(1.0))
        >>> round(float(r), 5), round(float(tape.gradient(r, a)), 5)  # sqrt(a), 1/(2 sqrt(a))
        (1.41421, 0.35355)
    """
    who = "custom_root"
    _callable(f, who, "f")
    _callable(solve, who, "solve")
    _callable(tangent_solve, who, "tangent_solve")
    tree, guess = _leaves(initial_guess, who, "initial_guess")
    outs, aux = bind_root(lambda x: f(nest.pack_sequence_as(tree, x)), guess, tree, solve,
                          tangent_solve, has_aux=bool(has_aux))
    n = len(guess)
    x = nest.pack_sequence_as(tree, outs[:n])
    return (x, nest.pack_sequence_as(aux.structure, outs[n:])) if has_aux else x
