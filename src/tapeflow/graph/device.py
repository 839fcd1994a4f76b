"""DeviceTensor: a result of ``function(jit_compile=True, keep_on_device=True)``.

A compiled call computes its results on JAX's device (the CPU, or a GPU with a CUDA
build of JAX). Copying them to host NumPy arrays costs a transfer per result and call;
a program that hands the results of one compiled function straight to another never
needs them on the host. A DeviceTensor keeps its device array and copies it to the host
only when something reads the NumPy value (an eager op, a tape, `.numpy()`, printing,
`np.asarray`, pickling); that copy is kept, so it happens once. Shape and dtype come
from the device array without a transfer, and a compiled function it is passed to gets
the device array itself (graph/function.py, `array_of`).

NOTE(device-identity): a DeviceTensor is the tensor that tapes, accumulators and tracers
record (its `_key`), before and after its host copy is made. So it never becomes another
object: `value()` returns itself, which is what conversions (`convert_to_tensor`, the
ops' argument conversion) call on tensors that are not exactly `Tensor`.

NOTE(placed): a host tensor (an ordinary Tensor or a Variable) passed to a compiled
call is copied to the device once, and the copy is kept on the tensor (its `_placed`
slot, with the value it copies): the same weights or data passed again cost no
transfer. Copied at every call, a few MB of weights cost more than a small program's
whole computation (docs/performance-notes.md, #placed). The copy is kept only while it
is the tensor's value: a variable assigned since is copied again. On the CPU, where
JAX's array and a NumPy view of it share memory, the tensor's value becomes that view,
so the tensor's memory is not doubled (the values are equal; both are read-only, as
every tensor's value is). A variable's value is swapped under its lock, only if no
assignment came in between and the lock is free (a compiled call holds the locks of the
variables it writes). A variable a compiled call assigns keeps the computation's array
as its device copy. A tensor's first call passes its NumPy value as it is (JAX's C++
dispatch copies it in, faster than `jax.device_put` would); only a tensor passed again
is placed: an input made for one call (`f(tf.constant(batch))`) never pays for placing.

Nothing here imports JAX: any array with `shape`, `dtype` and `__array__` will do, so
the core imports with NumPy alone (`placed` gets the jax module from its caller).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor, TensorBase, TensorShape, Variable

__all__ = ["DeviceTensor", "array_of", "placed", "keep_placed"]

_host_slot = Tensor.__dict__["_value"]  # Tensor's `_value` slot, shadowed by the property below


class DeviceTensor(Tensor):
    """A tensor whose value stays a device (JAX) array until its NumPy value is needed.

    ``tf.function(f, jit_compile=True, keep_on_device=True)`` returns these from its
    compiled calls. Passed to another compiled function, its device array goes in as it
    is; anything else that reads the value (eager ops, GradientTape, ForwardAccumulator,
    vmap, `.numpy()`, `print`, `np.asarray`, pickling) copies it to the host once, and
    from then on it behaves as the ordinary tensor holding that copy (pickled or copied,
    it is one). Its shape, dtype and `materialized` flag never need a copy. The example
    wraps a NumPy array, which works without JAX; a compiled call wraps a `jax.Array`.

    Example:
        >>> import numpy as np
        >>> from tapeflow.graph.device import DeviceTensor
        >>> t = DeviceTensor(np.arange(3.0))
        >>> t.shape, t.dtype, t.materialized
        (TensorShape([3]), tf.float64, False)
        >>> (t * 2.0).numpy()
        array([0., 2., 4.])
        >>> t.materialized
        True
    """

    __slots__ = ("_device",)

    def __init__(self, array: Any) -> None:
        # Tensor.__init__ would assign `_value`: the host copy is made on first read only.
        self._device = array
        self._key = None

    @property
    def _value(self) -> Any:
        try:
            return _host_slot.__get__(self)
        except AttributeError:
            # The first read of the NumPy value: one transfer, kept. Two threads racing
            # here both store the same values, so no lock is needed. np.asarray is the
            # conversion keep_on_device=False applies, so both give equal tensors.
            value = np.asarray(self._device)
            _host_slot.__set__(self, value)
            return value

    @property
    def device_array(self) -> Any:
        """The device array (a `jax.Array` from a compiled call), never copied."""
        return self._device

    @property
    def materialized(self) -> bool:
        """Whether the host (NumPy) copy of the value has been made."""
        try:
            _host_slot.__get__(self)
        except AttributeError:
            return False
        return True

    @property
    def shape(self) -> TensorShape:
        return TensorShape(np.shape(self._device))

    @property
    def dtype(self) -> _dt.DType:
        return _dt.from_numpy(self._device.dtype)  # JAX's dtypes are NumPy's

    @property
    def ndim(self) -> int:
        return len(np.shape(self._device))

    @property
    def device(self) -> str:
        # TensorFlow's device name, from where JAX placed the array (a GPU build: GPU:0).
        devices = getattr(self._device, "devices", None)
        if devices is None:
            return super().device
        device = min(devices(), key=lambda d: d.id)
        return f"/job:localhost/replica:0/task:0/device:{device.platform.upper()}:{device.id}"

    def __len__(self) -> int:
        shape = np.shape(self._device)
        if not shape:
            raise TypeError("Scalar tensor has no `len()`.")
        return shape[0]

    def value(self) -> "DeviceTensor":
        """Itself (NOTE(device-identity)): conversions call this on tensor subclasses."""
        return self


def array_of(t: Tensor) -> Any:
    """What a compiled call takes for tensor `t`: its device array if it is a
    DeviceTensor (no host copy), else its NumPy value. Its shape and dtype are `t`'s.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.graph.device import DeviceTensor, array_of
        >>> t = DeviceTensor(np.ones(2))
        >>> array_of(t) is t.device_array, t.materialized
        (True, False)
        >>> array_of(tf.constant([1., 2.])).tolist()
        [1.0, 2.0]
    """
    return t._device if type(t) is DeviceTensor else t._value


def placed(t: TensorBase, jax: Any) -> Any:
    """The array a compiled call takes for tensor or variable `t` (NOTE(placed)): a
    DeviceTensor's own; a host tensor's NumPy value at its first call; else the device
    copy of its value, made once and kept.

    Example (the host tensor's part runs where JAX is installed):
        >>> import importlib.util, numpy as np, tapeflow as tf
        >>> from tapeflow.graph.device import DeviceTensor, placed
        >>> d = DeviceTensor(np.ones(2))
        >>> placed(d, jax=None) is d.device_array
        True
        >>> jax = importlib.import_module("jax") if importlib.util.find_spec("jax") else None
        >>> t = tf.constant([1., 2.])
        >>> jax is None or isinstance(placed(t, jax), np.ndarray)  # the first call's
        True
        >>> jax is None or (placed(t, jax) is placed(t, jax) and t.numpy().tolist() == [1., 2.])
        True
    """
    if type(t) is DeviceTensor:
        return t._device
    value = t._value
    kept = getattr(t, "_placed", None)
    if kept is not None and kept[0] is value and kept[1] is not None:
        return kept[1]
    if not isinstance(value, np.ndarray):
        return value  # a NumPy scalar: nothing worth keeping
    if kept is None and not isinstance(t, Variable):
        t._placed = (value, None)  # the first call: the value as it is, placed if passed again
        return value
    device = jax.device_put(value)
    if device.dtype != value.dtype:  # 64-bit types outside JAX's x64 mode
        with jax.enable_x64(True):
            device = jax.device_put(value)
    host = _host_view(device, value)
    if host is not value and isinstance(t, Variable):
        # Not waiting for the lock: a compiled call holding the locks of the variables it
        # writes may be placing one that another such call writes, and the other way round.
        if not t._lock.acquire(blocking=False):
            return device  # this call's read; the copy is kept another time
        try:
            if t._value is not value:  # assigned meanwhile: the copy is stale
                return device
            t._value = host
            t._placed = (host, device)
        finally:
            t._lock.release()
        return device
    t._value = host
    t._placed = (host, device)
    return device


def keep_placed(v: Variable, device: Any) -> None:
    """Assign `device` (a compiled call's result) to variable `v`: its value becomes the
    host view of it, and `device` its kept copy (NOTE(placed)). The caller holds the
    variable's lock."""
    v._value = np.asarray(device)  # on the CPU a view, elsewhere one transfer (as before)
    v._placed = (v._value, device)


def _host_view(device: Any, value: np.ndarray) -> np.ndarray:
    """A NumPy view of `device` if one shares its memory (JAX on the CPU), else `value`."""
    if value.size == 0 or not _on_cpu(device):
        return value
    host = np.asarray(device)
    return host if _shares_memory(device, host) and host.shape == value.shape else value


def _on_cpu(device: Any) -> bool:
    devices = getattr(device, "devices", None)
    return devices is not None and all(d.platform == "cpu" for d in devices())


def _shares_memory(device: Any, host: np.ndarray) -> bool:
    pointer = getattr(device, "unsafe_buffer_pointer", None)
    try:
        return host.size > 0 and pointer is not None and pointer() == host.ctypes.data
    except Exception:  # a sharded or deleted array has no single buffer
        return False
