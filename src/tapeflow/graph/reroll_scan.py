"""A run of repeated steps put in place as one scan node (NOTE(reroll) in
graph/reroll.py): what each step's inputs are (carries, sequences, constants of the
loop), the sequences as slices of the arrays they are rows of, the body graph, and the
steps' values read after the run taken from the scan's stacked results.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog import READS_VARIABLE, STATEFUL
from ..core import registry
from .ir import Graph, Node, size_slots
from .passes import _hashable
from .xla import _compiles, checks, missing_lowerings

__all__ = ["build_scan", "join_rows", "rollable", "STACK_BYTES"]

# NOTE(last-step): a step's value read after the scan at the last step alone (a backward
# loop's gradient for the value the loop started from) is an extra carry, its first value
# zeros the body never reads, not a stacked result read at one row: stacking every step's
# value costs a compiled loop a write per step into a buffer XLA cannot fuse with the
# step (the 2,000-op chain's compiled gradient: 455 us stacked, 267 us carried), and the
# NumPy replay a copy per step.

# bytes a call may copy to stack values read one a step (not rows of one array): a loop
# over a list of layers' variables is left unrolled rather than copy them at every call
STACK_BYTES = 1 << 16


def _aval(g: Graph, slot: int) -> tuple:
    shape, dtype = g.avals[slot]
    return tuple(shape), np.dtype(dtype).str


def rollable(g: Graph, n: Any) -> bool:
    """Whether node `n` may be in a rolled body: no effects, custom gradient, sizes read
    when it runs, or anything a compiled loop body cannot hold (a check, a callback)."""
    return type(n) is Node and n.backward is None and not n.sized and \
        STATEFUL not in n.prim.effects and READS_VARIABLE not in n.prim.effects and \
        _compiles(n.prim) and not checks(g, n) and \
        not (isinstance(n.params.get("body"), Graph) and missing_lowerings(Graph(nodes=[n])))


def join_rows(g: Graph) -> None:
    """Each concat along axis 0 of rows array[i] (i = a, a + b, ...) reshaped to one row
    each, replaced by array[a::b]: tf.stack of a rolled loop's results, and the VJP of an
    unstack its sequence was read from."""
    made = {o: n for n in g.nodes if type(n) is Node for o in n.outputs}
    getitem = registry()["getitem"]
    for k, n in enumerate(g.nodes):
        if type(n) is not Node or n.prim.name != "concat" or n.params["axis"] != 0:
            continue
        rows = []
        for s in n.inputs:
            piece = made.get(s)
            row = made.get(piece.inputs[0]) if piece is not None and \
                piece.prim.name == "reshape" else None
            if row is None or row.prim.name != "getitem":
                break
            key = row.params["key"]
            shape = g.avals[row.inputs[0]][0]
            if not (isinstance(key, tuple) and len(key) == 1 and _is_index(key[0]) and
                    tuple(g.avals[s][0]) == (1,) + tuple(shape[1:])):
                break
            rows.append((row.inputs[0], int(key[0]) % shape[0]))
        else:
            if len({a for a, _ in rows}) != 1 or len(rows) < 2:
                continue
            a, b = rows[0][1], rows[1][1] - rows[0][1]
            if b and all(i == a + b * t for t, (_, i) in enumerate(rows)):
                stop = a + b * len(rows)
                g.nodes[k] = Node(getitem, [rows[0][0]],
                                  {"key": (slice(a, stop if stop >= 0 else None, b),)},
                                  list(n.outputs), phase=n.phase)


def _row(g: Graph, producer: dict, s: int) -> tuple | None:
    """(array, index) when `s` is array[index], made (`producer`: slot -> node) by a
    getitem or an unstack."""
    n = producer.get(s)
    if n is None:
        return None
    if n.prim.name == "getitem":
        key = n.params["key"]
        if not (isinstance(key, tuple) and len(key) == 1 and _is_index(key[0])):
            return None
        return n.inputs[0], int(key[0]) % g.avals[n.inputs[0]][0][0]
    if n.prim.name == "reshape":
        piece = producer.get(n.inputs[0])
        if piece is None or piece.prim.name != "split" or piece.params["axis"] != 0 \
                or set(piece.params["sizes"]) != {1}:
            return None
        whole = g.avals[piece.inputs[0]][0]
        if tuple(g.avals[s][0]) != tuple(whole[1:]):
            return None
        return piece.inputs[0], piece.outputs.index(n.inputs[0])
    return None


def _same(g: Graph, steps: tuple) -> bool:
    """Whether every step reads one value: one slot, or constants of the same bits (a
    step's `1 - x` has a constant of its own; -0.0 and 0.0 differ)."""
    if len(set(steps)) == 1:
        return True
    constants = g.constants
    if not all(s in constants for s in steps):
        return False
    keys = set()
    for s in steps:
        value = np.asarray(constants[s])
        keys.add((value.dtype.str, value.shape, value.tobytes()))
        if len(keys) > 1:
            return False
    return True


def _is_index(v: Any) -> bool:
    return isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))


