"""Sparse Hessians (tapeflow/sparse_hessians.py, hessian_patterns.py,
graph/hessian_sparsity.py) and the sparse nonlinear programs built on them
(tapeflow/scipy_sparse_nlp.py): patterns read off the program that never miss a nonzero
of the dense Hessian, star colorings (checked) within twice the densest row, values equal
to tf.hessian in float64, replay at new inputs, dtypes and errors; IPOPT (cyipopt, the
`ipopt` extra) and trust-constr with exact sparse Lagrangian Hessians."""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.sparse_hessians import is_star_coloring, star_coloring

from op_table import ROWS
from programs import build

sp = pytest.importorskip("scipy.sparse")
import tapeflow.scipy as tfs  # noqa: E402 (needs SciPy)
from scipy.optimize import LinearConstraint, NonlinearConstraint  # noqa: E402
from tapeflow.scipy_sparse_nlp import trust_constr_arguments  # noqa: E402


def _dense(f, x, *args):
    return tf.hessian(lambda v: f(v, *args))(tf.constant(x)).numpy().reshape(x.size, x.size)


def _check_against_dense(f, x, *args, exact_pattern=True):
    H, info = tf.sparse_hessian(f, x, args=args, return_info=True)
    dense = _dense(f, x, *args)
    assert sp.issparse(H) and H.format == "csr" and H.shape == (x.size, x.size)
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-12, atol=1e-12)
    pattern = tf.hessian_sparsity(f, x, args=args).toarray()
    assert not (np.abs(dense) > 0)[~pattern].any()
    if exact_pattern:
        np.testing.assert_array_equal(pattern, np.abs(dense) > 0)
    assert is_star_coloring(pattern, info.coloring)
    assert info.colors <= 2 * info.densest_row
    return H, info


# ---------------------------------------------------------------------------- structures
@pytest.mark.parametrize("w", [3, 5, 7])
def test_banded_hessian_takes_its_bandwidth_in_colors(w):
    h = w // 2

    def f(x):  # sum_k sum_i x_i^2 x_{i+k}^2 (k <= h) + sum cos(x): bandwidth w
        total = tf.reduce_sum(tf.cos(x))
        for k in range(1, h + 1):
            total = total + tf.reduce_sum((x[k:] * x[:-k]) ** 2)
        return total

    x = np.random.default_rng(0).standard_normal(60)
    H, info = _check_against_dense(f, x)
    assert info.colors == w and info.densest_row == w and info.detected
    assert H.nnz == 60 * w - 2 * sum(range(1, h + 1))


def test_arrowhead_takes_two_colors_where_a_column_coloring_takes_n():
    def f(x):  # x_0 couples to everything: a dense row and column
        return x[0] ** 2 * tf.reduce_sum(tf.sin(x[1:])) + tf.reduce_sum(x[1:] ** 3)

    x = np.random.default_rng(1).standard_normal(40)
    _, info = _check_against_dense(f, x)
    assert info.colors == 2 and info.densest_row == 40


@pytest.mark.parametrize("size", [2, 5])
def test_block_diagonal_takes_the_block_size(size):
    def f(x):  # a log-sum-exp per block
        return tf.reduce_sum(tf.math.reduce_logsumexp(tf.reshape(x, [-1, size]), axis=1))

    x = np.random.default_rng(2).standard_normal(size * 12)
    H, info = _check_against_dense(f, x)
    assert info.colors == size
    np.testing.assert_array_equal(H.toarray() != 0,
                                  np.kron(np.eye(12, dtype=bool), np.ones((size, size), bool)))


@pytest.mark.parametrize("seed", [3, 4, 5])
def test_random_sparse_interactions(seed):
    rng = np.random.default_rng(seed)
    n = 50
    pairs = rng.integers(0, n, (60, 2))
    weights = rng.uniform(0.5, 2.0, 60)

    def f(x):
        a, b = tf.gather(x, pairs[:, 0]), tf.gather(x, pairs[:, 1])
        return tf.reduce_sum(weights * tf.tanh(a) * b) + 0.1 * tf.reduce_sum(x ** 4)

    _check_against_dense(f, rng.standard_normal(n))


