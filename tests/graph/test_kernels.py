"""NOTE(loop-kernels) in tapeflow/graph/kernels.py: a rolled loop compiled by Numba gives
the NumPy replay's values (within a few ulps: Numba's transcendentals and sums are its
own), keeps the graph's dtypes, compiles once whatever its inputs' flags, and leaves
loops it cannot compile to the NumPy scan. Every kernel rule (and the ufunc default) is
checked against the primitive's impl on one-node loop bodies."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.catalog import rule
from tapeflow.core import registry
from tapeflow.graph import kernels
from tapeflow.graph.executables import Fastest, plan
from tapeflow.graph.hoist import hoist
from tapeflow.graph.replay import Replay
from tapeflow.graph.reroll import reroll

numba = pytest.importorskip("numba")

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "benchmarks"))
from suite import char_lstm  # noqa: E402


def _ways(fn, *args):
    """(the NumPy replay's outputs, the kernels' outputs, the kernels) of fn's graph with
    its loops rolled and hoisted."""
    g = hoist(reroll(tf.function(fn).get_concrete_function(*args).graph))
    arrays = [a.numpy() for a in args]
    ks = kernels.loop_kernels(g)
    return Replay(g)(*arrays), Replay(g, ks)(*arrays), ks


def _close(a, b, rtol):
    for x, y in zip(a, b, strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_allclose(x, y, rtol=rtol, atol=rtol * np.max(np.abs(x)))


def _char_lstm_gradient(main, extra, state, sequence):
    loss = char_lstm.loss_of(char_lstm._Ops(sigmoid=tf.sigmoid, tanh=tf.tanh, exp=tf.exp,
                                            log=tf.math.log, sum=tf.reduce_sum,
                                            rows=tf.unstack))
    with tf.GradientTape() as tape:
        tape.watch([main, extra])
        value = loss(main, extra, state, sequence)
    return tape.gradient(value, [main, extra])


def test_the_character_lstm_gradient_runs_by_kernels_and_matches_backpropagation_by_hand():
    data = char_lstm.problem((2, 9, 5))
    replayed, compiled, ks = _ways(_char_lstm_gradient, *[tf.constant(a) for a in data])
    assert len(ks) == 2 and all(k.compiled is not None for k in ks.values())  # both scans
    _close(replayed, compiled, 1e-12)
    _close(char_lstm.numpy_gradient(*data), compiled, 1e-10)


@pytest.mark.parametrize("dtype, rtol", [(np.float32, 2e-5), (np.float64, 1e-13)])
def test_an_rnn_gradient_with_broadcasts_keeps_its_dtype_and_values(dtype, rtol):
    rng = np.random.default_rng(1)
    w = tf.constant(rng.standard_normal((3, 5)).astype(dtype))
    b = tf.constant(rng.standard_normal(5).astype(dtype))
    col = tf.constant(rng.standard_normal((3, 1)).astype(dtype))
    xs = tf.constant(rng.standard_normal((7, 3, 5)).astype(dtype))

    def gradient(w, b, col, xs):
        with tf.GradientTape() as tape:
            tape.watch([w, b, col])
            h = tf.zeros([3, 5], dtype)
            for t in range(7):
                # b broadcasts along rows, col along columns, and sums of h made in the
                # step along each: every index form of NOTE(loop-kernels)
                h = tf.tanh(h * w + b) + tf.sigmoid(h * col + xs[t]) * 0.5
                h = h - tf.reduce_sum(h, axis=0) / 3
                h = h * (1 + 0.1 * tf.reduce_sum(h, axis=1, keepdims=True))
            loss = tf.reduce_sum(h * h)
        return tape.gradient(loss, [w, b, col])

    replayed, compiled, ks = _ways(gradient, w, b, col, xs)
    assert ks and all(k.failed is None for k in ks.values())
    _close(replayed, compiled, rtol)
    assert compiled[0].dtype == dtype


def test_scalar_carries_a_reverse_loop_and_division_by_zero_as_numpy():
    def f(s, xs):
        def step(c, x):
            return c * 0.5 + tf.sin(x) / (x - x)  # 0 / 0 and x / 0: NaN and inf, no error
        return tf.foldr(step, xs, initializer=s)

    s, xs = tf.constant(0.25), tf.constant(np.array([0.0, 1.0, 2.0], np.float32))
    with np.errstate(all="ignore"):
        replayed, compiled, ks = _ways(f, s, xs)
    assert ks
    np.testing.assert_array_equal(replayed[0], compiled[0])  # NaN in the same places
    assert compiled[0].dtype == np.float32 and compiled[0].shape == ()


def test_an_inputs_flags_do_not_compile_the_kernel_again():
    def f(h, u):
        for _ in range(30):  # reroll.MIN_NODES: a loop long enough to roll
            h = tf.tanh(h) * u
        return h

    g = reroll(tf.function(f).get_concrete_function(tf.constant(np.ones(4)), tf.constant(np.ones(4))).graph)
    (k, run), = kernels.loop_kernels(g).items()
    replay = Replay(g, {k: run})
    writable, readonly = np.linspace(0, 1, 4), np.linspace(0, 1, 4)
    readonly.flags.writeable = False
    first = replay(writable, writable.copy())[0]
    second = replay(readonly, readonly)[0]
    np.testing.assert_array_equal(first, second)
    assert len(run.compiled.signatures) == 1
    assert not np.shares_memory(first, writable)


def test_loops_that_cannot_compile_stay_numpy_scans():
    def matmuls(h, w):
        for _ in range(30):
            h = tf.tanh(tf.matmul(h, w))
        return h

    def integers(n):
        for _ in range(30):
            n = n * 3 + 1
        return n

    m = tf.constant(np.eye(3) * 0.5)
    for fn, args in ((matmuls, (m, m)), (integers, (tf.constant(np.arange(3)),))):
        g = reroll(tf.function(fn).get_concrete_function(*args).graph)
        assert any(n.prim.name == "scan" for n in g.nodes)
        assert kernels.loop_kernels(g) == {}


def test_a_kernel_numba_fails_to_compile_falls_back_to_the_scan_for_good():
    def f(h):
        for _ in range(30):
            h = tf.exp(h) * 0.5
        return h

    g = reroll(tf.function(f).get_concrete_function(tf.constant(np.zeros(3))).graph)
    (k, run), = kernels.loop_kernels(g).items()

    def fails(*args):
        raise numba.core.errors.TypingError("no such ufunc")
    run.compiled = fails
    x = np.array([0.1, 0.2, 0.3])
    with pytest.warns(UserWarning, match="did not compile the loop kernel.*no such ufunc"):
        np.testing.assert_array_equal(Replay(g, {k: run})(x)[0], Replay(g)(x)[0])
    assert run.compiled is None and run.failed == "no such ufunc"
    np.testing.assert_array_equal(Replay(g, {k: run})(x)[0], Replay(g)(x)[0])  # no warning


def test_a_zero_length_loop_gives_its_initial_carry():
    def f(c, xs):
        return tf.foldl(lambda c, x: c * x + 1.0, xs, initializer=c)

    replayed, compiled, ks = _ways(f, tf.constant(np.ones(2)), tf.constant(np.zeros((0, 2))))
    assert ks
    _close(replayed, compiled, 0)


def test_jit_compile_auto_offers_the_kernels_beside_xla_and_the_numpy_replays(monkeypatch):
    def f(h):
        for _ in range(30):
            h = tf.tanh(h) * 0.9 + 0.05
        return h

    g = tf.function(f).get_concrete_function(tf.constant(np.ones(5))).graph
    names = [name for name, _ in plan(g, jit_compile="auto").inner.candidates]
    assert "the NumPy replay, loops compiled by Numba" in names
    fastest = tf.function(f, jit_compile="auto")
    x = tf.constant(np.linspace(-1, 1, 5))
    expected = tf.function(f)(x).numpy()
    for _ in range(12):  # every way's calls, while choosing and after
        np.testing.assert_allclose(fastest(x).numpy(), expected, rtol=1e-14)
    # the NumPy replay's own ways keep its bits: no kernel without jit_compile="auto"
    rolling = plan(g).inner
    assert all(not getattr(w, "impls", None) for w in rolling.ways())
    monkeypatch.setattr(kernels, "available", lambda: False)
    ways = plan(g, jit_compile="auto").inner
    names = [name for name, _ in ways.candidates] if isinstance(ways, Fastest) else []
    assert "the NumPy replay, loops compiled by Numba" not in names


# ---------------------------------------------------------------- every kernel rule
def _kernel_primitives():
    """The primitives whose nodes a kernel compiles at these shapes: with a rule of their
    own, or a plain ufunc impl (the default)."""
    names = []
    for name, prim in sorted(registry().items()):
        if rule(prim, "kernel") is not None or kernels._plain_ufunc(prim.impl, 1) \
                or kernels._plain_ufunc(prim.impl, 2):
            names.append(name)
    return names


_SHAPE_RULES = {  # (shapes in, params) for the rules over whole values
    "getitem": [((3, 4), dict(key=(1,))), ((3, 4), dict(key=(slice(0, 2), 2))), ((2,), dict(key=(0,))),
                ((3, 4), dict(key=(-1, slice(None, None, -2)))), ((3, 4), dict(key=(1, -1)))],
    "getitem_transpose": [((), dict(key=(1,), shape=(2,))), ((), dict(key=(0, -1), shape=(2, 3)))],
    "concat": [((2, 3), (2, 2), dict(axis=1)), ((1,), (1,), (3,), dict(axis=0)),
               ((2, 3), (1, 3), dict(axis=-2))],
    "reduce_sum": [((2, 3), dict(axis=None, keepdims=False)), ((2, 3), dict(axis=(0,), keepdims=True)),
                   ((2, 3, 2), dict(axis=(0, 2), keepdims=False)), ((), dict(axis=None, keepdims=False))],
    "reshape": [((2, 3), dict(shape=(3, 2))), ((), dict(shape=(1,))), ((1,), dict(shape=())),
                ((), dict(shape=()))],
    "broadcast_to": [((3,), dict(shape=(2, 3))), ((), dict(shape=(4,))), ((2, 1), dict(shape=(2, 3))),
                     ((), dict(shape=()))],
}


@pytest.mark.parametrize("name", _kernel_primitives())
def test_each_kernel_rule_computes_its_primitives_impl(name):
    """One node in a loop body, its kernel against its impl, float64 and float32, on inputs
    where the impl is finite (and, for the elementwise ones, at the special values)."""
    prim = registry()[name]
    rng = np.random.default_rng(0)
    for dtype in (np.float64, np.float32):
        if name in _SHAPE_RULES:
            cases = _SHAPE_RULES[name]
        else:
            n = prim.impl.nin if isinstance(prim.impl, np.ufunc) else 1
            cases = [((2, 3),) * n + ({},)]
        for case in cases:
            *shapes, params = case
            for low in (0.2, 1.2, -0.9):  # a domain where the impl is finite (acosh: > 1)
                inputs = [(rng.uniform(low, low + 0.7, s)).astype(dtype) for s in shapes]
                with np.errstate(all="ignore"):
                    try:
                        expected = np.asarray(prim.impl(*inputs, **params))
                    except TypeError:  # logical_and: bool inputs alone, which are refused
                        inputs = [a > 0.5 for a in inputs]
                        expected = np.asarray(prim.impl(*inputs, **params))
                if expected.dtype.kind != "f" or np.isfinite(expected).all():
                    break
            assert expected.dtype.kind != "f" or np.isfinite(expected).all()
            if expected.dtype != np.dtype(dtype):  # a comparison's bool, or bool inputs: refused
                assert _one_node_loop(prim, inputs, params) is None
                continue
            got = _one_node_loop(prim, inputs, params)
            assert got.dtype == expected.dtype and got.shape == expected.shape
            np.testing.assert_allclose(got, expected, rtol=4e-6 if dtype is np.float32 else 1e-14)
        if name not in _SHAPE_RULES and expected.dtype == np.dtype(dtype):
            # elementwise on floats: at every pair of special values too
            grid = np.meshgrid(*[_SPECIAL] * len(shapes), indexing="ij")
            inputs = [g.ravel().astype(dtype) for g in grid]
            with np.errstate(all="ignore"):
                expected = np.asarray(prim.impl(*inputs))
                got = _one_node_loop(prim, inputs, {})
            np.testing.assert_allclose(got, expected, rtol=4e-6 if dtype is np.float32 else 1e-14,
                                       err_msg=f"{name} at {[a.tolist() for a in inputs]}")


_SPECIAL = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -2.5, 3.0]


def _one_node_loop(prim, inputs, params):
    """The node prim(*inputs, **params) as the body of a two-step kernel, its first step's
    result (the loop carries nothing: each input is read from outside)."""
    from tapeflow.graph.ir import Graph, Node
    from tapeflow.loops import scan_p
    body = Graph()
    ins = [body.new_slot(a) for a in inputs]
    body.inputs = list(ins)
    expected = np.asarray(prim.impl(*inputs, **params))
    out = body.new_slot(expected)
    body.nodes.append(Node(prim, ins, dict(params), [out]))
    body.outputs = [out]
    node = Node(scan_p, [], dict(body=body, n_carry=0, n_x=0, length=2, reverse=False,
                                 emits_carries=False), [body.new_slot(expected)])
    run = kernels.scan_kernel(node)
    if expected.dtype.kind != "f":
        return run
    assert run is not None, f"{prim.name} has a kernel rule but its loop does not compile"
    (stacked,) = run(*inputs)
    assert run.failed is None, run.failed
    return stacked[0]


# ---------------------------------------------------------------- random loop bodies
_OPERAND_SHAPES = [(3, 4), (4,), (3, 1), (1, 4), (), (1,)]


@pytest.mark.parametrize("seed", range(12))
def test_random_loop_bodies_give_the_numpy_scans_values(seed):
    """Bodies of random elementwise ops over operands of every broadcast form, sums over
    random axes, reshapes and broadcasts, carried and stacked, float64 and float32: the
    kernel against the scan's NumPy impl."""
    from tapeflow.graph.ir import Graph, Node
    from tapeflow.loops import scan_p
    rng = np.random.default_rng(seed)
    prims = registry()
    dtype = (np.float64, np.float32)[seed % 2]
    body = Graph()
    example = {}

    def slot(value):
        s = body.new_slot(np.asarray(value, dtype))
        example[s] = np.asarray(value, dtype)
        return s

    def emit(name, ins, **params):
        with np.errstate(all="ignore"):
            value = prims[name].impl(*[example[s] for s in ins], **params)
        out = slot(value)
        body.nodes.append(Node(prims[name], list(ins), params, [out]))
        return out

    carries = [slot(rng.uniform(-1, 1, (3, 4))), slot(rng.uniform(-1, 1, ()))]
    step = slot(rng.uniform(-1, 1, (4,)))
    const = slot(rng.uniform(-1, 1, (3, 1)))
    scale = slot(0.05)  # carries that contract: rounding is not amplified step by step
    body.inputs = [*carries, step, const, scale]
    values = list(body.inputs)
    for shape in _OPERAND_SHAPES:  # every broadcast form among the operands
        values.append(emit("broadcast_to", [carries[1]], shape=shape) if shape else carries[1])
    for _ in range(int(rng.integers(8, 16))):
        kind = rng.integers(0, 5)
        a = values[int(rng.integers(0, len(values)))]
        partners = [v for v in values if _broadcasts(example[a].shape, example[v].shape)]
        b = partners[int(rng.integers(0, len(partners)))]
        if kind == 0:
            out = emit(str(rng.choice(["add", "subtract", "multiply", "maximum"])), [a, b])
        elif kind == 1:
            out = emit(str(rng.choice(["tanh", "sin", "sigmoid"])), [a])
        elif kind == 2 and example[a].ndim:
            axes = tuple(sorted(set(int(x) for x in rng.integers(0, example[a].ndim, 2))))
            out = emit("reduce_sum", [a], axis=axes, keepdims=bool(rng.integers(0, 2)))
        elif kind == 3:
            size = example[a].size
            out = emit("reshape", [a], shape=(size,) if size != 1 else ())
        elif _broadcasts(example[a].shape, (3, 1)):
            out = emit("tanh", [emit("add", [a, const])])
        else:
            out = emit("sin", [a])
        values.append(out)
    last = values[-4:]
    grid = [v for v in values if _broadcasts(example[v].shape, (3, 4))
            and np.broadcast_shapes(example[v].shape, (3, 4)) == (3, 4)][-1]
    total = emit("reduce_sum", [last[0]], axis=None, keepdims=False)
    new0 = emit("multiply", [emit("tanh", [emit("add", [emit("add", [carries[0], total]), grid])]),
                             scale])
    new1 = emit("multiply", [emit("reduce_sum", [emit("sin", [last[1]])], axis=None,
                                  keepdims=False), scale])
    body.outputs = [new0, new1, last[2], last[3]]
    params = dict(body=body, n_carry=2, n_x=1, length=5, reverse=bool(seed % 3 == 0),
                  emits_carries=False)
    node = Node(scan_p, [], params, [])
    run = kernels.scan_kernel(node)
    assert run is not None
    inputs = [rng.uniform(-1, 1, (3, 4)).astype(dtype), np.asarray(rng.uniform(-1, 1), dtype),
              rng.uniform(-1, 1, (5, 4)).astype(dtype), rng.uniform(-1, 1, (3, 1)).astype(dtype),
              np.asarray(0.05, dtype)]
    with np.errstate(all="ignore"):
        expected = scan_p.impl(*inputs, **params)
    got = run(*inputs)
    assert run.failed is None, run.failed + "\n" + run.source
    _close(expected, got, 1e-5 if dtype is np.float32 else 1e-12)


