"""Randomized differential tests: random programs from the op table (tests/programs.py),
every interpreter against every other.

For each program: reverse and forward mode against central finite differences and
against each other (<u, J v> both ways), second derivatives through nested tapes
where the program is smooth; tape.jacobian, jacfwd and jacrev against each other; a
traced function's replay at a second point against eager there (the value, a gradient
taken inside, a JVP taken inside), in float64 and float32; vmap against a loop. Then
value-dependent control flow under `function` (every branch's replay equals eager;
guards="error" raises at the read), and threads mixing all of it with shared-variable
updates.

Hypothesis draws the programs. The default profile ("ci") is bounded to keep the suite
short; ``pytest tests/test_random_programs.py --hypothesis-profile=long`` runs
thousands (tests/conftest.py defines both).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import tapeflow as tf
from tapeflow.graph import TracingError

from op_table import ROWS
from programs import ROWS_F32, build, other_inputs

SEEDS = st.integers(0, 2**32 - 1)
STEPS = st.integers(1, 4)
INPUTS = st.integers(1, 2)


def _t(arrays, dtype=np.float64):
    return [tf.constant(np.asarray(a, dtype)) for a in arrays]


@given(seed=SEEDS, n_steps=STEPS, n_inputs=INPUTS)
def test_derivatives_against_finite_differences(seed, n_steps, n_inputs):
    program = build(seed, n_steps, n_inputs)
    order = 2 if program.smooth and n_steps <= 2 else 1
    tf.testing.check_grads(program, program.inputs, order=order, atol=1e-5, rtol=1e-5,
                           seed=seed % 1000)


@given(seed=SEEDS, n_steps=STEPS, n_inputs=INPUTS)
def test_jacobians_agree_in_every_mode(seed, n_steps, n_inputs):
    program = build(seed, n_steps, n_inputs)
    xs = _t(program.inputs)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        y = program(*xs)
    by_tape = tape.jacobian(y, xs)
    argnums = tuple(range(n_inputs))
    fwd = tf.jacfwd(program, argnums=argnums)(*xs)
    rev = tf.jacrev(program, argnums=argnums)(*xs)
    for t, f, r, x in zip(by_tape, fwd, rev, xs, strict=True):
        want = np.zeros(tuple(y.shape) + tuple(x.shape)) if t is None else np.asarray(t)
        np.testing.assert_allclose(np.asarray(f), want, rtol=1e-9, atol=1e-11)
        np.testing.assert_allclose(np.asarray(r), want, rtol=1e-9, atol=1e-11)


def _value_grad_jvp(program):
    def value(*xs):
        return program(*xs)

    def grad(*xs):
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            y = tf.reduce_sum(program(*xs))
        return tape.gradient(y, list(xs), unconnected_gradients="zero")

    def jvp(*xs):
        with tf.autodiff.ForwardAccumulator(list(xs), [tf.ones_like(x) for x in xs]) as acc:
            y = program(*xs)
        return acc.jvp(y, unconnected_gradients="zero")

    return value, grad, jvp


@given(seed=SEEDS, n_steps=STEPS, n_inputs=INPUTS, f32=st.booleans())
def test_replay_at_a_second_point_equals_eager(seed, n_steps, n_inputs, f32):
    dtype, tol = (np.float32, 1e-4) if f32 else (np.float64, 1e-12)
    program = build(seed, n_steps, n_inputs, ROWS_F32 if f32 else ROWS)
    first, second = _t(program.inputs, dtype), _t(other_inputs(program, seed), dtype)
    for fn in _value_grad_jvp(program):
        traced = tf.function(fn)
        traced(*first)
        want = fn(*second)
        got = traced(*second)
        for w, g in zip(tf.nest.flatten(want), tf.nest.flatten(got), strict=True):
            np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)
        # The call above ran the cold graph's plan; a hot graph runs generated code (of
        # the graph, and of the graph with its repeated steps rolled: NOTE(reroll))
        for way in traced.get_concrete_function(*second).executable.inner.ways():
            hot = way.compiled()
            for w, g in zip(tf.nest.flatten(want), hot(*[x._value for x in second]),
                            strict=True):
                np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=tol, atol=tol)


@given(seed=SEEDS, n_steps=STEPS, n_inputs=INPUTS)
def test_vmap_equals_a_loop(seed, n_steps, n_inputs):
    program = build(seed, n_steps, n_inputs)
    rng = np.random.default_rng(seed + 2)
    batch = [np.stack([x + 0.1 * rng.standard_normal(x.shape) for _ in range(3)])
             for x in program.inputs]
    got = tf.vmap(program)(*_t(batch))
    for b in range(3):
        want = program(*_t([x[b] for x in batch]))
        np.testing.assert_allclose(np.asarray(got)[b], np.asarray(want), rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- control flow
def _branchy(program, threshold):
    def f(*xs):
        y = program(*xs)
        # a value read: a guard when traced. The comparison is read, as a bool: a float
        # read would guard the sum's exact bits, and the replay of a few rows (pooling,
        # SSIM) differs from eager in the last bit, which would trace again
        if tf.reduce_sum(y) > threshold:
            return y * 2.0
        return tf.exp(y)
    return f


@given(seed=SEEDS, n_steps=STEPS)
def test_value_dependent_branches_replay_like_eager(seed, n_steps):
    program = build(seed, n_steps, 1)
    a, b = _t(program.inputs), _t(other_inputs(program, seed))
    sa, sb = float(tf.reduce_sum(program(*a))), float(tf.reduce_sum(program(*b)))
    threshold = (sa + sb) / 2  # a and b take different branches, unless the midpoint
    f = _branchy(program, threshold)  # rounds to one of sums that differ in the last bit
    traced = tf.function(f)
    for xs in (a, b, a, b):
        np.testing.assert_allclose(np.asarray(traced(*xs)), np.asarray(f(*xs)), rtol=1e-12)
    branches = len({sa > threshold, sb > threshold})
    assert traced.experimental_get_tracing_count() == branches
    with pytest.raises(TracingError, match="guards='error'"):
        tf.function(f, guards="error")(*a)


# ---------------------------------------------------------------- threads
@given(seed=SEEDS)
def test_threads_mixing_tapes_accumulators_traced_calls_and_variable_updates(seed):
    program = build(seed, 2, 1)
    x = _t(program.inputs)[0]
    value, grad, jvp = _value_grad_jvp(program)
    traced_grad = tf.function(grad)
    want = [np.asarray(value(x)), np.asarray(grad(x)[0]), np.asarray(jvp(x)[0])]
    counter = tf.Variable(0.0, dtype=tf.float64)
    bump = tf.function(lambda: counter.assign_add(1.0).read_value())
    barrier = threading.Barrier(8)
    errors = []

    def worker(i):
        try:
            barrier.wait()
            for k in range(3):
                got = [value(x), (traced_grad if k % 2 else grad)(x)[0], jvp(x)[0]]
                for g, w in zip(got, want, strict=True):
                    np.testing.assert_allclose(np.asarray(g), w, rtol=1e-12, atol=1e-12)
                counter.assign_add(1.0) if i % 2 else bump()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    assert float(counter) == 24.0
