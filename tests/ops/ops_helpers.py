"""Helpers the family tests in tests/ops/ share: gradients taken with a tape, and the
complex-gradient check against finite differences of a real loss (TensorFlow's gradient
of a real loss L at z = x + iy is dL/dx + i dL/dy).
"""

from __future__ import annotations

import numpy as np

import tapeflow as tf

# One generator for the random inputs of the linear-algebra tests.
RNG = np.random.default_rng(0)


def value_and_grads(f, *xs):
    """f at constant copies of xs, and its gradient with respect to each (tensors)."""
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return y, tape.gradient(y, xs)


def numpy_grads(f, *xs):
    """The gradient of f with respect to each of xs, as NumPy arrays (None if unconnected)."""
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return [None if g is None else g.numpy() for g in tape.gradient(y, xs)]


def numpy_value_and_grad(f, x):
    """f(x) and its gradient with respect to the one input x, as NumPy arrays."""
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return y.numpy(), tape.gradient(y, x).numpy()


def cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def numeric_gradient(f, *xs, eps=1e-6):
    """dL/dRe + i dL/dIm per input (just dL/dx for real inputs) by central differences."""
    def value(args):
        return float(np.real(f(*[tf.constant(a) for a in args]).numpy()))

    out = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        directions = (1, 1j) if np.iscomplexobj(x) else (1,)
        for idx in np.ndindex(x.shape):
            for d in directions:
                plus, minus = [list(xs) for _ in range(2)]
                step = np.zeros_like(x)
                step[idx] = eps * d
                plus[k], minus[k] = x + step, x - step
                g[idx] += d * (value(plus) - value(minus)) / (2 * eps)
        out.append(g)
    return out


def real_loss(f, weights):
    """L = Re(sum(f(...) * conj(W))), a real scalar of a complex result."""
    w = tf.constant(np.conj(weights))
    return lambda *xs: tf.cast(tf.reduce_sum(f(*xs) * w), tf.float64)


def assert_complex_gradient(f, out_shape, *xs):
    loss = real_loss(f, cplx(*out_shape))
    for got, want in zip(numpy_grads(loss, *xs), numeric_gradient(loss, *xs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
