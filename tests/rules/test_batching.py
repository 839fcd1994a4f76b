"""The batching rule of every primitive against a Python loop, from the op table
(tests/op_table.py).

For each row: all arguments batched (batch on axis 0, then on the last axis),
each argument batched alone (the others shared), vmap of the row's gradient and
JVP (batching of every VJP/JVP rule), and nested vmap.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import registry

from op_table import NONDIFF_ROWS, ROWS, package_primitives

B = 3


def _batched_inputs(row, seed=11):
    rng = np.random.default_rng(seed)
    examples = [row.make(rng) for _ in range(B)]
    return [np.stack([ex[i] for ex in examples]) for i in range(len(examples[0]))]


def _loop(fn, xs, axes):
    outs = []
    for b in range(B):
        args = [x if ax is None else np.take(x, b, axis=ax) for x, ax in zip(xs, axes)]
        outs.append(np.asarray(fn(*[tf.constant(a) for a in args])))
    return np.stack(outs)


def _check(fn, xs, axes):
    got = tf.vmap(fn, in_axes=tuple(axes))(*[tf.constant(x) for x in xs])
    np.testing.assert_allclose(np.asarray(got), _loop(fn, xs, axes), rtol=1e-12, atol=1e-12)


ALL_ROWS = ROWS + NONDIFF_ROWS


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: r.name)
def test_all_batched_axis0(row):
    xs = _batched_inputs(row)
    _check(row.fn, xs, [0] * len(xs))


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: r.name)
def test_all_batched_last_axis(row):
    xs = [np.moveaxis(x, 0, -1) for x in _batched_inputs(row)]
    _check(row.fn, xs, [x.ndim - 1 for x in xs])


@pytest.mark.parametrize("row", [r for r in ALL_ROWS if len(r.make(np.random.default_rng(0))) > 1],
                         ids=lambda r: r.name)
def test_one_argument_batched(row):
    xs = _batched_inputs(row)
    for i in range(len(xs)):
        shared = [x if j == i else x[0] for j, x in enumerate(xs)]
        _check(row.fn, shared, [0 if j == i else None for j in range(len(xs))])


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_vmap_of_gradient(row):
    """Every VJP rule batches: vmap of a per-example gradient equals the loop."""
    def grad_fn(*args):
        with tf.GradientTape() as tape:
            tape.watch(list(args))
            y = tf.reduce_sum(tf.sin(row.fn(*args)))
        return tape.gradient(y, list(args))

    xs = _batched_inputs(row)
    got = tf.vmap(grad_fn)(*[tf.constant(x) for x in xs])
    assert len(got) == len(xs)
    for i, g in enumerate(got):
        want = np.stack([np.asarray(grad_fn(*[tf.constant(x[b]) for x in xs])[i]) for b in range(B)])
        np.testing.assert_allclose(np.asarray(g), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_vmap_of_jvp(row):
    """Every JVP rule batches: vmap over tangents equals the loop."""
    xs0 = [tf.constant(x) for x in row.make(np.random.default_rng(3))]

    def jvp_fn(*ts):
        with tf.autodiff.ForwardAccumulator(xs0, list(ts)) as acc:
            y = row.fn(*xs0)
        return acc.jvp(y, unconnected_gradients="zero")

    ts = _batched_inputs(row, seed=5)
    got = tf.vmap(jvp_fn)(*[tf.constant(t) for t in ts])
    want = np.stack([np.asarray(jvp_fn(*[tf.constant(t[b]) for t in ts])) for b in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("row", ALL_ROWS, ids=lambda r: r.name)
def test_nested_vmap(row):
    rng = np.random.default_rng(2)
    grid = [[row.make(rng) for _ in range(2)] for _ in range(B)]
    xs = [np.stack([np.stack([g[i] for g in line]) for line in grid])
          for i in range(len(grid[0][0]))]
    got = tf.vmap(tf.vmap(row.fn))(*[tf.constant(x) for x in xs])
    want = np.stack([np.stack([np.asarray(row.fn(*[tf.constant(x[a, b]) for x in xs]))
                               for b in range(2)]) for a in range(B)])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)


def test_every_primitive_has_a_batching_rule():
    missing = sorted(name for name in package_primitives() if "batch" not in registry()[name].rules)
    assert not missing, f"primitives without a batching rule: {missing}"


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_vectorized_jacobian_equals_row_loop(row):
    """tape.jacobian's one batched backward pass against one pass per output element."""
    xs = [tf.constant(x) for x in row.make(np.random.default_rng(4))]
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(xs)
        y = row.fn(*xs)
    fast = tape.jacobian(y, xs)
    slow = tape.jacobian(y, xs, experimental_use_pfor=False)
    for f, s in zip(fast, slow, strict=True):
        assert (f is None) == (s is None)
        if f is not None:
            np.testing.assert_allclose(np.asarray(f), np.asarray(s), rtol=1e-13, atol=1e-14)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_vectorized_batch_jacobian_equals_loop(row):
    """batch_jacobian of the vmapped row (examples independent) against per-example jacobians."""
    xs = _batched_inputs(row)
    ts = [tf.constant(x) for x in xs]
    fn = row.fn
    if np.ndim(xs[0]) == 1:  # a scalar per example: batch_jacobian needs a source of rank >= 2
        ts[0] = tf.reshape(ts[0], [B, 1])
        fn = lambda x0, *rest: row.fn(tf.reshape(x0, []), *rest)  # noqa: E731
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(ts[0])
        y = tf.vmap(fn)(*ts)
        if np.ndim(y._value) == 1:  # a scalar per example: a target of rank >= 2, as TF
            y = tf.reshape(y, [B, 1])
    fast = tape.batch_jacobian(y, ts[0])
    slow = tape.batch_jacobian(y, ts[0], experimental_use_pfor=False)
    np.testing.assert_allclose(np.asarray(fast), np.asarray(slow), rtol=1e-13, atol=1e-14)
    for b in range(B):
        xb = tf.constant(xs[0][b])
        with tf.GradientTape() as t2:
            t2.watch(xb)
            yb = row.fn(xb, *[tf.constant(x[b]) for x in xs[1:]])
        want = np.asarray(t2.jacobian(yb, xb))
        np.testing.assert_allclose(np.asarray(fast)[b].reshape(want.shape), want,
                                   rtol=1e-12, atol=1e-13)
