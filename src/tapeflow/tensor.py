"""Tensor, Variable, TensorShape, `constant` and `convert_to_tensor`.

A `Tensor` is an immutable wrapper of one NumPy array (or NumPy scalar, for
rank 0, as TensorFlow's `.numpy()` returns). Its operators call tapeflow ops;
nothing here knows about differentiation. A `Variable` holds a mutable value;
ops read it through `Variable.value()`, which is what lets tapes watch it.

Tensor's methods call two modules built on top of this one: `tapeflow.core`
(Python reads of values and variable writes reach the recorders there) and
`tapeflow.ops` (the operators). Both import Tensor, so this module imports them
when first needed, not when it loads.
"""

from __future__ import annotations

import itertools
import threading
import types
from typing import Any, Callable, Iterator

import numpy as np

from . import dtypes as _dt
from . import scopes as _scopes
from .errors import DTypeMismatchError, SymbolicValueError

__all__ = ["Tensor", "Variable", "TensorBase", "TensorShape", "constant", "convert_to_tensor",
           "is_tensor", "newaxis"]

newaxis = None


class _Later:
    """Stands for `_core` or `_ops` (the global `name`) until first use, when `_load`
    imports tapeflow.core and tapeflow.ops and puts the real ones in their place."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, attr: str) -> Any:
        _load()
        return getattr(globals()[self.name], attr)


def _load() -> None:
    global _core, _ops
    from . import core, ops  # both import this module: loaded on first use (an import cycle)
    _core = core
    _ops = types.SimpleNamespace(**ops.public_ops())
    _set_operators()


_core: Any = _Later("_core")  # tapeflow.core
_ops: Any = _Later("_ops")    # every public op by name (ops.public_ops)


class TensorShape(tuple):
    """A tensor's shape: a tuple of ints (``None`` for unknown dims) with TensorFlow's helpers.

    Example:
        >>> import tapeflow as tf
        >>> s = tf.constant([[1., 2.]]).shape
        >>> s, s.as_list(), s.rank, s == (1, 2)
        (TensorShape([1, 2]), [1, 2], 2, True)
    """

    _nest_leaf = True  # tf.nest does not open a shape (nest.is_nested)

    def __new__(cls, dims: Any = ()) -> "TensorShape":
        if dims is None or (isinstance(dims, TensorShape) and dims._unknown_rank):
            # An unknown rank: only specs (TensorSpec(shape=None)) have one; tensors never.
            shape = super().__new__(cls, ())
            shape._unknown_rank = True
            return shape
        return super().__new__(cls, (None if d is None else int(d) for d in dims))

    _unknown_rank = False

    def as_list(self) -> list:
        if self._unknown_rank:
            raise ValueError("as_list() is not defined on an unknown TensorShape.")
        return list(self)

    @property
    def rank(self) -> int | None:
        return None if self._unknown_rank else len(self)

    ndims = rank

    def num_elements(self) -> int | None:
        if self._unknown_rank or any(d is None for d in self):
            return None
        return int(np.prod(self, dtype=np.int64))

    def is_fully_defined(self) -> bool:
        return not self._unknown_rank and all(d is not None for d in self)

    def is_compatible_with(self, other: Any) -> bool:
        other = TensorShape(other)
        if self._unknown_rank or other._unknown_rank:
            return True
        return len(self) == len(other) and all(
            a is None or b is None or a == b for a, b in zip(self, other, strict=True))

    def __getitem__(self, key: Any) -> Any:
        out = super().__getitem__(key)
        return TensorShape(out) if isinstance(key, slice) else out

    def __eq__(self, other: Any) -> bool:
        if self._unknown_rank or (isinstance(other, TensorShape) and other._unknown_rank):
            return False  # as TensorFlow: an unknown shape equals nothing, itself included
        return tuple.__eq__(self, other)

    __hash__ = tuple.__hash__

    def __repr__(self) -> str:
        return "TensorShape(None)" if self._unknown_rank else f"TensorShape({list(self)})"

    def __str__(self) -> str:
        if self._unknown_rank:
            return "<unknown>"
        return "(" + ", ".join("None" if d is None else str(d) for d in self) + \
            ("," if len(self) == 1 else "") + ")"


class Reference:
    """A hashable reference to a tensor or variable (`x.ref()`), comparing by identity."""

    __slots__ = ("_obj",)

    def __init__(self, obj: Any) -> None:
        self._obj = obj

    def deref(self) -> Any:
        return self._obj

    def __hash__(self) -> int:
        return id(self._obj)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Reference) and other._obj is self._obj


def _fmt_numpy(value: Any) -> str:
    return str(value) if np.ndim(value) == 0 else repr(np.asarray(value))


class TensorBase:
    """The base of Tensor and Variable: metadata, conversions and Python operators.
    ``isinstance(x, TensorBase)`` asks "is x a tensor or a variable?"."""

    __slots__ = ()
    # NumPy binary operators defer to our reflected operators (ndarray + Tensor -> Tensor).
    __array_priority__ = 100

    @property
    def shape(self) -> TensorShape:
        return _core.python_shape(np.shape(self._value), self)

    def get_shape(self) -> TensorShape:
        return _core.python_shape(np.shape(self._value), self)

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._value.dtype)

    @property
    def ndim(self) -> int:
        return np.ndim(self._value)

    @property
    def device(self) -> str:
        return "/job:localhost/replica:0/task:0/device:CPU:0"

    def numpy(self) -> Any:
        """The value as a new NumPy array (a NumPy scalar for rank 0), as TensorFlow:
        writing into it changes neither the tensor nor a variable."""
        value = self._read_for_python("numpy()")
        return value.copy() if isinstance(value, np.ndarray) else value

    def _read_for_python(self, how: str) -> Any:
        # Recorders that must know about value reads (vmap, tracing) hear of them here.
        _core.value_read(self, how)
        return self._value

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        # `_read_for_python` written out, the recorders asked only when there are any: a
        # compiled call's result read as NumPy runs cold (NOTE(lean-call) in graph/xla.py)
        if _core.recorder_stack():
            _core.value_read(self, "__array__")
        value = self._value
        if type(value) is not np.ndarray:
            value = np.asarray(value)
        if dtype is not None and value.dtype != dtype:
            return value.astype(dtype)
        if copy:
            return value.copy()
        if not value.flags.writeable:  # an XLA result's host view: read-only already
            return value
        view = value.view()  # no copy, but a tensor is immutable: nobody writes through it
        view.flags.writeable = False
        return view

    def ref(self) -> Reference:
        return Reference(self)

    experimental_ref = ref

    def __hash__(self) -> int:
        raise TypeError(f"{type(self).__name__} is unhashable (== is elementwise). "
                        "Use x.ref() as a dictionary key.")

    def __len__(self) -> int:
        shape = np.shape(self._value)
        if not shape:
            raise TypeError("Scalar tensor has no `len()`.")
        return _core.python_shape(shape, self)[0]

    def __iter__(self) -> Iterator[Any]:
        shape = np.shape(self._value)
        if not shape:
            raise TypeError("Cannot iterate over a scalar tensor.")
        for i in range(shape[0]):
            yield self[i]

    def _scalar(self, how: str) -> Any:
        value = self._read_for_python(how)
        if np.ndim(value) != 0:
            raise TypeError(f"{how} needs a scalar tensor; got shape {tuple(np.shape(value))}.")
        return value

    def __float__(self) -> float:
        return float(self._scalar("float()"))

    def __int__(self) -> int:
        return int(self._scalar("int()"))

    def __complex__(self) -> complex:
        return complex(self._scalar("complex()"))

    def __bool__(self) -> bool:
        value = self._read_for_python("bool()")
        if np.size(value) != 1:
            raise ValueError(f"The truth value of a tensor of shape {tuple(np.shape(value))} "
                             "is ambiguous; use tf.reduce_any or tf.reduce_all.")
        return bool(value)

    def __index__(self) -> int:
        value = self._scalar("__index__")
        if value.dtype.kind not in "iu":
            raise TypeError(f"Only integer scalar tensors can be used as an index; "
                            f"got dtype {value.dtype}.")
        return int(value)

    def __format__(self, spec: str) -> str:
        # As TensorFlow: the NumPy value's format (a spec on a non-scalar is NumPy's
        # TypeError), so f"{loss:.4f}" prints a scalar and f"{x}" the array; f"{x}" of a
        # traced tensor is its str(), without its value.
        if not spec and _core.symbolic_name(self) is not None:
            return str(self)
        value = self._read_for_python("format()")
        if spec and np.ndim(value) == 0:
            return format(value.item(), spec)
        return format(np.asarray(value), spec)

    def __str__(self) -> str:
        # TensorFlow's form: NumPy's str of the value, on its own lines when it has several;
        # a tensor being traced, as TensorFlow prints a graph tensor: its name, shape and
        # dtype, no value (a value read would be a guard: NOTE(value-reads) in graph/trace).
        traced = _core.symbolic_name(self)
        if traced is not None:
            return f'Tensor("{traced[0]}", shape={traced[1]}, dtype={self.dtype.name})'
        text = str(np.asarray(self._read_for_python("str()")))
        if "\n" in text:
            text = "\n" + text
        return f"tf.Tensor({text}, shape={self.shape}, dtype={self.dtype.name})"

    # Operators: each calls the tapeflow op, so tapes and accumulators see it. A binary
    # operator whose other operand is a symbolic placeholder (a KerasTensor) answers
    # NotImplemented, so Python asks the placeholder's reflected operator, which records
    # the op (NOTE(symbolic-dispatch) in ops/__init__.py).
    def __radd__(self, x): return _ops.add(x, self)
    def __rsub__(self, x): return _ops.subtract(x, self)
    def __rmul__(self, x): return _ops.multiply(x, self)
    def __rtruediv__(self, x): return _ops.truediv(x, self)
    def __rfloordiv__(self, x): return _ops.floordiv(x, self)
    def __rmod__(self, x): return _ops.floormod(x, self)
    def __rpow__(self, x): return _ops.pow(x, self)
    def __rmatmul__(self, x): return _ops.matmul(x, self)
    def __neg__(self): return _ops.negative(self)
    def __pos__(self): return self
    def __abs__(self): return _ops.abs(self)
    def __rand__(self, x): return _ops.logical_and(x, self)
    def __ror__(self, x): return _ops.logical_or(x, self)
    def __invert__(self): return _ops.logical_not(self)
    def __getitem__(self, key): return _ops.getitem(self, key)

    def __eq__(self, other):  # type: ignore[override]
        if other is None:  # as TensorFlow: comparing with None is a Python bool
            return False
        try:
            return _ops.equal(self, other)
        except (TypeError, ValueError):
            return False

    def __ne__(self, other):  # type: ignore[override]
        if other is None:
            return True
        try:
            return _ops.not_equal(self, other)
        except (TypeError, ValueError):
            return True


_FORWARD = (("add", "add"), ("sub", "subtract"), ("mul", "multiply"), ("truediv", "truediv"),
            ("floordiv", "floordiv"), ("mod", "floormod"), ("pow", "pow"),
            ("matmul", "matmul"), ("and", "logical_and"), ("or", "logical_or"),
            ("xor", "logical_xor"), ("lt", "less"), ("le", "less_equal"),
            ("gt", "greater"), ("ge", "greater_equal"))


def _forward_operator(op: Callable) -> Callable:
    def operator(self: TensorBase, y: Any) -> Any:
        try:
            return op(self, y)
        except SymbolicValueError:
            return NotImplemented
    return operator


def _set_operators() -> None:
    """TensorBase's binary operators, each calling its op (looked up in `_ops` until the
    ops load, then the op itself: `_load` sets them again)."""
    for dunder, name in _FORWARD:
        op = getattr(_ops, name) if type(_ops) is not _Later else \
            (lambda name: lambda x, y: getattr(_ops, name)(x, y))(name)
        setattr(TensorBase, f"__{dunder}__", _forward_operator(op))


_set_operators()

class Tensor(TensorBase):
    """An immutable multidimensional array that tapes and accumulators can follow.

    Create tensors with `tf.constant` or `tf.convert_to_tensor`; ops return them.

    Example:
        >>> import tapeflow as tf
        >>> tf.constant([1., 2.]) * 3.
        <tapeflow.Tensor: shape=(2,), dtype=float32, numpy=array([3., 6.], dtype=float32)>
    """

    # _key: the name tapes give the tensor once one records it (NOTE(saved-values) in tape).
    # _keras_mask: the mask a Keras layer attached (unset until one does), as tf_keras'.
    # _placed: (value, its device copy) once a compiled call took it (NOTE(placed) in
    # graph/device.py); unset before.
    __slots__ = ("_value", "_key", "_keras_mask", "_placed", "__weakref__")

    def __init__(self, value: Any) -> None:
        self._value = value
        self._key = None

    def __repr__(self) -> str:
        traced = _core.symbolic_name(self)
        if traced is not None:  # a tensor being traced (see __str__)
            return f"<tapeflow.Tensor '{traced[0]}' shape={traced[1]} dtype={self.dtype.name}>"
        return (f"<tapeflow.Tensor: shape={self.shape}, dtype={self.dtype.name}, "
                f"numpy={_fmt_numpy(self._read_for_python('repr()'))}>")

    def __reduce__(self):  # pickle, copy.copy, copy.deepcopy
        return (Tensor, (self._read_for_python("pickle"),))


_variable_ids = itertools.count()
_keys = itertools.count()  # next() is atomic: threads never share a key
_keying = threading.Lock()
new_key = _keys.__next__  # for a tensor no other thread can see yet (an op's fresh output)


def key_of(x: Any) -> int:
    """A name for tensor or variable `x` that no other object ever has (an id is reused
    once its object is freed): given on first request, kept in the `_key` slot. Tapes
    and tracers name what they record by it, so they need not keep it alive."""
    k = x._key
    if k is None:
        # Two threads naming one shared tensor at once must agree on its name (a tape
        # watching it under one key while it carries another would miss its gradient).
        with _keying:
            k = x._key
            if k is None:
                k = x._key = next(_keys)
    return k


class Variable(TensorBase):
    """A mutable tensor-valued state, watched automatically by tapes when trainable.

    Args:
        initial_value: a tensor, array, Python value, or a zero-argument callable.
        trainable: whether `GradientTape` watches it automatically when read.
        name: a label (``"Variable"`` by default).
        dtype: converts `initial_value` to this dtype if given.

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable([1., 2.])
        >>> with tf.GradientTape() as tape:
        ...     y = tf.reduce_sum(v * v)
        >>> tape.gradient(y, v).numpy()
        array([2., 4.], dtype=float32)
    """

    # _placed: as Tensor's (NOTE(placed) in graph/device.py), checked against the value
    # the variable holds now.
    __slots__ = ("_value", "_trainable", "_name", "_id", "_lock", "_key", "_placed",
                 "_constraint", "__weakref__")

    def __init__(self, initial_value: Any = None, trainable: bool = True,
                 validate_shape: bool = True, caching_device: Any = None,
                 name: str | None = None, variable_def: Any = None, dtype: Any = None,
                 import_scope: Any = None, constraint: Any = None, synchronization: Any = None,
                 aggregation: Any = None, shape: Any = None, **kwargs: Any) -> None:
        if initial_value is None:
            raise ValueError("Variable needs an `initial_value`; got None.")
        if constraint is not None and not callable(constraint):
            raise ValueError(f"Variable: the constraint {constraint!r} is not callable; expected "
                             "a function of the variable giving its projected value.")
        self._constraint = constraint
        if callable(initial_value):
            initial_value = initial_value()
        if isinstance(initial_value, TensorBase):
            # A Python read of the value: tracing guards it, vmap refuses it.
            value = initial_value._read_for_python("tf.Variable()")
            if dtype is not None:
                value = np.asarray(value, _dt.as_dtype(dtype)._np)
        else:
            value = constant(initial_value, dtype=dtype)._value
        # The variable owns its buffer: later writes by the caller must not reach it.
        self._value = np.array(value, copy=True)
        self._trainable = bool(trainable)
        self._id = next(_variable_ids)
        self._key = None
        self._name = _scopes.name_scope_prefix() + (name or "Variable")  # tf.name_scope's prefix
        # Held by every update (assign_add reads, adds and writes under it; a traced call
        # that writes the variable holds it for the whole replay): updates are atomic.
        self._lock = threading.RLock()
        _core.variable_created(self)

    @property
    def trainable(self) -> bool:
        return self._trainable

    @property
    def constraint(self) -> Any:
        """The projection the optimizers assign after each update of this variable, or
        None (TensorFlow's `constraint=`)."""
        return self._constraint

    @property
    def name(self) -> str:
        return f"{self._name}:0"

    def value(self) -> Tensor:
        """The current value as a Tensor (a read that tapes and accumulators see)."""
        return _core.bind(_core.read_variable_p, self)

    read_value = value

    def assign(self, value: Any, use_locking: Any = None, name: Any = None,
               read_value: bool = True) -> "Variable":
        """Replace the value; shape and dtype must match. Returns the variable."""
        new = _convert_for_assign(self, value, "assign")
        with self._lock:
            _core.variable_written(self, new)  # tracing records the write
            # A new buffer, never an in-place write: tensors read earlier keep their values,
            # and a caller's array passed to assign is not aliased.
            self._value = np.array(new._value, copy=True)
        return self

    def assign_add(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> "Variable":
        """Add `delta` to the value in place of the variable. Returns the variable."""
        delta = _convert_for_assign(self, delta, "assign_add")
        with self._lock:  # read, add and write as one update
            return self.assign(_ops.add(self.value(), delta))

    def assign_sub(self, delta: Any, use_locking: Any = None, name: Any = None,
                   read_value: bool = True) -> "Variable":
        """Subtract `delta` from the value. Returns the variable."""
        delta = _convert_for_assign(self, delta, "assign_sub")
        with self._lock:  # read, subtract and write as one update
            return self.assign(_ops.subtract(self.value(), delta))

    def __repr__(self) -> str:
        return (f"<tapeflow.Variable '{self.name}' shape={self.shape} dtype={self.dtype.name}, "
                f"numpy={_fmt_numpy(self._read_for_python('repr()'))}>")

    def __str__(self) -> str:
        return self.__repr__()

    def __reduce__(self):  # pickle, copy.copy, copy.deepcopy: a new variable, same value
        args = (self._read_for_python("pickle"), self._trainable, True, None, self._name)
        if self._constraint is not None:
            args += (None, None, None, self._constraint)
        return (Variable, args)


def _convert_for_assign(var: Variable, value: Any, how: str) -> "Tensor":
    t = convert_to_tensor(value, dtype=var.dtype) if not isinstance(value, TensorBase) \
        else _as_tensor(value)
    if t._value.dtype != var._value.dtype:
        raise DTypeMismatchError(f"Variable.{how}: value has dtype {t.dtype.name}, "
                                 f"variable '{var.name}' has dtype {var.dtype.name}.")
    if np.shape(t._value) != np.shape(var._value):
        raise ValueError(f"Variable.{how}: value has shape {tuple(np.shape(t._value))}, "
                         f"variable '{var.name}' has shape {tuple(np.shape(var._value))}.")
    return t


def is_tensor(x: Any) -> bool:
    """True for tapeflow Tensors and Variables."""
    return isinstance(x, TensorBase)


def _as_tensor(x: Any) -> Tensor:
    return x if type(x) is Tensor else x.value()


def _check_integral(value: Any, np_dtype: np.dtype) -> None:
    arr = np.asarray(value)
    if _dt.kind(np_dtype) in "iub" and _dt.kind(arr.dtype) in "fc":
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr.real)):
            raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {np_dtype}: "
                            "the values are not integral.")


