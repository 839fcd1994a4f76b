"""Helpers that several tapeflow.keras modules share: layer names, the layer class registry,
the hook that sends layer calls on KerasTensors to the functional API, what a `call`
method accepts, input checks, convolution arguments and sizes, and functions in configs.

They sit below every other keras module: this module imports none of them (the layer
and the spec `check_input` takes are read by attribute), so base_layer.py, the layer
modules, the models and the functional API can all import from here without an import
cycle. They are Keras' internals, not a part of the `tf.keras` namespace (whose
`keras.utils` is utils.py); several follow a tf_keras helper (noted in their docstrings).
"""

from __future__ import annotations

import codecs
import collections
import inspect
import marshal
import sys
import types
from typing import Any, Callable, Iterable, Sequence, TypeVar

import numpy as np

__all__ = ["LAYER_CLASSES", "SYMBOLIC", "MEAN_METRIC", "reset_names", "unique_name",
           "call_accepts", "dedup",
           "check_input", "normalize_tuple", "normalize_padding", "normalize_data_format",
           "conv_output_length", "function_config", "function_from_config"]

T = TypeVar("T")


# ---------------------------------------------------------------- registries and hooks
# class name -> class, for every public layer class of tapeflow.keras (Layer.__init_subclass__
# fills it; functional code adds its private op layer by hand): what
# serialization.deserialize looks `class_name` up in.
LAYER_CLASSES: dict[str, type] = {}

# The functional API's hook: functional_graph.py sets SYMBOLIC[0] to (is_symbolic,
# call_symbolic), and Layer.__call__ (and Sequential's) send a call on KerasTensors to
# call_symbolic, which records a node instead of computing. A hook, because the modules
# calling it cannot import the functional API, which builds on them. None until
# functional_graph.py is imported.
SYMBOLIC: list[Any] = [None]

# keras.metrics.Mean, which Layer.add_metric makes (metrics.py sets it: a metric is a
# layer, so the base layer cannot import the metrics).
MEAN_METRIC: list[Any] = [None]


# ---------------------------------------------------------------- names
_NAME_UIDS: collections.Counter = collections.Counter()


def reset_names() -> None:
    """Start every name counter again (keras.backend.clear_session)."""
    _NAME_UIDS.clear()


def unique_name(base: str, zero_based: bool = True) -> str:
    """Keras' default object names, counted per `base` for the whole process: "dense",
    then "dense_1", "dense_2", ... With ``zero_based=False`` the first name is already
    numbered ("input_1", "input_2", ...), as Keras names its inputs; both kinds of call
    count on one counter per base.

    Example:
        >>> unique_name("utils_example")
        'utils_example'
        >>> unique_name("utils_example")
        'utils_example_1'
        >>> unique_name("utils_example_input", zero_based=False)
        'utils_example_input_1'
    """
    if zero_based:
        n = _NAME_UIDS[base]
        _NAME_UIDS[base] += 1
        return base if n == 0 else f"{base}_{n}"
    _NAME_UIDS[base] += 1
    return f"{base}_{_NAME_UIDS[base]}"


# ---------------------------------------------------------------- calls and weights
_CALL_ARGS: dict[Any, tuple[bool, bool]] = {}


def call_accepts(call: Callable) -> tuple[bool, bool]:
    """Whether a layer's `call` takes a `training` and a `mask` argument, as the pair
    ``(takes_training, takes_mask)``; a ``**kwargs`` parameter takes both. The answer is
    cached per function (a bound method is looked up by its function), since layers ask
    at every call.

    Example:
        >>> def call(inputs, training=None):
        ...     return inputs
        >>> call_accepts(call)
        (True, False)
        >>> call_accepts(lambda inputs, **kwargs: inputs)
        (True, True)
    """
    key = getattr(call, "__func__", call)
    got = _CALL_ARGS.get(key)
    if got is None:
        try:
            params = inspect.signature(call).parameters
        except (TypeError, ValueError):
            params = {}
        varkw = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
        got = _CALL_ARGS[key] = ("training" in params or varkw, "mask" in params or varkw)
    return got


def dedup(items: Iterable[T]) -> list[T]:
    """The items in their order, each object once: a repeat of the same object (by
    identity, not equality) is dropped. Layers use it for weight lists, where a variable
    reached through two sublayers must be listed once.

    Example:
        >>> a, b = [1], [1]
        >>> dedup([a, b, a])   # a and b are equal, but two objects
        [[1], [1]]
        >>> len(dedup([a, a, a]))
        1
    """
    seen, out = set(), []
    for v in items:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out


