"""Keras metrics (`tf.keras.metrics`, Keras 2): `Mean`, `Sum`, `Accuracy`,
`BinaryAccuracy`, `CategoricalAccuracy`, `SparseCategoricalAccuracy` and `MeanMetricWrapper`.

A metric is a layer whose state is non-trainable variables (`total`, `count`):
`update_state` adds a batch, `result` reads the value, `reset_state` starts over;
calling the metric updates it and returns the result. The updates are variable
assignments, so a metric updated inside a `tf.function` step accumulates at every replay.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import ops
from ..ops.convert import as_tensor
from ..tensor import Tensor
from .base_layer import Layer
from .common import MEAN_METRIC

__all__ = ["Metric", "Mean", "Sum", "MeanMetricWrapper", "Accuracy", "BinaryAccuracy",
           "CategoricalAccuracy", "SparseCategoricalAccuracy", "accuracy", "binary_accuracy",
           "categorical_accuracy", "sparse_categorical_accuracy"]


class Metric(Layer):
    """The base of metrics: subclasses make their state with `add_weight` in `__init__`
    and implement `update_state` and `result`.

    Example:
        >>> import tapeflow as tf
        >>> class Max(tf.keras.metrics.Metric):
        ...     def __init__(self, name="max"):
        ...         super().__init__(name=name)
        ...         self.best = self.add_weight("best", initializer=tf.keras.initializers.Constant(-1e9))
        ...     def update_state(self, values):
        ...         self.best.assign(tf.maximum(self.best, tf.reduce_max(values)))
        ...     def result(self):
        ...         return tf.identity(self.best)
        >>> m = Max(); m.update_state([1., 5., 2.]); float(m.result())
        5.0
    """

    def __init__(self, name: str | None = None, dtype: Any = None, **kwargs: Any) -> None:
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.built = True
        self.stateful = True

    def add_weight(self, name: str | None = None, shape: Any = (), dtype: Any = None,
                   initializer: Any = "zeros", trainable: bool = False, **kwargs: Any) -> Any:
        """A state variable of the metric (non-trainable, zeros by default)."""
        return super().add_weight(name=name, shape=shape, dtype=dtype, initializer=initializer,
                                  trainable=trainable, **kwargs)

    def update_state(self, *args: Any, **kwargs: Any) -> None:
        """Add a batch to the state (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `update_state`.")

    def result(self) -> Tensor:
        """The metric's value (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `result`.")

    def reset_state(self) -> None:
        """Set every state variable back to zero."""
        for v in self.variables:
            v.assign(ops.creation.zeros_like(v))

    reset_states = reset_state

    def __call__(self, *args: Any, **kwargs: Any) -> Tensor:
        self.update_state(*args, **kwargs)
        return self.result()


def _weights_like(values: Tensor, sample_weight: Any, who: str) -> Tensor:
    sw = ops.elementwise.cast(as_tensor(sample_weight, who, "sample_weight"), values.dtype)
    if sw.ndim == values.ndim + 1 and sw.shape[-1] == 1:
        sw = ops.shape.squeeze(sw, axis=-1)
    while 0 < sw.ndim < values.ndim:
        sw = ops.shape.expand_dims(sw, -1)
    try:
        return ops.shape.broadcast_to(sw, values.shape)
    except Exception:
        raise ValueError(f"{who}: `sample_weight` of shape {tuple(sw.shape)} does not fit the "
                         f"values of shape {tuple(values.shape)}.") from None


class _Reduce(Metric):
    _mean = True

    def __init__(self, name: str | None = None, dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)
        self.total = self.add_weight("total")
        if self._mean:
            self.count = self.add_weight("count")

    def update_state(self, values: Any, sample_weight: Any = None) -> None:
        """Add `values` (weighted by `sample_weight`, broadcast to their shape)."""
        who = f"{type(self).__name__}.update_state"
        values = ops.elementwise.cast(as_tensor(values, who, "values"), self.dtype)
        if sample_weight is not None:
            weights = _weights_like(values, sample_weight, who)
            values = values * weights
            num = ops.reduction.reduce_sum(weights)
        else:
            num = ops.elementwise.cast(ops.creation.size(values), self.dtype)
        self.total.assign_add(ops.reduction.reduce_sum(values))
        if self._mean:
            self.count.assign_add(num)

    def result(self) -> Tensor:
        """The weighted mean of every value so far (0 before any), or their sum."""
        if not self._mean:
            return ops.shape.identity(self.total)
        seen = ops.elementwise.greater(self.count, 0)
        safe = ops.elementwise.where(seen, self.count, ops.creation.ones_like(self.count))
        return ops.elementwise.where(seen, self.total / safe, ops.creation.zeros_like(self.total))


class Mean(_Reduce):
    """The (weighted) mean of every value given to `update_state`.

    Example:
        >>> import tapeflow as tf
        >>> m = tf.keras.metrics.Mean()
        >>> m.update_state([1., 3., 5., 7.])
        >>> float(m.result())
        4.0
        >>> m.update_state([9.], sample_weight=[4.])
        >>> float(m.result())
        6.5
        >>> m.reset_state(); float(m.result())
        0.0
    """

    def __init__(self, name: str = "mean", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)


MEAN_METRIC[0] = Mean


class Sum(_Reduce):
    """The (weighted) sum of every value given to `update_state`.

    Example:
        >>> import tapeflow as tf
        >>> s = tf.keras.metrics.Sum()
        >>> float(s([1., 3., 5.]))
        9.0
    """
    _mean = False

    def __init__(self, name: str = "sum", dtype: Any = None) -> None:
        super().__init__(name=name, dtype=dtype)


class MeanMetricWrapper(Mean):
    """The mean of ``fn(y_true, y_pred)`` over every sample seen.

    Example:
        >>> import tapeflow as tf
        >>> m = tf.keras.metrics.MeanMetricWrapper(tf.keras.losses.mean_absolute_error, name="mae")
        >>> float(m([[0., 1.]], [[1., 1.]]))
        0.5
    """

    def __init__(self, fn: Callable, name: str | None = None, dtype: Any = None,
                 **kwargs: Any) -> None:
        if not callable(fn):
            raise TypeError(f"MeanMetricWrapper: `fn` must be callable; received {fn!r}.")
        super().__init__(name=name or getattr(fn, "__name__", "mean_metric_wrapper"),
                         dtype=dtype)
        self._fn, self._fn_kwargs = fn, kwargs

    def update_state(self, y_true: Any, y_pred: Any, sample_weight: Any = None) -> None:
        """Add the values of ``fn(y_true, y_pred)``."""
        super().update_state(self._fn(y_true, y_pred, **self._fn_kwargs),
                             sample_weight=sample_weight)


def _as_tensors(y_true: Any, y_pred: Any, who: str) -> tuple[Tensor, Tensor]:
    return as_tensor(y_true, who, "y_true"), as_tensor(y_pred, who, "y_pred")


def _equal(a: Tensor, b: Tensor) -> Tensor:
    if a.dtype != b.dtype:
        b = ops.elementwise.cast(b, a.dtype)
    return ops.elementwise.cast(ops.elementwise.equal(a, b), "float32")


def accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where `y_pred` equals `y_true`, else 0.0.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.metrics.accuracy([1, 2, 3], [1, 2, 4]).numpy()
        array([1., 1., 0.], dtype=float32)
    """
    y_true, y_pred = _as_tensors(y_true, y_pred, "accuracy")
    if tuple(y_true.shape) != tuple(y_pred.shape):
        raise ValueError(f"accuracy: `y_true` and `y_pred` must have the same shape; received "
                         f"y_true {tuple(y_true.shape)} and y_pred {tuple(y_pred.shape)}.")
    return _equal(y_pred, y_true)


def binary_accuracy(y_true: Any, y_pred: Any, threshold: float = 0.5) -> Tensor:
    """The mean over the last axis of ``(y_pred > threshold) == y_true``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.metrics.binary_accuracy([[1., 0.], [0., 0.]], [[0.7, 0.2], [0.6, 0.1]]).numpy()
        array([1. , 0.5], dtype=float32)
    """
    y_true, y_pred = _as_tensors(y_true, y_pred, "binary_accuracy")
    predicted = ops.elementwise.cast(ops.elementwise.greater(y_pred, threshold), y_pred.dtype)
    return ops.reduction.reduce_mean(_equal(predicted, y_true), axis=-1)


def categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where the arg-max of `y_pred` is the arg-max of the one-hot `y_true`.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.metrics.categorical_accuracy([[0., 1.], [1., 0.]], [[0.2, 0.8], [0.3, 0.7]]).numpy()
        array([1., 0.], dtype=float32)
    """
    y_true, y_pred = _as_tensors(y_true, y_pred, "categorical_accuracy")
    return _equal(ops.reduction.argmax(y_true, axis=-1), ops.reduction.argmax(y_pred, axis=-1))


def sparse_categorical_accuracy(y_true: Any, y_pred: Any) -> Tensor:
    """1.0 where the arg-max of `y_pred` is the integer label `y_true` (which may have a
    trailing axis of size 1).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.metrics.sparse_categorical_accuracy([2, 1], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.]]).numpy()
        array([0., 1.], dtype=float32)
    """
    who = "sparse_categorical_accuracy"
    y_true, y_pred = _as_tensors(y_true, y_pred, who)
    if y_true.ndim == y_pred.ndim and y_true.shape[-1] == 1:
        y_true = ops.shape.squeeze(y_true, axis=-1)
    if tuple(y_true.shape) != tuple(y_pred.shape[:-1]):
        raise ValueError(f"{who}: `y_true` must hold one label per row of `y_pred`; received "
                         f"y_true {tuple(y_true.shape)} for y_pred {tuple(y_pred.shape)}.")
    return _equal(y_true, ops.reduction.argmax(y_pred, axis=-1))


class Accuracy(MeanMetricWrapper):
    """How often `y_pred` equals `y_true`.

    Example:
        >>> import tapeflow as tf
        >>> m = tf.keras.metrics.Accuracy()
        >>> m.update_state([[1], [2], [3], [4]], [[0], [2], [3], [4]])
        >>> float(m.result())
        0.75
    """

    def __init__(self, name: str = "accuracy", dtype: Any = None) -> None:
        super().__init__(accuracy, name=name, dtype=dtype)


class BinaryAccuracy(MeanMetricWrapper):
    """How often ``y_pred > threshold`` matches the binary label.

    Example:
        >>> import tapeflow as tf
        >>> float(tf.keras.metrics.BinaryAccuracy()([[1.], [0.]], [[0.9], [0.8]]))
        0.5
    """

    def __init__(self, name: str = "binary_accuracy", dtype: Any = None,
                 threshold: float = 0.5) -> None:
        super().__init__(binary_accuracy, name=name, dtype=dtype, threshold=threshold)


class CategoricalAccuracy(MeanMetricWrapper):
    """How often the predicted class matches the one-hot label.

    Example:
        >>> import tapeflow as tf
        >>> float(tf.keras.metrics.CategoricalAccuracy()([[0., 1.]], [[0.3, 0.7]]))
        1.0
    """

    def __init__(self, name: str = "categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(categorical_accuracy, name=name, dtype=dtype)


class SparseCategoricalAccuracy(MeanMetricWrapper):
    """How often the predicted class (arg-max of `y_pred`) matches the integer label.

    Example:
        >>> import tapeflow as tf
        >>> m = tf.keras.metrics.SparseCategoricalAccuracy()
        >>> m.update_state([[2], [1]], [[0.1, 0.6, 0.3], [0.05, 0.95, 0.]])
        >>> float(m.result())
        0.5
    """

    def __init__(self, name: str = "sparse_categorical_accuracy", dtype: Any = None) -> None:
        super().__init__(sparse_categorical_accuracy, name=name, dtype=dtype)
