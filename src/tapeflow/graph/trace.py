"""The tracing interpreter: records every op it sees into a Graph, on concrete values.

Tracing runs the function for real, so NumPy computes every shape and dtype;
the tracer only writes down what happened. It sits on the recorder stack like
a tape (NOTE(strict-nesting) in core): tapes, accumulators and vmap used inside
the traced function are entered after it, so their derivative and batched
computations are ops it records; recorders active around the call are below it
and keep their own work out of the graph.

NOTE(value-reads): Python code that reads a tensor's value while tracing
(`if x > 0`, `float(x)`, `x.numpy()`) would freeze one branch into the graph. (str()
and repr() of a traced tensor read nothing: they print it as TensorFlow prints a graph
tensor, its name, shape and dtype: `symbolic_name`.)
Each such read becomes a Guard node holding the value read; a replay whose
guard reads something else is abandoned and the function is traced again for
the new branch. With ``guards="error"`` the read raises instead.
"""

from __future__ import annotations

import linecache
import os
import sys
import threading
import weakref
from typing import Any, Iterator

import numpy as np

from ..catalog import CUSTOM_GRADIENT, DATA_SHAPE, NO_DERIVATIVE, SHAPE_OPERAND, STATEFUL
from ..core import Primitive, Recorder, dynamic_traces, recorder_stack, records_open, substack
from ..custom import call_grad_fn
from ..tensor import Tensor, TensorShape, Variable, key_of, new_key
from ..scopes import quieted
from ..ops.sizes import size_check_p
from .dims import Sizes, decided, leaf, read_sizes
from .ir import Assign, CustomBackward, Graph, Guard, Node, SizeExpr, SizeOf
from .passes import optimize

__all__ = ["Tracer", "TracingError", "user_frame", "user_line"]

_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class TracingError(RuntimeError):
    """A traced function did something a graph cannot replay faithfully."""


class RunEagerly(TracingError):
    """What the traced Python does cannot be a graph (a loop over a tf.data.Dataset): the
    function runs its Python eagerly at each call instead (graph/function.py)."""


def user_frame() -> Any:
    """The frame of the innermost caller outside tapeflow (None if there is none)."""
    frame = sys._getframe(1)
    while frame is not None and os.path.abspath(frame.f_code.co_filename).startswith(_PACKAGE_DIR):
        frame = frame.f_back
    return frame


def user_line() -> str:
    """`file:line: source` of the innermost caller outside tapeflow."""
    frame = user_frame()
    if frame is None:
        return "<unknown>"
    src = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
    return f"{frame.f_code.co_filename}:{frame.f_lineno}: {src}"


_READ_KINDS = {"bool()": "bool", "float()": "float", "int()": "int", "__index__": "index",
               "complex()": "complex", "numpy()": "array", "__array__": "array"}


class ReadShape(TensorShape):
    """A tensor's shape read by user code in a size-generic trace: where a size read from
    it (an index, iteration, comparison, its length) is one of the `varying` axes, the
    place is noted in `reads`, so the trace knows Python computed something from the sizes
    of None dimensions (NOTE(two-sizes) in graph/polymorphic.py)."""

    _reads: list
    _varying: frozenset

    def _note(self, what: Any, axes: Any = None) -> Any:
        if axes is None or not self._varying.isdisjoint(axes):
            if self._varying:
                self._reads.append(user_line())
        return what

    def __getitem__(self, key: Any) -> Any:
        axes = range(len(self))
        picked = axes[key] if isinstance(key, (int, slice)) else axes
        return self._note(TensorShape.__getitem__(self._plain(), key),
                          [picked] if isinstance(picked, int) else picked)

    def _plain(self) -> TensorShape:
        return TensorShape(tuple.__getitem__(self, slice(None)))

    def __iter__(self) -> Iterator:
        return iter(self._note(tuple.__getitem__(self, slice(None))))

    def as_list(self) -> list:
        return list(self._note(tuple.__getitem__(self, slice(None))))

    def num_elements(self) -> int | None:
        return self._note(self._plain().num_elements())

    def __eq__(self, other: Any) -> bool:
        return TensorShape.__eq__(TensorShape(self._note(tuple(tuple.__iter__(self)))), other)

    def __ne__(self, other: Any) -> bool:
        return not self.__eq__(other)

    __hash__ = tuple.__hash__


_COUNT_LOCK = threading.Lock()


