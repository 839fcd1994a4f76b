"""Keras activations by name (those the core op set provides)."""

from __future__ import annotations

from typing import Any, Callable

from .. import ops

__all__ = ["relu", "sigmoid", "tanh", "linear", "get"]

relu = ops.relu
sigmoid = ops.sigmoid
tanh = ops.tanh


def linear(x: Any) -> Any:
    """The identity activation."""
    return x


def get(identifier: Any) -> Callable:
    """An activation function from a name, None (linear) or a callable."""
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        try:
            return {"relu": relu, "sigmoid": sigmoid, "tanh": tanh, "linear": linear}[identifier]
        except KeyError:
            raise ValueError(f"Unknown activation {identifier!r}.") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"Cannot interpret {identifier!r} as an activation.")
