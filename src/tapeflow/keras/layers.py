"""Keras layers (tf.keras / Keras 2 names, arguments, defaults and behaviour).

`Layer` is the base: a layer creates its weights in `build(input_shape)`, which
runs once, on the first call, from the input's shape (or when called directly);
`call(inputs)` computes the output. Floating inputs are cast to the layer's
dtype (float32 unless ``dtype=`` says otherwise), as Keras does. Weights are
`tf.Variable`s: `weights`, `trainable_weights` (empty for a layer with
``trainable=False``), `non_trainable_weights`, and the `*_variables` aliases.
Layers and variables assigned as attributes of a layer are tracked, so custom
layers composed of others report all their weights.

Built in: `Dense`, `Conv2D` (NHWC, kernel [kh, kw, in, out]), `MaxPooling2D`,
`AveragePooling2D`, `Flatten`, `Activation`; `Dropout`, `Lambda`, `Embedding`, `Masking`
(core_layers.py), `BatchNormalization` (normalization.py), `RNN`, `SimpleRNN`, `LSTM`
and `GRU` (recurrent.py) and their cells (cells.py), the merge layers `Add`, ...,
`Concatenate`, `Dot` and their functions (merge.py); `ReLU`, `LeakyReLU`, `ELU`,
`Softmax`, `Reshape`, `Permute`, `RepeatVector` and global pooling (simple_layers.py);
`serialize` and `deserialize`
(serialization.py). Inputs that do not fit a layer fail with Keras' message, which
names the layer, the shape received and the shape expected. Masks pass from layer to
layer as in tf_keras (masks.py); every layer has tf_keras' `get_config`.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..tensor import TensorShape, Variable
from . import activations, initializers
from .base_layer import InputSpec, Layer
from .penalties import weight_options, weight_options_config
from .cells import GRUCell, LSTMCell, SimpleRNNCell
from .core_layers import Dropout, Embedding, Lambda, Masking
from .functional import Input, InputLayer
from .merge import (Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add,
                    average, concatenate, dot, maximum, minimum, multiply, subtract)
from .normalization import (BatchNormalization, GroupNormalization, LayerNormalization,
                            UnitNormalization)
from .recurrent import GRU, LSTM, RNN, SimpleRNN
from .serialization import deserialize, serialize
from .simple_layers import (ELU, GlobalAveragePooling1D, GlobalAveragePooling2D,
                            GlobalMaxPooling1D, GlobalMaxPooling2D, LeakyReLU, Permute, ReLU,
                            RepeatVector, Reshape, Softmax)
from .common import conv_output_length, normalize_data_format, normalize_padding, normalize_tuple
from . import attention, conv_layers, noise_layers, shaping_layers, wrappers

__all__ = ["InputSpec", "Layer", "Dense", "Conv2D", "Convolution2D", "MaxPooling2D", "MaxPool2D",
           "AveragePooling2D", "AvgPool2D", "Flatten", "Activation", "Dropout", "Lambda",
           "Embedding", "Masking", "BatchNormalization", "LayerNormalization",
           "UnitNormalization", "GroupNormalization", "RNN", "SimpleRNN", "LSTM", "GRU",
           "SimpleRNNCell", "LSTMCell", "GRUCell", "Add", "Subtract", "Multiply", "Average",
           "Maximum", "Minimum", "Concatenate", "Dot", "add", "subtract", "multiply", "average",
           "maximum", "minimum", "concatenate", "dot", "Input", "InputLayer", "serialize",
           "deserialize", "ReLU", "LeakyReLU", "ELU", "Softmax", "Reshape", "Permute",
           "RepeatVector", "GlobalAveragePooling1D", "GlobalAveragePooling2D",
           "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalAvgPool1D", "GlobalAvgPool2D",
           "GlobalMaxPool1D", "GlobalMaxPool2D"]

GlobalAvgPool1D, GlobalAvgPool2D = GlobalAveragePooling1D, GlobalAveragePooling2D
GlobalMaxPool1D, GlobalMaxPool2D = GlobalMaxPooling1D, GlobalMaxPooling2D


class Dense(Layer):
    """Densely connected layer: ``activation(inputs @ kernel + bias)``, kernel
    [in, units]; inputs of rank > 2 are multiplied along their last axis.

    Example:
        >>> import tapeflow as tf
        >>> dense = tf.keras.layers.Dense(1)
        >>> dense.build([None, 2])
        >>> dense.kernel.shape, dense.bias.shape
        (TensorShape([2, 1]), TensorShape([1]))
        >>> tf.keras.layers.Dense(4)(tf.ones([5, 3, 2])).shape
        TensorShape([5, 3, 4])
    """

    _input_hint = "Dense expects inputs of shape (batch, ..., features)."

    def __init__(self, units: int, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        if "input_shape" not in kwargs and "input_dim" in kwargs:
            kwargs["input_shape"] = (kwargs.pop("input_dim"),)
        kwargs.pop("input_dim", None)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        weight_options(self, kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
        try:
            units = int(units) if not isinstance(units, bool) else 0
        except (TypeError, ValueError):
            units = 0
        if units <= 0:
            raise ValueError(f"Received an invalid value for `units`, expected a positive "
                             f"integer. Received: units={units!r}")
        self.units = units
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel: Variable | None = None
        self.bias: Variable | None = None
        self.input_spec = InputSpec(min_ndim=2)
        self.supports_masking = True  # a mask over time steps passes through, as tf_keras

    def build(self, input_shape: Any) -> None:
        """Create `kernel` [last dim of input_shape, units] and `bias` [units]."""
        input_shape = TensorShape(input_shape)
        if len(input_shape) < 1 or input_shape[-1] is None:
            raise ValueError(f"The last dimension of the inputs to a Dense layer should be "
                             f"defined. Found None. Full input shape received: {input_shape}")
        last = int(input_shape[-1])
        self.input_spec = InputSpec(min_ndim=2, axes={-1: last})
        self.kernel = self.add_weight("kernel", (last, self.units),
                                      initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.units,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        """``activation(inputs @ kernel + bias)``; every input dtype is cast to the layer's."""
        if inputs._value.dtype != self.kernel._value.dtype:
            inputs = ops.elementwise.cast(inputs, self.kernel.dtype)  # Keras' Dense casts any input
        shape = np.shape(inputs._value)
        if len(shape) == 2:
            y = ops.linalg.matmul(inputs, self.kernel)
        else:
            flat = ops.shape.reshape(inputs, [-1, shape[-1]])
            y = ops.shape.reshape(ops.linalg.matmul(flat, self.kernel), list(shape[:-1]) + [self.units])
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """``input_shape[:-1] + (units,)``."""
        input_shape = TensorShape(input_shape)
        if len(input_shape) < 1 or input_shape[-1] is None:
            raise ValueError(f"The last dimension of the input shape of a Dense layer should be "
                             f"defined. Found None. Received: input_shape={input_shape}")
        return TensorShape(tuple(input_shape[:-1]) + (self.units,))

    def get_config(self) -> dict:
        return dict(super().get_config(), units=self.units,
                    activation=activations._config(self.activation), use_bias=self.use_bias,
                    kernel_initializer=initializers.serialize(self.kernel_initializer),
                    bias_initializer=initializers.serialize(self.bias_initializer),
                    **weight_options_config(self, *_KERNEL_BIAS_OPTIONS))


