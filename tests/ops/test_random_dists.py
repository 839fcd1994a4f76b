"""tf.random.gamma, poisson, stateless_gamma, stateless_poisson: distributions (moments of
many draws under fixed seeds, so the checks are deterministic), TensorFlow's seeds and
shapes, the implicit reparameterization gradient in alpha against finite differences of
the gamma CDF, forward against reverse, batched against a loop, traced and compiled against
eager, and argument errors. The op table (table_random_dists.py) checks the derivative
primitive's rules against finite differences."""

from __future__ import annotations

import functools
import math
import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops.random_dists import _igamma, gamma_grad_p, gamma_p

INT64 = np.iinfo(np.int64)


@pytest.fixture(autouse=True)
def _restore_seed():
    yield
    tf.random.set_seed(None)


def gamma_grad(alpha, sample, order=1):
    return bind(gamma_grad_p, tf.constant(alpha, tf.float64), tf.constant(sample, tf.float64),
                order=order).numpy()


def log_density(a, x):
    return (a - 1) * np.log(x) - x - np.vectorize(math.lgamma)(a)


def cdf_slope_in_alpha(a, x, rel=3e-6):
    """-(dF/da) / (dF/dx) at (a, x) by central differences of the CDF in float64, on the
    side (P or Q = 1 - P) that is the smaller, so the difference keeps its digits."""
    a, x = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64))
    upper = _igamma(a, x) > 0.5
    h = rel * a
    sign = np.where(upper, 1.0, -1.0)
    slope = sign * (_igamma(a + h, x, upper) - _igamma(a - h, x, upper)) / (2 * h)
    return slope / np.exp(log_density(a, x))


@functools.lru_cache(maxsize=1)
def sample_grid():
    """(alpha, sample) pairs over alpha in [1e-3, 1e3] and each distribution's quantiles
    from 1e-6 to 1 - 1e-6 (found by bisection of the CDF in log x)."""
    u = np.array([1e-6, 1e-3, 0.05, 0.3, 0.5, 0.7, 0.95, 0.999, 1 - 1e-6])
    a = np.repeat(np.logspace(-3, 3, 13), len(u))
    u = np.tile(u, 13)
    lo, hi = np.full(a.shape, -700.0), np.log(a + 60 * np.sqrt(a) + 60)
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        below = _igamma(a, np.exp(mid)) < u
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    x = np.exp(0.5 * (lo + hi))
    keep = lo > -699  # alpha 1e-3's lowest quantiles are below float64's range
    return a[keep], x[keep]


# ------------------------------------------------------------------ the distributions
@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64])
def test_gamma_moments_with_broadcast_parameters(dtype):
    tf.random.set_seed(1)
    alpha = tf.constant([0.5, 2.0, 9.0], dtype)
    beta = tf.constant([[1.0], [4.0]], dtype)
    x = tf.random.gamma([40_000], alpha, beta, dtype=dtype)
    assert x.dtype == dtype and x.shape == (40_000, 2, 3)
    v = x.numpy().astype(np.float64)
    a, b = alpha.numpy().astype(np.float64), beta.numpy().astype(np.float64)
    mean, var = a / b, a / b ** 2
    # four standard errors of the mean and of the variance (fourth moment of the gamma)
    np.testing.assert_array_less(abs(v.mean(0) - mean), 4 * np.sqrt(var / 40_000))
    var_se = np.sqrt((6 / a + 2) * var ** 2 / 40_000)
    np.testing.assert_array_less(abs(v.var(0) - var), 4 * var_se + 1e-3 * (dtype == tf.float16))
    assert v.min() >= np.finfo(dtype.as_numpy_dtype).tiny


@pytest.mark.parametrize("alpha", [0.01, 0.3, 1.0, 4.0, 250.0])
def test_gamma_draws_follow_the_cdf(alpha):
    """The empirical CDF of 20 000 draws within 0.012 of P(alpha, x) at its deciles (a
    Kolmogorov-Smirnov bound that fails with probability ~1e-3), also for tiny alpha."""
    x = tf.random.stateless_gamma([20_000], [4, int(alpha * 100)], alpha, dtype=tf.float64)
    v = np.sort(x.numpy())
    probe = v[np.arange(1, 10) * 2000]
    np.testing.assert_allclose(_igamma(alpha, probe), np.arange(1, 10) / 10, atol=0.012)


