"""tapeflow.function: trace a Python function once per signature, replay the graph after.

This module is the function, its cache of traces and its retracing policy; a trace's
graph and the executable that runs it are a ConcreteFunction's (graph/concrete.py,
graph/executables.py), a call's signature graph/signature.py's.

The first call with a new signature (tensor shapes and dtypes, Python argument
values, structure) runs the function under a Tracer and keeps the graph;
later calls replay it without running the Python body. Tapes, accumulators,
vmap and the transforms used inside are traced too, so a Jacobian computed
inside is re-evaluated at new inputs by replay alone: the seed question's
"record once, evaluate many times".

An input_signature's None dimensions: the traces at the first two sizes serve every size
where their graphs do not depend on them (graph/polymorphic.py); `ConcreteFunction` then
keeps a replay per set of sizes, made on the first call at those sizes without running the
Python body again.

Guards (NOTE(value-reads) in graph/trace.py): a replay whose guard reads a new
value is abandoned and the function is traced again for that branch; the new
graph is cached beside the first, so results always equal running the Python
code eagerly.
"""

from __future__ import annotations

import collections
import gc
import functools
import sys
import threading
import warnings
from typing import Any, Callable, Sequence

import numpy as np

from .. import config as _config
from .. import nest
from ..core import bind
from ..ops.shape import identity_p
from ..tensor import Tensor, TensorBase, TensorShape, Variable, convert_to_tensor
from .concrete import AnyRank, ConcreteFunction
from .dataset_loops import LoopedFunction, held_weakly, loop_off, probing, strong
from .device import array_of
from .ir import Graph, Guard
from .lean import MISS as _MISS
from .passes import optimize
from .polymorphic import class_sizes, generalize, generic_key, same_branch
from ..scopes import held_output, quieted
from .replay import GuardFailed, replayed_grad_fn
from .scope import seal
from .signature import (TensorSpec, argument_names, call_template, output_leaf,
                        positional_keys, rebuild, fits, relaxed_shapes, skeleton, tensor_key,
                        walk)
from .trace import RunEagerly, Tracer, TracingError
from .xla import require_jax

__all__ = ["function", "Function", "ConcreteFunction", "TensorSpec", "TracingError"]

MAX_SIGNATURES = 64        # traced signatures kept per function (least recently used dropped)
MAX_BRANCHES = 16          # guarded graphs kept per signature
_PLACEHOLDER_SIZE = 8      # get_concrete_function(TensorSpec): the size of a None dimension
RETRACE_WARN_AFTER = 5     # traces of one function before the retracing warning


