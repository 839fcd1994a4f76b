"""Keras layers without a family of their own: `Dropout`, `Lambda`, `Embedding`, `Masking`.

Dropout draws its mask with tapeflow's random ops (NOTE(draws) in ops/random.py), so a
traced training step draws a new mask at every replay, and `tf.random.set_seed` makes
the masks reproducible.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

import numpy as np

from .. import ops
from ..tensor import TensorShape
from . import initializers
from .base_layer import Layer
from .penalties import weight_options, weight_options_config
from .masks import set_mask
from .common import function_config, function_from_config

__all__ = ["Dropout", "Lambda", "Embedding", "Masking"]


class Dropout(Layer):
    """With ``training=True``, zero each input with probability `rate` and scale the
    rest by ``1 / (1 - rate)``; otherwise (the default) the identity. `noise_shape`
    shares one mask along its axes of size 1 (None takes the input's size).

    Example:
        >>> import tapeflow as tf
        >>> tf.random.set_seed(0)
        >>> drop = tf.keras.layers.Dropout(0.5)
        >>> x = tf.ones([2, 4])
        >>> drop(x).numpy()                          # inference: unchanged
        array([[1., 1., 1., 1.],
               [1., 1., 1., 1.]], dtype=float32)
        >>> sorted(set(drop(x, training=True).numpy().ravel().tolist()))  # kept ones doubled
        [0.0, 2.0]
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not 0 <= rate <= 1:
            raise ValueError(f"Invalid value received for argument `rate`. Expected a float "
                             f"value between 0 and 1. Received: rate={rate!r}")
        self.rate = float(rate)
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)
        self.seed = seed
        self.supports_masking = True

    def _mask_shape(self, shape: tuple) -> tuple:
        if self.noise_shape is None:
            return shape
        if len(self.noise_shape) != len(shape):
            raise ValueError(f"Dropout: `noise_shape` {self.noise_shape} must have the rank of "
                             f"the inputs, shape {shape}.")
        return tuple(s if n is None else int(n) for n, s in zip(self.noise_shape, shape,
                                                                strict=True))

    def call(self, inputs: Any, training: Any = None) -> Any:
        """The inputs, with dropout applied when `training` is true."""
        if not training or self.rate == 0:
            return ops.shape.identity(inputs)
        if self.rate == 1:
            return inputs * 0.0
        # tf.nn.dropout's form: keep where u >= rate, scale the kept values
        u = ops.random.uniform(self._mask_shape(ops.structural.shape_of(inputs)),
                               dtype=inputs.dtype,
                               seed=self.seed)
        keep = ops.elementwise.cast(ops.elementwise.greater_equal(u, self.rate), inputs.dtype)
        return inputs * (1.0 / (1.0 - self.rate)) * keep

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), rate=self.rate, noise_shape=self.noise_shape,
                    seed=self.seed)


