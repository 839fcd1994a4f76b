"""The array ops beyond the table's rule checks: TensorFlow's documented results,
edge cases, dtypes, and bad input (src/tapeflow/ops/array_ops.py, array_create.py)."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError


def _grad(f, *xs):
    xs = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        y = f(*xs)
    return [None if g is None else g.numpy() for g in tape.gradient(y, xs)]


# ------------------------------------------------------------------ split, unstack
def test_split_shapes_as_documented():
    x = tf.zeros([5, 30])
    assert [p.shape.as_list() for p in tf.split(x, [4, 15, 11], 1)] == [[5, 4], [5, 15], [5, 11]]
    assert [p.shape.as_list() for p in tf.split(x, 3, axis=-1)] == [[5, 10]] * 3
    assert [p.shape.as_list() for p in tf.split(x, [0, -1], 0)] == [[0, 30], [5, 30]]
    assert len(tf.split(x, tf.constant(5), axis=0, num=5)) == 5


def test_split_gradient_of_unused_pieces_is_zero():
    (g,) = _grad(lambda x: tf.split(x, [2, 1, 2])[2] * 3., np.arange(5.))
    np.testing.assert_array_equal(g, [0., 0., 0., 3., 3.])


def test_split_forward_mode_gives_every_piece_a_tangent():
    x = tf.constant([1., 2., 3., 4.])
    with tf.autodiff.ForwardAccumulator(x, tf.constant([1., 2., 3., 4.])) as acc:
        a, b = tf.split(x, 2)
    np.testing.assert_array_equal(acc.jvp(b), [3., 4.])
    np.testing.assert_array_equal(acc.jvp(a), [1., 2.])


def test_unstack_values_dtype_and_empty_axis():
    x = tf.constant([[1, 2, 3], [4, 5, 6]])
    parts = tf.unstack(x, axis=1)
    assert [p.numpy().tolist() for p in parts] == [[1, 4], [2, 5], [3, 6]]
    assert parts[0].dtype == tf.int32
    assert tf.unstack(tf.zeros([0, 3])) == []
    assert len(tf.unstack(tf.zeros([2, 3]), num=3, axis=-1)) == 3


def test_unstack_gradient_is_the_stacked_cotangents():
    (g,) = _grad(lambda x: tf.unstack(x)[0] * 2. + tf.unstack(x)[2], np.ones((3, 2)))
    np.testing.assert_array_equal(g, [[2., 2.], [0., 0.], [1., 1.]])


@pytest.mark.parametrize("call, match", [
    (lambda: tf.split(tf.zeros([5]), [2, 2]), "do not add up"),
    (lambda: tf.split(tf.zeros([5]), [4, 3]), "do not add up"),
    (lambda: tf.split(tf.zeros([5]), [6, -1]), "do not add up"),
    (lambda: tf.split(tf.zeros([5]), [-1, -1]), "at most one"),
    (lambda: tf.split(tf.zeros([6]), 4), "divisor"),
    (lambda: tf.split(tf.zeros([6]), 0), "divisor"),
    (lambda: tf.split(tf.zeros([6]), 2, axis=1), "out of range"),
    (lambda: tf.split(tf.zeros([6]), 2, num=3), "num"),
    (lambda: tf.split(tf.constant(1.), 1), "scalar"),
    (lambda: tf.unstack(tf.zeros([2, 3]), axis=2), "out of range"),
    (lambda: tf.unstack(tf.zeros([2, 3]), num=3), "num"),
    (lambda: tf.unstack(tf.constant(1.)), "scalar"),
])
def test_split_and_unstack_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


# ------------------------------------------------------------------ tile, reverse
def test_tile_as_documented():
    a = tf.constant([[1, 2, 3], [4, 5, 6]])
    np.testing.assert_array_equal(tf.tile(a, [1, 2]), [[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]])
    np.testing.assert_array_equal(tf.tile(a, [2, 1]), [[1, 2, 3], [4, 5, 6]] * 2)
    assert tf.tile(a, [0, 3]).shape.as_list() == [0, 9]
    assert tf.tile(tf.constant(2.), []).numpy() == 2.


def test_tile_gradient_sums_the_copies():
    (g,) = _grad(lambda x: tf.tile(x, [3, 2]), np.ones((1, 2)))
    np.testing.assert_array_equal(g, [[6., 6.]])


def test_reverse_matches_numpy_and_keeps_dtype():
    x = np.arange(24).reshape(2, 3, 4).astype(np.int64)
    out = tf.reverse(tf.constant(x), [-1, 0])
    np.testing.assert_array_equal(out, x[::-1, :, ::-1])
    assert out.dtype == tf.int64
    np.testing.assert_array_equal(tf.reverse(tf.constant(x), []), x)


@pytest.mark.parametrize("call, error", [
    (lambda: tf.tile(tf.zeros([2, 3]), [2]), InvalidArgumentError),
    (lambda: tf.tile(tf.zeros([2]), [-1]), InvalidArgumentError),
    (lambda: tf.tile(tf.zeros([2]), [1.5]), TypeError),
    (lambda: tf.reverse(tf.zeros([2, 3]), [2]), InvalidArgumentError),
    (lambda: tf.reverse(tf.zeros([2, 3]), [1, -1]), InvalidArgumentError),
])
def test_tile_and_reverse_bad_input(call, error):
    with pytest.raises(error, match=r"tile|reverse"):
        call()


# ------------------------------------------------------------------ pad
_T = tf.constant([[1, 2, 3], [4, 5, 6]])
_PADS = [[1, 1], [2, 2]]


def test_pad_modes_as_documented():
    np.testing.assert_array_equal(tf.pad(_T, _PADS), [
        [0, 0, 0, 0, 0, 0, 0], [0, 0, 1, 2, 3, 0, 0], [0, 0, 4, 5, 6, 0, 0], [0, 0, 0, 0, 0, 0, 0]])
    np.testing.assert_array_equal(tf.pad(_T, _PADS, "REFLECT"), [
        [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1], [6, 5, 4, 5, 6, 5, 4], [3, 2, 1, 2, 3, 2, 1]])
    np.testing.assert_array_equal(tf.pad(_T, _PADS, "SYMMETRIC"), [
        [2, 1, 1, 2, 3, 3, 2], [2, 1, 1, 2, 3, 3, 2], [5, 4, 4, 5, 6, 6, 5], [5, 4, 4, 5, 6, 6, 5]])
    out = tf.pad(_T, _PADS, constant_values=7)
    assert out.dtype == tf.int32 and out.numpy()[0, 0] == 7 and out.numpy()[1, 2] == 1


def test_pad_constant_values_get_no_gradient_as_tensorflow():
    x, c = tf.constant([1., 2.]), tf.constant(5.)
    with tf.GradientTape() as tape:
        tape.watch([x, c])
        y = tf.reduce_sum(tf.pad(x, [[1, 2]], constant_values=c))
    gx, gc = tape.gradient(y, [x, c])
    np.testing.assert_array_equal(gx, [1., 1.])
    assert gc is None


def test_pad_reflect_gradient_adds_the_mirrored_copies():
    (g,) = _grad(lambda x: tf.pad(x, [[2, 2]], mode="reflect"), np.zeros(3))
    np.testing.assert_array_equal(g, [2., 3., 2.])  # [2 1 0 1 2 1 0]: x1 thrice, x0 and x2 twice


@pytest.mark.parametrize("call, match", [
    (lambda: tf.pad(_T, _PADS, mode="WRAP"), "mode"),
    (lambda: tf.pad(_T, _PADS, mode=None), "mode"),
    (lambda: tf.pad(_T, [[1, 1]]), "shape"),
    (lambda: tf.pad(_T, [[1, -1], [0, 0]]), "non-negative"),
    (lambda: tf.pad(_T, [[2, 0], [0, 0]], mode="REFLECT"), "at most 1"),
    (lambda: tf.pad(_T, [[0, 0], [0, 4]], mode="SYMMETRIC"), "at most 3"),
    (lambda: tf.pad(_T, _PADS, constant_values=[1, 2]), "scalar"),
])
def test_pad_bad_input(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_pad_constant_values_must_fit_the_dtype():
    with pytest.raises(TypeError, match="pad"):
        tf.pad(_T, _PADS, constant_values=tf.constant(1.))
    with pytest.raises(TypeError):
        tf.pad(_T, _PADS, constant_values=1.5)


# ------------------------------------------------------------------ gather_nd, gather
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
    (g,) = _grad(lambda p: tf.gather_nd(p, [[1], [1], [2], [1]]), np.zeros(4))
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
    (g,) = _grad(lambda p: tf.gather(p, [[1, 1, 0], [2, 2, 2]], batch_dims=1), np.zeros((2, 3)))
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


# ------------------------------------------------------------------ creation
def test_fill_dtype_and_gradient():
    assert tf.fill([2], 3).dtype == tf.int32
    assert tf.fill([2, 3], 1.5).dtype == tf.float32
    (g,) = _grad(lambda v: tf.fill([2, 3], v), np.float64(2.))
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
    ga, gb = _grad(lambda a, b: tf.linspace(a, b, 5), np.float64(0.), np.float64(1.))
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


def test_exports():
    from tapeflow.ops import creation, indexing
    assert tf.gather is indexing.gather and tf.linalg.eye is creation.eye
    for name, where in creation.EXPORTS.items():
        assert ("tf" in where.split()) == (getattr(tf, name, None) is getattr(creation, name)), name

