"""TensorFlow's error classes, by the names TensorFlow code catches.

`InvalidArgumentError` also derives from `ValueError`, and the dtype-mismatch
error from `TypeError`, so plain Python handlers catch them too.
"""

from __future__ import annotations

__all__ = ["OpError", "InvalidArgumentError", "UnimplementedError", "InaccessibleTensorError",
           "NotFoundError", "DataLossError", "SymbolicValueError"]


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


class NotFoundError(OpError):
    """A file or an entry that was asked for does not exist (a checkpoint's, say)."""


class DataLossError(OpError):
    """A file holds something other than what it should: truncated, corrupted, or of
    another kind (tf.train.Checkpoint refuses it before restoring anything)."""


class SymbolicValueError(TypeError):
    """An op needed the value of a symbolic placeholder (a Keras functional API
    `KerasTensor`), which has a shape and a dtype but no value. The op namespaces catch
    it and hand the call to the placeholder's type, which records it
    (NOTE(symbolic-dispatch) in ops/__init__.py); anywhere else it is the TypeError it
    derives from."""


class InaccessibleTensorError(RuntimeError):
    """A tensor made while tracing a `tapeflow.function` was used after that trace ended
    (kept on an object, a global or a closure), as TensorFlow's error of that name.
    Unlike TensorFlow's it is no ValueError: code that falls back on a ValueError (a failed
    conversion) must not swallow it. As TensorFlow's tf.function guide shows, its use in an
    op is a TypeError too, and its `.numpy()` an AttributeError (graph/scope.py).

    Example:
        >>> import tapeflow as tf
        >>> kept = []
        >>> f = tf.function(lambda x: kept.append(x * 2.) or x)
        >>> _ = f(tf.constant(1.))
        >>> try:
        ...     kept[0] + 1.
        ... except tf.errors.InaccessibleTensorError:
        ...     print("out of scope")
        out of scope
    """
