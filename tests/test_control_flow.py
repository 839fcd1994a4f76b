"""tf.scan, tf.foldl, tf.foldr and tf.map_fn (tapeflow/loops.py and tapeflow/control_flow.py): TensorFlow's
results, gradients equal to those of the same loop written in Python, one op in a traced
graph, XLA's lax.scan under jit_compile=True, and clear errors for bodies a loop cannot
replay. Every rule of the `scan` primitive is checked by the op table's rows (scan,
scan_pair_reverse, foldl, map_fn in tests/op_table.py)."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.graph.trace import TracingError


def test_tensorflow_results():
    x = tf.constant([1.0, 2.0, 3.0, 4.0])
    np.testing.assert_array_equal(tf.scan(lambda a, e: a + e, x).numpy(), [1, 3, 6, 10])
    np.testing.assert_array_equal(tf.scan(lambda a, e: a + e, x, reverse=True).numpy(),
                                  [10, 9, 7, 4])
    np.testing.assert_array_equal(tf.scan(lambda a, e: a * e, x, initializer=2.0).numpy(),
                                  [2, 4, 12, 48])
    assert float(tf.foldl(lambda a, e: a - e, x)) == -8.0  # ((1 - 2) - 3) - 4
    assert float(tf.foldr(lambda a, e: a - e, x)) == -2.0  # ((4 - 3) - 2) - 1
    assert float(tf.foldl(lambda a, e: a + e, x, initializer=10.0)) == 20.0
    # nested elements and accumulators: a running (sum, count) pair and a second sequence
    s, n = tf.scan(lambda acc, e: (acc[0] + e[0] * e[1], acc[1] + 1),
                   (x, x * 0.5), initializer=(0.0, 0))
    np.testing.assert_array_equal(s.numpy(), np.cumsum(x.numpy() ** 2 * 0.5))
    np.testing.assert_array_equal(n.numpy(), [1, 2, 3, 4])
    out = tf.map_fn(lambda e: {"sq": e * e, "neg": -e}, x)
    np.testing.assert_array_equal(out["sq"].numpy(), x.numpy() ** 2)
    np.testing.assert_array_equal(out["neg"].numpy(), -x.numpy())


def _rnn_loop(w, u, xs, h):
    for t in range(xs.shape[0]):
        h = tf.tanh(tf.matmul(xs[t], w) + tf.matmul(h, u))
    return h


def _rnn_scan(w, u, xs, h):
    return tf.foldl(lambda h, x: tf.tanh(tf.matmul(x, w) + tf.matmul(h, u)), xs, initializer=h)


def _data(steps=6, batch=2, n_in=3, hidden=4):
    rng = np.random.default_rng(0)
    w = tf.Variable(rng.standard_normal((n_in, hidden)) * 0.5)
    u = tf.Variable(rng.standard_normal((hidden, hidden)) * 0.5)
    xs = tf.constant(rng.standard_normal((steps, batch, n_in)))
    h0 = tf.constant(rng.standard_normal((batch, hidden)) * 0.1)
    return w, u, xs, h0


def test_gradients_equal_those_of_the_python_loop():
    w, u, xs, h0 = _data()
    grads = {}
    for name, rnn in (("loop", _rnn_loop), ("scan", _rnn_scan)):
        with tf.GradientTape() as tape:
            tape.watch([xs, h0])
            loss = tf.reduce_sum(rnn(w, u, xs, h0) ** 2)
        grads[name] = [g.numpy() for g in tape.gradient(loss, [w, u, xs, h0])]
    for a, b in zip(grads["loop"], grads["scan"], strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)
    # forward mode, and a Hessian-vector product through the loop (forward over reverse)
    v = tf.constant(np.ones((3, 4)))
    jvps = []
    for rnn in (_rnn_loop, _rnn_scan):
        with tf.autodiff.ForwardAccumulator(w, v) as acc:
            with tf.GradientTape() as tape:
                loss = tf.reduce_sum(rnn(w, u, xs, h0) ** 2)
            g = tape.gradient(loss, u)
        jvps.append((acc.jvp(loss).numpy(), acc.jvp(g).numpy()))
    for a, b in zip(*jvps, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def _scans(g):
    return [n for n in g.nodes if getattr(n, "prim", None) is not None and n.prim.name == "scan"]


def _lstm_like(w, xs):
    """A gated step: sigmoid and tanh values its VJP reads."""
    def step(h, x):
        z = tf.matmul(tf.concat([x, h], axis=1), w)
        gate, cand = tf.split(z, 2, axis=1)
        return tf.sigmoid(gate) * h + tf.tanh(cand)
    h0 = tf.zeros([xs.shape[1], w.shape[1] // 2], dtype=xs.dtype)
    return tf.reduce_sum(tf.foldl(step, xs, initializer=h0) ** 2)


def test_the_vjp_reads_the_steps_values_and_recomputes_none():
    """NOTE(scan-residuals): under a tape the forward scan keeps its body's intermediates,
    and the backward scan's body has none of the forward ops (no sigmoid, tanh or their
    product): the VJPs read the kept values. The traced graph keeps only the values the
    backward scan reads, and the gradient is the Python loop's."""
    rng = np.random.default_rng(1)
    w = tf.constant(rng.standard_normal((5, 4)) * 0.5)
    xs = tf.constant(rng.standard_normal((7, 3, 3)))

    def gradient(w, xs):
        with tf.GradientTape() as tape:
            tape.watch(w)
            loss = _lstm_like(w, xs)
        return tape.gradient(loss, w)

    traced = tf.function(gradient)
    graph = traced.get_concrete_function(w, xs).graph
    forward, backward = _scans(graph)
    prims = [n.prim.name for n in backward.params["body"].nodes]
    assert "sigmoid" not in prims and "tanh" not in prims, prims
    assert "matmul" in prims  # the VJP's own products
    body = forward.params["body"]
    emitted = len(forward.outputs) - forward.params["n_carry"]
    assert 0 < emitted < sum(len(n.outputs) for n in body.nodes)  # pruned, not every value

    def loop_gradient(w, xs):
        with tf.GradientTape() as tape:
            tape.watch(w)
            h = tf.zeros([3, 2], dtype=xs.dtype)
            for t in range(xs.shape[0]):
                z = tf.matmul(tf.concat([xs[t], h], axis=1), w)
                gate, cand = tf.split(z, 2, axis=1)
                h = tf.sigmoid(gate) * h + tf.tanh(cand)
            loss = tf.reduce_sum(h ** 2)
        return tape.gradient(loss, w)

    want = loop_gradient(w, xs).numpy()
    np.testing.assert_allclose(gradient(w, xs).numpy(), want, rtol=1e-12)  # eager
    np.testing.assert_allclose(traced(w, xs).numpy(), want, rtol=1e-12)
    xs2 = tf.constant(rng.standard_normal((7, 3, 3)))
    np.testing.assert_allclose(traced(w, xs2).numpy(), loop_gradient(w, xs2).numpy(),
                               rtol=1e-12)


