"""tf.nn beyond the op table: TensorFlow's values and subgradients at the activations'
kinks, stability at extreme inputs, the softmax family and the cross-entropies, bias_add
and l2_loss, and the errors bad arguments raise. Last, opt-in, the same calls against
TensorFlow itself, the pooling ops included.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops.nn import _erfc

from ops_helpers import numpy_value_and_grad

KINKS = [-1., 0., 3., 6., 7.]


# ------------------------------------------------------------------ activations
@pytest.mark.parametrize("f, value, slope", [
    (tf.nn.relu6, [0, 0, 3, 6, 6], [0, 0, 1, 0, 0]),
    (tf.nn.elu, [-0.63212055, 0, 3, 6, 7], [0.36787945, 1, 1, 1, 1]),
    (tf.nn.selu, [-1.1113307, 0, 3.152103, 6.304206, 7.354907],
     [0.64676857, 1.050701, 1.050701, 1.050701, 1.050701]),
    (tf.nn.leaky_relu, [-0.2, 0, 3, 6, 7], [0.2, 0.2, 1, 1, 1]),
    (tf.nn.gelu, [-0.15865526, 0, 2.9959502, 6, 7], [-0.08331549, 0.5, 1.0119456, 1, 1]),
    (tf.nn.softplus, [0.3132617, 0.6931472, 3.0485873, 6.0024757, 7.0009117],
     [0.26894143, 0.5, 0.95257413, 0.99752736, 0.99908894]),
])
def test_activations_match_tensorflow_including_the_kinks(f, value, slope):
    y, g = numpy_value_and_grad(f, np.float32(KINKS))  # TF
    assert y.dtype == np.float32
    np.testing.assert_allclose(y, value, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(g, slope, rtol=1e-6, atol=1e-7)


def test_relu6_and_leaky_relu_take_integers_as_tensorflow():
    assert tf.nn.relu6(tf.constant([1, -2, 8])).numpy().tolist() == [1, 0, 6]
    out = tf.nn.leaky_relu(tf.constant([1, -2]))  # TF casts to float32
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy(), [1., -0.4])


@pytest.mark.parametrize("f", [tf.nn.elu, tf.nn.selu, tf.nn.gelu, tf.nn.softmax, tf.nn.log_softmax])
def test_float_only_activations_reject_integers(f):
    with pytest.raises(InvalidArgumentError, match="int32"):
        f(tf.constant([1, 2]))


def test_elu_keeps_digits_for_tiny_negative_inputs():
    x = np.array([-1e-10, -1e-300])
    np.testing.assert_allclose(tf.nn.elu(tf.constant(x)).numpy(), np.expm1(x), rtol=1e-15)


def test_private_erfc_is_accurate_over_the_whole_range():
    x = np.concatenate([np.linspace(-6, 27, 20001), [0.0, 1e-300, -1e-8, 1.999999, 2.0]])
    want = np.array([math.erfc(v) for v in x])
    got = _erfc(x)
    normal = want > np.finfo(np.float64).tiny  # subnormal results carry few digits anyway
    assert np.max(np.abs(got[normal] - want[normal]) / want[normal]) < 1e-12
    np.testing.assert_allclose(got[~normal], want[~normal], rtol=0, atol=1e-320)


def test_gelu_keeps_its_tiny_negative_tail_and_agrees_with_erf():
    x = np.array([-10., -3., -0.5, 0.5, 3., 10.])
    want = [0.5 * v * math.erfc(-v / math.sqrt(2)) for v in x]
    np.testing.assert_allclose(tf.nn.gelu(tf.constant(x)).numpy(), want, rtol=1e-13)
    assert tf.nn.gelu(tf.constant(-10.0, tf.float64)).numpy() < 0  # 1 + erf would give 0


def test_gelu_approximate_is_the_tanh_form():
    x = np.linspace(-4, 4, 9)
    want = 0.5 * x * (1 + np.tanh(np.sqrt(2 / np.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(tf.nn.gelu(tf.constant(x), approximate=True).numpy(), want,
                               rtol=1e-14, atol=1e-15)


# ------------------------------------------------------------------ softmax family
def test_softmax_and_log_softmax_never_overflow():
    x = tf.constant([[1000., 0., -1000.], [-1e30, -1e30, 1e30]])
    np.testing.assert_array_equal(tf.nn.softmax(x).numpy(), [[1, 0, 0], [0, 0, 1]])
    ls = tf.nn.log_softmax(x).numpy()
    assert np.isfinite(ls).all()
    np.testing.assert_allclose(ls[0], [0., -1000., -2000.])


def test_log_softmax_keeps_the_digits_of_a_dominant_class():
    out = tf.nn.log_softmax(tf.constant([0., -40.], tf.float64)).numpy()
    np.testing.assert_allclose(out, [-math.exp(-40), -40.], rtol=1e-14)


def test_softmax_axis_and_gradient():
    x = np.random.default_rng(0).standard_normal((3, 4))
    s = tf.nn.softmax(tf.constant(x), axis=0).numpy()
    np.testing.assert_allclose(s.sum(0), np.ones(4))
    np.testing.assert_allclose(tf.math.softmax(tf.constant(x)).numpy().sum(1), np.ones(3))
    # sum of softmax is constant: its gradient vanishes
    _, g = numpy_value_and_grad(lambda t: tf.reduce_sum(tf.nn.softmax(t)), x)
    np.testing.assert_allclose(g, 0, atol=1e-15)


def test_softmax_rejects_scalars_and_bad_axes():
    with pytest.raises(InvalidArgumentError, match="rank >= 1"):
        tf.nn.softmax(tf.constant(1.))
    with pytest.raises(InvalidArgumentError, match="axis"):
        tf.nn.log_softmax(tf.zeros([2, 3]), axis=2)


def test_softmax_of_an_empty_axis_is_empty():
    assert tf.nn.softmax(tf.zeros([2, 0])).shape == (2, 0)
    assert tf.nn.log_softmax(tf.zeros([0, 3])).shape == (0, 3)


# ------------------------------------------------------------------ losses
def test_sigmoid_cross_entropy_is_stable_and_has_tensorflows_gradient_at_zero():
    z = tf.constant([1., 0., 1., 0., 0.5])
    x = tf.constant([0., 0., 1000., 1000., -1000.])
    with tf.GradientTape() as tape:
        tape.watch([z, x])
        loss = tf.nn.sigmoid_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(loss.numpy(), [math.log(2), math.log(2), 0., 1000., 500.],
                               rtol=1e-6)
    gz, gx = tape.gradient(loss, [z, x])
    np.testing.assert_allclose(gx.numpy(), [-0.5, 0.5, 0., 1., -0.5])  # sigmoid(x) - z
    np.testing.assert_allclose(gz.numpy(), [0., 0., -1000., -1000., 1000.])  # -x


def test_sigmoid_cross_entropy_needs_equal_shapes():
    with pytest.raises(InvalidArgumentError, match="same shape"):  # TF: ValueError
        tf.nn.sigmoid_cross_entropy_with_logits(tf.constant([1., 0.]), tf.constant([0., 0., 1.]))
    with pytest.raises(ValueError, match="both"):
        tf.nn.sigmoid_cross_entropy_with_logits(logits=tf.constant([1.]))


def test_softmax_cross_entropy_broadcasts_and_differentiates_the_labels():
    z, x = tf.constant([[0., 1.]]), tf.constant([[1., 2.], [3., 4.]])
    with tf.GradientTape() as tape:
        tape.watch([z, x])
        loss = tf.nn.softmax_cross_entropy_with_logits(labels=z, logits=x)
    np.testing.assert_allclose(loss.numpy(), [0.31326166, 0.31326166], rtol=1e-6)  # TF
    gz = tape.gradient(loss, z)
    np.testing.assert_allclose(gz.numpy(), -tf.nn.log_softmax(x).numpy().sum(0, keepdims=True),
                               rtol=1e-6)


def test_softmax_cross_entropy_axis():
    rng = np.random.default_rng(1)
    z, x = rng.dirichlet(np.ones(3), 4).T, rng.standard_normal((3, 4))
    got = tf.nn.softmax_cross_entropy_with_logits(tf.constant(z), tf.constant(x), axis=0)
    want = tf.nn.softmax_cross_entropy_with_logits(tf.constant(z.T), tf.constant(x.T))
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-14)


def test_sparse_softmax_cross_entropy_value_and_gradient():
    x = tf.constant([[1., 2., 3.]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([1]), x)
    np.testing.assert_allclose(loss.numpy(), [1.4076059], rtol=1e-6)  # TF
    np.testing.assert_allclose(tape.gradient(loss, x).numpy(),
                               [[0.09003057, -0.75527155, 0.66524094]], rtol=1e-6)  # TF


@pytest.mark.parametrize("shape,classes", [((640,), 1000), ((3, 70), 100), ((20,), 1000)])
def test_sparse_softmax_cross_entropy_large_batches_against_numpy(shape, classes):
    # Batches of 16k label-class pairs or more build the one-hot rows by writing ones.
    rng = np.random.default_rng(5)
    z = rng.integers(0, classes, shape).astype(np.int32)
    x = rng.standard_normal(shape + (classes,))
    with tf.GradientTape() as tape:
        xt = tf.constant(x)
        tape.watch(xt)
        loss = tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant(z), xt)
    lse = np.log(np.exp(x).sum(-1))
    want = lse - np.take_along_axis(x, z[..., None], -1)[..., 0]
    np.testing.assert_allclose(loss.numpy(), want, rtol=1e-12)
    hot = np.arange(classes) == z[..., None]
    np.testing.assert_allclose(tape.gradient(loss, xt).numpy(),
                               np.exp(x - lse[..., None]) - hot, rtol=1e-12, atol=1e-15)
    with pytest.raises(InvalidArgumentError, match=f"label value of {classes}"):
        bad = z.copy()
        bad.reshape(-1)[-1] = classes
        tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant(bad), xt)


@pytest.mark.parametrize("labels", [[5], [-1]])
def test_sparse_softmax_cross_entropy_rejects_out_of_range_labels(labels):
    with pytest.raises(InvalidArgumentError, match="outside the valid range of \\[0, 2\\)"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant(labels), tf.constant([[1., 2.]]))


def test_sparse_softmax_cross_entropy_checks_every_example_under_vmap():
    f = lambda z, x: tf.nn.sparse_softmax_cross_entropy_with_logits(z, x)  # noqa: E731
    logits = tf.zeros([2, 3, 4])
    tf.vmap(f)(tf.constant([[0, 1, 2], [3, 2, 1]]), logits)  # in range: fine
    with pytest.raises(InvalidArgumentError, match="label value of 4"):
        tf.vmap(f)(tf.constant([[0, 1, 2], [4, 2, 1]]), logits)  # example 0 is valid


def test_sparse_softmax_cross_entropy_argument_errors():
    with pytest.raises(InvalidArgumentError, match="shape of `labels`"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([0, 1]), tf.zeros([3, 2]))
    with pytest.raises(TypeError, match="int32 or int64"):
        tf.nn.sparse_softmax_cross_entropy_with_logits(tf.constant([0.]), tf.zeros([1, 2]))


def test_bias_add_formats_gradient_and_errors():
    x = tf.zeros([2, 3, 4, 5])
    np.testing.assert_array_equal(tf.nn.bias_add(x, tf.ones([5])).numpy(), np.ones((2, 3, 4, 5)))
    nchw = tf.nn.bias_add(tf.zeros([2, 3, 4, 5]), tf.constant([1., 2., 3.]), data_format="NCHW")
    np.testing.assert_array_equal(nchw.numpy()[0, :, 0, 0], [1., 2., 3.])
    b = tf.constant([1., 2., 3., 4., 5.])
    with tf.GradientTape() as tape:
        tape.watch(b)
        y = tf.nn.bias_add(x, b)
    np.testing.assert_array_equal(tape.gradient(y, b).numpy(), np.full(5, 24.))
    with pytest.raises(InvalidArgumentError, match="as many biases"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.constant([1., 2.]))
    with pytest.raises(InvalidArgumentError, match="1-D"):
        tf.nn.bias_add(tf.ones([2, 3]), tf.ones([1, 3]))


def test_l2_loss():
    out = tf.nn.l2_loss(tf.constant([1., 2.]))
    assert out.shape == () and out.dtype == tf.float32 and float(out) == 2.5


# ------------------------------------------------------------------ against TensorFlow itself
# Opt-in (`-m peers`, in an environment with TensorFlow): the same calls, with `tf` bound to
# either library, must give the same values, gradients and second derivatives.
POOLS = [(k, s, pad) for k in (2, 3, [2, 3]) for s in (1, 2, [1, 2]) for pad in ("SAME", "VALID")]

PEER_CASES = [
    ("relu6", lambda m, x: m.nn.relu6(x * 4.), 1),
    ("elu", lambda m, x: m.nn.elu(x), 1),
    ("selu", lambda m, x: m.nn.selu(x), 1),
    ("gelu", lambda m, x: m.nn.gelu(x * 3.), 1),
    ("gelu_tanh", lambda m, x: m.nn.gelu(x * 3., approximate=True), 1),
    ("leaky_relu", lambda m, x: m.nn.leaky_relu(x, alpha=0.3), 1),
    ("softplus", lambda m, x: m.nn.softplus(x * 10.), 1),
    ("softmax", lambda m, x: m.nn.softmax(x * 5., axis=1), 1),
    ("log_softmax", lambda m, x: m.nn.log_softmax(x * 5.), 1),
    ("sigmoid_xent", lambda m, z, x: m.nn.sigmoid_cross_entropy_with_logits(
        labels=m.sigmoid(z), logits=x * 5.), 2),
    ("softmax_xent", lambda m, z, x: m.nn.softmax_cross_entropy_with_logits(
        labels=m.nn.softmax(z, axis=2), logits=x, axis=2), 2),
    ("sparse_xent", lambda m, x: m.nn.sparse_softmax_cross_entropy_with_logits(
        labels=m.constant(np.arange(30).reshape(2, 3, 5) % 4), logits=x), 1),
    ("bias_add", lambda m, x, b: m.nn.bias_add(x, b[0, 0, 0]), 2),
    ("l2_loss", lambda m, x: m.nn.l2_loss(x), 1),
] + [(f"{pool}_{k}_{s}_{pad}",
       lambda m, x, pool=pool, k=k, s=s, pad=pad: getattr(m.nn, pool)(x, k, s, pad), 1)
      for pool in ("max_pool2d", "avg_pool2d") for k, s, pad in POOLS]


def _derivatives(m, fn, xs, u, v):
    """Value, VJP with cotangent u, and the derivative of <VJP, v> (second order)."""
    xs = [m.constant(x) for x in xs]
    with m.GradientTape() as outer:
        outer.watch(xs)
        with m.GradientTape() as inner:
            inner.watch(xs)
            y = fn(m, *xs)
        grads = inner.gradient(y, xs, output_gradients=m.constant(u))
        dot = sum(m.reduce_sum(g * m.constant(v)) for g in grads)
    second = outer.gradient(dot, xs, unconnected_gradients="zero")
    return [np.asarray(a) for a in [y, *grads, *second]]


@pytest.mark.peers
@pytest.mark.parametrize("name, fn, arity", PEER_CASES, ids=[c[0] for c in PEER_CASES])
def test_matches_tensorflow(name, fn, arity):
    real_tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal((2, 3, 5, 4)) for _ in range(arity)]
    u = rng.standard_normal(np.shape(fn(tf, *[tf.constant(x) for x in xs])))
    v = rng.standard_normal(xs[0].shape)
    ours = _derivatives(tf, fn, xs, u, v)
    theirs = _derivatives(real_tf, fn, xs, u, v)
    # In float64, TensorFlow's erfc (inside its gelu) is good to ~1e-8 only (ours to ~1e-13),
    # and it rounds leaky_relu's alpha and the tanh gelu's 0.044715 to float32.
    rtol = {"gelu": 1e-6, "gelu_tanh": 1e-6, "leaky_relu": 1e-7}.get(name, 1e-9)
    if name == "softmax_xent":
        # TensorFlow's second derivative misses the labels' path through the logits'
        # gradient (softmax - labels); ours is checked against finite differences.
        del ours[3], theirs[3]
    for a, b in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(a, b, rtol=rtol, atol=1e-12)


# ------------------------------------------------------------------ clipping by norms
def test_clip_by_norm_as_tensorflow():
    t = tf.constant([[3., 4.], [0., 0.]])
    # TF 2.21: [[1.2 1.6] [0 0]] for clip 2 (all axes and axes=[1]); clip [1, 2] per
    # column: [[0.6 1.6] [0 0]]; a negative clip_norm counts as 0.
    np.testing.assert_allclose(tf.clip_by_norm(t, 2.), [[1.2, 1.6], [0, 0]], rtol=1e-6)
    np.testing.assert_allclose(tf.clip_by_norm(t, 2., axes=[1]), [[1.2, 1.6], [0, 0]], rtol=1e-6)
    np.testing.assert_allclose(tf.clip_by_norm(t, [1., 2.]), [[0.6, 1.6], [0, 0]], rtol=1e-6)
    np.testing.assert_array_equal(tf.clip_by_norm(t, -1.), np.zeros((2, 2)))
    np.testing.assert_array_equal(tf.clip_by_norm(t, 10.), t)
    out = tf.clip_by_norm(tf.constant([3., 4.], tf.float64), tf.constant(2.))
    assert out.dtype == tf.float64
    np.testing.assert_allclose(out, [1.2, 1.6])


def test_clip_by_norm_gradients_as_tensorflow():
    # TF 2.21: at a zero norm the gradient of sum(clip_by_norm(z, 1)) is [1, 1] (no NaN);
    # at z = [3, 4] with weights [1, 2]: [-0.064, 0.048]; d/d clip_norm of the sum: 1.4.
    z = tf.Variable([0., 0.])
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.clip_by_norm(z, 1.))
    np.testing.assert_array_equal(tape.gradient(y, z), [1., 1.])
    z, c = tf.Variable([3., 4.]), tf.Variable(1.)
    with tf.GradientTape(persistent=True) as tape:
        y = tf.reduce_sum(tf.clip_by_norm(z, c) * tf.constant([1., 2.]))
        y2 = tf.reduce_sum(tf.clip_by_norm(z, c))
    np.testing.assert_allclose(tape.gradient(y, z), [-0.064, 0.048], rtol=1e-5)
    np.testing.assert_allclose(tape.gradient(y2, c), 1.4, rtol=1e-6)
    tf.testing.check_grads(lambda t: tf.clip_by_norm(t, 1.5, axes=0),
                           [np.array([[3., 0.1], [4., 0.2]])], order=2)


def test_global_norm_and_clip_by_global_norm_as_tensorflow():
    a, b = tf.constant([3., 4.]), tf.constant([[12.]])
    assert float(tf.linalg.global_norm([a, None, b])) == 13.0
    empty = tf.linalg.global_norm([])
    assert empty.dtype == tf.float32 and float(empty) == 0.0
    assert float(tf.linalg.global_norm([[3., 4.]])) == 5.0
    clipped, norm = tf.clip_by_global_norm([a, None, b], 6.5)
    np.testing.assert_allclose(clipped[0], [1.5, 2.])
    assert clipped[1] is None
    np.testing.assert_allclose(clipped[2], [[6.]])
    assert float(norm) == 13.0
    # TF 2.21: an inf or NaN global norm makes every output NaN; a negative clip_norm
    # leaves the values as they are; use_norm replaces the norm; dtypes follow the values.
    for bad in (np.inf, np.nan):
        with np.errstate(invalid="ignore"):
            out, _ = tf.clip_by_global_norm([tf.constant([bad, 1.])], 1.)
        assert np.isnan(out[0].numpy()).all()
    np.testing.assert_array_equal(tf.clip_by_global_norm([a], -1.)[0][0], [3., 4.])
    np.testing.assert_allclose(tf.clip_by_global_norm([a], 1., use_norm=10.)[0][0], [0.3, 0.4],
                               rtol=1e-6)
    out, norm = tf.clip_by_global_norm((tf.constant([3., 4.], tf.float64),), 1.)
    assert isinstance(out, list) and out[0].dtype == norm.dtype == tf.float64


def test_clip_by_global_norm_gradients_as_tensorflow():
    # TF 2.21: [0.2, 0.2] and [0.536, 0.848]; at an all-zero list the gradient is NaN
    # (global_norm has no safe where in TensorFlow).
    za, zb = tf.Variable([0., 0.]), tf.Variable([3., 4.])
    with tf.GradientTape() as tape:
        (ca, cb), n = tf.clip_by_global_norm([za, zb], 1.)
        y = tf.reduce_sum(ca) + tf.reduce_sum(cb * tf.constant([1., 2.])) + n
    ga, gb = tape.gradient(y, [za, zb])
    np.testing.assert_allclose(ga, [0.2, 0.2], rtol=1e-6)
    np.testing.assert_allclose(gb, [0.536, 0.848], rtol=1e-5)
    zz = tf.Variable([0., 0.])
    with tf.GradientTape(persistent=True) as tape, np.errstate(all="ignore"):
        (c,), n = tf.clip_by_global_norm([zz], 1.)
        y = tf.reduce_sum(c)
        yn = tf.linalg.global_norm([zz])
        assert np.isnan(tape.gradient(y, zz).numpy()).all()
        assert np.isnan(tape.gradient(yn, zz).numpy()).all()


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.linalg.global_norm(tf.constant([1.])), TypeError, "t_list.*sequence.*Tensor"),
    (lambda: tf.clip_by_global_norm(tf.constant([1.]), 1.), TypeError, "t_list.*sequence"),
    (lambda: tf.linalg.global_norm("ab"), TypeError, "t_list"),
    (lambda: tf.linalg.global_norm([tf.constant([1])]), InvalidArgumentError,
     r"t_list\[0\].*int32"),
    (lambda: tf.linalg.global_norm([tf.constant([1.]), tf.constant([1.], tf.float64)]),
     InvalidArgumentError, "float32 and float64"),
    (lambda: tf.clip_by_norm(tf.constant([3, 4]), 2), InvalidArgumentError, "`t`.*int32"),
    (lambda: tf.clip_by_norm(tf.constant([3., 4.]), tf.ones([2, 2])), ValueError, "clip_norm"),
    (lambda: tf.clip_by_norm(tf.constant([3., 4.]), 1., axes=2), InvalidArgumentError, "axes"),
])
def test_clipping_bad_input(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_relu_keeps_its_output_and_lets_the_pre_activation_go():
    """relu's derivative reads its output (as TensorFlow's ReluGrad): under a tape the
    pre-activation is freed once the program drops it, and the gradient is [x > 0]."""
    import gc
    import weakref

    x = tf.constant([-1.0, 0.0, 2.0, np.nan, -0.0, np.inf])
    with tf.GradientTape() as tape:
        tape.watch(x)
        pre = x * 3.0
        y = tf.nn.relu(pre)
        gone = weakref.ref(pre)
        del pre
    gc.collect()
    assert gone() is None
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0, 0, 3, 0, 0, 3])