def _holds_none(value: Any) -> bool:
    return any(v is None or isinstance(v, (list, tuple)) and _holds_none(v) for v in value)


def convert_to_tensor(value: Any, dtype: Any = None, dtype_hint: Any = None,
                      name: str | None = None) -> Tensor:
    """Convert a tensor, variable, array or Python value to a Tensor.

    Dtype inference is TensorFlow's: Python floats give float32, Python ints
    int32, bools bool, complex numbers complex128; a NumPy array keeps its dtype.
    A Tensor of another dtype than `dtype` is an error (no implicit casts).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.convert_to_tensor(1.5).dtype, tf.convert_to_tensor(np.ones(2)).dtype
        (tf.float32, tf.float64)
    """
    if isinstance(value, TensorBase):
        t = _as_tensor(value)
        if dtype is not None and _dt.as_dtype(dtype)._np != t._value.dtype:
            raise DTypeMismatchError(
                f"convert_to_tensor: requested dtype {_dt.as_dtype(dtype).name} for a tensor "
                f"of dtype {t.dtype.name}; use tf.cast to convert.")
        return t
    if value is None or isinstance(value, (list, tuple)) and _holds_none(value):
        raise TypeError(f"Cannot convert {value!r} to a tensor: None is not a value.")
    if dtype is not None:
        np_dtype = _dt.as_dtype(dtype)._np
        _check_integral(value, np_dtype)
    else:
        np_dtype = _dt.infer_numpy_dtype(value)
        if dtype_hint is not None and not isinstance(value, (np.ndarray, np.generic)):
            hinted = _dt.as_dtype(dtype_hint)._np
            if np.can_cast(np_dtype, hinted, "same_kind") or _dt.kind(np_dtype) in "iub":
                np_dtype = hinted
    try:
        arr = np.asarray(value, dtype=np_dtype)
    except SymbolicValueError:
        raise
    except (TypeError, ValueError, OverflowError) as e:
        raise TypeError(f"Cannot convert {value!r} to a tensor of dtype {np_dtype}: {e}") from None
    if arr.ndim == 0:
        return Tensor(arr[()])
    # A tensor is immutable: the caller's buffer (an array, or memory NumPy only wraps) is
    # copied, so writing into it later changes no tensor and no recorded gradient.
    if arr is value or not arr.flags.owndata:
        arr = arr.copy()
    return Tensor(arr)


