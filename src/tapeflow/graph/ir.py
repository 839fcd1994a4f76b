"""The traced graph: a flat list of nodes over numbered value slots, printable and drawable.

A slot holds one value during a replay. Slots are filled by the graph's inputs,
by captured constants, by captured variables (read at replay time: variables are
captured by reference) and by node outputs. Besides primitive applications the
graph has two kinds of effect nodes: guards (a Python read of a value while
tracing, checked at replay) and variable writes (committed when the replay ends).
"""

from __future__ import annotations

import math
import operator
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import Primitive

__all__ = ["Graph", "Node", "CustomBackward", "Guard", "Assign", "Operation", "SizeOf", "SizeExpr",
           "SIZE_OPS", "resolve",
           "size_slots", "renamed_sizes", "readers"]


@dataclass
class Node:
    """One primitive application: `outputs = prim(*inputs, **params)`.

    A custom_gradient node also carries its traced backward function (`backward`), so a
    replay can be differentiated from outside with the values of that replay.
    """

    prim: Primitive
    inputs: list[int]
    params: dict
    outputs: list[int]
    backward: "CustomBackward | None" = None
    phase: str = "forward"  # "backward": recorded during a tape's backward pass (for pictures)
    sized: bool = False     # its params hold sizes read when the graph runs (SizeOf)


@dataclass
class CustomBackward:
    """A custom grad_fn traced into a graph: inputs are the output cotangents, then the
    values of `refs` (slots of the enclosing graph the grad_fn closed over), whose values
    at trace time are `ref_values`."""

    graph: "Graph"
    refs: list[int]
    ref_values: list = field(default_factory=list)


@dataclass
class Guard:
    """A value Python read while tracing; the replay is valid only if it reads the same."""

    slot: int
    how: str           # "bool", "float", "int", "index", "complex", "array", "shape", or
    #                    "size" (a size check's answer: NOTE(symbolic-sizes) in graph/dims.py)
    expected: Any
    where: str         # the source line that read it

    def holds(self, value: Any) -> bool:
        if self.how == "shape":  # the shape of a value whose shape its inputs' values decide
            return np.shape(value) == self.expected
        # Python tells -0.0 from 0.0 (atan2, copysign, 1 / x), so a float read's zero
        # carries its sign; int() and indexing cannot see it.
        if self.how == "bool" or self.how == "size":
            return bool(value) == self.expected
        if self.how == "array":
            value = np.asarray(value)
            if value.shape != self.expected.shape:
                return False
            if _dt.kind(value.dtype) not in "fc":
                return bool(np.array_equal(value, self.expected))
            if not np.array_equal(value, self.expected, equal_nan=True):
                return False
            parts = (np.real, np.imag) if _dt.kind(value.dtype) == "c" else (np.asarray,)
            for part in parts:
                v, e = part(value), part(self.expected)
                zeros = v == 0
                if zeros.any() and not np.array_equal(np.signbit(v[zeros]), np.signbit(e[zeros])):
                    return False
            return True
        if self.how == "complex":
            return _same_number(value.real, self.expected.real) and \
                _same_number(value.imag, self.expected.imag)
        if self.how == "float":
            return _same_number(value, self.expected)
        return value == self.expected or (value != value and self.expected != self.expected)


def _same_number(value: Any, expected: Any) -> bool:
    """Equal, NaN to NaN, and a zero of the same sign."""
    if value == expected:
        return value != 0 or math.copysign(1.0, value) == math.copysign(1.0, expected)
    return value != value and expected != expected


@dataclass(frozen=True)
class SizeOf:
    """A size in a node's params, read when the graph runs: axis `axis` of the value in
    slot `slot`, `times` over (a batch of examples of `times` rows each), graph/polymorphic.py
    makes them; `resolve` reads them."""

    slot: int
    axis: int
    times: int = 1

    def __repr__(self) -> str:
        scale = "" if self.times == 1 else f" * {self.times}"
        return f"size(%{self.slot}, {self.axis}){scale}"


# What Python may do with sizes in a size-generic trace and keep them sizes (graph/dims.py)
SIZE_OPS = {"add": operator.add, "sub": operator.sub, "mul": operator.mul,
            "floordiv": operator.floordiv, "mod": operator.mod, "neg": operator.neg,
            "eq": operator.eq, "ne": operator.ne, "lt": operator.lt, "le": operator.le,
            "gt": operator.gt, "ge": operator.ge}


@dataclass(frozen=True)
class SizeExpr:
    """Arithmetic or a comparison Python did on sizes while tracing (graph/dims.py), kept
    as it ran: `op` (a key of SIZE_OPS) of `args` (SizeOf, SizeExpr or ints), computed
    again from the sizes when the graph runs."""

    op: str
    args: tuple

    def __repr__(self) -> str:
        return f"{self.op}({', '.join(map(repr, self.args))})"