def _broadcasts(a, b):
    try:
        np.broadcast_shapes(a, b)
    except ValueError:
        return False
    return True


def test_a_graphs_kernels_hold_at_most_max_nodes_its_busiest_loops_first(monkeypatch):
    def f(h, s):
        for _ in range(40):  # the busier loop: 40 steps
            h = tf.tanh(h) * 0.5 + 0.1
        s = s + tf.reduce_sum(h)
        for _ in range(20):
            s = tf.sin(s) * 0.9 - 0.2
        return h, s

    g = reroll(tf.function(f).get_concrete_function(tf.constant(np.ones(3)), tf.constant(np.float64(1.0))).graph)
    loops = [k for k, n in enumerate(g.nodes) if n.prim.name == "scan"]
    assert len(loops) == 2 and len(kernels.loop_kernels(g)) == 2
    monkeypatch.setattr(kernels, "MAX_NODES", 3)  # room for one body of 3 nodes
    busiest = max(loops, key=lambda k: g.nodes[k].params["length"])
    assert list(kernels.loop_kernels(g)) == [busiest]


def test_a_scatter_into_zeros_keeps_exact_zeros_beside_an_infinity():
    prim = registry()["getitem_transpose"]
    got = _one_node_loop(prim, [np.asarray(np.inf)], dict(key=(1,), shape=(3,)))
    np.testing.assert_array_equal(got, [0.0, np.inf, 0.0])


