"""The config of a functional model and the model it describes (tf_keras 2.21's format):
`Functional.get_config` and `Functional.from_config` call these.

The config lists the model's layers (each serialized, with its `name` and its
`inbound_nodes`), then `input_layers` and `output_layers`. A node is the list of its
first argument's tensors, each ``[layer_name, node_index, tensor_index, kwargs]``:
the layer and node that made it (node indices count that layer's calls inside this
model), the position among that node's outputs, and the call's other arguments, where a
tensor is ``[layer_name, node_index, tensor_index]``. Rebuilding creates each layer from
its config and calls it on the tensors its nodes name, in an order that makes each
tensor before its use.
"""

from __future__ import annotations

from typing import Any

from .. import nest
from ..tensor import TensorBase
from .base_layer import Layer
from .serialization import deserialize, serialize

__all__ = ["functional_config", "functional_from_config"]


def _symbolic(x: Any) -> bool:
    return getattr(x, "_keras_symbolic", False) is True


def functional_config(model: Any) -> dict:
    """The config of functional `model` (a `Functional`)."""
    in_model = {id(n) for n in model._nodes}

    def node_index(layer: Layer, index: int) -> int:
        own = [n for n in layer.__dict__.get("_inbound_nodes", []) if id(n) in in_model]
        return own.index(layer._inbound_nodes[index])

    def ref(kt: Any) -> list:
        layer, index, tensor_index = kt._keras_history
        if kt is not nest.flatten(layer._inbound_nodes[index].outputs)[tensor_index]:
            raise NotImplementedError(
                f"get_config of model {model.name!r}: a layer is called on the mask "
                f"{kt.name!r}; configs name tensors only. Let the mask reach the layer by "
                f"itself (layers pass their inputs' masks on).")
        return [layer.name, node_index(layer, index), tensor_index]

    def argument(value: Any) -> Any:
        if _symbolic(value):
            return ref(value)
        if isinstance(value, TensorBase):
            return value.numpy().tolist()
        if isinstance(value, slice):  # an index's parts, as tf_keras writes them
            return {"start": argument(value.start), "stop": argument(value.stop),
                    "step": argument(value.step)}
        if value is Ellipsis:  # as tf_keras's JSON writes it
            return {"class_name": "__ellipsis__", "config": {}}
        return value

    layers = []
    for layer in model.layers:
        entry = serialize(layer)
        entry["name"] = layer.name
        inbound = []
        for node in layer.__dict__.get("_inbound_nodes", []):
            if id(node) not in in_model or node.is_input:
                continue
            first, rest = node.args[0], node.args[1:]
            if rest:
                raise NotImplementedError(f"get_config of model {model.name!r}: layer "
                                          f"{layer.name!r} was called with positional "
                                          f"arguments after its inputs; pass them by name.")
            kwargs = nest.map_structure(argument, dict(node.kwargs))
            data = nest.map_structure(
                lambda t: ref(t) + [kwargs] if _symbolic(t)
                else ["_CONSTANT_VALUE", -1, argument(t), kwargs], first)
            # a tensor first argument is a list of one ref, unless the layer keeps its
            # input's structure (tf_keras' TFOpLambda): then the ref itself
            keep = getattr(layer, "_preserve_input_structure_in_config", False)
            inbound.append(data if isinstance(first, (list, tuple, dict)) or keep else [data])
        entry["inbound_nodes"] = inbound
        layers.append(entry)

    def ends(structure: Any) -> Any:
        refs = nest.map_structure(ref, structure)
        return [refs] if _symbolic(structure) else refs

    return {"name": model.name, "trainable": model.trainable, "layers": layers,
            "input_layers": ends(model._nested_inputs),
            "output_layers": ends(model._nested_outputs)}


def _is_ref(value: Any, made: dict) -> bool:
    return isinstance(value, (list, tuple)) and len(value) == 3 and \
        isinstance(value[0], str) and value[0] in made and \
        all(isinstance(v, int) and not isinstance(v, bool) for v in value[1:])


def functional_from_config(cls: type, config: dict, custom_objects: dict | None) -> Any:
    """A model of class `cls` (a `Functional`) rebuilt from `functional_config`'s dict."""
    layers: dict[str, Layer] = {}
    queues: dict[str, list] = {}  # per layer, its nodes still to call, in order
    made: dict[str, list] = {}  # per layer, the outputs of its nodes called so far
    for entry in config["layers"]:
        layer = deserialize(entry, custom_objects)
        name = entry.get("name", layer.name)
        layers[name] = layer
        queues[name] = list(entry.get("inbound_nodes", []))
        made[name] = [layer.output] if type(layer).__name__ == "InputLayer" else []

    def tensor(value: list) -> Any:
        name, index, tensor_index = value[:3]
        if index >= len(made[name]):
            raise LookupError  # not made yet: the node waits
        return nest.flatten(made[name][index])[tensor_index]

    def resolve(value: Any) -> Any:
        if _is_ref(value, made):
            return tensor(value)
        if isinstance(value, dict):
            return {k: resolve(v) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return type(value)(resolve(v) for v in value)
        return value

    def call(name: str, data: Any) -> None:
        single = isinstance(data, list) and bool(data) and isinstance(data[0], str)
        items = list(data.values()) if isinstance(data, dict) else [data] if single else \
            list(data)
        kwargs: dict = {}
        inputs = []
        for item in items:
            inputs.append(item[2] if item[0] == "_CONSTANT_VALUE" else tensor(item))
            if len(item) > 3 and item[3]:
                kwargs = item[3]
        kwargs = resolve(kwargs)
        if isinstance(data, dict):
            first: Any = dict(zip(data, inputs, strict=True))
        else:
            keep = getattr(layers[name], "_preserve_input_structure_in_config", False)
            first = inputs[0] if single or len(inputs) == 1 and not keep else inputs
        made[name].append(layers[name](first, **kwargs))

    while any(queues.values()):
        progress = False
        for name, queue in queues.items():
            while queue:
                try:
                    call(name, queue[0])
                except LookupError:
                    break
                queue.pop(0)
                progress = True
        if not progress:
            waiting = sorted(n for n, q in queues.items() if q)
            raise ValueError(f"Model.from_config: the nodes of layer(s) {waiting} need tensors "
                             f"no layer of the config makes.")

    def ends(refs: Any) -> Any:
        if isinstance(refs, dict):
            return {k: tensor(v) for k, v in refs.items()}
        out = [tensor(r) if _is_ref(r, made) else ends(r) for r in refs]
        return out

    inputs, outputs = ends(config["input_layers"]), ends(config["output_layers"])
    if isinstance(outputs, list) and len(outputs) == 1:
        outputs = outputs[0]
    if isinstance(inputs, list) and len(inputs) == 1:
        inputs = inputs[0]
    model = cls(inputs=inputs, outputs=outputs, name=config.get("name"),
                trainable=config.get("trainable", True))
    # layers the outputs do not need (a symbolic loss's or metric's): every call runs
    # them, as in the model saved (tf_keras' connect_ancillary_layers)
    in_graph = {id(layer) for layer in model.layers}
    ancillary = [t for name, outs in made.items() if id(layers[name]) not in in_graph
                 for out in outs for t in nest.flatten(out)]
    if ancillary:
        model._insert(ancillary)
    return model
