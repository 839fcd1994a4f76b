"""ConcreteFunction: one traced graph of a function, and the executable that runs it.

A concrete function is one signature's (and one guard branch's) graph. Its calls run
through one executable (graph/executables.py: `plan` chooses which), so there is one
place that decides how a call runs; this module checks a direct call's arguments
against the graph and packs the results into the traced function's output structure.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import nest
from ..tensor import Tensor
from .device import array_of
from .executables import Executable, plan
from .ir import Graph
from .polymorphic import generic_key
from .signature import walk

__all__ = ["ConcreteFunction"]


class ConcreteFunction:
    """One traced graph of a function (one signature, one branch of its guards).

    Callable with arguments of that signature; `.graph` prints, inspects
    (`get_operations()`, `.inputs`, `.outputs`) and draws (`.graph.to_dot()`);
    `.executable` runs its calls (graph/executables.py).
    """

    def __init__(self, graph: Graph, arg_template: tuple, pass_stats: dict,
                 jit_compile: bool = False, keep_on_device: bool = False,
                 all_sizes: tuple | None = None) -> None:
        """`all_sizes`, for a graph that serves every size of its signature's None
        dimensions (graph/polymorphic.py): (the specs, their generic key, the graph whose
        sizes are read when it runs, NOTE(sized-params)); `graph` then serves its traced
        sizes."""
        self._specs, self._generic_key, generic = all_sizes or (None, None, None)
        self.executable: Executable = plan(graph, jit_compile=jit_compile,
                                           keep_on_device=keep_on_device, generic=generic)
        self.graph = graph if generic is None else generic
        self.pass_stats = pass_stats
        self._template = arg_template

    @property
    def serves_all_sizes(self) -> bool:
        """Whether this graph serves every size of its input_signature's None dimensions
        (NOTE(probe) in graph/polymorphic.py), not only the sizes it was traced at."""
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
        sizes_served = self._generic_key is not None and self._generic_key == generic_key(
            self._specs, [np.shape(array_of(t)) for t in leaves],
            [array_of(t).dtype for t in leaves])
        for i, (t, s) in enumerate(zip(leaves, self.graph.inputs, strict=True)):
            shape, dtype = self.graph.avals[s]
            value = array_of(t)  # shape and dtype only: a DeviceTensor stays on its device
            if not sizes_served and (np.shape(value) != shape or value.dtype != dtype):
                raise TypeError(f"ConcreteFunction {self.graph.name}: tensor argument {i} has "
                                f"shape {np.shape(value)} and dtype {np.dtype(value.dtype)}; "
                                f"this graph was traced for shape {shape} and dtype "
                                f"{np.dtype(dtype)}.")
        flat = not kwargs and all(isinstance(a, (Tensor, np.ndarray, np.generic)) for a in args)
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
