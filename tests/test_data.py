"""tf.data.Dataset (tapeflow/data.py): sources, transformations, TensorFlow's shuffle
buffer and seeds, cardinality and element_spec, clear errors, and loops over datasets in
and around tf.function."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf

D = tf.data.Dataset


def values(ds):
    return [tf.nest.map_structure(lambda t: t.numpy().tolist(), e) for e in ds]


def test_from_tensor_slices_of_arrays_tuples_and_dicts():
    x = np.arange(12.0).reshape(4, 3)
    assert values(D.from_tensor_slices(x)) == x.tolist()
    pairs = values(D.from_tensor_slices((x, np.arange(4))))
    assert pairs == [(r, i) for i, r in enumerate(x.tolist())]
    named = values(D.from_tensor_slices({"a": x, "b": [1.0, 2.0, 3.0, 4.0]}))
    assert named[2] == {"a": [6.0, 7.0, 8.0], "b": 3.0}
    ds = D.from_tensor_slices({"a": x, "b": [1.0, 2.0, 3.0, 4.0]})
    assert ds.element_spec == {"a": tf.TensorSpec([3], tf.float64), "b": tf.TensorSpec([], tf.float32)} \
        or (ds.element_spec["a"].shape == (3,) and ds.element_spec["b"].dtype == tf.float32)
    with pytest.raises(ValueError, match="first dimensions .*same size"):
        D.from_tensor_slices((np.zeros(3), np.zeros(4)))
    with pytest.raises(ValueError, match="scalar"):
        D.from_tensor_slices(np.float32(1.0))


def test_sources_copy_and_elements_are_not_aliased():
    x = np.arange(4.0).reshape(2, 2)
    ds = D.from_tensor_slices(x)
    x[:] = -1.0  # written after: the dataset kept what it was given
    assert values(ds) == [[0.0, 1.0], [2.0, 3.0]]
    first = next(iter(ds))
    with pytest.raises(ValueError):
        first._value[...] = 7.0  # a read-only view of the dataset's own copy
    out = next(ds.as_numpy_iterator())
    out[...] = 9.0  # the caller's copy
    assert values(ds)[0] == [0.0, 1.0]


def test_range_from_tensors_zip_enumerate_concatenate():
    assert values(D.range(2, 11, 3)) == [2, 5, 8]
    assert D.range(5).element_spec == tf.TensorSpec([], tf.int64) or \
        D.range(5).element_spec.dtype == tf.int64
    assert values(D.from_tensors([1, 2])) == [[1, 2]]
    z = D.zip((D.range(3), D.range(10, 20)))
    assert values(z) == [(0, 10), (1, 11), (2, 12)] and len(z) == 3
    assert values(D.zip({"i": D.range(2), "j": D.range(5, 7)})) == [{"i": 0, "j": 5},
                                                                    {"i": 1, "j": 6}]
    assert values(D.range(3).enumerate(start=5)) == [(5, 0), (6, 1), (7, 2)]
    assert values(D.range(2).concatenate(D.range(7, 9))) == [0, 1, 7, 8]


def test_batch_unbatch_padded_batch():
    ds = D.range(7).batch(3)
    assert values(ds) == [[0, 1, 2], [3, 4, 5], [6]] and len(ds) == 3
    assert ds.element_spec.shape.as_list() == [None]
    dropped = D.range(7).batch(3, drop_remainder=True)
    assert values(dropped) == [[0, 1, 2], [3, 4, 5]] and len(dropped) == 2
    assert dropped.element_spec.shape.as_list() == [3]
    assert values(D.range(7).batch(3).unbatch()) == list(range(7))
    ragged = D.from_generator(lambda: ([1] * n for n in (1, 3, 2)),
                              output_signature=tf.TensorSpec([None], tf.int32))
    with pytest.raises(ValueError, match=r"cannot batch elements of different shapes .*\(1,\) "
                                         r"and \(2,\).*padded_batch"):
        list(ragged.batch(3))
    assert values(ragged.padded_batch(2)) == [[[1, 0, 0], [1, 1, 1]], [[1, 1]]]
    assert values(ragged.padded_batch(3, padded_shapes=[4], padding_values=-1)) == \
        [[[1, -1, -1, -1], [1, 1, 1, -1], [1, 1, -1, -1]]]
    with pytest.raises(ValueError, match="does not fit padded_shapes"):
        list(ragged.padded_batch(3, padded_shapes=[2]))
    with pytest.raises(ValueError, match="batch_size"):
        D.range(3).batch(0)


def test_map_filter_run_traced_functions():
    calls = []

    def double(x):
        calls.append(1)  # Python runs when the function traces, as TensorFlow's
        return x * 2

    ds = D.range(6).map(double).filter(lambda x: x % 4 == 0)
    assert values(ds) == [0, 4, 8]
    assert values(ds) == [0, 4, 8]
    assert len(calls) == 1
    pairs = D.from_tensor_slices((np.arange(3.0), np.ones(3))).map(lambda a, b: a + b)
    assert values(pairs) == [1.0, 2.0, 3.0]  # a tuple's components are the arguments
    d = D.from_tensor_slices({"a": np.arange(2.0)}).map(lambda e: e["a"] * 10.0)
    assert values(d) == [0.0, 10.0]  # a dict is one argument
    with pytest.raises(TypeError, match="scalar bool"):
        list(D.range(3).filter(lambda x: x * 2))
    assert D.range(3).map(lambda x: tf.cast(x, tf.float32)).element_spec.dtype == tf.float32


def test_repeat_take_skip_cache_reduce_and_cardinality():
    assert values(D.range(3).repeat(2)) == [0, 1, 2, 0, 1, 2]
    forever = D.range(3).repeat()
    assert forever.cardinality().numpy() == tf.data.INFINITE_CARDINALITY
    with pytest.raises(TypeError, match="infinite"):
        len(forever)
    assert values(forever.take(7)) == [0, 1, 2, 0, 1, 2, 0]
    assert len(forever.take(7)) == 7
    assert values(D.range(5).skip(3)) == [3, 4] and len(D.range(5).skip(9)) == 0
    assert D.range(5).filter(lambda x: x > 1).cardinality().numpy() == \
        tf.data.UNKNOWN_CARDINALITY
    assert tf.data.experimental.cardinality(D.range(4)).numpy() == 4
    seen = []

    def gen():
        seen.append(1)
        yield from range(3)

    cached = D.from_generator(gen, output_signature=tf.TensorSpec([], tf.int64)).cache()
    assert values(cached) == values(cached) == [0, 1, 2]
    assert len(seen) == 1  # the second pass read the cache
    assert D.range(5).reduce(np.int64(0), lambda s, x: s + x).numpy() == 10
    assert values(D.range(4).prefetch(tf.data.AUTOTUNE)) == [0, 1, 2, 3]
    with pytest.raises(NotImplementedError, match="in memory"):
        D.range(3).cache("/tmp/x")


def test_from_generator_checks_what_it_yields():
    def gen(n):
        for i in range(int(n)):
            yield i, np.ones(i + 1)

    ds = D.from_generator(gen, args=(3,), output_signature=(
        tf.TensorSpec([], tf.int32), tf.TensorSpec([None], tf.float32)))
    got = values(ds)
    assert got == [(0, [1.0]), (1, [1.0, 1.0]), (2, [1.0, 1.0, 1.0])]
    assert next(iter(ds))[1].dtype == tf.float32
    bad = D.from_generator(lambda: iter([np.ones(3)]),
                           output_signature=tf.TensorSpec([2], tf.float32))
    with pytest.raises(ValueError, match=r"shape \(3,\); the output_signature says"):
        list(bad)
    with pytest.raises(TypeError, match="output_signature"):
        D.from_generator(lambda: iter([1]))
    old = D.from_generator(lambda: iter([[1, 2]]), output_types=tf.int64, output_shapes=[2])
    assert values(old) == [[1, 2]]


def test_shuffle_keeps_tensorflows_buffer_semantics():
    # buffer 1: the order is the input's; a buffer of all: a permutation
    assert values(D.range(10).shuffle(1)) == list(range(10))
    out = values(D.range(50).shuffle(50))
    assert sorted(out) == list(range(50)) and out != list(range(50))
    # a buffer of b: the element produced at step k is among the first k + b of the input
    b = 4
    for seed in range(20):
        order = values(D.range(40).shuffle(b, seed=seed))
        assert sorted(order) == list(range(40))
        assert all(v < k + b for k, v in enumerate(order))


def test_shuffles_repeat_under_set_seed_and_reshuffle_each_epoch():
    def epochs(**kwargs):
        ds = D.range(20).shuffle(20, **kwargs)
        return values(ds), values(ds)

    tf.random.set_seed(3)
    a = epochs()
    tf.random.set_seed(3)
    b = epochs()
    assert a == b  # repeatable
    assert a[0] != a[1]  # each epoch its own order
    tf.random.set_seed(3)
    same = epochs(reshuffle_each_iteration=False)
    assert same[0] == same[1]
    assert epochs(seed=5) == epochs(seed=5)
    repeated = values(D.range(5).shuffle(5, seed=1).repeat(2))
    assert sorted(repeated[:5]) == sorted(repeated[5:]) == list(range(5))


def test_a_training_loop_over_a_dataset_in_and_around_tf_function():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 3)).astype(np.float32)
    y = (x @ np.array([[1.0], [-2.0], [0.5]], np.float32))

    def run(loop):
        # a new dataset per run: one dataset's epochs each draw their own order
        ds = D.from_tensor_slices((x, y)).shuffle(32, seed=1).batch(8)
        w = tf.Variable(np.zeros((3, 1), np.float32))
        opt = tf.keras.optimizers.SGD(0.1)

        @tf.function
        def step(xb, yb):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean((xb @ w - yb) ** 2)
            opt.apply_gradients([(tape.gradient(loss, w), w)])
            return loss

        return loop(ds, step), w.numpy()

    def outside(ds, step):  # the guide's loop: the step traced once, replayed per batch
        return [float(step(xb, yb)) for _ in range(3) for xb, yb in ds]

    tf.random.set_seed(0)
    want, w_want = run(outside)

    def inside(ds, step):
        @tf.function
        def epoch(dataset):
            losses = []
            for xb, yb in dataset:
                losses.append(step(xb, yb))
            return losses

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            out = [float(v) for _ in range(3) for v in epoch(ds)]
        assert any("runs its Python eagerly" in str(c.message) for c in caught)
        return out

    tf.random.set_seed(0)
    got, w_got = run(inside)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(w_got, w_want)


# ------------------------------------------------------------------ against TensorFlow
def _pipelines(tf_):
    x = np.arange(24.0, dtype=np.float32).reshape(8, 3)
    labels = np.arange(8) % 3
    Ds = tf_.data.Dataset
    ragged = Ds.from_generator(lambda: (np.ones(n, np.int32) * n for n in (1, 3, 2, 4)),
                               output_signature=tf_.TensorSpec([None], tf_.int32))
    return {
        "slices_batch": Ds.from_tensor_slices((x, labels)).batch(3),
        "dict_map": Ds.from_tensor_slices({"x": x, "y": labels}).map(
            lambda e: (e["x"] * 2.0, e["y"])).batch(4, drop_remainder=True),
        "filter_repeat_take": Ds.range(10).filter(lambda i: i % 3 != 0).repeat().take(9),
        "skip_enumerate": Ds.range(6).skip(2).enumerate(start=3),
        "zip_concat": Ds.zip((Ds.range(3), Ds.range(5, 9))).concatenate(
            Ds.zip((Ds.range(2), Ds.range(1)))),
        "padded": ragged.padded_batch(3, padding_values=-1),
        "unbatch": Ds.from_tensor_slices(x).batch(5).unbatch(),
        "buffer_one": Ds.range(7).shuffle(1).batch(2),
    }


@pytest.mark.peers
def test_pipelines_match_tensorflows():
    real = pytest.importorskip("tensorflow")
    ours, theirs = _pipelines(tf), _pipelines(real)
    for name in ours:
        got = [tf.nest.map_structure(np.asarray, e) for e in ours[name].as_numpy_iterator()]
        want = list(theirs[name].as_numpy_iterator())
        assert len(got) == len(want), name
        for g, w in zip(got, want):
            for a, b in zip(tf.nest.flatten(g), real.nest.flatten(w)):
                assert a.dtype == b.dtype, name
                np.testing.assert_array_equal(a, b, err_msg=name)
        assert int(ours[name].cardinality()) == int(theirs[name].cardinality()), name
        for s, t in zip(tf.nest.flatten(ours[name].element_spec),
                        real.nest.flatten(theirs[name].element_spec)):
            assert s.shape.as_list() == t.shape.as_list() and s.dtype.name == t.dtype.name, name
