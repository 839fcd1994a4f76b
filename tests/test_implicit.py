"""custom_root and custom_linear_solve (tapeflow/implicit.py): values, derivatives against
finite differences and closed forms in both modes and to second order, vmap against a
loop, traced against eager (size-generic and compiled too), bad input, and JAX's
jax.lax.custom_root / custom_linear_solve on the same problems (skipped without JAX)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.graph.trace import TracingError

F64 = tf.float64


# ------------------------------------------------------------------ solvers of the user's
def newton_sqrt(f, x):
    """Newton's method for x ** 2 - a = 0 (f' = 2x): a Python loop reading values."""
    for _ in range(60):
        step = f(x) / (2.0 * x)
        x = x - step
        if float(tf.reduce_max(tf.abs(step))) < 1e-15:
            break
    return x


def scalar_tangent_solve(g, y):
    return y / g(tf.ones_like(y))


def dense_tangent_solve(g, y):
    """Solve g(x) = y for a linear map g of vectors: its matrix, column by column."""
    n = int(y.shape[0])
    cols = [g(tf.one_hot(i, n, dtype=y.dtype)) for i in range(n)]
    return tf.linalg.solve(tf.stack(cols, axis=1), y[:, None])[:, 0]


def cg(matvec, b, tol=1e-13, maxiter=200):
    """Conjugate gradients in tapeflow ops, stopping on the residual's value."""
    x = tf.zeros_like(b)
    r = b - matvec(x)
    p, rs = r, tf.reduce_sum(r * r)
    for _ in range(maxiter):
        if float(tf.sqrt(rs)) <= tol * (1.0 + float(tf.norm(b))):
            break
        ap = matvec(p)
        alpha = rs / tf.reduce_sum(p * ap)
        x, r = x + alpha * p, r - alpha * ap
        new = tf.reduce_sum(r * r)
        p, rs = r + (new / rs) * p, new
    return x


def newton_system(f, x):
    """Newton's method for a system, the Jacobian by forward mode over its columns."""
    for _ in range(50):
        _, jac = tf.linearize(f, x)
        r = f(x)
        step = dense_tangent_solve(jac, r)
        x = x - step
        if float(tf.reduce_max(tf.abs(step))) < 1e-14:
            break
    return x


def sqrt_root(a):
    return tf.custom_root(lambda x: x ** 2 - a, tf.ones_like(a), newton_sqrt,
                          scalar_tangent_solve)


def system_root(b, w):
    # x + 0.5 tanh(W x) = b: a root for every b, unique (the map is monotone)
    return tf.custom_root(lambda x: x + 0.5 * tf.tanh(tf.linalg.matvec(w, x)) - b,
                          tf.zeros_like(b), newton_system, dense_tangent_solve)


def spd(m):
    return tf.matmul(m, m, transpose_b=True) + 3.0 * tf.eye(int(m.shape[0]), dtype=m.dtype)


def cg_solve(m, b):
    a = spd(m)
    return tf.custom_linear_solve(lambda v: tf.linalg.matvec(a, v), b, cg, symmetric=True)


def dense_solve(m, b):
    # a non-symmetric system, its transpose solved by the same solver of the map it is
    # given (a solver reads what varies with the call through that map: NOTE(implicit))
    a = m + 3.0 * tf.eye(int(m.shape[0]), dtype=m.dtype)
    return tf.custom_linear_solve(lambda v: tf.linalg.matvec(a, v), b, dense_tangent_solve,
                                  transpose_solve=dense_tangent_solve)


RNG = np.random.default_rng(0)
A = np.array([2.0, 3.0, 0.5])
W = 0.3 * RNG.standard_normal((3, 3))
B = RNG.standard_normal(3)
M = 0.5 * RNG.standard_normal((3, 3))


# ------------------------------------------------------------------ custom_root
def test_root_value_and_gradient_closed_form():
    a = tf.constant(A)
    with tf.GradientTape() as tape:
        tape.watch(a)
        r = sqrt_root(a)
        loss = tf.reduce_sum(r ** 3)
    np.testing.assert_allclose(r.numpy(), np.sqrt(A), rtol=1e-14)
    # d/da sum sqrt(a) ** 3 = 1.5 sqrt(a)
    np.testing.assert_allclose(tape.gradient(loss, a).numpy(), 1.5 * np.sqrt(A), rtol=1e-12)


