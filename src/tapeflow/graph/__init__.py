"""Tracing functions into graphs and replaying them: `tapeflow.function`."""

from .function import ConcreteFunction, Function, TensorSpec, function  # noqa: F401
from .ir import Graph  # noqa: F401
from .trace import TracingError  # noqa: F401

__all__ = ["function", "Function", "ConcreteFunction", "TensorSpec", "Graph", "TracingError"]
