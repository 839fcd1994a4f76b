"""Random draws and user-defined gradients inside traced functions.

Random draws are stateful primitives: each replay draws fresh numbers in the same
sequence as eager code, two draws are never merged, and set_seed restarts them.
custom_gradient and recompute_grad inside a traced function are differentiated from
outside the replay with the user's rule at the replay's inputs.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import X0, _c, _close

import tapeflow as tf
from tapeflow.graph import TracingError


@pytest.fixture(autouse=True)
def _restore_random_seed():
    yield
    tf.random.set_seed(None)    # tests below set seeds; leave the default for other files


def test_random_normal_inside_draws_fresh_numbers_at_each_replay():
    @tf.function
    def f(x):
        return x + tf.random.normal([3], dtype=tf.float64)

    x = tf.constant(X0)
    draws = [np.asarray(f(x)) for _ in range(4)]
    assert f.experimental_get_tracing_count() == 1
    for i in range(4):
        for j in range(i):
            assert not np.array_equal(draws[i], draws[j])


def test_random_draws_inside_follow_the_eager_sequence():
    def body(x):
        unused = tf.random.normal([2], dtype=tf.float64)  # noqa: F841 - still advances the sequence
        a = tf.random.normal([3], dtype=tf.float64)
        b = tf.random.uniform([3], dtype=tf.float64)
        return x + a * b

    x = tf.constant(X0)
    tf.random.set_seed(11)
    eager = [np.asarray(body(x)) for _ in range(3)]
    tf.random.set_seed(11)
    traced = tf.function(body)
    replayed = [np.asarray(traced(x)) for _ in range(3)]
    _close(replayed, eager)


def test_two_random_draws_inside_are_not_merged():
    @tf.function
    def f(x):
        return x + tf.random.normal([3], dtype=tf.float64) - tf.random.normal([3], dtype=tf.float64)

    x = tf.constant(np.zeros(3))
    cf = f.get_concrete_function(x)
    assert sum("normal" in op.type for op in cf.graph.get_operations()) == 2
    assert not np.allclose(np.asarray(f(x)), 0.0)


def test_set_seed_restarts_the_draws_of_a_traced_function():
    @tf.function
    def f(x):
        return x + tf.random.normal([3], dtype=tf.float64)

    x = tf.constant(X0)
    tf.random.set_seed(5)
    first = [np.asarray(f(x)) for _ in range(3)]
    tf.random.set_seed(5)
    again = [np.asarray(f(x)) for _ in range(3)]
    _close(again, first)


def test_custom_gradient_inside_replay_differentiated_from_outside():
    """A tape or accumulator around a replayed call uses the custom rule at the replay's
    inputs (the grad_fn is traced too), not at the traced call's."""
    v = tf.Variable(2.0, dtype=tf.float64)

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * 10.0 * x * v, [tf.reduce_sum(dy * x)]
        return tf.sin(x) * v, grad

    g = tf.function(lambda x: f(x) * 2.0)
    g(_c(1.0, 2.0))
    x = _c(3.0, 4.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(g(x))
    gx, gv = tape.gradient(y, [x, v])
    _close(gx, 2 * 10 * np.array([3.0, 4.0]) * 2.0)
    _close(gv, 2 * (3.0 + 4.0))
    with tf.autodiff.ForwardAccumulator(x, _c(1.0, 0.0)) as acc:
        y = g(x)
    _close(acc.jvp(y), [2 * 10 * 3.0 * 2.0, 0.0])
    assert g.experimental_get_tracing_count() == 1


def test_recompute_grad_inside_replay_differentiated_from_outside():
    h = tf.function(tf.recompute_grad(lambda a: tf.sin(a) * a))
    h(_c(0.5))
    x = _c(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = h(x)
    _close(tape.gradient(y, x), [np.cos(1.5) * 1.5 + np.sin(1.5)])


def _reads_its_cotangent(scale_by_x):
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            s = float(tf.reduce_max(dy))  # a value read while the grad_fn is traced
            return dy * s * (x if scale_by_x else 3.0)
        return x * 2.0, grad
    return tf.function(lambda x: f(x))


def _gradient(fn, x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = fn(x)
    return tape.gradient(y, x)


def test_a_grad_fn_that_reads_its_cotangent_replays_under_a_tape():
    g = _reads_its_cotangent(scale_by_x=False)
    g(tf.constant([1.0, 2.0]))
    for value in ([1.0, 2.0], [5.0, 6.0]):
        np.testing.assert_array_equal(_gradient(g, tf.constant(value)).numpy(), [3.0, 3.0])


def test_a_grad_fn_that_reads_a_value_and_closes_over_the_input():
    g = _reads_its_cotangent(scale_by_x=True)
    g(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(_gradient(g, tf.constant([1.0, 2.0])).numpy(), [1.0, 2.0])
    with pytest.raises(TracingError, match="custom_gradient's grad_fn read a value"):
        _gradient(g, tf.constant([5.0, 6.0]))


def test_a_grad_fn_runs_once_per_trace_even_under_a_tape():
    # TensorFlow calls a grad_fn when it builds the gradient of the traced function, once:
    # the tape around the first call uses that traced backward too, to any order.
    calls = []

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            calls.append(1)
            return dy * tf.cos(x) * 3.0
        return tf.sin(x), grad

    g = tf.function(lambda x: f(x) * 2.0)
    for k in range(3):
        x = tf.constant(0.5 + k, tf.float64)
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = g(x)
            d = inner.gradient(y, x)
        np.testing.assert_allclose(d.numpy(), 6.0 * np.cos(0.5 + k), rtol=1e-14)
        np.testing.assert_allclose(outer.gradient(d, x).numpy(), -6.0 * np.sin(0.5 + k),
                                   rtol=1e-14)
    assert len(calls) == 1
