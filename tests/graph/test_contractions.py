"""NOTE(weighted-products) in tapeflow/graph/contractions.py: a weighted sum of matrix
products, reduce_sum(matmul(X, T) * W) over batch axes, replays as one product. Each
program runs eagerly and traced; the rewritten graph must give the eager values (to
rounding: the same sums in another order), keep its derivatives, and leave alone every
program the rewrite does not fit."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf

RNG = np.random.default_rng(7)


def _normal(*shape: int, dtype: type = np.float64) -> tf.Tensor:
    return tf.constant(RNG.standard_normal(shape).astype(dtype))


def _names(fn, *args) -> list[str]:
    return [n.prim.name for n in fn.get_concrete_function(*args).graph.nodes
            if hasattr(n, "prim")]


def _replayed(f, *args) -> tuple[np.ndarray, list[str]]:
    fn = tf.function(f)
    fn(*args)  # the trace's own values
    return fn(*args).numpy(), _names(fn, *args)


# (X shape, T shape, W shape, summed axes, keepdims, W first): each a skinning-like sum
# with a batch the sum keeps (a forward-mode Jacobian's tangents)
REWRITTEN = {
    "bones": ((544, 4), (8, 22, 4, 4), (22, 544, 1), (1,), False, False),
    "weights_first": ((544, 4), (8, 22, 4, 4), (22, 544, 1), (1,), False, True),
    "keepdims": ((300, 3), (4, 40, 3, 5), (40, 300, 1), (1,), True, False),
    "negative_axis": ((300, 3), (6, 40, 3, 2), (40, 300, 1), (-3,), False, False),
    "bone_scalars": ((500, 4), (8, 30, 4, 3), (30, 1, 1), (1,), False, False),
    "two_summed_axes": ((200, 5), (7, 6, 8, 5, 4), (7, 6, 1, 200, 1), (0, 1), False, False),
    "kept_axis_after": ((400, 4), (12, 9, 4, 3), (12, 1, 400, 1), (0,), False, False),
    "kept_axes_around": ((128, 3), (3, 11, 5, 3, 4), (11, 1, 128, 1), (1,), False, False),
    "one_column": ((1000, 8), (20, 32, 8, 1), (20, 1, 1000, 1), (0,), False, False),
    "w_lower_rank": ((544, 4), (5, 22, 4, 4), (22, 544, 1), (1,), False, False),
}


def _program(sx, st, sw, axes, keepdims, w_first, dtype=np.float64):
    x, t, w = _normal(*sx, dtype=dtype), _normal(*st, dtype=dtype), _normal(*sw, dtype=dtype)

    def f(x, t, w):
        p = tf.matmul(x, t)
        return tf.reduce_sum(w * p if w_first else p * w, axis=axes, keepdims=keepdims)

    return f, (x, t, w)


@pytest.mark.parametrize("case", sorted(REWRITTEN))
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_a_weighted_sum_of_products_replays_as_one_product(case, dtype):
    f, args = _program(*REWRITTEN[case], dtype=dtype)
    want = f(*args).numpy()
    got, names = _replayed(f, *args)
    assert "reduce_sum" not in names and names.count("matmul") == 1, names
    assert got.shape == want.shape and got.dtype == want.dtype
    tol = 1e-12 if dtype == np.float64 else 2e-5
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * np.abs(want).max())


# Each breaks one condition of the rewrite; the graph keeps its product, multiply and sum.
LEFT_ALONE = {
    "weights_vary_along_n": ((544, 4), (8, 22, 4, 4), (22, 544, 4), (1,)),
    "sum_over_rows": ((544, 4), (8, 22, 4, 4), (22, 544, 1), (2,)),
    "sum_over_everything": ((544, 4), (8, 22, 4, 4), (22, 544, 1), None),
    "weights_span_a_kept_axis": ((300, 3), (6, 40, 3, 2), (6, 40, 300, 1), (1,)),
    "weights_broadcast_over_a_summed_axis": ((544, 4), (8, 22, 4, 4), (1, 544, 1), (1,)),
    "small": ((20, 4), (8, 10, 4, 4), (10, 20, 1), (1,)),
    "few_rows_against_big_matrices": ((8, 64), (4, 40, 64, 64), (40, 8, 1), (1,)),
    "no_kept_batch": ((544, 4), (22, 4, 4), (22, 544, 1), (0,)),
    "few_kept_columns": ((544, 8), (2, 22, 8, 4), (22, 544, 1), (1,)),
}


@pytest.mark.parametrize("case", sorted(LEFT_ALONE))
def test_other_sums_of_products_are_left_alone(case):
    sx, st, sw, axes = LEFT_ALONE[case]
    f, args = _program(sx, st, sw, axes, False, False)
    want = f(*args).numpy()
    got, names = _replayed(f, *args)
    assert "reduce_sum" in names and "multiply" in names, names
    np.testing.assert_array_equal(got, want)  # the same ops: the same bits


def test_a_product_or_weighted_product_read_elsewhere_is_left_alone():
    x, t, w = _normal(544, 4), _normal(8, 22, 4, 4), _normal(22, 544, 1)

    def reads_product(x, t, w):
        p = tf.matmul(x, t)
        return tf.reduce_sum(p * w, axis=1), p

    def reads_weighted(x, t, w):
        q = tf.matmul(x, t) * w
        return tf.reduce_sum(q, axis=1), q

    for f in (reads_product, reads_weighted):
        fn = tf.function(f)
        fn(x, t, w)
        got = fn(x, t, w)
        names = _names(fn, x, t, w)
        assert "reduce_sum" in names, f.__name__
        for g, e in zip(got, f(x, t, w)):
            np.testing.assert_array_equal(g.numpy(), e.numpy())


def test_integer_products_are_left_alone():
    x = tf.constant(RNG.integers(-3, 3, (544, 4)))
    t = tf.constant(RNG.integers(-3, 3, (8, 22, 4, 4)))
    w = tf.constant(RNG.integers(-3, 3, (22, 544, 1)))
    f = lambda x, t, w: tf.reduce_sum(tf.matmul(x, t) * w, axis=1)  # noqa: E731
    got, names = _replayed(f, x, t, w)
    assert "reduce_sum" in names
    np.testing.assert_array_equal(got, f(x, t, w).numpy())


def test_derivatives_through_the_rewritten_graph():
    """The replay under a tape and an accumulator (each node bound again) differentiates
    the rewritten graph: its gradients and JVPs are the eager program's."""
    f, (x, t, w) = _program(*REWRITTEN["kept_axis_after"])
    fn = tf.function(f)
    fn(x, t, w)
    assert "reduce_sum" not in _names(fn, x, t, w)
    u = _normal(*f(x, t, w).shape)
    grads = []
    for g in (fn, f):
        with tf.GradientTape() as tape:
            tape.watch([x, t, w])
            total = tf.reduce_sum(g(x, t, w) * u)
        grads.append(tape.gradient(total, [x, t, w]))
    for got, want in zip(*grads):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12,
                                   atol=1e-12 * np.abs(want.numpy()).max())
    tangents = [_normal(*a.shape) for a in (x, t, w)]
    jvps = []
    for g in (fn, f):
        with tf.autodiff.ForwardAccumulator([x, t, w], tangents) as acc:
            y = g(x, t, w)
        jvps.append(acc.jvp(y).numpy())
    np.testing.assert_allclose(jvps[0], jvps[1], rtol=1e-12, atol=1e-12 * np.abs(jvps[1]).max())


