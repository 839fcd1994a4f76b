"""ConcreteFunction: one traced graph of a function, and the executable that runs it.

A concrete function is one signature's (and one guard branch's) graph. Its calls run
through one executable (graph/executables.py: `plan` chooses which), so there is one
place that decides how a call runs; this module checks a direct call's arguments
against the graph and packs the results into the traced function's output structure.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import nest
from ..tensor import Tensor
from .device import array_of
from .executables import Executable, PerSize, plan
from .ir import Graph
from .polymorphic import generic_key
from .replay import Replay
from .signature import TensorSpec, rebuild, walk
from .xla import XlaReplay

__all__ = ["ConcreteFunction", "AnyRank"]


class ConcreteFunction:
    """One traced graph of a function (one signature, one branch of its guards).

    Callable with arguments of that signature; `.graph` prints, inspects
    (`get_operations()`, `.inputs`, `.outputs`) and draws (`.graph.to_dot()`);
    `.executable` runs its calls (graph/executables.py).
    """

    def __init__(self, graph: Graph, arg_template: tuple, pass_stats: dict,
                 jit_compile: bool = False, keep_on_device: bool = False,
                 all_sizes: tuple | None = None, other_sizes: tuple | None = None) -> None:
        """`all_sizes`, for a graph that serves every size of its signature's None
        dimensions (graph/polymorphic.py): (the specs, their generic key, the graph whose
        sizes are read when it runs, NOTE(sized-params)); `graph` then serves its traced
        sizes. `other_sizes`, for a graph traced for TensorSpecs: (the specs, a call of the
        function on tensor leaves) for sizes of the specs this graph does not serve (as
        TensorFlow's concrete function of a spec serves its every shape)."""
        self._specs, self._generic_key, generic = all_sizes or (None, None, None)
        self.executable: Executable = plan(graph, jit_compile=jit_compile,
                                           keep_on_device=keep_on_device, generic=generic)
        self.graph = graph if generic is None else generic
        self.pass_stats = pass_stats
        self._template = arg_template
        self._other_sizes = other_sizes

    def serve_all_sizes(self, other: "ConcreteFunction") -> None:
        """Serve every size from now on, as `other` (a later trace of the same signature at
        other sizes, found to serve them all) does: a concrete function the caller holds
        keeps its identity, as TensorFlow's one concrete function of a signature."""
        self.executable, self.graph = other.executable, other.graph
        self._specs, self._generic_key = other._specs, other._generic_key

    def runs_by(self) -> str:
        """How this graph's calls run, and why (`Function.experimental_execution_report`)."""
        return _runs_by(getattr(self.executable, "inner", self.executable))

    @property
    def serves_all_sizes(self) -> bool:
        """Whether this graph serves every size of its input_signature's None dimensions
        (NOTE(two-sizes) in graph/polymorphic.py), not only the sizes it was traced at."""
        return self._generic_key is not None

    @property
    def inputs(self) -> list[int]:
        return list(self.graph.inputs)

    @property
    def outputs(self) -> list:
        return list(self.graph.outputs)

    def _run(self, tensors: list) -> Any:
        return nest.pack_sequence_as(self.graph.output_structure, self.executable.run(tensors))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves: list = []
        key = walk((list(args), kwargs), leaves)
        if len(leaves) != len(self.graph.inputs):
            raise TypeError(f"ConcreteFunction {self.graph.name}: expected "
                            f"{len(self.graph.inputs)} tensor arguments, got {len(leaves)}.")
        # (a key of a function without an input_signature ends with its call's skeleton)
        sizes_served = self._generic_key is not None and self._generic_key[
            :len(leaves) + 1] == generic_key(
            self._specs, [np.shape(array_of(t)) for t in leaves],
            [array_of(t).dtype for t in leaves])
        flat = not kwargs and all(isinstance(a, (Tensor, np.ndarray, np.generic)) for a in args)
        for i, (t, s) in enumerate(zip(leaves, self.graph.inputs, strict=True)):
            shape, dtype = self.graph.avals[s]
            value = array_of(t)  # shape and dtype only: a DeviceTensor stays on its device
            if not sizes_served and (np.shape(value) != shape or value.dtype != dtype):
                specs, call = self._other_sizes or ((), None)
                if (key == self._template or flat) and len(specs) == len(leaves) and all(
                        spec.is_compatible_with(u) for spec, u in zip(specs, leaves)):
                    return call(leaves)
                raise TypeError(f"ConcreteFunction {self.graph.name}: tensor argument {i} has "
                                f"shape {np.shape(value)} and dtype {np.dtype(value.dtype)}; "
                                f"this graph was traced for shape {shape} and dtype "
                                f"{np.dtype(dtype)}.")
        if key != self._template and not flat:
            # Only the tensor arguments, in order, with the Python values baked in at
            # tracing (as TensorFlow's concrete functions take them), are accepted too.
            raise TypeError(f"ConcreteFunction {self.graph.name}: the non-tensor arguments (Python "
                            "values, structure, variables) differ from those it was traced with; "
                            "call the Function itself to trace them, or pass only the tensor "
                            "arguments.")
        return self._run(leaves)

    def __reduce__(self) -> Any:
        # Its replay is generated code over this process's arrays; the Function it came
        # from pickles, and traces again where it is loaded.
        raise TypeError(f"ConcreteFunction {self.graph.name}: a traced graph does not pickle; "
                        "pickle the tf.function it came from instead (it traces again on its "
                        "first call where it is loaded).")


class AnyRank:
    """The concrete function of TensorSpecs of unknown rank (`TensorSpec(None)`): as
    TensorFlow's, it serves tensors of every rank; tapeflow traces on values, so each rank
    is traced (every dimension None) on the first call of that rank.

    Example:
        >>> import tapeflow as tf
        >>> f = tf.function(lambda x: x * 2.0)
        >>> cf = f.get_concrete_function(tf.TensorSpec(None, tf.float32))
        >>> cf(tf.constant(1.0)).numpy(), cf(tf.ones([2, 3])).shape
        (np.float32(2.0), TensorShape([2, 3]))
    """

    def __init__(self, concrete: Callable[[tuple, dict], ConcreteFunction],
                 call: Callable[[tuple, dict], Any], args: tuple, kwargs: dict) -> None:
        self._concrete = concrete
        self._call = call
        self._args, self._kwargs = list(args), kwargs
        spec_of: dict[int, TensorSpec] = {}

        def placeholder(x: Any) -> Any:
            if not isinstance(x, TensorSpec):
                return x
            t = Tensor(np.ones([1] * (x.shape.rank or 0), x.dtype._np))
            spec_of[id(t)] = x
            return t

        self._placeholders = nest.map_structure(placeholder, (self._args, kwargs))
        leaves: list = []
        walk(self._placeholders, leaves)
        self.specs = [spec_of.get(id(t)) or TensorSpec(np.shape(t._value), t.dtype)
                      for t in leaves]

    def placeholders(self) -> tuple:
        """The arguments with a tensor of each spec's dtype (rank 0 if unknown) for each."""
        return self._placeholders

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        leaves: list = []
        walk((list(args), kwargs), leaves)
        if len(leaves) != len(self.specs):
            raise TypeError(f"ConcreteFunction: expected {len(self.specs)} tensor arguments, "
                            f"got {len(leaves)}.")
        ranked = []
        for i, (spec, t) in enumerate(zip(self.specs, leaves, strict=True)):
            if not spec.is_compatible_with(t):
                raise TypeError(f"ConcreteFunction: tensor argument {i} has shape "
                                f"{tuple(t.shape)} and dtype {t.dtype.name}, which does not "
                                f"match {spec}.")
            ranked.append(TensorSpec([None] * t.shape.rank, spec.dtype)
                          if spec.shape.rank is None else spec)
        self._ranks = ranked
        # the function itself (its Python values baked in), whose calls of these specs'
        # skeleton are served by one trace per rank
        args, kwargs = rebuild(self._placeholders, leaves, [0])
        return self._call(tuple(args), kwargs)

    @property
    def graph(self) -> Graph:
        """The graph of the latest rank called (rank 1 before any call)."""
        ranked = getattr(self, "_ranks", None) or [
            TensorSpec([None] * (s.shape.rank if s.shape.rank is not None else 1), s.dtype)
            if s.shape.rank is None or None in s.shape else s for s in self.specs]
        args, kwargs = rebuild(self._placeholders, ranked, [0])
        return self._concrete(tuple(args), kwargs).graph


def _runs_by(executable: Executable) -> str:
    if hasattr(executable, "report"):
        return executable.report()
    if isinstance(executable, XlaReplay):
        return "XLA" if executable.compiled else "the NumPy replay (a primitive cannot compile)"
    if isinstance(executable, Replay):
        return "the NumPy replay"
    if isinstance(executable, PerSize):
        return "; ".join(f"at {list(shapes)}: {_runs_by(e)}"
                         for shapes, e in executable._sized.items())
    return type(executable).__name__
