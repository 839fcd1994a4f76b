"""Keras layers without weights that the guides and tutorials use: the activation layers
(`ReLU`, `LeakyReLU`, `ELU`, `Softmax`), the reshaping ones (`Reshape`, `Permute`,
`RepeatVector`) and global pooling (`GlobalAveragePooling1D/2D`, `GlobalMaxPooling1D/2D`),
with tf_keras's arguments, defaults and configs. Each is its ops composed: their
derivatives are the ops' own.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..tensor import Tensor
from . import activations
from .base_layer import InputSpec, Layer
from .common import normalize_data_format

__all__ = ["ReLU", "LeakyReLU", "ELU", "Softmax", "Reshape", "Permute", "RepeatVector",
           "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D",
           "GlobalMaxPooling2D"]


def _floatx(value: float) -> float:
    """A float argument as tf_keras keeps it (float32), so configs match its."""
    return float(np.float32(value))


class ReLU(Layer):
    """``max(x, 0)``, with a `negative_slope` below `threshold` and a `max_value` cap.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.ReLU(max_value=2.0)(tf.constant([-1.0, 1.0, 3.0])).numpy()
        array([0., 1., 2.], dtype=float32)
    """

    def __init__(self, max_value: float | None = None, negative_slope: float = 0.0,
                 threshold: float = 0.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if max_value is not None and max_value < 0:
            raise ValueError(f"max_value of a ReLU layer cannot be negative; received {max_value}")
        if negative_slope < 0:
            raise ValueError("negative_slope of a ReLU layer cannot be negative; received "
                             f"{negative_slope}")
        if threshold < 0:
            raise ValueError(f"threshold of a ReLU layer cannot be a negative value. Received: "
                             f"{threshold}")
        self.max_value, self.negative_slope, self.threshold = max_value, negative_slope, threshold

    def call(self, inputs: Any) -> Tensor:
        return activations.relu(inputs, alpha=self.negative_slope, max_value=self.max_value,
                                threshold=self.threshold)

    def get_config(self) -> dict:
        return dict(super().get_config(), max_value=self.max_value,
                    negative_slope=self.negative_slope, threshold=self.threshold)


class LeakyReLU(Layer):
    """``x`` where positive, ``alpha * x`` elsewhere (tf_keras's default alpha: 0.3)."""

    def __init__(self, alpha: float = 0.3, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if alpha is None:
            raise ValueError("The alpha value of a Leaky ReLU layer cannot be None.")
        self.alpha = _floatx(alpha)

    def call(self, inputs: Any) -> Tensor:
        return ops.nn.leaky_relu(inputs, alpha=self.alpha)

    def get_config(self) -> dict:
        return dict(super().get_config(), alpha=self.alpha)


class ELU(Layer):
    """``x`` where positive, ``alpha * (exp(x) - 1)`` elsewhere."""

    def __init__(self, alpha: float = 1.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.alpha = _floatx(alpha)

    def call(self, inputs: Any) -> Tensor:
        return activations.elu(inputs, alpha=self.alpha)

    def get_config(self) -> dict:
        return dict(super().get_config(), alpha=self.alpha)


class Softmax(Layer):
    """The softmax along `axis` (the last by default)."""

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.axis = axis

    def call(self, inputs: Any) -> Tensor:
        return activations.softmax(inputs, axis=self.axis)

    def get_config(self) -> dict:
        return dict(super().get_config(), axis=self.axis)


class Reshape(Layer):
    """Each example reshaped to `target_shape` (one entry may be -1).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Reshape((3, -1))(tf.ones([2, 12])).shape
        TensorShape([2, 3, 4])
    """

    def __init__(self, target_shape: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.target_shape = tuple(int(d) for d in target_shape)
        if sum(d == -1 for d in self.target_shape) > 1 or min(self.target_shape, default=0) < -1:
            raise ValueError(f"Reshape: `target_shape` {self.target_shape} may hold one -1 and "
                             "no other negative size.")

    def call(self, inputs: Any) -> Tensor:
        # the batch size a size-generic trace reads when it runs (NOTE(symbolic-sizes))
        batch = ops.structural.shape_of(inputs)[0]
        return ops.shape.reshape(inputs, (batch,) + tuple(self.target_shape))

    def get_config(self) -> dict:
        return dict(super().get_config(), target_shape=self.target_shape)


class Permute(Layer):
    """The example axes permuted: `dims` (from 1, the batch axis staying first)."""

    def __init__(self, dims: Any, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.dims = tuple(int(d) for d in dims)
        if sorted(self.dims) != list(range(1, len(self.dims) + 1)):
            raise ValueError(f"Invalid permutation argument `dims` for Permute Layer. The set of "
                             f"indices in `dims` must be consecutive and start from 1. Received "
                             f"dims={dims}")
        self.input_spec = InputSpec(ndim=len(self.dims) + 1)

    def call(self, inputs: Any) -> Tensor:
        return ops.shape.transpose(inputs, (0,) + self.dims)

    def get_config(self) -> dict:
        return dict(super().get_config(), dims=self.dims)


class RepeatVector(Layer):
    """(batch, features) -> (batch, n, features): each vector `n` times."""

    def __init__(self, n: int, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.n = int(n)
        self.input_spec = InputSpec(ndim=2)

    def call(self, inputs: Any) -> Tensor:
        return ops.shape.tile(ops.shape.expand_dims(inputs, 1), [1, self.n, 1])

    def get_config(self) -> dict:
        return dict(super().get_config(), n=self.n)


class _GlobalPooling(Layer):
    _rank = 1
    _reduce = staticmethod(ops.reduction.reduce_mean)

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.keepdims = bool(keepdims)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def call(self, inputs: Any) -> Tensor:
        first = 2 if self.data_format == "channels_first" else 1
        axes = list(range(first, first + self._rank))
        return type(self)._reduce(inputs, axis=axes, keepdims=self.keepdims)

    def get_config(self) -> dict:
        return dict(super().get_config(), data_format=self.data_format, keepdims=self.keepdims)


class GlobalAveragePooling1D(_GlobalPooling):
    """The mean over the steps: (batch, steps, features) -> (batch, features); with a
    mask over the steps (an Embedding's `mask_zero`), over the unmasked steps only, as
    tf_keras. The output carries no mask.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[[1.0], [3.0], [8.0]]])
        >>> tf.keras.layers.GlobalAveragePooling1D()(x, mask=tf.constant([[True, True, False]])).numpy()
        array([[2.]], dtype=float32)
    """

    def __init__(self, data_format: str | None = None, keepdims: bool = False,
                 **kwargs: Any) -> None:
        super().__init__(data_format, keepdims, **kwargs)
        self.supports_masking = True

    def call(self, inputs: Any, mask: Any = None) -> Tensor:
        if mask is None:
            return super().call(inputs)
        steps = 2 if self.data_format == "channels_first" else 1
        m = ops.elementwise.cast(ops.convert.as_tensor(mask, self.name, "mask"), inputs.dtype)
        m = ops.shape.expand_dims(m, 1 if steps == 2 else 2)
        total = ops.reduction.reduce_sum(inputs * m, axis=steps, keepdims=self.keepdims)
        return total / ops.reduction.reduce_sum(m, axis=steps, keepdims=self.keepdims)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        return None


class GlobalAveragePooling2D(_GlobalPooling):
    """The mean over rows and columns: (batch, rows, cols, channels) -> (batch, channels).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.GlobalAveragePooling2D()(tf.ones([2, 4, 5, 3])).shape
        TensorShape([2, 3])
    """

    _rank = 2


class GlobalMaxPooling1D(_GlobalPooling):
    """The maximum over the steps."""

    _reduce = staticmethod(ops.reduction.reduce_max)


class GlobalMaxPooling2D(_GlobalPooling):
    """The maximum over rows and columns."""

    _rank = 2
    _reduce = staticmethod(ops.reduction.reduce_max)