# the config entries of a layer with a kernel and a bias, in tf_keras's order
_KERNEL_BIAS_OPTIONS = ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                        "kernel_constraint", "bias_constraint")


# ---------------------------------------------------------------- Conv2D
class Conv2D(Layer):
    """2-D convolution: ``activation(conv2d(inputs, kernel) + bias)`` with kernel
    [kh, kw, in_channels // groups, filters], computed by `tf.nn.conv2d`.

    Inputs are (batch, height, width, channels) ("channels_last", the default) or
    (batch, channels, height, width) with ``data_format="channels_first"``; extra
    leading batch dims are allowed. `padding` is "valid" or "same"; `strides`
    and `dilation_rate` are an int or 2 ints (not both above 1, as Keras).

    Example:
        >>> import tapeflow as tf
        >>> conv = tf.keras.layers.Conv2D(8, 3, activation="relu")
        >>> conv(tf.ones([2, 28, 28, 1])).shape
        TensorShape([2, 26, 26, 8])
        >>> conv.kernel.shape, conv.bias.shape
        (TensorShape([3, 3, 1, 8]), TensorShape([8]))
        >>> tf.keras.layers.Conv2D(4, (3, 3), strides=2, padding="same")(tf.ones([1, 7, 7, 3])).shape
        TensorShape([1, 4, 4, 4])
    """

    _input_hint = ("Conv2D expects inputs of shape (batch, height, width, channels); "
                   "to convolve a single image, add a batch axis (e.g. tf.expand_dims(x, 0)).")

    def __init__(self, filters: int, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = (1, 1), groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        weight_options(self, kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
        if isinstance(filters, float) and filters.is_integer():
            filters = int(filters)
        if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) or filters <= 0:
            raise ValueError(f"Invalid value for argument `filters`. Expected a strictly "
                             f"positive value. Received filters={filters!r}.")
        self.filters = int(filters)
        self.groups = int(groups or 1)
        if self.groups < 1 or self.filters % self.groups != 0:
            raise ValueError(f"The number of filters must be evenly divisible by the number of "
                             f"groups. Received: groups={groups}, filters={filters}.")
        self.kernel_size = normalize_tuple(kernel_size, 2, "kernel_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        if self.padding == "causal":
            raise ValueError("Causal padding is only supported for `Conv1D` and `SeparableConv1D`.")
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, 2, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > 1`."
                             f" Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.kernel: Variable | None = None
        self.bias: Variable | None = None
        self.input_spec = InputSpec(min_ndim=4)

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else -3

    def build(self, input_shape: Any) -> None:
        """Create `kernel` [kh, kw, in_channels // groups, filters] and `bias` [filters]."""
        input_shape = TensorShape(input_shape)
        if len(input_shape) < 4:
            raise ValueError(f'Layer "{self.name}" (Conv2D) needs an input shape of rank >= 4 '
                             f"(batch, height, width, channels); got {input_shape}.")
        channels = input_shape[self._channel_axis]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs should be defined. The "
                             f"input_shape received is {input_shape}, where axis "
                             f"{self._channel_axis} (0-based) is the channel dimension, which "
                             f"found to be `None`.")
        if channels % self.groups != 0:
            raise ValueError(f"The number of input channels must be evenly divisible by the "
                             f"number of groups. Received groups={self.groups}, but the input "
                             f"has {channels} channels (full input shape is {input_shape}).")
        self.kernel = self.add_weight(
            "kernel", self.kernel_size + (channels // self.groups, self.filters),
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self.bias = self.add_weight("bias", (self.filters,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None
        self.input_spec = InputSpec(min_ndim=4, axes={self._channel_axis: channels})
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The output shape: spatial sizes per padding, strides and dilation; `filters` channels."""
        shape = TensorShape(input_shape)
        if len(shape) < 4:
            raise ValueError(f'Layer "{self.name}" (Conv2D) needs an input shape of rank >= 4; '
                             f"got {shape}.")
        hw = (-3, -2) if self.data_format == "channels_last" else (-2, -1)
        dims = list(shape)
        for i, ax in enumerate(hw):
            dims[ax] = conv_output_length(shape[ax], self.kernel_size[i], self.padding,
                                          self.strides[i], self.dilation_rate[i])
        dims[self._channel_axis] = self.filters
        if any(d is not None and d <= 0 for d in dims[-3:]):
            raise ValueError(f"One of the dimensions in the output is <= 0 due to downsampling "
                             f"in {self.name} (Conv2D). Consider increasing the input size. "
                             f"Received input shape {tuple(shape)} which would produce output "
                             f"shape with a zero or negative value in a dimension: "
                             f"{tuple(dims)} (kernel_size={self.kernel_size}, "
                             f"strides={self.strides}, dilation_rate={self.dilation_rate}, "
                             f"padding={self.padding!r}).")
        return TensorShape(dims)

    def call(self, inputs: Any) -> Any:
        """``activation(tf.nn.conv2d(inputs, kernel) + bias)``."""
        if _dt.kind(inputs._value.dtype) not in "f":
            raise TypeError(f'Layer "{self.name}" (Conv2D) needs floating inputs; got dtype '
                            f"{inputs.dtype.name}. Cast them first, e.g. tf.cast(x, tf.float32).")
        shape = np.shape(inputs._value)
        self.compute_output_shape(shape)  # a clear error where the input is too small
        x = inputs
        if len(shape) > 4:
            x = ops.shape.reshape(x, (-1,) + tuple(shape[-3:]))
        if self.data_format == "channels_first":
            x = ops.shape.transpose(x, [0, 2, 3, 1])
        if self.groups == 1:
            y = self._conv(x, self.kernel)
        else:
            xs = ops.shape.split(x, self.groups, axis=-1)
            ks = ops.shape.split(self.kernel, self.groups, axis=-1)
            y = ops.shape.concat([self._conv(a, k) for a, k in zip(xs, ks, strict=True)], axis=-1)
        if self.bias is not None:
            y = ops.nn.bias_add(y, self.bias)
        if self.data_format == "channels_first":
            y = ops.shape.transpose(y, [0, 3, 1, 2])
        if len(shape) > 4:
            y = ops.shape.reshape(y, tuple(shape[:-3]) + tuple(np.shape(y._value)[1:]))
        return self.activation(y)

    def _conv(self, x: Any, kernel: Any) -> Any:
        return ops.conv.conv2d(x, kernel, strides=self.strides, padding=self.padding.upper(),
                          dilations=self.dilation_rate)

    def get_config(self) -> dict:
        return dict(super().get_config(), filters=self.filters, kernel_size=self.kernel_size,
                    strides=self.strides, padding=self.padding, data_format=self.data_format,
                    dilation_rate=self.dilation_rate, groups=self.groups,
                    activation=activations._config(self.activation), use_bias=self.use_bias,
                    kernel_initializer=initializers.serialize(self.kernel_initializer),
                    bias_initializer=initializers.serialize(self.bias_initializer),
                    **weight_options_config(self, *_KERNEL_BIAS_OPTIONS))


Convolution2D = Conv2D


# ---------------------------------------------------------------- pooling
class _Pooling2D(Layer):
    _op_name = ""

    def __init__(self, pool_size: Any = (2, 2), strides: Any = None, padding: str = "valid",
                 data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self.pool_size = normalize_tuple(pool_size, 2, "pool_size")
        self.strides = normalize_tuple(strides, 2, "strides")
        self.padding = normalize_padding(padding)
        if self.padding == "causal":
            raise ValueError(f"{type(self).__name__}: `padding` must be 'valid' or 'same'; "
                             f"got {padding!r}.")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=4)
        name = type(self).__name__
        self._input_hint = (f"{name} expects inputs of shape (batch, height, width, channels); "
                            f"to pool a single image, add a batch axis (e.g. tf.expand_dims(x, 0)).")

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The output shape: spatial sizes per pool size, strides and padding."""
        shape = TensorShape(input_shape)
        if len(shape) != 4:
            raise ValueError(f'Layer "{self.name}" ({type(self).__name__}) needs an input shape '
                             f"of rank 4; got {shape}.")
        hw = (1, 2) if self.data_format == "channels_last" else (2, 3)
        dims = list(shape)
        for i, ax in enumerate(hw):
            dims[ax] = conv_output_length(shape[ax], self.pool_size[i], self.padding,
                                          self.strides[i])
        if any(d is not None and d <= 0 for d in dims):
            raise ValueError(f"Layer \"{self.name}\" ({type(self).__name__}): the input's "
                             f"spatial size {tuple(shape[a] for a in hw)} is smaller than the "
                             f"pool size {self.pool_size} with padding {self.padding!r}; input "
                             f"shape {tuple(shape)} would give output shape {tuple(dims)}.")
        return TensorShape(dims)

    def call(self, inputs: Any) -> Any:
        """Pool each window of `pool_size`, `strides` apart."""
        self.compute_output_shape(np.shape(inputs._value))
        x = inputs
        if self.data_format == "channels_first":
            x = ops.shape.transpose(x, [0, 2, 3, 1])
        y = self._pool(x)
        if self.data_format == "channels_first":
            y = ops.shape.transpose(y, [0, 3, 1, 2])
        return y

    def _pool(self, x: Any) -> Any:
        raise NotImplementedError

    def get_config(self) -> dict:
        return dict(super().get_config(), pool_size=self.pool_size, padding=self.padding,
                    strides=self.strides, data_format=self.data_format)


class MaxPooling2D(_Pooling2D):
    """Max pooling over 2-D windows (`tf.nn.max_pool2d`); `strides` defaults to
    `pool_size`, `padding` is "valid" or "same".

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(16.), [1, 4, 4, 1])
        >>> tf.keras.layers.MaxPooling2D()(x)[0, :, :, 0].numpy()
        array([[ 5.,  7.],
               [13., 15.]], dtype=float32)
        >>> tf.keras.layers.MaxPooling2D(3, strides=2, padding="same")(tf.ones([2, 7, 7, 3])).shape
        TensorShape([2, 4, 4, 3])
    """

    def _pool(self, x: Any) -> Any:
        return ops.pooling.max_pool2d(x, ksize=self.pool_size, strides=self.strides,
                                      padding=self.padding.upper())


class AveragePooling2D(_Pooling2D):
    """Average pooling over 2-D windows (`tf.nn.avg_pool2d`); with "same" padding,
    each mean is over the window's unpadded elements.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(16.), [1, 4, 4, 1])
        >>> tf.keras.layers.AveragePooling2D()(x)[0, :, :, 0].numpy()
        array([[ 2.5,  4.5],
               [10.5, 12.5]], dtype=float32)
    """

    def _pool(self, x: Any) -> Any:
        return ops.pooling.avg_pool2d(x, ksize=self.pool_size, strides=self.strides,
                                      padding=self.padding.upper())


MaxPool2D = MaxPooling2D
AvgPool2D = AveragePooling2D


# ---------------------------------------------------------------- Flatten
class Flatten(Layer):
    """Flatten each example: (batch, d1, d2, ...) -> (batch, d1 * d2 * ...); a rank-1
    input (batch,) becomes (batch, 1). With ``data_format="channels_first"`` the
    channels axis is moved last first, so the order matches channels_last.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Flatten()(tf.ones([2, 3, 4, 5])).shape
        TensorShape([2, 60])
    """

    _input_hint = "Flatten needs a batch axis: inputs of shape (batch, ...)."

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(min_ndim=1)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """(batch, product of the other dims)."""
        shape = TensorShape(input_shape)
        if len(shape) < 1:
            raise ValueError(f'Layer "{self.name}" (Flatten) needs an input shape of rank >= 1; '
                             f"got {shape}.")
        rest = shape[1:]
        size = 1 if not rest else (None if any(d is None for d in rest)
                                   else int(np.prod(rest, dtype=np.int64)))
        return TensorShape((shape[0], size))

    def call(self, inputs: Any) -> Any:
        """Reshape to (batch, -1)."""
        shape = ops.structural.shape_of(inputs)  # sizes a size-generic trace reads
        x = inputs
        if self.data_format == "channels_first" and len(shape) > 2:
            x = ops.shape.transpose(x, [0] + list(range(2, len(shape))) + [1])
        return ops.shape.reshape(x, (shape[0], math.prod(shape[1:])))

    def get_config(self) -> dict:
        return dict(super().get_config(), data_format=self.data_format)


# ---------------------------------------------------------------- Activation
class Activation(Layer):
    """Apply an activation function (a name or a callable) to the inputs.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Activation("relu")(tf.constant([[-1., 2.]])).numpy()
        array([[0., 2.]], dtype=float32)
    """

    def __init__(self, activation: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.activation = activations.get(activation)
        self.supports_masking = True

    def call(self, inputs: Any) -> Any:
        """``activation(inputs)``."""
        return self.activation(inputs)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The input shape."""
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), activation=activations._config(self.activation))


# The layer families of their own modules, by the names each exports.
for _family in (conv_layers, shaping_layers, noise_layers, wrappers, attention):
    globals().update({_name: getattr(_family, _name) for _name in _family.__all__})
    __all__ += _family.__all__
