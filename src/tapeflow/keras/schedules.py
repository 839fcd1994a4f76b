"""Learning-rate schedules (`tf.keras.optimizers.schedules`, Keras 2): callables of the
optimizer's step count, built from tapeflow ops so a traced training step evaluates
them on the `iterations` variable at every replay."""

from __future__ import annotations

from typing import Any

from .. import ops
from ..ops.convert import as_tensor

__all__ = ["LearningRateSchedule", "ExponentialDecay", "PiecewiseConstantDecay",
           "InverseTimeDecay", "serialize", "deserialize"]


class LearningRateSchedule:
    """The base of schedules: ``schedule(step)`` is the learning rate at `step` (an int or
    an integer tensor such as `optimizer.iterations`).

    Example:
        >>> import tapeflow as tf
        >>> class Halving(tf.keras.optimizers.schedules.LearningRateSchedule):
        ...     def __call__(self, step):
        ...         return 0.1 / (tf.cast(step, tf.float32) + 1.)
        ...     def get_config(self):
        ...         return {}
        >>> round(float(Halving()(1)), 6)
        0.05
    """

    def __call__(self, step: Any) -> Any:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  f"override `__call__(self, step)`.")

    def get_config(self) -> dict:
        raise NotImplementedError(f"Learning rate schedule '{type(self).__name__}' must "
                                  f"override `get_config()` in order to be serializable.")

    @classmethod
    def from_config(cls, config: dict) -> "LearningRateSchedule":
        """The schedule of a `get_config()` dict."""
        return cls(**config)


def _step(step: Any, who: str) -> Any:
    return as_tensor(step, who, "step")


def _positive(value: Any, who: str, arg: str) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise ValueError(f"{who}: `{arg}` must be a positive number; received {arg}={value!r}.")


