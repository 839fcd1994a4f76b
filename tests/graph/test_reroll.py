"""NOTE(reroll) in tapeflow/graph/reroll.py: Python loops in a traced graph rolled back into
scans. Each program is traced, rolled, and replayed both ways with NumPy: the rolled graph
must give the unrolled graph's values bit for bit (the scan replays the same NumPy calls
step by step), and must have rolled what the case says it rolls. With JAX, the compiled
function (which runs the rolled graph) is checked against eager."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import reroll as reroll_module
from tapeflow.graph.replay import Replay
from tapeflow.graph.reroll import reroll

HAS_JAX = importlib.util.find_spec("jax") is not None
rng = np.random.default_rng(0)


def _scans(g):
    return [n.params["length"] for n in g.nodes if getattr(n, "prim", None) is not None and
            n.prim.name == "scan"]


# ------------------------------------------------------------------ the programs
def rnn_gradient(w, u, xs):
    with tf.GradientTape() as tape:
        tape.watch([w, u])
        h = tf.zeros([xs.shape[1], w.shape[0]], xs.dtype)
        for t in range(xs.shape[0]):
            h = tf.tanh(tf.matmul(h, w) + tf.matmul(xs[t], u))
        loss = tf.reduce_sum(h * h)
    return tape.gradient(loss, [w, u])


def lstm_gradient(w, b, xs, ys):
    with tf.GradientTape() as tape:
        tape.watch([w, b])
        hidden = w.shape[1] // 4
        h = c = tf.zeros([xs.shape[1], hidden], xs.dtype)
        total = 0.0
        for x_t, y_t in zip(tf.unstack(xs), tf.unstack(ys)):
            z = tf.matmul(tf.concat([x_t, h], axis=1), w) + b
            i, f, g, o = tf.split(z, 4, axis=1)
            c = tf.sigmoid(f) * c + tf.sigmoid(i) * tf.tanh(g)
            h = tf.sigmoid(o) * tf.tanh(c)
            total = total + tf.reduce_sum(tf.square(h - y_t))
        loss = 0.5 * total / 100.0
    return tape.gradient(loss, [w, b])


def reversed_steps(x, xs):
    for t in reversed(range(xs.shape[0])):
        x = tf.sin(x) * xs[t] + x * 0.5
    return x


def strided_steps(x, xs):
    for t in range(1, xs.shape[0], 3):
        x = tf.sin(x) * xs[t] + x * 0.5
    return x


def stacked_results(x):
    outs = []
    for _ in range(30):
        x = tf.cos(x) * 0.9 + 0.1
        outs.append(x)
    return tf.stack(outs), x


def two_back(a, b):  # a, b = b, f(a): rolled as steps of two
    for _ in range(30):
        a, b = b, tf.sin(a) + b * 0.5
    return a, b


def own_constants(x):  # each step's Python numbers, -0.0 and 0.0 among them
    for t in range(30):
        x = tf.sin(x) * float(t % 5 + 2) + tf.cos(x) * (-0.0 if t % 2 else 0.0)
    return x, x * 0.0


def rk4_gradient(y0, k):
    def f(y):
        return tf.stack([y[1], -k * tf.sin(y[0])])

    with tf.GradientTape() as tape:
        tape.watch([y0, k])
        y, h = y0, 0.01
        for _ in range(40):
            k1 = f(y)
            k2 = f(y + h / 2 * k1)
            k3 = f(y + h / 2 * k2)
            k4 = f(y + h * k3)
            y = y + h / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
        loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, [y0, k])


def loop_jacobian(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(20):
            y = tf.tanh(y * 1.1 + 0.1)
    return tape.jacobian(y, x)


def loop_jvp(x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        y = x
        for _ in range(25):
            y = tf.tanh(y * 1.1 + 0.1)
    return acc.jvp(y)


def nested_loops(x):
    for _ in range(6):
        for _ in range(8):
            x = tf.sin(x) + 0.1
        x = x * 0.5
    return x


def input_gradient(xs):
    with tf.GradientTape() as tape:
        tape.watch(xs)
        h = tf.zeros(xs.shape[1:], xs.dtype)
        for t in range(xs.shape[0]):
            h = tf.tanh(h * 0.5 + xs[t])
        loss = tf.reduce_sum(h)
    return tape.gradient(loss, xs)


def int_and_float_carries(x):
    n = tf.constant(0)
    for _ in range(30):
        n = n + 1
        x = x * 1.01 + tf.cast(n, x.dtype)
    return x, n, n > 3


def init_also_read(h0):  # the first carry is also a constant every step reads
    h = h0
    for _ in range(20):
        h = tf.sin(h) * 0.5 + h0
    return h


def two_rows_a_step(x, xs):  # x[t] and x[t + 1]: two slices of one array
    for t in range(xs.shape[0] - 1):
        x = tf.sin(x) * xs[t] + xs[t + 1] * 0.25
    return x


_W = tf.Variable(rng.standard_normal((8, 8)) / 3)
_U = tf.Variable(rng.standard_normal((4, 8)) / 2)


def variables_rnn(xs):  # each step reads the weights: one read, no write between
    with tf.GradientTape() as tape:
        h = tf.zeros([xs.shape[1], 8], xs.dtype)
        for t in range(xs.shape[0]):
            h = tf.tanh(tf.matmul(h, _W) + tf.matmul(xs[t], _U))
        loss = tf.reduce_sum(h * h)
    return tape.gradient(loss, [_W, _U])


def chain(x):
    for _ in range(100):
        x = tf.sin(x)
    return x


def chain_gradient(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for _ in range(60):
            y = tf.sin(y) * 1.0001
        loss = tf.reduce_sum(y)
    return tape.gradient(loss, x)


def f32(*shape):
    return rng.standard_normal(shape).astype(np.float32)


# (function, arguments, the scans' lengths the rolled graph has, at most this many nodes)
CASES = [
    (rnn_gradient, (f32(8, 8) / 3, f32(4, 8) / 2, f32(30, 5, 4)), [30, 29], 20),
    (lstm_gradient, (f32(12, 16), f32(16), f32(20, 3, 8), f32(20, 3, 4)), [20, 20], 8),
    (reversed_steps, (np.ones(3), rng.standard_normal((30, 3))), [30], 1),
    (strided_steps, (np.ones(3), rng.standard_normal((61, 3))), [20], 2),
    (stacked_results, (np.ones(3),), [30], 3),
    (two_back, (np.ones(3), 2 * np.ones(3)), [15], 1),
    (own_constants, (np.ones(3),), [30], 3),
    (rk4_gradient, (np.array([1.0, 0.0]), np.array(2.0)), [40, 39], 90),
    (loop_jacobian, (rng.standard_normal(5),), [20, 20], 2),
    (loop_jvp, (rng.standard_normal(5), rng.standard_normal(5)), [25], 1),
    (nested_loops, (np.ones(3),), [6], 1),
    (input_gradient, (rng.standard_normal((20, 3)),), [19], 150),
    (int_and_float_carries, (np.ones(2),), [30], 2),
    (init_also_read, (np.ones(4),), [20], 1),
    (two_rows_a_step, (np.ones(3), rng.standard_normal((31, 3))), [30], 10),
    (chain, (np.ones(3),), [100], 1),
    (chain_gradient, (rng.standard_normal(16),), [59, 60], 8),
    (variables_rnn, (rng.standard_normal((30, 3, 4)),), [30, 29], 20),
]


def _traced(fn, args):
    tensors = [tf.constant(a) for a in args]
    return tf.function(fn).get_concrete_function(*tensors).graph, tensors


def _same(a, b):
    return a.dtype == b.dtype and np.array_equal(a, b, equal_nan=True) and \
        (a.dtype.kind not in "fc" or np.array_equal(np.signbit(a), np.signbit(b)))


@pytest.mark.parametrize("fn, args, lengths, most", CASES, ids=[c[0].__name__ for c in CASES])
def test_rolled_graph_gives_the_unrolled_values_bit_for_bit(fn, args, lengths, most):
    g, tensors = _traced(fn, args)
    before = (str(g), dict(g.constants))
    rolled = reroll(g)
    assert _scans(rolled) == lengths
    assert rolled.count() <= most < g.count()
    assert str(g) == before[0] and g.constants.keys() == before[1].keys()  # g untouched
    want = Replay(g).run(tensors)
    got = Replay(rolled).run(tensors)
    assert len(want) == len(got)
    for a, b in zip(want, got):
        assert _same(np.asarray(a.numpy()), np.asarray(b.numpy()))


@pytest.mark.parametrize("fn, args", [c[:2] for c in CASES], ids=[c[0].__name__ for c in CASES])
def test_a_value_read_after_the_last_step_alone_is_carried(fn, args):
    """NOTE(last-step): a backward loop's gradient for the value it started from is its last
    step's; stacking every step's to read one row cost a compiled chain's gradient 40% of
    its time. No stacked result of a scan is read at its last step alone."""
    rolled = reroll(_traced(fn, args)[0])
    readers: dict = {}
    for n in rolled.nodes:
        for s in n.inputs:
            readers.setdefault(s, []).append(n)
    for n in rolled.nodes:
        if n.prim.name != "scan":
            continue
        last = 0 if n.params["reverse"] else n.params["length"] - 1
        for s in n.outputs[n.params["n_carry"]:]:
            keys = [r.params.get("key") for r in readers.get(s, [])]
            assert keys != [(last,)], (fn.__name__, keys)


def test_signed_zero_constants_stay_apart():
    """Steps whose Python numbers are 0.0 and -0.0 read a sequence, not one constant."""
    g, tensors = _traced(own_constants, (np.ones(3),))
    (scan,) = [n for n in reroll(g).nodes if getattr(n, "prim", None) is not None and
               n.prim.name == "scan"]
    assert scan.params["n_x"] >= 1


def test_steps_too_few_or_too_small_stay_unrolled(monkeypatch):
    def loop(x, steps):
        for _ in range(steps):
            x = tf.sin(x) * 0.5 + x * 0.25 + tf.cos(x)
        return x
    for steps, rolled in ((3, False), (4, True)):
        g, _ = _traced(lambda x: loop(x, steps), (np.ones(2),))
        monkeypatch.setattr(reroll_module, "MIN_NODES", 1)
        assert bool(_scans(reroll(g))) is rolled
    monkeypatch.setattr(reroll_module, "MIN_NODES", 48)
    g, _ = _traced(lambda x: loop(x, 6), (np.ones(2),))  # 36 nodes
    assert reroll(g) is g


def test_reads_of_values_and_draws_stay_unrolled():
    def guarded(x):
        for _ in range(20):
            x = tf.sin(x) + 0.5
            if x[0] > 10.0:  # a guard in every step
                x = x - 1.0
        return x

    g, tensors = _traced(guarded, (np.ones(3),))
    rolled = reroll(g)
    assert not _scans(rolled)

    def drawn(x):
        for _ in range(20):
            x = tf.sin(x) + tf.random.uniform([3], dtype=tf.float64) + 0.5
        return x

    g, _ = _traced(drawn, (np.ones(3),))
    assert not _scans(reroll(g))


def test_a_carry_that_changes_shape_is_not_a_carry():
    def growing(x):
        for _ in range(12):
            x = tf.concat([tf.sin(x), x[:1] * 0.5], axis=0)
        return x
    g, tensors = _traced(growing, (np.ones(2),))
    rolled = reroll(g)
    assert not _scans(rolled)
    assert _same(Replay(g).run(tensors)[0].numpy(), Replay(rolled).run(tensors)[0].numpy())


# ------------------------------------------------------------------ compiled
needs_jax = pytest.mark.skipif(not HAS_JAX, reason="needs JAX (pip install -e '.[xla]')")


@needs_jax
@pytest.mark.parametrize("fn, args, lengths, most", CASES, ids=[c[0].__name__ for c in CASES])
def test_compiled_runs_the_rolled_graph_and_agrees_with_eager(fn, args, lengths, most):
    tensors = [tf.constant(a) for a in args]
    compiled = tf.function(fn, jit_compile=True)
    got = tf.nest.flatten(compiled(*tensors))
    want = tf.nest.flatten(fn(*tensors))
    for a, b in zip(want, got):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=2e-5, atol=1e-6)
    executable = compiled.get_concrete_function(*tensors).executable.inner
    assert executable.compiled
    assert _scans(executable.graph) == lengths


@needs_jax
def test_compiled_loop_differentiated_from_outside():
    """A tape around the compiled call sees the unrolled graph's ops (its own rules)."""
    x = tf.constant(rng.standard_normal(4))
    f = tf.function(chain, jit_compile=True)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    want = np.ones(4)
    value = x.numpy()
    for _ in range(100):
        want = want * np.cos(value)
        value = np.sin(value)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), want, rtol=1e-12)
