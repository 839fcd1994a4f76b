"""Arrays of a few elements replayed as NumPy scalars (NOTE(scalarize)).

Scalar code is often written on tiny arrays: an ODE's state `y` of two elements, its
right-hand side stacked from `y[0]` and `y[1]`, a tape's backward pass scattering each
element's cotangent into zeros of `y`'s shape. On the NumPy replay each such node is a
NumPy call of about a microsecond, whatever its size, while arithmetic on NumPy
scalars costs a tenth of that (docs/performance-notes.md, #scalar-operators).
`scalarize` rewrites a graph so that values of at most MAX_ELEMENTS elements made by
arithmetic or data movement are held element by element, as rank-0 values.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from ..catalog import STATEFUL
from ..ops.indexing import getitem_p
from ..ops.shape import concat_p
from ..ops.structural import reshape_p
from .ir import Graph, Node
from .passes import _dce, _fold_simplify_cse, _hashable, merge_variable_reads
from .specialize import OPERATORS

__all__ = ["scalarize", "scalar_rewrite", "replay_cost", "MAX_ELEMENTS", "MIN_SPLIT", "OPERATOR_COST", "PAYS"]

MAX_ELEMENTS = 4   # a value this small is held as scalars (#scalar-operators)
MIN_SPLIT = 16     # nodes a graph needs to split for the rewrite to be worth a replay
_SHIFT = 1 << 20   # element numbers are probed twice, this far apart
# A scalar operator costs about a tenth of a NumPy call (#scalar-operators); a rewrite
# is kept where it is expected to cost less than PAYS of the graph's calls: putting
# values together for the ops that stay and taking them apart again can cost more than
# the arithmetic saves (a sine between every two steps).
OPERATOR_COST = 0.1
PAYS = 0.8

# NOTE(scalarize): which nodes are split, and how the rest read their values. A node is
# split where its outputs have 1 to MAX_ELEMENTS elements and it is one of:
# - arithmetic the replay runs as a Python operator on rank-0 real floats (add, subtract,
#   multiply, divide, negate: specialize.OPERATORS), of rank 1 or more, one node per
#   output element, its operands' elements broadcast as NumPy would (rank 0 is already
#   one such node);
# - data movement of inputs of at most MAX_ELEMENTS elements too (its `passes` hint
#   `moves`: reshape, slicing, concat, split, a slice's transpose), whose impl, run on
#   numbered elements twice with the numbers shifted,
#   says which input element or zero each output element is. A number that does not
#   shift, or an output that is not a number, leaves the node as it is.
# A split value's elements are new rank-0 slots; its zeros are one rank-0 constant per
# dtype. A node that is not split reads a split value as an array, put together where
# first read (concat of the elements, reshaped) into the value's own slot; a rank-0 value
# is its element. A value made outside (an input, a constant, an unsplit node's output)
# that a split node reads is taken apart by getitem, once. Every element is computed by
# the same IEEE operation as before, so the replay's values are the graph's bit for bit
# (but for which NaN an operation on two NaNs passes on: NumPy's vector loops may swap
# the operands); folding, simplification and CSE then run on the scalars. A rewrite that
# would not pay (`replay_cost`) is dropped. Only the NumPy replay runs the
# result, offered to `Fastest` beside the graph as traced (graph/executables.py).


def scalarize(g: Graph) -> Graph:
    """`g` with its values of at most MAX_ELEMENTS elements held as scalars
    (NOTE(scalarize)); `g` itself where fewer than MIN_SPLIT nodes would be split or
    the rewrite would not pay (`PAYS`). `g` is not changed.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.scalarize import scalarize
        >>> def f(y):
        ...     for _ in range(10):
        ...         y = y + 0.1 * tf.stack([y[1], -y[0]])
        ...     return y
        >>> g = tf.function(f).get_concrete_function(tf.constant([1.0, 0.0])).graph
        >>> s = scalarize(g)
        >>> sorted({n.prim.name for n in s.nodes})
        ['add', 'concat', 'getitem', 'multiply', 'negative', 'reshape']
        >>> s.avals[s.nodes[5].outputs[0]][0]
        ()
    """
    return scalar_rewrite(g)[0]


def scalar_rewrite(g: Graph) -> tuple[Graph, float]:
    """`scalarize(g)` and the share of `g`'s replay cost (`replay_cost`) it costs: 1.0
    where it is `g` itself.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.scalarize import scalar_rewrite
        >>> g = tf.function(lambda x: x * 2.0).get_concrete_function(tf.ones(2)).graph
        >>> scalar_rewrite(g)[1]
        1.0
    """
    if g.sized:
        return g, 1.0
    one = dataclasses.replace(g, nodes=list(g.nodes))
    merge_variable_reads(one)  # a (2,) weight read at each step is taken apart once
    how = [_split(one, n) if type(n) is Node else None for n in one.nodes]
    if len(how) - how.count(None) < MIN_SPLIT:
        return g, 1.0
    out = _Rewrite(one).run(how)
    share = replay_cost(out) / max(replay_cost(g), 1.0)
    return (out, share) if share < PAYS else (g, 1.0)


def replay_cost(g: Graph) -> float:
    """A replay's estimated cost in NumPy calls, a scalar operator counted as
    OPERATOR_COST.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.scalarize import replay_cost
        >>> f = tf.function(lambda x: tf.sin(x * 2.0) + x)
        >>> replay_cost(f.get_concrete_function(tf.constant([1.0, 2.0])).graph)
        3.0
    """
    return sum(OPERATOR_COST if n.prim.impl in OPERATORS and not g.avals[n.outputs[0]][0]
               and np.dtype(g.avals[n.outputs[0]][1]).kind == "f" else 1.0
               for n in g.nodes if type(n) is Node)


def _small(g: Graph, s: int) -> bool:
    return 1 <= math.prod(g.avals[s][0]) <= MAX_ELEMENTS


def _split(g: Graph, n: Node) -> str | None:
    """How node `n` is split: "operator", "moves", or None (kept)."""
    if n.sized or n.backward is not None or STATEFUL in n.prim.effects:
        return None
    if not all(_small(g, o) for o in n.outputs):
        return None
    if n.prim.impl in OPERATORS and not n.params and g.avals[n.outputs[0]][0]:
        dtype = np.dtype(g.avals[n.outputs[0]][1])
        if dtype.kind == "f" and all(np.dtype(g.avals[s][1]) == dtype for s in n.inputs):
            return "operator"
        return None
    hints = n.prim.rules.get("passes")
    if hints is not None and hints.moves and n.inputs and all(_small(g, s) for s in n.inputs):
        return "moves"
    return None


def _moved(g: Graph, n: Node, known: dict) -> list | None:
    """Per output, the input element (input position, flat index) or None (a zero) of
    each of its elements; None where the impl does not just move elements. `known`
    keeps the answers by primitive, shapes and params."""
    try:
        key = (n.prim, tuple(g.avals[s][0] for s in n.inputs), _hashable(n.params))
        return known[key]
    except KeyError:
        found = known[key] = _probe(g, n)
        return found
    except TypeError:  # params that do not hash
        return _probe(g, n)


def _probe(g: Graph, n: Node) -> list | None:
    sizes = [math.prod(g.avals[s][0]) for s in n.inputs]
    owner = [(i, k) for i, size in enumerate(sizes) for k in range(size)]
    probes = []
    for shift in (1, 1 + _SHIFT):
        numbers = np.arange(len(owner), dtype=np.int64) + shift
        args, start = [], 0
        for s, size in zip(n.inputs, sizes, strict=True):
            args.append(numbers[start:start + size].reshape(g.avals[s][0]).copy())
            start += size
        try:
            out = n.prim.impl(*args, **n.params)
        except Exception:  # noqa: BLE001 - an impl that needs its real operands: kept
            return None
        probes.append(out if n.prim.multiple_results else [out])
    found = []
    for o, first, second in zip(n.outputs, *probes, strict=True):
        first, second = np.asarray(first), np.asarray(second)
        if first.shape != g.avals[o][0] or first.dtype != np.int64:
            return None
        elements = []
        for a, b in zip(first.ravel().tolist(), second.ravel().tolist(), strict=True):
            if a == 0 and b == 0:
                elements.append(None)
            elif b - a == _SHIFT and 1 <= a <= len(owner):
                elements.append(owner[a - 1])
            else:
                return None
        found.append(elements)
    return found


class _Rewrite:
    def __init__(self, g: Graph) -> None:
        self.g = g
        self.out = dataclasses.replace(g, nodes=[], avals=dict(g.avals),
                                       constants=dict(g.constants), prelude=list(g.prelude))
        self.elems: dict[int, list] = {}   # a split value's slot -> its element slots
        self.whole: set[int] = set()       # split values put together again
        self.zeros: dict[Any, int] = {}    # dtype -> a rank-0 zero constant

    def run(self, split: list) -> Graph:
        g, out = self.g, self.out
        known: dict = {}
        for n, how in zip(g.nodes, split, strict=True):
            if type(n) is not Node:  # a guard or a write reads the value as an array
                out.nodes.append(dataclasses.replace(n, slot=self.array(n.slot)))
                continue
            if how == "operator":
                self._operator(n)
            elif how == "moves" and (moved := _moved(g, n, known)) is not None:
                for o, elements in zip(n.outputs, moved, strict=True):
                    self.elems[o] = [None if e is None else self.element(n.inputs[e[0]], e[1])
                                     for e in elements]
            else:
                self._keep(n)
        out.outputs = [None if o is None else self.array(o) for o in g.outputs]
        _fold_simplify_cse(out)
        _dce(out)
        return out

    def _new(self, dtype: Any, shape: tuple = ()) -> int:
        out = self.out
        slot = out.next_slot
        out.next_slot += 1
        out.avals[slot] = (shape, dtype)
        return slot

    def _emit(self, n: Node, prim: Any, inputs: list, params: dict, outputs: list) -> None:
        self.out.nodes.append(Node(prim, inputs, params, outputs, phase=n.phase))

    def _keep(self, n: Node) -> None:
        backward = n.backward
        if backward is not None:
            backward = dataclasses.replace(backward, refs=[self.array(r) for r in backward.refs])
        self.out.nodes.append(Node(n.prim, [self.array(s) for s in n.inputs], n.params,
                                   list(n.outputs), backward, n.phase, n.sized))

    def _operator(self, n: Node) -> None:
        o = n.outputs[0]
        shape, dtype = self.g.avals[o]
        size = math.prod(shape)
        reads = []
        for s in n.inputs:  # each operand's element under each output element
            at = self.g.avals[s][0]
            if at == shape:
                reads.append((s, range(size)))
            elif math.prod(at) == 1:
                reads.append((s, [0] * size))
            else:
                reads.append((s, np.broadcast_to(np.arange(math.prod(at)).reshape(at), shape)
                              .ravel().tolist()))
        elements = []
        for k in range(size):
            slot = self._new(dtype)
            self._emit(n, n.prim, [self.element(s, at[k]) for s, at in reads], {}, [slot])
            elements.append(slot)
        self.elems[o] = elements

    def element(self, s: int, k: int) -> int:
        """The slot of element k of value s (taken apart on first use)."""
        elements = self.elems.get(s)
        if elements is None:
            elements = self.elems[s] = self._apart(s)
        e = elements[k]
        return self._zero(self.g.avals[s][1]) if e is None else e

    def _apart(self, s: int) -> list:
        shape, dtype = self.g.avals[s]
        if not shape:
            return [s]
        value = self.out.constants.get(s)
        slots = []
        for key in np.ndindex(*shape):
            slot = self._new(dtype)
            if value is not None:
                self.out.constants[slot] = np.asarray(value)[key]
            else:
                self.out.nodes.append(Node(getitem_p, [s], {"key": key}, [slot]))
            slots.append(slot)
        return slots

    def _zero(self, dtype: Any) -> int:
        key = np.dtype(dtype)
        slot = self.zeros.get(key)
        if slot is None:
            slot = self.zeros[key] = self._new(dtype)
            self.out.constants[slot] = np.zeros((), key)[()]
        return slot

    def array(self, s: int) -> int:
        """The slot holding value s as an array (put together on first use)."""
        elements = self.elems.get(s)
        if elements is None or s in self.whole:
            return s
        shape, dtype = self.g.avals[s]
        if not shape:
            return self.element(s, 0)
        rows = []
        for k in range(len(elements)):
            if elements[k] is None:
                row = self._new(dtype, (1,))
                self.out.constants[row] = np.zeros((1,), dtype)
            else:
                row = self._new(dtype, (1,))
                self.out.nodes.append(Node(reshape_p, [elements[k]], {"shape": (1,)}, [row]))
            rows.append(row)
        if shape == (len(elements),):
            self.out.nodes.append(Node(concat_p, rows, {"axis": 0}, [s]))
        else:
            flat = self._new(dtype, (len(elements),))
            self.out.nodes.append(Node(concat_p, rows, {"axis": 0}, [flat]))
            self.out.nodes.append(Node(reshape_p, [flat], {"shape": shape}, [s]))
        self.whole.add(s)
        return s

