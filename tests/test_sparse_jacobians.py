"""Sparse Jacobians (tapeflow/sparse_jacobians.py): patterns read off the program,
colorings with as few colors as the structure allows, values equal to the analytic
Jacobian, replay at new inputs, and clear errors for bad patterns."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from thread_helpers import run_in_threads

sp = pytest.importorskip("scipy.sparse")


def _banded(w):
    """A nonlinear map whose Jacobian has bandwidth w (w odd): y_i = sum_k c_k x_{i+k}^2."""
    h = w // 2

    def f(x):
        pad = tf.concat([tf.zeros([h], x.dtype), x, tf.zeros([h], x.dtype)], 0)
        n = x.shape[0]
        return sum((k + 1.0) * tf.square(pad[k:k + n]) for k in range(w))

    def exact(x):
        n = x.size
        J = np.zeros((n, n))
        for i in range(n):
            for k in range(w):
                j = i + k - h
                if 0 <= j < n:
                    J[i, j] = (k + 1.0) * 2 * x[j]
        return J

    return f, exact


@pytest.mark.parametrize("w", [3, 5])
def test_banded_jacobian_needs_as_many_colors_as_its_bandwidth(w):
    f, exact = _banded(w)
    x = np.random.default_rng(0).standard_normal(50)
    J, info = tf.sparse_jacobian(f, x, return_info=True)
    assert sp.issparse(J) and J.format == "csr" and J.shape == (50, 50)
    assert info.mode == "forward" and info.colors == w and info.detected
    assert J.nnz == 50 * w - 2 * sum(range(1, w // 2 + 1))
    np.testing.assert_allclose(J.toarray(), exact(x), rtol=0, atol=1e-12)


def test_block_diagonal_per_example_network():
    rng = np.random.default_rng(1)
    W1, W2 = rng.standard_normal((3, 8)), rng.standard_normal((8, 2))

    def f(x):  # x: [examples, 3] -> [examples, 2], each example on its own
        return tf.matmul(tf.tanh(tf.matmul(tf.reshape(x, [-1, 3]), W1)), W2)

    x = rng.standard_normal(40 * 3)
    J, info = tf.sparse_jacobian(f, x, return_info=True)
    assert info.mode == "reverse" and info.colors == 2  # 2 outputs per example, 3 inputs
    dense = tf.jacobian(lambda v: tf.reshape(f(v), [-1]))(tf.constant(x)).numpy()
    np.testing.assert_allclose(J.toarray(), dense, rtol=0, atol=1e-12)
    blocks = np.kron(np.eye(40, dtype=bool), np.ones((2, 3), bool))
    np.testing.assert_array_equal(J.toarray() != 0, blocks)


def test_arrowhead_takes_its_dense_row_by_reverse_mode():
    def f(x):  # y_0 = sum x^2; y_i = x_0 * x_i + x_i^3
        head = tf.reshape(tf.reduce_sum(tf.square(x)), [1])
        return tf.concat([head, x[0] * x[1:] + x[1:] ** 3], 0)

    x = np.random.default_rng(2).standard_normal(30)
    J, info = tf.sparse_jacobian(f, x, return_info=True)
    exact = np.zeros((30, 30))
    exact[0] = 2 * x
    exact[1:, 0] = x[1:]
    exact[np.arange(1, 30), np.arange(1, 30)] = x[0] + 3 * x[1:] ** 2
    np.testing.assert_allclose(J.toarray(), exact, rtol=0, atol=1e-12)
    assert info.mode == "mixed" and info.reverse_rows == 1 and info.colors == 3


def test_a_few_dense_rows():
    def f(x):  # elementwise, plus two sums over everything
        return tf.concat([tf.sin(x), tf.stack([tf.reduce_sum(x), tf.reduce_sum(x * x)])], 0)

    x = np.random.default_rng(3).standard_normal(25)
    J, info = tf.sparse_jacobian(f, x, return_info=True)
    exact = np.vstack([np.diag(np.cos(x)), np.ones(25), 2 * x])
    np.testing.assert_allclose(J.toarray(), exact, rtol=0, atol=1e-12)
    assert info.colors == 3 and info.reverse_rows >= 2  # the two sums by reverse mode


def test_few_outputs_use_reverse_mode():
    f = lambda x: tf.stack([tf.reduce_sum(x), tf.reduce_sum(tf.sin(x))])
    x = np.linspace(0, 1, 40)
    J, info = tf.sparse_jacobian(f, x, return_info=True)
    assert info.mode == "reverse" and info.colors == 2
    np.testing.assert_allclose(J.toarray(), np.vstack([np.ones(40), np.cos(x)]), atol=1e-12)


def _laplacian_rhs(n):
    def f(u):  # a 5-point stencil with zero boundaries, plus a cubic reaction
        g = tf.reshape(u, [n, n])
        p = tf.pad(g, [[1, 1], [1, 1]])
        lap = p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g
        return tf.reshape(lap - g ** 3, [-1])
    return f


def test_five_point_stencil_on_a_100_by_100_grid():
    n = 100
    f = _laplacian_rhs(n)
    u = np.random.default_rng(4).standard_normal(n * n)
    J, info = tf.sparse_jacobian(f, u, return_info=True)
    main = -4.0 - 3 * u ** 2
    T = sp.diags([np.ones(n - 1), np.ones(n - 1)], [-1, 1])
    exact = sp.kron(sp.eye(n), T) + sp.kron(T, sp.eye(n)) + sp.diags(main)
    assert abs(J - exact).max() < 1e-12
    # Greedy distance-2 coloring of the grid: 7 colors here (the optimum is 5).
    assert J.nnz == exact.nnz and info.mode == "forward" and info.colors <= 7


def test_value_dependent_zeros_keep_their_structural_entries():
    f = lambda x: x * tf.stop_gradient(x) + x[::-1] * x  # at x = 0 every value is 0
    pattern = tf.jacobian_sparsity(f, np.zeros(6)).toarray()
    assert (pattern == (np.eye(6, dtype=bool) | np.eye(6, dtype=bool)[::-1])).all()
    J = tf.sparse_jacobian(f, np.zeros(6))
    assert J.nnz == pattern.sum()  # the entries are kept, with value 0 here
    x = np.arange(1.0, 7.0)
    np.testing.assert_allclose(tf.sparse_jacobian(f, x).toarray(),
                               tf.jacobian(f)(tf.constant(x)).numpy(), atol=1e-12)


def test_traced_once_and_replayed_at_new_inputs():
    f, exact = _banded(3)
    jac = tf.SparseJacobian(f)
    rng = np.random.default_rng(5)
    for _ in range(4):
        x = rng.standard_normal(20)
        np.testing.assert_allclose(jac(x).toarray(), exact(x), atol=1e-12)
    ((plan, _, run),) = jac._plans.values()
    assert run.experimental_get_tracing_count() == 1 and jac.info.colors == 3


def test_a_supplied_pattern_is_used_and_checked():
    f, exact = _banded(3)
    x = np.random.default_rng(6).standard_normal(12)
    band = np.abs(np.subtract.outer(np.arange(12), np.arange(12))) <= 1
    J, info = tf.sparse_jacobian(f, x, sparsity=sp.csr_matrix(band), return_info=True)
    assert not info.detected and info.colors == 3
    np.testing.assert_allclose(J.toarray(), exact(x), atol=1e-12)
    with pytest.raises(ValueError, match=r"shape \(12, 12\).*got \(12, 11\)"):
        tf.sparse_jacobian(f, x, sparsity=band[:, :11])
    with pytest.raises(ValueError, match="2-D boolean array"):
        tf.sparse_jacobian(f, x, sparsity=np.ones(12, bool))
    diagonal = np.eye(12, dtype=bool)  # misses the off-diagonal entries
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        with pytest.raises(ValueError, match="misses nonzero Jacobian entries"):
            tf.sparse_jacobian(f, x, sparsity=diagonal)
    assert any("lacks 22 entries" in str(w.message) for w in seen)


def test_bad_input_and_modes():
    with pytest.raises(TypeError, match="floating"):
        tf.sparse_jacobian(lambda x: x, np.arange(3))
    with pytest.raises(ValueError, match="mode"):
        tf.SparseJacobian(lambda x: x, mode="sideways")
    f, exact = _banded(3)
    x = np.random.default_rng(7).standard_normal(9)
    for mode in ("forward", "reverse", "mixed"):
        J, info = tf.sparse_jacobian(f, x, mode=mode, return_info=True)
        np.testing.assert_allclose(J.toarray(), exact(x), atol=1e-12)
        assert info.mode == mode and info.colors == (4 if mode == "mixed" else 3)


def test_color_columns_of_a_tridiagonal_pattern():
    tri = np.abs(np.subtract.outer(np.arange(7), np.arange(7))) <= 1
    colors = tf.sparse_jacobians.color_columns(tri)
    assert colors.max() + 1 == 3
    for c in range(3):  # columns of one color share no row
        assert (tri[:, colors == c].sum(axis=1) <= 1).all()


def test_a_new_branch_of_the_program_adds_its_entries():
    """A Python branch on a value (a guard in the trace): when a later input takes the
    other branch, its pattern joins the first one's and the values are right."""
    def f(x):
        if float(x[0]) > 0:
            return x * x[::-1]
        return x * 2.0

    jac = tf.SparseJacobian(f)
    np.testing.assert_allclose(jac(-np.ones(4)).toarray(), 2 * np.eye(4))
    assert jac.info.colors == 1
    x = np.arange(1.0, 5.0)
    np.testing.assert_allclose(jac(x).toarray(), tf.jacobian(f)(tf.constant(x)).numpy(),
                               atol=1e-12)
    np.testing.assert_allclose(jac(-np.ones(4)).toarray(), 2 * np.eye(4))


