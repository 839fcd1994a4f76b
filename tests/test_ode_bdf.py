"""tapeflow.ode_bdf: the recorded NDF integrator against SciPy's BDF, and its discrete
adjoint against the tangent of the same recorded computation (<u, J v> both ways),
against central finite differences of tightly solved problems, and through every path
it takes (dropped LU factors, the exact fallback, several cotangent rows, backwards in
time, output times at t0)."""

from __future__ import annotations

import numpy as np
import pytest

scipy = pytest.importorskip("scipy")
import scipy.integrate  # noqa: E402
import scipy.sparse  # noqa: E402
import scipy.special  # noqa: E402

from tapeflow import ode_bdf  # noqa: E402

K = np.array([0.04, 3e7, 1e4])


def robertson(t, y, k=K):
    return np.array([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def robertson_jac(t, y, k=K):
    return np.array([[-k[0], k[2] * y[2], k[2] * y[1]],
                     [k[0], -k[2] * y[2] - 2 * k[1] * y[1], -k[2] * y[1]],
                     [0.0, 2 * k[1] * y[1], 0.0]])


def robertson_jac_k(t, y):
    return np.array([[-y[0], 0.0, y[1] * y[2]],
                     [y[0], -y[1] ** 2, -y[1] * y[2]],
                     [0.0, y[1] ** 2, 0.0]])


def robertson_vjp(t, y, V):
    return V @ robertson_jac(t, y), V @ robertson_jac_k(t, y)


ROB_T = np.array([1e-3, 0.1, 1.0, 10.0, 40.0])
ROB_ATOL = np.array([1e-10, 1e-14, 1e-10])


def heat(n, alpha=0.3):
    """A 1-D reaction-diffusion chain: sparse Jacobian, parameters (alpha, beta)."""
    L = scipy.sparse.diags([np.ones(n - 1), -2 * np.ones(n), np.ones(n - 1)], [-1, 0, 1],
                           format="csr") * float((n + 1) ** 2)

    def f(t, y, p=(alpha, 1.0)):
        return p[0] * (L @ y) - p[1] * y ** 3

    def jac(t, y, p=(alpha, 1.0)):
        return (p[0] * L - scipy.sparse.diags(3 * p[1] * y ** 2)).tocsr()

    def vjp(t, y, V, p=(alpha, 1.0)):
        Jp = np.stack([L @ y, -y ** 3], axis=1)
        return (jac(t, y, p).T @ V.T).T, V @ Jp

    return f, jac, vjp


def _solve(f, jac, span, y0, t_eval, rtol=1e-8, atol=1e-10, **kw):
    y0 = np.asarray(y0, float)
    atol = np.broadcast_to(np.asarray(atol, float), y0.shape).copy()
    rec = ode_bdf.ndf(f, jac, span, y0, np.asarray(t_eval, float), rtol,
                      atol, **kw)
    assert rec.status == 0, rec.message
    return rec


# ------------------------------------------------------------------------ the integrator
def test_change_matrix_reinterpolates_the_backward_differences():
    rng = np.random.default_rng(0)
    for order in range(1, ode_bdf.MAX_ORDER + 1):
        assert np.allclose(ode_bdf.change_matrix(order, 1.0), np.eye(order + 1))
        # a polynomial of degree `order` sampled at t = 0, -h, -2h, ...: its backward
        # differences on the grid of step 0.37 h are the exact ones of the new samples
        coef = rng.standard_normal(order + 1)
        poly = np.polynomial.Polynomial(coef)

        def diffs(step):
            vals = np.array([poly(-r * step) for r in range(order + 1)])
            return np.array([sum((-1) ** r * scipy.special.comb(j, r) * vals[r]
                                 for r in range(j + 1)) for j in range(order + 1)])

        T = ode_bdf.change_matrix(order, 0.37)
        assert np.allclose(T.T @ diffs(1.0), diffs(0.37), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("rtol", [1e-4, 1e-8])
def test_ndf_follows_scipys_bdf(rtol):
    t_eval = np.logspace(-4, 5, 25)
    ref = scipy.integrate.solve_ivp(robertson, (0.0, 1e5), [1.0, 0.0, 0.0], method="BDF",
                                    jac=robertson_jac, t_eval=t_eval, rtol=rtol, atol=ROB_ATOL)
    rec = _solve(robertson, robertson_jac, (0.0, 1e5), [1.0, 0.0, 0.0], t_eval, rtol, ROB_ATOL)
    scale = np.abs(ref.y).max(axis=1, keepdims=True)
    assert np.all(np.abs(rec.y - ref.y) <= 20 * rtol * scale)
    # the same method: its work is SciPy's, to a few percent
    assert abs(rec.nfev - ref.nfev) <= 0.1 * ref.nfev, (rec.nfev, ref.nfev)


def test_ndf_sparse_and_dense_jacobians_and_options():
    f, jac, _ = heat(40)
    y0 = np.sin(np.linspace(0, np.pi, 40))
    t_eval = np.array([0.0, 0.01, 0.05, 0.2])
    ref = scipy.integrate.solve_ivp(f, (0.0, 0.2), y0, method="BDF", jac=jac, t_eval=t_eval,
                                    rtol=1e-10, atol=1e-12)
    sparse = _solve(f, jac, (0.0, 0.2), y0, t_eval)
    dense = _solve(f, lambda t, y: jac(t, y).toarray(), (0.0, 0.2), y0, t_eval)
    capped = _solve(f, jac, (0.0, 0.2), y0, t_eval, max_step=1e-3, first_step=1e-5)
    for rec in (sparse, dense, capped):
        assert np.allclose(rec.y, ref.y, rtol=1e-6, atol=1e-8)
        assert np.array_equal(rec.y[:, 0], y0)      # t_eval at t0 is y0 itself
    times = [0.0] + [op[1].t for op in capped.ops if op[0] == "step"]
    assert np.diff(times).max() <= 1e-3 * (1 + 1e-12) and len(times) > 200
    assert abs(capped.h0 - 1e-5) < 1e-20


def test_ndf_reports_a_failure():
    rec = ode_bdf.ndf(lambda t, y: y ** 2, lambda t, y: np.diag(2 * y), (0.0, 2.0),
                      np.ones(1), np.array([0.5, 1.5]), 1e-6, np.full(1, 1e-8))
    assert rec.status == -1 and "step size" in rec.message
    assert np.isclose(rec.y[0, 0], 2.0, rtol=1e-4) and np.isnan(rec.y[0, 1])


# ------------------------------------------------------------------------ its adjoint
def _tangent(rec, v_y0, v_p, f_jac, f_jac_p):
    """The derivative of rec.y along (v_y0, v_p) through the recorded computation itself:
    the linear maps, and each implicit solve's tangent solved exactly."""
    D = np.zeros((ode_bdf.MAX_ORDER + 3, rec.y0.size))
    D[0] = v_y0
    D[1] = rec.h0 * (f_jac(rec.t0, rec.y0) @ v_y0 + f_jac_p(rec.t0, rec.y0) @ v_p)
    Y = np.zeros_like(rec.y)
    Y[:, :rec.at_start] = v_y0[:, None]
    gam, alp = ode_bdf._GAMMA, ode_bdf._ALPHA
    for op in rec.ops:
        if op[0] == "change":
            _, q, T = op
            D[:q + 1] = T.T @ D[:q + 1]
        elif op[0] == "out":
            _, at, w = op
            Y[:, at] = w @ D[:w.size]
        else:
            s = op[1]
            q, c = s.order, s.c
            pred = D[:q + 1].sum(axis=0)
            psi = D[1:q + 1].T @ gam[1:q + 1] / alp[q]
            J = f_jac(s.t, s.y)
            J = J.toarray() if scipy.sparse.issparse(J) else J
            d = np.linalg.solve(np.eye(J.shape[0]) - c * J,
                                c * J @ pred - psi + c * f_jac_p(s.t, s.y) @ v_p)
            D[q + 2] = d - D[q + 1]
            D[q + 1] = d
            for i in range(q, -1, -1):
                D[i] += D[i + 1]
    return Y


def _check_transpose(rec, f_jac, f_jac_p, vjp, P, rtol, rows=1, seed=0):
    rng = np.random.default_rng(seed)
    n, T = rec.y.shape
    C = rng.standard_normal((rows, n, T))
    gy, gp = ode_bdf.adjoint(rec, C, vjp, f_jac, rtol)
    assert gy.shape == (rows, n) and gp.shape == (rows, P)
    for r in range(rows):
        v_y0, v_p = rng.standard_normal(n), rng.standard_normal(P)
        left = float(np.sum(C[r] * _tangent(rec, v_y0, v_p, f_jac, f_jac_p)))
        right = float(gy[r] @ v_y0 + gp[r] @ v_p)
        scale = np.abs(gy[r]).sum() * np.abs(v_y0).max() + np.abs(gp[r]).sum() * np.abs(v_p).max()
        assert abs(left - right) <= 1e-6 * scale, (left, right)
    return gy, gp


@pytest.mark.parametrize("exact_states", [ode_bdf.EXACT_STATES, 0])
def test_the_adjoint_is_the_transpose_of_the_recorded_tangent(monkeypatch, exact_states):
    # a small dense system: each step's exact factors, or GMRES on the forward's
    monkeypatch.setattr(ode_bdf, "EXACT_STATES", exact_states)
    rec = _solve(robertson, robertson_jac, (0.0, 40.0), [1.0, 0.0, 0.0], ROB_T, 1e-8, ROB_ATOL)
    _check_transpose(rec, robertson_jac, robertson_jac_k, robertson_vjp, 3, 1e-8, rows=3)


def test_the_adjoint_matches_finite_differences_of_a_tight_solve():
    rec = _solve(robertson, robertson_jac, (0.0, 40.0), [1.0, 0.0, 0.0], ROB_T, 1e-9, ROB_ATOL)
    C = np.random.default_rng(1).standard_normal((1, 3, ROB_T.size))
    gy, gk = ode_bdf.adjoint(rec, C, robertson_vjp, robertson_jac, 1e-9)

    def loss(y0, k):
        r = scipy.integrate.solve_ivp(lambda t, y: robertson(t, y, k), (0.0, 40.0), y0,
                                      method="BDF", jac=lambda t, y: robertson_jac(t, y, k),
                                      t_eval=ROB_T, rtol=1e-12, atol=ROB_ATOL * 1e-3)
        return float(np.sum(C[0] * r.y))

    y0 = np.array([1.0, 0.0, 0.0])
    for i, h in ((0, 1e-6), (2, 1e-6)):
        e = np.eye(3)[i] * h
        fd = (loss(y0 + e, K) - loss(y0 - e, K)) / (2 * h)
        assert np.isclose(gy[0, i], fd, rtol=1e-5), (i, gy[0, i], fd)
    for i in range(3):
        e = np.eye(3)[i] * K[i] * 1e-5
        fd = (loss(y0, K + e) - loss(y0, K - e)) / (2 * K[i] * 1e-5)
        assert np.isclose(gk[0, i], fd, rtol=1e-5), (i, gk[0, i], fd)


def test_dropped_factors_and_the_exact_fallback_give_the_same_gradient(monkeypatch):
    f, jac, vjp = heat(30)
    y0 = np.cos(np.linspace(0, 3, 30)) + 1.5
    t_eval = np.array([0.02, 0.1, 0.3])
    rec = _solve(f, jac, (0.0, 0.3), y0, t_eval, 1e-8)
    C = np.random.default_rng(2).standard_normal((2, 30, 3))
    kept = ode_bdf.adjoint(rec, C, vjp, jac, 1e-8)
    # factors beyond the budget are dropped during the solve and refactored by the adjoint
    monkeypatch.setattr(ode_bdf, "LU_BYTES", 1)
    again = _solve(f, jac, (0.0, 0.3), y0, t_eval, 1e-8)
    assert sum(1 for op in again.ops if op[0] == "step" and op[1].lu.lu is None) > 5
    dropped = ode_bdf.adjoint(again, C, vjp, jac, 1e-8)
    # no GMRES iteration allowed: every step factors its exact matrix
    monkeypatch.setattr(ode_bdf, "_ADJOINT_ITERS", 0)
    exact = ode_bdf.adjoint(rec, C, vjp, jac, 1e-8)
    for got in (dropped, exact):
        for a, b in zip(kept, got):
            assert np.allclose(a, b, rtol=1e-7, atol=1e-9 * np.abs(a).max())


def _heat_jac_p(n):
    f, jac, vjp = heat(n)
    return lambda t, y: vjp(t, y, np.eye(n))[1]


def test_sparse_system_several_rows_backwards_in_time_and_t0_outputs():
    f, jac, vjp = heat(25)
    y0 = np.linspace(0.5, 1.5, 25)
    jac_p = _heat_jac_p(25)
    forward = _solve(f, jac, (0.0, 0.4), y0, np.array([0.0, 0.0, 0.05, 0.4]), 1e-8)
    _check_transpose(forward, jac, jac_p, vjp, 2, 1e-8, rows=4, seed=3)
    # backwards in time: y' = -f, which diffuses as t decreases
    back = (lambda t, y: -f(t, y), lambda t, y: -jac(t, y),
            lambda t, y, V: tuple(-g for g in vjp(t, y, V)))
    backward = _solve(back[0], back[1], (0.4, 0.0), y0, np.array([0.3, 0.1, 0.0]), 1e-8)
    assert np.all(np.isfinite(backward.y)) and backward.h0 < 0
    _check_transpose(backward, back[1], lambda t, y: -jac_p(t, y), back[2], 2, 1e-8, rows=2,
                     seed=4)


def test_zero_cotangents_give_zero_gradients():
    rec = _solve(robertson, robertson_jac, (0.0, 1.0), [1.0, 0.0, 0.0], [0.5, 1.0], 1e-6,
                 ROB_ATOL)
    gy, gk = ode_bdf.adjoint(rec, np.zeros((1, 3, 2)), robertson_vjp, robertson_jac, 1e-6)
    assert not gy.any() and not np.any(gk)
