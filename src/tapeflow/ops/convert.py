"""Argument conversion for public ops: tensors from Python values, TensorFlow's
no-promotion rule, and static arguments (shapes, axes, ints) checked with errors
that name the op and the argument.

Public ops convert their arguments here, once, before they bind a primitive;
rules and internal helpers bind primitives on tensors that are already converted
and never come back here.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import (DTypeMismatchError, InaccessibleTensorError, InvalidArgumentError,
                      SymbolicValueError)
from ..tensor import Tensor, TensorBase, Variable, convert_to_tensor

__all__ = ["as_tensor", "convert_like", "binary_args", "check_dtype", "static_shape",
           "normalize_axis", "int_arg", "int_list", "int_tensor", "matrix_arg"]

_KIND_NAMES = {"f": "floating", "c": "complex", "i": "signed integer", "u": "unsigned integer",
               "b": "bool"}


def as_tensor(x: Any, op: str, arg: str) -> Tensor:
    """Convert one op argument, naming the op and argument on failure.

    Example:
        >>> from tapeflow.ops.convert import as_tensor
        >>> as_tensor([1., 2.], "my_op", "x").dtype
        tf.float32
    """
    if type(x) is Tensor:
        return x
    if isinstance(x, Variable):
        return x.value()
    try:
        return convert_to_tensor(x)
    except InaccessibleTensorError:
        raise  # its own message names the trace it came from
    except SymbolicValueError as e:  # keeps its class: the namespaces dispatch on it
        raise SymbolicValueError(f"{op}: argument `{arg}` could not be converted to a "
                                 f"tensor: {e}") from None
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: argument `{arg}` could not be converted to a tensor: {e}") from None


def convert_like(x: Any, other: Tensor, op: str, arg: str) -> Tensor:
    """Convert a non-tensor operand to `other`'s dtype (Python and NumPy scalars adapt).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.convert import convert_like
        >>> convert_like(2, tf.constant([1.5]), "my_op", "y").dtype
        tf.float32
    """
    target = other._value.dtype
    kind = type(x)
    if (kind is float or kind is int) and target.kind in "fc":
        return Tensor(target.type(x))  # the common `t * 2.0`: no array round trip
    try:
        return convert_to_tensor(x, dtype=target)
    except (InaccessibleTensorError, SymbolicValueError):
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"{op}: argument `{arg}`={x!r} cannot be converted to "
                        f"{_dt.from_numpy(target).name} to match the other operand: {e}") from None


def binary_args(x: Any, y: Any, op: str) -> tuple[Tensor, Tensor]:
    """Operands of a binary op: no implicit promotion between tensors (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.convert import binary_args
        >>> x, y = binary_args(tf.constant([1.], tf.float64), 2, "my_op")
        >>> y.dtype
        tf.float64
    """
    tx = isinstance(x, TensorBase)
    ty = isinstance(y, TensorBase)
    if tx and ty:
        x = x if type(x) is Tensor else x.value()
        y = y if type(y) is Tensor else y.value()
        dx, dy = x._value.dtype, y._value.dtype
        if dx is not dy and dx != dy:
            raise DTypeMismatchError(
                f"{op}: `x` has dtype {_dt.from_numpy(dx).name} and `y` has dtype "
                f"{_dt.from_numpy(dy).name}; tapeflow (like TensorFlow) does not promote "
                "implicitly: use tf.cast.")
        return x, y
    if tx:
        x = x if type(x) is Tensor else x.value()
        return x, convert_like(y, x, op, "y")
    if ty:
        y = y if type(y) is Tensor else y.value()
        return convert_like(x, y, op, "x"), y
    x = as_tensor(x, op, "x")
    return x, convert_like(y, x, op, "y")


def check_dtype(x: Tensor, kinds: str, op: str, arg: str = "x") -> None:
    """Raise if `x`'s dtype kind is not in `kinds` ('f' float, 'c' complex, 'i'/'u' int,
    'b' bool).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.convert import check_dtype
        >>> check_dtype(tf.constant([1.]), "fc", "my_op")   # passes silently
    """
    if (d := x._value.dtype).kind not in kinds and _dt.kind(d) not in kinds:  # bfloat16: V
        allowed = ", ".join(_KIND_NAMES[k] for k in kinds)
        raise InvalidArgumentError(f"{op}: argument `{arg}` has dtype "
                                   f"{_dt.from_numpy(x._value.dtype).name}; expected {allowed}.")


def _plain_int(v: Any) -> bool:
    """An int, or a size symbol of a size-generic trace (graph/dims.py), which stays one."""
    return type(v) is int or getattr(type(v), "size_symbol", False)


def static_shape(value: Any, op: str, arg: str = "shape") -> tuple[int, ...]:
    """A shape argument (list, array or tensor, read now: shapes are static) as a tuple of
    non-negative ints, or a clear error naming the op and argument.

    Example:
        >>> from tapeflow.ops.convert import static_shape
        >>> static_shape([2, 3], "zeros")
        (2, 3)
    """
    if isinstance(value, (list, tuple)) and all(map(_plain_int, value)):
        # the common case; a size symbol of a size-generic trace stays one (graph/dims.py)
        if any(d < 0 for d in value):
            raise InvalidArgumentError(f"{op}: `{arg}` must be non-negative; got {value!r}.")
        return tuple(value)
    dims = np.asarray(value).reshape(-1)
    if dims.size and dims.dtype.kind not in "iu":
        raise TypeError(f"{op}: `{arg}` must be integers; got {value!r}.")
    if (dims < 0).any():
        raise InvalidArgumentError(f"{op}: `{arg}` must be non-negative; got {value!r}.")
    return tuple(int(d) for d in dims)


def normalize_axis(axis: Any, ndim: int, op: str, arg: str = "axis") -> tuple[int, ...] | None:
    """Axis argument as a sorted tuple of non-negative ints (None stays None).

    Example:
        >>> from tapeflow.ops.convert import normalize_axis
        >>> normalize_axis([-1, 0], 3, "reduce_sum")
        (0, 2)
    """
    if axis is None:
        return None
    if isinstance(axis, TensorBase):
        axis = np.asarray(axis).tolist()
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1).tolist())
    out = []
    for a in axes:
        if isinstance(a, float) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{op}: `{arg}` must be ints; got {axis!r}.")
        a = int(a)
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"{op}: `{arg}`={axis!r} is out of range for a tensor "
                                       f"of rank {ndim} (valid: [{-ndim}, {ndim}) ).")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"{op}: `{arg}`={axis!r} repeats an axis.")
    return tuple(sorted(out))


def int_list(value: Any, op: str, arg: str) -> list[int]:
    """A static list of ints (a tensor argument is read now, as TensorFlow needs it known).

    Example:
        >>> from tapeflow.ops.convert import int_list
        >>> int_list([[1, 2], [3, 4]], "pad", "paddings")
        [1, 2, 3, 4]
    """
    if isinstance(value, (list, tuple)) and all(map(_plain_int, value)):
        return list(value)  # the common case, without an array round trip
    arr = np.asarray(value)
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{op}: `{arg}` must be integers; got {value!r}.")
    return [int(v) for v in arr.reshape(-1).tolist()]


def int_arg(value: Any, op: str, arg: str) -> int:
    """A static scalar int argument.

    Example:
        >>> from tapeflow.ops.convert import int_arg
        >>> int_arg(3, "one_hot", "depth")
        3
    """
    if _plain_int(value):
        return value
    if np.ndim(value) != 0:
        raise InvalidArgumentError(f"{op}: `{arg}` must be a scalar integer; got {value!r}.")
    (v,) = int_list(value, op, arg)
    return v


def int_tensor(x: Any, op: str, arg: str) -> Tensor:
    """An integer tensor argument (indices, labels).

    Example:
        >>> from tapeflow.ops.convert import int_tensor
        >>> int_tensor([0, 2], "gather", "indices").dtype
        tf.int32
    """
    t = as_tensor(x, op, arg)
    if t._value.dtype.kind not in "iu":
        raise TypeError(f"{op}: `{arg}` must be an integer tensor; got dtype "
                        f"{_dt.from_numpy(t._value.dtype).name}.")
    return t


def matrix_arg(x: Any, op: str, arg: str, square: bool = False) -> Tensor:
    """Convert a matrix argument, checking rank >= 2 (and squareness if asked).

    Example:
        >>> from tapeflow.ops.convert import matrix_arg
        >>> matrix_arg([[1., 2.]], "det", "input", square=True)
        Traceback (most recent call last):
        ...
        tapeflow.errors.InvalidArgumentError: det: `input` must be square in its last two dimensions; got shape (1, 2).
    """
    t = as_tensor(x, op, arg)
    s = tuple(np.shape(t._value))
    if len(s) < 2:
        raise InvalidArgumentError(f"{op}: `{arg}` must have rank >= 2 (a matrix or a batch of "
                                   f"matrices); got shape {s}.")
    if square and s[-1] != s[-2]:
        raise InvalidArgumentError(f"{op}: `{arg}` must be square in its last two dimensions; "
                                   f"got shape {s}.")
    return t
