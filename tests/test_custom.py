"""User-defined gradients: tf.custom_gradient and tf.recompute_grad (tapeflow/custom.py).

A custom_gradient's grad_fn replaces the true gradient and hides the forward ops from
tapes: with several inputs or outputs, a None for one input, under nested tapes, with
captured variables (the `variables` keyword, required when the function reads one)
and inside Jacobians. recompute_grad gives the plain gradient, variables included.
tf.testing.check_grads accepts a correct custom gradient and catches a wrong one in
reverse and in forward mode.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf


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


# ---------------------------------------------------------------- TensorFlow's conventions
def test_results_may_be_python_numbers_and_numpy_arrays():
    @tf.custom_gradient
    def f(x):
        return (np.array([1.0, 2.0]), 3.0), lambda dy0, dy1: dy0[0] + dy1
    a, b = f(tf.constant(1.0))
    np.testing.assert_array_equal(a.numpy(), [1.0, 2.0])
    assert float(b) == 3.0


def test_grad_fn_returns_one_gradient_per_argument_numbers_included():
    @tf.custom_gradient
    def scaled(x, k):
        return x * k, lambda dy: (dy * k, dy * x)
    x = tf.constant(2.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = scaled(x, 3.0)
    assert float(tape.gradient(y, x)) == 3.0
    g = tf.recompute_grad(lambda a, k: a * k)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = g(x, 3.0)
    assert float(tape.gradient(y, x)) == 3.0


def test_a_custom_gradient_inside_a_grad_fn_sets_the_second_derivative():
    @tf.custom_gradient
    def marked(g):
        return tf.identity(g), lambda ddy: ddy * 100.0

    @tf.custom_gradient
    def square(x):
        return x * x, lambda dy: marked(dy * 2.0 * x)

    x = tf.constant(3.0)
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = square(x)
        g = inner.gradient(y, x)
    assert float(g) == 6.0
    assert float(outer.gradient(g, x)) == 200.0


def test_an_exception_in_grad_fn_propagates_through_an_accumulator():
    class Boom(Exception):
        pass

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            raise Boom("from grad_fn")
        return x * 2.0, grad

    x = tf.constant(1.0)
    with pytest.raises(Boom, match="from grad_fn"):
        with tf.autodiff.ForwardAccumulator(x, tf.constant(1.0)):
            f(x)


def test_the_tape_prunes_a_grad_fn_downstream_of_stop_gradient():
    calls = []

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            calls.append(1)
            return dy
        return x * 1.0, grad

    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(tf.stop_gradient(x) * 2.0)
        z = tf.stop_gradient(f(x)) + y + x
    assert float(tape.gradient(z, x)) == 1.0
    assert calls == []



def test_a_traced_function_prunes_a_grad_fn_downstream_of_stop_gradient(capsys):
    # Tracing a custom gradient traces its grad_fn, which ran (and printed) even where no
    # derivative can reach it; its tf.print printed at trace time, before any gradient.
    calls = []

    @tf.custom_gradient
    def f(x):
        def grad(dy):
            calls.append(1)
            tf.print("grad", output_stream="stdout")
            return dy * 3.0
        return x * 2.0, grad

    pruned = tf.function(lambda x: f(tf.stop_gradient(x) * 2.0) + x)
    connected = tf.function(lambda x: f(x) + x)
    x = tf.constant(1.0)
    with tf.GradientTape() as tape:
        tape.watch(x)
        z = pruned(x)
    assert float(tape.gradient(z, x)) == 1.0
    assert calls == []
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        z = connected(x)
        assert capsys.readouterr().out == ""  # tracing printed nothing
    assert float(tape.gradient(z, x)) == 4.0
    assert capsys.readouterr().out == "grad\n"
    for _ in range(2):  # replays
        with tf.GradientTape() as tape:
            tape.watch(x)
            z = connected(x)
        assert float(tape.gradient(z, x)) == 4.0
        assert capsys.readouterr().out == "grad\n"

def test_custom_gradient_on_a_method_passes_the_instance_through():
    # As TensorFlow: `self` goes to the function, not among its inputs (it raised "argument
    # 0 is a Model, which is not a tensor").
    class Doubler(tf.keras.Model):
        @tf.custom_gradient
        def f(self, x):
            def grad(dy):
                return dy * 3.0
            return x * 2.0, grad

    x = tf.constant(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = Doubler().f(x)
    assert float(y) == 3.0 and float(tape.gradient(y, x)) == 3.0