@pytest.mark.parametrize("fn, args", [(sqrt_root, [A]), (system_root, [B, W])],
                         ids=["scalar", "system"])
def test_root_derivatives_to_second_order(fn, args):
    # finite differences, forward against reverse (<u, J v> both ways), and second order
    tf.testing.check_grads(fn, args, order=2, atol=1e-6, rtol=1e-6)


def test_root_forward_and_reverse_agree_and_match_the_implicit_function_theorem():
    b, w = tf.constant(B), tf.constant(W)
    jf = tf.jacfwd(system_root)(b, w)
    jr = tf.jacrev(system_root)(b, w)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-10, atol=1e-12)
    x = system_root(b, w).numpy()
    s = 1.0 - np.tanh(W @ x) ** 2
    dfdx = np.eye(3) + 0.5 * s[:, None] * W   # d/db x* = (d_x f)^-1
    np.testing.assert_allclose(jf.numpy(), np.linalg.inv(dfdx), rtol=1e-10, atol=1e-12)
    u, v = RNG.standard_normal(3), RNG.standard_normal(3)
    _, jv = tf.jvp(lambda bb: system_root(bb, w), (b,), (tf.constant(v),))
    _, pull = tf.vjp(lambda bb: system_root(bb, w), b)
    (uj,) = pull(tf.constant(u))
    np.testing.assert_allclose(np.dot(u, jv.numpy()), np.dot(uj.numpy(), v), rtol=1e-12)


def test_root_of_a_structure_with_a_variable():
    p = tf.Variable(np.array([1.5, 4.0]))

    def f(x):  # {"u": u, "v": v}: u ** 2 = p0, v ** 2 = p1 u
        return {"u": x["u"] ** 2 - p[0], "v": x["v"] ** 2 - p[1] * x["u"]}

    def solve(f, x):
        u = newton_sqrt(lambda t: t ** 2 - p[0], x["u"])
        v = newton_sqrt(lambda t: t ** 2 - p[1] * u, x["v"])
        return {"u": u, "v": v}

    def tangent(g, y):  # g is f's linearization or its transpose: its 2 x 2 matrix
        one, zero = tf.ones_like(y["u"]), tf.zeros_like(y["u"])
        cols = [g({"u": one, "v": zero}), g({"u": zero, "v": one})]
        mat = tf.stack([tf.stack([c["u"], c["v"]]) for c in cols], axis=1)
        x = tf.linalg.solve(mat, tf.stack([y["u"], y["v"]])[:, None])[:, 0]
        return {"u": x[0], "v": x[1]}

    guess = {"u": tf.constant(1.0, F64), "v": tf.constant(1.0, F64)}
    with tf.GradientTape() as tape:
        x = tf.custom_root(f, guess, solve, tangent)
        loss = x["v"]
    u = np.sqrt(1.5)
    np.testing.assert_allclose([x["u"].numpy(), x["v"].numpy()], [u, np.sqrt(4.0 * u)])
    # v = sqrt(p1 sqrt(p0)): dv/dp0 = v / (4 p0), dv/dp1 = v / (2 p1)
    v = np.sqrt(4.0 * u)
    np.testing.assert_allclose(tape.gradient(loss, p).numpy(), [v / 6.0, v / 8.0],
                               rtol=1e-12)


def test_root_has_aux_and_no_derivative_for_the_guess():
    a = tf.constant(A)
    guess = tf.ones(3, F64)

    def counting(f, x):
        return newton_sqrt(f, x), {"steps": 7, "residual": tf.reduce_max(tf.abs(f(x)))}

    with tf.GradientTape(persistent=True) as tape:
        tape.watch([a, guess])
        r, aux = tf.custom_root(lambda x: x ** 2 - a, guess, counting, scalar_tangent_solve,
                                has_aux=True)
    assert int(aux["steps"]) == 7 and aux["steps"].dtype == tf.int64
    assert aux["residual"].dtype == F64
    assert tape.gradient(r, guess) is None
    assert tape.gradient(aux["residual"], a) is None
    np.testing.assert_allclose(tape.gradient(r, a).numpy(), 0.5 / np.sqrt(A))


