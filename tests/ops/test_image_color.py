"""tf.image's colour spaces beyond the op table: TensorFlow's HSV conventions (grays,
ties, black, negative channels, hues outside [0, 1]), round trips, dtypes, errors, the
derivative where a channel is 0 (where TensorFlow's hand-written gradient drops terms),
traced functions with an open batch size, vmap, and (marked peers) the same against
TensorFlow itself.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import colorsys

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.testing import check_grads

import op_table  # noqa: F401 - joins the tables (table_image_color is one of them) first
from table_image_color import YIQ, YUV, distinct_rgb, per_pixel, smooth_hsv

SPECIAL_RGB = np.array([[0, 0, 0], [1, 1, 1], [0.5, 0.5, 0.2], [0.2, 0.5, 0.5], [0.5, 0.2, 0.5],
                        [-0.5, 0.2, 0.1], [-0.3, -0.2, -0.1], [0.9, 0.1, 0.3], [2., 1., 0.5]])
TF_SPECIAL_HSV = [[0.0, 0.0, 0.0], [0.0, 0.0, 1.0], [0.16666666666666666, 0.6, 0.5],
                  [0.5, 0.6, 0.5], [0.8333333333333334, 0.6, 0.5],
                  [0.47619047619047616, 3.4999999999999996, 0.2], [0.5833333333333334, 0.0, -0.1],
                  [0.9583333333333334, 0.888888888888889, 0.9], [0.05555555555555555, 0.75, 2.0]]
SPECIAL_HSV = np.array([[1.2, 1., 1.], [-0.1, 1., 1.], [0.5, 1.5, 1.], [0.25, -0.5, 2.],
                        [1 / 6, 1, 1]])
TF_SPECIAL_RGB = [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0], [-0.5, 1.0, 1.0], [2.5, 2.0, 3.0],
                  [1.0, 1.0, 0.0]]
OPS = ["rgb_to_hsv", "hsv_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb"]


# ------------------------------------------------------------------ values
def test_hsv_conventions_as_tensorflow():
    # grays have hue 0, black saturation 0, ties take red, then green; negative channels
    # and values above 1 go through the same formulas
    assert tf.image.rgb_to_hsv(SPECIAL_RGB).numpy().tolist() == TF_SPECIAL_HSV
    # hues outside [0, 1] are not wrapped (1.2 is red, as -0.1); saturation is not clipped
    np.testing.assert_allclose(tf.image.hsv_to_rgb(SPECIAL_HSV).numpy(), TF_SPECIAL_RGB,
                               atol=1e-15)


@pytest.mark.parametrize("dt", [np.float32, np.float64])
def test_hsv_against_colorsys(dt):
    rng = np.random.default_rng(0)
    rgb = rng.uniform(0, 1, (4, 5, 6, 3)).astype(dt)
    rgb[0, 0] = np.round(rgb[0, 0] * 4) / 4  # ties among the channels
    hsv = tf.image.rgb_to_hsv(rgb)
    assert hsv.dtype == dt and hsv.shape == rgb.shape
    tol = 1e-6 if dt == np.float32 else 1e-14
    np.testing.assert_allclose(hsv.numpy(), per_pixel(colorsys.rgb_to_hsv)(rgb), atol=tol)
    back = tf.image.hsv_to_rgb(hsv)
    assert back.dtype == dt
    np.testing.assert_allclose(back.numpy(), rgb, atol=tol * 4)
    hsv_in = rng.uniform(0, 1, (7, 3)).astype(dt)
    np.testing.assert_allclose(tf.image.hsv_to_rgb(hsv_in).numpy(),
                               per_pixel(colorsys.hsv_to_rgb)(hsv_in), atol=tol)


def test_yiq_and_yuv_are_tensorflows_matrices():
    x = np.random.default_rng(1).uniform(0, 1, (2, 3, 4, 3))
    np.testing.assert_allclose(tf.image.rgb_to_yiq(x).numpy(), x @ YIQ, rtol=1e-14, atol=1e-15)
    np.testing.assert_allclose(tf.image.rgb_to_yuv(x).numpy(), x @ YUV, rtol=1e-14, atol=1e-15)
    # the inverse matrices are TensorFlow's rounded ones: round trips to about 1e-4
    np.testing.assert_allclose(tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(x)).numpy(), x, atol=2e-4)
    np.testing.assert_allclose(tf.image.yuv_to_rgb(tf.image.rgb_to_yuv(x)).numpy(), x, atol=1e-7)
    z = tf.complex(tf.constant(x), tf.constant(x))
    got = tf.image.rgb_to_yuv(z)
    assert got.dtype == tf.complex128
    np.testing.assert_allclose(got.numpy(), (x @ YUV) * (1 + 1j), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize("dt", ["float16", "bfloat16"])
def test_half_types_keep_their_dtype(op, dt):
    x = np.random.default_rng(2).uniform(0.05, 1, (3, 4, 3)).astype(np.float32)
    low = tf.cast(x, getattr(tf, dt))
    got = getattr(tf.image, op)(low)
    assert got.dtype == getattr(tf, dt)
    want = getattr(tf.image, op)(tf.cast(low, tf.float32)).numpy()
    np.testing.assert_allclose(tf.cast(got, tf.float32).numpy(), want, rtol=2e-2, atol=2e-2)


@pytest.mark.parametrize("op", OPS)
def test_empty_and_single_pixels(op):
    f = getattr(tf.image, op)
    assert f(np.zeros((0, 3), np.float32)).shape == (0, 3)
    assert f(np.zeros((2, 0, 3))).shape == (2, 0, 3)
    assert f(np.full(3, 0.5, np.float32)).shape == (3,)


def test_inputs_are_not_modified():
    x = np.random.default_rng(3).uniform(0, 1, (2, 2, 3))
    keep = x.copy()
    for op in OPS:
        getattr(tf.image, op)(x)
    np.testing.assert_array_equal(x, keep)


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("op", OPS)
def test_channel_and_rank_errors(op):
    f = getattr(tf.image, op)
    with pytest.raises(InvalidArgumentError, match=r"3 channels.*\(2, 4\)"):
        f(np.zeros((2, 4), np.float32))
    with pytest.raises(InvalidArgumentError, match="at least 1-D"):
        f(np.float32(1.))


@pytest.mark.parametrize("op", ["rgb_to_hsv", "hsv_to_rgb"])
def test_hsv_refuses_integers_and_complex(op):
    for x in (np.zeros((2, 3), np.int32), np.zeros((2, 3), np.uint8),
              np.zeros((2, 3), np.complex64)):
        with pytest.raises(InvalidArgumentError, match="`images` has dtype"):
            getattr(tf.image, op)(x)


@pytest.mark.parametrize("op", ["rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb"])
def test_yiq_and_yuv_refuse_integers(op):
    with pytest.raises(TypeError, match="floating point or complex; got dtype int32"):
        getattr(tf.image, op)(np.zeros((2, 3), np.int32))


# ------------------------------------------------------------------ derivatives
def test_check_grads_in_float64():
    rng = np.random.default_rng(4)
    rgb = distinct_rgb(3, 4)(rng)
    hsv = smooth_hsv(3, 4)(rng)
    check_grads(tf.image.rgb_to_hsv, [rgb], order=2)
    check_grads(tf.image.hsv_to_rgb, [hsv], order=2)
    check_grads(lambda x: tf.image.yiq_to_rgb(tf.image.rgb_to_yiq(x)), [rgb], order=2)
    check_grads(lambda x: tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x)), [rgb], order=1)


def test_rgb_to_hsv_derivative_at_a_zero_channel():
    # blue is the minimum, at 0: s = 1 - min / max, so ds/db = -1 / max on both sides
    # (TensorFlow's gradient gives 0 there: it drops the terms of channels that are not
    # positive)
    x = tf.constant([[1., 0.5, 0.], [0.2, 0.8, 0.]], tf.float64)
    with tf.GradientTape() as tape:
        tape.watch(x)
        s = tf.image.rgb_to_hsv(x)[:, 1]
    np.testing.assert_allclose(tape.gradient(s, x).numpy(), [[0., 0., -1.], [0., 0., -1.25]])
    check_grads(lambda t: tf.image.rgb_to_hsv(t)[:, 1], [x.numpy()])


def test_the_round_trip_is_the_identity_with_identity_derivatives():
    x = tf.constant(distinct_rgb(5)(np.random.default_rng(5)))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(x))
    np.testing.assert_allclose(tape.jacobian(y, x).numpy().reshape(15, 15), np.eye(15), atol=1e-12)


# ------------------------------------------------------------------ traced, batched
def _conversions(x):
    return [getattr(tf.image, op)(x) for op in OPS + ["rgb_to_grayscale"]]


def test_an_open_batch_size_gives_eager_values():
    f = tf.function(_conversions, input_signature=[tf.TensorSpec([None, 4, 5, 3], tf.float32)])
    rng = np.random.default_rng(6)
    for n in (1, 2, 3, 5):
        x = rng.uniform(0, 1, (n, 4, 5, 3)).astype(np.float32)
        x[0, 0, 0] = [0.5, 0.5, 0.5]
        for got, want in zip(f(x), _conversions(tf.constant(x))):
            assert got.shape == want.shape
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    assert f.experimental_get_tracing_count() <= 3  # size 1, then one graph for every size


def test_every_dimension_open_and_vmap():
    f = tf.function(_conversions, input_signature=[tf.TensorSpec([None, None, 3], tf.float64)])
    rng = np.random.default_rng(7)
    for shape in [(1, 1, 3), (2, 5, 3), (3, 2, 3), (5, 4, 3)]:
        x = rng.uniform(0, 1, shape)
        for got, want in zip(f(x), _conversions(tf.constant(x))):
            np.testing.assert_array_equal(got.numpy(), want.numpy())
    x = tf.constant(rng.uniform(0, 1, (3, 4, 3)))
    np.testing.assert_array_equal(tf.vmap(tf.image.rgb_to_hsv)(x).numpy(),
                                  tf.image.rgb_to_hsv(x).numpy())


def test_compiled_conversions_and_gradients_match_eager():
    pytest.importorskip("jax")
    x = tf.constant(distinct_rgb(3, 4)(np.random.default_rng(12)), tf.float32)

    def grads(t):
        with tf.GradientTape() as tape:
            tape.watch(t)
            y = tf.reduce_sum(tf.sin(tf.image.hsv_to_rgb(tf.image.rgb_to_hsv(t) * 0.9)))
        return tape.gradient(y, t)

    f = tf.function(lambda t: _conversions(t) + [grads(t)], jit_compile=True)
    for got, want in zip(f(x), _conversions(x) + [grads(x)]):
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


# ------------------------------------------------------------------ against TensorFlow
def _tensorflow():
    return pytest.importorskip("tensorflow")


def _mixed_pixels(rng, shape):
    """Pixels in [0, 1], a third on a grid of quarters (ties, grays, zeros and ones)."""
    x = rng.uniform(0, 1, shape + (3,))
    grid = rng.random(shape) < 1 / 3
    x[grid] = np.round(x[grid] * 4) / 4
    return x


@pytest.mark.peers
@pytest.mark.parametrize("op", OPS + ["rgb_to_grayscale"])
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "bfloat16"])
def test_peers_values(op, dt):
    real = _tensorflow()
    rng = np.random.default_rng(8)
    for shape in [(2, 5, 7), (9,), (1, 1, 1, 1)]:
        x = _mixed_pixels(rng, shape)
        if op == "hsv_to_rgb":
            x[..., 0] = rng.uniform(-0.2, 1.2, shape)  # hues outside [0, 1] too
        want = getattr(real.image, op)(real.cast(x, dt))
        got = getattr(tf.image, op)(tf.cast(x, getattr(tf, dt)))
        assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape)
        # TensorFlow's float64 hsv_to_rgb and grayscale are exact to float32's precision only
        f32_only = op in ("hsv_to_rgb", "rgb_to_grayscale")
        tol = {"float32": 1e-6, "float64": 1e-6 if f32_only else 1e-12,
               "float16": 2e-3, "bfloat16": 2e-2}[dt]
        np.testing.assert_allclose(np.asarray(tf.cast(got, tf.float64).numpy()),
                                   real.cast(want, "float64").numpy(), rtol=tol, atol=tol)


@pytest.mark.peers
@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_peers_rgb_to_hsv_gradient(dt):
    real = _tensorflow()
    rng = np.random.default_rng(9)
    x = distinct_rgb(4, 6)(rng).astype(dt)
    w = rng.standard_normal((4, 6, 3)).astype(dt)
    grads = []
    for m in (real, tf):
        t = m.constant(x)
        with m.GradientTape() as tape:
            tape.watch(t)
            y = m.reduce_sum(m.image.rgb_to_hsv(t) * w)
        grads.append(tape.gradient(y, t).numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5 if dt == "float32" else 1e-12,
                               atol=1e-5 if dt == "float32" else 1e-12)


@pytest.mark.peers
@pytest.mark.parametrize("op", ["rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb",
                                "rgb_to_grayscale"])
def test_peers_linear_conversion_gradients(op):
    real = _tensorflow()
    x = np.random.default_rng(10).uniform(0, 1, (2, 3, 4, 3))
    grads = []
    for m in (real, tf):
        t = m.constant(x)
        with m.GradientTape() as tape:
            tape.watch(t)
            y = m.reduce_sum(m.sin(getattr(m.image, op)(t)))
        grads.append(tape.gradient(y, t).numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-6, atol=1e-7)


@pytest.mark.peers
def test_peers_hsv_to_rgb_has_no_tensorflow_gradient_but_a_tapeflow_one():
    real = _tensorflow()
    x = smooth_hsv(3)(np.random.default_rng(11))
    t = real.constant(x)
    with real.GradientTape() as tape:
        tape.watch(t)
        y = real.reduce_sum(real.image.hsv_to_rgb(t))
    assert tape.gradient(y, t) is None
    check_grads(tf.image.hsv_to_rgb, [x])
