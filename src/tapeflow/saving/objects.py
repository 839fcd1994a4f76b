"""The object graph a checkpoint saves: variables by attribute path, as TensorFlow's.

NOTE(object-graph): from the checkpoint's root objects, each object's dependencies are
walked breadth first, as TensorFlow walks them: a layer's own weights by the names they
were made with, then a `tf.Module`'s (a Keras layer's or model's, an optimizer's)
attributes in the order they were set, the items of lists and tuples, a dict's string
keys in order. A variable's key is its path joined by "/" with
``/.ATTRIBUTES/VARIABLE_VALUE`` appended (``model/dense1/kernel/...``); an object
reached twice is saved once, under its shortest (then first) path. An
optimizer's slot of a model variable at path P is keyed
``P/.OPTIMIZER_SLOT/<optimizer's path>/<slot name>/.ATTRIBUTES/VARIABLE_VALUE``, so it
follows its variable. The same program makes the same paths, which is what restoring
relies on; variables made since (a layer built later) find theirs through
NOTE(deferred-restore).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Iterator

from ..keras.base_layer import Layer
from ..keras.optimizers import Optimizer
from ..module import Module
from ..tensor import Variable

__all__ = ["VALUE", "SLOT", "Graph", "walk"]

VALUE = ".ATTRIBUTES/VARIABLE_VALUE"
SLOT = ".OPTIMIZER_SLOT"

# A layer's bookkeeping: its weights are named by `_weight_names`, its sublayers found
# under the attributes that hold them.
_LAYER_BOOKKEEPING = frozenset({"_own_weights", "_tracked_variables", "_sublayers",
                                "_weight_names", "_initial_weights"})
_OPTIMIZER_BOOKKEEPING = frozenset({"_slots", "_variables", "_index"})


class Graph:
    """The walked graph: `variables` (key -> Variable), `objects` (path -> Layer, Module
    or Optimizer), `containers` (path -> list, tuple or dict), `paths` (id of each object
    or variable -> its path)."""

    def __init__(self) -> None:
        self.variables: dict[str, Variable] = {}
        self.objects: dict[str, Any] = {}
        self.containers: dict[str, Any] = {}
        self.paths: dict[int, str] = {}
        self._keep: list = []  # the objects walked, so their ids stay theirs


def _join(*parts: str) -> str:
    return "/".join(p for p in parts if p)


def _trackable(x: Any) -> bool:
    return isinstance(x, (Variable, Module, Optimizer, list, tuple, dict))


def _children(obj: Any) -> Iterator[tuple[str, Any]]:
    if isinstance(obj, (list, tuple)):
        for i, item in enumerate(obj):
            yield str(i), item
        return
    if isinstance(obj, dict):
        for k in sorted(k for k in obj if isinstance(k, str)):
            yield k, obj[k]
        return
    if isinstance(obj, Layer):
        names = getattr(obj, "_weight_names", {})
        for v in obj._own_weights:
            yield names.get(id(v), v.name.split(":")[0].rsplit("/", 1)[-1]), v
        skip = _LAYER_BOOKKEEPING
    elif isinstance(obj, Optimizer):
        skip = _OPTIMIZER_BOOKKEEPING
    else:
        skip = getattr(obj, "_TF_MODULE_IGNORED_PROPERTIES", frozenset())
    attributes = vars(obj)
    for name in list(attributes):
        if name not in skip and not name.startswith("__") and _trackable(attributes[name]):
            yield name, attributes[name]
    if isinstance(obj, Layer):  # whatever no attribute holds: under the layer's own lists
        yield "_sublayers", obj._sublayers
        yield "_tracked_variables", obj._tracked_variables


def walk(roots: dict[str, Any], root: Any = None) -> Graph:
    """The object graph under `roots` (name -> object) and the dependencies of `root`
    (whose own path is empty, as TensorFlow's root object's), NOTE(object-graph)."""
    g = Graph()
    optimizers: list[tuple[str, Any]] = []
    queue = deque((name, roots[name]) for name in sorted(roots))
    if root is not None:
        g.paths[id(root)] = ""
        g._keep.append(root)
        if isinstance(root, (Module, Optimizer)):
            g.objects[""] = root
        if isinstance(root, Optimizer):
            optimizers.append(("", root))
        queue.extend((name.replace("/", "_"), child) for name, child in _children(root)
                     if name not in roots)
    while queue:
        path, obj = queue.popleft()
        if id(obj) in g.paths or not _trackable(obj):
            continue
        g.paths[id(obj)] = path
        g._keep.append(obj)
        if isinstance(obj, Variable):
            g.variables[f"{path}/{VALUE}"] = obj
            continue
        if isinstance(obj, (Module, Optimizer)):
            g.objects[path] = obj
        else:
            g.containers[path] = obj
        if isinstance(obj, Optimizer):
            optimizers.append((path, obj))
        named, seen = [], set()
        for name, child in _children(obj):
            name = name.replace("/", "_")
            while name in seen:  # two weights made under one name
                name += "_"
            seen.add(name)
            named.append((f"{path}/{name}", child))
        queue.extend(named)
    # slots follow their model variables
    for opt_path, opt in optimizers:
        for var_path, var in list(g.variables.items()):
            index = opt._index.get(id(var))
            if index is None:
                continue
            for slot_name, slots in sorted(opt._slots.items()):
                if index < len(slots):
                    base = var_path[:-len(VALUE) - 1]
                    g.variables[_join(base, SLOT, opt_path, slot_name, VALUE)] = slots[index]
    return g
