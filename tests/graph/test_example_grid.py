"""NOTE(example-grid) in tapeflow/graph/transposes.py: a transpose exchanging the first two
axes of a chain's result ([a, b, ...] -> [b, a, ...], the last step of `batch_jacobian`)
is moved back through the chain, whose ops compute each example (or element) on its
own, so the chain runs on its grid of examples in the other order. Each case compares the
replay (and, with JAX, the compiled call) with eager values; the per-example Jacobians
are checked against per-example `jacobian` calls and central finite differences in
float64."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

RNG = np.random.default_rng(11)


def _ops(fn, *args):
    return [op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()]


def _close(got, want, rtol=1e-12, atol=1e-12):
    got, want = tf.nest.flatten(got), tf.nest.flatten(want)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=rtol, atol=atol)


def _traced_like_eager(fn, *args, rtol=1e-12, atol=1e-12):
    traced = tf.function(fn)
    traced(*args)
    _close(traced(*args), fn(*args), rtol, atol)


def _compiled_like_eager(fn, *args):
    pytest.importorskip("jax")
    compiled = tf.function(fn, jit_compile=True)
    for _ in range(2):
        _close(compiled(*args), fn(*args), 1e-10, 1e-12)


def _batch_jacobian(model):
    def jac(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = model(x)
        return tape.batch_jacobian(y, x)
    return jac


def _per_example(model, x):
    """Each example's Jacobian on its own (a tape per example), stacked: [b, y..., x...]."""
    out = []
    for i in range(x.shape[0]):
        xi = tf.constant(x.numpy()[i:i + 1])
        with tf.GradientTape() as tape:
            tape.watch(xi)
            y = model(xi)
        j = tape.jacobian(y, xi).numpy()  # [1, y..., 1, x...]
        rank_y = len(y.shape) - 1
        out.append(j.reshape(j.shape[1:1 + rank_y] + j.shape[2 + rank_y:]))
    return np.stack(out)


def _finite_differences(model, x, entries):
    """Central differences of the entries (example, output index, input index)."""
    eps, x0 = 1e-6, x.numpy()
    got = []
    for b, yi, xi in entries:
        step = np.zeros_like(x0)
        step[(b,) + xi] = eps
        up = model(tf.constant(x0 + step)).numpy()[(b,) + yi]
        down = model(tf.constant(x0 - step)).numpy()[(b,) + yi]
        got.append((up - down) / (2 * eps))
    return np.array(got)


K1 = RNG.standard_normal((3, 3, 1, 4))
K2 = RNG.standard_normal((3, 3, 4, 6))
W3 = RNG.standard_normal((54, 5)) * 0.3
W4 = RNG.standard_normal((5, 3))


def _cnn(x):  # [b, 12, 12, 1] -> [b, 3]: the seed problem's shape of network
    h = tf.nn.relu(tf.nn.conv2d(x, K1, 2, "SAME") + 0.1)
    h = tf.tanh(tf.nn.conv2d(h, K2, 2, "SAME"))
    h = tf.reshape(h, [-1, 54])
    return tf.matmul(tf.tanh(tf.matmul(h, W3)), W4)


def _pooled(x):  # max and average pooling between convolutions
    h = tf.nn.max_pool2d(tf.sin(tf.nn.conv2d(x, K1, 1, "SAME")), 2, 2, "VALID")
    h = tf.nn.avg_pool2d(tf.tanh(tf.nn.conv2d(h, K2, 1, "SAME")), 2, 2, "VALID")
    return tf.reshape(h, [-1, 54])[:, :7]


def _softmax_mlp(x):  # softmax's rule sums along the outputs: reduce_sum in the chain
    return tf.nn.softmax(tf.matmul(tf.tanh(tf.matmul(x, W3[:6])), W4))


