"""The reductions and scans beyond the op table: products with zeros (exact gradients
and Hessian, no division), integer scans, log-sum-exp at infinities and without overflow,
moments, arg extrema and boolean reductions as TensorFlow computes them, and the
arguments they refuse.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import value_and_grads


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("op", [tf.reduce_prod, tf.reduce_logsumexp, tf.math.reduce_variance,
                                tf.math.reduce_std])
def test_reduction_axis_out_of_range(op):
    with pytest.raises(InvalidArgumentError, match="out of range") as err:
        op(tf.constant([[1., 2.]]), axis=2)
    assert str(err.value).startswith(op.__name__)


@pytest.mark.parametrize("op", [tf.reduce_all, tf.reduce_any])
def test_boolean_reductions_need_bool(op):
    with pytest.raises(InvalidArgumentError, match="float32"):
        op(tf.constant([1., 0.]))
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(tf.constant([True]), axis=1)


def test_logsumexp_needs_real_floats():
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.reduce_logsumexp(tf.constant([1, 2]))


@pytest.mark.parametrize("op", [tf.math.reduce_variance, tf.math.reduce_std])
def test_moments_of_integers_are_a_type_error_as_tensorflow(op):
    with pytest.raises(TypeError, match="int32"):
        op(tf.constant([1, 2]))


@pytest.mark.parametrize("op", [tf.argmax, tf.argmin])
def test_arg_extrema_bad_input(op):
    x = tf.constant([[1., 2.], [3., 0.]])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(x, axis=2)
    with pytest.raises(TypeError, match="single int"):
        op(x, axis=[1])
    with pytest.raises(InvalidArgumentError, match="scalar"):
        op(tf.constant(1.))
    with pytest.raises(InvalidArgumentError, match="empty"):
        op(tf.zeros([0, 2]))
    with pytest.raises(InvalidArgumentError, match="output_type"):
        op(x, output_type=tf.float32)
    with pytest.raises(InvalidArgumentError, match="complex128"):
        op(tf.constant([1j]))


@pytest.mark.parametrize("op", [tf.cumsum, tf.math.cumprod])
def test_scans_bad_input(op):
    x = tf.constant([1., 2.])
    with pytest.raises(InvalidArgumentError, match="out of range"):
        op(x, axis=1)
    with pytest.raises(InvalidArgumentError, match="single int"):
        op(x, axis=[0])
    with pytest.raises(TypeError, match="must be an int"):
        op(x, axis=0.0)
    with pytest.raises(InvalidArgumentError, match="scalar"):
        op(tf.constant(1.))
    with pytest.raises(InvalidArgumentError, match="bool"):
        op(tf.constant([True]))


# ------------------------------------------------------------------ values and gradients
def test_reduce_prod_gradient_with_zeros_never_divides():
    _, (g,) = value_and_grads(tf.reduce_prod, np.array([2., 0., 3.]))
    np.testing.assert_array_equal(g, [0., 6., 0.])
    _, (g,) = value_and_grads(tf.reduce_prod, np.array([2., 0., 0.]))
    np.testing.assert_array_equal(g, [0., 0., 0.])
    x = tf.constant([2., 0., 3., 5.], tf.float64)   # exact Hessian: d2/dxi dxj = prod of the others
    with tf.GradientTape() as outer:
        outer.watch(x)
        with tf.GradientTape() as inner:
            inner.watch(x)
            y = tf.reduce_prod(x)
        g = inner.gradient(y, x)
    h = outer.jacobian(g, x)
    xs = np.asarray(x)
    want = np.array([[0. if i == j else np.prod(np.delete(xs, [i, j])) for j in range(4)]
                     for i in range(4)])
    np.testing.assert_array_equal(h, want)


def test_reduce_prod_integers_empty_and_keepdims():
    y = tf.reduce_prod(tf.constant([[2, 3], [4, 5]]), axis=0)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(y, [8, 15])
    assert float(tf.reduce_prod(tf.zeros([0]))) == 1.
    assert tf.reduce_prod(tf.ones([2, 3, 4]), axis=[0, 2], keepdims=True).shape == (1, 3, 1)


def test_cumprod_gradient_with_zeros_is_exact():
    """TensorFlow's cumprod gradient divides by x and gives [1, 0, 0] here."""
    _, (g,) = value_and_grads(lambda x: tf.reduce_sum(tf.math.cumprod(x)), np.array([2., 0., 3.]))
    np.testing.assert_array_equal(g, [1., 8., 0.])