# ---------------------------------------------------------------- input checks
def check_input(layer: Any, spec: Any, shape: Sequence[int | None]) -> None:
    """Raise Keras' ValueError when an input of `shape` does not fit `spec`, an
    `InputSpec` of `layer` (a Layer: the message names it, its class and its
    `_input_hint`). The spec's `ndim`, `min_ndim`, `max_ndim`, `axes` ({axis: size}) and
    `shape` are checked; an unknown (None) dim fits any size.

    Example:
        >>> import tapeflow as tf
        >>> dense = tf.keras.layers.Dense(2, name="d")
        >>> check_input(dense, tf.keras.layers.InputSpec(min_ndim=2), (None, 3))
        >>> check_input(dense, tf.keras.layers.InputSpec(min_ndim=2), (3,))
        Traceback (most recent call last):
        ValueError: Input 0 of layer "d" (Dense) is incompatible with the layer: expected
        min_ndim=2, found ndim=1. Full shape received: (3,). Dense expects inputs of shape
        (batch, ..., features).
    """
    ndim = len(shape)
    head = f'Input 0 of layer "{layer.name}" ({type(layer).__name__}) is incompatible with the layer'
    hint = f" {layer._input_hint}" if layer._input_hint else ""
    for key, ok in (("ndim", spec.ndim is None or ndim == spec.ndim),
                    ("min_ndim", spec.min_ndim is None or ndim >= spec.min_ndim),
                    ("max_ndim", spec.max_ndim is None or ndim <= spec.max_ndim)):
        if not ok:
            raise ValueError(f"{head}: expected {key}={getattr(spec, key)}, found ndim={ndim}. "
                             f"Full shape received: {tuple(shape)}.{hint}")
    for axis, value in spec.axes.items():
        if value is not None and -ndim <= axis < ndim and shape[axis] not in (value, None):
            raise ValueError(f"{head}: expected axis {axis} of input shape to have value {value}, "
                             f"but received input with shape {tuple(shape)}.")
    if spec.shape is not None:
        for want, got in zip(spec.shape, shape, strict=True):
            if want is not None and got is not None and want != got:
                raise ValueError(f"{head}: expected shape={spec.shape}, found shape={tuple(shape)}.")


# ---------------------------------------------------------------- convolution arguments
def normalize_tuple(value: Any, n: int, name: str, allow_zero: bool = False) -> tuple[int, ...]:
    """Keras' conv_utils.normalize_tuple: the argument `name` (a kernel size, strides, a
    pool size, a dilation rate) as a tuple of `n` ints, from one int or `n` of them. Each
    must be positive (>= 0 with `allow_zero`); anything else raises Keras' ValueError.

    Example:
        >>> normalize_tuple(3, 2, "kernel_size")
        (3, 3)
        >>> normalize_tuple([1, 2], 2, "strides")
        (1, 2)
        >>> normalize_tuple(0, 2, "strides")
        Traceback (most recent call last):
        ValueError: The `strides` argument must be a tuple of 2 integers. Received strides=0
        including {0} that does not satisfy the requirement `> 0`.
    """
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        values = (int(value),) * n
    else:
        try:
            values = tuple(value)
        except TypeError:
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received: {value!r}") from None
        if len(values) != n or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                       for v in values):
            raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. "
                             f"Received: {value!r}")
        values = tuple(int(v) for v in values)
    bad = [v for v in values if (v < 0 if allow_zero else v <= 0)]
    if bad:
        req = ">= 0" if allow_zero else "> 0"
        raise ValueError(f"The `{name}` argument must be a tuple of {n} integers. Received "
                         f"{name}={value!r} including {set(bad)} that does not satisfy the "
                         f"requirement `{req}`.")
    return values


def normalize_padding(value: Any) -> str:
    """Keras' conv_utils.normalize_padding: a `padding` argument in lower case, which must
    be "valid", "same" or "causal" (in any case); anything else raises Keras' ValueError.

    Example:
        >>> normalize_padding("SAME")
        'same'
    """
    padding = value.lower() if isinstance(value, str) else value
    if padding not in ("valid", "same", "causal"):
        raise ValueError(f'The `padding` argument must be one of "valid", "same" (or "causal", '
                         f"only for `Conv1D`). Received: {value!r}")
    return padding


