"""Executables: the ways a traced graph runs, and the one function that chooses.

An executable runs one graph on a call's tensors: ``run(tensors) -> list`` of tensors
(None for a None output), raising `GuardFailed` where a guard fails. A concrete function
holds one, made by `plan`; a fast path belongs to the executable that owns the facts it
needs (the lean call, NOTE(lean-call) in graph/xla.py, is `XlaReplay.lean`'s).

The executables:

- `replay.Replay`: the NumPy replay, the plan interpreter while cold, then generated
  straight-line code (graph/replay.py);
- `xla.XlaReplay`: one XLA computation through JAX, taking a fallback executable (the
  NumPy replay) for a call whose guard or check fails (graph/xla.py);
- `PerSize`: a graph that serves every size of its signature's None dimensions, one
  executable per set of sizes (graph/polymorphic.py);
- `UnderRecorders`: the graph re-bound node by node while recorders are active at the
  call (a tape, an accumulator, vmap, an outer trace), so they see every op;
- `Fastest`: whichever of several executables of one graph runs its calls faster, timed
  on its first calls (NOTE(fastest));
- `Rolling`: the NumPy replay, which at its first call looks for loops to roll and small
  arrays to hold as scalars and, if it finds some, runs by `Fastest` of the replays.
"""

from __future__ import annotations

import collections
import threading
import time
from typing import Any, Callable

import numpy as np

from ..core import recording
from ..tensor import Tensor
from .device import array_of
from .ir import Graph
from .lean import MISS
from .polymorphic import resolved
from .replay import Replay, interpret, plan_runner
from .hoist import hoist
from .kernels import loop_kernels
from .reroll import reroll
from .scalarize import scalar_rewrite
from .xla import XlaReplay, require_jax

__all__ = ["Executable", "plan", "PerSize", "UnderRecorders", "Rolling", "Fastest",
           "MAX_SIZES"]

MAX_SIZES = 32  # executables kept per size-generic graph, one per set of sizes


class Executable:
    """Runs one graph (`graph`) on a call's tensors (the interface; see the module)."""

    graph: Graph

    def run(self, tensors: list) -> list:
        """The outputs of the graph at these tensors, as tensors (None for None)."""
        raise NotImplementedError

    def lean(self, arg_keys: tuple) -> Callable[[tuple], Any] | None:
        """A call path of its own for a signature whose positional arguments have these
        keys (graph/signature.py), which returns `lean.MISS` for a call it does not serve;
        None where there is none."""
        return None


