"""Keras layers: the Layer base and Dense."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..ops._rules import as_tensor
from ..tensor import TensorShape, Variable
from . import activations, initializers

__all__ = ["Layer", "Dense"]


class Layer:
    """Base layer: builds its weights on first call from the input shape.

    Subclasses implement `build(input_shape)` (calling `add_weight`) and `call(inputs)`.
    """

    def __init__(self, trainable: bool = True, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        self.trainable = trainable
        self.name = name or type(self).__name__.lower()
        self.dtype = _dt.as_dtype(dtype or "float32").name
        self.built = False
        self._weights: list[Variable] = []

    def add_weight(self, name: str | None = None, shape: Any = None, dtype: Any = None,
                   initializer: Any = "zeros", trainable: bool = True, **kwargs: Any) -> Variable:
        init = initializers.get(initializer)
        value = init(tuple(shape), dtype=_dt.as_dtype(dtype or self.dtype))
        v = Variable(value, trainable=trainable and self.trainable, name=f"{self.name}/{name}")
        self._weights.append(v)
        return v

    def build(self, input_shape: Any) -> None:
        self.built = True

    def call(self, inputs: Any) -> Any:
        raise NotImplementedError

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        x = as_tensor(inputs, type(self).__name__, "inputs")
        if not self.built:
            self.build(TensorShape(np.shape(x._value)))
            self.built = True
        if x._value.dtype.kind == "f" and x.dtype != _dt.as_dtype(self.dtype):
            x = ops.cast(x, self.dtype)  # Keras casts floating inputs to the layer dtype
        return self.call(x, *args, **kwargs)

    @property
    def weights(self) -> list[Variable]:
        return list(self._weights)

    variables = weights

    @property
    def trainable_weights(self) -> list[Variable]:
        return [w for w in self._weights if w.trainable]

    trainable_variables = trainable_weights

    @property
    def non_trainable_weights(self) -> list[Variable]:
        return [w for w in self._weights if not w.trainable]


class Dense(Layer):
    """Densely connected layer: ``activation(inputs @ kernel + bias)``.

    Example:
        >>> import tapeflow as tf
        >>> dense = tf.keras.layers.Dense(1)
        >>> dense.build([None, 2])
        >>> dense.kernel.shape, dense.bias.shape
        (TensorShape([2, 1]), TensorShape([1]))
    """

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if int(units) <= 0:
            raise ValueError(f"Dense: `units` must be a positive integer; got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.use_bias = use_bias
        self.kernel_initializer = kernel_initializer
        self.bias_initializer = bias_initializer

    def build(self, input_shape: Any) -> None:
        input_shape = list(input_shape)
        if not input_shape or input_shape[-1] is None:
            raise ValueError(f"Dense.build: the last dimension of the input shape must be known; "
                             f"got {input_shape}.")
        self.kernel = self.add_weight("kernel", (int(input_shape[-1]), self.units),
                                      initializer=self.kernel_initializer)
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer) \
            if self.use_bias else None
        self.built = True

    def call(self, inputs: Any) -> Any:
        shape = inputs.shape
        if shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"Dense: input has last dimension {shape[-1]} but the layer was built "
                             f"for {self.kernel.shape[0]}.")
        if len(shape) == 2:
            y = ops.matmul(inputs, self.kernel)
        else:
            flat = ops.reshape(inputs, [-1, shape[-1]])
            y = ops.reshape(ops.matmul(flat, self.kernel), list(shape[:-1]) + [self.units])
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)