def test_igamma_against_closed_forms_and_scipy():
    x = np.array([1e-8, 0.03, 0.7, 2.0, 9.0, 40.0])
    np.testing.assert_allclose(_igamma(1.0, x), -np.expm1(-x), rtol=1e-14)
    np.testing.assert_allclose(_igamma(1.0, x, upper=True), np.exp(-x), rtol=1e-13)
    np.testing.assert_allclose(_igamma(0.5, x), [math.erf(math.sqrt(v)) for v in x], rtol=1e-13)
    q3 = np.exp(-x) * (1 + x + x * x / 2)  # Q(3, x)
    np.testing.assert_allclose(_igamma(3.0, x, upper=True), q3, rtol=1e-13)
    special = pytest.importorskip("scipy.special")
    a, s = sample_grid()
    up = _igamma(a, s) > 0.5
    want = np.where(up, special.gammaincc(a, s), special.gammainc(a, s))
    np.testing.assert_allclose(_igamma(a, s, up), want, rtol=1e-10)


@pytest.mark.parametrize("dtype", [tf.float16, tf.float32, tf.float64, tf.int32, tf.int64])
def test_poisson_moments_dtypes_and_rates(dtype):
    tf.random.set_seed(2)
    lam = tf.constant([0.0, 0.4, 6.0, 900.0])
    n = tf.random.poisson([30_000], lam, dtype=dtype)
    assert n.dtype == dtype and n.shape == (30_000, 4)
    v = n.numpy().astype(np.float64)
    assert (v == np.round(v)).all() and (v[:, 0] == 0).all()
    lam = lam.numpy()[1:]
    np.testing.assert_array_less(abs(v[:, 1:].mean(0) - lam), 4 * np.sqrt(lam / 30_000))
    np.testing.assert_array_less(abs(v[:, 1:].var(0) / lam - 1), 0.04)
    # the rate may be an integer tensor; a negative rate gives 0, as TensorFlow's
    k = tf.random.poisson([5], tf.constant([-3, 4], tf.int64), dtype=dtype)
    assert (k.numpy()[:, 0] == 0).all()


def test_poisson_extremes():
    for lam, dtype in ((1e19, tf.float64), (4e18, tf.int64)):  # beyond NumPy's: the normal limit
        rate = tf.constant(lam, tf.float64)  # a Python float would be a float32
        huge = tf.random.stateless_poisson([2000], [1, 2], rate, dtype=dtype).numpy()
        assert abs(huge.astype(np.float64).mean() / lam - 1) < 1e-9
        assert abs(huge.astype(np.float64).std() / np.sqrt(lam) - 1) < 0.1
    assert (tf.random.poisson([3], 1e12, dtype=tf.int32).numpy() == 2 ** 31 - 1).all()
    np.testing.assert_array_equal(tf.random.poisson([2], [np.nan, np.inf]).numpy(),
                                  [[np.nan, np.inf]] * 2)
    with pytest.raises(InvalidArgumentError, match="NaN"):
        tf.random.poisson([2], np.nan, dtype=tf.int32)


def test_gamma_special_parameters():
    tiny = np.finfo(np.float32).tiny
    x = tf.random.gamma([3], [0.0, -1.0, np.nan, np.inf, 1e-3]).numpy()
    np.testing.assert_array_equal(x[:, :4], [[tiny, np.nan, np.nan, np.inf]] * 3)
    assert (x[:, 4] >= tiny).all()  # alpha 1e-3: mostly below float32's range, floored
    np.testing.assert_array_equal(tf.random.gamma([2], 1.0, np.inf).numpy(), [tiny, tiny])
    assert np.isnan(tf.random.gamma([2], 1.0, np.nan).numpy()).all()
    assert tf.random.gamma([2], 2).dtype == tf.float32  # a Python int is converted


# ------------------------------------------------------------------ seeds and shapes
def _draws(op_seed):
    return [tf.random.gamma([3], [0.5, 4.0], seed=op_seed).numpy(),
            tf.random.gamma([3], 2.0, seed=op_seed).numpy(),
            tf.random.poisson([4], 3.0, seed=op_seed).numpy()]


@pytest.mark.parametrize("op_seed", [None, 11])
def test_set_seed_repeats_and_each_call_draws_anew(op_seed):
    tf.random.set_seed(7)
    first = _draws(op_seed) + _draws(op_seed)
    tf.random.set_seed(7)
    again = _draws(op_seed) + _draws(op_seed)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.array_equal(first[0], first[3]) and not np.array_equal(first[2], first[5])
    tf.random.set_seed(8)
    assert not np.array_equal(_draws(op_seed)[0], first[0])