def test_a_two_dimensional_stencil_stays_within_twice_the_densest_row():
    m = 12

    def area(z):  # the minimal surface functional on an m x m grid
        u = tf.reshape(z, [m, m])
        ux, uy = u[1:, :-1] - u[:-1, :-1], u[:-1, 1:] - u[:-1, :-1]
        return tf.reduce_sum(tf.sqrt(1.0 + ux ** 2 + uy ** 2))

    _, info = _check_against_dense(area, np.random.default_rng(6).standard_normal(m * m))
    assert info.densest_row == 7 and info.colors <= 9


# ---------------------------------------------------------------------------- structure rules
@pytest.mark.parametrize("f, pairs", [
    (lambda x: x[0] * x[1] + x[2] + x[3], {(0, 1)}),            # a product: the cross term
    (lambda x: tf.sin(x[0] + x[1]), {(0, 0), (0, 1), (1, 1)}),  # nonlinear: every pair
    (lambda x: tf.reduce_sum(x / 3.0) + 2.0 / x[1], {(1, 1)}),  # a / c linear, c / b not
    (lambda x: x[0] / x[1], {(0, 1), (1, 1)}),                  # linear in the numerator
    (lambda x: x[0] * x[0], {(0, 0)}),                          # one tensor twice
    (lambda x: tf.reduce_sum(tf.nn.relu(x) + tf.abs(x) + tf.maximum(x, 0.5)), set()),
    (lambda x: tf.reduce_sum(tf.linalg.matvec(tf.constant(np.eye(4)[::-1].copy()), x)), set()),
    (lambda x: tf.reduce_sum(tf.exp(x)[1:3]), {(1, 1), (2, 2)}),   # only what reaches f
    (lambda x: tf.reduce_sum(x[:2]) ** 2 + x[3], {(0, 0), (0, 1), (1, 1)}),
    (lambda x: tf.reduce_sum(x) * 0.0 + 1.0, set()),
])
def test_the_pattern_follows_the_structure(f, pairs):
    p = tf.hessian_sparsity(f, np.ones(4) + np.arange(4.0))
    got = {(int(i), int(j)) for i, j in zip(*p.nonzero()) if i <= j}
    assert got == pairs


def _flat_scalar(row):
    """The row's op on one flat input, summed with fixed positive weights (a sum without
    cancellations: its Hessian holds every output's)."""
    first = row.make(np.random.default_rng(7))
    shapes = [np.shape(a) for a in first]
    sizes = [int(np.prod(s)) for s in shapes]
    weights = tf.constant(np.random.default_rng(3).uniform(0.5, 1.5, 20000))

    def f(z):
        parts = tf.split(z, sizes) if len(sizes) > 1 else [z]
        out = row.fn(*[tf.reshape(p, s) for p, s in zip(parts, shapes, strict=True)])
        out = tf.reshape(tf.math.real(out) if out.dtype.is_complex else out, [-1])
        return tf.reduce_sum(out * weights[:out.shape[0]])

    return f


def _dense_hessian(f, z):
    try:
        return _dense(f, z)
    except ValueError:  # some rows' batching rules fail under tf.hessian's vmap: a loop
        return np.stack([tf.hvp(f, (tf.constant(z),), (tf.constant(e),)).numpy()
                         for e in np.eye(z.size)])


# The second derivatives of these rows sum a series per element: a dense Hessian takes
# minutes (their second derivatives are checked along random directions in tests/rules).
SLOW_SECOND_ORDER = {"random_gamma_grad", "ssim_multiscale"}


@pytest.mark.parametrize("row", [r for r in ROWS if not set(r.covers()) & SLOW_SECOND_ORDER
                                 and r.name not in SLOW_SECOND_ORDER], ids=lambda r: r.name)