@pytest.mark.parametrize("keep", ["none", "all"])
def test_values_not_kept_are_recomputed(monkeypatch, keep):
    """What the forward scan keeps decides only the speed: keeping none of the body's
    values (each step's ops then run again in the VJP) or all of them gives the
    gradient of the Python loop, eager and traced."""
    import tapeflow.loops as cf

    if keep == "none":
        monkeypatch.setattr(cf, "_read_by_vjps", lambda body: [])
    else:
        monkeypatch.setattr(cf, "_read_by_vjps",
                            lambda body: [o for n in body.nodes for o in n.outputs])
    w, u, xs, h0 = _data()
    grads = {}
    for name, rnn in (("loop", _rnn_loop), ("scan", _rnn_scan),
                      ("traced", tf.function(_rnn_scan))):
        with tf.GradientTape() as tape:
            tape.watch([xs, h0])
            loss = tf.reduce_sum(rnn(w, u, xs, h0) ** 2)
        grads[name] = [g.numpy() for g in tape.gradient(loss, [w, u, xs, h0])]
    for other in ("scan", "traced"):
        for a, b in zip(grads["loop"], grads[other], strict=True):
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-14)


def test_second_derivatives_through_kept_values():
    """The forward scan's kept values are results a second derivative flows through: a
    Hessian by nested tapes, eager and traced, and the Hessian of a traced gradient
    taken from outside (its pruned scan then recomputes what it needs) all equal the
    finite differences of the gradient."""
    rng = np.random.default_rng(2)
    w0 = rng.standard_normal((5, 4)) * 0.5
    xs = tf.constant(rng.standard_normal((4, 2, 3)))

    def grad_of(w):
        with tf.GradientTape() as tape:
            tape.watch(w)
            loss = _lstm_like(w, xs)
        return tape.gradient(loss, w)

    eps = 1e-6
    want = np.stack([(grad_of(tf.constant(w0 + eps * e)).numpy()
                      - grad_of(tf.constant(w0 - eps * e)).numpy()).ravel() / (2 * eps)
                     for e in np.eye(w0.size).reshape(-1, *w0.shape)])
    traced_grad = tf.function(grad_of)
    for g_fn in (grad_of, tf.function(lambda w: tf.identity(grad_of(w))), traced_grad):
        w = tf.constant(w0)
        with tf.GradientTape() as outer:
            outer.watch(w)
            g = g_fn(w)
        hessian = outer.jacobian(g, w).numpy().reshape(w0.size, w0.size)
        np.testing.assert_allclose(hessian, want.T, rtol=1e-5, atol=1e-7)