def test_an_op_seed_has_its_own_sequence():
    tf.random.set_seed(3)
    alone = [tf.random.gamma([2], 1.0, seed=5).numpy() for _ in range(2)]
    tf.random.set_seed(3)
    mixed = []
    for _ in range(2):
        tf.random.normal([4])
        tf.random.poisson([3], 1.0)
        mixed.append(tf.random.gamma([2], 1.0, seed=5).numpy())
    np.testing.assert_array_equal(alone, mixed)


STATELESS = [
    lambda seed: tf.random.stateless_gamma([4, 2, 3], seed, [1.0, 2.0, 3.0], [[1.0], [2.0]]),
    lambda seed: tf.random.stateless_gamma([5], seed, 0.3, dtype=tf.float64),
    lambda seed: tf.random.stateless_poisson([3, 2], seed, [2.0, 50.0]),
    lambda seed: tf.random.stateless_poisson([6], seed, 4, dtype=tf.float16),
]


@pytest.mark.parametrize("draw", STATELESS)
def test_stateless_draws_are_functions_of_their_seed(draw):
    a = draw([1, 2]).numpy()
    np.testing.assert_array_equal(a, draw(tf.constant([1, 2], tf.int64)).numpy())
    assert not np.array_equal(a, draw([2, 1]).numpy())
    tf.random.set_seed(3)  # the global seed plays no part
    np.testing.assert_array_equal(draw([1, 2]).numpy(), a)
    f = tf.function(draw)
    for _ in range(2):
        np.testing.assert_array_equal(f(tf.constant([1, 2])).numpy(), a)
    seeds = tf.constant([[1, 2], [5, 6], [1, 2]])
    for s, got in zip(seeds.numpy(), tf.vmap(draw)(seeds).numpy()):
        np.testing.assert_array_equal(got, draw(s).numpy())


@pytest.mark.parametrize("shape, alpha, beta, out", [
    ([2], [1.0, 2.0], [[1.0], [2.0], [3.0]], (2, 3, 2)),
    ([], 1.0, None, ()),
    ([0], [1.0, 2.0], None, (0, 2)),
    ([3, 0], 1.0, [1.0, 2.0], (3, 0, 2)),
    ([2], np.zeros([0, 3]), 1.0, (2, 0, 3)),
    (tf.constant([2, 1], tf.int64), 1.0, None, (2, 1)),
])
def test_gamma_and_poisson_shapes(shape, alpha, beta, out):
    assert tf.random.gamma(shape, alpha, beta).shape == out
    lam = np.broadcast_to(alpha, np.broadcast_shapes(np.shape(alpha), np.shape(beta or 1.0)))
    assert tf.random.poisson(shape, lam).shape == out
    assert tf.random.stateless_gamma(out, [1, 2], alpha, beta).shape == out
    assert tf.random.stateless_poisson(out, [1, 2], lam).shape == out


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.random.gamma([2], 1.0, dtype=tf.bfloat16), InvalidArgumentError,
     "float16, float32"),
    (lambda: tf.random.gamma([2], 1, dtype=tf.int32), InvalidArgumentError, "`dtype`.*int32"),
    (lambda: tf.random.gamma([2], tf.constant(1.0, tf.float64)), InvalidArgumentError,
     "`alpha` has dtype float64 but `dtype` is float32"),
    (lambda: tf.random.gamma([2], tf.constant(1)), InvalidArgumentError, "`alpha` has dtype int32"),
    (lambda: tf.random.gamma([2], 1.0, tf.constant([1.0], tf.float16)), InvalidArgumentError,
     "`beta` has dtype float16"),
    (lambda: tf.random.gamma([2], [1.0, 2.0], [1.0, 2.0, 3.0]), InvalidArgumentError,
     r"`alpha` of shape \[2\] and `beta` of shape \[3\] do not broadcast"),
    (lambda: tf.random.gamma([2], "a"), TypeError, "`alpha` must be numbers"),
    (lambda: tf.random.gamma([-1], 1.0), InvalidArgumentError, "non-negative"),
    (lambda: tf.random.gamma([2.5], 1.0), TypeError, "integers"),
    (lambda: tf.random.stateless_gamma([3], [1, 2], [1.0, 2.0]), InvalidArgumentError,
     r"`shape` \[3\] must end with the shape of broadcast\(alpha, beta\), \[2\]"),
    (lambda: tf.random.stateless_gamma([3, 2], [1, 2], [1.0], [[1.0], [2.0]]),
     InvalidArgumentError, r"must end with .*\[2, 1\]"),
    (lambda: tf.random.stateless_gamma([3], [1, 2, 3], 1.0), InvalidArgumentError,
     r"`seed` must be an int32 or int64 tensor of shape \[2\]"),
    (lambda: tf.random.stateless_gamma([3], [1.0, 2.0], 1.0), InvalidArgumentError, "`seed`"),
    (lambda: tf.random.poisson([2], 1.0, dtype=tf.bfloat16), InvalidArgumentError,
     "`dtype` must be one of float16, float32, float64, int32, int64; got bfloat16"),
    (lambda: tf.random.poisson([2], 1.0, dtype=tf.uint8), InvalidArgumentError, "got uint8"),
    (lambda: tf.random.poisson([2], tf.constant([1], tf.uint8)), InvalidArgumentError,
     "`lam` must be one of"),
    (lambda: tf.random.poisson([2], tf.constant(1.0, tf.bfloat16)), InvalidArgumentError,
     "`lam` must be one of.*bfloat16"),
    (lambda: tf.random.stateless_poisson([3], [1, 2], [1.0, 2.0]), InvalidArgumentError,
     r"`shape` \[3\] must end with the shape of `lam`, \[2\]"),
    (lambda: tf.random.stateless_poisson([2], tf.constant([1, 2], tf.int16), 1.0),
     InvalidArgumentError, "int32 or int64"),
])
def test_argument_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ the gradient in alpha
def test_random_gamma_grad_matches_finite_differences_of_the_cdf():
    """D_1 = -(dP/da) / p over alpha in [1e-3, 1e3] and each distribution's quantiles from
    1e-6 to 1 - 1e-6, against central differences of the CDF in float64."""
    a, x = sample_grid()
    np.testing.assert_allclose(gamma_grad(a, x), cdf_slope_in_alpha(a, x), rtol=2e-7)