class Lambda(Layer):
    """Wrap a function of tensors as a layer; `arguments` are extra keyword arguments,
    and `training`/`mask` reach the function if it takes them. Weights the function
    creates are not tracked (as Keras warns): write a Layer subclass for those.

    Example:
        >>> import tapeflow as tf
        >>> square = tf.keras.layers.Lambda(lambda x, power: x ** power, arguments={"power": 2})
        >>> square(tf.constant([[1., 2., 3.]])).numpy()
        array([[1., 4., 9.]], dtype=float32)
    """

    def __init__(self, function: Callable, output_shape: Any = None, mask: Any = None,
                 arguments: dict | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not callable(function):
            raise TypeError(f"Lambda: `function` must be callable; received {function!r}.")
        self.function = function
        self.arguments = dict(arguments or {})
        self._output_shape_arg = output_shape
        self.mask = mask
        try:
            params = inspect.signature(function).parameters
        except (TypeError, ValueError):
            params = {}
        self._fn_takes = {k for k in ("training", "mask") if k in params}

    def call(self, inputs: Any, mask: Any = None, training: Any = None) -> Any:
        """``function(inputs, **arguments)``."""
        kwargs = dict(self.arguments)
        if "training" in self._fn_takes:
            kwargs["training"] = training
        if "mask" in self._fn_takes:
            kwargs["mask"] = mask
        return self.function(inputs, **kwargs)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The `mask` argument: called as ``mask(inputs, mask)`` if callable, else itself
        (so with none, the layer's output has no mask, as tf_keras)."""
        if callable(self.mask):
            return self.mask(inputs, mask)
        return self.mask

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self._output_shape_arg is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape_arg):
            return TensorShape(self._output_shape_arg(input_shape))
        return TensorShape((TensorShape(input_shape)[0],) + tuple(self._output_shape_arg))

    def get_config(self) -> dict:
        """tf_keras' Lambda config: a Python function as its marshalled code, defaults and
        closure (``function_type="lambda"``), another callable by name (``"function"``),
        and `output_shape` and `mask` the same way."""
        function, function_type, module = function_config(self.function)
        shape, shape_type, shape_module = function_config(self._output_shape_arg,
                                                          allow_raw=True)
        config = {"function": function, "function_type": function_type, "module": module,
                  "output_shape": shape, "output_shape_type": shape_type,
                  "output_shape_module": shape_module}
        if self.mask is not None:
            mask, mask_type, mask_module = function_config(self.mask)
            config.update(mask=mask, mask_type=mask_type, mask_module=mask_module)
        config["arguments"] = self.arguments
        return dict(super().get_config(), **config)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "Lambda":
        """A Lambda from `get_config()`. A function saved as code is rebuilt from it, with
        its module's globals (and `custom_objects`): as in tf_keras, load configs you
        trust only, since the code runs when the layer is called."""
        config = dict(config)
        config["function"] = function_from_config(config, custom_objects, "function",
                                                  "module", "function_type")
        config["output_shape"] = function_from_config(config, custom_objects, "output_shape",
                                                      "output_shape_module",
                                                      "output_shape_type")
        config["mask"] = function_from_config(config, custom_objects, "mask", "mask_module",
                                              "mask_type") if "mask" in config else None
        return cls(**config)


class Embedding(Layer):
    """Map integer indices in ``[0, input_dim)`` to rows of a trainable
    ``embeddings`` matrix [input_dim, output_dim] (initialized uniform on
    [-0.05, 0.05], as Keras).

    Example:
        >>> import tapeflow as tf
        >>> emb = tf.keras.layers.Embedding(10, 3)
        >>> emb(tf.constant([[1, 2], [9, 0]])).shape
        TensorShape([2, 2, 3])
        >>> emb.embeddings.shape
        TensorShape([10, 3])
    """

    def __init__(self, input_dim: int, output_dim: int, embeddings_initializer: Any = "uniform",
                 embeddings_regularizer: Any = None, activity_regularizer: Any = None,
                 embeddings_constraint: Any = None, mask_zero: bool = False,
                 input_length: int | None = None, sparse: bool = False, **kwargs: Any) -> None:
        if "input_shape" not in kwargs and "batch_input_shape" not in kwargs:
            kwargs["input_shape"] = (input_length,)  # as tf_keras: (None,) without a length
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        for arg, value in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"Both `input_dim` and `output_dim` should be positive, "
                                 f"Received {arg}={value!r}.")
        if sparse:
            raise NotImplementedError("Embedding: sparse=True (SparseTensor outputs) is not "
                                      "supported by tapeflow; use the default dense outputs.")
        weight_options(self, embeddings_regularizer=embeddings_regularizer,
                       embeddings_constraint=embeddings_constraint)
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.mask_zero = bool(mask_zero)
        self.supports_masking = self.mask_zero
        self.input_length = input_length
        self._autocast = False  # integer indices must not become floats
        self.embeddings = None

    def build(self, input_shape: Any) -> None:
        """Create `embeddings` [input_dim, output_dim]."""
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer,
                                          regularizer=self.embeddings_regularizer,
                                          constraint=self.embeddings_constraint)
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        """The rows of `embeddings` at `inputs`."""
        if inputs.dtype.is_floating:
            inputs = ops.elementwise.cast(inputs, "int32")
        elif inputs.dtype.name not in ("int32", "int64"):
            inputs = ops.elementwise.cast(inputs, "int64")
        out = ops.indexing.gather(self.embeddings, inputs)
        if out.dtype.name != self.dtype:
            out = ops.elementwise.cast(out, self.dtype)
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """With `mask_zero`, True where the index is not 0; else None."""
        if not self.mask_zero:
            return None
        return ops.elementwise.not_equal(inputs, 0)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(tuple(TensorShape(input_shape)) + (self.output_dim,))

    def get_config(self) -> dict:
        return dict(super().get_config(), input_dim=self.input_dim, output_dim=self.output_dim,
                    embeddings_initializer=initializers.serialize(self.embeddings_initializer),
                    **weight_options_config(self, "embeddings_regularizer",
                                            "activity_regularizer", "embeddings_constraint"),
                    mask_zero=self.mask_zero,
                    input_length=self.input_length)


class Masking(Layer):
    """Mask the time steps whose features all equal `mask_value`: the output is the input
    with those steps zeroed, and its mask (read by LSTM, GRU, ...) is False there. Inputs
    are (batch, time, ...); a step is kept when any of its last-axis values differs.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[[1., 2.], [0., 0.], [3., 0.]]])
        >>> masking = tf.keras.layers.Masking(mask_value=0.)
        >>> masking.compute_mask(x).numpy()
        array([[ True, False,  True]])
        >>> out = masking(x)
        >>> tf.keras.masks.get_mask(out).numpy()
        array([[ True, False,  True]])
    """

    def __init__(self, mask_value: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True
        self.mask_value = mask_value
        self._compute_output_and_mask_jointly = True  # call() sets the mask itself

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """True where any value of the step's last axis differs from `mask_value`."""
        return ops.reduction.reduce_any(ops.elementwise.not_equal(inputs, self.mask_value),
                                        axis=-1)

    def call(self, inputs: Any) -> Any:
        """The inputs with masked steps set to 0; the mask is attached to the output."""
        keep = ops.reduction.reduce_any(ops.elementwise.not_equal(inputs, self.mask_value),
                                        axis=-1, keepdims=True)
        outputs = inputs * ops.elementwise.cast(keep, inputs.dtype)
        set_mask(outputs, ops.shape.squeeze(keep, axis=-1))
        return outputs

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), mask_value=self.mask_value)
