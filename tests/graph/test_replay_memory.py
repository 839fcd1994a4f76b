"""Replay memory: a replay drops each large buffer after its last use, so its peak is what
the computation needs at once (tracemalloc sees NumPy's allocations)."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import replay, replayed_rules
from tapeflow.graph.executables import Fastest

from chain_helpers import N, N_BLOCKS, grad_of_chain, jvp_of_chain, peak_arrays


def steady_arrays(f, *args):
    """Peak memory of one steady-state call of `f`, in arrays of the chain's size."""
    f(*args)  # traces (a traced function) ...
    # ... and replays: each way its graph can run timed on the first calls (the chain
    # rolled or not: NOTE(fastest) in graph/executables.py), compiling its code when the
    # tier says so
    for _ in range(2 * (1 + Fastest.TRIALS)):
        f(*args)
    return peak_arrays(f, *args)[1]


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return tf.constant(rng.random(N, dtype=np.float32)), tf.ones([N])


def test_a_traced_jvp_peaks_as_low_as_eager_forward_mode(inputs, monkeypatch):
    """Every way the graph may replay (NOTE(fastest): which one the first calls' timing
    picks varies with the machine's load), within a tenth of an array of eager: the
    Python objects of a replay (a scan's lists), not an array. Against the plan
    interpreter, which runs node by node, eager runs its rules node by node too: their
    compiled replays (NOTE(replayed-rules)) write into buffers they made, as compiled
    graph code does."""
    x, v = inputs
    if replay.COMPILE_AFTER >= 10**9:  # the plan interpreter (conftest)
        monkeypatch.setattr(replayed_rules, "COMPILE_AFTER", 10**9)
        replayed_rules.forget()
    eager = steady_arrays(jvp_of_chain, x, v)
    replayed_rules.forget()
    f = tf.function(jvp_of_chain)
    replayed = [steady_arrays(f, x, v)]
    for way in f.get_concrete_function(x, v).executable.inner.ways():
        replayed.append(steady_arrays(lambda: way.run([x, v])))
    assert len(replayed) == 3  # the chain as traced and rolled
    assert max(replayed) <= max(eager, 5.5) + 0.1, (replayed, eager)


def test_a_traced_gradient_holds_only_what_the_backward_pass_reads(inputs):
    x, _ = inputs
    # The backward pass reads three values per block (sin's input, tanh's output, the
    # square's input): 120 arrays for the chain, plus a few in flight.
    replayed = steady_arrays(tf.function(grad_of_chain), x)
    assert replayed <= 3 * N_BLOCKS + 6, replayed


def test_small_buffers_are_not_dropped_one_by_one():
    """Dropping costs a statement per buffer: only large ones are worth it."""
    f = tf.function(lambda a: tf.sin(tf.sin(a)) * 2.)
    small = f.get_concrete_function(tf.ones([8]))
    large = f.get_concrete_function(tf.ones([replay.FREE_AT_BYTES // 4]))
    assert "del " not in small.executable.inner.ways()[0].compiled().source
    assert "del " in large.executable.inner.ways()[0].compiled().source


def test_dropping_buffers_keeps_the_values(inputs):
    x, v = inputs
    np.testing.assert_allclose(tf.function(grad_of_chain)(x).numpy(), grad_of_chain(x).numpy(),
                               rtol=0, atol=0)
    np.testing.assert_allclose(tf.function(jvp_of_chain)(x, v).numpy(),
                               jvp_of_chain(x, v).numpy(), rtol=0, atol=0)


def test_tracing_holds_no_more_than_eager_code(inputs):
    """A tracer names tensors by key and holds none of them: the trace of a JVP peaks as
    eager forward mode, the trace of a gradient as the eager tape (which keeps what its
    backward pass reads), not at every intermediate of the chain (400 arrays here)."""
    x, v = inputs
    assert peak_arrays(tf.function(jvp_of_chain), x, v)[1] <= 8, "jvp"
    assert peak_arrays(tf.function(grad_of_chain), x)[1] <= 3 * N_BLOCKS + 8, "gradient"
