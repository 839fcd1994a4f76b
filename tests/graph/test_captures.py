"""Tensors a traced function captures from outside (NOTE(captures) in graph/ir.py).

A captured tensor's value is a constant of the graph, but a tape or an accumulator that
watches it must see the graph use it at every call, as TensorFlow's captured inputs:
the first call (the trace) gave the gradient and every replay gave None.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import tapeflow as tf

W = np.linspace(-1.0, 1.0, 12).reshape(3, 4)


def _program(c, m):
    # c * c and tf.transpose(m) fold to constants when traced; their ops rerun on replays
    # that a recorder watches
    def f(x):
        return tf.reduce_sum(tf.tanh(x @ tf.transpose(m)) * (c * c)) + tf.reduce_sum(m * c) * x[0, 0]
    return f


@pytest.mark.parametrize("jit", [False, True], ids=["numpy", "xla"])
def test_gradients_and_jvps_reach_captured_tensors_at_every_call(jit):
    if jit:
        pytest.importorskip("jax")
    c, m = tf.constant(1.5, tf.float64), tf.constant(W)
    f = _program(c, m)
    traced = tf.function(f, jit_compile=jit)
    x = tf.constant(np.linspace(0.5, -0.5, 8).reshape(2, 4))
    with tf.GradientTape() as tape:
        tape.watch([c, m])
        want = f(x)
    want_grads = tape.gradient(want, [c, m])
    with tf.autodiff.ForwardAccumulator([c, m], [tf.constant(0.5, tf.float64),
                                                 tf.ones_like(m)]) as acc:
        want_jvp = acc.jvp(f(x))
    for call in range(3):  # the trace, then replays
        with tf.GradientTape() as tape:
            tape.watch([c, m])
            y = traced(x)
        grads = tape.gradient(y, [c, m])
        np.testing.assert_allclose(y.numpy(), want.numpy(), rtol=1e-12)
        for g, w in zip(grads, want_grads):
            assert g is not None, f"call {call}"
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
        with tf.autodiff.ForwardAccumulator([c, m], [tf.constant(0.5, tf.float64),
                                                     tf.ones_like(m)]) as acc:
            jvp = acc.jvp(traced(x))
        np.testing.assert_allclose(jvp.numpy(), want_jvp.numpy(), rtol=1e-12)
    assert traced.experimental_get_tracing_count() == 1


def test_the_derivative_matches_finite_differences_and_second_order():
    m = tf.constant(W)
    x = tf.constant(np.linspace(0.5, -0.5, 8).reshape(2, 4))

    def value(c_value):
        c = tf.constant(c_value, tf.float64)
        return float(tf.function(_program(c, m))(x))

    c = tf.constant(0.7, tf.float64)
    traced = tf.function(_program(c, m))
    traced(x)  # traced: the calls below replay
    with tf.GradientTape() as outer:
        outer.watch(c)
        with tf.GradientTape() as inner:
            inner.watch(c)
            y = traced(x)
        g = inner.gradient(y, c)
    h = outer.gradient(g, c)
    eps = 1e-5
    np.testing.assert_allclose(float(g), (value(0.7 + eps) - value(0.7 - eps)) / (2 * eps),
                               rtol=1e-7)
    np.testing.assert_allclose(
        float(h), (value(0.7 + eps) - 2 * value(0.7) + value(0.7 - eps)) / eps ** 2, rtol=1e-4)


def test_a_captured_tensor_that_died_leaves_its_constant():
    f = tf.function(lambda x: x * tf.constant(3.0) * 2.0)
    f(tf.constant(1.0))
    c = tf.constant(2.0)
    g = tf.function(lambda x: x * (c + c))
    g(tf.constant(1.0))
    del c
    gc.collect()
    x = tf.constant(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x) + f(x)
    assert float(y) == 1.5 * 4.0 + 1.5 * 6.0
    assert float(tape.gradient(y, x)) == 10.0


def test_a_captured_numpy_array_is_a_constant():
    a = np.array([1.0, 2.0])
    f = tf.function(lambda x: tf.reduce_sum(x * a))
    x = tf.constant([3.0, 4.0], tf.float64)
    for _ in range(2):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = f(x)
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), a)
