"""A loop over a tf.data.Dataset inside a traced function, traced once and run as a loop.

NOTE(dataset-loops): TensorFlow turns `for batch in dataset:` inside a tf.function into a
graph loop by rewriting the Python source (autograph). tapeflow reads the loop off the
trace instead. The trace runs the loop's Python three times (`LoopProbe`): on the
dataset's first element, on its second with each None dimension of the element_spec at
least 2, and on that one a row larger; then it ends the loop. Each element enters the
graph as an input of its own whose None dimensions are symbols (NOTE(symbolic-sizes) in
graph/dims.py), and the trace notes where each step begins and what of the loop's
Python state it can see (a changing Python value, a size Python reads). The graph is
then cut in three:

- the prologue: what ran before the loop, and its first step (which may differ from the
  others: a model built, an optimizer's slots made, on first use);
- the body: the second step, kept only where the third step repeats it op for op, its
  inputs mapped consistently: each input is made in the step, read from the step before
  (a carry: its first value is the prologue's), or the same value both times (read from
  the prologue, a constant, a variable). That the third step ran at other sizes checks
  that no size was frozen into the body, and the sizes' decisions left in it are checks
  its replay makes at each new size; the gradients' broadcasting makes none that a size
  of 1 decides otherwise (ops/structural.py's `surely_same`), so a last batch of one row
  runs the same body;
- the epilogue: what ran after the loop, reading the last step's values.

A call runs the prologue on the first element, the body on each later one (each run
commits its variable writes, as eager steps do), then the epilogue. The trace itself ran
three steps for real, so it puts back every variable it wrote (Tracer.first_values)
before the first call runs the graphs; that call iterates the elements the trace drew,
then the rest of the same pass over the dataset (a shuffled dataset's first order).

Where the loop cannot be read off the trace, the function runs its Python eagerly at each
call (RunEagerly), with a warning that says why: a step that branched on a tensor's value
or a Python count, Python values that change from step to step, a size Python reads, a
loop left early (`break`), a second loop over a dataset, a value of the middle step used
after the loop. A dataset of fewer than two elements, or a call under a tape or an
enclosing trace, runs the Python eagerly for that call. As in TensorFlow, Python side
effects of the loop's body (printing, appending to a list, Python counters) happen while
it is traced, not at each call; and state kept in objects' attributes is not seen.
"""

from __future__ import annotations

import dataclasses
import itertools
import weakref
from typing import Any, Callable, Iterator

import numpy as np

from .. import nest
from ..catalog import STATEFUL
from ..core import current_stack, recording, substack
from ..tensor import Tensor, TensorBase, TensorShape, Variable
from .ir import Assign, Graph, Guard, Node, SizeOf, resolve, size_slots
from .passes import optimize
from .replay import GuardFailed
from .trace import RunEagerly, Tracer, TracingError, user_frame, user_line

__all__ = ["STEPS", "LoopProbe", "LoopedFunction", "held_weakly", "iterated_in_trace", "loop_off",
           "probing", "strong"]


STEPS = 3  # the loop's steps a trace runs: the first, and the second at two sizes


