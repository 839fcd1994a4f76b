"""Traced-and-replayed against eager, for every row of the op table (tests/op_table.py).

Each row's function, its gradient (a tape inside the traced function) and its
JVP (an accumulator inside) are traced at one input and replayed at another:
the plan interpreter (cold graphs), the generated code (hot graphs) and the re-binding
interpreter (recorders active) must all equal eager.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.replay import compile_graph, interpret, plan_runner

from op_table import NONDIFF_ROWS, ROWS


def _inputs(row, seed):
    return [tf.constant(np.asarray(a, np.float64)) for a in row.make(np.random.default_rng(seed))]


def _grad_fn(row):
    def g(*xs):
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            y = tf.reduce_sum(tf.sin(row.fn(*xs)))
        return tape.gradient(y, list(xs))
    return g


def _jvp_fn(row):
    def j(*xs):
        with tf.autodiff.ForwardAccumulator(list(xs), [tf.ones_like(x) for x in xs]) as acc:
            y = row.fn(*xs)
        return acc.jvp(y, unconnected_gradients="zero")
    return j


def _check(fn, row):
    traced = tf.function(fn)
    first, second = _inputs(row, 1), _inputs(row, 2)
    traced(*first)  # trace at one input...
    want = fn(*second)  # ...replay at another
    got = traced(*second)
    assert traced.experimental_get_tracing_count() == 1
    for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got), strict=True):
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-13)
    cf = traced.get_concrete_function(*second)
    arrays = [x._value for x in second]
    # Every way a graph replays: the re-binding interpreter (recorders active), the plan
    # interpreter (a cold graph) and the generated code (a hot one).
    for name, outs in (("interpret", interpret(cf.graph, second)),
                       ("plan", plan_runner(cf.graph)(*arrays)),
                       ("compiled", compile_graph(cf.graph)(*arrays))):
        for w, g in zip(tf.nest.flatten(want), outs, strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-13, atol=1e-13,
                                       err_msg=name)


@pytest.mark.parametrize("row", ROWS + NONDIFF_ROWS, ids=lambda r: r.name)
def test_replay_equals_eager(row):
    _check(row.fn, row)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_replayed_gradient_equals_eager(row):
    _check(_grad_fn(row), row)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_replayed_jvp_equals_eager(row):
    _check(_jvp_fn(row), row)
