"""keras.regularizers: penalties on weights and activations, with tf_keras 2.21's names,
defaults and configs.

A regularizer is a callable of one tensor giving a scalar of its dtype. Passed to a layer
(`kernel_regularizer=`, `bias_regularizer=`, `activity_regularizer=`, or
`Layer.add_weight(regularizer=...)`), its penalties join the layer's `losses`, which
`Model.fit` adds to the compiled loss. Factors are kept as float32, as tf_keras keeps
them, so configs match its files. `get`, `serialize` and `deserialize` here serve
keras.constraints too (`lookup`, `to_config`, `from_config_dict`).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import ops
from ..tensor import Tensor
from .common import function_config
from .utils import with_custom

__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2",
           "orthogonal_regularizer", "get", "serialize", "deserialize"]


def _factor(value: Any, name: str, who: str) -> float:
    """A penalty factor as tf_keras keeps it: a finite number, rounded to float32."""
    if value is None:
        value = 0.01
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)) \
            or not math.isfinite(float(value)):
        raise ValueError(f"Value {name}={value!r} passed to {who} is not a valid factor: "
                         "expected a finite float.")
    return float(np.float32(value))


def _scaled(factor: float, x: Tensor) -> Tensor:
    return ops.elementwise.multiply(ops.elementwise.cast(factor, x.dtype), x)


# ---------------------------------------------------------------- regularizers
class Regularizer:
    """Base class of regularizers: `__call__(x)` gives the penalty; `get_config` and
    `from_config` round-trip it.

    Example:
        >>> import tapeflow as tf
        >>> class Sum(tf.keras.regularizers.Regularizer):
        ...     def __call__(self, x):
        ...         return tf.reduce_sum(x)
        >>> Sum()(tf.constant([1.0, 2.0])).numpy()
        np.float32(3.0)
    """

    def __call__(self, x: Any) -> Any:
        return ops.convert.as_tensor(0.0, "regularizer", "x")

    def get_config(self) -> dict:
        return {}

    @classmethod
    def from_config(cls, config: dict) -> "Regularizer":
        return cls(**config)


class L1(Regularizer):
    """``l1 * reduce_sum(abs(x))``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.L1(0.5)(tf.constant([1.0, -2.0])).numpy()
        np.float32(1.5)
    """

    def __init__(self, l1: float = 0.01, **kwargs: Any) -> None:
        self.l1 = _factor(kwargs.pop("l", l1), "l1", "L1")
        _no_more(kwargs, "L1")

    def __call__(self, x: Any) -> Tensor:
        x = ops.convert.as_tensor(x, "L1", "x")
        return _scaled(self.l1, ops.reduction.reduce_sum(ops.complex.abs(x)))

    def get_config(self) -> dict:
        return {"l1": self.l1}


class L2(Regularizer):
    """``l2 * reduce_sum(square(x))``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.L2(0.5)(tf.constant([1.0, 2.0])).numpy()
        np.float32(2.5)
    """

    def __init__(self, l2: float = 0.01, **kwargs: Any) -> None:
        self.l2 = _factor(kwargs.pop("l", l2), "l2", "L2")
        _no_more(kwargs, "L2")

    def __call__(self, x: Any) -> Tensor:
        x = ops.convert.as_tensor(x, "L2", "x")
        return _scaled(self.l2, ops.reduction.reduce_sum(ops.elementwise.multiply(x, x)))

    def get_config(self) -> dict:
        return {"l2": self.l2}


class L1L2(Regularizer):
    """``l1 * reduce_sum(abs(x)) + l2 * reduce_sum(square(x))`` (both 0 by default).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.L1L2(l1=0.5, l2=0.5)(tf.constant([1.0, -2.0])).numpy()
        np.float32(4.0)
    """

    def __init__(self, l1: float = 0.0, l2: float = 0.0) -> None:
        self.l1 = _factor(l1, "l1", "L1L2")
        self.l2 = _factor(l2, "l2", "L1L2")

    def __call__(self, x: Any) -> Tensor:
        x = ops.convert.as_tensor(x, "L1L2", "x")
        total = ops.elementwise.cast(0.0, x.dtype)
        if self.l1:
            total = total + _scaled(self.l1, ops.reduction.reduce_sum(ops.complex.abs(x)))
        if self.l2:
            total = total + _scaled(self.l2, ops.reduction.reduce_sum(x * x))
        return total

    def get_config(self) -> dict:
        return {"l1": self.l1, "l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """``factor * mean(|off-diagonal of N N^T|)`` over the unit-normalized rows (``mode=
    "rows"``) or columns (``"columns"``) N of a 2-D weight: a push towards orthogonal
    rows or columns (tf_keras's formula).

    Example:
        >>> import tapeflow as tf
        >>> reg = tf.keras.regularizers.OrthogonalRegularizer(factor=1.0)
        >>> float(reg(tf.constant([[1.0, 0.0], [0.0, 2.0]])))
        0.0
    """

    def __init__(self, factor: float = 0.01, mode: str = "rows") -> None:
        self.factor = _factor(factor, "factor", "OrthogonalRegularizer")
        if mode not in ("rows", "columns"):
            raise ValueError(f"Invalid value for argument `mode`. Expected one of "
                             f"{{'rows', 'columns'}}. Received: mode={mode!r}")
        self.mode = mode

    def __call__(self, x: Any) -> Tensor:
        x = ops.convert.as_tensor(x, "OrthogonalRegularizer", "x")
        if x.shape.rank != 2:
            raise ValueError(f"Inputs to OrthogonalRegularizer must have rank 2. Received: "
                             f"inputs.shape == {tuple(x.shape)}")
        if self.mode == "columns":
            x = ops.shape.transpose(x)
        norms = ops.reduction.reduce_sum(x * x, axis=1, keepdims=True)
        unit = x * ops.elementwise.rsqrt(ops.elementwise.maximum(norms, 1e-12))
        products = ops.complex.abs(ops.linalg.matmul(unit, unit, transpose_b=True))
        n = int(x.shape[0])
        if n < 2:
            return ops.elementwise.cast(0.0, x.dtype)
        off = ops.reduction.reduce_sum(products) - ops.reduction.reduce_sum(
            ops.linalg.diag_part(products))
        return _scaled(self.factor, off) / (n * n - n)

    def get_config(self) -> dict:
        return {"factor": self.factor, "mode": self.mode}


def l1_l2(l1: float = 0.01, l2: float = 0.01) -> L1L2:
    """An `L1L2` with both factors 0.01 by default (tf_keras's `l1_l2`).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.l1_l2().get_config()
        {'l1': 0.009999999776482582, 'l2': 0.009999999776482582}
    """
    return L1L2(l1=l1, l2=l2)


l1, l2, orthogonal_regularizer = L1, L2, OrthogonalRegularizer

_REGULARIZERS = {"L1": L1, "L2": L2, "L1L2": L1L2, "OrthogonalRegularizer": OrthogonalRegularizer,
                 "l1": L1, "l2": L2, "l1_l2": l1_l2,
                 "orthogonal_regularizer": OrthogonalRegularizer}


def _no_more(kwargs: dict, who: str) -> None:
    if kwargs:
        raise TypeError(f"{who}: unexpected keyword arguments {sorted(kwargs)}.")


# ---------------------------------------------------------------- get / serialize
def lookup(identifier: Any, table: dict, base: type, kind: str, module: str) -> Any:
    if identifier is None:
        return None
    if isinstance(identifier, base):
        return identifier
    if isinstance(identifier, str):
        if identifier not in table:
            raise ValueError(f"Unknown {kind}: {identifier!r}. Known: {sorted(table)}, or a "
                             f"{base.__name__} or a callable.")
        return table[identifier]()
    if isinstance(identifier, dict):
        return from_config_dict(identifier, table, kind, module)
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret {kind} identifier: {identifier!r}")


def to_config(obj: Any, base: type, module: str) -> Any:
    if obj is None:
        return None
    if isinstance(obj, base):
        custom = not type(obj).__module__.startswith("tapeflow.")
        return {"module": None if custom else module, "class_name": type(obj).__name__,
                "config": obj.get_config(),
                "registered_name": type(obj).__name__ if custom else None}
    return function_config(obj)


def from_config_dict(config: Any, table: dict, kind: str, module: str,
                 custom_objects: dict | None = None) -> Any:
    if isinstance(config, str):
        return lookup(config, table, object, kind, module)
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"Could not interpret serialized {kind}: {config!r:.200}")
    name = config["class_name"]
    cls = with_custom(custom_objects).get(name) or table.get(name)
    if cls is None:
        raise ValueError(f"Unknown {kind}: {name!r}. Please ensure you are using a "
                         f"`keras.utils.custom_object_scope` or pass it in `custom_objects`.")
    inner = config.get("config", {})
    if not isinstance(inner, dict):
        raise ValueError(f"Serialized {kind} {name!r} has config {inner!r:.100}; expected a dict.")
    return cls.from_config(inner) if hasattr(cls, "from_config") else cls(**inner)


def get(identifier: Any) -> Any:
    """A regularizer from a name ("l1", "l2", "l1_l2", ...), a config dict, a Regularizer
    or any callable; None stays None.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.get("l2").get_config()
        {'l2': 0.009999999776482582}
    """
    return lookup(identifier, _REGULARIZERS, Regularizer, "regularizer", "keras.regularizers")


def serialize(regularizer: Any) -> Any:
    """A regularizer as tf_keras writes it in a layer's config.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.regularizers.serialize(tf.keras.regularizers.L1(0.5))["config"]
        {'l1': 0.5}
    """
    return to_config(regularizer, Regularizer, "keras.regularizers")


def deserialize(config: Any, custom_objects: dict | None = None) -> Any:
    """The regularizer a `serialize`d config describes.

    Example:
        >>> import tapeflow as tf
        >>> r = tf.keras.regularizers
        >>> type(r.deserialize(r.serialize(r.L2(0.1)))).__name__
        'L2'
    """
    return from_config_dict(config, _REGULARIZERS, "regularizer", "keras.regularizers",
                        custom_objects)
