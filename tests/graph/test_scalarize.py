"""NOTE(scalarize) in tapeflow/graph/scalarize.py and NOTE(python-floats) in
tapeflow/graph/replay.py: values of a few elements held as scalars, float64 arithmetic
on Python floats. Each program is traced and its graph rewritten; the rewritten graph's
replay must give the traced graph's values bit for bit (the same IEEE operations, element
by element), signed zeros, infinities and NaNs included, on both replay tiers (the
conftest's plan interpreter and generated code)."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.ir import Node
from tapeflow.graph.replay import Replay
from tapeflow.graph.scalarize import MAX_ELEMENTS, MIN_SPLIT, scalarize


def _rhs(y, p):
    u, v = y[0], y[1]
    return tf.stack([p[0] * u - p[1] * u * v, p[2] * u * v - p[3] * v])


def ode_gradient(y0, p):
    """The suite's RK4 workload in small: (2,) states, (4,) parameters, a tape."""
    with tf.GradientTape() as tape:
        tape.watch([y0, p])
        y = y0
        for _ in range(6):
            k1 = _rhs(y, p)
            k2 = _rhs(y + 0.05 * k1, p)
            y = y + 0.1 * (k1 + k2) / 2.0
        loss = tf.reduce_sum(y * y)
    return tape.gradient(loss, [y0, p])


def mixed_shapes(a, s):
    """(2, 2) arrays, transposes, broadcasts against a scalar and a row, reshapes, slices,
    concat and split, negation and division."""
    for _ in range(5):
        b = tf.transpose(a) * s - a / (s + 3.0)
        row = tf.reshape(b, [4])[1:3]
        top, bottom = tf.split(tf.concat([row, -row], axis=0), 2)
        a = b + tf.reshape(tf.concat([top, bottom * s], axis=0), [2, 2]) * a[0]
    return a


def with_array_ops(x):
    """Small values beside ufuncs that stay (sin, a reduction) and a product."""
    for _ in range(3):
        x = tf.sin(x)
        for _ in range(6):
            x = (x * 0.5 + 1.0) * x - x / 3.0
    return tf.reduce_sum(x) + tf.matmul(tf.reshape(x, [1, 3]), tf.reshape(x, [3, 1]))[0, 0]


def sine_between_steps(x):
    for _ in range(MIN_SPLIT):
        x = tf.sin(x * 0.5 + 1.0) * x - x / 3.0
    return x


CASES = [
    ("ode", ode_gradient, lambda: (tf.constant([1.02, 0.51]), tf.constant([1.5, 1.0, 1.0, 3.0]))),
    ("mixed", mixed_shapes, lambda: (tf.constant([[0.3, -1.2], [2.0, -0.0]]), tf.constant(0.7))),
    ("array ops", with_array_ops, lambda: (tf.constant([0.1, -0.4, 2.5]),)),
]


def _graph(fn, args):
    return tf.function(fn).get_concrete_function(*args).graph


def _same(a, b):
    """Bit for bit, but a NaN's sign: which operand's NaN an operation on two NaNs passes
    on is not IEEE's to say, and NumPy's vector loops may swap the operands."""
    a, b = np.asarray(a), np.asarray(b)
    assert a.shape == b.shape and a.dtype == b.dtype
    nan = np.isnan(a)
    np.testing.assert_array_equal(nan, np.isnan(b))
    assert a[~nan].tobytes() == b[~nan].tobytes(), (a, b)


def _replay_both(g, arrays):
    return Replay(g)(*arrays), Replay(scalarize(g))(*arrays)


@pytest.mark.parametrize("name, fn, make", CASES, ids=[c[0] for c in CASES])
def test_the_rewritten_graph_gives_the_graphs_values_bit_for_bit(name, fn, make):
    args = make()
    g = _graph(fn, args)
    s = scalarize(g)
    assert s is not g
    arrays = [a.numpy() for a in args]
    for _ in range(2):  # the second call runs the generated code on the compiled tier
        want, got = _replay_both(g, arrays)
        for w, v in zip(want, got, strict=True):
            _same(w, v)
    # What is left of the small arrays: no elementwise op on them, few movements.
    small = [n for n in s.nodes if type(n) is Node and n.prim.impl in (np.add, np.multiply)
             and 1 < np.prod(s.avals[n.outputs[0]][0]) <= MAX_ELEMENTS]
    assert not small


@pytest.mark.parametrize("special", [np.inf, -np.inf, np.nan, -0.0, 1e308, 5e-324])
def test_special_values_pass_through_the_scalars_as_through_numpy(special):
    args = (tf.constant([[special, -1.2], [2.0, -0.0]]), tf.constant(0.7))
    _replays_agree(_graph(mixed_shapes, args), args)


def _replays_agree(g, args):
    """The graph's replay and its rewrite's, twice (the compiled tier's second call runs
    generated code), NumPy's warnings off."""
    arrays = [a.numpy() for a in args]
    with np.errstate(all="ignore"):
        for _ in range(2):
            want, got = _replay_both(g, arrays)
            _same(want[0], got[0])
    return arrays


def _divides(x, d):
    for _ in range(MIN_SPLIT):
        x = x / d + x * 0.5
    return x


@pytest.mark.parametrize("d", [0.0, -0.0, 2.0])
def test_a_division_by_zero_gives_numpys_inf_and_nan(d):
    """Python floats raise ZeroDivisionError where NumPy gives inf or NaN: the generated
    code then reruns the call on NumPy scalars (NOTE(python-floats))."""
    args = (tf.constant([1.5, 0.0, -2.0], tf.float64), tf.constant(d, tf.float64))
    g = _graph(_divides, args)
    arrays = _replays_agree(g, args)
    assert "except ZeroDivisionError" in Replay(scalarize(g)).compiled().source
    if d == 0.0:
        s = Replay(scalarize(g))
        s.compiled()
        with np.errstate(divide="raise", invalid="raise"), pytest.raises(FloatingPointError):
            s(*arrays)