class LoopProbe:
    """The iterator a traced function's `for element in dataset` gets (NOTE(dataset-loops)):
    the dataset's first element, then its second at two sizes (as it is but at least 2
    along each None dimension of the element_spec, then one larger), each a new input of
    the trace; then the end of the loop. It notes where in the graph each step begins."""

    def __init__(self, tracer: Tracer, dataset: Any, passes: Callable[[Any], Iterator],
                 spec: Any) -> None:
        self.tracer, self.spec, self.passes = tracer, spec, passes
        self.dataset = weakref.ref(dataset)
        self.source = passes(dataset)  # a pass over the dataset: the first call goes on
        self.taken: list = []      # the elements drawn from it (structures of arrays)
        self.bounds: list[int] = []
        self.reads: list[int] = []  # the size reads noted (Tracer.size_reads) at each bound
        self.states: list[Any] = []  # the Python state of the loop's frame at each bound
        self.slots: list[list[int]] = []  # each step's element, as graph inputs
        self.small_first = False    # the first element has a None dimension below 2
        self.where = user_line()
        self.ended = self.short = False

    def __iter__(self) -> "LoopProbe":
        return self

    def __next__(self) -> Any:
        g = self.tracer.graph
        self.bounds.append(len(g.nodes))
        self.reads.append(len(self.tracer.size_reads))
        frame = user_frame()
        # (a dict of them: Python 3.13's f_locals is a proxy, one object every step)
        self.states.append(None if frame is None else _python_state(dict(frame.f_locals)))
        k = len(self.slots)
        if k == STEPS:
            self.ended = True
            raise StopIteration
        if k < 2:
            with substack(lambda r: False):  # the pipeline's own ops are not the loop's
                value = next(self.source, None)
            if value is None:
                self.short = True
                raise StopIteration
            self.taken.append(value)
        else:
            value = self.taken[1]
        tensors = []
        for a, spec in zip(nest.flatten(value), nest.flatten(self.spec), strict=True):
            a = np.asarray(a)
            shape = TensorShape([None if spec.shape.rank is None or spec.shape[j] is None
                                 else d for j, d in enumerate(a.shape)])
            if k == 0:
                self.small_first |= any(d < 2 for d, s in zip(a.shape, shape) if s is None)
            else:  # sizes of at least 2 (a trace's None dimensions), then one more
                a = _resized(a, shape, lambda n: max(n, 2) + k - 1)
            tensors.append(self.tracer.new_input(a, shape))
        self.slots.append([g.inputs[-len(tensors) + j] for j in range(len(tensors))]
                          if tensors else [])
        return nest.pack_sequence_as(value, tensors)

    def failed(self) -> None:
        """The traced Python raised: in a step of an element of sizes the probe chose (not
        the dataset's), the function runs eagerly instead, where the dataset's own elements
        decide whether it raises."""
        if len(self.slots) >= 2 and not self.ended:
            self.tracer.restore_variables()
            self.hand_back()
            raise RunEagerly(f"its loop over a dataset ({self.where}) could not be traced as "
                             "a loop: a step raised at sizes the trace chose")

    def hand_back(self) -> None:
        """The dataset's next pass is the rest of this one, with what was drawn from it: a
        shuffled dataset's order as an eager run's."""
        dataset = self.dataset()
        if dataset is not None:
            dataset._resumed = itertools.chain(self.taken, self.source)


def _resized(a: np.ndarray, shape: TensorShape, size: Callable[[int], int]) -> np.ndarray:
    """`a` at `size(n)` along each None dimension of `shape` (n: its size there): its
    leading entries, the last one repeated where it grows (zeros where it had none)."""
    for axis, d in enumerate(shape):
        if d is None:
            n = a.shape[axis]
            m = size(n)
            if n == 0:
                a = np.zeros(a.shape[:axis] + (m,) + a.shape[axis + 1:], a.dtype)
            elif m != n:
                a = np.take(a, np.minimum(np.arange(m), n - 1), axis=axis)
    return a


def _python_state(x: Any, depth: int = 0) -> Any:
    """What of the loop's Python state a graph cannot see, to compare between steps: plain
    values, and the structure of containers (tensors only as such: the graph sees them).
    Other objects by type (a step may make new ones; their attributes are not seen)."""
    if isinstance(x, (TensorBase, Variable)):
        return "T"
    if isinstance(x, (bool, int, float, complex, str, bytes, type(None), np.generic)):
        return x
    if isinstance(x, np.ndarray):  # a small one (a NumPy counter) by value
        return ("ndarray", x.shape, x.dtype.str, x.tobytes() if x.size <= 64 else None)
    if depth > 3:
        return type(x).__name__
    if isinstance(x, (list, tuple)):
        return (type(x).__name__, len(x), tuple(_python_state(v, depth + 1) for v in x[:64]))
    if isinstance(x, dict):
        return ("dict", len(x), tuple((_python_state(k, depth + 1), _python_state(v, depth + 1))
                                      for k, v in itertools.islice(x.items(), 64)))
    if isinstance(x, (set, frozenset)):
        return (type(x).__name__, len(x))
    return type(x).__qualname__


