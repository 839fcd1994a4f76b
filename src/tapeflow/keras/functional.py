"""The Keras functional API: `keras.Input`, symbolic `KerasTensor`s, and functional models
(`keras.Model(inputs, outputs)`, the class `Functional`).

This module holds the model. `Input`, `InputLayer` and `KerasTensor`, the recording of
layer calls on KerasTensors as `Node`s and the walk over those nodes (`map_graph`) are
functional_graph.py's (the first three re-exported here, so the functional API is one
import). A functional model walks the recorded nodes back from its outputs to its
inputs once, at construction, and each call replays them in topological order on real
tensors. Replaying is plain Python over the layers' calls, so tapes, `tf.function` and
vmap see ordinary ops. Its config, in tf_keras' format, is functional_config.py's.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy as np

from .. import nest
from ..ops.convert import as_tensor
from ..ops.elementwise import cast
from ..tensor import TensorBase, TensorShape
from .base_layer import Layer
from .penalties import call_context
from .functional_config import functional_config, functional_from_config
from .functional_graph import (Input, InputLayer, KerasTensor, Node, call_symbolic,
                               is_symbolic, map_graph)
from .masks import get_mask, set_mask
from .training import Model
from .common import call_accepts, unique_name

__all__ = ["Input", "InputLayer", "KerasTensor", "Functional", "AddLoss", "AddMetric"]


def _shape_str(shape: Any) -> str:
    return str(tuple(shape)) if isinstance(shape, TensorShape) else str(shape)


# ---------------------------------------------------------------- the model
class Functional(Model):
    """A model made from a graph of layer calls: ``keras.Model(inputs, outputs)`` where
    `inputs` come from `keras.Input` and `outputs` from layers called on them. Each
    argument is a KerasTensor, a list or a dict of them; calling the model takes and
    returns the same structures. A layer called twice in the graph shares its weights.
    `training=` reaches every layer that takes it, unless the graph fixed it at the call.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.keras.Input(shape=(2,), name="a")
        >>> b = tf.keras.Input(shape=(2,), name="b")
        >>> shared = tf.keras.layers.Dense(3, kernel_initializer="ones", name="shared")
        >>> out = tf.keras.layers.Dense(1, kernel_initializer="ones", name="out")(
        ...     shared(a) + shared(b))
        >>> model = tf.keras.Model([a, b], out, name="siamese")
        >>> model([tf.ones([1, 2]), tf.zeros([1, 2])]).numpy()
        array([[6.]], dtype=float32)
        >>> [type(layer).__name__ for layer in model.layers]   # `+` made an op layer
        ['InputLayer', 'InputLayer', 'Dense', 'TFOpLambda', 'Dense']
        >>> [v.name for v in model.trainable_variables]
        ['shared/kernel:0', 'shared/bias:0', 'out/kernel:0', 'out/bias:0']
    """

    def __init__(self, inputs: Any = None, outputs: Any = None, name: str | None = None,
                 trainable: bool = True, **kwargs: Any) -> None:
        if inputs is None or outputs is None:
            raise TypeError("Model(inputs, outputs): both `inputs` and `outputs` are needed "
                            "for a functional model.")
        super().__init__(name=name or unique_name("model"), trainable=trainable, **kwargs)
        self._autocast = False  # as Keras: each layer casts its own inputs
        for what, structure in (("inputs", inputs), ("outputs", outputs)):
            for v in nest.flatten(structure):
                if not isinstance(v, KerasTensor):
                    raise TypeError(
                        f"Model(inputs, outputs): every element of `{what}` must be a "
                        f"KerasTensor (from keras.Input, or a layer called on one); received "
                        f"{type(v).__name__} {v!r:.80}. A model built from tensors with values "
                        f"is a subclassed Model.")
        d = self.__dict__
        if isinstance(inputs, (list, tuple)) and len(inputs) == 1 and not isinstance(inputs[0],
                                                                                    (list, dict)):
            d["_single_list_input"] = True
        d["_nested_inputs"] = inputs
        d["_nested_outputs"] = outputs
        d["_input_list"] = nest.flatten(inputs)
        d["_output_list"] = nest.flatten(outputs)
        if len({id(x) for x in d["_input_list"]}) != len(d["_input_list"]):
            raise ValueError("Model(inputs, outputs): a KerasTensor is listed twice in `inputs`.")
        d["_ancillary"] = []
        self._map()
        self.built = True

    def _map(self) -> None:
        """The nodes a call runs: those the outputs need, and the ancillary ones (the
        symbolic losses and metrics `add_loss` and `add_metric` inserted)."""
        d = self.__dict__
        nodes, depths, layers = map_graph(d["_input_list"], d["_output_list"] + d["_ancillary"])
        if d["_ancillary"]:  # tf_keras's order: the outputs' layers, then each insert's
            known = d["_graph_layers"]
            seen = {id(layer) for layer in known}
            layers = [layer for layer in known if any(layer is l for l in layers)] + \
                [layer for layer in layers if id(layer) not in seen]
        d["_nodes"] = nodes
        d["_node_depths"] = depths
        d["_graph_layers"] = layers

    def _insert(self, outputs: list) -> None:
        """Make the nodes of `outputs` (KerasTensors of AddLoss/AddMetric calls) part of
        every call, as tf_keras's `_insert_layers`."""
        before = list(self._ancillary)
        self._ancillary.extend(outputs)
        try:
            self._map()
        except ValueError as e:
            self.__dict__["_ancillary"] = before
            self._map()
            raise ValueError(f"{self.name}: a symbolic loss or metric must be computed from "
                             f"the model's inputs: {e}") from None

    def add_loss(self, losses: Any, **kwargs: Any) -> None:
        """Add loss terms (Layer.add_loss); a KerasTensor computed from the model's inputs
        becomes a loss computed at every call, through an `AddLoss` layer in the graph,
        as in tf_keras's functional models.

        Example:
            >>> import tapeflow as tf
            >>> x = tf.keras.Input(shape=(2,))
            >>> hidden = tf.keras.layers.Dense(2, kernel_initializer="ones")(x)
            >>> model = tf.keras.Model(x, hidden)
            >>> model.add_loss(0.1 * tf.reduce_sum(hidden))
            >>> _ = model(tf.ones([1, 2]))
            >>> [round(float(v), 4) for v in model.losses]
            [0.4]
        """
        items = losses if isinstance(losses, (list, tuple)) else [losses]
        symbolic = [v for v in items if isinstance(v, KerasTensor)]
        if symbolic:
            self._insert([AddLoss()(v) for v in symbolic])
        rest = [v for v in items if not isinstance(v, KerasTensor)]
        if rest:
            super().add_loss(rest, **kwargs)

    def add_metric(self, value: Any, name: str | None = None, **kwargs: Any) -> None:
        """Track the mean of `value` under `name` (Layer.add_metric); a KerasTensor
        computed from the model's inputs is tracked at every call, through an
        `AddMetric` layer in the graph, as in tf_keras's functional models.

        Example:
            >>> import tapeflow as tf
            >>> x = tf.keras.Input(shape=(2,))
            >>> model = tf.keras.Model(x, 2.0 * x)
            >>> model.add_metric(tf.reduce_mean(x), name="mean_input")
            >>> _ = model(tf.constant([[1.0, 3.0]]))
            >>> [(m.name, float(m.result())) for m in model.metrics]
            [('mean_input', 2.0)]
        """
        if not isinstance(value, KerasTensor):
            return super().add_metric(value, name=name, **kwargs)
        if name is None:
            raise ValueError("Please provide a name for your metric, e.g. "
                             "`model.add_metric(tf.reduce_sum(x), name='sum_of_x')`.")
        aggregation = kwargs.get("aggregation", "mean")
        self._insert([AddMetric(aggregation=aggregation, metric_name=name)(value)])

    # -------------------------------------------------- structure
    @property
    def inputs(self) -> list[KerasTensor]:
        """The model's input KerasTensors, as a flat list."""
        return list(self._input_list)

    @property
    def outputs(self) -> list[KerasTensor]:
        """The model's output KerasTensors, as a flat list."""
        return list(self._output_list)

    @property
    def input(self) -> Any:
        """The input KerasTensor, or the inputs' structure."""
        return self._nested_inputs

    @property
    def output(self) -> Any:
        """The output KerasTensor, or the outputs' structure."""
        return self._nested_outputs

    @property
    def input_shape(self) -> Any:
        """The input shape (a list of them for several inputs)."""
        shapes = [x.shape for x in self._input_list]
        return shapes[0] if len(shapes) == 1 else shapes

    @property
    def layers(self) -> list[Layer]:
        """The layers of the graph, input layers first, in Keras' order (by depth)."""
        return list(self._graph_layers)

    def _children(self) -> list[Layer]:
        extra = [s for s in self._sublayers if not any(s is l for l in self._graph_layers)]
        return list(self._graph_layers) + extra

    # -------------------------------------------------- calling
    def _flatten_call_inputs(self, inputs: Any) -> list[Any]:
        want = self._nested_inputs
        n = len(self._input_list)
        if isinstance(want, dict):
            if not isinstance(inputs, dict):
                raise ValueError(f'Layer "{self.name}" expects a dict of inputs with keys '
                                 f"{sorted(want)}; received {type(inputs).__name__}.")
            missing = [k for k in want if k not in inputs]
            if missing:
                raise ValueError(f'Layer "{self.name}": missing input(s) {missing}; expected a '
                                 f"dict with keys {sorted(want)}, received keys "
                                 f"{sorted(inputs)}.")
            return nest.flatten_up_to(want, {k: inputs[k] for k in want})
        if isinstance(inputs, dict) and not isinstance(want, dict):
            names = [x.name for x in self._input_list]
            if set(names) <= set(inputs):
                return [inputs[k] for k in names]
            raise ValueError(f'Layer "{self.name}" expects inputs named {names}; received a '
                             f"dict with keys {sorted(inputs)}.")
        if isinstance(inputs, (list, tuple)) and (
                n > 1 or any(isinstance(v, (TensorBase, np.ndarray)) for v in inputs)):
            flat = list(inputs)
        else:
            flat = [inputs]  # one tensor, or one input given as nested lists of numbers
        if len(flat) != n:
            raise ValueError(f'Layer "{self.name}" expects {n} input(s), but it received '
                             f"{len(flat)} input tensors. Pass them as a list in the order of "
                             f"model.inputs ({[x.name for x in self._input_list]}).")
        return flat

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if is_symbolic(inputs) or is_symbolic((args, kwargs)):
            return call_symbolic(self, inputs, args, kwargs)
        with call_context(self):
            return self.call(inputs, *args, **kwargs)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Replay the graph of layer calls on `inputs`, in an order that computes each
        layer's inputs first."""
        flat = self._flatten_call_inputs(inputs)
        masks = None if mask is None else nest.flatten(mask)
        if masks is not None and len(masks) != len(flat):
            raise ValueError(f'Layer "{self.name}": `mask` must hold one mask (or None) per '
                             f"input, {len(flat)}; received {len(masks)}.")
        values: dict[int, Any] = {}
        for i, (kt, x) in enumerate(zip(self._input_list, flat, strict=True)):
            t = as_tensor(x, self.name, f"inputs[{i}]")
            shape = np.shape(t._value)
            if len(shape) != len(kt.shape) or any(w is not None and w != g
                                                   for w, g in zip(kt.shape, shape)):
                raise ValueError(f'Input {i} of layer "{self.name}" is incompatible with the '
                                 f"layer: expected shape={tuple(kt.shape)}, found "
                                 f"shape={shape}. (input {kt.name!r} of the model)")
            if t.dtype != kt.dtype:
                t = cast(t, kt.dtype)
            if masks is not None and masks[i] is not None:
                set_mask(t, masks[i])  # as tf_keras: the input tensor carries the mask
            values[id(kt)] = t
        for node in self._nodes:
            if node.is_input or all(id(o) in values for o in node.flat_outputs):
                continue
            args, kwargs = nest.map_structure(
                lambda v: values[id(v)] if isinstance(v, KerasTensor) else v,
                (node.args, node.kwargs))
            if training is not None and "training" not in kwargs and \
                    call_accepts(node.layer.call)[0]:
                kwargs["training"] = training
            out = node.layer(*args, **kwargs)
            got = nest.flatten(out)
            if len(got) != len(node.flat_outputs):
                raise ValueError(f"Layer {node.layer.name!r} returned {len(got)} output(s) "
                                 f"where the graph recorded {len(node.flat_outputs)}.")
            for kt, t in zip(node.flat_outputs, got, strict=True):
                values[id(kt)] = t
                if isinstance(getattr(kt, "_keras_mask", None), KerasTensor):
                    values[id(kt._keras_mask)] = get_mask(t)
        return nest.pack_sequence_as(self._nested_outputs,
                                     [values[id(o)] for o in self._output_list])

    def get_config(self) -> dict:
        """The model as tf_keras 2.21 writes it: its layers' configs with the calls between
        them (`inbound_nodes`), `input_layers` and `output_layers`
        (functional_config.py).

        Example:
            >>> import tapeflow as tf
            >>> x = tf.keras.Input(shape=(3,), name="x")
            >>> model = tf.keras.Model(x, tf.keras.layers.Dense(2, name="d")(x), name="m")
            >>> config = model.get_config()
            >>> [(layer["name"], layer["inbound_nodes"]) for layer in config["layers"]]
            [('x', []), ('d', [[['x', 0, 0, {}]]])]
            >>> config["input_layers"], config["output_layers"]
            ([['x', 0, 0]], [['d', 0, 0]])
        """
        return functional_config(self)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Functional":
        """A new model from `get_config()`: new layers, called as the config says (copy
        the weights with `get_weights`/`set_weights`). As in tf_keras, a Lambda saved as
        code runs that code: load configs you trust.

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> a = tf.keras.Input(shape=(2,))
            >>> hidden = tf.keras.layers.Dense(3, activation="relu")(a)
            >>> model = tf.keras.Model(a, tf.keras.layers.Dense(1)(hidden) + a[:, :1])
            >>> copy = tf.keras.Model.from_config(model.get_config())
            >>> copy.set_weights(model.get_weights())
            >>> x = np.ones((1, 2), np.float32)
            >>> bool(np.all(copy(x).numpy() == model(x).numpy()))
            True
        """
        return functional_from_config(cls, config, custom_objects)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The masks of the outputs: the graph is run on `inputs` (tf_keras' rule).

        Example:
            >>> import tapeflow as tf
            >>> ids = tf.keras.Input(shape=(None,), dtype="int32")
            >>> model = tf.keras.Model(ids, tf.keras.layers.Embedding(4, 2, mask_zero=True)(ids))
            >>> model.compute_mask(tf.constant([[2, 0]])).numpy()
            array([[ True, False]])
        """
        return nest.map_structure(get_mask, self.call(inputs, mask=mask))

    def build(self, input_shape: Any = None) -> None:
        """A functional model is built when made: its layers were built by their calls."""
        self.built = True

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shapes recorded in the graph (batch dim None)."""
        shapes = [TensorShape(o.shape) for o in self._output_list]
        return shapes[0] if len(shapes) == 1 else shapes

    # -------------------------------------------------- summary
    def _own_nodes(self, layer: Layer) -> list[tuple[int, Node]]:
        ids = set(self._node_depths)
        return [(i, n) for i, n in enumerate(layer.__dict__.get("_inbound_nodes", []))
                if id(n) in ids]

    def _sequential_like(self) -> bool:
        by_depth = collections.Counter(self._node_depths.values())
        if any(c > 1 for c in by_depth.values()):
            return False
        if any(len(n.keras_inputs) > 1 for n in self._nodes):
            return False
        return all(len(self._own_nodes(l)) <= 1 for l in self._graph_layers)

    def _summary_layout(self) -> tuple[int, list, list]:
        if self._sequential_like():
            return super()._summary_layout()
        return 98, [0.3, 0.6, 0.70, 1.0], ["Layer (type)", "Output Shape", "Param #",
                                           "Connected to"]

    def _summary_shape(self, layer: Layer) -> str:
        shapes = []
        for node in layer.__dict__.get("_inbound_nodes", []):
            outs = [_shape_str(o.shape) for o in node.flat_outputs if isinstance(o, KerasTensor)]
            shapes.append(f"[{', '.join(outs)}]" if node.is_input or len(outs) != 1
                          else outs[0])
        if not shapes or any(s != shapes[0] for s in shapes):
            return "multiple"
        return shapes[0]

    def _summary_fields(self, layer: Layer) -> list:
        if self._sequential_like():
            return super()._summary_fields(layer)
        links = []
        for _, node in self._own_nodes(layer):
            for kt in node.keras_inputs:
                source, node_index, tensor_index = kt._keras_history
                links.append(f"{source.name}[{node_index}][{tensor_index}]")
        return [f"{layer.name} ({type(layer).__name__})", self._summary_shape(layer),
                layer.count_params(), links]


class AddLoss(Layer):
    """A functional model's symbolic loss (`Functional.add_loss`): adds its input to
    the losses at each call and returns it, as tf_keras's layer of that name.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.keras.functional import AddLoss
        >>> layer = AddLoss()
        >>> _ = layer(tf.constant(3.0))
        >>> [float(v) for v in layer.losses]
        [3.0]
    """

    def __init__(self, unconditional: bool = False, **kwargs: Any) -> None:
        super().__init__(name=kwargs.pop("name", None) or unique_name("add_loss"), **kwargs)
        self._autocast = False
        self.unconditional = unconditional

    def call(self, inputs: Any) -> Any:
        self.add_loss(inputs)
        return inputs

    def get_config(self) -> dict:
        return dict(super().get_config(), unconditional=self.unconditional)


class AddMetric(Layer):
    """A functional model's symbolic metric (`Functional.add_metric`): tracks the mean
    of its input under `metric_name` and returns it, as tf_keras's layer of that name.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.keras.functional import AddMetric
        >>> layer = AddMetric(metric_name="level")
        >>> _ = layer(tf.constant(1.0)); _ = layer(tf.constant(3.0))
        >>> layer.metrics[0].name, float(layer.metrics[0].result())
        ('level', 2.0)
    """

    def __init__(self, aggregation: str | None = None, metric_name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=kwargs.pop("name", None) or unique_name("add_metric"), **kwargs)
        self._autocast = False
        self.aggregation = aggregation
        self.metric_name = metric_name

    def call(self, inputs: Any) -> Any:
        self.add_metric(inputs, name=self.metric_name, aggregation=self.aggregation)
        return inputs

    def get_config(self) -> dict:
        return dict(super().get_config(), aggregation=self.aggregation,
                    metric_name=self.metric_name)


Model._functional_class = Functional
