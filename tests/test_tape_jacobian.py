"""GradientTape.jacobian and GradientTape.batch_jacobian.

Shapes for vector and matrix targets and list sources; unconnected sources and target
elements (None or zeros); the loop without pfor (which needs a persistent tape)
against the vectorized default, which runs an op's VJP fewer times than there are
basis cotangents; parallel_iterations chunks; Jacobians of gradients (Hessians), of
Jacobians recorded by an outer tape and through a custom gradient; batch_jacobian
against a per-example loop.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


def test_jacobian_vector_to_vector():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stack([x[0] * x[1], tf.sin(x[2]), x[0] + x[2]])
    j = tape.jacobian(y, x)
    want = [[2.0, 1.0, 0.0], [0.0, 0.0, np.cos(3.0)], [1.0, 0.0, 1.0]]
    assert j.shape == (3, 3) and j.dtype == tf.float32
    np.testing.assert_allclose(j, want, rtol=1e-6, atol=1e-7)


def test_jacobian_matrix_target():
    x = tf.constant([1.0, 2.0, 3.0])
    w = np.arange(6, dtype=np.float32).reshape(2, 3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        # y[i, k] = (sum_j w[i, j] x[j]) * x[k]: a [2, 3] target
        wx = tf.reduce_sum(tf.constant(w) * x[tf.newaxis, :], axis=1)
        y = wx[:, tf.newaxis] * x[tf.newaxis, :]
    j = tape.jacobian(y, x)
    assert j.shape == (2, 3, 3)
    xs = np.array([1.0, 2.0, 3.0], np.float32)
    # d y[i, k] / d x[m] = w[i, m] x[k] + (w x)[i] delta(k, m)
    want = w[:, None, :] * xs[None, :, None] + (w @ xs)[:, None, None] * np.eye(3)[None]
    np.testing.assert_allclose(j, want, rtol=1e-6)


def test_jacobian_with_list_sources():
    x, y = tf.constant([1.0, 2.0]), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = x * y
    jx, jy = tape.jacobian(z, [x, y])
    np.testing.assert_allclose(jx, [[3.0, 0.0], [0.0, 3.0]])
    assert jy.shape == (2,)
    np.testing.assert_allclose(jy, [1.0, 2.0])


def test_jacobian_unconnected_source_none():
    x, z = tf.constant([1.0, 2.0]), tf.constant([5.0, 6.0, 7.0])
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    jx, jz = tape.jacobian(y, [x, z])
    assert jz is None
    np.testing.assert_allclose(jx, 2.0 * np.eye(2))


def test_jacobian_unconnected_source_zero():
    x, z = tf.constant([1.0, 2.0]), tf.constant([5.0, 6.0, 7.0])
    with tf.GradientTape() as tape:
        tape.watch([x, z])
        y = x * 2.0
    jx, jz = tape.jacobian(y, [x, z], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert jz.shape == (2, 3)
    np.testing.assert_array_equal(jz, np.zeros((2, 3)))
    np.testing.assert_allclose(jx, 2.0 * np.eye(2))


def test_jacobian_rows_of_unconnected_target_elements_are_zero():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.stack([x[0] * 2.0, tf.constant(5.0), x[1] * x[0]])
    want = [[2.0, 0.0], [0.0, 0.0], [2.0, 1.0]]
    np.testing.assert_array_equal(tape.jacobian(y, x), want)
    np.testing.assert_array_equal(tape.jacobian(y, x, experimental_use_pfor=False), want)


def test_jacobian_of_target_independent_of_source():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.constant([1.0, 2.0, 3.0]) * 2.0
    assert tape.jacobian(y, x) is None
    z = tape.jacobian(y, x, unconnected_gradients=tf.UnconnectedGradients.ZERO)
    assert z.shape == (3, 2)
    np.testing.assert_array_equal(z, np.zeros((3, 2)))


def test_jacobian_without_pfor_needs_persistent_tape():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError):
        tape.jacobian(y, x, experimental_use_pfor=False)


def test_jacobian_without_pfor_on_persistent_tape_matches_pfor():
    x = tf.constant([1.0, 2.0, -1.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.tanh(x) * tf.reduce_sum(x)
    loop = tape.jacobian(y, x, experimental_use_pfor=False)
    vec = tape.jacobian(y, x)
    np.testing.assert_allclose(loop, vec, rtol=1e-6)
    xs = np.array([1.0, 2.0, -1.0])
    want = np.diag(1 - np.tanh(xs) ** 2) * xs.sum() + np.tanh(xs)[:, None]
    np.testing.assert_allclose(vec, want, rtol=1e-5)


def test_jacobian_of_variable():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = v * v
    np.testing.assert_allclose(tape.jacobian(y, v), [[2.0, 0.0], [0.0, 4.0]])


def test_jacobian_parallel_iterations_chunks_give_same_values():
    xs = np.array([0.3, -0.7, 1.2, 2.0, -1.5])
    x = tf.constant(xs)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.exp(x) * x
    want = np.diag(np.exp(xs) * (1 + xs))
    for chunk in (None, 1, 2, 5, 7):
        np.testing.assert_allclose(tape.jacobian(y, x, parallel_iterations=chunk), want,
                                   rtol=1e-12)


def test_jacobian_of_gradient_is_hessian():
    xs = np.array([0.3, -0.7, 1.2])
    x = tf.constant(xs)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x[::-1])
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    n = 3
    want = np.zeros((n, n))
    for i in range(n):
        want[i, i] += -np.sin(xs[i]) * xs[n - 1 - i]
        want[i, n - 1 - i] += np.cos(xs[i])
        want[n - 1 - i, i] += np.cos(xs[i])
    np.testing.assert_allclose(h, want, rtol=1e-12, atol=1e-14)


def test_jacobian_recorded_by_outer_tape_is_differentiable():
    xs = np.array([0.3, -0.7, 1.2])

    def jac(xv, outer=None):
        x = tf.constant(xv)
        if outer is not None:
            outer.watch(x)
        with tf.GradientTape() as t:
            t.watch(x)
            y = tf.sin(x) * tf.reduce_sum(x)
        return x, t.jacobian(y, x)

    with tf.GradientTape() as outer:
        x, j = jac(xs, outer)
    jj = outer.jacobian(j, x)
    assert jj.shape == (3, 3, 3)
    eps = 1e-6
    fd = np.stack([(np.asarray(jac(xs + eps * e)[1]) - np.asarray(jac(xs - eps * e)[1])) / (2 * eps)
                   for e in np.eye(3)], axis=-1)
    np.testing.assert_allclose(jj, fd, atol=1e-6)


def test_jacobian_through_custom_gradient():
    @tf.custom_gradient
    def f(x):
        return tf.identity(x), lambda dy: 3.0 * dy

    xs = np.array([0.3, -0.7, 1.2])
    x = tf.constant(xs)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x) * x
    # d/dx (f(x) x) = 3 x (custom) + f(x)
    np.testing.assert_allclose(tape.jacobian(y, x), np.diag(4 * xs), rtol=1e-12)


def _per_example_jacobians(f, xs):
    out = []
    for i in range(xs.shape[0]):
        xi = tf.constant(xs[i])
        with tf.GradientTape() as tape:
            tape.watch(xi)
            yi = f(xi[tf.newaxis])[0]
        out.append(np.asarray(tape.jacobian(yi, xi)))
    return np.stack(out)


def test_batch_jacobian_matches_per_example_loop():
    rng = np.random.default_rng(0)
    w = tf.constant(rng.standard_normal((2, 4)).astype(np.float32))
    f = lambda x: tf.tanh(tf.matmul(x, w)) * x[:, :1]  # noqa: E731
    xs = rng.standard_normal((3, 2)).astype(np.float32)
    x = tf.constant(xs)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (3, 4, 2)
    np.testing.assert_allclose(bj, _per_example_jacobians(f, xs), rtol=1e-5, atol=1e-6)


def test_batch_jacobian_without_pfor_needs_persistent_tape():
    x = tf.constant([[1.0, 2.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(RuntimeError):
        tape.batch_jacobian(y, x, experimental_use_pfor=False)


def test_batch_jacobian_batch_size_mismatch_raises():
    x = tf.constant([[1.0, 2.0], [3.0, 4.0]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x, axis=0)[tf.newaxis]  # batch 1 vs 2
    with pytest.raises(ValueError):
        tape.batch_jacobian(y, x)


def _count_vjp_calls(monkeypatch, name):
    from tapeflow.core import registry

    prim = registry()[name]
    original = prim.rules["vjp"]
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setitem(prim.rules, "vjp", counting)
    return calls


def test_jacobian_is_vectorized_by_default(monkeypatch):
    n = 16
    x = tf.constant(np.linspace(-1.0, 1.0, n))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x)
    calls = _count_vjp_calls(monkeypatch, "sin")
    j = tape.jacobian(y, x)
    np.testing.assert_allclose(j, np.diag(np.cos(np.linspace(-1.0, 1.0, n))), rtol=1e-12)
    assert len(calls) < n, f"sin's VJP ran {len(calls)} times for {n} basis cotangents"


def test_batch_jacobian_is_vectorized_by_default(monkeypatch):
    m = 8
    x = tf.constant(np.linspace(-1.0, 1.0, 3 * m).reshape(3, m))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.sin(x)
    calls = _count_vjp_calls(monkeypatch, "sin")
    bj = tape.batch_jacobian(y, x)
    assert bj.shape == (3, m, m)
    assert len(calls) < m, f"sin's VJP ran {len(calls)} times for {m} basis cotangents"


def test_jacobian_loop_without_pfor_gives_same_values(monkeypatch):
    x = tf.constant(np.linspace(-1.0, 1.0, 5))
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = tf.sin(x) * x
    np.testing.assert_allclose(tape.jacobian(y, x, experimental_use_pfor=False),
                               tape.jacobian(y, x), rtol=1e-12)


def test_batch_jacobian_needs_a_source_and_a_target_of_rank_two():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * 2.0
        xs = tf.constant([[1.0, 2.0], [3.0, 4.0]])
        tape.watch(xs)
        total = tf.reduce_sum(xs, axis=1)  # one number per example: rank 1, as TensorFlow refuses
    with pytest.raises(ValueError, match="`source` \\(2,\\) must have rank >= 2"):
        tape.batch_jacobian(y, x)
    with pytest.raises(ValueError, match="`target` \\(2,\\) and `source` \\(2, 2\\) must "
                                         "have rank >= 2"):
        tape.batch_jacobian(total, xs)
