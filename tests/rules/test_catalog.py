"""The rule catalog (tapeflow/catalog.py) against every primitive of the package: each
holds only kinds the catalog declares and effects it knows, has every rule the catalog
requires of it, and declares exactly what its VJP reads (NOTE(saved-values) in tape.py):
a read it leaves out fails every test that husks unread values (tests/conftest.py); a
read it declares but never makes is found here, by husking that value alone."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import catalog, tape as tape_module
from tapeflow.catalog import EFFECTS, HOST_CALLBACK, KINDS, NO_DERIVATIVE
from tapeflow.core import Husk, Primitive, registry
from tapeflow.ops.structural import dtype_of, shape_of

from op_table import ROWS, package_primitives

REQUIRED = {
    "differentiable": lambda p: NO_DERIVATIVE not in p.effects,
    "compiled": lambda p: HOST_CALLBACK not in p.effects,
    "built-in": lambda p: True,
    "": lambda p: False,
}


def test_primitive_holds_what_every_interpreter_needs_and_no_more():
    assert len(Primitive.__slots__) <= 8, Primitive.__slots__
    assert set(Primitive.__slots__) == {"name", "impl", "multiple_results", "rules", "effects",
                                        "defined_at"}


@pytest.mark.parametrize("kind", list(KINDS))
def test_every_primitive_has_the_rules_the_catalog_requires(kind):
    need = REQUIRED[KINDS[kind].required]
    missing = sorted(n for n in package_primitives()
                     if need(registry()[n]) and kind not in registry()[n].rules)
    assert not missing, f"primitives without their `{kind}` rule: {missing}"


def test_rules_and_effects_are_the_catalogs():
    for name in package_primitives():
        p = registry()[name]
        assert set(p.rules) <= set(KINDS), (name, set(p.rules) - set(KINDS))
        assert p.effects <= set(EFFECTS), (name, p.effects)
        if "reads" in p.rules:
            assert "vjp" in p.rules, f"{name} declares what a VJP it lacks reads"


def test_the_catalogs_defaults():
    p = registry()["equal"]  # no derivative: depends on nothing
    assert catalog.rule(p, "sparsity")((None, None), (), (object(),)) == (None,)
    assert catalog.rule(registry()["sin"], "passes").elementwise
    assert catalog.rule(registry()["matmul"], "passes") is not None
    with pytest.raises(KeyError, match="unknown rule kind"):
        catalog.rule(p, "jpv")


def _recorded(row, i, xs):
    """The entries a tape records for `row` with input `i` alone watched."""
    ts = [tf.constant(x) for x in xs]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(ts[i])
        row.fn(*ts)
    return tape._entries


def _declared_reads_are_made(entry):
    """The values `entry`'s VJP declares it reads (for the inputs the tape needs) that it
    reads in fact: (declared, not read) pairs, found by husking each alone."""
    prim, in_keys, out_keys, inputs, outputs, params = entry
    reads = prim.rules.get("reads")
    vjp = prim.rules.get("vjp")
    if reads is None or vjp is None:
        return []
    needs = tuple(k is not None for k in in_keys)
    keep_in, keep_out = tape_module._kept(prim, reads, needs, len(outputs))
    # The entry holds what the tape kept; the values it husked are the rule's unread ones.
    cts = tuple(tf.ones(shape_of(o), dtype_of(o)) for o in outputs)
    vjp(cts, outputs, inputs, needs, **params)  # as the tape would: it must run
    unread = []
    for which, keep in (("input", keep_in), ("output", keep_out)):
        for j, kept in enumerate(keep):
            if not kept:
                continue
            ins, outs = list(inputs), list(outputs)
            if which == "input":
                ins[j] = Husk(ins[j], prim.name)
            else:
                outs[j] = Husk(outs[j], prim.name)
            try:
                vjp(cts, tuple(outs), tuple(ins), needs, **params)
            except Exception:  # noqa: BLE001 - the Husk was read (or passed where a value goes)
                continue
            unread.append((prim.name, which, j))
    return unread


# Declared reads a rule makes only at some dtypes or values (its other branch reads less).
CONDITIONAL = {
}


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_declared_reads_are_made(row):
    xs = row.make(np.random.default_rng(3))
    unread = set()
    for i in range(len(xs)):
        for entry in _recorded(row, i, xs):
            if not isinstance(entry, tuple):
                continue
            unread.update(u for u in _declared_reads_are_made(entry)
                          if u not in CONDITIONAL)
    assert not unread, f"{row.name}: declared reads its VJP never makes: {sorted(unread)}"
