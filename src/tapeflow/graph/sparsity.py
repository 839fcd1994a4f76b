"""The dependency pattern of a traced graph (NOTE(sparsity) in tapeflow/patterns.py).

`graph_pattern` runs every node's dependency rule (its `sparsity`, tapeflow/catalog.py)
over a traced graph, from the pattern of its first input (each element depends on
itself) to its output's: which elements of the input each element of the output
depends on, at every input. Values computed from constants alone are the same at every
input: a rule may read them (a gather's fixed indices); it sees only the shapes and
dtypes of the others. `tapeflow.sparse_jacobians` colors the pattern's columns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog import READS_VARIABLE, STATEFUL, rule
from ..patterns import Abstract, Pattern
from .ir import Assign, Graph, Guard

__all__ = ["graph_pattern", "forward_patterns"]


def graph_pattern(graph: Graph) -> Pattern | None:
    """Run every node's dependency rule over a traced graph; its first input is the one
    differentiated in, the others (extra arguments) change between calls. None where the
    output depends on none of it.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.sparsity import graph_pattern
        >>> f = tf.function(lambda x: x[1:] * x[:-1])
        >>> graph_pattern(f.get_concrete_function(tf.zeros([4])).graph).rows()
        [[0, 1], [1, 2], [2, 3]]
    """
    pats = forward_patterns(graph)
    out = graph.outputs[0]
    return None if out is None else pats.get(out)


def forward_patterns(graph: Graph, steps: list | None = None) -> dict:
    """Each value's pattern (slot -> Pattern) over the graph's first input, by its nodes'
    dependency rules in order; values without one depend on none of it. `steps`, if
    given, receives what a backward walk needs (graph/hessian_sparsity.py): each node
    that ran its rule as (node, input values, output avals), and each read of a variable
    assigned earlier as (None, the assigned slot, the read's slot)."""
    x_slot = graph.inputs[0]
    pats: dict[int, Pattern] = {x_slot: Pattern.identity(graph.avals[x_slot][0])}
    fixed: dict[int, Any] = dict(graph.constants)
    written: dict[int, int] = {}  # variable index -> the slot last assigned to it
    for node in graph.nodes:
        if isinstance(node, Guard):
            continue
        if isinstance(node, Assign):
            written[node.var] = node.slot
            continue
        prim = node.prim
        if READS_VARIABLE in prim.effects:
            src = written.get(graph.var_slots.get(node.inputs[0]))
            if src is not None and src in pats:
                pats[node.outputs[0]] = pats[src]
                if steps is not None:
                    steps.append((None, src, node.outputs[0]))
            continue
        if all(s in fixed for s in node.inputs) and STATEFUL not in prim.effects:
            # Computed from constants alone: the same at every input, so rules may read it.
            out = prim.impl(*(fixed[s] for s in node.inputs), **node.params)
            for o, v in zip(node.outputs, out if prim.multiple_results else (out,), strict=True):
                fixed[o] = np.asarray(v)
            continue
        if all(s not in pats for s in node.inputs):
            continue
        vals = tuple(fixed[s] if s in fixed else Abstract(*graph.avals[s]) for s in node.inputs)
        outs = tuple(Abstract(*graph.avals[o]) for o in node.outputs)
        got = rule(prim, "sparsity")(tuple(pats.get(s) for s in node.inputs), vals, outs,
                                     **node.params)
        for o, aval, p in zip(node.outputs, outs, got, strict=True):
            if p is not None:
                if p.shape != aval.shape:  # a broken rule: never a silently wrong pattern
                    raise AssertionError(f"{prim.name}'s dependency rule gave a pattern of "
                                         f"shape {p.shape} for an output of shape {aval.shape}")
                pats[o] = p
        if steps is not None:
            steps.append((node, vals, outs))
    return pats
