"""Primitives, the per-thread recorder stack, and `bind`: what every interpreter shares.

Every tapeflow computation is a sequence of *primitive* applications. A
`Primitive` holds, in one place, its NumPy implementation and the rules every
interpreter needs (reverse, forward, batching). `bind` runs the implementation
and then lets each active recorder (tape, accumulator, batcher, tracer) see the op.

NOTE(strict-nesting): recorders sit on one per-thread stack in the order they
were entered. `bind` offers each op to the recorders bottom-up; a recorder at
level k that runs rules (an accumulator computing a JVP, a tape running its
backward pass) does so with the stack cut to `stack[:k]`, so the ops of its
rules are seen only by recorders entered before it. This single rule gives
TensorFlow's documented semantics: inner accumulators do not see outer
accumulators' JVP computations, deeper tapes ignore outer accumulators'
products, `outer.jvp(inner.jvp(y))` is a second derivative, and
forward-over-backward Hessian-vector products work.

NOTE(zero): a missing tangent or cotangent is the symbolic `Zero`, which
carries shape and dtype but no data; rules skip it instead of multiplying by
zeros.

The stack belongs to this module alone. Other modules enter recorders with
``with recorder:``, cut the stack for rules (`run_below`, `call_below`),
narrow it (`substack`), and report what recorders must hear of besides ops:
Python reads of tensor values (`value_read`) and variable writes
(`variable_written`).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import catalog as _catalog
from .tensor import Tensor, TensorShape

__all__ = ["Primitive", "Zero", "Husk", "bind", "registry", "Recorder", "current_stack",
           "recording", "run_below", "call_below", "substack", "no_recorders", "reading_records",
           "records_open", "value_read", "sizes", "python_shape", "symbolic_name",
           "variable_created", "variable_written", "read_variable_p", "symbolic", "surely_same"]


class Zero:
    """Symbolic zero tangent/cotangent: shape and dtype, no data (NOTE(zero))."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def like(cls, x: Any) -> "Zero":
        if dynamic_traces[0]:
            return cls(sizes(x), x.dtype if type(x) is Husk else x._value.dtype)
        if type(x) is Husk:
            return cls(x.shape, x.dtype)
        v = x._value
        return cls(np.shape(v), v.dtype)

    def instantiate(self) -> Tensor:
        if dynamic_traces[0] and any(type(d) is not int for d in self.shape):
            # sizes a size-generic trace reads when it runs (NOTE(symbolic-sizes))
            return bind(_REGISTRY["fill"], shape=self.shape, value=0, dtype=self.dtype)
        return Tensor(np.zeros(self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"Zero(shape={self.shape}, dtype={self.dtype})"


class Husk:
    """What a tape keeps of an op's input or output that the op's VJP rule never reads
    (NOTE(saved-values) in tape): its shape and dtype, not its data, so the array can
    be freed while the tape lives. Reading its value is an internal error, raised at
    once: a rule that needs the data must say so (`rule_reads` in ops/structural)."""

    __slots__ = ("shape", "dtype", "_prim", "_key")

    def __init__(self, x: Any, prim: str) -> None:
        v = x._value
        self.shape = v.shape  # an ndarray or a NumPy scalar: both have shape and dtype
        self.dtype = v.dtype
        self._prim = prim
        self._key = x._key  # its tensor's name: a trace still knows its sizes (`sizes`)

    @property
    def _value(self) -> Any:
        raise RuntimeError(f"internal error: the VJP rule of {self._prim!r} read a value that "
                           "its declaration (rule_reads) says it does not read; the tape did not "
                           "keep it. Please report this.")

    def __repr__(self) -> str:
        return f"Husk(shape={self.shape}, dtype={self.dtype}, of={self._prim!r})"


_REGISTRY: dict[str, "Primitive"] = {}


def registry() -> dict[str, "Primitive"]:
    """All registered primitives by name (a copy)."""
    return dict(_REGISTRY)


# The files whose functions make primitives on behalf of their callers: this one and the
# rule toolkit (a family such as `unary`).
_PACKAGE = os.path.dirname(os.path.abspath(__file__))
_MAKERS = (os.path.abspath(__file__),
           os.path.join(os.path.dirname(os.path.abspath(__file__)), "ops", "structural.py"))


def _definition_site() -> str:
    """`file:line` of the code that defined a primitive (not a maker function's)."""
    frame = sys._getframe(2)
    while (frame.f_back is not None and frame.f_code.co_name != "<module>"
           and os.path.abspath(frame.f_code.co_filename) in _MAKERS):
        frame = frame.f_back
    return f"{frame.f_code.co_filename}:{frame.f_lineno}"


class Primitive:
    """One primitive operation: its NumPy `impl`, its rules and its effects, defined once.

    A primitive holds what every interpreter needs: its `name`, its `impl` (NumPy arrays
    in, an array out, or a list of arrays with `multiple_results`), where it was defined
    (`defined_at`), its `rules` (one per kind of the catalog, tapeflow/catalog.py:
    jvp, vjp, reads, batch, sparsity, lower, passes, form; assigned by `catalog.define`)
    and its `effects` (catalog.EFFECTS: what it is to the interpreters, which act on
    effects and never on names). Rules are written with tapeflow ops
    (NOTE(strict-nesting)); the catalog gives each kind's signature and reader.

    Example:
        >>> import numpy as np
        >>> from tapeflow.core import registry
        >>> registry()["sin"].impl(np.array(0.0))
        np.float64(0.0)
    """

    __slots__ = ("name", "impl", "multiple_results", "rules", "effects", "defined_at")

    def __init__(self, name: str, impl: Callable[..., Any], *, multiple_results: bool = False,
                 effects: Any = ()) -> None:
        if name in _REGISTRY:
            raise ValueError(f"primitive {name!r} is already defined at "
                             f"{_REGISTRY[name].defined_at}")
        effects = frozenset(effects)
        unknown = [e for e in effects if not isinstance(e, _catalog.Effect)]
        if unknown:
            raise TypeError(f"primitive {name!r}: effects must be catalog.Effect objects; got "
                            f"{unknown!r}.")
        self.name = name
        self.impl = impl
        self.multiple_results = multiple_results
        self.rules: dict[str, Any] = {}
        self.effects = effects
        self.defined_at = _definition_site()
        _REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"<Primitive {self.name}>"

    def __reduce__(self) -> Any:
        # Interpreters compare primitives by identity: a pickled one is loaded by name as
        # the registered one, never as a second copy.
        return (_registered, (self.name,))


def _registered(name: str) -> Primitive:
    """The registered primitive `name` (how a pickled primitive is loaded)."""
    if name not in _REGISTRY:
        raise LookupError(f"primitive {name!r} is not defined in this process: import the module "
                          "that defines it before loading a pickle that uses it (on Dask workers: "
                          "install that module on every worker).")
    return _REGISTRY[name]


# ---------------------------------------------------------------------------- the stack
class _State(threading.local):
    def __init__(self) -> None:
        self.stack: tuple[Recorder, ...] = ()
        self.records = 0  # depth of reading_records blocks


_state = _State()

# The calling thread's recorder stack (empty while nothing records), read by a C call: a
# hot path that only tests it pays no Python frame (NOTE(lean-call) in graph/xla.py).
recorder_stack: Callable[[], tuple] = functools.partial(getattr, _state, "stack")


class Recorder:
    """Base of the interpreters that watch ops as they run (tapes, accumulators, batchers,
    tracers). ``with recorder:`` enters it on this thread's stack and leaves it on exit;
    recorders must exit in the reverse order they entered, and one cannot be entered twice
    at once.

    Subclasses set what they take part in: `batching` recorders may claim ops (see `bind`);
    `differentiates` ones (tapes, accumulators) take derivatives, `reverse` ones (tapes)
    in reverse mode (`bind` binds a primitive's differentiation form under them, the
    catalog's `form`); `watches_reads` ones hear of Python reads of tensor values
    (`on_read`), `dynamic` ones (a trace meant to serve every size of its inputs' None
    dimensions) answer for the sizes of their tensors (`sizes`), which a graph then reads
    when it runs,
    `watches_writes` ones of variable writes and creations (`on_write`, `on_create`);
    `sees_custom_forward` ones see the forward computation inside a custom_gradient
    function (vmap and tracing must; tapes and accumulators must not: the custom rule
    replaces its derivative).
    """

    batching = False
    differentiates = False
    reverse = False
    watches_reads = False
    watches_writes = False
    sees_custom_forward = False
    dynamic = False
    active = False

    def claims(self, inputs: Sequence[Any]) -> bool:
        return False

    def compute(self, prim: Primitive, inputs: Sequence[Any], params: dict, level: int) -> tuple:
        raise NotImplementedError

    def process(self, prim: Primitive, inputs: Sequence[Any], outputs: tuple,
                params: dict, level: int) -> None:
        raise NotImplementedError

    def on_read(self, tensor: Any, how: str) -> None:
        pass

    def python_shape(self, dims: tuple, tensor: Any) -> TensorShape:
        """The shape user code reads of `tensor`, in a `dynamic` recorder (core.python_shape)."""
        return tuple.__new__(TensorShape, dims)

    def sizes(self, tensor: Any) -> tuple | None:
        """`tensor`'s shape as sizes a `dynamic` recorder's graph reads when it runs, or
        None (see `core.sizes`)."""
        return None

    def symbolic_name(self, tensor: Any) -> tuple | None:
        """(a graph's name for `tensor`, its shape) if it is a value this recorder traces
        (printed as TensorFlow prints a graph tensor, without reading its value), else
        None."""
        return None

    def on_write(self, var: Any, value: Tensor) -> None:
        pass

    def on_create(self, var: Any) -> None:
        pass

    def __enter__(self) -> Any:
        if self.active:
            raise ValueError(f"{type(self).__name__} is already active on this thread; it "
                             "cannot be re-entered until it exits.")
        _state.stack = _state.stack + (self,)
        self.active = True
        return self

    def __exit__(self, *exc: Any) -> None:
        if not self.active:
            return  # already stopped (by an out-of-order exit of a recorder outside it)
        stack = _state.stack
        if not stack or stack[-1] is not self:
            if self in stack:
                # Out of order: this recorder and the ones entered after it stop (nothing
                # goes on recording half-nested), and the error says so.
                inner = stack[stack.index(self) + 1:]
                _state.stack = stack[:stack.index(self)]
                for rec in (self,) + inner:
                    rec.active = False
                raise RuntimeError(f"{type(self).__name__} exited while inner recorders were "
                                   f"still active ({', '.join(type(r).__name__ for r in inner)}): "
                                   "recorders must nest strictly; all of them have stopped.")
            raise RuntimeError(f"{type(self).__name__} is not active on this thread.")
        _state.stack = stack[:-1]
        self.active = False


def current_stack() -> tuple[Recorder, ...]:
    """The recorders active on this thread, oldest first (a snapshot)."""
    return _state.stack


def recording() -> bool:
    """Whether any recorder is active on this thread (ops must then go through `bind`)."""
    return bool(_state.stack)


class run_below:
    """Run a block with the stack cut to the recorders below `level` (NOTE(strict-nesting))."""

    __slots__ = ("level", "saved")

    def __init__(self, level: int) -> None:
        self.level = level

    def __enter__(self) -> None:
        self.saved = _state.stack
        _state.stack = self.saved[:self.level]

    def __exit__(self, *exc: Any) -> None:
        _state.stack = self.saved


def call_below(level: int, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)`` with the stack cut below `level`: `run_below` for one call,
    without a context manager's cost (accumulators call it for every JVP)."""
    state = _state
    saved = state.stack
    state.stack = saved[:level]
    try:
        return fn(*args, **kwargs)
    finally:
        state.stack = saved


class substack:
    """Run a block seen only by the active recorders that `keep` accepts, then by
    `extra` (recorders that watch the block without being entered: a custom_gradient
    function is hidden from tapes and accumulators, a grad_fn traced on its own is seen
    by its tracer alone)."""

    __slots__ = ("keep", "extra", "saved")

    def __init__(self, keep: Callable[[Recorder], bool], extra: tuple = ()) -> None:
        self.keep = keep
        self.extra = tuple(extra)

    def __enter__(self) -> None:
        self.saved = _state.stack
        _state.stack = tuple(r for r in self.saved if self.keep(r)) + self.extra

    def __exit__(self, *exc: Any) -> None:
        _state.stack = self.saved


def no_recorders() -> run_below:
    """Run a block that no active recorder sees."""
    return run_below(0)


class reading_records:
    """A block that replays recorded ops (a tape's backward pass, a linearized JVP): it may
    read the tensors of finished traces that the record holds (NOTE(out-of-scope) in
    tensor.py)."""

    __slots__ = ()

    def __enter__(self) -> None:
        _state.records += 1

    def __exit__(self, *exc: Any) -> None:
        _state.records -= 1


def records_open() -> bool:
    """Whether this thread is inside a `reading_records` block."""
    return _state.records > 0


def value_read(tensor: Any, how: str) -> None:
    """Python read a tensor's value (float(x), x.numpy(), `if x`): tell the recorders that
    watch reads (vmap refuses it, tracing guards it)."""
    for rec in _state.stack:
        if rec.watches_reads:
            rec.on_read(tensor, how)


def symbolic_name(tensor: Any) -> tuple | None:
    """(the name under which an active trace knows `tensor`, its shape: None where a
    signature leaves a size open), or None: str() and repr() of a traced tensor print
    these, as TensorFlow prints a graph tensor."""
    for rec in reversed(_state.stack):
        name = rec.symbolic_name(tensor)
        if name is not None:
            return name
    return None


# How many size-generic traces are open, in any thread: while none is, `shape_of` reads a
# shape without looking at the recorder stack (NOTE(symbolic-sizes) in graph/dims.py).
dynamic_traces = [0]


def symbolic(d: Any) -> bool:
    """Whether size `d` is a symbol of an open size-generic trace (graph/dims.py's Dim)."""
    return getattr(d, "size_symbol", False) and d.tracer.sizing


def surely_same(a: tuple, b: tuple) -> bool:
    """Whether shapes `a` and `b` are equal at every size, from what they are alone: the
    same rank, and at each axis equal plain ints or symbols of one expression. Never a
    size check: where it cannot tell, the caller does what serves both (a reshape or a
    broadcast to the shape a value has is the identity), so a graph traced at two sizes
    holds no decision a third size, or a 1, would take otherwise (NOTE(symbolic-sizes))."""
    if not dynamic_traces[0]:  # no symbol anywhere: the plain comparison (hot in rules)
        return tuple(a) == tuple(b)
    if len(a) != len(b):
        return False
    for x, y in zip(a, b):
        sx, sy = symbolic(x), symbolic(y)
        if sx or sy:
            if not (sx and sy and x.expr == y.expr):
                return False
        elif int(x) != int(y):
            return False
    return True


def _plain_sizes(params: Any) -> Any:
    """`params` with each size symbol (graph/dims.py's Dim) as the plain int it traced."""
    if getattr(type(params), "size_symbol", False):
        return int(params)
    if isinstance(params, dict):
        return {k: _plain_sizes(v) for k, v in params.items()}
    if isinstance(params, (tuple, list)) and not hasattr(params, "_fields"):
        return type(params)(_plain_sizes(v) for v in params)
    if isinstance(params, slice):
        return slice(_plain_sizes(params.start), _plain_sizes(params.stop),
                     _plain_sizes(params.step))
    return params


def sizes(x: Any) -> tuple:
    """The shape of tensor (or Husk) `x` as the recorders see it: in a size-generic trace
    (NOTE(sized-params) in graph/polymorphic.py), the innermost one's sizes, which a graph
    reads when it runs where an op's params hold them (graph/trace.py); elsewhere its
    static shape. Rules and ops that compute a shape from an input's call `shape_source`
    (ops/structural.py), which asks here: the recorder decides, never the op."""
    stack = _state.stack
    if stack:
        for rec in reversed(stack):
            if rec.dynamic:
                found = rec.sizes(x)
                if found is not None:
                    return found
                break
    if type(x) is Husk:
        return x.shape
    v = x._value
    # An ndarray's or NumPy scalar's own attribute: np.shape's dispatch costs several times
    # more, on every broadcasting rule.
    return v.shape if isinstance(v, (np.ndarray, np.generic)) else np.shape(v)


def python_shape(dims: tuple, tensor: Any = None) -> TensorShape:
    """The shape Python reads of a tensor (`Tensor.shape`, `len`): in a size-generic trace
    (NOTE(two-sizes) in graph/polymorphic.py), when the reading code (the caller's caller) is
    the user's and not tapeflow's, the innermost one's (which notes the sizes read);
    else a plain TensorShape."""
    stack = _state.stack
    if stack:
        for rec in reversed(stack):
            if rec.dynamic:
                filename = sys._getframe(2).f_code.co_filename
                if not os.path.abspath(filename).startswith(_PACKAGE):
                    return rec.python_shape(dims, tensor)
                break
    return tuple.__new__(TensorShape, dims)  # NumPy's dims are ints already


def variable_created(var: Any) -> None:
    """A variable was made: tell the recorders that watch writes (a trace that makes
    variables on a later call than its first is an error, as TensorFlow)."""
    for rec in _state.stack:
        if rec.watches_writes:
            rec.on_create(var)


def variable_written(var: Any, value: Tensor) -> None:
    """`var` is about to take `value`: tell the recorders that watch writes (tracing)."""
    for rec in _state.stack:
        if rec.watches_writes:
            rec.on_write(var, value)


# ---------------------------------------------------------------------------- bind
def bind(prim: Primitive, *args: Any, **params: Any) -> Any:
    """Apply `prim` to tensors `args`: run its impl, then show it to active recorders.

    The no-recorder path is the hot path of every program: one impl call and
    one wrapper object. With recorders active, a batching recorder (vmap) that
    holds a batched value of some input *claims* the op: it computes the op
    on the batched values through the primitive's batching rule instead of the
    impl, and only recorders entered after it see the per-example op
    (NOTE(strict-nesting)).
    """
    stack = _state.stack
    if stack:
        if "form" in prim.rules:
            # The differentiation form (catalog): the one place that asks whether a recorder
            # takes derivatives here; the op itself binds the same primitive everywhere.
            takers = [rec for rec in stack if rec.differentiates]
            if takers:
                out = prim.rules["form"](args, params, any(rec.reverse for rec in takers))
                if out is not None:
                    return out
        if dynamic_traces[0] and params:
            # An impl computes with the traced sizes; the recorders keep what they stand for.
            recorded, params = params, _plain_sizes(params)
        else:
            recorded = params
        if len(stack) > 1 or stack[0].batching:
            return _bind_stacked(prim, args, params, recorded, stack)
    # No recorder (the hot path), or one that does not batch (an eager tape or
    # accumulator): the impl on the values, one wrapper per output.
    n = len(args)
    if n == 1:
        out = prim.impl(args[0]._value, **params)
    elif n == 2:
        out = prim.impl(args[0]._value, args[1]._value, **params)
    else:
        out = prim.impl(*[a._value for a in args], **params)
    if not stack:
        return [Tensor(o) for o in out] if prim.multiple_results else Tensor(out)
    outs = tuple([Tensor(o) for o in out]) if prim.multiple_results else (Tensor(out),)
    stack[0].process(prim, args, outs, recorded, 0)
    return list(outs) if prim.multiple_results else outs[0]


def _bind_stacked(prim: Primitive, args: tuple, params: dict, recorded: dict,
                  stack: tuple) -> Any:
    """`bind` under several recorders, or a batching one: the innermost batching recorder
    that claims the op computes it, and the recorders after it see it."""
    start = 0
    for level in range(len(stack) - 1, -1, -1):
        rec = stack[level]
        if rec.batching and (_catalog.PER_EXAMPLE in prim.effects or rec.claims(args)):
            outs = rec.compute(prim, args, recorded, level)
            start = level + 1
            break
    else:
        out = prim.impl(*[a._value for a in args], **params)
        outs = tuple(Tensor(o) for o in out) if prim.multiple_results else (Tensor(out),)
    for level in range(start, len(stack)):
        stack[level].process(prim, args, outs, recorded, level)
    return list(outs) if prim.multiple_results else outs[0]


# ---------------------------------------------------------------------------- variable reads
# Reading a variable is a primitive of its own, so tapes can watch the variable and keep
# the value read at that moment (a later assign does not change recorded values).
# Its rules are the identity's: the tangent or cotangent passes through unchanged.
read_variable_p = _catalog.define(
    Primitive("read_variable", lambda v: v,
              effects=(_catalog.IDENTITY, _catalog.READS_VARIABLE)),
    jvp=lambda tangents, outs, primals: tangents,
    vjp=lambda cts, outs, primals, needs: (
        (cts[0].instantiate() if type(cts[0]) is Zero else cts[0]) if needs[0] else None,),
    reads=(((), ()),),
    # A variable is never batched (its reads are per-example constants); kept for completeness.
    batch=lambda vals, dims: (bind(read_variable_p, vals[0]), dims[0]),
    # A variable holds no function input (sparse_jacobians follows writes within a graph).
    sparsity=lambda pats, vals, outs: (None,),
    lower=lambda jax, v: v)  # the lowering reads variables as inputs
