"""VJP rules replayed as compiled code by the eager backward pass (NOTE(replayed-rules) in
tapeflow/graph/replayed_rules.py), for every row of the op table.

Each rule is compiled on one set of values and replayed on another of the same shapes:
the gradients must be those the rule gives run as it is, bit for bit (the replay calls
the same impls in the same order). Watching one input at a time changes which
cotangents a rule computes, so each is a signature of its own and is checked too; so
does whether the tape dropped the values a rule does not read (the tests' conftest drops
them all; outside the tests a tape keeps small ones).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import extend
from tapeflow import tape as tape_module
from tapeflow.tape import HUSK_AT_BYTES
from tapeflow.core import registry
from tapeflow.graph import replayed_rules

from op_table import ROWS

# Rows none of whose primitives has a compiled rule, and why (the module's docstring):
KEPT_PLAIN = {
    # user code in the rule: a custom gradient, a py_function, a solver's functions
    "custom_gradient", "py_function", "custom_root", "custom_linear_solve",
    # a scan's params hold its body graph; an ODE solve's its system: no plain data
    "scan", "foldl", "map_fn", "scan_pair_reverse", "solve_ivp", "solve_ivp_adjoint",
    # an output shape that is a value of an input (DATA_SHAPE)
    "broadcast_dyn", "broadcast_dyn_lead", "reshape_dyn", "reshape_dyn_lead", "sum_dyn",
    "sum_dyn_lead",
    # a tape records the op's differentiation form (max_pool2d_argmax), compiled instead
    "max_pool2d_plain",
}


@pytest.fixture
def compile_at_once(monkeypatch):
    monkeypatch.setattr(replayed_rules, "COMPILE_AFTER", 1)
    replayed_rules.forget()
    yield
    replayed_rules.forget()


def _inputs(row, seed, dtype=np.float64):
    return [np.asarray(a, dtype) for a in row.make(np.random.default_rng(seed))]


def _gradients(row, xs, watched):
    ts = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch([ts[i] for i in watched])
        total = tf.reduce_sum(row.fn(*ts) ** 2)  # a cotangent that changes with the values
    return tape.gradient(total, [ts[i] for i in watched])


def _plain(monkeypatch, fn, *args):
    """fn(*args) with every rule run as it is, then compiling at once again."""
    monkeypatch.setattr(replayed_rules, "COMPILE_AFTER", 10 ** 9)
    replayed_rules.forget()
    try:
        return fn(*args)
    finally:
        monkeypatch.setattr(replayed_rules, "COMPILE_AFTER", 1)
        replayed_rules.forget()


def _compiled_count(names: tuple = ()) -> int:
    """Compiled rules in the cache (of the primitives named, if any)."""
    return sum(run is not None and (not names or key[0].name in names)
               for key, run in replayed_rules._compiled.items())


def _check_compiled_against_plain(row, monkeypatch, derive):
    """``derive(xs, watched)``, a list of derivatives, with rules compiled on one set of
    values and replayed on another, against the rules run as they are; watching every
    input and each alone. Some primitive of the row must have been compiled (or none, for
    the rows KEPT_PLAIN)."""
    first, second = _inputs(row, 7), _inputs(row, 8)
    choices = [tuple(range(len(first)))] + ([(i,) for i in range(len(first))]
                                            if len(first) > 1 else [])
    compiled = 0
    for watched in choices:
        want = _plain(monkeypatch, derive, second, watched)
        derive(first, watched)  # compiles every signature it meets
        compiled += _compiled_count(row.covers())
        got = derive(second, watched)
        for w, g in zip(want, got, strict=True):
            if w is None:
                assert g is None
            else:
                np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    if row.name in KEPT_PLAIN:
        assert compiled == 0
    else:
        assert compiled > 0, f"{row.name}: none of {row.covers()} has a compiled rule"


@pytest.mark.parametrize("husked", [True, False], ids=["husked", "kept"])
@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_replayed_rules_give_the_rules_gradients_at_new_values(row, husked, monkeypatch,
                                                               compile_at_once):
    if not husked:  # the tape keeps small values whole, as outside the tests
        monkeypatch.setattr(tape_module, "HUSK_AT_BYTES", HUSK_AT_BYTES)
    _check_compiled_against_plain(row, monkeypatch,
                                  lambda xs, watched: _gradients(row, xs, watched))


def _jvps(row, xs, tangents, watched):
    ts = [tf.constant(x) for x in xs]
    with tf.autodiff.ForwardAccumulator([ts[i] for i in watched],
                                        [tf.constant(tangents[i]) for i in watched]) as acc:
        out = row.fn(*ts) ** 2  # a tangent of the output that changes with the values
    return acc.jvp(out)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_replayed_jvp_rules_give_the_rules_tangents_at_new_values(row, monkeypatch,
                                                                  compile_at_once):
    tangents = _inputs(row, 9)
    _check_compiled_against_plain(row, monkeypatch,
                                  lambda xs, watched: [_jvps(row, xs, tangents, watched)])


@pytest.mark.parametrize("row", ROWS[::7], ids=lambda r: r.name)
def test_replayed_rules_in_float32(row, monkeypatch, compile_at_once):
    first, second = _inputs(row, 7, np.float32), _inputs(row, 8, np.float32)
    watched = tuple(range(len(first)))
    want = _plain(monkeypatch, _gradients, row, second, watched)
    _gradients(row, first, watched)
    got = _gradients(row, second, watched)
    for w, g in zip(want, got, strict=True):
        assert (w is None) == (g is None)
        if w is not None:
            assert g.dtype == w.dtype
            np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def _chain_gradient(x, n=40):
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = x
        for i in range(n):
            y = tf.sin(y) if i % 2 == 0 else y * 1.0001
        total = tf.reduce_sum(y)
    return tape.gradient(total, x)


def test_a_signature_compiles_after_it_was_seen_often_enough(monkeypatch):
    monkeypatch.setattr(replayed_rules, "COMPILE_AFTER", 25)
    replayed_rules.forget()
    x = tf.constant(np.linspace(-1.0, 1.0, 16))
    first = _chain_gradient(x, n=40)  # 20 uses of sin's and of the product's signatures
    assert _compiled_count() == 0
    second = _chain_gradient(x, n=40)  # their 25th uses compile them
    assert _compiled_count() == 2
    third = _chain_gradient(x, n=40)
    np.testing.assert_array_equal(second.numpy(), first.numpy())
    np.testing.assert_array_equal(third.numpy(), first.numpy())
    replayed_rules.forget()


def test_nothing_is_compiled_while_a_recorder_watches_the_backward_pass(compile_at_once):
    x = tf.constant(np.linspace(0.1, 1.3, 16))
    with tf.GradientTape() as outer:
        outer.watch(x)
        g = _chain_gradient(x, n=6)
        total = tf.reduce_sum(g)
    assert _compiled_count() == 0  # the outer tape recorded the inner backward pass
    hessian_row_sums = outer.gradient(total, x)
    eps = 1e-6
    numeric = (tf.reduce_sum(_chain_gradient(x + eps, n=6)).numpy()
               - tf.reduce_sum(_chain_gradient(x - eps, n=6)).numpy()) / (2 * eps)
    np.testing.assert_allclose(np.sum(hessian_row_sums.numpy()), numeric, rtol=1e-6)


# A primitive defined outside tapeflow whose rule computes with NumPy on the arrays: a
# trace would freeze cos(x) into the graph. Such rules stay as they are.
def _numpy_rule(cts, outs, primals, needs):
    return (tf.constant(np.cos(primals[0]._value) * cts[0]._value),)


numpy_sin_p = extend.define(extend.Primitive("test_replayed_numpy_sin", np.sin),
                            vjp=_numpy_rule)


def test_a_rule_defined_outside_tapeflow_is_never_compiled(compile_at_once):
    for values in (np.array([0.1, 0.2]), np.array([1.0, -2.0]), np.array([3.0, 0.5])):
        x = tf.constant(values)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = extend.bind(numpy_sin_p, x)
        np.testing.assert_array_equal(tape.gradient(y, x).numpy(), np.cos(values))
    assert _compiled_count() == 0


def test_threads_share_compiled_rules(compile_at_once):
    x = tf.constant(np.linspace(-1.0, 1.0, 16))
    want = _chain_gradient(x).numpy()
    results, errors = [], []

    def work():
        try:
            for _ in range(20):
                results.append(_chain_gradient(x).numpy())
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(results) == 80
    for r in results:
        np.testing.assert_array_equal(r, want)


def test_the_signature_tells_shapes_dtypes_needs_and_params_apart():
    sum_p = registry()["reduce_sum"]
    x = tf.constant(np.ones((2, 3)))
    g = tf.constant(np.ones(3))
    vjp = sum_p.rules["vjp"]

    def signature(x, needs=(True,), axis=(0,), rule=vjp):
        return replayed_rules.signature(sum_p, rule, (g,), (g,), (x,), needs, {"axis": axis})

    base = signature(x)
    assert base == signature(tf.constant(np.zeros((2, 3))))  # values are no part of it
    assert base != signature(x, needs=(False,))
    assert base != signature(x, axis=(1,))
    assert base != signature(tf.constant(np.ones((2, 3), np.float32)))
    assert base != signature(tf.constant(np.ones((4, 3))))
    assert base != signature(x, rule=lambda *a, **k: vjp(*a, **k))


def test_a_replaced_rule_is_never_served_from_the_cache(monkeypatch, compile_at_once):
    sin_p = registry()["sin"]
    rule = sin_p.rules["vjp"]
    x = tf.constant(np.linspace(0.1, 1.3, 16))
    want = _chain_gradient(x).numpy()
    monkeypatch.setitem(sin_p.rules, "vjp",
                        lambda *a, **k: tuple(None if r is None else r * 2.0 for r in rule(*a, **k)))
    assert not np.allclose(_chain_gradient(x).numpy(), want)
    monkeypatch.setitem(sin_p.rules, "vjp", rule)
    np.testing.assert_array_equal(_chain_gradient(x).numpy(), want)


def test_rules_on_large_arrays_stay_as_they_are(compile_at_once):
    # NumPy's work outweighs the Python there, and a trace would compute the rule once
    # more at the backward pass's peak
    x = tf.constant(np.linspace(0.1, 1.3, 1 << 14))  # 128 KiB of float64
    want = _chain_gradient(x, n=6).numpy()
    assert _compiled_count() == 0
    np.testing.assert_array_equal(_chain_gradient(x, n=6).numpy(), want)
