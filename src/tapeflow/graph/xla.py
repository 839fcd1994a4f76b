"""function(jit_compile=True): a traced graph lowered to JAX and compiled by XLA.

Each primitive's `lower` rule (beside its other rules) rewrites it with jax.numpy /
jax.lax: ``lower(jax, *args, **params)``, given the jax module so that the families
never import JAX (the core needs NumPy only). NOTE(host-draws): a random draw runs its
NumPy impl on the host at every call, in the graph's order, and its rule gets the drawn
array as ``drawn=``: the compiled call draws the very numbers the NumPy replay, the trace
and eager code draw, and moves each generator as far. A seeded program so repeats its
numbers whichever of those paths ran each call (the first call traces on NumPy, a tape
around a call replays on NumPy, a first call at new sizes runs on NumPy); with JAX's own
generators the paths would consume the sequences differently. The price: each call
moves its draws to the device. On a CPU that is cheap: a compiled dropout (uniform mask)
ran faster than with JAX's generators on small and mid-sized arrays, and only a little
slower on a large one (docs/performance-notes.md, #host-draws).

`XlaReplay` has the interface of `replay.Replay`: arrays in, arrays out, variables read
at the start and written at the end (under their locks), guards checked before anything
is written. A failed guard, or a primitive's `lower_check` failing (an index out of
range), reruns the call on NumPy: the replay raises GuardFailed where the guard fails
there too, the impl its error, never a wrong value. JAX runs 64-bit types only
where the graph holds them (`jax.enable_x64` around this graph's calls alone: the
user's own JAX code keeps its setting). A graph with a primitive that has no lowering
runs the NumPy replay instead, after a one-time warning naming the primitive.

Inputs may be JAX arrays (a DeviceTensor's, graph/device.py): they go into the
computation as they are, with no host round trip; only the NumPy replay (the fallbacks)
copies them to the host. With ``keep_on_device`` the results are the computation's JAX
arrays; otherwise NumPy arrays. Variables are host NumPy arrays either way, each with its
device copy kept beside it (NOTE(placed) in graph/device.py), as are the host tensors
passed in (`ConcreteFunction` places them).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..catalog import HOST_CALLBACK, PER_EXAMPLE, STATEFUL
from ..tensor import Tensor
from .device import DeviceTensor, keep_placed, placed
from .ir import Assign, Graph, Guard, Node, resolve
from .lean import lean_call
from .replay import Replay, VariableLocks, _written

__all__ = ["XlaReplay", "require_jax", "missing_lowerings", "lower_graph", "lower_node",
           "checks"]

_WARNED: set = set()


def require_jax() -> Any:
    """The jax module, or an ImportError naming the extra to install."""
    try:
        return importlib.import_module("jax")
    except ImportError:
        raise ImportError("function(jit_compile=True) compiles with XLA through JAX: "
                          "pip install 'tapeflow[xla]' (or pass jit_compile=None to replay "
                          "with NumPy).") from None


def jit_compile_here(saved: Any, what: str) -> bool | str:
    """A loaded file's jit_compile, where this machine can honour it. jit_compile is how a
    graph runs, not what it computes, so a file saved with it still loads without the xla
    extra: its graphs replay with NumPy (the same values up to rounding), and a warning
    names the extra."""
    if not saved:
        return False
    if saved == "auto":  # NumPy where JAX is missing, by its own choice
        return "auto"
    try:
        require_jax()
    except ImportError:
        warnings.warn(f"{what} was saved with jit_compile=True, but JAX is not installed: "
                      "it runs with NumPy (pip install 'tapeflow[xla]' to compile it).",
                      UserWarning, stacklevel=4)
        return False
    return True


def checks(g: Graph, n: Any) -> bool:
    """Whether node `n` of `g` has a lowering check to compute (its primitive's Lowering
    has one, and needs it at the node's input dtypes and shapes)."""
    if not isinstance(n, Node):
        return False
    low = n.prim.rules.get("lower")
    if low is None or low.check is None:
        return False
    return low.check_needed is None or low.check_needed(*[g.avals[s] for s in n.inputs],
                                                        **n.params)


def _compiles(prim: Any) -> bool:
    """Whether a primitive can run inside a compiled program: by its lowering, or (a pure
    one without: a user's primitive) by its impl called back on the host."""
    return "lower" in prim.rules or prim.effects.isdisjoint(_NEVER_CALLED_BACK)


_NEVER_CALLED_BACK = frozenset((STATEFUL, HOST_CALLBACK))


def missing_lowerings(g: Graph) -> list[str]:
    """The primitives of `g` that cannot run compiled (host callbacks, a stateful
    primitive without a lowering); a loop (a node with a `body` graph) whose body holds
    one, a random draw or a check XLA cannot raise counts too."""
    missing = set()
    for n in g.nodes:
        if not isinstance(n, Node):
            continue
        body = n.params.get("body")
        if not _compiles(n.prim) or (isinstance(body, Graph) and (missing_lowerings(body) or any(
                (isinstance(m, Node) and STATEFUL in m.prim.effects) or checks(body, m)
                for m in body.nodes))):
            missing.add(n.prim.name)
    return sorted(missing)


def lower_node(jax: Any, g: Graph, n: Node, args: list, params: dict) -> Any:
    """Node `n` of `g` lowered on JAX values: its primitive's lowering, or where it has
    none (a user's primitive: the catalog's default) its impl called back on the host,
    with the node's traced output shapes and dtypes."""
    low = n.prim.rules.get("lower")
    if low is not None:
        return low.fn(jax, *args, **params)
    if n.prim.name not in _WARNED:
        _WARNED.add(n.prim.name)
        warnings.warn(f"function(jit_compile=True): primitive {n.prim.name!r} has no XLA "
                      "lowering; the compiled program calls its NumPy impl back on the host "
                      "(give it a `lower` rule, tapeflow.extend.define, to compile it).",
                      stacklevel=4)
    avals = [g.avals[o] for o in n.outputs]
    prim = n.prim

    def call(*arrays: Any) -> tuple:
        out = prim.impl(*[np.asarray(a) for a in arrays], **params)
        outs = out if prim.multiple_results else (out,)
        return tuple(np.asarray(o, np.dtype(dtype)) for o, (_, dtype) in zip(outs, avals,
                                                                              strict=True))

    shapes = tuple(jax.ShapeDtypeStruct(tuple(shape), np.dtype(dtype)) for shape, dtype in avals)
    res = jax.pure_callback(call, shapes, *args)
    return list(res) if prim.multiple_results else res[0]


def lower_graph(jax: Any, g: Graph, inputs: list) -> list:
    """A loop body's graph (no variables, guards or draws) lowered on JAX values."""
    env: dict[int, Any] = dict(zip(g.inputs, inputs, strict=True))
    env.update(g.constants)
    for k, n in enumerate(g.nodes):
        args = [env[s] for s in n.inputs]
        params = n.params
        if n.sized:  # sizes read from the values (NOTE(sized-params)): static in JAX
            params = resolve(params, lambda slot, axis: np.shape(env[slot])[axis])
        out = _static(n, args, params)
        if out is None:
            out = lower_node(jax, g, n, args, params)
        for o, v in zip(n.outputs, out if n.prim.multiple_results else (out,), strict=True):
            env[o] = v
    return [env[o] for o in g.outputs]


_WIDE = {np.dtype(t) for t in (np.float64, np.int64, np.uint64, np.complex128)}


def _needs_x64(g: Graph) -> bool:
    return any(np.dtype(dtype) in _WIDE for _, dtype in g.avals.values())


def _states(g: Graph, draws: list) -> list:
    """The states of the generators these draws of `g` take their numbers from."""
    generators = {id(gen): gen for k in draws if (gen := g.nodes[k].params.get("generator"))
                  is not None}
    return [(gen, gen.bit_generator.state) for gen in generators.values()]


def _restore(states: list) -> None:
    for gen, state in states:
        gen.bit_generator.state = state


def _on_host(arrays: tuple) -> list:
    """The arrays as NumPy arrays, for the NumPy replay (a device array copied)."""
    return [a if isinstance(a, (np.ndarray, np.generic)) else np.asarray(a) for a in arrays]


# NOTE(dynamic-shapes) in ops/structural.py: a size-generic graph computes shapes with
# ops (shape_p, then slicing, stacking). JAX needs them static; they are, since every
# array's shape is static in a JAX trace. So a node whose inputs are all small NumPy
# values (shapes, constants) runs its NumPy impl while the graph is lowered, and its
# result stays a NumPy value for the ops after it.
_STATIC_AT_MOST = 64


def _static(n: Node, args: list, params: dict) -> Any:
    """The node's result computed with NumPy now, if its inputs are small NumPy values and
    so is its result; None otherwise."""
    if STATEFUL in n.prim.effects or not all(isinstance(a, (np.ndarray, np.generic)) and
                                  a.size <= _STATIC_AT_MOST for a in args):
        return None
    out = n.prim.impl(*args, **params)
    outs = out if n.prim.multiple_results else (out,)
    if all(isinstance(o, (np.ndarray, np.generic)) and o.size <= _STATIC_AT_MOST for o in outs):
        return out
    return None


# NOTE(generated-basis): a reverse-mode Jacobian's cotangents are rows of the one-hot basis
# (batching.one_hot_rows), a constant of the traced graph: [m, m] for m outputs, 64 MB at
# the 4096-output tall Jacobian in float32. As an XLA literal it is read from memory at
# every call (slower than JAX's jit, whose jacrev builds the basis from iotas inside the
# fusion that reads it) and embedded in the executable at compile time (a first call
# several times JAX's; docs/performance-notes.md, #generated-basis). So a large constant
# that is such a block of rows (row r is 1 at flat position start + r and 0 elsewhere;
# with a repeat axis, the same for every example) is lowered as iotas compared, which XLA
# fuses into its readers. Recognizing it costs two passes over the constant, once per
# compile, and only constants of a MiB or more are examined.
_GENERATED_FROM = 1 << 20


def one_hot_form(value: Any) -> tuple | None:
    """(start, repeat) where `value` ([n, *shape], or [n, repeat, *shape]) is rows start..
    start + n of the one-hot basis (NOTE(generated-basis)), repeat None for the plain form;
    None for any other value (a negative zero included), or one under a MiB.

    Example:
        >>> import numpy as np
        >>> from tapeflow.graph.xla import one_hot_form
        >>> eye = np.eye(1000)
        >>> one_hot_form(eye[200:]), one_hot_form(eye[::-1]), one_hot_form(eye[:10])
        ((200, None), None, None)
    """
    if not isinstance(value, np.ndarray) or value.nbytes < _GENERATED_FROM or value.ndim < 2 \
            or _dt.kind(value.dtype) not in "fciub":
        return None
    n = value.shape[0]
    nonzero = np.count_nonzero(value)
    if nonzero == n:
        rows, repeat = value.reshape(n, 1, -1), None
    elif value.ndim >= 3 and nonzero == n * value.shape[1]:
        rows, repeat = value.reshape(n, value.shape[1], -1), value.shape[1]
    else:
        return None
    at = rows.argmax(axis=2)  # [n, repeat]: the column of each row's nonzero
    start = int(at[0, 0])
    if not (at == start + np.arange(n)[:, None]).all() or start + n > rows.shape[2]:
        return None
    ones = np.take_along_axis(rows, at[:, :, None], axis=2)
    if not (ones == 1).all():
        return None
    # The iotas make +0.0 where the constant could hold -0.0 (1 / x tells them apart).
    parts = () if _dt.kind(value.dtype) not in "fc" else \
        (value,) if _dt.kind(value.dtype) == "f" else (value.real, value.imag)
    return None if any(np.signbit(p).any() for p in parts) else (start, repeat)


def _lower_one_hot(jax: Any, shape: tuple, dtype: Any, start: int, repeat: int | None) -> Any:
    """The rows `one_hot_form` recognized, built of iotas."""
    lax, n = jax.lax, shape[0]
    inner = shape[1:] if repeat is None else shape[2:]
    size = int(np.prod(inner, dtype=np.int64))
    row = lax.broadcasted_iota(np.int32, (n, size), 0)
    col = lax.broadcasted_iota(np.int32, (n, size), 1)
    rows = (col == row + start).astype(dtype).reshape((n,) + tuple(inner))
    if repeat is not None:
        rows = jax.numpy.broadcast_to(rows[:, None], tuple(shape))
    return rows


class _X64Flag:
    """JAX's x64 setting, read through its public name."""

    def __init__(self, jax: Any) -> None:
        self.config = jax.config

    @property
    def value(self) -> bool:
        return self.config.jax_enable_x64


def x64_flag(jax: Any) -> Any:
    """An object whose `value` is JAX's x64 setting as it is now (in this thread and
    context): JAX's own holder of it where it has one (its C++ read is faster than
    `jax.config.jax_enable_x64`: docs/performance-notes.md, #x64-switch), else a reader
    of the public name."""
    holder = getattr(jax.config, "_value_holders", {}).get("jax_enable_x64")
    return holder if holder is not None and isinstance(getattr(holder, "value", None), bool) \
        else _X64Flag(jax)


def x64_switch(jax: Any) -> tuple[Callable, Callable] | None:
    """(set, restore): `set(value)` makes JAX's x64 setting `value` in this thread and
    returns what `restore` takes back, as `jax.enable_x64(value)` entered and left; JAX's
    holder's own two C++ calls, a fraction of the context's cost (a benchmark's float32
    graphs called while the user's JAX runs in 64-bit mode enter it at every call;
    docs/performance-notes.md, #x64-switch). None where the holder has no such calls or runs a hook on change: use the
    context then."""
    holder = x64_flag(jax)
    swap, restore = getattr(holder, "swap_local", None), getattr(holder, "set_local", None)
    if swap is None or restore is None or getattr(holder, "_update_thread_local_hook", 1):
        return None
    return swap, restore


class XlaReplay:
    """Runs a graph as one XLA computation (see the module docstring)."""

    def __init__(self, g: Graph, keep_on_device: bool = False,
                 fallback: Replay | None = None) -> None:
        if g.sized:
            raise ValueError(f"internal error: graph {g.name} has sizes read at replay; "
                             "compile polymorphic.resolved(graph) instead.")
        self.graph = g
        self.keep_on_device = keep_on_device
        # The NumPy replay: the whole graph's where some node cannot compile, a call's
        # where its guard or a check fails.
        self.fallback = Replay(g) if fallback is None else fallback
        missing = missing_lowerings(g)
        self._missing = bool(missing)
        self.compiled = not missing  # runs through XLA (takes device arrays as they are)
        for name in missing:
            if name not in _WARNED:
                _WARNED.add(name)
                warnings.warn(f"function(jit_compile=True): primitive {name!r} has no XLA "
                              "lowering; graphs using it replay with NumPy.", stacklevel=3)
        if missing:
            return
        self.jax = require_jax()
        self.x64 = _needs_x64(g)
        self.draws = [k for k, n in enumerate(g.nodes)
                      if isinstance(n, Node) and PER_EXAMPLE in n.prim.effects]
        self.guards = [n for n in g.nodes if isinstance(n, Guard)]
        written = _written(g)
        self.locks = VariableLocks(written) if written else None
        self.n_assigns = sum(isinstance(n, Assign) for n in g.nodes)
        # Graphs without checks return no flag: reading one back is a device sync
        # (docs/performance-notes.md, #check-flag).
        self.checked = any(checks(g, n) for n in g.nodes)
        # NOTE(lean-call): Python run right after a compiled program runs several times
        # slower than warm (likely cold caches, the program's code and data having evicted
        # the interpreter's; this machine has no cache counters to confirm it): wrapping a
        # result in a Tensor and np.asarray of it, timed inside calls of a long chain's
        # program, take several times what they take in a loop of their own. So every
        # Python step around a call costs several times its warm time, each kind of step
        # its own: timed call by call against JAX's jit of a one-op program, a loop over
        # the one argument cost more than the same checks written out, and the calls
        # asking whether anything records, the shape and dtype check, the placed-copy
        # check and the x64 check each cost a share (docs/performance-notes.md,
        # #lean-call). So a graph with nothing to check around its computation (no
        # guards, draws, written variables or lower_checks; results to the host) takes the
        # shortest path from tensors to results: `run_tensors`, and the lean call Function
        # makes for each such signature, straight-line code generated for it
        # (graph/lean.py), which calls the jitted computation itself and cuts what a call
        # adds to JAX's own time. The computation returns its outputs alone, a single one
        # bare.
        self.simple = not (self.draws or self.guards or self.locks or self.checked
                           or keep_on_device)
        self.bare = self.simple and len(g.outputs) == 1 and g.outputs[0] is not None
        lowered = self._lowered()
        if self.bare:
            self._jitted = self.jax.jit(lambda *flat: lowered(*flat)[0][0])
        elif self.simple:
            self._jitted = self.jax.jit(lambda *flat: tuple(lowered(*flat)[0]))
        else:
            self._jitted = self.jax.jit(lowered)
        self.x64_flag, self.x64_switch = x64_flag(self.jax), x64_switch(self.jax)

    def run(self, tensors: list) -> list:
        """The executable's interface (graph/executables.py): tensors in (each placed on the
        device, NOTE(placed)), tensors out: DeviceTensors with keep_on_device, else host
        tensors (the NumPy fallback's always)."""
        if not self.compiled:
            return self.fallback.run(tensors)
        results = self.run_tensors(tensors)
        if self.keep_on_device:
            return [None if a is None else _wrap_result(a) for a in results]
        return [None if a is None else Tensor(a) for a in results]

    def lean(self, arg_keys: tuple) -> Callable[[tuple], Any] | None:
        """The lean call of a signature (NOTE(lean-call), graph/lean.py) where this graph
        compiled with nothing to check around its computation; else None."""
        if not (self.compiled and self.simple):
            return None
        return lean_call(self, self.graph, arg_keys)

    def _lowered(self) -> Callable:
        g, jax = self.graph, self.jax
        inputs, outputs = list(g.inputs), list(g.outputs)
        # NOTE(generated-basis): (slot, value, None) or (slot, shape, dtype, its form)
        constants = [(s, v, None) if (form := one_hot_form(v)) is None else
                     (s, (v.shape, v.dtype), form) for s, v in g.constants.items()]
        var_slots = list(g.var_slots.items())
        draw_index = {k: i for i, k in enumerate(self.draws)}
        n_in, n_vars = len(inputs), len(g.variables)

        # Flat positional arguments (inputs, variables, then the drawn arrays if the graph
        # draws): JAX's C++ dispatch takes them without flattening lists.
        def run(*flat: Any) -> tuple:
            env: dict[int, Any] = dict(zip(inputs, flat[:n_in], strict=True))
            variables = flat[n_in:n_in + n_vars]
            drawn = flat[n_in + n_vars:]
            for s, value, form in constants:
                env[s] = value if form is None else _lower_one_hot(jax, *value, *form)
            for s, i in var_slots:
                env[s] = variables[i]
            guard_values, assigned, flags = [], {}, []
            for k, n in enumerate(g.nodes):
                if isinstance(n, Node):
                    checked = checks(g, n)
                    args = [env[s] for s in n.inputs]
                    params = dict(n.params)
                    if k in draw_index:  # NOTE(host-draws)
                        params["drawn"] = drawn[draw_index[k]]
                    out = _static(n, args, params)
                    if out is None:
                        if checked:
                            flags.append(n.prim.rules["lower"].check(jax, *args, **params))
                        out = lower_node(jax, g, n, args, params)
                    outs = out if n.prim.multiple_results else (out,)
                    for o, v in zip(n.outputs, outs, strict=True):
                        env[o] = v
                elif isinstance(n, Guard):
                    guard_values.append(env[n.slot])
                else:  # Assign: the variable's value from here on, its reads included
                    assigned[n.var] = env[n.slot]
                    for s, i in var_slots:
                        if i == n.var:
                            env[s] = env[n.slot]
            outs = [None if o is None else env[o] for o in outputs]
            ok = jax.numpy.all(jax.numpy.stack([jax.numpy.all(c) for c in flags])) \
                if flags else None
            return outs, guard_values, assigned, ok

        return run

    def run_tensors(self, tensors: list) -> list:
        """The results (NumPy arrays, or device arrays with keep_on_device) for these
        tensors, each placed on the device (NOTE(placed)); as `__call__` otherwise."""
        jax = self.jax
        if not self.simple:
            return self(*[placed(t, jax) for t in tensors])
        outs = self._computation([placed(t, jax) for t in (*tensors, *self.graph.variables)])
        return [None if o is None else np.asarray(o) for o in outs]

    def _computation(self, flat: Any) -> tuple:
        """The compiled computation's (outputs, guard values, assigned values, checks) for
        its flat arguments (inputs, variables, drawn arrays if it draws), run in the graph's
        64-bit mode; a simple graph's outputs alone, as a tuple (its computation returns a
        single one bare, one less level for JAX's dispatch to unpack)."""
        if self.x64_flag.value == self.x64:
            outs = self._jitted(*flat)
        elif self.x64_switch is not None:
            before = self.x64_switch[0](self.x64)
            try:
                outs = self._jitted(*flat)
            finally:
                self.x64_switch[1](before)
        else:
            with self.jax.enable_x64(self.x64):
                outs = self._jitted(*flat)
        return (outs,) if self.bare else outs

    def __call__(self, *arrays: Any) -> list:
        if self._missing:
            return self.fallback(*_on_host(arrays))
        if self.locks is None:
            return self._run(arrays)
        with self.locks:
            return self._run(arrays)

    def _run(self, arrays: tuple) -> list:
        g = self.graph
        # NOTE(host-draws); where the NumPy replay may take the call over, the generators'
        # states, so that it draws the same numbers and moves them only as far.
        states = _states(g, self.draws) if self.draws and (self.guards or self.checked) \
            else None
        drawn = [g.nodes[k].prim.impl(**g.nodes[k].params) for k in self.draws]
        variables = [placed(v, self.jax) for v in g.variables]  # NOTE(placed)
        flat = (*arrays, *variables, *drawn)
        if self.simple:
            outs, guard_values, assigned, ok = self._computation(flat), (), {}, None
        else:
            outs, guard_values, assigned, ok = self._computation(flat)
        held = all(guard.holds(np.asarray(value))
                   for guard, value in zip(self.guards, guard_values, strict=True))
        if not held or (self.checked and not bool(ok)):
            # The NumPy replay decides, drawing from where this call started. A failed
            # check: an input the impl refuses (an index out of range, an integer division
            # by zero), which XLA cannot raise; the replay raises its error. A failed
            # guard: XLA's value can differ from the trace's by XLA's own rounding (an
            # ulp, a zero's sign: x + 0.0 folded), and retracing would then recompile at
            # every call; the replay raises GuardFailed where the guard truly fails,
            # else its results are the call's.
            if states is not None:
                _restore(states)
            return self.fallback(*_on_host(arrays))
        for i, value in assigned.items():
            keep_placed(g.variables[i], value)
        if self.keep_on_device:
            return list(outs)
        return [None if o is None else np.asarray(o) for o in outs]


def _wrap_result(array: Any) -> Tensor:
    """A compiled call's result kept on its device: a DeviceTensor for a device array, an
    ordinary Tensor for a NumPy one (a call that ran on NumPy: an input the impl refuses)."""
    if not isinstance(array, (np.ndarray, np.generic)):
        return DeviceTensor(array)
    return Tensor(array)
