"""The examples tapeflow grew from: TensorFlow's documentation of
`tf.autodiff.ForwardAccumulator` and the question of a Jacobian at many inputs, and the
README's usage example, run with ``import tapeflow as tf`` and checked against the values
they document."""

from __future__ import annotations

import numpy as np

import tapeflow as tf


# ---------------------------------------------------------------- seed 002: nested accumulators

def _nested_accumulators():
    primal = tf.constant(1.1)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as outer:
        with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as inner:
            primal_out = primal ** tf.constant(3.5)
    return outer, inner, primal_out


def test_seed002_inner_jvp_is_first_derivative():
    _, inner, primal_out = _nested_accumulators()
    inner_jvp = inner.jvp(primal_out)  # 3.5 * 1.1 ** 2.5
    assert inner_jvp.dtype == tf.float32
    assert inner_jvp.shape == ()
    np.testing.assert_allclose(inner_jvp.numpy(), np.float32(4.4417057), rtol=1e-6)


def test_seed002_outer_jvp_of_inner_jvp_is_second_derivative():
    outer, inner, primal_out = _nested_accumulators()
    second = outer.jvp(inner.jvp(primal_out))  # 3.5 * 2.5 * 1.1 ** 1.5
    assert second is not None
    assert second.dtype == tf.float32
    np.testing.assert_allclose(second.numpy(), np.float32(10.094786), rtol=1e-6)


def test_seed002_reversed_nesting_order_does_not_work():
    # "inner.jvp(outer.jvp(primal_out)) will not work" (seed 002)
    outer, inner, primal_out = _nested_accumulators()
    assert inner.jvp(outer.jvp(primal_out)) is None


def test_seed002_nested_accumulators_print_documented_values():
    outer, inner, primal_out = _nested_accumulators()
    inner_jvp = inner.jvp(primal_out)
    assert repr(inner_jvp) == "<tapeflow.Tensor: shape=(), dtype=float32, numpy=4.4417057>"
    assert repr(outer.jvp(inner_jvp)) == \
        "<tapeflow.Tensor: shape=(), dtype=float32, numpy=10.094786>"


# ---------------------------------------------------------------- seed 002: forward-over-backward HVP

def test_seed002_forward_over_backward_hvp():
    v = tf.Variable([1., 2.])
    with tf.autodiff.ForwardAccumulator(
            v,
            # The "vector" in Hessian-vector product.
            tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward = tape.gradient(y, v)
    assert backward.dtype == tf.float32 and backward.shape == (2,)
    np.testing.assert_allclose(backward, [3., 12.])
    hvp = acc.jvp(backward)
    assert hvp is not None and hvp.dtype == tf.float32
    np.testing.assert_allclose(hvp, [6., 0.])


def test_seed002_hvp_repr_matches_documented_output():
    v = tf.Variable([1., 2.])
    with tf.autodiff.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward = tape.gradient(y, v)
    assert repr(backward) == ("<tapeflow.Tensor: shape=(2,), dtype=float32, "
                              "numpy=array([ 3., 12.], dtype=float32)>")
    assert repr(acc.jvp(backward)) == ("<tapeflow.Tensor: shape=(2,), dtype=float32, "
                                       "numpy=array([6., 0.], dtype=float32)>")


# ---------------------------------------------------------------- seed 002: linear regression

def _dense_setup():
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    dense = tf.keras.layers.Dense(1)
    dense.build([None, 2])
    return x, dense


def test_seed002_dense_single_jvp_is_a_float32_scalar():
    x, dense = _dense_setup()
    with tf.autodiff.ForwardAccumulator(
            primals=dense.kernel,
            tangents=tf.constant([[1.], [0.]])) as acc:
        loss = tf.reduce_sum((dense(x) - tf.constant([1., -1.])) ** 2.)
    jvp = acc.jvp(loss)
    assert isinstance(jvp, tf.Tensor)
    assert jvp.shape == () and jvp.dtype == tf.float32
    # dense(x) is [2, 1] and the target [2]: they broadcast to [2, 2] (as in TensorFlow), so
    # d loss / d kernel[0, 0] = sum_ij 2 (pred_i - target_j) x[i, 0]
    pred = (x.numpy() @ dense.kernel.numpy() + dense.bias.numpy())[:, 0]
    resid = pred[:, None] - np.array([1., -1.], np.float32)[None, :]
    np.testing.assert_allclose(jvp, np.sum(2 * resid * x.numpy()[:, :1]), rtol=1e-5)


def test_seed002_dense_forward_and_reverse_agree():
    x, dense = _dense_setup()
    loss_fn = lambda: tf.reduce_sum((dense(x) - tf.constant([1., -1.])) ** 2.)  # noqa: E731
    kernel_fprop = []
    with tf.autodiff.ForwardAccumulator(
            dense.kernel, tf.constant([[1.], [0.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(
            dense.kernel, tf.constant([[0.], [1.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.bias, tf.constant([1.])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (dense.kernel, dense.bias))
    assert kernel_grad.shape == (2, 1) and bias_grad.shape == (1,)
    # float32, summed in other orders by the two modes: a few ulps apart at some of the
    # kernels the unseeded initializer draws (rtol 1e-7 failed at 2.8e-7)
    np.testing.assert_allclose(
        kernel_grad, tf.stack(kernel_fprop)[:, tf.newaxis], rtol=1e-6)
    np.testing.assert_allclose(bias_grad, bias_fprop[tf.newaxis], rtol=1e-6)


# ---------------------------------------------------------------- seed 000: jacobian of x * x

def test_seed000_jacobian_of_square():
    with tf.GradientTape() as g:
        x = tf.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    jacobian = g.jacobian(y, x)
    assert jacobian.shape == (2, 2) and jacobian.dtype == tf.float32
    np.testing.assert_array_equal(jacobian, [[2., 0.], [0., 4.]])


# ---------------------------------------------------------------- the README's usage example

def test_api_md_section4_forward_accumulator_example():
    v = tf.Variable([1., 2.])
    with tf.autodiff.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward = tape.gradient(y, v)      # [3., 12.]
    np.testing.assert_array_equal(backward.numpy(), np.array([3., 12.], np.float32))
    result = acc.jvp(backward)              # [6., 0.]
    assert result.numpy().dtype == np.float32
    np.testing.assert_array_equal(result.numpy(), np.array([6., 0.], np.float32))


def test_autodiff_namespace_exports_gradient_tape():
    assert tf.autodiff.GradientTape is tf.GradientTape
    assert tf.autodiff.ForwardAccumulator is tf.ForwardAccumulator
