"""tf.nn activations, the softmax family, losses and bias_add (conv2d: ops/conv.py;
pooling: ops/pooling.py; sigmoid, tanh and softplus: ops/transcendental.py), and the
clipping by norms (tf.clip_by_norm, tf.clip_by_global_norm, tf.linalg.global_norm).

Primitives here exist for numerical stability or TensorFlow's exact subgradients;
everything else is a composite of existing primitives and needs no rules:

- relu: one pass, and TensorFlow's subgradient 0 at 0;
- relu6, elu: primitives for TensorFlow's derivative at the kinks (and `expm1` inside elu);
- normal_cdf (Phi): the one non-elementary piece of the exact gelu, computed from a
  private erfc accurate to ~1e-13 relative, its derivative from `exp`;
- softmax, log_softmax: max-shifted, so large logits never overflow;
- sigmoid_cross_entropy_with_logits: TensorFlow's stable formula in one pass;
- one_hot_labels: the label check of the sparse cross-entropy, kept inside an op so it
  runs on every example under vmap and at every replay of a traced function.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from .. import dtypes as _dt
from ..allocator import SIMD_MAXIMUM_MOST_BYTES, zero_page
from ..dtypes import half_in_float32
from ..catalog import NO_DERIVATIVE, Hints, Lowering, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..hessian_patterns import PIECEWISE_LINEAR
from ..tensor import Tensor
from .convert import as_tensor, binary_args, check_dtype, normalize_axis
from .elementwise import (add, cast, divide, greater, greater_equal, less, logical_and, maximum,
                          minimum, multiply, negative, sqrt, square, subtract)
from .reduction import reduce_sum
from .shape import stack
from .structural import (along_axis_deps, batch_along_axis, batch_elementwise, batch_unary,
                         elementwise_deps, float_mask, ones_of, per_input, reduce_sum_p, reshape_p,
                         select_p, shape_of, unary)
from .transcendental import exp, sigmoid, tanh

FLOAT = "f"


def _float_arg(x: Any, op: str, arg: str = "features") -> Tensor:
    t = as_tensor(x, op, arg)
    check_dtype(t, FLOAT, op, arg)
    return t


def _const(value: float, like: Tensor) -> Tensor:
    return Tensor(np.asarray(value, dtype=like._value.dtype))


# ------------------------------------------------------------------ relu: d relu(x) = [x > 0] dx
# The mask is read from the output (relu(x) > 0 exactly where x > 0, NaN included), as
# TensorFlow's ReluGrad does: the tape then keeps the activation the next layer keeps
# anyway, and the pre-activation can go (a replay frees it after relu).
def _relu_mask(y: Tensor) -> Tensor:
    return float_mask(greater(y, 0), y)


# NumPy's maximum has SIMD loops for two float arrays, not for an array and a scalar (2-3x
# slower from a few thousand elements: docs/performance-notes.md, #zero-page), so relu
# compares with an array of zeros that reads the kernel's zero page (NOTE(zero-page) in
# allocator.py), up to operands that no longer fit the cache (SIMD_MAXIMUM_MOST_BYTES).
# The same values: NaN stays NaN, -0. becomes 0. either way.
_ZERO_PAGE_FROM = 1024
_SIMD_MAXIMUM = (np.dtype(np.float32), np.dtype(np.float64))


def _relu_impl(x: np.ndarray) -> np.ndarray:
    if (x.size >= _ZERO_PAGE_FROM and x.dtype in _SIMD_MAXIMUM
            and x.nbytes <= SIMD_MAXIMUM_MOST_BYTES):
        zeros = zero_page(x.shape, x.dtype)
        if zeros is not None:
            return np.maximum(x, zeros)
    return np.maximum(x, 0)


relu_p = define(
    Primitive("relu", _relu_impl),
    per_input(jvp=(lambda t, ans, x: multiply(t, _relu_mask(ans)),),
              vjp=(lambda g, ans, x: multiply(g, _relu_mask(ans)),), reads=("ans",)),
    batch_unary, sparsity=elementwise_deps,
    lower=lambda jax, x: jax.numpy.maximum(x, jax.numpy.zeros((), x.dtype)),
    passes=Hints(elementwise=True), curvature=PIECEWISE_LINEAR)


# ------------------------------------------------------------------ relu6: d = [0 < x < 6] dx
# A primitive for TensorFlow's subgradient: 0 at both kinks (min(relu(x), 6) would give 1 at 6).
def _relu6_mask(x: Tensor) -> Tensor:
    return float_mask(logical_and(greater(x, 0), less(x, 6)), x)


relu6_p = define(
    Primitive("relu6", lambda x: np.minimum(np.maximum(x, 0), 6)),  # np.clip: bfloat16 -> float32
    per_input(jvp=(lambda t, ans, x: multiply(t, _relu6_mask(x)),),
              vjp=(lambda g, ans, x: multiply(g, _relu6_mask(x)),), reads=("x",)),
    batch_unary, sparsity=elementwise_deps,
    lower=lambda jax, x: jax.numpy.clip(x, jax.numpy.zeros((), x.dtype),
                                        jax.numpy.full((), 6, x.dtype)),
    passes=Hints(elementwise=True), curvature=PIECEWISE_LINEAR)


# ------------------------------------------------------------- elu: d = (x > 0 ? 1 : elu + 1) dx
# A primitive: expm1 keeps digits for small negative x, and exp never sees a large positive x.
def _elu_impl(x: np.ndarray) -> np.ndarray:
    return np.where(x > 0, x, np.expm1(np.minimum(x, 0)))


def _elu_lower(jax: Any, x: Any) -> Any:
    jnp = jax.numpy
    below = jnp.expm1(jnp.minimum(x, 0))
    below = jnp.where(below == 0, jnp.zeros((), x.dtype), below)  # +0 at -0, as the impl
    return jnp.where(x > 0, x, below)


elu_p = unary("elu", _elu_impl,
              lambda ans, x: bind(select_p, greater(x, 0), ones_of(x), add(ans, 1)),
              reads="ans x", lower=_elu_lower)


# ------------------------------------------------------------------ normal_cdf: d Phi = phi(x) dx
def _erfc(z: np.ndarray) -> np.ndarray:
    """erfc in float64 to ~1e-13 relative error (checked against math.erfc in the tests).

    |z| < 2: erf's series with positive terms, erf(a) = 2/sqrt(pi) exp(-a^2) sum (2a^2)^n a
    / (2n+1)!!; |z| >= 2: Laplace's continued fraction for erfc, 60 levels deep, which keeps
    full relative precision in the tail where 1 - erf would cancel.
    """
    z = np.asarray(z, np.float64)
    a = np.abs(z)
    out = np.empty_like(a)
    near = a < 2.0
    s = a[near]
    if s.size:
        s2, term, total = 2 * s * s, s.copy(), s.copy()
        for n in range(1, 80):
            term *= s2 / (2 * n + 1)
            total += term
            if n % 8 == 0 and not (term > 1e-17 * total).any():
                break
        out[near] = 1 - 2 / np.sqrt(np.pi) * np.exp(-s * s) * total
    b = a[~near]
    if b.size:
        frac = np.zeros_like(b)
        for k in range(60, 0, -1):
            frac = (k / 2) / (b + frac)
        out[~near] = np.exp(-b * b) / np.sqrt(np.pi) / (b + frac)
    return np.where(z < 0, 2 - out, out)


def _normal_cdf_impl(x: np.ndarray) -> np.ndarray:
    # Phi(x) = erfc(-x / sqrt 2) / 2: accurate in both tails, unlike (1 + erf) / 2.
    return np.asarray(0.5 * _erfc(-np.asarray(x, np.float64) / np.sqrt(2.0))).astype(x.dtype)


def _normal_pdf(x: Tensor) -> Tensor:
    return multiply(exp(multiply(square(x), -0.5)), 1 / np.sqrt(2 * np.pi))


normal_cdf_p = unary("normal_cdf", _normal_cdf_impl, lambda ans, x: _normal_pdf(x), reads="x",
                     # XLA's erfc, in the input's dtype (the impl computes in float64)
                     lower=lambda jax, x: 0.5 * jax.lax.erfc(-x / np.sqrt(2.0).astype(x.dtype)))


# ------------------------------------------------------------------ softmax family (one axis)
def _softmax_impl(x: np.ndarray, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:
        return np.empty_like(x)
    e = x - np.max(x, axis=axis, keepdims=True)
    np.exp(e, out=e)  # in place: one temporary instead of three
    # The row sums as ones-vector products (reduce_sum's impl, faster than NumPy's sum
    # over rows), then one reciprocal per row and a multiply; the rest of a softmax's time
    # is NumPy's exp (docs/performance-notes.md, #softmax).
    inv = reduce_sum_p.impl(e, (axis,), True)
    return np.multiply(e, np.reciprocal(inv, out=inv), out=e)


def _log_softmax_impl(x: np.ndarray, axis: int) -> np.ndarray:
    if x.shape[axis] == 0:
        return np.empty_like(x)
    top = np.argmax(x, axis=axis, keepdims=True)
    shifted = x - np.take_along_axis(x, top, axis=axis)
    # log(sum exp) = log1p(sum of the others): the max's own term is exactly 1, so the
    # log-probability of a dominant class keeps its digits (log(1 + 1e-20) would be 0).
    e = np.exp(shifted)
    np.put_along_axis(e, top, 0, axis=axis)
    return shifted - np.log1p(reduce_sum_p.impl(e, (axis,), True))


def _weighted_center(s: Tensor, v: Tensor, axis: int) -> Tensor:
    """s * (v - sum(s * v)): the product with softmax's (symmetric) Jacobian."""
    return multiply(s, subtract(v, reduce_sum(multiply(s, v), axis=axis, keepdims=True)))


