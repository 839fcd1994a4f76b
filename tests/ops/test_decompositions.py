"""The factorizations, solvers and norms beyond the op table: the errors of non-square,
singular and mismatched arguments, TensorFlow's conventions (the symmetric Cholesky
gradient, eigh reading the lower triangle, complex results in the input dtype),
gradients at repeated eigenvalues and of norms at 0, and every complex case checked
against finite differences of a real loss, in reverse and in forward mode, which the
table's real-valued checks cannot see.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import RNG, assert_complex_gradient, cplx, numeric_gradient, numpy_grads


def dominant(*shape, complex_=False):
    a = cplx(*shape) if complex_ else RNG.standard_normal(shape)
    return a + 3 * np.eye(shape[-1])


# ------------------------------------------------------------------ inv, det, slogdet, solve
def test_square_and_rank_errors_name_op_and_argument():
    for op in (tf.linalg.inv, tf.linalg.det, tf.linalg.slogdet, tf.linalg.cholesky,
               tf.linalg.eigh):
        with pytest.raises(InvalidArgumentError, match=f"{op.__name__}: .* must be square"):
            op(tf.zeros([2, 3]))
        with pytest.raises(InvalidArgumentError, match=f"{op.__name__}: .*rank >= 2"):
            op(tf.zeros([3]))
        with pytest.raises(InvalidArgumentError, match="int32"):
            op(tf.constant([[1, 0], [0, 1]]))


def test_singular_matrices():
    s = tf.constant([[1., 2.], [2., 4.]])
    with pytest.raises(InvalidArgumentError, match="inv: `input` is not invertible"):
        tf.linalg.inv(s)
    with pytest.raises(InvalidArgumentError, match="solve: `matrix` is not invertible"):
        tf.linalg.solve(s, tf.ones([2, 1]))
    with pytest.raises(InvalidArgumentError, match="triangular_solve: `matrix` is singular"):
        tf.linalg.triangular_solve(tf.constant([[0., 0.], [1., 1.]]), tf.ones([2, 1]))
    with pytest.raises(InvalidArgumentError, match="cholesky.*positive definite"):
        tf.linalg.cholesky(tf.constant([[1., 2.], [2., 1.]]))
    assert float(tf.linalg.det(s)) == 0.0
    sign, logdet = tf.linalg.slogdet(s)
    assert float(sign) == 0.0 and float(logdet) == -np.inf
    # det's gradient is det * inv(A)^H: at a singular matrix it raises, as TensorFlow.
    with pytest.raises(InvalidArgumentError, match="inv"):
        numpy_grads(tf.linalg.det, s.numpy())


def test_solve_shape_and_dtype_errors():
    with pytest.raises(InvalidArgumentError, match="solve: `rhs` has 2 rows"):
        tf.linalg.solve(tf.constant(np.eye(3, dtype="f4")), tf.ones([2, 1]))
    with pytest.raises(InvalidArgumentError, match="batch axes"):
        tf.linalg.solve(tf.constant(np.ones((2, 3, 3), "f4")), tf.ones([4, 3, 1]))
    with pytest.raises(TypeError, match="float32.*float64|float64.*float32"):
        tf.linalg.solve(tf.constant(np.eye(2)), tf.ones([2, 1]))


def test_complex_inv_det_solve_slogdet_gradients():
    a = dominant(3, 3, complex_=True)
    b = cplx(3, 2)
    assert_complex_gradient(tf.linalg.inv, (3, 3), a)
    assert_complex_gradient(tf.linalg.det, (), a)
    assert_complex_gradient(lambda a, b: tf.linalg.solve(a, b), (3, 2), a, b)
    assert_complex_gradient(lambda a, b: tf.linalg.solve(a, b, adjoint=True), (3, 2), a, b)
    assert_complex_gradient(lambda a: tf.linalg.slogdet(a)[1], (), a)
    assert tf.linalg.slogdet(tf.constant(a))[1].dtype == tf.complex128  # as TensorFlow


def test_complex_triangular_solve_and_cholesky_gradients():
    m, b = dominant(3, 3, complex_=True), cplx(3, 2)
    assert_complex_gradient(lambda m, b: tf.linalg.triangular_solve(m, b, adjoint=True),
                            (3, 2), m, b)
    assert_complex_gradient(
        lambda m: tf.linalg.cholesky(tf.matmul(m, m, adjoint_b=True) + 3 * np.eye(3)),
        (3, 3), cplx(3, 3))


def test_float16_is_computed_and_returned_as_float16():
    a = tf.constant(np.array([[2., 1.], [1., 3.]], np.float16))
    for out in (tf.linalg.inv(a), tf.linalg.det(a), tf.linalg.cholesky(a), tf.linalg.eigh(a)[0]):
        assert out.dtype == tf.float16


# ------------------------------------------------------------------ cholesky, triangular_solve
def test_cholesky_gradient_is_tensorflows_symmetric_one():
    a = RNG.standard_normal((3, 3))
    a = a @ a.T + 3 * np.eye(3)
    w = RNG.standard_normal((3, 3))
    (g,) = numpy_grads(lambda a: tf.reduce_sum(tf.linalg.cholesky(a) * w), a)
    np.testing.assert_allclose(g, g.T, rtol=1e-12)
    # Along a symmetric direction it is the true derivative.
    d = RNG.standard_normal((3, 3))
    d = d + d.T
    eps = 1e-6
    fd = (np.sum(np.linalg.cholesky(a + eps * d) * w) -
          np.sum(np.linalg.cholesky(a - eps * d) * w)) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-6)


def test_triangular_solve_never_reads_the_other_triangle():
    m, b = dominant(3, 3), RNG.standard_normal((3, 2))
    for lower in (True, False):
        (g,) = numpy_grads(
            lambda m: tf.reduce_sum(tf.linalg.triangular_solve(m, b, lower=lower)), m)
        other = np.triu(g, 1) if lower else np.tril(g, -1)
        assert not other.any()


# NOTE(triangular-blocks): batches of systems of 32 or more (512 rows in all), and single
# ones of 128 or more, are solved by blocked substitution; sizes off the 16-block grid
# included.
@pytest.mark.parametrize("batch,n,k", [((16,), 32, 3), ((3, 4), 45, 2), ((10,), 64, 64),
                                       ((), 130, 1), ((6, 1), 100, 7)])
@pytest.mark.parametrize("lower,adjoint", [(True, False), (True, True), (False, False),
                                           (False, True)])
def test_blocked_triangular_solves_equal_substitution(batch, n, k, lower, adjoint, monkeypatch):
    from tapeflow.ops import decompositions
    calls = []
    real = decompositions._blocked_triangular_solve
    monkeypatch.setattr(decompositions, "_blocked_triangular_solve",
                        lambda *a: calls.append(1) or real(*a))
    # a well-conditioned triangle (random ones are exponentially ill-conditioned in n)
    tri = RNG.standard_normal(batch + (n, n)) / n + np.diag(RNG.uniform(1, 2, n))
    junk = RNG.standard_normal(tri.shape) * 50  # the other triangle is never read
    m = np.tril(tri) + np.triu(junk, 1) if lower else np.triu(tri) + np.tril(junk, -1)
    b = RNG.standard_normal(batch[1:] + (n, k))   # broadcast over the first batch axis
    t = np.tril(m) if lower else np.triu(m)
    op_t = np.conj(np.swapaxes(t, -1, -2)) if adjoint else t
    want = np.linalg.solve(op_t, np.broadcast_to(b, batch + (n, k)))
    got = tf.linalg.triangular_solve(m, b, lower=lower, adjoint=adjoint).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-11, atol=1e-11)
    assert calls  # the blocked path ran
    got32 = tf.linalg.triangular_solve(m.astype(np.float32), b.astype(np.float32),
                                       lower=lower, adjoint=adjoint).numpy()
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=2e-5, atol=2e-5 * np.abs(want).max())


def test_blocked_triangular_solves_complex_gradients_and_singular():
    a = cplx(16, 40, 40) / 40 + 2 * np.eye(40)
    b = cplx(16, 40, 2)
    for adjoint in (False, True):
        op_t = np.tril(a)
        op_t = np.conj(np.swapaxes(op_t, -1, -2)) if adjoint else op_t
        np.testing.assert_allclose(
            tf.linalg.triangular_solve(a, b, adjoint=adjoint).numpy(),
            np.linalg.solve(op_t, b), rtol=1e-11, atol=1e-11)
    # gradients through the blocked path, against central differences
    m, rhs = RNG.standard_normal((16, 33, 33)) / 33 + 2 * np.eye(33), RNG.standard_normal((16, 33, 2))
    w = RNG.standard_normal((16, 33, 2))
    def loss(m):
        return tf.reduce_sum(tf.linalg.triangular_solve(m, rhs) * w)
    (g,) = numpy_grads(loss, m)
    d = np.tril(RNG.standard_normal(m.shape))  # a direction in the triangle read
    eps = 1e-6
    fd = (loss(tf.constant(m + eps * d)).numpy() - loss(tf.constant(m - eps * d)).numpy()) / (2 * eps)
    np.testing.assert_allclose(np.sum(g * d), fd, rtol=1e-7)
    assert not np.triu(g, 1).any()
    singular = RNG.standard_normal((16, 40, 40)) / 40 + 2 * np.eye(40)
    singular[3, 17, 17] = 0.0
    with pytest.raises(InvalidArgumentError, match="triangular_solve: `matrix` is singular"):
        tf.linalg.triangular_solve(singular, b.real)


# ------------------------------------------------------------------ eigh
def test_eigh_reads_the_lower_triangle_and_reconstructs():
    a = RNG.standard_normal((2, 4, 4))
    e, v = tf.linalg.eigh(a)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    v, e = v.numpy(), e.numpy()
    np.testing.assert_allclose((v * e[..., None, :]) @ np.swapaxes(v, -1, -2), sym, atol=1e-12)
    (g,) = numpy_grads(lambda a: tf.reduce_sum(tf.linalg.eigh(a)[0] ** 2), a)
    assert not np.triu(g, 1).any()


def test_eigh_complex_hermitian():
    m = cplx(3, 3)
    h = m + m.conj().T
    e, v = tf.linalg.eigh(h)
    assert e.dtype == tf.complex128  # as TensorFlow: both results in the input dtype
    np.testing.assert_allclose(e.numpy().real, np.linalg.eigvalsh(h), atol=1e-12)
    w = RNG.standard_normal((3, 3))

    def loss(a):  # invariant to each eigenvector's phase
        e, v = tf.linalg.eigh(a)
        return tf.cast(tf.reduce_sum(e * e), tf.float64) + tf.reduce_sum(
            tf.cast(v * tf.math.conj(v), tf.float64) * w)

    (got,) = numpy_grads(loss, h)
    (want,) = numeric_gradient(loss, h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_eigh_repeated_eigenvalues_give_finite_gradients():
    a = np.diag([1., 1., 2.])
    (g,) = numpy_grads(lambda a: tf.reduce_sum(tf.square(tf.linalg.eigh(a)[1])), a)
    assert np.isfinite(g).all()


# ------------------------------------------------------------------ norm
@pytest.mark.parametrize("ord, axis", [
    ("euclidean", None), ("euclidean", 1), (2, 0), (1, None), (np.inf, -1), (3, 1), (0.5, 1),
    ("fro", (0, 1)), ("euclidean", [1, 0]), (1, (0, 1)), (1, (1, 0)), (np.inf, (0, 1)),
    (2, (0, 1)), (2, (1, 0)),
])
def test_norm_matches_numpy(ord, axis):
    x = RNG.standard_normal((3, 4))
    matrix = isinstance(axis, (list, tuple))
    np_ord = ("fro" if matrix else None) if ord == "euclidean" else ord
    for keepdims in (False, True):
        got = tf.norm(tf.constant(x), ord=ord, axis=axis, keepdims=keepdims)
        want = np.linalg.norm(x.ravel() if axis is None else x, ord=np_ord,
                              axis=None if axis is None else
                              (axis if isinstance(axis, int) else tuple(axis)),
                              keepdims=keepdims)
        if axis is None and keepdims:
            want = np.reshape(want, (1, 1))
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("ord, axis", [
    ("euclidean", None), (2, 1), (1, None), (np.inf, None), (3, 1), ("fro", (0, 1)),
    (1, (0, 1)), (np.inf, (0, 1)), (2, (0, 1)),
])
def test_norm_gradient_at_zero_is_zero_not_nan(ord, axis):
    # TensorFlow gives NaN for 'euclidean'/'fro'/2/p (sqrt's slope at 0 times 0): here 0.
    for dtype in (np.float64, np.complex128):
        x = np.zeros((2, 3), dtype)
        (g,) = numpy_grads(lambda x: tf.reduce_sum(tf.norm(x, ord=ord, axis=axis)), x)
        np.testing.assert_array_equal(g, np.zeros_like(g))


def test_norm_gradient_and_dtypes():
    x = RNG.standard_normal(5)
    (g,) = numpy_grads(tf.norm, x)
    np.testing.assert_allclose(g, x / np.linalg.norm(x), rtol=1e-12)
    z = cplx(4)
    assert tf.norm(tf.constant(z)).dtype == tf.complex128  # TensorFlow's euclidean branch
    assert tf.norm(tf.constant(z), ord=1).dtype == tf.float64  # through abs
    assert_complex_gradient(tf.norm, (), z)
    assert tf.norm(tf.constant(x, tf.float32)).dtype == tf.float32


@pytest.mark.parametrize("kwargs", [
    dict(ord="fro"), dict(ord=0), dict(ord=-1), dict(ord=3, axis=(0, 1)), dict(axis=(0, 0)),
    dict(axis=5), dict(axis=1.5),
])
def test_norm_rejects_bad_ord_and_axis(kwargs):
    with pytest.raises(InvalidArgumentError, match="norm"):
        tf.norm(tf.ones([2, 3]), **kwargs)


# ------------------------------------------------------------------ complex forward mode
def _hermitian(n):
    h = cplx(n, n)
    return h + h.conj().T


def _eigh_smooth(a):
    e, v = tf.linalg.eigh(a)
    return tf.matmul(v * tf.sin(e)[None, :], v, adjoint_b=True)


COMPLEX_CASES = {
    "inv": (tf.linalg.inv, lambda: [dominant(3, 3, complex_=True)]),
    "det": (tf.linalg.det, lambda: [dominant(3, 3, complex_=True)]),
    "slogdet": (lambda a: tf.linalg.slogdet(a)[1], lambda: [dominant(3, 3, complex_=True)]),
    "solve": (tf.linalg.solve, lambda: [dominant(3, 3, complex_=True), cplx(3, 2)]),
    "triangular_solve": (lambda a, b: tf.linalg.triangular_solve(a, b, lower=False, adjoint=True),
                         lambda: [dominant(3, 3, complex_=True), cplx(3, 2)]),
    "cholesky": (lambda m: tf.linalg.cholesky(tf.matmul(m, m, adjoint_b=True) + 3 * np.eye(3)),
                 lambda: [cplx(3, 3)]),
    "eigh": (_eigh_smooth, lambda: [_hermitian(3)]),
    "einsum": (lambda a, b: tf.einsum("iij,jk->ik", a, b), lambda: [cplx(3, 3, 2), cplx(2, 2)]),
    "norm": (lambda x: tf.norm(x, axis=1), lambda: [cplx(3, 3)]),
    "norm_1": (lambda x: tf.norm(x, ord=1, axis=1), lambda: [cplx(3, 3)]),
    "norm_matrix_2": (lambda x: tf.norm(x, ord=2, axis=[0, 1]), lambda: [cplx(3, 4)]),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_CASES))
def test_complex_forward_mode_matches_differences_and_reverse_mode(name):
    f, make = COMPLEX_CASES[name]
    xs = make()
    vs = [_hermitian(3) if name == "eigh" else cplx(*x.shape) for x in xs]
    ts = [tf.constant(x) for x in xs]
    with tf.autodiff.ForwardAccumulator(ts, [tf.constant(v) for v in vs]) as acc:
        y = f(*ts)
    jv = np.asarray(acc.jvp(y))
    eps = 1e-6
    fd = (np.asarray(f(*[tf.constant(x + eps * v) for x, v in zip(xs, vs)])) -
          np.asarray(f(*[tf.constant(x - eps * v) for x, v in zip(xs, vs)]))) / (2 * eps)
    np.testing.assert_allclose(jv, fd, rtol=1e-6, atol=1e-7)
    # <u, J v> (real part) equals <J^H u, v> from the reverse rules.
    u = cplx(*jv.shape) if np.iscomplexobj(jv) else RNG.standard_normal(jv.shape)
    with tf.GradientTape() as tape:
        tape.watch(ts)
        y = f(*ts)
    grads = tape.gradient(y, ts, output_gradients=tf.constant(u))
    reverse = sum(np.real(np.vdot(np.asarray(g), v)) for g, v in zip(grads, vs))
    np.testing.assert_allclose(np.real(np.vdot(u, jv)), reverse, rtol=1e-10, atol=1e-12)
