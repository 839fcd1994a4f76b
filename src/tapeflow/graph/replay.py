"""Replaying a graph: generated straight-line NumPy code, or re-binding every node.

`compile_graph` writes one Python function per graph that calls each
primitive's implementation in order on plain arrays: no tensors, no recorder
checks, no per-node bookkeeping. Elementwise ufunc nodes write into the buffer
of an input that dies with them when it is safe (the buffer was made by the
graph, nothing else refers to it). Variable values live in locals during the
replay and are written back at the end, after every guard has passed, so an
abandoned replay changes nothing; a replay that writes variables holds their locks
from its first read to its last write, so concurrent calls update them atomically.

`interpret` replays by binding each node's primitive, so tapes, accumulators,
vmap and an enclosing trace see every op: that is how a traced function stays
differentiable from outside. Fast replay is checked against it in the tests.
"""

from __future__ import annotations

import math
import operator
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..catalog import CALLS_USER_CODE, HOST_CALLBACK, IDENTITY, READS_VARIABLE, STATEFUL
from ..core import bind, reading_records
from ..tensor import Tensor
from .ir import Assign, Graph, Guard, Node, resolve
from .specialize import node_impl
from .trace import TracingError

__all__ = ["GuardFailed", "Replay", "VariableLocks", "compile_graph", "interpret", "plan_runner"]

_HOW = {"bool": "bool()", "float": "float()", "int": "int()", "index": "__index__",
        "complex": "complex()", "array": "numpy()"}


class GuardFailed(Exception):
    """A replay read a different value than the trace did at `guard` (the Guard node)."""

    def __init__(self, guard: Guard) -> None:
        super().__init__(guard.where)
        self.guard = guard


class VariableLocks:
    """The locks of the variables a replay writes, taken in one order (by variable id) for
    the whole replay: concurrent calls update each variable atomically, never deadlock."""

    def __init__(self, variables: list) -> None:
        self.locks = [v._lock for v in sorted(variables, key=lambda v: v._id)]

    def __enter__(self) -> None:
        for lock in self.locks:
            lock.acquire()

    def __exit__(self, *exc: Any) -> None:
        for lock in reversed(self.locks):
            lock.release()


def _written(g: Graph) -> list:
    """The variables the graph assigns to, once each."""
    return [g.variables[i] for i in sorted({n.var for n in g.nodes if isinstance(n, Assign)})]


def _reusable_buffers(g: Graph) -> dict[int, int]:
    """node index -> input slot whose buffer the node may overwrite (out=)."""
    last_use: dict[int, int] = {}
    only_ufunc_uses: dict[int, bool] = {}
    made_by_ufunc: set[int] = set()
    protected = set(g.inputs) | set(g.constants) | set(g.var_slots) | \
        {o for o in g.outputs if o is not None}
    for k, n in enumerate(g.nodes):
        if isinstance(n, Node):
            is_ufunc = isinstance(n.prim.impl, np.ufunc) and not n.params
            for i in n.inputs:
                last_use[i] = k
                only_ufunc_uses[i] = only_ufunc_uses.get(i, True) and is_ufunc
            if is_ufunc and not n.prim.multiple_results:
                made_by_ufunc.add(n.outputs[0])
        else:
            last_use[n.slot] = k
            only_ufunc_uses[n.slot] = False  # assigned or guarded values stay untouched
    reuse = {}
    for k, n in enumerate(g.nodes):
        if not (isinstance(n, Node) and isinstance(n.prim.impl, np.ufunc) and not n.params):
            continue
        out_shape, out_dtype = g.avals[n.outputs[0]]
        if out_shape == ():
            continue  # NumPy returns scalars for rank 0: nothing to write into
        for i in n.inputs:
            if (i in made_by_ufunc and i not in protected and last_use.get(i) == k
                    and only_ufunc_uses.get(i) and g.avals[i] == (out_shape, out_dtype)):
                reuse[k] = i
                break
    return reuse