@pytest.mark.parametrize("exclusive", [False, True])
@pytest.mark.parametrize("reverse", [False, True])
def test_scans_match_numpy_and_keep_integer_dtypes(exclusive, reverse):
    x = np.arange(1, 13, dtype=np.int32).reshape(3, 4)
    for axis in (0, 1, -1):
        flip = (lambda a: np.flip(a, axis)) if reverse else (lambda a: a)
        s = np.cumsum(flip(x), axis=axis)
        p = np.cumprod(flip(x), axis=axis)
        if exclusive:
            s = s - flip(x)
            p = p // flip(x)
        got_s = tf.cumsum(x, axis=axis, exclusive=exclusive, reverse=reverse)
        got_p = tf.math.cumprod(x, axis=axis, exclusive=exclusive, reverse=reverse)
        assert got_s.dtype == tf.int32 and got_p.dtype == tf.int32
        np.testing.assert_array_equal(got_s, flip(s))
        np.testing.assert_array_equal(got_p, flip(p))


def test_reduce_logsumexp_special_values_as_tensorflow():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        assert float(tf.reduce_logsumexp(tf.constant([-np.inf, -np.inf]))) == -np.inf
        assert float(tf.reduce_logsumexp(tf.constant([np.inf, 1.]))) == np.inf
        assert float(tf.reduce_logsumexp(tf.zeros([0]))) == -np.inf
    got = tf.reduce_logsumexp(tf.constant([[1., 2.], [3., 4.]]), axis=1, keepdims=True)
    assert got.shape == (2, 1)
    np.testing.assert_allclose(got, [[2.3132617], [4.3132615]], rtol=1e-6)


def test_reduce_logsumexp_gradient_is_softmax_without_overflow():
    x = np.array([1., 2., 1000.])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        y, (g,) = value_and_grads(tf.reduce_logsumexp, x)
    np.testing.assert_allclose(y, 1000.)
    np.testing.assert_allclose(g, [0., 0., 1.], atol=1e-300)
    x = np.array([[0.5, -1., 2.], [3., 3., 3.]])
    _, (g,) = value_and_grads(lambda v: tf.reduce_logsumexp(v, axis=1), x)
    e = np.exp(x - x.max(1, keepdims=True))
    np.testing.assert_allclose(g, e / e.sum(1, keepdims=True), rtol=1e-14)


def test_variance_and_std():
    x = np.array([[1., 2.], [3., 6.]])
    np.testing.assert_allclose(tf.math.reduce_variance(x), x.var())
    np.testing.assert_allclose(tf.math.reduce_std(x, axis=1, keepdims=True),
                               x.std(1, keepdims=True))
    z = tf.constant([1 + 1j, 2 - 1j])
    v = tf.math.reduce_variance(z)
    assert v.dtype == tf.float64
    np.testing.assert_allclose(v, 1.25)
    with warnings.catch_warnings():   # sqrt at 0: nan, as TensorFlow
        warnings.simplefilter("ignore", RuntimeWarning)
        _, (g,) = value_and_grads(tf.math.reduce_std, np.array([1., 1.]))
    assert np.isnan(g).all()


def test_arg_extrema_as_tensorflow():
    x = tf.constant([[1., 3.], [4., 2.]])
    got = tf.argmax(x)                       # axis None is axis 0
    assert got.dtype == tf.int64
    np.testing.assert_array_equal(got, [1, 0])
    assert tf.argmin(x, axis=-1, output_type=tf.int32).dtype == tf.int32
    np.testing.assert_array_equal(tf.argmax(tf.constant([2., 5., 5.])), 1)   # first of ties
    np.testing.assert_array_equal(tf.argmax(tf.constant([True, False, True])), 0)
    np.testing.assert_array_equal(tf.argmax(tf.constant([1., np.nan, 3.])), 1)  # nan is the max


def test_boolean_reductions():
    x = tf.constant([[True, False], [True, True]])
    np.testing.assert_array_equal(tf.reduce_all(x, axis=0), [True, False])
    np.testing.assert_array_equal(tf.reduce_any(x, axis=1, keepdims=True), [[True], [True]])
    empty = tf.zeros([0], tf.bool)
    assert bool(tf.reduce_all(empty)) and not bool(tf.reduce_any(empty))


