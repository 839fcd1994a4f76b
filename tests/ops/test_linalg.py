"""The matrix views (diag_part, trace, matrix_transpose, adjoint) beyond the op table,
and the names under tf.linalg. matmul_rows (what vmap makes of a matrix times a
column): the BLAS form its impl picks, its dtypes as matmul's, its complex gradients,
and the graph vmap builds with it. matvec and cross as TensorFlow, and their bad input.
(einsum and tensordot: test_einsum.py.)
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import blas
from tapeflow.core import bind
from tapeflow.errors import InvalidArgumentError, UnimplementedError
from tapeflow.graph.ir import Node
from tapeflow.ops.linalg import matmul_rows_p

from ops_helpers import RNG, assert_complex_gradient, cplx


# ------------------------------------------------------------------ namespaces
def test_names_in_tensorflow_namespaces():
    for name in ("einsum", "tensordot", "norm"):
        assert getattr(tf, name) is getattr(tf.linalg, name)
    for name in ("inv", "det", "slogdet", "solve", "cholesky", "triangular_solve", "norm",
                 "trace", "diag_part", "matrix_transpose", "eigh", "adjoint", "matmul",
                 "einsum", "tensordot"):
        assert callable(getattr(tf.linalg, name)), name


# ------------------------------------------------------------------ matrix views
def test_diag_part_trace_and_transposes():
    x = tf.constant(np.arange(24.).reshape(2, 3, 4))
    np.testing.assert_array_equal(tf.linalg.diag_part(x, k=2).numpy(),
                                  np.diagonal(x.numpy(), 2, -2, -1))
    np.testing.assert_array_equal(tf.linalg.trace(x).numpy(), [15., 51.])
    z = tf.constant(cplx(2, 3))
    np.testing.assert_array_equal(tf.linalg.adjoint(z).numpy(), z.numpy().conj().T)
    np.testing.assert_array_equal(tf.linalg.matrix_transpose(z, conjugate=True).numpy(),
                                  z.numpy().conj().T)
    np.testing.assert_array_equal(tf.linalg.matrix_transpose(z).numpy(), z.numpy().T)


def test_matrix_view_errors():
    with pytest.raises(InvalidArgumentError, match="trace: `x` must have rank >= 2"):
        tf.linalg.trace(tf.zeros([3]))
    with pytest.raises(InvalidArgumentError, match="diag_part: diagonal k=3"):
        tf.linalg.diag_part(tf.zeros([2, 3]), k=3)
    with pytest.raises(UnimplementedError, match="band"):
        tf.linalg.diag_part(tf.zeros([3, 3]), k=(-1, 1))


# ------------------------------------------------------------------ matmul_rows
@pytest.mark.parametrize("transpose_b", [True, False])
@pytest.mark.parametrize("examples, by_columns", [(1, True), (7, True), (8, False),
                                                  (100, False)])
def test_matmul_rows_runs_few_examples_by_columns_and_many_as_rows(monkeypatch, transpose_b,
                                                                   examples, by_columns):
    # The matrix has 64 rows: by columns while 8 * examples < 64 (OpenBLAS's faster form
    # there); the operand handed to BLAS in that form's layout is the caller's array itself.
    calls = []
    real = blas.matmul

    def spy(x, y):
        calls.append((x.shape, y.shape, x.flags.c_contiguous, y.flags.c_contiguous))
        return real(x, y)

    monkeypatch.setattr(blas, "matmul", spy)
    a = RNG.standard_normal((64, 5))
    b = a if transpose_b else np.ascontiguousarray(a.T)
    rows = RNG.standard_normal((examples, 5))
    out = matmul_rows_p.impl(rows, b, transpose_b=transpose_b)
    np.testing.assert_allclose(out, rows @ a.T, rtol=1e-13, atol=1e-13)
    assert out.shape == (examples, 64)
    if by_columns:
        assert calls == [((64, 5), (5, examples), transpose_b, examples == 1)]
    else:
        assert calls == [((examples, 5), (5, 64), True, not transpose_b)]


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.complex128,
                                   np.int32, np.int64])
@pytest.mark.parametrize("examples", [2, 6])
def test_matmul_rows_keeps_matmuls_dtype(dtype, examples):
    # a of 30 rows: 2 examples run by columns, 6 as rows
    rng = np.random.default_rng(1)
    rows = (rng.standard_normal((examples, 4)) * 4).astype(dtype)
    a = (rng.standard_normal((30, 4)) * 4).astype(dtype)
    want = tf.matmul(rows, a, transpose_b=True)
    for b, transpose_b in ((a, True), (np.ascontiguousarray(a.T), False)):
        got = bind(matmul_rows_p, tf.constant(rows), tf.constant(b), transpose_b=transpose_b)
        assert got.dtype == want.dtype == tf.as_dtype(dtype)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
    # ... and so does vmap of the matrix times a column that binds it
    cols = tf.vmap(lambda c: tf.matmul(a, c))(tf.constant(rows[:, :, None]))
    assert cols.dtype == want.dtype and cols.shape == (examples, 30, 1)
    np.testing.assert_allclose(np.asarray(cols)[..., 0], np.asarray(want), rtol=1e-6)


@pytest.mark.parametrize("transpose_b", [True, False])
@pytest.mark.parametrize("examples", [2, 6])
def test_matmul_rows_complex_gradient_uses_conjugates(examples, transpose_b):
    b = cplx(20, 3) if transpose_b else cplx(3, 20)
    assert_complex_gradient(lambda r, b: bind(matmul_rows_p, r, b, transpose_b=transpose_b),
                            (examples, 20), cplx(examples, 3), b)


def _nodes(fn, *xs):
    graph = tf.function(fn).get_concrete_function(*[tf.constant(x) for x in xs]).graph
    return [n for n in graph.nodes if isinstance(n, Node)]


@pytest.mark.parametrize("examples, transpose_b", [(3, True), (4, False)])
def test_vmap_of_a_matrix_times_a_column_is_one_matmul_rows(examples, transpose_b):
    # No transposes into b's columns and back: matmul_rows takes the examples as they are
    # (a batch on another axis is moved first), and a further vmap folds into its rows. It
    # gets the fixed matrix (30 rows) as it is for few examples (8 * 3 < 30), else its
    # transpose, folded into a constant.
    a = tf.constant(RNG.standard_normal((30, 4)))
    cols = RNG.standard_normal((examples, 4, 1))
    column = lambda c: tf.matmul(a, c)  # noqa: E731
    for fn, x, moves in ((tf.vmap(column), cols, 0),
                         (tf.vmap(column, in_axes=2), np.moveaxis(cols, 0, 2), 1),
                         (tf.vmap(tf.vmap(column)), np.stack([cols, 2 * cols]), 0)):
        nodes = _nodes(fn, x)
        prims = [n.prim.name for n in nodes]
        assert prims.count("matmul_rows") == 1 and "matmul" not in prims, prims
        assert prims.count("transpose") == moves, prims
        (node,) = [n for n in nodes if n.prim.name == "matmul_rows"]
        nested = x.ndim == 4  # twice the examples: 8 * 8 >= 30 for the 4 as well as for 3 * 2
        assert node.params["transpose_b"] is (transpose_b and not nested)
        got = fn(tf.constant(x))
        want = np.stack([np.asarray(a) @ c for c in cols])
        if nested:
            want = np.stack([want, 2 * want])
        assert got.shape == want.shape
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-13, atol=1e-13)


# ------------------------------------------------------------------ matvec, cross
def test_matvec_as_tensorflow():
    a = np.arange(6.).reshape(2, 3)
    # TF 2.21: [8, 26]; transpose_a with [1, 2]: [6, 9, 12]; batch shapes broadcast.
    np.testing.assert_array_equal(tf.linalg.matvec(a, [1., 2., 3.]), [8., 26.])
    np.testing.assert_array_equal(tf.linalg.matvec(a, [1., 2.], transpose_a=True), [6., 9., 12.])
    assert tf.linalg.matvec(tf.ones([4, 2, 3]), tf.ones([3])).shape.as_list() == [4, 2]
    assert tf.linalg.matvec(tf.ones([2, 3]), tf.ones([5, 3])).shape.as_list() == [5, 2]
    z = cplx(2, 3)
    v = cplx(2)
    np.testing.assert_allclose(tf.linalg.matvec(z, v, adjoint_a=True), z.conj().T @ v)
    tf.testing.check_grads(lambda a, b: tf.linalg.matvec(a, b), [RNG.standard_normal((3, 2, 4)),
                                                                 RNG.standard_normal((4,))],
                           order=2)


def test_cross_as_tensorflow():
    np.testing.assert_array_equal(tf.linalg.cross([1., 0., 0.], [0., 1., 0.]), [0., 0., 1.])
    out = tf.linalg.cross([1, 0, 0], [0, 1, 0])
    assert out.dtype == tf.int32 and out.numpy().tolist() == [0, 0, 1]
    a, b = RNG.standard_normal((4, 2, 3)), RNG.standard_normal((4, 2, 3))
    np.testing.assert_allclose(tf.linalg.cross(a, b), np.cross(a, b))
    tf.testing.check_grads(tf.linalg.cross, [a, b], order=2)


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.linalg.matvec(tf.ones([2, 3]), tf.ones([3]), transpose_a=True, adjoint_a=True),
     ValueError, "only one of `transpose_a` and `adjoint_a`"),
    (lambda: tf.linalg.matvec(tf.ones([2, 3]), tf.ones([2])), InvalidArgumentError,
     r"`a` of shape \(2, 3\).*length 3.*`b` has shape \(2,\)"),
    (lambda: tf.linalg.matvec(tf.ones([3]), tf.ones([3])), InvalidArgumentError, "`a`.*rank >= 2"),
    (lambda: tf.linalg.matvec(tf.ones([3, 3]), tf.constant(1.)), InvalidArgumentError,
     "`b`.*rank >= 1"),
    (lambda: tf.linalg.matvec(tf.ones([2, 3], tf.float64), tf.ones([3])), InvalidArgumentError,
     "float64.*float32"),
    (lambda: tf.linalg.cross(tf.ones([4, 3]), tf.ones([3])), InvalidArgumentError,
     "same shape.*\\(4, 3\\).*\\(3,\\)"),
    (lambda: tf.linalg.cross(tf.ones([4]), tf.ones([4])), InvalidArgumentError, "3-element"),
    (lambda: tf.linalg.cross(tf.ones([3]), tf.constant([0, 1, 0])), InvalidArgumentError,
     "float32.*int32"),
])
def test_matvec_and_cross_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()