class Tracer(Recorder):
    """Records ops into `graph`; inputs are the given tensors (by identity)."""

    watches_reads = True
    watches_writes = True
    sees_custom_forward = True
    sizing = False  # handing out Dims (NOTE(symbolic-sizes) in graph/dims.py)

    def __init__(self, graph: Graph, inputs: list, guards: str = "retrace",
                 outer: "Tracer | None" = None) -> None:
        self.graph = graph
        self.guards = guards
        self.outer = outer       # tracing a custom grad_fn inside another trace
        self.created: list[str] = []  # names of the variables made while tracing
        # where user code read a size that varies with a size-generic trace's (`dynamic`)
        # None dimensions, and the slots whose sizes may vary with them (those inputs, and
        # the values computed from them): NOTE(two-sizes) in graph/polymorphic.py
        self.size_reads: list[str] = []
        self.varying: set[int] = set()
        # names and shapes (None for a signature's None dimensions) of the inputs, for
        # printed graph tensors (Tensor.__str__)
        self.input_names: list[str] = []
        self.input_shapes: list = []
        self.refs: list[int] = []  # outer slots this graph reads (its trailing inputs)
        self.ref_values: list = []  # their values while tracing
        self.ref_tensors: list = []  # and the tensors themselves
        # (node, the params the recorders outside saw, the tensors of its backward's refs)
        # of each custom gradient whose grad_fn was traced (Function._trace hands those
        # recorders the traced backward: the grad_fn runs once per trace, as TensorFlow's)
        self.custom_grads: list = []
        # Tensors are named by key (tensor.key_of), not id, so the tracer need not keep
        # them alive: a trace holds no more memory than the traced code (only constants).
        self._slots: dict[int, int] = {}
        self.made: list = []  # weak references to the tensors the trace made, to seal
        # Slots no derivative can reach (made from stop_gradient and other NO_DERIVATIVE
        # ops only): a custom gradient on them is pruned, as a tape prunes it.
        self._inert: set[int] = set()
        # Slots of a size-generic trace computed from the sizes alone (tf.shape, and ops of
        # it and constants): the same at every call of the same sizes.
        self._from_sizes: set[int] = set()
        self._checks: set = set()  # the size checks recorded (NOTE(symbolic-sizes))
        # id -> (variable, its value before this trace first wrote it): a trace runs for
        # real, and a function whose trace is not its call's run puts them back
        # (NOTE(dataset-loops) in graph/dataset_loops.py)
        self.first_values: dict[int, tuple] = {}
        self.loop: Any = None  # a loop over a dataset this trace probes (dataset_loops)
        for x in inputs:
            slot = graph.new_slot(x._value)
            graph.inputs.append(slot)
            self._slots[key_of(x)] = slot
            self.made.append(weakref.ref(x))

    def slot_of(self, x: Any) -> int:
        """The slot of a tensor; tensors from outside the trace become constants and
        variables become captures (read at each replay)."""
        slot = self._slots.get(x._key)
        if slot is not None:
            return slot
        g = self.graph
        outer_slot = None if self.outer is None else self.outer._slots.get(x._key)
        if outer_slot is not None and not isinstance(x, Variable):
            slot = g.new_slot(x._value)  # a value of the enclosing graph: an extra input
            g.inputs.append(slot)
            self.refs.append(outer_slot)
            self.ref_values.append(x._value)
            self.ref_tensors.append(x)
        elif isinstance(x, Variable):
            slot = g.new_slot(x._value)
            g.var_slots[slot] = len(g.variables)
            g.variables.append(x)
        else:
            slot = g.new_slot(x._value)
            g.constants[slot] = x._value
            if isinstance(x, Tensor):
                g.captured[slot] = weakref.ref(x)  # NOTE(captures) in graph/ir.py
        self._slots[key_of(x)] = slot
        return slot

    def __enter__(self) -> "Tracer":
        entered = super().__enter__()
        if self.dynamic:
            with _COUNT_LOCK:
                dynamic_traces[0] += 1
            self._counted = self.sizing = True
        return entered

    def __exit__(self, *exc: Any) -> None:
        self.sizing = False  # a Dim kept past the trace is its plain size
        if self.__dict__.pop("_counted", False):
            with _COUNT_LOCK:
                dynamic_traces[0] -= 1
        return super().__exit__(*exc)

    def sizes(self, tensor: Any) -> tuple | None:
        """In a size-generic trace (`dynamic`), `tensor`'s shape as sizes that the params of
        an op turn into sizes read when the graph runs (NOTE(sized-params) in
        graph/polymorphic.py); None for a tensor this trace did not make or take in."""
        key = tensor._key
        slot = None if key is None else self._slots.get(key)
        if slot is None or slot in self.graph.constants:
            return None
        shape = self.graph.avals[slot][0]
        if slot not in self.varying:  # a constant's, a variable's: sizes of its own
            return tuple(shape)
        k = self.graph.inputs.index(slot) if slot in self.graph.inputs else None
        if k is not None and k < len(self.input_shapes) and \
                len(self.input_shapes[k]) == len(shape):
            return Sizes(d if self.input_shapes[k][j] is not None else leaf(self, d, slot, j)
                         for j, d in enumerate(shape))
        return Sizes(leaf(self, d, slot, j) for j, d in enumerate(shape))

    def follow_sizes(self) -> None:
        """Trace a closed graph (a loop's body) within a size-generic trace: its sizes are
        symbols of its own values too, read when it runs (NOTE(symbolic-sizes))."""
        self.dynamic = self.sizing = any(r.dynamic for r in recorder_stack())
        if self.dynamic:
            self.varying = set(self.graph.inputs)

    def may_vary(self, slot: int) -> None:
        """A new input of this trace, whose sizes vary where the trace's do."""
        if self.dynamic:
            self.varying.add(slot)

    def size_check(self, check: SizeExpr, result: bool) -> None:
        """A decision Python made on sizes (NOTE(symbolic-sizes) in graph/dims.py): a
        size_check node and a guard that it decides the same when the graph runs. Those
        the call's key already decides (a None dimension is at least 2; which of them are
        equal) and repeats of one check are left out."""
        if check in self._checks or decided(check, self._open_axis):
            return
        self._checks.add(check)
        slot = self.graph.new_slot(np.bool_(result))
        self.graph.nodes.append(Node(size_check_p, [], {"check": check}, [slot], sized=True))
        self.graph.nodes.append(Guard(slot, "size", result, user_line()))

    def _open_axis(self, s: SizeOf) -> bool:
        """Whether `s` is a None dimension of an input (whose key says it is >= 2)."""
        if s.slot not in self.graph.inputs:
            return False
        k = self.graph.inputs.index(s.slot)
        return k < len(self.input_shapes) and len(self.input_shapes[k]) > s.axis and \
            self.input_shapes[k][s.axis] is None

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        slots = self._slots
        ins = [slots.get(x._key) for x in inputs]
        if None in ins:
            ins = [self.slot_of(x) for x in inputs]
        sized = False
        if self.dynamic:
            if params:
                params, sized = read_sizes(params, self)
            varies = sized or DATA_SHAPE in prim.effects or not self.varying.isdisjoint(ins)
        else:
            varies = False
        new_slot, made = self.graph.new_slot, self.made
        outs = []
        for o in outputs:
            slot = new_slot(o._value)
            k = o._key
            if k is None:  # a fresh output: no other thread can see it yet
                k = o._key = new_key()
            slots[k] = slot
            outs.append(slot)
            made.append(weakref.ref(o))
        if varies:
            self.varying.update(outs)
        node = Node(prim, ins, dict(params), outs,
                    phase="backward" if records_open() else "forward", sized=sized)
        self.graph.nodes.append(node)
        constants = self.graph.constants
        from_sizes = self.dynamic and STATEFUL not in prim.effects and all(
            i in self._from_sizes or i in constants for i in ins)
        if from_sizes:
            self._from_sizes.update(outs)
        deciding = ins[-1:] if SHAPE_OPERAND in prim.effects else ins
        if DATA_SHAPE in prim.effects and not (self.dynamic and all(
                i in self._from_sizes or i in constants for i in deciding)):
            # Python may have read its shape (iterating a tf.range), and a graph's
            # executables are made for its shapes: a replay where the inputs' values give
            # another shape traces again. In a size-generic trace, a shape computed from
            # the sizes alone (tf.range(tf.shape(x)[0])) varies with them by design.
            where = user_line()
            self.graph.nodes.extend(Guard(s, "shape", np.shape(o._value), where)
                                    for s, o in zip(outs, outputs, strict=True))
        inert, constants = self._inert, self.graph.constants
        if NO_DERIVATIVE in prim.effects or (
                ins and all(i in inert or i in constants for i in ins)):
            inert.update(outs)
        elif CUSTOM_GRADIENT in prim.effects and not all(
                i in inert or i in constants for i in ins[:params["n_inputs"] + params["n_vars"]]):
            # Its grad_fn runs when its backward is traced, so only where a derivative can
            # reach it (TensorFlow calls it when the gradient is built, never if pruned).
            node.backward, ref_tensors = self._trace_backward(inputs, outputs, params)
            self.custom_grads.append((node, params, ref_tensors))

    def _trace_backward(self, inputs: Any, outputs: tuple, params: dict) -> tuple:
        """Trace a custom grad_fn on placeholder cotangents, seen by no other recorder:
        (its CustomBackward, the tensors of this trace that it reads)."""
        sub = Graph(name=f"{self.graph.name}_custom_grad")
        cts = [Tensor(np.zeros_like(o._value)) for o in outputs]
        tracer = Tracer(sub, cts, self.guards, outer=self)
        tracer.dynamic = self.dynamic
        n_in, n_vars = params["n_inputs"], params["n_vars"]
        # Tracing is no call: what the grad_fn prints, its replays print (scopes.py).
        tracer.sizing = self.sizing
        try:
            with substack(lambda r: False, extra=(tracer,)), quieted():
                grads = call_grad_fn(params["grad_fn"], cts, list(inputs[n_in:n_in + n_vars]),
                                     n_in)
            sub.outputs = [None if g is None else tracer.slot_of(g) for g in grads]
        finally:
            tracer.sizing = False
        optimize(sub)
        return CustomBackward(sub, tracer.refs, tracer.ref_values), tracer.ref_tensors

    def on_read(self, tensor: Any, how: str) -> None:
        slot = self._slots.get(tensor._key)
        if slot is None and isinstance(tensor, Variable):
            slot = self.slot_of(tensor)  # a captured variable: its value may change
        if slot is None or slot in self.graph.constants:
            return  # a constant's value is the same at every replay
        where = user_line()
        if self.guards == "error":
            raise TracingError(
                f"tapeflow.function: {how} reads a tensor's value while tracing, at {where}. "
                "A graph cannot branch on it (guards='error'); use tf.where / tf.maximum for "
                "data-dependent choices, or the default guards='retrace'.")
        kind = _READ_KINDS.get(how, "array")
        value = tensor._value
        if kind == "bool":
            expected: Any = bool(value)
        elif kind == "array":
            expected = np.array(value, copy=True)
        else:
            expected = value.item() if hasattr(value, "item") else value
        self.graph.nodes.append(Guard(slot, kind, expected, where))

    def python_shape(self, dims: tuple, tensor: Any) -> TensorShape:
        """The shape user code reads of `tensor` in a size-generic trace: one that notes in
        `size_reads` where a size that varies is read (NOTE(two-sizes) in
        graph/polymorphic.py). An input's varying sizes are its None dimensions (its fixed
        ones may be read freely); every size of a value computed from a varying input may
        vary, and in ways no two traces show (a strided slice has ceil(n / 2) rows, 2 at
        both n = 3 and n = 4 but 3 at n = 5). A value no varying input reaches (a
        constant, a variable) has sizes of its own."""
        slot = None if tensor is None or tensor._key is None else self._slots.get(tensor._key)
        if slot is None or slot not in self.varying:
            return TensorShape(dims)
        shape = ReadShape(dims)
        shape._reads = self.size_reads
        k = self.graph.inputs.index(slot) if slot in self.graph.inputs else None
        if k is not None and k < len(self.input_shapes) and \
                len(self.input_shapes[k]) == len(dims):
            shape._varying = frozenset(j for j, d in enumerate(self.input_shapes[k]) if d is None)
        else:
            shape._varying = frozenset(range(len(dims)))
        return shape

    def symbolic_name(self, tensor: Any) -> tuple | None:
        slot = self._slots.get(tensor._key)
        if slot is None or slot in self.graph.constants or slot in self.graph.var_slots:
            return None
        shape = TensorShape(np.shape(tensor._value))
        if slot in self.graph.inputs:
            k = self.graph.inputs.index(slot)
            if k < len(self.input_shapes):
                shape = self.input_shapes[k]
            return f"{self.input_names[k] if k < len(self.input_names) else f'input_{k}'}:0", shape
        for n in reversed(self.graph.nodes):
            if isinstance(n, Node) and slot in n.outputs:
                return f"{n.prim.name}:{n.outputs.index(slot)}", shape
        return None

    def on_create(self, var: Variable) -> None:
        self.created.append(var.name)

    def restore_variables(self) -> None:
        """Put back what this trace wrote: the variables' values before it ran."""
        for var, value in self.first_values.values():
            with var._lock:
                var._value = value

    def new_input(self, value: np.ndarray, shape: TensorShape) -> Tensor:
        """A tensor of `value` that enters the graph as an input of its own, made while
        tracing (a loop's element), whose sizes are symbols where `shape` has None: the
        trace becomes size-generic from here on (NOTE(symbolic-sizes))."""
        g = self.graph
        if len(self.input_shapes) != len(g.inputs):  # inputs vary where the trace said
            self.input_shapes = [TensorShape([None if s in self.varying else d
                                              for d in g.avals[s][0]]) for s in g.inputs]
        if not self.dynamic:
            self.dynamic = self.sizing = True
            if not self.__dict__.get("_counted"):
                with _COUNT_LOCK:
                    dynamic_traces[0] += 1
                self._counted = True
        t = Tensor(value)
        slot = g.new_slot(value)
        g.inputs.append(slot)
        self.input_shapes.append(shape)
        self._slots[key_of(t)] = slot
        self.made.append(weakref.ref(t))
        if None in shape:
            self.varying.add(slot)
        return t

    def on_write(self, var: Variable, value: Tensor) -> None:
        # Tracing runs for real, so the write happens too; the graph records it.
        self.first_values.setdefault(id(var), (var, var._value))
        var_slot = self.slot_of(var)
        self.graph.nodes.append(Assign(self.graph.var_slots[var_slot], self.slot_of(value)))