def test_root_vmap_equals_a_loop():
    batch = np.array([[2.0, 3.0, 0.5], [1.0, 9.0, 4.0]])
    got = tf.vmap(sqrt_root)(batch)
    np.testing.assert_allclose(got.numpy(), np.sqrt(batch), rtol=1e-14)
    bs = RNG.standard_normal((4, 3))
    got = tf.vmap(system_root, in_axes=(0, None))(bs, W)
    want = np.stack([system_root(tf.constant(b), tf.constant(W)).numpy() for b in bs])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-13, atol=1e-14)
    grads = tf.vmap(tf.grad(lambda b: tf.reduce_sum(system_root(b, tf.constant(W)) ** 2)))(bs)
    loop = [tf.grad(lambda b: tf.reduce_sum(system_root(b, tf.constant(W)) ** 2))(b) for b in bs]
    np.testing.assert_allclose(grads.numpy(), np.stack([g.numpy() for g in loop]), rtol=1e-12)


def test_root_traced_once_and_replayed():
    calls = []

    def counted(f, x):
        calls.append(1)
        return newton_sqrt(f, x)

    @tf.function
    def root_and_grad(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            r = tf.custom_root(lambda x: x ** 2 - a, tf.ones_like(a), counted,
                               scalar_tangent_solve)
        return r, tape.gradient(r, a)

    for scale in (1.0, 2.0, 5.0):
        r, g = root_and_grad(tf.constant(A * scale))
        np.testing.assert_allclose(r.numpy(), np.sqrt(A * scale), rtol=1e-14)
        np.testing.assert_allclose(g.numpy(), 0.5 / np.sqrt(A * scale), rtol=1e-12)
    assert root_and_grad.experimental_get_tracing_count() == 1
    assert len(calls) == 3  # the solver runs at every call, not only when traced
    graph = root_and_grad.get_concrete_function(tf.constant(A)).graph
    names = [n.prim.name for n in graph.nodes if hasattr(n, "prim")]
    assert names.count("custom_root") == 1 and "abs" not in names  # not the solver's ops


def test_root_size_generic_trace():
    spec = [tf.TensorSpec([None], F64)]
    value = tf.function(sqrt_root, input_signature=spec)
    grad = tf.function(tf.grad(lambda a: tf.reduce_sum(sqrt_root(a))), input_signature=spec)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for n in (2, 3, 5, 8):
            a = np.arange(1.0, n + 1.0)
            np.testing.assert_allclose(value(tf.constant(a)).numpy(), np.sqrt(a), rtol=1e-14)
            np.testing.assert_allclose(grad(tf.constant(a)).numpy(), 0.5 / np.sqrt(a),
                                       rtol=1e-12)
    assert value.experimental_get_tracing_count() == 2  # then one graph serves every size
    assert grad.experimental_get_tracing_count() == 2


def test_root_compiled():
    pytest.importorskip("jax")
    grad = tf.grad(lambda b: tf.reduce_sum(system_root(b, tf.constant(W)) ** 2))
    compiled = tf.function(grad, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no fallback to the NumPy replay
        for b in (B, 2.0 * B):
            np.testing.assert_allclose(compiled(tf.constant(b)).numpy(),
                                       grad(tf.constant(b)).numpy(), rtol=1e-12)
    assert not compiled.get_concrete_function(tf.constant(B)).executable.inner._missing


def test_root_float32():
    r = sqrt_root(tf.constant(A, tf.float32))
    assert r.dtype == tf.float32
    g = tf.grad(lambda a: tf.reduce_sum(sqrt_root(a)))(tf.constant(A, tf.float32))
    np.testing.assert_allclose(g.numpy(), 0.5 / np.sqrt(A), rtol=1e-5)


def test_root_errors_name_the_argument():
    a = tf.constant([2.0, 3.0])
    ts = scalar_tangent_solve
    with pytest.raises(InvalidArgumentError, match=r"`solve`'s result has shape \(3,\); expected"
                                                   r" shape \(2,\), that of `initial_guess`"):
        tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: tf.ones(3), ts)
    with pytest.raises(InvalidArgumentError, match="`solve`'s result has dtype float64; "
                                                   "expected float32"):
        tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: tf.ones(2, F64), ts)
    with pytest.raises(InvalidArgumentError, match=r"`f`'s result has shape \(\)"):
        tf.custom_root(lambda x: tf.reduce_sum(x), tf.ones(2), lambda f, x: x, ts)
    with pytest.raises(InvalidArgumentError, match=r"the argument of `f` has shape \(3,\)"):
        tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: f(tf.ones(3)), ts)
    with pytest.raises(InvalidArgumentError, match="`initial_guess` has dtype int32"):
        tf.custom_root(lambda x: x, tf.constant([1, 2]), lambda f, x: x, ts)
    with pytest.raises(InvalidArgumentError, match="returns a pair"):
        tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: x, ts, has_aux=True)
    with pytest.raises(TypeError, match="`tangent_solve` must be callable"):
        tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: x, None)
    with pytest.raises(TracingError, match="`f` reads a tensor's value"):
        tf.custom_root(lambda x: x * float(x[0]), tf.ones(2), lambda f, x: x, ts)
    with tf.GradientTape() as tape:
        tape.watch(a)
        r = tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: tf.sqrt(a),
                           lambda g, y: tf.ones(3))
    with pytest.raises(InvalidArgumentError, match=r"`tangent_solve`'s result has shape \(3,\)"):
        tape.gradient(r, a)
    # a NumPy array of the same kind is cast; a Python number too
    r = tf.custom_root(lambda x: x ** 2 - a, tf.ones(2), lambda f, x: np.sqrt([2.0, 3.0]), ts)
    assert r.dtype == tf.float32


