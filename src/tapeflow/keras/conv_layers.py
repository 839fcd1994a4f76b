"""Keras convolution layers beyond Conv2D: `Conv1D` (causal padding, groups, dilation,
channels first), the transposed convolutions `Conv2DTranspose` and `Conv1DTranspose`
(output_padding), `DepthwiseConv2D` and `DepthwiseConv1D` (depth_multiplier),
`SeparableConv2D` and `SeparableConv1D`, and 1-D pooling (`MaxPooling1D`,
`AveragePooling1D`), with tf_keras's arguments, defaults, weights (names, shapes, order),
configs and errors, and its aliases (`Convolution1D`, `Convolution2DTranspose`,
`SeparableConvolution2D`, `MaxPool1D`, `AvgPool1D`, ...). Each layer calls the ops of
ops/conv_variants.py on channels-last data (a channels-first input is transposed in and
out); their derivatives are the ops' own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..tensor import Tensor, TensorShape, Variable
from . import activations, initializers
from .base_layer import InputSpec, Layer
from .common import conv_output_length, normalize_data_format, normalize_padding, normalize_tuple
from .penalties import weight_options, weight_options_config

__all__ = ["Conv1D", "Convolution1D", "Conv1DTranspose", "Convolution1DTranspose",
           "Conv2DTranspose", "Convolution2DTranspose", "DepthwiseConv1D", "DepthwiseConv2D",
           "SeparableConv1D", "SeparableConvolution1D", "SeparableConv2D",
           "SeparableConvolution2D", "MaxPooling1D", "MaxPool1D", "AveragePooling1D",
           "AvgPool1D"]

_CV = ops.conv_variants


# ---------------------------------------------------------------- regularizers, constraints
def _weight_options(layer: Layer, **options: Any) -> None:
    """The `*_regularizer` and `*_constraint` arguments, kept as the attributes the weights
    are made with (the activity regularizer is the base layer's)."""
    weight_options(layer, **{k: v for k, v in options.items() if k != "activity_regularizer"})


_KERNEL_OPTIONS = ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                   "kernel_constraint", "bias_constraint")


# ---------------------------------------------------------------- shapes
def _deconv_length(n: int | None, k: int, padding: str, output_padding: int | None,
                   stride: int, dilation: int) -> int | None:
    """tf_keras's deconv_output_length: a transposed convolution's output size along one
    axis of `n` inputs (None stays None)."""
    if n is None:
        return None
    k = k + (k - 1) * (dilation - 1)
    if output_padding is None:
        return n * stride + max(k - stride, 0) if padding == "valid" else n * stride
    pad = k // 2 if padding == "same" else 0
    return (n - 1) * stride + k - 2 * pad + output_padding


def _channels_to(x: Tensor, rank: int, last: bool) -> Tensor:
    """A channels-first tensor's channels (axis -rank-1) moved last, or back."""
    nd = np.ndim(x._value)
    axes = list(range(nd))
    if last:
        axes.append(axes.pop(nd - rank - 1))
    else:
        axes.insert(nd - rank - 1, axes.pop())
    return ops.shape.transpose(x, axes)


