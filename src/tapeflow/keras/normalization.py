"""Keras normalization layers: `BatchNormalization` (Keras 2 behaviour and defaults),
`LayerNormalization`, `UnitNormalization` and `GroupNormalization`."""

from __future__ import annotations

from typing import Any

import warnings

import numpy as np

from .. import ops
from ..tensor import TensorShape
from . import initializers
from .base_layer import InputSpec, Layer
from .penalties import weight_options, weight_options_config

__all__ = ["BatchNormalization", "LayerNormalization", "UnitNormalization", "GroupNormalization"]

# the regularizer and constraint entries of the configs, in tf_keras's order
_OPTIONS = ("beta_regularizer", "gamma_regularizer", "beta_constraint", "gamma_constraint")


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
        weight_options(self, beta_regularizer=beta_regularizer,
                       gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                       gamma_constraint=gamma_constraint)
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
        self._make_weights(param_shape)
        self.moving_mean = self.add_weight("moving_mean", param_shape, trainable=False,
                                           initializer=self.moving_mean_initializer)
        self.moving_variance = self.add_weight("moving_variance", param_shape, trainable=False,
                                               initializer=self.moving_variance_initializer)
        super().build(input_shape)

    def _make_weights(self, shape: tuple) -> None:
        """`gamma` (with `scale`) then `beta` (with `center`), with their regularizers and
        constraints."""
        self.gamma = self.add_weight("gamma", shape, initializer=self.gamma_initializer,
                                     regularizer=self.gamma_regularizer,
                                     constraint=self.gamma_constraint) if self.scale else None
        self.beta = self.add_weight("beta", shape, initializer=self.beta_initializer,
                                    regularizer=self.beta_regularizer,
                                    constraint=self.beta_constraint) if self.center else None

    def _fused(self, rank: int) -> bool:
        return rank in (4, 5) and self._axes in ([1], [rank - 1])

    def _broadcast(self, param: Any, rank: int) -> Any:
        if self._axes == [rank - 1]:
            return param
        shape = [1] * rank
        for a, d in zip(self._axes, param.shape, strict=True):
            shape[a] = int(d)
        return ops.shape.reshape(param, shape)

    @staticmethod
    def _unbiased(inputs: Any, variance: Any) -> Any:
        """n / (n - 1) for the n values behind each of `variance` (1 where n is 1), as a
        tensor: computed when the graph runs, so one trace serves every batch size."""
        n = ops.elementwise.cast(ops.creation.size(inputs), "float32") / \
            ops.elementwise.cast(ops.creation.size(variance), "float32")
        return ops.elementwise.cast(n / ops.elementwise.maximum(n - 1.0, 1.0), variance.dtype)

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
            moving_variance_target = variance * self._unbiased(inputs, variance) \
                if self._fused(rank) else variance
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
                    **weight_options_config(self, *_OPTIONS))


# ---------------------------------------------------------------- per-example normalization
def _axis_arg(axis: Any, message: str) -> Any:
    """An `axis` argument as tf_keras keeps it: an int, or a list of ints."""
    if isinstance(axis, (list, tuple)):
        return [int(a) for a in axis]
    if isinstance(axis, (int, np.integer)) and not isinstance(axis, bool):
        return int(axis)
    raise TypeError(message % (axis,))


def _validate_axis(axis: Any, input_shape: Any) -> list[int]:
    """tf_keras' validate_axis: the axes as non-negative ints, each in range, none twice."""
    shape = TensorShape(input_shape)
    rank = len(shape)
    if not rank:
        raise ValueError(f"Input has undefined rank. Received: input_shape={tuple(shape)}")
    axes = [a + rank if a < 0 else a for a in ([axis] if isinstance(axis, int) else axis)]
    if any(not 0 <= a < rank for a in axes):
        raise ValueError(f"Invalid value for `axis` argument. Expected 0 <= axis < inputs.rank "
                         f"(with inputs.rank={rank}). Received: axis={tuple(axes)}")
    if len(axes) != len(set(axes)):
        raise ValueError(f"Duplicate axis: {tuple(axes)}")
    return axes


class _CenterScale(Layer):
    """The arguments, weights and config shared by LayerNormalization and
    GroupNormalization: `gamma` (scale) then `beta` (center)."""

    def __init__(self, epsilon: float, center: bool, scale: bool, beta_initializer: Any,
                 gamma_initializer: Any, beta_regularizer: Any, gamma_regularizer: Any,
                 beta_constraint: Any, gamma_constraint: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        weight_options(self, beta_regularizer=beta_regularizer,
                       gamma_regularizer=gamma_regularizer, beta_constraint=beta_constraint,
                       gamma_constraint=gamma_constraint)
        self.epsilon, self.center, self.scale = epsilon, center, scale
        self.beta_initializer = initializers.get(beta_initializer)
        self.gamma_initializer = initializers.get(gamma_initializer)
        self.gamma = self.beta = None
        self.supports_masking = True

    _make_weights = BatchNormalization._make_weights

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), epsilon=self.epsilon, center=self.center,
                    scale=self.scale,
                    beta_initializer=initializers.serialize(self.beta_initializer),
                    gamma_initializer=initializers.serialize(self.gamma_initializer),
                    **weight_options_config(self, *_OPTIONS))


