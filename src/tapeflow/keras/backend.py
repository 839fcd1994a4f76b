"""keras.backend: the backend functions Keras programs and guides call (tf_keras 2.21's
names and arguments), each a tapeflow op, and Keras' global settings: `floatx` (the
default dtype of layers, weights and inputs), `epsilon` and `image_data_format`.

The settings are the process's, as tf_keras's are; `clear_session` resets the layer name
counters (so a new model's layers are "dense", "dense_1", ... again), as tf_keras does.
"""

from __future__ import annotations

import builtins
import contextlib
from typing import Any, Iterator

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..module import name_scope as _name_scope
from ..ops.convert import as_tensor
from ..tensor import Tensor, TensorBase, Variable
from . import activations, losses
from .common import SYMBOLIC, reset_names

__all__ = ["floatx", "set_floatx", "epsilon", "set_epsilon", "image_data_format",
           "set_image_data_format", "clear_session", "learning_phase", "set_learning_phase",
           "is_keras_tensor", "int_shape", "shape", "ndim", "dtype", "count_params",
           "get_value", "set_value", "batch_get_value", "batch_set_value", "eval", "variable",
           "constant", "cast", "cast_to_floatx", "zeros", "ones", "eye", "zeros_like",
           "ones_like", "random_normal", "random_uniform", "random_bernoulli",
           "truncated_normal", "mean", "sum", "max", "min", "prod", "std", "var", "any", "all",
           "argmax", "argmin", "square", "sqrt", "exp", "log", "abs", "pow", "sign", "clip",
           "maximum", "minimum", "equal", "not_equal", "greater", "greater_equal", "less",
           "less_equal", "dot", "batch_dot", "transpose", "permute_dimensions", "reshape",
           "batch_flatten", "flatten", "expand_dims", "squeeze", "concatenate", "stack",
           "tile", "gather", "one_hot", "cumsum", "stop_gradient", "switch", "relu", "elu",
           "sigmoid", "hard_sigmoid", "tanh", "softplus", "softsign", "softmax",
           "l2_normalize", "binary_crossentropy", "categorical_crossentropy",
           "sparse_categorical_crossentropy", "name_scope"]

_SETTINGS = {"floatx": "float32", "epsilon": 1e-7, "image_data_format": "channels_last",
             "learning_phase": 0}


# ---------------------------------------------------------------- settings
def floatx() -> str:
    """The default float dtype of layers, weights and inputs, by name ("float32").

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.floatx()
        'float32'
    """
    return _SETTINGS["floatx"]


def set_floatx(value: Any) -> None:
    """Set the default float dtype ("float16", "bfloat16", "float32" or "float64") of the
    layers, weights and inputs made from now on.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.set_floatx("float64")
        >>> tf.keras.layers.Dense(2).dtype
        'float64'
        >>> tf.keras.backend.set_floatx("float32")
    """
    name = _dt.as_dtype(value).name if not isinstance(value, str) else value
    if name not in ("float16", "bfloat16", "float32", "float64"):
        raise ValueError(f"Unknown `floatx` value: {value!r}. Expected one of {{'float16', "
                         "'bfloat16', 'float32', 'float64'}")
    _SETTINGS["floatx"] = name


def epsilon() -> float:
    """The fuzz factor Keras adds to denominators (1e-7).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.epsilon()
        1e-07
    """
    return _SETTINGS["epsilon"]


def set_epsilon(value: float) -> None:
    """Set the fuzz factor `epsilon` returns."""
    _SETTINGS["epsilon"] = float(value)


def image_data_format() -> str:
    """The default `data_format` of image layers: "channels_last".

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.image_data_format()
        'channels_last'
    """
    return _SETTINGS["image_data_format"]


def set_image_data_format(data_format: str) -> None:
    """Set the default image data format ("channels_last" or "channels_first")."""
    if data_format not in ("channels_last", "channels_first"):
        raise ValueError(f"The `data_format` argument must be one of {{'channels_first', "
                         f"'channels_last'}}. Received: {data_format!r}")
    _SETTINGS["image_data_format"] = data_format


