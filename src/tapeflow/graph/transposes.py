"""A graph pass: a transpose at the end of a chain computed in the other layout.

NOTE(swapped-layout): a forward-mode Jacobian is computed batch-major (vmap puts the
batch first) and transposed once at the end, [E, m] -> [m, E]: at a tall Jacobian's
last layer, E rows times a^T, the tangent's elementwise factors, then the transpose.
XLA fuses the transpose into the elementwise loop, which then reads one operand by
columns, and keeps the product's layout (a tall jacfwd compiled falls behind JAX's jit:
docs/performance-notes.md, #swapped-layout). This pass moves such a transpose back
through the chain: the product as a @ rows^T ([m, E], what JAX's jacfwd computes), the
elementwise ops on swapped operands (a broadcast operand only reshaped), reshapes that
add or drop unit axes, down to a transpose that it cancels or a constant it transposes
once. The transpose is replaced by a reshape of the swapped chain's value. A chain is rewritten
only when it reaches such a source with every value on the way read by the next op
only (else the original values are still needed and the rewrite would compute both),
and values keep exactly two axes of size above 1 (one Jacobian layout to another).
Each rewritten op computes the same elements, so results are equal but for the
summation order BLAS picks for the product's other layout.

NOTE(example-grid): a per-example Jacobian (`batch_jacobian`) is computed as a vmapped
backward pass, the vmap axis (the target's element j) in front of the examples: [n, b,
*x], transposed once at the end to [b, n, *x]. A conv's batching rule merges the two axes
into its batch axis, n outer, so the whole backward pass runs on an [n * b] grid of
examples and the transpose is a copy of the Jacobian (a noticeable share of the time of
the seed problem's compiled CNN, which JAX's vmap(jacrev), nesting the examples outside,
never spends: docs/performance-notes.md, #example-grid).
The grid's order does not matter to the ops on the way: a conv, a pooling or a row-wise
product computes each example on its own (`Primitive.examples`), an elementwise op each
element. So such a transpose, exchanging the first two axes [a, b, ...] -> [b, a, ...], is
moved back through the chain as the existing one is: each value (its grid as two axes or
merged into one) is computed in the other order, down to a constant reordered once, a
cancelling transpose, or operands broadcast along the grid. A value read outside the chain
(counted once the chain is complete) keeps the chain as it was.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import numpy as np

from ..catalog import rule
from ..ops.structural import elementwise_deps, reshape_p, transpose_p
from .ir import Graph, Node, readers

__all__ = ["swap_transposes"]


def _big_axes(shape: tuple) -> list[int]:
    return [i for i, s in enumerate(shape) if s != 1]


def _exchanged(shape: tuple, i: int, j: int) -> tuple:
    out = list(shape)
    out[i], out[j] = out[j], out[i]
    return tuple(out)


def _is_elementwise(prim: Any) -> bool:
    return rule(prim, "passes").elementwise or rule(prim, "sparsity") is elementwise_deps


def _swaps(perm: tuple, shape: tuple) -> bool:
    """Whether transposing `shape` by `perm` reverses the order of its two axes above 1."""
    big = _big_axes(shape)
    return len(big) == 2 and list(perm).index(big[0]) > list(perm).index(big[1])


def _exchanges_leading(perm: tuple, shape: tuple) -> bool:
    """Whether transposing `shape` by `perm` exchanges its first two axes (both above 1),
    every other axis kept in place."""
    return (len(perm) >= 2 and tuple(perm[:2]) == (1, 0)
            and tuple(perm[2:]) == tuple(range(2, len(perm))) and shape[0] > 1 and shape[1] > 1)


def _grid(shape: tuple, a: int, b: int) -> int:
    """How `shape` holds an [a, b] grid of examples in front (NOTE(example-grid)): as two
    axes (2), as one axis of a * b, a outer (1), or not at all (0)."""
    if shape and shape[0] == a * b:
        return 1
    if len(shape) >= 2 and shape[0] == a and shape[1] == b:
        return 2
    return 0


class _Rewrite:
    """The nodes that compute one chain's swapped values (committed only if it succeeds)."""

    def __init__(self, g: Graph, uses: Counter, producer: dict) -> None:
        self.g, self.uses, self.producer = g, uses, producer
        self.nodes: list[Node] = []
        self.constants: dict[int, Any] = {}
        self.regrouped_slots: dict[int, int] = {}  # NOTE(example-grid): slot -> its new slot
        self.reads: Counter = Counter()  # how often the chain reads each value it replaces

    def emit(self, prim: Any, inputs: list, shape: tuple, params: dict | None = None,
             dtype: Any = None) -> int:
        """A new node `prim(*inputs, **params)` with this output shape and dtype (by
        default the first input's)."""
        g = self.g
        slot = g.next_slot
        g.next_slot += 1
        g.avals[slot] = (tuple(shape), g.avals[inputs[0]][1] if dtype is None else dtype)
        self.nodes.append(Node(prim, list(inputs), dict(params or {}), [slot]))
        return slot

    def constant(self, value: np.ndarray) -> int:
        """A new constant slot holding `value` (reordered once, here)."""
        value = np.ascontiguousarray(value)
        slot = self.g.new_slot(value)
        self.constants[slot] = value
        return slot

    def shape(self, slot: int) -> tuple:
        return tuple(self.g.avals[slot][0])

    def reshaped(self, slot: int, shape: tuple) -> int:
        if self.shape(slot) == tuple(shape):
            return slot
        return self.emit(reshape_p, [slot], shape, {"shape": tuple(shape)})

    def swapped(self, slot: int) -> int | None:
        """A slot holding `slot`'s value with its two axes above 1 swapped (their sizes
        exchanged in place), or None where the chain cannot be rewritten."""
        g = self.g
        shape = self.shape(slot)
        big = _big_axes(shape)
        if len(big) != 2:
            return None
        i, j = big
        target = _exchanged(shape, i, j)
        if slot in g.constants:
            return self.constant(np.swapaxes(np.asarray(g.constants[slot]), i, j))
        n = self.producer.get(slot)
        if n is None:
            return None
        prim = n.prim
        if prim is transpose_p:
            # A transpose that swaps the same two axes: its input already holds the
            # swapped order (the transposes cancel).
            x = n.inputs[0]
            if not _swaps(n.params["perm"], self.shape(x)):
                return None
            return self.reshaped(x, target)
        if self.uses[slot] != 1:
            return None
        if prim is reshape_p:
            x = n.inputs[0]
            xs = self.shape(x)
            if [xs[k] for k in _big_axes(xs)] != [shape[i], shape[j]]:
                return None
            inner = self.swapped(x)
            return None if inner is None else self.reshaped(inner, target)
        swap = rule(prim, "passes").swap
        if swap is not None:
            out = swap(self.emit, self.shape, *n.inputs, **n.params)
            return None if out is None else self.reshaped(out, target)
        if _is_elementwise(prim) and not prim.multiple_results:
            return self._elementwise(n, shape, i, j, target)
        return None

    def _elementwise(self, n: Node, shape: tuple, i: int, j: int, target: tuple) -> int | None:
        rank = len(shape)
        inputs = []
        for x in n.inputs:
            xs = self.shape(x)
            padded = (1,) * (rank - len(xs)) + xs  # broadcasting: xs is at most `rank` long
            if padded[i] == shape[i] and padded[j] == shape[j]:
                new = self.swapped(x)  # it holds both axes: swapped itself
                if new is None:
                    return None
            else:  # broadcast along one or both axes: its elements keep their order
                new = self.reshaped(x, _exchanged(padded, i, j))
            inputs.append(new)
        return self.emit(n.prim, inputs, target, n.params, self.g.avals[n.outputs[0]][1])

    def regrouped(self, slot: int, a: int, b: int) -> int | None:
        """A slot holding `slot`'s value with its [a, b] grid of examples in [b, a] order
        (NOTE(example-grid)), or None where the chain cannot be rewritten."""
        if slot in self.regrouped_slots:
            if slot in self.reads:  # computed anew: this read is the chain's too
                self.reads[slot] += 1
            return self.regrouped_slots[slot]
        new = self._regroup(slot, a, b)
        if new is not None:
            self.regrouped_slots[slot] = new
        return new

    def _regroup(self, slot: int, a: int, b: int) -> int | None:
        g = self.g
        shape = self.shape(slot)
        k = _grid(shape, a, b)
        if not k:
            return None
        target = shape if k == 1 else (b, a) + shape[2:]
        if slot in g.constants:
            value = np.asarray(g.constants[slot]).reshape((a, b) + shape[k:])
            return self.constant(np.swapaxes(value, 0, 1).reshape(target))
        n = self.producer.get(slot)
        if n is None:
            return None
        prim = n.prim
        if prim is transpose_p:  # exchanging the same axes: its input is in [b, a] order
            x = n.inputs[0]
            return x if k == 2 and _exchanges_leading(n.params["perm"], self.shape(x)) else None
        self.reads[slot] += 1
        if prim is reshape_p:  # only when it keeps the grid in front, merged or not
            inner = self.regrouped(n.inputs[0], a, b)
            return None if inner is None else self.reshaped(inner, target)
        if prim.multiple_results:
            return None
        if _is_elementwise(prim):
            inputs = self._broadcast(n.inputs, shape, k, a, b)
        elif rule(prim, "passes").examples is not None:
            found = rule(prim, "passes").examples(self.shape, *n.inputs, **n.params)
            if found is None or found[0] < k:
                return None
            if found[1] is None:  # broadcasting along those axes, as an elementwise op
                inputs = self._broadcast(n.inputs, shape, k, a, b)
            else:
                inputs = list(n.inputs)
                for i in found[1]:
                    inputs[i] = self.regrouped(inputs[i], a, b)
                    if inputs[i] is None:
                        return None
        else:
            return None
        return None if inputs is None else self.emit(prim, inputs, target, n.params,
                                                     g.avals[n.outputs[0]][1])

    def _broadcast(self, inputs: list, shape: tuple, k: int, a: int, b: int) -> list | None:
        """An elementwise op's operands for its output of `shape` in [b, a] order."""
        rank, out = len(shape), []
        for x in inputs:
            xs = self.shape(x)
            padded = (1,) * (rank - len(xs)) + xs
            if padded[:k] == shape[:k]:
                new = self.regrouped(x, a, b)
                if new is None:
                    return None
            elif all(s == 1 for s in padded[:k]):
                new = x  # broadcast along the whole grid
            elif k == 2:  # along one of its axes: its elements keep their order
                new = self.reshaped(x, (padded[1], padded[0]) + padded[2:])
            else:
                return None
            out.append(new)
        return out

    def complete(self) -> bool:
        """Whether nothing outside the chain reads a value the chain replaces."""
        return all(self.uses[s] == count for s, count in self.reads.items())


