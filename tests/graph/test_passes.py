"""Graph passes run on a traced graph before replay: folding, simplification, CSE, DCE.

Common subexpressions are merged, unused computation is dropped, ops on constants
only are folded, and variable reads around writes are kept; pass_stats counts the
nodes before and after. The passes keep the graph's meaning exactly: a node is folded
away only where its primitive's `simplify` rule says its output always equals one
of its inputs, NaNs and signed zeros included (x * 1. is x; x + 0. is not, since
-0. + 0. is +0.).
"""

from __future__ import annotations

import numpy as np
import pytest
from graph_helpers import X0, _c, _close

import tapeflow as tf
from tapeflow.graph.replay import interpret


def _op_types(fn, *args):
    return [op.type for op in tf.function(fn).get_concrete_function(*args).graph.get_operations()]


def test_cse_merges_repeated_subexpression():
    def f(x):
        return tf.sin(x) * 2.0 + tf.sin(x)

    types = _op_types(f, _c(1.0, 2.0))
    assert types.count("sin") == 1
    traced = tf.function(f)
    traced(_c(1.0, 2.0))
    _close(traced(_c(3.0, 4.0)), 3 * np.sin([3.0, 4.0]))


def test_ops_on_equal_python_numbers_are_merged():
    """NOTE(equal-constants): `1 - y` written twice reads two constants of equal bits; the
    subtractions are one. 0.0 and -0.0 differ in their bits: those products stay two, and
    a tensor from outside that is still alive keeps its own slot (a tape may watch it)."""
    def f(x):
        y = tf.tanh(x)
        return (1.0 - y) * x + (1.0 - y) + x * 0.0 - x * -0.0

    types = _op_types(f, _c(1.0, 2.0))
    assert types.count("subtract") == 2  # the two `1 - y` as one, and the last `-`
    assert types.count("multiply") == 3
    traced = tf.function(f)
    traced(_c(1.0, 2.0))
    x = np.array([3.0, -4.0])
    want = (1.0 - np.tanh(x)) * x + (1.0 - np.tanh(x)) + x * 0.0 - x * -0.0
    got = traced(_c(3.0, -4.0)).numpy()
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got), np.signbit(want))

    one_a, one_b = tf.constant(1.0, tf.float64), tf.constant(1.0, tf.float64)

    def g(x):
        return (one_a - x) * (one_b - x)

    assert _op_types(g, _c(1.0, 2.0)).count("subtract") == 2
    traced_g = tf.function(g)
    x = _c(0.5, 2.0)
    traced_g(x)
    with tf.GradientTape() as tape:
        tape.watch([one_a, one_b])
        out = tf.reduce_sum(traced_g(x))
    ga, gb = tape.gradient(out, [one_a, one_b])
    # d/da = sum(b - x), d/db = sum(a - x): merged, a would get both and b None
    np.testing.assert_allclose([ga.numpy(), gb.numpy()], [-0.5, -0.5], rtol=1e-12)


def test_dce_removes_unused_computation():
    def f(x):
        unused = tf.exp(x) * tf.cos(x)  # noqa: F841
        return tf.sin(x)

    types = _op_types(f, _c(1.0, 2.0))
    assert "exp" not in types and "cos" not in types
    assert types == ["sin"]


def test_constant_only_op_is_folded():
    def f(x):
        return x * tf.cos(tf.constant(np.array([1.0, 2.0])))

    types = _op_types(f, _c(1.0, 2.0))
    assert "cos" not in types
    traced = tf.function(f)
    traced(_c(1.0, 2.0))
    _close(traced(_c(3.0, 4.0)), np.array([3.0, 4.0]) * np.cos([1.0, 2.0]))


def test_a_folded_transpose_is_stored_contiguous():
    # Folding keeps a constant the replay reads at every call: a transpose's strided view
    # is copied once into contiguous memory (products read it faster), same values.
    w = np.arange(12.0).reshape(3, 4)
    f = tf.function(lambda x: tf.matmul(tf.transpose(tf.constant(w)), x))
    x = tf.constant(np.ones((3, 2)))
    np.testing.assert_array_equal(f(x).numpy(), w.T @ np.ones((3, 2)))
    g = f.get_concrete_function(x).graph
    folded = [v for v in g.constants.values() if np.shape(v) == (4, 3)]
    assert folded and all(v.flags.c_contiguous for v in folded)
    np.testing.assert_array_equal(folded[0], w.T)


