"""tf.device and the devices tf.config lists: tapeflow computes on the CPU (NumPy, and
JAX's CPU under `jit_compile=True`), which is the one device it lists.

NOTE(devices): `with tf.device("/CPU:0")` (any of TensorFlow's spellings) is honoured:
that is where everything runs. Another name is honoured where JAX (the xla extra) has
that device: the block is JAX's `default_device` of it, so the functions traced with
`jit_compile=True` compute there (their lean calls included, at no cost per call), while
tapeflow's other ops, NumPy's, run on the CPU as TensorFlow's soft placement runs ops
without a kernel for the device. A name no one has is an error naming the device and
what tapeflow has, rather than a silent run elsewhere, unless the program turned soft
placement on (`tf.config.set_soft_device_placement(True)`), in which case, as
TensorFlow's soft placement, the ops fall back to the CPU. (TensorFlow's eager default is
soft placement on; tapeflow's is off, so that a program written for a GPU learns it is
not on one.)
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.util
import re
from typing import Any, Iterator, NamedTuple

from . import scopes
from .errors import InvalidArgumentError

__all__ = ["device", "PhysicalDevice", "LogicalDevice", "list_physical_devices",
           "list_logical_devices", "set_soft_device_placement", "get_soft_device_placement",
           "current_device"]

_SPEC = re.compile(r"^(?:/job:[\w-]+)?(?:/replica:\d+)?(?:/task:\d+)?"
                   r"(?:/?(?:device:)?(?P<kind>[A-Za-z_]+):(?P<index>\d+|\*))?$")
_SOFT = {"on": False}


class PhysicalDevice(NamedTuple):
    """A device of the machine, as `tf.config.list_physical_devices` lists it."""

    name: str
    device_type: str


class LogicalDevice(NamedTuple):
    """A device the runtime computes on, as `tf.config.list_logical_devices` lists it."""

    name: str
    device_type: str


def _parse(name: str) -> tuple[str | None, str | None]:
    """(kind, index) of a TensorFlow device string; (None, None) for "" (no constraint)."""
    match = _SPEC.match(name.strip())
    if match is None:
        raise InvalidArgumentError(
            f"tf.device: cannot parse the device name {name!r}; expected a TensorFlow device "
            "string such as '/CPU:0', 'GPU:0' or '/job:localhost/replica:0/task:0/device:CPU:0'.")
    kind = match.group("kind")
    return (kind.upper(), match.group("index")) if kind else (None, None)


@contextlib.contextmanager
def device(device_name: Any) -> Iterator[None]:
    """Run the ops of the block on `device_name` (NOTE(devices)): the CPU is where
    tapeflow computes, and the functions traced with jit_compile=True run on a device JAX
    has; another device is an error unless soft placement is on.

    Example:
        >>> import tapeflow as tf
        >>> with tf.device("/CPU:0"):
        ...     y = tf.constant([1.0, 2.0]) * 2
        >>> y.numpy()
        array([2., 4.], dtype=float32)
    """
    if device_name is not None and not isinstance(device_name, str):
        raise TypeError(f"tf.device: `device_name` must be a string or None; got "
                        f"{type(device_name).__name__} {device_name!r}.")
    kind, index = _parse(device_name or "")
    target = None
    if kind is not None and not (kind == "CPU" and index in ("0", "*")):
        target = _jax_device(kind, index)
        if target is None and not _SOFT["on"]:
            raise InvalidArgumentError(
                f"tf.device({device_name!r}): tapeflow computes on the CPU only (its devices: "
                f"{[d.name for d in list_logical_devices()]}), except that functions traced "
                "with jit_compile=True run on a device JAX has, and JAX has no "
                f"{kind}:{index} here (or is not installed). Use '/CPU:0', or "
                "tf.config.set_soft_device_placement(True) to run such blocks on the CPU as "
                "TensorFlow's soft placement does.")
    with scopes.device_entered(device_name if kind is not None else scopes.current_device()):
        if target is None:
            yield
        else:
            with target[0].default_device(target[1]):
                yield


def _jax_device(kind: str, index: str) -> tuple | None:
    """(jax, its device) for a TensorFlow device kind and index, where JAX is installed
    and has that device; else None."""
    platform = {"CPU": "cpu", "GPU": "gpu", "TPU": "tpu"}.get(kind)
    if platform is None or importlib.util.find_spec("jax") is None:
        return None
    jax = importlib.import_module("jax")
    try:
        found = jax.devices(platform)
    except RuntimeError:  # no backend of that platform
        return None
    k = 0 if index == "*" else int(index)
    return (jax, found[k]) if k < len(found) else None


def current_device() -> str | None:
    """The device name of the innermost `tf.device` block on this thread, or None."""
    return scopes.current_device()


def list_physical_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The machine's devices tapeflow computes on (the CPU), optionally of one type.

    Example:
        >>> import tapeflow as tf
        >>> tf.config.list_physical_devices("GPU")
        []
        >>> tf.config.list_physical_devices()[0].device_type
        'CPU'
    """
    found = [PhysicalDevice("/physical_device:CPU:0", "CPU")]
    return [d for d in found if device_type is None or d.device_type == device_type.upper()]


def list_logical_devices(device_type: str | None = None) -> list[LogicalDevice]:
    """The devices ops run on (the CPU), optionally of one type.

    Example:
        >>> import tapeflow as tf
        >>> tf.config.list_logical_devices()[0].name
        '/device:CPU:0'
    """
    found = [LogicalDevice("/device:CPU:0", "CPU")]
    return [d for d in found if device_type is None or d.device_type == device_type.upper()]


def set_soft_device_placement(enabled: bool) -> None:
    """Whether a `tf.device` block naming a device tapeflow lacks runs on the CPU (True)
    or is an error (False, tapeflow's default; NOTE(devices)).

    Example:
        >>> import tapeflow as tf
        >>> tf.config.set_soft_device_placement(True)
        >>> with tf.device("/GPU:0"):
        ...     tf.constant(1.0).numpy()
        np.float32(1.0)
        >>> tf.config.set_soft_device_placement(False)
    """
    _SOFT["on"] = bool(enabled)


def get_soft_device_placement() -> bool:
    """Whether soft device placement is on (see `set_soft_device_placement`)."""
    return _SOFT["on"]