# ------------------------------------------------------------------ custom_linear_solve
def test_linear_solve_with_cg_closed_form():
    m, b = tf.constant(M), tf.constant(B)
    with tf.GradientTape() as tape:
        tape.watch([m, b])
        x = cg_solve(m, b)
        loss = tf.reduce_sum(x ** 2)
    a = M @ M.T + 3.0 * np.eye(3)
    xs = np.linalg.solve(a, B)
    np.testing.assert_allclose(x.numpy(), xs, rtol=1e-11)
    gm, gb = tape.gradient(loss, [m, b])
    lam = np.linalg.solve(a, 2.0 * xs)  # b-bar; A-bar = -lam x^T, through A = M M^T + 3I
    np.testing.assert_allclose(gb.numpy(), lam, rtol=1e-10)
    abar = -np.outer(lam, xs)
    np.testing.assert_allclose(gm.numpy(), (abar + abar.T) @ M, rtol=1e-10, atol=1e-13)


@pytest.mark.parametrize("fn", [cg_solve, dense_solve], ids=["cg_symmetric", "transposed"])
def test_linear_solve_derivatives_to_second_order(fn):
    tf.testing.check_grads(fn, [M, B], order=2, atol=1e-6, rtol=1e-6)


def test_linear_solve_without_transpose_solve():
    a = tf.constant(M + 3.0 * np.eye(3))
    b = tf.constant(B)

    def solve(bb):
        return tf.custom_linear_solve(lambda v: tf.linalg.matvec(a, v), bb,
                                      lambda mv, r: tf.linalg.solve(a, r[:, None])[:, 0])

    _, jv = tf.jvp(solve, (b,), (tf.ones(3, F64),))  # forward mode needs no transpose
    np.testing.assert_allclose(jv.numpy(), np.linalg.solve(a.numpy(), np.ones(3)), rtol=1e-12)
    with pytest.raises(TypeError, match="needs `transpose_solve`"):
        tf.grad(lambda bb: tf.reduce_sum(solve(bb)))(b)