def normalize_data_format(value: Any) -> str:
    """Keras' conv_utils.normalize_data_format: a `data_format` argument in lower case,
    "channels_last" (also for None, Keras' default) or "channels_first"; anything else
    raises Keras' ValueError.

    Example:
        >>> normalize_data_format(None), normalize_data_format("Channels_First")
        ('channels_last', 'channels_first')
    """
    data_format = "channels_last" if value is None else str(value).lower()
    if data_format not in ("channels_first", "channels_last"):
        raise ValueError(f'The `data_format` argument must be one of "channels_first", '
                         f'"channels_last". Received: {value!r}')
    return data_format


def conv_output_length(n: int | None, k: int, padding: str, stride: int,
                       dilation: int = 1) -> int | None:
    """Keras' conv_utils.conv_output_length: the size of a convolution's or pooling's
    output along one axis, for an input of size `n` (None when unknown, which gives
    None), a window of `k` with `dilation`, `padding` "valid" or "same", and `stride`.

    Example:
        >>> conv_output_length(28, 3, "valid", 1), conv_output_length(28, 3, "same", 2)
        (26, 14)
        >>> conv_output_length(None, 3, "valid", 1) is None
        True
    """
    if n is None:
        return None
    span = (k - 1) * dilation + 1
    out = n if padding == "same" else n - span + 1
    return (out + stride - 1) // stride


# ---------------------------------------------------------------- functions in configs
def function_config(fn: Any, allow_raw: bool = False) -> tuple[Any, str, str | None]:
    """``(value, type, module)`` for a function in a layer's config, as tf_keras' Lambda
    writes it: a Python function as its marshalled code, defaults and closure (type
    "lambda"), another callable by its name (type "function"), and, with `allow_raw`,
    any other value as it is (type "raw"). `function_from_config` reads it back.

    Example:
        >>> function_config(abs)
        ('abs', 'function', 'builtins')
        >>> function_config((4, 2), allow_raw=True)
        ((4, 2), 'raw', None)
        >>> function_config(lambda x: x + 1)[1]
        'lambda'
    """
    if isinstance(fn, types.FunctionType):  # tf_keras' func_dump: code, defaults, closure
        code = codecs.encode(marshal.dumps(fn.__code__), "base64").decode("ascii")
        closure = tuple(c.cell_contents for c in fn.__closure__) if fn.__closure__ else None
        return (code, fn.__defaults__, closure), "lambda", fn.__module__
    if callable(fn):
        return fn.__name__, "function", getattr(fn, "__module__", None)
    if allow_raw:
        return fn, "raw", None
    raise ValueError(f"Invalid input for serialization, type: {type(fn)} ")


def function_from_config(config: dict, custom_objects: dict | None, key: str,
                         module_key: str, type_key: str) -> Any:
    """The function `function_config` saved in `config` under `key`, with its module
    under `module_key` and its type under `type_key` (both popped from `config`). A
    function saved by name is looked up in its module's globals, then `custom_objects`;
    one saved as code is rebuilt with those globals. As in tf_keras, that code runs when
    the function is called: read configs you trust only.

    Example:
        >>> value, kind, module = function_config(lambda x: x + 1)
        >>> config = {"fn": value, "fn_type": kind, "fn_module": module}
        >>> function_from_config(config, None, "fn", "fn_module", "fn_type")(2)
        3
        >>> sorted(config)   # the type and module were popped
        ['fn']
    """
    module = config.pop(module_key, None)
    kind = config.pop(type_key, "raw")
    value = config.get(key)
    if kind == "raw":
        return value
    scope = dict(vars(sys.modules[module])) if module in sys.modules else {}
    scope.update(custom_objects or {})
    if kind == "function":
        if value not in scope:
            raise ValueError(f"Lambda.from_config: unknown function {value!r} (module "
                             f"{module!r}); pass it in custom_objects={{{value!r}: fn}}.")
        return scope[value]
    if kind == "lambda":
        code, defaults, closure = value
        cells = None if closure is None else tuple(types.CellType(v) for v in closure)
        code = marshal.loads(codecs.decode(code.encode("ascii"), "base64"))
        return types.FunctionType(code, scope, code.co_name,
                                  None if defaults is None else tuple(defaults), cells)
    raise TypeError(f"Unsupported value for `{type_key}` argument. Received: "
                    f"{type_key}={kind}. Expected one of ['function', 'lambda', 'raw']")