class Function:
    """A Python function traced into graphs on demand; see `function`."""

    def __init__(self, fn: Callable, input_signature: Sequence[TensorSpec] | None = None,
                 reduce_retracing: bool = False, jit_compile: Any = None,
                 guards: str = "retrace", keep_on_device: bool = False) -> None:
        if guards not in ("retrace", "error"):
            raise ValueError(f"function: guards must be 'retrace' or 'error'; got {guards!r}.")
        _check_keep_on_device(jit_compile, keep_on_device)
        if input_signature is not None and not isinstance(input_signature, (list, tuple)):
            raise TypeError(f"function: `input_signature` must be a list or tuple of "
                            f"TensorSpec, one per argument; got {input_signature!r} (wrap a "
                            "single TensorSpec in a list).")
        if isinstance(jit_compile, str) and jit_compile != "auto":
            raise ValueError(f"function: jit_compile must be True, False, None or 'auto'; got "
                             f"{jit_compile!r}.")
        if jit_compile and jit_compile != "auto":
            require_jax()  # the extra, named now rather than at the first call
        self._fn = fn
        self._jit_compile = "auto" if jit_compile == "auto" else bool(jit_compile)
        self._keep_on_device = bool(keep_on_device)
        self._input_signature = None if input_signature is None else list(input_signature)
        self._reduce_retracing = bool(reduce_retracing)
        # Without an input_signature: (skeleton of a call key, TensorSpecs) of each trace
        # made for TensorSpecs (get_concrete_function, or a shape relaxed by
        # reduce_retracing), which later calls of that skeleton and matching shapes reuse,
        # as TensorFlow's do; and the specs of each generic key they give.
        self._spec_traces: list[tuple[Any, list]] = []
        self._generic_specs: dict[tuple, list] = {}
        self._guards = guards
        self._cache: collections.OrderedDict = collections.OrderedDict()
        # generic key -> its latest trace, to compare with the next at other sizes
        # (NOTE(two-sizes) in graph/polymorphic.py)
        self._waiting: dict[tuple, list] = {}  # -> [(graph, its concrete function)]
        # generic key -> why its graphs depend on the sizes (each size is traced on its own)
        self._per_size: dict[tuple, str] = {}
        self._lock = threading.RLock()
        self._lean: Callable[[tuple], Any] | None = None  # NOTE(lean-call)
        self._lean_tried: Any = None
        self._leans: dict[Any, Callable[[tuple], Any]] = {}  # signature -> its lean call
        self._trace_count = 0
        self._eager: str | None = None  # why the body runs eagerly (RunEagerly), if it does
        self._retrace_reasons: collections.Counter = collections.Counter()  # reason -> traces
        functools.update_wrapper(self, fn)
        if not hasattr(self, "__name__"):  # a callable object (a Keras model) has none
            self.__name__ = getattr(fn, "name", None) or type(fn).__name__

    # ------------------------------------------------------------------ calling
    def _key(self, args: tuple, kwargs: dict, bound: tuple = ()) -> tuple[Any, list, tuple]:
        """The cache key, the tensor leaves and the arguments (converted to the
        input_signature's tensors); `bound` (a method's instance) goes first, unchecked."""
        if self._input_signature is not None:
            args = self._check_signature(args, kwargs)
        elif not kwargs and not bound and all(type(a) is Tensor for a in args):
            # The common call, tensors only: `walk`'s key without its recursion.
            return ("tuple", ("list",) + tuple(tensor_key(a) for a in args), ("dict",)), \
                list(args), args
        args = bound + tuple(args)
        leaves: list = []
        key = walk((list(args), kwargs), leaves)
        return key, leaves, args

    def _generic_key(self, leaves: list, key: Any = None) -> tuple | None:
        """The key under which one graph serves every size of the signature's None
        dimensions (NOTE(two-sizes) in graph/polymorphic.py), or of the TensorSpecs of an
        earlier trace whose skeleton `key` has; None without such dimensions."""
        specs = self._input_signature
        if specs is None:
            if not self._spec_traces or key is None or key in self._cache:
                return None
            skel = skeleton(key)
            for s, specs in reversed(self._spec_traces):
                if fits(s, skel) and all(spec.is_compatible_with(t)
                                         for spec, t in zip(specs, leaves, strict=True)):
                    specs = [TensorSpec([None] * np.ndim(array_of(t)), spec.dtype)
                             if spec.shape.rank is None else spec
                             for spec, t in zip(specs, leaves, strict=True)]
                    break
            else:
                return None
        elif len(leaves) != len(specs):
            return None
        arrays = [array_of(t) for t in leaves]
        generic = generic_key(specs, [np.shape(a) for a in arrays], [a.dtype for a in arrays])
        if generic is not None:
            generic += self._served_by(key)
            if self._input_signature is None:
                self._generic_specs[generic] = specs
        return generic

    def _served_by(self, key: Any) -> tuple:
        """What of a call besides its tensors a size-generic trace serves: its Python values
        and structure (its skeleton); with an input_signature, whose arguments are tensors,
        only a method's instance (the first argument beyond the signature's). Two modules'
        method shares no graph: each captures its own variables."""
        if self._input_signature is None:
            return (skeleton(key),)
        positional = key[1]
        return (positional[1],) if len(positional) - 1 > len(self._input_signature) else ()

    def _add_spec_trace(self, key: Any, specs: list) -> None:
        entry = (skeleton(key, frozenset(k for k, spec in enumerate(specs)
                                         if spec.shape.rank is None)), specs)
        if entry not in self._spec_traces:
            self._spec_traces.append(entry)
            del self._spec_traces[:-MAX_SIGNATURES]

    def _relaxed_key(self, key: Any, leaves: list) -> tuple | None:
        """reduce_retracing: the generic key of specs with None wherever this call's shapes
        differ from those of the latest trace of its skeleton (as TensorFlow relaxes)."""
        for k in reversed(self._cache):
            shapes = None if k[0] == "generic" else relaxed_shapes(k, key)
            if shapes is not None and any(None in s for s in shapes):
                self._add_spec_trace(key, [TensorSpec(s, t.dtype)
                                           for s, t in zip(shapes, leaves, strict=True)])
                return self._generic_key(leaves, key)
        return None

    def _check_signature(self, args: tuple, kwargs: dict) -> tuple:
        specs = self._input_signature
        if kwargs or len(args) != len(specs):
            raise TypeError(f"{self.__name__}: called with {len(args)} positional and "
                            f"{len(kwargs)} keyword arguments; its input_signature has "
                            f"{len(specs)} TensorSpecs.")
        out = []
        for i, (a, spec) in enumerate(zip(args, specs, strict=True)):
            t = a.value() if isinstance(a, Variable) else a
            if not isinstance(t, TensorBase):
                t = convert_to_tensor(t, dtype=spec.dtype)
            if not spec.is_compatible_with(t):
                raise TypeError(f"{self.__name__}: argument {i} has shape "
                                f"{tuple(np.shape(t._value))} and dtype {t.dtype.name}, which "
                                f"does not match input_signature[{i}] = {spec}.")
            out.append(t)
        return tuple(out)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        lean = self._lean
        if lean is not None and not kwargs:
            result = lean(args)  # checks the rest of its conditions itself
            if result is not _MISS:
                return result
        return self._call(args, kwargs)

    def _call(self, args: tuple, kwargs: dict, bound: tuple = ()) -> Any:
        if _config.functions_run_eagerly() or self._eager or probing():
            # tf.config.run_functions_eagerly(True), a body no graph can be (RunEagerly), or
            # a call in the steps of a loop an outer trace probes (NOTE(dataset-loops))
            return self._fn(*bound, *args, **kwargs)
        key, leaves, args = self._key(args, kwargs, bound)
        generic = self._generic_key(leaves, key)
        done, result, failed = self._replay(key, generic, leaves)
        if done:
            if not bound and key != self._lean_tried:
                # The lean call follows the signature of the latest call on this path,
                # each signature's made once (a loop alternating two signatures switches
                # between theirs at each call); one that has none is asked again
                self._lean_tried = key
                lean = self._leans.get(key)
                if lean is None:
                    lean = self._lean_of(key)
                    if lean is not None:
                        self._leans[key] = lean
                self._lean = lean or self._lean
            return result
        with self._lock:
            # Another thread may have traced this signature (or branch) meanwhile.
            done, result, again = self._replay(key, generic, leaves)
            if done:
                return result
            if generic is None and self._reduce_retracing and self._input_signature is None:
                generic = self._relaxed_key(key, leaves)
            try:
                return self._trace(key, leaves, args, kwargs, again or failed, generic,
                                   bound=bound)
            except RunEagerly as e:
                self._eager = str(e)
                warnings.warn(f"tapeflow.function {self.__name__!r} runs its Python eagerly at "
                              f"each call: {e}.", stacklevel=3)
                return self._fn(*bound, *args, **kwargs)

    def _lean_of(self, key: Any) -> Callable[[tuple], Any] | None:
        """The lean call of a call signature `key` (NOTE(lean-call)): its executable's, where
        one graph serves it (no input_signature to check, no guard branches) and its
        positional arguments are tensors or lists and tuples of them; else None."""
        branches = self._cache.get(key, ())
        if self._input_signature is not None or len(branches) != 1:
            return None
        arg_keys = positional_keys(key)
        return None if arg_keys is None else branches[0].executable.lean(arg_keys)

    def _replay(self, key: Any, generic: tuple | None,
                leaves: list) -> tuple[bool, Any, Guard | None]:
        """Try the cached graphs of this signature, newest first, then those that serve
        every size of it."""
        failed = None
        for k in (key, generic):
            for cf in reversed(self._cache.get(k, ()) if k is not None else ()):
                # What the replay prints is held until its guards have passed: one that a
                # guard abandons printed nothing (scopes.py), as it wrote no variable.
                with held_output() as held:
                    try:
                        return True, cf._run(leaves), None
                    except GuardFailed as e:
                        held.discard()
                        failed = e.guard
        return False, None, failed

    def _trace(self, key: Any, leaves: list, args: tuple, kwargs: dict,
               failed: Guard | None, generic: tuple | None = None,
               specs: list | None = None, bound: tuple = ()) -> Any:
        graph = Graph(name=getattr(self._fn, "__name__", "fn"))
        # Each tensor argument enters the trace as a tensor of its own, made by an identity
        # op that recorders outside the trace see: the same tensor passed twice, or passed
        # and also captured by the function, must not become one graph input.
        inputs = [bind(identity_p, t) for t in leaves]
        tracer = Tracer(graph, inputs, self._guards)
        tracer.dynamic = generic is not None  # NOTE(dynamic-shapes) in ops/structural.py
        tracer.input_names = argument_names(self._fn, args, kwargs, len(leaves))
        if specs is None:
            specs = self._input_signature if generic is None or self._input_signature else \
                self._generic_specs.get(generic)
        if specs is not None and len(specs) == len(leaves):
            tracer.input_shapes = [
                TensorShape([None if d is None or spec.shape[k] is None else d
                             for k, d in enumerate(np.shape(t._value))])
                if spec.shape.rank is not None else TensorShape([None] * np.ndim(t._value))
                for spec, t in zip(specs, leaves)]
        if tracer.dynamic:  # the inputs whose sizes vary (all, without specs to say which)
            tracer.varying = {s for s, shape in zip(graph.inputs, tracer.input_shapes)
                              if None in shape} if tracer.input_shapes else set(graph.inputs)
        pos = [0]
        call_args, call_kwargs = rebuild((list(args), kwargs), inputs, pos)
        # A trace allocates a few objects per op and frees none until it ends: the cyclic
        # collector would scan the growing graph again and again (quadratic in its size).
        collecting = gc.isenabled()
        gc.disable()
        try:
            with tracer:
                try:
                    result = self._fn(*call_args, **call_kwargs)
                except Exception:
                    if tracer.loop is not None:
                        tracer.loop.failed()  # NOTE(dataset-loops)
                    raise
                flat = [output_leaf(o, i) for i, o in enumerate(nest.flatten(result))]
            if tracer.created and self._trace_count:
                # The first trace's variables are captured by every graph of the function;
                # one made by a later trace would be a second variable where the code means
                # one.
                raise ValueError(f"tapeflow.function {self.__name__!r} made the variables "
                                 f"{tracer.created} while tracing again (not its first call): "
                                 "a traced function only supports variables made on its first "
                                 "call, as TensorFlow. Make them once, outside the function or "
                                 "on the first call only.")
            graph.outputs = [None if o is None else tracer.slot_of(o) for o in flat]
            if tracer.loop is not None:  # NOTE(dataset-loops): the trace's result is not kept
                looped = self._looped(tracer, key, result, (list(args), kwargs))
            # The caller gets tensors of its own (identity ops that recorders around the
            # call see), so every tensor the trace made can go out of scope.
            outs = [None if o is None else bind(identity_p, o) for o in flat]
            graph.output_structure = result
            stats = optimize(graph)
            # The recorders outside saw this call's custom gradients: they differentiate
            # them by the traced backward, as a replay's would (the grad_fn ran once, to
            # trace it)
            for node, params, refs in tracer.custom_grads:
                params["grad_fn"] = replayed_grad_fn(node, dict(zip(node.backward.refs, refs)))
        finally:
            # NOTE(out-of-scope) in tensor.py: the living ones (a dead one cannot leak)
            seal([t for t in (r() for r in tracer.made) if t is not None], self.__name__)
            if collecting:
                gc.enable()
        if tracer.loop is not None:
            return looped._run(leaves)
        per_size = None if generic is None else self._per_size.get(generic)
        general, first_cf = (None, None) if generic is None else \
            self._serves_all_sizes(generic, graph, tracer)
        def call(new_leaves: list) -> Any:  # the function at other sizes of `specs`
            a, k = rebuild((list(args), kwargs), new_leaves, [0])
            return self._call(tuple(a[len(bound):]), k, bound)

        cf = ConcreteFunction(graph, key, stats, self._jit_compile, self._keep_on_device,
                              None if general is None else (specs, generic, general),
                              None if specs is None else (specs, call))
        if general is not None:
            key = generic
            if first_cf is not None:
                first_cf.serve_all_sizes(cf)  # the first size's concrete function, for all
                cf = first_cf
        elif generic is not None and generic not in self._per_size:
            waiting = self._waiting.setdefault(generic, [])
            waiting.append((graph, cf))
            del waiting[:-MAX_BRANCHES]
        self._keep(key, cf)
        self._count_trace(failed, per_size)
        return nest.pack_sequence_as(result, outs)

    def _keep(self, key: Any, cf: Any) -> None:
        """Cache a new graph of signature `key`: the lean calls are made again."""
        self._lean = self._lean_tried = None
        self._leans = {}
        branches = self._cache.setdefault(key, [])
        branches.append(cf)
        del branches[:-MAX_BRANCHES]
        self._cache.move_to_end(key)
        while len(self._cache) > MAX_SIGNATURES:
            self._cache.popitem(last=False)

    def _looped(self, tracer: Tracer, key: Any, result: Any, call: tuple) -> LoopedFunction:
        """A trace that probed a loop over a dataset (NOTE(dataset-loops)): its prologue,
        body and epilogue, cached as the signature's graph (the caller runs it)."""
        tracer.restore_variables()  # the probed steps ran for real
        cut = loop_off(tracer.graph, tracer.loop)

        def concrete(graph: Graph, all_sizes: bool) -> ConcreteFunction:
            return ConcreteFunction(graph, key, {}, self._jit_compile, self._keep_on_device,
                                    (None, ("loop",), graph) if all_sizes else None)

        call = held_weakly(call, tracer.loop.dataset())  # the cache keeps no dataset alive

        def eager(new_leaves: list) -> Any:
            a, k = strong(rebuild(call, new_leaves, [0]))
            return self._fn(*a, **k)

        looped = LoopedFunction(cut, tracer.loop, concrete, eager, result)
        self._keep(key, looped)
        self._count_trace(None)
        return looped

    def _serves_all_sizes(self, generic: tuple, graph: Graph,
                          tracer: Tracer) -> tuple[Graph | None, Any]:
        """(the graph that serves every size of a new trace's signature, the concrete
        function of the signature's first trace), or (None, None) (NOTE(two-sizes) in
        graph/polymorphic.py). The first trace of a signature waits in `_waiting` for the
        next at other sizes; where the two show a dependence on the sizes, the reason is
        kept (for the retracing warning) and every size traces alone."""
        if generic in self._per_size:
            return None, None
        if tracer.size_reads:
            self._per_size[generic] = ("Python reads a size of a None dimension at "
                                       f"{tracer.size_reads[0]}")
            self._waiting.pop(generic, None)
            return None, None
        sizes = class_sizes(generic, graph)
        waiting = self._waiting.get(generic, [])
        for k in range(len(waiting) - 1, -1, -1):
            first, first_cf = waiting[k]
            if same_branch(graph, first) and all(
                    sizes[c] != n for c, n in class_sizes(generic, first).items()):
                break
        else:
            # Nothing yet to compare with: the same sizes again (a guard's retrace), a
            # size the same as every earlier trace's in some class (a batch that varies
            # while a length stays), or another branch. This trace waits for one of its
            # branch that differs in every class.
            return None, None
        del waiting[k]
        general, why = generalize(graph, first)
        if why is not None:
            self._per_size[generic] = why
            self._waiting.pop(generic, None)
        return general, first_cf

    def _count_trace(self, failed: Guard | None, per_size: str | None = None) -> None:
        self._trace_count += 1
        if failed is not None and failed.how == "size":
            reason = (f"sizes that decide otherwise at {failed.where} (a size check failed: "
                      "NOTE(symbolic-sizes))")
        elif failed is not None:
            reason = f"the value read at {failed.where} changed (a guard failed)"
        elif per_size is not None:
            reason = ("a new size of an input_signature's None dimension, which this function's "
                      f"graph depends on: {per_size}")
        else:
            reason = "a new input signature (tensor shapes/dtypes or Python argument values)"
        self._retrace_reasons[reason] += 1  # a count per distinct reason: bounded
        if self._trace_count == RETRACE_WARN_AFTER + 1 or (
                self._trace_count > RETRACE_WARN_AFTER and self._trace_count % 50 == 0):
            common = self._retrace_reasons.most_common(1)[0][0]
            warnings.warn(f"tapeflow.function {self.__name__!r} has been traced "
                          f"{self._trace_count} times, most often because of {common}. Frequent "
                          "retracing is slow: pass tensors instead of Python numbers, keep shapes "
                          "fixed, and replace Python branches on tensor values with tf.where.",
                          stacklevel=4)

    def __reduce__(self) -> Any:
        # A module's function (a decorated def) pickles by name, as Python functions do: the
        # loading process imports it (a Dask worker traces its own). Any other pickles what
        # defines it and none of its traces (generated code over this process's arrays,
        # guards on its values), so the copy traces again on its first call.
        module = sys.modules.get(getattr(self, "__module__", None) or "")
        qualname = getattr(self, "__qualname__", "")
        if module is not None and module.__name__ != "__main__" and \
                _attribute(module, qualname) is self:
            return qualname
        return (Function, (self._fn, self._input_signature, False, self._jit_compile or None,
                           self._guards, self._keep_on_device))

    # ------------------------------------------------------------------ TensorFlow's extras
    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        return self._concrete(args, kwargs)

    def _concrete(self, args: tuple, kwargs: dict, bound: tuple = ()) -> ConcreteFunction:
        """The traced graph for these arguments (tracing them if needed). TensorSpecs may
        stand for tensor arguments, as in TensorFlow (and a function with an
        input_signature needs no arguments): the graph is traced on placeholder values
        (ones, of size 8 along None dimensions) and serves every matching shape where it
        can (NOTE(two-sizes) in graph/polymorphic.py)."""
        if not args and not kwargs and self._input_signature is not None:
            args = tuple(self._input_signature)
        if any(isinstance(a, TensorSpec) for a in nest.flatten([list(args), kwargs])):
            return self._concrete_for_specs(args, kwargs, bound)
        key, leaves, args = self._key(args, kwargs, bound)
        if key not in self._cache:
            generic = self._generic_key(leaves, key)
            if generic in self._cache:
                return self._cache[generic][-1]
            with quieted():  # a trace that is no call prints nothing, as TensorFlow
                self._call(args[len(bound):], kwargs, bound)
            if key not in self._cache:
                return self._cache[generic][-1]
        return self._cache[key][-1]

    def _concrete_for_specs(self, args: tuple, kwargs: dict, bound: tuple,
                            size: int = _PLACEHOLDER_SIZE) -> Any:
        if any(isinstance(a, TensorSpec) and a.shape.rank is None
               for a in nest.flatten([list(args), kwargs])):
            # A graph per rank, each traced on the first call of that rank (tapeflow traces
            # on values); the function's own calls of any rank reuse them too.
            any_rank = AnyRank(lambda a, k: self._concrete_for_specs(a, k, bound),
                               lambda a, k: self._call(a, k, bound), args, kwargs)
            leaves: list = []
            key = walk(any_rank.placeholders(), leaves)
            self._add_spec_trace(key, any_rank.specs)
            return any_rank
        spec_of: dict[int, TensorSpec] = {}

        def placeholder(x: Any) -> Any:
            if not isinstance(x, TensorSpec):
                return x
            t = Tensor(np.ones([size if d is None else d for d in x.shape], x.dtype._np))
            spec_of[id(t)] = x
            return t

        args, kwargs = nest.map_structure(placeholder, (list(args), kwargs))
        if self._input_signature is not None:
            args = self._check_signature(tuple(args), kwargs)
        args = bound + tuple(args)
        leaves: list = []
        key = walk((list(args), kwargs), leaves)
        specs = [spec_of.get(id(t)) or TensorSpec(np.shape(t._value), t.dtype) for t in leaves]
        generic = generic_key(specs, [np.shape(t._value) for t in leaves],
                              [t._value.dtype for t in leaves])
        if generic is not None:
            generic += self._served_by(key)  # (as in `_generic_key`)
            if self._input_signature is None:
                self._generic_specs[generic] = specs
                self._add_spec_trace(key, specs)
        for k in (generic, key):
            if k is not None and k in self._cache:
                return self._cache[k][-1]
        with self._lock, quieted():  # a trace that is no call prints nothing, as TensorFlow
            try:
                self._trace(key, leaves, tuple(args), kwargs, None, generic, specs, bound)
            except Exception as e:
                raise type(e)(f"{e} (tapeflow traces on values: get_concrete_function traced "
                              "with ones as placeholders for the TensorSpecs; pass example "
                              "tensors instead)") from e
        return self._cache[generic][-1] if generic in self._cache else self._cache[key][-1]

    def _traces_of(self, instance: Any = None) -> list[ConcreteFunction]:
        """The concrete functions a SavedModel saves (a method's: those of `instance`),
        oldest first; each one once (a graph serving every size is cached under one key)."""
        out: list = []
        for branches in self._cache.values():
            for cf in branches:
                if not isinstance(cf, ConcreteFunction):
                    raise ValueError(
                        f"tf.saved_model.save: tapeflow.function {self.__name__!r} loops over a "
                        "tf.data.Dataset in its trace, a loop that runs in Python over the "
                        "dataset's elements (NOTE(dataset-loops)) and does not save. Save a "
                        "function of one step, and loop over the dataset around it.")
                if cf not in out and (instance is None or call_template(
                        cf._template, [None] * len(cf.graph.inputs), instance) is not None):
                    out.append(cf)
        return out

    def _trace_signature(self, instance: Any = None) -> None:
        """Before a save, the input_signature traced as TensorFlow traces it to save: where
        it has None dimensions, at two sizes (8, then 5), so the graph serves every size
        where it can (NOTE(two-sizes) in graph/polymorphic.py), and at size 1 (a size of
        its own: broadcasting), if the function runs there."""
        specs = self._input_signature
        if specs is None:
            return
        bound = () if instance is None else (instance,)
        self._concrete_for_specs(tuple(specs), {}, bound)
        if any(None in spec.shape for spec in specs if spec.shape.rank is not None):
            self._concrete_for_specs(tuple(specs), {}, bound, size=5)
            try:
                self._concrete_for_specs(tuple(specs), {}, bound, size=1)
            except Exception:  # noqa: BLE001 - a function that needs more than one row
                pass

    def experimental_execution_report(self) -> list[str]:
        """How each traced graph's calls run, and why: one line per graph, its inputs'
        shapes and dtypes, then the way (XLA, the NumPy replay, the replay of its loops
        rolled: NOTE(fastest) in graph/executables.py) and what chose it.

        Example:
            >>> import tapeflow as tf
            >>> f = tf.function(lambda x: x * 2.0)
            >>> _ = f(tf.constant([1.0]))  # traced
            >>> _ = f(tf.constant([2.0]))  # replayed
            >>> f.experimental_execution_report()
            ['<lambda>(float32[1]): the NumPy replay']
        """
        lines = []
        for cf in self._traces_of():
            shapes = ", ".join(cf.graph._type(s) for s in cf.graph.inputs)
            lines.append(f"{self.__name__}({shapes}): {cf.runs_by()}")
        return lines

    def experimental_get_tracing_count(self) -> int:
        return self._trace_count

    @property
    def python_function(self) -> Callable:
        return self._fn

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        # A method: the instance is the first argument (keyed by identity), before the
        # arguments an input_signature describes.
        return _Method(self, instance)


