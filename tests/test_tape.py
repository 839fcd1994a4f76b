"""API.md section 3: reverse mode with GradientTape, custom_gradient, recompute_grad.

Where the contract is silent the reference is TensorFlow 2's documented behaviour.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tapeflow as tf


def _np(x):
    return np.asarray(x)


# ---------------------------------------------------------------- watch

def test_constant_not_watched_has_no_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        y = x * x
    assert tape.gradient(y, x) is None


def test_watch_tensor():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x)
    assert g.dtype == tf.float32
    np.testing.assert_allclose(g, 6.0)


def test_watch_nested_structure():
    a, b, c = tf.constant(1.0), tf.constant(2.0), tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch({"a": a, "rest": [b, (c,)]})
        y = a * b * c
    ga, gb, gc = tape.gradient(y, [a, b, c])
    np.testing.assert_allclose([_np(ga), _np(gb), _np(gc)], [6.0, 3.0, 2.0])


def test_watch_variable_explicitly():
    v = tf.Variable(2.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
        y = v * v * v
    np.testing.assert_allclose(tape.gradient(y, v), 12.0)


def test_watch_non_tensor_raises():
    with tf.GradientTape() as tape:
        with pytest.raises((TypeError, ValueError)):
            tape.watch([tf.constant(1.0), 3.0])


def test_trainable_variables_watched_automatically():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    np.testing.assert_allclose(tape.gradient(y, v), [2.0, 4.0])


def test_watch_accessed_variables_false_does_not_watch():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, v) is None


def test_non_trainable_variable_not_watched():
    v = tf.Variable([1.0, 2.0], trainable=False)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(v * v)
    assert tape.gradient(y, v) is None
    assert tape.watched_variables() == ()


def test_non_trainable_variable_watched_explicitly():
    v = tf.Variable(3.0, trainable=False)
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = v * v
    np.testing.assert_allclose(tape.gradient(y, v), 6.0)


def test_watched_variables_in_access_order():
    a, b, c = tf.Variable(1.0, name="a"), tf.Variable(2.0, name="b"), tf.Variable(3.0, name="c")
    frozen = tf.Variable(4.0, trainable=False)
    with tf.GradientTape() as tape:
        y = b * a + frozen
    watched = tape.watched_variables()
    assert len(watched) == 2
    assert watched[0] is b and watched[1] is a
    assert all(w is not c for w in watched)


def test_watched_variables_includes_explicitly_watched():
    v = tf.Variable(1.0)
    with tf.GradientTape(watch_accessed_variables=False) as tape:
        tape.watch(v)
    assert len(tape.watched_variables()) == 1 and tape.watched_variables()[0] is v


def test_watched_variables_survive_a_non_persistent_gradient_call():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        y = v * 2.0
    tape.gradient(y, v)
    assert len(tape.watched_variables()) == 1 and tape.watched_variables()[0] is v


# ---------------------------------------------------------------- gradient structures

def test_gradient_sources_structure_dict():
    x, y = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = x * y
    g = tape.gradient(z, {"x": x, "y": y})
    assert isinstance(g, dict) and set(g) == {"x", "y"}
    np.testing.assert_allclose(g["x"], 5.0)
    np.testing.assert_allclose(g["y"], 2.0)


def test_gradient_sources_structure_nested_list_tuple():
    x, y = tf.constant(2.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = x * x * y
    g = tape.gradient(z, [x, (y,)])
    assert isinstance(g, list) and isinstance(g[1], tuple) and len(g[1]) == 1
    np.testing.assert_allclose(g[0], 20.0)
    np.testing.assert_allclose(g[1][0], 4.0)


def test_gradient_of_list_target_sums():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y1 = x * x
        y2 = x * 5.0
    np.testing.assert_allclose(tape.gradient([y1, y2], x), 6.0 + 5.0)


def test_gradient_of_dict_target_sums():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        ys = {"sq": x * x, "cube": x * x * x}
    np.testing.assert_allclose(tape.gradient(ys, x), 6.0 + 27.0)


def test_gradient_of_non_scalar_target_sums_elements():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    np.testing.assert_allclose(tape.gradient(y, x), [2.0, 4.0, 6.0])


def test_gradient_with_respect_to_intermediate():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
        z = y * 3.0 + x
    np.testing.assert_allclose(tape.gradient(z, y), 3.0)


def test_gradient_of_target_with_respect_to_itself_is_ones():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
    np.testing.assert_array_equal(tape.gradient(x, x), [1.0, 1.0])


def test_output_gradients_weight_the_target():
    x = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    g = tape.gradient(y, x, output_gradients=tf.constant([1.0, 10.0, 100.0]))
    np.testing.assert_allclose(g, [2.0, 40.0, 600.0])


def test_output_gradients_for_list_target():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y1, y2 = x * x, x * 3.0
    g = tape.gradient([y1, y2], x, output_gradients=[tf.constant(10.0), tf.constant(100.0)])
    np.testing.assert_allclose(g, 10.0 * 4.0 + 100.0 * 3.0)


def test_output_gradients_wrong_shape_raises():
    x = tf.constant([1.0, 2.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises((ValueError, tf.errors.InvalidArgumentError)):
        tape.gradient(y, x, output_gradients=tf.constant([1.0, 2.0, 3.0]))


# ---------------------------------------------------------------- unconnected gradients

def _unconnected_setup():
    x, z = tf.constant([1.0, 2.0]), tf.constant([3.0, 4.0, 5.0])
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch([x, z])
        y = tf.reduce_sum(x * x)
    return tape, y, x, z


def test_unconnected_gradients_none_by_default():
    tape, y, x, z = _unconnected_setup()
    gx, gz = tape.gradient(y, [x, z])
    assert gz is None
    np.testing.assert_allclose(gx, [2.0, 4.0])


@pytest.mark.parametrize("mode", [tf.UnconnectedGradients.NONE, "none"])
def test_unconnected_gradients_none_explicit(mode):
    tape, y, x, z = _unconnected_setup()
    assert tape.gradient(y, z, unconnected_gradients=mode) is None


@pytest.mark.parametrize("mode", [tf.UnconnectedGradients.ZERO, "zero"])
def test_unconnected_gradients_zero(mode):
    tape, y, x, z = _unconnected_setup()
    gx, gz = tape.gradient(y, [x, z], unconnected_gradients=mode)
    assert gz.shape == (3,) and gz.dtype == tf.float32
    np.testing.assert_array_equal(gz, [0.0, 0.0, 0.0])
    np.testing.assert_allclose(gx, [2.0, 4.0])


def test_unconnected_gradients_invalid_value_raises():
    tape, y, x, z = _unconnected_setup()
    with pytest.raises(ValueError):
        tape.gradient(y, z, unconnected_gradients="sometimes")


def test_unconnected_variable_zero():
    v = tf.Variable([1.0, 2.0])
    w = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = w * 2.0
    g = tape.gradient(y, [v, w], unconnected_gradients=tf.UnconnectedGradients.ZERO)
    np.testing.assert_array_equal(g[0], [0.0, 0.0])
    np.testing.assert_allclose(g[1], 2.0)


# ---------------------------------------------------------------- persistence

def test_non_persistent_tape_second_gradient_raises_runtime_error():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.gradient(y, x)


def test_non_persistent_tape_jacobian_after_gradient_raises():
    x = tf.constant([2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    tape.gradient(y, x)
    with pytest.raises(RuntimeError):
        tape.jacobian(y, x)


def test_persistent_tape_allows_several_calls():
    x = tf.constant(3.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        z = y * y
    np.testing.assert_allclose(tape.gradient(y, x), 6.0)
    np.testing.assert_allclose(tape.gradient(z, x), 4 * 27.0)
    np.testing.assert_allclose(tape.gradient(z, y), 18.0)
    np.testing.assert_allclose(tape.gradient(y, x), 6.0)
    np.testing.assert_allclose(tape.jacobian(y, x), 6.0)


def test_reentering_a_tape_continues_recording():
    x = tf.constant(2.0)
    tape = tf.GradientTape(persistent=True)
    with tape:
        tape.watch(x)
        y = x * x
    with tape:
        z = y * x
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)
    np.testing.assert_allclose(tape.gradient(y, x), 4.0)


def test_tape_cannot_be_entered_twice_at_once():
    tape = tf.GradientTape()
    with tape:
        with pytest.raises((RuntimeError, ValueError)):
            tape.__enter__()


# ---------------------------------------------------------------- stop_recording, reset

def test_stop_recording():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        with tape.stop_recording():
            y = x * x
        z = x * x * x
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)


def test_stop_recording_resumes_on_exit():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with tape.stop_recording():
            a = x * 10.0
        y = a + x * x
    # a was computed unrecorded: only x * x contributes
    np.testing.assert_allclose(tape.gradient(y, x), 4.0)


def test_stop_recording_outside_context_raises():
    tape = tf.GradientTape()
    with pytest.raises(RuntimeError):
        with tape.stop_recording():
            pass


def test_gradient_inside_stop_recording_is_not_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x * x
        with tape.stop_recording():
            g = tape.gradient(y, x)
    np.testing.assert_allclose(g, 12.0)
    assert tape.gradient(g, x) is None


def test_stop_recording_pauses_only_its_own_tape():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            with inner.stop_recording():
                y = x * x
    assert inner.gradient(y, x) is None
    np.testing.assert_allclose(outer.gradient(y, x), 4.0)


def test_reset_forgets_recorded_ops():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x * x
        tape.reset()
        tape.watch(x)
        z = x * x * x
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 12.0)


def test_reset_forgets_watches():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        tape.reset()
        z = x * x
    assert tape.gradient(z, x) is None


def test_reset_forgets_watched_variables():
    v = tf.Variable(1.0)
    with tf.GradientTape() as tape:
        _ = v * 2.0
        assert len(tape.watched_variables()) == 1
        tape.reset()
        assert tape.watched_variables() == ()


# ---------------------------------------------------------------- higher order

def test_nested_tapes_second_and_third_derivatives():
    x = tf.constant(2.0)
    with tf.GradientTape() as t3:
        t3.watch(x)
        with tf.GradientTape() as t2:
            t2.watch(x)
            with tf.GradientTape() as t1:
                t1.watch(x)
                y = x ** 3
            d1 = t1.gradient(y, x)
        d2 = t2.gradient(d1, x)
    d3 = t3.gradient(d2, x)
    np.testing.assert_allclose(d1, 12.0)   # 3 x^2
    np.testing.assert_allclose(d2, 12.0)   # 6 x
    np.testing.assert_allclose(d3, 6.0)    # 6


def test_nested_tapes_second_derivative_of_variable():
    v = tf.Variable(0.5)
    with tf.GradientTape() as outer:
        with tf.GradientTape() as inner:
            y = tf.sin(v)
        dy = inner.gradient(y, v)
    d2y = outer.gradient(dy, v)
    np.testing.assert_allclose(dy, np.cos(0.5), rtol=1e-6)
    np.testing.assert_allclose(d2y, -np.sin(0.5), rtol=1e-6)


def test_gradient_inside_own_persistent_context_is_recorded():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 3
        dy = tape.gradient(y, x)
    d2y = tape.gradient(dy, x)
    np.testing.assert_allclose(dy, 12.0)
    np.testing.assert_allclose(d2y, 12.0)


def test_inner_gradient_outside_outer_tape_is_not_differentiable_further():
    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = x ** 3
    dy = inner.gradient(y, x)  # computed after the outer tape exited: not recorded
    assert outer.gradient(dy, x) is None


# ---------------------------------------------------------------- jacobian

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
    original = prim.vjp
    calls = []

    def counting(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr(prim, "vjp", counting)
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


def test_gather_gradient_is_dense_sum():
    p = tf.constant([1.0, 2.0, 3.0, 4.0])
    with tf.GradientTape() as tape:
        tape.watch(p)
        y = tf.gather(p, [0, 2, 0]) * tf.constant([1.0, 10.0, 100.0])
    g = tape.gradient(y, p)
    assert isinstance(g, tf.Tensor)
    assert g.shape == (4,)
    np.testing.assert_array_equal(g, [101.0, 0.0, 10.0, 0.0])


# ---------------------------------------------------------------- stop_gradient

def test_stop_gradient_blocks_gradient():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.stop_gradient(x)
    np.testing.assert_allclose(tape.gradient(y, x), 3.0)


def test_stop_gradient_alone_is_unconnected():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.stop_gradient(x * x)
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(y, 9.0)


# ---------------------------------------------------------------- dtypes and errors

def test_integer_source_gives_none_with_warning():
    x = tf.constant(3)
    with tf.GradientTape() as tape:
        with pytest.warns(UserWarning, match="int32"):
            tape.watch(x)
        y = x * x
    with pytest.warns(UserWarning, match="int32"):
        g = tape.gradient(y, x)
    assert g is None


def test_integer_source_among_float_sources():
    x, n = tf.constant(2.0), tf.constant(3)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * tf.cast(n, tf.float32)
    with pytest.warns(UserWarning):
        gx, gn = tape.gradient(y, [x, n], unconnected_gradients="zero")
    assert gn is None
    np.testing.assert_allclose(gx, 3.0)


def test_non_tensor_source_raises_type_error_naming_element():
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * x
    with pytest.raises(TypeError, match="element 1") as info:
        tape.gradient(y, [x, 2.0])
    assert "float" in str(info.value)


def test_gradient_through_broadcasting_sums_back():
    a = tf.constant([[1.0], [2.0], [3.0]])        # [3, 1]
    b = tf.constant([10.0, 20.0, 30.0, 40.0])    # [4]
    s = tf.constant(2.0)                           # []
    with tf.GradientTape() as tape:
        tape.watch([a, b, s])
        y = (a * b) * s
    ga, gb, gs = tape.gradient(y, [a, b, s])
    assert ga.shape == (3, 1) and gb.shape == (4,) and gs.shape == ()
    np.testing.assert_allclose(ga, np.full((3, 1), 100.0 * 2.0))
    np.testing.assert_allclose(gb, np.full(4, 6.0 * 2.0))
    np.testing.assert_allclose(gs, 6.0 * 100.0)


def test_gradient_after_assign_uses_value_read_at_op_time():
    v = tf.Variable(3.0)
    with tf.GradientTape() as tape:
        y = v * v          # read when v == 3
        v.assign(10.0)
        z = y + v          # read when v == 10
    # dy/dv = 2 * 3 (the value read by the op), dz/dv = 6 + 1
    np.testing.assert_allclose(tape.gradient(z, v), 7.0)
    np.testing.assert_allclose(v.numpy(), 10.0)


def test_gradient_after_assign_add_inside_tape():
    v = tf.Variable([1.0, 2.0])
    with tf.GradientTape() as tape:
        a = tf.reduce_sum(v * v)
        v.assign_add([1.0, 1.0])
    np.testing.assert_allclose(tape.gradient(a, v), [2.0, 4.0])


# ---------------------------------------------------------------- threads

def test_tape_does_not_record_ops_from_another_thread():
    x = tf.constant(2.0)
    out = {}

    def work():
        out["y"] = x * x

    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        th = threading.Thread(target=work)
        th.start()
        th.join()
        z = x * 3.0
    assert tape.gradient(out["y"], x) is None
    np.testing.assert_allclose(tape.gradient(z, x), 3.0)


def test_tape_in_another_thread_works_independently():
    x = tf.constant(2.0)
    out = {}

    def work():
        with tf.GradientTape() as t:
            t.watch(x)
            y = x * x * x
        out["g"] = t.gradient(y, x)

    with tf.GradientTape() as tape:
        tape.watch(x)
        th = threading.Thread(target=work)
        th.start()
        th.join()
        z = x * x
    np.testing.assert_allclose(out["g"], 12.0)
    np.testing.assert_allclose(tape.gradient(z, x), 4.0)


def test_tapes_in_concurrent_threads():
    barrier = threading.Barrier(2)
    results, errors = {}, []

    def work(k):
        try:
            x = tf.constant(float(k))
            with tf.GradientTape() as t:
                t.watch(x)
                barrier.wait(timeout=5)
                y = x ** 2
                for _ in range(50):
                    y = y * 1.0
                barrier.wait(timeout=5)
            results[k] = float(t.gradient(y, x))
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(k,)) for k in (2, 5)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert results == {2: 4.0, 5: 10.0}


# ---------------------------------------------------------------- custom_gradient

@pytest.mark.filterwarnings("ignore:overflow encountered")
def test_custom_gradient_single_input():
    @tf.custom_gradient
    def log1pexp(x):
        e = tf.exp(x)

        def grad(dy):
            return dy * (1 - 1 / (1 + e))
        return tf.math.log(1 + e), grad

    x = tf.constant(100.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = log1pexp(x)
    g = tape.gradient(y, x)
    assert np.isfinite(float(g))
    np.testing.assert_allclose(g, 1.0)


def test_custom_gradient_is_used_instead_of_true_gradient():
    @tf.custom_gradient
    def clip(x):
        def grad(dy):
            return tf.maximum(tf.minimum(dy, 1.0), -1.0)
        return tf.identity(x), grad

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = clip(x) * 10.0
    np.testing.assert_allclose(tape.gradient(y, x), 1.0)


def test_custom_gradient_multiple_inputs():
    @tf.custom_gradient
    def f(x, y):
        def grad(dy):
            return dy * 2.0, dy * 3.0
        return x * y, grad

    x, y = tf.constant(4.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = f(x, y) * 10.0
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx, 20.0)
    np.testing.assert_allclose(gy, 30.0)


def test_custom_gradient_multiple_outputs():
    @tf.custom_gradient
    def f(x):
        def grad(dy1, dy2):
            return dy1 * 2.0 + dy2 * 30.0
        return (x * 2.0, x * 3.0), grad

    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b = f(x)
        s = a + b
    np.testing.assert_allclose(a, 4.0)
    np.testing.assert_allclose(b, 6.0)
    np.testing.assert_allclose(tape.gradient(s, x), 32.0)


def test_custom_gradient_none_for_one_input():
    @tf.custom_gradient
    def f(x, y):
        def grad(dy):
            return dy * y, None
        return x * y, grad

    x, y = tf.constant(4.0), tf.constant(5.0)
    with tf.GradientTape() as tape:
        tape.watch([x, y])
        z = f(x, y)
    gx, gy = tape.gradient(z, [x, y])
    np.testing.assert_allclose(gx, 5.0)
    assert gy is None


def test_custom_gradient_nested_under_two_tapes():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad

    x = tf.constant(2.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = cube(x)
        dy = inner.gradient(y, x)
    d2y = outer.gradient(dy, x)
    np.testing.assert_allclose(y, 8.0)
    np.testing.assert_allclose(dy, 12.0)
    np.testing.assert_allclose(d2y, 12.0)


def test_custom_gradient_forward_ops_are_hidden_from_tapes():
    # The gradient must come only from grad_fn: the forward function's ops are not recorded.
    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * 0.0
        return x * x, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    np.testing.assert_allclose(tape.gradient(y, x), 0.0)


def test_custom_gradient_with_variables():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            assert variables is not None and len(variables) == 1 and variables[0] is v
            return dy * 10.0, [dy * 100.0]
        return x * v, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gv = tape.gradient(y, [x, v])
    np.testing.assert_allclose(y, 6.0)
    np.testing.assert_allclose(gx, 10.0)
    np.testing.assert_allclose(gv, 100.0)


def test_custom_gradient_with_variables_keyword_only():
    v = tf.Variable([1.0, 2.0])

    @tf.custom_gradient
    def f(x):
        def grad(dy, *, variables):
            return dy * tf.reduce_sum(v), [dy * x]
        return x * tf.reduce_sum(v), grad

    x = tf.constant(4.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    gx, gv = tape.gradient(y, [x, v])
    np.testing.assert_allclose(gx, 3.0)
    np.testing.assert_allclose(gv, [4.0, 4.0])


def test_jacobian_through_custom_gradient_with_variables():
    v = tf.Variable(np.array([1.0, 2.0, 3.0]))

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * v * 10.0, [dy * x * 100.0]
        return x * v, grad

    xs = np.array([0.5, -1.0, 2.0])
    x = tf.constant(xs)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = f(x)
    for pfor in (True, False):
        jx, jv = tape.jacobian(y, [x, v], experimental_use_pfor=pfor)
        np.testing.assert_allclose(jx, np.diag([10.0, 20.0, 30.0]))
        np.testing.assert_allclose(jv, np.diag(100.0 * xs))


def test_custom_gradient_reading_variables_without_variables_kwarg_raises():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            return dy * v
        return x * v, grad

    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with pytest.raises(TypeError, match="variables"):
            f(x)


def test_custom_gradient_outside_tape_returns_value():
    @tf.custom_gradient
    def f(x):
        return x * 2.0, lambda dy: dy
    np.testing.assert_allclose(f(tf.constant(3.0)), 6.0)


def test_recompute_grad_equals_plain_gradient():
    w = tf.constant([[0.5, -1.0], [2.0, 0.25]])

    def block(x):
        return tf.reduce_sum(tf.tanh(tf.matmul(x, w)) * tf.sin(x))

    x = tf.constant([[0.3, -0.7], [1.1, 0.2]])
    with tf.GradientTape() as t1:
        t1.watch(x)
        y1 = block(x)
    with tf.GradientTape() as t2:
        t2.watch(x)
        y2 = tf.recompute_grad(block)(x)
    np.testing.assert_allclose(y2, y1, rtol=1e-6)
    np.testing.assert_allclose(t2.gradient(y2, x), t1.gradient(y1, x), rtol=1e-6)


def test_recompute_grad_with_variables():
    v = tf.Variable([1.5, -0.5])

    def block(x):
        return tf.reduce_sum(tf.sin(x * v))

    x = tf.constant([0.3, 0.9])
    with tf.GradientTape() as t1:
        t1.watch(x)
        y1 = block(x)
    g1 = t1.gradient(y1, [x, v])
    with tf.GradientTape() as t2:
        t2.watch(x)
        y2 = tf.recompute_grad(block)(x)
    g2 = t2.gradient(y2, [x, v])
    np.testing.assert_allclose(g2[0], g1[0], rtol=1e-6)
    np.testing.assert_allclose(g2[1], g1[1], rtol=1e-6)


def test_check_grads_passes_on_correct_custom_gradient():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad

    tf.testing.check_grads(cube, [np.array([0.5, -1.2, 2.0])], order=1)


def test_check_grads_raises_on_wrong_custom_gradient():
    @tf.custom_gradient
    def wrong_identity(x):
        def grad(dy):
            return 2.0 * dy
        return tf.identity(x), grad

    with pytest.raises(AssertionError):
        tf.testing.check_grads(wrong_identity, [np.array([0.5, -1.2, 2.0])], order=1)


@pytest.mark.parametrize("modes", [("rev",), ("fwd",)])
def test_check_grads_detects_wrong_gradient_in_each_mode(modes):
    @tf.custom_gradient
    def wrong_identity(x):
        return tf.identity(x), lambda dy: 2.0 * dy

    with pytest.raises(AssertionError):
        tf.testing.check_grads(wrong_identity, [np.array([0.5, -1.2, 2.0])], modes=modes)
