"""NOTE(hoist) in tapeflow/graph/hoist.py: a scan's work that reads no carry runs for all
steps at once, and its running sums become one cumsum. Every program is traced, rolled,
hoisted and replayed with NumPy: the hoisted graph must give the rolled graph's values bit
for bit, and must have moved what the case says."""

from __future__ import annotations

import importlib
import os
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import hoist as hoist_module
from tapeflow.graph.hoist import hoist
from tapeflow.graph.replay import Replay
from tapeflow.graph.reroll import reroll

from test_reroll import CASES, _same, _traced

rng = np.random.default_rng(7)


def _scan_nodes(g):
    return [n for n in g.nodes if getattr(n, "prim", None) is not None and
            n.prim.name == "scan"]


def _check(g, tensors, hoisted=None):
    rolled = reroll(g)
    hoisted = hoist(rolled) if hoisted is None else hoisted
    want = Replay(rolled).run(tensors)
    got = Replay(hoisted).run(tensors)
    plain = Replay(g).run(tensors)
    assert len(want) == len(got) == len(plain)
    for a, b, c in zip(want, got, plain):
        assert _same(np.asarray(a.numpy()), np.asarray(b.numpy()))
        assert _same(np.asarray(c.numpy()), np.asarray(b.numpy()))
    return rolled, hoisted


@pytest.mark.parametrize("fn, args", [c[:2] for c in CASES], ids=[c[0].__name__ for c in CASES])
def test_hoisted_graph_gives_the_rolled_values_bit_for_bit(fn, args):
    g, tensors = _traced(fn, args)
    rolled = reroll(g)
    before = str(rolled)
    _check(g, tensors)
    assert str(rolled) == before  # the rolled graph (XLA's) untouched


# ------------------------------------------------------------------ a character-level LSTM
def _suite_char_lstm():
    """benchmarks/suite/char_lstm.py: the loss as the suite writes it, its problem, and
    its gradient by backpropagation through time by hand."""
    benchmarks = os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks")
    sys.path.insert(0, benchmarks)
    try:
        return importlib.import_module("suite.char_lstm")
    finally:
        sys.path.remove(benchmarks)


SUITE = _suite_char_lstm()
char_lstm_loss = SUITE.loss_of(SUITE._Ops(sigmoid=tf.sigmoid, tanh=tf.tanh, exp=tf.exp,
                                          log=tf.math.log, sum=tf.reduce_sum, rows=tf.unstack))


def char_lstm_gradient(main, extra, state, sequence):
    with tf.GradientTape() as tape:
        tape.watch([main, extra])
        loss = char_lstm_loss(main, extra, state, sequence)
    return tape.gradient(loss, [main, extra])


def _char_lstm_args(layers=2, chars=24, b=5):
    return SUITE.problem((layers, chars, b), seed=3)


def test_an_lstm_steps_run_the_recurrence_alone_and_its_gradient_holds():
    args = _char_lstm_args()
    g, tensors = _traced(char_lstm_gradient, args)
    rolled, hoisted = _check(g, tensors)
    before, after = _scan_nodes(rolled), _scan_nodes(hoisted)
    assert [n.params["length"] for n in after] == [n.params["length"] for n in before]
    forward, backward = before
    new_forward, new_backward = after
    # the backward loop's weight gradients leave it as sums: four carries stay (h, c of
    # each layer's cotangents)
    assert backward.params["n_carry"] > 4 and new_backward.params["n_carry"] == 4
    assert len(new_backward.params["body"].nodes) < len(backward.params["body"].nodes) / 2
    assert len(new_forward.params["body"].nodes) < len(forward.params["body"].nodes)
    # against backpropagation through time by hand, and central differences of the loss
    got = Replay(hoisted).run(tensors)
    for a, b in zip(SUITE.numpy_gradient(*args), got):
        np.testing.assert_allclose(b.numpy(), a, rtol=1e-12, atol=1e-15)
    for k, arg in enumerate(args[:2]):
        probe = rng.standard_normal(arg.shape)
        eps = 1e-6
        moved = [list(args), list(args)]
        moved[0][k], moved[1][k] = arg + eps * probe, arg - eps * probe
        plus, minus = (float(char_lstm_loss(*[tf.constant(a) for a in m])) for m in moved)
        np.testing.assert_allclose(np.vdot(got[k].numpy(), probe), (plus - minus) / (2 * eps),
                                   rtol=1e-6)


def test_running_sums_become_one_cumsum_in_the_order_the_steps_ran():
    """A reversed loop's running sum adds its steps last to first; the cumsum does too,
    so values whose sum depends on the order (1e16 + 1 - 1e16) keep their bits."""
    def sums(xs, w):
        acc = tf.zeros_like(w)
        back = tf.zeros_like(w)
        h = w
        for t in range(xs.shape[0]):
            h = tf.sin(h) * 0.5 + xs[t]
            acc = acc + h * xs[t]
        for t in reversed(range(xs.shape[0])):
            back = back + xs[t] * w
        return acc, back, h

    xs = rng.standard_normal((24, 3)) * np.array([1e16, 1.0, 1e-8])
    xs[::2, 0] = 1.0
    g, tensors = _traced(sums, (xs, rng.standard_normal(3)))
    rolled, hoisted = _check(g, tensors)
    assert sum(n.params["n_carry"] for n in _scan_nodes(hoisted)) < \
        sum(n.params["n_carry"] for n in _scan_nodes(rolled))
    assert any(n.prim.name == "cumsum" for n in hoisted.nodes)