def test_pass_stats_before_at_least_after():
    def f(x):
        unused = tf.exp(x)  # noqa: F841
        return tf.sin(x) + tf.sin(x) + tf.cos(tf.constant(1.0, dtype=tf.float64))

    cf = tf.function(f).get_concrete_function(_c(1.0, 2.0))
    stats = cf.pass_stats
    assert stats["before"] >= stats["after"]
    assert stats["before"] > stats["after"]
    assert stats["after"] == cf.graph.count()


def test_passes_keep_variable_reads_around_writes():
    v = tf.Variable(np.array(1.0))

    @tf.function
    def f(x):
        a = v * 1.0
        v.assign(x)
        return a + v * 1.0

    _close(f(tf.constant(np.array(3.0))), 4.0)
    _close(f(tf.constant(np.array(5.0))), 8.0)


def test_passes_keep_the_gradient_graph_small():
    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(tf.sin(x))
        return tape.jacobian(y, x)

    stats = tf.function(f).get_concrete_function(tf.constant(X0)).pass_stats
    assert stats["after"] <= stats["before"]


# ---------------------------------------------------------------------------------------
# Exactness: a node is folded only where its output always equals an input bit for bit
# ---------------------------------------------------------------------------------------

X_SIGNED = np.array([-0.0, 0.0, 1.0, np.nan])   # float64: both signed zeros and a NaN
F64 = tf.float64


def _assert_same_bits(actual, expected):
    """Same dtype, shape and bits: NaN where NaN, and the sign of every zero."""
    a, e = np.asarray(actual), np.asarray(expected)
    assert (a.dtype, a.shape) == (e.dtype, e.shape), (a.dtype, a.shape, e.dtype, e.shape)
    np.testing.assert_array_equal(a, e)
    if a.dtype.kind == "f":
        np.testing.assert_array_equal(np.signbit(a), np.signbit(e), err_msg="sign of zero")
    assert a.tobytes() == e.tobytes(), (a, e)


def _check_passes(fn, x, kept):
    """Trace `fn` at `x`; check that the passes left exactly the primitive nodes `kept`,
    and that the fast replay and the interpreter both give eager `fn(x)` bit for bit."""
    cf = tf.function(fn).get_concrete_function(x)
    assert [op.type for op in cf.graph.get_operations()] == kept
    assert cf.graph.count() == len(kept)
    eager = fn(x)
    _assert_same_bits(cf(x), eager)
    _assert_same_bits(interpret(cf.graph, [x])[0], eager)
    return cf, eager


def _check_folded(fn, x):
    """`fn` binds one primitive whose output is `x` exactly: traced, then folded away."""
    cf, eager = _check_passes(fn, x, kept=[])
    assert cf.pass_stats == {"before": 1, "after": 0}
    _assert_same_bits(eager, x)


@pytest.mark.parametrize("fn", [
    lambda x: x + 0.,
    lambda x: 0. + x,
    lambda x: x + tf.constant(0., dtype=F64),
    lambda x: tf.add(tf.constant(0., dtype=F64), x),
], ids=["x+0.", "0.+x", "x+constant(0.)", "add(constant(0.),x)"])
def test_adding_plus_zero_is_kept_and_replays_exactly(fn):
    x = tf.constant(X_SIGNED)
    _, eager = _check_passes(fn, x, kept=["add"])
    # the input tells the two apart: -0. + 0. is +0., not x
    assert np.signbit(X_SIGNED[0]) and not np.signbit(np.asarray(eager)[0])


@pytest.mark.parametrize("fn", [
    lambda x: x + tf.constant(-0., dtype=F64),
    lambda x: tf.constant(-0., dtype=F64) + x,
    lambda x: -0. + x,
    lambda x: x + (-0.),
    lambda x: x + tf.constant([-0., -0., -0., -0.], dtype=F64),
], ids=["x+constant(-0.)", "constant(-0.)+x", "-0.+x", "x+(-0.)", "x+[-0.]*4"])
def test_adding_minus_zero_is_folded_and_exact(fn):
    _check_folded(fn, tf.constant(X_SIGNED))


@pytest.mark.parametrize("fn", [
    lambda x: x - 0.,
    lambda x: x - tf.constant(0., dtype=F64),
], ids=["x-0.", "x-constant(0.)"])
def test_subtracting_plus_zero_is_folded_and_exact(fn):
    _check_folded(fn, tf.constant(X_SIGNED))


