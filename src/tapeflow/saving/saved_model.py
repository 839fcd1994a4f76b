"""tf.saved_model: a module's variables and traced functions, loadable without its Python.

NOTE(saved-model): `save(obj, export_dir)` walks `obj`'s object graph as a checkpoint
does (NOTE(object-graph)) and writes, in `export_dir`:

- ``variables/variables.index`` and ``.data-00000-of-00001``: the variables, a checkpoint
  (NOTE(bundle-format)) keyed by their paths from `obj`, so ``tf.train.Checkpoint(obj)
  .read(export_dir + "/variables/variables")`` restores them as TensorFlow's does;
- ``functions.index`` and ``.data-00000-of-00001``: the graphs' arrays (constants);
- ``saved_model.json``: the objects (each path's kind, its variables' names and
  trainability), and per traced function (a `tf.function` attribute or method of an
  object) its input_signature, jit_compile, and each traced graph (NOTE(graph-format))
  with the call it serves (its Python values, a TensorSpec per tensor, and the specs of
  the None dimensions it serves every size of); the serving signatures; a CRC-32.

What is saved of a function is its traces: those of its calls so far, and, where it has
an input_signature, the signature traced at sizes 8 and 5 of its None dimensions (so a
graph that does not depend on them serves every size, NOTE(two-sizes)) and at size 1.
`load` needs tapeflow only: the loaded object's functions replay those graphs (under
tapes, accumulators, vmap and the transforms, with jit_compile as saved), its variables
are variables again (the graphs read them at each call). A call no saved graph serves, or
whose guard reads another value than the trace did, raises an error saying so: retracing
would need the Python function, which the directory does not hold. The directory is
written under a temporary name and renamed into place, so a killed save leaves the
previous one. Loading executes nothing from the files and checks everything in them
(DataLossError naming the file).
"""

from __future__ import annotations

import inspect
import json
import os
import shutil
import zlib
from typing import Any

import numpy as np

from .. import nest
from ..errors import DataLossError, NotFoundError
from ..graph.concrete import ConcreteFunction
from ..graph.function import Function, _Method, function
from ..keras.base_layer import Layer
from ..graph.replay import GuardFailed
from ..graph.signature import TensorSpec, call_template
from ..graph.xla import jit_compile_here
from ..module import Module
from ..tensor import Tensor, Variable
from . import bundle, objects
from .graph_codec import Reader, Writer, decode_graph, dtype_name, encode_graph

__all__ = ["save", "load", "contains_saved_model", "describe", "SaveOptions", "LoadOptions",
           "RestoredFunction", "Restored"]

FORMAT = "tapeflow-saved-model"
VERSION = 1
MODEL_FILE = "saved_model.json"
VARIABLES = os.path.join("variables", "variables")
ARRAYS = "functions"
SERVING = "serving_default"


class SaveOptions:
    """tf.saved_model.SaveOptions: accepted for TensorFlow's code; nothing in it applies."""

    def __init__(self, **options: Any) -> None:
        self.options = options


LoadOptions = SaveOptions


