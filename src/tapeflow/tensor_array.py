"""tf.TensorArray: a list of tensors of one dtype, written and read by index.

No primitive: the array holds the tensors written to it, and reads, stack, gather and
concat are ordinary ops on them (an identity, a stack, a concat), so gradients flow
through them on a tape and a traced function records them like any other op. Inside
`tf.function` a Python loop over the array unrolls while tracing, and each replay runs
the recorded ops.

TensorFlow's graph-mode errors are raised in every mode: reading an index that was
never written (or was cleared by an earlier read), writing an index twice, writing past
the size of an array that is not `dynamic_size`. (Eager TensorFlow is laxer: it reads
zeros and overwrites; tapeflow runs the same code eagerly and traced, so it keeps the
strict rules.) Stack, gather and concat fill unwritten entries with zeros when the
element shape is known, as TensorFlow does.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from . import dtypes as _dt
from .errors import InvalidArgumentError
from .ops.convert import as_tensor, convert_like, int_arg
from .ops.shape import concat, identity, stack
from .ops.structural import shape_of
from .tensor import Tensor, TensorBase, TensorShape

__all__ = ["TensorArray"]

_CLEARED = object()  # an entry read once with clear_after_read


class TensorArray:
    """A list of tensors of one `dtype` with TensorFlow's TensorArray API: `write`,
    `read`, `stack`, `unstack`, `gather`, `scatter`, `concat`, `size`; each writing
    method returns the array, for TensorFlow's functional style ``ta = ta.write(i, x)``.

    `size` entries (grown on demand with `dynamic_size=True`); `clear_after_read`
    (default True) makes a second read of an entry an error; `element_shape`, or with
    `infer_shape` the first write, fixes the shape every element must have. Gradients
    flow through reads, stack, gather and concat to the tensors written.

    Example:
        >>> import tapeflow as tf
        >>> ta = tf.TensorArray(tf.float32, size=0, dynamic_size=True)
        >>> for i in range(3):
        ...     ta = ta.write(i, tf.constant(float(i)) * 2.)
        >>> ta.stack().numpy()
        array([0., 2., 4.], dtype=float32)
    """

    def __init__(self, dtype: Any, size: Any = None, dynamic_size: Any = None,
                 clear_after_read: Any = None, tensor_array_name: str | None = None,
                 handle: Any = None, flow: Any = None, infer_shape: bool = True,
                 element_shape: Any = None, colocate_with_first_write_call: bool = True,
                 name: str | None = None) -> None:
        self._dtype = _dt.as_dtype(dtype)
        n = 0 if size is None else int_arg(size, "TensorArray", "size")
        if n < 0:
            raise InvalidArgumentError(f"TensorArray: `size` must be non-negative; got {n}.")
        self._items: list = [None] * n
        self._dynamic = bool(dynamic_size)
        self._clear = True if clear_after_read is None else bool(clear_after_read)
        self._infer = bool(infer_shape)
        self._shape = None if element_shape is None else tuple(
            TensorShape(element_shape).as_list())

    # ---------------------------------------------------------------- properties
    @property
    def dtype(self) -> _dt.DType:
        """The dtype of the elements."""
        return self._dtype

    @property
    def element_shape(self) -> TensorShape:
        """The shape every element has (unknown until fixed by `element_shape` or a write)."""
        return TensorShape(None) if self._shape is None else TensorShape(list(self._shape))

    @property
    def dynamic_size(self) -> bool:
        """Whether writes past the end grow the array."""
        return self._dynamic

    def size(self, name: str | None = None) -> Tensor:
        """The number of entries, an int32 scalar."""
        return Tensor(np.int32(len(self._items)))

    def identity(self) -> "TensorArray":
        """The array itself (TensorFlow's control-dependency identity)."""
        return self

    def close(self, name: str | None = None) -> None:
        """Nothing to release: the entries are ordinary tensors."""

    def __repr__(self) -> str:
        return (f"<tapeflow.TensorArray dtype={self._dtype.name} size={len(self._items)} "
                f"element_shape={self.element_shape}>")

    # ---------------------------------------------------------------- writing
    def _index(self, index: Any, op: str) -> int:
        if isinstance(index, TensorBase):
            index = int(index)  # a value read: tracing guards it
        return int_arg(index, f"TensorArray.{op}", "index")

    def _value(self, value: Any, op: str) -> Tensor:
        where = f"TensorArray.{op}"
        target = self._dtype._np
        if isinstance(value, TensorBase):
            t = as_tensor(value, where, "value")
            if t._value.dtype != target:
                raise InvalidArgumentError(
                    f"{where}: the TensorArray's dtype is {self._dtype.name} but `value` has "
                    f"dtype {_dt.from_numpy(t._value.dtype).name}.")
            return t
        return convert_like(value, Tensor(np.zeros((), target)), where, "value")

    def _check_shape(self, t: Tensor, op: str) -> None:
        shape = shape_of(t)
        if self._shape is not None:
            if len(shape) != len(self._shape) or any(
                    e is not None and e != d for e, d in zip(self._shape, shape, strict=True)):
                raise ValueError(f"TensorArray.{op}: incompatible shape for `value`: got "
                                 f"{shape}, expected {self._shape}.")
        if self._infer or self._shape is not None:
            self._shape = shape

    def write(self, index: Any, value: Any, name: str | None = None) -> "TensorArray":
        """Write `value` at `index` (each index once); returns the array."""
        i = self._index(index, "write")
        t = self._value(value, "write")
        if i < 0:
            raise InvalidArgumentError(f"TensorArray.write: writing to negative indices (index "
                                       f"{i}) is not allowed.")
        if i >= len(self._items):
            if not self._dynamic:
                raise InvalidArgumentError(
                    f"TensorArray.write: tried to write to index {i} but the array is not "
                    f"resizeable (dynamic_size=False) and its size is {len(self._items)}.")
            self._items.extend([None] * (i + 1 - len(self._items)))
        if self._items[i] is not None:
            raise InvalidArgumentError(f"TensorArray.write: could not write to index {i} "
                                       "because it has already been written to.")
        self._check_shape(t, "write")
        self._items[i] = t
        return self

    def scatter(self, indices: Any, value: Any, name: str | None = None) -> "TensorArray":
        """Write the rows of `value` at `indices` (one row per index); returns the array."""
        idx = np.asarray(indices.numpy() if isinstance(indices, TensorBase) else indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise InvalidArgumentError(f"TensorArray.scatter: `indices` must be a vector of "
                                       f"integers; got {indices!r}.")
        t = self._value(value, "scatter")
        if not shape_of(t) or shape_of(t)[0] != idx.size:
            raise InvalidArgumentError(
                f"TensorArray.scatter: `value` must have one row per index: {idx.size} indices, "
                f"`value` of shape {shape_of(t)}.")
        for k, i in enumerate(idx.tolist()):
            self.write(i, t[k])
        return self

    def unstack(self, value: Any, name: str | None = None) -> "TensorArray":
        """Write the rows of `value` at indices 0, 1, ...; returns the array."""
        t = self._value(value, "unstack")
        if not shape_of(t):
            raise InvalidArgumentError("TensorArray.unstack: `value` must have rank >= 1; got a "
                                       "scalar.")
        n = shape_of(t)[0]
        if not self._dynamic and self._items and n > len(self._items):
            raise ValueError(f"TensorArray.unstack: cannot unstack {n} tensors into a "
                             f"TensorArray of static size {len(self._items)}.")
        if not self._items:
            self._items = [None] * n
        return self.scatter(np.arange(n), t)

    # ---------------------------------------------------------------- reading
    def read(self, index: Any, name: str | None = None) -> Tensor:
        """The element at `index` (a second read is an error with clear_after_read)."""
        i = self._index(index, "read")
        if not 0 <= i < len(self._items):
            raise InvalidArgumentError(f"TensorArray.read: tried to read from index {i} but the "
                                       f"array size is {len(self._items)}.")
        item = self._items[i]
        if item is _CLEARED:
            raise InvalidArgumentError(
                f"TensorArray.read: could not read index {i} twice because it was cleared after "
                "a previous read (perhaps set clear_after_read=False).")
        if item is None:
            raise InvalidArgumentError(f"TensorArray.read: could not read from index {i} because "
                                       "it has not yet been written to.")
        if self._clear:
            self._items[i] = _CLEARED
        return identity(item)

    def _entries(self, indices: Sequence[int], op: str) -> list[Tensor]:
        out = []
        for i in indices:
            if not 0 <= i < len(self._items):
                raise InvalidArgumentError(f"TensorArray.{op}: index {i} is out of range for an "
                                           f"array of size {len(self._items)}.")
            item = self._items[i]
            if item is _CLEARED:
                raise InvalidArgumentError(f"TensorArray.{op}: index {i} was cleared by an "
                                           "earlier read (clear_after_read).")
            if item is None:
                if self._shape is None or None in self._shape:
                    raise InvalidArgumentError(
                        f"TensorArray.{op}: index {i} has not been written to and the element "
                        "shape is not known, so it cannot be filled with zeros.")
                item = Tensor(np.zeros(self._shape, self._dtype._np))
            out.append(item)
        return out

    def _empty(self, op: str) -> Tensor:
        shape = () if self._shape is None else self._shape
        if None in shape:
            raise InvalidArgumentError(f"TensorArray.{op}: the array is empty and its element "
                                       "shape is not fully known.")
        return Tensor(np.zeros((0,) + tuple(shape), self._dtype._np))

    def stack(self, name: str | None = None) -> Tensor:
        """The elements stacked on a new axis 0 (zeros for unwritten ones of known shape)."""
        items = self._entries(range(len(self._items)), "stack")
        return stack(items) if items else self._empty("stack")

    def gather(self, indices: Any, name: str | None = None) -> Tensor:
        """The elements at `indices`, stacked on a new axis 0."""
        idx = np.asarray(indices.numpy() if isinstance(indices, TensorBase) else indices)
        if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
            raise InvalidArgumentError(f"TensorArray.gather: `indices` must be a vector of "
                                       f"integers; got {indices!r}.")
        items = self._entries(idx.tolist(), "gather")
        return stack(items) if items else self._empty("gather")

    def concat(self, name: str | None = None) -> Tensor:
        """The elements (rank >= 1) concatenated along their axis 0."""
        items = self._entries(range(len(self._items)), "concat")
        for k, item in enumerate(items):
            if not shape_of(item):
                raise InvalidArgumentError(f"TensorArray.concat: element {k} is a scalar; concat "
                                           "requires elements of rank >= 1.")
        if not items:
            shape = self._shape or (0,)
            return Tensor(np.zeros((0,) + tuple(shape[1:]), self._dtype._np))
        return concat(items, axis=0)
