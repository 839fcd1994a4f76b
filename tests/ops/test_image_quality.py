"""tf.image's quality measures beyond the op table: psnr, ssim (and its index map) and
ssim_multiscale against NumPy at TensorFlow's defaults (an 11-tap window, five scales),
integer and half-precision images, broadcasting leading dimensions, equal images,
`max_val`, `k1`, `k2` and `power_factors` as tensors, the errors, traced functions with
open sizes, vmap, and (marked peers) the same against TensorFlow itself.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops.image_quality import _psnr, _ssim, _ssim_multiscale
from tapeflow.testing import check_grads

import op_table  # noqa: F401 - joins the tables (table_image_quality is one of them) first
from table_image_quality import images, np_psnr, np_ssim, np_ssim_multiscale

WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


def _pair(shape, seed=0, shape2=None):
    """Two images in [0, 1] that look alike (float64)."""
    x, y, _ = images(shape, shape2)(np.random.default_rng(seed))
    return np.clip(x, 0, 1), np.clip(y, 0, 1)


# ------------------------------------------------------------------ values
@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_values_against_numpy_at_the_defaults(dt):
    x, y = _pair((2, 20, 23, 3))
    xs, ys = x.astype(dt), y.astype(dt)
    for got, want in [(tf.image.psnr(xs, ys, 1.0), np_psnr(x, y, 1.0)),
                      (tf.image.ssim(xs, ys, 1.0), np_ssim(x, y, 1.0)),
                      (tf.image.ssim(xs, ys, 1.0, return_index_map=True),
                       np_ssim(x, y, 1.0, index_map=True)),
                      (tf.image.ssim(xs, ys, 2.0, 4, -0.8, 0.02, 0.05),
                       np_ssim(x, y, 2.0, 4, 0.8, 0.02, 0.05))]:
        assert got.dtype == tf.float32 and got.shape == want.shape
        np.testing.assert_allclose(got.numpy(), want, rtol=2e-6, atol=2e-6)
    x, y = _pair((1, 161, 170, 2), seed=1)  # the least size five scales of 11 taps take
    got = tf.image.ssim_multiscale(x.astype(dt), y.astype(dt), 1.0)
    assert got.dtype == tf.float32 and got.shape == (1,)
    # float32 window sums over 161 x 170 pixels stray by a few 1e-6
    np.testing.assert_allclose(got.numpy(), np_ssim_multiscale(x, y, 1.0, WEIGHTS),
                               rtol=2e-5 if dt == np.float32 else 2e-7)


def test_multiscale_at_odd_sizes_and_its_arguments():
    x, y = _pair((2, 13, 11, 2), seed=2)
    got = tf.image.ssim_multiscale(x, y, 1.5, (0.2, 0.3, 0.5), 3, 0.9, 0.02, 0.05)
    np.testing.assert_allclose(got.numpy(), np_ssim_multiscale(x, y, 1.5, (0.2, 0.3, 0.5), 3,
                                                               0.9, 0.02, 0.05), rtol=1e-6)
    one = tf.image.ssim_multiscale(x, y, 1.0, [1.0], filter_size=5)
    np.testing.assert_allclose(one.numpy(), tf.image.ssim(x, y, 1.0, filter_size=5).numpy(),
                               rtol=1e-6)
    as_tensor = tf.image.ssim_multiscale(x, y, 1.0, tf.constant([0.5, 0.5]), filter_size=3)
    as_list = tf.image.ssim_multiscale(x, y, 1.0, [0.5, 0.5], filter_size=3)
    np.testing.assert_allclose(as_tensor.numpy(), as_list.numpy(), rtol=1e-7)


def test_equal_images():
    x, _ = _pair((2, 12, 12, 3), seed=3)
    with np.errstate(divide="ignore"):
        assert np.isinf(tf.image.psnr(x, x, 1.0).numpy()).all()
    np.testing.assert_allclose(tf.image.ssim(x, x, 1.0).numpy(), 1., rtol=1e-6)
    np.testing.assert_allclose(
        tf.image.ssim_multiscale(x, x, 1.0, (0.5, 0.5), 3).numpy(), 1., rtol=1e-6)


def test_integer_images_are_scaled_as_tensorflows_convert_image_dtype():
    x, y = _pair((2, 16, 17, 3), seed=4)
    u8 = [np.round(v * 255).astype(np.uint8) for v in (x, y)]
    scaled = [v.astype(np.float32) / np.float32(255) for v in u8]
    for op, kw in [(tf.image.psnr, {}), (tf.image.ssim, {}),
                   (tf.image.ssim_multiscale, {"power_factors": (0.5, 0.5), "filter_size": 3})]:
        got, want = op(*u8, 255, **kw), op(*scaled, 1.0, **kw)
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5)
    # max_val in the images' dtype: 255 of an int32 image is a sliver of its range (TF)
    i32 = [v.astype(np.int32) for v in u8]
    got = tf.image.psnr(*i32, 255).numpy()
    want = np_psnr(*(v / (2. ** 31 - 1) for v in i32), 255 / (2. ** 31 - 1))
    np.testing.assert_allclose(got, want, rtol=1e-5)
    u = [tf.constant(v) for v in u8]
    with pytest.warns(UserWarning, match="uint8"):  # watching and asking for an integer
        with tf.GradientTape() as tape:
            tape.watch(u)
            s = tf.image.ssim(*u, 255)
        assert tape.gradient(s, u) == [None, None]  # integer images carry no gradient


@pytest.mark.parametrize("dt", ["float16", "bfloat16", "float64"])
def test_other_float_dtypes_give_float32(dt):
    x, y = _pair((2, 14, 15, 2), seed=5)
    xs, ys = tf.cast(x, getattr(tf, dt)), tf.cast(y, getattr(tf, dt))
    # half types are converted to float32 first, as TensorFlow's; float64 is computed in
    # float64, so its values are the float64 reference's rounded
    xr, yr = (v.numpy().astype(np.float64) for v in (xs, ys))
    tol = 1e-7 if dt == "float64" else 2e-6
    for got, want in [(tf.image.psnr(xs, ys, 1.0), np_psnr(xr, yr, 1.0)),
                      (tf.image.ssim(xs, ys, 1.0), np_ssim(xr, yr, 1.0)),
                      (tf.image.ssim_multiscale(xs, ys, 1.0, (0.5, 0.5), 3),
                       np_ssim_multiscale(xr, yr, 1.0, (0.5, 0.5), 3))]:
        assert got.dtype == tf.float32
        np.testing.assert_allclose(got.numpy(), want, rtol=tol)


def test_leading_dimensions_broadcast():
    x, y = _pair((9, 10, 2), seed=6, shape2=(3, 9, 10, 2))
    for op, kw, shape in [(tf.image.psnr, {}, (3,)), (tf.image.ssim, {"filter_size": 3}, (3,)),
                          (tf.image.ssim, {"filter_size": 3, "return_index_map": True},
                           (3, 7, 8)),
                          (tf.image.ssim_multiscale, {"power_factors": (.5, .5),
                                                      "filter_size": 3}, (3,))]:
        got = op(x, y, 1.0, **kw)
        want = op(np.broadcast_to(x, y.shape), y, 1.0, **kw)
        assert got.shape == shape
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6)
    a, b = _pair((2, 1, 9, 10, 1), seed=7, shape2=(3, 9, 10, 1))
    got = tf.image.ssim_multiscale(a, b, 1.0, (.5, .5), 3)
    assert got.shape == (2, 3)
    np.testing.assert_allclose(got.numpy(), np_ssim_multiscale(a, b, 1.0, (.5, .5), 3), rtol=1e-6)
    assert tf.image.ssim(a[0, 0], b, 1.0, 3).shape == (3,)
    assert tf.image.ssim(a[0, 0], b, 1.0, 3, return_index_map=True).shape == (3, 7, 8)
    assert tf.image.ssim(a[0, 0], b[1], 1.0, 3).shape == ()


def test_max_val_k1_k2_and_power_factors_as_tensors_get_gradients():
    x, y = (tf.constant(v) for v in _pair((2, 9, 9, 1), seed=8))
    m, k1, p = tf.constant(1.2, tf.float64), tf.constant(0.05, tf.float64), tf.constant([.4, .6])
    with tf.GradientTape(persistent=True) as tape:
        tape.watch([m, k1, p])
        s = tf.image.ssim(x, y, m, filter_size=3, k1=k1)
        q = tf.image.psnr(x, y, m)
        ms = tf.image.ssim_multiscale(x, y, m, p, filter_size=3)
    for out, var in [(s, m), (s, k1), (q, m), (ms, p), (ms, m)]:
        g = tape.gradient(out, var)
        assert g is not None and g.dtype == var.dtype and np.isfinite(g.numpy()).all()
    np.testing.assert_allclose(tape.gradient(q, m).numpy(), 2 * 20 / np.log(10) / 1.2, rtol=1e-6)
    # a max_val per image broadcasts with psnr's result
    per_image = tf.image.psnr(x, y, [1.0, 2.0]).numpy()
    np.testing.assert_allclose(per_image[1] - tf.image.psnr(x, y, 1.0).numpy()[1],
                               20 * np.log10(2), rtol=1e-5)


def test_check_grads_in_float64():
    rng = np.random.default_rng(9)
    x, y, m = images((2, 12, 11, 2))(rng)
    check_grads(lambda a, b, c: _psnr(a, b, c), [x, y, m], order=2)
    check_grads(lambda a, b, c: _ssim(a, b, c, 5, 1.1, 0.05, 0.1), [x, y, m], order=2)
    check_grads(lambda a, b, c: _ssim_multiscale(a, b, c, (0.3, 0.7), 3, 1.0, 0.05, 0.1),
                [x, y, m], order=1)
    # the public op's gradient flows back in the images' dtype
    xs = tf.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xs)
        s = tf.reduce_sum(tf.image.ssim(xs, y, 1.0, filter_size=5))
    g = tape.gradient(s, xs)
    assert g.dtype == tf.float64 and g.shape == x.shape


def test_empty_batches_and_channels():
    x, y = _pair((2, 12, 12, 3), seed=10)
    assert tf.image.ssim(x[:0], y[:0], 1.0).shape == (0,)
    assert tf.image.psnr(x[:0], y[:0], 1.0).shape == (0,)
    assert tf.image.ssim_multiscale(x[:0], y[:0], 1.0, (.5, .5), 3).shape == (0,)
    # no channel to average: nan, as TensorFlow's
    with np.errstate(all="ignore"):
        assert np.isnan(tf.image.ssim(x[..., :0], y[..., :0], 1.0).numpy()).all()
        assert np.isnan(tf.image.psnr(x[..., :0], y[..., :0], 1.0).numpy()).all()


# ------------------------------------------------------------------ errors
X = np.zeros((2, 16, 17, 3), np.float32)


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.image.ssim(X[0, 0], X[0, 0], 1.0), InvalidArgumentError,
     r"`img1` must have rank at least 3 .* got shape \(17, 3\)"),
    (lambda: tf.image.psnr(X[0, 0], X[0, 0], 1.0), InvalidArgumentError, "`a` must have rank"),
    (lambda: tf.image.ssim(X[:, :15], X, 1.0), InvalidArgumentError,
     r"same height, width and channels; got shapes \(2, 15, 17, 3\) and \(2, 16, 17, 3\)"),
    (lambda: tf.image.psnr(X[..., :1], X, 1.0), InvalidArgumentError, "same height, width"),
    (lambda: tf.image.ssim(X, np.concatenate([X, X, X]), 1.0), InvalidArgumentError,
     "leading .* must broadcast"),
    (lambda: tf.image.ssim(X, X.astype(np.float64), 1.0), InvalidArgumentError,
     "same dtype; got float32 and float64"),
    (lambda: tf.image.ssim(X[:, :8], X[:, :8], 1.0), InvalidArgumentError,
     r"images are 8x17 \(shape \(2, 8, 17, 3\)\); they must be at least filter_size=11"),
    (lambda: tf.image.ssim_multiscale(X, X, 1.0), InvalidArgumentError,
     r"at scale 1 of 5 the images are 8x9, less than filter_size=11: each scale halves "
     "them, so the images must be at least 161 high and wide"),
    (lambda: tf.image.ssim_multiscale(X, X, 1.0, filter_size=3), InvalidArgumentError,
     "at scale 3 of 5 the images are 2x3, .* at least 33 high"),
    (lambda: tf.image.ssim_multiscale(X, X, 1.0, power_factors=[], filter_size=3),
     InvalidArgumentError, "non-empty"),
    (lambda: tf.image.ssim_multiscale(X, X, 1.0, power_factors=[[.5, .5]], filter_size=3),
     InvalidArgumentError, r"one per scale; got shape \(1, 2\)"),
    (lambda: tf.image.ssim(X, X, 1.0, filter_size=0), InvalidArgumentError, "at least 1"),
    (lambda: tf.image.ssim(X, X, 1.0, filter_size=3.0), TypeError, "filter_size"),
    (lambda: tf.image.ssim(X, X, 1.0, filter_sigma=0.0), InvalidArgumentError, "nonzero"),
    (lambda: tf.image.ssim(X, X, 1.0, filter_sigma="a"), TypeError, "filter_sigma"),
    (lambda: tf.image.ssim(X > 0, X > 0, 1), AttributeError, "floating point or integer"),
    (lambda: tf.image.psnr(X, X, "a"), TypeError, "`max_val` must be a real number"),
    (lambda: tf.image.psnr(X, X, tf.constant([True])), InvalidArgumentError, "`max_val` has"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ traced, batched
def _measures(x, y):
    return [tf.image.psnr(x, y, 1.0), tf.image.ssim(x, y, 1.0, filter_size=5),
            tf.image.ssim(x, y, 1.0, filter_size=4, return_index_map=True),
            tf.image.ssim_multiscale(x, y, 1.0, (0.3, 0.3, 0.4), filter_size=3)]


@pytest.mark.parametrize("dt", [tf.float32, tf.float64])
def test_an_open_batch_size_gives_eager_values(dt):
    spec = [tf.TensorSpec([None, 13, 11, 2], dt)] * 2
    f = tf.function(_measures, input_signature=spec)
    for n in (1, 2, 3, 5):
        x, y = (v.astype(dt.as_numpy_dtype) for v in _pair((n, 13, 11, 2), seed=n))
        for got, want in zip(f(x, y), _measures(tf.constant(x), tf.constant(y))):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)


def test_open_heights_and_widths_give_eager_values():
    f = tf.function(_measures, input_signature=[tf.TensorSpec([None, None, None, 1])] * 2)
    for shape in [(1, 9, 10, 1), (2, 12, 13, 1), (3, 10, 11, 1), (5, 9, 9, 1), (2, 12, 13, 1)]:
        x, y = (v.astype(np.float32) for v in _pair(shape, seed=shape[1]))
        for got, want in zip(f(x, y), _measures(tf.constant(x), tf.constant(y))):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-7)
    with pytest.raises(InvalidArgumentError, match="less than filter_size=3"):
        f(np.zeros((1, 9, 8, 1), np.float32), np.ones((1, 9, 8, 1), np.float32))


def test_vmap_over_images_is_the_batch():
    x, y = (tf.constant(v) for v in _pair((3, 9, 10, 2), seed=11))
    for op in (lambda a, b: tf.image.ssim(a, b, 1.0, filter_size=3),
               lambda a, b: tf.image.psnr(a, b, 1.0),
               lambda a, b: tf.image.ssim_multiscale(a, b, 1.0, (.5, .5), 3)):
        np.testing.assert_allclose(tf.vmap(op)(x, y).numpy(), op(x, y).numpy(), rtol=1e-6)


def test_compiled_measures_and_gradients_match_eager():
    pytest.importorskip("jax")
    x, y = (tf.constant(v, tf.float32) for v in _pair((2, 13, 11, 2), seed=12))

    def run(a, b):
        with tf.GradientTape() as tape:
            tape.watch(a)
            out = _measures(a, b)
            total = tf.add_n([tf.reduce_sum(v) for v in out])
        return out + [tape.gradient(total, a)]

    f = tf.function(run, jit_compile=True)
    for got, want in zip(f(x, y), run(x, y)):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ against TensorFlow
def _tensorflow():
    return pytest.importorskip("tensorflow")


def _as(real, v, dt):
    return real.image.convert_image_dtype(v.astype(np.float32), dt).numpy()


@pytest.mark.peers
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16", "uint8", "int32",
                                "uint16"])
def test_peers_values(dt):
    real = _tensorflow()
    top = 1.0 if "float" in dt else 255
    cases = [((2, 20, 23, 3), None, {}), ((9, 10, 2), (3, 9, 10, 2), {"filter_size": 3}),
             ((2, 13, 11, 1), None, {"filter_size": 4, "filter_sigma": -0.8, "k1": 0.02,
                                     "k2": 0.05})]
    for seed, (shape, shape2, kw) in enumerate(cases):
        x, y = (_as(real, v, dt) for v in _pair(shape, seed, shape2))
        for op, extra in [("psnr", {}), ("ssim", kw), ("ssim", dict(kw, return_index_map=True))]:
            want = getattr(real.image, op)(x, y, top, **extra)
            got = getattr(tf.image, op)(x, y, top, **extra)
            assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape)
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)
    x, y = (_as(real, v, dt) for v in _pair((2, 13, 11, 2), 5))
    for kw in ({"power_factors": (0.2, 0.3, 0.5), "filter_size": 3},
               {"power_factors": [1.0], "filter_size": 5, "filter_sigma": 0.7},
               {"power_factors": (0.6, 0.4), "filter_size": 4, "k1": 0.03, "k2": 0.06}):
        want = real.image.ssim_multiscale(x, y, top, **kw)
        got = tf.image.ssim_multiscale(x, y, top, **kw)
        assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=2e-5, atol=2e-5)


@pytest.mark.peers
def test_peers_multiscale_at_the_defaults():
    real = _tensorflow()
    for shape in [(1, 161, 170, 3), (2, 176, 181, 1)]:
        x, y = (v.astype(np.float32) for v in _pair(shape, shape[1]))
        want = real.image.ssim_multiscale(x, y, 1.0).numpy()
        # TensorFlow's float32 sums stray by up to about 1e-5 from the float64 values
        np.testing.assert_allclose(tf.image.ssim_multiscale(x, y, 1.0).numpy(), want, rtol=2e-5)


@pytest.mark.peers
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_peers_gradients(dt):
    real = _tensorflow()
    x, y = (v.astype(dt) for v in _pair((2, 13, 12, 2), 12))
    calls = [lambda m, a, b, t: m.image.psnr(a, b, t),
             lambda m, a, b, t: m.image.ssim(a, b, t, filter_size=5),
             lambda m, a, b, t: m.image.ssim(a, b, t, filter_size=4, return_index_map=True),
             lambda m, a, b, t: m.image.ssim_multiscale(a, b, t, (0.3, 0.3, 0.4), 3)]
    for call in calls:
        grads = []
        for m in (real, tf):
            a, b = m.constant(x), m.constant(y)
            t = m.constant(1.0, "float32" if m is real else dt)  # TensorFlow casts it
            with m.GradientTape() as tape:
                tape.watch([a, b, t])
                out = m.reduce_sum(m.sin(call(m, a, b, t)))
            grads.append([g.numpy() for g in tape.gradient(out, [a, b, t])])
        for got, want in zip(grads[1], grads[0]):
            assert got.dtype == want.dtype or got.shape == ()
            np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