# ---------------------------------------------------------------- the convolutions' base
class _Conv(Layer):
    """What the convolution layers share: argument checks, the channels-last call, output
    shapes and the config. Subclasses set `rank` and make their weights and op."""

    rank = 1
    _causal = False  # whether "causal" padding is allowed (Conv1D, SeparableConv1D)

    def _setup(self, filters: Any, kernel_size: Any, strides: Any, padding: str,
               data_format: Any, dilation_rate: Any, groups: Any, activation: Any,
               use_bias: bool, bias_initializer: Any) -> None:
        name, r = type(self).__name__, self.rank
        if filters is not None:
            if isinstance(filters, float):
                filters = int(filters)  # as tf_keras
            if not isinstance(filters, (int, np.integer)) or isinstance(filters, bool) \
                    or filters <= 0:
                raise ValueError(f"Invalid value for argument `filters`. Expected a strictly "
                                 f"positive value. Received filters={filters!r}.")
            filters = int(filters)
        self.filters = filters
        self.groups = int(groups or 1)
        if filters is not None and (self.groups < 1 or filters % self.groups):
            raise ValueError(f"The number of filters must be evenly divisible by the number of "
                             f"groups. Received: groups={groups}, filters={filters}")
        self.kernel_size = normalize_tuple(kernel_size, r, "kernel_size")
        self.strides = normalize_tuple(strides, r, "strides")
        self.padding = normalize_padding(padding)
        if self.padding == "causal" and not self._causal:
            raise ValueError("Causal padding is only supported for `Conv1D`and "
                             "`SeparableConv1D`.")
        self.data_format = normalize_data_format(data_format)
        self.dilation_rate = normalize_tuple(dilation_rate, r, "dilation_rate")
        if max(self.strides) > 1 and max(self.dilation_rate) > 1:
            raise ValueError(f"`strides > 1` not supported in conjunction with `dilation_rate > "
                             f"1`. Received: strides={self.strides} and "
                             f"dilation_rate={self.dilation_rate}")
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.bias_initializer = initializers.get(bias_initializer)
        self.bias: Variable | None = None
        self.input_spec = InputSpec(min_ndim=r + 2)
        self._input_hint = (f"{name} expects inputs of shape (batch, "
                            f"{'steps' if r == 1 else 'height, width'}, channels) "
                            f"(channels first with data_format='channels_first').")

    @property
    def _channel_axis(self) -> int:
        return -1 if self.data_format == "channels_last" else -1 - self.rank

    def _input_channels(self, input_shape: Any, exact: bool) -> tuple[TensorShape, int]:
        shape = TensorShape(input_shape)
        if len(shape) != self.rank + 2 if exact else len(shape) < self.rank + 2:
            raise ValueError(self._rank_message(shape))
        channels = shape[self._channel_axis]
        if channels is None:
            raise ValueError(f"The channel dimension of the inputs should be defined. The "
                             f"input_shape received is {shape}, where axis {self._channel_axis} "
                             f"(0-based) is the channel dimension, which found to be `None`.")
        return shape, int(channels)

    def _rank_message(self, shape: TensorShape) -> str:
        return f"Inputs should have rank {self.rank + 2}. Received input_shape={shape}."

    def _make_bias(self, n: int) -> None:
        self.bias = self.add_weight("bias", (n,), initializer=self.bias_initializer,
                                    regularizer=self.bias_regularizer,
                                    constraint=self.bias_constraint) if self.use_bias else None

    def _out_channels(self, channels: int | None) -> int | None:
        return self.filters

    def _out_length(self, i: int, n: int | None) -> int | None:
        padding = "same" if self.padding == "causal" else self.padding
        return conv_output_length(n, self.kernel_size[i], padding, self.strides[i],
                                  self.dilation_rate[i])

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The output shape: each spatial size per kernel, padding, strides and dilation;
        the channels the layer makes."""
        shape = TensorShape(input_shape)
        if len(shape) < self.rank + 2:
            raise ValueError(self._rank_message(shape))
        dims, r = list(shape), self.rank
        spatial = range(len(dims) - r - 1, len(dims) - 1) if self.data_format == "channels_last" \
            else range(len(dims) - r, len(dims))
        for i, ax in enumerate(spatial):
            dims[ax] = self._out_length(i, dims[ax])
        dims[self._channel_axis] = self._out_channels(dims[self._channel_axis])
        if any(d is not None and d < 0 for d in dims):
            raise ValueError(f"One of the dimensions in the output is <= 0 due to downsampling "
                             f"in {self.name}. Consider increasing the input size. Received input "
                             f"shape {list(shape)} which would produce output shape with a zero "
                             f"or negative value in a dimension.")
        return TensorShape(dims)

    def call(self, inputs: Any) -> Any:
        """``activation(op(inputs, weights) + bias)`` (the op on channels-last data)."""
        if _dt.kind(inputs._value.dtype) != "f":
            raise TypeError(f'Layer "{self.name}" ({type(self).__name__}) needs floating inputs; '
                            f"got dtype {inputs.dtype.name}. Cast them first, e.g. "
                            f"tf.cast(x, tf.float32).")
        self.compute_output_shape(np.shape(inputs._value))  # Keras' error for a small input
        first = self.data_format == "channels_first"
        x = _channels_to(inputs, self.rank, True) if first else inputs
        if self.padding == "causal":  # all the padding before the first step
            left = self.dilation_rate[0] * (self.kernel_size[0] - 1)
            x = ops.shape.pad(x, [[0, 0]] * (np.ndim(x._value) - 2) + [[left, 0], [0, 0]])
        y = self._op(x, "VALID" if self.padding == "causal" else self.padding.upper())
        if self.bias is not None:
            y = ops.nn.bias_add(y, self.bias)
        return self.activation(_channels_to(y, self.rank, False) if first else y)

    def _op(self, x: Tensor, padding: str) -> Tensor:
        raise NotImplementedError

    def get_config(self) -> dict:
        # tf_keras's base convolution's config; a depthwise one drops the kernel's entries
        kernel = hasattr(self, "kernel_initializer")
        config = dict(super().get_config(), filters=self.filters, kernel_size=self.kernel_size,
                      strides=self.strides, padding=self.padding, data_format=self.data_format,
                      dilation_rate=self.dilation_rate, groups=self.groups,
                      activation=activations._config(self.activation), use_bias=self.use_bias,
                      kernel_initializer=initializers.serialize(self.kernel_initializer)
                      if kernel else None,
                      bias_initializer=initializers.serialize(self.bias_initializer),
                      **weight_options_config(self, *_KERNEL_OPTIONS))
        if not kernel:
            for key in ("filters", "kernel_initializer", "kernel_regularizer", "kernel_constraint"):
                del config[key]
        return config


class _KernelConv(_Conv):
    """A convolution with one `kernel` [*kernel_size, in_channels / groups, filters]."""

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = 1,
                 padding: str = "valid", data_format: str | None = "channels_last",
                 dilation_rate: Any = 1, groups: int = 1, activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _weight_options(self, kernel_regularizer=kernel_regularizer,
                        bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer,
                        kernel_constraint=kernel_constraint, bias_constraint=bias_constraint)
        self._setup(filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                    activation, use_bias, bias_initializer)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.kernel: Variable | None = None

    def build(self, input_shape: Any) -> None:
        """Create `kernel` [*kernel_size, in_channels / groups, filters] and `bias` [filters]."""
        shape, channels = self._input_channels(input_shape, exact=False)
        if channels % self.groups:
            raise ValueError(f"The number of input channels must be evenly divisible by the "
                             f"number of groups. Received groups={self.groups}, but the input "
                             f"has {channels} channels (full input shape is {shape}).")
        self.compute_output_shape(shape)
        self.kernel = self.add_weight(
            "kernel", self.kernel_size + (channels // self.groups, self.filters),
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self._make_bias(self.filters)
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={self._channel_axis: channels})
        super().build(input_shape)


class Conv1D(_KernelConv):
    """1-D convolution: ``activation(conv1d(inputs, kernel) + bias)`` over inputs (batch,
    steps, channels) (or (batch, channels, steps) with ``data_format="channels_first"``;
    extra leading batch dims allowed), kernel [kernel_size, channels / groups, filters],
    computed by `tf.nn.conv1d`. `padding` "causal" pads only before the first step, so
    output step t sees inputs up to t.

    Example:
        >>> import tapeflow as tf
        >>> conv = tf.keras.layers.Conv1D(4, 3, padding="causal", dilation_rate=2)
        >>> conv(tf.ones([2, 10, 3])).shape, conv.kernel.shape
        (TensorShape([2, 10, 4]), TensorShape([3, 3, 4]))
    """

    rank = 1
    _causal = True

    def _op(self, x: Tensor, padding: str) -> Tensor:
        return _CV.conv1d(x, self.kernel, self.strides, padding, dilations=self.dilation_rate)


Convolution1D = Conv1D


# ---------------------------------------------------------------- transposed convolutions
class _ConvTranspose(_KernelConv):
    """A transposed convolution: kernel [*kernel_size, filters, in_channels]."""

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 output_padding: Any = None, data_format: str | None = None,
                 dilation_rate: Any = 1, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         **kwargs)
        if self.groups != 1:
            raise ValueError(f"{type(self).__name__} does not take `groups`; received "
                             f"groups={self.groups}.")
        self.output_padding = output_padding
        if output_padding is not None:
            self.output_padding = normalize_tuple(output_padding, self.rank, "output_padding",
                                                  allow_zero=True)
            if any(p >= s for p, s in zip(self.output_padding, self.strides, strict=True)):
                raise ValueError(f"Strides must be greater than output padding. Received "
                                 f"strides={self.strides}, output_padding={self.output_padding}.")

    def build(self, input_shape: Any) -> None:
        """Create `kernel` [*kernel_size, filters, in_channels] and `bias` [filters]."""
        _, channels = self._input_channels(input_shape, exact=True)
        self.kernel = self.add_weight(
            "kernel", self.kernel_size + (self.filters, channels),
            initializer=self.kernel_initializer, regularizer=self.kernel_regularizer,
            constraint=self.kernel_constraint)
        self._make_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        Layer.build(self, input_shape)

    def _out_length(self, i: int, n: int | None) -> int | None:
        pad = None if self.output_padding is None else self.output_padding[i]
        return _deconv_length(n, self.kernel_size[i], self.padding, pad, self.strides[i],
                              self.dilation_rate[i])

    def _op(self, x: Tensor, padding: str) -> Tensor:
        shape = np.shape(x._value)
        out = [shape[0]] + [self._out_length(i, n) for i, n in enumerate(shape[1:-1])] + \
            [self.filters]
        op = _CV.conv1d_transpose if self.rank == 1 else _CV.conv2d_transpose
        return op(x, self.kernel, out, self.strides, padding, dilations=self.dilation_rate)

    def get_config(self) -> dict:
        return dict(super().get_config(), output_padding=self.output_padding)


class Conv2DTranspose(_ConvTranspose):
    """Transposed 2-D convolution ("deconvolution"): the inverse geometry of a Conv2D, by
    `tf.nn.conv2d_transpose`, with kernel [kh, kw, filters, in_channels]; each spatial
    size becomes ``size * stride`` ("same") or ``size * stride + max(kernel - stride, 0)``
    ("valid"), or with `output_padding` ``(size - 1) * stride + kernel - 2 * pad +
    output_padding``.

    Example:
        >>> import tapeflow as tf
        >>> up = tf.keras.layers.Conv2DTranspose(4, 3, strides=2, padding="same")
        >>> up(tf.ones([2, 5, 5, 3])).shape, up.kernel.shape
        (TensorShape([2, 10, 10, 4]), TensorShape([3, 3, 4, 3]))
    """

    rank = 2

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", output_padding: Any = None,
                 data_format: str | None = None, dilation_rate: Any = (1, 1),
                 activation: Any = None,
                 use_bias: bool = True, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)


class Conv1DTranspose(_ConvTranspose):
    """Transposed 1-D convolution, by `tf.nn.conv1d_transpose`, with kernel [kernel_size,
    filters, in_channels]; output lengths as Conv2DTranspose's.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Conv1DTranspose(2, 3, strides=2)(tf.ones([1, 4, 3])).shape
        TensorShape([1, 9, 2])
    """

    rank = 1

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 output_padding: Any = None, data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, kernel_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, output_padding, data_format,
                         dilation_rate, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer, bias_initializer=bias_initializer,
                         kernel_regularizer=kernel_regularizer, bias_regularizer=bias_regularizer,
                         activity_regularizer=activity_regularizer,
                         kernel_constraint=kernel_constraint, bias_constraint=bias_constraint,
                         **kwargs)


Convolution2DTranspose = Conv2DTranspose
Convolution1DTranspose = Conv1DTranspose


# ---------------------------------------------------------------- depthwise convolutions
class _Depthwise(_Conv):
    """`depthwise_kernel` [*kernel_size, in_channels, depth_multiplier]: each channel
    convolved on its own into depth_multiplier channels."""

    def __init__(self, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: Any = 1, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, bias_regularizer: Any = None,
                 activity_regularizer: Any = None, depthwise_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        groups = kwargs.pop("groups", 1)  # in tf_keras's configs, always 1
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _weight_options(self, depthwise_regularizer=depthwise_regularizer,
                        bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer,
                        depthwise_constraint=depthwise_constraint, bias_constraint=bias_constraint)
        self._setup(None, kernel_size, strides, padding, data_format, dilation_rate, groups,
                    activation, use_bias, bias_initializer)
        if self.groups != 1:
            raise ValueError(f"{type(self).__name__} does not take `groups`; received "
                             f"groups={self.groups}.")
        if not isinstance(depth_multiplier, (int, np.integer)) or depth_multiplier < 0:
            raise ValueError(f"`depth_multiplier` must be a non-negative integer; received "
                             f"depth_multiplier={depth_multiplier!r}.")
        self.depth_multiplier = int(depth_multiplier)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.depthwise_kernel: Variable | None = None

    def _rank_message(self, shape: TensorShape) -> str:
        return (f"Inputs to `DepthwiseConv` should have rank {self.rank + 2}. Received "
                f"input_shape={shape}.")

    def build(self, input_shape: Any) -> None:
        """Create `depthwise_kernel` [*kernel_size, in_channels, depth_multiplier] and `bias`
        [in_channels * depth_multiplier]."""
        _, channels = self._input_channels(input_shape, exact=True)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self._make_bias(channels * self.depth_multiplier)
        self.input_spec = InputSpec(min_ndim=self.rank + 2, axes={self._channel_axis: channels})
        Layer.build(self, input_shape)

    def _out_channels(self, channels: int | None) -> int | None:
        return None if channels is None else channels * self.depth_multiplier

    def _op(self, x: Tensor, padding: str) -> Tensor:
        if np.ndim(x._value) != self.rank + 2:
            raise ValueError(self._rank_message(TensorShape(np.shape(x._value))))
        if self.rank == 2:
            return _CV.depthwise_conv2d(x, self.depthwise_kernel, self.strides, padding,
                                        dilations=self.dilation_rate)
        y = _CV.depthwise_conv2d(ops.shape.expand_dims(x, 1),
                                 ops.shape.expand_dims(self.depthwise_kernel, 0),
                                 (1,) + self.strides, padding, dilations=(1,) + self.dilation_rate)
        return ops.shape.squeeze(y, [1])

    def get_config(self) -> dict:
        return dict(super().get_config(), depth_multiplier=self.depth_multiplier,
                    depthwise_initializer=initializers.serialize(self.depthwise_initializer),
                    **weight_options_config(self, "depthwise_regularizer", "depthwise_constraint"))


class DepthwiseConv2D(_Depthwise):
    """Depthwise 2-D convolution (`tf.nn.depthwise_conv2d`): each input channel convolved
    on its own with `depth_multiplier` [kh, kw] filters, giving in_channels *
    depth_multiplier channels; weights `depthwise_kernel` [kh, kw, in_channels,
    depth_multiplier] and `bias`.

    Example:
        >>> import tapeflow as tf
        >>> dw = tf.keras.layers.DepthwiseConv2D(3, depth_multiplier=2, padding="same")
        >>> dw(tf.ones([2, 8, 8, 3])).shape, dw.depthwise_kernel.shape
        (TensorShape([2, 8, 8, 6]), TensorShape([3, 3, 3, 2]))
    """

    rank = 2

    def __init__(self, kernel_size: Any, strides: Any = (1, 1), padding: str = "valid",
                 depth_multiplier: int = 1, data_format: str | None = None,
                 dilation_rate: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(kernel_size, strides, padding, depth_multiplier, data_format,
                         dilation_rate, **kwargs)


class DepthwiseConv1D(_Depthwise):
    """Depthwise 1-D convolution: each channel of (batch, steps, channels) convolved on its
    own with `depth_multiplier` filters; `depthwise_kernel` [kernel_size, in_channels,
    depth_multiplier].

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.DepthwiseConv1D(3, depth_multiplier=2)(tf.ones([2, 8, 3])).shape
        TensorShape([2, 6, 6])
    """

    rank = 1


# ---------------------------------------------------------------- separable convolutions
class _Separable(_Conv):
    """A depthwise convolution (`depthwise_kernel`) followed by a pointwise one
    (`pointwise_kernel` [1, ..., in_channels * depth_multiplier, filters])."""

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = 1, padding: str = "valid",
                 data_format: str | None = None, dilation_rate: Any = 1,
                 depth_multiplier: int = 1, activation: Any = None, use_bias: bool = True,
                 depthwise_initializer: Any = "glorot_uniform",
                 pointwise_initializer: Any = "glorot_uniform", bias_initializer: Any = "zeros",
                 depthwise_regularizer: Any = None, pointwise_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 depthwise_constraint: Any = None, pointwise_constraint: Any = None,
                 bias_constraint: Any = None, **kwargs: Any) -> None:
        # tf_keras's configs carry its base convolution's kernel arguments, unused
        kernel_initializer = kwargs.pop("kernel_initializer", "glorot_uniform")
        unused = {k: kwargs.pop(k, None) for k in ("kernel_regularizer", "kernel_constraint")}
        groups = kwargs.pop("groups", 1)
        super().__init__(activity_regularizer=activity_regularizer, **kwargs)
        _weight_options(self, depthwise_regularizer=depthwise_regularizer,
                        pointwise_regularizer=pointwise_regularizer,
                        bias_regularizer=bias_regularizer,
                        activity_regularizer=activity_regularizer,
                        depthwise_constraint=depthwise_constraint,
                        pointwise_constraint=pointwise_constraint,
                        bias_constraint=bias_constraint, **unused)
        self._setup(filters, kernel_size, strides, padding, data_format, dilation_rate, groups,
                    activation, use_bias, bias_initializer)
        if self.groups != 1:
            raise ValueError(f"{type(self).__name__} does not take `groups`; received "
                             f"groups={self.groups}.")
        if not isinstance(depth_multiplier, (int, np.integer)) or depth_multiplier < 1:
            raise ValueError(f"`depth_multiplier` must be a positive integer; received "
                             f"depth_multiplier={depth_multiplier!r}.")
        self.depth_multiplier = int(depth_multiplier)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.depthwise_initializer = initializers.get(depthwise_initializer)
        self.pointwise_initializer = initializers.get(pointwise_initializer)
        self.depthwise_kernel: Variable | None = None
        self.pointwise_kernel: Variable | None = None

    def build(self, input_shape: Any) -> None:
        """Create `depthwise_kernel` [*kernel_size, in_channels, depth_multiplier],
        `pointwise_kernel` [1, ..., in_channels * depth_multiplier, filters] and `bias`."""
        _, channels = self._input_channels(input_shape, exact=True)
        self.depthwise_kernel = self.add_weight(
            "depthwise_kernel", self.kernel_size + (channels, self.depth_multiplier),
            initializer=self.depthwise_initializer, regularizer=self.depthwise_regularizer,
            constraint=self.depthwise_constraint)
        self.pointwise_kernel = self.add_weight(
            "pointwise_kernel", (1,) * self.rank + (channels * self.depth_multiplier, self.filters),
            initializer=self.pointwise_initializer, regularizer=self.pointwise_regularizer,
            constraint=self.pointwise_constraint)
        self._make_bias(self.filters)
        self.input_spec = InputSpec(ndim=self.rank + 2, axes={self._channel_axis: channels})
        Layer.build(self, input_shape)

    def _op(self, x: Tensor, padding: str) -> Tensor:
        if np.ndim(x._value) != self.rank + 2:
            raise ValueError(self._rank_message(TensorShape(np.shape(x._value))))
        if self.rank == 2:
            return _CV.separable_conv2d(x, self.depthwise_kernel, self.pointwise_kernel,
                                        self.strides, padding, dilations=self.dilation_rate)
        y = _CV.separable_conv2d(ops.shape.expand_dims(x, 1),
                                 ops.shape.expand_dims(self.depthwise_kernel, 0),
                                 ops.shape.expand_dims(self.pointwise_kernel, 0),
                                 (1,) + self.strides, padding, dilations=(1,) + self.dilation_rate)
        return ops.shape.squeeze(y, [1])

    def get_config(self) -> dict:
        return dict(super().get_config(), depth_multiplier=self.depth_multiplier,
                    depthwise_initializer=initializers.serialize(self.depthwise_initializer),
                    pointwise_initializer=initializers.serialize(self.pointwise_initializer),
                    **weight_options_config(self, "depthwise_regularizer", "pointwise_regularizer",
                                      "depthwise_constraint", "pointwise_constraint"))


class SeparableConv2D(_Separable):
    """Depthwise separable 2-D convolution (`tf.nn.separable_conv2d`): a depthwise
    convolution of `depth_multiplier` filters per channel, then a 1x1 convolution to
    `filters` channels; weights `depthwise_kernel`, `pointwise_kernel`, `bias`.

    Example:
        >>> import tapeflow as tf
        >>> sep = tf.keras.layers.SeparableConv2D(8, 3, depth_multiplier=2)
        >>> sep(tf.ones([2, 7, 7, 3])).shape
        TensorShape([2, 5, 5, 8])
        >>> [tuple(w.shape) for w in sep.weights]
        [(3, 3, 3, 2), (1, 1, 6, 8), (8,)]
    """

    rank = 2

    def __init__(self, filters: Any, kernel_size: Any, strides: Any = (1, 1),
                 padding: str = "valid", data_format: str | None = None,
                 dilation_rate: Any = (1, 1), depth_multiplier: int = 1, **kwargs: Any) -> None:
        super().__init__(filters, kernel_size, strides, padding, data_format, dilation_rate,
                         depth_multiplier, **kwargs)


class SeparableConv1D(_Separable):
    """Depthwise separable 1-D convolution: a depthwise convolution then a pointwise one
    over (batch, steps, channels); "causal" padding as Conv1D's.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.SeparableConv1D(4, 3, padding="causal")(tf.ones([2, 6, 3])).shape
        TensorShape([2, 6, 4])
    """

    rank = 1
    _causal = True


SeparableConvolution2D = SeparableConv2D
SeparableConvolution1D = SeparableConv1D


# ---------------------------------------------------------------- 1-D pooling
class _Pooling1D(Layer):
    _op = staticmethod(_CV.max_pool1d)

    def __init__(self, pool_size: Any = 2, strides: Any = None, padding: str = "valid",
                 data_format: str | None = "channels_last", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.pool_size = normalize_tuple(pool_size, 1, "pool_size")
        self.strides = normalize_tuple(self.pool_size if strides is None else strides, 1,
                                       "strides")
        self.padding = normalize_padding(padding)
        if self.padding == "causal":
            raise ValueError(f"{type(self).__name__}: `padding` must be 'valid' or 'same'; "
                             f"got {padding!r}.")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=3)
        self._input_hint = (f"{type(self).__name__} expects inputs of shape (batch, steps, "
                            f"features).")

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """(batch, pooled steps, features), in the data format's order."""
        shape = TensorShape(input_shape)
        if len(shape) != 3:
            raise ValueError(f'Layer "{self.name}" ({type(self).__name__}) needs an input shape '
                             f"of rank 3; got {shape}.")
        dims = list(shape)
        ax = 1 if self.data_format == "channels_last" else 2
        dims[ax] = conv_output_length(dims[ax], self.pool_size[0], self.padding, self.strides[0])
        if dims[ax] is not None and dims[ax] <= 0:
            raise ValueError(f'Layer "{self.name}" ({type(self).__name__}): the input\'s length '
                             f"{shape[ax]} is smaller than the pool size {self.pool_size} with "
                             f"padding {self.padding!r}; input shape {tuple(shape)}.")
        return TensorShape(dims)

    def call(self, inputs: Any) -> Any:
        """Pool each window of `pool_size` steps, `strides` apart."""
        self.compute_output_shape(np.shape(inputs._value))
        return type(self)._op(inputs, self.pool_size, self.strides, self.padding.upper(),
                              "NWC" if self.data_format == "channels_last" else "NCW")

    def get_config(self) -> dict:
        return dict(super().get_config(), strides=self.strides, pool_size=self.pool_size,
                    padding=self.padding, data_format=self.data_format)


class MaxPooling1D(_Pooling1D):
    """Max pooling over windows of `pool_size` steps (`tf.nn.max_pool1d`); `strides`
    defaults to `pool_size`, `padding` is "valid" or "same".

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.constant([1., 3., 2., 5., 4.]), [1, 5, 1])
        >>> tf.keras.layers.MaxPooling1D()(x)[0, :, 0].numpy()
        array([3., 5.], dtype=float32)
    """


class AveragePooling1D(_Pooling1D):
    """Average pooling over windows of `pool_size` steps (`tf.nn.avg_pool1d`); with "same"
    padding each mean is over the window's unpadded steps.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.constant([1., 3., 2., 5., 4.]), [1, 5, 1])
        >>> tf.keras.layers.AveragePooling1D(padding="same")(x)[0, :, 0].numpy()
        array([2. , 3.5, 4. ], dtype=float32)
    """

    _op = staticmethod(_CV.avg_pool1d)


MaxPool1D = MaxPooling1D
AvgPool1D = AveragePooling1D
