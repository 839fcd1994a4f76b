"""Every rule of every primitive, from the op table (tests/op_table.py joins the family
tables tests/ops/table_<family>.py).

For each row: the value against NumPy; the JVP and the VJP against central
finite differences in float64; <u, J v> equal via JVP and via VJP; second
derivatives (forward-over-forward, forward-over-reverse, reverse-over-reverse)
where the op is smooth; and a float32 run. Then the table itself: every primitive
of the package has a row, and each row sits in its own primitive's family table.
"""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import core, ops
from tapeflow.catalog import NO_DERIVATIVE
from tapeflow.core import registry
from tapeflow.testing import check_grads

import op_table
from op_table import EXEMPT, NONDIFF_ROWS, OPS, ROWS, defined_in, package_primitives



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


@pytest.mark.parametrize("row", [r for r in ROWS if len(_inputs(r)) > 1], ids=lambda r: r.name)
def test_each_input_alone_gets_its_gradient(row):
    """A tape keeps only what the rule reads for the inputs it watches (NOTE(saved-values)
    in tapeflow/tape.py): watching one input at a time must give the same gradients."""
    xs = [tf.constant(x) for x in _inputs(row)]
    with tf.GradientTape() as tape:
        tape.watch(xs)
        out = tf.reduce_sum(row.fn(*xs) ** 2)
    every = tape.gradient(out, xs)
    for i, x in enumerate(xs):
        with tf.GradientTape() as tape:
            tape.watch(x)
            out = tf.reduce_sum(row.fn(*xs) ** 2)
        alone = tape.gradient(out, x)
        if every[i] is None:
            assert alone is None
        else:
            np.testing.assert_array_equal(np.asarray(alone), np.asarray(every[i]))


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


def _check_coverage() -> None:
    covered = set(EXEMPT)
    for row in ROWS + NONDIFF_ROWS:
        covered.update(row.covers())
    missing = sorted(package_primitives() - covered)
    assert not missing, f"primitives without a row in tests/ops/table_<family>.py: {missing}"
    unknown = sorted(covered - set(registry()))
    assert not unknown, f"rows name primitives that do not exist: {unknown}"


def test_every_primitive_has_a_row():
    _check_coverage()


@pytest.fixture
def user_primitive():
    """A primitive registered from outside the package, for this test only."""
    name = f"test_user_{uuid.uuid4().hex[:12]}"
    prim = core.Primitive(name, lambda x: x * 2.0)
    try:
        yield prim
    finally:
        core._REGISTRY.pop(name, None)


def test_coverage_ignores_primitives_registered_outside_the_package(user_primitive):
    assert user_primitive.name in registry()
    assert user_primitive.name not in package_primitives()
    _check_coverage()


def _family_of(name: str) -> str | None:
    """The ops family module that defines primitive `name` (None outside tapeflow/ops/)."""
    path = defined_in(name)
    return path.stem if path.is_relative_to(OPS) else None


def test_each_primitive_has_its_row_in_its_familys_table():
    """Adding a primitive is two files: its family's module and that family's table."""
    for name in sorted(package_primitives()):
        family = _family_of(name)
        if family is None:  # core.py, custom.py: tests/op_table.py itself
            rows = op_table.OUTSIDE_ROWS + op_table.OUTSIDE_NONDIFF_ROWS
            exempt, where = op_table.OUTSIDE_EXEMPT, "tests/op_table.py"
        else:
            table = op_table.TABLES[family]
            rows, exempt = table.ROWS + table.NONDIFF_ROWS, table.EXEMPT
            where = f"tests/ops/table_{family}.py"
        assert name in exempt or any(name in row.covers() for row in rows), \
            f"primitive {name!r} has no row (and no exemption) in {where}"


def _names_by_family() -> dict[str, set]:
    """Each family's public op names and primitive names."""
    names: dict[str, set] = {family: set() for family in op_table.TABLES}
    for module in ops.FAMILIES:
        names[module.__name__.rpartition(".")[2]].update(module.EXPORTS)
    for name in package_primitives():
        if _family_of(name) is not None:
            names[_family_of(name)].add(name)
    return names


def test_each_row_is_named_after_an_op_of_its_table_family():
    """A row is found where its op is: its name is a public op or a primitive of the
    table's family (or one of those followed by `_` and a variant: `reduce_prod_zeros`)."""
    names = _names_by_family()
    misplaced = []
    for family, table in op_table.TABLES.items():
        for row in table.ROWS + table.NONDIFF_ROWS:
            matches = [(len(n), f) for f, ns in names.items() for n in ns
                       if row.name == n or row.name.startswith(n + "_")]
            longest = max((length for length, _ in matches), default=0)
            if family not in {f for length, f in matches if length == longest}:
                misplaced.append((row.name, f"table_{family}.py"))
    assert not misplaced, f"rows not named after an op of their table's family: {misplaced}"


def test_differentiable_flags_match_the_tables():
    prims = registry()
    for row in NONDIFF_ROWS:
        if row.name in prims:  # a composite row may borrow another name (e.g. one_hot)
            assert NO_DERIVATIVE in prims[row.name].effects, row.name
    for row in ROWS:
        for name in row.covers():
            assert NO_DERIVATIVE not in prims[name].effects, name
            assert "jvp" in prims[name].rules and "vjp" in prims[name].rules, name


@pytest.mark.parametrize("which", ["jvp", "vjp"])
def test_checker_catches_a_wrong_rule(monkeypatch, which):
    """The table's checks can fail: a sin whose rule is off by a factor must be caught."""
    sin_p = registry()["sin"]
    rule = sin_p.rules[which]

    def doubled(*a, **k):
        return tuple(None if r is None else r * 2.0 for r in rule(*a, **k))

    monkeypatch.setitem(sin_p.rules, which, doubled)
    with pytest.raises(AssertionError):
        check_grads(tf.sin, [np.array([0.3, 1.2])], order=1)


def test_checker_catches_a_wrong_second_derivative(monkeypatch):
    """A first-order-correct rule built from a wrong derivative of its own is caught at order 2."""
    cos_p = registry()["cos"]
    rule = cos_p.rules["jvp"]

    def wrong(tangents, outs, primals, **k):
        (t,) = rule(tangents, outs, primals, **k)
        return (t * 1.5,)

    monkeypatch.setitem(cos_p.rules, "jvp", wrong)
    check_grads(tf.sin, [np.array([0.3, 1.2])], order=1)  # sin's first derivative is untouched
    with pytest.raises(AssertionError):
        check_grads(tf.sin, [np.array([0.3, 1.2])], order=2)