def test_random_gamma_grad_orders_and_edges():
    a, x = sample_grid()
    d1, d2 = gamma_grad(a, x), gamma_grad(a, x, order=2)
    # D_2 = -(d2P/da2) / p: the central difference of D_1 p in a, divided by p
    h = 1e-5 * a
    fd = (gamma_grad(a + h, x) * np.exp(log_density(a + h, x) - log_density(a, x))
          - gamma_grad(a - h, x) * np.exp(log_density(a - h, x) - log_density(a, x))) / (2 * h)
    assert (abs(d2 - fd) <= 1e-5 * abs(fd) + 1e-6 * abs(d1) / a).all()
    got = gamma_grad([1.0, 1.0, 1.0, 2.0, -1.0, 0.0, np.nan], [0.0, np.inf, np.nan, -1.0, 1.0,
                                                               1.0, 1.0])
    np.testing.assert_array_equal(got, [0.0, 0.0] + [np.nan] * 5)
    half = bind(gamma_grad_p, tf.constant([2.0], tf.float16), tf.constant([1.5], tf.float16),
                order=1)
    assert half.dtype == tf.float16
    np.testing.assert_allclose(half.numpy(), gamma_grad(2.0, 1.5), rtol=1e-3)


@pytest.mark.parametrize("stateless", [False, True])
def test_gradients_in_alpha_and_beta_at_the_draws(stateless):
    alpha = tf.Variable([[0.2, 1.5, 30.0]], dtype=tf.float64)
    beta = tf.Variable([[0.5], [2.0]], dtype=tf.float64)
    with tf.GradientTape(persistent=True) as tape:
        if stateless:
            x = tf.random.stateless_gamma([5, 2, 3], [3, 4], alpha, beta, tf.float64)
        else:
            x = tf.random.gamma([5], alpha, beta, tf.float64, seed=3)
        loss = tf.reduce_sum(x * tf.range(30, dtype=tf.float64)[:, None, None][:5] ** 0.5)
    w = np.sqrt(np.arange(5.0))[:, None, None]
    std = x.numpy() * beta.numpy()  # the standard draws
    a = np.broadcast_to(alpha.numpy(), std.shape)
    want_alpha = (w * cdf_slope_in_alpha(a, std) / beta.numpy()).sum((0, 1), keepdims=True)[0]
    np.testing.assert_allclose(tape.gradient(loss, alpha).numpy(), want_alpha, rtol=1e-5)
    want_beta = (-w * x.numpy() / beta.numpy()).sum((0, 2))[:, None]
    np.testing.assert_allclose(tape.gradient(loss, beta).numpy(), want_beta, rtol=1e-12)


