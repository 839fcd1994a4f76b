"""The creation ops: one_hot, the shape queries (shape, size, rank), fill, eye, range and
linspace, with TensorFlow's dtypes and documented results, their gradients where they
have one, the arguments they refuse, and the family's exports.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import numpy_grads


# ------------------------------------------------------------------ one_hot
def test_one_hot_as_documented():
    np.testing.assert_array_equal(tf.one_hot([0, 1, 2], 3), np.eye(3))
    out = tf.one_hot([0, 2, -1, 1], 3, on_value=5.0, off_value=0.0, axis=-1)
    np.testing.assert_array_equal(out, [[5, 0, 0], [0, 0, 5], [0, 0, 0], [0, 5, 0]])
    assert out.dtype == tf.float32
    out = tf.one_hot([[0, 2], [1, -1]], 3, axis=0)
    np.testing.assert_array_equal(out, [[[1, 0], [0, 0]], [[0, 0], [1, 0]], [[0, 1], [0, 0]]])
    assert tf.one_hot([1], 2, on_value=3).dtype == tf.int32
    assert tf.one_hot([1], 2, dtype=tf.float64).dtype == tf.float64
    assert tf.one_hot(tf.constant([1], tf.uint8), 300).numpy()[0, 1] == 1.
    assert tf.one_hot([1, 2], 0).shape.as_list() == [2, 0]


def test_one_hot_carries_no_gradient_as_tensorflow():
    on = tf.constant(2.)
    with tf.GradientTape() as tape:
        tape.watch(on)
        y = tf.reduce_sum(tf.one_hot([0, 1], 2, on_value=on))
    assert tape.gradient(y, on) is None


@pytest.mark.parametrize("call, error", [
    (lambda: tf.one_hot([0, 1], -1), InvalidArgumentError),
    (lambda: tf.one_hot([0, 1], 3, axis=2), InvalidArgumentError),
    (lambda: tf.one_hot([0, 1], 3, axis=-2), InvalidArgumentError),
    (lambda: tf.one_hot([0., 1.], 3), TypeError),
    (lambda: tf.one_hot([0, 1], 3, on_value=[1., 2.]), InvalidArgumentError),
    (lambda: tf.one_hot([0, 1], 3, on_value=tf.constant(1.), dtype=tf.float64), TypeError),
])
def test_one_hot_bad_input(call, error):
    with pytest.raises(error, match="one_hot"):
        call()


# ------------------------------------------------------------------ shape queries
def test_shape_size_rank():
    x = tf.zeros([2, 3, 4])
    assert tf.shape(x).numpy().tolist() == [2, 3, 4] and tf.shape(x).dtype == tf.int32
    assert tf.shape(x, out_type=tf.int64).dtype == tf.int64
    assert tf.shape(tf.constant(1.)).shape.as_list() == [0]
    assert int(tf.size(x)) == 24 and tf.size(x).dtype == tf.int32
    assert int(tf.rank(x)) == 3 and tf.rank(x).dtype == tf.int32
    assert int(tf.size(tf.Variable([1., 2.]))) == 2
    with pytest.raises(TypeError, match="out_type"):
        tf.shape(x, out_type=tf.float32)


def test_shape_inside_vmap_is_the_per_example_shape():
    got = tf.vmap(lambda x: tf.shape(x))(tf.zeros([5, 2, 3]))
    np.testing.assert_array_equal(got, [[2, 3]] * 5)


# ------------------------------------------------------------------ fill, eye, range, linspace
def test_fill_dtype_and_gradient():
    assert tf.fill([2], 3).dtype == tf.int32
    assert tf.fill([2, 3], 1.5).dtype == tf.float32
    (g,) = numpy_grads(lambda v: tf.fill([2, 3], v), np.float64(2.))
    assert g == 6.
    with pytest.raises(InvalidArgumentError, match="fill: `value` must be a scalar"):
        tf.fill([2], [1., 2.])
    with pytest.raises(InvalidArgumentError, match="fill: `dims`"):
        tf.fill([-1], 1.)


def test_eye():
    np.testing.assert_array_equal(tf.eye(3), np.eye(3))
    out = tf.linalg.eye(2, 3, batch_shape=[4], dtype=tf.float64)
    assert out.shape.as_list() == [4, 2, 3] and out.dtype == tf.float64
    np.testing.assert_array_equal(out[1], np.eye(2, 3))
    with pytest.raises(InvalidArgumentError, match="eye"):
        tf.eye(-1)


def test_range_values_and_dtype_inference():
    assert tf.range(3, 18, 3).numpy().tolist() == [3, 6, 9, 12, 15]
    assert tf.range(5).dtype == tf.int32
    np.testing.assert_array_equal(tf.range(3, 1, -0.5), [3., 2.5, 2., 1.5])
    assert tf.range(3, 1, -0.5).dtype == tf.float32
    assert tf.range(tf.constant(4, tf.int64)).dtype == tf.int64
    assert tf.range(tf.constant(0, tf.int64), 2.).dtype == tf.float32
    assert tf.range(tf.constant(1., tf.float64), 3).dtype == tf.float64
    assert tf.range(3, dtype=tf.float64).numpy().tolist() == [0., 1., 2.]
    assert tf.range(0).shape.as_list() == [0]
    assert tf.range(0, 1, 0.3).shape.as_list() == [4]


@pytest.mark.parametrize("call, error", [
    (lambda: tf.range(0, 5, 0), InvalidArgumentError),
    (lambda: tf.range(5, 0, 1), InvalidArgumentError),
    (lambda: tf.range(0, 5, -1), InvalidArgumentError),
    (lambda: tf.range([1, 2]), InvalidArgumentError),
    (lambda: tf.range(True), TypeError),
])
def test_range_bad_input(call, error):
    with pytest.raises(error, match="range"):
        call()


def test_linspace_as_documented():
    np.testing.assert_allclose(tf.linspace(10.0, 12.0, 3), [10., 11., 12.])
    out = tf.linspace([0., 5.], [10., 40.], 5, axis=0)
    np.testing.assert_allclose(out, [[0., 5.], [2.5, 13.75], [5., 22.5], [7.5, 31.25], [10., 40.]])
    np.testing.assert_allclose(tf.linspace([0., 5.], [10., 40.], 5, axis=-1), out.numpy().T)
    assert tf.linspace(0, 10, 3).dtype == tf.float64
    assert tf.linspace(0., 1., 0).shape.as_list() == [0]
    np.testing.assert_array_equal(tf.linspace(2., 1., 1), [2.])
    ends = tf.linspace(0.1, 0.7, 7).numpy()
    assert ends[0] == np.float32(0.1) and ends[-1] == np.float32(0.7)  # endpoints exact


def test_linspace_gradient():
    ga, gb = numpy_grads(lambda a, b: tf.linspace(a, b, 5), np.float64(0.), np.float64(1.))
    assert ga == pytest.approx(2.5) and gb == pytest.approx(2.5)


@pytest.mark.parametrize("call, error", [
    (lambda: tf.linspace(0., 1., -1), InvalidArgumentError),
    (lambda: tf.linspace(0., 1., 3, axis=2), InvalidArgumentError),
    (lambda: tf.linspace([0., 1.], [0., 1., 2.], 3), InvalidArgumentError),
    (lambda: tf.linspace(tf.constant(0.), tf.constant(1., tf.float64), 3), TypeError),
    (lambda: tf.linspace(True, False, 3), TypeError),
])
def test_linspace_bad_input(call, error):
    with pytest.raises(error, match="linspace"):
        call()


# ------------------------------------------------------------------ exports
def test_exports():
    from tapeflow.ops import creation, indexing
    def family_of(op):  # a namespace's op is the family's function, wrapped once
        return getattr(op, "__wrapped__", op)  # (NOTE(symbolic-dispatch))

    assert family_of(tf.gather) is indexing.gather and family_of(tf.linalg.eye) is creation.eye
    for name, where in creation.EXPORTS.items():
        assert ("tf" in where.split()) == (family_of(getattr(tf, name, None))
                                           is getattr(creation, name)), name


# ------------------------------------------------------------------ meshgrid
def test_meshgrid_values_as_tensorflow():
    # TensorFlow 2.21: tf.meshgrid([1, 2, 3], [4, 5]) gives int32 [[1 2 3] [1 2 3]] and
    # [[4 4 4] [5 5 5]]; three inputs of lengths 3, 2, 4 give [2, 3, 4] grids ("xy")
    # and [3, 2, 4] grids ("ij").
    X, Y = tf.meshgrid([1, 2, 3], [4, 5])
    np.testing.assert_array_equal(X, [[1, 2, 3], [1, 2, 3]])
    np.testing.assert_array_equal(Y, [[4, 4, 4], [5, 5, 5]])
    assert X.dtype == Y.dtype == tf.int32
    a, b, c = np.arange(3.), np.arange(2.), np.arange(4.)
    for indexing in ("xy", "ij"):
        got = tf.meshgrid(a, b, c, indexing=indexing)
        for g, w in zip(got, np.meshgrid(a, b, c, indexing=indexing), strict=True):
            np.testing.assert_array_equal(g, w)
    assert [g.shape.as_list() for g in tf.meshgrid(a, b, c)] == [[2, 3, 4]] * 3
    # One input comes back flattened; none gives an empty list; rank-2 inputs are flattened.
    assert tf.meshgrid(tf.ones([2, 2]))[0].shape.as_list() == [4]
    assert tf.meshgrid() == []
    assert [g.shape.as_list() for g in tf.meshgrid(tf.ones([2, 2]), [1., 2.])] == [[2, 4]] * 2


def test_meshgrid_gradient_sums_over_the_other_axes():
    x, y = np.array([1., 2., 3.]), np.array([4., 5.])
    tf.testing.check_grads(lambda x, y: tf.meshgrid(x, y)[0] * tf.meshgrid(x, y)[1] ** 2,
                           [x, y], order=2)
    gx, gy = numpy_grads(lambda x, y: tf.reduce_sum(tf.stack(tf.meshgrid(x, y))), x, y)
    np.testing.assert_array_equal(gx, [2., 2., 2.])
    np.testing.assert_array_equal(gy, [3., 3.])


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.meshgrid([1, 2], [1, 2], indexing="foo"), ValueError, "indexing.*'foo'"),
    (lambda: tf.meshgrid([1, 2], [1., 2.]), InvalidArgumentError, r"args\[1\].*float32.*int32"),
    (lambda: tf.meshgrid([1, 2], foo=1), TypeError, "'foo'"),
])
def test_meshgrid_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