@pytest.mark.parametrize("fn", [
    lambda x: x - tf.constant(-0., dtype=F64),
    lambda x: x - (-0.),
    lambda x: 0. - x,
], ids=["x-constant(-0.)", "x-(-0.)", "0.-x"])
def test_subtracting_minus_zero_or_from_zero_is_kept_and_replays_exactly(fn):
    _check_passes(fn, tf.constant(X_SIGNED), kept=["subtract"])


@pytest.mark.parametrize("one, other, kind", [
    (lambda x: x * 1., lambda x: x * 3., "multiply"),
    (lambda x: 1. * x, lambda x: 3. * x, "multiply"),
    (lambda x: x * tf.constant(1., dtype=F64), lambda x: x * tf.constant(-1., dtype=F64),
     "multiply"),
    (lambda x: x / 1., lambda x: x / 2., "divide"),
    (lambda x: x / tf.constant(1., dtype=F64), lambda x: x / tf.constant(2., dtype=F64),
     "divide"),
    (lambda x: x ** 1., lambda x: x ** 2., "pow"),
], ids=["x*1.", "1.*x", "x*constant(1.)", "x/1.", "x/constant(1.)", "x**1."])
def test_one_as_factor_divisor_or_exponent_is_folded_and_exact(one, other, kind):
    x = tf.constant(X_SIGNED)
    _check_folded(one, x)                       # NaN stays NaN, -0. stays -0.
    _check_passes(other, x, kept=[kind])        # the same op with another constant stays


def test_integer_plus_zero_and_times_one_are_folded():
    x = tf.constant(np.array([-3, 0, 5], dtype=np.int64))
    for fn in (lambda x: x + 0, lambda x: 0 + x, lambda x: x - 0, lambda x: x * 1):
        _check_folded(fn, x)
    _check_passes(lambda x: x + 1, x, kept=["add"])


def test_neutral_constant_that_broadcasts_x_is_kept():
    x = tf.constant(X_SIGNED)
    _check_passes(lambda x: x + tf.constant([[-0.]], dtype=F64), x, kept=["add"])  # [1, 4]
    _check_passes(lambda x: x * tf.ones([2, 4], dtype=F64), x, kept=["multiply"])  # [2, 4]


@pytest.mark.filterwarnings("ignore:invalid value encountered")
def test_complex_times_one_is_kept():
    # (inf+0j) * (1+0j) is inf+nanj, not inf+0j
    x = tf.constant(np.array([np.inf + 0j, -0.0 + 1j, 2.0 - 3j]))
    _, eager = _check_passes(lambda x: x * tf.constant(1 + 0j, dtype=tf.complex128), x,
                             kept=["multiply"])
    assert np.isnan(np.asarray(eager)[0].imag)


def test_reshape_transpose_cast_to_the_same_shape_or_dtype_leave_no_node():
    x = tf.constant(np.array([[-0.0, 0.0, np.nan], [1.0, -2.0, np.inf]]))
    _check_passes(lambda x: tf.reshape(x, [2, 3]), x, kept=[])
    _check_passes(lambda x: tf.transpose(x, [0, 1]), x, kept=[])
    _check_passes(lambda x: tf.cast(x, F64), x, kept=[])
    _check_passes(lambda x: tf.identity(x), x, kept=[])
    _check_passes(lambda x: tf.reshape(x, [3, 2]), x, kept=["reshape"])
    _check_passes(lambda x: tf.transpose(x, [1, 0]), x, kept=["transpose"])
    _check_passes(lambda x: tf.cast(x, tf.float32), x, kept=["cast"])


@pytest.mark.parametrize("name, params", [
    ("reshape", {"shape": (2, 3)}),
    ("transpose", {"perm": (0, 1)}),
    ("cast", {"dtype": np.dtype(np.float64)}),
    ("broadcast_to", {"shape": (2, 3)}),
    ("identity", {}),
], ids=["reshape", "transpose", "cast", "broadcast_to", "identity"])
def test_shape_and_dtype_preserving_nodes_are_folded(name, params):
    """Bound directly, as derivative and batching rules bind them: the public ops return
    their input unchanged before making any node, so only this reaches the passes."""
    prim = tf.core.registry()[name]
    x = tf.constant(np.array([[-0.0, 0.0, np.nan], [1.0, -2.0, np.inf]]))
    _check_folded(lambda x: tf.core.bind(prim, x, **params), x)
