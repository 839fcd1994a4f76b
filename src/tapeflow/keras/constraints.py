"""keras.constraints: projections applied to a weight after each optimizer step, with
tf_keras 2.21's names, defaults and configs.

A constraint is a callable of one weight giving its projected value. A weight made with
one (`Layer.add_weight(constraint=...)`, a layer's `kernel_constraint=`, or
`tf.Variable(constraint=...)`) carries it as `Variable.constraint`, and the optimizers
assign the projection after each update, as TensorFlow's do.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..tensor import Tensor
from .regularizers import from_config_dict, lookup, to_config

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "RadialConstraint",
           "max_norm", "non_neg", "unit_norm", "min_max_norm", "radial_constraint", "get",
           "serialize", "deserialize"]

_EPSILON = 1e-7  # tf_keras's backend.epsilon(), which its norms add


class Constraint:
    """Base class of weight constraints: `__call__(w)` gives the projected weight.

    Example:
        >>> import tapeflow as tf
        >>> class Clip(tf.keras.constraints.Constraint):
        ...     def __call__(self, w):
        ...         return tf.clip_by_value(w, -1.0, 1.0)
        >>> Clip()(tf.constant([-2.0, 0.5])).numpy()
        array([-1. ,  0.5], dtype=float32)
    """

    def __call__(self, w: Any) -> Any:
        return w

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Constraint":
        return cls(**config)


def _norms(w: Tensor, axis: Any) -> Tensor:
    return ops.elementwise.sqrt(ops.reduction.reduce_sum(w * w, axis=axis, keepdims=True))


class MaxNorm(Constraint):
    """Scales each slice along `axis` down to a norm of at most `max_value`.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.MaxNorm(1.0)(tf.constant([[3.0], [4.0]])).numpy().round(4)
        array([[0.6],
               [0.8]], dtype=float32)
    """

    def __init__(self, max_value: float = 2, axis: Any = 0) -> None:
        self.max_value, self.axis = max_value, axis

    def __call__(self, w: Any) -> Tensor:
        w = ops.convert.as_tensor(w, "MaxNorm", "w")
        norms = _norms(w, self.axis)
        desired = ops.elementwise.clip_by_value(norms, 0.0, self.max_value)
        return w * (desired / (_EPSILON + norms))

    def get_config(self) -> dict:
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """Zeros the negative entries.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.NonNeg()(tf.constant([-1.0, 2.0])).numpy()
        array([-0.,  2.], dtype=float32)
    """

    def __call__(self, w: Any) -> Tensor:
        w = ops.convert.as_tensor(w, "NonNeg", "w")
        return w * ops.elementwise.cast(ops.elementwise.greater_equal(w, 0.0), w.dtype)


class UnitNorm(Constraint):
    """Scales each slice along `axis` to norm 1.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.UnitNorm()(tf.constant([[3.0], [4.0]])).numpy().round(4)
        array([[0.6],
               [0.8]], dtype=float32)
    """

    def __init__(self, axis: Any = 0) -> None:
        self.axis = axis

    def __call__(self, w: Any) -> Tensor:
        w = ops.convert.as_tensor(w, "UnitNorm", "w")
        return w / (_EPSILON + _norms(w, self.axis))

    def get_config(self) -> dict:
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Moves each slice's norm along `axis` a fraction `rate` of the way into
    [`min_value`, `max_value`].

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.MinMaxNorm(2.0, 3.0)(tf.constant([[0.6], [0.8]])).numpy().round(4)
        array([[1.2],
               [1.6]], dtype=float32)
    """

    def __init__(self, min_value: float = 0.0, max_value: float = 1.0, rate: float = 1.0,
                 axis: Any = 0) -> None:
        self.min_value, self.max_value, self.rate, self.axis = min_value, max_value, rate, axis

    def __call__(self, w: Any) -> Tensor:
        w = ops.convert.as_tensor(w, "MinMaxNorm", "w")
        norms = _norms(w, self.axis)
        clipped = ops.elementwise.clip_by_value(norms, self.min_value, self.max_value)
        desired = self.rate * clipped + (1 - self.rate) * norms
        return w * (desired / (_EPSILON + norms))

    def get_config(self) -> dict:
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


class RadialConstraint(Constraint):
    """Makes each [k, k] kernel of a 4-D weight [k, k, in, out] the same on every ring
    around its centre. Each ring takes one diagonal entry of the kernel, as tf_keras's
    construction picks them: for odd k = 2m + 1, ring r (0 at the centre) takes entry
    (m - 1 + r, m - 1 + r); for even k = 2m, the inner 2x2 ring takes (m - 1, m - 1) and
    ring r >= 1 takes (m + r, m + r).

    Example:
        >>> import tapeflow as tf
        >>> w = tf.reshape(tf.range(9.0), [3, 3, 1, 1])
        >>> tf.keras.constraints.RadialConstraint()(w)[:, :, 0, 0].numpy()
        array([[4., 4., 4.],
               [4., 0., 4.],
               [4., 4., 4.]], dtype=float32)
    """

    def __call__(self, w: Any) -> Tensor:
        w = ops.convert.as_tensor(w, "RadialConstraint", "w")
        shape = tuple(w.shape)
        if len(shape) != 4 or shape[0] != shape[1] or shape[0] < 2:
            raise ValueError(f"RadialConstraint needs a 4-D weight [k, k, in, out] with a "
                             f"square kernel of k >= 2; received shape {shape}.")
        k = shape[0]
        m, pos = k // 2, np.arange(k)
        if k % 2:
            ring = np.abs(pos - m)
            diag = m - 1 + np.arange(m + 1)  # ring r's diagonal entry
        else:
            ring = np.where(pos <= m - 1, m - 1 - pos, pos - m)
            diag = np.concatenate([[m - 1], m + np.arange(1, m)])
        rings = np.maximum(ring[:, None], ring[None, :])
        pick = (diag[rings] * (k + 1)).astype(np.int64)  # entry (d, d) of the flattened kernel
        flat = ops.shape.reshape(w, (k * k,) + shape[2:])
        return ops.indexing.gather(flat, pick, axis=0)


max_norm, non_neg, unit_norm = MaxNorm, NonNeg, UnitNorm
min_max_norm, radial_constraint = MinMaxNorm, RadialConstraint

_CONSTRAINTS = {"MaxNorm": MaxNorm, "NonNeg": NonNeg, "UnitNorm": UnitNorm,
                "MinMaxNorm": MinMaxNorm, "RadialConstraint": RadialConstraint,
                "max_norm": MaxNorm, "non_neg": NonNeg, "unit_norm": UnitNorm,
                "min_max_norm": MinMaxNorm, "radial_constraint": RadialConstraint}


def get(identifier: Any) -> Any:
    """A constraint from a name ("max_norm", "non_neg", ...), a config dict, a Constraint
    or any callable; None stays None.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.get("max_norm").get_config()
        {'max_value': 2, 'axis': 0}
    """
    return lookup(identifier, _CONSTRAINTS, Constraint, "constraint", "keras.constraints")


def serialize(constraint: Any) -> Any:
    """A constraint as tf_keras writes it in a layer's config.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.constraints.serialize(tf.keras.constraints.NonNeg())["class_name"]
        'NonNeg'
    """
    return to_config(constraint, Constraint, "keras.constraints")


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The constraint a `serialize`d config describes.

    Example:
        >>> import tapeflow as tf
        >>> c = tf.keras.constraints
        >>> c.deserialize(c.serialize(c.MaxNorm(3))).max_value
        3
    """
    return from_config_dict(config, _CONSTRAINTS, "constraint", "keras.constraints",
                            custom_objects)