def test_linear_solve_of_a_structure_with_aux():
    d = tf.constant([2.0, 4.0], F64)

    def matvec(v):
        return {"p": d * v["p"], "q": 3.0 * v["q"]}

    def solve(mv, r):
        return {"p": r["p"] / d, "q": r["q"] / 3.0}, tf.constant(1, tf.int32)

    b = {"p": tf.constant([1.0, 2.0], F64), "q": tf.ones([2, 2], F64)}
    with tf.GradientTape() as tape:
        tape.watch([d, b["p"]])
        x, aux = tf.custom_linear_solve(matvec, b, solve, symmetric=True, has_aux=True)
        loss = tf.reduce_sum(x["p"]) + tf.reduce_sum(x["q"])
    assert int(aux) == 1 and aux.dtype == tf.int32
    np.testing.assert_allclose(x["p"].numpy(), [0.5, 0.5])
    gd, gp = tape.gradient(loss, [d, b["p"]])
    np.testing.assert_allclose(gp.numpy(), [0.5, 0.25])
    np.testing.assert_allclose(gd.numpy(), [-1.0 / 4.0, -2.0 / 16.0])


def test_linear_solve_vmap_equals_a_loop():
    ms = 0.5 * RNG.standard_normal((3, 3, 3))
    bs = RNG.standard_normal((3, 3))
    got = tf.vmap(cg_solve)(ms, bs)
    want = np.stack([np.linalg.solve(m @ m.T + 3.0 * np.eye(3), b) for m, b in zip(ms, bs)])
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-11)
    grad = tf.grad(lambda m, b: tf.reduce_sum(tf.sin(dense_solve(m, b))), argnums=(0, 1))
    gm, gb = tf.vmap(grad)(ms, bs)
    for k in range(3):
        lm, lb = grad(tf.constant(ms[k]), tf.constant(bs[k]))
        np.testing.assert_allclose(gm.numpy()[k], lm.numpy(), rtol=1e-12)
        np.testing.assert_allclose(gb.numpy()[k], lb.numpy(), rtol=1e-12)
    assert tf.vmap(cg_solve)(np.zeros((0, 3, 3)), np.zeros((0, 3))).shape == (0, 3)


def test_linear_solve_traced_and_compiled_equal_eager():
    grad = tf.grad(lambda m, b: tf.reduce_sum(cg_solve(m, b) ** 2), argnums=(0, 1))
    traced = tf.function(grad)
    for scale in (1.0, 2.0):
        want = grad(tf.constant(M * scale), tf.constant(B))
        got = traced(tf.constant(M * scale), tf.constant(B))
        for w, g in zip(want, got):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12)
    assert traced.experimental_get_tracing_count() == 1
    pytest.importorskip("jax")
    compiled = tf.function(grad, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = compiled(tf.constant(M), tf.constant(B))
    for w, g in zip(grad(tf.constant(M), tf.constant(B)), got):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-10)


def test_linear_solve_errors_name_the_argument():
    b = tf.constant([1.0, 1.0])
    with pytest.raises(InvalidArgumentError, match=r"`matvec`'s result has shape \(1,\); "
                                                   r"expected shape \(2,\), that of `b`"):
        tf.custom_linear_solve(lambda v: v[:1], b, lambda mv, r: r)
    with pytest.raises(InvalidArgumentError, match="`solve`'s result is a tuple"):
        tf.custom_linear_solve(lambda v: v, b, lambda mv, r: (r, 3))
    with pytest.raises(InvalidArgumentError, match="`solve`'s result has dtype float64"):
        tf.custom_linear_solve(lambda v: v, b, lambda mv, r: tf.cast(r, F64))
    with pytest.raises(InvalidArgumentError, match="leaf 1 of `b` has dtype int32"):
        tf.custom_linear_solve(lambda v: v, [b, tf.constant([1, 2])], lambda mv, r: r)
    with pytest.raises(TypeError, match="`matvec` must be callable"):
        tf.custom_linear_solve(None, b, lambda mv, r: r)


# ------------------------------------------------------------------ against JAX
@pytest.fixture
def jax64():
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        yield jax