def resolve(params: Any, size: Any) -> Any:
    """`params` with every SizeOf replaced by ``size(slot, axis)`` (times its `times`), and
    every SizeExpr computed from them (or kept, of what `size` left symbolic)."""
    if isinstance(params, SizeExpr):
        args = tuple(resolve(a, size) for a in params.args)
        if all(isinstance(a, (int, np.integer)) for a in args):
            return SIZE_OPS[params.op](*(int(a) for a in args))
        return SizeExpr(params.op, args)
    if isinstance(params, SizeOf):
        found = size(params.slot, params.axis)
        if params.times == 1 or found is None:
            return found
        if isinstance(found, SizeOf):
            return SizeOf(found.slot, found.axis, found.times * params.times)
        return found * params.times
    if isinstance(params, dict):
        return {k: resolve(v, size) for k, v in params.items()}
    if isinstance(params, (tuple, list)) and not hasattr(params, "_fields"):
        return type(params)(resolve(v, size) for v in params)
    if isinstance(params, slice):
        return slice(resolve(params.start, size), resolve(params.stop, size),
                     resolve(params.step, size))
    return params


def size_slots(params: Any) -> set:
    """The slots whose sizes `params` read (a sized node's uses beyond its inputs)."""
    found: set = set()
    resolve(params, lambda slot, axis: found.add(slot))
    return found


def renamed_sizes(params: Any, alias: dict) -> Any:
    """`params` with each SizeOf's slot renamed by `alias` (a graph pass merged it)."""
    return resolve(params, lambda slot, axis: SizeOf(alias.get(slot, slot), axis))


@dataclass
class Assign:
    """`variable.assign(slot)`: the variable's value from here on, committed at the end."""

    var: int           # index into Graph.variables
    slot: int


@dataclass
class Graph:
    """A traced function: inputs, captured constants and variables, a node list, outputs."""

    name: str = "fn"
    inputs: list[int] = field(default_factory=list)
    outputs: list[int | None] = field(default_factory=list)
    output_structure: Any = None
    nodes: list[Any] = field(default_factory=list)       # Node | Guard | Assign, in order
    constants: dict[int, Any] = field(default_factory=dict)
    variables: list[Any] = field(default_factory=list)   # captured Variable objects
    var_slots: dict[int, int] = field(default_factory=dict)  # slot -> variable index
    avals: dict[int, tuple] = field(default_factory=dict)    # slot -> (shape, dtype)
    next_slot: int = 0
    # NOTE(captures): the tensors from outside whose values are constants (slot -> a weak
    # reference), and the ops folded away that computed constants from them, in order: a
    # replay under recorders binds those tensors and reruns those ops, so a tape watching
    # a captured tensor sees the graph use it (a constant alone would be connected to
    # nothing, and its gradient None), as TensorFlow's captured inputs.
    captured: dict[int, Any] = field(default_factory=dict)
    prelude: list[Any] = field(default_factory=list)
    # A loop body's decisions on its sizes (SizeExpr, the traced answer, the line), which
    # it holds only where they decide the same (NOTE(symbolic-sizes) in graph/dims.py): a
    # body has no guards, so its replay at new sizes checks them first.
    size_checks: list[tuple] = field(default_factory=list)

    @property
    def sized(self) -> frozenset:
        """Indices of the nodes whose params hold sizes read when the graph runs (SizeOf, in
        a graph that serves every size of its inputs' None dimensions: NOTE(sized-params)
        in graph/polymorphic.py)."""
        return frozenset(k for k, n in enumerate(self.nodes) if type(n) is Node and n.sized)

    def new_slot(self, value: Any) -> int:
        slot = self.next_slot
        self.next_slot = slot + 1
        try:  # an array or NumPy scalar (the common case, once per op while tracing)
            self.avals[slot] = (value.shape, value.dtype)
        except AttributeError:
            value = np.asarray(value)
            self.avals[slot] = (value.shape, value.dtype)
        return slot

    def __repr__(self) -> str:  # short: a loop's body graph is a param of its node
        return f"<Graph {self.name}: {self.count()} ops>"

    # ------------------------------------------------------------------ inspection
    def count(self) -> int:
        """Number of primitive nodes."""
        return sum(isinstance(n, Node) for n in self.nodes)

    def get_operations(self) -> list["Operation"]:
        """The primitive nodes, TensorFlow-style (`.type`, `.inputs`, `.outputs`)."""
        return [Operation(self, n) for n in self.nodes if isinstance(n, Node)]

    def _label(self, slot: int | None) -> str:
        if slot is None:
            return "None"
        if slot in self.constants:
            value = self.constants[slot]
            if np.size(value) <= 4:
                return f"const({np.asarray(value).tolist()!r})"
            return f"const#{slot}"
        if slot in self.var_slots:
            return f"var:{self.variables[self.var_slots[slot]].name}"
        return f"%{slot}"

    def _type(self, slot: int) -> str:
        shape, dtype = self.avals.get(slot, ((), "?"))
        return f"{np.dtype(dtype).name}{list(shape)}"

    def __str__(self) -> str:
        head = ", ".join(f"%{s}: {self._type(s)}" for s in self.inputs)
        lines = [f"graph {self.name}({head}) {{"]
        for n in self.nodes:
            if isinstance(n, Node):
                outs = ", ".join(f"%{o}: {self._type(o)}" for o in n.outputs)
                args = ", ".join(self._label(i) for i in n.inputs)
                params = "".join(f", {k}={_short(v)}" for k, v in n.params.items())
                lines.append(f"  {outs} = {n.prim.name}({args}{params})")
            elif isinstance(n, Guard):
                lines.append(f"  guard {n.how}({self._label(n.slot)}) == "
                             f"{_short(n.expected)}   # {n.where}")
            else:
                lines.append(f"  {self.variables[n.var].name} <- {self._label(n.slot)}")
        lines.append("  return " + ", ".join(self._label(o) for o in self.outputs))
        lines.append("}")
        return "\n".join(lines)

    def to_dot(self) -> str:
        """The graph in graphviz's dot language (render with `dot -Tpng`)."""
        out = [f'digraph "{self.name}" {{', "  rankdir=TB;", '  node [fontname="Helvetica"];']
        for s in self.inputs:
            out.append(f'  s{s} [shape=ellipse, label="input %{s}\\n{self._type(s)}"];')
        for s, v in self.constants.items():
            out.append(f'  s{s} [shape=note, label="{self._label(s)}"];')
        for s, i in self.var_slots.items():
            out.append(f'  s{s} [shape=cylinder, label="{self.variables[i].name}"];')
        for k, n in enumerate(self.nodes):
            if isinstance(n, Node):
                color = _PHASE_COLORS.get(n.phase, "white")
                out.append(f'  n{k} [shape=box, style=filled, fillcolor="{color}", '
                           f'label="{n.prim.name}"];')
                for i in n.inputs:
                    out.append(f"  {self._source(i)} -> n{k};")
                for o in n.outputs:
                    out.append(f'  s{o} [shape=point, xlabel="%{o}"];')
                    out.append(f"  n{k} -> s{o};")
            elif isinstance(n, Guard):
                out.append(f'  n{k} [shape=diamond, style=filled, fillcolor="{_GUARD_COLOR}", '
                           f'label="guard {n.how}\\n== {_short(n.expected)}"];')
                out.append(f"  {self._source(n.slot)} -> n{k};")
            else:
                out.append(f'  n{k} [shape=house, label="assign {self.variables[n.var].name}"];')
                out.append(f"  {self._source(n.slot)} -> n{k};")
        for j, o in enumerate(self.outputs):
            if o is not None:
                out.append(f'  out{j} [shape=doublecircle, label="output {j}"];')
                out.append(f"  {self._source(o)} -> out{j};")
        out.append("}")
        return "\n".join(out)

    def _source(self, slot: int) -> str:
        return f"s{slot}"