def test_forward_and_reverse_agree():
    alpha = tf.constant([0.3, 2.0, 12.0], tf.float64)
    beta = tf.constant(1.5, tf.float64)
    v = tf.constant([0.7, -1.2, 2.0], tf.float64)
    u = tf.constant(np.random.default_rng(0).standard_normal((4, 3)))

    def f(a, b):
        return tf.random.stateless_gamma([4, 3], [8, 9], a, b, tf.float64)

    with tf.autodiff.ForwardAccumulator([alpha, beta], [v, tf.constant(0.4, tf.float64)]) as acc:
        out = f(alpha, beta)
    with tf.GradientTape() as tape:
        tape.watch([alpha, beta])
        y = tf.reduce_sum(f(alpha, beta) * u)
    ga, gb = tape.gradient(y, [alpha, beta])
    np.testing.assert_allclose(float(tf.reduce_sum(acc.jvp(out) * u)),
                               float(tf.reduce_sum(ga * v) + gb * 0.4), rtol=1e-12)


def test_gradient_is_unbiased_to_second_order():
    """d E[f(x)] / d alpha = E[d f(x) / d alpha] for the implicit reparameterization: E[x] =
    a / b, E[x^2] = a (a + 1) / b^2, so the mean first derivatives are 1 / b and
    (2a + 1) / b^2, the mean second derivatives 0 and 2 / b^2."""
    alpha = tf.Variable([0.4, 3.0], dtype=tf.float64)
    b = 2.0
    with tf.GradientTape(persistent=True) as outer:
        with tf.GradientTape(persistent=True) as inner:
            x = tf.random.stateless_gamma([100_000, 2], [5, 5], alpha, b, tf.float64)
            m1, m2 = tf.reduce_mean(x, 0), tf.reduce_mean(x * x, 0)
        g1, g2 = inner.gradient(m1, alpha), inner.gradient(m2, alpha)
    a = alpha.numpy()
    np.testing.assert_allclose(g1.numpy(), 1 / b, rtol=0.01)
    np.testing.assert_allclose(g2.numpy(), (2 * a + 1) / b ** 2, rtol=0.01)
    np.testing.assert_allclose(outer.gradient(g1, alpha).numpy(), [0, 0], atol=0.01)
    np.testing.assert_allclose(outer.gradient(g2, alpha).numpy(), 2 / b ** 2, rtol=0.03)


