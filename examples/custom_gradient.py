"""Custom gradients: a numerically stable log(1 + e^x) whose built-in derivative would
overflow, a clipped gradient, and a straight-through estimator, each checked.

Run: python examples/custom_gradient.py
"""

from __future__ import annotations

import sys

import numpy as np

import tapeflow as tf


@tf.custom_gradient
def log1pexp(x):
    e = tf.exp(-tf.abs(x))
    value = tf.maximum(x, 0.0) + tf.math.log1p(e)

    def grad(dy):
        return dy * tf.sigmoid(x)          # never e^x / (1 + e^x) with e^x = inf
    return value, grad


@tf.custom_gradient
def clip_gradient(x):
    return tf.identity(x), lambda dy: tf.clip_by_value(dy, -1.0, 1.0)


def main(quick: bool = False) -> None:
    x = tf.constant([-100.0, 0.0, 100.0, 1000.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(log1pexp(x))
    g = tape.gradient(y, x).numpy()
    np.testing.assert_allclose(g, [0.0, 0.5, 1.0, 1.0], atol=1e-6)
    print("stable log1pexp gradient:", g)

    w = tf.constant([3.0, -0.5])
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.reduce_sum(clip_gradient(w) * 10.0)
    print("clipped gradient:", tape.gradient(y, w).numpy())

    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.reduce_sum(tf.grad_pass_through(tf.round)(w) * w)
    print("straight-through gradient of round(w) * w:", tape.gradient(y, w).numpy())

    hessian = tf.hessian(lambda v: tf.reduce_sum(log1pexp(v)))(tf.constant([0.0, 2.0]))
    print("second derivatives through the custom rule:", np.diag(hessian.numpy()))


if __name__ == "__main__":
    main("--quick" in sys.argv)