class ExponentialDecay(LearningRateSchedule):
    """``initial_learning_rate * decay_rate ** (step / decay_steps)``; with `staircase`, the
    exponent is floored (the rate drops every `decay_steps` steps). Computed in float32 as
    TensorFlow does.

    Example:
        >>> import tapeflow as tf
        >>> lr = tf.keras.optimizers.schedules.ExponentialDecay(0.1, decay_steps=10, decay_rate=0.5)
        >>> float(lr(10)), float(lr(5))
        (0.05000000074505806, 0.0707106813788414)
        >>> stairs = tf.keras.optimizers.schedules.ExponentialDecay(0.1, 10, 0.5, staircase=True)
        >>> float(stairs(19))
        0.05000000074505806
    """

    def __init__(self, initial_learning_rate: float, decay_steps: int, decay_rate: float,
                 staircase: bool = False, name: str | None = None) -> None:
        _positive(decay_steps, "ExponentialDecay", "decay_steps")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps = decay_steps
        self.decay_rate = decay_rate
        self.staircase = bool(staircase)
        self.name = name

    def __call__(self, step: Any) -> Any:
        initial = as_tensor(self.initial_learning_rate, "ExponentialDecay",
                            "initial_learning_rate")
        dtype = initial.dtype
        p = ops.elementwise.cast(_step(step, "ExponentialDecay"), dtype) / \
            ops.elementwise.cast(self.decay_steps, dtype)
        if self.staircase:
            p = ops.elementwise.floor(p)
        return initial * ops.transcendental.pow(ops.elementwise.cast(self.decay_rate, dtype), p)

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class PiecewiseConstantDecay(LearningRateSchedule):
    """``values[0]`` for ``step <= boundaries[0]``, ``values[i]`` for
    ``boundaries[i-1] < step <= boundaries[i]``, and ``values[-1]`` after the last boundary.

    Example:
        >>> import tapeflow as tf
        >>> lr = tf.keras.optimizers.schedules.PiecewiseConstantDecay([10, 20], [1.0, 0.5, 0.1])
        >>> [float(lr(s)) for s in (0, 10, 11, 20, 21)]
        [1.0, 1.0, 0.5, 0.5, 0.10000000149011612]
    """

    def __init__(self, boundaries: list, values: list, name: str | None = None) -> None:
        boundaries, values = list(boundaries), list(values)
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"PiecewiseConstantDecay: the length of `boundaries` should be 1 "
                             f"less than the length of `values`; received {len(boundaries)} "
                             f"boundaries and {len(values)} values.")
        if any(b >= c for b, c in zip(boundaries[:-1], boundaries[1:], strict=True)):
            raise ValueError(f"PiecewiseConstantDecay: `boundaries` must increase; received "
                             f"{boundaries}.")
        self.boundaries, self.values, self.name = boundaries, values, name

    def __call__(self, step: Any) -> Any:
        step = _step(step, "PiecewiseConstantDecay")
        values = [as_tensor(v, "PiecewiseConstantDecay", "values") for v in self.values]
        out = values[0]
        for boundary, value in zip(self.boundaries, values[1:], strict=True):
            boundary = ops.elementwise.cast(boundary, step.dtype)
            out = ops.elementwise.where(ops.elementwise.greater(step, boundary), value, out)
        return out

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class InverseTimeDecay(LearningRateSchedule):
    """``initial_learning_rate / (1 + decay_rate * step / decay_steps)`` (the quotient
    floored with `staircase`).

    Example:
        >>> import tapeflow as tf
        >>> lr = tf.keras.optimizers.schedules.InverseTimeDecay(0.1, decay_steps=1., decay_rate=0.5)
        >>> float(lr(2))
        0.05000000074505806
    """

    def __init__(self, initial_learning_rate: float, decay_steps: float, decay_rate: float,
                 staircase: bool = False, name: str | None = None) -> None:
        _positive(decay_steps, "InverseTimeDecay", "decay_steps")
        self.initial_learning_rate = initial_learning_rate
        self.decay_steps, self.decay_rate = decay_steps, decay_rate
        self.staircase, self.name = bool(staircase), name

    def __call__(self, step: Any) -> Any:
        initial = as_tensor(self.initial_learning_rate, "InverseTimeDecay",
                            "initial_learning_rate")
        dtype = initial.dtype
        p = ops.elementwise.cast(_step(step, "InverseTimeDecay"), dtype) / \
            ops.elementwise.cast(self.decay_steps, dtype)
        if self.staircase:
            p = ops.elementwise.floor(p)
        return initial / (1 + ops.elementwise.cast(self.decay_rate, dtype) * p)

    def get_config(self) -> dict:
        """The constructor arguments."""
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


_SCHEDULES = {c.__name__: c for c in (ExponentialDecay, PiecewiseConstantDecay,
                                      InverseTimeDecay)}


def serialize(schedule: LearningRateSchedule) -> dict:
    """``{"class_name": ..., "config": ...}`` of a schedule.

    Example:
        >>> import tapeflow as tf
        >>> s = tf.keras.optimizers.schedules.PiecewiseConstantDecay([1], [1., 0.5])
        >>> tf.keras.optimizers.schedules.serialize(s)["class_name"]
        'PiecewiseConstantDecay'
    """
    return {"class_name": type(schedule).__name__, "config": schedule.get_config()}


def deserialize(config: dict, custom_objects: dict | None = None) -> LearningRateSchedule:
    """The schedule of a `serialize` dict.

    Example:
        >>> import tapeflow as tf
        >>> s = tf.keras.optimizers.schedules.deserialize(
        ...     {"class_name": "ExponentialDecay",
        ...      "config": {"initial_learning_rate": 1., "decay_steps": 1, "decay_rate": 0.5}})
        >>> float(s(1))
        0.5
    """
    known = dict(_SCHEDULES, **(custom_objects or {}))
    cls = known.get(config.get("class_name"))
    if cls is None:
        raise ValueError(f"Unknown learning rate schedule {config.get('class_name')!r}; known: "
                         f"{sorted(known)}.")
    return cls.from_config(config["config"])