def test_second_derivative_is_the_implicit_curves():
    """d2x/da2 = dD_1/da + dD_1/dx D_1 along x(a) = P^-1(a, u), from D_2 (its rules)."""
    alpha = tf.constant([0.3, 1.0, 6.0], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(alpha)
        with tf.GradientTape() as inner:
            inner.watch(alpha)
            x = tf.random.stateless_gamma([3], [1, 1], alpha, dtype=tf.float64)
        g = inner.gradient(x, alpha)
    a, s = alpha.numpy(), x.numpy()
    d1, d2 = gamma_grad(a, s), gamma_grad(a, s, order=2)
    dlogp = np.log(s) - tf.math.digamma(alpha).numpy()
    want = (d2 - d1 * dlogp) + (-dlogp - d1 * ((a - 1) / s - 1)) * d1
    np.testing.assert_allclose(outer.gradient(g, alpha).numpy(), want, rtol=1e-10)


def test_derivatives_at_underflowed_draws_are_finite():
    """Half of alpha 1e-3's draws are below float64's smallest normal number (so floored to
    it, as TensorFlow's): they get no gradient, and no NaN at second order either."""
    alpha = tf.constant([1e-3, 0.02], tf.float64)
    with tf.GradientTape() as outer:
        outer.watch(alpha)
        with tf.GradientTape() as inner:
            inner.watch(alpha)
            x = tf.random.stateless_gamma([200, 2], [6, 7], alpha, dtype=tf.float64)
            y = tf.reduce_sum(x)
        g = inner.gradient(y, alpha)
    gg = outer.gradient(g, alpha)
    assert (x.numpy()[:, 0] == np.finfo(np.float64).tiny).mean() > 0.3
    assert np.isfinite(g.numpy()).all() and np.isfinite(gg.numpy()).all()
    raw = bind(gamma_p, tf.constant([6, 7]), alpha, shape=(200,), lead=0)
    np.testing.assert_allclose(g.numpy(), (gamma_grad(alpha.numpy(), raw.numpy())
                                           * (raw.numpy() > np.finfo(np.float64).tiny)).sum(0),
                               rtol=1e-12)


def test_poisson_has_no_gradient():
    lam = tf.Variable([2.0, 3.0])
    with tf.autodiff.ForwardAccumulator(lam, tf.ones([2])) as acc:
        with tf.GradientTape() as tape:
            n = tf.random.poisson([3], lam) + tf.random.stateless_poisson([3, 2], [1, 2], lam,
                                                                           tf.float32)
    assert tape.gradient(n, lam) is None and acc.jvp(n) is None


def test_float16_gradient():
    alpha = tf.Variable([1.0, 4.0], dtype=tf.float16)
    with tf.GradientTape() as tape:
        x = tf.random.gamma([100], alpha, dtype=tf.float16, seed=1)
    g = tape.gradient(x, alpha)
    assert g.dtype == tf.float16
    want = cdf_slope_in_alpha(alpha.numpy().astype(np.float64), x.numpy().astype(np.float64))
    np.testing.assert_allclose(g.numpy(), want.sum(0), rtol=0.01)


# ------------------------------------------------------------------ vmap, traces, XLA
def test_vmap_draws_each_example_its_own_seed():
    alphas = tf.constant([[0.5, 2.0], [1.0, 1.0], [9.0, 3.0]])
    tf.random.set_seed(12)
    got = tf.vmap(lambda a: tf.random.gamma([4], a))(alphas).numpy()
    tf.random.set_seed(12)
    seeds = tf.random.uniform([3, 2], int(INT64.min), int(INT64.max), tf.int64)
    for s, a, row in zip(seeds, alphas, got):
        np.testing.assert_array_equal(row, tf.random.stateless_gamma([4, 2], s, a).numpy())
    assert not np.array_equal(got[1, :, 0], got[1, :, 1])
    counts = tf.vmap(lambda lam: tf.random.poisson([50], lam))(tf.constant([1.0, 100.0]))
    assert counts.shape == (2, 50) and counts.numpy()[1].mean() > 80


def test_vmap_of_the_gradient_in_alpha():
    alphas = tf.constant([[0.5, 2.0], [1.0, 7.0], [30.0, 0.1]], tf.float64)

    def grad(a):
        with tf.GradientTape() as tape:
            tape.watch(a)
            y = tf.reduce_sum(tf.random.stateless_gamma([6, 2], [3, 3], a, 2.0, tf.float64) ** 2)
        return tape.gradient(y, a)

    batched = tf.vmap(grad)(alphas).numpy()
    for a, got in zip(alphas, batched):
        np.testing.assert_allclose(got, grad(a).numpy(), rtol=1e-13)
    per_call = tf.vectorized_map(
        lambda a: tf.random.stateless_gamma([3, 2], [1, 9], a, dtype=tf.float64), alphas)
    for a, got in zip(alphas, per_call.numpy()):
        np.testing.assert_array_equal(got, tf.random.stateless_gamma([3, 2], [1, 9], a,
                                                                     dtype=tf.float64).numpy())
    with tf.GradientTape() as tape:  # a vectorized Jacobian: the VJP rule batched
        tape.watch(alphas)
        y = tf.random.stateless_gamma([4, 3, 2], [1, 9], alphas, dtype=tf.float64)
    jac = tape.jacobian(y, alphas).numpy()
    mask = np.eye(6).reshape(1, 3, 2, 3, 2).astype(bool)
    assert not jac[:, ~mask[0]].any()  # each draw depends on its own alpha only
    diagonal = jac.reshape(4, 6, 6)[:, range(6), range(6)].reshape(4, 3, 2)
    np.testing.assert_allclose(diagonal, gamma_grad(np.broadcast_to(alphas.numpy(), y.shape),
                                                    y.numpy()), rtol=1e-13)


def test_a_traced_function_draws_anew_and_follows_set_seed():
    @tf.function
    def f(a):
        return tf.random.gamma([3], a) + tf.random.poisson([3], [2.0, 3.0], seed=4)

    a = tf.constant([1.0, 5.0])
    tf.random.set_seed(5)
    eager = [(tf.random.gamma([3], a) + tf.random.poisson([3], [2.0, 3.0], seed=4)).numpy()
             for _ in range(3)]
    tf.random.set_seed(5)
    traced = [f(a).numpy() for _ in range(3)]
    np.testing.assert_array_equal(traced, eager)
    assert not np.array_equal(traced[1], traced[2])


def _compare_at_sizes(body, f, sizes):
    rng = np.random.default_rng(0)
    for n in sizes:
        alpha = rng.uniform(0.2, 5.0, n).astype(np.float32)
        tf.random.set_seed(n)
        want = body(tf.constant(alpha))
        tf.random.set_seed(n)
        for got, w in zip(f(alpha), want):
            assert got.shape == w.shape
            np.testing.assert_allclose(got.numpy(), w.numpy(), rtol=1e-6)


def test_none_batch_traces_give_eager_values_at_every_size():
    def body(alpha):
        with tf.GradientTape() as tape:
            tape.watch(alpha)
            x = tf.random.gamma([4], alpha, 2.0, seed=9)
            y = tf.reduce_sum(x * x)
        return x, tf.random.poisson([2], alpha), tape.gradient(y, alpha)

    f = tf.function(body, input_signature=[tf.TensorSpec([None], tf.float32)])
    _compare_at_sizes(body, f, (2, 3, 5, 8, 1, 0, 13))
    assert f.experimental_get_tracing_count() == 4  # one graph for sizes >= 2 (and 0, 1)

    def stateless(alpha):  # the shape is read from the input's: a trace per size
        shape = tf.concat([[3], tf.shape(alpha)], 0)
        return (tf.random.stateless_gamma(shape, [1, 2], alpha),
                tf.random.stateless_poisson(shape, [3, 4], alpha * 3))

    g = tf.function(stateless, input_signature=[tf.TensorSpec([None], tf.float32)])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the retracing warning
        _compare_at_sizes(stateless, g, (2, 3, 5, 1, 0))


def test_saved_draws(tmp_path):
    m = tf.Module()
    m.f = tf.function(lambda a: (tf.random.gamma([3], a, seed=4), tf.random.poisson([2], a),
                                 tf.random.stateless_gamma([2, 2], [3, 4], a)),
                      input_signature=[tf.TensorSpec([2], tf.float32)])
    tf.saved_model.save(m, str(tmp_path / "draws"))
    loaded = tf.saved_model.load(str(tmp_path / "draws"))
    a = tf.constant([0.5, 3.0])
    tf.random.set_seed(5)
    want = [t.numpy() for t in m.f(a)]
    tf.random.set_seed(5)
    for got, w in zip(loaded.f(a), want):
        np.testing.assert_array_equal(got.numpy(), w)


def test_compiled_draws_and_gradients_equal_eager():
    pytest.importorskip("jax")

    def body(alpha, seed):
        with tf.GradientTape() as tape:
            tape.watch(alpha)
            x = tf.random.gamma([5], alpha, seed=1)
            s = tf.random.stateless_gamma([4, 2], seed, alpha, 3.0)
            y = tf.reduce_sum(x * x) + tf.reduce_sum(s)
        return (x, s, tf.random.stateless_poisson([3, 2], seed, alpha * 4, tf.int64),
                tf.random.poisson([2], alpha), tape.gradient(y, alpha))

    f = tf.function(body, jit_compile=True)
    alpha, seed = tf.constant([0.7, 6.0]), tf.constant([8, 9])
    for n in range(3):
        tf.random.set_seed(n)
        want = body(alpha, seed)
        tf.random.set_seed(n)
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # every primitive compiles
            got = f(alpha, seed)
        for g, w in zip(got, want):
            np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-6)
    g = tf.function(lambda lam: tf.random.stateless_poisson([2], [1, 2], lam, tf.int32),
                    jit_compile=True)
    np.testing.assert_array_equal(g(tf.constant(5.0)).numpy(),
                                  tf.random.stateless_poisson([2], [1, 2], 5.0).numpy())
    with pytest.raises(InvalidArgumentError, match="NaN"):
        g(tf.constant(np.nan))


