"""Host callbacks: tf.print, whose printing is a stateful primitive, so a traced
function prints at every replay (not only while tracing), as TensorFlow's does.
"""

from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np

from . import nest
from .catalog import HOST_CALLBACK, NO_DERIVATIVE, STATEFUL, Codec, define
from .core import Primitive, bind
from .scopes import emit, quiet
from .tensor import TensorBase, Variable

__all__ = ["print_"]


class _Slot:
    """Where the i-th tensor goes in the printed template."""

    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i

    # Equal slots make equal templates: two traces of one tf.print are the same node
    # (graph/polymorphic.py compares them).
    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Slot) and other.i == self.i

    def __hash__(self) -> int:
        return hash(("_Slot", self.i))


def _element(v: Any) -> str:
    kind = v.dtype.kind
    if kind == "b":
        return "1" if v else "0"
    if kind == "f":
        f = float(v)
        if f.is_integer() and abs(f) < 1e16:  # TensorFlow prints 2.0 as 2
            return str(int(f))
        return str(v)  # NumPy's shortest form for the dtype: float32 0.1 is "0.1"
    if kind == "S":
        return v.decode(errors="replace")
    return str(v)


def format_value(a: np.ndarray, summarize: int, indent: int = 1) -> str:
    """TensorFlow's tf.print form of an array: elements by spaces, rows on new lines,
    `summarize` elements at each end of a longer axis (-1: all)."""
    if a.ndim == 0:
        return _element(a[()])
    n = a.shape[0]
    if 0 <= summarize < n and n > 2 * summarize:
        index: list = list(range(summarize)) + [None] + list(range(n - summarize, n))
    else:
        index = list(range(n))
    parts = ["..." if i is None else format_value(a[i], summarize, indent + 1) for i in index]
    if a.ndim == 1:
        return "[" + " ".join(parts) + "]"
    return "[" + ("\n" + " " * indent).join(parts) + "]"


def _format(obj: Any, values: tuple, summarize: int, top: bool) -> str:
    if isinstance(obj, _Slot):
        return format_value(np.asarray(values[obj.i]), summarize)
    if isinstance(obj, dict):
        return "{" + ", ".join(f"{k!r}: {_format(v, values, summarize, False)}"
                               for k, v in obj.items()) + "}"
    if isinstance(obj, list):
        return "[" + ", ".join(_format(v, values, summarize, False) for v in obj) + "]"
    if isinstance(obj, tuple):
        return "(" + ", ".join(_format(v, values, summarize, False) for v in obj) + ")"
    if isinstance(obj, str):
        return obj if top else repr(obj)  # a message as is; a string inside a structure quoted
    return str(obj)


def _print_impl(*values: np.ndarray, template: tuple, sep: str, end: str, stream: Any,
                summarize: int) -> np.ndarray:
    if quiet():  # a trace that is no call prints nothing (scopes.py)
        return np.zeros((), np.float32)
    text = sep.join(_format(item, values, summarize, True) for item in template) + end
    emit(_writer(stream), text)  # held by a replay until its guards pass (scopes.py)
    return np.zeros((), np.float32)  # no value: the primitive exists for its effect


def _writer(stream: Any) -> Callable[[str], Any]:
    if stream is None or stream == "stderr":
        return lambda text: sys.stderr.write(text)  # looked up at each print: pytest swaps it
    if stream == "stdout":
        return lambda text: sys.stdout.write(text)
    if isinstance(stream, str) and stream.startswith("file://"):
        def append(text: str) -> None:
            with open(stream[len("file://"):], "a") as fh:
                fh.write(text)
        return append
    return stream.write


class _Text:
    """A printed object of a loaded template, as it printed where it was saved."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Text) and other.text == self.text

    def __hash__(self) -> int:
        return hash(("_Text", self.text))


def _plain_template(obj: Any) -> Any:
    """A template as tagged tuples of plain data (a SavedModel holds it so): an object
    that is no number or string as the text it prints."""
    if isinstance(obj, _Slot):
        return ("slot", obj.i)
    if isinstance(obj, dict):
        return ("dict", tuple((_plain_template(k), _plain_template(v)) for k, v in obj.items()))
    if type(obj) in (list, tuple):
        return (type(obj).__name__, tuple(_plain_template(v) for v in obj))
    if obj is None or type(obj) in (bool, int, float, str):
        return ("value", obj)
    return ("text", str(obj))


def _live_template(t: Any) -> Any:
    if type(t) is not tuple or len(t) != 2:
        raise ValueError(f"a print template holds {t!r:.40}")
    tag, v = t
    if tag == "slot" and type(v) is int:
        return _Slot(v)
    if tag == "dict":
        return {_live_template(k): _live_template(x) for k, x in v}
    if tag in ("list", "tuple") and type(v) is tuple:
        items = [_live_template(x) for x in v]
        return items if tag == "list" else tuple(items)
    if tag == "value" and (v is None or type(v) in (bool, int, float, str)):
        return v
    if tag == "text" and type(v) is str:
        return _Text(v)
    raise ValueError(f"a print template holds {t!r:.40}")


def _save_print(params: dict) -> dict:
    stream = params["stream"]
    if not (stream is None or stream in ("stdout", "stderr") or
            (isinstance(stream, str) and stream.startswith("file://"))):
        raise ValueError("it prints to a Python file object; a SavedModel prints to "
                         "sys.stdout, sys.stderr or a 'file://path' (as TensorFlow's).")
    return dict(params, template=tuple(_plain_template(t) for t in params["template"]))


def _load_print(params: dict) -> dict:
    stream = params["stream"]
    if not (stream is None or stream in ("stdout", "stderr") or
            (isinstance(stream, str) and stream.startswith("file://"))):
        raise ValueError(f"the print's stream is {stream!r:.40}")
    return dict(params, template=tuple(_live_template(t) for t in params["template"]))


# Stateful: graph passes never drop or merge it, so every replay prints; no derivative.
print_p = define(Primitive("print", _print_impl,
                           effects=(NO_DERIVATIVE, STATEFUL, HOST_CALLBACK)),
                 batch=lambda vals, dims, **params: (bind(print_p, *vals, **params), None),
                 save=Codec(_save_print, _load_print))


def print_(*inputs: Any, output_stream: Any = None, summarize: int = 3, sep: str = " ",
           end: str = "\n", name: str | None = None) -> None:
    """tf.print: print tensors (and any Python values and structures around them) as
    TensorFlow does, at every call of a traced function too; to stderr by default
    (`output_stream`: sys.stdout, sys.stderr, a file-like object or "file://path").

    Example:
        >>> import sys, tapeflow as tf
        >>> tf.print(tf.constant([1.0, 2.5]), "step", {"n": tf.constant(3)},
        ...          output_stream=sys.stdout)
        [1 2.5] step {'n': 3}
    """
    if not isinstance(summarize, (int, np.integer)) or isinstance(summarize, bool):
        raise TypeError(f"print: `summarize` must be an int; got {summarize!r}.")
    tensors: list = []

    def mark(x: Any) -> Any:
        if isinstance(x, TensorBase):
            tensors.append(x.value() if isinstance(x, Variable) else x)
            return _Slot(len(tensors) - 1)
        if isinstance(x, np.ndarray):
            tensors.append(x)
            return _Slot(len(tensors) - 1)
        return x

    template = tuple(nest.map_structure(mark, item) for item in inputs)
    if output_stream is sys.stderr:
        output_stream = "stderr"
    elif output_stream is sys.stdout:
        output_stream = "stdout"
    bind(print_p, *tensors, template=template, sep=sep, end=end, stream=output_stream,
         summarize=int(summarize))