def test_extra_arguments_change_between_calls_without_retracing():
    """f(x, t): the Jacobian in x, with t passed as a tensor (solve_ivp's jac(t, y))."""
    def f(y, t):
        return tf.sin(t) * y[1:] * y[:-1]

    jac = tf.SparseJacobian(f)
    y = np.arange(1.0, 6.0)
    for t in (0.3, 1.1, 2.0):
        want = tf.jacobian(lambda v: f(v, tf.constant(t, tf.float64)))(tf.constant(y)).numpy()
        np.testing.assert_allclose(jac(y, np.float64(t)).toarray(), want, atol=1e-12)
    ((_, _, run),) = jac._plans.values()
    assert run.experimental_get_tracing_count() == 1 and jac.info.colors == 2


def test_a_stencil_written_as_a_convolution_is_exact():
    """conv2d's dependency rule follows each window and a fixed filter's nonzero taps: a
    five-point stencil as a 3x3 convolution gives the same pattern as the sliced one."""
    n = 30
    kernel = np.zeros((3, 3, 1, 1))
    kernel[1, :, 0, 0] = kernel[:, 1, 0, 0] = 1.0
    kernel[1, 1, 0, 0] = -4.0

    def f(u):
        g = tf.reshape(u, [1, n, n, 1])
        return tf.reshape(tf.nn.conv2d(g, kernel, 1, "SAME") - g ** 3, [-1])

    u = np.random.default_rng(8).standard_normal(n * n)
    J, info = tf.sparse_jacobian(f, u, return_info=True)
    sliced = tf.sparse_jacobian(_laplacian_rhs(n), u)
    assert abs(J - sliced).max() < 1e-12 and J.nnz == sliced.nnz and info.colors <= 7


