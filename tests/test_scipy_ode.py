"""tapeflow.scipy_ode: solve_ivp differentiable in y0 and args, by forward sensitivities
and the adjoint method, against central finite differences of the solve (float64, tight
tolerances), against each other, under every transform, and against diffrax where it is
installed."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402
from tapeflow import ode_systems, scipy_ode  # noqa: E402
from tapeflow.errors import InvalidArgumentError  # noqa: E402
from tapeflow.scipy_ode import solve_ivp  # noqa: E402

F64 = tf.float64


# ------------------------------------------------------------------------ problems
def lotka_volterra(t, y, p):
    x, z = y[0], y[1]
    return tf.stack([p[0] * x - p[1] * x * z, p[2] * x * z - p[3] * z])


LV_P = np.array([1.5, 1.0, 1.0, 3.0])
LV_Y0 = np.array([1.0, 1.0])
LV_T = np.linspace(0.0, 4.0, 9)


def robertson(t, y, k):
    y1, y2, y3 = y[0], y[1], y[2]
    return tf.stack([-k[0] * y1 + k[2] * y2 * y3,
                     k[0] * y1 - k[2] * y2 * y3 - k[1] * y2 ** 2,
                     k[1] * y2 ** 2])


ROB_K = np.array([0.04, 3e7, 1e4])
ROB_Y0 = np.array([1.0, 0.0, 0.0])
ROB_T = np.array([1e-3, 0.1, 1.0, 10.0, 40.0])


def _laplacian(g):
    n = g.shape[0]
    p = tf.concat([g[:1], g, g[-1:]], 0)
    p = tf.concat([p[:, :1], p, p[:, -1:]], 1)
    return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g) * float((n - 1) ** 2)


def brusselator(n):
    def rhs(t, y, p):
        u = tf.reshape(y[: n * n], [n, n])
        v = tf.reshape(y[n * n:], [n, n])
        du = p[0] + u * u * v - (p[1] + 1.0) * u + p[2] * _laplacian(u)
        dv = p[1] * u - u * u * v + p[2] * _laplacian(v)
        return tf.concat([tf.reshape(du, [-1]), tf.reshape(dv, [-1])], 0)
    x = np.linspace(0.0, 1.0, n)
    y0 = np.concatenate([(0.5 + np.outer(np.ones(n), x)).ravel(),
                         (1.0 + 0.5 * np.outer(x, np.ones(n))).ravel()])
    return rhs, y0


BRU_P = np.array([1.0, 3.4, 0.02])
BRU_T = np.array([0.1, 0.3, 0.5])


def _weights(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _loss(fun, span, t_eval, method, weights, **kw):
    """A scalar of the whole trajectory: sum(W * y(t_eval))."""
    def loss(y0, p):
        sol = solve_ivp(fun, span, y0, method=method, t_eval=t_eval, args=(p,), **kw)
        return tf.reduce_sum(sol.y * weights)
    return loss


def _fd_gradient(loss, y0, p, directions=None, rel=1e-6):
    """Central finite differences of a loss of NumPy y0 and p (float64), per element of
    (y0, p), or along the given directions (pairs of arrays)."""
    def value(a, b):
        return float(loss(tf.constant(a), tf.constant(b)))
    if directions is None:
        directions = []
        for i in range(y0.size):
            e = np.zeros_like(y0)
            e[i] = 1.0
            directions.append((e, np.zeros_like(p)))
        for i in range(p.size):
            e = np.zeros_like(p)
            e[i] = 1.0
            directions.append((np.zeros_like(y0), e))
    out = []
    for dy, dp in directions:
        h = rel * max(1.0, float(np.max(np.abs(np.concatenate([y0 * (dy != 0), p * (dp != 0)])))))
        out.append((value(y0 + h * dy, p + h * dp) - value(y0 - h * dy, p - h * dp)) / (2 * h))
    return np.array(out)


def _grad(loss, y0, p):
    gy, gp = tf.grad(loss, argnums=(0, 1))(tf.constant(y0), tf.constant(p))
    return np.concatenate([gy.numpy(), gp.numpy()])


def _close(got, want, rtol, scale=None):
    got, want = np.asarray(got), np.asarray(want)
    scale = np.max(np.abs(want)) if scale is None else scale
    err = np.max(np.abs(got - want)) / scale
    assert err < rtol, f"relative error {err:.2e} >= {rtol:.0e}\n got  {got}\n want {want}"


# ------------------------------------------------------------------------ gradients vs FD
@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_lotka_volterra_gradients_match_finite_differences(sensitivity):
    w = _weights((2, LV_T.size))
    loss = _loss(lotka_volterra, (0.0, 4.0), LV_T, "DOP853", w, rtol=1e-10, atol=1e-12,
                 sensitivity=sensitivity)
    tight = _loss(lotka_volterra, (0.0, 4.0), LV_T, "DOP853", w, rtol=1e-13, atol=1e-14)
    _close(_grad(loss, LV_Y0, LV_P), _fd_gradient(tight, LV_Y0, LV_P), 1e-6)


@pytest.fixture(scope="module")
def robertson_reference():
    """Central differences of Robertson's loss along y1(0) and each rate constant (their
    scales span 10^9), of solves at rtol 1e-11; y2(0) and y3(0) are checked through the
    agreement of the two methods."""
    w = _weights((3, ROB_T.size), seed=1)
    tight = _loss(robertson, (0.0, 40.0), ROB_T, "BDF", w, rtol=1e-11,
                  atol=[1e-14, 1e-19, 1e-14])
    dirs = [(np.array([1.0, 0.0, 0.0]), np.zeros(3))] + [(np.zeros(3), e) for e in np.eye(3)]
    return w, _fd_gradient(tight, ROB_Y0, ROB_K, dirs, rel=1e-5)


@pytest.mark.parametrize("method", ["BDF", "Radau", "LSODA"])
def test_robertson_gradients_match_finite_differences_and_each_other(method,
                                                                     robertson_reference):
    w, fd = robertson_reference
    opts = {"rtol": 1e-7 if method == "Radau" else 1e-8,
            "atol": [1e-12, 1e-16, 1e-12]}
    fwd = _grad(_loss(robertson, (0.0, 40.0), ROB_T, method, w, sensitivity="forward", **opts),
                ROB_Y0, ROB_K)
    adj = _grad(_loss(robertson, (0.0, 40.0), ROB_T, method, w, sensitivity="adjoint", **opts),
                ROB_Y0, ROB_K)
    for got in (fwd, adj):
        np.testing.assert_allclose(got[[0, 3, 4, 5]], fd, rtol=2e-6)
    np.testing.assert_allclose(adj, fwd, rtol=2e-6)


def test_brusselator_8x8_gradients_match_finite_differences():
    rhs, y0 = brusselator(8)
    w = _weights((128, BRU_T.size), seed=2)
    tight = _loss(rhs, (0.0, 0.5), BRU_T, "BDF", w, rtol=1e-12, atol=1e-13)
    v = _weights(128, seed=3)
    dirs = [(v, np.zeros(3))] + [(np.zeros(128), e) for e in np.eye(3)]
    fd = _fd_gradient(tight, y0, BRU_P, dirs)
    opts = {"rtol": 1e-9, "atol": 1e-11}
    # the adjoint: the whole gradient (128 + 3 inputs) in one backward solve
    adj = _grad(_loss(rhs, (0.0, 0.5), BRU_T, "BDF", w, sensitivity="adjoint", **opts),
                y0, BRU_P)
    _close([adj[:128] @ v, *adj[128:]], fd, 1e-5)
    # forward sensitivities (forward mode): the parameters' gradient (3 columns of one
    # solve), and y0's along v (one column)
    p_grad = tf.jacfwd(lambda p: _loss(rhs, (0.0, 0.5), BRU_T, "BDF", w, **opts)(
        tf.constant(y0), p))(tf.constant(BRU_P))
    _, along_v = tf.jvp(lambda y: _loss(rhs, (0.0, 0.5), BRU_T, "BDF", w, **opts)(
        y, tf.constant(BRU_P)), (tf.constant(y0),), (tf.constant(v),))
    _close([along_v, *p_grad.numpy()], fd, 1e-5)
    _close(p_grad, adj[128:], 1e-6)


def test_accuracy_follows_the_tolerances():
    # y' = A y: the exact gradient of sum(W * y(t)) in A's scale and y0, from expm.
    A = np.array([[-1.0, 0.5], [-0.5, -1.2]])
    t = np.array([0.5, 1.0, 2.0])
    w = _weights((2, 3), seed=4)
    y0 = np.array([1.0, -0.5])

    def exact(c):
        return sum(w[:, i] @ scipy.linalg.expm(c * A * ti) @ y0 for i, ti in enumerate(t))

    want = (exact(1 + 1e-6) - exact(1 - 1e-6)) / 2e-6
    errors = {}
    for rtol in (1e-4, 1e-8):
        for sens in ("forward", "adjoint"):
            g = tf.grad(lambda c: tf.reduce_sum(solve_ivp(
                lambda s, y, c: c * tf.linalg.matvec(tf.constant(A), y), (0.0, 2.0), y0,
                method="RK45", t_eval=t, args=(c,), rtol=rtol, atol=rtol * 1e-2,
                sensitivity=sens).y * w))(tf.constant(1.0, F64))
            errors[rtol, sens] = abs(float(g) - want) / abs(want)
    for sens in ("forward", "adjoint"):
        assert errors[1e-4, sens] < 1e-2
        assert errors[1e-8, sens] < 1e-6
        assert errors[1e-8, sens] < errors[1e-4, sens]


# ------------------------------------------------------------------------ transforms
def _lv_y(y0, p, sensitivity="auto"):
    return solve_ivp(lotka_volterra, (0.0, 4.0), y0, method="DOP853", t_eval=LV_T,
                     args=(p,), rtol=1e-10, atol=1e-12, sensitivity=sensitivity).y


def test_jacfwd_equals_jacrev_and_both_methods_agree():
    y0, p = tf.constant(LV_Y0), tf.constant(LV_P)
    jf = tf.jacfwd(_lv_y, argnums=(0, 1))(y0, p)
    for sens in ("forward", "adjoint"):
        jr = tf.jacrev(lambda a, b: _lv_y(a, b, sens), argnums=(0, 1))(y0, p)
        for a, b in zip(jf, jr):
            assert a.shape == b.shape
            _close(b, a, 1e-7)
    assert jf[1].shape == (2, LV_T.size, 4)


def test_forward_accumulator_jvp_vjp_and_tape_agree():
    y0, p = tf.constant(LV_Y0), tf.constant(LV_P)
    dp, dy = tf.constant(_weights(4, 5)), tf.constant(_weights(2, 6))
    with tf.autodiff.ForwardAccumulator((y0, p), (dy, dp)) as acc:
        y = _lv_y(y0, p)
    jac = tf.jacfwd(_lv_y, argnums=(0, 1))(y0, p)
    want = np.einsum("abi,i->ab", jac[0], dy) + np.einsum("abi,i->ab", jac[1], dp)
    _close(acc.jvp(y), want, 1e-7)
    _, t = tf.jvp(_lv_y, (y0, p), (dy, dp))
    _close(t, want, 1e-7)
    u = tf.constant(_weights((2, LV_T.size), 7))
    _, pull = tf.vjp(lambda a, b: _lv_y(a, b, "adjoint"), y0, p)
    gy, gp = pull(u)
    _close(gp, np.einsum("ab,abi->i", u, jac[1]), 1e-7)
    _close(gy, np.einsum("ab,abi->i", u, jac[0]), 1e-7)
    with tf.GradientTape() as tape:
        tape.watch(p)
        loss = tf.reduce_sum(_lv_y(y0, p, "forward") * u)
    _close(tape.gradient(loss, p), gp, 1e-7)


def test_second_derivatives():
    # y' = -k y: y(t) = y0 e^{-k t}, so d2/dk2 sum(y) = sum(t^2 y0 e^{-k t}).
    t = np.array([0.5, 1.0])

    def f(k, sens):
        return tf.reduce_sum(solve_ivp(lambda s, y, k: -k * y, (0.0, 1.0), np.ones(1),
                                       method="RK45", t_eval=t, args=(k,), rtol=1e-10,
                                       atol=1e-12, sensitivity=sens).y)

    k = tf.constant(1.3, F64)
    want = float(np.sum(t ** 2 * np.exp(-1.3 * t)))
    for sens in ("forward", "adjoint"):
        assert abs(float(tf.hessian(lambda k: f(k, sens))(k)) - want) < 1e-6
        assert abs(float(tf.grad(tf.grad(lambda k: f(k, sens)))(k)) - want) < 1e-6


def test_check_grads_first_and_second_order():
    def f(y0, k):
        return solve_ivp(lambda s, y, k: tf.stack([-k[0] * y[0] + y[1], -k[1] * y[1] ** 2]),
                         (0.0, 1.0), y0, method="DOP853", t_eval=[0.25, 1.0], args=(k,),
                         rtol=1e-11, atol=1e-13).y
    tf.testing.check_grads(f, [np.array([1.0, 0.5]), np.array([0.7, 1.1])], order=2,
                           atol=1e-6, rtol=1e-5)


def test_vmap_over_a_parameter_solves_each_example():
    ps = tf.constant(np.stack([LV_P, LV_P * 1.1, LV_P * 0.9]))
    y0 = tf.constant(LV_Y0)
    ys = tf.vmap(lambda p: _lv_y(y0, p))(ps)
    assert ys.shape == (3, 2, LV_T.size)
    for i in range(3):
        np.testing.assert_array_equal(ys[i].numpy(), _lv_y(y0, ps[i]).numpy())
    grads = tf.vmap(tf.grad(lambda p: tf.reduce_sum(_lv_y(y0, p, "adjoint"))))(ps)
    for i in range(3):
        _close(grads[i], tf.grad(lambda p: tf.reduce_sum(_lv_y(y0, p, "forward")))(ps[i]), 1e-7)


def test_traced_function_replays_and_differentiates():
    y0 = tf.constant(LV_Y0)
    traced = tf.function(_lv_y)
    p2 = tf.constant(LV_P * 1.2)
    for p in (tf.constant(LV_P), p2):
        np.testing.assert_array_equal(traced(y0, p).numpy(), _lv_y(y0, p).numpy())
    assert traced.experimental_get_tracing_count() == 1
    grad = tf.function(lambda p: tf.grad(lambda q: tf.reduce_sum(_lv_y(y0, q)))(p))
    for p in (tf.constant(LV_P), p2):
        _close(grad(p), tf.grad(lambda q: tf.reduce_sum(_lv_y(y0, q)))(p), 1e-12)
    with tf.GradientTape() as tape:  # a replay differentiated from outside
        tape.watch(p2)
        loss = tf.reduce_sum(traced(y0, p2))
    _close(tape.gradient(loss, p2), grad(p2), 1e-12)


def test_a_trace_for_every_size_gives_eagers_values():
    def decay(y0, k):
        return solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), y0, method="RK45",
                         t_eval=[0.5, 1.0], args=(k,), rtol=1e-10, atol=1e-12).y

    traced = tf.function(decay, input_signature=[tf.TensorSpec([None], F64),
                                                 tf.TensorSpec([], F64)])
    k = tf.constant(2.0, F64)
    for n in (2, 3, 1):
        y0 = tf.constant(np.arange(1.0, n + 1.0))
        np.testing.assert_array_equal(traced(y0, k).numpy(), decay(y0, k).numpy())


def test_jit_compile_replays_with_numpy_after_a_warning():
    pytest.importorskip("jax")  # (CI's XLA step runs it)
    f = tf.function(lambda k: tf.grad(lambda k: tf.reduce_sum(solve_ivp(
        lambda s, y, k: -k * y, (0.0, 1.0), np.ones(2), method="RK45", t_eval=[1.0],
        args=(k,), rtol=1e-10, atol=1e-12).y))(k), jit_compile=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        g = f(tf.constant(1.0, F64))
    assert abs(float(g) + 2 * np.exp(-1.0)) < 1e-8
    assert any("solve_ivp" in str(w.message) for w in caught)


def test_variables_fun_reads_are_parameters():
    w = tf.Variable([[-1.0, 0.5], [-0.5, -1.2]], dtype=tf.float32)
    t = np.array([0.5, 1.0])

    def fun(s, y):
        return tf.linalg.matvec(tf.cast(w, F64), y)

    def exact(W):
        return sum(np.sum((scipy.linalg.expm(W * ti) @ np.array([1.0, 2.0])) ** 2) for ti in t)

    W = w.numpy().astype(np.float64)
    fd = np.zeros((2, 2))
    for i in range(2):
        for j in range(2):
            e = np.zeros((2, 2))
            e[i, j] = 1e-6
            fd[i, j] = (exact(W + e) - exact(W - e)) / 2e-6
    for sens in ("forward", "adjoint"):
        with tf.GradientTape() as tape:
            sol = solve_ivp(fun, (0.0, 1.0), np.array([1.0, 2.0]), method="RK45", t_eval=t,
                            rtol=1e-10, atol=1e-12, sensitivity=sens)
            loss = tf.reduce_sum(sol.y ** 2)
        g = tape.gradient(loss, w)
        assert g.dtype == tf.float32
        _close(g, fd, 1e-5)
    with tf.autodiff.ForwardAccumulator(w, tf.constant([[1.0, 0.0], [0.0, 0.0]])) as acc:
        loss = tf.reduce_sum(solve_ivp(fun, (0.0, 1.0), np.array([1.0, 2.0]), method="RK45",
                                       t_eval=t, rtol=1e-10, atol=1e-12).y ** 2)
    assert abs(float(acc.jvp(loss)) - fd[0, 0]) < 1e-5 * abs(fd[0, 0])


def test_a_keras_model_as_the_right_hand_side():
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh"),
                                 tf.keras.layers.Dense(2)])
    model.build((None, 2))

    def grads(sens):
        with tf.GradientTape() as tape:
            sol = solve_ivp(lambda t, y: model(y[None, :])[0], (0.0, 1.0),
                            tf.constant([1.0, -1.0], F64), method="RK45", t_eval=[0.5, 1.0],
                            rtol=1e-10, atol=1e-12, sensitivity=sens)
            loss = tf.reduce_sum(sol.y ** 2)
        return tape.gradient(loss, model.trainable_variables)

    fwd, adj = grads("forward"), grads("adjoint")
    assert [g.shape for g in fwd] == [v.shape for v in model.trainable_variables]
    for a, b in zip(fwd, adj):
        assert a.dtype == tf.float32
        _close(b, a, 1e-5)


def test_float32_y0_gives_float32_y_and_gradients():
    y0 = tf.constant([1.0, 2.0])
    k = tf.Variable(1.0)
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(y0)
        sol = solve_ivp(lambda s, y, k: -k * y, (0.0, 1.0), y0, method="RK45", t_eval=[1.0],
                        args=(k,))
    assert sol.y.dtype == tf.float32 and sol.y.shape == (2, 1)
    gy, gk = tape.gradient(sol.y, y0), tape.gradient(sol.y, k)
    assert gy.dtype == tf.float32 and gk.dtype == tf.float32
    np.testing.assert_allclose(gy.numpy(), [np.exp(-1.0)] * 2, rtol=1e-3)
    np.testing.assert_allclose(float(gk), -3 * np.exp(-1.0), rtol=1e-3)


def test_tapeflow_scipy_solve_ivp_takes_the_differentiable_path():
    k = tf.constant(2.0, F64)
    sol = tfs.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.ones(1), method="RK45",
                        t_eval=[0.5, 1.0], args=(k,), rtol=1e-10, atol=1e-12)
    assert isinstance(sol.y, tf.Tensor) and sol.y.shape == (1, 2)
    assert sol.success and sol.status == 0 and sol.nfev > 0
    assert "successfully" in sol.message
    np.testing.assert_allclose(sol.t, [0.5, 1.0])
    plain = tfs.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.ones(1), method="RK45",
                          t_eval=[0.5, 1.0], args=(2.0,), rtol=1e-10, atol=1e-12)
    assert isinstance(plain.y, np.ndarray)
    np.testing.assert_allclose(sol.y.numpy(), plain.y, rtol=1e-12)


def test_the_auto_choice_follows_the_counts(monkeypatch):
    used = []
    real = scipy_ode.adjoint_vjp

    def spy(*a, **k):
        used.append("adjoint")
        return real(*a, **k)

    monkeypatch.setattr(scipy_ode, "adjoint_vjp", spy)
    y0, p = tf.constant(LV_Y0), tf.constant(LV_P)
    tf.grad(lambda q: tf.reduce_sum(_lv_y(y0, q)))(p)  # 2 x (1 + 6) values: forward
    assert used == []
    tf.grad(lambda q: tf.reduce_sum(_lv_y(y0, q, "adjoint")))(p)
    assert used == ["adjoint"]
    rhs, b0 = brusselator(4)
    tf.grad(lambda y: tf.reduce_sum(solve_ivp(rhs, (0.0, 0.1), y, t_eval=[0.1],
                                              args=(tf.constant(BRU_P),)).y))(tf.constant(b0))
    assert used == ["adjoint"] * 2  # BDF, 32 x (1 + 35) values for 1 row: adjoint
    use = scipy_ode.use_forward
    assert use("auto", 32, 35, 4, "BDF") and not use("auto", 32, 35, 1, "BDF")
    assert use("auto", 32, 35, 1, "RK45")
    assert use("forward", 10 ** 6, 10 ** 6, 1, "BDF")
    assert not use("adjoint", 1, 1, 10 ** 6, "RK45")


def test_stiff_systems_get_sparse_jacobians(monkeypatch):
    kinds = []
    real = ode_systems._integrate.solve_ivp

    def spy(fun, span, y, **options):
        if "jac" in options:
            kinds.append((y.size, type(options["jac"](span[0], y)).__name__))
        return real(fun, span, y, **options)

    def recorded(fun, jac, span, y, *args, **options):
        kinds.append(("ndf", y.size, type(jac(span[0], y)).__name__))
        return real_ndf(fun, jac, span, y, *args, **options)

    real_ndf = ode_systems.ode_bdf.ndf
    monkeypatch.setattr(ode_systems._integrate, "solve_ivp", spy)
    monkeypatch.setattr(ode_systems.ode_bdf, "ndf", recorded)
    rhs, y0 = brusselator(8)
    w = _weights((128, 1))
    loss = _loss(rhs, (0.0, 0.1), np.array([0.1]), "BDF", w, rtol=1e-6,
                 sensitivity="adjoint")
    tf.jacfwd(lambda p: loss(tf.constant(y0), p))(tf.constant(BRU_P))
    tf.grad(lambda y: loss(y, tf.constant(BRU_P)))(tf.constant(y0))
    # forward mode: the primal and the tangent system (128 x (1 + 3) states); reverse
    # mode: the primal, then the recorded solve of the discrete adjoint
    assert [entry[:-1] for entry in kinds] == [(128,), (512,), (128,), ("ndf", 128)], kinds
    assert all(entry[-1].startswith("csr") for entry in kinds), kinds


# ------------------------------------------------------------------------ errors
def test_bad_input_is_named():
    k = tf.constant(1.0, F64)
    f = lambda t, y, k: -k * y  # noqa: E731
    with pytest.raises(ValueError, match="t_eval"):
        solve_ivp(f, (0.0, 1.0), np.ones(1), args=(k,))
    with pytest.raises(TypeError, match=r"`args` must be a tuple.*args=\(p,\)"):
        solve_ivp(f, (0.0, 1.0), np.ones(1), t_eval=[1.0], args=k)
    with pytest.raises(ValueError, match="`sensitivity` must be"):
        solve_ivp(f, (0.0, 1.0), np.ones(1), t_eval=[1.0], args=(k,), sensitivity="both")
    with pytest.raises(ValueError, match=r"`y0` must be 1-dimensional; got shape \(1, 1\)"):
        solve_ivp(f, (0.0, 1.0), tf.ones((1, 1), F64), t_eval=[1.0], args=(k,))
    with pytest.raises(TypeError, match="y0 has dtype int32"):
        solve_ivp(f, (0.0, 1.0), tf.constant([1]), t_eval=[1.0])
    with pytest.raises(ValueError, match=r"returned shape \(3,\); expected \(2,\)"):
        solve_ivp(lambda t, y: tf.concat([y, y[:1]], 0), (0.0, 1.0), tf.ones(2, F64),
                  t_eval=[1.0])
    for name in ("events", "dense_output", "vectorized"):
        with pytest.raises(ValueError, match=f"`{name}` is not supported"):
            solve_ivp(f, (0.0, 1.0), np.ones(1), t_eval=[1.0], args=(k,), **{name: True})
    with pytest.raises(TypeError, match="computes `jac` itself"):
        solve_ivp(f, (0.0, 1.0), np.ones(1), t_eval=[1.0], args=(k,), jac=None)
    with pytest.raises(ValueError, match="t_eval"):  # SciPy's own check, at the solve
        solve_ivp(f, (0.0, 1.0), np.ones(1), t_eval=[2.0], args=(k,))
    with pytest.raises(InvalidArgumentError, match=r"sensitivity='forward' would solve 10000 "
                                                   r"states with 10000 sensitivity columns"):
        tf.grad(lambda y: tf.reduce_sum(solve_ivp(
            lambda t, y: -y, (0.0, 1.0), y, t_eval=[1.0], method="RK45",
            sensitivity="forward").y))(tf.ones(10000, F64))


def test_non_tensor_args_pass_as_scipy_passes_them():
    # Numbers, dicts and arrays reach fun as SciPy gives them (arrays as constant tensors):
    # they are constants of the solve, and only the tensors get gradients.
    p = tf.constant(2.0, F64)
    offset = np.array([0.0, 0.1])

    def fun(t, y, p, n, opts, a):
        assert isinstance(n, int) and isinstance(opts, dict)
        return -p * y * n * opts["c"] + a

    with tf.GradientTape() as tape:
        tape.watch(p)
        sol = solve_ivp(fun, (0.0, 1.0), np.ones(2), method="RK45", t_eval=[1.0],
                        args=(p, 2, {"c": 0.5}, offset), rtol=1e-10, atol=1e-12)
    want = np.exp(-2.0) + offset * (1 - np.exp(-2.0)) / 2.0  # y' = -2 y + a
    np.testing.assert_allclose(sol.y.numpy()[:, 0], want, rtol=1e-8)
    dwant = -np.exp(-2.0) + offset * (np.exp(-2.0) / 2 - (1 - np.exp(-2.0)) / 4)
    np.testing.assert_allclose(float(tape.gradient(sol.y, p)), dwant.sum(), rtol=1e-7)
    # a tensor where the tuple of arguments belongs is refused, not unpacked
    with pytest.raises(TypeError, match=r"`args` must be a tuple"):
        solve_ivp(lambda t, y, p: -p * y, (0.0, 1.0), np.ones(1), t_eval=[1.0],
                  args=tf.constant([1.0, 2.0], F64))


def test_differentiating_a_failed_solve_names_scipys_message():
    a = tf.constant(1.0, F64)  # y' = a y^2 from y = 1 blows up at t = 1

    def blowup(sens, a=a):
        return solve_ivp(lambda t, y, a: a * y ** 2, (0.0, 2.0), np.ones(1), method="RK45",
                         t_eval=[0.5, 1.5], args=(a,), sensitivity=sens)

    sol = blowup("auto")
    assert not sol.success and sol.status == -1
    assert "step size" in sol.message
    assert abs(float(sol.y[0, 0]) - 2.0) < 1e-3 and np.isnan(sol.y.numpy()[0, 1])
    for sens in ("forward", "adjoint"):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = blowup(sens).y
        with pytest.raises(InvalidArgumentError, match="cannot differentiate a solve that "
                                                       "failed.*RK45.*step size"):
            tape.gradient(y, a)
    with pytest.raises(InvalidArgumentError, match="step size"):
        tf.jvp(lambda b: blowup("auto", b).y, (a,), (tf.constant(1.0, F64),))


def test_a_savedmodel_refuses_the_solve(tmp_path):
    class M(tf.Module):
        @tf.function(input_signature=[tf.TensorSpec([], F64)])
        def f(self, k):
            return solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.ones(1), method="RK45",
                             t_eval=[1.0], args=(k,)).y

    m = M()
    m.f(tf.constant(1.0, F64))
    with pytest.raises(Exception, match="SciPy"):
        tf.saved_model.save(m, str(tmp_path / "m"))


# ------------------------------------------------------------------------ against diffrax
def _diffrax():
    diffrax = pytest.importorskip("diffrax")
    jax = pytest.importorskip("jax")
    return diffrax, jax


def _diffrax_grad(vf, y0, p, t_eval, solver, rtol, atol, w, dt0=1e-3):
    """diffrax's gradient of sum(W * y(t_eval)) in y0 and p, in float64 (JAX's x64 switched
    on for this computation alone)."""
    diffrax, jax = _diffrax()
    jnp = jax.numpy

    def loss(y0, p):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(lambda t, y, args: vf(y, args)), solver, t0=0.0,
            t1=float(t_eval[-1]), dt0=dt0, y0=y0, args=p,
            saveat=diffrax.SaveAt(ts=jnp.asarray(t_eval)),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            max_steps=200_000)
        return jnp.sum(sol.ys.T * w)

    with jax.enable_x64(True):
        gy, gp = jax.grad(loss, argnums=(0, 1))(jnp.asarray(y0), jnp.asarray(p))
        return np.concatenate([np.asarray(gy), np.asarray(gp)])


def test_lotka_volterra_against_diffrax():
    diffrax, jax = _diffrax()
    jnp = jax.numpy

    def vf(y, p):
        return jnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    w = _weights((2, LV_T.size))
    want = _diffrax_grad(vf, LV_Y0, LV_P, LV_T, diffrax.Tsit5(), 1e-10, 1e-12, w)
    for sens in ("forward", "adjoint"):
        got = _grad(_loss(lotka_volterra, (0.0, 4.0), LV_T, "DOP853", w, rtol=1e-10,
                          atol=1e-12, sensitivity=sens), LV_Y0, LV_P)
        _close(got, want, 1e-6)


def test_robertson_against_diffrax():
    diffrax, jax = _diffrax()
    jnp = jax.numpy

    def vf(y, k):
        return jnp.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                          k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                          k[1] * y[1] ** 2])

    w = _weights((3, ROB_T.size), seed=1)
    want = _diffrax_grad(vf, ROB_Y0, ROB_K, ROB_T, diffrax.Kvaerno5(), 1e-10, 1e-14, w,
                         dt0=1e-8)
    got = _grad(_loss(robertson, (0.0, 40.0), ROB_T, "BDF", w, rtol=1e-9,
                      atol=[1e-13, 1e-17, 1e-13], sensitivity="adjoint"), ROB_Y0, ROB_K)
    np.testing.assert_allclose(got, want, rtol=1e-5)


def test_brusselator_against_diffrax():
    diffrax, jax = _diffrax()
    jnp = jax.numpy
    n = 8

    def lap(g):
        p = jnp.pad(g, 1, mode="edge")
        return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g) * (n - 1) ** 2

    def vf(y, p):
        u, v = y[:n * n].reshape(n, n), y[n * n:].reshape(n, n)
        du = p[0] + u * u * v - (p[1] + 1.0) * u + p[2] * lap(u)
        dv = p[1] * u - u * u * v + p[2] * lap(v)
        return jnp.concatenate([du.ravel(), dv.ravel()])

    rhs, y0 = brusselator(n)
    w = _weights((128, BRU_T.size), seed=2)
    want = _diffrax_grad(vf, y0, BRU_P, BRU_T, diffrax.Tsit5(), 1e-10, 1e-12, w)
    for sens in ("forward", "adjoint"):
        got = _grad(_loss(rhs, (0.0, 0.5), BRU_T, "BDF", w, rtol=1e-9, atol=1e-11,
                          sensitivity=sens), y0, BRU_P)
        _close(got, want, 1e-5)


# ------------------------------------------------------------------------ the times
def _decay(te, t0, rate=0.7, sensitivity="auto"):
    return solve_ivp(lambda t, y: -rate * y, (t0, 3.0), np.array([1.0, 2.0]), method="RK45",
                     t_eval=te, rtol=1e-11, atol=1e-13, sensitivity=sensitivity).y


def test_derivatives_in_the_output_times_and_the_start_time():
    # y(t) = y0 exp(-k (t - t0)): dy/dt = -k y, dy/dt0 = k y, and their second derivatives
    k, te, t0 = 0.7, tf.constant([0.5, 1.0, 2.5], F64), tf.constant(0.2, F64)
    y = np.outer([1.0, 2.0], np.exp(-k * (te.numpy() - 0.2)))
    for jac in (tf.jacfwd, tf.jacrev):
        d_te = jac(lambda te: _decay(te, t0))(te).numpy()
        assert np.allclose(d_te, np.einsum("it,ts->its", -k * y, np.eye(3)), atol=1e-9)
        assert np.allclose(jac(lambda t0: _decay(te, t0))(t0).numpy(), k * y, atol=1e-9)
    h_te = tf.hessian(lambda te: tf.reduce_sum(_decay(te, t0)))(te).numpy()
    assert np.allclose(h_te, np.diag(k ** 2 * y.sum(axis=0)), atol=1e-8)
    h_t0 = tf.hessian(lambda t0: tf.reduce_sum(_decay(te, t0)))(t0).numpy()
    assert np.isclose(h_t0, k ** 2 * y.sum(), atol=1e-8)
    # every order: the third derivative in one output time
    third = tf.grad(tf.grad(tf.grad(lambda t: tf.reduce_sum(_decay(tf.reshape(t, [1]), 0.2)))))
    assert np.isclose(float(third(tf.constant(1.3, F64))), -k ** 3 * 3 * np.exp(-k * 1.1))
    # a variable time, under a tape; t_span[1] does not move the outputs
    tv = tf.Variable([0.5, 1.0], dtype=F64)
    with tf.GradientTape() as tape:
        out = tf.reduce_sum(_decay(tv, 0.0))
    assert np.allclose(tape.gradient(out, tv).numpy(), -k * 3.0 * np.exp(-k * tv.numpy()))


@pytest.mark.parametrize("sensitivity", ["forward", "adjoint"])
def test_time_derivatives_of_lotka_volterra_match_finite_differences(sensitivity):
    w = _weights((2, 3))
    p = tf.constant(LV_P)

    def loss(te, t0, q=p):
        sol = solve_ivp(lotka_volterra, (t0, 4.0), LV_Y0, method="DOP853", t_eval=te,
                        args=(q,), rtol=1e-12, atol=1e-14, sensitivity=sensitivity)
        return tf.reduce_sum(sol.y * w)

    te, t0 = np.array([1.0, 2.2, 3.9]), 0.3
    g_te, g_t0 = tf.grad(loss, argnums=(0, 1))(tf.constant(te), tf.constant(t0, F64))
    h = 1e-5
    for i in range(3):
        e = np.eye(3)[i] * h
        fd = (float(loss(te + e, t0)) - float(loss(te - e, t0))) / (2 * h)
        assert np.isclose(g_te.numpy()[i], fd, rtol=1e-6, atol=1e-8)
    fd = (float(loss(te, t0 + h)) - float(loss(te, t0 - h))) / (2 * h)
    assert np.isclose(float(g_t0), fd, rtol=1e-6)
    # a mixed second derivative: how the gradient in p moves with the start time
    def grad_p(t0):
        return tf.grad(lambda q: loss(tf.constant(te), t0, q))(p)
    mixed = tf.jacfwd(grad_p)(tf.constant(t0, F64)).numpy()
    assert np.allclose(tf.jacrev(grad_p)(tf.constant(t0, F64)).numpy(), mixed, rtol=1e-9)
    fd = (grad_p(t0 + 1e-4).numpy() - grad_p(t0 - 1e-4).numpy()) / 2e-4
    assert np.allclose(mixed, fd, rtol=1e-6, atol=1e-7)
