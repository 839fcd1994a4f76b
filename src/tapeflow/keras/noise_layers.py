"""Keras layers that add noise or drop features in training: GaussianNoise,
GaussianDropout, AlphaDropout, SpatialDropout1D/2D/3D; ActivityRegularization, which adds
a penalty of its input to the losses; and PReLU, the leaky ReLU whose slopes are a
weight.

The noise layers act only when called with ``training=True`` (as tf_keras, whose default
learning phase is inference; `fit` passes it): otherwise their output is their input.
Their draws come from tf.random's sequences (tf.nn.dropout's and
`ops.nn_composites.draw_like`), so a layer's `seed`, tf.random.set_seed, the replays of
a traced function (which draw again) and vmap behave as every draw does, and the shape
drawn is read when the op runs, so a trace with a None batch size serves every size.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..tensor import Tensor, TensorShape
from . import initializers, regularizers
from .base_layer import InputSpec, Layer
from .core_layers import Dropout
from .penalties import weight_options, weight_options_config
from .common import normalize_data_format

__all__ = ["GaussianNoise", "GaussianDropout", "AlphaDropout", "SpatialDropout1D",
           "SpatialDropout2D", "SpatialDropout3D", "ActivityRegularization", "PReLU"]

_SELU_ALPHA = 1.6732632423543772
_SELU_SCALE = 1.0507009873554805


class _Noise(Layer):
    """A layer that changes its inputs in training only and passes masks on."""

    def __init__(self, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seed = seed
        self.supports_masking = True

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), seed=self.seed)


class GaussianNoise(_Noise):
    """In training, ``inputs + stddev * N(0, 1)`` (fresh noise at each call); the inputs
    otherwise.

    Example:
        >>> import tapeflow as tf
        >>> noise = tf.keras.layers.GaussianNoise(0.1, seed=1)
        >>> x = tf.zeros([1000])
        >>> bool(tf.reduce_all(noise(x) == x))
        True
        >>> round(float(tf.math.reduce_std(noise(x, training=True))), 1)
        0.1
    """

    def __init__(self, stddev: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.stddev = stddev

    def call(self, inputs: Any, training: Any = None) -> Tensor:
        if not training:
            return inputs
        draw = ops.nn_composites.draw_like(inputs, seed=self.seed, normal=True)
        return inputs + draw * self.stddev

    def get_config(self) -> dict:
        return dict(super().get_config(), stddev=self.stddev)


class GaussianDropout(_Noise):
    """In training with 0 < rate < 1, ``inputs * N(1, rate / (1 - rate))``: multiplicative
    noise of mean 1 (the inputs otherwise, and for any other rate, as tf_keras).

    Example:
        >>> import tapeflow as tf
        >>> drop = tf.keras.layers.GaussianDropout(0.2, seed=2)
        >>> y = drop(tf.ones([4000]), training=True)
        >>> round(float(tf.reduce_mean(y)), 1), round(float(tf.math.reduce_std(y)), 1)
        (1.0, 0.5)
    """

    def __init__(self, rate: float, seed: int | None = None, **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.rate = rate

    def call(self, inputs: Any, training: Any = None) -> Tensor:
        if not (training and 0 < self.rate < 1):
            return inputs
        stddev = float(np.sqrt(self.rate / (1.0 - self.rate)))
        draw = ops.nn_composites.draw_like(inputs, seed=self.seed, normal=True)
        return inputs * (draw * stddev + 1.0)

    def get_config(self) -> dict:
        return dict(super().get_config(), rate=self.rate)


class AlphaDropout(_Noise):
    """In training with 0 < rate < 1, dropout that keeps SELU's self-normalization: each
    element is set to SELU's negative saturation value with probability `rate`, then all
    are scaled and shifted so the mean and variance stay those of the inputs.
    `noise_shape` shares a draw along its axes of size 1, as Dropout's.

    Example:
        >>> import tapeflow as tf
        >>> drop = tf.keras.layers.AlphaDropout(0.2, seed=3)
        >>> y = drop(tf.random.normal([20000], seed=4), training=True)
        >>> round(float(tf.reduce_mean(y)), 1), round(float(tf.math.reduce_std(y)), 1)
        (0.0, 1.0)
    """

    def __init__(self, rate: float, noise_shape: Any = None, seed: int | None = None,
                 **kwargs: Any) -> None:
        super().__init__(seed=seed, **kwargs)
        self.rate = rate
        self.noise_shape = None if noise_shape is None else tuple(noise_shape)

    def call(self, inputs: Any, training: Any = None) -> Tensor:
        if not (training and 0 < self.rate < 1):
            return inputs
        rate = float(self.rate)
        alpha_p = -_SELU_ALPHA * _SELU_SCALE
        draw = ops.nn_composites.draw_like(inputs, self.noise_shape, seed=self.seed)
        kept = ops.elementwise.cast(draw >= rate, inputs.dtype)
        a = ((1 - rate) * (1 + rate * alpha_p ** 2)) ** -0.5
        b = -a * alpha_p * rate
        return (inputs * kept + (1 - kept) * alpha_p) * a + b

    def get_config(self) -> dict:
        # tf_keras leaves noise_shape out of the config (its layer would lose it)
        return dict(super().get_config(), rate=self.rate, noise_shape=self.noise_shape)


class _SpatialDropout(Dropout):
    """Dropout of whole feature maps: one keep/drop draw per example and channel."""

    _rank = 1

    def __init__(self, rate: float, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(rate, **kwargs)
        if data_format is not None and data_format not in ("channels_last", "channels_first"):
            raise ValueError(f'`data_format` must be "channels_last" or "channels_first". '
                             f"Received: data_format={data_format}.")
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs: Any, training: Any = None) -> Any:
        """The inputs, with whole channels dropped when `training` is true."""
        if not training or self.rate == 0:
            return ops.shape.identity(inputs)
        if self.rate == 1:
            return inputs * 0.0
        ones = [1] * self._rank
        noise = [None] + ones + [None] if self.data_format == "channels_last" \
            else [None, None] + ones
        return ops.nn_composites.dropout(inputs, self.rate, noise_shape=noise, seed=self.seed)


class SpatialDropout1D(_SpatialDropout):
    """In training, whole features of (batch, steps, features) inputs zeroed with
    probability `rate` (the same steps of a feature all kept or all dropped), the others
    scaled by 1 / (1 - rate).

    Example:
        >>> import tapeflow as tf
        >>> y = tf.keras.layers.SpatialDropout1D(0.5, seed=1)(tf.ones([2, 5, 4]), training=True)
        >>> bool(tf.reduce_all(tf.math.reduce_std(y, axis=1) == 0))
        True
    """

    def __init__(self, rate: float, **kwargs: Any) -> None:
        super().__init__(rate, **kwargs)


class SpatialDropout2D(_SpatialDropout):
    """In training, whole channels of images zeroed with probability `rate` (one draw per
    example and channel), the others scaled by 1 / (1 - rate).

    Example:
        >>> import tapeflow as tf
        >>> layer = tf.keras.layers.SpatialDropout2D(0.5, data_format="channels_first", seed=2)
        >>> y = layer(tf.ones([2, 3, 4, 4]), training=True)
        >>> bool(tf.reduce_all(tf.math.reduce_std(y, axis=[2, 3]) == 0))
        True
    """

    _rank = 2

    def get_config(self) -> dict:
        # tf_keras leaves data_format out of the config (its layer would lose it)
        return dict(super().get_config(), data_format=self.data_format)


class SpatialDropout3D(SpatialDropout2D):
    """In training, whole channels of volumes zeroed with probability `rate`.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.SpatialDropout3D(0.3)(tf.ones([1, 2, 2, 2, 3]), training=True).shape
        TensorShape([1, 2, 2, 2, 3])
    """

    _rank = 3


class ActivityRegularization(Layer):
    """The identity, which adds ``l1 * sum(|x|) + l2 * sum(x**2)`` of its output (over
    the batch size) to the layer's `losses` at each call, as tf_keras.

    Example:
        >>> import tapeflow as tf
        >>> reg = tf.keras.layers.ActivityRegularization(l1=0.5)
        >>> reg(tf.constant([[1., -3.]])).numpy(), [float(v) for v in reg.losses]
        (array([[ 1., -3.]], dtype=float32), [2.0])
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0, **kwargs: Any) -> None:
        super().__init__(activity_regularizer=regularizers.L1L2(l1=l1, l2=l2), **kwargs)
        self.supports_masking = True
        self.l1, self.l2 = l1, l2

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        # the regularizer is made from l1 and l2: tf_keras leaves it out of the config
        config = dict(super().get_config(), l1=self.l1, l2=self.l2)
        config.pop("activity_regularizer", None)
        return config


