"""The first and last steps of a rolled run, made like the others (NOTE(reroll) in
graph/reroll.py): a backward pass's first step lacks the sums of cotangents no later
step has brought yet, its last step the cotangents of a step before the loop. Each is
made a step like the others with values equal to its own, so the run takes it in.
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import numpy as np

from .ir import Node
from .passes import _hashable
from .reroll_scan import _row, _same, rollable

__all__ = ["peel_before", "peel_after"]

# ops that give -0.0 where they read only -0.0 (a missing carry's start: peel_before)
_CARRIED = frozenset(("getitem", "reshape", "transpose", "identity"))


def peel_before(run: Any, start: int, count: int) -> int | None:
    """Make the step before `start` a step like the others where it lacks only what
    its carries would bring in: a backward pass's first step, where no cotangent
    arrives from a later step, has no adds of one, nor the slices and reshapes that
    read it. Each missing carry starts at -0.0 (each missing structural op then
    gives -0.0 too) and each missing add is put in as -0.0 + its value, which is the
    value exactly. The index of that step's first node if it now joins the run; else
    None, and the graph is as it was."""
    g, period = run.g, run.period
    first = [g.nodes[start + j] for j in range(period)]
    run.mark(start, count)
    after = run._wiring(1, start)
    mapped: dict = {}
    missing, extra = set(), []  # extra: nodes in between (a weight transposed once)
    p, j = start - 1, period - 1
    while j >= 0:
        n = g.nodes[p] if p >= 0 else None
        if n is not None and rollable(g, n) and n.prim is first[j].prim and \
                _hashable(n.params) == _hashable(first[j].params) and \
                [g.avals[s] for s in n.inputs] == [g.avals[s] for s in first[j].inputs] and \
                [g.avals[s] for s in n.outputs] == [g.avals[s] for s in first[j].outputs]:
            mapped[j] = n
            p, j = p - 1, j - 1
        elif first[j].prim.name in _CARRIED or first[j].prim.name == "add":
            missing.add(j)
            j -= 1
        elif type(n) is Node and len(extra) < 4:
            extra.append(n)
            p -= 1
        else:
            return None
    made = {o for n in mapped.values() for o in n.outputs}
    if not missing or any(not made.isdisjoint(n.inputs) for n in extra):
        return None

    def brought(w: tuple) -> bool:  # a carry, or what a missing op made of one
        return w[0] == "carry" or (w[0] == "in" and w[1] in missing)

    for j in missing:
        kinds = [brought(w) for w in after[j]]
        if first[j].prim.name in _CARRIED and not all(kinds):
            return None
        if first[j].prim.name == "add" and not (sorted(kinds) == [False, True] and
                                               after[j][kinds.index(False)][1] in mapped):
            return None
    started = {w[1:] for j in missing for w in after[j] if w[0] == "carry"}
    if any(w[0] == "carry" and w[1:] in started for j in mapped for w in after[j]):
        return None
    zeros: dict = {}
    new: dict = {}  # (position, output) -> the slot a missing op gives in that step
    step = extra[::-1]
    for j in range(period):
        body = first[j]
        ins = []
        for m, w in enumerate(after[j]):
            if w[0] == "carry" and j in missing:
                if w[1:] not in zeros:
                    shape, dtype = g.avals[g.nodes[start + w[1]].outputs[w[2]]]
                    zeros[w[1:]] = _constant(run, np.full(
                        shape, -0.0 if np.dtype(dtype).kind in "fc" else 0, dtype),
                        (shape, dtype))
                ins.append(zeros[w[1:]])
            elif w[0] == "in" and w[1] in missing:
                ins.append(new[w[1:]])
            elif w[0] == "in":
                ins.append(mapped[w[1]].outputs[w[2]])
            elif j in mapped:
                ins.append(mapped[j].inputs[m])
            else:  # a missing op reads nothing from outside the run
                return None
        if j in mapped:
            old = mapped[j]
            if ins != old.inputs:
                # it read a missing add's value itself
                if any(a != b and not (after[j][m][0] == "in" and after[j][m][1] in missing)
                       for m, (a, b) in enumerate(zip(ins, old.inputs))):
                    return None
                old = dataclasses.replace(old, inputs=ins)
            step.append(old)
            continue
        outs = [_constant(run, None, g.avals[o]) for o in body.outputs]
        new.update(((j, q), o) for q, o in enumerate(outs))
        step.append(Node(body.prim, ins, body.params, outs, phase=body.phase))
    # the next step read each missing add's value where it now reads the add
    for j in range(period):
        for m, w in enumerate(after[j]):
            if w[0] == "carry" and w[1] in missing:
                if first[j].prim.name in _CARRIED or w[1:] not in new:
                    return None
                first[j] = dataclasses.replace(first[j], inputs=[
                    new[w[1:]] if k == m else s for k, s in enumerate(first[j].inputs)])
    saved = g.nodes[p + 1:start + period]
    g.nodes[p + 1:start + period] = step + first
    begin = p + 1 + len(extra)
    run.mark(begin, count + 1)
    outside = tuple(tuple(("out",) if w[0] == "carry" else w for w in row)
                    for row in run._wiring(1, begin))
    if run._wiring(0, begin) == outside:
        return begin
    g.nodes[p + 1:p + 1 + len(step) + period] = saved
    run.mark(start, count)
    return None

def peel_after(run: Any, start: int, count: int) -> bool:
    """Make the step after the run's `count` steps from `start` a step like the
    others where it lacks only ops whose values no step reads but as carries (a
    backward pass's last step computes no cotangent for a step before the loop): they
    are put in, their values read by nobody. True if that step now joins the run;
    else the graph is as it was."""
    g, period = run.g, run.period
    run.mark(start, count)
    wiring = run._wiring(1, start)
    last = [g.nodes[start + (count - 1) * period + j] for j in range(period)]
    first = [g.nodes[start + j] for j in range(period)]
    end = start + count * period
    # the step's nodes, found by what they read: they may come in another order
    window = [k for k in range(end, min(len(g.nodes), end + period + 8))
              if rollable(g, g.nodes[k])]
    run.producer = {o: n for n in g.nodes[:end + period + 8] if type(n) is Node
                     for o in n.outputs}
    mapped: dict = {}
    missing: set = set()
    taken: set = set()
    budget = [20 * period]
    # inputs from outside that read what another input reads in every step (a gate's
    # value, read by the op a last step lacks and by one it has)
    reads: dict = {}
    for j in range(period):
        for m, w in enumerate(wiring[j]):
            if w[0] == "out":
                reads.setdefault(tuple(g.nodes[start + k * period + j].inputs[m]
                                       for k in range(count)), []).append((j, m))
    twins = {at: [t for t in group if t != at] for group in reads.values() for at in group}

    def options(j: int) -> list:
        """The window's nodes that can be position j, then None (missing) if it may
        be missing."""
        want = []
        for m, w in enumerate(wiring[j]):
            if w[0] == "in":
                want.append(None if w[1] in missing else mapped[w[1]].outputs[w[2]])
            elif w[0] == "carry":
                want.append(last[w[1]].outputs[w[2]])
            else:
                want.append(_outside(run, start, count, j, m))
        found = [] if None in want else [
            k for k in window if k not in taken and g.nodes[k].prim is last[j].prim and
            _hashable(g.nodes[k].params) == _hashable(last[j].params) and
            [g.avals[s] for s in g.nodes[k].outputs] ==
            [g.avals[s] for s in last[j].outputs] and
            all(x(s) if callable(x) else x == s
                for x, s in zip(want, g.nodes[k].inputs))]
        if all(w[0] != "out" or _same(g, (first[j].inputs[m], last[j].inputs[m])) or
               twins.get((j, m)) for m, w in enumerate(wiring[j])):
            found.append(None)
        return found

    def search(j: int) -> bool:  # the first assignment that fits, depth first
        if j == period:
            return True
        budget[0] -= 1
        if budget[0] < 0:
            return False
        for k in options(j):
            if k is None:
                missing.add(j)
            else:
                mapped[j] = g.nodes[k]
                taken.add(k)
            if search(j + 1):
                return True
            missing.discard(j)
            mapped.pop(j, None)
            taken.discard(k)
        return False

    if not search(0):
        return False
    if not missing or len(missing) == period:
        return False
    p = max(taken) + 1 if taken else end
    extra = [g.nodes[k] for k in range(end, p) if k not in taken]
    made = {o for n in extra for o in n.outputs}
    if any(not made.isdisjoint(n.inputs) for n in mapped.values()):
        return False
    # a missing op's values: read by other missing ops only, or carried
    if any(w[0] == "in" and w[1] in missing and k not in missing
           for k in range(period) for w in wiring[k]):
        return False
    new: dict = {}
    step = []
    for j in range(period):
        if j in mapped:
            step.append(mapped[j])
            continue
        ins = []
        for m, w in enumerate(wiring[j]):
            if w[0] == "in":
                ins.append(new[w[1:]] if w[1] in missing else mapped[w[1]].outputs[w[2]])
            elif w[0] == "carry":
                ins.append(last[w[1]].outputs[w[2]])
            elif _same(g, (first[j].inputs[m], last[j].inputs[m])):
                ins.append(last[j].inputs[m])
            else:
                found = [mapped[t].inputs[u] for t, u in twins[j, m] if t in mapped]
                if not found:
                    return False
                ins.append(found[0])
        outs = [_constant(run, None, g.avals[o]) for o in last[j].outputs]
        new.update(((j, q), o) for q, o in enumerate(outs))
        step.append(Node(last[j].prim, ins, last[j].params, outs, phase=last[j].phase))
    saved = g.nodes[end:p]
    g.nodes[end:p] = step + extra
    run.mark(start, count + 1)
    if run._wiring(count, start) == wiring:
        return True
    g.nodes[end:end + len(step) + len(extra)] = saved
    run.mark(start, count)
    return False

def _outside(run: Any, start: int, count: int, j: int, m: int) -> Callable[[int], bool]:
    """What input m of position j reads from outside the run in the step after it:
    the steps' value if they all read one, the next row where they read rows of an
    array in order, else any value from outside the run."""
    g = run.g
    slots = tuple(g.nodes[start + k * run.period + j].inputs[m] for k in range(count))
    if _same(g, slots):
        return lambda s: _same(g, (slots[-1], s))
    rows = [_row(g, run.producer, s) for s in slots]
    if None not in rows and len({a for a, _ in rows}) == 1:
        array, at = rows[-1]
        following = at + (at - rows[-2][1])
        if all(i == rows[0][1] + (at - rows[-2][1]) * k for k, (_, i) in enumerate(rows)) \
                and 0 <= following < g.avals[array][0][0]:
            return lambda s: _row(g, run.producer, s) == (array, following)
    return lambda s: s not in run.made

def _constant(run: Any, value: Any, aval: tuple) -> int:
    """A new slot of `g` (a constant's, if `value` is not None)."""
    g = run.g
    slot = g.next_slot
    g.next_slot += 1
    g.avals[slot] = aval
    if value is not None:
        g.constants[slot] = value
    return slot