def _softmax_lower(jax: Any, x: Any, axis: int) -> Any:
    jnp = jax.numpy
    if x.shape[axis] == 0:
        return jnp.zeros_like(x)
    e = jnp.exp(x - jnp.max(x, axis=axis, keepdims=True))
    return e * (1 / jnp.sum(e, axis=axis, keepdims=True))  # the impl's reciprocal, then product


# softmax: d s = s (dx - sum(s dx)); the VJP is the same product (the Jacobian is symmetric).
# A primitive for speed: one fused NumPy pass and short rules, no recorded max.
softmax_p = define(
    Primitive("softmax", half_in_float32(_softmax_impl)),
    per_input(jvp=(lambda t, ans, x, axis: _weighted_center(ans, t, axis),),
              vjp=(lambda g, ans, x, axis: _weighted_center(ans, g, axis),), reads=("ans",)),
    batch_along_axis, sparsity=along_axis_deps, lower=_softmax_lower)


def _log_softmax_lower(jax: Any, x: Any, axis: int) -> Any:
    # The impl's form: log1p of the sum of the others, the max's own term left out.
    jnp = jax.numpy
    if x.shape[axis] == 0:
        return jnp.zeros_like(x)
    top = jnp.argmax(x, axis=axis, keepdims=True)
    shifted = x - jnp.take_along_axis(x, top, axis=axis)
    at_top = jax.lax.broadcasted_iota(top.dtype, x.shape, axis) == top
    e = jnp.where(at_top, jnp.zeros((), x.dtype), jnp.exp(shifted))
    return shifted - jnp.log1p(jnp.sum(e, axis=axis, keepdims=True))