class PReLU(Layer):
    """The parametric ReLU: ``x`` where positive, ``alpha * x`` elsewhere, with `alpha` a
    weight of the input's shape without the batch axis (size 1 along `shared_axes`, whose
    positions share one slope).

    Example:
        >>> import tapeflow as tf
        >>> prelu = tf.keras.layers.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.1),
        ...                               shared_axes=[1])
        >>> prelu(tf.constant([[[-1., 2.], [-3., -4.]]])).numpy()
        array([[[-0.1,  2. ],
                [-0.3, -0.4]]], dtype=float32)
        >>> prelu.alpha.shape
        TensorShape([1, 2])
    """

    def __init__(self, alpha_initializer: Any = "zeros", alpha_regularizer: Any = None,
                 alpha_constraint: Any = None, shared_axes: Any = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        weight_options(self, alpha_regularizer=alpha_regularizer,
                       alpha_constraint=alpha_constraint)
        self.supports_masking = True
        self.alpha_initializer = initializers.get(alpha_initializer)
        if shared_axes is None:
            self.shared_axes = None
        elif isinstance(shared_axes, (list, tuple)):
            self.shared_axes = [int(a) for a in shared_axes]
        else:
            self.shared_axes = [int(shared_axes)]
        self.alpha: Any = None

    def build(self, input_shape: Any) -> None:
        """Create `alpha`, of the input's shape without the batch axis (1 on shared axes)."""
        shape = list(TensorShape(input_shape))
        bad = [a for a in self.shared_axes or [] if not 1 <= a < len(shape)]
        if bad:
            raise ValueError(f"PReLU: `shared_axes` {self.shared_axes} must be axes of the "
                             f"inputs after the batch axis (1 to {len(shape) - 1}); received "
                             f"input_shape={tuple(shape)}.")
        param = [1 if i + 1 in (self.shared_axes or []) else d for i, d in enumerate(shape[1:])]
        if any(d is None for d in param):
            raise ValueError(f"PReLU: the axes of the inputs that `alpha` spans must be known; "
                             f"received input_shape={tuple(shape)} with shared_axes="
                             f"{self.shared_axes}.")
        self.alpha = self.add_weight("alpha", param, initializer=self.alpha_initializer,
                                     regularizer=self.alpha_regularizer,
                                     constraint=self.alpha_constraint)
        # every axis alpha spans is fixed (tf_keras fixes them only with shared_axes, and
        # an input of another size then fails in the multiplication)
        axes = {i: shape[i] for i in range(1, len(shape)) if i not in (self.shared_axes or [])}
        self.input_spec = InputSpec(ndim=len(shape), axes=axes)
        super().build(input_shape)

    def call(self, inputs: Any) -> Tensor:
        positive = ops.nn.relu(inputs)
        return positive + -self.alpha * ops.nn.relu(-inputs)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(),
                    alpha_initializer=initializers.serialize(self.alpha_initializer),
                    **weight_options_config(self, "alpha_regularizer", "alpha_constraint"),
                    shared_axes=self.shared_axes)
