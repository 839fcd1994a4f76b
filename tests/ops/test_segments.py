"""The segment reductions, bincount, boolean_mask, sequence_mask, band_part and
count_nonzero beyond the op table: what empty segments hold, dropped ids, integer means,
where ties and zeros send the gradient, the errors bad arguments raise (also when a traced
or compiled function is replayed), size-0 inputs, vmap over ids, and (marked peers)
TensorFlow's own results for the same calls.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.testing import check_grads

from ops_helpers import numpy_value_and_grad

D = [1., 2., 3., 4., 5.]
F32_LOWEST, F32_HIGHEST = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)


# ------------------------------------------------------------------ values
def test_sorted_segments_and_their_empty_segments():
    ids = [0, 0, 2, 2, 3]
    d = tf.constant(D)
    assert tf.math.segment_sum(d, ids).numpy().tolist() == [3., 0., 7., 5.]  # TF
    assert tf.math.segment_mean(d, ids).numpy().tolist() == [1.5, 0., 3.5, 5.]  # TF
    assert tf.math.segment_max(d, ids).numpy().tolist() == [2., 0., 4., 5.]  # TF
    assert tf.math.segment_min(d, ids).numpy().tolist() == [1., 0., 3., 5.]  # TF
    assert tf.math.segment_prod(d, ids).numpy().tolist() == [2., 1., 12., 5.]  # TF
    assert tf.math.segment_sum(d, [1, 1, 1, 1, 1]).numpy().tolist() == [0., 15.]  # TF
    ints = tf.constant([1, 2, 3, 4, 5])
    assert tf.math.segment_mean(ints, ids).numpy().tolist() == [1, 0, 3, 5]  # TF
    assert tf.math.segment_mean(tf.constant([-1, -2, -3]), [0, 0, 1]).numpy().tolist() == [-1, -3]
    assert tf.math.segment_max(tf.constant([-np.inf, 1.]), [0, 1]).numpy().tolist() == \
        [-np.inf, 1.]  # TF
    half = tf.math.segment_max(tf.constant([1., 2.], tf.float16), [0, 2])
    assert half.dtype == tf.float16 and half.numpy().tolist() == [1., 0., 2.]  # TF
    complex_sum = tf.math.segment_sum(tf.constant([1j, 2.]), tf.constant([0, 1], tf.int64))
    assert complex_sum.numpy().tolist() == [1j, 2.]  # TF
    rows = tf.math.segment_max(tf.constant([[1., 2.], [3., 0.]]), [0, 0])
    assert rows.numpy().tolist() == [[3., 2.]]  # TF


def test_unsorted_segments_drop_negative_ids_and_fill_empty_ones_as_tensorflow():
    d, ids = tf.constant(D), [0, 3, 0, 3, 1]
    assert tf.math.unsorted_segment_sum(d, ids, 5).numpy().tolist() == [4., 5., 0., 6., 0.]  # TF
    assert tf.math.unsorted_segment_mean(d, ids, 5).numpy().tolist() == [2., 5., 0., 3., 0.]
    assert tf.math.unsorted_segment_max(d, ids, 5).numpy().tolist() == \
        [3., 5., F32_LOWEST, 4., F32_LOWEST]  # TF
    assert tf.math.unsorted_segment_min(d, ids, 5).numpy().tolist() == \
        [1., 5., F32_HIGHEST, 2., F32_HIGHEST]  # TF
    assert tf.math.unsorted_segment_prod(d, ids, 5).numpy().tolist() == [3., 5., 1., 8., 1.]
    np.testing.assert_allclose(tf.math.unsorted_segment_sqrt_n(d, ids, 5).numpy(),
                               [2.828427, 5., 0., 4.2426405, 0.], rtol=1e-6)  # TF
    dropped = [-1, 3, 0, -5, 1]
    assert tf.math.unsorted_segment_sum(d, dropped, 5).numpy().tolist() == [3., 5., 0., 2., 0.]
    assert tf.math.unsorted_segment_prod(d, dropped, 5).numpy().tolist() == [3., 5., 1., 2., 1.]
    grid = tf.reshape(tf.range(12.), [2, 3, 2])
    assert tf.math.unsorted_segment_sum(grid, [[0, 1, 0], [2, 2, -1]], 3).numpy().tolist() == \
        [[4., 6.], [2., 3.], [14., 16.]]  # TF
    assert tf.math.unsorted_segment_prod(grid, [[0, 1, 0], [2, 2, -1]], 3).numpy().tolist() == \
        [[0., 5.], [2., 3.], [48., 63.]]  # TF
    assert tf.math.unsorted_segment_max(tf.constant([-np.inf, 1.]), [0, 1], 2).numpy().tolist() \
        == [F32_LOWEST, 1.]  # TF: the running maximum starts at the lowest finite value
    assert tf.math.unsorted_segment_sum(tf.constant(1.), 0, 1).numpy().tolist() == [1.]  # TF


def test_unsorted_segments_of_other_dtypes():
    ids = [0, 3, 0, 3, 1]
    ints, small = tf.constant([1, 2, 3, 4, 5]), tf.constant([1, 2, 3, 4, 5], tf.uint8)
    assert tf.math.unsorted_segment_max(ints, ids, 5).numpy().tolist() == \
        [3, 5, -2**31, 4, -2**31]  # TF
    assert tf.math.unsorted_segment_min(small, ids, 5).numpy().tolist() == [1, 5, 255, 2, 255]
    mean = tf.math.unsorted_segment_mean(ints, ids, 5)  # TF: a float mean of integers
    assert mean.dtype == tf.float64 and mean.numpy().tolist() == [2., 5., 0., 3., 0.]
    assert tf.math.unsorted_segment_mean(small, ids, 5).dtype == tf.float32  # TF
    half = tf.math.unsorted_segment_max(tf.constant([1., 2.], tf.float16), [0, 2], 3)
    assert half.numpy().tolist() == [1., -65504., 2.]  # TF
    brain = tf.math.unsorted_segment_max(tf.constant([1.], tf.bfloat16), [1], 2)
    assert brain.dtype == tf.bfloat16 and brain.numpy()[0] < -3.3e38  # TF: its lowest
    assert tf.math.unsorted_segment_sum(tf.constant([1j, 2.]), [0, 0], 1).numpy().tolist() == \
        [2 + 1j]  # TF
    assert tf.math.unsorted_segment_sum([1., 2.], tf.constant([0, 1], tf.int16), 2).numpy() \
        .tolist() == [1., 2.]  # TF


def test_num_segments_from_a_tensor():
    got = tf.math.unsorted_segment_sum(tf.constant(D), [0] * 5, tf.constant(2, tf.int64))
    assert got.numpy().tolist() == [15., 0.]  # TF


# ------------------------------------------------------------------ gradients
def test_extremum_gradients_split_equally_among_ties():
    x = np.array([2., 2., 1., 3.])
    _, g = numpy_value_and_grad(lambda t: tf.math.segment_max(t, [0, 0, 0, 1]) * [1., 2.], x)
    assert g.tolist() == [0.5, 0.5, 0., 2.]  # TF
    _, g = numpy_value_and_grad(
        lambda t: tf.math.unsorted_segment_max(t, [0, 0, 0, 1], 2) * [1., 2.], x)
    assert g.tolist() == [0.5, 0.5, 0., 2.]  # TF
    _, g = numpy_value_and_grad(
        lambda t: tf.math.unsorted_segment_min(t, [0, 0, 0, -1], 1) * 2.,
        np.array([1., 2., 1., 3.]))
    assert g.tolist() == [1., 0., 1., 0.]  # TF (with the cotangent 2)
    _, g = numpy_value_and_grad(lambda t: tf.math.unsorted_segment_max(t, [0, -1, 1], 2),
                                np.array([1., 2., 3.]))
    assert g.tolist() == [1., 0., 1.]  # TF


def test_segment_products_with_zeros_have_exact_derivatives():
    x = np.array([0., 2., 3., 0., 0., 4., 5.])
    for fn in (lambda t: tf.math.segment_prod(t, [0, 0, 0, 1, 1, 2, 2]),
               lambda t: tf.math.unsorted_segment_prod(t, [2, 0, 0, 1, 1, 2, 0], 3)):
        check_grads(fn, [x], order=2)
    _, g = numpy_value_and_grad(lambda t: tf.math.segment_prod(t, [0, 0, 0, 1, 1, 2, 2]), x)
    assert g.tolist() == [6., 0., 0., 0., 0., 5., 4.]  # TF


def test_mean_and_sqrt_n_gradients():
    _, g = numpy_value_and_grad(lambda t: tf.math.segment_mean(t, [0, 0, 2]), np.array([1., 2., 3.]))
    assert g.tolist() == [0.5, 0.5, 1.]  # TF
    _, g = numpy_value_and_grad(lambda t: tf.math.unsorted_segment_sqrt_n(t, [0, 0, -1], 2),
                                np.array([1., 2., 3.]))
    np.testing.assert_allclose(g, [0.5 ** 0.5, 0.5 ** 0.5, 0.])  # TF


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call, match", [
    (lambda: tf.math.segment_sum(D, [0, 1, 0, 2, 3]), "not increasing"),
    (lambda: tf.math.segment_max(D, [-1, 0, 0, 2, 3]), "negative"),
    (lambda: tf.math.segment_mean(D, [0, 0, 1]), "same size as dimension 0"),
    (lambda: tf.math.segment_prod(tf.ones([2, 2]), [[0, 0], [1, 1]]), "vector"),
    (lambda: tf.math.segment_min(tf.constant(1.), [0]), "same size as dimension 0"),
    (lambda: tf.math.segment_sum([True, False], [0, 0]), "bool"),
    (lambda: tf.math.segment_max([1j, 2.], [0, 1]), "complex"),
    (lambda: tf.math.unsorted_segment_sum(D, [0, 3, 0, 5, 1], 5),
     r"segment_ids\[3\] = 5 is out of range \[0, 5\)"),
    (lambda: tf.math.unsorted_segment_max(D, [0] * 5, -1), "must not be negative"),
    (lambda: tf.math.unsorted_segment_sum(tf.ones([2, 3]), [0, 1, 0], 2), "does not start with"),
    (lambda: tf.math.unsorted_segment_sum(tf.ones([2]), [[0, 1]], 2), "does not start with"),
    (lambda: tf.math.unsorted_segment_sum(tf.ones([2]), [0, 1], [2]), "scalar"),
    (lambda: tf.math.unsorted_segment_sqrt_n(tf.constant([1, 2]), [0, 1], 2), "int32"),
    (lambda: tf.math.bincount([1, -1, 3]), "non-negative"),
    (lambda: tf.math.bincount([1, 1], weights=[1., 2.], binary_output=True), "exclusive"),
    (lambda: tf.math.bincount([1, 2], weights=[1., 2., 3.]), "shape"),
    (lambda: tf.math.bincount([1, 2], dtype=tf.uint8), "dtype"),
    (lambda: tf.math.bincount(tf.ones([2, 2, 2], tf.int32), axis=-1), "rank at most 2"),
    (lambda: tf.math.bincount([1, 2], axis=1), "axis"),
    (lambda: tf.boolean_mask(tf.ones([3, 4]), True), "scalar"),
    (lambda: tf.boolean_mask(tf.ones([3, 4]), [True, False]), "must match"),
    (lambda: tf.boolean_mask(tf.ones([2]), [[True, False]]), "must match"),
    (lambda: tf.boolean_mask(tf.ones([3, 4]), [True, False, True], axis=2), "must match"),
    (lambda: tf.sequence_mask([1, 3], -1), "non-negative"),
    (lambda: tf.sequence_mask([1, 3], [3]), "scalar"),
    (lambda: tf.linalg.band_part(tf.ones([4, 4]), 10, 10), "number of rows"),
    (lambda: tf.linalg.band_part(tf.ones([4, 3]), 0, 4), "number of columns"),
    (lambda: tf.linalg.band_part(tf.ones([3]), 0, 0), "rank >= 2"),
    (lambda: tf.math.count_nonzero(tf.ones([2, 3]), axis=2), "out of range"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_non_integer_ids_are_type_errors():
    with pytest.raises(TypeError, match="integer"):
        tf.math.segment_sum(D, [0., 0., 1., 1., 1.])
    with pytest.raises(TypeError, match="integers"):
        tf.math.unsorted_segment_sum(D, [0] * 5, 2.5)
    with pytest.raises(TypeError, match="integers"):
        tf.linalg.band_part(tf.ones([2, 2]), 1., 0)


def test_ids_are_checked_at_every_replay_and_compiled_call():
    for jit in (None, True):
        if jit:
            pytest.importorskip("jax")
        f = tf.function(lambda d, i: tf.math.segment_sum(d, i), jit_compile=jit)
        g = tf.function(lambda d, i: tf.math.unsorted_segment_max(d, i, 3), jit_compile=jit)
        d = tf.constant([1., 2., 3.])
        assert f(d, tf.constant([0, 1, 1])).numpy().tolist() == [1., 5.]
        assert g(d, tf.constant([0, 2, 2])).numpy().tolist()[2] == 3.
        with pytest.raises(InvalidArgumentError, match="not increasing"):
            f(d, tf.constant([1, 0, 1]))  # the same largest id: no new trace
        with pytest.raises(InvalidArgumentError, match="out of range"):
            g(d, tf.constant([0, 3, 2]))
        assert f.experimental_get_tracing_count() == 1


# ------------------------------------------------------------------ size 0
def test_size_zero_inputs():
    empty_ids = tf.zeros([0], tf.int32)
    for op in (tf.math.segment_sum, tf.math.segment_mean, tf.math.segment_max,
               tf.math.segment_min, tf.math.segment_prod):
        assert op(tf.zeros([0, 2]), empty_ids).shape == (0, 2)  # TF
    for op in (tf.math.unsorted_segment_sum, tf.math.unsorted_segment_prod,
               tf.math.unsorted_segment_max, tf.math.unsorted_segment_sqrt_n):
        assert op(tf.zeros([0, 2]), empty_ids, 3).shape == (3, 2)
        assert op(tf.constant(D), [-1] * 5, 0).shape == (0,)  # TF
    assert tf.math.unsorted_segment_prod(tf.zeros([0]), empty_ids, 2).numpy().tolist() == [1., 1.]
    _, g = numpy_value_and_grad(lambda t: tf.math.unsorted_segment_prod(t, [0, 1], 2),
                                np.zeros(2))
    assert g.tolist() == [1., 1.]
    assert tf.math.bincount(tf.zeros([0], tf.int32)).shape == (0,)  # TF
    assert tf.boolean_mask(tf.zeros([0, 2]), tf.zeros([0], tf.bool)).shape == (0, 2)  # TF
    assert tf.boolean_mask(tf.ones([3, 4]), [False] * 3).shape == (0, 4)  # TF
    assert tf.sequence_mask(tf.zeros([0], tf.int32)).shape == (0, 0)  # TF
    assert tf.sequence_mask([1, 3], 0).shape == (2, 0)  # TF
    assert tf.linalg.band_part(tf.zeros([0, 3]), 0, 0).shape == (0, 3)  # TF
    assert tf.math.count_nonzero(tf.zeros([0, 2]), axis=0).numpy().tolist() == [0, 0]  # TF


# ------------------------------------------------------------------ bincount and the masks
def test_bincount_lengths_weights_dtypes_and_rows():
    a = [1, 1, 3]
    assert tf.math.bincount(a).numpy().tolist() == [0, 2, 0, 1]  # TF
    assert tf.math.bincount(a, minlength=6).numpy().tolist() == [0, 2, 0, 1, 0, 0]  # TF
    assert tf.math.bincount(a, maxlength=2).numpy().tolist() == [0, 2]  # TF
    assert tf.math.bincount(a, minlength=5, maxlength=2).numpy().tolist() == [0, 2]  # TF
    assert tf.math.bincount(a, maxlength=0).shape == (0,)  # TF
    weighted = tf.math.bincount(a, weights=[0.5, 1., 2.], dtype=tf.float64)
    assert weighted.dtype == tf.float32 and weighted.numpy().tolist() == [0., 1.5, 0., 2.]  # TF
    assert tf.math.bincount(a, weights=[1, 2, 3]).numpy().tolist() == [0, 3, 0, 3]  # TF
    assert tf.math.bincount(a, dtype=tf.int64).dtype == tf.int64
    assert tf.math.bincount(a, dtype=tf.float32).numpy().tolist() == [0., 2., 0., 1.]  # TF
    assert tf.math.bincount([[1, 1], [3, 0]]).numpy().tolist() == [1, 2, 0, 1]  # TF
    assert tf.math.bincount([[1, 1], [3, 0]], axis=0).numpy().tolist() == [1, 2, 0, 1]  # TF
    assert tf.math.bincount([[1, 1], [3, 0]], axis=-1).numpy().tolist() == \
        [[0, 2, 0, 0], [1, 0, 0, 1]]  # TF
    rows = tf.math.bincount([[1, 1], [3, 0]], weights=[[1., 2.], [3., 4.]], axis=-1)
    assert rows.numpy().tolist() == [[0., 3., 0., 0.], [4., 0., 0., 3.]]  # TF
    assert tf.math.bincount([[1, 5], [3, 0]], axis=-1, maxlength=4).numpy().tolist() == \
        [[0, 1, 0, 0], [1, 0, 0, 1]]
    assert tf.math.bincount(a, binary_output=True).numpy().tolist() == [0, 1, 0, 1]  # TF
    assert tf.math.bincount([1., 2.]).numpy().tolist() == [0, 1, 1]  # TF: floats cast
    assert tf.math.bincount(3).numpy().tolist() == [0, 0, 0, 1]  # TF
    _, g = numpy_value_and_grad(lambda w: tf.math.bincount(a, weights=w) * [1., 2., 3., 4.],
                                np.array([0.5, 1., 2.]))
    assert g.tolist() == [2., 2., 4.]


def test_boolean_mask_axes_and_masks():
    x = tf.reshape(tf.range(12.), [3, 4])
    assert tf.boolean_mask(x, x > 5.).numpy().tolist() == [6., 7., 8., 9., 10., 11.]  # TF
    assert tf.boolean_mask(x, [True, False, True, True], axis=1).numpy().tolist() == \
        [[0., 2., 3.], [4., 6., 7.], [8., 10., 11.]]  # TF
    assert tf.boolean_mask(x, [True, False, True, True], axis=-1).shape == (3, 3)
    assert tf.boolean_mask(x, [1, 0, 1]).shape == (2, 4)  # TF: nonzero entries
    assert tf.boolean_mask(x, [True, False, True], axis=tf.constant(0)).shape == (2, 4)  # TF
    assert tf.boolean_mask(tf.zeros([2, 3, 4]), tf.ones([3, 4], tf.bool), axis=1).shape == \
        (2, 12)  # TF
    assert tf.boolean_mask([1, 2, 3], [True, False, True]).numpy().tolist() == [1, 3]  # TF
    _, g = numpy_value_and_grad(lambda t: tf.boolean_mask(t, [True, False, True]) * [2., 3.],
                                np.zeros(3))
    assert g.tolist() == [2., 0., 3.]


def test_a_traced_boolean_mask_retraces_only_when_the_count_changes():
    f = tf.function(lambda x: tf.reduce_sum(tf.boolean_mask(x, x > 0.)))
    assert f(tf.constant([1., -1., 2.])).numpy() == 3.
    assert f(tf.constant([-1., 5., 2.])).numpy() == 7.
    assert f.experimental_get_tracing_count() == 1
    assert f(tf.constant([1., 1., 2.])).numpy() == 4.
    assert f.experimental_get_tracing_count() == 2


def test_jit_compiled_masks_and_counts():
    pytest.importorskip("jax")

    def body(x, ids):
        return (tf.boolean_mask(x, x > 0.), tf.math.bincount(ids, minlength=4),
                tf.math.unsorted_segment_prod(x, ids, 4), tf.sequence_mask(ids),
                tf.linalg.band_part(tf.reshape(x, [2, 2]), 0, -1))

    f = tf.function(body, jit_compile=True)
    for x, ids in (([1., -2., 3., 4.], [0, 2, 2, 1]), ([-1., 2., 5., 6.], [1, 0, 2, 2])):
        x, ids = tf.constant(x), tf.constant(ids)
        for got, want in zip(f(x, ids), body(x, ids)):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert not f.get_concrete_function(x, ids).executable.inner._missing


def test_sequence_mask_lengths_and_dtypes():
    assert tf.sequence_mask([1, 3, 2], 5).numpy().tolist() == [
        [True, False, False, False, False], [True, True, True, False, False],
        [True, True, False, False, False]]  # TF
    assert tf.sequence_mask([1, 3, 2]).shape == (3, 3)  # TF
    assert tf.sequence_mask([[1, 3], [2, 0]]).shape == (2, 2, 3)  # TF
    assert tf.sequence_mask([1, 3], 4, dtype=tf.float32).numpy().tolist() == \
        [[1., 0., 0., 0.], [1., 1., 1., 0.]]  # TF
    assert tf.sequence_mask([-1, 3], 4).numpy().tolist()[0] == [False] * 4  # TF
    assert tf.sequence_mask(2, 4).numpy().tolist() == [True, True, False, False]  # TF
    assert tf.sequence_mask(tf.constant([1, 3], tf.int64), tf.constant(4, tf.int64)).shape == (2, 4)
    assert tf.sequence_mask([1.5, 2.], 3).numpy().tolist() == \
        [[True, False, False], [True, True, False]]  # TF: truncated with maxlen
    assert tf.sequence_mask([1.5, 2.]).numpy().tolist() == [[True, True], [True, True]]


def test_band_part_bands_and_dtypes():
    m = tf.reshape(tf.range(1., 17.), [4, 4])
    assert tf.linalg.band_part(m, 1, 0).numpy().tolist() == [
        [1., 0., 0., 0.], [5., 6., 0., 0.], [0., 10., 11., 0.], [0., 0., 15., 16.]]  # TF
    assert tf.linalg.band_part(m, -2, 0).numpy().tolist() == np.tril(m.numpy()).tolist()  # TF
    assert tf.linalg.band_part(tf.ones([2, 4]), 0, 1).numpy().tolist() == \
        [[1., 1., 0., 0.], [0., 1., 1., 0.]]  # TF
    assert tf.linalg.band_part(tf.ones([2, 2, 3]), 0, 0).numpy().sum() == 4.  # TF
    assert tf.linalg.band_part(tf.ones([2, 2], tf.bool), 0, 0).numpy().tolist() == \
        [[True, False], [False, True]]  # TF
    assert tf.linalg.band_part(tf.constant([[1j, 2.], [3., 4j]]), 0, 0).numpy().tolist() == \
        [[1j, 0j], [0j, 4j]]  # TF
    assert tf.linalg.band_part(m, tf.constant(1, tf.int64), -1).numpy()[3, 0] == 0.


def test_count_nonzero_dtypes_axes_and_nan():
    x = [[0, 1], [2, 2]]
    assert tf.math.count_nonzero(x).numpy() == 3 and tf.math.count_nonzero(x).dtype == tf.int64
    assert tf.math.count_nonzero(x, axis=1, keepdims=True).numpy().tolist() == [[1], [2]]  # TF
    assert tf.math.count_nonzero(x, dtype=tf.float32).numpy() == 3.  # TF
    assert tf.math.count_nonzero(tf.ones([300]), dtype=tf.uint8).numpy() == 44  # TF: wraps
    assert tf.math.count_nonzero(tf.ones([3]), dtype=tf.bool).numpy()  # TF
    assert tf.math.count_nonzero([0., np.nan, -0.]).numpy() == 1  # TF
    assert tf.math.count_nonzero([True, False, True]).numpy() == 2  # TF
    assert tf.math.count_nonzero([0j, 1j]).numpy() == 1  # TF
    assert tf.math.count_nonzero(tf.ones([2, 3, 4]), axis=[0, 2]).numpy().tolist() == [8] * 3


# ------------------------------------------------------------------ vmap
def test_vmap_over_ids_matches_a_loop():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((3, 5, 2))
    ids = np.array([[0, 0, 1, 2, 2], [0, 1, 1, 1, 2], [0, 0, 0, 2, 2]])

    def fn(d, i):
        return (tf.math.segment_max(d, i), tf.math.unsorted_segment_min(d, i - 1, 2),
                tf.math.unsorted_segment_prod(d, i, 3), tf.math.segment_mean(d, i))

    got = tf.vmap(fn)(tf.constant(data), tf.constant(ids))
    for k, g in enumerate(got):
        want = np.stack([fn(tf.constant(d), tf.constant(i))[k].numpy()
                         for d, i in zip(data, ids)])
        np.testing.assert_allclose(g.numpy(), want, rtol=1e-14)
    with pytest.raises(InvalidArgumentError, match="different numbers of bins"):
        tf.vmap(lambda i: tf.math.segment_sum(tf.ones([2]), i))(tf.constant([[0, 1], [0, 0]]))


def test_vmap_of_boolean_mask_with_equal_counts():
    x = tf.constant([[1., -1., 2.], [-3., 4., 5.]])
    got = tf.vmap(lambda r: tf.boolean_mask(r, r > 0.))(x)
    assert got.numpy().tolist() == [[1., 2.], [4., 5.]]
    with pytest.raises(InvalidArgumentError, match="different numbers of selected entries"):
        tf.vmap(lambda r: tf.boolean_mask(r, r > 1.5))(x)


# ------------------------------------------------------------------ against TensorFlow
PEER_CASES = {
    "segment_max_gap": lambda m: m.math.segment_max(m.constant([[1., 5.], [2., 0.], [4., 4.]]),
                                                    [0, 0, 3]),
    "segment_min_ints": lambda m: m.math.segment_min(m.constant([4, -1, 7, 2]), [1, 1, 2, 2]),
    "segment_mean_ints": lambda m: m.math.segment_mean(m.constant([-7, 2, 9, 4]), [0, 0, 0, 3]),
    "segment_prod_f64": lambda m: m.math.segment_prod(m.constant([1.5, 2., -3., 0.5], m.float64),
                                                      [0, 1, 1, 1]),
    "unsorted_sum_grid": lambda m: m.math.unsorted_segment_sum(
        m.reshape(m.range(24.), [2, 3, 4]), [[1, -1, 0], [4, 1, 1]], 5),
    "unsorted_max_ints": lambda m: m.math.unsorted_segment_max(
        m.constant([3, 9, -2, 7], m.int64), [2, 2, 0, -1], 4),
    "unsorted_min_f64": lambda m: m.math.unsorted_segment_min(
        m.constant([3., 9., -2., 7.], m.float64), [2, 2, 0, 1], 4),
    "unsorted_mean_int8": lambda m: m.math.unsorted_segment_mean(
        m.constant([3, 9, -2, 7], m.int8), [2, 2, 0, 1], 4),
    "unsorted_sqrt_n": lambda m: m.math.unsorted_segment_sqrt_n(
        m.constant([[3., 9.], [-2., 7.], [1., 1.]]), [2, 2, -3], 3),
    "bincount_maxlength_rows": lambda m: m.math.bincount(m.constant([[0, 4, 4], [2, 2, 7]]),
                                                         maxlength=5, axis=-1),
    "bincount_weights_f64": lambda m: m.math.bincount(
        m.constant([2, 0, 2]), weights=m.constant([0.25, 1., 2.], m.float64), minlength=4),
    "boolean_mask_inner": lambda m: m.boolean_mask(m.reshape(m.range(24), [2, 3, 4]),
                                                   m.constant([[True, False, True, False],
                                                               [False, False, True, True],
                                                               [True, True, True, False]]),
                                                   axis=1),
    "sequence_mask_float": lambda m: m.sequence_mask(m.constant([[0.5, 2.5], [3., 0.]]),
                                                     dtype=m.float64),
    "band_part_batch": lambda m: m.linalg.band_part(m.reshape(m.range(30), [2, 3, 5]), 2, 1),
    "count_nonzero_keepdims": lambda m: m.math.count_nonzero(
        m.constant([[0., 1., 2.], [0., 0., 3.]]), axis=0, keepdims=True, dtype=m.int32),
}


@pytest.mark.peers
@pytest.mark.parametrize("name", list(PEER_CASES))
def test_values_match_tensorflow(name):
    real = pytest.importorskip("tensorflow")
    ours, theirs = PEER_CASES[name](tf), PEER_CASES[name](real)
    assert ours.dtype.name == theirs.dtype.name, name
    np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, err_msg=name)


GRAD_CASES = {
    "segment_max_ties": lambda m, x: m.math.segment_max(x, [0, 0, 0, 1, 1, 1]),
    "unsorted_min_ties": lambda m, x: m.math.unsorted_segment_min(x, [1, 0, 1, 0, -1, 1], 3),
    "segment_prod_zeros": lambda m, x: m.math.segment_prod(x * [1., 1., 0., 1., 1., 1.],
                                                           [0, 0, 0, 1, 1, 1]),
    "unsorted_prod": lambda m, x: m.math.unsorted_segment_prod(x, [2, 0, 2, 0, 2, 1], 3),
    "boolean_mask": lambda m, x: m.boolean_mask(x, [True, False, True, True, False, True]),
    "band_part": lambda m, x: m.linalg.band_part(m.reshape(x, [2, 3]), 0, 1),
}


@pytest.mark.peers
@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_match_tensorflow(name):
    real = pytest.importorskip("tensorflow")
    x = np.array([2., 1., 2., 2., 0.5, 2.])
    grads = []
    for m in (tf, real):
        t = m.constant(x)
        with m.GradientTape() as tape:
            tape.watch(t)
            y = m.reduce_sum(m.sin(GRAD_CASES[name](m, t)))
        grads.append(np.asarray(tape.gradient(y, t)))
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-15, err_msg=name)