def iterated_in_trace(dataset: Any, passes: Callable[[Any], Iterator]) -> LoopProbe | None:
    """The iterator of a dataset iterated while a tf.function traces: a probe where the
    function's own code loops over it; None outside traces. Elsewhere in a trace (inside
    a tape or a loop body in it, or a second loop) the function runs eagerly instead
    (RunEagerly), the variables the trace wrote put back; unless the trace drew random
    numbers, which a rerun would draw again (a TypeError that says what to do)."""
    stack = current_stack()
    for tracer in stack:
        if not isinstance(tracer, Tracer):
            continue
        if tracer is stack[-1] and type(tracer) is Tracer and tracer.outer is None \
                and tracer.loop is None:
            tracer.loop = LoopProbe(tracer, dataset, passes, dataset.element_spec)
            return tracer.loop
        if any(type(n) is Node and STATEFUL in n.prim.effects for n in tracer.graph.nodes):
            raise TypeError("tf.data: a dataset is iterated inside a tf.function after the "
                            "function drew random numbers, where tapeflow runs the function's "
                            "loop over the dataset eagerly (inside a tape or a loop body, or a "
                            "second loop) and cannot rerun what came before it. Iterate the "
                            "dataset first in the function, or outside it (for batch in "
                            "dataset: train_step(batch)).")
        tracer.restore_variables()
        if tracer.loop is not None:
            tracer.loop.hand_back()
        raise RunEagerly("it iterates a tf.data.Dataset inside a tape or a loop body, or in a "
                         "second loop, which tapeflow runs in Python at each call (its steps "
                         "may be traced functions of their own)")
    return None


def probing() -> bool:
    """Whether a trace is running the steps of a loop it probes: a tf.function called there
    runs its Python inline, so each step records the same ops (a nested function's first
    call would trace where its later ones replay an optimized graph)."""
    return any(type(r) is Tracer and r.loop is not None and not r.loop.ended
               for r in current_stack())


class _NotALoop(Exception):
    """Why the trace's steps are not one body repeated."""


@dataclasses.dataclass
class _Cut:
    """The graphs of a loop read off a trace, and how their values flow."""

    prologue: Graph
    body: Graph
    epilogue: Graph
    n_carry: int
    n_inv: int
    first_sized: bool  # the first step read no size of its element: any size serves


def loop_off(g: Graph, probe: LoopProbe) -> _Cut:
    """Cut the traced graph `g` (before its passes), whose outputs are set, at the steps
    `probe` noted, into prologue, body and epilogue; RunEagerly where the steps are not
    one body repeated (why, in its message)."""
    if probe.short or not probe.ended:
        probe.hand_back()
        why = "a dataset of fewer than two elements" if probe.short else \
            "the loop was left before its end (break or return)"
        raise RunEagerly(f"its loop over a dataset ({probe.where}) could not be traced as "
                         f"a loop: {why}")
    try:
        return _cut(g, probe)
    except _NotALoop as e:
        probe.hand_back()
        raise RunEagerly(f"its loop over a dataset ({probe.where}) could not be traced as a "
                         f"loop: {e}") from None


def _outputs(nodes: list) -> set:
    return {o for n in nodes if type(n) is Node for o in n.outputs}


