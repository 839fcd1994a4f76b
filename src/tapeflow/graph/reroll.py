"""Python loops found in a traced graph and rolled back into scans (NOTE(reroll)).

A Python loop in a traced function is unrolled: T steps put T copies of its body into
the graph, and a tape's backward pass T copies of the body's VJP. XLA compiles every
copy, so its compile grows with the trip count (docs/performance-notes.md, #reroll).
`reroll` finds runs of steps that do the same ops on values carried from the step
before, and puts each run back into one `scan` node whose body is one step, so what XLA
compiles grows with the body alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from .ir import Graph, Node
from .passes import _hashable, eliminate_dead_code, merge_variable_reads
from .reroll_edges import peel_after, peel_before
from .reroll_scan import _aval, build_scan, join_rows, rollable

__all__ = ["reroll", "MIN_TRIPS", "MIN_NODES"]

MIN_TRIPS = 4      # steps a run needs to be rolled
MIN_NODES = 48     # nodes a run needs: a short one compiles fast unrolled, and fuses
MAX_BODY = 4096    # nodes a step may have
_WINDOW = 4        # tokens that find a step's next copy

# NOTE(reroll): how a run is found and checked. Each node gets a token (its primitive and
# the shapes and dtypes it reads and makes); a window of tokens seen again L nodes later
# proposes a period L, kept where the tokens repeat with it for MIN_TRIPS steps. The
# tokens only propose: a run is rolled only where every step reads its inputs the same way
# as the next: from its own step (the body's wiring), from the step before (a carry), or
# from outside the run, the same value in every step (a constant of the loop) or one of
# a sequence (x[t], a forward value a backward step reads). A step that reads a value two
# steps back is tried as steps of two. A node whose params change from step to step
# (x[t]'s key) runs before the scan if it reads only values from outside the run, after
# it if no step reads it; anything else leaves the run unrolled. A sequence that is x[t]
# for t in order (a getitem or an unstack of one array) is that array sliced; a backward
# run that reads its forward's results in reverse order is a reversed scan; other
# sequences are stacked, at most STACK_BYTES a call (graph/reroll_scan.py). Steps that
# carry nothing (an unstack's reshapes) stay as they are. A backward pass's first and last
# steps differ from the others (no cotangent arrives from a later step; none leaves for a
# step before the loop): each is made a step like the others, with the values it had
# (graph/reroll_edges.py). Reads of a variable with no write between are one read first.
# Nodes with effects (draws), custom gradients, sizes read when the graph runs, or what a
# compiled loop body cannot hold (a check, a host callback) are never rolled. Rolling
# keeps every value bit for bit: the scan replays the same ops step by step. Compiled
# graphs are rolled (an RNN's compile fell by 7x: docs/performance-notes.md, #reroll).


def _tokens(g: Graph, known: dict) -> list[int]:
    """Each node's token: equal for nodes of one primitive reading and making values of
    the same shapes and dtypes; one of its own for a node that cannot be rolled. `known`
    keeps them by node between calls (one per rolled run)."""
    intern = known.setdefault("intern", {})
    out = []
    for k, n in enumerate(g.nodes):
        seen = known.get(id(n))
        if seen is not None and seen[0] is n:  # (an id outlives its node: kept with it)
            token = seen[1]
        else:
            if rollable(g, n):
                key = (n.prim.name, tuple(_aval(g, s) for s in n.inputs),
                       tuple(_aval(g, s) for s in n.outputs))
                token = intern.setdefault(key, len(intern))
            else:
                token = -1
            known[id(n)] = (n, token)
        out.append(token if token >= 0 else -1 - k)  # an unrollable node matches nothing
    return out


def _candidates(tok: list[int], begin: int) -> Any:
    """(start, period, steps) of runs whose tokens repeat, from `begin` on. A run that
    was not rolled is not proposed again; the search goes on inside it (an outer loop's
    period, where an inner loop's steps were too few)."""
    last: dict = {}
    tried: dict = {}  # period -> the end of the run proposed with it
    n = len(tok)
    for i in range(begin, n - _WINDOW + 1):
        key = tuple(tok[i:i + _WINDOW])
        prev = last.get(key)
        last[key] = i
        if prev is None or (period := i - prev) > MAX_BODY or tried.get(period, -1) > i:
            continue
        need = prev + MIN_TRIPS * period
        if need <= n and all(tok[j] == tok[j - period] for j in range(i, need)):
            start, end = prev, need
            while start > begin and tok[start - 1] == tok[start - 1 + period]:
                start -= 1
            while end < n and tok[end] == tok[end - period]:
                end += 1
            tried[period] = end
            yield start, period, (end - start) // period


def reroll(g: Graph) -> Graph:
    """`g` with each run of repeated loop steps rolled into one scan node (NOTE(reroll)); `g`
    itself when there is none. `g` is not changed.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.reroll import reroll
        >>> def f(x):
        ...     for _ in range(40):
        ...         x = tf.sin(x) * 0.5 + x
        ...     return x
        >>> g = tf.function(f).get_concrete_function(tf.constant([1.0])).graph
        >>> g.count(), [n.prim.name for n in reroll(g).nodes]
        (120, ['scan'])
    """
    if len(g.nodes) < MIN_NODES:
        return g
    out = dataclasses.replace(g, nodes=list(g.nodes), avals=dict(g.avals),
                              constants=dict(g.constants))
    merge_variable_reads(out)
    rolled = False
    begin = 0
    known: dict = {}
    while True:
        tok = _tokens(out, known)
        for start, period, steps in _candidates(tok, begin):
            found = _Run(out, start, period, steps).roll()
            if found is not None:
                begin, rolled = found, True
                break
        else:
            break
    if not rolled:
        return g
    join_rows(out)
    eliminate_dead_code(out)
    return out


class _Run:
    """A candidate run of `steps` steps of `period` nodes from node `start` of `g`."""

    def __init__(self, g: Graph, start: int, period: int, steps: int) -> None:
        self.g, self.start, self.period, self.steps = g, start, period, steps

    def mark(self, start: int, steps: int) -> None:
        """Take `steps` steps from node `start` as the run whose wiring is read."""
        nodes = self.g.nodes
        self.made = {s: (k, q) for k in range(start, start + self.period * steps)
                     for q, s in enumerate(nodes[k].outputs)}

    def _where(self, slot: int, start: int) -> tuple | None:
        """(step, position, output) of the node of the run that makes `slot`."""
        found = self.made.get(slot)
        if found is None or found[0] < start:
            return None
        k, q = found
        return (k - start) // self.period, (k - start) % self.period, q

    def _wiring(self, k: int, start: int) -> tuple:
        """How step k's nodes read their inputs: ("in", position, output) from their own
        step, ("carry", position, output) from the step before, ("far",) from an earlier
        one, ("out",) from outside the run."""
        wires = []
        for j in range(self.period):
            n = self.g.nodes[start + k * self.period + j]
            row = []
            for s in n.inputs:
                at = self._where(s, start)
                if at is None:
                    row.append(("out",))
                elif at[0] == k:
                    row.append(("in", at[1], at[2]))
                elif at[0] == k - 1:
                    row.append(("carry", at[1], at[2]))
                else:
                    row.append(("far",))
            wires.append(tuple(row))
        return tuple(wires)

    def _span(self) -> tuple[int, int] | None:
        """The longest stretch of steps wired alike, (first step, steps), its first step
        reading its carries from outside."""
        start, steps = self.start, self.steps
        wiring = [self._wiring(k, start) for k in range(steps)]
        best, k = (0, 0), 1
        while k < steps:
            e = k
            while e + 1 < steps and wiring[e + 1] == wiring[k]:
                e += 1
            if e + 1 - k > best[1] and all(w[0] != "far" for row in wiring[k] for w in row):
                best = (k, e + 1 - k)
            k = e + 1
        first, count = best
        if first == 1:  # the first step, with its carries from outside, if wired alike
            outside = tuple(tuple(("out",) if w[0] == "carry" else w for w in row)
                            for row in wiring[1])
            if wiring[0] == outside:
                first, count = 0, count + 1
        return (first, count) if count else None

    def roll(self) -> int | None:
        """Roll the run into a scan; the index of the node after it, or None. A step that
        reads a value two steps back (a, b = b, f(a)) is rolled as steps of two."""
        period, steps = self.period, self.steps
        for times in (1, 2):
            self.period, self.steps = period * times, steps // times
            self.mark(self.start, self.steps)
            span = self._span()
            if span is None:
                continue
            first, count = span
            if count < MIN_TRIPS or count * self.period < MIN_NODES:
                continue
            start = self.start + first * self.period
            begin = peel_before(self, start, count)  # one more step, in front
            if begin is not None:
                start, count = begin, count + 1
            if peel_after(self, start, count):  # and one behind
                count += 1
            self.mark(start, count)
            found = build_scan(self, start, count)
            if found is not None:
                return found
        return None