@pytest.mark.parametrize("mode", ["forward", "reverse", "auto"])
def test_a_repeated_scatter_index_is_counted_once_in_every_mode(mode):
    # Row 1 is written twice; the last update (u[5]) lands, u[4] is overwritten: reverse mode
    # gave J[4, 4] = 2 and jacrev J[1, 4] = 1, where jacfwd has 1 and 0.
    def f(u):
        return tf.tensor_scatter_nd_update(u, [[1], [1]], u[4:])

    x = np.linspace(-1.0, 1.0, 6)
    want = tf.jacfwd(f)(tf.constant(x)).numpy()
    np.testing.assert_array_equal(tf.sparse_jacobian(f, x, mode=mode).toarray(), want)
    np.testing.assert_array_equal(tf.jacrev(f)(tf.constant(x)).numpy(), want)



@pytest.mark.parametrize("mode", ["auto", "forward", "reverse", "mixed"])
def test_a_branch_to_an_output_of_another_shape_gets_its_own_plan(mode):
    # Merging the new branch's pattern into the plan assumed one output shape: the second
    # branch's (6, 6) Jacobian came back (5, 6), or raised from NumPy.
    def f(x):
        if float(tf.reduce_sum(x)) > 0:
            return x[1:] * x[:-1]
        return tf.concat([x[:1] * x[-1:], x[1:] ** 2], axis=0)

    jac = tf.SparseJacobian(f, mode=mode)
    up, down = np.linspace(0.5, 1.5, 6), -np.linspace(0.5, 1.5, 6)
    for x in (up, down, up, down, down, up):
        np.testing.assert_array_equal(jac(x).toarray(), tf.jacfwd(f)(tf.constant(x)).numpy())