def _cut(g: Graph, probe: LoopProbe) -> _Cut:
    bounds, tracer, slots = probe.bounds, probe.tracer, probe.slots
    if len(tracer.size_reads) > probe.reads[1]:
        raise _NotALoop("Python reads a size of an element, or of a value computed from one, "
                        f"at {tracer.size_reads[probe.reads[1]]}")
    if any(state != probe.states[1] for state in probe.states[2:]):
        raise _NotALoop("Python values of the loop's function change from step to step (a "
                        "counter, enumerate's index, a list appended to), which a graph "
                        "cannot see")
    nodes = g.nodes
    steps = [nodes[bounds[k]:bounds[k + 1]] for k in range(STEPS)]
    made = [_outputs(step) | set(e) for step, e in zip(steps, slots)]
    elements = {s for e in slots for s in e}
    outer_inputs = [s for s in g.inputs if s not in elements]
    # the body: the second step, where the third repeats it
    match = _Match(g, made[1], made[2], dict(zip(slots[1], slots[2])))
    body_nodes = match.steps(steps[1], steps[2])
    back = {v: k for k, v in match.phi.items()}  # a slot of the last step -> the second's
    # the epilogue (and the function's outputs) read the last step's values
    last: dict[int, int] = {}
    def after(s: int | None) -> int | None:
        if s is None or not (s in made[1] or s in made[2]):
            return s
        if s in made[1]:
            raise _NotALoop("a value of one of its steps is used after the loop (its "
                            "last step's values only can be)")
        return last.setdefault(back[s], _fresh(g, s))

    tail_nodes = [_relinked(n, after) for n in nodes[bounds[-1]:]]
    outputs = [after(s) for s in g.outputs]
    carries = list(match.carries)  # the body's slots carried to its next run
    carry_in = [match.carry_slot[s] for s in carries]
    inv = [s for s in match.invariants if s not in g.constants and s not in g.var_slots
           and s not in outer_inputs]
    finals = list(last)
    epi_reads = sorted(_reads(tail_nodes, outputs) - set(last.values()) - set(outer_inputs)
                       - set(g.constants) - set(g.var_slots))
    body_inputs = outer_inputs + carry_in + slots[1] + inv
    prologue = _graph(g, "prologue", nodes[:bounds[1]], outer_inputs + slots[0],
                      [match.carries[s] for s in carries] + inv + epi_reads)
    body = _graph(g, "body", body_nodes, body_inputs, carries + finals)
    epilogue = _graph(g, "epilogue", tail_nodes, outer_inputs + [last[s] for s in finals]
                      + epi_reads, outputs)
    for part in (body, epilogue):  # decisions on sizes only: checked as each one runs
        if any(type(n) is Guard and n.how != "size" for n in part.nodes):
            raise _NotALoop("a step or the code after the loop reads a tensor's value "
                            "(a branch on it cannot be replayed in a loop)")
    return _Cut(prologue, body, epilogue, len(carries), len(inv),
                probe.reads[1] == probe.reads[0] and not probe.small_first)


def _fresh(g: Graph, like: int) -> int:
    slot = g.next_slot
    g.next_slot += 1
    g.avals[slot] = g.avals[like]
    return slot


def _reads(nodes: list, outputs: list) -> set:
    read = {s for s in outputs if s is not None}
    for n in nodes:
        if type(n) is Node:
            read.update(n.inputs)
            read.update(size_slots(n.params))
        elif type(n) in (Guard, Assign):
            read.add(n.slot)
    return read - _outputs(nodes)


def _relinked(n: Any, slot: Callable[[int], int]) -> Any:
    if type(n) is Node:
        params = resolve(n.params, lambda s, axis: SizeOf(slot(s), axis)) if n.sized \
            else n.params
        return dataclasses.replace(n, inputs=[slot(i) for i in n.inputs], params=params)
    if type(n) is Guard:
        return dataclasses.replace(n, slot=slot(n.slot))
    return dataclasses.replace(n, slot=slot(n.slot))