class LayerNormalization(_CenterScale):
    """Normalize each example over `axis` (the last by default): ``gamma * (x - mean) /
    sqrt(variance + epsilon) + beta``, the moments taken over `axis` and `gamma`, `beta`
    spanning it.

    The numerics are tf_keras's two paths: a float32 layer normalizing trailing axes with
    epsilon >= 1.001e-5 computes (x - mean) * rsqrt(variance + epsilon) first (its fused
    kernel, whose derivatives are exact at every order); otherwise tf.nn.moments (float16
    in float32) and tf.nn.batch_normalization's x * inv + (beta - mean * inv), whose
    second derivatives are TensorFlow's (the mean inside the variance carries no gradient).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.keras.normalization import LayerNormalization
        >>> norm = LayerNormalization(axis=1, name="ln")
        >>> norm(tf.constant([[0., 10.], [20., 40.]])).numpy().round(3)
        array([[-1., 1.],
               [-1., 1.]], dtype=float32)
        >>> [w.name for w in norm.weights], norm.get_config()["axis"]
        (['ln/gamma:0', 'ln/beta:0'], [1])
    """

    def __init__(self, axis: Any = -1, epsilon: float = 1e-3, center: bool = True,
                 scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint,
                         gamma_constraint, **kwargs)
        self.axis = _axis_arg(axis, "Expected an int or a list/tuple of ints for the argument "
                                    "'axis', but received: %r")
        self._use_fused = False

    def build(self, input_shape: Any) -> None:
        """Create gamma and beta over the normalized axes (which must have known sizes)."""
        self.axis = _validate_axis(self.axis, input_shape)
        shape = TensorShape(input_shape)
        param = tuple(shape[a] for a in self.axis)
        if any(d is None for d in param):
            raise ValueError(f"LayerNormalization: the normalized axes {self.axis} must have "
                             f"known sizes; received input_shape={tuple(shape)}.")
        self._make_weights(tuple(int(d) for d in param))
        axes, rank = sorted(self.axis), len(shape)
        self._use_fused = (axes[-1] == rank - 1 and axes[-1] - axes[0] == len(axes) - 1
                       and self.epsilon >= 1.001e-5 and self.dtype == "float32")
        super().build(input_shape)

    def _broadcast(self, param: Any, rank: int) -> Any:
        if param is None or self.axis == [rank - 1]:
            return param
        shape = [1] * rank
        for a, d in zip(self.axis, param.shape, strict=True):
            shape[a] = int(d)
        return ops.shape.reshape(param, shape)

    def call(self, inputs: Any) -> Any:
        """The normalized inputs, in the layer's dtype (inputs are cast to it, as tf_keras,
        also without autocast)."""
        inputs = ops.elementwise.cast(inputs, self.dtype)
        rank = inputs.ndim
        gamma, beta = self._broadcast(self.gamma, rank), self._broadcast(self.beta, rank)
        if self._use_fused:
            # tf_keras' fused kernel: the centered values scaled, then gamma and beta
            mean = ops.reduction.reduce_mean(inputs, axis=self.axis, keepdims=True)
            centered = inputs - mean
            variance = ops.reduction.reduce_mean(ops.elementwise.square(centered),
                                                 axis=self.axis, keepdims=True)
            out = centered * ops.elementwise.rsqrt(variance + self.epsilon)
            if gamma is not None:
                out = out * ops.elementwise.cast(gamma, out.dtype)
            if beta is not None:
                out = out + ops.elementwise.cast(beta, out.dtype)
            return out
        mean, variance = ops.nn_composites.moments(inputs, self.axis, keepdims=True)
        return ops.nn_composites.batch_normalization(inputs, mean, variance, beta, gamma,
                                                     self.epsilon)

    def get_config(self) -> dict:
        return dict(super().get_config(), axis=self.axis)