def readers(g: Graph) -> tuple[Counter, dict[int, Node]]:
    """How often each slot of `g` is read (by nodes, custom backward functions, guards,
    assigns and the outputs) and the node that makes each slot: what a rewriting pass
    checks before it drops a value it replaces.

    Example:
        >>> import tapeflow as tf
        >>> f = tf.function(lambda x: tf.sin(x) * tf.sin(x))
        >>> g = f.get_concrete_function(tf.constant([1.0])).graph
        >>> uses, producer = readers(g)
        >>> [producer[s].prim.name for s in g.outputs], uses[g.outputs[0]]
        (['multiply'], 1)
    """
    uses: Counter = Counter(o for o in g.outputs if o is not None)
    producer: dict[int, Node] = {}
    for n in g.nodes:
        if type(n) is Node:
            uses.update(n.inputs)
            if n.backward is not None:
                uses.update(n.backward.refs)
            for o in n.outputs:
                producer[o] = n
        elif isinstance(n, (Guard, Assign)):
            uses[n.slot] += 1
    return uses, producer


# Forward (primal) work in blue, a tape's backward pass in orange, guards in yellow.
_PHASE_COLORS = {"forward": "#cfe2f3", "backward": "#f9cb9c"}
_GUARD_COLOR = "#fff2cc"


def _short(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}" if v.size > 4 else repr(v.tolist())
    if callable(v) and not isinstance(v, type):
        return getattr(v, "__name__", type(v).__name__)
    if isinstance(v, np.dtype):
        return v.name
    return repr(v)


class Operation:
    """A TensorFlow-style view of one node: `.type`, `.name`, `.inputs`, `.outputs`."""

    def __init__(self, graph: Graph, node: Node) -> None:
        self._graph = graph
        self._node = node

    @property
    def type(self) -> str:
        return self._node.prim.name

    name = type

    @property
    def inputs(self) -> list[str]:
        return [self._graph._label(i) for i in self._node.inputs]

    @property
    def outputs(self) -> list[str]:
        return [f"%{o}" for o in self._node.outputs]

    @property
    def params(self) -> dict:
        return dict(self._node.params)

    def __repr__(self) -> str:
        return f"<Operation {self.type}: {self.inputs} -> {self.outputs}>"