class _Match:
    """Matches the third step to the second, op for op, and sorts each value the second
    step reads: made in it, carried from the step before, or the same every step."""

    def __init__(self, g: Graph, made2: set, made3: set, phi: dict) -> None:
        self.g, self.made2, self.made3, self.phi = g, made2, made3, phi
        self.carries: dict[int, int] = {}     # a slot of the body -> its value entering it
        self.carry_slot: dict[int, int] = {}  # that slot -> the body's input for it
        self.invariants: dict[int, None] = {}

    def slot(self, a: int, c: int) -> int:
        """The body's slot for a value the second step reads as `a` where the third
        reads `c`."""
        if a in self.made2:
            if self.phi.get(a) != c:
                raise _NotALoop("its steps combine their values differently")
            return a
        if c in self.made2:
            if self.carries.setdefault(c, a) != a:
                raise _NotALoop("a value is carried from two places")
            if c not in self.carry_slot:
                self.carry_slot[c] = _fresh(self.g, c)
            return self.carry_slot[c]
        if c in self.made3:
            raise _NotALoop("its steps combine their values differently")
        if a != c and not _same_constant(self.g, a, c):
            raise _NotALoop("a step reads a value that changes from step to step without "
                            "being carried (a Python number, e.g. from enumerate)")
        self.invariants[a] = None
        return a

    def steps(self, second: list, third: list) -> list:
        """The body: `second`'s nodes, each value it reads sorted (`slot`)."""
        if len(second) != len(third):
            raise _NotALoop("its steps ran different ops (a branch on a value, or on a Python "
                            "count, or on a size)")
        return [self.step(a, c) for a, c in zip(second, third)]

    def step(self, a: Any, c: Any) -> Any:
        if type(a) is not type(c):
            raise _NotALoop("its steps ran different ops")
        if type(a) is Assign:
            if a.var != c.var:
                raise _NotALoop("its steps write different variables")
            return dataclasses.replace(a, slot=self.slot(a.slot, c.slot))
        if type(a) is Guard:
            if a.how != c.how or not _same(a.expected, c.expected):
                raise _NotALoop("its steps branch differently on a tensor's value")
            return dataclasses.replace(a, slot=self.slot(a.slot, c.slot))
        if a.prim is not c.prim or a.sized != c.sized or len(a.inputs) != len(c.inputs) or \
                len(a.outputs) != len(c.outputs):
            raise _NotALoop(f"its steps ran different ops ({a.prim.name} and {c.prim.name})")
        if a.backward is not None or c.backward is not None:
            raise _NotALoop("a step calls a function with a custom gradient")
        if not _same(resolve(a.params, _unsized), resolve(c.params, _unsized)):
            raise _NotALoop(f"a step's {a.prim.name} has other parameters in the next step "
                            "(a size or a Python value frozen into it)")
        inputs = [self.slot(x, y) for x, y in zip(a.inputs, c.inputs)]
        params = a.params
        if a.sized:  # its sizes' slots, in the same order in both (their params match)
            it = iter(_size_order(c.params))
            params = resolve(a.params, lambda s, axis: SizeOf(self.slot(s, next(it)), axis))
        self.phi.update(zip(a.outputs, c.outputs))
        return dataclasses.replace(a, inputs=inputs, params=params)


def _unsized(slot: int, axis: int) -> None:
    return None


def _size_order(params: Any) -> list:
    """The slots of the sizes `params` read, in `resolve`'s order (repeats included)."""
    found: list = []
    resolve(params, lambda slot, axis: found.append(slot))
    return found


def _same_constant(g: Graph, a: int, c: int) -> bool:
    return a in g.constants and c in g.constants and _same(g.constants[a], g.constants[c])


def _same(x: Any, y: Any) -> bool:
    if type(x) is not type(y):
        return False
    if isinstance(x, (np.ndarray, np.generic)):
        return x.dtype == y.dtype and np.shape(x) == np.shape(y) and \
            np.array_equal(x, y, equal_nan=x.dtype.kind in "fc")
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(u, v) for u, v in zip(x, y))
    if isinstance(x, float) and x != x:
        return y != y
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - an object without a plain equality
        return x is y


def _graph(g: Graph, part: str, nodes: list, inputs: list, outputs: list) -> Graph:
    sub = Graph(name=f"{g.name}_{part}", inputs=list(inputs), outputs=list(outputs),
                output_structure=list(outputs), nodes=list(nodes),
                variables=g.variables, var_slots=dict(g.var_slots), avals=g.avals,
                next_slot=g.next_slot)
    read = _reads(nodes, outputs)
    sub.constants = {s: v for s, v in g.constants.items() if s in read}
    sub.avals = dict(g.avals)
    optimize(sub)
    return sub