class UnitNormalization(Layer):
    """Each example scaled to unit L2 norm over `axis` (tf.math.l2_normalize: a zero
    vector stays zero).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.keras.normalization import UnitNormalization
        >>> UnitNormalization()(tf.constant([[3., 4.], [0., 0.]])).numpy()
        array([[0.6, 0.8],
               [0. , 0. ]], dtype=float32)
    """

    def __init__(self, axis: Any = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = _axis_arg(axis, "Invalid value for `axis` argument: expected an int or a "
                                    "list/tuple of ints. Received: axis=%s")
        self.supports_masking = True

    def build(self, input_shape: Any) -> None:
        """Check `axis` against the inputs' rank."""
        _validate_axis(self.axis, input_shape)
        super().build(input_shape)

    def call(self, inputs: Any) -> Any:
        inputs = ops.elementwise.cast(inputs, self.dtype)  # as tf_keras, also without autocast
        return ops.nn_composites.l2_normalize(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return TensorShape(input_shape)

    def get_config(self) -> dict:
        return dict(super().get_config(), axis=self.axis)


class GroupNormalization(_CenterScale):
    """Normalize each example over groups of channels: the `axis` channels split into
    `groups` groups (-1: one per channel), each normalized over its channels and every
    axis but the batch, then scaled and shifted per channel by `gamma` and `beta`. A mask
    leaves masked entries out of the moments, as tf_keras; one of the leading axes only
    (batch, steps: a Keras mask) applies to all the features of a step (tf_keras raises).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.keras.normalization import GroupNormalization
        >>> norm = GroupNormalization(groups=2, epsilon=0.)
        >>> norm(tf.constant([[1., 3., 10., 30.]])).numpy()
        array([[-1.,  1., -1.,  1.]], dtype=float32)
    """

    def __init__(self, groups: int = 32, axis: int = -1, epsilon: float = 1e-3,
                 center: bool = True, scale: bool = True, beta_initializer: Any = "zeros",
                 gamma_initializer: Any = "ones", beta_regularizer: Any = None,
                 gamma_regularizer: Any = None, beta_constraint: Any = None,
                 gamma_constraint: Any = None, **kwargs: Any) -> None:
        super().__init__(epsilon, center, scale, beta_initializer, gamma_initializer,
                         beta_regularizer, gamma_regularizer, beta_constraint,
                         gamma_constraint, **kwargs)
        self.groups, self.axis = int(groups), int(axis)

    def build(self, input_shape: Any) -> None:
        """Check the groups against the channels and create gamma and beta, one per channel."""
        (axis,) = _validate_axis(self.axis, input_shape)
        shape = TensorShape(input_shape)
        dim = shape[axis]
        if dim is None:
            raise ValueError(f"Axis {self.axis} of input tensor should have a defined dimension "
                             f"but the layer received an input with shape {tuple(shape)}.")
        if self.groups == -1:
            self.groups = int(dim)
        if not 0 < self.groups <= dim:
            raise ValueError(f"Number of groups ({self.groups}) cannot be more than the number "
                             f"of channels ({dim}), nor below 1.")
        if dim % self.groups:
            raise ValueError(f"Number of groups ({self.groups}) must divide the number of "
                             f"channels ({dim}).")
        self.input_spec = InputSpec(ndim=len(shape), axes={self.axis: dim})
        self._make_weights((int(dim),))
        super().build(input_shape)

    def call(self, inputs: Any, mask: Any = None) -> Any:
        """The normalized inputs; masked entries count for nothing in the moments."""
        shape = tuple(inputs.shape)
        axis = self.axis % len(shape)
        per_group = shape[axis] // self.groups
        grouped = shape[:axis] + (self.groups, per_group) + shape[axis + 1:]
        x = _reshape_examples(inputs, grouped)
        if mask is None:
            weights = ops.creation.ones_like(x)
        else:
            # a Keras mask covers leading axes (batch, steps): its trailing axes are added
            # (tf_keras broadcasts it as it is, which fails for such a mask)
            m = ops.elementwise.cast(mask, inputs.dtype)
            m = ops.shape.reshape(m, tuple(m.shape) + (1,) * (len(shape) - m.ndim))
            weights = _reshape_examples(ops.shape.broadcast_to(m, shape), grouped)
        reduce_axes = [a for a in range(1, len(grouped)) if a != axis]
        mean, variance = ops.nn_composites.weighted_moments(x, reduce_axes, weights,
                                                            keepdims=True)
        param_shape = [1] * len(grouped)
        param_shape[axis], param_shape[axis + 1] = self.groups, per_group
        gamma = None if self.gamma is None else ops.shape.reshape(self.gamma, param_shape)
        beta = None if self.beta is None else ops.shape.reshape(self.beta, param_shape)
        out = ops.nn_composites.batch_normalization(x, mean, variance, beta, gamma,
                                                    self.epsilon)
        return _reshape_examples(out, shape)

    def get_config(self) -> dict:
        config = super().get_config()
        return dict(config, groups=self.groups, axis=self.axis)


def _reshape_examples(x: Any, shape: tuple) -> Any:
    """x reshaped to `shape`, its batch size left for the reshape to infer (so a trace of
    a None batch size reads no size), unless another size is 0 and would leave it open."""
    if 0 in shape[1:] or not shape:
        return ops.shape.reshape(x, list(shape))
    return ops.shape.reshape(x, [-1] + list(shape[1:]))