def test_a_forward_mode_jacobian_of_a_skinned_model():
    """A hand's vertices skinned by posed bones, its Jacobian by jacfwd: the tangent batch
    makes the product [26, 22, 544, 4]; replayed, the tangents' sum is one product, and
    the Jacobian is the eager one."""
    x, w = _normal(544, 4), tf.constant(RNG.random((22, 544, 1)))
    base = _normal(22, 4, 4)

    def vertices(theta):
        angles = tf.reshape(theta[:22], (22, 1, 1))
        t = base * tf.cos(angles) + tf.reshape(theta[4:26], (22, 1, 1))
        return tf.reduce_sum(tf.matmul(x, t) * w, axis=0)

    jac = lambda th: tf.jacfwd(vertices)(th)  # noqa: E731
    theta = _normal(26)
    want = jac(theta).numpy()
    fn = tf.function(jac)
    fn(theta)
    got = fn(theta).numpy()
    graph = fn.get_concrete_function(theta).graph
    batched = [n for n in graph.nodes if getattr(n, "prim", None) is not None
               and n.prim.name == "matmul" and len(graph.avals[n.inputs[1]][0]) == 4]
    assert not batched  # the tangents' [26, 22, 4, 4] went into one 2-D product
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())


def test_compiled_agrees_with_eager():
    pytest.importorskip("jax")
    for case in ("bones", "kept_axes_around", "one_column"):
        f, args = _program(*REWRITTEN[case])
        fn = tf.function(f, jit_compile=True)
        fn(*args)
        got = fn(*args).numpy()
        assert "XLA" in fn.experimental_execution_report()[0]
        want = f(*args).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12 * np.abs(want).max())



def test_one_trace_serves_every_size_of_a_kept_batch():
    """A signature whose kept batch is None: the rewritten graph holds no size that the
    batch decides (NOTE(two-sizes)), so two traces serve every size, at the right values."""
    x, w = _normal(544, 4), _normal(22, 544, 1)

    def f(t):
        return tf.reduce_sum(tf.matmul(x, t) * w, axis=1)

    fn = tf.function(f, input_signature=[tf.TensorSpec([None, 22, 4, 4], tf.float64)])
    for batch in (8, 16, 24, 40, 9):
        t = _normal(batch, 22, 4, 4)
        want = f(t).numpy()
        np.testing.assert_allclose(fn(t).numpy(), want, rtol=1e-12,
                                   atol=1e-12 * np.abs(want).max())
    assert fn.experimental_get_tracing_count() == 2
    assert "reduce_sum" not in _names(fn, t)
