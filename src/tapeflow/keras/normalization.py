"""Keras `BatchNormalization` (Keras 2 behaviour and defaults)."""

from __future__ import annotations

from typing import Any

import warnings

import numpy as np

from .. import ops
from ..tensor import TensorShape
from . import initializers
from .base_layer import InputSpec, Layer

__all__ = ["BatchNormalization"]


class BatchNormalization(Layer):
    """Normalize over every axis but `axis`: ``gamma * (x - mean) / sqrt(var + epsilon)
    + beta``.

    With ``training=True`` the batch's mean and (biased) variance are used, and the
    non-trainable `moving_mean`/`moving_variance` move toward them:
    ``moving -= (moving - batch) * (1 - momentum)``. As Keras' fused kernel, inputs of
    rank 4 and 5 normalized along their first or last feature axis move `moving_variance`
    toward the unbiased (n/(n-1)) batch variance. Otherwise (the default, and always when
    the layer is not trainable, as Keras 2) the moving statistics are used.

    Example:
        >>> import tapeflow as tf
        >>> bn = tf.keras.layers.BatchNormalization(name="bn")
        >>> x = tf.constant([[0., 10.], [2., 30.]])
        >>> bn(x, training=True).numpy().round(3)
        array([[-1., -1.],
               [ 1.,  1.]], dtype=float32)
        >>> bn.moving_mean.numpy().round(4), bn.moving_variance.numpy().round(4)
        (array([0.01, 0.2 ], dtype=float32), array([1.  , 1.99], dtype=float32))
        >>> [w.name for w in bn.weights]
        ['bn/gamma:0', 'bn/beta:0', 'bn/moving_mean:0', 'bn/moving_variance:0']
    """

    def __init__(self, axis: Any = -1, momentum: float = 0.99, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", moving_mean_initializer: Any = "zeros",
                 moving_variance_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, synchronized: bool = False,
                 **kwargs: Any) -> None:
        kwargs.pop("fused", None)
        for arg in ("renorm", "virtual_batch_size", "adjustment"):
            if kwargs.pop(arg, None):
                raise NotImplementedError(f"BatchNormalization: `{arg}` is not supported by "
                                          f"tapeflow.")
        super().__init__(**kwargs)
        if any(a is not None for a in (beta_regularizer, gamma_regularizer, beta_constraint,
                                       gamma_constraint)):
            raise NotImplementedError("BatchNormalization: regularizers and constraints are not "
                                      "supported by tapeflow's Keras layers; pass None.")
        if isinstance(axis, (list, tuple)):
            self.axis = [int(a) for a in axis]
        elif isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
            self.axis = int(axis)
        else:
            raise TypeError(f"BatchNormalization: `axis` must be an int or a list of ints; "
                            f"received axis={axis!r}.")
        self.momentum, self.epsilon = float(momentum), float(epsilon)
        self.center, self.scale = bool(center), bool(scale)
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.moving_mean_initializer = initializers.get(moving_mean_initializer)
        self.moving_variance_initializer = initializers.get(moving_variance_initializer)
        self.gamma = self.beta = self.moving_mean = self.moving_variance = None
        self._axes: list[int] = []
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        """Create gamma, beta (trainable) and the moving statistics (not) over `axis`."""
        shape = TensorShape(input_shape)
        rank = len(shape)
        axes = self.axis if isinstance(self.axis, list) else [self.axis]
        bad = [a for a in axes if not -rank <= a < rank]
        if bad or rank == 0:
            raise ValueError(f"Invalid axis: {self.axis} for BatchNormalization on inputs of "
                             f"shape {tuple(shape)} (rank {rank}).")
        self._axes = sorted({a % rank for a in axes})
        dims = [shape[a] for a in self._axes]
        if any(d is None for d in dims):
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension "
                             f"but the layer received an input with shape {tuple(shape)}.")
        param_shape = tuple(int(d) for d in dims)
        self.input_spec = InputSpec(ndim=rank, axes={a: shape[a] for a in self._axes})
        self.gamma = self.add_weight("gamma", param_shape, initializer=self.gamma_initializer) \
            if self.scale else None
        self.beta = self.add_weight("beta", param_shape, initializer=self.beta_initializer) \
            if self.center else None
        self.moving_mean = self.add_weight("moving_mean", param_shape, trainable=False,
                                           initializer=self.moving_mean_initializer)
        self.moving_variance = self.add_weight("moving_variance", param_shape, trainable=False,
                                               initializer=self.moving_variance_initializer)
        super().build(input_shape)

    def _fused(self, rank: int) -> bool:
        return rank in (4, 5) and self._axes in ([1], [rank - 1])

    def _broadcast(self, param: Any, rank: int) -> Any:
        if self._axes == [rank - 1]:
            return param
        shape = [1] * rank
        for a, d in zip(self._axes, param.shape, strict=True):
            shape[a] = int(d)
        return ops.shape.reshape(param, shape)

    def call(self, inputs: Any, training: Any = None, mask: Any = None) -> Any:
        """Normalize with the batch statistics (training) or the moving ones. With a
        `mask` (batch, time) in training, the statistics are over the unmasked steps
        (tf.nn.weighted_moments), as tf_keras' unfused kernel; the fused one (inputs of
        rank 4 or 5) ignores masks with a warning, as tf_keras."""
        rank = inputs.ndim
        training = bool(training) and self.trainable
        reduce_axes = [a for a in range(rank) if a not in self._axes]
        if training:
            if mask is not None and self._fused(rank):
                warnings.warn("Masking is not supported with `fused=True`: the mask is ignored "
                              "for the normalization (as tf_keras).", stacklevel=2)
                mask = None
            if mask is None:
                mean = ops.reduction.reduce_mean(inputs, axis=reduce_axes)
                centered = ops.complex.squared_difference(
                    inputs, self._broadcast(ops.shape.stop_gradient(mean), rank))
                variance = ops.reduction.reduce_mean(centered, axis=reduce_axes)
            else:
                mean, variance = self._masked_moments(inputs, mask, reduce_axes)
            n = int(np.prod([inputs.shape[a] for a in reduce_axes], dtype=np.int64))
            moving_variance_target = variance * (n / (n - 1)) \
                if self._fused(rank) and n > 1 else variance
            decay = 1.0 - self.momentum
            self.moving_mean.assign_sub((self.moving_mean - mean) * decay)
            self.moving_variance.assign_sub(
                (self.moving_variance - moving_variance_target) * decay)
        else:
            mean, variance = self.moving_mean, self.moving_variance
        # tf.nn.batch_normalization's form
        inv = ops.elementwise.rsqrt(variance + self.epsilon)
        if self.gamma is not None:
            inv = inv * self.gamma
        shift = -mean * inv if self.beta is None else self.beta - mean * inv
        return inputs * self._broadcast(inv, rank) + self._broadcast(shift, rank)

    def _masked_moments(self, inputs: Any, mask: Any, reduce_axes: list[int]) -> tuple:
        """tf.nn.weighted_moments with the mask (one more axis for the features) as the
        frequency weights; 0/0 (every step masked) is 0, as its div_no_nan."""
        weights = ops.shape.expand_dims(ops.elementwise.cast(mask, inputs.dtype), -1)
        total = ops.reduction.reduce_sum(weights + ops.creation.zeros_like(inputs),
                                         axis=reduce_axes, keepdims=True)
        some = ops.elementwise.greater(total, 0)
        safe_total = ops.elementwise.where(some, total, ops.creation.ones_like(total))

        def weighted_mean(values: Any) -> Any:
            summed = ops.reduction.reduce_sum(weights * values, axis=reduce_axes, keepdims=True)
            return ops.elementwise.where(some, summed / safe_total,
                                         ops.creation.zeros_like(summed))

        mean = weighted_mean(inputs)
        variance = weighted_mean(ops.complex.squared_difference(inputs, mean))
        return (ops.shape.squeeze(mean, axis=reduce_axes),
                ops.shape.squeeze(variance, axis=reduce_axes))

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        # as tf_keras: after build, `axis` is the list of non-negative feature axes
        axis = list(self._axes) if self.built and self._axes else self.axis
        return dict(super().get_config(), axis=axis, momentum=self.momentum,
                    epsilon=self.epsilon, center=self.center, scale=self.scale,
                    beta_initializer=initializers.serialize(self.beta_initializer),
                    gamma_initializer=initializers.serialize(self.gamma_initializer),
                    moving_mean_initializer=initializers.serialize(self.moving_mean_initializer),
                    moving_variance_initializer=initializers.serialize(
                        self.moving_variance_initializer),
                    beta_regularizer=None, gamma_regularizer=None, beta_constraint=None,
                    gamma_constraint=None)