FREE_AT_BYTES = 1 << 16  # a replay drops a buffer this large as soon as its last use is done
# Replays of a graph run by the plan interpreter before it is compiled to Python code.
# CPython's compile of a node costs once about what the interpreter's extra cost per call
# over compiled code adds up to in this many calls: compiling after them bounds the
# overhead of either choice by about the cost of the other (docs/performance-notes.md,
# #compile-after).
COMPILE_AFTER = 64


def _last_uses(g: Graph) -> dict[int, list[int]]:
    """node index -> the slots to drop after it: large node outputs (FREE_AT_BYTES), not
    graph outputs, whose last use that node is (or the node that made them, if unused)."""
    keep = {o for o in g.outputs if o is not None} | set(g.constants) | set(g.var_slots)
    last: dict[int, int] = {}
    for k, n in enumerate(g.nodes):
        if isinstance(n, Node):
            for s in n.inputs:
                last[s] = k
            for s in n.outputs:
                last.setdefault(s, k)
        else:
            last[n.slot] = k
    drop: dict[int, list[int]] = {}
    for s, k in last.items():
        shape, dtype = g.avals[s]
        if s not in keep and math.prod(shape) * np.dtype(dtype).itemsize >= FREE_AT_BYTES:
            drop.setdefault(k, []).append(s)
    return drop


_RERUN_NOT = frozenset((STATEFUL, HOST_CALLBACK, CALLS_USER_CODE))
# The operators `specialize.node_impl` picks for arithmetic on NumPy scalars, written
# inline in generated code: a Python call costs more than the operation (loop kernels
# write the same ufuncs so too: graph/kernels.py).
INFIX = {operator.add: "{} + {}", operator.sub: "{} - {}", operator.mul: "{} * {}",
          operator.truediv: "{} / {}", operator.neg: "-{}"}