def test_the_detected_pattern_holds_every_nonzero_of_the_dense_hessian(row):
    f = _flat_scalar(row)
    for seed in (7, 8):
        z = np.concatenate([np.asarray(a, np.float64).ravel()
                            for a in row.make(np.random.default_rng(seed))])
        allowed = tf.hessian_sparsity(f, z).toarray()
        dense = _dense_hessian(f, z)
        outside = (np.abs(dense) > 1e-9 * max(1.0, np.abs(dense).max())) & ~allowed
        assert not outside.any(), (f"{row.name}: Hessian entries "
                                   f"{np.argwhere(outside)[:5].tolist()} are nonzero but not in "
                                   "the detected pattern")


@pytest.mark.parametrize("seed", range(12))
def test_random_programs_from_the_op_table(seed):
    program = build(seed, n_steps=3, n_inputs=1,
                    rows=[r for r in ROWS if not set(r.covers()) & SLOW_SECOND_ORDER
                          and r.name not in SLOW_SECOND_ORDER])
    x = program.inputs[0]
    weights = np.random.default_rng(seed).uniform(0.5, 1.5, 20000)

    def f(v):
        out = program(v)
        return tf.reduce_sum(out * weights[:out.shape[0]])

    allowed = tf.hessian_sparsity(f, x).toarray()
    dense = _dense_hessian(f, x)
    outside = (np.abs(dense) > 1e-9 * max(1.0, np.abs(dense).max())) & ~allowed
    assert not outside.any(), f"{program}: entries {np.argwhere(outside)[:5].tolist()} missed"
    H = tf.sparse_hessian(f, x)
    np.testing.assert_allclose(H.toarray(), dense, rtol=1e-9, atol=1e-9 * np.abs(dense).max())


def test_a_primitive_declares_its_curvature_beside_its_other_rules():
    # The curvature rule kind (catalog): a user's primitive that declares itself linear
    # adds no Hessian pairs; without the declaration, the safe default bends in every
    # input it depends on (here each element in itself: the diagonal).
    from tapeflow import extend
    from tapeflow.core import registry

    def scaled(name, **rules):
        prim = extend.define(extend.Primitive(name, lambda x: 3.0 * x),
                             extend.per_input(jvp=(lambda t, ans, x: 3.0 * t,),
                                              vjp=(lambda g, ans, x: 3.0 * g,), reads=("",)),
                             sparsity=extend.elementwise_deps, **rules)
        return lambda x: tf.reduce_sum(extend.bind(prim, x))

    x = np.arange(1.0, 4.0)
    names = ("test_scaled_linear", "test_scaled_default", "test_scaled_bad")
    try:
        declared = scaled(names[0], curvature=extend.LINEAR)
        assert tf.hessian_sparsity(declared, x).nnz == 0
        undeclared = scaled(names[1])
        np.testing.assert_array_equal(tf.hessian_sparsity(undeclared, x).toarray(), np.eye(3))
        with pytest.raises(TypeError, match="`curvature` must be a Curvature"):
            extend.define(extend.Primitive(names[2], lambda x: x), curvature="linear")
    finally:
        for name in names:
            registry().pop(name, None)


# ---------------------------------------------------------------------------- colorings
def test_the_checker_rejects_what_is_not_a_star_coloring():
    path = np.eye(5, dtype=bool) | np.eye(5, k=1, dtype=bool) | np.eye(5, k=-1, dtype=bool)
    assert not is_star_coloring(path, [0, 0, 1, 2, 0])       # neighbors share a color
    assert not is_star_coloring(path, [0, 1, 0, 1, 2])       # 0-1-0-1: a two-colored path
    assert is_star_coloring(path, [0, 1, 0, 2, 0])           # stars around 1 and 2
    assert is_star_coloring(sp.csr_matrix(path), [0, 1, 2, 0, 1])
    with pytest.raises(ValueError, match="expected 5 colors"):
        is_star_coloring(path, [0, 1])


