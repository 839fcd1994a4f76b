"""Neural-network ops composed of others: moments, weighted_moments, normalize_moments,
batch_normalization, l2_normalize, dropout, silu/swish, softsign.

Each is TensorFlow's formula written with earlier families' ops, so its derivative,
batching, compiled and size-generic rules are theirs; no primitive is defined here.
Two choices follow TensorFlow to the rounding:

- float16 moments are computed in float32 and cast back (TensorFlow's moments and
  weighted_moments do; bfloat16 is not cast, as there);
- `l2_normalize` is x * rsqrt(max(sum(x**2), epsilon)), epsilon at x's precision (so a
  zero float16 vector gives NaN, as TensorFlow's: 1e-12 rounds to 0 in float16).

`dropout` draws from tf.random's sequences (NOTE(draws) in ops/random.py) in the shape
read from x when the op runs, so a seed, tf.random.set_seed, a traced function's replays
(which draw again) and a size-generic trace behave as the other draws.
"""

from __future__ import annotations

import numbers
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .complex import abs as _abs
from .complex import complex as _complex
from .complex import imag, real, squared_difference
from .convert import as_tensor, binary_args, check_dtype, convert_like, int_list, normalize_axis
from .elementwise import (add, cast, divide, greater_equal, maximum, multiply, negative,
                          not_equal, reciprocal, rsqrt, square, subtract, where)
from .random import _seeds, standard_normal_p, uniform_p
from .reduction import reduce_mean, reduce_sum
from .shape import squeeze, stop_gradient
from .structural import ones_of, shape_of, shape_source, zeros_of
from .transcendental import sigmoid

FLOAT = "f"


def _float_arg(x: Any, op: str, arg: str, kinds: str = FLOAT) -> Tensor:
    t = as_tensor(x, op, arg)
    check_dtype(t, kinds, op, arg)
    return t


def _operand(value: Any, like: Tensor, op: str, arg: str) -> Tensor:
    """A tensor keeps its dtype (mixing dtypes then raises, as TensorFlow); a Python or
    NumPy value takes `like`'s."""
    if isinstance(value, TensorBase):
        return as_tensor(value, op, arg)
    return convert_like(value, like, op, arg)


def _axes(x: Tensor, axes: Any, op: str) -> tuple | None:
    return normalize_axis(axes, len(shape_of(x)), op, "axes")


def _drop_axes(t: Tensor, axes: tuple | None) -> Tensor:
    """A keepdims reduction's result without its reduced axes (none reduced: unchanged)."""
    if axes is None:
        return squeeze(t)
    return squeeze(t, axis=list(axes)) if axes else t


