"""The ops of ops/nn_composites.py beyond the op table: dropout (whose draws the table
cannot check), half precision, edge cases (empty axes, zero weights, zero vectors), the
errors bad arguments raise, and TensorFlow's values (peers).

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError

from ops_helpers import numpy_value_and_grad

RNG = np.random.default_rng(3)


def _grad(f, x):
    x = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    return y, tape.gradient(y, x)


# ---------------------------------------------------------------- moments
def test_moments_of_float16_are_computed_in_float32():
    x = np.array([[1000., 1001., 1003.], [0.1, 0.2, 0.7]], np.float16)
    mean, variance = tf.nn.moments(tf.constant(x), axes=[1])
    assert mean.dtype == variance.dtype == tf.float16
    x32 = x.astype(np.float32)
    want_var = ((x32 - x32.mean(1, keepdims=True)) ** 2).mean(1)
    np.testing.assert_array_equal(mean.numpy(), x32.mean(1).astype(np.float16))
    np.testing.assert_array_equal(variance.numpy(), want_var.astype(np.float16))


def test_moments_axes_forms_and_integers():
    x = RNG.standard_normal((2, 3, 4))
    for axes in (1, [-1], (0, 2), None):
        mean, variance = tf.nn.moments(tf.constant(x), axes)
        want_axes = axes if axes is None or isinstance(axes, int) else tuple(axes)
        np.testing.assert_allclose(mean.numpy(), x.mean(want_axes), rtol=1e-12)
        np.testing.assert_allclose(variance.numpy(), x.var(want_axes), rtol=1e-12)
    mean, variance = tf.nn.moments(tf.constant([[1, 2], [4, 7]]), [1])
    np.testing.assert_array_equal(mean.numpy(), [1, 5])  # TF: integer means
    np.testing.assert_array_equal(variance.numpy(), [0, 2])  # TF
    # no axis reduced: x and zeros, x's shape kept (its length-1 axes too)
    mean, variance = tf.nn.moments(tf.ones([2, 1]), [])
    assert mean.shape == variance.shape == (2, 1)
    np.testing.assert_array_equal(variance.numpy(), 0.)


def test_moments_gradient_is_exact_at_first_order():
    x = RNG.standard_normal((3, 5))
    _, g = _grad(lambda t: tf.nn.moments(t, [1])[1], x)
    np.testing.assert_allclose(g.numpy(), 2 * (x - x.mean(1, keepdims=True)) / 5, rtol=1e-12)


def test_moments_errors():
    with pytest.raises(InvalidArgumentError, match="out of range"):
        tf.nn.moments(tf.ones([2, 3]), [2])
    with pytest.raises(InvalidArgumentError, match="repeats"):
        tf.nn.moments(tf.ones([2, 3]), [0, 0])
    with pytest.raises(InvalidArgumentError, match="bool"):
        tf.nn.moments(tf.constant([True]), [0])


# ---------------------------------------------------------------- weighted and normalized moments
def test_weighted_moments_with_zero_weights_are_zero_with_zero_gradients():
    x = tf.constant([[1., 2., 6.], [3., 5., 9.]])
    w = tf.constant([[1.], [0.]])
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        mean, variance = tf.nn.weighted_moments(x, [1], w)
        total = tf.reduce_sum(mean) + tf.reduce_sum(variance)
    np.testing.assert_allclose(mean.numpy(), [3., 0.])
    np.testing.assert_allclose(variance.numpy(), [14 / 3, 0.], rtol=1e-6)
    gx, gw = tape.gradient(total, [x, w])
    assert np.all(np.isfinite(gx.numpy())) and np.all(np.isfinite(gw.numpy()))
    np.testing.assert_array_equal(gx.numpy()[1], 0.)


def test_weighted_moments_keepdims_integer_weights_and_errors():
    x = RNG.standard_normal((2, 4))
    w = np.array([[1, 0, 2, 1], [3, 1, 1, 0]], np.int32)
    mean, variance = tf.nn.weighted_moments(tf.constant(x), [1], tf.constant(w), keepdims=True)
    want = (w * x).sum(1, keepdims=True) / w.sum(1, keepdims=True)
    np.testing.assert_allclose(mean.numpy(), want, rtol=1e-12)
    spread = (w * (x - want) ** 2).sum(1, keepdims=True)
    np.testing.assert_allclose(variance.numpy(), spread / w.sum(1, keepdims=True), rtol=1e-12)
    with pytest.raises(InvalidArgumentError, match="broadcast"):
        tf.nn.weighted_moments(tf.ones([2, 3]), [1], tf.ones([2]))


def test_normalize_moments_with_and_without_shift():
    mean, variance = tf.nn.normalize_moments(4., tf.constant([4., 8.]),
                                             tf.constant([10., 20.]), 1.)
    np.testing.assert_allclose(mean.numpy(), [2., 3.])  # TF
    np.testing.assert_allclose(variance.numpy(), [1.5, 1.])  # TF


# ---------------------------------------------------------------- batch_normalization
def test_batch_normalization_python_statistics_take_the_dtype_of_x():
    x = tf.constant([[1., 2.], [3., 6.]], tf.float64)
    y = tf.nn.batch_normalization(x, 1., 4., None, None, 1e-3)
    assert y.dtype == tf.float64
    np.testing.assert_allclose(y.numpy(), (x.numpy() - 1) / np.sqrt(4.001), rtol=1e-14)


def test_batch_normalization_errors():
    x = tf.ones([2, 3])
    with pytest.raises(tf.errors.InvalidArgumentError, match="dtype|promote"):
        tf.nn.batch_normalization(x, tf.constant([1., 2., 3.], tf.float64), 1., None, None, 1e-3)
    with pytest.raises(InvalidArgumentError, match="broadcast"):
        tf.nn.batch_normalization(x, tf.ones([4, 1, 3]), 1., None, None, 1e-3)
    with pytest.raises(InvalidArgumentError):
        tf.nn.batch_normalization(x, tf.ones([2]), 1., None, None, 1e-3)
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.nn.batch_normalization(tf.constant([1, 2]), 1, 4, None, None, 1)


# ---------------------------------------------------------------- l2_normalize
def test_l2_normalize_zero_vectors_and_small_norms():
    y, g = _grad(lambda t: tf.math.l2_normalize(t, axis=1), np.array([[0., 0.], [3., 4.]]))
    np.testing.assert_allclose(y.numpy(), [[0., 0.], [0.6, 0.8]])
    np.testing.assert_allclose(g.numpy()[0], 1e6)  # 1 / sqrt(epsilon), as TensorFlow
    # a norm below sqrt(epsilon) divides by sqrt(epsilon)
    np.testing.assert_allclose(tf.nn.l2_normalize(tf.constant([3e-7, 4e-7], tf.float64)).numpy(),
                               [0.3, 0.4], rtol=1e-12)
    np.testing.assert_allclose(tf.linalg.l2_normalize(tf.constant([1., 0.]), epsilon=4.).numpy(),
                               [0.5, 0.])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        # TF: epsilon rounds to 0 in float16, so a zero vector gives NaN
        assert np.isnan(tf.nn.l2_normalize(tf.zeros([2], tf.float16)).numpy()).all()
    np.testing.assert_array_equal(tf.nn.l2_normalize(tf.zeros([2], tf.bfloat16)).numpy(), 0)


def test_l2_normalize_arguments():
    x = tf.constant([[3., 4.], [6., 8.]])
    np.testing.assert_allclose(tf.nn.l2_normalize(x, dim=0).numpy(),
                               tf.nn.l2_normalize(x, axis=0).numpy())
    np.testing.assert_allclose(tf.nn.l2_normalize(x, [0, 1]).numpy(), x.numpy() / np.sqrt(125),
                               rtol=1e-6)
    with pytest.raises(ValueError, match="not both"):
        tf.nn.l2_normalize(x, axis=0, dim=0)
    with pytest.raises(InvalidArgumentError, match="out of range"):
        tf.nn.l2_normalize(x, 2)
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.nn.l2_normalize(tf.constant([1, 2]))
    z = tf.nn.l2_normalize(tf.constant([3 + 4j, 0j]))
    np.testing.assert_allclose(z.numpy(), [0.6 + 0.8j, 0])  # TF


# ---------------------------------------------------------------- dropout
def test_dropout_zeroes_and_scales_and_its_gradient_is_the_same_mask():
    x = RNG.uniform(1, 2, (50, 40))
    y, g = _grad(lambda t: tf.nn.dropout(t, 0.25, seed=5), x)
    kept = y.numpy() != 0
    np.testing.assert_allclose(y.numpy()[kept], x[kept] / 0.75, rtol=1e-15)
    assert abs(kept.mean() - 0.75) < 0.03
    np.testing.assert_array_equal(g.numpy(), kept / 0.75)


def test_dropout_drops_infinities_to_zero():
    y = tf.nn.dropout(tf.fill([200], np.inf), 0.5, seed=1).numpy()
    assert set(np.unique(y).tolist()) == {0.0, np.inf}


def test_dropout_seeds_and_sequences():
    x = tf.ones([6, 7])
    tf.random.set_seed(11)
    a, b = tf.nn.dropout(x, 0.5, seed=2), tf.nn.dropout(x, 0.5, seed=2)
    tf.random.set_seed(11)
    a2 = tf.nn.dropout(x, 0.5, seed=2)
    np.testing.assert_array_equal(a.numpy(), a2.numpy())
    assert not np.array_equal(a.numpy(), b.numpy())  # each call draws the next flags


def test_dropout_rate_zero_tensor_rate_and_noise_shape():
    x = tf.constant(RNG.standard_normal((4, 6)).astype(np.float32))
    assert tf.nn.dropout(x, 0) is x
    y = tf.nn.dropout(x, tf.constant(0.5), noise_shape=[4, 1], seed=3).numpy()
    for row, orig in zip(y, x.numpy()):
        assert np.array_equal(row, 2 * orig) or np.array_equal(row, 0 * orig)
    y = tf.nn.dropout(x, 0.5, noise_shape=[None, 1], seed=3)
    assert y.shape == x.shape
    y = tf.nn.dropout(x, 0.5, noise_shape=tf.constant([1, 6]), seed=4).numpy()
    assert np.all((y == 0).all(0) | (y != 0).all(0))


@pytest.mark.parametrize("rate, error, match", [
    (1.0, ValueError, r"range \[0, 1\)"), (-0.1, ValueError, r"range \[0, 1\)"),
    (True, ValueError, r"range \[0, 1\)"), ("a", ValueError, "scalar"),
])
def test_dropout_bad_rates(rate, error, match):
    with pytest.raises(error, match=match):
        tf.nn.dropout(tf.ones([2]), rate)


def test_dropout_other_errors():
    with pytest.raises(ValueError, match="floating point"):
        tf.nn.dropout(tf.constant([1, 2]), 0.5)
    with pytest.raises(ValueError, match="scalar"):
        tf.nn.dropout(tf.ones([2]), tf.constant([0.5, 0.5]))
    with pytest.raises(ValueError, match="compatible"):
        tf.nn.dropout(tf.ones([2]), tf.constant(0.5, tf.float64))
    with pytest.raises(InvalidArgumentError, match="broadcast"):
        tf.nn.dropout(tf.ones([2, 3]), 0.5, noise_shape=[3, 3])
    with pytest.raises(InvalidArgumentError, match="more axes"):
        tf.nn.dropout(tf.ones([2, 3]), 0.5, noise_shape=[1, 2, 3])


def test_dropout_half_precision_keeps_the_dtype():
    for dtype in (tf.float16, tf.bfloat16):
        y = tf.nn.dropout(tf.ones([100], dtype), 0.5, seed=1)
        assert y.dtype == dtype
        assert set(np.unique(y.numpy().astype(np.float32)).tolist()) <= {0.0, 2.0}


def test_dropout_in_a_traced_function_draws_at_each_call_and_every_size():
    f = tf.function(lambda x: tf.nn.dropout(x, 0.5, seed=9),
                    input_signature=[tf.TensorSpec([None, 8])])
    first, second = f(tf.ones([16, 8])).numpy(), f(tf.ones([16, 8])).numpy()
    assert not np.array_equal(first, second)
    for n in (3, 5, 0, 1):
        y = f(tf.ones([n, 8])).numpy()
        assert y.shape == (n, 8) and set(np.unique(y).tolist()) <= {0.0, 2.0}
    assert f.get_concrete_function(tf.ones([16, 8])).serves_all_sizes
    tf.random.set_seed(4)
    a = f(tf.ones([5, 8])).numpy()
    tf.random.set_seed(4)
    np.testing.assert_array_equal(f(tf.ones([5, 8])).numpy(), a)  # the replay restarts too


def test_dropout_under_vmap_and_compiled():
    x = tf.ones([6, 50])
    y = tf.vectorized_map(lambda row: tf.nn.dropout(row, 0.5, seed=1), x).numpy()
    assert len({tuple(r) for r in y}) > 1  # each example its own flags
    pytest.importorskip("jax")  # the xla extra
    compiled = tf.function(lambda t: tf.nn.dropout(t, 0.5, seed=2), jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        z = compiled(x).numpy()
    assert set(np.unique(z).tolist()) == {0.0, 2.0}


# ---------------------------------------------------------------- activations
def test_silu_beta_gets_its_gradient_and_is_cast():
    x = tf.constant([-1., 0.5, 2.])
    beta = tf.Variable(1.5, dtype=tf.float64)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.nn.silu(x, beta))
    g = tape.gradient(y, beta)
    assert y.dtype == tf.float32 and g.dtype == tf.float64
    xs = x.numpy().astype(np.float64)
    s = 1 / (1 + np.exp(-1.5 * xs))
    np.testing.assert_allclose(g.numpy(), (xs ** 2 * s * (1 - s)).sum(), rtol=1e-5)
    assert tf.nn.swish is tf.nn.silu
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.nn.silu(tf.constant([1, 2]))


def test_softsign_derivative_at_zero_and_dtypes():
    _, g = numpy_value_and_grad(tf.nn.softsign, np.array([0., 1.]))
    np.testing.assert_allclose(g, [1., 0.25])
    assert tf.math.softsign(tf.constant([1.], tf.float16)).dtype == tf.float16
    with pytest.raises(InvalidArgumentError, match="int32"):
        tf.nn.softsign(tf.constant([1, 2]))


# ---------------------------------------------------------------- TensorFlow (peers)
@pytest.mark.peers
def test_against_tensorflow():
    real = pytest.importorskip("tensorflow")
    x = RNG.standard_normal((3, 4)).astype(np.float16)
    for ours, theirs in zip(tf.nn.moments(tf.constant(x), [1]),
                            real.nn.moments(real.constant(x), [1]), strict=True):
        np.testing.assert_array_equal(ours.numpy(), theirs.numpy())
    x32 = RNG.standard_normal((4, 3)).astype(np.float32)
    w = np.array([[1.], [0.], [2.], [0.5]], np.float32)
    for ours, theirs in zip(tf.nn.weighted_moments(tf.constant(x32), [1], tf.constant(w)),
                            real.nn.weighted_moments(real.constant(x32), [1], real.constant(w)),
                            strict=True):
        np.testing.assert_allclose(ours.numpy(), theirs.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(
        tf.nn.batch_normalization(tf.constant(x32), 0.5, 2., 0.1, 3., 1e-3).numpy(),
        real.nn.batch_normalization(real.constant(x32), 0.5, 2., 0.1, 3., 1e-3).numpy(),
        rtol=1e-6)
    z = np.array([[0., 0.], [3e-7, 4e-7], [3., 4.]], np.float32)
    np.testing.assert_allclose(tf.nn.l2_normalize(tf.constant(z), 1).numpy(),
                               real.nn.l2_normalize(real.constant(z), 1).numpy(), rtol=1e-6)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        np.testing.assert_array_equal(tf.nn.l2_normalize(tf.zeros([2], tf.float16)).numpy(),
                                      real.nn.l2_normalize(real.zeros([2], real.float16)).numpy())
    xb, beta = real.constant(x32), real.constant(1.7)
    with real.GradientTape() as tape:
        tape.watch([xb, beta])
        yr = real.reduce_sum(real.nn.silu(xb, beta))
    gr = tape.gradient(yr, [xb, beta])
    xt, bt = tf.constant(x32), tf.constant(1.7)
    with tf.GradientTape() as tape:
        tape.watch([xt, bt])
        yt = tf.reduce_sum(tf.nn.silu(xt, bt))
    for a, b in zip(tape.gradient(yt, [xt, bt]), gr, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5)
    np.testing.assert_allclose(tf.nn.softsign(tf.constant(x32)).numpy(),
                               real.nn.softsign(x32).numpy(), rtol=1e-6)


@pytest.mark.peers
def test_dropout_against_tensorflow_in_distribution():
    real = pytest.importorskip("tensorflow")
    x = np.ones((200, 50), np.float32)
    ours = tf.nn.dropout(tf.constant(x), 0.3, seed=1).numpy()
    theirs = real.nn.dropout(real.constant(x), 0.3, seed=1).numpy()
    assert set(np.unique(ours).tolist()) == set(np.unique(theirs).tolist())
    assert abs((ours == 0).mean() - (theirs == 0).mean()) < 0.02
    for bad in (1.0, -0.5):
        with pytest.raises(ValueError, match=r"\[0, 1\)"):
            real.nn.dropout(real.constant(x), bad)
        with pytest.raises(ValueError, match=r"\[0, 1\)"):
            tf.nn.dropout(tf.constant(x), bad)
