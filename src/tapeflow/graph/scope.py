"""Tensors of a finished trace: out of scope (NOTE(out-of-scope)).

NOTE(out-of-scope): tracing runs a function on real tensors, so a tensor made while
tracing and kept by the user (on `self`, in a global) would hold the traced call's value
forever: later calls replay the graph and never make it again. When a trace ends, each
tensor it made becomes an OutOfScopeTensor, whose value cannot be read (TensorFlow's
symbolic tensors cannot either). Only code that replays what a recorder wrote down while
the trace ran (a tape around the first call, its backward pass, a linearized JVP) reads
it, inside `core.reading_records()`: those values are exactly that call's.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import core as _core
from ..errors import InaccessibleTensorError
from ..tensor import Tensor, TensorBase, TensorShape

__all__ = ["OutOfScopeTensor", "OutOfScopeUse", "OutOfScopeRead", "seal"]

_raw_value = Tensor._value  # the slot itself, under OutOfScopeTensor's guard


class OutOfScopeUse(InaccessibleTensorError, TypeError):
    """An out-of-scope tensor passed to an op: a TypeError too, as TensorFlow raises for
    a graph tensor used outside its graph (its tf.function guide catches TypeError)."""


class OutOfScopeRead(InaccessibleTensorError, AttributeError):
    """`.numpy()` of an out-of-scope tensor: an AttributeError too, as TensorFlow's graph
    tensors have no `numpy` (its tf.function guide catches AttributeError)."""


class OutOfScopeTensor(Tensor):
    """A tensor made while tracing a function, after that trace ended (NOTE(out-of-scope)):
    its shape and dtype are known; using its value raises InaccessibleTensorError."""

    __slots__ = ()
    _made_in = "a traced function"

    @property
    def _value(self) -> Any:
        if _core.records_open():
            return _raw_value.__get__(self)
        raise self._error(OutOfScopeUse)

    def numpy(self) -> Any:
        if _core.records_open():
            return super().numpy()
        raise self._error(OutOfScopeRead)

    def _error(self, kind: type) -> InaccessibleTensorError:
        value = _raw_value.__get__(self)
        return kind(
            f"A tensor of shape {tuple(np.shape(value))} and dtype "
            f"{_dt.from_numpy(value.dtype).name} was made while tracing tapeflow.function "
            f"{self._made_in!r} and is used after that trace ended (it was kept on an object, "
            "in a global or in a closure). It holds only the traced call's value: later calls "
            "replay the graph without making it again. As in TensorFlow, it cannot be used "
            "outside: return it from the function, or keep its value in a tf.Variable "
            "(v.assign(...) inside the function).")

    def value(self) -> Tensor:
        self._value  # noqa: B018 - raises outside reading_records()
        return self

    @property
    def shape(self) -> TensorShape:
        return TensorShape(np.shape(_raw_value.__get__(self)))

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(_raw_value.__get__(self).dtype)

    def __repr__(self) -> str:
        return (f"<tapeflow.Tensor made while tracing {self._made_in!r}: shape={self.shape}, "
                f"dtype={self.dtype.name} (out of scope: its trace has ended)>")

    __str__ = __repr__

    def __eq__(self, other):  # type: ignore[override]
        self._value  # noqa: B018 - raises here, not inside Tensor.__eq__'s fallback
        return super().__eq__(other)

    def __ne__(self, other):  # type: ignore[override]
        self._value  # noqa: B018
        return super().__ne__(other)

    __hash__ = TensorBase.__hash__


@functools.lru_cache(maxsize=256)
def _out_of_scope_class(name: str) -> type:
    return type("OutOfScopeTensor", (OutOfScopeTensor,), {"__slots__": (), "_made_in": name})


def seal(tensors: Any, name: str) -> None:
    """Make the tensors a trace of function `name` made out of scope (NOTE(out-of-scope))."""
    cls = _out_of_scope_class(name)
    for t in tensors:
        if type(t) is Tensor:
            t.__class__ = cls