def test_custom_gradients_and_draws_in_a_body():
    """A body with a custom gradient keeps the recomputing VJP (its rule is the user's);
    a body that draws random numbers differentiates at the numbers it drew (the kept
    values), not at new ones."""
    @tf.custom_gradient
    def clipped(x):
        return tf.identity(x), lambda dy: tf.clip_by_value(dy, -0.5, 0.5)

    xs = tf.constant(np.linspace(-1.0, 1.0, 6).reshape(3, 2))
    w = tf.constant([2.0, -3.0], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(w)
        loss = tf.reduce_sum(tf.foldl(lambda a, x: a + clipped(x * w), xs,
                                      initializer=tf.zeros([2], tf.float64)))
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), 0.5 * xs.numpy().sum(0))

    tf.random.set_seed(5)
    w = tf.constant([0.3, -0.7], tf.float64)

    def step(carry, x):
        noise = tf.random.normal([2], dtype=tf.float64)
        return carry[0] + tf.tanh(noise * w) * x, noise

    init = (tf.zeros([2], tf.float64), tf.zeros([2], tf.float64))
    with tf.GradientTape() as tape:
        tape.watch(w)
        sums, noises = tf.scan(step, xs, initializer=init)
        loss = tf.reduce_sum(sums[-1])
    n = noises.numpy()  # the numbers drawn at each step
    want = (n * (1 - np.tanh(n * w.numpy()) ** 2) * xs.numpy()).sum(0)
    np.testing.assert_allclose(tape.gradient(loss, w).numpy(), want, rtol=1e-12)


def test_one_op_in_a_traced_graph_replayed_at_new_values():
    w, u, xs, h0 = _data(steps=20)

    @tf.function
    def step(xs, h0):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(_rnn_scan(w, u, xs, h0) ** 2)
        return loss, tape.gradient(loss, [w, u])

    step(xs, h0)
    graph = step.get_concrete_function(xs, h0).graph
    kinds = [op.type for op in graph.get_operations()]
    # the forward scan (keeping each step's carries) and the reverse scan of its VJP
    assert kinds.count("scan") == 2 and "tanh" not in kinds
    xs2 = xs * 0.5
    got = step(xs2, h0)
    with tf.GradientTape() as tape:
        loss = tf.reduce_sum(_rnn_loop(w, u, xs2, h0) ** 2)
    want = [loss] + tape.gradient(loss, [w, u])
    for a, b in zip([got[0]] + got[1], want, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)


def test_every_sequence_length_from_two_traces():
    w, u, _, h0 = _data()
    f = tf.function(lambda xs: _rnn_scan(w, u, xs, h0),
                    input_signature=[tf.TensorSpec([None, 2, 3], tf.float64)])
    rng = np.random.default_rng(1)
    for steps in (3, 7, 2, 12):
        xs = tf.constant(rng.standard_normal((steps, 2, 3)))
        np.testing.assert_allclose(f(xs).numpy(), _rnn_loop(w, u, xs, h0).numpy(), rtol=1e-12)
    assert f.experimental_get_tracing_count() == 2  # at 3 and 7 (NOTE(two-sizes))


def test_an_empty_sequence():
    x = tf.zeros([0, 3])
    out = tf.scan(lambda a, e: a + e, x, initializer=tf.ones([3]))
    assert out.shape == (0, 3)
    w = tf.constant([1.0, 2.0, 3.0])
    with tf.GradientTape() as tape:
        tape.watch(w)
        y = tf.reduce_sum(tf.foldl(lambda a, e: a * e, x, initializer=w))
    np.testing.assert_array_equal(tape.gradient(y, w).numpy(), [1.0, 1.0, 1.0])


def test_bodies_a_loop_cannot_replay_raise():
    x = tf.constant([1.0, -2.0, 3.0])
    with pytest.raises(TracingError, match="branch on values"):
        tf.scan(lambda a, e: a + e if float(e) > 0 else a, x)
    v = tf.Variable(0.0)
    with pytest.raises(TracingError, match="assigns the variable"):
        tf.scan(lambda a, e: a + v.assign(e), x)
    with pytest.raises(TypeError, match="structure"):
        tf.scan(lambda a, e: (a, a), x, initializer=0.0)
    with pytest.raises(TypeError, match="keeps its shape and dtype"):
        tf.foldl(lambda a, e: tf.cast(a, tf.float32) + e, x, initializer=tf.constant(0))
    with pytest.raises(TypeError, match="keeps its shape and dtype"):
        tf.foldl(lambda a, e: tf.concat([a, tf.reshape(e, [1])], 0), x,
                 initializer=tf.zeros([1]))
    with pytest.raises(ValueError, match="one length"):
        tf.scan(lambda a, e: a + e[0] + e[1], (x, tf.ones([4])), initializer=0.0)


