"""Keras layer wrappers: `TimeDistributed` (a layer applied to every time step) and
`Bidirectional` (an RNN run forwards and backwards), with tf_keras 2.21's arguments,
weight names and order, configs, masks and errors; `Wrapper`, their base.

NOTE(time-distributed): tf_keras' TimeDistributed runs a built-in layer (a class of
Keras', or a subclass of one) that is not stateful once, on the time steps folded into
the batch ((batch, time, ...) -> (batch·time, ...) and back), which passes a mask the
same way; any other layer (a Layer subclass of the user's own, whose call may not
accept a larger batch, or a stateful one) runs at each time step, with the masked steps
repeating the previous step's output (NOTE(rnn-masks)). Its weights are the wrapped
layer's, named as tf_keras names them: built under the wrapper's name
("time_distributed/kernel:0").
"""

from __future__ import annotations

import contextlib
import copy
import inspect
from typing import Any, Iterator

from .. import nest, ops
from ..module import name_scope
from ..tensor import TensorShape
from .base_layer import InputSpec, Layer
from .cells import map_shapes, shape_leaves
from .recurrent import states_kept_if_symbolic
from .serialization import deserialize, serialize
from .common import call_accepts

__all__ = ["Wrapper", "TimeDistributed", "Bidirectional"]

_MERGE_MODES = ("sum", "mul", "ave", "concat", None)


def _scope(name: str) -> Any:
    try:
        return name_scope(name)
    except ValueError:  # a name no scope accepts: the weights go unscoped
        return contextlib.nullcontext()


@contextlib.contextmanager
def _named(layer: Layer, name: str) -> Iterator[None]:
    """`layer` under another name for a while: a wrapped layer built by its wrapper names
    its weights after the wrapper, as tf_keras' (whose weights take the call's scope)."""
    own = layer.__dict__["_name"]
    layer.__dict__["_name"] = name
    try:
        yield
    finally:
        layer.__dict__["_name"] = own


def _rename(layer: Layer, name: str) -> None:
    """Give `layer` a new name for good, with the name scope that goes with it."""
    d = layer.__dict__
    d["_name"] = name
    try:
        with name_scope(name) as scope:
            d["_scope_name"] = scope
    except ValueError:
        d["_scope_name"] = ""
    d["_module_name_scope"] = name_scope(d["_scope_name"])


def _builtin(layer: Layer) -> bool:
    """tf_keras' is_builtin_layer: the layer's class is Keras' own or a subclass of one
    (other than the base Layer)."""
    return any(c.__module__.startswith("tapeflow.keras.") and c is not Layer
               for c in type(layer).__mro__)


def _fold(x: Any) -> Any:
    """(batch, time, ...) -> (batch·time, ...)."""
    return ops.shape.reshape(x, [-1] + list(x.shape[2:]))


def _unfold(y: Any, batch: int, steps: int) -> Any:
    """(batch·time, ...) -> (batch, time, ...); the batch as -1 where it can be inferred, so
    a trace need not read it."""
    return ops.shape.reshape(y, [-1 if steps else batch, steps] + list(y.shape[1:]))


def _where_steps(keep: Any, new: Any, old: Any) -> Any:
    if new.ndim > 1:
        keep = ops.shape.reshape(keep, [-1] + [1] * (new.ndim - 1))
    return ops.elementwise.where(keep, new, old)


class Wrapper(Layer):
    """The base of layers that wrap another layer, `layer`: its config holds the wrapped
    layer's serialized config (`keras.layers.serialize`), and `from_config` rebuilds the
    wrapped layer from it, as tf_keras'.

    Example:
        >>> import tapeflow as tf
        >>> td = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(2, name="inner"))
        >>> td.get_config()["layer"]["class_name"], isinstance(td, tf.keras.layers.Wrapper)
        ('Dense', True)
    """

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"Layer {layer} supplied to wrapper is not a supported layer "
                             f"type. Please ensure wrapped layer is a valid TF-Keras layer.")
        super().__init__(**kwargs)
        self.layer = layer

    def build(self, input_shape: Any = None) -> None:
        """Build the wrapped layer for `input_shape` (if not built)."""
        if not self.layer.built:
            self.layer._maybe_build(input_shape)
        super().build(input_shape)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        with states_kept_if_symbolic(inputs, args, kwargs):
            return super().__call__(inputs, *args, **kwargs)

    def get_config(self) -> dict:
        return dict(super().get_config(), layer=serialize(self.layer))

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Wrapper":
        """The wrapper of `get_config()`, around a wrapped layer rebuilt from its config."""
        config = copy.deepcopy(config)
        layer = deserialize(config.pop("layer"), custom_objects)
        return cls(layer, **config)


