"""Forward mode with autodiff.ForwardAccumulator: JVPs as ops run, lookup-only jvp(), strict
nesting with other accumulators and with GradientTape (TensorFlow's documented semantics)."""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import tapeflow as tf

FA = tf.autodiff.ForwardAccumulator


# ---------------------------------------------------------------- basics

def test_jvp_of_elementwise_function():
    x = tf.constant([1.0, 2.0, 3.0])
    with FA(x, tf.constant([1.0, 0.5, -1.0])) as acc:
        y = tf.sin(x) * x
    want = (np.cos([1., 2., 3.]) * [1., 2., 3.] + np.sin([1., 2., 3.])) * np.array([1.0, 0.5, -1.0])
    jvp = acc.jvp(y)
    assert jvp.dtype == tf.float32 and jvp.shape == (3,)
    np.testing.assert_allclose(jvp, want, rtol=1e-6)


def test_jvp_of_primal_is_its_tangent():
    x = tf.constant([1.0, 2.0])
    with FA(x, tf.constant([3.0, 4.0])) as acc:
        pass
    np.testing.assert_array_equal(acc.jvp(x), [3.0, 4.0])


def test_jvp_available_inside_the_context_right_after_the_op():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = x * x
        inside = acc.jvp(y)
        np.testing.assert_allclose(inside, 4.0)
        z = y * x
    np.testing.assert_allclose(acc.jvp(z), 12.0)