@pytest.mark.skipif(importlib.util.find_spec("jax") is None, reason="needs JAX")
def test_compiled_as_one_lax_scan():
    # A 300-step loop: unrolled, XLA would compile 300 copies of the body.
    w, u, xs, h0 = _data(steps=300)
    f = tf.function(lambda xs: _rnn_scan(w, u, xs, h0), jit_compile=True)
    got = f(xs)
    np.testing.assert_allclose(got.numpy(), _rnn_loop(w, u, xs, h0).numpy(), rtol=1e-10)
    assert f.get_concrete_function(xs).executable.inner.compiled


# ---------------------------------------------------------------- NOTE(python-control-flow)
def test_cond_and_switch_case():
    x = tf.constant(3.0)
    assert float(tf.cond(x > 0, lambda: x * 2.0, lambda: -x)) == 6.0
    assert float(tf.cond(False, lambda: x * 2.0, lambda: -x)) == -3.0
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.cond(x > 0, lambda: x ** 2, lambda: -x)
    assert float(tape.gradient(y, x)) == 6.0
    traced = tf.function(lambda v: tf.cond(tf.reduce_sum(v) > 0, lambda: v * 2.0, lambda: -v))
    for value, want in (([1.0, 2.0], [2.0, 4.0]), ([-1.0, -2.0], [1.0, 2.0]),
                        ([3.0, 1.0], [6.0, 2.0])):
        np.testing.assert_array_equal(traced(tf.constant(value)).numpy(), want)
    assert traced.experimental_get_tracing_count() == 2  # one graph per branch
    branches = [lambda: tf.constant(10.0), lambda: tf.constant(20.0)]
    assert float(tf.switch_case(tf.constant(1), branches)) == 20.0
    assert float(tf.switch_case(7, branches)) == 20.0  # out of range: the last branch
    assert float(tf.switch_case(7, branches, default=lambda: tf.constant(0.0))) == 0.0
    with pytest.raises(ValueError, match="scalar"):
        tf.cond(tf.constant([True, False]), lambda: x, lambda: x)


def test_while_loop():
    # TensorFlow's documented example, and a loop carried through a gradient
    i, total = tf.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i),
                             [tf.constant(0), tf.constant(0)])
    assert (int(i), int(total)) == (4, 6)
    (n,) = tf.while_loop(lambda n: n < 100, lambda n: [n * 2], [1])
    assert int(n) == 128
    assert int(tf.while_loop(lambda n: n < 100, lambda n: n * 2, 1,
                             maximum_iterations=3)) == 8
    x = tf.constant(1.5)
    with tf.GradientTape() as tape:
        tape.watch(x)
        _, y = tf.while_loop(lambda k, y: k < 3, lambda k, y: (k + 1, y * x), (0, 1.0))
    assert float(y) == 1.5 ** 3 and float(tape.gradient(y, x)) == 3 * 1.5 ** 2
    with pytest.raises(TypeError, match="loop variables"):
        tf.while_loop(lambda a, b: a < 3, lambda a, b: a + 1, [0, 0])
    # traced: the graph holds the loop unrolled; another count of iterations retraces
    steps = tf.function(lambda n: tf.while_loop(lambda i, s: i < n, lambda i, s: (i + 1, s * 2.0),
                                                (tf.constant(0), tf.constant(1.0)))[1])
    assert [float(steps(tf.constant(k))) for k in (3, 5, 3)] == [8.0, 32.0, 8.0]


def test_vectorized_map_equals_map_fn():
    x = tf.constant(np.random.default_rng(2).standard_normal((4, 3)))
    fn = lambda row: tf.reduce_sum(tf.sin(row) * row)  # noqa: E731
    np.testing.assert_allclose(tf.vectorized_map(fn, x).numpy(), tf.map_fn(fn, x).numpy(),
                               rtol=1e-14)


def test_scan_gradient_with_a_zeros_like_in_its_step():
    """The step's own residual trace captures the zeros_like's constant: the backward scan
    must replay the step with its own inputs only (a masked RNN's zero output does this)."""
    def f(xs, c0):
        return tf.reduce_sum(tf.scan(
            lambda c, x: tf.where(x > 0, c * x, tf.zeros_like(c * x)), xs, c0))

    xs, c0 = np.array([1.0, -2.0, 3.0, 0.5]), np.array(2.0)
    with tf.GradientTape() as tape:
        args = [tf.constant(xs), tf.constant(c0)]
        tape.watch(args)
        total = f(*args)
    gx, gc = tape.gradient(total, args)
    np.testing.assert_allclose(gx.numpy(), [2.0, 0.0, 0.0, 0.0])
    np.testing.assert_allclose(gc.numpy(), 1.0)
    tf.testing.check_grads(f, [xs, c0], order=2)