def compile_graph(g: Graph, impls: dict | None = None) -> Callable[..., list]:
    """A Python function: input arrays -> output arrays, with the graph's guards inline.
    Large intermediate buffers are dropped after their last use, so a replay's peak memory
    is what the computation needs at once, not the whole graph's. `impls` gives some
    nodes (by index) another impl of their own (a loop kernel: graph/kernels.py)."""
    if g.sized:
        raise ValueError(f"internal error: graph {g.name} has sizes read at replay; compile "
                         "polymorphic.resolved(graph) instead.")
    ns: dict[str, Any] = {"GuardFailed": GuardFailed, "np": np}
    ref: dict[int, str] = {s: f"v{s}" for s in g.inputs}
    for s, value in g.constants.items():
        ns[f"c{s}"] = value
        ref[s] = f"c{s}"
    lines = [f"def replay_{_ident(g.name)}({', '.join(f'v{s}' for s in g.inputs)}):"]
    for s, i in g.var_slots.items():
        ns[f"V{i}"] = g.variables[i]
        lines.append(f"    w{i} = V{i}._value")
        ref[s] = f"w{i}"
    written = set()
    reuse = _reusable_buffers(g)
    drop = _last_uses(g)
    names = _Names(g, ns, lines, ref)
    arr = names.numpy
    for k, n in enumerate(g.nodes):
        if k - 1 in drop:
            lines.append(f"    del {', '.join(ref[s] for s in drop[k - 1])}")
        if isinstance(n, Node):
            if IDENTITY in n.prim.effects:
                args = ", ".join(arr(i) for i in n.inputs)
                lines.append(f"    {names.made(n.outputs)} = {args}")
                continue
            fn = ns[f"f{k}"] = impls[k] if impls and k in impls else node_impl(g, n)
            out_arg = f", out={ref[reuse[k]]}" if k in reuse else ""
            infix = INFIX.get(fn) if not out_arg else None
            if infix is not None:  # NumPy scalars' arithmetic, spelled out (#scalar-operators)
                read = names.python if names.floats(n) else arr
                operands = [read(i) for i in n.inputs]
                names.done(k, n.inputs)
                lines.append(f"    {names.made(n.outputs, read is not arr)} = "
                             f"{infix.format(*operands)}")
                continue
            args = ", ".join(arr(i) for i in n.inputs)
            if n.prim.multiple_results:
                lines.append(f"    {names.made(n.outputs)}, = f{k}({args})")
            else:
                lines.append(f"    {names.made(n.outputs)} = f{k}({args}{out_arg})")
        elif isinstance(n, Guard):
            ns[f"g{k}"] = n
            if n.how == "bool":
                lines.append(f"    if bool({arr(n.slot)}) is not {n.expected}: raise GuardFailed(g{k})")
            else:
                lines.append(f"    if not g{k}.holds({arr(n.slot)}): raise GuardFailed(g{k})")
        else:  # Assign: the variable's value from here on
            lines.append(f"    w{n.var} = {arr(n.slot)}")
            written.add(n.var)
    if len(g.nodes) - 1 in drop:
        lines.append(f"    del {', '.join(ref[s] for s in drop[len(g.nodes) - 1])}")
    for i in sorted(written):
        lines.append(f"    V{i}._value = np.array(w{i}, copy=True)")
    lines.append(f"    return [{', '.join('None' if o is None else arr(o) for o in g.outputs)}]")
    if names.divides:  # NOTE(python-floats): x / 0. raises where NumPy gives inf
        ns["exact"] = plan_runner(g, impls=impls)
        params = ", ".join(f"v{s}" for s in g.inputs)
        lines = lines[:1] + ["    try:"] + ["    " + line for line in lines[1:]] + [
            "    except ZeroDivisionError:", f"        return exact({params})"]
    if written:
        ns["locks"] = VariableLocks(_written(g))
        lines = lines[:1] + ["    with locks:"] + ["    " + line for line in lines[1:]]
    src = "\n".join(lines) + "\n"
    code = compile(src, f"<tapeflow graph {g.name}>", "exec")
    exec(code, ns)  # noqa: S102 - our own generated straight-line code
    fn = ns[f"replay_{_ident(g.name)}"]
    fn.source = src
    return fn


# NOTE(python-floats): generated code holds a float64 made by scalar arithmetic (an
# operator of #scalar-operators) as a Python float, whose arithmetic is the same IEEE
# double operation at a third of a NumPy scalar's cost. Every other reader gets it back
# as np.float64 (converted once), so ufuncs, guards and outputs see what they saw before:
# NumPy's promotion treats a Python float as weak, np.float64 not. Two differences
# remain. Python raises ZeroDivisionError where NumPy divides by zero: generated code
# with such a division reruns the call on the plan interpreter, which gives NumPy's inf
# or NaN (and its warning); a graph that draws random numbers or calls back into Python,
# whose rerun would repeat them, keeps NumPy scalars. And `np.errstate` no longer turns
# an overflow or an invalid operation in that arithmetic into an error.
class _Names:
    """The names generated code gives a graph's values: each slot's as made (`ref`), its
    Python float twin and its NumPy twin, each converted once where first read."""

    def __init__(self, g: Graph, ns: dict, lines: list, ref: dict) -> None:
        self.g, self.ns, self.lines, self.ref = g, ns, lines, ref
        self.allowed = not any(type(n) is Node and not n.prim.effects.isdisjoint(_RERUN_NOT)
                               for n in g.nodes)
        self.pyfloat: set[int] = set()   # slots made as Python floats
        self.twin: dict[int, str] = {}
        self.divides = False
        # A Python float's name is given to the next one once its value is read for the
        # last time: the float is freed there and its memory reused, where 36,000 floats
        # alive to the end cost twice the arithmetic (an RK4 gradient's scalar code).
        self.last: dict[int, int] = {}
        for k, n in enumerate(g.nodes):
            for s in (n.inputs if type(n) is Node else (n.slot,)):
                self.last[s] = k
        for o in g.outputs:
            self.last[o] = len(g.nodes)
        self.free: list[str] = []

    def floats(self, n: Node) -> bool:
        """Whether node n (scalar arithmetic) computes on Python floats."""
        if not self.allowed or self.g.avals[n.outputs[0]][1] != np.float64:
            return False
        if n.prim.impl is np.divide:
            self.divides = True
        return True

    def made(self, outputs: list, pyfloat: bool = False) -> str:
        for o in outputs:
            self.ref[o] = self.free.pop() if pyfloat and self.free else f"v{o}"
        if pyfloat:
            self.pyfloat.update(outputs)
        return ", ".join(self.ref[o] for o in outputs)

    def done(self, k: int, inputs: list) -> None:
        """Node k has read `inputs`: the Python floats it read last free their names."""
        for s in set(inputs):
            if s in self.pyfloat and self.last[s] == k:
                self.free.append(self.ref[s])

    def python(self, s: int) -> str:
        if s in self.pyfloat:
            return self.ref[s]
        name = self.twin.get(s)
        if name is None:
            name = self.twin[s] = f"p{s}"
            if s in self.g.constants:
                self.ns[name] = float(self.g.constants[s])
            else:
                self.lines.append(f"    {name} = float({self.ref[s]})")
        return name

    def numpy(self, s: int) -> str:
        if s not in self.pyfloat:
            return self.ref[s]
        name = self.twin.get(s)
        if name is None:
            name = self.twin[s] = f"n{s}"
            self.lines.append(f"    {name} = np.float64({self.ref[s]})")
        return name


