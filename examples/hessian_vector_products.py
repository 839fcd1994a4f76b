"""Hessian-vector products two ways: forward-over-backward (a ForwardAccumulator around
a GradientTape) and reverse-over-reverse (two nested tapes), with their peak memory.
Forward over backward keeps one tape; reverse over reverse records the whole first
backward pass as well.

Run: python examples/hessian_vector_products.py [--quick]
"""

from __future__ import annotations

import sys
import tracemalloc

import numpy as np

import tapeflow as tf


def loss(w: tf.Variable, x: tf.Tensor) -> tf.Tensor:
    h = x
    for _ in range(4):
        h = tf.tanh(tf.matmul(h, w))
    return tf.reduce_sum(h ** 2)


def forward_over_backward(w, x, v):
    with tf.autodiff.ForwardAccumulator(w, v) as acc:
        with tf.GradientTape() as tape:
            y = loss(w, x)
        g = tape.gradient(y, w)
    return acc.jvp(g)


def reverse_over_reverse(w, x, v):
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = loss(w, x)
        g = inner.gradient(y, w)
        gv = tf.reduce_sum(g * v)
    return outer.gradient(gv, w)


def peak_bytes(fn, *args) -> tuple:
    tracemalloc.start()
    out = fn(*args)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return out, peak


def main(quick: bool = False) -> dict:
    rng = np.random.default_rng(0)
    n = 32 if quick else 256
    w = tf.Variable(rng.standard_normal((n, n)) / np.sqrt(n))
    x = tf.constant(rng.standard_normal((64, n)))
    v = tf.constant(rng.standard_normal((n, n)))
    fob, fob_peak = peak_bytes(forward_over_backward, w, x, v)
    ror, ror_peak = peak_bytes(reverse_over_reverse, w, x, v)
    np.testing.assert_allclose(fob.numpy(), ror.numpy(), rtol=1e-9, atol=1e-10)
    print(f"forward over backward: peak {fob_peak / 2**20:6.1f} MiB")
    print(f"reverse over reverse:  peak {ror_peak / 2**20:6.1f} MiB   (same H v to 1e-9)")
    return {"fob": fob_peak, "ror": ror_peak}


if __name__ == "__main__":
    main("--quick" in sys.argv)
