"""DType objects, TensorFlow's dtype inference, and the no-promotion rule.

A `DType` wraps one NumPy dtype. TensorFlow infers `float32` for Python floats
and `int32` for Python ints, keeps a NumPy array's own dtype, and never
promotes implicitly between two tensors: both rules live here so every op
applies them the same way.
"""

from __future__ import annotations

from typing import Any

import numpy as np

_pybool = type(True)

__all__ = [
    "DType", "as_dtype",
    "float16", "float32", "float64", "bfloat16",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
    "bool", "complex64", "complex128",
]


class DType:
    """A tensor element type, TensorFlow-style, backed by a NumPy dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.float32.name, tf.float32.is_floating, tf.as_dtype("float64") == tf.float64
        ('float32', True, True)
    """

    __slots__ = ("_np", "name")

    def __init__(self, np_dtype: np.dtype, name: str) -> None:
        self._np = np.dtype(np_dtype)
        self.name = name

    @property
    def as_numpy_dtype(self) -> type:
        return self._np.type

    @property
    def is_floating(self) -> bool:
        return is_real_floating(self._np)

    @property
    def is_complex(self) -> bool:
        return self._np.kind == "c"

    @property
    def is_integer(self) -> bool:
        return self._np.kind in "iu"

    @property
    def is_unsigned(self) -> bool:
        return self._np.kind == "u"

    @property
    def is_bool(self) -> bool:
        return self._np.kind == "b"

    @property
    def is_differentiable(self) -> bool:
        """Only floating and complex tensors carry gradients (as TensorFlow)."""
        return self._np.kind in "fc"

    @property
    def base_dtype(self) -> "DType":
        return self

    @property
    def real_dtype(self) -> "DType":
        if self._np.kind == "c":
            return float32 if self._np == np.complex64 else float64
        return self

    @property
    def size(self) -> int:
        return self._np.itemsize

    @property
    def min(self):
        return np.finfo(self._np).min if self.is_floating else np.iinfo(self._np).min

    @property
    def max(self):
        return np.finfo(self._np).max if self.is_floating else np.iinfo(self._np).max

    def __eq__(self, other: object) -> bool:
        if isinstance(other, DType):
            return self._np == other._np
        try:
            return self._np == as_dtype(other)._np
        except (TypeError, ValueError):
            return False

    def __ne__(self, other: object) -> bool:
        return not self.__eq__(other)

    def __hash__(self) -> int:
        return hash(self._np)

    def __repr__(self) -> str:
        return f"tf.{self.name}"

    def __str__(self) -> str:
        return f"<dtype: '{self.name}'>"

    def __reduce__(self):
        return (as_dtype, (self.name,))


float16 = DType(np.float16, "float16")
float32 = DType(np.float32, "float32")
float64 = DType(np.float64, "float64")
int8 = DType(np.int8, "int8")
int16 = DType(np.int16, "int16")
int32 = DType(np.int32, "int32")
int64 = DType(np.int64, "int64")
uint8 = DType(np.uint8, "uint8")
uint16 = DType(np.uint16, "uint16")
uint32 = DType(np.uint32, "uint32")
uint64 = DType(np.uint64, "uint64")
bool = DType(np.bool_, "bool")  # noqa: A001 - TensorFlow's public name
complex64 = DType(np.complex64, "complex64")
complex128 = DType(np.complex128, "complex128")

try:  # bfloat16 only where a maintained package supplies the NumPy type
    import ml_dtypes as _ml_dtypes

    bfloat16: DType | None = DType(_ml_dtypes.bfloat16, "bfloat16")
except ImportError:
    bfloat16 = None

_ALL = [float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
        uint32, uint64, bool, complex64, complex128] + ([bfloat16] if bfloat16 else [])
_BY_NP: dict[np.dtype, DType] = {d._np: d for d in _ALL}
_BY_NAME: dict[str, DType] = {d.name: d for d in _ALL}
_BY_NAME.update({"half": float16, "float": float32, "double": float64})


def is_real_floating(np_dtype: Any) -> bool:
    """Whether a NumPy dtype is a real floating type, bfloat16 included (ml_dtypes' types
    have NumPy kind 'V', not 'f').

    Example:
        >>> import numpy as np
        >>> from tapeflow.dtypes import is_real_floating
        >>> is_real_floating(np.float16), is_real_floating(np.int32)
        (True, False)
    """
    np_dtype = np.dtype(np_dtype)
    return np_dtype.kind == "f" or (bfloat16 is not None and np_dtype == bfloat16._np)


def kind(np_dtype: np.dtype) -> str:
    """NumPy's kind letter of a dtype ('f', 'c', 'i', 'u', 'b'), with 'f' for bfloat16,
    whose kind NumPy reports as 'V' (a code path keyed on 'f' would skip it).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.dtypes import kind
        >>> kind(np.dtype(np.float16)), kind(np.dtype(tf.bfloat16.as_numpy_dtype))
        ('f', 'f')
    """
    k = np_dtype.kind
    return "f" if k == "V" and bfloat16 is not None and np_dtype == bfloat16._np else k


_HALF = frozenset([np.dtype(np.float16)] + ([np.dtype(bfloat16._np)] if bfloat16 else []))


