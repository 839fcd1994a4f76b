"""Keras models: `Sequential`, a linear stack of layers (tf.keras / Keras 2 behaviour), and
`Model` (training.py)."""

from __future__ import annotations

from typing import Any, Iterable

import numpy as np

from .. import dtypes as _dt
from ..tensor import TensorShape, Variable, TensorBase
from .base_layer import Layer
from .penalties import call_context
from .functional import InputLayer, KerasTensor
from .masks import get_mask
from .serialization import deserialize, serialize
from ..saving.keras_model import load_model, save_model
from .training import Model
from .common import SYMBOLIC, call_accepts, check_input

__all__ = ["Model", "Sequential", "load_model", "save_model"]


def _relax(old: TensorShape | None, new: Any) -> TensorShape:
    """Dims that differ between two calls' shapes become None (Keras' relaxed shape)."""
    new = TensorShape(new)
    if old is None:
        return new
    if len(old) != len(new):
        return new
    return TensorShape(a if a == b else None for a, b in zip(old, new, strict=True))


class Sequential(Model):
    """A linear stack of layers: each layer's output is the next one's input.

    The model is built (its layers' weights created) on the first call, by
    `build(input_shape)`, or at once when its first layer was given
    ``input_shape=``. `trainable_variables` lists the layers' trainable
    weights in layer order, ready for ``tape.gradient``; `weights` lists all of
    them layer by layer. A layer that takes ``training``/``mask`` gets the
    model call's.

    Example:
        >>> import tapeflow as tf
        >>> model = tf.keras.Sequential([
        ...     tf.keras.layers.Conv2D(4, 3, activation="relu", name="conv"),
        ...     tf.keras.layers.MaxPooling2D(name="pool"),
        ...     tf.keras.layers.Flatten(name="flat"),
        ...     tf.keras.layers.Dense(10, name="logits"),
        ... ], name="cnn")
        >>> model(tf.zeros([2, 10, 10, 1])).shape
        TensorShape([2, 10])
        >>> [v.name for v in model.trainable_variables]
        ['conv/kernel:0', 'conv/bias:0', 'logits/kernel:0', 'logits/bias:0']
        >>> model.summary()
        Model: "cnn"
        _________________________________________________________________
         Layer (type)                Output Shape              Param #
        =================================================================
         conv (Conv2D)               (2, 8, 8, 4)              40
        <BLANKLINE>
         pool (MaxPooling2D)         (2, 4, 4, 4)              0
        <BLANKLINE>
         flat (Flatten)              (2, 64)                   0
        <BLANKLINE>
         logits (Dense)              (2, 10)                   650
        <BLANKLINE>
        =================================================================
        Total params: 690 (2.70 KB)
        Trainable params: 690 (2.70 KB)
        Non-trainable params: 0 (0.00 Byte)
        _________________________________________________________________
    """

    def __init__(self, layers: Iterable[Layer] | Layer | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(name=name, **kwargs)
        self._autocast = False  # as Keras' models: each layer casts its own inputs
        self.__dict__["_layers"] = []
        self._input_shape: TensorShape | None = None
        # what a leading InputLayer (or keras.Input) declared: shape, dtype, name
        self.__dict__["_input_layer"] = None
        if layers is not None:
            if isinstance(layers, Layer) or not isinstance(layers, (list, tuple)):
                layers = [layers]
            for layer in layers:
                self.add(layer)

    # -------------------------------------------------- structure
    @property
    def layers(self) -> list[Layer]:
        """The model's layers, in order."""
        return list(self._layers)

    def _children(self) -> list[Layer]:
        extra = [s for s in self._sublayers if not any(s is l for l in self._layers)]
        return list(self._layers) + extra

    def add(self, layer: Layer) -> None:
        """Append a layer; a built model builds it at once from the previous output shape.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential()
            >>> model.add(tf.keras.layers.Dense(8, input_shape=(4,)))
            >>> model.add(tf.keras.layers.Dense(1))
            >>> [w.shape for w in model.weights]
            [TensorShape([4, 8]), TensorShape([8]), TensorShape([8, 1]), TensorShape([1])]
        """
        if isinstance(layer, KerasTensor) and isinstance(getattr(layer.node, "layer", None),
                                                         InputLayer):
            layer = layer.node.layer  # Sequential([keras.Input(shape), ...])
        if isinstance(layer, InputLayer):
            if self._layers:
                raise ValueError(f"An InputLayer ({layer.name!r}) can only be the first layer of "
                                 f"a Sequential model; {self.name!r} already has "
                                 f"{len(self._layers)} layer(s).")
            self.__dict__["_input_layer"] = layer
            return
        if not isinstance(layer, Layer):
            raise TypeError(f"The added layer must be an instance of class Layer. "
                            f"Received: layer={layer!r} of type {type(layer)}.")
        if any(layer.name == l.name for l in self._layers):
            raise ValueError(f'All layers added to a Sequential model should have unique names. '
                             f'Name "{layer.name}" is already the name of a layer in this model. '
                             f"Update the `name` argument to pass a unique name.")
        self._layers.append(layer)
        declared = self._input_layer._batch_input_shape if self._input_layer is not None \
            else layer._batch_input_shape
        if len(self._layers) == 1 and declared is not None:
            self.build(declared)
        elif self.built and self._input_shape is not None:
            self.build(self._input_shape)  # the new layer is built from its input shape
        else:
            self.built = False

    def pop(self) -> None:
        """Remove the last layer.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2), tf.keras.layers.Dense(3)])
            >>> model.pop()
            >>> len(model.layers)
            1
        """
        if not self._layers:
            raise TypeError("There are no layers in the model.")
        self._layers.pop()

    def get_layer(self, name: str | None = None, index: int | None = None) -> Layer:
        """A layer by name or by index.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, name="out")])
            >>> model.get_layer("out") is model.layers[0]
            True
        """
        if index is not None and name is not None:
            raise ValueError(f"Provide only a layer name or a layer index. Received: "
                             f"index={index}, name={name}.")
        if index is not None:
            if len(self._layers) <= index:
                raise ValueError(f"Was asked to retrieve layer at index {index} but model only "
                                 f"has {len(self._layers)} layers.")
            return self._layers[index]
        if name is not None:
            for layer in self._layers:
                if layer.name == name:
                    return layer
            raise ValueError(f"No such layer: {name}. Existing layers are: "
                             f"{[l.name for l in self._layers]}.")
        raise ValueError("Provide either a layer name or layer index at `get_layer`.")

    # -------------------------------------------------- build and call
    def build(self, input_shape: Any = None) -> None:
        """Build every layer for inputs of `input_shape` (the batch dim may be None).

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Flatten(), tf.keras.layers.Dense(3)])
            >>> model.build((None, 2, 2))
            >>> model.layers[1].kernel.shape
            TensorShape([4, 3])
        """
        if input_shape is None:
            input_shape = self._input_shape
        if input_shape is None:
            raise ValueError("You must provide an `input_shape` argument.")
        shape = TensorShape(input_shape)
        for layer in self._layers:
            if layer.input_spec is not None:
                check_input(layer, layer.input_spec, shape)
            if not layer.built:
                layer._maybe_build(shape)
            shape = layer.compute_output_shape(shape)
            layer.__dict__["_output_shape"] = shape
        self._input_shape = TensorShape(input_shape)
        self._build_input_shape = self._input_shape
        self.built = True

    def __call__(self, inputs: Any, training: Any = None, mask: Any = None,
                 **kwargs: Any) -> Any:
        symbolic = SYMBOLIC[0]
        if symbolic is not None and symbolic[0](inputs):
            if training is not None:
                kwargs["training"] = training
            return symbolic[1](self, inputs, (), kwargs)
        with call_context(self):
            return self.call(inputs, training=training, mask=mask, **kwargs)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Run the layers in order; each gets `training`/`mask` if its `call` takes them."""
        x = inputs
        value = x._value if isinstance(x, TensorBase) else x if isinstance(x, np.ndarray) else None
        record = not self.built or (value is not None and self._input_shape is not None
                                    and not self._input_shape.is_compatible_with(np.shape(value)))
        for layer in self._layers:
            kwargs = {}
            if call_accepts(layer.call)[0] and training is not None:
                kwargs["training"] = training
            if mask is not None:  # the model's mask is its first layer's input mask
                kwargs["mask"] = mask
            x = layer(x, **kwargs)  # later layers read the mask their input carries
            mask = None
            if record and isinstance(x, TensorBase):
                old = layer.__dict__.get("_output_shape")
                layer.__dict__["_output_shape"] = _relax(old if self.built else None,
                                                         np.shape(x._value))
        if record:
            if value is not None:
                self._input_shape = _relax(self._input_shape if self.built else None,
                                           np.shape(value))
                self.__dict__["_input_dtype"] = _dt.from_numpy(value.dtype).name
            self.built = True
        return x

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The mask of the model's output: the model is run on `inputs` (tf_keras' rule).

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Embedding(4, 2, mask_zero=True)])
            >>> model.compute_mask(tf.constant([[2, 0]])).numpy()
            array([[ True, False]])
        """
        return get_mask(self.call(inputs, mask=mask))

    def compute_output_shape(self, input_shape: Any) -> Any:
        """The shape after every layer."""
        shape = TensorShape(input_shape)
        for layer in self._layers:
            shape = layer.compute_output_shape(shape)
        return shape

    # -------------------------------------------------- config
    def get_config(self) -> dict:
        """The model's name and its layers' serialized configs (`keras.layers.serialize`),
        led by an InputLayer's when the input shape is known, as tf_keras writes them.

        Example:
            >>> import tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
            >>> [entry["class_name"] for entry in model.get_config()["layers"]]
            ['InputLayer', 'Dense']
        """
        layers = []
        if self._layers and self._input_shape is not None:
            declared = self._input_layer
            first = self._layers[0]
            layers.append({"module": "keras.layers", "class_name": "InputLayer",
                           "config": {"batch_input_shape": tuple(self._input_shape),
                                      "dtype": declared.dtype if declared is not None
                                      else self.__dict__.get("_input_dtype") or first.dtype,
                                      "sparse": False, "ragged": False,
                                      "name": declared.name if declared is not None
                                      else f"{first.name}_input", "optional": False},
                           "registered_name": None})
        layers += [serialize(layer) for layer in self._layers]
        return {"name": self.name, "layers": layers}

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Sequential":
        """A new model of `get_config()`'s layers, built if the config gives the input
        shape; copy the weights with `get_weights`/`set_weights`.

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> model = tf.keras.Sequential([tf.keras.layers.Dense(2, input_shape=(3,))])
            >>> copy = tf.keras.Sequential.from_config(model.get_config())
            >>> copy.set_weights(model.get_weights())
            >>> x = np.ones((1, 3), np.float32)
            >>> bool(np.all(copy(x).numpy() == model(x).numpy()))
            True
        """
        model = cls(name=config.get("name"))
        for entry in config.get("layers", []):
            model.add(deserialize(entry, custom_objects))
        shape = config.get("build_input_shape")
        if not model.built and shape is not None and model.layers:
            model.build(shape)
        return model

    # -------------------------------------------------- weights
    def _assert_weights_created(self) -> None:
        if not self.built:
            raise ValueError(f"Weights for model '{self.name}' have not yet been created. Weights "
                             f"are created when the model is first called on inputs or `build()` "
                             f"is called with an `input_shape`.")

    @property
    def trainable_weights(self) -> list[Variable]:
        """The layers' trainable weights, layer by layer ([] when not trainable)."""
        self._assert_weights_created()
        return super().trainable_weights

    @property
    def non_trainable_weights(self) -> list[Variable]:
        """The layers' other weights (all of them when the model is not trainable)."""
        self._assert_weights_created()
        return super().non_trainable_weights

    def _summary_shape(self, layer: Layer) -> str:
        shape = layer.__dict__.get("_output_shape")
        if shape is None:
            return "?"
        return str(tuple(shape)) if isinstance(shape, TensorShape) else str(shape)
