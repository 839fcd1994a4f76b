"""tapeflow.plot_graph: a picture of a traced graph (Graphviz), forward work, a tape's
backward pass and guards in their own colors."""

from __future__ import annotations

import os
from typing import Any, Callable

from ..optional import module_or_none
from .function import ConcreteFunction, Function, function
from .ir import Graph

__all__ = ["plot_graph"]

_LEGEND = '''  subgraph cluster_legend {
    label="legend"; fontname="Helvetica"; style=dashed;
    legend_f [shape=box, style=filled, fillcolor="#cfe2f3", label="forward"];
    legend_b [shape=box, style=filled, fillcolor="#f9cb9c", label="backward (tape)"];
    legend_g [shape=diamond, style=filled, fillcolor="#fff2cc", label="guard"];
  }
'''

_INSTALL = ("plot_graph renders with the `graphviz` Python package and Graphviz's `dot` "
            "program: pip install 'tapeflow[plot]' and install Graphviz (for example "
            "`apt install graphviz`); or save the dot source alone with path='graph.dot'.")


def _graph_of(fn: Any, args: tuple, kwargs: dict) -> Graph:
    if isinstance(fn, Graph):
        return fn
    if isinstance(fn, ConcreteFunction):
        return fn.graph
    if not callable(fn):
        raise TypeError(f"plot_graph: expected a function, a tf.function, a concrete function "
                        f"or a graph; got {type(fn).__name__}.")
    traced = fn if isinstance(fn, Function) else function(fn)
    return traced.get_concrete_function(*args, **kwargs).graph


def plot_graph(fn: Callable | Any, *args: Any, path: str = "graph.svg", **kwargs: Any) -> str:
    """Trace `fn` on `args` (or take a tf.function's, a concrete function's or a graph's
    graph) and draw it to `path`: the format is the suffix (.svg, .png, .pdf, ...; .dot or
    .gv writes the Graphviz source and needs nothing installed). Forward nodes are blue,
    nodes of a tape's backward pass orange, guards yellow diamonds. Returns `path`.

    Example:
        >>> import os, tempfile, tapeflow as tf
        >>> def grad_of_square(x):
        ...     with tf.GradientTape() as tape:
        ...         tape.watch(x)
        ...         y = x * x
        ...     return tape.gradient(y, x)
        >>> out = tf.plot_graph(grad_of_square, tf.constant(3.0),
        ...                     path=os.path.join(tempfile.mkdtemp(), "g.dot"))
        >>> "backward" in open(out).read()
        True
    """
    graph = _graph_of(fn, args, kwargs)
    dot = graph.to_dot()
    dot = dot[:dot.rstrip().rfind("}")] + _LEGEND + "}\n"
    fmt = os.path.splitext(path)[1].lstrip(".").lower() or "svg"
    if fmt in ("dot", "gv"):
        with open(path, "w") as fh:
            fh.write(dot)
        return path
    graphviz = module_or_none("graphviz")
    if graphviz is None:
        raise ImportError(_INSTALL)
    try:
        data = graphviz.Source(dot).pipe(format=fmt)
    except graphviz.ExecutableNotFound:
        raise RuntimeError(_INSTALL) from None
    with open(path, "wb") as fh:
        fh.write(data)
    return path