# Step codes of the plan interpreter.
_CALL1, _CALL2, _CALL, _MULTI, _PASS, _GUARD, _ASSIGN, _DROP, _SIZED = range(9)


def plan_runner(g: Graph, avals: dict | None = None,
                impls: dict | None = None) -> Callable[..., list]:
    """A function: input arrays -> output arrays, that runs the graph by walking a list of
    steps (no code generation): what a cold graph replays with. Same semantics as
    `compile_graph`: guards checked in order, variables read at the start and written
    after the last guard (under their locks), large buffers dropped after their last use.

    Given `avals` (a dict), the run fills it with the shape and dtype of every slot, and
    makes no choice from the graph's own shapes (no specialized impls, no early drops):
    a size-generic graph's first run at new sizes (graph/polymorphic.py). `impls` as
    `compile_graph`'s."""
    steps: list[tuple] = []
    recording = avals is not None
    drop = {} if recording else _last_uses(g)
    if g.sized and not recording:
        raise ValueError(f"internal error: graph {g.name} has sizes read at replay; run it "
                         "recording its shapes, or replay polymorphic.resolved(graph).")
    for k, n in enumerate(g.nodes):
        if isinstance(n, Node):
            fn = impls[k] if impls and k in impls else node_impl(g, n, specialize=not recording)
            ins, outs = tuple(n.inputs), tuple(n.outputs)
            if n.sized:  # params read from the shapes of this run (NOTE(sized-params))
                steps.append((_SIZED, n, ins, outs))
            elif IDENTITY in n.prim.effects:
                steps.append((_PASS, None, ins[0], outs[0]))
            elif n.prim.multiple_results:
                steps.append((_MULTI, fn, ins, outs))
            elif len(ins) == 1:
                steps.append((_CALL1, fn, ins[0], outs[0]))
            elif len(ins) == 2:
                steps.append((_CALL2, fn, ins, outs[0]))
            else:
                steps.append((_CALL, fn, ins, outs[0]))
        elif isinstance(n, Guard):
            steps.append((_GUARD, n, n.slot, None))
        else:
            slots = tuple(v for v, i in g.var_slots.items() if i == n.var)
            steps.append((_ASSIGN, None, n.slot, (n.var, slots)))
        if k in drop:
            steps.append((_DROP, None, tuple(drop[k]), None))
    size = g.next_slot
    inputs, outputs = list(g.inputs), list(g.outputs)
    constants = list(g.constants.items())
    var_slots = list(g.var_slots.items())
    written = _written(g)
    locks = VariableLocks(written) if written else None

    def run(*arrays: Any) -> list:
        env: list = [None] * size
        for s, a in zip(inputs, arrays):
            env[s] = a
        for s, value in constants:
            env[s] = value
        if locks is None:
            return _walk(env)
        with locks:
            return _walk(env)

    def _walk(env: list) -> list:
        for s, i in var_slots:
            env[s] = g.variables[i]._value
        pending: dict[int, Any] = {}
        for code, fn, a, b in steps:
            if code == _CALL1:
                env[b] = fn(env[a])
            elif code == _CALL2:
                env[b] = fn(env[a[0]], env[a[1]])
            elif code == _PASS:
                env[b] = env[a]
            elif code == _CALL:
                env[b] = fn(*[env[i] for i in a])
            elif code == _MULTI:
                for o, v in zip(b, fn(*[env[i] for i in a])):
                    env[o] = v
            elif code == _DROP:
                for s in a:
                    env[s] = None
            elif code == _SIZED:
                params = resolve(fn.params, lambda slot, axis: np.shape(env[slot])[axis])
                out = fn.prim.impl(*[env[i] for i in a], **params)
                for o, v in zip(b, out if fn.prim.multiple_results else (out,)):
                    env[o] = v
            elif code == _GUARD:
                value = env[a]
                if not fn.holds(value):
                    raise GuardFailed(fn)
            else:  # _ASSIGN: the variable's value from here on (its reads see it too)
                pending[b[0]] = env[a]
                for s in b[1]:
                    env[s] = env[a]
        for i, value in pending.items():
            g.variables[i]._value = np.array(value, copy=True)
        if recording:
            for s, value in enumerate(env):
                if value is not None:
                    value = np.asarray(value)
                    avals[s] = (value.shape, value.dtype)
        return [None if o is None else env[o] for o in outputs]

    return run


