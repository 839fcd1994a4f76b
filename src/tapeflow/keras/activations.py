"""Keras activations (tf.keras / Keras 2 names, arguments and behaviour).

Each is a plain function of a tensor, built from tapeflow ops, so every one is
differentiable in both modes and batches under `vmap`. `get` turns a name, None
(linear) or a callable into an activation function; a layer's ``activation=``
argument goes through it.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import ops
from ..ops.convert import as_tensor
from .utils import with_custom

__all__ = ["elu", "exponential", "gelu", "hard_sigmoid", "leaky_relu", "linear", "log_softmax",
           "mish", "relu", "relu6", "selu", "sigmoid", "silu", "softmax", "softplus", "softsign",
           "swish", "tanh", "get", "serialize", "deserialize"]


def _float(x: Any, who: str) -> Any:
    return as_tensor(x, f"keras.activations.{who}", "x")


def relu(x: Any, alpha: float = 0.0, max_value: float | None = None,
         threshold: float = 0.0) -> Any:
    """Rectified linear unit: ``max(x, 0)``; with `alpha`, ``alpha * (x - threshold)``
    below `threshold`; with `max_value`, clipped at it; with `threshold`, values
    at or below it become 0 (Keras 2's `relu`).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([-10., -5., 0., 5., 10.])
        >>> tf.keras.activations.relu(x).numpy()
        array([ 0.,  0.,  0.,  5., 10.], dtype=float32)
        >>> tf.keras.activations.relu(x, alpha=0.5).numpy()
        array([-5. , -2.5,  0. ,  5. , 10. ], dtype=float32)
        >>> tf.keras.activations.relu(x, max_value=5.).numpy()
        array([0., 0., 0., 5., 5.], dtype=float32)
        >>> tf.keras.activations.relu(x, threshold=5.).numpy()
        array([-0., -0.,  0.,  0., 10.], dtype=float32)
    """
    x = _float(x, "relu")
    negative_part = None
    if alpha != 0.0:
        if max_value is None and threshold == 0:
            return ops.nn.leaky_relu(x, alpha=alpha)
        negative_part = ops.nn.relu(-x + threshold) if threshold != 0 else ops.nn.relu(-x)
    clip_max = max_value is not None
    if threshold != 0:
        x = x * ops.elementwise.cast(ops.elementwise.greater(x, threshold), x.dtype)  # x above threshold, else 0
    elif max_value == 6:
        x = ops.nn.relu6(x)
        clip_max = False
    else:
        x = ops.nn.relu(x)
    if clip_max:
        x = ops.elementwise.clip_by_value(x, 0, max_value)
    if negative_part is not None:
        x = x - alpha * negative_part
    return x


def sigmoid(x: Any) -> Any:
    """``1 / (1 + exp(-x))``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.sigmoid(tf.constant([-20., 0., 20.])).numpy()
        array([2.0611537e-09, 5.0000000e-01, 1.0000000e+00], dtype=float32)
    """
    return ops.transcendental.sigmoid(x)


def tanh(x: Any) -> Any:
    """Hyperbolic tangent.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.tanh(tf.constant([-1., 0., 1.])).numpy()
        array([-0.7615942,  0.       ,  0.7615942], dtype=float32)
    """
    return ops.transcendental.tanh(x)


def softmax(x: Any, axis: int = -1) -> Any:
    """``exp(x) / sum(exp(x))`` along `axis` (an int, or a tuple of ints); as Keras 2,
    a rank-1 input is an error (softmax over a batch of scalars is usually a bug).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.softmax(tf.constant([[0., 0.6931472]])).numpy()
        array([[0.33333334, 0.6666667 ]], dtype=float32)
    """
    x = _float(x, "softmax")
    if x.ndim <= 1:
        raise ValueError(f"Cannot apply softmax to a tensor that is 1D. Received input: "
                         f"shape {tuple(x.shape)}.")
    if isinstance(axis, int):
        return ops.nn.softmax(x, axis=axis)
    axis = list(axis)
    numerator = ops.transcendental.exp(x - ops.reduction.reduce_max(x, axis=axis, keepdims=True))
    return numerator / ops.reduction.reduce_sum(numerator, axis=axis, keepdims=True)


def log_softmax(x: Any, axis: int = -1) -> Any:
    """``x - log(sum(exp(x)))`` along `axis`, computed stably (tf.nn.log_softmax).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.log_softmax(tf.constant([[0., 0.]])).numpy()
        array([[-0.6931472, -0.6931472]], dtype=float32)
    """
    return ops.nn.log_softmax(x, axis=axis)


def softplus(x: Any) -> Any:
    """``log(exp(x) + 1)``, computed without overflow.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.softplus(tf.constant([-20., 0., 20.])).numpy()
        array([2.0611537e-09, 6.9314718e-01, 2.0000000e+01], dtype=float32)
    """
    return ops.transcendental.softplus(x)


def softsign(x: Any) -> Any:
    """``x / (abs(x) + 1)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.softsign(tf.constant([-1., 0., 1.])).numpy()
        array([-0.5,  0. ,  0.5], dtype=float32)
    """
    x = _float(x, "softsign")
    return x / (ops.complex.abs(x) + 1)


def elu(x: Any, alpha: float = 1.0) -> Any:
    """Exponential linear unit: x where x > 0, ``alpha * (exp(x) - 1)`` elsewhere.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.elu(tf.constant([-1., 2.]), alpha=2.).numpy()
        array([-1.2642411,  2.       ], dtype=float32)
    """
    x = _float(x, "elu")
    res = ops.nn.elu(x)
    if alpha == 1:
        return res
    return ops.elementwise.where(ops.elementwise.greater(x, 0), res, alpha * res)


def selu(x: Any) -> Any:
    """Scaled exponential linear unit (tf.nn.selu), for self-normalizing networks
    (with the `lecun_normal` initializer).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.selu(tf.constant([-1., 0., 1.])).numpy()
        array([-1.1113307,  0.       ,  1.050701 ], dtype=float32)
    """
    return ops.nn.selu(x)


def gelu(x: Any, approximate: bool = False) -> Any:
    """Gaussian error linear unit ``x * Phi(x)``; with `approximate`, its tanh form
    (tf.nn.gelu).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.gelu(tf.constant([-1., 0., 1.])).numpy()
        array([-0.15865526,  0.        ,  0.8413448 ], dtype=float32)
    """
    return ops.nn.gelu(x, approximate=approximate)


def swish(x: Any) -> Any:
    """``x * sigmoid(x)`` (also called SiLU).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.swish(tf.constant([-1., 0., 1.])).numpy().round(6)
        array([-0.268941,  0.      ,  0.731059], dtype=float32)
    """
    x = _float(x, "swish")
    return x * ops.transcendental.sigmoid(x)


silu = swish


def mish(x: Any) -> Any:
    """``x * tanh(softplus(x))``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.mish(tf.constant([-1., 0., 1.])).numpy()
        array([-0.30340147,  0.        ,  0.8650984 ], dtype=float32)
    """
    x = _float(x, "mish")
    return x * ops.transcendental.tanh(ops.transcendental.softplus(x))


def exponential(x: Any) -> Any:
    """``exp(x)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.exponential(tf.constant([0., 1.])).numpy()
        array([1.      , 2.718282], dtype=float32)
    """
    return ops.transcendental.exp(x)


def hard_sigmoid(x: Any) -> Any:
    """Piecewise-linear sigmoid (Keras 2's): ``clip(0.2 x + 0.5, 0, 1)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.hard_sigmoid(tf.constant([-3., 0., 1., 3.])).numpy()
        array([0. , 0.5, 0.7, 1. ], dtype=float32)
    """
    x = _float(x, "hard_sigmoid")
    return ops.elementwise.clip_by_value(x * 0.2 + 0.5, 0, 1)


def leaky_relu(x: Any, alpha: float = 0.2) -> Any:
    """x where x > 0, ``alpha * x`` elsewhere (tf.nn.leaky_relu).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.leaky_relu(tf.constant([-2., 3.])).numpy()
        array([-0.4,  3. ], dtype=float32)
    """
    return ops.nn.leaky_relu(x, alpha=alpha)


def relu6(x: Any) -> Any:
    """``min(max(x, 0), 6)`` (tf.nn.relu6).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.relu6(tf.constant([-1., 3., 8.])).numpy()
        array([0., 3., 6.], dtype=float32)
    """
    return ops.nn.relu6(x)


def linear(x: Any) -> Any:
    """The identity: returns `x` unchanged.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.linear(tf.constant([-1., 2.])).numpy()
        array([-1.,  2.], dtype=float32)
    """
    return x


_BY_NAME: dict[str, Callable] = {f.__name__: f for f in (
    elu, exponential, gelu, hard_sigmoid, leaky_relu, linear, log_softmax, mish, relu, relu6,
    selu, sigmoid, softmax, softplus, softsign, swish, tanh)}
_BY_NAME["silu"] = swish


def serialize(activation: Callable) -> str:
    """The name of a built-in activation.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.serialize(tf.keras.activations.tanh)
        'tanh'
    """
    name = getattr(activation, "__name__", None)
    if _BY_NAME.get(name) is activation:
        return name
    raise ValueError(f"Unknown activation function {activation!r} cannot be serialized.")


def _config(activation: Callable) -> Any:
    """What a layer's config holds for its activation: the name of a built-in one; a
    function of the user's as itself (it has no name Keras could look up)."""
    name = getattr(activation, "__name__", None)
    return name if _BY_NAME.get(name) is activation else activation


def deserialize(name: str, custom_objects: dict | None = None) -> Callable:
    """The activation function of a name.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.deserialize("relu") is tf.keras.activations.relu
        True
    """
    fn = with_custom(custom_objects).get(name) or _BY_NAME.get(name)
    if fn is None:
        raise ValueError(f"Unknown activation function {name!r} cannot be deserialized; "
                         f"known: {sorted(_BY_NAME)}.")
    return fn


def get(identifier: Any) -> Callable:
    """An activation function from a name, None (linear) or a callable.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.activations.get("relu") is tf.keras.activations.relu
        True
        >>> float(tf.keras.activations.get(None)(tf.constant(-3.)))
        -3.0
    """
    if identifier is None:
        return linear
    if isinstance(identifier, str):
        return deserialize(identifier)
    if isinstance(identifier, dict) and "class_name" in identifier:
        return deserialize(identifier["class_name"])
    if callable(identifier):
        return identifier
    raise TypeError(f"Could not interpret activation function identifier: {identifier!r}.")