# log_softmax: d = dx - sum(softmax dx); VJP g - softmax sum(g), with softmax = exp(ans).
# A primitive for stability: max-shifted, and exact where one logit dominates.
log_softmax_p = define(
    Primitive("log_softmax", half_in_float32(_log_softmax_impl)),
    per_input(jvp=(lambda t, ans, x, axis: subtract(
                  t, reduce_sum(multiply(exp(ans), t), axis=axis, keepdims=True)),),
              vjp=(lambda g, ans, x, axis: subtract(
                  g, multiply(exp(ans), reduce_sum(g, axis=axis, keepdims=True))),),
              reads=("ans",)),
    batch_along_axis, sparsity=along_axis_deps, lower=_log_softmax_lower)


# ------------------------------------------------------------------ sigmoid cross-entropy
# loss(z, x) = max(x, 0) - x z + log1p(exp(-|x|)): d/dx = sigmoid(x) - z, d/dz = -x.
# A primitive: this form never overflows, and log1p keeps tiny losses exact in one pass.
def _sigmoid_xent_impl(z: np.ndarray, x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0) - x * z + np.log1p(np.exp(-np.abs(x)))


sigmoid_xent_p = define(
    Primitive("sigmoid_cross_entropy_with_logits", _sigmoid_xent_impl),
    per_input(jvp=(lambda t, ans, z, x: multiply(t, negative(x)),
                   lambda t, ans, z, x: multiply(t, subtract(sigmoid(x), z))),
              vjp=(lambda g, ans, z, x: multiply(g, negative(x)),
                   lambda g, ans, z, x: multiply(g, subtract(sigmoid(x), z))),
              reads=("x", "z x"), broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps,
    lower=lambda jax, z, x: (
        jax.numpy.maximum(x, 0) - x * z + jax.numpy.log1p(jax.numpy.exp(-jax.numpy.abs(x)))),
    passes=Hints(elementwise=True))


# ------------------------------------------------------------------ one_hot_labels (no derivative)
def _one_hot_labels_impl(labels: np.ndarray, depth: int, dtype: np.dtype) -> np.ndarray:
    if labels.size and (labels.min() < 0 or labels.max() >= depth):
        bad = labels[(labels < 0) | (labels >= depth)].reshape(-1)[0]
        raise InvalidArgumentError(
            f"sparse_softmax_cross_entropy_with_logits: received a label value of {bad} which "
            f"is outside the valid range of [0, {depth}) (`labels` must index the classes of "
            "`logits`' last axis).")
    if labels.size * depth < 1 << 14:
        return (labels[..., None] == np.arange(depth)).astype(dtype)
    # Zeros with a one written per row: for a large batch, much faster than comparing
    # every label with every class, which is faster for small batches
    # (docs/performance-notes.md, #one-hot-labels).
    hot = np.zeros(labels.shape + (depth,), dtype)
    np.put_along_axis(hot, labels[..., None].astype(np.intp, copy=False), 1, axis=-1)
    return hot


def _one_hot_labels_lower(jax: Any, labels: Any, depth: int, dtype: np.dtype) -> Any:
    # XLA cannot raise on a label out of range: its row is nan instead (TensorFlow's
    # behaviour on GPU), so the loss is nan rather than silently 0.
    jnp = jax.numpy
    hot = (labels[..., None] == jnp.arange(depth, dtype=labels.dtype)).astype(dtype)
    if _dt.kind(dtype) not in "fc":
        return hot
    bad = (labels < 0) | (labels >= depth)
    return jnp.where(bad[..., None], jnp.asarray(jnp.nan, dtype), hot)


one_hot_labels_p = define(
    Primitive("one_hot_labels", _one_hot_labels_impl, effects=(NO_DERIVATIVE,)),
    batch_unary,  # the class axis is appended last: the batch axis stays put
    # A label out of range: the compiled call reruns on NumPy, whose impl raises
    # TensorFlow's error.
    lower=Lowering(_one_hot_labels_lower, check=lambda jax, labels, depth, dtype: jax.numpy.all(
        (labels >= 0) & (labels < depth))))


# ================================================================== public ops: activations
def relu(features: Any, name: str | None = None) -> Tensor:
    """max(features, 0); the gradient at 0 is 0 (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.relu(tf.constant([-1., 2.])).numpy()
        array([0., 2.], dtype=float32)
    """
    x = as_tensor(features, "relu", "features")
    check_dtype(x, "fiu", "relu", "features")
    return bind(relu_p, x)


def relu6(features: Any, name: str | None = None) -> Tensor:
    """min(max(features, 0), 6); the gradient is 0 at both kinks (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.relu6(tf.constant([-1., 3., 8.])).numpy()
        array([0., 3., 6.], dtype=float32)
    """
    x = as_tensor(features, "relu6", "features")
    check_dtype(x, "fiu", "relu6", "features")
    return bind(relu6_p, x)


def elu(features: Any, name: str | None = None) -> Tensor:
    """Exponential linear unit: x where x > 0, exp(x) - 1 elsewhere (computed with expm1).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.elu(tf.constant([-1., 0., 2.])).numpy()
        array([-0.63212055,  0.        ,  2.        ], dtype=float32)
    """
    return bind(elu_p, _float_arg(features, "elu"))


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(features: Any, name: str | None = None) -> Tensor:
    """Scaled ELU: scale * x where x >= 0, scale * alpha * (exp(x) - 1) elsewhere, with
    alpha ~ 1.67326 and scale ~ 1.05070; the gradient at 0 is `scale` (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.selu(tf.constant([-1., 0., 2.])).numpy()
        array([-1.1113307,  0.       ,  2.101402 ], dtype=float32)
    """
    x = _float_arg(features, "selu")
    factor = bind(select_p, greater_equal(x, 0), _const(_SELU_SCALE, x),
                  _const(_SELU_SCALE * _SELU_ALPHA, x))
    return multiply(bind(elu_p, x), factor)


def gelu(features: Any, approximate: bool = False, name: str | None = None) -> Tensor:
    """Gaussian error linear unit x * Phi(x), Phi the standard normal CDF; with
    `approximate=True`, TensorFlow's tanh form 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).

    Phi(x) = erfc(-x / sqrt 2) / 2 is computed to ~1e-13 relative error, so large negative
    inputs keep their tiny values; TensorFlow's float64 erfc is good to ~1e-8, and its tanh
    form rounds 0.044715 to float32 even for float64 inputs (tapeflow does not).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.gelu(tf.constant([-1., 0., 1.])).numpy()
        array([-0.15865526,  0.        ,  0.8413448 ], dtype=float32)
    """
    x = _float_arg(features, "gelu")
    if approximate:
        inner = multiply(add(x, multiply(multiply(square(x), x), 0.044715)), np.sqrt(2 / np.pi))
        return multiply(multiply(x, 0.5), add(tanh(inner), 1))
    return multiply(x, bind(normal_cdf_p, x))


def leaky_relu(features: Any, alpha: float = 0.2, name: str | None = None) -> Tensor:
    """x where x > 0, alpha * x elsewhere; the gradient at 0 is alpha (as TensorFlow).
    Integer inputs are cast to float32 first, as TensorFlow does; alpha is applied at the
    input's precision (TensorFlow rounds it to float32 even for float64 inputs).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.leaky_relu(tf.constant([-2., 3.]), alpha=0.1).numpy()
        array([-0.2,  3. ], dtype=float32)
    """
    x = as_tensor(features, "leaky_relu", "features")
    if x._value.dtype.kind in "iu":
        x = cast(x, _dt.float32)
    check_dtype(x, FLOAT, "leaky_relu", "features")
    return bind(select_p, greater(x, 0), x, multiply(x, alpha))


def _axis_arg(x: Tensor, axis: Any, op: str) -> int:
    if np.ndim(x._value) == 0:
        raise InvalidArgumentError(f"{op}: `logits` must have rank >= 1; got a scalar.")
    (ax,) = normalize_axis(-1 if axis is None else axis, np.ndim(x._value), op)
    return ax


def softmax(logits: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    """exp(logits) / sum(exp(logits)) along `axis` (default: the last), shifted by the
    maximum so that large logits never overflow.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.softmax(tf.constant([0., 1000.])).numpy()
        array([0., 1.], dtype=float32)
    """
    x = _float_arg(logits, "softmax", "logits")
    return bind(softmax_p, x, axis=_axis_arg(x, axis, "softmax"))


def log_softmax(logits: Any, axis: int | None = None, name: str | None = None) -> Tensor:
    """logits - log(sum(exp(logits))) along `axis` (default: the last), computed stably:
    no overflow at large logits, and no rounding to 0 for a dominant class.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.log_softmax(tf.constant([0., 1000.])).numpy()
        array([-1000.,     0.], dtype=float32)
    """
    x = _float_arg(logits, "log_softmax", "logits")
    return bind(log_softmax_p, x, axis=_axis_arg(x, axis, "log_softmax"))


# ================================================================== public ops: the rest
def bias_add(value: Any, bias: Any, data_format: str | None = None,
             name: str | None = None) -> Tensor:
    """value + bias, the 1-D `bias` added along the channel axis: the last one for
    "N...C" formats (NHWC, the default), axis 1 for "NC..." formats (NCHW).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.bias_add(tf.zeros([2, 3]), tf.constant([1., 2., 3.])).numpy()
        array([[1., 2., 3.],
               [1., 2., 3.]], dtype=float32)
    """
    op = "bias_add"
    x, b = binary_args(value, bias, op)
    sx, sb = shape_of(x), shape_of(b)
    if len(sb) != 1:
        raise InvalidArgumentError(f"{op}: `bias` must be 1-D; got shape {sb}.")
    if len(sx) < 2:
        raise InvalidArgumentError(f"{op}: `value` must have rank >= 2; got shape {sx}.")
    channels_first = data_format is not None and data_format.upper().startswith("NC")
    if data_format is not None and not (channels_first or data_format.upper().startswith("N")
                                        and data_format.upper().endswith("C")):
        raise InvalidArgumentError(f"{op}: `data_format` must be like 'NHWC' or 'NCHW'; "
                                   f"got {data_format!r}.")
    axis = 1 if channels_first else len(sx) - 1
    if sx[axis] != sb[0]:
        raise InvalidArgumentError(f"{op}: must provide as many biases as the channel dimension "
                                   f"of `value`: `bias` has {sb[0]}, `value` of shape {sx} has "
                                   f"{sx[axis]} on axis {axis}.")
    if channels_first:
        b = bind(reshape_p, b, shape=sb + (1,) * (len(sx) - 2))
    return add(x, b)


def l2_loss(t: Any, name: str | None = None) -> Tensor:
    """sum(t ** 2) / 2, a scalar of t's dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.l2_loss(tf.constant([1., 2.])).numpy()
        np.float32(2.5)
    """
    x = _float_arg(t, "l2_loss", "t")
    return multiply(reduce_sum(square(x)), 0.5)


def sigmoid_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                      name: str | None = None) -> Tensor:
    """Elementwise logistic loss -z log(sigmoid(x)) - (1 - z) log(1 - sigmoid(x)) for
    labels z and logits x of the same shape, as TensorFlow's stable form
    max(x, 0) - x z + log(1 + exp(-|x|)). Gradients flow to both arguments.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.sigmoid_cross_entropy_with_logits(
        ...     labels=tf.constant([1., 0.]), logits=tf.constant([0., 100.])).numpy()
        array([  0.6931472, 100.       ], dtype=float32)
    """
    op = "sigmoid_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{op}: both `labels` and `logits` must be given.")
    z, x = binary_args(labels, logits, op)
    check_dtype(x, FLOAT, op, "logits")
    if shape_of(z) != shape_of(x):
        raise InvalidArgumentError(f"{op}: `logits` and `labels` must have the same shape; got "
                                   f"logits {shape_of(x)} and labels {shape_of(z)}.")
    return bind(sigmoid_xent_p, z, x)


