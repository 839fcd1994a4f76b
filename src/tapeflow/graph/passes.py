"""Graph passes run before replay: folding, simplification, CSE, dead-code elimination.

Derivative rules and vectorized Jacobians leave much that a graph need not
recompute: ops on constants only (a Jacobian's basis reshaped and transposed),
identity reshapes and casts, products with ones, repeated subexpressions (on Python
numbers too: NOTE(equal-constants)), and
values nobody uses. These keep the graph's meaning exactly, NaNs and signed zeros
included: a node is dropped for one of its inputs only where its primitive's
`simplify` rule says the output always equals that input (x * 1 is x; x + 0. is
not, at x = -0., so only x + (-0.) folds). Two more change only the order in which a
sum adds its terms: a weighted sum of matrix products becomes one product
(graph/contractions.py, NOTE(weighted-products)), and a transpose that ends a chain is
moved back into it (graph/transposes.py, NOTE(swapped-layout)).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from ..catalog import READS_VARIABLE, STATEFUL
from .ir import Assign, Graph, Guard, Node, SizeExpr, SizeOf, renamed_sizes, size_slots
from .contractions import fold_weighted_products
from .transposes import swap_transposes

__all__ = ["optimize", "eliminate_dead_code", "merge_variable_reads"]

def _is_effectful(node: Node) -> bool:
    """Stateful primitives (random draws): skipping or merging two draws changes the sequence."""
    return STATEFUL in node.prim.effects


def _hashable(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _hashable(x)) for k, x in sorted(v.items()))
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, (int, float, str, bool, type(None), np.generic, SizeOf, SizeExpr)):
        return v
    return ("id", id(v))


def _simplified(g: Graph, n: Node) -> int | None:
    """An input slot the node's single output equals exactly, if its primitive says so."""
    rule = n.prim.rules["passes"].simplify
    if rule is None or n.prim.multiple_results:
        return None
    shape, dtype = g.avals[n.outputs[0]]

    def same(i: int) -> bool:
        s, d = g.avals[n.inputs[i]]
        return s == shape and d == dtype

    k = rule([g.constants.get(i) for i in n.inputs], same, **n.params)
    return None if k is None else n.inputs[k]


_BY_VALUE = 16  # elements of a constant compared by value when ops are merged


def _fold_simplify_cse(g: Graph) -> None:
    """One walk over the nodes: fold ops on constants, drop ops whose `simplify` rule says
    the output is an input, merge repeated (primitive, inputs, params). `alias` maps a
    dropped output to the slot that replaces it; its targets are never aliased themselves
    (they are inputs already renamed, or outputs of kept nodes), so one lookup renames."""
    alias: dict[int, int] = {}
    seen: dict[Any, list[int]] = {}
    constants = g.constants
    linked = set(g.captured).union(*(n.outputs for n in g.prelude))  # NOTE(captures)
    by_value: dict[int, Any] = {}
    kept = []

    def by_bits(i: int) -> Any:
        # NOTE(equal-constants): each Python number in a program is a constant of its own
        # (a backward pass's `1 - y * y` repeats its forward's with another 1.0): small
        # constants are compared by their bits (so 0.0 and -0.0 stay apart), the same
        # op on equal ones merged. A tensor captured from outside that is still alive
        # keeps its slot: a tape may watch it in a replay under recorders (NOTE(captures)).
        if i in linked and not (i in g.captured and g.captured[i]() is None):
            return i
        v = constants[i]
        if not hasattr(v, "tobytes"):  # a Python number, a device array
            v = np.asarray(v)
        if v.size > _BY_VALUE or v.dtype.kind == "O":
            return i
        # the dtype itself: extension types (bfloat16, the float8s) share a `str`
        return v.dtype, v.shape, v.tobytes()

    for n in g.nodes:
        if type(n) is Node:
            if alias:
                n.inputs = [alias.get(i, i) for i in n.inputs]
                if n.sized:
                    n.params = renamed_sizes(n.params, alias)
                if n.backward is not None:
                    n.backward.refs = [alias.get(r, r) for r in n.backward.refs]
            prim = n.prim
            if STATEFUL in prim.effects:  # random draws: never folded, dropped or merged
                kept.append(n)
                continue
            # Constants in, a constant out (a node without inputs, a `fill`, too), unless
            # its params hold sizes read when the graph runs.
            if not n.sized and all(i in constants for i in n.inputs):
                if not linked.isdisjoint(n.inputs):  # NOTE(captures) in graph/ir.py
                    g.prelude.append(n)
                    linked.update(n.outputs)
                values = prim.impl(*[constants[i] for i in n.inputs], **n.params)
                values = values if prim.multiple_results else [values]
                for o, v in zip(n.outputs, values, strict=True):
                    # A folded transpose is a strided view: made contiguous once here,
                    # the products that read it at every replay run at full speed
                    # (docs/performance-notes.md, #contiguous-constants).
                    if isinstance(v, np.ndarray) and v.ndim > 1 and not v.flags.c_contiguous:
                        v = np.ascontiguousarray(v)
                    constants[o] = v
                continue
            if "passes" in prim.rules and prim.rules["passes"].simplify is not None:
                same = _simplified(g, n)
                if same is not None:
                    alias[n.outputs[0]] = same
                    continue
            # A variable read is not merged with an earlier one: a write may lie between.
            if READS_VARIABLE not in prim.effects:
                params = n.params
                ins = n.inputs
                for i in ins:
                    if i in constants:  # no call for a node that reads no constant
                        ins = list(ins)
                        for j, c in enumerate(ins):
                            if c in constants:
                                if c not in by_value:
                                    by_value[c] = by_bits(c)
                                ins[j] = by_value[c]
                        break
                key = (prim, tuple(ins), _hashable(params) if params else ())
                prev = seen.get(key)
                if prev is not None:
                    for o, p in zip(n.outputs, prev, strict=True):
                        alias[o] = p
                    continue
                seen[key] = n.outputs
        else:  # Guard or Assign
            n.slot = alias.get(n.slot, n.slot)
        kept.append(n)
    g.nodes = kept
    g.outputs = [alias.get(o, o) if o is not None else None for o in g.outputs]
    if alias and g.size_checks:
        g.size_checks = [(renamed_sizes(c, alias), r, w) for c, r, w in g.size_checks]