def test_newton_root_against_jax(jax64):
    jax, jnp = jax64, jax64.numpy

    def jax_newton(f, x):
        for _ in range(30):
            x = x - f(x) / (2.0 * x)
        return x

    def jax_sqrt(a):
        return jax.lax.custom_root(lambda x: x ** 2 - a, 1.0, jax_newton,
                                   lambda g, y: y / g(1.0))

    def ours(a):
        return tf.custom_root(lambda x: x ** 2 - a, tf.constant(1.0, F64), newton_sqrt,
                              scalar_tangent_solve)

    for a in (2.0, 0.3, 7.0):
        ta = tf.constant(a, F64)
        assert float(ours(ta)) == pytest.approx(float(jax_sqrt(a)), rel=1e-15)
        assert float(tf.grad(ours)(ta)) == pytest.approx(float(jax.grad(jax_sqrt)(a)), rel=1e-13)
        second = tf.grad(tf.grad(ours))(ta)
        assert float(second) == pytest.approx(float(jax.grad(jax.grad(jax_sqrt))(a)), rel=1e-12)
        _, tangent = tf.jvp(ours, (ta,), (tf.constant(1.0, F64),))
        assert float(tangent) == pytest.approx(float(jax.jvp(jax_sqrt, (a,), (1.0,))[1]),
                                               rel=1e-13)
    assert jnp is not None


def test_cg_linear_solve_against_jax(jax64):
    jax, jnp = jax64, jax64.numpy
    from jax.scipy.sparse.linalg import cg as jax_cg

    def jax_loss(m, b):
        a = m @ m.T + 3.0 * jnp.eye(3)
        x = jax.lax.custom_linear_solve(lambda v: a @ v, b,
                                        lambda mv, r: jax_cg(mv, r, tol=1e-13)[0],
                                        symmetric=True)
        return jnp.sum(jnp.sin(x))

    def loss(m, b):
        return tf.reduce_sum(tf.sin(cg_solve(m, b)))

    want = jax.grad(jax_loss, argnums=(0, 1))(jnp.asarray(M), jnp.asarray(B))
    got = tf.grad(loss, argnums=(0, 1))(tf.constant(M), tf.constant(B))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g.numpy(), np.asarray(w), rtol=1e-9, atol=1e-12)
    # a Hessian-vector product in b, forward over reverse in both
    v = np.array([0.3, -1.0, 0.5])
    hw = jax.jvp(jax.grad(lambda b: jax_loss(jnp.asarray(M), b)), (jnp.asarray(B),),
                 (jnp.asarray(v),))[1]
    hg = tf.hvp(lambda b: loss(tf.constant(M), b), (tf.constant(B),), (tf.constant(v),))
    np.testing.assert_allclose(np.asarray(hg).ravel(), np.asarray(hw), rtol=1e-8, atol=1e-11)


def test_has_aux_against_jax(jax64):
    jax, jnp = jax64, jax64.numpy

    def jax_solve(mv, r):
        return r / 2.0, {"iters": jnp.asarray(3)}

    def ours_solve(mv, r):
        return r / 2.0, {"iters": 3}

    b = np.array([1.0, -2.0])
    jx, jaux = jax.lax.custom_linear_solve(lambda v: 2.0 * v, jnp.asarray(b), jax_solve,
                                           symmetric=True, has_aux=True)
    x, aux = tf.custom_linear_solve(lambda v: 2.0 * v, tf.constant(b), ours_solve,
                                    symmetric=True, has_aux=True)
    np.testing.assert_array_equal(x.numpy(), np.asarray(jx))
    assert int(aux["iters"]) == int(jaux["iters"])

    def jax_root(a):
        return jax.lax.custom_root(lambda x: x ** 2 - a, 1.0,
                                   lambda f, x: (jnp.sqrt(a), jnp.asarray(1.0)),
                                   lambda g, y: y / g(1.0), has_aux=True)

    def ours_root(a):
        return tf.custom_root(lambda x: x ** 2 - a, tf.constant(1.0, F64),
                              lambda f, x: (tf.sqrt(a), 1.0), scalar_tangent_solve,
                              has_aux=True)

    (jr, jn), (r, n) = jax_root(3.0), ours_root(tf.constant(3.0, F64))
    assert float(r) == float(jr) and float(n) == float(jn)
    g = tf.grad(lambda a: ours_root(a)[0])(tf.constant(3.0, F64))
    assert float(g) == pytest.approx(float(jax.grad(lambda a: jax_root(a)[0])(3.0)), rel=1e-14)