# ------------------------------------------------------------------------------ save
def save(obj: Any, export_dir: str, signatures: Any = None, options: Any = None) -> None:
    """Save `obj` (a tf.Module, Keras layer or model) to the directory `export_dir`: its
    variables, and the graphs of its traced functions, with the calls they serve
    (NOTE(saved-model)). `signatures` (a traced function with an input_signature, one of
    its concrete functions, or a dict of them by name) are the serving signatures; by
    default the one traced method with an input_signature, if there is one.

    Example:
        >>> import tempfile, tapeflow as tf
        >>> class Scale(tf.Module):
        ...     def __init__(self):
        ...         self.k = tf.Variable(3.0)
        ...     @tf.function(input_signature=[tf.TensorSpec([None], tf.float32)])
        ...     def __call__(self, x):
        ...         return x * self.k
        >>> path = tempfile.mkdtemp()
        >>> tf.saved_model.save(Scale(), path)
        >>> tf.saved_model.load(path)(tf.constant([1.0, 2.0])).numpy()
        array([3., 6.], dtype=float32)
    """
    if not isinstance(obj, Module):
        raise ValueError(f"saved_model.save: `obj` must be a tf.Module (a Keras layer or model "
                         f"is one); got {type(obj).__name__}.")
    graph = objects.walk({}, root=obj)
    keys = {id(v): k for k, v in graph.variables.items()}
    owners = {"": obj, **graph.objects}

    def variable_key(v: Variable) -> str:
        if id(v) not in keys:
            raise ValueError(f"saved_model.save: a traced function of {type(obj).__name__} reads "
                             f"the variable {v.name!r}, which no attribute of it holds (an "
                             "untracked variable, as TensorFlow calls it): make it an attribute "
                             "of the module, or pass its value in.")
        return keys[id(v)]

    writer = Writer(variable_key)
    functions, records = _functions(owners), []
    if ("", "__call__") not in functions:
        call = _keras_call(obj)
        if call is not None:  # as TensorFlow saves a Keras model: its call, by its inputs
            functions[("", "__call__")] = (call, None)
    for (path, name), (fn, instance) in functions.items():
        fn._trace_signature(instance)
        where = f"saved_model.save: {_describe(path, name)}"
        try:
            record = _function_record(fn, instance, writer, path, name)
        except (TypeError, ValueError) as e:
            raise type(e)(f"{where}: {e}") from None
        if record is not None:
            records.append(record)
    model = {"format": FORMAT, "version": VERSION, "root": type(obj).__name__,
             "objects": {p: type(o).__name__ for p, o in graph.objects.items()},
             "containers": {p: type(c).__name__ if type(c) in (list, tuple, dict) else "list"
                            for p, c in graph.containers.items()},
             "variables": {k: {"name": v.name, "trainable": bool(v.trainable),
                               "dtype": v.dtype.name, "shape": [int(d) for d in v.shape]}
                           for k, v in graph.variables.items()},
             "functions": records,
             "signatures": _signatures(signatures, functions, obj)}
    model["crc32"] = zlib.crc32(bundle.canonical(model))
    _write(export_dir, model, writer.arrays, graph.variables)


def _describe(path: str, name: str) -> str:
    return f"the function {'.'.join(p for p in (path.replace('/', '.'), name) if p)!r}"


def _functions(owners: dict) -> dict:
    """(object path, attribute) -> (Function, its instance or None), for each traced
    function of the objects: the class's decorated methods, then functions set as
    attributes."""
    found: dict = {}
    for path, owner in owners.items():
        for cls in type(owner).__mro__:
            for name, attr in vars(cls).items():
                if isinstance(attr, Function) and (path, name) not in found:
                    found[(path, name)] = (attr, owner)
        for name, attr in vars(owner).items():
            if name.startswith("_"):
                continue  # bookkeeping (fit's traced steps), as TensorFlow's Keras skips it
            if isinstance(attr, Function):
                found[(path, name)] = (attr, None)
            elif isinstance(attr, _Method):
                found[(path, name)] = (attr._function, attr._instance)
    return found


def _keras_call(layer: Any) -> Function | None:
    """A built Keras layer's or model's call (inference: training=False) traced for its
    inputs, batch size None: what TensorFlow saves of a Keras model without a traced
    `__call__` of its own; None where the inputs are not known."""
    if not isinstance(layer, Layer):
        return None
    inputs = getattr(layer, "inputs", None) if isinstance(getattr(type(layer), "inputs", None),
                                                           property) else None
    if inputs:
        specs = [TensorSpec([None] + list(t.shape)[1:], t.dtype, getattr(t, "name", None))
                 for t in inputs]
    else:
        shape = getattr(layer, "_build_input_shape", None)
        first = (getattr(layer, "layers", None) or [None])[0]
        if shape is None and isinstance(first, Layer):  # a Sequential: its first layer's
            shape = first._build_input_shape
        if not (isinstance(shape, tuple) and shape and all(
                d is None or isinstance(d, int) for d in shape)):
            return None
        name = f"{first.name}_input" if isinstance(first, Layer) else None  # tf_keras's
        specs = [TensorSpec([None] + list(shape[1:]), layer.dtype, name)]
    one = len(specs) == 1
    return function(lambda *x: layer(x[0] if one else list(x), training=False),
                    input_signature=specs)


