"""Linear-algebra ops beyond the table: errors, TensorFlow's conventions (complex
gradients, symmetric Cholesky gradient, lower-triangle eigh), special values, norms at 0.

Every rule of every op is checked by the table (tests/op_table_linalg.py); here the
complex cases, which the table's real-valued checks cannot see, are checked against
finite differences of a real loss: TensorFlow's gradient is dL/dRe(z) + i dL/dIm(z).
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError, UnimplementedError

RNG = np.random.default_rng(0)


def cplx(*shape):
    return RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)


def gradient(f, *xs):
    ts = [tf.constant(x) for x in xs]
    with tf.GradientTape() as tape:
        tape.watch(ts)
        y = f(*ts)
    return [g.numpy() for g in tape.gradient(y, ts)]


def numeric_gradient(f, *xs, eps=1e-6):
    """dL/dRe + i dL/dIm per input (just dL/dx for real inputs) by central differences."""
    def value(args):
        return float(np.real(f(*[tf.constant(a) for a in args]).numpy()))

    out = []
    for k, x in enumerate(xs):
        g = np.zeros_like(x)
        directions = (1, 1j) if np.iscomplexobj(x) else (1,)
        for idx in np.ndindex(x.shape):
            for d in directions:
                plus, minus = [list(xs) for _ in range(2)]
                step = np.zeros_like(x)
                step[idx] = eps * d
                plus[k], minus[k] = x + step, x - step
                g[idx] += d * (value(plus) - value(minus)) / (2 * eps)
        out.append(g)
    return out


def real_loss(f, weights):
    """L = Re(sum(f(...) * conj(W))), a real scalar of a complex result."""
    w = tf.constant(np.conj(weights))
    return lambda *xs: tf.cast(tf.reduce_sum(f(*xs) * w), tf.float64)


def assert_complex_gradient(f, out_shape, *xs):
    loss = real_loss(f, cplx(*out_shape))
    for got, want in zip(gradient(loss, *xs), numeric_gradient(loss, *xs), strict=True):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def dominant(*shape, complex_=False):
    a = cplx(*shape) if complex_ else RNG.standard_normal(shape)
    return a + 3 * np.eye(shape[-1])


# ---------------------------------------------------------------- namespaces
def test_names_in_tensorflow_namespaces():
    for name in ("einsum", "tensordot", "norm"):
        assert getattr(tf, name) is getattr(tf.linalg, name)
    for name in ("inv", "det", "slogdet", "solve", "cholesky", "triangular_solve", "norm",
                 "trace", "diag_part", "matrix_transpose", "eigh", "adjoint", "matmul",
                 "einsum", "tensordot"):
        assert callable(getattr(tf.linalg, name)), name


# ---------------------------------------------------------------- einsum
def test_einsum_forms_match_numpy():
    a, b, c = RNG.standard_normal((2, 3, 3)), RNG.standard_normal((3, 4)), RNG.standard_normal(4)
    cases = [("bij,jk->bik", a, b), ("bii->b", a), ("bii->bi", a), ("...ij,jk->...ik", a, b),
             ("ij,j", b, c), ("i,i", c, c), ("i,j->ij", c, c), ("bij->", a), ("bij->jib", a),
             ("bij , jk", a, b), ("Bij,jk->kB", a, b)]
    for eq, *ops in cases:
        got = tf.einsum(eq, *[tf.constant(o) for o in ops])
        np.testing.assert_allclose(got.numpy(), np.einsum(eq.replace(" ", ""), *ops),
                                   rtol=1e-12, atol=1e-12, err_msg=eq)


def test_einsum_broadcasts_ellipsis_axes_and_sums_the_gradient_back():
    a, b = RNG.standard_normal((2, 1, 3, 4)), RNG.standard_normal((5, 4, 2))
    ga, gb = gradient(lambda x, y: tf.reduce_sum(tf.sin(tf.einsum("...ij,...jk->...ik", x, y))),
                      a, b)
    na, nb = numeric_gradient(lambda x, y: tf.reduce_sum(tf.sin(
        tf.einsum("...ij,...jk->...ik", x, y))), a, b)
    assert ga.shape == a.shape and gb.shape == b.shape
    np.testing.assert_allclose(ga, na, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(gb, nb, rtol=1e-6, atol=1e-7)


def test_einsum_repeated_and_summed_labels_gradient():
    # 'i' twice in x (a diagonal), 'k' only in x (summed out), 'j' shared, three operands.
    x, y, z = RNG.standard_normal((3, 3, 2, 4)), RNG.standard_normal((4, 2)), RNG.standard_normal(2)
    f = lambda x, y, z: tf.reduce_sum(tf.cos(tf.einsum("iikj,jl,l->i", x, y, z)))  # noqa: E731
    for got, want in zip(gradient(f, x, y, z), numeric_gradient(f, x, y, z)):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_einsum_complex_gradient_uses_conjugates():
    assert_complex_gradient(lambda a, b: tf.einsum("ij,jk->ik", a, b), (2, 2), cplx(2, 3),
                            cplx(3, 2))
    assert_complex_gradient(lambda a: tf.einsum("ii->i", a), (3,), cplx(3, 3))


@pytest.mark.parametrize("eq, shapes, message", [
    ("ij,jk->ik", [(2, 3), (4, 5)], "label 'j'"),
    ("ij,jk", [(2, 3)], "names 2 operand"),
    ("ij->ik", [(2, 3)], "'k' appears in no input"),
    ("ij->ii", [(2, 2)], "repeated"),
    ("ij", [(2, 3, 4)], "rank 3"),
    ("...ij->ij", [(5, 2, 3)], "no ellipsis"),
    ("i1->i", [(2, 2)], "letters"),
    ("...i,...i->...i", [(2, 3), (4, 3)], "broadcast"),
    ("ij->i->j", [(2, 2)], "more than one '->'"),
])
def test_einsum_errors_name_the_problem(eq, shapes, message):
    with pytest.raises(InvalidArgumentError, match="einsum") as info:
        tf.einsum(eq, *[tf.zeros(s) for s in shapes])
    assert message in str(info.value)


def test_einsum_rejects_mixed_dtypes_and_bad_kwargs():
    with pytest.raises(TypeError, match="einsum"):
        tf.einsum("i,i", tf.zeros([2]), tf.zeros([2], tf.float64))
    with pytest.raises(TypeError, match="einsum"):
        tf.einsum("i,i", tf.zeros([2]), tf.zeros([2]), bogus=1)
    out = tf.einsum("i,i", tf.constant([1., 2.]), [3., 4.], optimize="greedy", name="dot")
    assert out.dtype == tf.float32 and float(out) == 11.0


# ---------------------------------------------------------------- tensordot
def test_tensordot_axes_forms():
    a, b = RNG.standard_normal((2, 3)), RNG.standard_normal((3, 4))
    for axes, np_axes in ((0, 0), (1, 1), ([1, 0], (1, 0)), ([[1], [0]], ([1], [0])),
                          ([[-1], [0]], ([1], [0]))):
        got = tf.tensordot(tf.constant(a), tf.constant(b), axes)
        np.testing.assert_allclose(got.numpy(), np.tensordot(a, b, np_axes), rtol=1e-12)


def test_tensordot_errors():
    a, b = tf.zeros([2, 3]), tf.zeros([4, 2])
    with pytest.raises(InvalidArgumentError, match="tensordot.*size 3.*size 4"):
        tf.tensordot(a, b, 1)
    with pytest.raises(InvalidArgumentError, match="tensordot"):
        tf.tensordot(a, b, 3)
    with pytest.raises(InvalidArgumentError, match="counts must match"):
        tf.tensordot(a, b, [[0, 1], [1]])


# ---------------------------------------------------------------- matrix views
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


# ---------------------------------------------------------------- inv, det, slogdet, solve
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
        gradient(tf.linalg.det, s.numpy())


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


# ---------------------------------------------------------------- cholesky, triangular_solve
def test_cholesky_gradient_is_tensorflows_symmetric_one():
    a = RNG.standard_normal((3, 3))
    a = a @ a.T + 3 * np.eye(3)
    w = RNG.standard_normal((3, 3))
    (g,) = gradient(lambda a: tf.reduce_sum(tf.linalg.cholesky(a) * w), a)
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
        (g,) = gradient(lambda m: tf.reduce_sum(tf.linalg.triangular_solve(m, b, lower=lower)), m)
        other = np.triu(g, 1) if lower else np.tril(g, -1)
        assert not other.any()


# ---------------------------------------------------------------- eigh
def test_eigh_reads_the_lower_triangle_and_reconstructs():
    a = RNG.standard_normal((2, 4, 4))
    e, v = tf.linalg.eigh(a)
    sym = np.tril(a) + np.swapaxes(np.tril(a, -1), -1, -2)
    v, e = v.numpy(), e.numpy()
    np.testing.assert_allclose((v * e[..., None, :]) @ np.swapaxes(v, -1, -2), sym, atol=1e-12)
    (g,) = gradient(lambda a: tf.reduce_sum(tf.linalg.eigh(a)[0] ** 2), a)
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

    (got,) = gradient(loss, h)
    (want,) = numeric_gradient(loss, h)
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)


def test_eigh_repeated_eigenvalues_give_finite_gradients():
    a = np.diag([1., 1., 2.])
    (g,) = gradient(lambda a: tf.reduce_sum(tf.square(tf.linalg.eigh(a)[1])), a)
    assert np.isfinite(g).all()


# ---------------------------------------------------------------- norm
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
        (g,) = gradient(lambda x: tf.reduce_sum(tf.norm(x, ord=ord, axis=axis)), x)
        np.testing.assert_array_equal(g, np.zeros_like(g))


def test_norm_gradient_and_dtypes():
    x = RNG.standard_normal(5)
    (g,) = gradient(tf.norm, x)
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


# ---------------------------------------------------------------- complex forward mode
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
