"""The layers a functional model records for tf ops called on KerasTensors, as
tf_keras's: `TFOpLambda` (any op of the namespaces, NOTE(symbolic-dispatch) in
ops/__init__.py, and Python's operators) and `SlicingOpLambda` (indexing). Each config
names its op by its path under ``tf.`` and the node keeps the call's arguments, so a
model that uses them saves without code and tf_keras's files with them load.
"""

from __future__ import annotations

import inspect
import sys
from typing import Any, Callable

from .base_layer import Layer
from .common import unique_name

__all__ = ["TFOpLambda", "SlicingOpLambda", "op_at"]


class TFOpLambda(Layer):
    """A tf op called on KerasTensors, as tf_keras's layer of that name: its first
    argument is the layer's input and the others are the call's keyword arguments (each
    by its parameter's name), so the model's config names the op (`function`, its path
    under ``tf.``) and keeps its arguments, KerasTensors among them, in the node.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(2,), name="x")
        >>> y = tf.concat([x, tf.square(x)], axis=1)
        >>> y.shape, type(y.node.layer).__name__, y.node.layer.function
        (TensorShape([None, 4]), 'TFOpLambda', 'concat')
        >>> tf.keras.Model(x, y)(tf.constant([[1., 2.]])).numpy()
        array([[1., 2., 1., 4.]], dtype=float32)
    """

    _preserve_input_structure_in_config = True
    _convert_input_args = False  # the op converts its own (einsum's first is a string)

    def __init__(self, function: str, op: Callable | None = None, name: str | None = None,
                 **kwargs: Any) -> None:
        kwargs.pop("dtype", None)  # the op's arguments decide its dtype
        super().__init__(name=name or unique_name(f"tf.{function}"), **kwargs)
        self._autocast = False
        self.function = function
        self.op = op if op is not None else op_at(function)
        params = inspect.signature(self.op).parameters.values()
        self._varargs = any(p.kind is p.VAR_POSITIONAL for p in params)
        self._takes = {p.name for p in params}

    def _split(self, args: tuple, kwargs: dict) -> tuple[Any, dict]:
        """(the layer's input, its keyword arguments) for the op's call: its positional
        arguments by their parameters' names after the first; an op of a variable number
        of arguments takes all of them as the input, a list."""
        if self._varargs:
            return list(args), dict(kwargs)
        bound = inspect.signature(self.op).bind(*args, **kwargs).arguments
        (_, first), *rest = bound.items()
        return first, dict(rest)

    def _maybe_build(self, input_shape: Any) -> None:
        self.built = True  # no weights, and no input shape in its config (tf_keras's)

    def call(self, inputs: Any, **kwargs: Any) -> Any:
        # a model passes `training` (and a layer `mask`) to a call that takes **kwargs
        kwargs = {k: v for k, v in kwargs.items()
                  if k in self._takes or k not in ("training", "mask")}
        if self._varargs:
            return self.op(*inputs, **kwargs)
        return self.op(inputs, **kwargs)

    def get_config(self) -> dict:
        return dict(super().get_config(), function=self.function)


class SlicingOpLambda(TFOpLambda):
    """Indexing a KerasTensor (``x[:, 1:]``), as tf_keras's layer of that name: a
    TFOpLambda of ``__operators__.getitem`` whose `slice_spec` argument the config
    writes as tf_keras does (a slice as its start, stop and step).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(3,))
        >>> y = x[:, 1:]
        >>> type(y.node.layer).__name__, y.node.kwargs
        ('SlicingOpLambda', {'slice_spec': (slice(None, None, None), slice(1, None, None))})
    """


def op_at(path: str) -> Callable:
    """The op at `path` under tapeflow (a model's config names it so; tf_keras names
    Python's operators ``__operators__.add`` and ``__operators__.getitem``). A loaded
    file is hostile input: only the ops the namespaces and keras.backend export (their
    symbolic-dispatch wrappers) may be named, never another tapeflow callable (a loader,
    a saver) that the model's calls would then run with the file's arguments."""
    if path == "__operators__.getitem":
        return _getitem
    if path == "__operators__.add":
        path = "add"
    found: Any = sys.modules["tapeflow"]
    for part in path.split("."):
        found = getattr(found, part, None)
    if getattr(found, "symbolic_path", None) is None:
        raise ValueError(f"TFOpLambda: {path!r} names no op of tapeflow (tf.{path}).")
    return found


def _getitem(tensor: Any, slice_spec: Any) -> Any:
    """`tensor[slice_spec]` by tf_keras's argument names, reading a config's index as
    tf_keras writes it: a list for the tuple (TensorFlow's indices are never lists), a
    dict of start, stop and step for a slice, and its JSON's forms of those and of
    Ellipsis."""
    return tensor[_index(slice_spec)]


def _index(spec: Any) -> Any:
    if isinstance(spec, (list, tuple)):
        return tuple(_index(v) for v in spec)
    if isinstance(spec, dict):
        if spec.get("class_name") == "__ellipsis__":
            return Ellipsis
        parts = spec.get("config", {}) if spec.get("class_name") == "__slice__" else spec
        if set(parts) <= {"start", "stop", "step"}:
            return slice(parts.get("start"), parts.get("stop"), parts.get("step"))
        raise ValueError(f"TFOpLambda: {spec!r} is not an index.")
    return spec
