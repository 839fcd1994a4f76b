"""TensorFlow's error classes, by the names TensorFlow code catches.

`InvalidArgumentError` also derives from `ValueError`, and the dtype-mismatch
error from `TypeError`, so plain Python handlers catch them too.
"""

from __future__ import annotations

__all__ = ["OpError", "InvalidArgumentError", "UnimplementedError"]


class OpError(Exception):
    """Base of the errors an op raises when its inputs are wrong."""


class InvalidArgumentError(OpError, ValueError):
    """An op received an argument of the wrong shape, dtype or value.

    Example:
        >>> import tapeflow as tf
        >>> try:
        ...     tf.constant(1.0) + tf.constant(1.0, tf.float64)
        ... except tf.errors.InvalidArgumentError as e:
        ...     print("float32" in str(e) and "float64" in str(e))
        True
    """


class DTypeMismatchError(InvalidArgumentError, TypeError):
    """Two tensors of different dtypes met in one op (tapeflow never promotes implicitly)."""


class UnimplementedError(OpError, NotImplementedError):
    """The op exists but not for these arguments."""