class _Method:
    """A traced function bound to an instance: called, it passes the instance first."""

    __slots__ = ("_function", "_instance")

    def __init__(self, function: Function, instance: Any) -> None:
        self._function = function
        self._instance = instance

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._function._call(args, kwargs, (self._instance,))

    def get_concrete_function(self, *args: Any, **kwargs: Any) -> ConcreteFunction:
        return self._function._concrete(args, kwargs, (self._instance,))

    def __getattr__(self, name: str) -> Any:  # experimental_get_tracing_count, ...
        return getattr(self._function, name)


def _attribute(obj: Any, dotted: str) -> Any:
    """obj.a.b for dotted = "a.b"; None where there is no such attribute."""
    for name in dotted.split("."):
        obj = getattr(obj, name, None)
    return obj


def _check_keep_on_device(jit_compile: Any, keep_on_device: bool) -> None:
    if keep_on_device and (not jit_compile or jit_compile == "auto"):
        raise ValueError("function: keep_on_device=True keeps the results of XLA-compiled calls "
                         "on the device, so it needs jit_compile=True; got jit_compile="
                         f"{jit_compile!r}. Pass jit_compile=True too, or drop keep_on_device.")


def function(fn: Callable | None = None, *, input_signature: Sequence[TensorSpec] | None = None,
             reduce_retracing: bool = False, jit_compile: Any = None,
             guards: str = "retrace", keep_on_device: bool = False) -> Any:
    """Trace `fn` once per input signature into a graph and replay it on later calls.

    Usable as ``@function`` or ``@function(...)``, on functions and methods.
    Tensor (and NumPy) arguments are graph inputs; Python values are part of the
    signature; variables are captured by reference (each call reads their
    current value; assignments take effect in order). Derivatives computed
    inside (tapes, accumulators, vmap, the transforms) are part of the graph.
    A Python read of a tensor value while tracing becomes a guard: a call that
    takes another branch is traced again (or, with ``guards="error"``, the read
    raises). An `input_signature` with None dimensions validates calls, and the traces at
    the first two sizes serve every size of them where their graphs hold nothing computed
    from the sizes (the two compared, NOTE(two-sizes) in graph/polymorphic.py;
    tf.shape, reshape's -1, means and gradients read the sizes when the graph runs);
    where it does (Python reading ``x.shape[0]``, a full Jacobian over a None dimension),
    each size gets its own trace, and the retracing warning says why.
    ``jit_compile="auto"`` runs each graph's first calls both ways, compiled and replayed
    with NumPy, and its later calls the faster way (`experimental_execution_report`
    says which, and why); without JAX it replays with NumPy.
    ``jit_compile=True`` compiles each traced graph with XLA through JAX (the `xla` extra;
    graph/xla.py), a Python loop's repeated steps (and its gradient's) rolled back into
    one loop op first, so the compile grows with the loop's body, not its trip count
    (NOTE(reroll) in graph/reroll.py); with ``keep_on_device=True`` too, its compiled
    calls return `DeviceTensor`s, whose values stay JAX device arrays (copied to the host
    only when read, and passed to other compiled functions as they are: chained compiled
    functions skip the host round trip). With `reduce_retracing`, a call at new sizes of an earlier call's
    shapes traces once for those shapes with None where the sizes differ, and later sizes
    reuse that trace where it serves every size (as an input_signature's would), as
    TensorFlow relaxes shapes; `get_concrete_function` of TensorSpecs (any rank, with
    `TensorSpec(None)`) makes traces the function's own matching calls reuse. It pickles as a
    Python function does: by name where it is a module's, otherwise (with cloudpickle) with
    its Python function and none of its traces, tracing again where it is loaded.

    Example:
        >>> import tapeflow as tf
        >>> @tf.function
        ... def jac(x):
        ...     with tf.GradientTape() as tape:
        ...         tape.watch(x)
        ...         y = x * x
        ...     return tape.jacobian(y, x)
        >>> jac(tf.constant([1., 2.])).numpy()
        array([[2., 0.],
               [0., 4.]], dtype=float32)
        >>> jac(tf.constant([3., 4.])).numpy()   # replayed, not traced again
        array([[6., 0.],
               [0., 8.]], dtype=float32)
    """
    _check_keep_on_device(jit_compile, keep_on_device)  # the decorator form raises at once

    def wrap(f: Callable) -> Function:
        return Function(f, input_signature, reduce_retracing, jit_compile, guards,
                        keep_on_device)

    return wrap if fn is None else wrap(fn)