def _function_record(fn: Function, instance: Any, w: Writer, path: str, name: str) -> dict:
    traces = []
    for cf in fn._traces_of(instance):
        graph = cf.graph
        specs = [TensorSpec(graph.avals[s][0], graph.avals[s][1]) for s in graph.inputs]
        args, kwargs = call_template(cf._template, specs, instance)
        traces.append({
            "args": w.value(args, "an argument"), "kwargs": w.value(kwargs, "an argument"),
            "every_size": None if not cf.serves_all_sizes else w.value(list(cf._specs), "a spec"),
            "graph": encode_graph(graph, w, f"the graph {len(traces)}")})
    if not traces:
        return None  # never called and no input_signature: nothing to save, as TensorFlow
    return {"object": path, "name": name, "bound": instance is not None,
            "input_signature": None if fn._input_signature is None else
            w.value(list(fn._input_signature), "a spec"),
            "jit_compile": fn._jit_compile, "reduce_retracing": fn._reduce_retracing,
            "per_size": sorted(set(fn._per_size.values())), "traces": traces}


def _signatures(signatures: Any, functions: dict, root: Any) -> dict:
    """name -> (object path, function attribute) of each serving signature."""
    if signatures is None:
        with_specs = [k for k, (fn, _) in functions.items()
                      if k[0] == "" and fn._input_signature is not None]
        return {SERVING: list(with_specs[0]) + [_input_names(functions[with_specs[0]][0])]} \
            if len(with_specs) == 1 else {}
    if not isinstance(signatures, dict):
        signatures = {SERVING: signatures}
    out = {}
    for sig_name, target in signatures.items():
        fn = getattr(target, "_function", target)
        for key, (f, _) in functions.items():
            if f is fn or any(cf is target for cf in f._traces_of()):
                if f._input_signature is None:
                    raise ValueError(f"saved_model.save: the signature {sig_name!r} is a "
                                     "function without an input_signature; give it one.")
                out[str(sig_name)] = list(key) + [_input_names(f)]
                break
        else:
            raise ValueError(f"saved_model.save: the signature {sig_name!r} is not a traced "
                             f"function of the {type(root).__name__} being saved (or of an "
                             "object it holds).")
    return out