class LoopedFunction:
    """A traced function with a loop over a dataset: its prologue, body and epilogue,
    each a concrete function (NOTE(dataset-loops)), run in turn over the dataset's
    elements; `eager` runs the function's Python on a call's tensors."""

    def __init__(self, cut: _Cut, probe: LoopProbe, concrete: Callable[[Graph, bool], Any],
                 eager: Callable[[list], Any], structure: Any) -> None:
        self.cut = cut
        self.prologue = concrete(cut.prologue, cut.first_sized)
        self.first_shapes = [cut.prologue.avals[s][0] for s in probe.slots[0]]
        self.body = concrete(cut.body, True)
        self.epilogue = concrete(cut.epilogue, False)
        self.dataset, self.passes = probe.dataset, probe.passes
        self.eager, self.structure = eager, structure
        self.pending: Iterator | None = itertools.chain(probe.taken, probe.source)
        self.executable = self  # the Function asks for a lean call: there is none
        self.graph = cut.body

    def lean(self, arg_keys: tuple) -> None:
        return None

    def _run(self, leaves: list) -> Any:
        pending, self.pending = self.pending, None
        dataset = self.dataset()
        if dataset is None:
            return self.eager(leaves)
        if pending is not None:  # the trace's pass over the dataset, begun
            dataset._resumed = pending
        if recording():  # tapes and traces around the call see each op of the Python
            return self.eager(leaves)
        elements = self.passes(dataset)
        first = next(elements, None)
        second = None if first is None else next(elements, None)
        if second is None or not (self.cut.first_sized or [
                np.shape(a) for a in nest.flatten(first)] == self.first_shapes):
            # too short to loop, or a first element of other sizes than the first step
            # was traced at, where its Python read them
            dataset._resumed = itertools.chain([] if first is None else [first],
                                               [] if second is None else [second], elements)
            return self.eager(leaves)
        flat = _flat_tensors
        cut = self.cut
        try:
            out = self.prologue.executable.run(leaves + flat(first))
        except GuardFailed:  # the function traces again, on this pass's elements
            dataset._resumed = itertools.chain([first, second], elements)
            raise
        carries = out[:cut.n_carry]
        inv = out[cut.n_carry:cut.n_carry + cut.n_inv]
        reads = out[cut.n_carry + cut.n_inv:]
        last: list = []
        k = 1
        try:
            for k, element in enumerate(itertools.chain([second], elements), 2):
                step = self.body.executable.run(leaves + carries + flat(element) + inv)
                carries, last = step[:cut.n_carry], step[cut.n_carry:]
            k = 0
            result = self.epilogue.executable.run(leaves + last + reads)
        except GuardFailed as e:  # no retrace: the steps before this one have run
            at = f"element {k} of the dataset" if k else "the code after the loop"
            raise TracingError(
                f"tapeflow.function: {at} has sizes on which the traced loop's Python "
                f"decided otherwise ({e.guard.where}); the steps before it have run. Make "
                "the elements one size (batch(drop_remainder=True)), or iterate the "
                "dataset outside the function.") from None
        return nest.pack_sequence_as(self.structure, result)


class _Weak:
    """An argument held weakly in a looped function's call (a dataset of many rows)."""

    def __init__(self, obj: Any) -> None:
        self.ref = weakref.ref(obj)


def held_weakly(call: Any, obj: Any) -> Any:
    """`call` (a structure of arguments) with `obj` held weakly where it appears."""
    if call is obj:
        return _Weak(obj)
    if isinstance(call, (list, tuple)) and not hasattr(call, "_fields"):
        return type(call)(held_weakly(c, obj) for c in call)
    if isinstance(call, dict):
        return {k: held_weakly(v, obj) for k, v in call.items()}
    return call


def strong(call: Any) -> Any:
    """The arguments of `held_weakly`'s structure, each object itself again."""
    if isinstance(call, _Weak):
        return call.ref()
    if isinstance(call, (list, tuple)) and not hasattr(call, "_fields"):
        return type(call)(strong(c) for c in call)
    if isinstance(call, dict):
        return {k: strong(v) for k, v in call.items()}
    return call


def _flat_tensors(value: Any) -> list:
    return [Tensor(np.asarray(a)) for a in nest.flatten(value)]
