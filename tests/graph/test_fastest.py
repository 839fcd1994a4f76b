"""NOTE(fastest) in tapeflow/graph/executables.py: a graph that can run more than one way
(its loops rolled or not; compiled or replayed, under jit_compile="auto") runs its first
calls each way in turn, timed, then the fastest. The choice is tested on a fake clock
(no timed assertions); the ways are tested to give the graph's values on every call,
while choosing and after."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import executables, kernels
from tapeflow.graph.executables import Executable, Fastest
from tapeflow.graph.ir import Graph
from tapeflow.tensor import Tensor

HAS_JAX = importlib.util.find_spec("jax") is not None


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


class Fake(Executable):
    """Takes `cost` seconds of the fake clock a call; returns its name's length."""

    def __init__(self, clock: Clock, cost: float, value: float) -> None:
        self.clock, self.cost, self.value, self.calls = clock, cost, value, 0

    def run(self, tensors):
        self.calls += 1
        self.clock.now += self.cost
        return [Tensor(np.float64(self.value))]


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(executables.time, "perf_counter", fake)
    return fake


def _run(ex, calls):
    return [float(ex.run([])[0].numpy()) for _ in range(calls)]


def test_the_fastest_way_is_kept_after_each_was_timed(clock):
    slow, fast = Fake(clock, 1.8e-3, 1.0), Fake(clock, 1e-3, 2.0)
    ex = Fastest(Graph(), [("slow", slow), ("fast", fast)])
    # one untimed call each, then TRIALS timed calls each, in turn
    turns = 2 * (1 + Fastest.TRIALS)
    assert _run(ex, turns) == [1.0, 2.0] * (1 + Fastest.TRIALS)
    assert ex.chosen is fast
    assert _run(ex, 5) == [2.0] * 5
    assert slow.calls == 1 + Fastest.TRIALS
    assert ex.report().startswith("fast: 1 ms a call, against slow 1.8 ms")


def test_the_first_way_stays_unless_another_is_faster_by_the_margin(clock):
    first, close = Fake(clock, 1e-3, 1.0), Fake(clock, 0.97e-3, 2.0)
    ex = Fastest(Graph(), [("first", first), ("close", close)])
    _run(ex, 2 * (1 + Fastest.TRIALS))
    assert ex.chosen is first


def test_one_way_runs_untimed_and_says_why(clock):
    only = Fake(clock, 1e-3, 1.0)
    ex = Fastest(Graph(), [("the NumPy replay (JAX is not installed)", only)])
    assert _run(ex, 3) == [1.0] * 3
    assert ex.report() == "the NumPy replay (JAX is not installed): the only way"


def looped(x):
    for _ in range(40):
        x = tf.sin(x) * 0.9 + tf.cos(x) * 0.05
    return x


def test_a_replayed_loop_gives_the_unrolled_values_on_every_call():
    f = tf.function(looped)
    x = tf.constant(np.linspace(-1.0, 1.0, 7))
    want = looped(x).numpy()
    got = [f(x).numpy() for _ in range(2 * (1 + Fastest.TRIALS) + 3)]
    for value in got:
        np.testing.assert_array_equal(value, want)
    (line,) = f.experimental_execution_report()
    assert line.startswith("looped(float64[7]): the NumPy replay")
    assert "(the fastest of 3 timed calls each)" in line


def test_jit_compile_takes_true_false_none_or_auto():
    with pytest.raises(ValueError, match="jit_compile must be True, False, None or 'auto'"):
        tf.function(looped, jit_compile="xla")
    with pytest.raises(ValueError, match="keep_on_device=True"):
        tf.function(looped, jit_compile="auto", keep_on_device=True)


def test_auto_without_jax_replays_with_numpy(monkeypatch):
    def missing():
        raise ImportError("no JAX here")
    monkeypatch.setattr(executables, "require_jax", missing)
    f = tf.function(lambda x: x * 2.0 + 1.0, jit_compile="auto")
    x = tf.constant([1.0, 2.0])
    for _ in range(4):
        np.testing.assert_array_equal(f(x).numpy(), [3.0, 5.0])
    (line,) = f.experimental_execution_report()
    assert "JAX is not installed" in line


@pytest.mark.skipif(not HAS_JAX, reason="needs JAX (pip install -e '.[xla]')")
def test_auto_chooses_between_xla_and_numpy_and_gives_the_values_throughout():
    f = tf.function(looped, jit_compile="auto")
    x = tf.constant(np.linspace(-1.0, 1.0, 7))
    want = looped(x).numpy()
    # XLA, unrolled, rolled, and rolled loops compiled where Numba is installed
    ways = ["XLA", "the NumPy replay", "the NumPy replay, loops rolled"] + (
        ["the NumPy replay, loops compiled by Numba"] if kernels.available() else [])
    for _ in range(len(ways) * (1 + Fastest.TRIALS) + 3):
        np.testing.assert_allclose(f(x).numpy(), want, rtol=1e-12, atol=1e-14)
    (line,) = f.experimental_execution_report()
    chosen = line.split(": ")[1]
    assert chosen in ways
    assert all(way in line for way in ways)
    assert "ms a call, against" in line


def test_a_loop_over_layers_variables_is_not_stacked():
    """Rolling a loop over a list of large variables would copy them all at every call;
    constants are stacked once, when the graph is rolled."""
    from tapeflow.graph.reroll import reroll
    rng = np.random.default_rng(0)
    for make, rolled in ((tf.Variable, False), (tf.constant, True)):
        ws = [make(rng.standard_normal((64, 64))) for _ in range(12)]

        def net(x, ws=ws):
            for w in ws:
                x = tf.nn.relu(tf.matmul(x, w)) + x * 0.5
            return x

        x = tf.constant(np.ones((2, 64)))
        g = tf.function(net).get_concrete_function(x).graph
        out = reroll(g)
        assert (out is not g) is rolled
        np.testing.assert_array_equal(
            executables.Replay(out).run([x])[0].numpy(), net(x).numpy())


def test_a_way_far_behind_is_timed_no_more(clock):
    """After one timed call each, a way slower than BEHIND times the best drops out; the
    others are timed to the end, and the report says what the dropped way took."""
    slow = Fake(clock, 10e-3, 1.0)
    fast, close = Fake(clock, 1e-3, 2.0), Fake(clock, 1.5e-3, 3.0)
    ex = Fastest(Graph(), [("slow", slow), ("fast", fast), ("close", close)])
    _run(ex, 2 + 2 * (1 + Fastest.TRIALS))
    assert ex.chosen is fast
    assert slow.calls == 2 and fast.calls == close.calls == 1 + Fastest.TRIALS
    assert ex.report() == ("fast: 1 ms a call, against slow 10 ms (timed no more after 1); "
                           "close 1.5 ms (the fastest of 3 timed calls each)")


def test_the_first_way_far_behind_loses_the_tie_rule(clock):
    """The first way keeps a near tie, but not once it has dropped out."""
    first, second = Fake(clock, 5e-3, 1.0), Fake(clock, 1e-3, 2.0)
    ex = Fastest(Graph(), [("first", first), ("second", second)])
    _run(ex, 2 + 1 + 1 + Fastest.TRIALS)
    assert ex.chosen is second and first.calls == 2
