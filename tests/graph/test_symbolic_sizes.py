"""Sizes as symbols in a size-generic trace (graph/dims.py, NOTE(symbolic-sizes)): what
an op computes from the sizes of None dimensions is kept as an expression and computed
again when the graph runs, and a decision on them is a check the replay must pass.
Never is an int taken for a size by its value alone."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.dims import Dim, decided
from tapeflow.graph.ir import SizeExpr, SizeOf, resolve

S = tf.TensorSpec


def _calls(f, fn, sizes, shape=lambda n: (n, 2)):
    rng = np.random.default_rng(1)
    for n in sizes:
        x = tf.constant(rng.standard_normal(shape(n)))
        np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=1e-13, atol=1e-13)


def test_a_split_of_a_none_axis_holds_n_over_3_at_every_size():
    # At 6 and 12 rows the middle piece starts at 2 and 4: the sizes of the other axis.
    # Taken for that axis's size by value, the graph gave rows 4:8 at 9 rows (not 3:6).
    fn = lambda x: tf.split(x, 3)[1] * 2.0  # noqa: E731
    f = tf.function(fn, input_signature=[S([None, None], tf.float64)])
    _calls(f, fn, (6, 12, 9, 15, 3), shape=lambda n: (n, n // 3 + 1))
    assert f.experimental_get_tracing_count() == 2
    cf = f.get_concrete_function(tf.zeros([6, 3], tf.float64))
    assert cf.serves_all_sizes and "floordiv(size(%0, 0), 3)" in str(cf.graph)


def test_a_decision_an_op_makes_on_sizes_is_checked_at_each_new_size():
    # split needs a multiple of 3: the trace at 6 holds only where n % 3 == 0, so 7 rows
    # trace again, and raise as eagerly.
    fn = lambda x: tf.split(x, 3)[0] + 1.0  # noqa: E731
    f = tf.function(fn, input_signature=[S([None], tf.float64)])
    _calls(f, fn, (6, 9, 12), shape=lambda n: (n,))
    with pytest.raises(tf.errors.InvalidArgumentError, match="divisor of the length 7"):
        f(tf.zeros([7], tf.float64))
    assert "size_check" in str(f.get_concrete_function(tf.zeros([6], tf.float64)).graph)


@pytest.mark.parametrize("n", [5, 7, 9, 11])
def test_same_padding_with_a_stride_is_an_expression_of_the_size(n):
    # SAME pads of stride 2 depend on the size's parity: an expression, exact at odd sizes
    # that the two traces (4 and 8, both even) never saw.
    k = tf.constant(np.linspace(-1, 1, 3).reshape(3, 1, 1))
    fn = lambda x: tf.nn.conv1d(x, k, stride=2, padding="SAME")  # noqa: E731
    f = tf.function(fn, input_signature=[S([2, None, 1], tf.float64)])
    _calls(f, fn, (4, 8, n), shape=lambda m: (2, m, 1))


def test_a_loop_body_checks_its_decisions_before_it_runs_at_new_sizes():
    # The body's matmul compares the sizes of its operands: a body has no guards, so the
    # comparison is kept with its graph and checked when the loop runs at other sizes.
    w = tf.constant(np.linspace(-1, 1, 6).reshape(2, 3))

    def fn(x):
        totals = tf.scan(lambda c, row: c + tf.reduce_sum(tf.matmul(row[None, :], w)), x,
                         initializer=tf.constant(0.0, tf.float64))
        return totals[-1]

    f = tf.function(fn, input_signature=[S([None, 2], tf.float64)])
    _calls(f, fn, (3, 5, 4, 7))
    assert f.experimental_get_tracing_count() == 2


def test_a_layer_state_of_the_batch_size_is_a_fill_of_it():
    # An LSTM's zero initial state, its gradient's zeros, a dropout mask: fills of sizes
    # the graph reads when it runs, not constants of the traced batch.
    tf.random.set_seed(2)
    lstm = tf.keras.Sequential([tf.keras.layers.LSTM(3), tf.keras.layers.Dense(1)])
    lstm(np.zeros((1, 4, 2), np.float32))

    def fn(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = tf.reduce_sum(lstm(x) ** 2)
        return tape.gradient(y, x)

    f = tf.function(fn, input_signature=[S([None, 4, 2], tf.float32)])
    rng = np.random.default_rng(0)
    for n in (3, 5, 2, 7):
        x = tf.constant(rng.standard_normal((n, 4, 2)).astype(np.float32))
        np.testing.assert_allclose(f(x).numpy(), fn(x).numpy(), rtol=2e-5, atol=1e-6)
    assert f.experimental_get_tracing_count() == 2


def test_size_expressions_compute_as_python_did():
    n = SizeOf(0, 1)
    expr = SizeExpr("add", (SizeExpr("floordiv", (SizeExpr("neg", (n,)), 2)), 7))
    for size in (2, 3, 8, 11):
        assert resolve(expr, lambda slot, axis: size) == (-size) // 2 + 7
    check = SizeExpr("eq", (SizeExpr("mod", (n, 3)), 0))
    assert [resolve(check, lambda s, a, v=v: v) for v in (3, 4, 6)] == [True, False, True]


def test_what_the_call_key_decides_is_no_check():
    open_axis = lambda s: s.slot == 0  # noqa: E731 - a None dimension of an input: >= 2
    n, m, inner = SizeOf(0, 0), SizeOf(0, 1), SizeOf(5, 0)
    assert decided(SizeExpr("eq", (n, 1)), open_axis)        # n >= 2
    assert decided(SizeExpr("lt", (n, 2)), open_axis)
    assert decided(SizeExpr("gt", (1, n)), open_axis)        # mirrored
    assert decided(SizeExpr("eq", (n, m)), open_axis)        # the key's classes
    assert decided(SizeExpr("lt", (inner, 0)), open_axis)    # a size is never negative
    assert decided(SizeExpr("ne", (SizeExpr("mul", (n, m)), 0)), open_axis)
    assert not decided(SizeExpr("eq", (n, 2)), open_axis)
    assert not decided(SizeExpr("eq", (inner, 1)), open_axis)
    assert not decided(SizeExpr("lt", (n, m)), open_axis)


def test_a_size_kept_past_its_trace_is_a_plain_int():
    kept = []

    def fn(x):
        kept.append(tf.ops.structural.shape_of(x)[0])
        return x * 2.0

    f = tf.function(fn, input_signature=[S([None], tf.float64)])
    f(tf.zeros([3], tf.float64))
    (n,) = kept
    assert type(n) is Dim and not n.tracer.sizing
    assert type(n + 1) is int and n + 1 == 4 and (n == 3) is True


def test_a_saved_size_generic_graph_keeps_its_expressions_and_checks(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda x: tf.split(x, 3)[1] * 2.0, input_signature=[S([None], tf.float64)])
    for n in (6, 12):
        m.f(tf.zeros([n], tf.float64))
    tf.saved_model.save(m, tmp_path)
    loaded = tf.saved_model.load(tmp_path)
    x = np.arange(9.0)
    np.testing.assert_array_equal(loaded.f(tf.constant(x)).numpy(), x[3:6] * 2.0)
    with pytest.raises(ValueError, match="sizes decide otherwise"):
        loaded.f(tf.zeros([7], tf.float64))  # no Python to trace the size it cannot serve


_LAYERS = {
    "Dense": (lambda L: L.Dense(3), (5,)),
    "Reshape": (lambda L: L.Reshape((2, 3)), (6,)),
    "Conv2D_strided_same": (lambda L: L.Conv2D(2, 3, strides=2, padding="same"), (5, 5, 1)),
    "BatchNormalization": (lambda L: L.BatchNormalization(), (4,)),
    "LSTM": (lambda L: L.LSTM(3), (4, 2)),
    "Conv2DTranspose": (lambda L: L.Conv2DTranspose(2, 3, strides=2), (3, 3, 1)),
    "MaxPooling2D": (lambda L: L.MaxPooling2D(2), (4, 4, 1)),
    "TimeDistributed": (lambda L: L.TimeDistributed(L.Dense(2)), (3, 4)),
}


@pytest.mark.parametrize("name", sorted(_LAYERS))
def test_the_layers_users_train_serve_every_batch_size_from_two_traces(name):
    make, shape = _LAYERS[name]
    tf.random.set_seed(1)
    layer = make(tf.keras.layers)

    def loss_and_grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(layer(x, training=True) ** 2)
        return loss, tape.gradient(loss, x)

    layer(tf.zeros((1,) + shape))  # built outside the trace
    f = tf.function(loss_and_grad, input_signature=[S((None,) + shape, tf.float32)])
    rng = np.random.default_rng(3)
    for n in (2, 3, 5, 7, 4):
        x = tf.constant(rng.standard_normal((n,) + shape).astype(np.float32))
        for got, want in zip(f(x), loss_and_grad(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=1e-5)
    assert f.experimental_get_tracing_count() == 2


def test_the_retracing_reason_names_a_failed_size_check():
    f = tf.function(lambda x: tf.nn.max_pool1d(x, 3, 2, "SAME"),
                    input_signature=[S([1, None, 1], tf.float32)])
    for n in (4, 8, 5):  # the pool's padding decides on the size's parity
        np.testing.assert_array_equal(f(tf.ones([1, n, 1])).numpy(),
                                      tf.nn.max_pool1d(tf.ones([1, n, 1]), 3, 2, "SAME").numpy())
    assert any("a size check failed" in reason for reason in f._retrace_reasons)


def test_broadcasting_gradients_decide_nothing_a_size_of_1_decides_otherwise():
    # A gradient sums over the axes an input was broadcast along; whether shapes are equal
    # is no decision (a sum over an axis of 1, a reshape to the shape a value has, change
    # nothing), and a symbol equal to the output's size is no broadcast from 1: the
    # checks left hold at size 1 too, where a dataset loop's body runs a last batch of 1
    # (but for a batch axis a reduction keeps, 1 where the output's is not: checked).
    @tf.function(input_signature=[S([None, 3], tf.float64), S([None, 1], tf.float64),
                                  S([1, 3], tf.float64)])
    def f(x, c, b):
        with tf.GradientTape() as tape:
            tape.watch([x, c, b])
            y = tf.reduce_sum(tf.sin(x * b + c) * tf.reduce_mean(x, axis=1, keepdims=True))
        return tape.gradient(y, [x, c, b])

    def eager(x, c, b):
        return f.python_function(x, c, b)

    rng = np.random.default_rng(2)
    for n in (4, 7, 5, 1):
        args = [tf.constant(rng.standard_normal(s)) for s in ((n, 3), (n, 1), (1, 3))]
        for a, e in zip(f(*args), eager(*args)):
            np.testing.assert_allclose(a.numpy(), e.numpy(), rtol=1e-13, atol=1e-13)
    zeros = [tf.zeros(s, tf.float64) for s in ((4, 3), (4, 1), (1, 3))]
    graph = f.get_concrete_function(*zeros).graph
    n = graph.avals[graph.inputs[0]][0][0]  # the batch the graph was traced at
    assert n != 1
    checks = [node.params["check"] for node in graph.nodes
              if getattr(getattr(node, "prim", None), "name", None) == "size_check"]
    for check in checks:  # each decides at size 1 as it did when traced
        def size(slot, axis, one=False):
            d = graph.avals[slot][0][axis]
            return 1 if one and d == n else d
        assert resolve(check, size) == resolve(check, lambda s, a: size(s, a, True)), check
