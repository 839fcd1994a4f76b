"""tf.random: TensorFlow's seed semantics, the draws as primitives (replayed anew by
traced functions, batched by vmap), reparameterization gradients and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.catalog import NO_DERIVATIVE, STATEFUL
from tapeflow.core import registry
from tapeflow.errors import InvalidArgumentError

DRAWS = ("random_standard_normal", "random_uniform", "random_uniform_int", "random_permutation")


@pytest.fixture(autouse=True)
def _restore_seed():
    yield
    tf.random.set_seed(None)


def draws(op_seed=None):
    """Two normal, two uniform and one integer draw, as NumPy arrays."""
    normal = [tf.random.normal([3], seed=op_seed).numpy() for _ in range(2)]
    uniform = [tf.random.uniform([3], seed=op_seed).numpy() for _ in range(2)]
    return normal + uniform + [tf.random.uniform([3], 0, 100, tf.int64, seed=op_seed).numpy()]


@pytest.mark.parametrize("op_seed", [None, 7])
def test_set_seed_restarts_the_same_sequence(op_seed):
    tf.random.set_seed(1234)
    first = draws(op_seed)
    tf.random.set_seed(1234)
    again = draws(op_seed)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("op_seed", [None, 7])
def test_each_call_draws_new_numbers(op_seed):
    tf.random.set_seed(5)
    a, b, c, d, _ = draws(op_seed)
    assert not np.array_equal(a, b) and not np.array_equal(c, d)


def test_global_and_op_seeds_pick_the_sequence():
    tf.random.set_seed(1)
    a = tf.random.normal([4], seed=1).numpy()
    tf.random.set_seed(2)
    b = tf.random.normal([4], seed=1).numpy()
    tf.random.set_seed(1)
    c = tf.random.normal([4], seed=2).numpy()
    assert not np.array_equal(a, b) and not np.array_equal(a, c)


def test_an_op_seeded_sequence_ignores_other_draws():
    tf.random.set_seed(3)
    alone = [tf.random.uniform([2], seed=9).numpy() for _ in range(2)]
    tf.random.set_seed(3)
    mixed = []
    for _ in range(2):
        tf.random.normal([5])  # global sequence
        tf.random.normal([5], seed=10)  # another op seed
        mixed.append(tf.random.uniform([2], seed=9).numpy())
    np.testing.assert_array_equal(alone, mixed)


def test_distributions_dtypes_and_ranges():
    tf.random.set_seed(0)
    n = tf.random.normal([200_000], mean=2., stddev=3., dtype=tf.float64).numpy()
    assert n.dtype == np.float64
    assert abs(n.mean() - 2) < 0.03 and abs(n.std() - 3) < 0.03
    u = tf.random.uniform([200_000], -2., 6.).numpy()
    assert u.dtype == np.float32 and u.min() >= -2 and u.max() < 6 and abs(u.mean() - 2) < 0.03
    i = tf.random.uniform([10_000], 3, 7, dtype=tf.int32).numpy()
    assert i.dtype == np.int32 and set(np.unique(i)) == {3, 4, 5, 6}
    h = tf.random.uniform([100_000], dtype=tf.float16).numpy()
    assert h.dtype == np.float16 and h.max() < 1
    assert tf.random.normal([2, 0, 3]).shape == (2, 0, 3)
    assert tf.random.normal(tf.constant([2, 3])).shape == (2, 3)


def test_gradients_flow_to_tensor_parameters():
    mean, std = tf.Variable([1., 2.]), tf.Variable(3.)
    lo, hi = tf.constant(1.), tf.constant(4.)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([lo, hi])
        n = tf.random.normal([2], mean=mean, stddev=std, seed=3)
        u = tf.random.uniform([5], lo, hi, seed=4)
    eps = (n - mean) / std
    np.testing.assert_allclose(tape.gradient(n, mean).numpy(), [1., 1.])
    np.testing.assert_allclose(tape.gradient(n, std).numpy(), float(tf.reduce_sum(eps)), rtol=1e-6)
    unit = (u - lo) / (hi - lo)
    np.testing.assert_allclose(tape.gradient(u, hi).numpy(), float(tf.reduce_sum(unit)), rtol=1e-5)
    np.testing.assert_allclose(tape.gradient(u, lo).numpy(), 5 - float(tf.reduce_sum(unit)),
                               rtol=1e-5)


def test_draws_are_stateful_primitives_without_derivatives():
    prims = registry()
    for name in DRAWS:
        p = prims[name]
        assert STATEFUL in p.effects
        assert NO_DERIVATIVE in p.effects and p.rules.get("batch") is not None
    x = tf.random.normal([3])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.random.normal([3]) * 1.
    assert tape.gradient(y, x) is None


def test_a_traced_function_draws_anew_at_each_replay_and_follows_set_seed():
    @tf.function
    def f(x):
        return x + tf.random.normal([3]) + tf.random.uniform([3], seed=2)

    x = tf.zeros([3])
    tf.random.set_seed(11)
    eager = [(tf.random.normal([3]) + tf.random.uniform([3], seed=2)).numpy() for _ in range(3)]
    tf.random.set_seed(11)
    traced = [f(x).numpy() for _ in range(3)]  # the first call traces, the others replay
    np.testing.assert_allclose(traced, eager, rtol=1e-6)
    assert not np.array_equal(traced[1], traced[2])
    tf.random.set_seed(11)  # restarts the sequences the graph already holds
    np.testing.assert_allclose(f(x).numpy(), eager[0], rtol=1e-6)
    ops = [op.type for op in f.get_concrete_function(x).graph.get_operations()]
    assert "random_standard_normal" in ops and "random_uniform" in ops


def test_vmap_draws_the_batch_at_once():
    tf.random.set_seed(21)
    got = tf.vmap(lambda x: x + tf.random.normal([2]))(tf.zeros([4, 2])).numpy()
    tf.random.set_seed(21)
    want = tf.random.normal([4, 2]).numpy()
    np.testing.assert_array_equal(got, want)
    assert len({tuple(row) for row in got}) == 4  # each example its own numbers


def test_nested_vmap_and_integer_draws():
    tf.random.set_seed(8)
    got = tf.vmap(tf.vmap(lambda x: x + tf.random.uniform([], 0, 1000, tf.int32)))(
        tf.zeros([2, 3], tf.int32)).numpy()
    assert got.shape == (2, 3) and len(set(got.ravel().tolist())) > 1
    tf.random.set_seed(8)
    np.testing.assert_array_equal(got, tf.random.uniform([2, 3], 0, 1000, tf.int32).numpy())


def test_keras_initializers_still_draw():
    w = tf.keras.initializers.GlorotUniform(seed=0)((3, 2))
    assert w.shape == (3, 2) and bool((abs(w.numpy()) <= (6 / 5) ** 0.5).all())


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.random.normal([2], dtype=tf.int32), InvalidArgumentError, "floating"),
    (lambda: tf.random.uniform([2], dtype=tf.int32), InvalidArgumentError, "maxval"),
    (lambda: tf.random.uniform([2], 5, 5, dtype=tf.int32), InvalidArgumentError, "minval < maxval"),
    (lambda: tf.random.uniform([2], 0, [1, 2], dtype=tf.int32), InvalidArgumentError, "scalar"),
    (lambda: tf.random.normal([2, -1]), InvalidArgumentError, "non-negative"),
    (lambda: tf.random.normal([2.5]), TypeError, "integers"),
    (lambda: tf.random.normal([2], mean=tf.constant(0., tf.float64)), InvalidArgumentError,
     "float64"),
    (lambda: tf.random.set_seed("abc"), TypeError, "integer"),
])
def test_argument_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ shuffle
def test_shuffle_permutes_axis_0_anew_at_each_call():
    x = tf.reshape(tf.range(20), [10, 2])
    a, b = tf.random.shuffle(x).numpy(), tf.random.shuffle(x).numpy()
    for out in (a, b):
        assert sorted(out[:, 0].tolist()) == list(range(0, 20, 2))
        np.testing.assert_array_equal(out[:, 1], out[:, 0] + 1)  # rows move whole
    assert not (a == b).all()
    assert tf.random.shuffle(tf.constant([1.5, 2.5])).dtype == tf.float32


def test_shuffle_seeds_reproduce_as_the_other_draws():
    def orders(op_seed):
        return [tf.random.shuffle(tf.range(8), seed=op_seed).numpy() for _ in range(3)]

    for op_seed in (None, 5):
        tf.random.set_seed(3)
        first = orders(op_seed)
        tf.random.set_seed(3)
        np.testing.assert_array_equal(orders(op_seed), first)
        assert not (first[0] == first[1]).all()


def test_shuffle_replays_anew_in_traced_functions_and_batches_per_example():
    f = tf.function(lambda v: tf.random.shuffle(v))
    x = tf.range(12)
    outs = [f(x).numpy() for _ in range(3)]
    assert all(sorted(o.tolist()) == list(range(12)) for o in outs)
    assert not (outs[1] == outs[2]).all()
    assert f.experimental_get_tracing_count() == 1
    got = tf.vmap(tf.random.shuffle)(tf.reshape(tf.range(40), [4, 10])).numpy()
    assert all(sorted(row.tolist()) == list(range(10 * b, 10 * b + 10)) for b, row in
               enumerate(got))
    assert len({tuple(row % 10) for row in got}) > 1


def test_shuffle_gradient_flows_through_the_permutation():
    x = tf.constant([1., 2., 3., 4.])
    w = tf.constant([1., 10., 100., 1000.])
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.random.shuffle(x)
        y = tf.reduce_sum(out * w)
    g = tape.gradient(y, x).numpy()
    order = (out.numpy() - 1).astype(int)  # out[j] = x[order[j]]
    np.testing.assert_array_equal(g[order], w)
    with pytest.raises(InvalidArgumentError, match="`value` must have rank >= 1"):
        tf.random.shuffle(tf.constant(1.))
