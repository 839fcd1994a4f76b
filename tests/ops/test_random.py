"""tf.random: TensorFlow's seed semantics, the draws as primitives (replayed anew by
traced functions, batched by vmap), reparameterization gradients and argument errors."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.catalog import NO_DERIVATIVE, STATEFUL
from tapeflow.core import registry
from tapeflow.errors import InvalidArgumentError

DRAWS = ("random_standard_normal", "random_uniform", "random_uniform_int", "random_permutation",
         "random_truncated_normal")


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


# ------------------------------------------------------------------ truncated_normal
@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16, tf.float32, tf.float64])
def test_truncated_normal_moments_and_bounds(dtype):
    tf.random.set_seed(2)
    x = tf.random.truncated_normal([100_000], dtype=dtype)
    assert x.dtype == dtype
    v = np.asarray(x.numpy(), np.float64)
    assert v.min() >= -2 and v.max() <= 2 and v.min() < -1.99 and v.max() > 1.99
    # N(0, 1) truncated to [-2, 2]: mean 0, standard deviation 0.87962
    assert abs(v.mean()) < 0.01 and abs(v.std() - 0.87962) < 0.01
    y = tf.random.truncated_normal([50_000], mean=3., stddev=0.5, seed=1).numpy()
    assert y.min() >= 2. and y.max() <= 4. and abs(y.std() - 0.5 * 0.87962) < 0.01


def test_truncated_normal_seeds_traces_vmap_and_gradients():
    def two():
        return [tf.random.truncated_normal([3], seed=5).numpy() for _ in range(2)]
    tf.random.set_seed(4)
    first = two()
    tf.random.set_seed(4)
    np.testing.assert_array_equal(two(), first)
    assert not np.array_equal(*first)
    f = tf.function(lambda: tf.random.truncated_normal([4]))
    assert not np.array_equal(f().numpy(), f().numpy())
    assert "random_truncated_normal" in [op.type for op in f.get_concrete_function().graph.get_operations()]
    tf.random.set_seed(6)
    got = tf.vmap(lambda x: x + tf.random.truncated_normal([2]))(tf.zeros([5, 2])).numpy()
    tf.random.set_seed(6)
    np.testing.assert_array_equal(got, tf.random.truncated_normal([5, 2]).numpy())
    mean, std = tf.Variable([1., -1.]), tf.Variable(2.)
    with tf.GradientTape() as tape:
        y = tf.random.truncated_normal([2], mean, std, seed=3)
    g_mean, g_std = tape.gradient(y, [mean, std])
    np.testing.assert_array_equal(g_mean.numpy(), [1., 1.])
    np.testing.assert_allclose(float(g_std), float(tf.reduce_sum((y - mean) / std)), rtol=1e-6)
    with pytest.raises(InvalidArgumentError, match="floating"):
        tf.random.truncated_normal([2], dtype=tf.int32)


# ------------------------------------------------------------------ categorical
def test_categorical_frequencies_follow_the_softmax():
    tf.random.set_seed(1)
    probs = np.array([[0.1, 0.2, 0.7, 0.0], [0.25, 0.25, 0.25, 0.25]])
    with np.errstate(divide="ignore"):
        logits = np.log(probs)
    draws = tf.random.categorical(logits, 40_000)
    assert draws.dtype == tf.int64 and draws.shape == (2, 40_000)
    for row, p in zip(draws.numpy(), probs):
        freq = np.bincount(row, minlength=4) / row.size
        np.testing.assert_allclose(freq, p, atol=0.01)
        assert freq[p == 0].sum() == 0  # a -inf logit is never drawn
    small = tf.random.categorical(tf.constant([[0., 1.]], tf.float16), 5, dtype=tf.int32)
    assert small.dtype == tf.int32 and small.shape == (1, 5)
    assert tf.random.categorical(np.zeros([2, 3]), 0).shape == (2, 0)
    assert tf.random.categorical(np.zeros([0, 3]), 4).shape == (0, 4)
    np.testing.assert_array_equal(tf.random.categorical([[-np.inf, -np.inf]], 3).numpy(),
                                  [[2, 2, 2]])  # TF: the number of classes


def test_categorical_seeds_traces_and_vmap():
    logits = tf.constant([[0., 1., 2.], [2., 1., 0.]])
    tf.random.set_seed(8)
    a = [tf.random.categorical(logits, 50, seed=2).numpy() for _ in range(2)]
    tf.random.set_seed(8)
    b = [tf.random.categorical(logits, 50, seed=2).numpy() for _ in range(2)]
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(*a)
    f = tf.function(lambda z: tf.random.categorical(z, 50))
    assert not np.array_equal(f(logits).numpy(), f(logits).numpy())
    batch = tf.vmap(lambda z: tf.random.categorical(z, 400))(tf.stack([logits, -logits]))
    assert batch.shape == (2, 2, 400)
    assert batch.numpy()[0, 0].mean() > 1.3 and batch.numpy()[1, 0].mean() < 0.7
    with tf.GradientTape() as tape:
        tape.watch(logits)
        draws = tf.random.categorical(logits, 3)
    assert tape.gradient(draws, logits) is None


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.random.categorical([0., 1.], 5), InvalidArgumentError, "matrix"),
    (lambda: tf.random.categorical([[[0., 1.]]], 5), InvalidArgumentError, "matrix"),
    (lambda: tf.random.categorical(np.zeros([2, 0]), 5), InvalidArgumentError, "num_classes > 0"),
    (lambda: tf.random.categorical([[0, 1]], 5), InvalidArgumentError, "floating"),
    (lambda: tf.random.categorical([[0., 1.]], -1), InvalidArgumentError, "non-negative"),
    (lambda: tf.random.categorical([[0., 1.]], 5, dtype=tf.int16), ValueError, "int32, tf.int64"),
])
def test_categorical_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ stateless draws
STATELESS = [
    lambda seed: tf.random.stateless_normal([4, 3], seed),
    lambda seed: tf.random.stateless_truncated_normal([5], seed, mean=1., dtype=tf.float64),
    lambda seed: tf.random.stateless_uniform([6], seed, -1., 3.),
    lambda seed: tf.random.stateless_uniform([6], seed, 2, 9, tf.int64),
    lambda seed: tf.random.stateless_uniform([3], seed, None, None, tf.uint32),
    lambda seed: tf.random.stateless_categorical([[0., 1., 2.]], 7, seed),
]


@pytest.mark.parametrize("draw", STATELESS)
def test_stateless_draws_are_functions_of_their_seed(draw):
    a, b = draw([1, 2]).numpy(), draw(tf.constant([1, 2], tf.int64)).numpy()
    np.testing.assert_array_equal(a, b)
    assert not np.array_equal(a, draw([2, 1]).numpy())
    tf.random.set_seed(3)  # the global seed plays no part
    np.testing.assert_array_equal(draw([1, 2]).numpy(), a)
    f = tf.function(draw)
    np.testing.assert_array_equal(f(tf.constant([1, 2])).numpy(), a)
    np.testing.assert_array_equal(f(tf.constant([1, 2])).numpy(), a)
    seeds = tf.constant([[1, 2], [5, 6], [1, 2]])
    batched = tf.vmap(draw)(seeds).numpy()
    for s, got in zip(seeds.numpy(), batched):
        np.testing.assert_array_equal(got, draw(s).numpy())


def test_stateless_draws_compile():
    pytest.importorskip("jax")
    f = tf.function(lambda s: (tf.random.stateless_normal([3], s),
                               tf.random.stateless_categorical([[0., 0.]], 4, s)), jit_compile=True)
    for got, want in zip(f(tf.constant([4, 5])), (tf.random.stateless_normal([3], [4, 5]),
                                                  tf.random.stateless_categorical([[0., 0.]], 4,
                                                                                  [4, 5]))):
        np.testing.assert_array_equal(got.numpy(), want.numpy())


def test_stateless_distributions():
    n = tf.random.stateless_normal([100_000], [7, 7], mean=2., stddev=3., dtype=tf.float64)
    assert abs(n.numpy().mean() - 2) < 0.03 and abs(n.numpy().std() - 3) < 0.03
    t = tf.random.stateless_truncated_normal([100_000], [7, 8]).numpy()
    assert abs(t).max() <= 2 and abs(t.std() - 0.87962) < 0.01
    u = tf.random.stateless_uniform([100_000], [7, 9], 1., 5., tf.float16).numpy()
    assert u.dtype == np.float16 and u.min() >= 1 and u.max() <= 5  # float16 rounds up to 5
    i = tf.random.stateless_uniform([10_000], [7, 10], -2, 3, tf.int32).numpy()
    assert i.dtype == np.int32 and set(np.unique(i)) == {-2, -1, 0, 1, 2}
    full = tf.random.stateless_uniform([10_000], [7, 11], None, None, tf.int64).numpy()
    assert full.min() < -2 ** 62 and full.max() > 2 ** 62
    c = tf.random.stateless_categorical(np.log([[0.5, 0.3, 0.2]]), 30_000, [7, 12])
    assert c.dtype == tf.int64
    np.testing.assert_allclose(np.bincount(c.numpy()[0]) / 30_000, [0.5, 0.3, 0.2], atol=0.01)


def test_stateless_gradients_flow_to_the_parameters():
    mean, lo, hi = tf.Variable(1.), tf.Variable(-1.), tf.Variable(2.)
    with tf.GradientTape() as tape:
        y = tf.random.stateless_normal([4], [1, 1], mean) + tf.random.stateless_uniform(
            [4], [2, 2], lo, hi)
    g_mean, g_lo, g_hi = tape.gradient(y, [mean, lo, hi])
    assert float(g_mean) == 4.
    unit = tf.random.stateless_uniform([4], [2, 2]).numpy()
    np.testing.assert_allclose([float(g_lo), float(g_hi)], [4 - unit.sum(), unit.sum()],
                               rtol=1e-6)


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.random.stateless_normal([2], [1, 2, 3]), InvalidArgumentError, "shape \\[2\\]"),
    (lambda: tf.random.stateless_normal([2], 1), InvalidArgumentError, "shape \\[2\\]"),
    (lambda: tf.random.stateless_normal([2], [1., 2.]), InvalidArgumentError, "int32 or int64"),
    (lambda: tf.random.stateless_normal([2], [1, 2], dtype=tf.int32), InvalidArgumentError,
     "floating"),
    (lambda: tf.random.stateless_uniform([2], [1, 2], 0, None, tf.int32), ValueError,
     "both None or not None"),
    (lambda: tf.random.stateless_uniform([2], [1, 2], 5, 5, tf.int32), InvalidArgumentError,
     "minval < maxval"),
    (lambda: tf.random.stateless_uniform([2], [1, 2], 0, 5, tf.int8), ValueError, "int8"),
    (lambda: tf.random.stateless_categorical([0., 1.], 2, [1, 2]), InvalidArgumentError, "matrix"),
])
def test_stateless_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ Generator
def test_generator_sequences():
    g = tf.random.Generator.from_seed(5)
    a = [g.normal([3]).numpy(), g.uniform([2], 0, 10, tf.int32).numpy(),
         g.truncated_normal([3]).numpy()]
    tf.random.set_seed(99)  # the global seed plays no part
    h = tf.random.Generator.from_seed(5)
    b = [h.normal([3]).numpy(), h.uniform([2], 0, 10, tf.int32).numpy(),
         h.truncated_normal([3]).numpy()]
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert not np.array_equal(g.normal([3]).numpy(), a[0])  # each call draws on
    g.reset_from_seed(5)
    np.testing.assert_array_equal(g.normal([3]).numpy(), a[0])
    assert not np.array_equal(tf.random.Generator.from_seed(6).normal([3]).numpy(), a[0])
    first, second = g.split(2)
    assert not np.array_equal(first.normal([4]).numpy(), second.normal([4]).numpy())
    seeds = g.make_seeds(3)
    assert seeds.dtype == tf.int64 and seeds.shape == (2, 3)
    assert tf.random.stateless_normal([2], seeds[:, 0]).shape == (2,)
    assert tf.random.Generator.from_non_deterministic_state().uniform([2]).shape == (2,)
    copy = tf.random.Generator(copy_from=g)  # the same sequence from here on
    np.testing.assert_array_equal(copy.normal([3]).numpy(), g.normal([3]).numpy())
    with pytest.raises(tf.errors.UnimplementedError, match="from_seed"):
        tf.random.Generator(state=[1, 2, 3])


def test_generator_draws_anew_in_traced_functions_and_per_example():
    g = tf.random.Generator.from_seed(1)
    f = tf.function(lambda: g.uniform([3]))
    first, second = f().numpy(), f().numpy()
    assert not np.array_equal(first, second)
    g.reset_from_seed(1)  # restarts the sequence the traced graph reads
    np.testing.assert_array_equal(f().numpy(), first)
    rows = tf.vmap(lambda x: x + g.normal([2]))(tf.zeros([4, 2])).numpy()
    assert len({tuple(r) for r in rows}) == 4


def test_saved_draws(tmp_path):
    m = tf.Module()
    spec = [tf.TensorSpec([2, 3], tf.float32)]
    m.f = tf.function(lambda z: (tf.random.truncated_normal([3], seed=4),
                                 tf.random.categorical(z, 5, seed=4),
                                 tf.random.stateless_normal([2], [3, 4])), input_signature=spec)
    tf.saved_model.save(m, str(tmp_path / "draws"))
    loaded = tf.saved_model.load(str(tmp_path / "draws"))
    z = tf.zeros([2, 3])
    tf.random.set_seed(5)
    want = [t.numpy() for t in m.f(z)]
    tf.random.set_seed(5)
    for got, w in zip(loaded.f(z), want):
        np.testing.assert_array_equal(got.numpy(), w)
    g = tf.random.Generator.from_seed(1)
    m.g = tf.function(lambda: g.normal([2]), input_signature=[])
    with pytest.raises(ValueError, match="Generator's draws are not saved"):
        tf.saved_model.save(m, str(tmp_path / "generator"))


# ------------------------------------------------------------------ against TensorFlow
@pytest.mark.peers
def test_peers_distributions_agree_with_tensorflow():
    real = pytest.importorskip("tensorflow")
    real.random.set_seed(0)
    tf.random.set_seed(0)
    for draw, bounded in ((lambda m: m.random.truncated_normal([100_000], 1., 2.), True),
                          (lambda m: m.random.stateless_truncated_normal([100_000], [3, 4], 1.,
                                                                         2.), True),
                          (lambda m: m.random.stateless_normal([100_000], [3, 4], 1., 2.), False),
                          (lambda m: m.random.stateless_uniform([100_000], [3, 4], -1., 2.), True)):
        theirs, ours = draw(real).numpy(), draw(tf).numpy()
        assert theirs.dtype == ours.dtype
        if bounded:
            assert abs(theirs.min() - ours.min()) < 0.05 and abs(theirs.max() - ours.max()) < 0.05
        assert abs(theirs.mean() - ours.mean()) < 0.03 and abs(theirs.std() - ours.std()) < 0.03
    logits = np.log([[0.1, 0.2, 0.7], [0.5, 0.25, 0.25]])
    for draw in (lambda m: m.random.categorical(logits, 30_000),
                 lambda m: m.random.stateless_categorical(logits, 30_000, [1, 2])):
        theirs, ours = draw(real).numpy(), draw(tf).numpy()
        assert theirs.dtype == ours.dtype and theirs.shape == ours.shape
        for a, b in zip(theirs, ours):
            np.testing.assert_allclose(np.bincount(a, minlength=3) / a.size,
                                       np.bincount(b, minlength=3) / b.size, atol=0.015)
    gen_theirs, gen_ours = real.random.Generator.from_seed(1), tf.random.Generator.from_seed(1)
    for name in ("normal", "uniform", "truncated_normal"):
        a, b = getattr(gen_theirs, name)([3, 2]), getattr(gen_ours, name)([3, 2])
        assert a.dtype.name == b.dtype.name and tuple(a.shape) == b.shape
    assert gen_ours.make_seeds(4).shape == tuple(gen_theirs.make_seeds(4).shape)