def _input_names(fn: Function) -> list[str]:
    """A signature's input names, as TensorFlow's: each TensorSpec's name, else the name of
    the function's argument."""
    try:
        params = [p.name for p in inspect.signature(fn._fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    except (TypeError, ValueError):
        params = []
    specs = fn._input_signature
    params = params[len(params) - len(specs):] if len(params) >= len(specs) else []
    return [s.name or (params[i] if params else f"args_{i}") for i, s in enumerate(specs)]


def _write(export_dir: str, model: dict, arrays: dict, variables: dict) -> None:
    """Everything written under a temporary name, then renamed into place."""
    export_dir = os.path.abspath(os.fspath(export_dir))
    tmp = bundle.temporary_name(export_dir)
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    try:
        bundle.write_bundle(os.path.join(tmp, VARIABLES),
                            {k: v.numpy() for k, v in variables.items()},
                            {k: v.dtype.name for k, v in variables.items()})
        bundle.write_bundle(os.path.join(tmp, ARRAYS), arrays,
                            {k: dtype_name(a.dtype) for k, a in arrays.items()})
        with open(os.path.join(tmp, MODEL_FILE), "w", encoding="utf-8") as f:
            json.dump(model, f, sort_keys=True, indent=1)
        old = None
        if os.path.exists(export_dir):
            if not os.path.isdir(export_dir):
                raise FileExistsError(f"saved_model.save: {export_dir!r} is a file, not a "
                                      "directory.")
            old = bundle.temporary_name(export_dir + ".old")
            os.replace(export_dir, old)
        os.replace(tmp, export_dir)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------------------------ load
def contains_saved_model(export_dir: str) -> bool:
    """Whether `export_dir` holds a SavedModel (its model file).

    Example:
        >>> import tapeflow as tf
        >>> tf.saved_model.contains_saved_model("/nonexistent")
        False
    """
    return os.path.isfile(os.path.join(os.fspath(export_dir), MODEL_FILE))


class Restored(Module):
    """An object of a loaded SavedModel: its variables, objects and functions as
    attributes, under the names they had (`variables`, `trainable_variables` as a
    tf.Module's); called, it calls its saved `__call__`."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        call = self.__dict__.get("__call__")
        if call is None:
            raise TypeError(f"this loaded {self._saved_class} was saved without a traced "
                            "__call__.")
        return call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<Restored {self._saved_class}>"


class RestoredFunction(Function):
    """A traced function loaded from a SavedModel: its saved graphs, and no Python to trace
    others (NOTE(saved-model))."""

    def __init__(self, name: str, directory: str, input_signature: list | None,
                 jit_compile: bool, reduce_retracing: bool, per_size: list) -> None:
        def python_function(*args: Any, **kwargs: Any) -> Any:
            raise self._not_found(None)
        python_function.__name__ = python_function.__qualname__ = name
        super().__init__(python_function, input_signature, reduce_retracing, jit_compile or None)
        self._directory = directory
        self._saved_calls: list[str] = []
        self._saved_per_size = per_size

    def _add(self, graph: Any, args: list, kwargs: dict, every_size: list | None,
             instance: Any) -> None:
        """Serve the calls of one saved trace with its graph."""
        bound = () if instance is None else (instance,)
        placeholders = nest.map_structure(
            lambda x: Tensor(np.zeros(x.shape, x.dtype._np)) if isinstance(x, TensorSpec)
            else x, (args, kwargs))
        key, leaves, _ = self._key(tuple(placeholders[0]), placeholders[1], bound)
        general, cache_key = None, key
        if every_size is not None:
            if self._input_signature is None:
                self._add_spec_trace(key, every_size)
            generic = self._generic_key(leaves, key)
            if generic is not None:
                general = (every_size, generic, graph)
                cache_key = generic
        cf = ConcreteFunction(graph, key, {}, self._jit_compile, False, general)
        self._cache.setdefault(cache_key, []).append(cf)
        self._saved_calls.append(_call_text(args, kwargs, every_size))

    def _trace(self, key: Any, leaves: list, args: tuple, kwargs: dict, failed: Any,
               generic: Any = None, specs: Any = None, bound: tuple = ()) -> Any:
        raise self._not_found(failed, leaves)

    def _concrete_for_specs(self, args: tuple, kwargs: dict, bound: tuple,
                            size: int = 8) -> Any:
        wanted = [x for x in nest.flatten([list(args), kwargs])]
        for branches in reversed(self._cache.values()):
            cf = branches[-1]
            specs = cf._specs or [TensorSpec(cf.graph.avals[s][0], cf.graph.avals[s][1])
                                  for s in cf.graph.inputs]
            if len(specs) == len(wanted) and all(
                    isinstance(w, TensorSpec) and w.dtype == s.dtype and
                    w.shape.as_list() == s.shape.as_list() for w, s in zip(specs, wanted)):
                return cf
        raise self._not_found(None, wanted)

    def _not_found(self, failed: Any, leaves: list | None = None) -> ValueError:
        name = self.__name__
        if failed is not None and failed.how == "size":
            return ValueError(
                f"{name} (loaded from the SavedModel at {self._directory!r}): its saved graph "
                f"holds only at sizes that decide as the traced ones did at {failed.where} "
                "(NOTE(symbolic-sizes)), and this call's sizes decide otherwise. Tracing for "
                "them would need the Python function, which a SavedModel does not hold: call "
                "the function at such a size before saving it.")
        if failed is not None:
            return ValueError(
                f"{name} (loaded from the SavedModel at {self._directory!r}): its saved graph "
                f"guards a value Python read at {failed.where} , and this call reads another "
                "there. Tracing that branch would need the Python function, which a SavedModel "
                "does not hold: call the function on each branch before saving it, or write the "
                "branch with tf.where or tf.cond.")
        got = ", ".join(f"{tuple(t.shape)} {t.dtype.name}" if isinstance(t, Tensor) else
                        repr(t) for t in (leaves or []))
        why = (" The function's graphs depend on the sizes of its None dimensions, so each "
               f"size saved is served on its own ({self._saved_per_size[0]})."
               if self._saved_per_size else "")
        return ValueError(
            f"Could not find matching concrete function to call loaded from the SavedModel at "
            f"{self._directory!r}: {name} got tensors of shapes and dtypes ({got}); its saved "
            f"graphs take: {'; '.join(self._saved_calls)}.{why} Tracing another would need the "
            "Python function, which a SavedModel does not hold.")


def _call_text(args: list, kwargs: dict, every_size: list | None) -> str:
    specs = every_size or [x for x in nest.flatten([args, kwargs]) if isinstance(x, TensorSpec)]
    return _specs_text(specs)


def load(export_dir: str, tags: Any = None, options: Any = None) -> Restored:
    """The object saved in `export_dir` by `save`, rebuilt without its Python class: its
    variables, objects and traced functions as attributes, `signatures` by name
    (NOTE(saved-model)). A damaged or foreign directory raises DataLossError naming the
    file; nothing in it is executed.

    Example:
        >>> import tempfile, tapeflow as tf
        >>> m = tf.Module()
        >>> m.v = tf.Variable([1.0, 2.0])
        >>> m.f = tf.function(lambda x: x * m.v, input_signature=[tf.TensorSpec([2])])
        >>> path = tempfile.mkdtemp()
        >>> tf.saved_model.save(m, path)
        >>> loaded = tf.saved_model.load(path)
        >>> loaded.f(tf.constant([3.0, 4.0])).numpy()
        array([3., 8.], dtype=float32)
    """
    export_dir = os.fspath(export_dir)
    path = os.path.join(export_dir, MODEL_FILE)
    if not os.path.isfile(path):
        raise NotFoundError(f"saved_model.load: no SavedModel at {export_dir!r} ({path!r} "
                            "does not exist).")
    model = _read_model(path)
    arrays = bundle.read_bundle(os.path.join(export_dir, ARRAYS))
    values = bundle.read_bundle(os.path.join(export_dir, VARIABLES))
    r = Reader(path, arrays, {})
    specs = model["variables"]
    if not isinstance(specs, dict) or set(specs) != set(values):
        r.fail("its variables are not those of its variables file")
    for key, spec in specs.items():
        if type(spec) is not dict or type(spec.get("name")) is not str or \
                type(spec.get("trainable")) is not bool:
            r.fail(f"the variable {key!r:.80} is described wrongly")
        v = values[key]
        name = spec["name"].split(":")[0]
        r.variables[key] = Variable(v.copy(), name=name or None, trainable=spec["trainable"])
    root = _build_objects(model, r)
    for k, rec in enumerate(r.list_(model["functions"], "the functions")):
        _restore_function(rec, root, r, export_dir, k)
    object.__setattr__(root, "signatures", _restore_signatures(model["signatures"], root, r))
    return root


def _read_model(path: str) -> dict:
    model = bundle.read_signed_json(path, "SavedModel", FORMAT, VERSION, "crc32")
    need = ("root", "objects", "containers", "variables", "functions", "signatures")
    if any(k not in model for k in need):
        raise DataLossError(f"{path!r} is malformed (it lacks one of {', '.join(need)}).")
    return model


def _new(cls_name: str) -> Restored:
    obj = Restored.__new__(Restored)
    Module.__init__(obj)
    object.__setattr__(obj, "_saved_class", cls_name)
    return obj


def _build_objects(model: dict, r: Reader) -> Restored:
    """The tree of loaded objects: each object, container and variable at its path."""
    if type(model["root"]) is not str or type(model["objects"]) is not dict or \
            type(model["containers"]) is not dict:
        r.fail("its objects are malformed")
    root = _new(model["root"])
    made: dict[str, Any] = {"": root}
    kinds = {**{p: ("object", c) for p, c in model["objects"].items()},
             **{p: ("container", c) for p, c in model["containers"].items()}}
    places = sorted(set(kinds) | {k[:k.index("/.ATTRIBUTES")] for k in r.variables
                                  if "/.ATTRIBUTES" in k and ".OPTIMIZER_SLOT" not in k},
                    key=lambda p: (p.count("/"), p))
    for place in places:
        if type(place) is not str or not place or place in made:
            continue
        parent_path, _, name = place.rpartition("/")
        parent = made.get(parent_path)
        if parent is None or not name:
            continue  # under an object the file does not describe: reachable by key only
        kind, cls = kinds.get(place, ("variable", None))
        if kind == "variable":
            child: Any = r.variables[f"{place}/{objects.VALUE}"]
        elif kind == "object":
            child = _new(str(cls))
        else:
            child = {} if cls == "dict" else []
        _attach(parent, name, child, r)
        made[place] = child
    for place, cls in model["containers"].items():  # tuples once their items are in
        parent = made.get(place.rpartition("/")[0])
        if cls == "tuple" and isinstance(made.get(place), list) and parent is not None:
            _attach(parent, place.rpartition("/")[2], tuple(made[place]), r)
    return root


def _attach(parent: Any, name: str, child: Any, r: Reader) -> None:
    if isinstance(parent, Restored):
        object.__setattr__(parent, name, child)
    elif isinstance(parent, dict):
        parent[name] = child
    elif isinstance(parent, list) and name.isdigit():
        index = int(name)
        parent.extend([None] * (index + 1 - len(parent)))
        parent[index] = child


def _at(root: Restored, path: str) -> Any:
    """The loaded object at an object-graph path (attributes, list items, dict keys), or
    None where there is none."""
    owner: Any = root
    for part in [p for p in path.split("/") if p]:
        owner = owner.get(part) if isinstance(owner, dict) else (
            owner[int(part)] if isinstance(owner, list) and part.isdigit() and
            int(part) < len(owner) else getattr(owner, part, None))
    return owner


def _restore_function(rec: Any, root: Restored, r: Reader, export_dir: str, k: int) -> None:
    where = f"function {k}"
    if type(rec) is not dict or type(rec.get("name")) is not str or \
            type(rec.get("object")) is not str or type(rec.get("bound")) is not bool:
        r.fail(f"{where} is malformed")
    owner = _at(root, rec["object"])
    if not isinstance(owner, Restored):
        r.fail(f"{where} belongs to {rec['object']!r:.80}, which is no object of the file")
    signature = rec.get("input_signature")
    fn = RestoredFunction(rec["name"], export_dir,
                          None if signature is None else _read_specs(signature, r, where),
                          jit_compile_here(rec.get("jit_compile"), where),
                          bool(rec.get("reduce_retracing")),
                          [str(x) for x in r.list_(rec.get("per_size", []), where)])
    instance = owner if rec["bound"] else None
    for j, t in enumerate(r.list_(rec.get("traces"), where)):
        at = f"{where}, trace {j}"
        if type(t) is not dict:
            r.fail(f"{at} is malformed")
        graph = decode_graph(t.get("graph"), r, at)
        args, kwargs = r.value(t.get("args"), at), r.value(t.get("kwargs"), at)
        every = t.get("every_size")
        every = None if every is None else _read_specs(every, r, at)
        tensors = [x for x in nest.flatten([args, kwargs]) if isinstance(x, TensorSpec)]
        if type(args) is not list or type(kwargs) is not dict or len(tensors) != len(
                graph.inputs) or any(graph.avals[s] != (tuple(x.shape), x.dtype._np)
                                     for s, x in zip(graph.inputs, tensors)):
            r.fail(f"{at}'s call does not match its graph's inputs")
        try:
            fn._add(graph, args, kwargs, every, instance)
        except Exception as e:  # noqa: BLE001 - whatever a graph no save wrote trips on
            r.fail(f"{at}'s graph cannot run (a file no save wrote): {type(e).__name__}: {e}")
    object.__setattr__(owner, rec["name"], fn if instance is None else _Method(fn, instance))


def _read_specs(x: Any, r: Reader, where: str) -> list:
    specs = r.value(x, where)
    if type(specs) is not list or not all(isinstance(s, TensorSpec) for s in specs):
        r.fail(f"{where} has no list of TensorSpecs")
    return specs


class _Signature:
    """A serving signature of a loaded SavedModel: called with its inputs by keyword (the
    TensorSpecs' names, else the function's argument names), it returns a dict of its
    outputs (the function's dict, else ``output_0``, ``output_1``, ...), as TensorFlow's."""

    def __init__(self, call: Any, names: list[str]) -> None:
        self._call = call
        self.input_names = names

    def __call__(self, *args: Any, **kwargs: Any) -> dict:
        if args:
            raise TypeError(f"a signature function takes its inputs by keyword "
                            f"({', '.join(self.input_names)}); got {len(args)} positional.")
        if set(kwargs) != set(self.input_names):
            raise TypeError(f"a signature function takes {sorted(self.input_names)}; got "
                            f"{sorted(kwargs)}.")
        result = self._call(*[kwargs[n] for n in self.input_names])
        if isinstance(result, dict):
            return dict(result)
        return {f"output_{i}": t for i, t in enumerate(nest.flatten(result))}


def _restore_signatures(sigs: Any, root: Restored, r: Reader) -> dict:
    if type(sigs) is not dict:
        r.fail("its signatures are malformed")
    out = {}
    for name, target in sigs.items():
        if type(target) is not list or len(target) != 3 or type(target[2]) is not list or \
                not all(type(n) is str for n in target[2]):
            r.fail(f"the signature {name!r:.40} is malformed")
        owner = _at(root, str(target[0]))
        fn = getattr(owner, str(target[1]), None) if isinstance(owner, Restored) else None
        specs = getattr(getattr(fn, "_function", fn), "_input_signature", None)
        if specs is None or len(specs) != len(target[2]):
            r.fail(f"the signature {name!r:.40} names no function with an input_signature")
        out[name] = _Signature(fn, target[2])
    return out


# ------------------------------------------------------------------------------ show
def describe(export_dir: str) -> str:
    """What the SavedModel in `export_dir` holds, as text (``tapeflow show``, as
    TensorFlow's ``saved_model_cli show --all``): its variables, its functions with the
    calls each saved graph serves and the graphs' sizes, its signatures. The files are
    checked as `load` checks them; nothing is run.

    Example:
        >>> import tempfile, tapeflow as tf
        >>> m = tf.Module()
        >>> m.v = tf.Variable([1.0, 2.0], name="v")
        >>> m.f = tf.function(lambda x: x * m.v, input_signature=[tf.TensorSpec([2])])
        >>> path = tempfile.mkdtemp()
        >>> tf.saved_model.save(m, path)
        >>> from tapeflow.saving.saved_model import describe
        >>> print(describe(path).splitlines()[2])
          v  float32[2]  trainable  (v:0)
    """
    export_dir = os.fspath(export_dir)
    path = os.path.join(export_dir, MODEL_FILE)
    if not os.path.isfile(path):
        raise NotFoundError(f"no SavedModel at {export_dir!r} ({path!r} does not exist).")
    model = _read_model(path)
    bundle.read_index(os.path.join(export_dir, VARIABLES))
    bundle.read_index(os.path.join(export_dir, ARRAYS))
    r = Reader(path, {}, {})
    variables = model["variables"] if type(model["variables"]) is dict else {}
    lines = [f"SavedModel of a {model['root']} at {export_dir} ({FORMAT} version {VERSION})",
             f"variables ({len(variables)}):"]
    for key, spec in sorted(variables.items()):
        if type(spec) is dict:
            where = key[:-len(objects.VALUE) - 1] if key.endswith(objects.VALUE) else key
            kind = "trainable" if spec.get("trainable") else "not trainable"
            lines.append(f"  {where}  {spec.get('dtype')}{spec.get('shape')}  {kind}  "
                         f"({spec.get('name')})")
    lines.append("functions:")
    for rec in r.list_(model["functions"], "the functions"):
        if type(rec) is not dict:
            r.fail("a function is malformed")
        name = ".".join(p for p in (str(rec.get("object", "")).replace("/", "."),
                                    str(rec.get("name"))) if p)
        extras = [x for x, on in (("jit_compile", rec.get("jit_compile")),) if on]
        signature = rec.get("input_signature")
        head = f"  {name}"
        if signature is not None:
            head += f"  input_signature={_specs_text(_read_specs(signature, r, name))}"
        lines.append(head + "".join(f"  {x}" for x in extras))
        for k, t in enumerate(r.list_(rec.get("traces"), name)):
            if type(t) is not dict or type(t.get("graph")) is not dict:
                r.fail(f"{name}'s trace {k} is malformed")
            args, kwargs = r.value(t.get("args"), name), r.value(t.get("kwargs"), name)
            every = t.get("every_size")
            served = _specs_text(_read_specs(every, r, name)) + ", every size" if every \
                else _call_text(args, kwargs, None)
            nodes = r.list_(t["graph"].get("nodes"), name)
            ops = sum(1 for n in nodes if type(n) is dict and "node" in n)
            guards = sum(1 for n in nodes if type(n) is dict and "guard" in n)
            python = [repr(x) for x in nest.flatten([args, kwargs])
                      if not isinstance(x, TensorSpec)]
            lines.append(f"    graph {k}: {served}"
                         + (f" with {', '.join(python)}" if python else "")
                         + f"; {ops} ops" + (f", {guards} guards" if guards else ""))
    lines.append("signatures:")
    for sig, target in sorted(model["signatures"].items()):
        if type(target) is list and len(target) == 3:
            fn = ".".join(p for p in (str(target[0]).replace("/", "."), str(target[1])) if p)
            lines.append(f"  {sig}: {fn}({', '.join(map(str, target[2]))})")
    return "\n".join(lines)


def _specs_text(specs: list) -> str:
    return "(" + ", ".join(f"{s.dtype.name}{list(s.shape) if s.shape.rank is not None else '[...]'}"
                           for s in specs) + ")"
