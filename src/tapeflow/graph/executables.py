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
  call (a tape, an accumulator, vmap, an outer trace), so they see every op.
"""

from __future__ import annotations

import collections
import threading
from typing import Any, Callable

import numpy as np

from ..core import recording
from ..tensor import Tensor
from .device import array_of
from .ir import Graph
from .polymorphic import resolved
from .replay import Replay, interpret, plan_runner
from .xla import XlaReplay

__all__ = ["Executable", "plan", "PerSize", "UnderRecorders", "MAX_SIZES"]

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
    ``jit_compile``, every node compiles            one XLA computation (`XlaReplay`); a
                                                    call whose guard or check fails is the
                                                    NumPy replay's; a signature with nothing
                                                    to check around it has a lean call
    ``jit_compile``, a host callback, or a draw or  the NumPy replay, after a warning naming
    check inside a loop                             the primitive
    otherwise                                       the NumPy replay: the plan interpreter for
                                                    its first calls, then generated code
    ============================================== ==========================================

    `graph` is the graph at the traced sizes; `generic`, where one serves every size, the
    graph whose sizes are read when it runs (NOTE(sized-params) in graph/polymorphic.py).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.executables import plan
        >>> cf = tf.function(lambda x: x * 2.0).get_concrete_function(tf.constant([1.0]))
        >>> ex = plan(cf.graph)
        >>> type(ex).__name__, ex.run([tf.constant([3.0])])[0].numpy()
        ('UnderRecorders', array([6.], dtype=float32))
    """
    def make(g: Graph) -> Executable:
        if g.sized:  # a size-generic trace's graph, at the sizes it was traced at
            g = resolved(g, g.avals)
        if jit_compile:
            return XlaReplay(g, keep_on_device, fallback=Replay(g))
        return Replay(g)

    inner = make(graph)
    if generic is not None:
        inner = PerSize(generic, make, first=(graph, inner))
    return UnderRecorders(graph if generic is None else generic, inner)


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