# ------------------------------------------------------------------ against TensorFlow
@pytest.mark.peers
def test_peers_random_gamma_grad_agrees_with_tensorflow():
    real = pytest.importorskip("tensorflow")
    a, x = sample_grid()
    for dtype, rtol in ((np.float64, 1e-8), (np.float32, 2e-3)):
        theirs = real.raw_ops.RandomGammaGrad(alpha=a.astype(dtype), sample=x.astype(dtype))
        ours = bind(gamma_grad_p, tf.constant(a.astype(dtype)), tf.constant(x.astype(dtype)),
                    order=1)
        assert ours.dtype.name == theirs.dtype.name
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=rtol,
                                   atol=1e-30 if dtype == np.float64 else 1e-30)
    edges = dict(alpha=np.array([0.5, 1.0, 1.0, -1.0]), sample=np.array([0.0, np.inf, np.nan, 1.0]))
    np.testing.assert_array_equal(bind(gamma_grad_p, tf.constant(edges["alpha"]),
                                       tf.constant(edges["sample"]), order=1).numpy(),
                                  real.raw_ops.RandomGammaGrad(**edges).numpy())


@pytest.mark.peers
def test_peers_distributions_shapes_and_dtypes_agree_with_tensorflow():
    real = pytest.importorskip("tensorflow")
    real.random.set_seed(0)
    tf.random.set_seed(0)
    cases = [
        (lambda m: m.random.gamma([50_000], [0.05, 0.8, 6.0], [[1.0], [3.0]]), 0.015),
        (lambda m: m.random.gamma([50_000], 2.5, dtype=m.float64), 0.015),
        (lambda m: m.random.gamma([50_000], [1.0, 40.0], dtype=m.float16), 0.02),
        (lambda m: m.random.stateless_gamma([50_000, 2], [3, 4], [0.3, 12.0]), 0.015),
        (lambda m: m.random.poisson([50_000], [0.5, 7.0, 300.0]), 0.015),
        (lambda m: m.random.poisson([50_000], m.constant([2, 30]), dtype=m.int64), 0.015),
        (lambda m: m.random.stateless_poisson([50_000, 2], [5, 6], [1.0, 80.0]), 0.015),
    ]
    for draw, tol in cases:
        theirs, ours = draw(real), draw(tf)
        assert theirs.dtype.name == ours.dtype.name and tuple(theirs.shape) == ours.shape
        t = theirs.numpy().astype(np.float64).reshape(len(theirs), -1)
        o = ours.numpy().astype(np.float64).reshape(len(ours), -1)
        for col in range(t.shape[1]):  # each distribution's deciles, relative to its spread
            qt, qo = np.quantile(t[:, col], np.arange(1, 10) / 10), np.quantile(
                o[:, col], np.arange(1, 10) / 10)
            spread = np.quantile(t[:, col], 0.95) - np.quantile(t[:, col], 0.05)
            np.testing.assert_array_less(abs(qt - qo), 4 * tol * spread + 1.001)
            assert abs(t[:, col].mean() - o[:, col].mean()) < 4 * tol * max(spread, 1)


