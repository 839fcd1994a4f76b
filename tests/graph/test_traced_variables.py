"""Variables in traced functions: captured by reference, read and written in order.

A replay reads a variable's value at the call, not at trace time; assign, assign_add
and assign_sub inside a traced function take effect at each replay, in program order,
and a read after a write sees the write; an optimizer step traced once matches the
eager steps; a Variable passed as an argument is captured by reference too.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import _c, _close

import tapeflow as tf


def test_variable_assigned_outside_is_read_at_next_call():
    v = tf.Variable(np.array([1.0, 2.0]))

    @tf.function
    def f(x):
        return x * v

    _close(f(_c(1.0, 1.0)), [1.0, 2.0])
    v.assign(np.array([10.0, 20.0]))
    _close(f(_c(1.0, 1.0)), [10.0, 20.0])
    v.assign_add(np.array([1.0, 1.0]))
    _close(f(_c(2.0, 2.0)), [22.0, 42.0])
    assert f.experimental_get_tracing_count() == 1


def test_assign_inside_takes_effect():
    v = tf.Variable(np.array([1.0, 2.0]))

    @tf.function
    def f(x):
        v.assign(x * 2.0)

    f(_c(3.0, 4.0))
    _close(v, [6.0, 8.0])
    f(_c(-1.0, 5.0))
    _close(v, [-2.0, 10.0])


def test_assign_add_inside_accumulates_across_calls():
    v = tf.Variable(0.0, dtype=tf.float64)

    @tf.function
    def f(x):
        v.assign_add(x)

    for k in range(1, 5):
        f(tf.constant(float(k), dtype=tf.float64))
    _close(v, 10.0)


def test_read_after_write_inside_sees_the_write():
    v = tf.Variable(np.array([1.0, 2.0]))

    def f(x):
        before = v.read_value()
        v.assign(x)
        after = v.read_value()
        return before, after, after * 2.0

    traced = tf.function(f)
    v.assign(np.array([1.0, 2.0]))
    _close(traced(_c(5.0, 6.0)), ([1.0, 2.0], [5.0, 6.0], [10.0, 12.0]))
    _close(traced(_c(7.0, 8.0)), ([5.0, 6.0], [7.0, 8.0], [14.0, 16.0]))
    _close(v, [7.0, 8.0])


def test_returning_a_variable_after_writing_it():
    v = tf.Variable(np.array([0.0, 1.0]))

    @tf.function
    def f(x):
        v.assign_add(x)
        return v

    _close(f(_c(1.0, 1.0)), [1.0, 2.0])
    _close(f(_c(1.0, 2.0)), [2.0, 4.0])
    _close(v, [2.0, 4.0])


def test_assign_add_and_assign_sub_in_order():
    v = tf.Variable(np.array([1.0, 1.0]))

    def f(x):
        v.assign_add(x)            # v + x
        a = v * 1.0
        v.assign_sub(x * 3.0)      # v + x - 3x
        b = v * 1.0
        v.assign(v * 2.0)          # 2 (v - 2x)
        return a, b, tf.identity(v)

    traced = tf.function(f)
    _close(traced(_c(1.0, 2.0)), ([2.0, 3.0], [-1.0, -3.0], [-2.0, -6.0]))
    _close(v, [-2.0, -6.0])
    _close(traced(_c(0.5, -1.0)), ([-1.5, -7.0], [-3.0, -4.0], [-6.0, -8.0]))
    _close(v, [-6.0, -8.0])
    assert traced.experimental_get_tracing_count() == 1


def test_optimizer_step_traced_matches_eager():
    rng = np.random.default_rng(4)
    data_x, data_y = rng.normal(size=(8, 3)), rng.normal(size=(8,))
    w0, b0 = rng.normal(size=(3,)), np.array(0.1)

    def make():
        return tf.Variable(w0.copy()), tf.Variable(b0.copy())

    def step_fn(w, b, x, y, lr):
        with tf.GradientTape() as tape:
            pred = tf.reduce_sum(x * w, axis=1) + b
            loss = tf.reduce_mean((pred - y) ** 2.0)
        gw, gb = tape.gradient(loss, [w, b])
        w.assign_sub(lr * gw)
        b.assign_sub(lr * gb)
        return loss

    eager_vars, traced_vars = make(), make()
    traced_step = tf.function(step_fn)
    x, y = tf.constant(data_x), tf.constant(data_y)
    for _ in range(5):
        le = step_fn(*eager_vars, x, y, 0.1)
        lt = traced_step(*traced_vars, x, y, 0.1)
        _close(lt, le)
    _close(traced_vars[0], eager_vars[0])
    _close(traced_vars[1], eager_vars[1])
    assert traced_step.experimental_get_tracing_count() == 1


def test_variable_argument_is_captured_by_reference():
    @tf.function
    def f(var, x):
        return var * x

    a = tf.Variable(np.array([1.0, 2.0]))
    b = tf.Variable(np.array([3.0, 4.0]))
    _close(f(a, _c(1.0, 1.0)), [1.0, 2.0])
    _close(f(b, _c(1.0, 1.0)), [3.0, 4.0])
    a.assign(np.array([5.0, 5.0]))
    _close(f(a, _c(2.0, 2.0)), [10.0, 10.0])


def test_variables_made_on_the_first_call_only():
    class Accumulate:
        def __init__(self):
            self.total = None

        @tf.function
        def __call__(self, x):
            if self.total is None:  # made on the first call, captured by every graph after
                self.total = tf.Variable(tf.zeros_like(x))
            self.total.assign_add(x)
            return self.total.read_value()

    acc = Accumulate()
    acc(tf.constant([1.0, 2.0]))
    np.testing.assert_array_equal(acc(tf.constant([1.0, 2.0])).numpy(), [2.0, 4.0])


def test_a_variable_made_by_a_later_trace_raises():
    f = tf.function(lambda x: tf.Variable(x).read_value() * 2.0)
    assert float(f(tf.constant(1.0))) == 2.0
    with pytest.raises(ValueError, match="only supports variables made on its first call"):
        f(tf.constant(3.0))   # the value read by tf.Variable changed: a second trace
