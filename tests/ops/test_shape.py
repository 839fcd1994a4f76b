"""The shape ops beyond the op table: split, unstack, tile, reverse and pad as TensorFlow
documents them, their gradients (unused pieces, summed copies, mirrored copies, constant
padding), and the arguments they refuse.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import numpy_grads


# ------------------------------------------------------------------ split, unstack
def test_split_shapes_as_documented():
    x = tf.zeros([5, 30])
    assert [p.shape.as_list() for p in tf.split(x, [4, 15, 11], 1)] == [[5, 4], [5, 15], [5, 11]]
    assert [p.shape.as_list() for p in tf.split(x, 3, axis=-1)] == [[5, 10]] * 3
    assert [p.shape.as_list() for p in tf.split(x, [0, -1], 0)] == [[0, 30], [5, 30]]
    assert len(tf.split(x, tf.constant(5), axis=0, num=5)) == 5


def test_split_gradient_of_unused_pieces_is_zero():
    (g,) = numpy_grads(lambda x: tf.split(x, [2, 1, 2])[2] * 3., np.arange(5.))
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
    (g,) = numpy_grads(lambda x: tf.unstack(x)[0] * 2. + tf.unstack(x)[2], np.ones((3, 2)))
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
    (g,) = numpy_grads(lambda x: tf.tile(x, [3, 2]), np.ones((1, 2)))
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
    (g,) = numpy_grads(lambda x: tf.pad(x, [[2, 2]], mode="reflect"), np.zeros(3))
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


def test_repeat_as_documented_and_its_errors():
    x = np.arange(6).reshape(2, 3)
    for repeats, axis in ((2, None), (2, 0), ([1, 0, 3], 1), ([3], -1), (0, 0)):
        np.testing.assert_array_equal(tf.repeat(tf.constant(x), repeats, axis=axis).numpy(),
                                      np.repeat(x, repeats, axis=axis))
    np.testing.assert_array_equal(tf.repeat(tf.constant(x), tf.constant([2, 1]), axis=0),
                                  np.repeat(x, [2, 1], axis=0))
    for repeats, axis, match in ((-1, 0, "non-negative"), ([1, 2, 3], 0, "1-D list of 2"),
                                 ([[1]], 0, "1-D list"), (1, 2, "out of range"),
                                 (1, [0], "one int")):
        with pytest.raises(tf.errors.InvalidArgumentError, match=match):
            tf.repeat(tf.constant(x), repeats, axis=axis)
    with pytest.raises(tf.errors.InvalidArgumentError, match="rank >= 1"):
        tf.repeat(tf.constant(1.0), 2, axis=0)
    # the copies' gradients add up, in the traced and the size-generic forms too
    f = tf.function(lambda t: tf.repeat(t, 3, axis=0),
                    input_signature=[tf.TensorSpec([None, 2], tf.float64)])
    for n in (2, 4, 3, 7):
        v = np.random.default_rng(n).standard_normal((n, 2))
        np.testing.assert_array_equal(f(tf.constant(v)).numpy(), np.repeat(v, 3, axis=0))
        with tf.GradientTape() as tape:
            t = tf.constant(v)
            tape.watch(t)
            s = tf.reduce_sum(tf.repeat(t, [1] * (n - 1) + [4], axis=0))
        np.testing.assert_array_equal(tape.gradient(s, t).numpy()[:, 0], [1] * (n - 1) + [4])


@pytest.mark.peers
def test_repeat_against_tensorflow():
    real = pytest.importorskip("tensorflow")
    x = np.arange(24).reshape(2, 3, 4)
    for repeats, axis in ((2, None), ([2], 1), ([1, 0, 2], 1), (3, -1), ([0, 2], 0)):
        np.testing.assert_array_equal(tf.repeat(tf.constant(x), repeats, axis=axis).numpy(),
                                      real.repeat(real.constant(x), repeats, axis=axis).numpy())
