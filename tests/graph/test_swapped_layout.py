"""NOTE(swapped-layout) in tapeflow/graph/transposes.py: a transpose at the end of a chain
is moved back through it (elementwise ops, unit-axis reshapes, a vmapped product, down to
a constant or a cancelling transpose), so a forward-mode Jacobian comes out of its last
product in the layout it is returned in. The rewrite computes the same elements: every
case here compares the replay (and, with JAX, the compiled call) with eager values, and
the forward-mode Jacobian with central finite differences in float64."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

RNG = np.random.default_rng(7)
W1 = RNG.standard_normal((6, 3))
W2 = RNG.standard_normal((9, 6))


def _ops(fn, *args):
    return [op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()]


def _mlp(x):
    return tf.tanh(tf.linalg.matvec(W2, tf.tanh(tf.linalg.matvec(W1, x))))


def _replays_like_eager(fn, *args, rtol=1e-12, atol=1e-12):
    traced = tf.function(fn)
    traced(*args)
    np.testing.assert_allclose(np.asarray(traced(*args)), np.asarray(fn(*args)),
                               rtol=rtol, atol=atol)


def _compiles_like_eager(fn, *args):
    pytest.importorskip("jax")
    compiled = tf.function(fn, jit_compile=True)
    for _ in range(2):
        np.testing.assert_allclose(np.asarray(compiled(*args)), np.asarray(fn(*args)),
                                   rtol=1e-10, atol=1e-12)


def test_a_tall_forward_jacobian_is_returned_by_its_last_product_untransposed():
    x = tf.constant(RNG.standard_normal(3))
    ops = _ops(tf.jacfwd(_mlp), x)
    assert "transpose" not in ops and "matmul_rows" not in ops, ops
    jac = tf.function(tf.jacfwd(_mlp))
    jac(x)
    got = np.asarray(jac(x))
    eps, x0 = 1e-6, x.numpy()
    fd = np.stack([(_mlp(tf.constant(x0 + eps * e)).numpy()
                    - _mlp(tf.constant(x0 - eps * e)).numpy()) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(got, fd, rtol=1e-7, atol=1e-8)
    np.testing.assert_allclose(got, np.asarray(tf.jacrev(_mlp)(x)), rtol=1e-12, atol=1e-12)


def test_the_compiled_tall_jacobian_equals_eager():
    _compiles_like_eager(tf.jacfwd(_mlp), tf.constant(RNG.standard_normal(3)))


def test_a_traced_call_with_the_rewrite_differentiates_from_outside():
    jac = tf.function(tf.jacfwd(_mlp))
    x = tf.constant(RNG.standard_normal(3))
    jac(x)
    grads = []
    for fn in (jac, tf.jacfwd(_mlp)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x) * np.arange(27.0).reshape(9, 3))
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-12)


def _products(cols):
    # vmap of a matrix times a column: matmul_rows, [E, 9, 1]
    return tf.vmap(lambda c: tf.matmul(W2, c))(cols)


COLS = tf.constant(RNG.standard_normal((4, 6, 1)))


def test_broadcast_operands_cast_and_select_are_swapped():
    scale = tf.constant(RNG.standard_normal((9, 1)))      # along the outputs
    shift = tf.constant(RNG.standard_normal((4, 1, 1)))   # along the examples
    mask = tf.constant(RNG.standard_normal((9, 1)) > 0)

    def f(cols, scale, shift, mask):
        z = tf.cast(_products(cols) * scale + shift, tf.float32)
        z = tf.where(mask, tf.exp(z), tf.zeros([4, 9, 1], tf.float32))
        return tf.transpose(tf.reshape(z, [4, 9]))

    args = (COLS, scale, shift, mask)
    ops = _ops(f, *args)
    # The product as W2 @ cols^T: what is left transposed is its input's view
    assert "matmul_rows" not in ops and "matmul" in ops and ops.count("transpose") == 1, ops
    _replays_like_eager(f, *args, rtol=1e-6, atol=1e-6)


def test_a_value_read_twice_keeps_its_layout_and_its_transpose():
    def f(cols):
        z = _products(cols)
        return tf.transpose(tf.reshape(tf.sin(z), [4, 9])), z

    ops = _ops(f, COLS)
    assert "matmul_rows" in ops and "transpose" in ops, ops
    traced = tf.function(f)
    traced(COLS)
    for got, want in zip(traced(COLS), f(COLS)):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-12)


def test_an_outer_broadcast_and_a_constant_are_swapped_without_a_product():
    c = RNG.standard_normal((4, 9))

    def outer(a, b):
        return tf.transpose(a * b)                  # [4, 1] * [1, 9]

    def with_constant(v):
        return tf.transpose(tf.constant(c) * v)     # [4, 9] * [9]

    a, b = tf.constant(RNG.standard_normal((4, 1))), tf.constant(RNG.standard_normal((1, 9)))
    v = tf.constant(RNG.standard_normal(9))
    assert "transpose" not in _ops(outer, a, b)
    assert "transpose" not in _ops(with_constant, v)
    _replays_like_eager(outer, a, b)
    _replays_like_eager(with_constant, v)


def test_a_transpose_of_other_axes_or_more_axes_is_left_alone():
    def three_axes(x):
        return tf.transpose(tf.sin(x), [2, 1, 0])

    def a_kept_order(x):
        return tf.transpose(tf.sin(x), [1, 0, 2])  # only a unit axis moves

    x3 = tf.constant(RNG.standard_normal((2, 3, 4)))
    assert "transpose" in _ops(three_axes, x3)
    _replays_like_eager(three_axes, x3)
    x2 = tf.constant(RNG.standard_normal((3, 1, 4)))
    assert "transpose" in _ops(a_kept_order, x2)
    _replays_like_eager(a_kept_order, x2)


def test_the_compiled_swapped_chain_equals_eager():
    scale = tf.constant(RNG.standard_normal((9, 1)))

    def f(cols, scale):
        return tf.transpose(tf.reshape(tf.tanh(_products(cols) * scale), [4, 9]))

    _compiles_like_eager(f, COLS, scale)


def test_a_float32_forward_jacobian_stays_float32():
    x = tf.constant(RNG.standard_normal(3).astype(np.float32))
    f32 = lambda v: tf.tanh(tf.linalg.matvec(W2.astype(np.float32), v * 2.0 + 1.0))  # noqa: E731
    jac = tf.function(tf.jacfwd(lambda v: f32(tf.linalg.matvec(W1.astype(np.float32), v))))
    out = jac(x)
    assert out.dtype == tf.float32 and out.shape == (9, 3)
