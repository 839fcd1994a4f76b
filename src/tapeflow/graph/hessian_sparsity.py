"""The Hessian pattern of a traced graph (NOTE(curvature) in tapeflow/hessian_patterns.py).

`graph_curvature` runs every node's first-order dependency rule (its `sparsity`,
NOTE(sparsity)) forward over a traced graph, from its first input (each element depends
on itself), marks backward the elements of each value that the output reads, and
unions the pairs of inputs that each marked element's primitive makes interact: the
pairs whose second derivative can be nonzero. How a primitive bends is its `curvature`
rule (the catalog's), declared beside it for the linear, piecewise linear, multilinear
and partly linear primitives; every other primitive (sin, exp, softmax, solve, one
defined outside tapeflow, custom gradients, loops) is taken as nonlinear in everything
it depends on, the safe default.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog import rule
from ..hessian_patterns import Curvature, new_pairs, reached, sorted_unique
from ..patterns import Pattern
from .ir import Graph
from .sparsity import forward_patterns

__all__ = ["graph_curvature", "curvature_of"]

def curvature_of(prim: Any) -> Curvature:
    """How `prim`'s outputs bend in its inputs: its classification, or nonlinear in
    everything (the safe default) for a primitive without one.

    Example:
        >>> from tapeflow.core import registry
        >>> from tapeflow.graph.hessian_sparsity import curvature_of
        >>> curvature_of(registry()["add"]).linear, curvature_of(registry()["sin"]).linear
        (True, False)
    """
    return rule(prim, "curvature")


def graph_curvature(graph: Graph) -> tuple[Pattern | None, np.ndarray]:
    """The output's first-order dependencies (over the graph's first input's n elements;
    None where there are none) and the pairs of those inputs that interact in it (sorted
    keys i * n + j, i <= j; for an output of several elements, in any of them: the
    Hessian of their sum). The graph's other inputs change between calls: rules see only
    their shapes.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.hessian_sparsity import graph_curvature
        >>> f = tf.function(lambda x: x[0] * x[1] + tf.sin(x[2]) + x[3])
        >>> deps, pairs = graph_curvature(f.get_concrete_function(tf.zeros([4])).graph)
        >>> deps.rows(), [(int(k) // 4, int(k) % 4) for k in pairs]
        ([[0, 1, 2, 3]], [(0, 1), (2, 2)])
    """
    n = int(np.prod(graph.avals[graph.inputs[0]][0]))
    steps: list = []
    deps = forward_patterns(graph, steps)
    out = graph.outputs[0]
    if out is None or out not in deps:
        return None, np.zeros(0, np.int64)
    return deps[out], _pairs(steps, deps, out, n)


def _pairs(steps: list, deps: dict, out: int, n: int) -> np.ndarray:
    """Backward from the output: which elements of each value it reads, and the pairs
    the primitives make interact at those elements."""
    needed: dict[int, np.ndarray] = {out: np.ones(deps[out].size, bool)}
    found = []
    for node, vals, outs in reversed(steps):
        if node is None:  # a variable read of a value assigned earlier
            if outs in needed:
                needed[vals] = needed.get(vals, False) | needed[outs]
            continue
        want = tuple(needed.get(o) for o in node.outputs)
        if all(w is None or not w.any() for w in want):
            continue
        prim = node.prim
        first = rule(prim, "sparsity")
        in_deps = tuple(deps.get(s) for s in node.inputs)
        out_deps = tuple(deps.get(o) for o in node.outputs)
        found.append(new_pairs(curvature_of(prim), first, in_deps, out_deps, vals, outs,
                               node.params, want, n))
        for s, mask in zip(node.inputs, reached(first, in_deps, vals, outs, node.params, want),
                           strict=True):
            if mask is not None:
                needed[s] = needed[s] | mask if s in needed else mask
    return sorted_unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