CASES = {
    "cnn": (_cnn, (5, 12, 12, 1)),
    "pooled": (_pooled, (4, 12, 12, 1)),
    "softmax": (_softmax_mlp, (7, 6)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_batch_jacobian_comes_out_of_its_chain_in_its_own_order(name):
    model, shape = CASES[name]
    x = tf.constant(RNG.standard_normal(shape))
    jac = _batch_jacobian(model)
    assert "transpose" not in _ops(jac, x)
    traced = tf.function(jac)
    traced(x)
    got = np.asarray(traced(x))
    np.testing.assert_allclose(got, _per_example(model, x), rtol=1e-10, atol=1e-12)
    y_shape, x_shape = got.shape[1:1 + len(model(x).shape) - 1], shape[1:]
    entries = [(int(RNG.integers(shape[0])),
                tuple(int(RNG.integers(s)) for s in y_shape),
                tuple(int(RNG.integers(s)) for s in x_shape)) for _ in range(6)]
    want = _finite_differences(model, x, entries)
    np.testing.assert_allclose([got[(b,) + yi + xi] for b, yi, xi in entries], want,
                               rtol=1e-5, atol=1e-7)
    _traced_like_eager(jac, x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_compiled_batch_jacobian_equals_eager(name):
    model, shape = CASES[name]
    _compiled_like_eager(_batch_jacobian(model), tf.constant(RNG.standard_normal(shape)))


def test_a_float32_batch_jacobian_stays_float32():
    x = tf.constant(RNG.standard_normal((5, 12, 12, 1)).astype(np.float32))
    model = lambda v: _cnn(tf.cast(v, tf.float64))  # noqa: E731
    jac = tf.function(_batch_jacobian(lambda v: tf.cast(model(v), tf.float32)))
    out = jac(x)
    assert out.dtype == tf.float32 and out.shape == (5, 3, 12, 12, 1)
    np.testing.assert_allclose(np.asarray(out), _per_example(model, x), rtol=1e-4, atol=1e-5)


W = RNG.standard_normal((3, 4))
GRID = RNG.standard_normal((6, 5, 3))
LEFT = RNG.standard_normal((6, 4, 5))


def _rows(x):  # x [5, 3] over a [6, 5] grid; one product over the 30 merged rows
    return tf.reshape(tf.matmul(tf.reshape(tf.constant(GRID) * x, [30, 3]), W), [6, 5, 4])


X = tf.constant(RNG.standard_normal((5, 3)))


def test_a_transpose_of_the_first_two_axes_moves_through_merged_and_split_grids():
    def f(x):
        return tf.transpose(tf.sin(_rows(x)), [1, 0, 2])

    assert "transpose" not in _ops(f, X)
    _traced_like_eager(f, X)
    _compiled_like_eager(f, X)


def test_operands_broadcast_along_one_grid_axis_or_none_are_reshaped():
    along_b = tf.constant(RNG.standard_normal((5, 4)))        # [b, ...], broadcast over a
    along_a = tf.constant(RNG.standard_normal((6, 1, 4)))     # [a, 1, ...]
    everywhere = tf.constant(RNG.standard_normal(4))

    def f(x, p, q, r):
        return tf.transpose(tf.tanh(_rows(x) * p + q) - r, [1, 0, 2])

    args = (X, along_b, along_a, everywhere)
    assert "transpose" not in _ops(f, *args)
    _traced_like_eager(f, *args)
    _compiled_like_eager(f, *args)


def test_a_constant_is_reordered_once_and_a_cancelling_transpose_dropped():
    c = RNG.standard_normal((6, 5, 4))

    def with_constant(x):
        return tf.transpose(_rows(x) * tf.constant(c), [1, 0, 2])

    def cancelling(x):  # x [5, 6, 3]
        return tf.transpose(tf.exp(tf.transpose(x, [1, 0, 2])), [1, 0, 2])

    def from_an_input(x):  # nothing to reorder it into: kept
        return tf.transpose(tf.exp(x), [1, 0, 2])

    assert "transpose" not in _ops(with_constant, X)
    _traced_like_eager(with_constant, X)
    xt = tf.constant(RNG.standard_normal((5, 6, 3)))
    assert "transpose" not in _ops(cancelling, xt)
    _traced_like_eager(cancelling, xt)
    assert "transpose" in _ops(from_an_input, xt)
    _traced_like_eager(from_an_input, xt)


def test_a_value_read_twice_inside_the_chain_is_computed_once_in_the_new_order():
    def f(x):
        u = tf.sin(_rows(x))
        return tf.transpose(u * u + u, [1, 0, 2])

    ops = _ops(f, X)
    assert "transpose" not in ops and ops.count("sin") == 1 and ops.count("matmul") == 1, ops
    _traced_like_eager(f, X)


def test_a_value_read_outside_the_chain_keeps_the_chain_and_its_transpose():
    def f(x):
        u = tf.sin(_rows(x))
        return tf.transpose(tf.exp(u), [1, 0, 2]), u

    ops = _ops(f, X)
    assert "transpose" in ops and ops.count("sin") == 1 and ops.count("matmul") == 1, ops
    _traced_like_eager(f, X)


def test_ops_that_mix_examples_keep_their_transpose():
    def summed_over_examples(x):  # a reduction along the grid mixes the examples
        r = _rows(x)
        return tf.transpose(r - tf.reduce_sum(r, axis=0), [1, 0, 2])

    def product_by_examples(x):  # the grid in the product's right operand
        return tf.transpose(tf.matmul(tf.constant(LEFT), GRID * x), [1, 0, 2])

    def other_axes(x):
        return tf.transpose(tf.sin(_rows(x)), [0, 2, 1])

    for fn, arg in ((summed_over_examples, X), (product_by_examples, X), (other_axes, X)):
        assert "transpose" in _ops(fn, arg), fn.__name__
        _traced_like_eager(fn, arg)


def test_a_traced_batch_jacobian_differentiates_from_outside():
    x = tf.constant(RNG.standard_normal((3, 12, 12, 1)))
    weights = RNG.standard_normal((3, 3, 12, 12, 1))
    grads = []
    for fn in (tf.function(_batch_jacobian(_cnn)), _batch_jacobian(_cnn)):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(fn(x) * weights)
        grads.append(tape.gradient(y, x).numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-10, atol=1e-12)
