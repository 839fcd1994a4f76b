"""sort, argsort, top_k, searchsorted, unique and roll beyond the op table: the order of
ties (and so where the gradient goes at ties), the dtypes, the errors bad arguments
raise, size-0 inputs, value-dependent lengths under tf.function, jit_compile and vmap,
and (marked peers) TensorFlow's own results for the same calls.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import numpy_value_and_grad

TIES = [3., 1., 3., 2., 1.]


# ------------------------------------------------------------------ ties and order
def test_ties_keep_their_index_order_in_both_directions():
    x = tf.constant(TIES)
    np.testing.assert_array_equal(tf.argsort(x).numpy(), [1, 4, 3, 0, 2])  # TF
    np.testing.assert_array_equal(tf.argsort(x, direction="DESCENDING").numpy(),
                                  [0, 2, 3, 1, 4])  # TF
    np.testing.assert_array_equal(tf.argsort(x, stable=True).numpy(), [1, 4, 3, 0, 2])
    ints = tf.constant([3, 1, 3, 2, 1, -2147483648, 2147483647])
    np.testing.assert_array_equal(tf.argsort(ints).numpy(), [5, 1, 4, 3, 0, 2, 6])  # TF
    np.testing.assert_array_equal(tf.argsort(ints, direction="DESCENDING").numpy(),
                                  [6, 0, 2, 3, 1, 4, 5])  # TF
    bytes_ = tf.constant([3, 0, 255, 1, 0], tf.uint8)
    np.testing.assert_array_equal(tf.argsort(bytes_, direction="DESCENDING").numpy(),
                                  [2, 0, 3, 1, 4])  # TF
    zeros = tf.constant([0., -0., 0., -0.])  # signed zeros are equal: ties
    for direction in ("ASCENDING", "DESCENDING"):
        np.testing.assert_array_equal(tf.argsort(zeros, direction=direction).numpy(),
                                      [0, 1, 2, 3])  # TF


def test_gradients_at_ties_go_where_tensorflow_sends_them():
    w = np.arange(5.)
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.sort(t) * w), np.array(TIES))
    np.testing.assert_array_equal(g, [3., 0., 4., 2., 1.])  # TF
    _, g = numpy_value_and_grad(
        lambda t: tf.reduce_sum(tf.sort(t, direction="DESCENDING") * w), np.array(TIES))
    np.testing.assert_array_equal(g, [0., 3., 1., 2., 4.])  # TF
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.math.top_k(t, 3).values * w[:3]),
                                np.array(TIES))
    np.testing.assert_array_equal(g, [0., 0., 1., 2., 0.])  # TF


def test_nan_sorts_last_ascending_and_first_descending():
    x = tf.constant([1., np.nan, -1., np.inf])
    np.testing.assert_array_equal(tf.sort(x).numpy(), [-1., 1., np.inf, np.nan])
    np.testing.assert_array_equal(tf.argsort(x, direction="DESCENDING").numpy(), [1, 3, 0, 2])


def test_axes_and_dtypes():
    x = tf.constant([[3., 1.], [0., 2.]])
    np.testing.assert_array_equal(tf.sort(x, axis=0).numpy(), [[0., 1.], [3., 2.]])  # TF
    np.testing.assert_array_equal(tf.sort(x, axis=tf.constant(-2)).numpy(), [[0., 1.], [3., 2.]])
    for dtype in (tf.int8, tf.int16, tf.int32, tf.int64, tf.uint8, tf.uint16, tf.uint32,
                  tf.uint64, tf.float16, tf.bfloat16, tf.float64):
        v = tf.constant([3, 0, 2], dtype)
        out = tf.sort(v, direction="DESCENDING")
        assert out.dtype == dtype
        np.testing.assert_array_equal(out.numpy().astype(np.float64), [3., 2., 0.])
    extremes = tf.constant([3, -2**63, 2**63 - 1], tf.int64)
    np.testing.assert_array_equal(tf.sort(extremes, direction="DESCENDING").numpy(),
                                  [2**63 - 1, 3, -2**63])  # TF
    np.testing.assert_array_equal(tf.sort(tf.constant([3, 0, 2**64 - 1], tf.uint64)).numpy(),
                                  np.array([0, 3, 2**64 - 1], np.uint64))  # TF


def test_top_k_is_a_namedtuple_with_tensorflows_fields():
    out = tf.math.top_k(tf.constant([[1., 3., 2.], [5., 4., 6.]]), 2)
    assert out._fields == ("values", "indices")
    np.testing.assert_array_equal(out.values.numpy(), [[3., 2.], [6., 5.]])  # TF
    np.testing.assert_array_equal(out.indices.numpy(), [[1, 2], [2, 0]])  # TF
    assert out.indices.dtype == tf.int32
    assert tf.nn.top_k(tf.constant([1., 2.]), index_type=tf.int64).indices.dtype == tf.int64
    assert tf.math.top_k(tf.constant([1., 2.]), index_type=tf.int16).indices.dtype == tf.int16
    # k as a tensor, and unsorted: the k largest in descending order (a valid order)
    values, indices = tf.math.top_k(tf.constant([1., 5., 3., 4., 2., 6.]), tf.constant(3),
                                    sorted=False)
    np.testing.assert_array_equal(values.numpy(), [6., 5., 4.])
    np.testing.assert_array_equal(indices.numpy(), [5, 1, 3])
    ints = tf.math.top_k(tf.constant([3, 1, 3, 2, 1, -2147483648, 2147483647]), 3)
    np.testing.assert_array_equal(ints.indices.numpy(), [6, 0, 2])  # TF


def test_searchsorted_sides_lines_and_index_types():
    s = tf.constant([1., 2., 2., 3.])
    np.testing.assert_array_equal(tf.searchsorted(s, [2., 0., 5., 2.5]).numpy(), [1, 0, 4, 3])  # TF
    np.testing.assert_array_equal(tf.searchsorted(s, [2., 0., 5., 2.5], side="right").numpy(),
                                  [3, 0, 4, 3])  # TF
    lines = tf.searchsorted([[1., 2.], [3., 4.]], [[1.5], [5.]])
    np.testing.assert_array_equal(lines.numpy(), [[1], [2]])  # TF
    assert tf.searchsorted(s, [2.], out_type=tf.int64).dtype == tf.int64
    grid = np.arange(12.).reshape(2, 2, 3)
    got = tf.searchsorted(grid, np.array([[[0.5, 4.], [7., 11.]], [[6.5, 0.], [11., 9.]]]))
    np.testing.assert_array_equal(got.numpy(), [[[1, 3], [3, 3]], [[1, 0], [2, 0]]])
    np.testing.assert_array_equal(tf.searchsorted([1, 3, 5], [0, 3, 6]).numpy(), [0, 1, 3])  # TF


def test_unique_order_nan_zeros_and_dtypes():
    y, idx = tf.unique(tf.constant(TIES))
    np.testing.assert_array_equal(y.numpy(), [3., 1., 2.])  # TF
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 0, 2, 1])  # TF
    out = tf.unique_with_counts(tf.constant(TIES), out_idx=tf.int64)
    assert out._fields == ("y", "idx", "count")
    assert out.idx.dtype == tf.int64 and out.count.dtype == tf.int64
    np.testing.assert_array_equal(out.count.numpy(), [2, 2, 1])  # TF
    y, idx = tf.unique(tf.constant([np.nan, 1., np.nan, 1.]))
    np.testing.assert_array_equal(y.numpy(), [np.nan, 1., np.nan])  # TF: every NaN distinct
    np.testing.assert_array_equal(idx.numpy(), [0, 1, 2, 1])  # TF
    y, idx = tf.unique(tf.constant([-0., 0., 1., 0.]))
    assert np.signbit(y.numpy()[0]) and idx.numpy().tolist() == [0, 0, 1, 0]  # TF: the first
    for values in ([True, False, True], np.array([1, 2, 1], np.int8), [1 + 1j, 2., 1 + 1j]):
        y, idx = tf.unique(tf.constant(values))
        assert idx.numpy().tolist() == [0, 1, 0] and y.shape == (2,)
    y, idx = tf.unique(tf.constant([1., 2., 1.], tf.bfloat16))
    assert y.dtype == tf.bfloat16 and idx.numpy().tolist() == [0, 1, 0]


def test_unique_values_have_a_gradient_at_first_occurrences():
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.unique(t).y * [1., 2., 3.]),
                                np.array(TIES))
    np.testing.assert_array_equal(g, [1., 2., 0., 3., 0.])


def test_roll_lists_repeats_negative_and_large_shifts():
    x = tf.reshape(tf.range(12), [3, 4])
    np.testing.assert_array_equal(tf.roll(tf.range(5), 2, 0).numpy(), [3, 4, 0, 1, 2])  # TF
    np.testing.assert_array_equal(tf.roll(tf.range(5), -7, 0).numpy(), [2, 3, 4, 0, 1])  # TF
    np.testing.assert_array_equal(tf.roll(x, [1, 2], [1, 1]).numpy(), np.roll(x.numpy(), 3, 1))
    np.testing.assert_array_equal(tf.roll(x, tf.constant([1], tf.int64), [0]).numpy(),
                                  np.roll(x.numpy(), 1, 0))
    np.testing.assert_array_equal(tf.roll(x, 8, -2).numpy(), np.roll(x.numpy(), 8, 0))
    np.testing.assert_array_equal(tf.roll([True, False, False], 1, 0).numpy(),
                                  [False, True, False])  # TF
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.roll(t, 1, 0) * [1., 2., 3.]),
                                np.zeros(3))
    np.testing.assert_array_equal(g, [2., 3., 1.])  # the cotangent rolled back


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("call, match", [
    (lambda: tf.sort(tf.constant([1., 2.]), direction="UP"), "direction"),
    (lambda: tf.sort(tf.constant([1., 2.]), axis=1), "axis"),
    (lambda: tf.argsort(tf.constant([1., 2.]), axis=-2), "axis"),
    (lambda: tf.sort(tf.constant(1.)), "rank >= 1"),
    (lambda: tf.sort(tf.constant([True, False])), "bool"),
    (lambda: tf.sort(tf.constant([1j, 2.])), "complex"),
    (lambda: tf.math.top_k(tf.constant([1., 2.]), 3), r"`k`=3 must lie in \[0, 2\]"),
    (lambda: tf.math.top_k(tf.constant([1., 2.]), -1), r"`k`=-1"),
    (lambda: tf.math.top_k(tf.constant(1.), 1), "rank >= 1"),
    (lambda: tf.math.top_k(tf.constant([1., 2.]), 1, index_type=tf.float32), "index_type"),
    (lambda: tf.searchsorted([1., 2.], [1.], side="middle"), "side"),
    (lambda: tf.searchsorted([[1., 2.], [3., 4.]], [1.5]), "leading dimensions"),
    (lambda: tf.searchsorted(1., [1.5]), "rank >= 1"),
    (lambda: tf.searchsorted(tf.constant([1., 2.]), tf.constant([1])), "dtype"),
    (lambda: tf.searchsorted([1., 2.], [1.], out_type=tf.float32), "out_type"),
    (lambda: tf.unique([[1., 2.]]), "1-D"),
    (lambda: tf.unique(1.), "1-D"),
    (lambda: tf.unique([1., 2.], out_idx=tf.float32), "out_idx"),
    (lambda: tf.roll(tf.zeros([3, 4]), 1, [0, 1]), "same size"),
    (lambda: tf.roll(tf.zeros([3, 4]), 1, 2), "out of range"),
    (lambda: tf.roll(tf.zeros([3, 4]), 1, -3), "out of range"),
    (lambda: tf.roll(tf.constant(5.), 1, 0), "rank >= 1"),
    (lambda: tf.roll(tf.zeros([3]), [[1]], [[0]]), "scalar or a 1-D"),
])
def test_bad_arguments_raise_clear_errors(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_non_integer_k_and_shift_are_type_errors():
    with pytest.raises(TypeError, match="integers"):
        tf.math.top_k(tf.constant([1., 2.]), 2.0)
    with pytest.raises(TypeError, match="integers"):
        tf.roll(tf.zeros([3]), 1.5, 0)


# ------------------------------------------------------------------ size 0
def test_size_zero_inputs():
    assert tf.sort(tf.zeros([2, 0])).shape == (2, 0)
    assert tf.sort(tf.zeros([0, 3]), axis=0).shape == (0, 3)
    assert tf.argsort(tf.zeros([0])).dtype == tf.int32
    values, indices = tf.math.top_k(tf.zeros([2, 0]), 0)
    assert values.shape == (2, 0) and indices.shape == (2, 0)
    assert tf.math.top_k(tf.constant([1., 2.]), 0).values.shape == (0,)  # TF
    assert tf.searchsorted(tf.zeros([0]), [1.]).numpy().tolist() == [0]  # TF
    assert tf.searchsorted([1., 2.], tf.zeros([0])).shape == (0,)  # TF
    y, idx = tf.unique(tf.zeros([0]))
    assert y.shape == (0,) and idx.shape == (0,)
    assert tf.roll(tf.zeros([0, 3]), 1, 0).shape == (0, 3)
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.sort(t)), np.zeros((2, 0)))
    assert g.shape == (2, 0)


# ------------------------------------------------------------------ tracing, XLA, vmap
def test_a_traced_unique_retraces_only_when_the_number_of_values_changes():
    f = tf.function(lambda a: tf.unique(a).y * 2.)
    np.testing.assert_array_equal(f(tf.constant(TIES)).numpy(), [6., 2., 4.])
    np.testing.assert_array_equal(f(tf.constant([5., 6., 5., 7., 7.])).numpy(), [10., 12., 14.])
    assert f.experimental_get_tracing_count() == 1
    np.testing.assert_array_equal(f(tf.constant([1., 2., 3., 4., 5.])).numpy(),
                                  [2., 4., 6., 8., 10.])
    assert f.experimental_get_tracing_count() == 2


def test_size_generic_traces_give_eager_values():
    def body(a):
        y = tf.unique(a).y
        return tf.reduce_sum(tf.sort(tf.reshape(y, [-1, 1]) * [1., 2.], axis=0)), tf.shape(y)

    f = tf.function(body, input_signature=[tf.TensorSpec([None], tf.float32)])
    for v in ([3., 1., 3., 2., 1.], [1., 2., 3., 1., 2., 7.], [1., 2., 3., 4., 5.],
              [1., 1., 1., 1., 1.], [4., 2., 4., 2., 4., 2., 4.]):
        got, want = f(tf.constant(v)), body(tf.constant(v))
        assert got[0].numpy() == want[0].numpy()
        assert got[1].numpy().tolist() == want[1].numpy().tolist()


@pytest.mark.filterwarnings("error")
def test_jit_compile_runs_through_xla():
    pytest.importorskip("jax")

    def body(a, s):
        top = tf.math.top_k(a, 2)
        return (tf.sort(a, direction="DESCENDING"), top.values, top.indices,
                tf.searchsorted(tf.sort(s), a, side="right"), tf.unique_with_counts(s),
                tf.roll(a, -1, 0))

    f = tf.function(body, jit_compile=True)
    for a, s in (([3., 1., 3., 2.], [5., 6., 5., 7., 7.]),
                 ([0., 9., -1., 2.], [1., 3., 1., 3., 3.])):
        a, s = tf.constant(a), tf.constant(s)
        for got, want in zip(tf.nest.flatten(f(a, s)), tf.nest.flatten(body(a, s))):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert not f.get_concrete_function(a, s).executable.inner._missing
    # Another number of distinct values: a new trace, never a stale length.
    s = tf.constant([1., 2., 3., 4., 5.])
    np.testing.assert_array_equal(f(a, s)[4].y.numpy(), [1., 2., 3., 4., 5.])


def test_vmap_of_unique_needs_the_same_number_of_values_per_example():
    got = tf.vmap(lambda a: tf.unique(a).idx)(tf.constant([[3., 1., 3.], [0., 2., 2.]]))
    np.testing.assert_array_equal(got.numpy(), [[0, 1, 0], [0, 1, 1]])
    with pytest.raises(InvalidArgumentError, match="different numbers of distinct entries"):
        tf.vmap(lambda a: tf.unique(a).idx)(tf.constant([[3., 1., 3.], [0., 2., 1.]]))


def test_vmap_of_sort_gradient_and_top_k():
    x = np.random.default_rng(0).standard_normal((4, 6))

    def grad(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = tf.reduce_sum(tf.math.top_k(a, 3).values * [3., 2., 1.])
        return tape.gradient(y, a)

    got = tf.vmap(grad)(tf.constant(x))
    want = np.stack([grad(tf.constant(row)).numpy() for row in x])
    np.testing.assert_array_equal(got.numpy(), want)


@pytest.mark.parametrize("jit", [None, True])
def test_top_k_traced_for_every_size_checks_k_at_each_size(jit):
    if jit:
        pytest.importorskip("jax")
    f = tf.function(lambda x: tf.math.top_k(x, 3).values, jit_compile=jit,
                    input_signature=[tf.TensorSpec([None, None], tf.float64)])
    rng = np.random.default_rng(0)
    for shape in ((2, 5), (3, 7), (4, 9)):
        x = rng.standard_normal(shape)
        np.testing.assert_array_equal(f(tf.constant(x)).numpy(), -np.sort(-x, -1)[:, :3])
    with pytest.raises(InvalidArgumentError, match=r"`k`=3 must lie in \[0, 2\]"):
        f(tf.constant(rng.standard_normal((2, 2))))


def test_k_read_from_a_tensor_in_a_trace_is_guarded():
    f = tf.function(lambda a, k: tf.math.top_k(a, k).values)
    a = tf.constant([1., 4., 2., 3.])
    assert f(a, tf.constant(2)).numpy().tolist() == [4., 3.]
    assert f(a, tf.constant(3)).numpy().tolist() == [4., 3., 2.]


# ------------------------------------------------------------------ against TensorFlow
PEER_CASES = {
    "sort_ties": lambda m: m.sort(m.constant(TIES)),
    "sort_desc_ties": lambda m: m.sort(m.constant(TIES), direction="DESCENDING"),
    "argsort_ties": lambda m: m.argsort(m.constant(TIES)),
    "argsort_desc_ties": lambda m: m.argsort(m.constant(TIES), direction="DESCENDING"),
    "argsort_desc_stable": lambda m: m.argsort(m.constant(TIES), direction="DESCENDING",
                                               stable=True),
    "argsort_int8": lambda m: m.argsort(m.constant([3, -128, 127, 3, -128], m.int8),
                                        direction="DESCENDING"),
    "argsort_uint16": lambda m: m.argsort(m.constant([3, 0, 65535, 3, 0], m.uint16)),
    "argsort_axis0": lambda m: m.argsort(m.constant([[1., 1.], [0., 1.], [1., 0.]]), axis=0),
    "sort_f16": lambda m: m.sort(m.constant([3., 1., 2., 1.], m.float16)),
    "top_k_ties": lambda m: m.math.top_k(m.constant([[1., 3., 3., 2.], [0., 0., 0., 1.]]), 3),
    "top_k_ints": lambda m: m.math.top_k(m.constant([5, 1, 5, 2], m.int64), 4),
    "searchsorted_left": lambda m: m.searchsorted(m.constant([[1., 2., 2., 3.], [0., 0., 4., 4.]]),
                                                  m.constant([[2., 3.5, -1.], [0., 4., 9.]])),
    "searchsorted_right": lambda m: m.searchsorted(m.constant([1, 2, 2, 3]),
                                                   m.constant([2, 0, 3]), side="right",
                                                   out_type=m.int64),
    "unique": lambda m: m.unique(m.constant([4, 1, 4, 4, 0, 1])),
    "unique_counts": lambda m: m.unique_with_counts(m.constant([4., -0., 0., 4., 1.]),
                                                    out_idx=m.int64),
    "unique_nan": lambda m: m.unique_with_counts(m.constant([np.nan, 1., np.nan, 1.])),
    "unique_empty": lambda m: m.unique(m.zeros([0])),
    "roll_lists": lambda m: m.roll(m.reshape(m.range(12), [3, 4]), [1, -1], [0, 1]),
    "roll_repeated": lambda m: m.roll(m.reshape(m.range(12), [3, 4]), [1, 2, -9], [1, 1, 0]),
    "roll_large": lambda m: m.roll(m.range(5), -7, 0),
}


@pytest.mark.peers
@pytest.mark.parametrize("name", list(PEER_CASES))
def test_values_match_tensorflow(name):
    real = pytest.importorskip("tensorflow")
    ours = tf.nest.flatten(PEER_CASES[name](tf))
    theirs = real.nest.flatten(PEER_CASES[name](real))
    assert len(ours) == len(theirs)
    for a, b in zip(ours, theirs):
        assert a.dtype.name == b.dtype.name, name
        np.testing.assert_array_equal(a.numpy(), b.numpy(), err_msg=name)


GRAD_CASES = {
    "sort": lambda m, x: m.sort(x) * np.arange(6.),
    "sort_desc": lambda m, x: m.sort(x, direction="DESCENDING") * np.arange(6.),
    "top_k": lambda m, x: m.math.top_k(x, 4).values * np.arange(1., 5.),
    "roll": lambda m, x: m.roll(x, 4, 0) * np.arange(6.),
}


@pytest.mark.peers
@pytest.mark.parametrize("name", list(GRAD_CASES))
def test_gradients_at_ties_match_tensorflow(name):
    real = pytest.importorskip("tensorflow")
    x = np.array([2., 1., 2., 0., 1., 2.])
    grads = []
    for m in (tf, real):
        t = m.constant(x)
        with m.GradientTape() as tape:
            tape.watch(t)
            y = m.reduce_sum(GRAD_CASES[name](m, t))
        grads.append(np.asarray(tape.gradient(y, t)))
    np.testing.assert_array_equal(grads[0], grads[1] + 0.)  # TF's -0. where ours is 0.


@pytest.mark.peers
def test_searchsorted_random_lines_match_tensorflow():
    real = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(3)
    s = np.sort(rng.integers(0, 6, (3, 8)).astype(np.float64), axis=-1)
    v = rng.integers(-1, 7, (3, 5)).astype(np.float64)
    for side in ("left", "right"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            want = real.searchsorted(s, v, side=side).numpy()
        np.testing.assert_array_equal(tf.searchsorted(s, v, side=side).numpy(), want)