def _dce(g: Graph) -> None:
    live = {o for o in g.outputs if o is not None}
    for check, _, _ in g.size_checks:  # a loop body's decisions read sizes too
        live.update(size_slots(check))
    kept = []
    for n in reversed(g.nodes):
        if isinstance(n, (Guard, Assign)):
            live.add(n.slot)
            kept.append(n)
        elif _is_effectful(n) or any(o in live for o in n.outputs):
            if "passes" in n.prim.rules and n.prim.rules["passes"].prune is not None:
                n = _pruned(n, live)
            live.update(n.inputs)
            if n.sized:  # the sizes it reads are uses too
                live.update(size_slots(n.params))
            if n.backward is not None:
                live.update(n.backward.refs)
            kept.append(n)
    g.nodes = kept[::-1]
    if g.prelude:  # the folded ops on captured tensors whose constants are still read
        kept = []
        for n in reversed(g.prelude):
            if any(o in live for o in n.outputs):
                live.update(n.inputs)
                kept.append(n)
        g.prelude = kept[::-1]
    used = live | set(g.inputs)
    g.constants = {s: v for s, v in g.constants.items() if s in used}
    g.captured = {s: r for s, r in g.captured.items() if s in used}


def _pruned(n: Node, live: set) -> Node:
    """The node without the outputs nobody reads and the inputs it then needs no more, if
    its primitive's `prune` rule can drop them (a loop's unread per-step results): a new
    node, since a rewritten graph shares its nodes with the graph it came from."""
    pruned = n.prim.rules["passes"].prune(n.params, [o in live for o in n.outputs])
    if pruned is None:
        return n
    params, keep_inputs, keep_outputs = pruned
    return dataclasses.replace(
        n, params=params,
        inputs=[i for i, keep in zip(n.inputs, keep_inputs, strict=True) if keep],
        outputs=[o for o, keep in zip(n.outputs, keep_outputs, strict=True) if keep])


def eliminate_dead_code(g: Graph) -> None:
    """Drop the nodes of `g` (a loop body, say) whose results nobody reads, in place."""
    _dce(g)


def optimize(g: Graph) -> dict[str, int]:
    """Run the passes in place; returns the node counts before and after."""
    before = g.count()
    _fold_simplify_cse(g)
    if fold_weighted_products(g):  # NOTE(weighted-products): weights that are constants
        _fold_simplify_cse(g)     # are taken into a constant X once
        _dce(g)
    # A rewritten chain may leave a transpose further up (a product's operand), which the
    # next round moves once the chain it replaced is dropped; each round folds the
    # constants it transposed.
    for _ in range(4):
        if not swap_transposes(g):
            break
        _fold_simplify_cse(g)
        _dce(g)
    _dce(g)
    return {"before": before, "after": g.count()}


def merge_variable_reads(g: Graph) -> None:
    """Each variable read where no write lies between it and an earlier read of the same
    variable made that one, in place (a loop body reading its weights at each step reads
    them once): the reads are equal (a compiled call reads every variable once, at its
    start). For the rewrites of graph/reroll.py and graph/scalarize.py, not `optimize`:
    a traced graph as replayed keeps its reads.

    Example:
        >>> import dataclasses
        >>> import tapeflow as tf
        >>> from tapeflow.graph.passes import merge_variable_reads
        >>> v = tf.Variable([1.0, 2.0])
        >>> g = tf.function(lambda x: x * v + v).get_concrete_function(tf.ones(2)).graph
        >>> h = dataclasses.replace(g, nodes=list(g.nodes))
        >>> merge_variable_reads(h)
        >>> [n.prim.name for n in g.nodes], [n.prim.name for n in h.nodes]
        (['read_variable', 'multiply', 'read_variable', 'add'], ['read_variable', 'multiply', 'add'])
    """
    alias: dict = {}
    reads: dict = {}
    kept = []
    for n in g.nodes:
        if type(n) is not Node:
            if alias and alias.get(n.slot, n.slot) != n.slot:
                n = dataclasses.replace(n, slot=alias[n.slot])
            if hasattr(n, "var"):  # a write: later reads read again
                reads.clear()
            kept.append(n)
            continue
        if alias and (not alias.keys().isdisjoint(n.inputs) or n.sized or
                      n.backward is not None):
            n = dataclasses.replace(
                n, inputs=[alias.get(i, i) for i in n.inputs],
                params=renamed_sizes(n.params, alias) if n.sized else n.params,
                backward=None if n.backward is None else dataclasses.replace(
                    n.backward, refs=[alias.get(r, r) for r in n.backward.refs]))
        if READS_VARIABLE in n.prim.effects:
            key = (n.prim, tuple(n.inputs), _hashable(n.params))
            first = reads.setdefault(key, n)
            if first is not n:
                alias.update(zip(n.outputs, first.outputs, strict=True))
                continue
        kept.append(n)
    g.nodes = kept
    if alias:
        g.outputs = [alias.get(o, o) if o is not None else None for o in g.outputs]