def plan(graph: Graph, *, jit_compile: bool = False, keep_on_device: bool = False,
         generic: Graph | None = None) -> Executable:
    """The executable that runs the calls of one traced graph.

    ============================================== ==========================================
    the call                                        runs by
    ============================================== ==========================================
    ``tf.config.run_functions_eagerly(True)``       the Python function, no graph (Function)
    recorders active (a tape, vmap, an outer trace) re-binding every node (`UnderRecorders`),
                                                    whatever else holds: they see each op
    a graph serving every size (`generic`)          one executable per set of sizes
                                                    (`PerSize`), each made as below for the
                                                    graph resolved to those sizes; a first
                                                    call at new sizes runs the plan
                                                    interpreter, which finds every shape
    ``jit_compile=True``, every node compiles       one XLA computation (`XlaReplay`) of the
                                                    graph with its loops rolled
                                                    (NOTE(reroll)); a call whose guard or
                                                    check fails is the NumPy replay's; a
                                                    signature with nothing to check around it
                                                    has a lean call
    ``jit_compile=True``, a host callback, or a     the NumPy replay, after a warning naming
    draw or check inside a loop                     the primitive
    ``jit_compile="auto"``                          `Fastest` of XLA, the NumPy replays
                                                    below and, with Numba, their loops
                                                    compiled (NOTE(fastest),
                                                    NOTE(loop-kernels))
    otherwise                                       the NumPy replay: the plan interpreter for
                                                    its first calls, then generated code; of
                                                    a graph with loops to roll or small arrays
                                                    to hold as scalars, `Fastest` of it and
                                                    the replays of those rewrites (a loop's
                                                    work that reads no carry done for all
                                                    steps at once: NOTE(hoist))
    ============================================== ==========================================

    `graph` is the graph at the traced sizes; `generic`, where one serves every size, the
    graph whose sizes are read when it runs (NOTE(sized-params) in graph/polymorphic.py).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.executables import plan
        >>> cf = tf.function(lambda x: x * 2.0).get_concrete_function(tf.constant([1.0]))
        >>> ex = plan(cf.graph)
        >>> type(ex).__name__, type(ex.inner).__name__, ex.run([tf.constant([3.0])])[0].numpy()
        ('UnderRecorders', 'Rolling', array([6.], dtype=float32))
    """
    def make(g: Graph) -> Executable:
        if g.sized:  # a size-generic trace's graph, at the sizes it was traced at
            g = resolved(g, g.avals)
        replay = Replay(g)
        if not jit_compile:
            return Rolling(g, replay)
        rolled = reroll(g)  # NOTE(reroll): a loop's steps as one loop op
        if jit_compile is True:
            return XlaReplay(rolled, keep_on_device, fallback=replay)
        ways = _numpy_ways(g, replay, rolled, kernels=True)
        try:
            require_jax()
        except ImportError:
            ways[0] = (f"{ways[0][0]} (JAX is not installed)", ways[0][1])
        else:
            compiled = XlaReplay(rolled, fallback=replay)
            if compiled.compiled:
                ways.insert(0, ("XLA", compiled))
            else:  # warned: a primitive without a lowering
                ways[0] = (f"{ways[0][0]} (a primitive cannot compile)", ways[0][1])
        return Fastest(g, ways)

    inner = make(graph)
    if generic is not None:
        inner = PerSize(generic, make, first=(graph, inner))
    return UnderRecorders(graph if generic is None else generic, inner)


# A graph whose small values held as scalars cost less than this share of its NumPy
# calls replays that way alone: the ops it leaves are the graph's own, so neither the
# graph as traced nor its loops rolled (the same NumPy calls, stepped) can be faster,
# and timing them would cost each a compile and a few slow calls (the suite's RK4
# gradient: 0.09 of its calls; 5 s of first calls with them, 1.5 s without).
ALONE = 0.25


def _numpy_ways(g: Graph, replay: Replay, rolled: Graph | None = None,
                kernels: bool = False) -> list:
    """The ways a graph replays with NumPy: as traced, with its small arrays held as
    scalars (NOTE(scalarize)), and with its loops rolled (`rolled`, else rolled here);
    with `kernels`, also its loops rolled and compiled by Numba where it is installed
    (NOTE(loop-kernels): not the NumPy replay's bits, so for jit_compile="auto" alone)."""
    scalars, share = scalar_rewrite(g)
    alone = share < ALONE
    ways: list = [] if alone else [("the NumPy replay", replay)]
    if scalars is not g:
        ways.append(("the NumPy replay, small arrays as scalars", Replay(scalars)))
    if alone and not kernels:
        return ways
    rolled = reroll(g) if rolled is None else rolled
    hoisted = hoist(rolled)  # NOTE(hoist): the steps run the recurrence alone
    if alone:
        pass  # the scalars' NumPy calls are the graph's own: no other replay is faster
    elif rolled is not g:
        ways.append(("the NumPy replay, loops rolled", Replay(hoisted)))
    elif hoisted is not g:
        ways.append(("the NumPy replay, loop work hoisted", Replay(hoisted)))
    impls = loop_kernels(hoisted) if kernels else {}
    if impls:
        ways.append(("the NumPy replay, loops compiled by Numba", Replay(hoisted, impls)))
    return ways