def softmax_cross_entropy_with_logits(labels: Any, logits: Any, axis: int = -1,
                                      name: str | None = None) -> Tensor:
    """-sum(labels * log_softmax(logits)) along `axis`: the cross-entropy between each
    label distribution and the softmax of the logits (shapes broadcast, as TensorFlow).
    Gradients flow to both logits and labels; the logits' gradient is exact even for
    labels that do not sum to 1 (TensorFlow's assumes they do).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.softmax_cross_entropy_with_logits(
        ...     labels=tf.constant([[0., 1.]]), logits=tf.constant([[0., 0.]])).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "softmax_cross_entropy_with_logits"
    z, x = binary_args(labels, logits, op)
    check_dtype(x, FLOAT, op, "logits")
    try:
        full = np.broadcast_shapes(shape_of(z), shape_of(x))
    except ValueError:
        raise InvalidArgumentError(f"{op}: `labels` of shape {shape_of(z)} and `logits` of shape "
                                   f"{shape_of(x)} do not broadcast.") from None
    if not full:
        raise InvalidArgumentError(f"{op}: `logits` must have rank >= 1; got a scalar.")
    (ax,) = normalize_axis(axis, len(full), op)
    ax_x = ax - (len(full) - len(shape_of(x)))
    if ax_x < 0:
        raise InvalidArgumentError(f"{op}: `logits` of shape {shape_of(x)} has no class axis "
                                   f"{axis} of the broadcast shape {full}.")
    log_p = bind(log_softmax_p, x, axis=ax_x)
    return negative(reduce_sum(multiply(z, log_p), axis=ax))


def sparse_softmax_cross_entropy_with_logits(labels: Any = None, logits: Any = None,
                                             name: str | None = None) -> Tensor:
    """-log_softmax(logits)[..., labels]: the cross-entropy of integer class `labels`
    (shape [d0, ..., dn]) under `logits` (shape [d0, ..., dn, classes]). A label outside
    [0, classes) raises InvalidArgumentError (TensorFlow's CPU behaviour).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.sparse_softmax_cross_entropy_with_logits(
        ...     labels=tf.constant([1]), logits=tf.constant([[0., 0.]])).numpy()
        array([0.6931472], dtype=float32)
    """
    op = "sparse_softmax_cross_entropy_with_logits"
    if labels is None or logits is None:
        raise ValueError(f"{op}: both `labels` and `logits` must be given.")
    z = as_tensor(labels, op, "labels")
    x = _float_arg(logits, op, "logits")
    if z._value.dtype.kind not in "iu":
        raise TypeError(f"{op}: `labels` must be int32 or int64 class indices; got dtype "
                        f"{_dt.from_numpy(z._value.dtype).name}.")
    sz, sx = shape_of(z), shape_of(x)
    if not sx or sz != sx[:-1]:
        raise InvalidArgumentError(f"{op}: the shape of `labels` ({sz}) must equal the shape of "
                                   f"`logits` ({sx}) without its last (class) axis.")
    hot = bind(one_hot_labels_p, z, depth=sx[-1], dtype=x._value.dtype)
    return negative(reduce_sum(multiply(hot, bind(log_softmax_p, x, axis=len(sx) - 1)), axis=-1))


# ================================================================== clipping by norms
# Composites written as TensorFlow's clip_ops.py, so values and gradients match its
# formulas: clip_by_norm's two-tap where keeps the gradient finite at a zero norm;
# global_norm is sqrt(2 * sum of l2_loss) and, as TensorFlow's, has a NaN gradient there.
def _tensor_list(t_list: Any, op: str) -> list:
    if not isinstance(t_list, Sequence) or isinstance(t_list, str):
        raise TypeError(f"{op}: `t_list` should be a sequence of tensors; received "
                        f"{type(t_list)}.")
    return [None if t is None else _float_arg(t, op, f"t_list[{i}]")
            for i, t in enumerate(t_list)]


def clip_by_norm(t: Any, clip_norm: Any, axes: Any = None, name: str | None = None) -> Tensor:
    """`t` scaled so its L2 norm over `axes` (all axes if None) is at most `clip_norm`:
    ``t * clip_norm / max(norm, clip_norm)``, unchanged where the norm is smaller.

    A negative `clip_norm` counts as 0. A zero norm leaves `t` unchanged with a finite
    gradient (TensorFlow's two-tap where). `clip_norm` may broadcast along `axes` but
    must not enlarge `t`'s shape.

    Example:
        >>> import tapeflow as tf
        >>> tf.clip_by_norm(tf.constant([[3., 4.], [0., 0.]]), 2.).numpy()
        array([[1.2, 1.6],
               [0. , 0. ]], dtype=float32)
    """
    values = _float_arg(t, "clip_by_norm", "t")
    if isinstance(clip_norm, (int, float)) and not isinstance(clip_norm, bool):
        clip = _const(max(clip_norm, 0), values)
    else:
        clip = cast(maximum(as_tensor(clip_norm, "clip_by_norm", "clip_norm"), 0),
                    values.dtype)
    axis = normalize_axis(axes, len(shape_of(values)), "clip_by_norm", "axes")
    l2sum = reduce_sum(multiply(values, values), axis, keepdims=True)
    pred = greater(l2sum, 0)
    l2sum_safe = bind(select_p, pred, l2sum, ones_of(l2sum))
    l2norm = bind(select_p, pred, sqrt(l2sum_safe), l2sum)
    intermediate = multiply(values, clip)
    if shape_of(intermediate) != shape_of(values):
        raise ValueError(f"clip_by_norm: `clip_norm` of shape {shape_of(clip)} would broadcast "
                         f"`t` of shape {shape_of(values)} to {shape_of(intermediate)}; expected "
                         "a scalar or a shape that broadcasts to `t`'s.")
    return divide(intermediate, maximum(l2norm, clip))


def global_norm(t_list: Any, name: str | None = None) -> Tensor:
    """The L2 norm of all the tensors of `t_list` together, sqrt(sum of their squares);
    None entries are skipped and an empty list gives 0 (float32).

    Every tensor must have the first one's floating dtype. The gradient is NaN where the
    norm is 0, as TensorFlow's (sqrt(2 * sum of l2_loss), no safe where).

    Example:
        >>> import tapeflow as tf
        >>> tf.linalg.global_norm([tf.constant([3., 4.]), None, tf.constant([[12.]])]).numpy()
        np.float32(13.0)
    """
    values = [v for v in _tensor_list(t_list, "global_norm") if v is not None]
    if not values:
        return Tensor(np.float32(0))
    dt = values[0].dtype
    for i, v in enumerate(values):
        if v.dtype != dt:
            raise InvalidArgumentError(f"global_norm: the tensors of `t_list` must share one "
                                       f"dtype; got {dt.name} and {v.dtype.name} (entry {i}).")
    half_squared = reduce_sum(stack([l2_loss(v) for v in values]))
    return sqrt(multiply(half_squared, _const(2.0, half_squared)))


def clip_by_global_norm(t_list: Any, clip_norm: Any, use_norm: Any = None,
                        name: str | None = None) -> tuple[list, Tensor]:
    """Scale every tensor of `t_list` by ``clip_norm / max(global_norm, clip_norm)``;
    returns (the list clipped, the global norm). None entries stay None.

    `use_norm` replaces the computed global norm. When the norm is inf or NaN every
    output is NaN (TensorFlow's documented signal of a diverged step).

    Example:
        >>> import tapeflow as tf
        >>> clipped, norm = tf.clip_by_global_norm([tf.constant([3., 4.]), None], 2.5)
        >>> clipped[0].numpy(), clipped[1], norm.numpy()
        (array([1.5, 2. ], dtype=float32), None, np.float32(5.0))
    """
    values = _tensor_list(t_list, "clip_by_global_norm")
    norm = (global_norm(values) if use_norm is None
            else _float_arg(use_norm, "clip_by_global_norm", "use_norm"))
    clip = (_const(clip_norm, norm) if isinstance(clip_norm, (int, float))
            else as_tensor(clip_norm, "clip_by_global_norm", "clip_norm"))
    scale_for_finite = multiply(clip, minimum(divide(_const(1.0, norm), norm),
                                              divide(_const(1.0, norm), clip)))
    scale = add(scale_for_finite, subtract(norm, norm))  # NaN when the norm is inf or NaN
    clipped = [None if v is None else multiply(v, cast(scale, v.dtype)) for v in values]
    return clipped, norm


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "relu": "nn", "relu6": "nn", "elu": "nn", "selu": "nn", "gelu": "nn", "leaky_relu": "nn",
    "softmax": "math nn", "log_softmax": "math nn", "bias_add": "nn", "l2_loss": "nn",
    "sigmoid_cross_entropy_with_logits": "nn", "softmax_cross_entropy_with_logits": "nn",
    "sparse_softmax_cross_entropy_with_logits": "nn", "clip_by_norm": "tf",
    "clip_by_global_norm": "tf", "global_norm": "linalg",
}