def clear_session() -> None:
    """Reset Keras' global state: the layer name counters start again, as tf_keras's.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.clear_session()
        >>> tf.keras.layers.Dense(1).name
        'dense'
    """
    reset_names()


def learning_phase() -> int:
    """0 (inference) or 1 (training): the phase layers use when no `training=` is given."""
    return _SETTINGS["learning_phase"]


def set_learning_phase(value: int) -> None:
    """Set the default learning phase (0 or 1), as tf_keras's deprecated global."""
    if value not in (0, 1):
        raise ValueError("Expected learning phase to be 0 or 1.")
    _SETTINGS["learning_phase"] = int(value)


@contextlib.contextmanager
def name_scope(name: str) -> Iterator[str]:
    """tf.name_scope under Keras' name."""
    with _name_scope(name) as scope:
        yield scope


# ---------------------------------------------------------------- tensors and variables
def is_keras_tensor(x: Any) -> bool:
    """Whether `x` is a symbolic KerasTensor of the functional API (keras.Input and the
    layers called on it); a ValueError for anything that is not a tensor, as tf_keras."""
    symbolic = SYMBOLIC[0]
    if symbolic is not None and symbolic[0](x):
        return True
    if not isinstance(x, TensorBase):
        raise ValueError(f"Unexpectedly found an instance of type `{type(x)}`. Expected a "
                         "symbolic tensor instance.")
    return False


def int_shape(x: Any) -> tuple:
    """The static shape of `x` as a tuple of ints (None where unknown).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.int_shape(tf.zeros([2, 3]))
        (2, 3)
    """
    return tuple(x.shape)


def shape(x: Any) -> Tensor:
    """The shape of `x` as a 1-D int32 tensor (tf.shape)."""
    return ops.creation.shape(x)


def ndim(x: Any) -> int:
    """The rank of `x`."""
    return len(x.shape)


def dtype(x: Any) -> str:
    """The dtype of `x`, by name."""
    return _dt.as_dtype(x.dtype).name


def count_params(x: Any) -> int:
    """The number of entries of `x`."""
    return int(np.prod(x.shape, dtype=np.int64))


def get_value(x: Any) -> Any:
    """The value of a variable or tensor as a NumPy array (its own copy).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.get_value(tf.Variable([1.0, 2.0]))
        array([1., 2.], dtype=float32)
    """
    if isinstance(x, (int, float, np.ndarray, np.generic)):
        return np.array(x)
    return np.array(x.numpy())


def batch_get_value(tensors: list) -> list:
    """`get_value` of each tensor."""
    return [get_value(t) for t in tensors]


def set_value(x: Variable, value: Any) -> None:
    """Assign `value` to variable `x` (an optimizer's learning rate, a weight).

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> tf.keras.backend.set_value(v, 3.0)
        >>> float(v)
        3.0
    """
    if not isinstance(x, Variable):
        raise TypeError(f"keras.backend.set_value: `x` must be a tf.Variable; received "
                        f"{type(x).__name__}.")
    x.assign(np.asarray(value, dtype=x.dtype.as_numpy_dtype))


def batch_set_value(tuples: list) -> None:
    """`set_value` for each (variable, value) pair."""
    for x, value in tuples:
        set_value(x, value)


eval = get_value  # noqa: A001 - tf_keras's name


def variable(value: Any, dtype: Any = None, name: str | None = None,
             constraint: Any = None) -> Variable:
    """A variable of `value` in `dtype` (floatx by default for floats)."""
    arr = np.asarray(value)
    if dtype is None and arr.dtype.kind in "fiub":
        dtype = floatx() if arr.dtype.kind == "f" or arr.dtype.kind in "iu" else None
    return Variable(arr, dtype=dtype, name=name, constraint=constraint)


def constant(value: Any, dtype: Any = None, shape: Any = None, name: str | None = None) -> Tensor:
    """tf.constant with floatx as the default dtype."""
    return ops.creation.fill(shape, value, dtype or floatx()) if shape is not None and \
        np.ndim(value) == 0 else as_tensor(np.asarray(value, _dt.as_dtype(dtype or floatx())._np),
                                           "constant", "value")


