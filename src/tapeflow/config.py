"""tf.config: whether traced functions run eagerly (for debugging), tf.init_scope, and the
devices (devices.py: the CPU, soft placement)."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

from .core import no_recorders
from .devices import (PhysicalDevice, get_soft_device_placement, list_logical_devices,
                      list_physical_devices, set_soft_device_placement)

__all__ = ["run_functions_eagerly", "functions_run_eagerly", "init_scope",
           "list_physical_devices", "list_logical_devices", "set_soft_device_placement",
           "get_soft_device_placement", "get_visible_devices", "set_visible_devices",
           "experimental"]

# One switch for the process, as TensorFlow's (it is a debugging aid, not per-thread state).
_EAGERLY = {"on": False}
# functions_run_eagerly() read by a C call, for hot paths (NOTE(lean-call) in graph/xla.py)
run_eagerly_flag: Callable[[], bool] = functools.partial(operator.getitem, _EAGERLY, "on")


def run_functions_eagerly(run_eagerly: bool) -> None:
    """Make every `tf.function` call its Python function directly (no tracing, no replay:
    breakpoints and prints inside it run at every call), or go back to tracing.

    Example:
        >>> import tapeflow as tf
        >>> tf.config.run_functions_eagerly(True)
        >>> tf.config.functions_run_eagerly()
        True
        >>> tf.config.run_functions_eagerly(False)
    """
    if not isinstance(run_eagerly, bool):
        raise TypeError(f"run_functions_eagerly: expected a bool; got {run_eagerly!r}.")
    _EAGERLY["on"] = run_eagerly


def functions_run_eagerly() -> bool:
    """Whether `run_functions_eagerly(True)` is in effect.

    Example:
        >>> import tapeflow as tf
        >>> tf.config.functions_run_eagerly()
        False
    """
    return _EAGERLY["on"]


def init_scope() -> Any:
    """tf.init_scope: a block lifted out of every trace and tape (its ops run eagerly and
    are recorded by nothing; a traced function sees their results as constants), as
    TensorFlow uses it to create state once inside a traced function.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.Variable(3.0)
        >>> with tf.GradientTape() as tape:
        ...     with tf.init_scope():
        ...         hidden = x * 2.0
        ...     y = x * hidden
        >>> float(tape.gradient(y, x))  # hidden is a constant to the tape
        6.0
    """
    return no_recorders()


def get_visible_devices(device_type: str | None = None) -> list[PhysicalDevice]:
    """The devices ops may run on: every device tapeflow lists (the CPU)."""
    return list_physical_devices(device_type)


def set_visible_devices(devices: Any, device_type: str | None = None) -> None:
    """Restrict the visible devices (of `device_type`): hiding GPUs, which tapeflow has
    none of, changes nothing; the CPU cannot be hidden, as in TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> tf.config.set_visible_devices([], "GPU")
    """
    given = list(devices) if isinstance(devices, (list, tuple)) else [devices]
    known = list_physical_devices()
    for d in given:
        if d not in known:
            raise ValueError(f"set_visible_devices: {d!r} is not one of the physical devices "
                             f"{known}.")
    kinds = {d.device_type for d in given}
    if (device_type is None or device_type.upper() == "CPU") and "CPU" not in kinds:
        raise ValueError("set_visible_devices: the CPU cannot be hidden; tapeflow computes on it.")


def _set_memory_growth(device: PhysicalDevice, enable: bool) -> None:
    if device not in list_physical_devices():
        raise ValueError(f"set_memory_growth: unrecognized device {device!r}.")
    if device.device_type == "CPU":
        raise ValueError("Cannot set memory growth on non-GPU and non-Pluggable devices")


class _Experimental:
    """tf.config.experimental: the device functions TensorFlow programs call there."""

    list_physical_devices = staticmethod(list_physical_devices)
    list_logical_devices = staticmethod(list_logical_devices)
    get_visible_devices = staticmethod(get_visible_devices)
    set_visible_devices = staticmethod(set_visible_devices)
    set_memory_growth = staticmethod(_set_memory_growth)


experimental = _Experimental()