def _rewritable(perm: tuple, shape: tuple) -> bool:
    return _swaps(perm, shape) or _exchanges_leading(perm, shape)


def swap_transposes(g: Graph) -> bool:
    """Rewrite each transpose that swaps a chain's two axes (NOTE(swapped-layout)) in place;
    whether any was rewritten. Graphs whose sizes are read at replay are left alone."""
    if g.sized:
        return False
    # Most graphs have no such transpose: found without a call per node (tracing's cost
    # is counted in calls, tests/test_tracing_cost.py).
    roots = [n for n in g.nodes if n.__class__ is Node and n.prim is transpose_p]
    if not any(_rewritable(n.params["perm"], tuple(g.avals[n.inputs[0]][0])) for n in roots):
        return False
    uses, producer = readers(g)
    nodes, changed = [], False
    for n in g.nodes:
        if type(n) is Node and n.prim is transpose_p:
            x = n.inputs[0]
            perm, shape = n.params["perm"], tuple(g.avals[x][0])
            if _rewritable(perm, shape) and x not in g.constants:
                rw = _Rewrite(g, uses, producer)
                new = rw.swapped(x) if _swaps(perm, shape) else None
                if new is None and _exchanges_leading(perm, shape):
                    rw = _Rewrite(g, uses, producer)
                    new = rw.regrouped(x, shape[0], shape[1])
                    if new is not None and not rw.complete():
                        new = None
                # Every rewritten chain reaches a product, a constant, a cancelling
                # transpose or only broadcast operands: no transpose is left in it.
                if new is not None:
                    g.constants.update(rw.constants)
                    nodes.extend(rw.nodes)
                    out = n.outputs[0]
                    nodes.append(Node(reshape_p, [new], {"shape": tuple(g.avals[out][0])},
                                      [out], phase=n.phase))
                    changed = True
                    continue
        nodes.append(n)
    g.nodes = nodes
    return changed