def test_float32_stays_float32():
    args = (tf.constant([1.02, 0.51], tf.float32), tf.constant([1.5, 1.0, 1.0, 3.0], tf.float32))
    g = _graph(ode_gradient, args)
    s = scalarize(g)
    assert s is not g
    arrays = [a.numpy() for a in args]
    for _ in range(2):
        want, got = _replay_both(g, arrays)
        for w, v in zip(want, got, strict=True):
            _same(w, v)
            assert v.dtype == np.float32


def test_a_variable_written_between_scalar_reads():
    """A rank-0 variable read as a Python float, assigned, and read again: the second read
    sees the new value (a converted copy is never kept for a variable)."""
    v = tf.Variable(1.25, dtype=tf.float64)

    def f(x):
        for _ in range(MIN_SPLIT):
            x = x * v + 0.5
        v.assign(v * 2.0)
        for _ in range(MIN_SPLIT):
            x = x * v - 0.25
        return x

    x = tf.constant([0.5, -1.0], tf.float64)
    traced = tf.function(f)
    for _ in range(3):
        v.assign(1.25)
        want = f(x).numpy()
        v.assign(1.25)
        got = traced(x).numpy()
        _same(want, got)
    g = traced.get_concrete_function(x).graph
    assert scalarize(g) is not g
    for _ in range(2):
        v.assign(1.25)
        want = Replay(g)(x.numpy())[0]
        v.assign(1.25)
        _same(want, Replay(scalarize(g))(x.numpy())[0])


def test_a_small_variable_written_between_its_element_reads():
    """Elements of a (2,) variable taken apart before an assignment are not reused after
    it: the reads after it see the new value."""
    v = tf.Variable([1.25, -0.5], dtype=tf.float64)

    def f(x):
        for _ in range(MIN_SPLIT):
            x = x * v + v[0]
        v.assign(v * 2.0 + 1.0)
        for _ in range(MIN_SPLIT):
            x = x * v - v[1]
        return x

    x = tf.constant([0.5, -1.0], tf.float64)
    g = tf.function(f).get_concrete_function(x).graph
    assert scalarize(g) is not g
    for _ in range(2):
        v.assign([1.25, -0.5])
        want = Replay(g)(x.numpy())[0]
        assert v.numpy().tolist() == [3.5, 0.0]
        v.assign([1.25, -0.5])
        _same(want, Replay(scalarize(g))(x.numpy())[0])
        assert v.numpy().tolist() == [3.5, 0.0]
    v.assign([1.25, -0.5])
    _same(want, f(x).numpy())


def test_what_is_left_alone():
    """Arrays above MAX_ELEMENTS, integers, graphs with fewer than MIN_SPLIT nodes to split
    and rewrites that would not pay come back as they are."""
    def chain(x):
        for _ in range(MIN_SPLIT + 4):
            x = x * 3 + x
        return x

    big = _graph(chain, (tf.constant(np.ones(MAX_ELEMENTS + 1)),))
    assert scalarize(big) is big
    ints = _graph(chain, (tf.constant([1, 2], tf.int64),))
    assert scalarize(ints) is ints
    short = _graph(lambda x: x * 2.0 + 1.0, (tf.constant([1.0, 2.0]),))
    assert scalarize(short) is short
    # Taken apart after each sine and put together for the next: more calls, not fewer.
    sines = _graph(sine_between_steps, (tf.constant([1.0, 2.0, 3.0]),))
    assert scalarize(sines) is sines
    small = _graph(chain, (tf.constant([1.0, 2.0]),))
    assert scalarize(small) is not small


def test_a_traced_function_gives_its_values_on_every_call():
    """Through `Fastest`, which times the replays (as traced, as scalars, loops rolled) on
    the first calls: every call gives eager's values."""
    args = (tf.constant([1.02, 0.51]), tf.constant([1.5, 1.0, 1.0, 3.0]))
    traced = tf.function(ode_gradient)
    want = [g.numpy() for g in ode_gradient(*args)]
    for _ in range(20):
        for w, v in zip(want, traced(*args), strict=True):
            np.testing.assert_allclose(v.numpy(), w, rtol=1e-13)
    (line,) = traced.experimental_execution_report()
    assert "small arrays as scalars" in line


def test_a_division_by_zero_in_a_graph_that_writes_a_variable():
    """The rerun on NumPy scalars takes the variables' locks again (they are reentrant)
    and writes each variable once, as the graph does."""
    v = tf.Variable([0.5, 2.0], dtype=tf.float64)

    def f(x, d):
        for _ in range(MIN_SPLIT):
            x = x / d + x * 0.5
        v.assign(v + x)
        return x

    args = (tf.constant([1.5, -2.0], tf.float64), tf.constant(0.0, tf.float64))
    traced = tf.function(f)
    with np.errstate(all="ignore"):
        v.assign([0.5, 2.0])
        want, after = f(*args).numpy(), v.numpy()
        for _ in range(3):
            v.assign([0.5, 2.0])
            _same(want, traced(*args).numpy())
            _same(after, v.numpy())
        g = traced.get_concrete_function(*args).graph
        assert "except ZeroDivisionError" in Replay(scalarize(g)).compiled().source
        for _ in range(2):
            v.assign([0.5, 2.0])
            _same(want, Replay(scalarize(g))(*[a.numpy() for a in args])[0])
            _same(after, v.numpy())
