"""NOTE(repeated-ops) in tapeflow/tape.py: an op recorded twice on the same inputs has its
rule run once, on the sum of both copies' cotangents; copies that differ in any way that
matters (a source among them, a variable written between, different unwatched operands)
keep their own rules, and every gradient equals its definition."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import tape as tape_module
from tapeflow.core import registry


@pytest.fixture
def merging(monkeypatch):
    """Eager gradients merge copies too, as traced ones do: the safety tests below then
    check the merge itself, not the eager path that skips it."""
    monkeypatch.setattr(tape_module, "recording", lambda: True)


@pytest.fixture
def sin_rule_calls(monkeypatch):
    """How many times sin's VJP rule runs (the wrapper keeps what the tape keeps)."""
    sin_p = registry()["sin"]
    rule = sin_p.rules["vjp"]
    calls = []

    def counted(*args, **kwargs):
        calls.append(1)
        return rule(*args, **kwargs)

    monkeypatch.setitem(sin_p.rules, "vjp", counted)
    return calls


def _gradient_of_repeats(x):
    with tf.GradientTape() as tape:
        tape.watch(x)
        a, b = tf.sin(x), tf.sin(x)
        y = a * b + a
    return tape.gradient(y, x)


def test_a_repeated_op_runs_its_rule_once_where_the_backward_pass_is_recorded(sin_rule_calls):
    """Traced (and nested or batched) backward passes merge the copies; a plain eager one
    skips the search (it runs each rule once anyway, and the search costs per op)."""
    x = tf.constant([0.3, -1.2, 2.0])
    g = tf.function(_gradient_of_repeats)(x).numpy()
    xv = x.numpy()
    np.testing.assert_allclose(g, 2 * np.sin(xv) * np.cos(xv) + np.cos(xv), rtol=1e-6)
    assert len(sin_rule_calls) == 1
    eager = _gradient_of_repeats(x).numpy()
    np.testing.assert_allclose(eager, g, rtol=1e-6)
    assert len(sin_rule_calls) == 3


def test_a_copy_that_is_a_source_keeps_its_own_gradient(merging):
    """b repeats a, and both are reached from x; asked for as a source, b keeps its own
    cotangent (merged into a's, it would be lost)."""
    x = tf.constant([0.3, -1.2])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a, b = tf.sin(x), tf.sin(x)
        tape.watch(b)
        y = a * b
    xv = x.numpy()
    gx, gb = tape.gradient(y, [x, b])
    np.testing.assert_allclose(gb.numpy(), np.sin(xv), rtol=1e-6)
    # x's gradient flows through both copies, a source or not (as TensorFlow).
    np.testing.assert_allclose(gx.numpy(), 2 * np.sin(xv) * np.cos(xv), rtol=1e-6)


def test_different_unwatched_operands_are_not_copies(merging):
    x = tf.constant([1.0, 2.0])
    c1, c2 = tf.constant([3.0, 4.0]), tf.constant([5.0, 7.0])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x * c1 + x * c2
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [8.0, 11.0])


def test_a_variable_written_between_two_reads_is_not_merged(merging):
    v = tf.Variable([0.5, 1.0], dtype=tf.float64)
    with tf.GradientTape() as tape:
        y1 = tf.sin(v)
        old = v.numpy().copy()
        v.assign_add([1.0, 1.0])
        y2 = tf.sin(v)
        y = y1 + y2
    np.testing.assert_allclose(tape.gradient(y, v).numpy(), np.cos(old) + np.cos(old + 1.0),
                               rtol=1e-12)


def _cofactor_det(m, rows, cols):
    if len(rows) == 1:
        return m[rows[0]][cols[0]]
    total = None
    for j, c in enumerate(cols):
        term = m[rows[0]][c] * _cofactor_det(m, rows[1:], cols[:j] + cols[j + 1:])
        total = term if total is None else (total + term if j % 2 == 0 else total - term)
    return total