class Replay:
    """Runs a graph on arrays: by `plan_runner` while cold, then (after COMPILE_AFTER
    calls) by the code `compile_graph` generates. Tracing pays neither code generation
    nor CPython's compile(), which cost more than a short-lived graph ever replays. An
    executable (graph/executables.py): `run` takes and gives tensors. `impls` gives some
    nodes (by index) another impl of their own (a loop kernel: graph/kernels.py)."""

    def __init__(self, g: Graph, impls: dict | None = None) -> None:
        self.graph = g
        self.impls = impls
        self.calls = 0
        self._compiled: Callable[..., list] | None = None
        self._fn = plan_runner(g, impls=impls)

    def __call__(self, *arrays: Any) -> list:
        if self._compiled is None:
            self.calls += 1
            if self.calls > COMPILE_AFTER:
                return self.compiled()(*arrays)
        return self._fn(*arrays)

    def run(self, tensors: list) -> list:
        """The executable's interface (graph/executables.py): tensors in, tensors out."""
        return [None if a is None else Tensor(a) for a in self(*[t._value for t in tensors])]

    def lean(self, arg_keys: tuple) -> None:
        return None  # a NumPy replay's call path is its own generated code

    def compiled(self) -> Callable[..., list]:
        """The generated code (compiled now if not yet); `.source` holds its text."""
        if self._compiled is None:
            self._compiled = compile_graph(self.graph, self.impls)
            self._fn = self._compiled
        return self._compiled


def _ident(name: str) -> str:
    return "".join(c if c.isalnum() else "_" for c in name) or "fn"


