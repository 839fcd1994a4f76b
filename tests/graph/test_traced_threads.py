"""Traced functions called from several threads at once.

Concurrent calls give the right results, also when they take different branches or
compute gradients, and concurrent first calls trace the function only once.
"""

from __future__ import annotations

import copy
import pickle
import threading
import time

import numpy as np
from graph_helpers import _c, _close

import tapeflow as tf
from thread_helpers import run_in_threads


def _run_threads(worker, n=8):
    errors = run_in_threads(worker, n, barrier=True)
    if errors:
        raise errors[0]


def test_concurrent_calls_give_right_results():
    @tf.function
    def f(x):
        return tf.sin(x) * x + tf.exp(-x * x)

    f(_c(0.0, 0.0, 0.0))

    def worker(i):
        for k in range(20):
            v = np.array([i, k, i - k], dtype=np.float64) * 0.1
            _close(f(tf.constant(v)), np.sin(v) * v + np.exp(-v * v))

    _run_threads(worker)
    assert f.experimental_get_tracing_count() == 1


def test_concurrent_calls_taking_different_branches():
    @tf.function
    def f(x):
        if tf.reduce_sum(x) > 0:
            return x * 2.0
        return tf.sin(x)

    def worker(i):
        for k in range(10):
            sign = 1.0 if (i + k) % 2 else -1.0
            v = sign * np.array([1.0 + i, 0.5 * k + 0.1])
            expected = v * 2.0 if v.sum() > 0 else np.sin(v)
            _close(f(tf.constant(v)), expected)

    _run_threads(worker)
    assert f.experimental_get_tracing_count() == 2


def test_concurrent_calls_with_tapes_give_right_results():
    @tf.function
    def grad_f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x)
        return tape.gradient(y, x)

    def worker(i):
        for k in range(10):
            v = np.array([i, -k, 0.5 * i * k], dtype=np.float64) * 0.1
            _close(grad_f(tf.constant(v)), np.cos(v) * v + np.sin(v))

    _run_threads(worker)


def test_concurrent_first_calls_trace_once():
    runs = []

    @tf.function
    def f(x):
        runs.append(threading.get_ident())
        time.sleep(0.05)             # a slow Python body: tracing takes a while
        return tf.sin(x) * x

    def worker(i):
        for k in range(3):
            v = np.array([i, k], dtype=np.float64) * 0.3
            _close(f(tf.constant(v)), np.sin(v) * v)

    _run_threads(worker)
    assert len(runs) == 1
    assert f.experimental_get_tracing_count() == 1


# ---------------------------------------------------------------- atomic variable updates
def test_concurrent_assign_add_is_atomic():
    v = tf.Variable(0.0, dtype=tf.float64)

    def worker(i):
        for _ in range(2000):
            v.assign_add(1.0)

    _run_threads(worker)
    assert float(v) == 16000.0


def test_concurrent_assign_sub_and_add_is_atomic():
    v = tf.Variable([0.0, 0.0], dtype=tf.float64)

    def worker(i):
        for _ in range(1000):
            if i % 2:
                v.assign_sub([1.0, 2.0])
            else:
                v.assign_add([2.0, 4.0])

    _run_threads(worker)
    np.testing.assert_array_equal(v.numpy(), [4000.0, 8000.0])


def test_concurrent_traced_assign_add_is_atomic():
    v = tf.Variable(0.0, dtype=tf.float64)
    step = tf.function(lambda: v.assign_add(1.0).read_value())
    step()

    def worker(i):
        for _ in range(1000):
            step()

    _run_threads(worker)
    assert float(v) == 8001.0


def test_concurrent_interpreted_replays_update_atomically():
    v = tf.Variable(0.0, dtype=tf.float64)

    @tf.function
    def step(x):
        v.assign_add(x)
        return v.read_value() * x

    step(tf.constant(1.0, tf.float64))

    def worker(i):
        x = tf.constant(1.0, tf.float64)
        for _ in range(300):
            with tf.GradientTape() as tape:  # a tape around the call: the re-binding replay
                tape.watch(x)
                step(x)

    _run_threads(worker)
    assert float(v) == 2401.0


def test_a_variable_copies_as_a_new_variable():
    v = tf.Variable([1.0, 2.0], name="w")
    for twin in (copy.copy(v), copy.deepcopy(v), pickle.loads(pickle.dumps(v))):
        assert twin is not v and twin.name == "w:0"
        np.testing.assert_array_equal(twin.numpy(), [1.0, 2.0])
        twin.assign([5.0, 6.0])
        np.testing.assert_array_equal(v.numpy(), [1.0, 2.0])
