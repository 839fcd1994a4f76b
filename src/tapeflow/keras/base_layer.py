"""The Layer base class and `InputSpec`; the helpers other keras modules share with it
(names, input checks, the class registry) are in common.py."""

from __future__ import annotations

import inspect
import re
from typing import Any, Iterable

import numpy as np

from .. import dtypes as _dt
from .. import nest, ops
from ..core import no_recorders
from ..module import Module, name_scope
from ..ops.convert import as_tensor
from ..saving import deferred
from ..scopes import keeping_states
from ..tensor import Tensor, TensorShape, Variable, TensorBase
from . import constraints, initializers, regularizers
from .backend import floatx as backend_floatx
from .masks import get_mask, set_mask
from .penalties import WeightPenalty, add_call_loss, call_context, current_losses, in_call
from .common import LAYER_CLASSES, MEAN_METRIC, SYMBOLIC, call_accepts, check_input, dedup, unique_name

__all__ = ["InputSpec", "Layer"]


# ---------------------------------------------------------------- names
def _to_snake_case(name: str) -> str:
    intermediate = re.sub("(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    snake = re.sub("([a-z])([A-Z])", r"\1_\2", intermediate).lower()
    return snake if snake[0] != "_" else "private" + snake


# ---------------------------------------------------------------- input specs
class InputSpec:
    """What a layer accepts: `ndim`, `min_ndim`, `max_ndim`, and `axes` ({axis: size}).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.InputSpec(min_ndim=4, axes={-1: 3})
        InputSpec(min_ndim=4, axes={-1: 3})
    """

    def __init__(self, dtype: Any = None, shape: Any = None, ndim: int | None = None,
                 max_ndim: int | None = None, min_ndim: int | None = None,
                 axes: dict | None = None, allow_last_axis_squeeze: bool = False,
                 name: str | None = None) -> None:
        self.dtype = dtype
        self.shape = None if shape is None else tuple(shape)
        self.ndim = len(self.shape) if self.shape is not None else ndim
        self.max_ndim, self.min_ndim = max_ndim, min_ndim
        self.axes = {int(k): v for k, v in (axes or {}).items()}
        self.name = name

    def __repr__(self) -> str:
        parts = [f"{k}={v!r}" for k, v in (("dtype", self.dtype), ("shape", self.shape),
                                           ("ndim", self.ndim), ("max_ndim", self.max_ndim),
                                           ("min_ndim", self.min_ndim)) if v is not None]
        if self.axes:
            parts.append(f"axes={self.axes}")
        return f"InputSpec({', '.join(parts)})"


# ---------------------------------------------------------------- helpers
def _shape_of(x: Any) -> Any:
    if isinstance(x, TensorBase):
        return TensorShape(np.shape(x._value))
    if isinstance(x, (list, tuple)):
        return type(x)(_shape_of(v) for v in x)
    if isinstance(x, dict):
        return {k: _shape_of(v) for k, v in x.items()}
    return TensorShape(np.shape(x))


def _holds_tensor(x: Any) -> bool:
    if isinstance(x, (TensorBase, np.ndarray)):
        return True
    if isinstance(x, (list, tuple)):
        return any(_holds_tensor(v) for v in x)
    return isinstance(x, dict)


def _convert_inputs(x: Any, who: str) -> Any:
    """A tensor, or (for multi-input layers) a structure of tensors."""
    if type(x) is Tensor:
        return x
    if isinstance(x, (list, tuple)) and _holds_tensor(x) and \
            not all(isinstance(v, np.ndarray) for v in x):
        return type(x)(_convert_inputs(v, who) for v in x)
    if isinstance(x, dict):
        return {k: _convert_inputs(v, who) for k, v in x.items()}
    return as_tensor(x, who, "inputs")


def _masks_of(x: Any) -> Any:
    """The masks of the inputs' tensors, in their structure; None when none has one."""
    if isinstance(x, TensorBase):
        return get_mask(x)
    flat = [get_mask(v) for v in nest.flatten(x)]
    if all(m is None for m in flat):
        return None
    return nest.pack_sequence_as(x, flat)


_LAYER_KWARGS = {"input_dim", "input_shape", "batch_input_shape", "batch_size", "weights",
                 "activity_regularizer", "autocast", "implementation", "dynamic"}


# ---------------------------------------------------------------- the base layer
class Layer(Module):
    """Base layer: builds its weights on the first call from the input shape.

    Subclasses implement `build(input_shape)` (creating weights with `add_weight`)
    and `call(inputs)`; `compute_output_shape` is optional. Calling the layer
    converts the inputs to tensors, checks them against `input_spec`, builds
    the layer if needed and casts floating inputs to the layer's dtype.

    A layer is a `tf.Module`: a Module holding layers finds their weights in its
    `variables`, and a layer's `submodules` are the layers it holds.

    Example:
        >>> import tapeflow as tf
        >>> class ScaleByWeight(tf.keras.layers.Layer):
        ...     def build(self, input_shape):
        ...         self.w = self.add_weight("w", shape=(input_shape[-1],), initializer="ones")
        ...     def call(self, inputs):
        ...         return inputs * self.w
        >>> layer = ScaleByWeight(name="scale")
        >>> layer(tf.constant([[1., 2.]])).numpy()
        array([[1., 2.]], dtype=float32)
        >>> [v.name for v in layer.trainable_variables]
        ['scale/w:0']
    """

    _input_hint = ""

    _convert_input_args = True  # a call's inputs become tensors (an op layer's need not)

    def __new__(cls, *args: Any, **kwargs: Any) -> "Layer":
        self = super().__new__(cls)
        if not cls.__module__.startswith("tapeflow."):  # a user's class: tf_keras' auto config
            self.__dict__["_auto_config"] = _auto_config(cls, args, kwargs)
        return self

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.__module__.startswith("tapeflow.keras.") and not cls.__name__.startswith("_"):
            LAYER_CLASSES.setdefault(cls.__name__, cls)

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 dynamic: bool = False, **kwargs: Any) -> None:
        unknown = set(kwargs) - _LAYER_KWARGS
        if unknown:
            raise TypeError(f"Keyword argument not understood: {sorted(unknown)[0]!r} "
                            f"(layer {type(self).__name__}).")
        d = self.__dict__
        d["_trainable"] = bool(trainable)
        d["_own_weights"] = []
        d["_sublayers"] = []
        d["_tracked_variables"] = []
        d["_eager_losses"] = []     # add_loss in a call: cleared by the next outermost call
        d["_callable_losses"] = []  # add_loss of a callable (weight penalties): kept
        d["_metric_objects"] = {}   # add_metric's means, by name
        d["activity_regularizer"] = regularizers.get(kwargs.get("activity_regularizer"))
        if name is not None and not isinstance(name, str):
            raise TypeError(f"A layer's `name` must be a string; got {name!r}.")
        # Not Module.__init__: Keras names need not be Python identifiers, and `name` is
        # Module's read-only property over `_name`.
        d["_name"] = name or unique_name(_to_snake_case(type(self).__name__))
        try:
            with name_scope(d["_name"]) as scope:
                d["_scope_name"] = scope
        except ValueError:  # a name no scope accepts ("a b"): its weights go unscoped
            d["_scope_name"] = ""
        d["_module_name_scope"] = name_scope(d["_scope_name"])
        self.dtype = _dt.as_dtype(dtype if dtype is not None else backend_floatx()).name
        self.built = False
        self.input_spec: InputSpec | None = None
        self._autocast = bool(kwargs.get("autocast", True))
        self._build_input_shape = None
        self._initial_weights = kwargs.get("weights")
        batch_input_shape = kwargs.get("batch_input_shape")
        if batch_input_shape is None and kwargs.get("input_shape") is not None:
            batch_input_shape = (kwargs.get("batch_size"),) + tuple(kwargs["input_shape"])
        self._batch_input_shape = None if batch_input_shape is None else tuple(batch_input_shape)

    # -------------------------------------------------- attribute tracking
    def __setattr__(self, name: str, value: Any) -> None:
        d = self.__dict__
        if "_sublayers" in d and not name.startswith("__"):
            for v in (value if isinstance(value, (list, tuple)) else (value,)):
                if isinstance(v, Layer) and v is not self and \
                        not any(v is s for s in d["_sublayers"]):
                    d["_sublayers"].append(v)
                elif isinstance(v, Variable) and \
                        not any(v is w for w in d["_tracked_variables"] + d["_own_weights"]):
                    d["_tracked_variables"].append(v)
        object.__setattr__(self, name, value)
        if isinstance(value, Variable):  # NOTE(deferred-restore)
            deferred.weight_created(self, name, value)

    # -------------------------------------------------- trainable
    @property
    def trainable(self) -> bool:
        """Whether the layer's weights are trainable; setting it sets every sublayer's too."""
        return self._trainable

    @trainable.setter
    def trainable(self, value: bool) -> None:
        for layer in self._flatten_layers():
            layer.__dict__["_trainable"] = bool(value)

    def _flatten_layers(self) -> list["Layer"]:
        out, stack = [], [self]
        while stack:
            layer = stack.pop()
            if any(layer is o for o in out):
                continue
            out.append(layer)
            stack.extend(reversed(layer._children()))
        return out

    def _children(self) -> list["Layer"]:
        return list(self._sublayers)

    # -------------------------------------------------- weights
    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = None, regularizer: Any = None, trainable: bool | None = None,
                   constraint: Any = None, **kwargs: Any) -> Variable:
        """Create a weight variable of the layer (named ``"<layer>/<name>"``).

        The default initializer is ``"glorot_uniform"`` for floating dtypes and
        ``"zeros"`` otherwise, as Keras; `dtype` defaults to the layer's dtype.

        Example:
            >>> import tapeflow as tf
            >>> layer = tf.keras.layers.Layer(name="demo")
            >>> layer.add_weight("b", shape=(2,), initializer="zeros")
            <tapeflow.Variable 'demo/b:0' shape=(2,) dtype=float32, numpy=array([0., 0.], dtype=float32)>
        """
        regularizer = regularizers.get(regularizer)
        constraint = constraints.get(constraint)
        dt = _dt.as_dtype(dtype if dtype is not None else self.dtype)
        shape = () if shape is None else tuple(int(d) for d in shape)
        if initializer is None:
            initializer = "glorot_uniform" if dt.is_floating else "zeros"
        init = initializers.get(initializer)
        with no_recorders():  # as Keras' init_scope: weight creation is no traced or taped op
            value = init(shape, dtype=dt)
            v = Variable(value, trainable=True if trainable is None else bool(trainable),
                         name=f"{self.name}/{name or 'Variable'}", dtype=dt,
                         constraint=constraint)
        # its name in checkpoints (NOTE(object-graph) in saving/objects.py): unique in the layer
        names = self.__dict__.setdefault("_weight_names", {})
        local, taken = (name or "Variable").replace("/", "_"), set(names.values())
        while local in taken:
            local += "_"
        names[id(v)] = local
        self._own_weights.append(v)
        deferred.weight_created(self, local, v)  # NOTE(deferred-restore)
        if regularizer is not None:
            self.add_loss(WeightPenalty(regularizer, v))
        return v

    # -------------------------------------------------- losses and metrics
    def add_loss(self, losses: Any, **kwargs: Any) -> None:
        """Add loss terms to the layer's `losses`: tensors computed in `call` (kept until
        the next call of the outermost layer, as tf_keras), or callables of no arguments
        (weight penalties, evaluated each time `losses` is read). `Model.fit` adds them
        to the compiled loss.

        Example:
            >>> import tapeflow as tf
            >>> class Penalized(tf.keras.layers.Layer):
            ...     def call(self, x):
            ...         self.add_loss(0.5 * tf.reduce_sum(x))
            ...         return x
            >>> layer = Penalized()
            >>> _ = layer(tf.constant([1.0, 3.0]))
            >>> [float(v) for v in layer.losses]
            [2.0]
        """
        for loss in (losses if isinstance(losses, (list, tuple)) else [losses]):
            if loss is None:
                continue
            if callable(loss) and not isinstance(loss, TensorBase):
                self._callable_losses.append(loss)
            elif in_call():
                add_call_loss(self, as_tensor(loss, f"{self.name}.add_loss", "losses"))
            else:
                raise ValueError("Expected a symbolic Tensors or a callable for the loss value. "
                                 "Please wrap your loss computation in a zero argument `lambda`.")

    @property
    def losses(self) -> list:
        """The loss terms of this layer and its sublayers: the tensors added in the last
        call, then the callables (weight penalties) evaluated now, layer by layer."""
        out = []
        for layer in self._flatten_layers():
            d = layer.__dict__
            out += current_losses(self, layer)
            for penalty in d.get("_callable_losses", []):
                value = penalty()
                if value is not None:
                    out.append(as_tensor(value, f"{layer.name}.losses", "loss"))
        return out

    def add_metric(self, value: Any, name: str | None = None, **kwargs: Any) -> None:
        """Track the mean of `value` under `name`: a `keras.metrics.Mean` of this layer,
        updated at each call, listed in `metrics` and in `fit`'s logs.

        Example:
            >>> import tapeflow as tf
            >>> class Watched(tf.keras.layers.Layer):
            ...     def call(self, x):
            ...         self.add_metric(tf.reduce_mean(x), name="mean_input")
            ...         return x
            >>> layer = Watched()
            >>> _ = layer(tf.constant([1.0, 3.0])); _ = layer(tf.constant([5.0]))
            >>> layer.metrics[0].name, float(layer.metrics[0].result())
            ('mean_input', 3.5)
        """
        if name is None:
            raise ValueError("Please provide a name for your metric, e.g. "
                             "`self.add_metric(tf.reduce_sum(inputs), name='mean_activation')`.")
        if kwargs.get("aggregation") not in (None, "mean"):
            raise ValueError(f"add_metric: aggregation={kwargs['aggregation']!r} is not "
                             "supported; only 'mean' (the default).")
        metrics = self.__dict__.setdefault("_metric_objects", {})
        if name not in metrics:
            with no_recorders():  # as tf_keras's init_scope: the metric's state is no op
                metrics[name] = MEAN_METRIC[0](name=name)
        if not keeping_states():  # a symbolic call's probe runs on zeros: no update
            metrics[name].update_state(value)

    def _regularize_activity(self, outputs: Any) -> None:
        """The activity regularizer's penalty of each output over its batch size (tf_keras
        divides by it), added to `losses`."""
        for y in nest.flatten(outputs):
            if isinstance(y, TensorBase) and y.shape.rank:
                penalty = self.activity_regularizer(y)
                batch = ops.elementwise.cast(ops.creation.shape(y)[0], penalty.dtype)
                self.add_loss(penalty / batch)

    @property
    def metrics(self) -> list:
        """The metrics added with `add_metric` to this layer and its sublayers."""
        out: list = []
        for layer in self._flatten_layers():
            out += list(layer.__dict__.get("_metric_objects", {}).values())
        return out

    def _own_variables(self) -> list[Variable]:
        return dedup(self._own_weights + self._tracked_variables)

    @property
    def trainable_weights(self) -> list[Variable]:
        """The trainable weights of this layer and its sublayers ([] when not trainable)."""
        if not self.trainable:
            return []
        out = [w for w in self._own_variables() if w.trainable]
        for child in self._children():
            out += child.trainable_weights
        return dedup(out)

    @property
    def non_trainable_weights(self) -> list[Variable]:
        """The weights not trained: all of them when the layer is not trainable."""
        own = self._own_variables()
        if self.trainable:
            out = [w for w in own if not w.trainable]
            for child in self._children():
                out += child.non_trainable_weights
        else:
            out = [w for w in own if w.trainable] + [w for w in own if not w.trainable]
            for child in self._children():
                out += child.weights
        return dedup(out)

    @property
    def weights(self) -> list[Variable]:
        """All weights: the trainable ones, then the others."""
        return dedup(self.trainable_weights + self.non_trainable_weights)

    @property
    def variables(self) -> list[Variable]:
        """The same as `weights`."""
        return self.weights

    @property
    def trainable_variables(self) -> list[Variable]:
        """The same as `trainable_weights`."""
        return self.trainable_weights

    @property
    def non_trainable_variables(self) -> list[Variable]:
        """The same as `non_trainable_weights`."""
        return self.non_trainable_weights

    def get_weights(self) -> list[np.ndarray]:
        """The weights' values, as NumPy arrays, in the order of `weights`.

        Example:
            >>> import tapeflow as tf
            >>> dense = tf.keras.layers.Dense(2, kernel_initializer="ones")
            >>> dense.build((None, 1))
            >>> dense.get_weights()
            [array([[1., 1.]], dtype=float32), array([0., 0.], dtype=float32)]
        """
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights: Iterable[Any]) -> None:
        """Assign the weights' values from arrays, in the order of `weights`.

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> dense = tf.keras.layers.Dense(1)
            >>> dense.build((None, 2))
            >>> dense.set_weights([np.array([[1.], [2.]]), np.array([0.5])])
            >>> dense(tf.constant([[1., 1.]])).numpy()
            array([[3.5]], dtype=float32)
        """
        params, weights = self.weights, list(weights)
        if len(params) != len(weights):
            raise ValueError(f'You called `set_weights(weights)` on layer "{self.name}" with a '
                             f"weight list of length {len(weights)}, but the layer was expecting "
                             f"{len(params)} weights.")
        values = []
        for p, w in zip(params, weights, strict=True):
            arr = np.asarray(w.numpy() if hasattr(w, "numpy") else w)
            if tuple(arr.shape) != tuple(p.shape):
                raise ValueError(f"Layer {self.name} weight shape {tuple(p.shape)} is not "
                                 f"compatible with provided weight shape {tuple(arr.shape)}.")
            values.append(arr.astype(p.dtype.as_numpy_dtype))
        for p, v in zip(params, values, strict=True):
            p.assign(v)

    def count_params(self) -> int:
        """The number of scalars in the layer's weights (the layer must be built).

        Example:
            >>> import tapeflow as tf
            >>> conv = tf.keras.layers.Conv2D(8, 3)
            >>> conv.build((None, 28, 28, 1))
            >>> conv.count_params()
            80
        """
        if not self.built:
            raise ValueError(f"You tried to call `count_params` on layer {self.name}, but the "
                             f"layer isn't built. You can build it manually via: "
                             f"`{self.name}.build(batch_input_shape)`.")
        return int(sum(int(np.prod(w.shape, dtype=np.int64)) for w in self.weights))

    # -------------------------------------------------- build and call
    def build(self, input_shape: Any) -> None:
        """Create the weights for inputs of `input_shape` (the base layer has none)."""
        self._build_input_shape = input_shape
        self.built = True

    def call(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        """The layer's computation (the base layer returns its inputs)."""
        return inputs

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The output shape for an input shape (None for unknown dims).

        The base implementation runs `call` on zeros (unknown dims taken as 1) with
        no tape or trace seeing it, and reports the batch dim as given.
        """
        shape = TensorShape(input_shape)
        if not self.built:
            self._maybe_build(shape)
        dims = [1 if d is None else d for d in shape]
        probe = Tensor(np.zeros(dims, _dt.as_dtype(self.dtype)._np))
        with no_recorders():
            out = TensorShape(np.shape(self.call(probe)._value))
        if len(shape) and shape[0] is None and len(out):
            out = TensorShape((None,) + tuple(out[1:]))
        return out

    def _maybe_build(self, input_shape: Any) -> None:
        with no_recorders():
            self.build(input_shape)
        self.built = True
        self._build_input_shape = input_shape
        if self._initial_weights is not None:
            initial, self._initial_weights = self._initial_weights, None
            self.set_weights(initial)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        symbolic = SYMBOLIC[0]
        if symbolic is not None and type(inputs) is not Tensor and (
                symbolic[0](inputs) or (args or kwargs) and symbolic[0]((args, kwargs))):
            return symbolic[1](self, inputs, args, kwargs)
        x = _convert_inputs(inputs, self.name) if self._convert_input_args else inputs
        takes_training, takes_mask = call_accepts(self.call)
        masking = self.supports_masking
        # NOTE(masks): an explicit `mask=` wins; otherwise the inputs' own masks (tf_keras'
        # `_keras_mask`) reach a `call` that takes `mask` and this layer's `compute_mask`.
        if "mask" in kwargs:
            input_masks = kwargs["mask"] if takes_mask else kwargs.pop("mask")
        elif masking or takes_mask:
            input_masks = _masks_of(x)
            if takes_mask and input_masks is not None:
                kwargs["mask"] = input_masks
        else:
            input_masks = None
        if not takes_training:
            kwargs.pop("training", None)
        single = isinstance(x, TensorBase)
        if single and self.input_spec is not None:
            check_input(self, self.input_spec, np.shape(x._value))
        if not self.built:
            self._maybe_build(_shape_of(x))
            if single and self.input_spec is not None:  # build may have narrowed the spec
                check_input(self, self.input_spec, np.shape(x._value))
        if self._autocast:
            x = self._cast(x)
        with call_context(self):
            outputs = self.call(x, *args, **kwargs)
            if self.__dict__.get("activity_regularizer") is not None:
                self._regularize_activity(outputs)
        if masking:
            self._set_output_masks(x, outputs, input_masks)
        return outputs

    # -------------------------------------------------- masks
    @property
    def supports_masking(self) -> bool:
        """Whether the layer passes masks on (through `compute_mask`); by default, whether
        its class overrides `compute_mask`, as tf_keras."""
        value = self.__dict__.get("_supports_masking")
        if value is None:
            return type(self).compute_mask is not Layer.compute_mask
        return value

    @supports_masking.setter
    def supports_masking(self, value: bool) -> None:
        self.__dict__["_supports_masking"] = bool(value)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask of the layer's output for `inputs` with input `mask`: the input mask
        where the layer supports masking, else None (and a TypeError if a mask was given),
        as tf_keras. Layers that change the time axis, or make masks, override it.

        Example:
            >>> import tapeflow as tf
            >>> mask = tf.constant([[True, False]])
            >>> tf.keras.layers.Dense(3).compute_mask(tf.ones([1, 2, 4]), mask).numpy()
            array([[ True, False]])
            >>> tf.keras.layers.Flatten().compute_mask(tf.ones([1, 2, 4])) is None
            True
        """
        if not self.supports_masking:
            if any(m is not None for m in nest.flatten(mask)):
                raise TypeError(f"Layer {self.name} does not support masking, but was passed "
                                f"an input_mask: {mask}")
            return None
        return mask

    def _set_output_masks(self, inputs: Any, outputs: Any, input_masks: Any) -> None:
        """tf_keras' _set_mask_metadata: attach `compute_mask`'s masks to the outputs, unless
        the layer set them itself."""
        if self.__dict__.get("_compute_output_and_mask_jointly"):
            return
        if input_masks is None and type(self).compute_mask is Layer.compute_mask:
            return  # the base rule passes the (absent) input mask on: nothing to attach
        flat = nest.flatten(outputs)
        if all(get_mask(o) is not None for o in flat):
            return
        masks = self.compute_mask(inputs, input_masks)
        if masks is None:
            return
        for out, mask in zip(flat, nest.flatten(masks)):  # not strict: tf_keras zips
            if isinstance(out, TensorBase):
                set_mask(out, mask)

    def _cast(self, x: Any) -> Any:
        """Keras' autocast: floating inputs take the layer's dtype; others are left alone."""
        if isinstance(x, TensorBase):
            if _dt.kind(x._value.dtype) == "f" and x._value.dtype != _dt.as_dtype(self.dtype)._np:
                return ops.elementwise.cast(x, self.dtype)
            return x
        if isinstance(x, (list, tuple)):
            return type(x)(self._cast(v) for v in x)
        if isinstance(x, dict):
            return {k: self._cast(v) for k, v in x.items()}
        return x

    @property
    def output_shape(self) -> Any:
        """The shape of the layer's output in the model that called it (Keras' summary column)."""
        shape = self.__dict__.get("_output_shape")
        if shape is None:
            raise AttributeError(f"The layer {self.name} has never been called and thus has no "
                                 f"defined output shape.")
        return shape

    def get_config(self) -> dict:
        """The layer's constructor arguments, as tf_keras names them: `name`, `trainable`,
        `dtype` (and `batch_input_shape` when given) for the base; each layer adds its
        own. ``type(layer).from_config(layer.get_config())`` makes a new layer like it.

        Example:
            >>> import tapeflow as tf
            >>> config = tf.keras.layers.Dropout(0.25, name="drop").get_config()
            >>> config["rate"], config["name"]
            (0.25, 'drop')
            >>> tf.keras.layers.Dropout.from_config(config).rate
            0.25
        """
        config = {"name": self.name, "trainable": self.trainable, "dtype": self.dtype}
        if self._batch_input_shape is not None:
            config["batch_input_shape"] = tuple(self._batch_input_shape)
        auto = self.__dict__.get("_auto_config")
        if auto is not None and type(self).get_config is Layer.get_config:
            # A user's class without get_config, made with plain arguments: they are its
            # config, with the base's keys its __init__ does not take dropped (tf_keras).
            arguments, takes_kwargs = auto
            if not takes_kwargs:
                config = {k: v for k, v in config.items() if k in arguments}
            config.update(arguments)
        return config

    def build_from_config(self, config: dict) -> None:
        """Build the layer (make its weights) for a saved ``build_config``, ``{"input_shape":
        ...}`` (keras.layers.deserialize calls it, as tf_keras)."""
        self._maybe_build(config["input_shape"])

    @classmethod
    def from_config(cls, config: dict) -> "Layer":
        """A new layer (unbuilt: no weights) from the dict of `get_config`."""
        try:
            return cls(**config)
        except Exception as e:
            raise TypeError(f"Error when deserializing class '{cls.__name__}' using "
                            f"config={config}.\n\nException encountered: {e}") from e

    def __repr__(self) -> str:
        cls = type(self)
        return f"<{cls.__module__}.{cls.__name__} name={self.name!r}, built={self.built}>"


def _plain(x: Any) -> bool:
    if x is None or type(x) in (bool, int, float, str):
        return True
    if type(x) in (list, tuple):
        return all(_plain(v) for v in x)
    return type(x) is dict and all(type(k) is str and _plain(v) for k, v in x.items())


def _auto_config(cls: type, args: tuple, kwargs: dict) -> tuple[dict, bool] | None:
    """A user's layer's constructor arguments by name, and whether its __init__ takes
    **kwargs, where every one is plain data (numbers, strings, lists, dicts): the config
    tf_keras makes for a class without get_config. None otherwise."""
    try:
        sig = inspect.signature(cls.__init__)
        bound = sig.bind(None, *args, **kwargs)
    except (TypeError, ValueError):
        return None
    params = list(sig.parameters.values())[1:]
    arguments: dict = {}
    for p in params:
        if p.name not in bound.arguments:
            continue
        value = bound.arguments[p.name]
        if p.kind is p.VAR_KEYWORD:
            arguments.update(value)
        elif p.kind is p.VAR_POSITIONAL:
            if value:
                return None
        else:
            arguments[p.name] = value
    if not _plain(arguments):
        return None
    return arguments, any(p.kind is p.VAR_KEYWORD for p in params)


# ---------------------------------------------------------------- Dense