def test_reduce_std_at_zero_variance_is_nan_in_both_modes():
    # TensorFlow's convention (sqrt has no derivative at 0); forward and reverse agree.
    x = tf.constant([2.0, 2.0, 2.0], tf.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        fwd, rev = tf.jacfwd(tf.math.reduce_std)(x), tf.jacrev(tf.math.reduce_std)(x)
    assert np.isnan(fwd.numpy()).all() and np.isnan(rev.numpy()).all()
    y = tf.constant([1.0, 2.0, 4.0], tf.float64)
    np.testing.assert_allclose(tf.jacfwd(tf.math.reduce_std)(y).numpy(),
                               tf.jacrev(tf.math.reduce_std)(y).numpy(), rtol=1e-14)
    assert float(tf.math.reduce_std(y)) == np.std(y.numpy())


@pytest.mark.parametrize("shape,axis", [((128, 24, 24, 6), (0, 1, 2)), ((7, 5, 3), (0,)),
                                        ((1000, 7), (0,)), ((5, 1), (0,)), ((0, 4), (0,)),
                                        ((2, 3, 4), (0, 1)), ((130, 70), (0,)),
                                        ((64, 64, 64), (1,)), ((40, 64, 64), (2,)),
                                        ((6, 4, 5, 3), (1, 2)), ((3, 5000), (1,)),
                                        ((100_000, 3), (1,)), ((4, 0, 3), (1,)),
                                        ((640, 1, 16), (1,)), ((160, 28, 28, 2), (0, 1, 2)),
                                        ((64, 24, 24, 3), (0, 1, 2)), ((8, 1000, 7), (0, 1)),
                                        ((9, 7, 5, 3, 7), (0, 1, 2, 3))])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sums_over_a_range_of_axes(shape, axis, dtype):
    """reduce_sum over a contiguous range of axes runs as ones-vector products
    (ops/structural.py): same shape and dtype as np.sum, keepdims too, within sequential
    summation's error of the exact sum, and closer than NumPy's on one long column."""
    from tapeflow.ops.structural import _sum_impl

    x = np.random.default_rng(0).standard_normal(shape).astype(dtype)
    exact = np.sum(x.astype(np.longdouble), axis=axis)
    for keepdims in (False, True):
        got, numpy = _sum_impl(x, axis, keepdims), np.sum(x, axis=axis, keepdims=keepdims)
        assert got.shape == numpy.shape and got.dtype == numpy.dtype
    got = _sum_impl(x, axis, False)
    terms = x.size // max(1, got.size)
    bound = terms * np.finfo(dtype).eps * np.abs(x).max(initial=0)  # sequential summation's
    np.testing.assert_allclose(got.astype(np.longdouble), exact, rtol=0, atol=bound)
    if dtype == np.float32 and terms > 10_000:  # one long column sum: closer than NumPy's
        assert np.abs(got - exact).max() < np.abs(np.sum(x, axis=axis) - exact).max()


def test_sums_of_views_and_special_values_match_numpy():
    """Transposed (non-contiguous) inputs take NumPy's path; infinities and NaN propagate
    through the ones-vector product as through np.sum."""
    from tapeflow.ops.structural import _sum_impl

    x = np.random.default_rng(1).standard_normal((30, 20, 10)).astype(np.float32)
    np.testing.assert_allclose(_sum_impl(x.transpose(2, 0, 1), (1,), False),
                               np.sum(x.transpose(2, 0, 1), axis=1), rtol=1e-5)
    x[0, 0, 0], x[1, 2, 3], x[1, 3, 3], x[2, 0, 4] = np.inf, np.inf, -np.inf, np.nan
    for axis in ((1,), (2,), (0, 1)):
        with np.errstate(invalid="ignore"):  # inf - inf, as NumPy's own sum
            got, numpy = _sum_impl(x, axis, False), np.sum(x, axis=axis)
        np.testing.assert_array_equal(np.isnan(got), np.isnan(numpy))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(numpy))


def test_a_sum_keeping_few_columns_joins_summed_axes_and_comes_closer(monkeypatch):
    """A sum keeping fewer than blas._FEW_COLUMNS elements (a bias gradient over [N, H, W]
    with 3 channels) joins trailing summed axes to its columns (NOTE(sum-by-products)):
    shorter sequential lanes, so nearer the exact sum than the one product over all
    N*H*W rows."""
    from tapeflow import blas
    from tapeflow.ops.structural import _sum_impl

    x = np.random.default_rng(2).standard_normal((256, 24, 24, 3)).astype(np.float32) + 1
    exact = np.sum(x.astype(np.longdouble), axis=(0, 1, 2))
    products = []
    matmul = blas.matmul
    monkeypatch.setattr(blas, "matmul", lambda a, b: products.append((a.shape, b.shape))
                        or matmul(a, b))
    joined = _sum_impl(x, (0, 1, 2), False)
    assert products == [((256,), (256, 24 * 24 * 3))]
    monkeypatch.setattr(blas, "_FEW_COLUMNS", 1)
    one = _sum_impl(x, (0, 1, 2), False)
    assert products[-1][1] == (256 * 24 * 24, 3)
    assert np.abs(joined - exact).max() < np.abs(one - exact).max() / 4