class Rolling(Executable):
    """The NumPy replay of `graph`, which looks for loops to roll (NOTE(reroll)) and small
    arrays to hold as scalars (NOTE(scalarize)) at its first call and, where it finds
    some, runs by `Fastest` of the replay and the replays of the rewritten graphs: the
    rewrites wait for a replay, so a trace that is never replayed costs no more."""

    def __init__(self, graph: Graph, replay: Replay) -> None:
        self.graph = graph
        self.replay = replay
        self.inner: Executable | None = None

    def ways(self) -> list[Executable]:
        """The executables its calls may run by (the graph looked at now if not yet)."""
        inner = self._inner()
        return [way for _, way in inner.candidates] if isinstance(inner, Fastest) else [inner]

    def _inner(self) -> Executable:
        inner = self.inner
        if inner is None:
            ways = _numpy_ways(self.graph, self.replay)
            inner = self.inner = ways[0][1] if len(ways) == 1 else Fastest(self.graph, ways)
        return inner

    def run(self, tensors: list) -> list:
        inner = self.inner
        return (inner if inner is not None else self._inner()).run(tensors)

    def report(self) -> str:
        inner = self.inner
        if inner is None:
            return "the NumPy replay (not replayed yet)"
        if isinstance(inner, Fastest):
            return inner.report()
        if inner is self.replay:
            return "the NumPy replay"
        return ("the NumPy replay, small arrays as scalars: the only way worth timing "
                f"(under {ALONE} of the calls)")


class UnderRecorders(Executable):
    """`inner`, except while recorders are active at the call: then the graph is re-bound
    node by node, so tapes, accumulators, vmap and an enclosing trace see every op (that
    is how a traced function stays differentiable from outside)."""

    def __init__(self, graph: Graph, inner: Executable) -> None:
        self.graph = graph
        self.inner = inner

    def run(self, tensors: list) -> list:
        if recording():
            return interpret(self.graph, tensors)
        return self.inner.run(tensors)

    def lean(self, arg_keys: tuple) -> Callable[[tuple], Any] | None:
        return self.inner.lean(arg_keys)  # a lean call checks for recorders itself


class PerSize(Executable):
    """A graph that serves every size of its signature's None dimensions: one executable
    per set of input sizes (`make` of the graph resolved to them), made on the first call
    at those sizes, which runs here: that run finds every array's shape, from which the
    executable for those sizes makes its choices (buffer reuse, specialized impls,
    XLA's static shapes). `first` is the traced graph's (graph, executable)."""

    def __init__(self, graph: Graph, make: Callable[[Graph], Executable],
                 first: tuple[Graph, Executable]) -> None:
        self.graph = graph
        self._make = make
        self._lock = threading.Lock()
        traced, executable = first
        self._sized: collections.OrderedDict = collections.OrderedDict()
        self._sized[tuple(traced.avals[s][0] for s in traced.inputs)] = executable

    def run(self, tensors: list) -> list:
        shapes = tuple(np.shape(array_of(t)) for t in tensors)
        executable = self._sized.get(shapes)
        if executable is not None:
            return executable.run(tensors)
        avals: dict = {}
        results = plan_runner(self.graph, avals)(*[t._value for t in tensors])
        executable = self._make(resolved(self.graph, {**self.graph.avals, **avals}))
        with self._lock:  # calls at new sizes from several threads
            self._sized[shapes] = executable
            while len(self._sized) > MAX_SIZES:
                self._sized.popitem(last=False)
        return [None if a is None else Tensor(a) for a in results]