@pytest.mark.parametrize("seed", range(6))
def test_star_colorings_of_random_graphs_are_valid(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(5, 80))
    a = rng.random((n, n)) < rng.uniform(0.02, 0.3)
    a = a | a.T | np.eye(n, dtype=bool)
    colors = star_coloring(a)
    assert is_star_coloring(a, colors)
    assert star_coloring(np.tril(a)).tolist() == colors.tolist()  # a triangle is enough


# ---------------------------------------------------------------------------- replay
def test_replay_at_new_inputs_and_arguments_traces_once():
    def f(x, scale):
        return scale * tf.reduce_sum(tf.exp(x[1:] * x[:-1]))

    hess = tf.SparseHessian(f)
    rng = np.random.default_rng(8)
    for _ in range(3):
        x, scale = rng.standard_normal(20), rng.uniform(1, 2)
        np.testing.assert_allclose(hess(x, np.float64(scale)).toarray(),
                                   _dense(f, x, tf.constant(np.float64(scale))), rtol=1e-12, atol=1e-12)
    (_, run), = hess._plans.values()
    assert run.experimental_get_tracing_count() == 1
    assert hess.info.colors == 3
    assert hess(np.ones(7), np.float64(1.0)).shape == (7, 7)  # a new shape: its own plan
    assert len(hess._plans) == 2


def test_plans_are_bounded(monkeypatch):
    monkeypatch.setattr(tf.sparse_hessians, "MAX_PLANS", 2)
    hess = tf.SparseHessian(lambda x: tf.reduce_sum(x ** 3))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for n in range(1, 6):
            assert hess(np.ones(n)).shape == (n, n)
    assert len(hess._plans) == 2


def test_a_branch_on_values_merges_both_patterns():
    def f(x):
        if x[0] > 0:
            return tf.reduce_sum(x ** 3)
        return x[1] * x[2] + tf.reduce_sum(x)

    hess = tf.SparseHessian(f)
    for x in (np.array([1.0, 2.0, 3.0]), np.array([-1.0, 2.0, 3.0])):
        np.testing.assert_allclose(hess(x).toarray(), _dense(f, x), atol=1e-12)


def test_a_supplied_pattern_is_checked_and_one_triangle_is_enough():
    f = lambda x: tf.reduce_sum(x[1:] * x[:-1]) + tf.reduce_sum(x ** 3)  # noqa: E731
    x = np.random.default_rng(9).standard_normal(8)
    lower = np.tril(tf.hessian_sparsity(f, x).toarray())
    H, info = tf.sparse_hessian(f, x, sparsity=lower, return_info=True)
    assert not info.detected
    np.testing.assert_allclose(H.toarray(), _dense(f, x), atol=1e-12)
    with pytest.warns(UserWarning, match="lacks 14 entries"):
        hess = tf.SparseHessian(f, sparsity=np.eye(8, dtype=bool))
        with pytest.raises(ValueError, match="misses nonzero Hessian entries"):
            hess(x)
    with pytest.raises(ValueError, match=r"expected a pattern of shape \(8, 8\)"):
        tf.sparse_hessian(f, x, sparsity=np.eye(7, dtype=bool))


# ---------------------------------------------------------------------------- dtypes, errors
@pytest.mark.parametrize("dtype, want", [(tf.float64, np.float64), (tf.float32, np.float32),
                                         (tf.float16, np.float32), (tf.bfloat16, np.float32)])
def test_dtypes(dtype, want):
    if dtype == tf.bfloat16:
        pytest.importorskip("ml_dtypes")
    x = tf.constant([0.5, 1.0, 1.5], dtype=dtype)
    H = tf.sparse_hessian(lambda v: tf.reduce_sum(v ** 3 * v[0]), x)
    assert H.dtype == want
    exact = np.diag(6 * np.array([0.5, 1.0, 1.5]) * 0.5)
    exact[0, 0] = 12 * 0.5 ** 2
    exact[0, 1:] = exact[1:, 0] = 3 * np.array([1.0, 1.5]) ** 2
    np.testing.assert_allclose(H.toarray(), exact, rtol=2e-2 if dtype in (tf.float16, tf.bfloat16)
                               else 1e-6)