def is_half(np_dtype: np.dtype) -> bool:
    """Whether a NumPy dtype is float16 or bfloat16.

    Example:
        >>> import numpy as np
        >>> from tapeflow.dtypes import is_half
        >>> is_half(np.dtype(np.float16)), is_half(np.dtype(np.int16))
        (True, False)
    """
    return np_dtype.itemsize == 2 and np_dtype in _HALF


def half_in_float32(impl: Any) -> Any:
    """`impl` computed at float32 when its first argument is float16 or bfloat16, its
    floating results cast back: TensorFlow accumulates half-precision sums and products in
    float32, while NumPy's bfloat16 sums round at every step (1000 ones summed to 256) and
    it has no bfloat16 matmul, einsum or LAPACK.

    Example:
        >>> import numpy as np
        >>> from tapeflow.dtypes import half_in_float32
        >>> total = half_in_float32(lambda x: x.sum())
        >>> total(np.ones(3000, np.float16)).dtype, float(total(np.ones(3000, np.float16)))
        (dtype('float16'), 3000.0)
    """
    def run(x: Any, *args: Any, **params: Any) -> Any:
        low = x.dtype  # an array (or NumPy scalar) first, as every impl takes
        if low.itemsize == 2 and low in _HALF:
            return _in_float32(impl, low, x, args, params)
        return impl(x, *args, **params)

    run.__name__ = getattr(impl, "__name__", "impl")
    run.__doc__ = impl.__doc__
    run.__wrapped__ = impl
    return run


def _in_float32(impl: Any, low: np.dtype, x: Any, args: tuple, params: dict) -> Any:
    out = impl(x.astype(np.float32), *[a.astype(np.float32) if getattr(a, "dtype", None) == low
                                      else a for a in args], **params)
    if isinstance(out, (tuple, list)):  # a named tuple (slogdet's) as a plain one
        return (list if isinstance(out, list) else tuple)(_narrowed(o, low) for o in out)
    return _narrowed(out, low)


def _narrowed(value: Any, low: np.dtype) -> Any:
    value = np.asarray(value)
    return value.astype(low) if value.dtype.kind == "f" else value


def as_dtype(type_value: Any) -> DType:
    """Convert a DType, NumPy dtype, Python type or name to a `DType`.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.as_dtype(np.float64), tf.as_dtype("int32"), tf.as_dtype(float)
        (tf.float64, tf.int32, tf.float32)
    """
    if isinstance(type_value, DType):
        return type_value
    if isinstance(type_value, str) and type_value in _BY_NAME:
        return _BY_NAME[type_value]
    # Python's own types follow TensorFlow's inference, not NumPy's 64-bit defaults.
    if type_value is float:
        return float32
    if type_value is int:
        return int32
    if type_value is complex:
        return complex128
    if type_value is _pybool:
        return bool
    try:
        found = _BY_NP.get(np.dtype(type_value))
    except TypeError:
        found = None
    if found is None:
        raise TypeError(f"Cannot convert {type_value!r} to a tapeflow DType; expected one of "
                        f"{sorted(_BY_NAME)}.")
    return found


def from_numpy(np_dtype: np.dtype) -> DType:
    """The DType of a NumPy dtype (fast path used by `Tensor.dtype`)."""
    try:
        return _BY_NP[np_dtype]
    except KeyError:
        raise TypeError(f"NumPy dtype {np_dtype} has no tapeflow DType.") from None


def infer_numpy_dtype(value: Any) -> np.dtype:
    """The dtype TensorFlow would give `value`: Python floats -> float32, ints -> int32.

    NumPy arrays and scalars keep their own dtype, in the machine's byte order (an array
    read from a big-endian file converts, as TensorFlow); nested Python lists take the
    widest kind present (bool < int < float < complex).
    """
    if isinstance(value, (np.ndarray, np.generic)):
        return value.dtype if value.dtype.isnative else value.dtype.newbyteorder("=")
    if isinstance(value, _pybool):
        return np.dtype(np.bool_)
    if isinstance(value, int):
        return np.dtype(np.int32) if -2**31 <= value < 2**31 else np.dtype(np.int64)
    if isinstance(value, float):
        return np.dtype(np.float32)
    if isinstance(value, complex):
        return np.dtype(np.complex128)
    arr = np.asarray(value)
    kind = arr.dtype.kind
    if kind == "f" and arr.dtype == np.float64 and _has_python_floats(value):
        return np.dtype(np.float32)
    if kind in "iu" and _has_python_floats(value) is False and arr.dtype == np.int64:
        if arr.size == 0 or (arr.min() >= -2**31 and arr.max() < 2**31):
            return np.dtype(np.int32)
        return np.dtype(np.int64)
    if kind == "c" and arr.dtype == np.complex128:
        return arr.dtype
    if kind not in "biufc":
        what = {"U": "strings", "S": "bytes"}.get(kind, f"NumPy dtype {arr.dtype}")
        raise TypeError(f"Cannot convert {value!r} to a tensor: tapeflow tensors hold numbers "
                        f"and bools, not {what}.")
    return arr.dtype


def _has_python_floats(value: Any) -> "bool | None":
    """True if a nested list holds any NumPy-free Python float (so the result is float32)."""
    if isinstance(value, (list, tuple)):
        return any(_has_python_floats(v) for v in value)
    if isinstance(value, float) and not isinstance(value, np.floating):
        return True
    return False
