"""Random draws under function(jit_compile=True) (graph/xla.py, NOTE(host-draws)): shapes,
dtypes and ranges, new numbers at every call, the seeds (the same set_seed, the same
numbers), and the very numbers of the NumPy replay whichever path ran each call (the trace,
a tape around the call, a failed guard or check). Skipped when JAX is not installed (the
`xla` extra)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

pytest.importorskip("jax")

import tapeflow as tf  # noqa: E402
from tapeflow.graph.xla import XlaReplay, missing_lowerings  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_seed():
    yield
    tf.random.set_seed(None)


def compiled(fn, *args):
    """fn compiled with XLA, checked to run through XLA (no NumPy fallback, no warning)."""
    f = tf.function(fn, jit_compile=True)
    cf = f.get_concrete_function(*args)
    assert missing_lowerings(cf.graph) == []
    assert isinstance(cf.executable.inner, XlaReplay)
    return f


def call(f, *args):
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy fallback would warn
        out = f(*args)
    return [np.asarray(o) for o in out] if isinstance(out, (list, tuple)) else np.asarray(out)


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_normal_shape_dtype_and_moments(dtype):
    f = compiled(lambda: tf.random.normal([200, 50], dtype=dtype))
    x = call(f)
    assert x.shape == (200, 50) and x.dtype == dtype.as_numpy_dtype
    x = x.astype(np.float64)
    assert np.isfinite(x).all()
    assert abs(x.mean()) < 0.05 and abs(x.std() - 1) < 0.05


def test_normal_mean_and_stddev():
    f = compiled(lambda: tf.random.normal([20000], mean=3.0, stddev=0.5, dtype=tf.float64))
    x = call(f)
    assert abs(x.mean() - 3) < 0.02 and abs(x.std() - 0.5) < 0.02


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_uniform_in_zero_one(dtype):
    f = compiled(lambda: tf.random.uniform([100000], dtype=dtype))
    x = call(f)
    assert x.shape == (100000,) and x.dtype == dtype.as_numpy_dtype
    assert (x >= 0).all() and (x < 1).all()  # float16 too: rounding never reaches 1
    assert abs(x.astype(np.float64).mean() - 0.5) < 0.01


def test_uniform_bounds():
    f = compiled(lambda: tf.random.uniform([5000], -2.0, 3.0, dtype=tf.float64))
    x = call(f)
    assert (x >= -2).all() and (x < 3).all() and x.min() < -1.9 and x.max() > 2.9


@pytest.mark.parametrize("dtype, lo, hi", [
    (tf.int32, -3, 4), (tf.int64, 10, 12), (tf.int32, 5, 6), (tf.uint8, 250, 256),
    (tf.int32, 0, 2 ** 31), (tf.int32, -2 ** 31, 2 ** 31), (tf.int64, -2 ** 63, 2 ** 63)])
def test_uniform_int_range(dtype, lo, hi):
    f = compiled(lambda: tf.random.uniform([4000], lo, hi, dtype=dtype))
    x = call(f)
    assert x.shape == (4000,) and x.dtype == dtype.as_numpy_dtype
    assert (x.astype(object) >= lo).all() and (x.astype(object) < hi).all()
    if hi - lo <= 16:  # every value appears
        assert sorted(set(x.tolist())) == list(range(lo, hi))
    else:  # spread over the range
        span = float(hi) - float(lo)
        assert x.astype(np.float64).max() - x.astype(np.float64).min() > 0.9 * span


def test_shuffle_is_a_permutation():
    f = compiled(lambda v: tf.random.shuffle(v), tf.range(20))
    orders = [call(f, tf.range(20)) for _ in range(3)]
    for o in orders:
        assert o.dtype == np.int32 and sorted(o.tolist()) == list(range(20))
    assert any(not np.array_equal(orders[0], o) for o in orders[1:])


def test_shuffle_rows_and_gradient():
    x = tf.constant(np.arange(12.0).reshape(6, 2))

    def fn(v):
        with tf.GradientTape() as tape:
            tape.watch(v)
            y = tf.random.shuffle(v)
            loss = tf.reduce_sum(y * tf.constant(np.arange(12.0).reshape(6, 2)))
        return y, tape.gradient(loss, v)

    f = compiled(fn, x)
    y, g = call(f, x)
    assert sorted(map(tuple, y.tolist())) == sorted(map(tuple, x.numpy().tolist()))
    # the gradient is the weights taken back through the permutation
    perm = (y[:, 0] / 2).astype(int)
    want = np.empty((6, 2))
    want[perm] = np.arange(12.0).reshape(6, 2)
    np.testing.assert_array_equal(g, want)


def test_vmap_draws_per_example():
    f = compiled(lambda x: tf.vmap(lambda r: r + tf.random.normal([3], dtype=tf.float64))(x),
                 tf.zeros([4, 3], tf.float64))
    x = call(f, tf.zeros([4, 3], tf.float64))
    assert x.shape == (4, 3) and len({tuple(r) for r in x.tolist()}) == 4
    g = compiled(lambda x: tf.vmap(tf.random.shuffle)(x), tf.reshape(tf.range(40), [4, 10]))
    orders = call(g, tf.reshape(tf.range(40), [4, 10]))
    for k, row in enumerate(orders):
        assert sorted(row.tolist()) == list(range(10 * k, 10 * k + 10))
    assert len({tuple((r - r.min()).tolist()) for r in orders}) > 1  # each its own order


def _all_draws():
    return (tf.random.normal([4], dtype=tf.float64), tf.random.uniform([4]),
            tf.random.uniform([4], 0, 1000, tf.int64), tf.random.shuffle(tf.range(10)),
            tf.random.normal([3], seed=5))


def test_each_call_draws_new_numbers():
    f = compiled(_all_draws)
    first, second = call(f), call(f)
    for a, b in zip(first, second):
        assert not np.array_equal(a, b)


@pytest.mark.parametrize("seed", [0, 1234])
def test_set_seed_repeats_the_calls(seed):
    f = compiled(_all_draws)
    runs = []
    for _ in range(2):
        tf.random.set_seed(seed)
        runs.append([call(f), call(f)])
    for a, b in zip(runs[0][0] + runs[0][1], runs[1][0] + runs[1][1]):
        np.testing.assert_array_equal(a, b)
    tf.random.set_seed(seed + 1)
    other = call(f)
    assert not all(np.array_equal(a, b) for a, b in zip(runs[0][0], other))


def test_two_draws_of_one_call_differ():
    f = compiled(lambda: (tf.random.normal([5]), tf.random.normal([5])))
    a, b = call(f)
    assert not np.array_equal(a, b)


def _both(fn):
    """fn under the NumPy replay and compiled, each a new Function (traced at its first call)."""
    return tf.function(fn), tf.function(fn, jit_compile=True)


def _values(out):
    return [np.asarray(o) for o in (out if isinstance(out, (list, tuple)) else [out])]


def _run_seeded(f, calls, seed=7):
    tf.random.set_seed(seed)
    return [v for args in calls for v in _values(f(*args))]


def test_compiled_draws_are_the_numpy_replays_numbers():
    def fn(x):
        return (*_all_draws(), tf.vmap(lambda r: r + tf.random.uniform([3], dtype=tf.float64))(x))

    x = tf.zeros([4, 3], tf.float64)
    replay, xla = _both(fn)
    want, got = _run_seeded(replay, [(x,)] * 3), _run_seeded(xla, [(x,)] * 3)
    for a, b in zip(want, got, strict=True):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)


def test_a_seeded_run_repeats_when_the_first_run_traced():
    f = tf.function(lambda: tf.random.normal([3]), jit_compile=True)
    first = _run_seeded(f, [()] * 2)  # traces: the first call runs on NumPy
    second = _run_seeded(f, [()] * 2)  # compiled calls only
    for a, b in zip(first, second, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_tape_around_the_call_draws_the_same_numbers():
    f = tf.function(lambda x: x * tf.random.normal([3]), jit_compile=True)
    x = tf.ones([3])
    f(x)  # traced
    plain = _run_seeded(f, [(x,)] * 2)
    tf.random.set_seed(7)
    with tf.GradientTape() as tape:  # replays on NumPy, to record
        tape.watch(x)
        taped = [f(x).numpy(), f(x).numpy()]
    for a, b in zip(plain, taped, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_failed_guard_moves_the_sequence_as_the_numpy_replay():
    def fn(x):
        a = tf.random.normal([2], dtype=tf.float64)
        if bool(x > 0):  # a guard, after the first draw
            return a + tf.random.uniform([2], dtype=tf.float64)
        return a - 1.0

    calls = [(tf.constant(1.0),), (tf.constant(2.0),), (tf.constant(-1.0),), (tf.constant(-2.0),),
             (tf.constant(3.0),), (tf.constant(-3.0),)]
    replay, xla = _both(fn)
    want, got = _run_seeded(replay, calls), _run_seeded(xla, calls)
    assert xla.experimental_get_tracing_count() == replay.experimental_get_tracing_count() > 1
    for a, b in zip(want, got, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_failed_check_moves_the_sequence_as_the_numpy_replay():
    def fn(n, d):
        a = tf.random.normal([2], dtype=tf.float64)
        b = tf.random.normal([2], dtype=tf.float64)
        return a + tf.cast(n // d, tf.float64) + b

    def run(f):
        tf.random.set_seed(3)
        out = [f(tf.constant(6), tf.constant(3)).numpy()]
        with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
            f(tf.constant(6), tf.constant(0))
        out.append(f(tf.constant(6), tf.constant(2)).numpy())
        return out

    replay, xla = _both(fn)
    for a, b in zip(run(replay), run(xla), strict=True):
        np.testing.assert_array_equal(a, b)
