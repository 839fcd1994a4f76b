"""gather and gather_nd beyond the op table: TensorFlow's documented results, batch_dims,
gradients of repeated indices, vmap over parameters and indices, and index checks that
hold for every example under vmap and at every replay of a traced function.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import numpy_grads


# ------------------------------------------------------------------ gather_nd
def test_gather_nd_as_documented():
    p = tf.constant([[1., 2.], [3., 4.]])
    np.testing.assert_array_equal(tf.gather_nd(p, [[0, 0], [1, 1]]), [1., 4.])
    np.testing.assert_array_equal(tf.gather_nd(p, [[1], [0]]), [[3., 4.], [1., 2.]])
    np.testing.assert_array_equal(tf.gather_nd(p, [[[0, 1]], [[1, 0]]]), [[2.], [3.]])
    assert tf.gather_nd(p, tf.zeros([3, 0], tf.int32)).shape.as_list() == [3, 2, 2]
    z = tf.zeros([5, 7, 3])
    idx = [[0, 1], [1, 0], [2, 4], [3, 2], [4, 1]]
    assert tf.gather_nd(z, idx).shape.as_list() == [5, 3]
    assert tf.gather_nd(z, [[1], [0], [4], [2], [1]], batch_dims=1).shape.as_list() == [5, 3]


def test_gather_nd_repeated_indices_accumulate_densely():
    (g,) = numpy_grads(lambda p: tf.gather_nd(p, [[1], [1], [2], [1]]), np.zeros(4))
    assert isinstance(g, np.ndarray)
    np.testing.assert_array_equal(g, [0., 3., 1., 0.])


def test_gather_nd_vmap_over_params_and_indices_equals_loop():
    rng = np.random.default_rng(0)
    ps = rng.standard_normal((3, 4, 5))
    idx = rng.integers(0, 4, (3, 6, 2)) % [4, 5]
    got = tf.vmap(tf.gather_nd)(tf.constant(ps), tf.constant(idx))
    want = np.stack([ps[b][tuple(idx[b].T)] for b in range(3)])
    np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("idx", [[[0, 4]], [[3, 0]], [[-1, 0]]])
def test_gather_nd_out_of_range_indices_raise(idx):
    with pytest.raises(InvalidArgumentError, match=r"gather_nd: `indices`\[0\]"):
        tf.gather_nd(tf.zeros([3, 4]), idx)


@pytest.mark.parametrize("index", [5, -1, 2])
def test_a_scalar_index_out_of_range_raises_naming_it(index):
    p = tf.constant([[1.0, 2.0]])
    with pytest.raises(InvalidArgumentError, match=rf"gather: `indices` = {index} is out of bounds"):
        tf.gather(p, tf.constant(index), axis=1)
    f = tf.function(lambda i: tf.gather(p, i, axis=1))
    assert f(tf.constant(1)).numpy().tolist() == [2.0]
    with pytest.raises(InvalidArgumentError, match=rf"`indices` = {index} is out of bounds"):
        f(tf.constant(index))
    with pytest.raises(InvalidArgumentError, match=r"gather_nd: `indices` = \[0, 7\]"):
        tf.gather_nd(p, tf.constant([0, 7]))


def test_gather_nd_checks_every_example_under_vmap_and_every_replay():
    p = tf.zeros([3, 4])
    bad = tf.constant([[[1, 2]], [[0, 4]]])  # example 0 is valid, example 1 is not
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        tf.vmap(lambda i: tf.gather_nd(p, i))(bad)
    f = tf.function(lambda i: tf.gather_nd(p, i))
    f(tf.constant([[1, 2]]))
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        f(tf.constant([[2, 7]]))


@pytest.mark.parametrize("call, error", [
    (lambda: tf.gather_nd(tf.zeros([3]), 0), InvalidArgumentError),
    (lambda: tf.gather_nd(tf.zeros([3]), [[0, 0]]), InvalidArgumentError),
    (lambda: tf.gather_nd(tf.zeros([3]), [[0.]]), TypeError),
    (lambda: tf.gather_nd(tf.zeros([2, 3]), tf.zeros([3, 1], tf.int32), batch_dims=1),
     InvalidArgumentError),
    (lambda: tf.gather_nd(tf.zeros([2, 3]), tf.zeros([2, 1], tf.int32), batch_dims=2),
     InvalidArgumentError),
])
def test_gather_nd_bad_input(call, error):
    with pytest.raises(error, match="gather_nd"):
        call()


# ------------------------------------------------------------------ gather
def test_gather_batch_dims_matches_a_loop_and_defaults():
    rng = np.random.default_rng(1)
    p = rng.standard_normal((2, 3, 5))
    idx = rng.integers(0, 5, (2, 3, 4))
    got = tf.gather(p, idx, axis=2, batch_dims=2)
    want = np.stack([np.stack([p[a, b][idx[a, b]] for b in range(3)]) for a in range(2)])
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(tf.gather(p, idx, axis=-1, batch_dims=-1), want)
    idx1 = rng.integers(0, 3, (2, 4))
    want1 = np.stack([p[b][idx1[b]] for b in range(2)])  # axis defaults to batch_dims
    np.testing.assert_array_equal(tf.gather(p, idx1, batch_dims=1), want1)
    np.testing.assert_array_equal(tf.gather(p, [2, 0], axis=1), p[:, [2, 0]])


def test_gather_batch_dims_gradient_accumulates():
    (g,) = numpy_grads(lambda p: tf.gather(p, [[1, 1, 0], [2, 2, 2]], batch_dims=1),
                       np.zeros((2, 3)))
    np.testing.assert_array_equal(g, [[1., 2., 0.], [0., 0., 3.]])


def test_gather_checks_every_example_under_vmap_and_every_replay():
    p = tf.constant([1., 2., 3.])
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        tf.vmap(lambda i: tf.gather(p, i))(tf.constant([[0], [-1]]))
    f = tf.function(lambda i: tf.gather(p, i))
    f(tf.constant([0]))
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        f(tf.constant([-1]))


@pytest.mark.parametrize("call", [
    lambda: tf.gather(tf.zeros([2, 3]), [[0], [5]], batch_dims=1),
    lambda: tf.gather(tf.zeros([2, 3]), [[0], [1], [0]], batch_dims=1),
    lambda: tf.gather(tf.zeros([2, 3, 4]), tf.zeros([2, 3], tf.int32), axis=1, batch_dims=2),
    lambda: tf.gather(tf.zeros([2, 3]), tf.zeros([2], tf.int32), axis=2, batch_dims=1),
])
def test_gather_batch_dims_bad_input(call):
    with pytest.raises(InvalidArgumentError, match="gather"):
        call()


@pytest.mark.parametrize("row", [1, 64], ids=["add.at", "sorted runs"])
@pytest.mark.parametrize("axis", [0, 1])
def test_the_gather_transpose_sums_repeated_indices_in_both_ways(row, axis):
    """Scatter-add of a gather's cotangent: np.add.at for narrow rows, sorted runs summed
    by np.add.reduceat for wide ones; both equal the sum by definition, negative indices
    (which name the same rows as their positive forms) included."""
    from tapeflow.ops.indexing import _gather_transpose_impl

    rng = np.random.default_rng(0)
    n = 7
    indices = rng.integers(-n, n, (5, 4))
    shape = (n, row) if axis == 0 else (row, n)
    g_shape = indices.shape + (row,) if axis == 0 else (row,) + indices.shape
    g = rng.standard_normal(g_shape)
    got = _gather_transpose_impl(g, indices, axis, shape)
    want = np.zeros(shape)
    for pos, i in np.ndenumerate(indices):
        if axis == 0:
            want[i] += g[pos]
        else:
            want[:, i] += g[(slice(None),) + pos]
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------ scatters
T3 = [[1., 2.], [3., 4.], [5., 6.]]


def test_scatters_as_tensorflow():
    # TF 2.21 (CPU): these values; a repeated index in update keeps the last update, in add
    # accumulates; an empty update leaves the tensor; integer tensors keep their dtype.
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(T3, [[0], [2]], [[9., 9.], [8., 8.]]), [[9, 9], [3, 4], [8, 8]])
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(T3, [[0, 1], [2, 0]], [7., 8.]), [[1, 7], [3, 4], [8, 6]])
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(T3, [[0, 1], [0, 1]], [7., 8.]), [[1, 8], [3, 4], [5, 6]])
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_add(T3, [[0, 1], [0, 1]], [7., 8.]), [[1, 17], [3, 4], [5, 6]])
    out = tf.tensor_scatter_nd_update([1, 2, 3], [[1]], [9])
    assert out.dtype == tf.int32 and out.numpy().tolist() == [1, 9, 3]
    np.testing.assert_array_equal(
        tf.tensor_scatter_nd_update(T3, tf.zeros([0, 1], tf.int32), tf.zeros([0, 2])), T3)
    np.testing.assert_array_equal(tf.scatter_nd([[1], [3], [1]], [1., 2., 3.], [5]),
                                  [0, 4, 0, 2, 0])
    np.testing.assert_array_equal(tf.scatter_nd([[1]], [1.], tf.constant([5])), [0, 1, 0, 0, 0])
    np.testing.assert_array_equal(tf.scatter_nd(tf.constant([[1, 0]], tf.int64), [[2.]], [2, 2, 1]),
                                  [[[0], [0]], [[2], [0]]])


def test_scatter_gradients_as_tensorflow():
    # TF 2.21: with a repeated row index, the tensor's gradient is zero on the row, as here.
    # TF gives every repeated update the cotangent's row ([[1 2] [1 2]]): its order is
    # unspecified. tapeflow's last update wins, so the first one has no derivative, as
    # forward mode and finite differences find: [[0 0] [1 2]].
    x, u = tf.Variable(T3), tf.Variable([[9., 9.], [8., 8.]])
    w = tf.constant([[1., 2.], [3., 4.], [5., 6.]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.tensor_scatter_nd_update(x, [[0], [0]], u) * w)
    gx, gu = tape.gradient(y, [x, u])
    np.testing.assert_array_equal(gx, [[0, 0], [3, 4], [5, 6]])
    np.testing.assert_array_equal(gu, [[0, 0], [1, 2]])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.tensor_scatter_nd_add(x, [[0], [0]], u) * w)
    gx, gu = tape.gradient(y, [x, u])
    np.testing.assert_array_equal(gx, w)
    np.testing.assert_array_equal(gu, [[1, 2], [1, 2]])
    rng = np.random.default_rng(1)
    tf.testing.check_grads(lambda x, u: tf.tensor_scatter_nd_update(x, [[1, 0], [2, 1]], u) ** 2,
                           [rng.standard_normal((3, 2)), rng.standard_normal(2)], order=2)


@pytest.mark.parametrize("op", ["update", "add"])
def test_scatter_vmap_over_indices_equals_loop(op):
    f = getattr(tf, f"tensor_scatter_nd_{op}")
    rng = np.random.default_rng(0)
    xs, us = rng.standard_normal((3, 4, 2)), rng.standard_normal((3, 2, 2))
    idx = np.array([[[0], [3]], [[2], [1]], [[1], [1]]])
    got = tf.vmap(f)(tf.constant(xs), tf.constant(idx), tf.constant(us))
    want = np.stack([f(xs[b], idx[b], us[b]).numpy() for b in range(3)])
    np.testing.assert_array_equal(got, want)
    got = tf.vmap(lambda i: f(xs[0], i, us[0]))(tf.constant(idx))  # only the indices batched
    want = np.stack([f(xs[0], idx[b], us[0]).numpy() for b in range(3)])
    np.testing.assert_array_equal(got, want)


def test_scatter_checks_every_example_under_vmap_and_every_replay():
    x = tf.zeros([3, 2])
    bad = tf.constant([[[1]], [[3]]])
    with pytest.raises(InvalidArgumentError, match="out of bounds for tensor"):
        tf.vmap(lambda i: tf.tensor_scatter_nd_update(x, i, [[1., 1.]]))(bad)
    f = tf.function(lambda i: tf.tensor_scatter_nd_add(x, i, [[1., 1.]]))
    np.testing.assert_array_equal(f(tf.constant([[2]])), [[0, 0], [0, 0], [1, 1]])
    with pytest.raises(InvalidArgumentError, match="out of bounds"):
        f(tf.constant([[-1]]))


@pytest.mark.parametrize("call, match", [
    (lambda: tf.tensor_scatter_nd_update(T3, [[3]], [[9., 9.]]),
     r"`indices`\[0\] = \[3\] is out of bounds for tensor of shape \(3, 2\)"),
    (lambda: tf.tensor_scatter_nd_update(T3, [[0]], [[9., 9., 9.]]),
     r"`updates` has shape \(1, 3\); expected .* \(1, 2\)"),
    (lambda: tf.tensor_scatter_nd_update(T3, [[0], [1]], [[9., 9.]]), r"`updates` has shape"),
    (lambda: tf.tensor_scatter_nd_update(T3, [[0, 1, 1]], [9.]), "length 3.*exceed"),
    (lambda: tf.tensor_scatter_nd_update(T3, 0, [9., 9.]), "`indices` must have rank >= 1"),
    (lambda: tf.tensor_scatter_nd_add(tf.constant(T3), [[0]], tf.constant([[9, 9]])),
     "`updates` has dtype int32; expected float32"),
    (lambda: tf.scatter_nd([[7]], [1.], [5]), r"out of bounds for output of shape \(5,\)"),
])
def test_scatter_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_scatter_float_indices_refused():
    with pytest.raises(TypeError, match="`indices` must be an integer tensor"):
        tf.tensor_scatter_nd_update(T3, [[0.]], [[9., 9.]])


def test_embedding_lookup_is_a_gather_of_rows():
    table = np.random.default_rng(0).standard_normal((5, 3))
    ids = np.array([[4, 0, 4], [1, 1, 2]])
    np.testing.assert_array_equal(tf.nn.embedding_lookup(table, ids).numpy(), table[ids])
    np.testing.assert_array_equal(tf.nn.embedding_lookup([table], ids).numpy(), table[ids])
    # repeated ids add their cotangents into one row
    tf.testing.check_grads(lambda t: tf.nn.embedding_lookup(t, ids), [table], order=2)
    with pytest.raises(NotImplementedError, match="partitioned"):
        tf.nn.embedding_lookup([table, table], ids)
    with pytest.raises(NotImplementedError, match="max_norm"):
        tf.nn.embedding_lookup(table, ids, max_norm=1.0)