def test_errors_name_the_argument():
    with pytest.raises(TypeError, match=r"`x` must be a real floating tensor; got int64"):
        tf.sparse_hessian(lambda x: tf.reduce_sum(x), np.arange(3))
    with pytest.raises(TypeError, match=r"real floating tensor; got complex128"):
        tf.hessian_sparsity(lambda x: tf.reduce_sum(tf.math.real(x)), np.ones(2) + 1j)
    with pytest.raises(ValueError, match=r"must return a scalar.*got shape \[3\]"):
        tf.sparse_hessian(lambda x: x ** 2, np.ones(3))
    with pytest.raises(TypeError, match="returns int32; a Hessian needs a real floating"):
        tf.SparseHessian(lambda x: tf.reduce_sum(tf.cast(x, tf.int32)))(np.ones(3))
    with pytest.raises(ValueError, match="must be square"):
        star_coloring(np.ones((2, 3), bool))


def test_degenerate_sizes_and_functions():
    H, info = tf.sparse_hessian(lambda x: tf.reduce_sum(3.0 * x), np.ones(4), return_info=True)
    assert H.nnz == 0 and info.colors == 0 and H.shape == (4, 4)
    H = tf.sparse_hessian(lambda x: tf.reduce_sum(x ** 2), np.ones(0))
    assert H.shape == (0, 0)
    H = tf.sparse_hessian(lambda x: tf.reshape(x ** 3, [1, 1]), np.array([2.0]))  # size 1
    assert H.toarray().tolist() == [[12.0]]


def test_without_scipy_the_missing_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    with pytest.raises(ImportError, match=r"tapeflow\[scipy\]"):
        tf.sparse_hessian(lambda x: tf.reduce_sum(x ** 2), np.ones(3))


# ---------------------------------------------------------------------------- IPOPT, trust-constr
def _hs071():
    def objective(x):
        return x[0] * x[3] * (x[0] + x[1] + x[2]) + x[2]

    cons = [{"type": "ineq", "fun": lambda x: tf.reduce_prod(x) - 25.0},
            {"type": "eq", "fun": lambda x: tf.reduce_sum(x ** 2) - 40.0}]
    return objective, cons, np.array([1.0, 5.0, 5.0, 1.0])


def test_ipopt_solves_hs071():
    pytest.importorskip("cyipopt")

    objective, cons, x0 = _hs071()
    res = tfs.minimize_ipopt(objective, x0, bounds=[(1, 5)] * 4, constraints=cons)
    assert res.success and res.status == 0 and isinstance(res.message, str)
    assert res.fun == pytest.approx(17.0140173, abs=1e-6)
    np.testing.assert_allclose(res.x, [1.0, 4.7429996, 3.8211499, 1.3794082], atol=1e-6)
    assert res.nit > 0 and res.nfev > 0 and res.njev > 0
    assert res.hess_info.colors == 4 and res.jac_info.shape == (2, 4)


