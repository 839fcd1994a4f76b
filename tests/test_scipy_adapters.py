"""tapeflow.scipy: SciPy's solvers with exact derivatives traced once, SciPy's own
result objects, and the examples in examples/ (quick sizes) agreeing with SciPy's
finite-difference runs."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("scipy")
import scipy.sparse  # noqa: E402

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


def _example(name):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_minimize_rosenbrock_with_every_kind_of_newton_method():
    f, _ = _example("rosenbrock_trust_ncg").problem(10)
    for method in ("BFGS", "trust-ncg", "Newton-CG", "trust-krylov", "trust-exact", "dogleg"):
        # dogleg needs a positive definite Hessian: start it near the minimum
        x0 = np.full(10, 1.1) if method == "dogleg" else np.zeros(10)
        res = tfs.minimize(f, x0, method=method, options={"maxiter": 2000})
        assert res.success, (method, res.message)
        np.testing.assert_allclose(res.x, 1.0, atol=1e-4, err_msg=method)


def test_minimize_gradient_and_hessian_products_are_exact():
    f, x0 = _example("rosenbrock_trust_ncg").problem(6)
    seen = {}
    import scipy.optimize as so

    real = so.minimize

    def spy(fun, x, **kw):
        seen.update(kw, fun=fun)
        return real(fun, x, **kw)

    so_min, tfs._optimize.minimize = tfs._optimize.minimize, spy
    try:
        tfs.minimize(f, x0, method="trust-ncg")
    finally:
        tfs._optimize.minimize = so_min
    value, grad = seen["fun"](x0)
    assert value == pytest.approx(so.rosen(x0), rel=1e-14)
    np.testing.assert_allclose(grad, so.rosen_der(x0), rtol=1e-12)
    p = np.arange(6.0)
    np.testing.assert_allclose(seen["hessp"](x0, p), so.rosen_hess_prod(x0, p), rtol=1e-12)


def test_least_squares_curve_fit_matches_finite_differences():
    out = _example("curve_fit_least_squares").main(quick=True)
    np.testing.assert_allclose(out["ours"].x, out["fd"].x, rtol=1e-6)
    assert out["ours"].jac.shape == (50, 3) and isinstance(out["ours"].jac, np.ndarray)


def test_least_squares_large_banded_problem_gets_a_sparse_jacobian():
    n = 3000

    def residuals(x):  # Broyden-like: row i touches x_{i-1}, x_i, x_{i+1}
        zero = tf.zeros([1], x.dtype)
        return (3.0 - x) * x + 1.0 - tf.concat([zero, x[:-1]], 0) - 2.0 * tf.concat([x[1:], zero], 0)

    res = tfs.least_squares(residuals, -np.ones(n))
    assert res.success and res.cost < 1e-12
    assert scipy.sparse.issparse(res.jac) and res.jac.nnz == 3 * n - 2
    assert res.jac_info.colors == 3
    band = scipy.sparse.diags([1, 1, 1], [-1, 0, 1], shape=(n, n), dtype=bool)
    again = tfs.least_squares(residuals, -np.ones(n), jac_sparsity=band)
    np.testing.assert_allclose(again.x, res.x, rtol=1e-10)
    assert not again.jac_info.detected
    dense = tfs.least_squares(residuals, -np.ones(50), method="lm")
    assert isinstance(dense.jac, np.ndarray)


def test_root_tridiagonal_system():
    out = _example("tridiagonal_root").main(quick=True)
    ours, fd = out["ours"], out["fd"]
    assert ours.success and ours.njev >= 1 and ours.nfev < fd.nfev
    np.testing.assert_allclose(ours.x, fd.x, rtol=1e-7)


def test_robertson_with_bdf_matches_finite_differences():
    out = _example("robertson_bdf").main(quick=True)
    ours, fd = out["ours"], out["fd"]
    assert ours.success and ours.njev >= 1
    np.testing.assert_allclose(ours.y[:, -1], fd.y[:, -1], rtol=1e-4, atol=1e-10)


def test_reaction_diffusion_uses_the_sparse_jacobian():
    out = _example("reaction_diffusion_bdf").main(quick=True)
    res, J, info = out["res"], out["jacobian"], out["info"]
    assert res.success and scipy.sparse.issparse(J)
    n = 20
    # Each species: a five-point stencil (4n^2 - 4n entries with reflecting borders counted
    # once) and its coupling to the other species at the same point.
    dense = tf.jacobian(lambda y: out_rhs(n)(tf.constant(0.0, tf.float64), y))(
        tf.constant(_example("reaction_diffusion_bdf").problem(n)[1])).numpy()
    np.testing.assert_allclose(J.toarray(), dense, rtol=0, atol=1e-9 * np.abs(dense).max())
    assert J.nnz == np.count_nonzero(dense) and info.colors <= 12


def out_rhs(n):
    return _example("reaction_diffusion_bdf").make_rhs(n)


def test_solve_ivp_hands_bdf_a_sparse_jacobian_and_lsoda_a_dense_one():
    rhs, y0 = _example("reaction_diffusion_bdf").problem(20)
    kinds = []
    real = tfs._integrate.solve_ivp

    def spy(fun, span, y, **options):
        kinds.append(options["jac"](0.0, y))
        return real(fun, span, y, **options)

    tfs._integrate.solve_ivp, saved = spy, real
    try:
        tfs.solve_ivp(rhs, (0.0, 0.01), y0, method="BDF")
        tfs.solve_ivp(rhs, (0.0, 0.01), y0, method="LSODA")
    finally:
        tfs._integrate.solve_ivp = saved
    assert scipy.sparse.issparse(kinds[0]) and kinds[0].format == "csr"
    assert isinstance(kinds[1], np.ndarray)


def test_bad_input_is_named():
    f, x0 = _example("rosenbrock_trust_ncg").problem(4)
    with pytest.raises(TypeError, match="computes `jac` itself"):
        tfs.minimize(f, x0, jac=True)
    with pytest.raises(TypeError, match="computes `jac` itself"):
        tfs.least_squares(lambda x: x, x0, jac="2-point")
    with pytest.raises(ValueError, match=r"sparsity: expected a pattern of shape \(4, 4\)"):
        tfs.least_squares(lambda x: x - 1.0, x0, jac_sparsity=np.eye(3, dtype=bool))

    def shifty(x):  # the output length depends on a value (a guard: retraced per branch)
        return x[: 3 if float(x[0]) > 0 else 4] - 1.0

    call = tfs._vector_fun(shifty, ())
    assert call(-np.ones(4)).shape == (4,)
    with pytest.raises(ValueError, match="output of one shape"):
        call(np.ones(4))


def test_arguments_pass_as_scipy_passes_them():
    # A Python int raised a dtype mismatch (it became an int32 tensor) and a dict raised
    # "'dict' object has no attribute 'shape'": SciPy passes them to f unchanged, and so
    # does tapeflow; arrays become tensors (inputs of the traces, not constants).
    res = tfs.minimize(lambda x, k: tf.reduce_sum((x - k) ** 2), np.zeros(3), args=(2,),
                       method="trust-ncg")
    np.testing.assert_allclose(res.x, [2.0, 2.0, 2.0], atol=1e-8)
    params = {"c": np.array([1.0, 2.0, 3.0]), "w": 2.0}
    res = tfs.minimize(lambda x, p: tf.reduce_sum((x - p["c"]) ** 2) * p["w"], np.zeros(3),
                       args=(params,), method="BFGS")
    np.testing.assert_allclose(res.x, params["c"], atol=1e-5)
    np.testing.assert_allclose(tfs.root(lambda x, k: x ** 3 - k, np.ones(2), args=(8,)).x,
                               [2.0, 2.0], rtol=1e-10)
    np.testing.assert_allclose(tfs.least_squares(lambda x, k: x - k, np.zeros(2), args=(3,)).x,
                               [3.0, 3.0], rtol=1e-10)
    sol = tfs.solve_ivp(lambda t, y, k: -k * y, (0.0, 1.0), np.ones(2), args=(2,),
                        rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(sol.y[:, -1], np.exp(-2.0), rtol=1e-5)
