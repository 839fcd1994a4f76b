"""tapeflow.scipy.minimize under constraints and bounds, with tensors in `args`: `res.x`
differentiable through its KKT conditions (tapeflow/scipy_kkt.py), against closed forms
and central finite differences of SciPy's own solves, in both modes, under vmap and
tf.function across changes of the active set; degenerate and unconverged solutions
reported when differentiated."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

scipy_optimize = pytest.importorskip("scipy.optimize")

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402

F64 = tf.float64
pytestmark = pytest.mark.filterwarnings("error::tapeflow.scipy_implicit.ConvergenceWarning")
SLSQP_TIGHT = {"ftol": 1e-13, "maxiter": 500}
HS071_OPTIONS = {"ftol": 1e-10, "maxiter": 500}  # 1e-13 stalls its line search


def _both_modes(f, x):
    fwd, rev = tf.jacfwd(f)(x).numpy(), tf.jacrev(f)(x).numpy()
    assert np.allclose(fwd, rev, atol=1e-9), (fwd, rev)
    return fwd


@pytest.mark.parametrize("method", ["SLSQP", "trust-constr"])
def test_an_equality_constraint_projects_the_derivative(method):
    # argmin 0.5 |x - t|^2 with sum(x) = 1 is t - (sum t - 1) / n: dx/dt = I - 1 1^T / n
    options = SLSQP_TIGHT if method == "SLSQP" else {"gtol": 1e-10, "xtol": 1e-12}

    def fit(t):
        return tfs.minimize(lambda x, t: 0.5 * tf.reduce_sum((x - t) ** 2), np.zeros(3),
                            args=(t,), method=method, options=options,
                            constraints={"type": "eq", "fun": lambda x: tf.reduce_sum(x) - 1.0}).x

    t = tf.constant([0.3, -0.2, 0.5], F64)
    assert np.allclose(fit(t).numpy(), t.numpy() - (t.numpy().sum() - 1) / 3, atol=1e-7)
    assert np.allclose(_both_modes(fit, t), np.eye(3) - 1 / 3, atol=1e-6)


def _capped(c):
    # argmin |x - 1|^2 with x0 <= c: x = (min(c, 1), 1), so dx0/dc = 1 while active, 0 after
    return tfs.minimize(lambda x, c: tf.reduce_sum((x - 1.0) ** 2), np.zeros(2), args=(c,),
                        method="SLSQP", options=SLSQP_TIGHT,
                        constraints={"type": "ineq", "fun": lambda x, c: c - x[0],
                                     "args": (c,)}).x


def test_an_inequality_with_the_parameter_in_its_args_active_and_not():
    for c, slope in ((0.3, 1.0), (2.0, 0.0)):
        x = _capped(tf.constant(c, F64))
        assert np.allclose(x.numpy(), [min(c, 1.0), 1.0], atol=1e-8)
        assert np.allclose(_both_modes(_capped, tf.constant(c, F64)), [slope, 0.0], atol=1e-8)


def test_vmap_and_a_traced_function_serve_every_active_set():
    cs = tf.constant([0.3, 2.0, -0.5], F64)
    xs = tf.vmap(_capped)(cs)
    assert np.allclose(xs.numpy()[:, 0], [0.3, 1.0, -0.5], atol=1e-8)
    slopes = tf.vmap(tf.jacfwd(_capped))(cs).numpy()[:, 0]
    assert np.allclose(slopes, [1.0, 0.0, 1.0], atol=1e-8)
    traces = []

    @tf.function
    def grad(c):
        traces.append(1)
        return tf.grad(lambda c: _capped(c)[0])(c)

    got = [float(grad(tf.constant(c, F64))) for c in (0.3, 2.0, 0.7)]
    assert np.allclose(got, [1.0, 0.0, 1.0], atol=1e-8) and len(traces) == 1


def test_bounds_fix_the_components_they_hold():
    def fit(a):
        return tfs.minimize(lambda x, a: tf.reduce_sum((x - a) ** 2), np.zeros(3), args=(a,),
                            method="L-BFGS-B", bounds=[(0, 1)] * 3).x

    a = tf.constant([0.5, 2.0, -1.0], F64)
    assert np.allclose(fit(a).numpy(), [0.5, 1.0, 0.0])
    assert np.allclose(_both_modes(fit, a), np.diag([1.0, 0.0, 0.0]), atol=1e-8)


def test_a_nonlinear_constraint_against_the_closed_form():
    # argmin c.x with |x|^2 <= r^2 is -r c / |c|. SLSQP at ftol 1e-13 ends some starts
    # with "positive directional derivative for linesearch" 1e-8 from the minimum, which
    # starts depends on the BLAS's thread count ([0.1, 0, 0] failed on one core): this
    # one converged on one core and on two.
    def fit(c, r):
        return tfs.minimize(lambda x, c, r: tf.reduce_sum(c * x), np.array([0.2, -0.1, 0.3]),
                            args=(c, r), method="SLSQP", options=SLSQP_TIGHT,
                            constraints=[{"type": "ineq", "args": (r,),
                                          "fun": lambda x, r: r ** 2 - tf.reduce_sum(x * x)}]).x

    c, r = np.array([1.0, -2.0, 0.5]), 1.5
    norm = np.linalg.norm(c)
    tc, tr = tf.constant(c, F64), tf.constant(r, F64)
    assert np.allclose(fit(tc, tr).numpy(), -r * c / norm, atol=1e-7)
    d_r = tf.jacfwd(lambda r: fit(tc, r))(tr).numpy()
    assert np.allclose(d_r, -c / norm, atol=1e-6)
    d_c = _both_modes(lambda c: fit(c, tr), tc)
    assert np.allclose(d_c, -r * (np.eye(3) / norm - np.outer(c, c) / norm ** 3), atol=1e-6)


def _hs071(theta, method="SLSQP"):
    """IPOPT's HS071 with the objective's last term scaled by theta, in its bounds."""
    cons = [{"type": "ineq", "fun": lambda x: tf.reduce_prod(x) - 25.0},
            scipy_optimize.NonlinearConstraint(lambda x: tf.reduce_sum(x * x), 40.0, 40.0)]
    return tfs.minimize(lambda x, t: x[0] * x[3] * tf.reduce_sum(x[:3]) + t * x[2],
                        np.array([1.0, 5.0, 5.0, 1.0]), args=(theta,), method=method,
                        bounds=[(1, 5)] * 4, constraints=cons, options=HS071_OPTIONS)


def test_mixed_constraints_and_bounds_against_finite_differences():
    theta = 1.0
    res = _hs071(tf.constant(theta, F64))
    assert res.success and np.isclose(res.fun, 17.0140173, atol=1e-6)

    def scipy_x(t):
        return scipy_optimize.minimize(
            lambda x: x[0] * x[3] * np.sum(x[:3]) + t * x[2], np.array([1.0, 5.0, 5.0, 1.0]),
            method="SLSQP", bounds=[(1, 5)] * 4, options=HS071_OPTIONS,
            constraints=[{"type": "ineq", "fun": lambda x: np.prod(x) - 25.0},
                         {"type": "eq", "fun": lambda x: np.sum(x * x) - 40.0}]).x

    # SLSQP's solutions carry about 1e-8 of noise: a small step would difference it
    h = 1e-2
    fd = (scipy_x(theta + h) - scipy_x(theta - h)) / (2 * h)
    got = _both_modes(lambda t: _hs071(t).x, tf.constant(theta, F64))
    assert np.allclose(got, fd, atol=2e-5), (got, fd)
    assert abs(got[0]) < 1e-12  # x0 stays on its bound 1


def test_a_linear_constraint():
    A = np.array([[1.0, 1.0, 0.0], [0.0, 1.0, 1.0]])

    def fit(t):
        return tfs.minimize(lambda x, t: 0.5 * tf.reduce_sum((x - t) ** 2), np.zeros(3),
                            args=(t,), method="trust-constr",
                            options={"gtol": 1e-11, "xtol": 1e-13},
                            constraints=scipy_optimize.LinearConstraint(A, [1.0, 1.0],
                                                                        [1.0, 1.0])).x

    t = tf.constant([0.2, 0.1, -0.4], F64)
    P = np.eye(3) - A.T @ np.linalg.solve(A @ A.T, A)   # the projection onto A's null space
    assert np.allclose(_both_modes(fit, t), P, atol=1e-6)


def test_weakly_active_and_unconverged_solutions_are_reported():
    # x0 <= 1 exactly where the unconstrained minimum lies: active with a zero multiplier
    with pytest.warns(tfs.ConvergenceWarning, match="weakly active"):
        tf.jacfwd(_capped)(tf.constant(1.0, F64))
    with pytest.raises(tfs.ConvergenceError, match="res.success is False"):
        tf.jacfwd(lambda c: tfs.minimize(
            lambda x, c: tf.reduce_sum((x - c) ** 4), np.zeros(2), args=(c,),
            method="SLSQP", options={"maxiter": 1}, implicit="strict",
            constraints={"type": "ineq", "fun": lambda x: 5.0 - x[0]}).x)(
            tf.constant(3.0, F64))
    # solving alone reports nothing
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _capped(tf.constant(1.0, F64))


@pytest.mark.parametrize("loss", ["linear", "soft_l1"])
def test_least_squares_on_a_bound(loss):
    # fit y = p0 exp(-p1 t) with p1 <= 1.2 to data of p1 = 1.5: p1 stays on its bound, and
    # p0 is the one-parameter fit at p1 = 1.2
    t = np.linspace(0.0, 2.0, 12)
    data = tf.constant(2.0 * np.exp(-1.5 * t), F64)

    def fit(y):
        return tfs.least_squares(lambda p, y: p[0] * tf.exp(-p[1] * t) - y, np.ones(2),
                                 args=(y,), bounds=([-np.inf, -np.inf], [np.inf, 1.2]),
                                 loss=loss, xtol=1e-15, ftol=1e-15, gtol=1e-15).x

    p = fit(data).numpy()
    assert np.isclose(p[1], 1.2, rtol=1e-12)
    J = _both_modes(fit, data)
    assert np.allclose(J[1], 0.0, atol=1e-10)
    if loss == "linear":
        e = np.exp(-1.2 * t)
        assert np.isclose(p[0], e @ data.numpy() / (e @ e))
        assert np.allclose(J[0], e / (e @ e), atol=1e-8)
    else:   # against central differences of SciPy's own fit
        def scipy_p0(y):
            return scipy_optimize.least_squares(
                lambda p: p[0] * np.exp(-p[1] * t) - y, np.ones(2), loss=loss,
                bounds=([-np.inf, -np.inf], [np.inf, 1.2]), xtol=1e-15, ftol=1e-15,
                gtol=1e-15).x[0]
        y0, h = data.numpy(), 1e-3   # a smaller step differences the solver's own noise
        fd = [(scipy_p0(y0 + h * e) - scipy_p0(y0 - h * e)) / (2 * h) for e in np.eye(12)]
        assert np.allclose(J[0], fd, atol=1e-5)


def test_a_solution_outside_its_bounds_is_reported():
    # BFGS ignores bounds (SciPy warns): its minimum at 2 violates x <= 1
    def fit(a):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            return tfs.minimize(lambda x, a: tf.reduce_sum((x - a) ** 2), np.zeros(1),
                                args=(a,), method="BFGS", bounds=[(None, 1.0)],
                                implicit="strict").x

    with pytest.raises(tfs.ConvergenceError, match="violated"):
        tf.jacfwd(fit)(tf.constant(2.0, F64))