@pytest.mark.peers
def test_peers_gradients_agree_with_tensorflow_on_average():
    real = pytest.importorskip("tensorflow")

    def mean_grads(m):
        alpha = m.Variable([0.3, 2.0, 15.0], dtype=m.float64)
        beta = m.Variable(1.5, dtype=m.float64)
        with m.GradientTape() as tape:
            x = m.random.gamma([60_000], alpha, beta, dtype=m.float64, seed=1)
            y = m.reduce_mean(m.sqrt(x), 0)
        return [g.numpy() for g in tape.gradient(y, [alpha, beta])]

    real.random.set_seed(1)
    for a, b in zip(mean_grads(real), mean_grads(tf)):
        np.testing.assert_allclose(b, a, rtol=0.02)


@pytest.mark.peers
def test_peers_argument_errors_agree_with_tensorflow():
    real = pytest.importorskip("tensorflow")
    calls = [
        lambda m: m.random.gamma([2], 1.0, dtype=m.bfloat16),
        lambda m: m.random.gamma([2], m.constant(1.0, m.float64)),
        lambda m: m.random.gamma([2], [1.0, 2.0], [1.0, 2.0, 3.0]),
        lambda m: m.random.stateless_gamma([3], [1, 2], [1.0, 2.0]),
        lambda m: m.random.stateless_gamma([3, 2], [1, 2], [1.0]),
        lambda m: m.random.stateless_poisson([2, 3], [1, 2], [1.0, 2.0]),
        lambda m: m.random.poisson([2], 1.0, dtype=m.uint8),
        lambda m: m.random.poisson([2], m.constant(1.0, m.bfloat16)),
    ]
    for call in calls:
        for m in (real, tf):
            with pytest.raises((ValueError, TypeError, real.errors.InvalidArgumentError)):
                call(m)
    assert real.random.stateless_gamma([3, 2], [1, 2], [1.0, 2.0]).shape == (3, 2)
    assert tf.random.stateless_gamma([3, 2], [1, 2], [1.0, 2.0]).shape == (3, 2)