def test_jvp_works_after_exit_and_is_repeatable():
    x = tf.constant(3.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = x ** 2.0
    np.testing.assert_allclose(acc.jvp(y), 6.0)
    np.testing.assert_allclose(acc.jvp(y), 6.0)


def test_jvp_computed_while_ops_run_not_at_lookup():
    # The JVP reflects the variable's value when the op ran, not at jvp() time.
    v = tf.Variable(3.0)
    with FA(v, tf.constant(1.0)) as acc:
        y = v * v
    v.assign(100.0)
    np.testing.assert_allclose(acc.jvp(y), 6.0)


def test_ops_after_exit_get_no_jvp():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = x * x
    z = y * x
    assert acc.jvp(z) is None
    np.testing.assert_allclose(acc.jvp(y), 4.0)


def test_jvp_of_unrelated_tensor_is_none():
    x = tf.constant(2.0)
    c = tf.constant([5.0, 6.0])
    with FA(x, tf.constant(1.0)) as acc:
        y = c * 3.0
    assert acc.jvp(y) is None
    assert acc.jvp(c) is None


@pytest.mark.parametrize("mode", [tf.UnconnectedGradients.ZERO, "zero"])
def test_jvp_of_unrelated_tensor_zero(mode):
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = tf.constant([[5.0, 6.0]], dtype=tf.float64) * 3.0
    z = acc.jvp(y, unconnected_gradients=mode)
    assert z.shape == (1, 2) and z.dtype == tf.float64
    np.testing.assert_array_equal(z, [[0.0, 0.0]])


def test_jvp_of_tensor_computed_from_primal_outside_context_is_none():
    x = tf.constant(2.0)
    y = x * x
    with FA(x, tf.constant(1.0)) as acc:
        pass
    assert acc.jvp(y) is None


def test_jvp_of_stop_gradient_is_none():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = tf.stop_gradient(x * x)
        z = x * tf.stop_gradient(x)
    assert acc.jvp(y) is None
    np.testing.assert_allclose(acc.jvp(z), 2.0)


def test_jvp_nested_structure_lookup():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        a, b = x * x, x * 3.0
    out = acc.jvp({"a": a, "rest": [b, (a,)]})
    assert isinstance(out, dict) and isinstance(out["rest"], list) and isinstance(out["rest"][1], tuple)
    np.testing.assert_allclose(out["a"], 4.0)
    np.testing.assert_allclose(out["rest"][0], 3.0)
    np.testing.assert_allclose(out["rest"][1][0], 4.0)


def test_jvp_of_non_tensor_raises_type_error():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        pass
    with pytest.raises(TypeError):
        acc.jvp(3.0)


# ---------------------------------------------------------------- several primals, variables

def test_multiple_primals_list():
    x, y = tf.constant(2.0), tf.constant(5.0)
    with FA([x, y], [tf.constant(1.0), tf.constant(10.0)]) as acc:
        z = x * y
    # dz = y dx + x dy = 5 * 1 + 2 * 10
    np.testing.assert_allclose(acc.jvp(z), 25.0)


def test_multiple_primals_nested():
    x, y, w = tf.constant(2.0), tf.constant([1.0, 3.0]), tf.constant(4.0)
    with FA({"x": x, "more": (y, [w])},
            {"x": tf.constant(1.0), "more": (tf.constant([0.0, 1.0]), [tf.constant(-1.0)])}) as acc:
        z = x * y * w
    # dz = y w dx + x w dy + x y dw
    want = np.array([1., 3.]) * 4 * 1 + 2 * 4 * np.array([0., 1.]) + 2 * np.array([1., 3.]) * -1
    np.testing.assert_allclose(acc.jvp(z), want)


def test_variable_as_primal():
    v = tf.Variable([1.0, 2.0])
    with FA(v, tf.constant([1.0, 1.0])) as acc:
        y = v * v
    np.testing.assert_allclose(acc.jvp(y), [2.0, 4.0])


def test_variable_and_tensor_primals():
    v = tf.Variable(3.0)
    x = tf.constant(2.0)
    with FA([v, x], [tf.constant(1.0), tf.constant(0.5)]) as acc:
        y = v * x
    np.testing.assert_allclose(acc.jvp(y), 2.0 * 1.0 + 3.0 * 0.5)


def test_tangents_may_be_numpy_arrays():
    x = tf.constant([1.0, 2.0])
    with FA(x, np.array([1.0, 0.0], np.float32)) as acc:
        y = x * x
    np.testing.assert_allclose(acc.jvp(y), [2.0, 0.0])


def test_tangent_wrong_shape_raises_value_error_naming_shapes():
    x = tf.constant([1.0, 2.0])
    with pytest.raises(ValueError) as info:
        FA(x, tf.constant([1.0, 2.0, 3.0]))
    assert "(3,)" in str(info.value) and "(2,)" in str(info.value)


def test_tangent_wrong_dtype_raises_naming_both_dtypes():
    x = tf.constant([1.0, 2.0])
    with pytest.raises((TypeError, ValueError)) as info:
        FA(x, tf.constant([1.0, 2.0], dtype=tf.float64))
    assert "float32" in str(info.value) and "float64" in str(info.value)


def test_tangent_count_mismatch_raises():
    x, y = tf.constant(1.0), tf.constant(2.0)
    with pytest.raises(ValueError):
        FA([x, y], [tf.constant(1.0)])


def test_non_tensor_primal_raises():
    with pytest.raises((TypeError, ValueError)):
        FA(1.0, tf.constant(1.0))


# ---------------------------------------------------------------- memory: JVPs die with their primals

def test_jvp_dropped_when_primal_is_garbage_collected():
    x = tf.constant([1.0, 2.0])
    with FA(x, tf.constant([1.0, 1.0])) as acc:
        y = x * 3.0
        ref = weakref.ref(y)
        n = len(acc._tangents)
        del y
        gc.collect()
        assert ref() is None
        assert len(acc._tangents) == n - 1
    np.testing.assert_allclose(acc.jvp(x), [1.0, 1.0])


def test_accumulator_does_not_keep_primals_alive():
    x = tf.constant(1.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = tf.sin(x)
    ref = weakref.ref(y)
    del y
    gc.collect()
    assert ref() is None


def test_memory_bounded_over_long_loop_inside_one_accumulator():
    x = tf.constant([1.0, 2.0])
    with FA(x, tf.constant([1.0, 0.0])) as acc:
        y = x
        for _ in range(10_000):
            y = y * 1.0001
        assert len(acc._tangents) <= 10
    np.testing.assert_allclose(acc.jvp(y), [1.0001 ** 10_000, 0.0], rtol=1e-3)


def test_memory_bounded_with_nested_accumulators():
    x = tf.constant([1.0, 2.0])
    with FA(x, tf.constant([1.0, 0.0])) as outer:
        with FA(x, tf.constant([0.0, 1.0])) as inner:
            y = x
            for _ in range(2_000):
                y = tf.sin(y) * 1.0001
            assert len(inner._tangents) <= 10
            assert len(outer._tangents) <= 10
    assert outer.jvp(inner.jvp(y)) is not None


def test_jvp_lookup_stores_nothing():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        y = x * x
    c = tf.constant([1.0, 2.0])
    n = len(acc._tangents)
    assert acc.jvp(c) is None
    np.testing.assert_array_equal(acc.jvp(c, unconnected_gradients="zero"), [0.0, 0.0])
    np.testing.assert_allclose(acc.jvp(y), 4.0)
    assert len(acc._tangents) == n
    assert acc.jvp(c) is None


# ---------------------------------------------------------------- strict nesting

def test_inner_accumulator_does_not_see_outer_jvp_computations():
    x = tf.constant(1.1)
    with FA(x, tf.constant(1.0)) as outer:
        with FA(x, tf.constant(1.0)) as inner:
            y = x ** 3.5
    assert outer.jvp(y) is not None and inner.jvp(y) is not None
    assert inner.jvp(outer.jvp(y)) is None
    np.testing.assert_allclose(outer.jvp(inner.jvp(y)), 3.5 * 2.5 * 1.1 ** 1.5, rtol=1e-6)


def test_nested_accumulators_with_different_tangents_give_mixed_second_derivative():
    x, w = tf.constant(2.0), tf.constant(3.0)
    with FA(x, tf.constant(1.0)) as outer:
        with FA(w, tf.constant(1.0)) as inner:
            y = x * x * w * w
    # d/dx d/dw (x^2 w^2) = 4 x w
    np.testing.assert_allclose(outer.jvp(inner.jvp(y)), 4 * 2.0 * 3.0)
    np.testing.assert_allclose(inner.jvp(y), 2 * 4.0 * 3.0)
    np.testing.assert_allclose(outer.jvp(y), 2 * 2.0 * 9.0)


def test_three_nested_accumulators_third_derivative():
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as a3:
        with FA(x, tf.constant(1.0)) as a2:
            with FA(x, tf.constant(1.0)) as a1:
                y = tf.sin(x)
    np.testing.assert_allclose(a1.jvp(y), np.cos(2.0), rtol=1e-6)
    np.testing.assert_allclose(a2.jvp(a1.jvp(y)), -np.sin(2.0), rtol=1e-6)
    np.testing.assert_allclose(a3.jvp(a2.jvp(a1.jvp(y))), -np.cos(2.0), rtol=1e-5)


def test_forward_over_backward_hvp():
    x = tf.constant([1.0, 2.0, 0.5])
    v = tf.constant([0.3, -1.0, 2.0])
    with FA(x, v) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x) * x[::-1])
        g = tape.gradient(y, x)
    xs, vs = np.array([1.0, 2.0, 0.5]), np.array([0.3, -1.0, 2.0])
    # y = sum_i sin(x_i) x_{n-1-i}; H = diag(-sin(x) x[::-1]) + cos terms on anti-diagonal
    n = 3
    H = np.zeros((n, n))
    for i in range(n):
        H[i, i] += -np.sin(xs[i]) * xs[n - 1 - i]
        H[i, n - 1 - i] += np.cos(xs[i])
        H[n - 1 - i, i] += np.cos(xs[i])
    np.testing.assert_allclose(acc.jvp(g), H @ vs, rtol=1e-5)


