"""Keras layers without a family of their own: `Dropout`, `Lambda`, `Embedding`.

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

__all__ = ["Dropout", "Lambda", "Embedding"]


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
        u = ops.random.uniform(self._mask_shape(tuple(inputs.shape)), dtype=inputs.dtype,
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

    def compute_output_shape(self, input_shape: Any) -> Any:
        if self._output_shape_arg is None:
            return super().compute_output_shape(input_shape)
        if callable(self._output_shape_arg):
            return TensorShape(self._output_shape_arg(input_shape))
        return TensorShape((TensorShape(input_shape)[0],) + tuple(self._output_shape_arg))

    def get_config(self) -> dict:
        return dict(super().get_config(), function=self.function, arguments=self.arguments)


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
        if "input_shape" not in kwargs and input_length is not None:
            kwargs["input_shape"] = (input_length,)
        super().__init__(**kwargs)
        for arg, value in (("input_dim", input_dim), ("output_dim", output_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
                raise ValueError(f"Both `input_dim` and `output_dim` should be positive, "
                                 f"Received {arg}={value!r}.")
        if any(a is not None for a in (embeddings_regularizer, activity_regularizer,
                                       embeddings_constraint)) or sparse:
            raise NotImplementedError("Embedding: regularizers, constraints and sparse=True are "
                                      "not supported by tapeflow's Keras layers.")
        self.input_dim, self.output_dim = int(input_dim), int(output_dim)
        self.embeddings_initializer = initializers.get(embeddings_initializer)
        self.mask_zero = bool(mask_zero)
        self.input_length = input_length
        self._autocast = False  # integer indices must not become floats
        self.embeddings = None

    def build(self, input_shape: Any) -> None:
        """Create `embeddings` [input_dim, output_dim]."""
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          initializer=self.embeddings_initializer)
        self.built = True

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
                    mask_zero=self.mask_zero, input_length=self.input_length)