def test_a_sparse_jacobian_shared_by_threads_decodes_every_branch_right():
    # f branches on its input's values (a guard): a thread whose input takes a branch
    # another thread traced first decoded it with the old pattern (entries missing, two
    # columns added together) while calls raced.

    def f(x):
        if float(tf.reduce_sum(x)) > 0:
            return x[1:] * x[:-1]
        return tf.concat([x[:1] * x[-1:], x[1:] ** 2], axis=0)

    jac = tf.SparseJacobian(f)
    rng = np.random.default_rng(0)
    inputs = [rng.standard_normal(6) + (2.0 if k % 2 else -2.0) for k in range(64)]
    wants = [tf.jacfwd(f)(tf.constant(x)).numpy() for x in inputs]
    wrong: list = []

    def work(k: int) -> None:
        for j in range(k, len(inputs), 8):
            if not np.array_equal(jac(inputs[j]).toarray(), wants[j]):
                wrong.append(j)

    errors = run_in_threads(work, 8, switch_interval=1e-6)
    assert not errors and not wrong, (errors, wrong)


def test_a_sparse_jacobian_keeps_a_bounded_number_of_plans():
    from tapeflow import sparse_jacobians

    jac = tf.SparseJacobian(lambda x: x[1:] * 2.0)
    with pytest.warns(UserWarning, match="SparseJacobian has found a pattern"):
        for n in range(2, sparse_jacobians.MAX_PLANS + 12):
            jac(np.ones(n))
    assert len(jac._plans) == sparse_jacobians.MAX_PLANS


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_jacobians_and_hessians_come_exactly_in_float32(dtype):
    # scipy.sparse holds no 2-byte floats: the half-precision values, exactly, in float32
    x = np.linspace(-1.0, 1.0, 5).astype(tf.as_dtype(dtype).as_numpy_dtype)
    f = lambda u: tf.sin(u) * 2.0 + u[::-1]  # noqa: E731
    J = tf.sparse_jacobian(f, x)
    dense = tf.jacfwd(f)(tf.constant(x)).numpy()
    assert J.dtype == np.float32 and dense.dtype == x.dtype
    np.testing.assert_array_equal(J.toarray(), dense.astype(np.float32))
    H = tf.sparse_hessian(lambda u: tf.reduce_sum(tf.sin(u) * u[0]), x)
    assert H.dtype == np.float32 and H.shape == (5, 5)
