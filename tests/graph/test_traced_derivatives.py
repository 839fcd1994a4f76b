"""Derivatives inside and around traced functions: a replay equals eager at NEW inputs.

Inside a traced function: GradientTape (gradient, jacobian, batch_jacobian, nested
tapes), ForwardAccumulator (jvp, nested, forward-over-backward), vmap and the
grad/jacfwd/jacrev/hessian transforms. Around a replayed call: tapes, accumulators
and vmap differentiate or batch the replay as they would the Python code. And traced
functions called inside traced functions, with or without derivatives.
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import X0, X1, X2, _close, _replays_like_eager, _xs

import tapeflow as tf


def test_tape_gradient_inside():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x * x)
        return tape.gradient(y, x)

    traced = _replays_like_eager(f, (tf.constant(X0),), _xs(X1, X2))
    _close(traced(tf.constant(X1)), np.cos(X1) * X1 ** 2 + 2 * X1 * np.sin(X1))


def test_tape_jacobian_inside():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.sin(x) * x[0] + tf.exp(x) * x[2]
        return tape.jacobian(y, x)

    _replays_like_eager(f, (tf.constant(X0),), _xs(X1, X2))


def test_tape_batch_jacobian_inside():
    rng = np.random.default_rng(0)
    b0, b1 = rng.normal(size=(4, 3)), rng.normal(size=(4, 3))

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.tanh(x) * tf.reduce_sum(x * x, axis=1, keepdims=True)
        return tape.batch_jacobian(y, x)

    _replays_like_eager(f, (tf.constant(b0),), _xs(b1))


def test_nested_tapes_second_derivative_inside():
    def f(x):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(x ** 3.0 * tf.sin(x))
            g = inner.gradient(y, x)
        return outer.gradient(g, x)

    traced = _replays_like_eager(f, (tf.constant(X0),), _xs(X1, X2))
    x = X1
    expected = 6 * x * np.sin(x) + 6 * x ** 2 * np.cos(x) - x ** 3 * np.sin(x)
    _close(traced(tf.constant(x)), expected, rtol=1e-9)


def test_forward_accumulator_jvp_inside():
    def f(x, v):
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            y = tf.sin(x) * x
        return acc.jvp(y)

    v0, v1 = np.array([1.0, 0.0, 2.0]), np.array([-1.0, 3.0, 0.5])
    traced = _replays_like_eager(f, (tf.constant(X0), tf.constant(v0)),
                                 [(tf.constant(X1), tf.constant(v1))])
    _close(traced(tf.constant(X2), tf.constant(v1)), (np.cos(X2) * X2 + np.sin(X2)) * v1)


def test_nested_accumulators_inside():
    def f(x, v):
        with tf.autodiff.ForwardAccumulator(x, v) as outer:
            with tf.autodiff.ForwardAccumulator(x, v) as inner:
                y = tf.sin(x) * x
            d1 = inner.jvp(y)
        return outer.jvp(d1)

    v0, v1 = np.array([1.0, 1.0, 1.0]), np.array([0.5, -2.0, 1.0])
    traced = _replays_like_eager(f, (tf.constant(X0), tf.constant(v0)),
                                 [(tf.constant(X1), tf.constant(v1))])
    x = X2
    second = 2 * np.cos(x) - x * np.sin(x)
    _close(traced(tf.constant(x), tf.constant(v1)), second * v1 ** 2, rtol=1e-9)


def test_forward_over_backward_hvp_inside():
    def f(x, v):
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            with tf.GradientTape() as tape:
                tape.watch(x)
                y = tf.reduce_sum(x ** 3.0) * x[0]
            g = tape.gradient(y, x)
        return acc.jvp(g)

    v0, v1 = np.array([1.0, 0.0, 0.0]), np.array([0.3, -1.0, 2.0])
    _replays_like_eager(f, (tf.constant(X0), tf.constant(v0)),
                        [(tf.constant(X1), tf.constant(v1)), (tf.constant(X2), tf.constant(v0))])


def test_variable_hvp_inside_matches_spec_example():
    v = tf.Variable([1.0, 2.0])

    @tf.function
    def hvp(direction):
        with tf.autodiff.ForwardAccumulator(v, direction) as acc:
            with tf.GradientTape() as tape:
                y = tf.reduce_sum(v ** 3.0)
            backward = tape.gradient(y, v)
        return backward, acc.jvp(backward)

    _close(hvp(tf.constant([1.0, 0.0])), ([3.0, 12.0], [6.0, 0.0]), rtol=1e-6)
    _close(hvp(tf.constant([0.0, 1.0])), ([3.0, 12.0], [0.0, 12.0]), rtol=1e-6)
    v.assign([2.0, 1.0])
    _close(hvp(tf.constant([1.0, 1.0])), ([12.0, 3.0], [12.0, 6.0]), rtol=1e-6)
    assert hvp.experimental_get_tracing_count() == 1


def test_vmap_inside():
    rng = np.random.default_rng(1)
    b0, b1 = rng.normal(size=(5, 3)), rng.normal(size=(5, 3))

    def f(xs):
        return tf.vmap(lambda r: tf.reduce_sum(r * r) * tf.sin(r))(xs)

    traced = _replays_like_eager(f, (tf.constant(b0),), _xs(b1))
    _close(traced(tf.constant(b1)), (b1 * b1).sum(1, keepdims=True) * np.sin(b1))


def _scalar_fn(x):
    return tf.reduce_sum(x ** 3.0) * x[0] + tf.reduce_sum(tf.sin(x)) * tf.reduce_sum(x * x)


def _vector_fn(x):
    return tf.stack([x[0] * x[1], tf.sin(x[2]), tf.exp(x[0]) * x[2], x[1] ** 3.0])


@pytest.mark.parametrize("transform, fn", [
    (tf.grad, _scalar_fn),
    (tf.jacfwd, _vector_fn),
    (tf.jacrev, _vector_fn),
    (tf.hessian, _scalar_fn),
], ids=["grad", "jacfwd", "jacrev", "hessian"])
def test_transforms_inside(transform, fn):
    derivative = transform(fn)
    _replays_like_eager(lambda x: derivative(x), (tf.constant(X0),), _xs(X1, X2), rtol=1e-9)


def test_tape_around_replayed_call():
    def f(x):
        return tf.reduce_sum(tf.sin(x) * tf.exp(x))

    traced = tf.function(f)
    traced(tf.constant(X0))                      # trace with no tape
    results = []
    for fn in (traced, f):
        x = tf.constant(X1)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = fn(x)
        results.append((y, tape.gradient(y, x)))
    _close(results[0], results[1])
    _close(results[0][1], (np.cos(X1) + np.sin(X1)) * np.exp(X1))
    assert traced.experimental_get_tracing_count() == 1


def test_tape_around_replayed_call_captured_variable():
    w = tf.Variable(np.array([0.5, -1.0, 2.0]))

    def f(x):
        return tf.reduce_sum(tf.tanh(w * x))

    traced = tf.function(f)
    traced(tf.constant(X0))
    results = []
    for fn in (traced, f):
        with tf.GradientTape() as tape:
            y = fn(tf.constant(X1))
        results.append(tape.gradient(y, w))
    _close(results[0], results[1])
    assert results[0] is not None


def test_nested_tapes_around_replayed_call():
    traced = tf.function(lambda x: tf.reduce_sum(x ** 3.0 * tf.sin(x)))
    traced(tf.constant(X0))
    x = tf.constant(X1)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = traced(x)
        g = inner.gradient(y, x)
    h = outer.gradient(g, x)
    _close(h, 6 * X1 * np.sin(X1) + 6 * X1 ** 2 * np.cos(X1) - X1 ** 3 * np.sin(X1), rtol=1e-9)


def test_outer_tape_around_replayed_call_that_computes_a_gradient():
    @tf.function
    def grad_f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(x ** 3.0 * tf.sin(x))
        return tape.gradient(y, x)

    grad_f(tf.constant(X0))
    x = tf.constant(X1)
    with tf.GradientTape() as outer:
        outer.watch(x)
        g = grad_f(x)
    h = outer.gradient(g, x)   # diagonal Hessian summed over rows == its diagonal here
    _close(h, 6 * X1 * np.sin(X1) + 6 * X1 ** 2 * np.cos(X1) - X1 ** 3 * np.sin(X1), rtol=1e-9)
    assert grad_f.experimental_get_tracing_count() == 1


def test_forward_accumulator_around_replayed_call():
    def f(x):
        return tf.sin(x) * tf.exp(x)

    traced = tf.function(f)
    traced(tf.constant(X0))
    v = tf.constant(np.array([1.0, -2.0, 0.5]))
    jvps = []
    for fn in (traced, f):
        x = tf.constant(X1)
        with tf.autodiff.ForwardAccumulator(x, v) as acc:
            y = fn(x)
        jvps.append(acc.jvp(y))
    _close(jvps[0], jvps[1])
    _close(jvps[0], (np.cos(X1) + np.sin(X1)) * np.exp(X1) * v.numpy())


def test_forward_accumulator_around_replayed_call_captured_variable():
    w = tf.Variable(np.array([0.5, -1.0, 2.0]))
    dw = tf.constant(np.array([1.0, 2.0, -1.0]))

    def f(x):
        return tf.sin(w * x) * w

    traced = tf.function(f)
    traced(tf.constant(X0))
    jvps = []
    for fn in (traced, f):
        with tf.autodiff.ForwardAccumulator(w, dw) as acc:
            y = fn(tf.constant(X1))
        jvps.append(acc.jvp(y))
    assert jvps[0] is not None
    _close(jvps[0], jvps[1])


def test_vmap_around_traced_per_example_gradient():
    rng = np.random.default_rng(5)
    batch = rng.normal(size=(4, 3))

    @tf.function
    def grad_f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x) * x[0]
        return tape.gradient(y, x)

    grad_f(tf.constant(X0))
    out = tf.vmap(grad_f)(tf.constant(batch))
    expected = np.stack([np.asarray(grad_f.python_function(tf.constant(r))) for r in batch])
    _close(out, expected)


def test_vmap_around_traced_function():
    rng = np.random.default_rng(2)
    batch = rng.normal(size=(6, 3))

    def f(x):
        return tf.reduce_sum(tf.sin(x) * x) * x

    traced = tf.function(f)
    traced(tf.constant(X0))                        # traced per example, outside vmap
    out = tf.vmap(traced)(tf.constant(batch))
    expected = np.stack([np.asarray(f(tf.constant(r))) for r in batch])
    _close(out, expected)


def test_vmap_around_traced_function_traced_under_vmap():
    rng = np.random.default_rng(3)
    b0, b1 = rng.normal(size=(6, 3)), rng.normal(size=(6, 3))

    def f(x):
        return tf.reduce_sum(tf.sin(x) * x) * x

    traced = tf.function(f)
    for batch in (b0, b1):
        out = tf.vmap(traced)(tf.constant(batch))
        _close(out, np.stack([np.asarray(f(tf.constant(r))) for r in batch]))
    # and the per-example graph it made replays correctly without vmap
    _close(traced(tf.constant(X2)), f(tf.constant(X2)))


def test_traced_function_with_guard_inside_traced_function():
    inner = tf.function(lambda x: x * 2.0 if tf.reduce_sum(x) > 0 else -x)

    def outer_fn(x):
        return inner(x) + 1.0

    outer = tf.function(outer_fn)
    for x in (X0, -X0 * 3.0, X1, -X1):   # sums: +, -, +, -
        _close(outer(tf.constant(x)), outer_fn(tf.constant(x)))
        _close(inner(tf.constant(x)), inner.python_function(tf.constant(x)))
    assert outer.experimental_get_tracing_count() == 2


def test_traced_function_inside_traced_function_inner_cached_first():
    inner = tf.function(lambda x: tf.sin(x) * x)
    inner(tf.constant(X0))                         # cached before the outer trace

    def outer_fn(x):
        return inner(x) * 2.0 + inner(x * x)

    outer = _replays_like_eager(outer_fn, (tf.constant(X0),), _xs(X1, X2))
    _close(outer(tf.constant(X1)), 2 * np.sin(X1) * X1 + np.sin(X1 ** 2) * X1 ** 2)
    _close(inner(tf.constant(X2)), np.sin(X2) * X2)


def test_traced_function_inside_traced_function_inner_traced_inside():
    inner = tf.function(lambda x: tf.exp(x) - x)
    outer = tf.function(lambda x: inner(x) * inner(-x))
    for x in (X0, X1, X2):
        _close(outer(tf.constant(x)), (np.exp(x) - x) * (np.exp(-x) + x))
        _close(inner(tf.constant(x)), np.exp(x) - x)
    assert outer.experimental_get_tracing_count() == 1


def test_gradient_inside_traced_function_of_an_inner_traced_function():
    inner = tf.function(lambda x: tf.reduce_sum(tf.sin(x) * x))

    def outer_fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = inner(x)
        return tape.gradient(y, x)

    _replays_like_eager(outer_fn, (tf.constant(X0),), _xs(X1, X2))