def replayed_grad_fn(n: Node, env: dict) -> Callable:
    """The node's custom grad_fn for this replay: its traced backward graph, reading the
    values of this replay (not those of the traced call).

    The backward graph was traced on placeholder cotangents; if the user's grad_fn read a
    value (a guard of that graph) and reads another one now, the graph does not apply.
    Where this replay's forward values are those of the traced call, the user's grad_fn
    itself is then exact (its closure holds those very values); otherwise it is an error
    that says so, never a wrong number.
    """
    refs = [env[r] for r in n.backward.refs]
    n_inputs = n.params["n_inputs"]

    def grad_fn(*cts: Any, variables: list | None = None) -> Any:
        try:
            grads = interpret(n.backward.graph, list(cts) + refs)
        except GuardFailed as failed:
            same = all(np.array_equal(r._value, v, equal_nan=_dt.kind(np.asarray(v).dtype) in "fc")
                       for r, v in zip(refs, n.backward.ref_values, strict=True))
            if not same:
                raise TracingError(
                    f"tapeflow.function: a custom_gradient's grad_fn read a value while it was "
                    f"traced, at {failed.guard.where}, and this replay needs another value "
                    "there at other inputs than the traced call's. A traced function's custom "
                    "gradient cannot branch on values: use tf.where, or call it outside "
                    "tf.function.") from None
            original = n.params["grad_fn"]
            with reading_records():  # its closure holds the traced call's tensors
                return original(*cts, variables=variables) if variables else original(*cts)
        return (grads[:n_inputs], grads[n_inputs:]) if variables else grads

    return grad_fn


def interpret(g: Graph, inputs: list[Tensor], values: dict | None = None) -> list:
    """Replay by binding each node: every active recorder sees the ops. `values`, if
    given, receives every slot's tensor (a loop body's intermediates, control_flow.py)."""
    with VariableLocks(_written(g)):
        return _interpret(g, inputs, {} if values is None else values)


def _bind_captured(g: Graph, env: dict) -> None:
    """The captured tensors still alive in place of their constants, and the ops folded
    from them run again (NOTE(captures) in graph/ir.py): the recorders see them used."""
    alive = False
    for s, ref in g.captured.items():
        t = ref()
        if t is not None:
            env[s] = t
            alive = True
    if alive:
        for n in g.prelude:
            out = bind(n.prim, *[env[i] for i in n.inputs], **n.params)
            for o, t in zip(n.outputs, out if n.prim.multiple_results else [out], strict=True):
                env[o] = t


def _interpret(g: Graph, inputs: list[Tensor], env: dict) -> list:
    env.update(zip(g.inputs, inputs, strict=True))
    for s, value in g.constants.items():
        env[s] = Tensor(value)
    if g.captured:
        _bind_captured(g, env)
    for s, i in g.var_slots.items():
        env[s] = g.variables[i]
    pending: dict[int, Tensor] = {}
    for k, n in enumerate(g.nodes):
        if isinstance(n, Node):
            if READS_VARIABLE in n.prim.effects and g.var_slots.get(n.inputs[0]) in pending:
                env[n.outputs[0]] = pending[g.var_slots[n.inputs[0]]]
                continue
            params = n.params
            if n.sized:  # NOTE(sized-params) in graph/polymorphic.py
                params = resolve(params, lambda slot, axis: np.shape(env[slot]._value)[axis])
            if n.backward is not None:
                params = dict(params, grad_fn=replayed_grad_fn(n, env))
            out = bind(n.prim, *[env[i] for i in n.inputs], **params)
            for o, t in zip(n.outputs, out if n.prim.multiple_results else [out], strict=True):
                env[o] = t
        elif isinstance(n, Guard):
            # A read through the hook: an enclosing trace records this guard too (a shape
            # guard reads no value: the op that made it guards again in that trace).
            t = env[n.slot]
            value = t._value if n.how in ("shape", "size") else \
                t._read_for_python(_HOW[n.how])
            if not n.holds(value):
                raise GuardFailed(n)
        else:
            pending[n.var] = env[n.slot]
    for i, t in pending.items():
        g.variables[i].assign(t)
    return [None if o is None else env[o] for o in g.outputs]
