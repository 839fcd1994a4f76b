"""Replay memory: a replay drops each large buffer after its last use, so its peak is what
the computation needs at once (tracemalloc sees NumPy's allocations)."""

import tracemalloc

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph import replay

N = 1 << 17            # float32 elements per array: 512 KiB, above replay.FREE_AT_BYTES
N_BLOCKS = 40          # five ops each: a 200-op chain
ARRAY = N * 4


def chain(x):
    for _ in range(N_BLOCKS):
        x = tf.sin(x)
        x = x * 1.0001
        x = tf.tanh(x)
        x = x + 0.5
        x = x * x
    return tf.reduce_sum(x)


def jvp_of_chain(x, v):
    with tf.autodiff.ForwardAccumulator(x, v) as acc:
        y = chain(x)
    return acc.jvp(y)


def grad_of_chain(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = chain(x)
    return tape.gradient(y, x)


def peak_arrays(f, *args):
    """Peak memory of one steady-state call of `f`, in arrays of the chain's size."""
    f(*args)  # traces (a traced function) ...
    f(*args)  # ... and replays once (compiling its code when the tier says so)
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        f(*args)
        return (tracemalloc.get_traced_memory()[1] - base) / ARRAY
    finally:
        tracemalloc.stop()


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(0)
    return tf.constant(rng.random(N, dtype=np.float32)), tf.ones([N])


def test_a_traced_jvp_peaks_as_low_as_eager_forward_mode(inputs):
    x, v = inputs
    eager = peak_arrays(jvp_of_chain, x, v)
    replayed = peak_arrays(tf.function(jvp_of_chain), x, v)
    assert replayed <= max(eager, 5.5), (replayed, eager)


def test_a_traced_gradient_holds_only_what_the_backward_pass_reads(inputs):
    x, _ = inputs
    # The backward pass reads three values per block (sin's input, tanh's output, the
    # square's input): 120 arrays for the chain, plus a few in flight.
    replayed = peak_arrays(tf.function(grad_of_chain), x)
    assert replayed <= 3 * N_BLOCKS + 6, replayed


def test_small_buffers_are_not_dropped_one_by_one():
    """Dropping costs a statement per buffer: only large ones are worth it."""
    f = tf.function(lambda a: tf.sin(tf.sin(a)) * 2.)
    small = f.get_concrete_function(tf.ones([8]))
    large = f.get_concrete_function(tf.ones([replay.FREE_AT_BYTES // 4]))
    assert "del " not in small._replay.compiled().source
    assert "del " in large._replay.compiled().source


def test_dropping_buffers_keeps_the_values(inputs):
    x, v = inputs
    np.testing.assert_allclose(tf.function(grad_of_chain)(x).numpy(), grad_of_chain(x).numpy(),
                               rtol=0, atol=0)
    np.testing.assert_allclose(tf.function(jvp_of_chain)(x, v).numpy(),
                               jvp_of_chain(x, v).numpy(), rtol=0, atol=0)


def first_call_arrays(f, *args):
    """Peak memory of a traced function's first call (the trace), in arrays."""
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        tracemalloc.reset_peak()
        f(*args)
        return (tracemalloc.get_traced_memory()[1] - base) / ARRAY
    finally:
        tracemalloc.stop()


def test_tracing_holds_no_more_than_eager_code(inputs):
    """A tracer names tensors by key and holds none of them: the trace of a JVP peaks as
    eager forward mode, the trace of a gradient as the eager tape (which keeps what its
    backward pass reads), not at every intermediate of the chain (400 arrays here)."""
    x, v = inputs
    assert first_call_arrays(tf.function(jvp_of_chain), x, v) <= 8, "jvp"
    assert first_call_arrays(tf.function(grad_of_chain), x) <= 3 * N_BLOCKS + 8, "gradient"
