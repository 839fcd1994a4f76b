"""Complex numbers: complex, real, imag, conj, and the ops that treat real and complex
inputs differently: abs (|z| is real) and squared_difference.

NOTE(complex-gradients): for a real loss L of a complex tensor z = x + iy, the
gradient a tape returns is ``dL/dx + i dL/dy`` (= 2 dL/d(conj z) in Wirtinger
terms), TensorFlow's convention. Reverse rules therefore multiply the incoming
cotangent by the *conjugate* derivative of a holomorphic op:
``grad(real(f(z))) = conj(f'(z))``, and for the non-holomorphic ones ``abs(z)``
gives ``g * z / |z|`` (0 at z = 0), ``real(z)`` gives ``g + 0i``, ``imag(z)``
gives ``0 + ig`` and ``complex(a, b)`` sends ``real(g)`` to a and ``imag(g)`` to b.
So ``tf.abs(z) ** 2`` has gradient ``2 z`` and ``tf.math.real(tf.exp(z))`` has
gradient ``conj(exp(z))``, as in TensorFlow. Forward rules are plain
complex-linear JVPs ``f'(z) t``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..catalog import Hints, define
from ..core import Primitive, bind
from ..hessian_patterns import LINEAR
from ..tensor import Tensor
from .convert import as_tensor, binary_args, check_dtype
from .elementwise import NUMERIC, abs_p, divide, doc, greater, multiply, square, subtract, unary_op
from .structural import (add_p, batch_elementwise, batch_unary, conj_if_complex, conj_p,
                         elementwise_deps, linear, ones_of, per_input, select_p, twin, zeros_of)


# ------------------------------------------------------------------ complex(a, b)
def _complex_impl(re: np.ndarray, im: np.ndarray) -> np.ndarray:
    # Assigning the parts (not re + 1j * im) keeps inf parts exact: 1j * inf would be nan + inf j.
    shape = np.broadcast_shapes(re.shape, im.shape)
    out = np.empty(shape, np.result_type(re.dtype, np.complex64))
    out.real = re
    out.imag = im
    return out


def _complex_lower(jax: Any, re: Any, im: Any) -> Any:
    # lax.complex sets the parts (exact inf parts, as the impl), on broadcast operands.
    jnp = jax.numpy
    part = jnp.real(jnp.zeros((), jnp.result_type(re.dtype, jnp.complex64))).dtype
    re, im = jnp.broadcast_arrays(re.astype(part), im.astype(part))
    return jax.lax.complex(re, im)


# d complex(a, b) = da + i db; cotangent g -> (real g, imag g).
complex_p = define(
    Primitive("complex", _complex_impl),
    per_input(jvp=(lambda t, ans, a, b: bind(complex_p, t, zeros_of(t)),
                   lambda t, ans, a, b: bind(complex_p, zeros_of(t), t)),
              vjp=(lambda g, ans, a, b: bind(real_p, g), lambda g, ans, a, b: bind(imag_p, g)),
              reads=("", ""), broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps, lower=_complex_lower,
    passes=Hints(elementwise=True), curvature=LINEAR)

# ------------------------------------------------------------------ real, imag
# Both are real-linear: JVP real(t); the transpose puts g back as g + 0i (or 0 + ig).
real_p = define(Primitive("real", np.real),
                linear(lambda g, z: bind(complex_p, g, zeros_of(g)), reads=""),
                batch_unary, sparsity=elementwise_deps, lower=twin("real"),
                passes=Hints(elementwise=True), curvature=LINEAR)

imag_p = define(Primitive("imag", np.imag),
                linear(lambda g, z: bind(complex_p, zeros_of(g), g), reads=""),
                batch_unary, sparsity=elementwise_deps, lower=twin("imag"),
                passes=Hints(elementwise=True), curvature=LINEAR)


# ------------------------------------------------------------------ complex_abs: |z|, real
def _complex_sign(z: Tensor, r: Tensor) -> Tensor:
    """z / |z|, and 0 where z == 0 (TensorFlow's choice: |z| has no gradient at 0)."""
    nonzero = greater(r, 0)
    safe = bind(select_p, nonzero, r, ones_of(r))
    ratio = divide(z, bind(complex_p, safe, zeros_of(safe)))
    return bind(select_p, nonzero, ratio, zeros_of(ratio))


def _complex_abs_lower(jax: Any, z: Any) -> Any:
    # np.abs is C99's hypot: inf when a part is infinite, even if the other is nan (XLA: nan).
    jnp = jax.numpy
    r = jnp.abs(z)
    return jnp.where(jnp.isinf(z.real) | jnp.isinf(z.imag), jnp.asarray(jnp.inf, r.dtype), r)


# JVP real(conj(z/|z|) t); VJP (g + 0i) z/|z|.
complex_abs_p = define(
    Primitive("complex_abs", np.abs),
    per_input(jvp=(lambda t, ans, z: bind(
                  real_p, multiply(conj_if_complex(_complex_sign(z, ans)), t)),),
              vjp=(lambda g, ans, z: multiply(bind(complex_p, g, zeros_of(g)),
                                              _complex_sign(z, ans)),),
              reads=("ans z",)),
    batch_unary, sparsity=elementwise_deps, lower=_complex_abs_lower,
    passes=Hints(elementwise=True))


# ================================================================== public ops
def conj(x: Any, name: str | None = None) -> Tensor:
    """Complex conjugate (the identity for real tensors, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.conj(tf.constant([1 + 2j])).numpy()
        array([1.-2.j])
    """
    x = as_tensor(x, "conj", "x")
    return bind(conj_p, x) if x._value.dtype.kind == "c" else x


def real(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The real part of a complex tensor (a real tensor is returned unchanged).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.real(tf.constant([1 + 2j])).numpy()
        array([1.])
    """
    z = as_tensor(input, "real", "input")
    return bind(real_p, z) if z._value.dtype.kind == "c" else z


def imag(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The imaginary part of a complex tensor (zeros for a real tensor, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.math.imag(tf.constant([1 + 2j])).numpy()
        array([2.])
    """
    z = as_tensor(input, "imag", "input")
    return bind(imag_p, z) if z._value.dtype.kind == "c" else zeros_of(z)


def complex(real: Any, imag: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """real + i imag elementwise, with broadcasting: float32 parts give complex64,
    float64 parts complex128 (both parts must have the same dtype, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.complex(tf.constant([1., 2.]), 3.).numpy()
        array([1.+3.j, 2.+3.j], dtype=complex64)
    """
    re, im = binary_args(real, imag, "complex")
    kind = re._value.dtype
    if kind not in (np.dtype(np.float32), np.dtype(np.float64)):
        raise TypeError(f"complex: `real` and `imag` have dtype {kind}; expected float32 or "
                        "float64 (both the same).")
    return bind(complex_p, re, im)


_abs_real = unary_op(abs_p, NUMERIC, doc("|x| elementwise; the gradient at 0 is 0 (sign(0)).",
                                         "tf.abs(tf.constant([-2., 3.])).numpy()",
                                         "array([2., 3.], dtype=float32)"))


def abs(x: Any, name: str | None = None) -> Tensor:  # noqa: A001
    """|x| elementwise (the real magnitude for complex x); the gradient at 0 is 0.

    Example:
        >>> import tapeflow as tf
        >>> tf.abs(tf.constant([-2., 3.])).numpy()
        array([2., 3.], dtype=float32)
    """
    x = as_tensor(x, "abs", "x")
    if x._value.dtype.kind == "c":
        return bind(complex_abs_p, x)
    return _abs_real(x)


def squared_difference(x: Any, y: Any, name: str | None = None) -> Tensor:
    """(x - y) * conj(x - y) elementwise with broadcasting: (x - y)^2 for real tensors, and
    |x - y|^2 (with a zero imaginary part, exactly) for complex ones.

    Example:
        >>> import tapeflow as tf
        >>> tf.math.squared_difference(tf.constant([1., 5.]), 2.).numpy()
        array([1., 9.], dtype=float32)
    """
    x, y = binary_args(x, y, "squared_difference")
    check_dtype(x, "fciu", "squared_difference")
    d = subtract(x, y)
    if d._value.dtype.kind != "c":
        return square(d)
    # |d|^2 from the parts: NumPy's d * conj(d) can leave a rounding-error imaginary part.
    magnitude2 = bind(add_p, square(bind(real_p, d)), square(bind(imag_p, d)))
    return bind(complex_p, magnitude2, zeros_of(magnitude2))


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "complex": "tf math", "real": "tf math", "imag": "tf math", "conj": "math",
    "abs": "tf math", "squared_difference": "tf math",
}