def test_scalar_code_compiles_with_the_numpy_replays_bits():
    """An RK4 loop on a state of two elements (getitem, concat, arithmetic: no
    transcendental, no sum): the kernel's IEEE operations are NumPy's, so its bits too."""
    def rk4(y, p):
        def f(y):
            return tf.stack([y[1], -p * y[0]])
        for _ in range(30):
            k1 = f(y)
            k2 = f(y + 0.05 * k1)
            k3 = f(y + 0.05 * k2)
            k4 = f(y + 0.1 * k3)
            y = y + (0.1 / 6) * (k1 + 2 * k2 + 2 * k3 + k4)
        return y

    def gradient(y, p):
        with tf.GradientTape() as tape:
            tape.watch([y, p])
            loss = tf.reduce_sum(rk4(y, p) ** 2)
        return tape.gradient(loss, [y, p])

    replayed, compiled, ks = _ways(gradient, tf.constant(np.array([1.0, 0.5])), tf.constant(np.float64(2.0)))
    assert len(ks) == 2  # the forward loop and the backward one
    for a, b in zip(replayed, compiled, strict=True):
        np.testing.assert_array_equal(a, b)


def test_a_body_whose_scalar_form_does_not_compile_compiles_as_it_is(monkeypatch):
    import dataclasses
    from tapeflow.graph.ir import Node

    def unlucky(body):  # the scalar rewrite's graph with a node no kernel takes (a bool)
        held = dataclasses.replace(body, nodes=list(body.nodes), avals=dict(body.avals))
        out = held.new_slot(np.zeros(2, bool))
        held.nodes.append(Node(registry()["equal"], [body.inputs[0]] * 2, {}, [out]))
        return held

    def f(h):
        for _ in range(30):
            h = tf.tanh(h) * 0.5 + 0.1
        return h

    g = reroll(tf.function(f).get_concrete_function(tf.constant(np.ones(2))).graph)
    monkeypatch.setattr(kernels, "scalarize", unlucky)
    (k, run), = kernels.loop_kernels(g).items()
    assert run.body is g.nodes[k].params["body"]
    x = np.array([0.3, -0.7])
    np.testing.assert_allclose(Replay(g, {k: run})(x)[0], Replay(g)(x)[0], rtol=1e-14)


def test_a_loop_with_no_outputs_is_left_to_the_scan():
    from tapeflow.graph.ir import Graph, Node
    from tapeflow.loops import scan_p
    body = Graph()
    x = body.new_slot(np.ones(3))
    body.inputs = [x]
    body.nodes.append(Node(registry()["sin"], [x], {}, [body.new_slot(np.ones(3))]))
    node = Node(scan_p, [], dict(body=body, n_carry=0, n_x=0, length=4, reverse=False,
                                 emits_carries=False), [])
    assert kernels.scan_kernel(node) is None
