"""Primitives, their registry, the per-thread recorder stack, and `bind`.

Every tapeflow computation is a sequence of *primitive* applications. A
`Primitive` holds, in one place, its NumPy implementation and the rules every
interpreter needs (reverse, forward, batching). `bind` runs the implementation
and then lets each active recorder (tape, accumulator, tracer) see the op.

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
"""

from __future__ import annotations

import sys
import threading
from typing import Any, Callable, Sequence

import numpy as np

from . import tensor as _tensor_module
from .tensor import Tensor

__all__ = ["Primitive", "Zero", "bind", "registry", "Recorder", "current_stack",
           "push_recorder", "pop_recorder", "run_below", "no_recorders"]


class Zero:
    """Symbolic zero tangent/cotangent: shape and dtype, no data (NOTE(zero))."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: np.dtype) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @classmethod
    def like(cls, x: Any) -> "Zero":
        v = x._value
        return cls(np.shape(v), v.dtype)

    def instantiate(self) -> Tensor:
        return Tensor(np.zeros(self.shape, self.dtype))

    def __repr__(self) -> str:
        return f"Zero(shape={self.shape}, dtype={self.dtype})"


_REGISTRY: dict[str, "Primitive"] = {}


def registry() -> dict[str, "Primitive"]:
    """All registered primitives by name (a copy)."""
    return dict(_REGISTRY)


class Primitive:
    """One primitive operation: its NumPy `impl` and its rules, defined once.

    Rules (all written with tapeflow ops, NOTE(strict-nesting)):

    - ``jvp(primals, tangents, outs, **params) -> tuple of output tangents``;
      tangents may be `Zero`, and so may the results.
    - ``vjp(cotangents, outs, primals, needs, **params) -> tuple``: one
      cotangent (or None) per primal, computed only where ``needs[i]``.
    - ``batch``: the batching rule, used by `vmap`.

    ``differentiable=False`` marks ops whose outputs carry no derivative
    (comparisons, argmax, stop_gradient): recorders ignore them.

    Example:
        >>> import numpy as np
        >>> from tapeflow.core import Primitive, registry
        >>> registry()["sin"].impl(np.array(0.0))
        np.float64(0.0)
    """

    __slots__ = ("name", "impl", "jvp", "vjp", "batch", "multiple_results",
                 "differentiable", "defined_at")

    # Every evaluation matters (random draws): never folded, merged or dropped by graph
    # passes, and claimed by the innermost vmap even with no batched input.
    stateful = False

    def __init__(self, name: str, impl: Callable[..., Any], *,
                 multiple_results: bool = False, differentiable: bool = True) -> None:
        if name in _REGISTRY:
            raise ValueError(f"primitive {name!r} is already defined at "
                             f"{_REGISTRY[name].defined_at}")
        self.name = name
        self.impl = impl
        self.jvp: Callable[..., Any] | None = None
        self.vjp: Callable[..., Any] | None = None
        self.batch: Callable[..., Any] | None = None
        self.multiple_results = multiple_results
        self.differentiable = differentiable
        frame = sys._getframe(1)
        while frame.f_back is not None and frame.f_code.co_filename.endswith(("_rules.py", "core.py")):
            frame = frame.f_back
        self.defined_at = f"{frame.f_code.co_filename}:{frame.f_lineno}"
        _REGISTRY[name] = self

    def __repr__(self) -> str:
        return f"<Primitive {self.name}>"


class Recorder:
    """Base of the interpreters that watch ops as they run (tapes, accumulators, tracers).

    `batching` recorders may claim ops (see `bind`); `watches_reads` recorders are
    told when Python reads a tensor's value.
    """

    batching = False
    watches_reads = False
    # Sees the forward computation inside a custom_gradient function (vmap and tracing
    # must; tapes and accumulators must not: the custom rule replaces its derivative).
    sees_custom_forward = False

    def claims(self, inputs: Sequence[Any]) -> bool:
        return False

    def compute(self, prim: "Primitive", inputs: Sequence[Any], params: dict, level: int) -> tuple:
        raise NotImplementedError

    def on_read(self, tensor: Any, how: str) -> None:
        pass

    def process(self, prim: Primitive, inputs: Sequence[Any], outputs: tuple,
                params: dict, level: int) -> None:
        raise NotImplementedError


class _State(threading.local):
    def __init__(self) -> None:
        self.stack: tuple[Recorder, ...] = ()


_state = _State()


def current_stack() -> tuple[Recorder, ...]:
    return _state.stack


def push_recorder(rec: Recorder) -> int:
    """Enter `rec` on this thread's stack; returns its level."""
    stack = _state.stack
    _state.stack = stack + (rec,)
    return len(stack)


def pop_recorder(rec: Recorder) -> None:
    """Leave `rec`; recorders must exit in the reverse order they entered."""
    stack = _state.stack
    if not stack or stack[-1] is not rec:
        if rec in stack:
            inner = stack[stack.index(rec) + 1:]
            raise RuntimeError(f"{type(rec).__name__} exited while inner recorders are still "
                               f"active ({', '.join(type(r).__name__ for r in inner)}): "
                               "recorders must nest strictly.")
        raise RuntimeError(f"{type(rec).__name__} is not active on this thread.")
    _state.stack = stack[:-1]


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


def no_recorders() -> run_below:
    """Run a block that no active recorder sees."""
    return run_below(0)


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
    if not stack:
        n = len(args)
        if n == 1:
            out = prim.impl(args[0]._value, **params)
        elif n == 2:
            out = prim.impl(args[0]._value, args[1]._value, **params)
        else:
            out = prim.impl(*[a._value for a in args], **params)
        if prim.multiple_results:
            return [Tensor(o) for o in out]
        return Tensor(out)
    start = 0
    for level in range(len(stack) - 1, -1, -1):
        rec = stack[level]
        if rec.batching and (prim.stateful or rec.claims(args)):
            outs = rec.compute(prim, args, params, level)
            start = level + 1
            break
    else:
        out = prim.impl(*[a._value for a in args], **params)
        outs = tuple(Tensor(o) for o in out) if prim.multiple_results else (Tensor(out),)
    for level in range(start, len(stack)):
        stack[level].process(prim, args, outs, params, level)
    return list(outs) if prim.multiple_results else outs[0]


def _on_value_read(tensor: Any, how: str) -> None:
    """Python read a tensor's value (float(x), x.numpy(), `if x`): ask the active recorders."""
    for rec in _state.stack:
        if rec.watches_reads:
            rec.on_read(tensor, how)


_tensor_module._value_read_hook[0] = _on_value_read
