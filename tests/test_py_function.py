"""tf.py_function and tf.numpy_function: Python code as one op, run at every replay,
py_function differentiable both ways and to second order, numpy_function not; clear
errors for a wrong Tout."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def test_runs_at_every_replay_of_a_traced_function():
    calls = []

    def bump(a):
        calls.append(1)
        return a + 1.0

    f = tf.function(lambda v: tf.py_function(bump, [v], tf.float32) * 2.0)
    assert [float(f(tf.constant(float(i)))) for i in range(3)] == [2.0, 4.0, 6.0]
    assert len(calls) == 3 and f.experimental_get_tracing_count() == 1


def test_derivatives_through_python_code():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.py_function(lambda v: v ** 3, [x], tf.float32)
        g = tape.gradient(y, x)
    assert (float(y), float(g), float(outer.gradient(g, x))) == (8.0, 12.0, 12.0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)) as acc:
        y = tf.py_function(lambda v: tf.sin(v), [x], tf.float32)
    assert float(acc.jvp(y)) == pytest.approx(np.cos(2.0), rel=1e-6)
    traced = tf.function(tf.grad(lambda v: tf.py_function(lambda a: a * a, [v], tf.float32)))
    assert float(traced(tf.constant(3.0))) == 6.0


def test_several_results_integer_inputs_and_vmap():
    i = tf.constant([1, 2])
    x = tf.constant([0.5, 1.5])
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b = tf.py_function(lambda k, v: (tf.cast(k, tf.float32) * v, v * v), [i, x],
                              [tf.float32, tf.float32])
        loss = tf.reduce_sum(a + b)
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(), [1 + 1.0, 2 + 3.0])
    doubled = tf.vmap(lambda v: tf.py_function(lambda a: a * 2.0, [v], tf.float32))
    np.testing.assert_array_equal(doubled(tf.constant([1.0, 2.0, 3.0])).numpy(), [2, 4, 6])


def test_numpy_function_has_no_gradient():
    x = tf.constant([3.0, 1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.numpy_function(lambda a: np.sort(a), [x], tf.float32)
    np.testing.assert_array_equal(y.numpy(), [1.0, 2.0, 3.0])
    assert tape.gradient(y, x) is None
    assert tf.numpy_function(lambda a: None, [x], None) is None


def test_bad_input():
    with pytest.raises(ValueError, match="returned 2 value"):
        tf.py_function(lambda v: (v, v), [tf.constant(1.0)], tf.float32)
    with pytest.raises(TypeError, match="dtype"):
        tf.numpy_function(lambda a: np.array(["s"]), [tf.constant(1.0)], tf.float32)
    with pytest.raises(TypeError, match="callable"):
        tf.py_function(3, [tf.constant(1.0)], tf.float32)
    with pytest.raises(TypeError, match="list of tensors"):
        tf.py_function(lambda v: v, tf.constant(1.0), tf.float32)


def test_py_function_and_numpy_function_as_decorators():
    # TensorFlow's decorator form: @tf.py_function(Tout=...) makes a function of tensors.
    @tf.py_function(Tout=tf.float32)
    def cube(v):
        return v ** 3

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = cube(x)
    assert float(y) == 8.0 and float(tape.gradient(y, x)) == 12.0

    @tf.numpy_function(Tout=tf.float32)
    def ascending(a):
        return np.sort(a)

    assert ascending(tf.constant([3.0, 1.0])).numpy().tolist() == [1.0, 3.0]
    with pytest.raises(TypeError, match="`inp` without `func`"):
        tf.py_function(inp=[x], Tout=tf.float32)
