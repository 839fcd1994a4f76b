"""A loop's work that needs no carry, done for every step at once (NOTE(hoist)).

A scan's NumPy replay runs its body step by step: each node is one NumPy call per
step, whatever the size of its arrays. Of a rolled RNN's body (NOTE(reroll) in
graph/reroll.py), most nodes do not lie on the recurrence: an input's gates, the output
layer and loss, a backward step's weight gradients. `hoist` rewrites each scan of a
graph so that its steps run the recurrence alone, and the rest runs as one NumPy call
over all steps, before or after the loop.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from typing import Any

import numpy as np

from ..batching import vmap
from ..catalog import IDENTITY, NO_DERIVATIVE, rule
from ..core import registry, substack
from ..tensor import Tensor
from .ir import Graph, Node
from .passes import eliminate_dead_code, optimize
from .replay import interpret
from .trace import Tracer

__all__ = ["hoist", "HOIST_BYTES", "HOIST_TOTAL", "SUM_ELEMENTS"]

HOIST_BYTES = 1 << 16   # a step's value a node makes, at most, to run for all steps at once
HOIST_TOTAL = 1 << 25   # and that value over all steps, at most (it is held at once)
SUM_ELEMENTS = 64       # a running sum's elements, at most, to be summed after the loop

# NOTE(hoist): what leaves the loop, and why the values stay the same bit for bit.
# - A running sum (a carry whose next value is add(carry, v), the carry read by nothing
#   else: a backward loop's gradient of a weight) stops being a carry: v is stacked, and
#   after the loop a cumsum of [start, v of each step in the order the steps ran] gives
#   its last row, the same additions in the same order (a cumsum adds row after row).
#   Only float32, float64 and complex dtypes (half floats' cumsum runs in float32), and
#   sums of at most SUM_ELEMENTS elements: NumPy's cumsum along the steps runs one short
#   loop per element (8 ns an element and step), where an add in each step costs 0.5 us
#   and little per element (an RNN's [32, 32] weight gradient: 1.7x the loop's time).
# - Nodes that read no carry, directly or not, run before the loop: on the sequences'
#   stacked arrays, batched by the batching rules (vmap), or once where they read
#   constants of the loop alone; the body reads their results as sequences or constants.
# - Nodes that the next carries do not need run after it, on the stacked values they read
#   (the body's values become per-step results; a carry entering each step is one too).
# A node moves only where it is elementwise or data movement (its `passes` hint): such a
# node computes each element by the same operation on the same operands whether it runs
# on one step or on all, so its batched form gives the same bits (a reduction's order, a
# product's blocking could change with the batch). A value of more than HOIST_BYTES a step
# stays: past that a call's cost is its work, and the stack would take memory; so does one
# of more than HOIST_TOTAL over all steps (a long loop's values are held at once).


def _moves(n: Any, avals: dict, steps: int) -> bool:
    """Whether node `n` may run for all `steps` steps at once (NOTE(hoist))."""
    if type(n) is not Node or n.backward is not None or n.sized:
        return False
    if n.prim.effects - {NO_DERIVATIVE, IDENTITY}:
        return False
    hints = rule(n.prim, "passes")
    if not (hints.elementwise or hints.moves):
        return False
    size = sum(_bytes(avals[o]) for o in n.outputs)
    return size <= HOIST_BYTES and size * steps <= HOIST_TOTAL


def _bytes(aval: tuple) -> int:
    shape, dtype = aval
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


class _Hoist:
    """The rewrite of one scan node `n` of graph `g` (new nodes, in `g`'s slots)."""

    def __init__(self, g: Graph, n: Node) -> None:
        self.g, self.n, self.prims = g, n, registry()
        p = n.params
        self.body, self.nc, self.nx, self.T = p["body"], p["n_carry"], p["n_x"], p["length"]
        self.reverse = p["reverse"]

    def _new(self, aval: tuple) -> int:
        g = self.g
        slot = g.next_slot
        g.next_slot += 1
        g.avals[slot] = (tuple(aval[0]), aval[1])
        return slot

    def _stacked(self, aval: tuple) -> tuple:
        return (self.T,) + tuple(aval[0]), aval[1]

    def rewrite(self) -> list | None:
        B, nc, nx = self.body, self.nc, self.nx
        if self.T < 2 or self.n.params["emits_carries"] or B.sized or B.size_checks or \
                any(type(m) is not Node for m in B.nodes):
            return None
        bc, bx, bk = B.inputs[:nc], B.inputs[nc:nc + nx], B.inputs[nc + nx:]
        couts = B.outputs[:nc]
        reads = Counter(s for m in B.nodes for s in m.inputs)
        outs = Counter(B.outputs)
        producer = {o: m for m in B.nodes for o in m.outputs}
        # values the same at every step: constants of the loop and what only they make
        fixed = set(bk) | set(B.constants)
        for m in B.nodes:
            if type(m) is Node and all(s in fixed for s in m.inputs):
                fixed.update(m.outputs)
        sums = self._sums(bc, couts, reads, outs, producer, fixed)
        adds = {id(m) for m, _ in sums.values()}
        kept = [i for i in range(nc) if i not in sums]
        nodes = [m for m in B.nodes if id(m) not in adds]
        carried = {bc[i] for i in kept}
        for m in nodes:
            if any(s in carried for s in m.inputs):
                carried.update(m.outputs)
        # before the loop: nodes that read no carry
        carry_outs = {couts[i] for i in kept}
        early: dict = {s: "x" for s in bx}
        early.update({s: "k" for s in fixed if s in set(bk) | set(B.constants)})
        before, once = [], []
        for m in nodes:
            if any(o in carried or o in carry_outs for o in m.outputs) or \
                    not all(s in early for s in m.inputs) or not _moves(m, B.avals, self.T):
                continue
            kind = "x" if any(early[s] == "x" for s in m.inputs) else "k"
            if kind == "k" and any(o in outs for o in m.outputs):
                continue  # a per-step result the same at every step: left in the loop
            (before if kind == "x" else once).append(m)
            early.update({o: kind for o in m.outputs})
        moved = {id(m) for m in before + once}
        rest = [m for m in nodes if id(m) not in moved]
        # after the loop: nodes the next carries do not need, whose readers all go too
        need = set(carry_outs)
        for m in reversed(rest):
            if any(o in need for o in m.outputs):
                need.update(m.inputs)
        readers: dict = {}
        for r in rest:
            for s in r.inputs:
                readers.setdefault(s, []).append(r)
        after: list = []
        late: set = set()
        for m in reversed(rest):
            if any(o in need for o in m.outputs) or not _moves(m, B.avals, self.T):
                continue
            if all(id(r) in late for o in m.outputs for r in readers.get(o, ())):
                after.append(m)
                late.add(id(m))
        after.reverse()
        if not (sums or before or once or after):
            return None
        steps = [m for m in rest if id(m) not in late]
        return self._build(sums, kept, before, once, after, steps)

    def _sums(self, bc: list, couts: list, reads: Counter, outs: Counter, producer: dict,
              fixed: set) -> dict:
        """Carry index -> (its add node, the value added each step), for running sums."""
        sums = {}
        add = self.prims["add"]
        for i, (cin, cout) in enumerate(zip(bc, couts)):
            m = producer.get(cout)
            if m is None or m.prim is not add or outs[cout] != 1 or reads[cout] or \
                    reads[cin] != 1 or outs[cin] or cin not in m.inputs:
                continue
            v = m.inputs[1] if m.inputs[0] == cin else m.inputs[0]
            aval = self.body.avals[cin]
            if v == cin or v in fixed or self.body.avals[v] != aval or \
                    self.body.avals[cout] != aval or \
                    np.dtype(aval[1]) not in (np.float32, np.float64, np.complex64,
                                              np.complex128) or \
                    int(np.prod(aval[0], dtype=np.int64)) > SUM_ELEMENTS:
                continue
            sums[i] = (m, v)
        return sums

    def _build(self, sums: dict, kept: list, before: list, once: list, after: list,
               steps: list) -> list:
        B, g, n, nc, nx = self.body, self.g, self.n, self.nc, self.nx
        bc, bx, bk = B.inputs[:nc], B.inputs[nc:nc + nx], B.inputs[nc + nx:]
        made: list = []
        # slots of the top graph: `flat` for a value the same at every step, `stacked` for
        # one stacked over the steps (row t: step t's)
        flat = dict(zip(bk, n.inputs[nc + nx:]))
        stacked = dict(zip(bx, n.inputs[nc:nc + nx]))
        for s, value in B.constants.items():
            flat[s] = top = self._new(B.avals[s])
            g.constants[top] = value
        ys = {}  # body output position (past the carries) -> the scan's stacked result
        for k, s in enumerate(B.outputs[nc:]):
            ys.setdefault(s, n.outputs[nc + k])
        # once: nodes of the loop's constants, copied
        for m in once:
            outs = [self._new(B.avals[o]) for o in m.outputs]
            made.append(Node(m.prim, [flat[s] for s in m.inputs], m.params, outs, phase=m.phase))
            flat.update(zip(m.outputs, outs))
        inside = {o for m in steps for o in m.outputs} | set(bc)
        added = {v for _, v in sums.values()}
        later_reads = list(dict.fromkeys([s for m in after for s in m.inputs] +
                                         [v for _, v in sums.values()]))
        read_later = set(later_reads)
        # before: batched over the sequences
        step_reads = {s for m in steps for s in m.inputs}
        wanted = [o for m in before for o in m.outputs
                  if o in read_later or o in ys or o in step_reads]
        made += self._batched(before, wanted, stacked, flat, ys)
        # the loop: the steps' nodes, reading what was hoisted as sequences and constants
        made_late = {o for m in before + after for o in m.outputs}
        new_ys = [s for s in later_reads if s in inside and (s not in ys or s in bc)]
        old_ys = [(k, s) for k, s in enumerate(B.outputs[nc:]) if s not in made_late]
        body = Graph(name=B.name)
        body.outputs = [B.outputs[i] for i in kept] + [s for _, s in old_ys] + new_ys
        made_in = {o for m in steps for o in m.outputs}
        wants = ({s for m in steps for s in m.inputs} | set(body.outputs)) - made_in
        carries = [bc[i] for i in kept]
        seqs = [s for s in stacked if s in wants and s not in carries]
        consts = [s for s in flat if s in wants and s not in B.constants]
        body.inputs = carries + seqs + consts
        body.constants = dict(B.constants)
        body.nodes = list(steps)
        body.avals = {s: B.avals[s] for s in set(body.inputs) | set(body.outputs) | made_in |
                      wants}
        body.next_slot = B.next_slot
        extra = [self._new(self._stacked(B.avals[s])) for s in new_ys]
        scan_outs = [n.outputs[i] for i in kept] + [n.outputs[nc + k] for k, _ in old_ys] + extra
        stacked.update(zip(new_ys, extra))
        for k, s in old_ys:
            stacked.setdefault(s, n.outputs[nc + k])
        if body.outputs:
            made.append(Node(n.prim, [n.inputs[i] for i in kept] +
                             [stacked[s] for s in seqs] + [flat[s] for s in consts],
                             {**n.params, "body": body, "n_carry": len(kept),
                              "n_x": len(seqs)}, scan_outs, phase=n.phase))
        # after: batched over the steps' stacked values
        wanted = [o for m in after for o in m.outputs
                  if o in ys or o in added]
        made += self._batched(after, wanted, stacked, flat, ys)
        for i, (_, v) in sums.items():
            made += self._sum(n.inputs[i], stacked[v], n.outputs[i], B.avals[bc[i]])
        return made

    def _batched(self, nodes: list, wanted: list, stacked: dict, flat: dict,
                 ys: dict) -> list:
        """`nodes` (of the body) run over all steps at once: the nodes that do it, made by
        vmap over the stacked values they read; `stacked` gets their results in `wanted`."""
        if not nodes:
            return []
        B = self.body
        made_here = {o for m in nodes for o in m.outputs}
        reads = list(dict.fromkeys(s for m in nodes for s in m.inputs
                                   if s not in made_here and s not in B.constants))
        rows = [s for s in reads if s in stacked]
        fixed = [s for s in reads if s not in stacked]
        part = Graph(name=f"{B.name}_all_steps")
        part.inputs = rows + fixed
        part.nodes = list(nodes)
        part.outputs = list(wanted)
        part.constants = {s: B.constants[s] for m in nodes for s in m.inputs
                          if s in B.constants}
        part.avals = {s: B.avals[s] for s in set(reads) | made_here | set(part.constants)}
        part.next_slot = B.next_slot
        axes = tuple([0] * len(rows) + [None] * len(fixed))
        examples = [np.zeros(self._stacked(B.avals[s])[0], B.avals[s][1]) for s in rows] + \
            [np.zeros(B.avals[s][0], B.avals[s][1]) for s in fixed]

        def all_steps(*a: Any) -> list:
            return list(vmap(lambda *b: interpret(part, list(b)), in_axes=axes)(*a))

        traced = _trace(all_steps, examples, part.name)
        rename = dict(zip(traced.inputs, [stacked[s] for s in rows] + [flat[s] for s in fixed]))
        for s, value in traced.constants.items():
            rename[s] = top = self._new(traced.avals[s])
            self.g.constants[top] = value
        targets = {}
        for s, o in zip(traced.outputs, wanted):
            targets.setdefault(s, ys.get(o))
        made = []
        for m in traced.nodes:
            outs = []
            for o in m.outputs:
                target = targets.get(o)
                outs.append(target if target is not None else self._new(traced.avals[o]))
                targets[o] = None  # a second output of one slot is copied
            rename.update(zip(m.outputs, outs))
            made.append(Node(m.prim, [rename[s] for s in m.inputs], m.params, outs,
                             phase=self.n.phase))
        for s, o in zip(traced.outputs, wanted):
            top = ys.get(o)
            if top is not None and rename[s] != top:  # an input, a constant, or a twin
                made.append(Node(self.prims["identity"], [rename[s]], {}, [top],
                                 phase=self.n.phase))
            stacked[o] = top if top is not None else rename[s]
        return made

    def _sum(self, start: int, steps: int, out: int, aval: tuple) -> list:
        """The running sum's last value: a cumsum over [start, each step's value in the
        order the steps ran]."""
        P = self.prims
        shape, dtype = tuple(aval[0]), aval[1]
        first = self._new(((1,) + shape, dtype))
        made = [Node(P["reshape"], [start], {"shape": (1,) + shape}, [first])]
        if self.reverse:
            flipped = self._new(self._stacked(aval))
            made.append(Node(P["getitem"], [steps], {"key": (slice(None, None, -1),)},
                             [flipped]))
            steps = flipped
        rows = self._new(((self.T + 1,) + shape, dtype))
        made.append(Node(P["concat"], [first, steps], {"axis": 0}, [rows]))
        running = self._new(((self.T + 1,) + shape, dtype))
        made.append(Node(P["cumsum"], [rows], {"axis": 0, "exclusive": False,
                                                "reverse": False}, [running]))
        made.append(Node(P["getitem"], [running], {"key": (-1,)}, [out]))
        for m in made:
            m.phase = self.n.phase
        return made


class _Declined(Exception):
    """A batched part that would not be a plain graph of these sizes."""


def _trace(fn: Any, examples: list, name: str) -> Graph:
    """The graph of `fn` on tensors of `examples`' shapes and dtypes: nodes alone (the
    examples are zeros, whose values mean nothing: NumPy's warnings on them are not the
    user's)."""
    graph = Graph(name=name)
    inputs = [Tensor(e) for e in examples]
    tracer = Tracer(graph, inputs, guards="error")
    try:
        with substack(lambda r: False, extra=(tracer,)), np.errstate(all="ignore"):
            graph.outputs = [tracer.slot_of(o) for o in fn(*inputs)]
    except Exception as e:  # noqa: BLE001 - a batching rule that reads a value: not moved
        raise _Declined from e
    if graph.variables or graph.sized or any(type(m) is not Node for m in graph.nodes):
        raise _Declined
    optimize(graph)
    return graph


def hoist(g: Graph) -> Graph:
    """`g` with each scan's work that reads no carry done for all steps at once
    (NOTE(hoist)); `g` itself where there is none. `g` is not changed. Only the NumPy
    replay runs the result (graph/executables.py): a compiled loop fuses its steps.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.hoist import hoist
        >>> def f(h, xs):
        ...     for t in range(8):
        ...         h = tf.tanh(h * 0.5 + tf.sin(xs[t]) * 2.0)
        ...     return h
        >>> from tapeflow.graph.reroll import reroll
        >>> g = reroll(tf.function(f).get_concrete_function(
        ...     tf.zeros([3]), tf.zeros([8, 3])).graph)
        >>> [len(n.params["body"].nodes) for n in (g, hoist(g))
        ...  for n in n.nodes if n.prim.name == "scan"]
        [5, 3]
    """
    scan = registry()["scan"]
    if not any(type(n) is Node and n.prim is scan for n in g.nodes):
        return g
    out = dataclasses.replace(g, nodes=[], avals=dict(g.avals), constants=dict(g.constants))
    changed = False
    for n in g.nodes:
        if type(n) is Node and n.prim is scan:
            try:
                made = _Hoist(out, n).rewrite()
            except _Declined:
                made = None
            if made is not None:
                out.nodes += made
                changed = True
                continue
        out.nodes.append(n)
    if not changed:
        return g
    eliminate_dead_code(out)
    return out
