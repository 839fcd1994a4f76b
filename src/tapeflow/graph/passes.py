"""Graph passes run before replay: folding, simplification, CSE, dead-code elimination.

Derivative rules and vectorized Jacobians leave much that a graph need not
recompute: ops on constants only (a Jacobian's basis reshaped and transposed),
identity reshapes and casts, additions of zeros and products with ones,
repeated subexpressions, and values nobody uses. Each pass keeps the graph's
meaning exactly (no rewrite that could change a NaN or a signed zero).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .ir import Assign, Graph, Guard, Node

__all__ = ["optimize"]

# (read_variable is not here: a read must keep the value of its moment, not follow later writes.)
_ALIAS_IF_SAME_SHAPE = {"reshape", "broadcast_to", "identity"}


def _is_effectful(node: Node) -> bool:
    """Stateful primitives (random draws): skipping or merging two draws changes the sequence."""
    return node.prim.stateful


def _hashable(v: Any) -> Any:
    if isinstance(v, (tuple, list)):
        return (type(v).__name__,) + tuple(_hashable(x) for x in v)
    if isinstance(v, dict):
        return ("dict",) + tuple((k, _hashable(x)) for k, x in sorted(v.items()))
    if isinstance(v, slice):
        return ("slice", v.start, v.stop, v.step)
    if isinstance(v, np.dtype):
        return ("dtype", v.str)
    if isinstance(v, (int, float, str, bool, type(None), np.generic)):
        return v
    return ("id", id(v))


def _rename(slot: Any, alias: dict[int, int]) -> Any:
    while slot in alias:
        slot = alias[slot]
    return slot


def _rename_node(n: Node, alias: dict[int, int]) -> None:
    n.inputs = [_rename(i, alias) for i in n.inputs]
    if n.backward is not None:
        n.backward.refs = [_rename(r, alias) for r in n.backward.refs]


def _fold_and_simplify(g: Graph) -> None:
    alias: dict[int, int] = {}
    kept = []
    for n in g.nodes:
        if isinstance(n, Node):
            _rename_node(n, alias)
            if not _is_effectful(n) and n.inputs and all(i in g.constants for i in n.inputs):
                values = n.prim.impl(*[g.constants[i] for i in n.inputs], **n.params)
                values = values if n.prim.multiple_results else [values]
                for o, v in zip(n.outputs, values):
                    g.constants[o] = v
                continue
            same = _simplified(g, n)
            if same is not None:
                alias[n.outputs[0]] = same
                continue
        elif isinstance(n, (Guard, Assign)):
            n.slot = _rename(n.slot, alias)
        kept.append(n)
    g.nodes = kept
    g.outputs = [_rename(o, alias) if o is not None else None for o in g.outputs]


def _all_equal(g: Graph, slot: int, value: float) -> bool:
    v = g.constants.get(slot)
    return v is not None and np.size(v) > 0 and bool(np.all(np.asarray(v) == value))


def _simplified(g: Graph, n: Node) -> int | None:
    """An input slot the node's single output equals exactly, if there is one."""
    if n.prim.multiple_results:
        return None
    out = n.outputs[0]
    shape, dtype = g.avals[out]
    name = n.prim.name

    def same_as(i: int) -> bool:
        return g.avals[i][0] == shape and np.dtype(g.avals[i][1]) == np.dtype(dtype)

    if name in _ALIAS_IF_SAME_SHAPE and same_as(n.inputs[0]):
        return n.inputs[0]
    if name == "transpose" and tuple(n.params["perm"]) == tuple(range(len(shape))):
        return n.inputs[0]
    if name == "cast" and same_as(n.inputs[0]):
        return n.inputs[0]
    if name in ("add", "subtract"):
        x, y = n.inputs
        if _all_equal(g, y, 0) and same_as(x):
            return x
        if name == "add" and _all_equal(g, x, 0) and same_as(y):
            return y
    if name == "pow" and _all_equal(g, n.inputs[1], 1) and same_as(n.inputs[0]):
        return n.inputs[0]
    if name in ("multiply", "divide"):
        x, y = n.inputs
        if _all_equal(g, y, 1) and same_as(x):
            return x
        if name == "multiply" and _all_equal(g, x, 1) and same_as(y):
            return y
    return None


def _cse(g: Graph) -> None:
    alias: dict[int, int] = {}
    seen: dict[Any, list[int]] = {}
    kept = []
    for n in g.nodes:
        if isinstance(n, Node):
            _rename_node(n, alias)
            # A variable read is not merged with an earlier one: a write may lie between.
            if not _is_effectful(n) and n.prim.name != "read_variable":
                key = (n.prim.name, tuple(n.inputs), _hashable(n.params))
                prev = seen.get(key)
                if prev is not None:
                    for o, p in zip(n.outputs, prev):
                        alias[o] = p
                    continue
                seen[key] = n.outputs
        elif isinstance(n, (Guard, Assign)):
            n.slot = _rename(n.slot, alias)
        kept.append(n)
    g.nodes = kept
    g.outputs = [_rename(o, alias) if o is not None else None for o in g.outputs]


def _dce(g: Graph) -> None:
    live = {o for o in g.outputs if o is not None}
    kept = []
    for n in reversed(g.nodes):
        if isinstance(n, (Guard, Assign)):
            live.add(n.slot)
            kept.append(n)
        elif _is_effectful(n) or any(o in live for o in n.outputs):
            live.update(n.inputs)
            if n.backward is not None:
                live.update(n.backward.refs)
            kept.append(n)
    g.nodes = kept[::-1]
    used = live | set(g.inputs)
    g.constants = {s: v for s, v in g.constants.items() if s in used}


def optimize(g: Graph) -> dict[str, int]:
    """Run the passes in place; returns the node counts before and after."""
    before = g.count()
    _fold_and_simplify(g)
    _cse(g)
    _dce(g)
    return {"before": before, "after": g.count()}
