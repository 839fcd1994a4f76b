"""tapeflow.scipy's minimize, root and least_squares with tensors in `args`: `res.x`
differentiable in them through the optimality conditions (tapeflow/scipy_implicit.py),
against closed forms and finite differences of SciPy's own solves, in both modes, under
jacfwd/jacrev, vmap and tf.function; nonconvergence reported when differentiated."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

scipy_optimize = pytest.importorskip("scipy.optimize")

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402
from tapeflow.errors import InvalidArgumentError  # noqa: E402

F64 = tf.float64
RNG = np.random.default_rng(1)
X = RNG.standard_normal((40, 4))
Y = X @ np.array([1.0, -2.0, 0.5, 0.0]) + 0.3 * RNG.standard_normal(40)
LABELS = np.where(X @ np.array([1.0, -1.0, 0.5, 2.0]) + 0.5 * RNG.standard_normal(40) > 0,
                  1.0, -1.0)
TIGHT = {"gtol": 1e-7}
# A solution differentiated here converged, unless a test says otherwise.
pytestmark = pytest.mark.filterwarnings("error::tapeflow.scipy_implicit.ConvergenceWarning")


def ridge(w, lam, y=Y):
    r = tf.linalg.matvec(tf.constant(X), w) - y
    return 0.5 * tf.reduce_sum(r * r) + 0.5 * lam * tf.reduce_sum(w * w)


def ridge_closed(lam, y=Y):
    a = X.T @ X + lam * np.eye(4)
    w = np.linalg.solve(a, X.T @ y)
    return w, -np.linalg.solve(a, w)  # the solution and its derivative in lam


def fit(lam, method="BFGS", **kw):
    return tfs.minimize(ridge, np.zeros(4), args=(lam,), method=method, **kw).x


def logistic(w, lam):
    margins = tf.constant(LABELS) * tf.linalg.matvec(tf.constant(X), w)
    return tf.reduce_sum(tf.math.softplus(-margins)) + 0.5 * lam * tf.reduce_sum(w * w)


def scipy_logistic_fit(lam):
    """The fit with SciPy alone (NumPy objective and gradient), solved tightly."""
    def f(w):
        m = LABELS * (X @ w)
        return np.sum(np.logaddexp(0.0, -m)) + 0.5 * lam * w @ w, \
            -X.T @ (LABELS / (1.0 + np.exp(m))) + lam * w
    return scipy_optimize.minimize(f, np.zeros(4), jac=True, method="BFGS",
                                   options={"gtol": 1e-12}).x


# ------------------------------------------------------------------ minimize
@pytest.mark.parametrize("method", ["BFGS", "L-BFGS-B", "Newton-CG", "trust-ncg", "trust-exact"])
def test_ridge_gradient_against_the_closed_form(method):
    lam = tf.constant(0.7, F64)
    options = {"xtol": 1e-12} if method == "Newton-CG" else (
        TIGHT if method != "L-BFGS-B" else {"gtol": 1e-12, "ftol": 1e-15})
    with tf.GradientTape() as tape:
        tape.watch(lam)
        w = fit(lam, method, options=options)
        loss = tf.reduce_sum(w * tf.range(1.0, 5.0, dtype=F64))
    want_w, want_dw = ridge_closed(0.7)
    assert isinstance(w, tf.Tensor) and w.dtype == F64
    np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(float(tape.gradient(loss, lam)), want_dw @ np.arange(1.0, 5.0),
                               rtol=1e-5)


def test_ridge_forward_reverse_and_jacobians():
    lam = tf.constant(0.7, F64)
    _, want = ridge_closed(0.7)
    with tf.autodiff.ForwardAccumulator(lam, tf.constant(1.0, F64)) as acc:
        w = fit(lam, options=TIGHT)
    forward = acc.jvp(w).numpy()
    reverse = tf.jacrev(lambda l: fit(l, options=TIGHT))(lam).numpy()
    np.testing.assert_allclose(forward, want, rtol=1e-5)
    np.testing.assert_allclose(reverse, forward, rtol=1e-9, atol=1e-13)
    np.testing.assert_allclose(tf.jacfwd(lambda l: fit(l, options=TIGHT))(lam).numpy(), forward,
                               rtol=1e-9, atol=1e-13)
    # with respect to the data: w = A^-1 X^T y, so dw/dy = A^-1 X^T
    y = tf.constant(Y)
    jf = tf.jacfwd(lambda yy: tfs.minimize(ridge, np.zeros(4), args=(lam, yy),
                                           options=TIGHT).x)(y)
    jr = tf.jacrev(lambda yy: tfs.minimize(ridge, np.zeros(4), args=(lam, yy),
                                           options=TIGHT).x)(y)
    closed = np.linalg.solve(X.T @ X + 0.7 * np.eye(4), X.T)
    np.testing.assert_allclose(jf.numpy(), closed, rtol=1e-6, atol=1e-9)
    np.testing.assert_allclose(jr.numpy(), jf.numpy(), rtol=1e-9, atol=1e-12)
    # <u, J v> both ways, J of (lam, y) -> w
    u, v = RNG.standard_normal(4), RNG.standard_normal(40)
    _, jv = tf.jvp(lambda yy: tfs.minimize(ridge, np.zeros(4), args=(lam, yy),
                                           options=TIGHT).x, (y,), (tf.constant(v),))
    _, pull = tf.vjp(lambda yy: tfs.minimize(ridge, np.zeros(4), args=(lam, yy),
                                             options=TIGHT).x, y)
    assert np.dot(u, jv.numpy()) == pytest.approx(np.dot(pull(tf.constant(u))[0].numpy(), v),
                                                  rel=1e-9)


def test_ridge_vmap_over_the_regularization_equals_a_loop():
    lams = np.array([0.1, 0.7, 3.0])
    got = tf.vmap(lambda l: fit(l, options=TIGHT))(tf.constant(lams))
    np.testing.assert_allclose(got.numpy(), np.stack([ridge_closed(l)[0] for l in lams]),
                               rtol=1e-6, atol=1e-8)
    grads = tf.vmap(tf.grad(lambda l: tf.reduce_sum(fit(l, options=TIGHT))))(tf.constant(lams))
    np.testing.assert_allclose(grads.numpy(), [ridge_closed(l)[1].sum() for l in lams],
                               rtol=1e-5)


def test_ridge_traced_once_and_replayed():
    @tf.function
    def value_and_grad(lam):
        with tf.GradientTape() as tape:
            tape.watch(lam)
            w = fit(lam, options=TIGHT)
        return w, tape.gradient(w, lam)

    for lam in (0.3, 1.0, 4.0):
        w, g = value_and_grad(tf.constant(lam, F64))
        want_w, want_dw = ridge_closed(lam)
        np.testing.assert_allclose(w.numpy(), want_w, rtol=1e-6, atol=1e-8)
        np.testing.assert_allclose(float(g), want_dw.sum(), rtol=1e-5)
    assert value_and_grad.experimental_get_tracing_count() == 1


def test_logistic_regression_against_finite_differences_of_scipy():
    lam, eps = 0.5, 1e-4
    fd = (scipy_logistic_fit(lam + eps) - scipy_logistic_fit(lam - eps)) / (2 * eps)
    t = tf.constant(lam, F64)
    jac = tf.jacrev(lambda l: tfs.minimize(logistic, np.zeros(4), args=(l,),
                                           method="trust-ncg", options={"gtol": 1e-11}).x)(t)
    np.testing.assert_allclose(jac.numpy(), fd, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(
        tfs.minimize(logistic, np.zeros(4), args=(t,), method="trust-ncg",
                     options={"gtol": 1e-11}).x.numpy(), scipy_logistic_fit(lam), rtol=1e-7)


def test_other_fields_are_scipys():
    res = tfs.minimize(ridge, np.zeros(4), args=(tf.constant(0.7, F64),), method="BFGS",
                       options=TIGHT)
    assert type(res) is scipy_optimize.OptimizeResult
    assert res.success is True and res.nit > 0 and isinstance(res.fun, float)
    np.testing.assert_allclose(res.jac, 0.0, atol=1e-9)
    plain = tfs.minimize(ridge, np.zeros(4), args=(0.7,), method="BFGS", options=TIGHT)
    assert isinstance(plain.x, np.ndarray)  # no tensor in args: SciPy's array, as before
    np.testing.assert_allclose(res.x.numpy(), plain.x, rtol=1e-12)


def test_variables_in_args():
    lam = tf.Variable(0.7, dtype=F64)
    with tf.GradientTape() as tape:
        w = tfs.minimize(ridge, np.zeros(4), args=(lam,), options=TIGHT).x
        loss = tf.reduce_sum(w)
    assert float(tape.gradient(loss, lam)) == pytest.approx(ridge_closed(0.7)[1].sum(),
                                                            rel=1e-5)


# ------------------------------------------------------------------ root
def cubic(x, a):
    return x ** 3 + x - a


def test_root_against_the_closed_form_both_modes():
    a = tf.constant([2.0, 10.0, -1.0], F64)
    with tf.GradientTape() as tape:
        tape.watch(a)
        res = tfs.root(cubic, np.zeros(3), args=(a,), tol=1e-13)
    x = res.x.numpy()
    np.testing.assert_allclose(x ** 3 + x, a.numpy(), rtol=1e-12)
    want = 1.0 / (3.0 * x ** 2 + 1.0)
    np.testing.assert_allclose(tape.gradient(res.x, a).numpy(), want, rtol=1e-9)
    jf = tf.jacfwd(lambda aa: tfs.root(cubic, np.zeros(3), args=(aa,), tol=1e-13).x)(a)
    jr = tf.jacrev(lambda aa: tfs.root(cubic, np.zeros(3), args=(aa,), tol=1e-13).x)(a)
    np.testing.assert_allclose(jf.numpy(), np.diag(want), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(jr.numpy(), jf.numpy(), rtol=1e-9, atol=1e-14)


def test_root_of_a_coupled_system_against_finite_differences():
    # x0 + p x1^3 = 1, x1 - p x0 + x0^2 = 0
    def system(x, p):
        return tf.stack([x[0] + p * x[1] ** 3 - 1.0, x[1] - p * x[0] + x[0] ** 2])

    def scipy_root(p):
        return scipy_optimize.root(lambda x: [x[0] + p * x[1] ** 3 - 1.0,
                                              x[1] - p * x[0] + x[0] ** 2], np.zeros(2),
                                   tol=1e-14).x

    p, eps = 0.8, 1e-6
    fd = (scipy_root(p + eps) - scipy_root(p - eps)) / (2 * eps)
    got = tf.jacfwd(lambda q: tfs.root(system, np.zeros(2), args=(q,), tol=1e-14).x)(
        tf.constant(p, F64))
    np.testing.assert_allclose(got.numpy(), fd, rtol=1e-6)
    got = tf.vmap(lambda q: tfs.root(system, np.zeros(2), args=(q,), tol=1e-14).x)(
        tf.constant([0.5, 0.8], F64))
    np.testing.assert_allclose(got.numpy()[1], scipy_root(0.8), rtol=1e-7)
    np.testing.assert_allclose(got.numpy()[0], scipy_root(0.5), rtol=1e-7)


# ------------------------------------------------------------------ least_squares
T = np.linspace(0.0, 3.0, 25)
DATA = 2.0 * np.exp(-1.3 * T) + 0.05 * RNG.standard_normal(25)


def decay(p, y):
    return p[0] * tf.exp(-p[1] * tf.constant(T)) - y


def decay_fit_derivative(p, y):
    """dp/dy of the least-squares fit: (J^T J + sum r_i H_i)^-1 J^T."""
    e = np.exp(-p[1] * T)
    r = p[0] * e - y
    jac = np.stack([e, -p[0] * T * e], axis=1)
    hess = jac.T @ jac
    hess[0, 1] += np.sum(r * -T * e)
    hess[1, 0] += np.sum(r * -T * e)
    hess[1, 1] += np.sum(r * p[0] * T ** 2 * e)
    return np.linalg.solve(hess, jac.T)


def test_least_squares_curve_fit_against_the_closed_form():
    y = tf.constant(DATA)
    kw = dict(xtol=1e-15, ftol=1e-15, gtol=1e-15)
    jr = tf.jacrev(lambda yy: tfs.least_squares(decay, np.ones(2), args=(yy,), **kw).x)(y)
    p = tfs.least_squares(decay, np.ones(2), args=(y,), **kw).x.numpy()
    np.testing.assert_allclose(jr.numpy(), decay_fit_derivative(p, DATA), rtol=1e-7,
                               atol=1e-10)
    jf = tf.jacfwd(lambda yy: tfs.least_squares(decay, np.ones(2), args=(yy,), **kw).x)(y)
    np.testing.assert_allclose(jf.numpy(), jr.numpy(), rtol=1e-9, atol=1e-12)


def test_least_squares_robust_loss_against_finite_differences_of_scipy():
    def scipy_fit(y):
        return scipy_optimize.least_squares(
            lambda p: p[0] * np.exp(-p[1] * T) - y, np.ones(2), loss="soft_l1", f_scale=0.1,
            xtol=1e-15, ftol=1e-15, gtol=1e-15).x

    eps, k = 1e-4, 3  # SciPy's own solves are exact to about 1e-10: a wide step
    e = np.zeros(25)
    e[k] = eps
    fd = (scipy_fit(DATA + e) - scipy_fit(DATA - e)) / (2 * eps)
    y = tf.constant(DATA)
    with tf.GradientTape() as tape:
        tape.watch(y)
        p = tfs.least_squares(decay, np.ones(2), args=(y,), loss="soft_l1", f_scale=0.1,
                              xtol=1e-15, ftol=1e-15, gtol=1e-15).x
        picked = tf.reduce_sum(p * tf.constant([1.0, 0.0], F64))
    np.testing.assert_allclose(tape.gradient(picked, y).numpy()[k], fd[0], rtol=1e-4)


def test_least_squares_square_system_is_a_root():
    def square(x, a):
        return tf.stack([x[0] ** 2 + x[1] - a[0], x[0] - x[1] ** 3 - a[1]])

    a = tf.constant([2.0, 0.5], F64)
    jac = tf.jacrev(lambda aa: tfs.least_squares(square, np.ones(2), args=(aa,),
                                                 xtol=1e-15, ftol=1e-15, gtol=1e-15).x)(a)
    x = tfs.least_squares(square, np.ones(2), args=(a,), xtol=1e-15, ftol=1e-15,
                          gtol=1e-15).x.numpy()
    dfdx = np.array([[2 * x[0], 1.0], [1.0, -3 * x[1] ** 2]])
    np.testing.assert_allclose(jac.numpy(), np.linalg.inv(dfdx), rtol=1e-8)


# ------------------------------------------------------------------ nonconvergence
def test_nonconvergence_is_reported_when_differentiated():
    lam = tf.constant(0.7, F64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = tfs.minimize(ridge, np.zeros(4), args=(lam,), method="BFGS",
                           options={"maxiter": 1})
        assert not res.success  # solving alone reports nothing: only derivatives do
    with tf.GradientTape() as tape:
        tape.watch(lam)
        w = tfs.minimize(ridge, np.zeros(4), args=(lam,), method="BFGS",
                         options={"maxiter": 1}).x
    with pytest.warns(tfs.ConvergenceWarning, match="did not converge"):
        tape.gradient(w, lam)
    with tf.GradientTape() as tape:
        tape.watch(lam)
        w = tfs.minimize(ridge, np.zeros(4), args=(lam,), method="BFGS",
                         options={"maxiter": 1}, implicit="strict").x
    with pytest.raises(tfs.ConvergenceError, match=r"res.success is False"):
        tape.gradient(w, lam)
    with pytest.raises(tfs.ConvergenceError):
        tf.jacfwd(lambda l: tfs.root(cubic, np.zeros(1), args=(l,), implicit="strict",
                                     options={"maxfev": 2}).x)(tf.constant([5.0], F64))


def test_a_minimum_on_a_bound_holds_it():
    lam = tf.constant(0.7, F64)
    bounds = [(None, None), (0.0, None), (None, None), (None, None)]  # w1 wants -2
    with tf.GradientTape(persistent=True) as tape:
        tape.watch(lam)
        w = tfs.minimize(ridge, np.zeros(4), args=(lam,), method="L-BFGS-B", bounds=bounds,
                         options={"gtol": 1e-12, "ftol": 1e-15}).x
    assert w.numpy()[1] == 0.0
    # the others: the ridge of columns 0, 2, 3 (tapeflow/scipy_kkt.py)
    free = [0, 2, 3]
    a = X[:, free].T @ X[:, free] + 0.7 * np.eye(3)
    rest = np.linalg.solve(a, X[:, free].T @ Y)
    assert np.allclose(w.numpy()[free], rest, atol=1e-6)
    want = np.zeros(4)
    want[free] = -np.linalg.solve(a, rest)
    assert np.allclose(tape.jacobian(w, lam).numpy(), want, atol=1e-6)


def test_implicit_option_and_unsupported_cases():
    lam = tf.constant(0.7, F64)
    res = tfs.minimize(ridge, np.zeros(4), args=(lam,), implicit=False)
    assert isinstance(res.x, np.ndarray)
    with pytest.raises(InvalidArgumentError, match="`implicit` must be"):
        tfs.minimize(ridge, np.zeros(4), args=(lam,), implicit="sometimes")
    with pytest.raises(InvalidArgumentError, match="must return a scalar"):
        tfs.minimize(lambda w, l: w * l, np.zeros(4), args=(lam,))
    with pytest.raises(InvalidArgumentError, match="a root is of a square system"):
        tfs.root(lambda x, a: x[:1] - a, np.zeros(2), args=(lam,))
    with pytest.raises(InvalidArgumentError, match="loss as tapeflow ops"):
        tfs.least_squares(decay, np.ones(2), args=(tf.constant(DATA),), loss=lambda z: z)
