"""Every op-table row in a trace that serves every size (graph/polymorphic.py).

Each row's function, its gradient (a VJP) and a JVP are traced with every input
dimension left open (TensorSpec of None sizes), called at the inputs and at them tiled
twice along every axis (the same values, so each op's domain holds). Where the two traces
are taken for one graph that serves every size (NOTE(two-sizes): they agree, their sizes
read at replay), it must give the eager values at sizes it was never traced at: the
inputs tiled 3 and 5 times. Rows whose graph depends on the sizes are traced
per size, which tests/graph/test_polymorphic.py covers; here they only have to agree at
the traced size. And at sizes no tiling reaches (2n + 1, 3n - 1, ...), every row must
give the eager values, whichever graph serves them.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

from op_table import ROWS


def _inputs(row):
    return [np.asarray(a, np.float64) for a in row.make(np.random.default_rng(7))]


def _program(row):
    def run(*xs):
        tangents = [tf.ones_like(x) * 0.5 for x in xs]
        with tf.autodiff.ForwardAccumulator(list(xs), tangents) as acc:
            with tf.GradientTape() as tape:
                tape.watch(list(xs))
                out = row.fn(*xs)
                loss = tf.reduce_sum(out * tf.cos(out))
            jvp = acc.jvp(out, unconnected_gradients=tf.UnconnectedGradients.ZERO)
        grads = tape.gradient(loss, list(xs), unconnected_gradients="zero")
        return [out, jvp] + grads
    return run


def _eager(fn, xs):
    try:
        return [np.asarray(v) for v in fn(*[tf.constant(x) for x in xs])]
    except Exception:  # noqa: BLE001 - inputs of these sizes are not valid for the op
        return None


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_a_size_generic_trace_gives_the_eager_values_at_other_sizes(row):
    xs = _inputs(row)
    program = _program(row)
    specs = [tf.TensorSpec([None] * x.ndim, tf.float64) for x in xs]
    traced = tf.function(program, input_signature=specs)
    want = _eager(program, xs)
    got = traced(*[tf.constant(x) for x in xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)
    _agrees(traced, program, [np.tile(x, (2,) * x.ndim) for x in xs])
    cf = traced.get_concrete_function(*[tf.constant(x) for x in xs])
    if not cf.serves_all_sizes:
        return
    count = traced.experimental_get_tracing_count()
    for k in (3, 5):
        _agrees(traced, program, [np.tile(x, (k,) * x.ndim) for x in xs])
    assert traced.experimental_get_tracing_count() == count


def _cut(x, k, extra):
    """`x` tiled k times along every axis, each axis then cut to (k - 1) times its length
    plus `extra`: sizes that are no multiple of the traced ones (odd, prime, one short)."""
    t = np.tile(x, (k,) * x.ndim)
    return t[tuple(slice(0, d * (k - 1) + extra) if d > 1 else slice(None) for d in x.shape)]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_a_size_generic_trace_is_right_at_sizes_no_tiling_reaches(row):
    # Traces at n and 2n agree on what is periodic in n (n // 3 at 6 and 12 is the size
    # of another axis there; SAME padding is 0 at both 4 and 8): a graph that serves every
    # size must give the eager values at 2n + 1, 3n - 1 and the like, where it does not.
    xs = _inputs(row)
    program = _program(row)
    traced = tf.function(program, input_signature=[tf.TensorSpec([None] * x.ndim, tf.float64)
                                                   for x in xs])
    traced(*[tf.constant(x) for x in xs])
    _agrees(traced, program, [np.tile(x, (2,) * x.ndim) for x in xs])
    for k, extra in ((2, 1), (3, -1), (2, 3), (4, 1)):
        _agrees(traced, program, [_cut(x, k, extra) for x in xs])


def _agrees(traced, program, xs):
    """The traced program gives the eager values at `xs` (if they are valid inputs)."""
    want = _eager(program, xs)
    if want is None:
        return
    got = traced(*[tf.constant(x) for x in xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(np.asarray(g), w, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_vmap_over_an_open_batch_dimension(row):
    """Every batching rule in a size-generic trace: vmap of the row's gradient over a
    batch whose size the signature leaves open (the batch size in the rules' params is
    read at replay), against the eager vmap at other batch sizes."""
    def grads(*args):
        with tf.GradientTape() as tape:
            tape.watch(list(args))
            y = tf.reduce_sum(tf.sin(row.fn(*args)))
        return [row.fn(*args)] + tape.gradient(y, list(args), unconnected_gradients="zero")

    program = tf.vmap(grads)
    xs = [np.stack([x, x * 0.9 + 0.05]) for x in _inputs(row)]  # a batch of 2
    specs = [tf.TensorSpec([None] + list(x.shape[1:]), tf.float64) for x in xs]
    traced = tf.function(lambda *a: program(*a), input_signature=specs)
    for b in (2, 3, 5, 2):
        _agrees(traced, program, [np.concatenate([x] * 3)[:b] for x in xs])
