"""Keras losses (`tf.keras.losses`, Keras 2): `MeanSquaredError`, `MeanAbsoluteError`,
`BinaryCrossentropy`, `CategoricalCrossentropy`, `SparseCategoricalCrossentropy` and
their functions (`mean_squared_error`/`mse`, ...).

A loss object computes the per-sample losses (the mean over the last axis for the
elementwise losses), multiplies them by `sample_weight` if given, and reduces them as
Keras does: ``"sum_over_batch_size"`` (the default, also ``"auto"``) is the sum divided
by the number of per-sample losses; ``"sum"`` and ``"none"`` as named. Probabilities are
clipped to [1e-7, 1 - 1e-7] (Keras' epsilon) before their logarithm; ``from_logits=True``
uses TensorFlow's stable cross-entropies on logits instead.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import ops
from ..core import bind
from ..ops.convert import as_tensor
from ..ops.structural import (shape_source)
from ..ops.sizes import size_p
from ..tensor import Tensor

__all__ = ["Loss", "MeanSquaredError", "MeanAbsoluteError", "BinaryCrossentropy",
           "CategoricalCrossentropy", "SparseCategoricalCrossentropy", "mean_squared_error",
           "mean_absolute_error", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "mse", "mae", "get", "Reduction"]

EPSILON = 1e-7  # keras.backend.epsilon()


class Reduction:
    """The reduction names of `Loss` (tf.keras.losses.Reduction)."""
    AUTO = "auto"
    NONE = "none"
    SUM = "sum"
    SUM_OVER_BATCH_SIZE = "sum_over_batch_size"

    @classmethod
    def all(cls) -> tuple:
        return (cls.AUTO, cls.NONE, cls.SUM, cls.SUM_OVER_BATCH_SIZE)


def _pair(y_true: Any, y_pred: Any, who: str) -> tuple[Tensor, Tensor]:
    y_pred = as_tensor(y_pred, who, "y_pred")
    if not y_pred.dtype.is_floating:
        y_pred = ops.elementwise.cast(y_pred, "float32")
    y_true = as_tensor(y_true, who, "y_true")
    if y_true.dtype != y_pred.dtype:
        y_true = ops.elementwise.cast(y_true, y_pred.dtype)
    return y_true, y_pred


def _same_shape(y_true: Tensor, y_pred: Tensor, who: str) -> None:
    if tuple(y_true.shape) != tuple(y_pred.shape):
        try:
            np.broadcast_shapes(tuple(y_true.shape), tuple(y_pred.shape))
        except ValueError:
            raise ValueError(f"{who}: `y_true` and `y_pred` must have compatible shapes; "
                             f"received y_true {tuple(y_true.shape)} and y_pred "
                             f"{tuple(y_pred.shape)}.") from None


def mean_squared_error(y_true: Any, y_pred: Any) -> Tensor:
    """``mean((y_pred - y_true)², axis=-1)``, one loss per sample.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.losses.mean_squared_error([[0., 1.], [1., 1.]], [[1., 1.], [1., 0.]]).numpy()
        array([0.5, 0.5], dtype=float32)
    """
    y_true, y_pred = _pair(y_true, y_pred, "mean_squared_error")
    _same_shape(y_true, y_pred, "mean_squared_error")
    return ops.reduction.reduce_mean(ops.complex.squared_difference(y_pred, y_true), axis=-1)


def mean_absolute_error(y_true: Any, y_pred: Any) -> Tensor:
    """``mean(|y_pred - y_true|, axis=-1)``, one loss per sample.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.losses.mean_absolute_error([[0., 1.]], [[1., 3.]]).numpy()
        array([1.5], dtype=float32)
    """
    y_true, y_pred = _pair(y_true, y_pred, "mean_absolute_error")
    _same_shape(y_true, y_pred, "mean_absolute_error")
    return ops.reduction.reduce_mean(ops.complex.abs(y_pred - y_true), axis=-1)


mse = MSE = mean_squared_error
mae = MAE = mean_absolute_error


def _clip_probabilities(p: Tensor) -> Tensor:
    return ops.elementwise.clip_by_value(p, EPSILON, 1.0 - EPSILON)


def binary_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                        label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """The mean over `axis` of ``-(y log p + (1 - y) log(1 - p))``, p the predicted
    probability (clipped to [1e-7, 1 - 1e-7], or ``sigmoid(y_pred)`` with `from_logits`);
    `label_smoothing` moves the labels toward 0.5.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.losses.binary_crossentropy([[0., 1.]], [[0.4, 0.6]]).numpy()
        array([0.5108254], dtype=float32)
        >>> loss = tf.keras.losses.binary_crossentropy([[0., 1.]], [[-1., 2.]], from_logits=True)
        >>> loss.numpy().round(6)  # NumPy's SIMD log and exp round differently by CPU
        array([0.220095], dtype=float32)
    """
    who = "binary_crossentropy"
    y_true, y_pred = _pair(y_true, y_pred, who)
    _same_shape(y_true, y_pred, who)
    if label_smoothing:
        y_true = y_true * (1.0 - label_smoothing) + 0.5 * label_smoothing
    if from_logits:
        losses = ops.nn.sigmoid_cross_entropy_with_logits(
            labels=y_true * ops.creation.ones_like(y_pred), logits=y_pred)
    else:
        p = _clip_probabilities(y_pred)
        bce = y_true * ops.transcendental.log(p + EPSILON)
        bce = bce + (1 - y_true) * ops.transcendental.log(1 - p + EPSILON)
        losses = -bce
    return ops.reduction.reduce_mean(losses, axis=axis)


def categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                             label_smoothing: float = 0.0, axis: int = -1) -> Tensor:
    """``-sum(y_true * log p, axis)`` for one-hot (or soft) labels: p is `y_pred`
    normalized to sum to 1 and clipped to [1e-7, 1 - 1e-7], or ``softmax(y_pred)`` with
    `from_logits`; `label_smoothing` mixes the labels with the uniform distribution.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.losses.categorical_crossentropy([[0., 1., 0.]], [[0.05, 0.95, 0.]]).numpy()
        array([0.05129331], dtype=float32)
    """
    who = "categorical_crossentropy"
    y_true, y_pred = _pair(y_true, y_pred, who)
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"{who}: `y_true` and `y_pred` must have the same shape (one-hot "
                         f"labels); received y_true {tuple(y_true.shape)} and y_pred "
                         f"{tuple(y_pred.shape)}. For integer labels use "
                         f"sparse_categorical_crossentropy.")
    if label_smoothing:
        num_classes = float(y_true.shape[axis])
        y_true = y_true * (1.0 - label_smoothing) + label_smoothing / num_classes
    if from_logits:
        return ops.nn.softmax_cross_entropy_with_logits(labels=y_true, logits=y_pred, axis=axis)
    p = y_pred / ops.reduction.reduce_sum(y_pred, axis=axis, keepdims=True)
    p = _clip_probabilities(p)
    return -ops.reduction.reduce_sum(y_true * ops.transcendental.log(p), axis=axis)


def sparse_categorical_crossentropy(y_true: Any, y_pred: Any, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """The categorical cross-entropy for integer class labels: `y_true` has the shape
    of `y_pred` without its class axis (or with a class axis of size 1).

    Example:
        >>> import tapeflow as tf
        >>> loss = tf.keras.losses.sparse_categorical_crossentropy([1, 2], [[0.05, 0.95, 0.],
        ...                                                                [0.1, 0.8, 0.1]])
        >>> loss.numpy().round(6)
        array([0.051293, 2.302585], dtype=float32)
    """
    who = "sparse_categorical_crossentropy"
    y_pred = as_tensor(y_pred, who, "y_pred")
    labels = as_tensor(y_true, who, "y_true")
    if axis not in (-1, y_pred.ndim - 1):
        raise ValueError(f"{who}: only the last axis can be the class axis; received axis={axis}.")
    batch_shape = tuple(y_pred.shape[:-1])
    if labels.ndim == y_pred.ndim and labels.shape[-1] == 1:
        labels = ops.shape.squeeze(labels, axis=-1)
    if tuple(labels.shape) != batch_shape:
        raise ValueError(f"{who}: `y_true` must hold one class index per row of `y_pred`; "
                         f"received y_true {tuple(labels.shape)} for y_pred "
                         f"{tuple(y_pred.shape)} (expected y_true {batch_shape}).")
    if labels.dtype.is_floating:
        labels = ops.elementwise.cast(labels, "int64")
    logits = y_pred if from_logits else ops.transcendental.log(_clip_probabilities(y_pred))
    return ops.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits)


class Loss:
    """The base of loss objects: ``loss(y_true, y_pred, sample_weight=None)`` computes
    `call`'s per-sample losses, weights and reduces them.

    Example:
        >>> import tapeflow as tf
        >>> class Hinge1(tf.keras.losses.Loss):
        ...     def call(self, y_true, y_pred):
        ...         return tf.reduce_mean(tf.maximum(1. - y_true * y_pred, 0.), axis=-1)
        >>> float(Hinge1()(tf.constant([[1.], [-1.]]), tf.constant([[0.5], [0.5]])))
        1.0
    """

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None) -> None:
        if reduction not in Reduction.all():
            raise ValueError(f"{type(self).__name__}: invalid `reduction` {reduction!r}; expected "
                             f"one of {Reduction.all()}.")
        self.reduction = reduction
        self.name = name

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        """The per-sample losses (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `call`.")

    def __call__(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> Tensor:
        losses = self.call(y_true, y_pred)
        return _weighted_reduce(losses, sample_weight, self.reduction, type(self).__name__)

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {"reduction": self.reduction, "name": self.name}

    @classmethod
    def from_config(cls, config: dict) -> "Loss":
        """The loss of a `get_config()` dict."""
        return cls(**config)


def _weighted_reduce(losses: Tensor, sample_weight: Any, reduction: str, who: str) -> Tensor:
    if not losses.dtype.is_floating:
        losses = ops.elementwise.cast(losses, "float32")
    if sample_weight is not None:
        sw = as_tensor(sample_weight, who, "sample_weight")
        sw = ops.elementwise.cast(sw, losses.dtype)
        # Keras' squeeze_or_expand_dimensions: a trailing axis of 1 goes, missing axes come
        if sw.ndim == losses.ndim + 1 and sw.shape[-1] == 1:
            sw = ops.shape.squeeze(sw, axis=-1)
        while 0 < sw.ndim < losses.ndim:
            sw = ops.shape.expand_dims(sw, -1)
        try:
            np.broadcast_shapes(tuple(sw.shape), tuple(losses.shape))
        except ValueError:
            raise ValueError(f"{who}: `sample_weight` of shape {tuple(sw.shape)} does not fit the "
                             f"per-sample losses of shape {tuple(losses.shape)}.") from None
        losses = losses * sw
    if reduction == Reduction.NONE:
        return losses
    total = ops.reduction.reduce_sum(losses)
    if reduction == Reduction.SUM:
        return total
    # The count, read when a size-generic graph runs (NOTE(dynamic-shapes)): at least 1
    # (an empty batch's sum is 0, and so is its mean).
    return total / bind(size_p, sizes=shape_source(losses), dtype=losses._value.dtype,
                        at_least=1)


class _Wrapper(Loss):
    _fn: Callable = staticmethod(lambda y_true, y_pred: None)
    _default_name = ""

    def __init__(self, reduction: str = Reduction.AUTO, name: str | None = None,
                 **fn_kwargs: Any) -> None:
        super().__init__(reduction=reduction, name=name or self._default_name)
        self._fn_kwargs = fn_kwargs

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return type(self)._fn(y_true, y_pred, **self._fn_kwargs)

    def get_config(self) -> dict:
        return dict(super().get_config(), **self._fn_kwargs)


class MeanSquaredError(_Wrapper):
    """The mean of ``(y_true - y_pred)²`` (`mean_squared_error`, then reduced).

    Example:
        >>> import tapeflow as tf
        >>> mse = tf.keras.losses.MeanSquaredError()
        >>> float(mse([[0., 1.], [0., 0.]], [[1., 1.], [1., 0.]]))
        0.5
        >>> float(mse([[0., 1.], [0., 0.]], [[1., 1.], [1., 0.]], sample_weight=[0.7, 0.3]))
        0.25
    """
    _fn = staticmethod(mean_squared_error)
    _default_name = "mean_squared_error"

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_squared_error") -> None:
        super().__init__(reduction=reduction, name=name)


class MeanAbsoluteError(_Wrapper):
    """The mean of ``|y_true - y_pred|`` (`mean_absolute_error`, then reduced).

    Example:
        >>> import tapeflow as tf
        >>> float(tf.keras.losses.MeanAbsoluteError()([[0., 1.], [0., 0.]], [[1., 1.], [1., 0.]]))
        0.5
    """
    _fn = staticmethod(mean_absolute_error)
    _default_name = "mean_absolute_error"

    def __init__(self, reduction: str = Reduction.AUTO, name: str = "mean_absolute_error") -> None:
        super().__init__(reduction=reduction, name=name)


class BinaryCrossentropy(_Wrapper):
    """Binary cross-entropy (`binary_crossentropy`, then reduced).

    Example:
        >>> import tapeflow as tf
        >>> bce = tf.keras.losses.BinaryCrossentropy(from_logits=True)
        >>> round(float(bce([[0., 1.], [0., 0.]], [[-18.6, 0.51], [2.94, -12.8]])), 4)
        0.8655
    """
    _fn = staticmethod(binary_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: str = "binary_crossentropy") -> None:
        super().__init__(reduction=reduction, name=name, from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=axis)


class CategoricalCrossentropy(_Wrapper):
    """Categorical cross-entropy for one-hot labels (`categorical_crossentropy`, then
    reduced).

    Example:
        >>> import tapeflow as tf
        >>> cce = tf.keras.losses.CategoricalCrossentropy()
        >>> round(float(cce([[0., 1., 0.], [0., 0., 1.]], [[0.05, 0.95, 0.], [0.1, 0.8, 0.1]])), 4)
        1.1769
    """
    _fn = staticmethod(categorical_crossentropy)

    def __init__(self, from_logits: bool = False, label_smoothing: float = 0.0, axis: int = -1,
                 reduction: str = Reduction.AUTO, name: str = "categorical_crossentropy") -> None:
        super().__init__(reduction=reduction, name=name, from_logits=bool(from_logits),
                         label_smoothing=float(label_smoothing), axis=axis)


class SparseCategoricalCrossentropy(_Wrapper):
    """Categorical cross-entropy for integer labels (`sparse_categorical_crossentropy`,
    then reduced).

    Example:
        >>> import tapeflow as tf
        >>> scce = tf.keras.losses.SparseCategoricalCrossentropy()
        >>> round(float(scce([1, 2], [[0.05, 0.95, 0.], [0.1, 0.8, 0.1]])), 4)
        1.1769
    """
    _fn = staticmethod(sparse_categorical_crossentropy)

    def __init__(self, from_logits: bool = False, reduction: str = Reduction.AUTO,
                 name: str = "sparse_categorical_crossentropy") -> None:
        super().__init__(reduction=reduction, name=name, from_logits=bool(from_logits))


_BY_NAME: dict[str, Any] = {
    "mean_squared_error": mean_squared_error, "mse": mean_squared_error,
    "mean_absolute_error": mean_absolute_error, "mae": mean_absolute_error,
    "binary_crossentropy": binary_crossentropy,
    "categorical_crossentropy": categorical_crossentropy,
    "sparse_categorical_crossentropy": sparse_categorical_crossentropy,
    "MeanSquaredError": MeanSquaredError, "MeanAbsoluteError": MeanAbsoluteError,
    "BinaryCrossentropy": BinaryCrossentropy, "CategoricalCrossentropy": CategoricalCrossentropy,
    "SparseCategoricalCrossentropy": SparseCategoricalCrossentropy,
}


def get(identifier: Any) -> Any:
    """A loss from a name (a function name such as "mse", or a class name, which is
    instantiated with its defaults) or a callable (returned as is).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.losses.get("mse") is tf.keras.losses.mean_squared_error
        True
    """
    if callable(identifier) and not isinstance(identifier, str):
        return identifier
    if isinstance(identifier, str) and identifier in _BY_NAME:
        found = _BY_NAME[identifier]
        return found() if isinstance(found, type) else found
    raise ValueError(f"Could not interpret loss identifier: {identifier!r}; known: "
                     f"{sorted(_BY_NAME)}.")