def test_tape_inside_accumulator_ignores_accumulator_products():
    # Deeper tapes ignore outer accumulators' JVP computations: the tape's gradient
    # of the JVP is not defined from inside.
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x ** 3.0
        jvp = acc.jvp(y)
        assert tape.gradient(jvp, x) is None
    np.testing.assert_allclose(jvp, 12.0)


def test_backward_over_forward_gradient_of_jvp():
    x = tf.constant([1.0, 2.0])
    v = tf.constant([1.0, 0.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        with FA(x, v) as acc:
            y = tf.reduce_sum(x ** 3.0)
        jvp = acc.jvp(y)
    # d/dx (grad f . v) = H v = [6 x0 v0, 6 x1 v1]
    np.testing.assert_allclose(jvp, 3.0)
    np.testing.assert_allclose(tape.gradient(jvp, x), [6.0, 0.0])


def test_backward_over_forward_with_variable():
    w = tf.Variable(2.0)
    with tf.GradientTape() as tape:
        with FA(w, tf.constant(1.0)) as acc:
            y = tf.exp(w * 0.5)
        jvp = acc.jvp(y)
    np.testing.assert_allclose(jvp, 0.5 * np.exp(1.0), rtol=1e-6)
    np.testing.assert_allclose(tape.gradient(jvp, w), 0.25 * np.exp(1.0), rtol=1e-6)


def test_forward_over_backward_with_tape_recorded_before_accumulator():
    # The backward pass runs inside the accumulator, so it sees the gradient computation.
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x ** 3.0
    with FA(x, tf.constant(1.0)) as acc:
        g = tape.gradient(y, x)
    np.testing.assert_allclose(g, 12.0)
    np.testing.assert_allclose(acc.jvp(g), 12.0)


def test_accumulator_entered_after_tape_sees_backward_pass_inside_tape_context():
    x = tf.constant(2.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        y = x ** 3.0
        with FA(x, tf.constant(1.0)) as acc:
            g = tape.gradient(y, x)
    np.testing.assert_allclose(g, 12.0)
    jvp = acc.jvp(g)
    assert jvp is not None
    np.testing.assert_allclose(jvp, 12.0)


# ---------------------------------------------------------------- stop_recording

def test_stop_recording_pauses_tapes_but_not_accumulators():
    x = tf.constant(3.0)
    with FA(x, tf.constant(1.0)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            with tape.stop_recording():
                y = x * x
    assert tape.gradient(y, x) is None
    np.testing.assert_allclose(acc.jvp(y), 6.0)


def test_stop_recording_inside_accumulator_inside_tape():
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with FA(x, tf.constant(1.0)) as acc:
            with tape.stop_recording():
                y = x * x
    np.testing.assert_allclose(acc.jvp(y), 6.0)
    assert tape.gradient(y, x) is None


# ---------------------------------------------------------------- custom_gradient in forward mode

def test_forward_mode_through_custom_gradient_uses_custom_rule():
    @tf.custom_gradient
    def triple_grad_identity(x):
        def grad(dy):
            return 3.0 * dy
        return tf.identity(x), grad

    x = tf.constant([1.0, 2.0])
    with FA(x, tf.constant([1.0, -2.0])) as acc:
        y = triple_grad_identity(x)
    np.testing.assert_allclose(y, [1.0, 2.0])
    np.testing.assert_allclose(acc.jvp(y), [3.0, -6.0])


def test_forward_mode_through_custom_gradient_two_inputs():
    @tf.custom_gradient
    def f(x, y):
        def grad(dy):
            return dy * 2.0, dy * 5.0
        return x + y, grad

    x, y = tf.constant(1.0), tf.constant(1.0)
    with FA([x, y], [tf.constant(1.0), tf.constant(10.0)]) as acc:
        z = f(x, y)
    np.testing.assert_allclose(acc.jvp(z), 2.0 * 1.0 + 5.0 * 10.0)


def test_forward_mode_through_custom_gradient_matches_reverse():
    @tf.custom_gradient
    def softplus(x):
        def grad(dy):
            return dy * tf.sigmoid(x)
        return tf.math.log(1.0 + tf.exp(x)), grad

    x = tf.constant([-1.0, 0.5, 2.0])
    t = tf.constant([0.5, 1.0, -1.0])
    with FA(x, t) as acc:
        y = softplus(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y2 = softplus(x)
    g = tape.gradient(y2, x)
    np.testing.assert_allclose(acc.jvp(y), np.asarray(g) * np.asarray(t), rtol=1e-6)


def test_forward_mode_through_custom_gradient_with_variable_primal():
    v = tf.Variable(2.0)

    @tf.custom_gradient
    def f(x):
        def grad(dy, variables=None):
            return dy * 10.0, [dy * 100.0]
        return x * v, grad

    x = tf.constant(3.0)
    with FA(v, tf.constant(1.0)) as acc:
        y = f(x)
    np.testing.assert_allclose(acc.jvp(y), 100.0)


def _cube_with_custom_gradient():
    @tf.custom_gradient
    def cube(x):
        def grad(dy):
            return dy * 3.0 * x * x
        return x * x * x, grad
    return cube


def test_forward_over_forward_through_custom_gradient():
    cube = _cube_with_custom_gradient()
    x = tf.constant(2.0)
    with FA(x, tf.constant(1.0)) as outer:
        with FA(x, tf.constant(1.0)) as inner:
            y = cube(x)
    np.testing.assert_allclose(inner.jvp(y), 12.0)               # 3 x^2
    np.testing.assert_allclose(outer.jvp(inner.jvp(y)), 12.0)    # 6 x


def test_reverse_over_forward_through_custom_gradient():
    cube = _cube_with_custom_gradient()
    x = tf.constant(3.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        with FA(x, tf.constant(1.0)) as acc:
            y = cube(x)
        jvp = acc.jvp(y)
    np.testing.assert_allclose(jvp, 27.0)
    np.testing.assert_allclose(tape.gradient(jvp, x), 18.0)


def test_forward_over_reverse_through_custom_gradient():
    cube = _cube_with_custom_gradient()
    x = tf.constant(3.0)
    with FA(x, tf.constant(1.0)) as acc:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = cube(x)
        g = tape.gradient(y, x)
    np.testing.assert_allclose(g, 27.0)
    np.testing.assert_allclose(acc.jvp(g), 18.0)


# ---------------------------------------------------------------- threads

def test_accumulator_does_not_see_ops_from_another_thread():
    import threading

    x = tf.constant(2.0)
    out = {}
    with FA(x, tf.constant(1.0)) as acc:
        th = threading.Thread(target=lambda: out.setdefault("y", x * x))
        th.start()
        th.join()
        z = x * x
    assert acc.jvp(out["y"]) is None
    np.testing.assert_allclose(acc.jvp(z), 4.0)


# ---------------------------------------------------------------- context management

def test_exiting_out_of_order_raises_runtime_error():
    x = tf.constant(1.0)
    acc = FA(x, tf.constant(1.0))
    tape = tf.GradientTape()
    acc.__enter__()
    tape.__enter__()
    try:
        with pytest.raises(RuntimeError):
            acc.__exit__(None, None, None)
    finally:
        tape.__exit__(None, None, None)
        acc.__exit__(None, None, None)
    # the stack is clean again: a fresh accumulator works
    with FA(x, tf.constant(2.0)) as acc2:
        y = x * 3.0
    np.testing.assert_allclose(acc2.jvp(y), 6.0)


def test_exiting_two_accumulators_out_of_order_raises():
    x = tf.constant(1.0)
    a, b = FA(x, tf.constant(1.0)), FA(x, tf.constant(1.0))
    a.__enter__()
    b.__enter__()
    try:
        with pytest.raises(RuntimeError):
            a.__exit__(None, None, None)
    finally:
        b.__exit__(None, None, None)
        a.__exit__(None, None, None)


def test_exiting_tape_out_of_order_raises_runtime_error():
    x = tf.constant(1.0)
    tape = tf.GradientTape()
    acc = FA(x, tf.constant(1.0))
    tape.__enter__()
    acc.__enter__()
    try:
        with pytest.raises(RuntimeError):
            tape.__exit__(None, None, None)
    finally:
        acc.__exit__(None, None, None)
        tape.__exit__(None, None, None)


def test_exception_inside_context_leaves_no_active_recorder():
    from tapeflow.core import current_stack

    x = tf.constant(1.0)
    with pytest.raises(ZeroDivisionError):
        with FA(x, tf.constant(1.0)):
            with tf.GradientTape():
                1 / 0
    assert current_stack() == ()


def test_accumulator_cannot_be_reentered_while_active():
    x = tf.constant(1.0)
    acc = FA(x, tf.constant(1.0))
    with acc:
        with pytest.raises((RuntimeError, ValueError)):
            acc.__enter__()


# ---------------------------------------------------------------- forward vs reverse on an MLP

def test_forward_and_reverse_agree_on_small_mlp():
    rng = np.random.default_rng(1)
    w1 = tf.Variable(rng.standard_normal((3, 5)))
    b1 = tf.Variable(rng.standard_normal(5))
    w2 = tf.Variable(rng.standard_normal((5, 2)))
    x = tf.constant(rng.standard_normal((4, 3)))

    def mlp(x):
        h = tf.tanh(tf.matmul(x, w1) + b1)
        return tf.sigmoid(tf.matmul(h, w2))  # [4, 2]

    params = [w1, b1, w2, x]
    vs = [tf.constant(rng.standard_normal(p.shape)) for p in params]
    u = tf.constant(rng.standard_normal((4, 2)))

    with FA(params, vs) as acc:
        y = mlp(x)
    jv = acc.jvp(y)                                   # J v
    with tf.GradientTape() as tape:
        tape.watch(x)
        y2 = mlp(x)
    vjp = tape.gradient(y2, params, output_gradients=u)   # J^T u
    forward = float(np.sum(np.asarray(u) * np.asarray(jv)))
    reverse = float(sum(np.sum(np.asarray(g) * np.asarray(v)) for g, v in zip(vjp, vs)))
    np.testing.assert_allclose(forward, reverse, rtol=1e-10)
    # and both match a central finite difference
    eps = 1e-6

    def shifted(sign):
        saved = [p.numpy().copy() for p in params[:3]]
        for p, v in zip(params[:3], vs[:3]):
            p.assign(p.numpy() + sign * eps * v.numpy())
        out = mlp(tf.constant(x.numpy() + sign * eps * vs[3].numpy()))
        for p, s in zip(params[:3], saved):
            p.assign(s)
        return np.asarray(out)

    fd = (shifted(+1) - shifted(-1)) / (2 * eps)
    np.testing.assert_allclose(jv, fd, rtol=1e-5, atol=1e-8)


def test_integer_primals_have_no_tangent():
    i, x = tf.constant([1, 2]), tf.constant(2.0)
    with tf.autodiff.ForwardAccumulator([i, x], [tf.constant([1, 1]), tf.constant(1.0)]) as acc:
        y = tf.cast(i, tf.float32) * x
    assert acc.jvp(i) is None
    np.testing.assert_array_equal(acc.jvp(y).numpy(), [1.0, 2.0])


def test_an_out_of_order_exit_leaves_nothing_recording():
    x = tf.constant(1.0)
    acc, tape = FA(x, tf.constant(1.0)), tf.GradientTape()
    acc.__enter__()
    tape.__enter__()
    with pytest.raises(RuntimeError, match="nest strictly"):
        acc.__exit__(None, None, None)
    assert not acc.active and not tape.active
    assert tf.core.current_stack() == ()
    y = x * 2.0                       # recorded by neither
    assert acc.jvp(y) is None
    tape.__exit__(None, None, None)   # already stopped: harmless