class _Build:
    """The scan of `count` steps from node `start`, checked and put in place."""

    def __init__(self, run: Any, start: int, count: int) -> None:
        self.run, self.g, self.prims = run, run.g, registry()
        self.start, self.period, self.count = start, run.period, count
        self.end = start + count * self.period
        self.wiring = run._wiring(1, start)

    def node(self, k: int, j: int) -> Node:
        return self.g.nodes[self.start + k * self.period + j]

    def _kinds(self) -> list[str] | None:
        """Each position's kind: "core" (in the body), "head" (params that change, reads
        only from outside: runs before the scan), "tail" (params that change, read by no
        step: runs after it); None if some position is none of them."""
        kinds = []
        for j in range(self.period):
            if any(self.node(k, j).prim is not self.node(0, j).prim
                   for k in range(1, self.count)):
                return None
            key = _hashable(self.node(0, j).params)
            same = all(_hashable(self.node(k, j).params) == key for k in range(1, self.count))
            kinds.append("core" if same else "varying")
        for j in range(self.period):  # heads: reading outside or other heads only
            if kinds[j] == "varying" and all(
                    w[0] == "out" or (w[0] == "in" and kinds[w[1]] == "head")
                    for w in self.wiring[j]):
                kinds[j] = "head"
        read_by_steps = {(w[1]) for j in range(self.period) if kinds[j] != "varying"
                         for w in self.wiring[j] if w[0] in ("in", "carry")}
        for j in range(self.period):
            if kinds[j] == "varying":
                if j in read_by_steps:
                    return None
                kinds[j] = "tail"
        if any(w[0] in ("in", "carry") and kinds[j] == "core" and kinds[w[1]] == "tail"
               for j in range(self.period) for w in self.wiring[j]):
            return None
        return kinds

    def _reads_after(self, tails: list) -> set:
        """The slots read by what runs after the scan: later nodes, effects, the graph's
        outputs, and the tails."""
        g = self.g
        read = {o for o in g.outputs if o is not None}
        for n in list(g.nodes[self.end:]) + tails:
            if type(n) is Node:
                read.update(n.inputs)
                if n.sized:
                    read.update(size_slots(n.params))
                if n.backward is not None:
                    read.update(n.backward.refs)
            else:
                read.add(n.slot)
        return read

    def _row(self, s: int) -> tuple | None:
        return _row(self.g, self.producer, s)

    def _segments(self, rows: list[int]) -> list[tuple]:
        """`rows` as runs (array, first index, stride, length) of rows of one array, an
        edge step's value between them as (None, slot, 0, 1)."""
        segments: list = []
        for s in rows:
            row = self._row(s)
            if row is not None and segments and segments[-1][0] == row[0]:
                array, first, stride, length = segments[-1]
                step = row[1] - first if length == 1 else stride
                if step and row[1] == first + step * length:
                    segments[-1] = (array, first, step, length + 1)
                    continue
            segments.append((None, s, 0, 1) if row is None else (row[0], row[1], 0, 1))
        return segments

    def _copied(self, steps: tuple) -> int:
        """The bytes a call copies to stack the rows of a sequence that are neither rows
        of one array nor constants (a list of layers' weights)."""
        g = self.g
        if all(s in g.constants for s in steps):
            return 0
        shape, dtype = g.avals[steps[0]]
        rows = sum(length for array, _, _, length in self._segments(list(steps))
                   if array is None)
        return rows * int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize

    def _direction(self, steps: tuple) -> int:
        """The order in which the steps read rows of arrays: rows taken in step order
        count +1 each, in reverse order -1 each."""
        return sum(length * (1 if stride > 0 else -1)
                   for _, _, stride, length in self._segments(list(steps)) if length > 1)

    def _new(self, aval: tuple) -> int:
        g = self.g
        slot = g.next_slot
        g.next_slot += 1
        g.avals[slot] = aval
        return slot

    def _sequence(self, steps: list[int], reverse: bool, made: list) -> int:
        """The slot of the array whose row t is the value step k reads (t = k, or
        count - 1 - k for a reversed scan), with the nodes that make it added to `made`."""
        g, count = self.g, self.count
        shape, dtype = g.avals[steps[0]]
        aval = ((count,) + tuple(shape), dtype)
        rows = steps[::-1] if reverse else steps
        if all(s in g.constants for s in rows):  # a Python number of each step's own
            out = self._new(aval)
            g.constants[out] = np.stack([np.asarray(g.constants[s]) for s in rows])
            return out
        pieces = []
        for array, first, stride, length in self._segments(rows):
            if array is None:  # one row
                piece = self._new(((1,) + tuple(shape), dtype))
                made.append(Node(self.prims["reshape"], [first], {"shape": (1,) + tuple(shape)},
                                 [piece]))
            elif stride == 1 and first == 0 and length == g.avals[array][0][0]:
                piece = array
            else:
                stop = first + (stride or 1) * length
                piece = self._new(((length,) + tuple(shape), dtype))
                made.append(Node(self.prims["getitem"], [array], {
                    "key": (slice(first, stop if stop >= 0 else None, stride or 1),)}, [piece]))
            pieces.append(piece)
        if len(pieces) == 1:
            return pieces[0]
        out = self._new(aval)
        made.append(Node(self.prims["concat"], pieces, {"axis": 0}, [out]))
        return out

    def build(self) -> int | None:
        kinds = self._kinds()
        if kinds is None:
            return None
        g, count, period = self.g, self.count, self.period
        core = [j for j in range(period) if kinds[j] == "core"]
        if not core:
            return None
        heads = [self.node(k, j) for k in range(count) for j in range(period)
                 if kinds[j] == "head"]
        tails = [self.node(k, j) for k in range(count) for j in range(period)
                 if kinds[j] == "tail"]
        # what each core input is: a carry (source position), a sequence (slots per step)
        # or a constant of the loop (one slot)
        carries: dict = {}       # (position, output) -> the initial slot
        inputs: dict = {}        # (position, input) -> ("carry", key) | ("seq", steps) | slot
        for j in core:
            for m, w in enumerate(self.wiring[j]):
                first = self.node(0, j).inputs[m]
                if w[0] == "carry" and kinds[w[1]] == "core":
                    if carries.setdefault((w[1], w[2]), first) != first:
                        return None
                    inputs[j, m] = ("carry", (w[1], w[2]))
                elif w[0] == "in" and kinds[w[1]] == "core":
                    continue
                else:  # from outside, or a head's result (this step's or the last's)
                    steps = tuple(self.node(k, j).inputs[m] for k in range(count))
                    inputs[j, m] = first if _same(g, steps) else ("seq", steps)
        if not carries:  # steps that carry nothing (an unstack's reshapes) stay a map
            return None
        reads = self._reads_after(tails)
        ys = []          # (position, output, steps read after)
        lasts = []       # (position, output) read after the last step alone
        for j in core:
            for q in range(len(self.node(0, j).outputs)):
                read = [k for k in range(count) if self.node(k, j).outputs[q] in reads]
                if (j, q) in carries and read == [count - 1]:
                    read = []  # the final carry
                if read == [count - 1]:  # NOTE(last-step): a carry, not a stack
                    lasts.append((j, q))
                elif read:
                    ys.append((j, q, read))
        # the scan's direction: that of most sequences sliced from one array
        self.producer = {o: n for n in g.nodes[:self.start] + heads if type(n) is Node
                         for o in n.outputs}
        seqs = list(dict.fromkeys(v[1] for v in inputs.values()
                                  if isinstance(v, tuple) and v[0] == "seq"))
        if sum(self._copied(steps) for steps in seqs) > STACK_BYTES:
            return None
        reverse = sum(self._direction(steps) for steps in seqs) < 0
        made: list = []
        seq_arrays = [self._sequence(list(steps), reverse, made) for steps in seqs]
        # the body: step 0's core nodes, its inputs renamed
        body = Graph(name=f"{g.name}_step")
        rename: dict = {}
        carry_keys = list(carries)
        for key in carry_keys:
            j, q = key
            rename["carry", key] = self._body_input(body, g.avals[self.node(0, j).outputs[q]])
        for j, q in lasts:  # its first value is never read: any of its shape will do
            self._body_input(body, g.avals[self.node(0, j).outputs[q]])
        for steps in seqs:
            rename["seq", steps] = self._body_input(body, g.avals[steps[0]])
        outside = []
        for (j, m), v in inputs.items():
            if not isinstance(v, tuple) and v not in rename:
                if v in g.constants:
                    body.constants[v] = g.constants[v]
                    body.avals[v] = g.avals[v]
                    rename[v] = v
                else:
                    rename[v] = self._body_input(body, g.avals[v])
                    outside.append(v)
        for j in core:
            n = self.node(0, j)
            ins = [rename[inputs[j, m] if not isinstance(inputs[j, m], tuple) or
                          inputs[j, m][0] == "carry" else ("seq", inputs[j, m][1])]
                   if (j, m) in inputs else s for m, s in enumerate(n.inputs)]
            body.nodes.append(Node(n.prim, ins, n.params, list(n.outputs), phase=n.phase))
            for o in n.outputs:
                body.avals[o] = g.avals[o]
        body.outputs = [self.node(0, j).outputs[q] for j, q in carry_keys + lasts] + \
            [self.node(0, j).outputs[q] for j, q, _ in ys]
        body.next_slot = g.next_slot
        # the scan node, and the steps' values read after it
        last = {(j, q) for j, q, read in ys if count - 1 in read}  # read as a row
        finals = [self._new(g.avals[self.node(0, j).outputs[q]]) if (j, q) in last else
                  self.node(count - 1, j).outputs[q] for j, q in carry_keys + lasts]
        zeros = []
        for j, q in lasts:
            shape, dtype = g.avals[self.node(0, j).outputs[q]]
            zeros.append(self._new((shape, dtype)))
            g.constants[zeros[-1]] = np.zeros(shape, dtype)
        stacked = []
        for j, q, _ in ys:
            shape, dtype = g.avals[self.node(0, j).outputs[q]]
            stacked.append(self._new(((count,) + tuple(shape), dtype)))
        scan = Node(self.prims["scan"],
                    [carries[key] for key in carry_keys] + zeros + seq_arrays + outside,
                    {"body": body, "n_carry": len(carry_keys) + len(lasts), "n_x": len(seqs),
                     "length": count, "reverse": reverse, "emits_carries": False},
                    finals + stacked, phase=self.node(0, core[0]).phase)
        made.append(scan)
        for (j, q, read), array in zip(ys, stacked, strict=True):
            for k in read:
                t = count - 1 - k if reverse else k
                made.append(Node(self.prims["getitem"], [array], {"key": (t,)},
                                 [self.node(k, j).outputs[q]], phase=scan.phase))
        new = heads + made + tails
        g.nodes[self.start:self.end] = new
        return self.start + len(new)

    def _body_input(self, body: Graph, aval: tuple) -> int:
        slot = self._new(aval)
        body.inputs.append(slot)
        body.avals[slot] = aval
        return slot


def build_scan(run: Any, start: int, count: int) -> int | None:
    """Roll `count` steps of `run` from node `start` into a scan; the index of the node
    after it, or None where the steps cannot be one."""
    return _Build(run, start, count).build()