def cast(x: Any, dtype: Any) -> Tensor:
    """tf.cast."""
    return ops.elementwise.cast(x, dtype)


def cast_to_floatx(x: Any) -> np.ndarray:
    """`x` as a NumPy array of floatx."""
    return np.asarray(x, _dt.as_dtype(floatx())._np)


def zeros(shape: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """Zeros of `shape` (floatx by default)."""
    return ops.creation.zeros(shape, dtype or floatx())


def ones(shape: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """Ones of `shape` (floatx by default)."""
    return ops.creation.ones(shape, dtype or floatx())


def eye(size: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    """The identity matrix (size an int, or (rows, columns))."""
    rows, cols = (size, size) if np.ndim(size) == 0 else tuple(size)
    return ops.creation.eye(rows, cols, dtype=dtype or floatx())


def zeros_like(x: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    return ops.creation.zeros_like(x, dtype=dtype)


def ones_like(x: Any, dtype: Any = None, name: str | None = None) -> Tensor:
    return ops.creation.ones_like(x, dtype=dtype)


# ---------------------------------------------------------------- draws
def random_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                  seed: int | None = None) -> Tensor:
    """Normal draws of `shape` (floatx by default), as the Keras guides' VAE sampling layer
    draws its noise.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.backend.random_normal(shape=(2, 3)).shape
        TensorShape([2, 3])
    """
    return ops.random.normal(shape, mean, stddev, dtype or floatx(), seed=seed)


def random_uniform(shape: Any, minval: float = 0.0, maxval: float = 1.0, dtype: Any = None,
                   seed: int | None = None) -> Tensor:
    """Uniform draws in [minval, maxval) of `shape` (floatx by default)."""
    return ops.random.uniform(shape, minval, maxval, dtype or floatx(), seed=seed)


def random_bernoulli(shape: Any, p: float = 0.0, dtype: Any = None,
                     seed: int | None = None) -> Tensor:
    """1 with probability `p`, else 0, of `shape`."""
    u = ops.random.uniform(shape, 0.0, 1.0, dtype or floatx(), seed=seed)
    return ops.elementwise.cast(ops.elementwise.less(u, p), dtype or floatx())


def truncated_normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = None,
                     seed: int | None = None) -> Tensor:
    """Normal draws redrawn beyond two standard deviations (tf.random.truncated_normal)."""
    return ops.random.truncated_normal(shape, mean, stddev, dtype or floatx(), seed=seed)


# ---------------------------------------------------------------- math
def _reducer(op: Any) -> Any:
    def reduce(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:
        return op(x, axis=axis, keepdims=keepdims)
    reduce.__doc__ = f"{op.__name__} over `axis` (all by default)."
    return reduce


mean, sum, max, min = (_reducer(ops.reduction.reduce_mean), _reducer(ops.reduction.reduce_sum),  # noqa: A001
                       _reducer(ops.reduction.reduce_max), _reducer(ops.reduction.reduce_min))
prod, std, var = (_reducer(ops.reduction.reduce_prod), _reducer(ops.reduction.reduce_std),
                  _reducer(ops.reduction.reduce_variance))


def any(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Logical or over `axis` of `x` cast to bool."""
    return ops.reduction.reduce_any(ops.elementwise.cast(x, "bool"), axis=axis, keepdims=keepdims)


def all(x: Any, axis: Any = None, keepdims: bool = False) -> Tensor:  # noqa: A001
    """Logical and over `axis` of `x` cast to bool."""
    return ops.reduction.reduce_all(ops.elementwise.cast(x, "bool"), axis=axis, keepdims=keepdims)


def argmax(x: Any, axis: int = -1) -> Tensor:
    return ops.reduction.argmax(x, axis=axis)


def argmin(x: Any, axis: int = -1) -> Tensor:
    return ops.reduction.argmin(x, axis=axis)


square, sqrt, exp, log = (ops.elementwise.square, ops.elementwise.sqrt,
                          ops.transcendental.exp, ops.transcendental.log)
abs, sign = ops.complex.abs, ops.elementwise.sign  # noqa: A001
maximum, minimum = ops.elementwise.maximum, ops.elementwise.minimum
equal, not_equal, greater, greater_equal, less, less_equal = (
    ops.elementwise.equal, ops.elementwise.not_equal, ops.elementwise.greater,
    ops.elementwise.greater_equal, ops.elementwise.less, ops.elementwise.less_equal)


def pow(x: Any, a: Any) -> Tensor:  # noqa: A001
    return ops.transcendental.pow(x, a)


def clip(x: Any, min_value: Any, max_value: Any) -> Tensor:
    """`x` clipped to [min_value, max_value] (max_value below min_value is raised to it)."""
    if max_value is not None and min_value is not None and max_value < min_value:
        max_value = min_value
    return ops.elementwise.clip_by_value(x, -np.inf if min_value is None else min_value,
                                         np.inf if max_value is None else max_value)


def dot(x: Any, y: Any) -> Tensor:
    """Keras' dot: matmul over x's last and y's second-to-last axis (any ranks)."""
    x, y = as_tensor(x, "dot", "x"), as_tensor(y, "dot", "y")
    if len(x.shape) <= 2 and len(y.shape) <= 2:
        return ops.linalg.matmul(x, y)
    return ops.einsum.tensordot(x, y, [[len(x.shape) - 1], [builtins.max(len(y.shape) - 2, 0)]])


def batch_dot(x: Any, y: Any, axes: Any = None) -> Tensor:
    """Per example (axis 0) dot products of two batches of rank 2 or 3 over `axes`."""
    x, y = as_tensor(x, "batch_dot", "x"), as_tensor(y, "batch_dot", "y")
    rx, ry = len(x.shape), len(y.shape)
    if axes is None:
        axes = (rx - 1, ry - 2 if ry > 2 else ry - 1)
    ax, ay = (axes, axes) if isinstance(axes, int) else tuple(axes)
    if rx not in (2, 3) or ry not in (2, 3):
        raise ValueError(f"batch_dot: inputs of rank 2 or 3 are supported; got ranks {rx} and "
                         f"{ry}.")
    letters_x, letters_y = "bij"[:rx], "bkl"[:ry]
    letters_y = letters_y[:ay % ry] + letters_x[ax % rx] + letters_y[ay % ry + 1:]
    out = "".join(c for c in letters_x + letters_y if c != letters_x[ax % rx])
    out = "b" + "".join(dict.fromkeys(out.replace("b", "")))
    result = ops.einsum.einsum(f"{letters_x},{letters_y}->{out}", x, y)
    return ops.shape.expand_dims(result, 1) if len(result.shape) == 1 else result


def transpose(x: Any) -> Tensor:
    return ops.shape.transpose(x)


def permute_dimensions(x: Any, pattern: Any) -> Tensor:
    return ops.shape.transpose(x, list(pattern))


def reshape(x: Any, shape: Any) -> Tensor:
    return ops.shape.reshape(x, shape)


def batch_flatten(x: Any) -> Tensor:
    """`x` as (batch, everything else)."""
    return ops.shape.reshape(x, [-1, int(np.prod(x.shape[1:], dtype=np.int64))])


def flatten(x: Any) -> Tensor:
    return ops.shape.reshape(x, [-1])


def expand_dims(x: Any, axis: int = -1) -> Tensor:
    return ops.shape.expand_dims(x, axis)


def squeeze(x: Any, axis: int) -> Tensor:
    return ops.shape.squeeze(x, [axis])


def concatenate(tensors: list, axis: int = -1) -> Tensor:
    return ops.shape.concat(list(tensors), axis)


def stack(x: list, axis: int = 0) -> Tensor:
    return ops.shape.stack(list(x), axis)


def tile(x: Any, n: Any) -> Tensor:
    return ops.shape.tile(x, [n] if np.ndim(n) == 0 else list(n))


def gather(reference: Any, indices: Any) -> Tensor:
    return ops.indexing.gather(reference, indices)


def one_hot(indices: Any, num_classes: int) -> Tensor:
    return ops.creation.one_hot(indices, num_classes)


def cumsum(x: Any, axis: int = 0) -> Tensor:
    return ops.reduction.cumsum(x, axis=axis)


stop_gradient = ops.shape.stop_gradient


def switch(condition: Any, then_expression: Any, else_expression: Any) -> Any:
    """`then_expression` where `condition` holds, else `else_expression` (callables are
    called first); a scalar condition picks one whole."""
    then_value = then_expression() if callable(then_expression) else then_expression
    else_value = else_expression() if callable(else_expression) else else_expression
    return ops.elementwise.where(ops.elementwise.cast(condition, "bool"), then_value, else_value)


# ---------------------------------------------------------------- activations and losses
relu, elu, sigmoid, tanh = (activations.relu, activations.elu, activations.sigmoid,
                            activations.tanh)
softplus, softsign, hard_sigmoid = activations.softplus, activations.softsign, \
    activations.hard_sigmoid


def softmax(x: Any, axis: int = -1) -> Tensor:
    return ops.nn.softmax(x, axis=axis)


def l2_normalize(x: Any, axis: Any = None) -> Tensor:
    """`x` over its L2 norm along `axis` (at least sqrt(1e-12))."""
    x = as_tensor(x, "l2_normalize", "x")
    squares = ops.reduction.reduce_sum(x * x, axis=axis, keepdims=True)
    return x * ops.elementwise.rsqrt(ops.elementwise.maximum(squares, 1e-12))


def binary_crossentropy(target: Any, output: Any, from_logits: bool = False) -> Tensor:
    """Elementwise binary cross-entropy (no mean over the last axis, unlike
    keras.losses.binary_crossentropy), probabilities clipped to [epsilon, 1 - epsilon].

    Example:
        >>> import tapeflow as tf
        >>> round(float(tf.keras.backend.binary_crossentropy(tf.constant(1.0), tf.constant(0.5))), 5)
        0.69315
    """
    target = as_tensor(target, "binary_crossentropy", "target")
    output = as_tensor(output, "binary_crossentropy", "output")
    if from_logits:
        return ops.nn.sigmoid_cross_entropy_with_logits(labels=target, logits=output)
    eps = epsilon()
    p = ops.elementwise.clip_by_value(output, eps, 1.0 - eps)
    return -(target * ops.transcendental.log(p + eps)
             + (1 - target) * ops.transcendental.log(1 - p + eps))


def categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                             axis: int = -1) -> Tensor:
    """Cross-entropy of one-hot (or soft) targets along `axis`, per example."""
    return losses.categorical_crossentropy(target, output, from_logits=from_logits, axis=axis)


def sparse_categorical_crossentropy(target: Any, output: Any, from_logits: bool = False,
                                    axis: int = -1) -> Tensor:
    """Cross-entropy of integer targets, per example."""
    return losses.sparse_categorical_crossentropy(target, output, from_logits=from_logits,
                                                  axis=axis)


# The functions of tensors record a layer when called on KerasTensors, as tf_keras's do
# (NOTE(symbolic-dispatch) in ops/__init__.py); their examples still run (`__test__`).
_OF_TENSORS = ("cast", "cast_to_floatx", "zeros_like", "ones_like", "mean", "sum", "max",
               "min", "prod", "std", "var", "any", "all", "argmax", "argmin", "square", "sqrt",
               "exp", "log", "abs", "pow", "sign", "clip", "maximum", "minimum", "equal",
               "not_equal", "greater", "greater_equal", "less", "less_equal", "dot",
               "batch_dot", "transpose", "permute_dimensions", "reshape", "batch_flatten",
               "flatten", "expand_dims", "squeeze", "concatenate", "stack", "tile", "gather",
               "one_hot", "cumsum", "stop_gradient", "switch", "relu", "elu", "sigmoid",
               "hard_sigmoid", "tanh", "softplus", "softsign", "softmax", "l2_normalize",
               "binary_crossentropy", "categorical_crossentropy",
               "sparse_categorical_crossentropy")
__test__ = {_name: globals()[_name] for _name in _OF_TENSORS}
globals().update({_name: ops.symbolic_dispatch(globals()[_name], f"keras.backend.{_name}")
                  for _name in _OF_TENSORS})