# NOTE(fastest): which way a graph runs faster depends on the graph and the machine. A
# loop rolled into a scan replays with NumPy faster than its unrolled graph at an RNN's
# sizes, slower on arrays of a few elements (the scan's Python per step) and where its
# backward pass reads stacked values (docs/performance-notes.md, #rolled-replay); XLA
# beats NumPy on small ops and loses on some large layouts. So where there is a
# choice, `Fastest` runs the first calls by each way in turn: a first
# untimed call each (XLA's compile, a NumPy replay's generated code made), then TRIALS
# timed calls each; from then on the fastest runs every call (the first listed unless
# another is faster by more than MARGIN). A way whose timed call took more than BEHIND
# times the best of the others is timed no more: its remaining calls would each cost
# what it is behind (an RK4 gradient's three replays: 23, 16 and 2 ms). Every way gives
# the graph's values, so any call may take any. `report` says which way runs and why.
class Fastest(Executable):
    """Whichever of `candidates` ((name, executable) pairs, of one graph) runs the calls
    faster, timed on the first calls (NOTE(fastest))."""

    TRIALS = 3
    MARGIN = 0.05
    BEHIND = 2.0

    def __init__(self, graph: Graph, candidates: list[tuple[str, Executable]]) -> None:
        self.graph = graph
        self.candidates = candidates
        self.times: list[list[float]] = [[] for _ in candidates]
        self.warm = [False] * len(candidates)
        self.chosen: Executable | None = candidates[0][1] if len(candidates) == 1 else None
        self.why = "the only way" if self.chosen is not None else "timing its first calls"
        self.name = candidates[0][0] if self.chosen is not None else ""
        self._turn = 0
        self.behind: set[int] = set()  # ways timed no more
        self._lock = threading.Lock()

    def run(self, tensors: list) -> list:
        chosen = self.chosen
        if chosen is not None:
            return chosen.run(tensors)
        with self._lock:
            k = self._turn
            if k in self.behind:
                k = self._next(k)
            self._turn = self._next(k)
        executable = self.candidates[k][1]
        if not self.warm[k]:  # XLA's compile, the generated code of a NumPy replay
            if isinstance(executable, Replay):
                executable.compiled()
            out = executable.run(tensors)
            self.warm[k] = True
            return out
        start = time.perf_counter()
        out = executable.run(tensors)
        elapsed = time.perf_counter() - start
        with self._lock:
            self.times[k].append(elapsed)
            timed = [min(t) for t in self.times if t]
            if len(timed) == len(self.times):
                fastest = min(timed)
                for j, t in enumerate(self.times):
                    if min(t) > self.BEHIND * fastest:
                        self.behind.add(j)
            if self.chosen is None and all(len(t) >= self.TRIALS for j, t in
                                           enumerate(self.times) if j not in self.behind):
                self._choose()
        return out

    def _next(self, k: int) -> int:
        """The way after way k that is still timed."""
        for step in range(1, len(self.candidates) + 1):
            j = (k + step) % len(self.candidates)
            if j not in self.behind:
                return j
        return k

    def _choose(self) -> None:
        best = [min(t) for t in self.times]
        ahead = [j for j in range(len(best)) if j not in self.behind]
        k = min(ahead, key=best.__getitem__)
        if 0 in ahead and best[k] > (1 - self.MARGIN) * best[0]:
            k = 0
        self.name = self.candidates[k][0]
        others = "; ".join(
            f"{name} {1e3 * b:.3g} ms" + (f" (timed no more after {len(t)})" if j in
                                          self.behind else "")
            for j, ((name, _), b, t) in enumerate(zip(self.candidates, best, self.times))
            if j != k)
        self.why = (f"{1e3 * best[k]:.3g} ms a call, against {others} (the fastest of "
                    f"{self.TRIALS} timed calls each)")
        self.chosen = self.candidates[k][1]

    def report(self) -> str:
        """Which way runs the calls, and why."""
        return f"{self.name}: {self.why}" if self.name else self.why

    def lean(self, arg_keys: tuple) -> Callable[[tuple], Any] | None:
        made: list = []

        def call(args: tuple) -> Any:  # the chosen way's lean call, once it is chosen
            chosen = self.chosen
            if chosen is None:
                return MISS
            if not made:
                made.append(chosen.lean(arg_keys))
            return MISS if made[0] is None else made[0](args)

        return call