def constant(value: Any, dtype: Any = None, shape: Any = None,
             name: str | None = "Const") -> Tensor:
    """Create a constant tensor from a Python value, array or tensor.

    Unlike `convert_to_tensor`, an explicit `dtype` casts (as TensorFlow's
    `constant` does), and `shape` fills a scalar or reshapes a value of equal size.

    Example:
        >>> import tapeflow as tf
        >>> tf.constant(0., shape=(2, 2)).numpy()
        array([[0., 0.],
               [0., 0.]], dtype=float32)
    """
    if isinstance(value, TensorBase):
        return _constant_of_tensor(_as_tensor(value), dtype, shape)
    if dtype is not None and isinstance(value, (np.ndarray, np.generic)):
        arr = np.array(value, dtype=_dt.as_dtype(dtype)._np)
    else:
        arr = convert_to_tensor(value, dtype)._value
    if shape is not None:
        shape = _constant_shape(shape, np.shape(arr), np.size(arr))
        if np.size(arr) == 1 and np.prod(shape, dtype=np.int64) != 1:
            arr = np.full(shape, np.asarray(arr).reshape(()), dtype=arr.dtype)
        else:
            arr = np.reshape(arr, shape)
    if np.ndim(arr) == 0:
        arr = np.asarray(arr)[()]
    return Tensor(arr)