class TimeDistributed(Wrapper):
    """Apply `layer` to every time step of (batch, time, ...) inputs (or a structure of
    them): the output is (batch, time, ...) of the layer's per-step outputs, with the same
    weights at every step (NOTE(time-distributed)). A mask (batch, time) passes to a layer
    whose call takes one, and on to the output.

    Example:
        >>> import tapeflow as tf
        >>> td = tf.keras.layers.TimeDistributed(tf.keras.layers.Dense(3), name="td")
        >>> td(tf.ones([2, 5, 4])).shape
        TensorShape([2, 5, 3])
        >>> [v.name for v in td.weights]
        ['td/kernel:0', 'td/bias:0']
    """

    def __init__(self, layer: Layer, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `TimeDistributed` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        super().__init__(layer, **kwargs)
        self.supports_masking = True
        self._always_use_reshape = _builtin(layer) and not getattr(layer, "stateful", False)

    def build(self, input_shape: Any) -> None:
        """Check for (batch, time, ...) inputs and build the layer for one step's."""
        if any(len(s) < 3 for s in shape_leaves(input_shape)):
            raise ValueError(f"`TimeDistributed` Layer should be passed an `input_shape ` "
                             f"with at least 3 dimensions, received: {input_shape}")
        spec = map_shapes(lambda s: InputSpec(shape=(None, None) + tuple(s[2:])), input_shape)
        self.input_spec = spec if isinstance(spec, InputSpec) else None
        step_shape = map_shapes(lambda s: TensorShape((s[0],) + tuple(s[2:])), input_shape)
        if not self.layer.built:
            with _named(self.layer, self.name):
                self.layer._maybe_build(step_shape)
        Layer.build(self, input_shape)

    def compute_output_shape(self, input_shape: Any) -> Any:
        steps = shape_leaves(input_shape)[0][1]
        step_shape = map_shapes(lambda s: TensorShape((s[0],) + tuple(s[2:])), input_shape)
        out = self.layer.compute_output_shape(step_shape)
        return map_shapes(lambda s: TensorShape((s[0], steps) + tuple(s[1:])), out)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """The layer on every time step (NOTE(time-distributed))."""
        takes_training, takes_mask = call_accepts(self.layer.call)
        kwargs = {"training": training} if takes_training else {}
        batch, steps = nest.flatten(inputs)[0].shape[:2]
        mask = nest.flatten(mask)[0]
        if self._always_use_reshape or not steps:  # (no step to run the layer at)
            if takes_mask and mask is not None:
                kwargs["mask"] = _fold(mask)
            out = self.layer(nest.map_structure(_fold, inputs), **kwargs)
            return nest.map_structure(lambda y: _unfold(y, batch, steps), out)
        outputs, previous = [], None
        for t in range(steps):
            out = self.layer(nest.map_structure(lambda x: x[:, t], inputs), **kwargs)
            if mask is not None:  # NOTE(rnn-masks), as tf_keras' loop over the steps
                keep = mask[:, t]
                if previous is None:
                    previous = nest.map_structure(ops.creation.zeros_like, out)
                out = nest.map_structure(lambda n, o: _where_steps(keep, n, o), out, previous)
                previous = out
            outputs.append(out)
        return nest.map_structure(lambda *o: ops.shape.stack(list(o), axis=1), *outputs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for a layer run step by step; else the layer's own mask of the
        folded steps, unfolded, or (for a layer that makes none) the input mask reduced
        to (batch, time), as tf_keras."""
        mask = nest.flatten(mask)[0]
        if not self._always_use_reshape:
            return mask
        batch, steps = nest.flatten(inputs)[0].shape[:2]
        folded = None if mask is None else _fold(mask)
        inner = self.layer.compute_mask(nest.map_structure(_fold, inputs), folded)
        if inner is None:
            if mask is None:
                return None
            while mask.ndim > 2:
                mask = ops.reduction.reduce_any(mask, axis=-1)
            return mask
        return _unfold(inner, batch, steps)


class Bidirectional(Wrapper):
    """Run an RNN (`layer`) forwards and a copy of it backwards (`backward_layer`, by
    default `layer`'s config with `go_backwards` flipped), and merge their outputs
    (`merge_mode` "concat", "sum", "mul", "ave", or None for the list of both). The copies
    are named "forward_<name>" and "backward_<name>", and hold the weights, forward
    first, as tf_keras'; `layer` itself is left unbuilt. With `return_state`, the
    forward states follow the output, then the backward ones; an `initial_state`'s first
    half goes to the forward layer. `weights` (forward first) are set at build (tf_keras
    2.21 accepts and ignores them).

    Example:
        >>> import tapeflow as tf
        >>> bi = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(4, name="lstm"),
        ...                                    name="bi")
        >>> bi(tf.ones([2, 5, 3])).shape
        TensorShape([2, 8])
        >>> [v.name for v in bi.weights][:2]
        ['bi/forward_lstm/lstm_cell/kernel:0', 'bi/forward_lstm/lstm_cell/recurrent_kernel:0']
    """

    def __init__(self, layer: Layer, merge_mode: str | None = "concat", weights: Any = None,
                 backward_layer: Layer | None = None, **kwargs: Any) -> None:
        if not isinstance(layer, Layer):
            raise ValueError(f"Please initialize `Bidirectional` layer with a "
                             f"`tf.keras.layers.Layer` instance. Received: {layer}")
        if backward_layer is not None and not isinstance(backward_layer, Layer):
            raise ValueError(f"`backward_layer` need to be a `tf.keras.layers.Layer` "
                             f"instance. Received: {backward_layer}")
        if merge_mode not in _MERGE_MODES:
            raise ValueError(f"Invalid merge mode. Received: {merge_mode}. Merge mode should "
                             f'be one of {{"sum", "mul", "ave", "concat", None}}')
        Layer.__init__(self, **kwargs)
        self.__dict__["layer"] = layer  # not tracked: the copies below hold the weights
        self.forward_layer = _recreate(layer)
        if backward_layer is None:
            self.backward_layer = _recreate(layer, go_backwards=True)
        else:
            self.backward_layer = backward_layer
            self.__dict__["_backward_layer_config"] = serialize(backward_layer)
        _rename(self.forward_layer, "forward_" + self.forward_layer.name)
        _rename(self.backward_layer, "backward_" + self.backward_layer.name)
        self._verify_layer_config()
        for copied in (self.forward_layer, self.backward_layer):
            if getattr(copied, "zero_output_for_mask", None) is not None:
                copied.zero_output_for_mask = copied.return_sequences
        self.merge_mode = merge_mode
        if weights:
            half = len(weights) // 2
            self.forward_layer._initial_weights = list(weights[:half])
            self.backward_layer._initial_weights = list(weights[half:])
        self.stateful = bool(getattr(layer, "stateful", False))
        self.return_sequences = bool(layer.return_sequences)
        self.return_state = bool(layer.return_state)
        self.supports_masking = True
        self.__dict__["_trainable"] = bool(kwargs.get("trainable", layer.trainable))
        self.input_spec = layer.input_spec

    def _verify_layer_config(self) -> None:
        forward, backward = self.forward_layer, self.backward_layer
        if forward.go_backwards == backward.go_backwards:
            raise ValueError(f"Forward layer and backward layer should have different "
                             f"`go_backwards` value.forward_layer.go_backwards = "
                             f"{forward.go_backwards},backward_layer.go_backwards = "
                             f"{backward.go_backwards}")
        for attr in ("stateful", "return_sequences", "return_state"):
            a, b = getattr(forward, attr), getattr(backward, attr)
            if a != b:
                raise ValueError(f"Forward layer and backward layer are expected to have the "
                                 f'same value for attribute "{attr}", got "{a}" for forward '
                                 f'layer and "{b}" for backward layer')

    def build(self, input_shape: Any) -> None:
        """Build both layers (weights named "<this>/forward_<layer>/...")."""
        with _scope(self.name):
            for copied in (self.forward_layer, self.backward_layer):
                if not copied.built:
                    copied._maybe_build(input_shape)
        Layer.build(self, input_shape)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(inputs, list):  # tf_keras' [inputs, *initial_states]
            if len(inputs) > 1 and kwargs.get("initial_state") is None:
                kwargs["initial_state"] = list(inputs[1:])
            inputs = inputs[0]
        state = kwargs.get("initial_state")
        if state is not None:
            state = list(state) if isinstance(state, (list, tuple)) else [state]
            if len(state) % 2:
                raise ValueError(f"When passing `initial_state` to a Bidirectional RNN, the "
                                 f"state should be a list containing the states of the "
                                 f"underlying RNNs. Received: {state}")
            kwargs["initial_state"] = state
        return super().__call__(inputs, *args, **kwargs)

    def call(self, inputs: Any, training: Any = None, mask: Any = None,
             initial_state: Any = None) -> Any:
        """Both directions, merged; the states of both with `return_state`."""
        takes_training, takes_mask = call_accepts(self.layer.call)
        kwargs: dict = {}
        if takes_training:
            kwargs["training"] = training
        if takes_mask:
            kwargs["mask"] = mask
        if "initial_state" in inspect.signature(self.layer.call).parameters:
            half = None if initial_state is None else len(initial_state) // 2
            y = self.forward_layer(inputs, initial_state=None if half is None
                                   else initial_state[:half], **kwargs)
            y_rev = self.backward_layer(inputs, initial_state=None if half is None
                                        else initial_state[half:], **kwargs)
        else:
            y, y_rev = self.forward_layer(inputs, **kwargs), self.backward_layer(inputs, **kwargs)
        states: list = []
        if self.return_state:
            states = list(y[1:]) + list(y_rev[1:])
            y, y_rev = y[0], y_rev[0]
        if self.return_sequences:
            y_rev = ops.shape.reverse(y_rev, [1])
        if self.merge_mode == "concat":
            out: Any = ops.shape.concat([y, y_rev], axis=-1)
        elif self.merge_mode == "sum":
            out = y + y_rev
        elif self.merge_mode == "ave":
            out = (y + y_rev) / 2
        elif self.merge_mode == "mul":
            out = y * y_rev
        else:
            out = [y, y_rev]
        if not self.return_state:
            return out
        return (out if isinstance(out, list) else [out]) + states

    def reset_states(self, states: Any = None) -> None:
        """Reset both layers' states (stateful only): zeros, or `states` (a list, its first
        half the forward layer's).

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> bi = tf.keras.layers.Bidirectional(tf.keras.layers.GRU(2, stateful=True))
            >>> bi.build((3, 4, 5))
            >>> bi.reset_states([np.ones((3, 2)), 2 * np.ones((3, 2))])
            >>> float(bi.backward_layer.states[0][0, 0])
            2.0
        """
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        if states is None:
            self.forward_layer.reset_states()
            self.backward_layer.reset_states()
            return
        if not isinstance(states, (list, tuple)):
            raise ValueError(f"Unrecognized value for `states`. Expected `states` to be list "
                             f"or tuple. Received: {states}")
        half = len(states) // 2
        self.forward_layer.reset_states(list(states[:half]))
        self.backward_layer.reset_states(list(states[half:]))

    def compute_output_shape(self, input_shape: Any) -> Any:
        out = self.forward_layer.compute_output_shape(input_shape)
        state_shapes = list(out[1:]) if self.return_state else []
        out = TensorShape(out[0] if self.return_state else out)
        if self.merge_mode == "concat":
            last = out[-1]
            out = TensorShape(tuple(out[:-1]) + (None if last is None else 2 * last,))
        elif self.merge_mode is None:
            out = [out, TensorShape(out)]
        if not self.return_state:
            return out
        return (out if isinstance(out, list) else [out]) + state_shapes + list(state_shapes)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for sequences (for each of two unmerged ones), else None; None
        for the states."""
        if isinstance(mask, list):
            mask = mask[0]
        if self.return_sequences:
            output_mask: Any = mask if self.merge_mode else [mask, mask]
        else:
            output_mask = None if self.merge_mode else [None, None]
        if not self.return_state:
            return output_mask
        none = [None] * 2 * len(nest.flatten(self.forward_layer.states))
        return (output_mask if isinstance(output_mask, list) else [output_mask]) + none

    def get_config(self) -> dict:
        config = dict(super().get_config(), merge_mode=self.merge_mode)
        if "_backward_layer_config" in self.__dict__:
            config["backward_layer"] = self.__dict__["_backward_layer_config"]
        return config

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Bidirectional":
        """The layer of `get_config()`: the wrapped (and any backward) layer rebuilt."""
        config = copy.deepcopy(config)
        config["layer"] = deserialize(config["layer"], custom_objects)
        backward = config.pop("backward_layer", None)
        if backward is not None:
            config["backward_layer"] = deserialize(backward, custom_objects)
        return cls(**config)


def _recreate(layer: Layer, go_backwards: bool = False) -> Layer:
    """A new layer of `layer`'s config (`go_backwards` flipped for the backward copy)."""
    config = layer.get_config()
    if go_backwards:
        config["go_backwards"] = not config["go_backwards"]
    from_config = type(layer).from_config
    if "custom_objects" in inspect.signature(from_config).parameters:
        cell = getattr(layer, "cell", None)
        custom = {} if cell is None else {type(cell).__name__: type(cell)}
        return from_config(config, custom_objects=custom)
    return from_config(config)