def _det_gradient(a):
    with tf.GradientTape() as tape:
        tape.watch(a)
        m = [tf.unstack(r) for r in tf.unstack(a)]
        d = _cofactor_det(m, list(range(len(m))), list(range(len(m))))
    return tape.gradient(d, a)


def test_a_traced_gradient_of_repeated_work_is_smaller_and_right(monkeypatch):
    """A cofactor determinant recomputes its minors: the traced gradient graph shrinks
    when the copies' rules run once (5x5: the count is pinned below the unmerged one)."""
    a = tf.constant(np.random.default_rng(0).standard_normal((5, 5)))
    merged = tf.function(_det_gradient).get_concrete_function(a)
    plan = tape_module.GradientTape._plan
    monkeypatch.setattr(tape_module.GradientTape, "_plan",
                        lambda self, sources, merge=True: plan(self, sources, merge=False))
    unmerged = tf.function(_det_gradient).get_concrete_function(a)
    assert merged.graph.count() < 0.8 * unmerged.graph.count()
    want = np.linalg.det(a.numpy()) * np.linalg.inv(a.numpy()).T
    for cf in (merged, unmerged):
        np.testing.assert_allclose(cf(a).numpy(), want, rtol=1e-10, atol=1e-12)


def test_forced_merging_runs_the_rule_once_eagerly(merging, sin_rule_calls):
    _gradient_of_repeats(tf.constant([0.3, -1.2]))
    assert len(sin_rule_calls) == 1


def _expansion_gradient(n):
    """A cofactor determinant that reads every entry as `m[i, j]` again each time (as
    GradBench's det and the suite's `det` do): each read is a new tensor, so the minors
    are copies only through copies of their entries."""
    def minor(m, rows, cols):
        if len(cols) == 1:
            return m[rows[0], cols[0]]
        total = None
        for k, c in enumerate(cols):
            term = m[rows[0], c] * minor(m, rows[1:], cols[:k] + cols[k + 1:])
            total = term if total is None else (total - term if k % 2 else total + term)
        return total

    def primal(m):
        return minor(m, tuple(range(n)), tuple(range(n)))

    def gradient(m):
        with tf.GradientTape() as tape:
            tape.watch(m)
            d = primal(m)
        return tape.gradient(d, m)

    return primal, gradient


@pytest.mark.parametrize("n", [3, 5, 6])
def test_copies_of_copies_merge_so_the_gradient_stays_within_4x_the_primal(n):
    """An op on copies repeats the op on the firsts: the traced gradient of a 6 x 6
    expansion has under 4x the primal graph's nodes (5,313 nodes before, 15x)."""
    a = tf.constant(np.random.default_rng(n).standard_normal((n, n)) + n * np.eye(n) / 2)
    primal, gradient = _expansion_gradient(n)
    p = tf.function(primal).get_concrete_function(a).graph.count()
    cf = tf.function(gradient).get_concrete_function(a)
    assert cf.graph.count() <= 4 * p, (cf.graph.count(), p)
    want = np.linalg.det(a.numpy()) * np.linalg.inv(a.numpy()).T
    np.testing.assert_allclose(cf(a).numpy(), want, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(gradient(a).numpy(), want, rtol=1e-10, atol=1e-12)


def test_an_op_on_a_source_copy_is_not_a_copy(merging):
    """x[0] read twice; the second read is a source, so the product on it keeps its own
    rule, and so does a product that is itself a source; x's gradient counts every path."""
    x = tf.constant([1.5, -0.5])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(x)
        a1, a2 = x[0], x[0]
        tape.watch(a2)
        b1, b2 = a1 * a1, a2 * a2
        c1, c2 = a1 * x[1], a1 * x[1]
        tape.watch(c2)
        y = b1 + 3.0 * b2 + 5.0 * c1 + 7.0 * c2
    ga2, gx, gc2, gc1 = tape.gradient(y, [a2, x, c2, c1])
    assert float(ga2) == 6 * 1.5
    np.testing.assert_allclose(gx.numpy(), [2 * 1.5 + 6 * 1.5 + 12 * -0.5, 12 * 1.5])
    assert float(gc2) == 7.0 and float(gc1) == 5.0