def _constant_shape(shape: Any, value_shape: tuple, size: int) -> tuple:
    dims = np.asarray(shape).reshape(-1)
    if dims.size and (dims.dtype.kind not in "iu" or (dims < 0).any()):
        raise TypeError(f"constant: `shape` must be non-negative integers; got {shape!r}.")
    shape = tuple(int(d) for d in dims)
    if size == 1 or size == np.prod(shape, dtype=np.int64):
        return shape
    raise TypeError(f"constant: cannot give a value of shape {value_shape} ({size} elements) "
                    f"the shape {shape}.")


def _constant_of_tensor(t: Tensor, dtype: Any, shape: Any) -> Tensor:
    """constant(t) is the tensor t as an op (an identity, or a cast to `dtype`), so tapes,
    traces and vmap follow it: it is not frozen into a graph, and gradients flow through
    it (as TensorFlow)."""
    if dtype is not None and _dt.as_dtype(dtype)._np != t._value.dtype:
        out = _ops.cast(t, dtype)
    else:
        out = _ops.identity(t)
    if shape is None:
        return out
    shape = _constant_shape(shape, tuple(np.shape(t._value)), int(np.size(t._value)))
    if np.size(t._value) == 1 and np.prod(shape, dtype=np.int64) != 1:
        return _ops.broadcast_to(_ops.reshape(out, ()), shape)
    return _ops.reshape(out, shape)

