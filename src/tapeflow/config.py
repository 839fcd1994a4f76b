"""tf.config: whether traced functions run eagerly (for debugging), and tf.init_scope."""

from __future__ import annotations

import functools
import operator
from typing import Any, Callable

from .core import no_recorders

__all__ = ["run_functions_eagerly", "functions_run_eagerly", "init_scope"]

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