@pytest.mark.parametrize("dtype", [np.float16, np.int32])
def test_sums_of_other_dtypes_stay_carries(dtype):
    """Half floats' cumsum runs in float32 (not the steps' additions); ints are left too."""
    def summed(xs, h):
        acc = tf.zeros_like(h)
        for t in range(xs.shape[0]):
            h = h * 2 - xs[t] // 2 if xs.dtype.is_integer else h * 0.5 + xs[t]
            acc = acc + h
        return acc, h

    xs = (rng.standard_normal((20, 4)) * 3).astype(dtype)  # ints: h doubles, wraps
    g, tensors = _traced(summed, (xs, np.ones(4, dtype)))
    rolled, hoisted = _check(g, tensors)
    assert not any(n.prim.name == "cumsum" for n in hoisted.nodes)


def test_large_values_stay_in_the_loop(monkeypatch):
    """A step's value of more than HOIST_BYTES, or more than HOIST_TOTAL over all
    steps (a long loop's values would be held at once), stays in the loop."""
    def loop(xs, h):
        for t in range(xs.shape[0]):
            h = tf.tanh(h * 0.5 + tf.sin(xs[t]) * 2.0)
        return h

    g, tensors = _traced(loop, (rng.standard_normal((12, 64)), np.zeros(64)))
    rolled = reroll(g)
    assert len(_scan_nodes(hoist(rolled))[0].params["body"].nodes) == 3
    monkeypatch.setattr(hoist_module, "HOIST_BYTES", 64 * 8 - 1)
    assert hoist(rolled) is rolled
    monkeypatch.setattr(hoist_module, "HOIST_BYTES", 1 << 16)
    monkeypatch.setattr(hoist_module, "HOIST_TOTAL", 12 * 64 * 8 - 1)  # all steps: too much
    assert hoist(rolled) is rolled


def test_what_the_loop_results_read_runs_after_it():
    """Per-step results no carry needs (an output layer) are computed after the loop from
    the stacked carries; a result that is a sequence's row, or the carry entering a step,
    is read correctly."""
    def loop(xs, h):
        outs, seen, entering = [], [], []
        for t in range(xs.shape[0]):
            entering.append(h * 1.0 + 0.0)
            h = tf.tanh(h * 0.5 + xs[t])
            outs.append(tf.exp(h) * 2.0 - xs[t])
            seen.append(tf.reshape(xs[t], [1, -1]))
        return tf.stack(outs), tf.concat(seen, 0), tf.stack(entering), h

    g, tensors = _traced(loop, (rng.standard_normal((16, 3)), rng.standard_normal(3)))
    rolled, hoisted = _check(g, tensors)
    (scan,) = _scan_nodes(hoisted)
    assert [n.prim.name for n in scan.params["body"].nodes].count("exp") == 0


def test_a_users_scan_is_hoisted_too():
    """tf.foldl's loop (a scan the user wrote) runs its carry-free work before it."""
    def fold(xs, h):
        return tf.foldl(lambda a, x: tf.tanh(a * 0.5 + tf.sin(x) * 2.0 + tf.cos(x)), xs,
                        initializer=h)

    g, tensors = _traced(fold, (rng.standard_normal((10, 3)), np.zeros(3)))
    assert reroll(g) is g
    hoisted = hoist(g)
    assert hoisted is not g
    (scan,) = _scan_nodes(hoisted)
    (user,) = _scan_nodes(g)
    # a * 0.5, + sin(x) * 2.0, + cos(x), tanh: sin, cos and * 2.0 left the loop
    assert len(user.params["body"].nodes) == 7 and len(scan.params["body"].nodes) == 4
    for a, b in zip(Replay(g).run(tensors), Replay(hoisted).run(tensors)):
        assert _same(a.numpy(), b.numpy())


def test_no_warning_from_the_examples_it_traces_on():
    """The batched parts are traced on zeros: 1 / x there warns of nothing the user did."""
    def loop(xs, h):
        for t in range(xs.shape[0]):
            h = tf.tanh(h * 0.5 + 1.0 / xs[t] + tf.math.log(xs[t]))
        return h

    g, tensors = _traced(loop, (rng.uniform(1, 2, (20, 3)), np.zeros(3)))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _check(g, tensors)


def test_the_replay_runs_the_hoisted_loops():
    fn = tf.function(char_lstm_gradient)
    tensors = [tf.constant(a) for a in _char_lstm_args()]
    want = char_lstm_gradient(*tensors)
    for _ in range(12):
        got = fn(*tensors)
    (report,) = fn.experimental_execution_report()
    assert "loops rolled" in report
    for a, b in zip(want, got):
        np.testing.assert_allclose(b.numpy(), a.numpy(), rtol=1e-12, atol=1e-15)


def test_the_graph_it_came_from_is_left_as_it_was():
    """The hoisted graph shares nodes with the graph it came from: dropping what it no
    longer reads (a user's scan result that fed only a sum nobody reads) must not change
    the shared nodes, or the graph as traced, another way of the same replay, breaks."""
    w = tf.constant([-0.7, -0.04, 1.2], tf.float64)

    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            ys = tf.scan(lambda a, v: tf.tanh(a * w + v), tf.tanh(x) * 0.04 + 0.5,
                         initializer=tf.zeros([3], tf.float64))
            loss = tf.reduce_sum(tf.sin(ys))
        return tape.gradient(loss, x)

    g, tensors = _traced(grad, (rng.standard_normal((4, 3)),))
    before = str(g)
    want = Replay(g).run(tensors)
    hoisted = hoist(g)
    assert hoisted is not g
    assert str(g) == before
    for a, b, c in zip(want, Replay(g).run(tensors), Replay(hoisted).run(tensors)):
        assert _same(a.numpy(), b.numpy()) and _same(a.numpy(), c.numpy())