def test_ipopt_on_a_large_sparse_problem_with_every_kind_of_constraint():
    pytest.importorskip("cyipopt")

    n = 400
    target = np.linspace(0.0, 1.0, n)

    def objective(x, weight):  # a chain: a tridiagonal Hessian
        return tf.reduce_sum((x - target) ** 2) + weight * tf.reduce_sum((x[1:] - x[:-1]) ** 4)

    ring = NonlinearConstraint(lambda x: x[1:] ** 2 + x[:-1] ** 2, 0.0, 1.5)
    total = LinearConstraint(sp.csr_matrix(np.ones((1, n))), -np.inf, 0.4 * n)
    first = {"type": "eq", "fun": lambda x, v: x[0] - v, "args": (np.float64(0.1),)}
    res = tfs.minimize_ipopt(objective, np.full(n, 0.3), args=(np.float64(10.0),),
                             constraints=[ring, total, first], bounds=[(None, 0.95)] * n,
                             options={"maxiter": 200})
    assert res.success, res.message
    assert abs(res.x[0] - 0.1) < 1e-7 and res.x.max() <= 0.95 + 1e-7
    assert res.x.sum() <= 0.4 * n * (1 + 1e-7)
    assert (res.x[1:] ** 2 + res.x[:-1] ** 2).max() <= 1.5 + 1e-7
    assert res.hess_info.colors == 3 and res.jac_info.colors <= 4
    # the same problem by trust-constr, with the same sparse derivatives
    via_scipy = tfs.minimize(objective, np.full(n, 0.3), args=(np.float64(10.0),),
                             method="trust-constr", constraints=[ring, total, first],
                             bounds=[(None, 0.95)] * n)
    assert via_scipy.fun == pytest.approx(res.fun, rel=1e-5)


def test_ipopt_errors():
    pytest.importorskip("cyipopt")

    f = lambda x: tf.reduce_sum(x ** 2)  # noqa: E731
    with pytest.raises(TypeError, match="computes `jac` itself"):
        tfs.minimize_ipopt(f, np.ones(2), jac=lambda x: 2 * x)
    with pytest.raises(ValueError, match="use tapeflow.scipy.minimize"):
        tfs.minimize_ipopt(f, np.ones(2), method="SLSQP")
    with pytest.raises(NotImplementedError, match="callback"):
        tfs.minimize_ipopt(f, np.ones(2), callback=print)
    with pytest.raises(ValueError, match=r"constraints\[0\] must have 'type' 'eq' or 'ineq'"):
        tfs.minimize_ipopt(f, np.ones(2), constraints={"type": "lt", "fun": f})
    with pytest.raises(ValueError, match=r"bounds.*expected 2"):
        tfs.minimize_ipopt(f, np.ones(2), bounds=[(0, 1)] * 3)
    with pytest.raises(TypeError, match="invalid option for IPOPT"):
        tfs.minimize_ipopt(f, np.ones(2), options={"no_such_option": 1})


def test_without_cyipopt_the_missing_extra_is_named(monkeypatch):
    monkeypatch.setitem(sys.modules, "cyipopt", None)
    with pytest.raises(ImportError, match=r"tapeflow\[ipopt\]"):
        tfs.minimize_ipopt(lambda x: tf.reduce_sum(x ** 2), np.ones(2))


def test_trust_constr_gets_sparse_lagrangian_hessians():
    objective, cons, x0 = _hs071()
    res = tfs.minimize(objective, x0, method="trust-constr", bounds=[(1, 5)] * 4,
                       constraints=cons)
    assert res.success and res.fun == pytest.approx(17.0140173, abs=1e-4)
    n = 3000
    kw = trust_constr_arguments(lambda x: tf.reduce_sum(tf.cosh(x[1:] - x[:-1])), np.zeros(n),
                                (), {"constraints": {"type": "ineq",
                                                     "fun": lambda x: 1.0 - x[1:] * x[:-1]}})
    con = kw["constraints"][0]
    x = np.random.default_rng(10).standard_normal(n)
    J, Hc, Hf = con.jac(x), con.hess(x, np.ones(n - 1)), kw["hess"](x)
    assert sp.issparse(J) and sp.issparse(Hc) and sp.issparse(Hf) and "hessp" not in kw
    assert J.nnz == 2 * (n - 1) and Hc.nnz == 2 * (n - 1) and Hf.nnz == 3 * n - 2
    np.testing.assert_allclose(Hc.diagonal(), 0.0)
    np.testing.assert_allclose(Hc.diagonal(1), -1.0)
