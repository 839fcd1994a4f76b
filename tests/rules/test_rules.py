"""Every rule of every primitive, from the one table in tests/op_table.py.

For each row: the value against NumPy; the JVP and the VJP against central
finite differences in float64; <u, J v> equal via JVP and via VJP; second
derivatives (forward-over-forward, forward-over-reverse, reverse-over-reverse)
where the op is smooth; and a float32 run.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import registry
from tapeflow.testing import check_grads

from op_table import EXEMPT, NONDIFF_ROWS, ROWS


def _inputs(row, dtype=np.float64):
    return [np.asarray(a, dtype) for a in row.make(np.random.default_rng(7))]


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_value_matches_numpy(row):
    if row.ref is None:
        pytest.skip("no NumPy reference for a transpose primitive; its rules are checked below")
    xs = _inputs(row)
    got = row.fn(*[tf.constant(x) for x in xs])
    np.testing.assert_allclose(np.asarray(got), row.ref(*xs), rtol=1e-12, atol=1e-12)
    assert got.dtype == tf.float64


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_first_order_rules_against_finite_differences(row):
    check_grads(row.fn, _inputs(row), order=1)


@pytest.mark.parametrize("row", [r for r in ROWS if r.smooth], ids=lambda r: r.name)
def test_second_order_rules(row):
    check_grads(row.fn, _inputs(row), order=2)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_float32_keeps_dtype_and_rules_hold(row):
    xs = _inputs(row, np.float32)
    out = row.fn(*[tf.constant(x) for x in xs])
    assert out.dtype == tf.float32
    check_grads(row.fn, xs, order=1, atol=row.f32_tol, rtol=row.f32_tol)


@pytest.mark.parametrize("row", NONDIFF_ROWS, ids=lambda r: r.name)
def test_nondifferentiable_ops_value_and_no_gradient(row):
    xs = [tf.constant(x) for x in _inputs(row)]
    with tf.autodiff.ForwardAccumulator(xs, [tf.ones_like(x) for x in xs]) as acc:
        with tf.GradientTape() as tape:
            tape.watch(xs)
            out = row.fn(*xs)
    np.testing.assert_array_equal(np.asarray(out), row.ref(*[np.asarray(x) for x in xs]))
    assert acc.jvp(out) is None
    assert all(g is None for g in tape.gradient(out, xs))


def test_every_primitive_has_a_row():
    covered = set(EXEMPT)
    for row in ROWS + NONDIFF_ROWS:
        covered.update(row.covers())
    missing = sorted(set(registry()) - covered)
    assert not missing, f"primitives without a row in tests/op_table.py: {missing}"
    unknown = sorted(covered - set(registry()))
    assert not unknown, f"rows name primitives that do not exist: {unknown}"


def test_differentiable_flags_match_the_tables():
    prims = registry()
    for row in NONDIFF_ROWS:
        if row.name in prims:  # a composite row may borrow another name (e.g. one_hot)
            assert not prims[row.name].differentiable, row.name
    for row in ROWS:
        for name in row.covers():
            assert prims[name].differentiable, name
            assert prims[name].jvp is not None and prims[name].vjp is not None, name


@pytest.mark.parametrize("which", ["jvp", "vjp"])
def test_checker_catches_a_wrong_rule(monkeypatch, which):
    """The table's checks can fail: a sin whose rule is off by a factor must be caught."""
    sin_p = registry()["sin"]
    rule = getattr(sin_p, which)

    def doubled(*a, **k):
        return tuple(None if r is None else r * 2.0 for r in rule(*a, **k))

    monkeypatch.setattr(sin_p, which, doubled)
    with pytest.raises(AssertionError):
        check_grads(tf.sin, [np.array([0.3, 1.2])], order=1)


def test_checker_catches_a_wrong_second_derivative(monkeypatch):
    """A first-order-correct rule built from a wrong derivative of its own is caught at order 2."""
    cos_p = registry()["cos"]
    rule = cos_p.jvp

    def wrong(primals, tangents, outs, **k):
        (t,) = rule(primals, tangents, outs, **k)
        return (t * 1.5,)

    monkeypatch.setattr(cos_p, "jvp", wrong)
    check_grads(tf.sin, [np.array([0.3, 1.2])], order=1)  # sin's first derivative is untouched
    with pytest.raises(AssertionError):
        check_grads(tf.sin, [np.array([0.3, 1.2])], order=2)