# ================================================================== moments
def moments(x: Any, axes: Any, shift: Any = None, keepdims: bool = False,
            name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and the (biased) variance of `x` over `axes`: mean(x) and
    mean((x - mean(x))**2), the mean inside the variance carrying no gradient of its own
    (as TensorFlow's: the variance's gradient is then exact, 2 (x - mean) / n).

    `axes` is an int or a list of ints (negative count from the end; None: every axis);
    `shift` is accepted and unused, as TensorFlow's. float16 is computed in float32 and
    cast back; integer inputs give TensorFlow's integer means. An empty `axes` reduces
    nothing: the mean is x and the variance 0 in x's shape (TensorFlow then also drops
    x's axes of length 1, an accident of its squeeze; tapeflow keeps them).

    Example:
        >>> import tapeflow as tf
        >>> mean, variance = tf.nn.moments(tf.constant([[1., 2.], [3., 6.]]), axes=[0])
        >>> mean.numpy(), variance.numpy()
        (array([2., 4.], dtype=float32), array([1., 4.], dtype=float32))
    """
    op = "moments"
    t = _float_arg(x, op, "x", "fciu")
    ax = _axes(t, axes, op)
    low = t._value.dtype == np.float16
    y = cast(t, _dt.float32) if low else t
    mean = reduce_mean(y, ax, keepdims=True)
    variance = reduce_mean(squared_difference(y, stop_gradient(mean)), ax, keepdims=True)
    if not keepdims:
        mean, variance = _drop_axes(mean, ax), _drop_axes(variance, ax)
    if low:
        return cast(mean, _dt.float16), cast(variance, _dt.float16)
    return mean, variance


def _safe_divide(num: Tensor, den: Tensor) -> Tensor:
    """num / den, 0 where den is 0 with a zero gradient there (TensorFlow's div_no_nan)."""
    nonzero = not_equal(den, 0)
    safe = where(nonzero, den, ones_of(den))
    return where(nonzero, divide(num, safe), zeros_of(num))


def weighted_moments(x: Any, axes: Any, frequency_weights: Any, keepdims: bool = False,
                     name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and variance of `x` over `axes`, each element counted
    `frequency_weights` times (the weights broadcast against x and are cast to its dtype):
    sum(w x) / sum(w) and sum(w (x - mean)**2) / sum(w), 0 where the weights sum to 0.

    As TensorFlow's, the mean inside the variance carries its gradient (unlike
    `moments`), and float16 is computed in float32 and cast back.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[1., 2., 6.], [3., 5., 9.]])
        >>> mean, variance = tf.nn.weighted_moments(x, [1], tf.constant([[1.], [0.]]))
        >>> mean.numpy(), variance.numpy()
        (array([3., 0.], dtype=float32), array([4.6666665, 0.       ], dtype=float32))
    """
    op = "weighted_moments"
    t = _float_arg(x, op, "x", "fc")
    ax = _axes(t, axes, op)
    low = t._value.dtype == np.float16
    y = cast(t, _dt.float32) if low else t
    w = as_tensor(frequency_weights, op, "frequency_weights")
    check_dtype(w, "fciub", op, "frequency_weights")
    w = cast(w, y.dtype)
    try:
        np.broadcast_shapes(shape_of(y), shape_of(w))
    except ValueError:
        raise InvalidArgumentError(f"{op}: `frequency_weights` of shape {shape_of(w)} does not "
                                   f"broadcast against `x` of shape {shape_of(y)}.") from None
    total = reduce_sum(add(w, zeros_of(y)), ax, keepdims=True)
    mean = _safe_divide(reduce_sum(multiply(w, y), ax, keepdims=True), total)
    spread = reduce_sum(multiply(w, squared_difference(y, mean)), ax, keepdims=True)
    variance = _safe_divide(spread, total)
    if not keepdims:
        mean, variance = _drop_axes(mean, ax), _drop_axes(variance, ax)
    if low:
        return cast(mean, _dt.float16), cast(variance, _dt.float16)
    return mean, variance


def normalize_moments(counts: Any, mean_ss: Any, variance_ss: Any, shift: Any,
                      name: str | None = None) -> tuple[Tensor, Tensor]:
    """The mean and variance from sufficient statistics: with d = 1 / counts, the
    mean is mean_ss * d (+ shift when `shift` is not None) and the variance
    variance_ss * d - (mean_ss * d)**2.

    Example:
        >>> import tapeflow as tf
        >>> mean, variance = tf.nn.normalize_moments(4., tf.constant([4., 8.]),
        ...                                          tf.constant([10., 20.]), None)
        >>> mean.numpy(), variance.numpy()
        (array([1., 2.], dtype=float32), array([1.5, 1. ], dtype=float32))
    """
    op = "normalize_moments"
    m = _float_arg(mean_ss, op, "mean_ss", "fc")
    v = _operand(variance_ss, m, op, "variance_ss")
    divisor = reciprocal(_operand(counts, m, op, "counts"))
    shifted_mean = multiply(m, divisor)
    mean = shifted_mean if shift is None else add(shifted_mean, _operand(shift, m, op, "shift"))
    return mean, subtract(multiply(v, divisor), square(shifted_mean))


# ================================================================== batch_normalization
def batch_normalization(x: Any, mean: Any, variance: Any, offset: Any, scale: Any,
                        variance_epsilon: Any, name: str | None = None) -> Tensor:
    """``scale * (x - mean) / sqrt(variance + variance_epsilon) + offset``, computed as
    TensorFlow's: inv = rsqrt(variance + variance_epsilon) (times `scale`), then
    x * inv + (offset - mean * inv). `offset` and `scale` may be None.

    The statistics broadcast against x; tensors among them keep their dtypes (two
    different ones raise, as TensorFlow), Python values take x's, and the two terms are
    cast to x's dtype at the end, as TensorFlow does.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[1., 2.], [3., 6.]])
        >>> tf.nn.batch_normalization(x, tf.constant([2., 4.]), tf.constant([1., 4.]),
        ...                           offset=None, scale=None, variance_epsilon=0.).numpy()
        array([[-1., -1.],
               [ 1.,  1.]], dtype=float32)
    """
    op = "batch_normalization"
    t = _float_arg(x, op, "x", "fc")
    mu = _operand(mean, t, op, "mean")
    var = _operand(variance, t, op, "variance")
    stats = {"mean": mu, "variance": var, "offset": offset, "scale": scale}
    shapes = {k: shape_of(as_tensor(v, op, k)) for k, v in stats.items() if v is not None}
    try:
        out_shape = np.broadcast_shapes(shape_of(t), *shapes.values())
    except ValueError:
        out_shape = None
    if out_shape != shape_of(t):
        raise InvalidArgumentError(f"{op}: the statistics' shapes {shapes} must broadcast to the "
                                   f"shape of `x`, {shape_of(t)}.")
    inv = rsqrt(add(*binary_args(var, _operand(variance_epsilon, var, op, "variance_epsilon"),
                                 op)))
    if scale is not None:
        inv = multiply(*binary_args(inv, _operand(scale, t, op, "scale"), op))
    scaled_mean = multiply(*binary_args(mu, inv, op))
    shift = negative(scaled_mean) if offset is None else \
        subtract(*binary_args(_operand(offset, t, op, "offset"), scaled_mean, op))
    return add(multiply(t, cast(inv, t.dtype)), cast(shift, t.dtype))


# ================================================================== l2_normalize
def l2_normalize(x: Any, axis: Any = None, epsilon: float = 1e-12, name: str | None = None,
                 dim: Any = None) -> Tensor:
    """`x` divided by its L2 norm over `axis` (every axis if None), TensorFlow's formula:
    ``x * rsqrt(max(sum(x**2), epsilon))``, so a norm below sqrt(epsilon) divides by
    sqrt(epsilon) and a zero vector stays zero (but for float16, where epsilon rounds to 0
    and it gives NaN, as TensorFlow's). Complex tensors divide by the modulus norm. `dim`
    is the deprecated name of `axis`.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.l2_normalize(tf.constant([[3., 4.], [0., 0.]]), axis=1).numpy()
        array([[0.6, 0.8],
               [0. , 0. ]], dtype=float32)
    """
    op = "l2_normalize"
    if dim is not None:
        if axis is not None:
            raise ValueError(f"{op}: give `axis` or its deprecated alias `dim`, not both.")
        axis = dim
    t = _float_arg(x, op, "x", "fc")
    ax = normalize_axis(axis, len(shape_of(t)), op)
    if t.dtype.is_complex:
        re, im = real(t), imag(t)
        total = reduce_sum(add(square(re), square(im)), ax, keepdims=True)
        inv = rsqrt(maximum(total, convert_like(epsilon, total, op, "epsilon")))
        return _complex(multiply(re, inv), multiply(im, inv))
    total = reduce_sum(square(t), ax, keepdims=True)
    return multiply(t, rsqrt(maximum(total, convert_like(epsilon, total, op, "epsilon"))))


# ================================================================== dropout
def _rate_arg(rate: Any, x: Tensor, op: str) -> Any:
    """A number in [0, 1), or a scalar tensor of x's dtype (used as given, as TensorFlow)."""
    if isinstance(rate, numbers.Real):
        if not 0 <= rate < 1:
            raise ValueError(f"`rate` must be a scalar tensor or a float in the range [0, 1). "
                             f"Received: rate={rate}")
        return float(rate)
    if not isinstance(rate, TensorBase):
        raise ValueError(f"`rate` must be a scalar or scalar tensor. Received: rate={rate}")
    r = as_tensor(rate, op, "rate")
    if shape_of(r):
        raise ValueError(f"{op}: `rate` must be a scalar tensor; got shape {shape_of(r)}.")
    if r.dtype != x.dtype:
        raise ValueError(f"`x.dtype` must be compatible with `rate.dtype`. Received: "
                         f"x.dtype={x.dtype.name} and rate.dtype={r.dtype.name}")
    return r


def _noise_dims(noise_shape: Any, x: Tensor, op: str) -> tuple:
    """The draw's shape: x's (sizes read when the op runs) where `noise_shape` is None or
    says None; every size must be 1 or x's, so the mask broadcasts to x without growing it."""
    sizes, shape = shape_source(x), shape_of(x)
    if noise_shape is None:
        return tuple(sizes)
    if isinstance(noise_shape, TensorBase):
        noise_shape = int_list(noise_shape, op, "noise_shape")
    dims = list(noise_shape)
    if len(dims) > len(shape):
        raise InvalidArgumentError(f"{op}: `noise_shape` {tuple(dims)} has more axes than `x` "
                                   f"of shape {shape}.")
    out = []
    for i, d in enumerate(dims):
        k = len(shape) - len(dims) + i
        if d is None:
            out.append(sizes[k])
            continue
        d = int(d)
        if d not in (1, shape[k]):
            raise InvalidArgumentError(f"{op}: `noise_shape` {tuple(dims)} must broadcast to "
                                       f"the shape of `x`, {shape}: axis {k} is {d}, expected 1 "
                                       f"or {shape[k]}.")
        out.append(d)
    return tuple(out)


def draw_like(x: Any, noise_shape: Any = None, seed: int | None = None,
              normal: bool = False) -> Tensor:
    """Uniform [0, 1) (or standard normal) numbers of x's floating dtype, in x's shape or
    in `noise_shape` (None entries take x's sizes; every size 1 or x's), drawn from
    tf.random's sequences in the shape x has when the op runs, so a size-generic trace
    draws at every size. The draws of dropout and of Keras' noise layers.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.nn_composites import draw_like
        >>> draw_like(tf.zeros([4, 3]), noise_shape=[None, 1], seed=1).shape
        TensorShape([4, 1])
    """
    t = as_tensor(x, "draw_like", "x")
    if _dt.kind(t._value.dtype) != "f":
        raise InvalidArgumentError(f"draw_like: `x` must be floating; got {t.dtype.name}.")
    return _draw(t, noise_shape, seed, normal, "draw_like")


def _draw(t: Tensor, noise_shape: Any, seed: int | None, normal: bool, op: str) -> Tensor:
    prim = standard_normal_p if normal else uniform_p
    return bind(prim, generator=_seeds.generator(seed), shape=_noise_dims(noise_shape, t, op),
                dtype=t._value.dtype)


def dropout(x: Any, rate: Any, noise_shape: Any = None, seed: int | None = None,
            name: str | None = None) -> Tensor:
    """Each element of `x` zeroed with probability `rate`, the others scaled by
    1 / (1 - rate), so the expected sum is unchanged.

    A float `rate` must be in [0, 1) (0 returns x as it is); a tensor `rate` is a scalar of
    x's dtype, used as given (as TensorFlow). `noise_shape` draws one keep/drop flag per
    entry of a smaller shape, broadcast to x's (None entries take x's size); it must
    broadcast to x's shape without enlarging it (TensorFlow would return a larger tensor).
    The flags come from tf.random's sequences: the same `seed` after the same
    `tf.random.set_seed` gives the same flags, and each call (each replay of a traced
    function) draws new ones. The gradient is the same mask times the scale.

    Example:
        >>> import tapeflow as tf
        >>> y = tf.nn.dropout(tf.ones([4, 5]), rate=0.5, seed=1)
        >>> sorted(set(y.numpy().ravel().tolist()))
        [0.0, 2.0]
        >>> tf.nn.dropout(tf.ones([3, 4]), 0.5, noise_shape=[3, 1], seed=2).numpy().std(axis=1)
        array([0., 0., 0.], dtype=float32)
    """
    op = "dropout"
    t = as_tensor(x, op, "x")
    if _dt.kind(t._value.dtype) != "f":
        raise ValueError(f"`x.dtype` must be a floating point tensor as `x` will be scaled. "
                         f"Received: x_dtype={t.dtype.name}")
    r = _rate_arg(rate, t, op)
    if isinstance(r, float) and r == 0:
        return t
    if isinstance(r, float):
        scaled = multiply(t, convert_like(1 / (1 - r), t, op, "rate"))
    else:
        scaled = divide(t, subtract(convert_like(1, t, op, "rate"), r))
    flags = _draw(t, noise_shape, seed, False, op)
    keep = greater_equal(flags, r if isinstance(r, Tensor) else convert_like(r, t, op, "rate"))
    return where(keep, scaled, zeros_of(scaled))


# ================================================================== activations
def silu(features: Any, beta: Any = 1.0) -> Tensor:
    """The sigmoid linear unit (swish): ``features * sigmoid(beta * features)``.

    `beta` is a number or a tensor (cast to the features' dtype, as TensorFlow), which
    gets its gradient; it broadcasts against the features.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.silu(tf.constant([-1., 0., 2.])).numpy().round(5)
        array([-0.26894,  0.     ,  1.76159], dtype=float32)
        >>> tf.nn.swish(tf.constant([1.]), beta=2.).numpy().round(5)
        array([0.8808], dtype=float32)
    """
    op = "silu"
    x = _float_arg(features, op, "features")
    if isinstance(beta, TensorBase):
        b = cast(as_tensor(beta, op, "beta"), x.dtype)
    elif isinstance(beta, numbers.Real) and beta == 1:
        return multiply(x, sigmoid(x))
    else:
        b = convert_like(beta, x, op, "beta")
    return multiply(x, sigmoid(multiply(b, x)))


swish = silu


def softsign(features: Any, name: str | None = None) -> Tensor:
    """``features / (1 + |features|)``; its derivative is 1 / (1 + |features|)**2, 1 at 0.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.softsign(tf.constant([-3., 0., 1.])).numpy()
        array([-0.75,  0.  ,  0.5 ], dtype=float32)
    """
    x = _float_arg(features, "softsign", "features")
    return divide(x, add(_abs(x), convert_like(1, x, "softsign", "features")))


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {
    "moments": "nn", "weighted_moments": "nn", "normalize_moments": "nn",
    "batch_normalization": "nn", "l2_normalize": "nn math linalg", "dropout": "nn",
    "silu": "nn", "swish": "nn", "softsign": "nn math",
}
