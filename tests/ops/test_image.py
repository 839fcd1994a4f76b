"""tf.image beyond the op table: TensorFlow's values for every resize method (up and down,
antialiased), dtypes (float32 results, "nearest" keeping integers), the crops, pads and
flips with TensorFlow's sizes and errors, convert_image_dtype's scaling, the adjustments
on integer images, traced functions at other sizes, vmap and XLA, the random ops'
seeds and draws, and (marked peers) the same against TensorFlow itself.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError
from tapeflow.ops.image import transpose as image_transpose

import op_table  # noqa: F401 - joins the tables (table_image is one of them) first
from table_image import resize_reference

X = np.arange(12, dtype=np.float32).reshape(1, 3, 4, 1) ** 1.5  # TF's input below

# TF: tf.image.resize(X, size, method)[0, :, :, 0], rounded to 5 decimals
TF_RESIZE = {
    ("bilinear", (2, 5)): [[2.0, 3.08156, 4.67032, 6.61504, 8.52718],
                           [18.97056, 21.82273, 25.2182, 28.77158, 31.99222]],
    ("bilinear", (5, 3)): [[0.16667, 1.91421, 4.80153], [3.51202, 6.32398, 10.03414],
                           [8.53006, 12.93864, 17.88304], [17.42573, 22.76229, 28.55693],
                           [23.35618, 29.31139, 35.67286]],
    ("nearest", (2, 5)): [[0.0, 1.0, 2.82843, 2.82843, 5.19615],
                          [22.62742, 27.0, 31.62278, 31.62278, 36.48287]],
    ("nearest", (5, 3)): [[0.0, 2.82843, 5.19615], [0.0, 2.82843, 5.19615],
                          [8.0, 14.69694, 18.52026], [22.62742, 31.62278, 36.48287],
                          [22.62742, 31.62278, 36.48287]],
    ("bicubic", (2, 5)): [[1.1381, 2.0451, 3.57081, 5.59665, 7.44451],
                          [19.84573, 22.72749, 26.41424, 30.30416, 33.56816]],
    ("bicubic", (5, 3)): [[-0.5276, 0.99268, 3.95099], [2.32303, 4.98189, 8.77317],
                          [8.32414, 12.89845, 18.12278], [18.26378, 24.02374, 30.29888],
                          [24.1895, 30.51821, 37.3279]],
    ("area", (2, 5)): [[2.66667, 3.96175, 5.58902, 7.49783, 9.63752],
                       [17.75161, 20.73299, 23.85381, 27.10945, 30.49533]],
    ("area", (5, 3)): [[0.25, 1.91421, 4.60422], [3.09836, 5.58902, 8.92429],
                       [8.79508, 12.93864, 17.56443], [18.7454, 23.85381, 29.36671],
                       [23.72056, 29.31138, 35.26784]],
    ("lanczos3", (2, 5)): [[0.53601, 1.34583, 2.76311, 4.96227, 6.66039],
                           [20.24986, 23.02194, 26.89482, 31.06415, 34.17305]],
    ("lanczos5", (5, 3)): [[0.39556, 1.73347, 4.93447], [0.5156, 2.67044, 6.35045],
                           [8.40421, 12.80676, 18.04954], [19.83803, 25.79392, 32.3105],
                           [23.99968, 29.9809, 36.64704]],
    ("gaussian", (2, 5)): [[2.28348, 3.32199, 4.87914, 6.78994, 8.55007],
                           [19.03051, 21.64192, 24.90808, 28.33385, 31.27095]],
    ("mitchellcubic", (5, 3)): [[0.00535, 1.67126, 4.58356], [2.90958, 5.60272, 9.28666],
                                [8.86314, 13.21234, 18.1706], [17.9379, 23.39368, 29.3248],
                                [23.58385, 29.58418, 36.02216]],
}
TF_ANTIALIASED = {"bilinear": [[3.54529, 6.04837, 9.31862], [18.31979, 23.17161, 28.4055]],
                  "bicubic": [[2.5004, 5.07543, 8.57281], [18.58299, 24.00658, 29.85237]]}


@pytest.fixture(autouse=True)
def _restore_seed():
    yield
    tf.random.set_seed(None)


# ------------------------------------------------------------------ resize
@pytest.mark.parametrize("method, size", sorted(TF_RESIZE))
def test_resize_values_as_tensorflow(method, size):
    got = tf.image.resize(X, size, method)
    assert got.dtype == tf.float32 and got.shape == (1,) + size + (1,)
    np.testing.assert_allclose(got.numpy()[0, :, :, 0], TF_RESIZE[method, size], atol=2e-5)


@pytest.mark.parametrize("method", sorted(TF_ANTIALIASED))
def test_antialiased_downscale_as_tensorflow(method):
    got = tf.image.resize(X, (2, 3), method, antialias=True).numpy()[0, :, :, 0]
    np.testing.assert_allclose(got, TF_ANTIALIASED[method], atol=2e-5)
    # nearest and area ignore antialias, as TensorFlow's
    for m in ("nearest", "area"):
        np.testing.assert_array_equal(tf.image.resize(X, (2, 3), m, antialias=True).numpy(),
                                      tf.image.resize(X, (2, 3), m).numpy())


def test_resize_dtypes_ranks_and_aspect_ratio():
    u8 = np.array([[0, 50, 100], [150, 200, 255]], np.uint8).reshape(1, 2, 3, 1)
    out = tf.image.resize(u8, [3, 2])
    assert out.dtype == tf.float32
    np.testing.assert_allclose(out.numpy().ravel(), [12.5, 87.5, 87.5, 164.375, 162.5, 241.25])
    near = tf.image.resize(u8, [3, 2], tf.image.ResizeMethod.NEAREST_NEIGHBOR)
    assert near.dtype == tf.uint8  # TF
    np.testing.assert_array_equal(near.numpy().ravel(), [0, 100, 150, 255, 150, 255])  # TF
    assert tf.image.resize(X.astype(np.float64), [2, 2]).dtype == tf.float32  # TF
    assert tf.image.resize(X.astype(np.float16), [2, 2], "nearest").dtype == tf.float16
    assert tf.image.resize(X[0], tf.constant([5, 2])).shape == (5, 2, 1)
    assert tf.image.resize(np.zeros([1, 3, 4, 1]), [7, 100], preserve_aspect_ratio=True).shape \
        == (1, 7, 9, 1)  # TF
    assert tf.image.resize(np.zeros([5, 7, 1]), [10, 3], preserve_aspect_ratio=True).shape \
        == (2, 3, 1)  # TF
    assert tf.image.resize(np.zeros([0, 3, 4, 2]), [2, 2]).shape == (0, 2, 2, 2)
    same = tf.image.resize(X, [3, 4])  # the same size: every method copies the image
    for m in ("bilinear", "nearest", "bicubic", "area"):
        np.testing.assert_allclose(tf.image.resize(X, [3, 4], m).numpy(), same.numpy(), rtol=1e-6)
    np.testing.assert_allclose(same.numpy(), X)


@pytest.mark.parametrize("method", ["bilinear", "bicubic", "area", "lanczos3", "nearest"])
def test_resize_gradient_is_the_transposed_interpolation(method):
    x = tf.constant(np.random.default_rng(0).standard_normal((2, 5, 4, 3)))
    w = np.random.default_rng(1).standard_normal((2, 3, 7, 3))
    with tf.GradientTape() as tape:
        tape.watch(x)
        out = tf.image.resize(x, [3, 7], method)
        y = tf.reduce_sum(out * w.astype(out.dtype.as_numpy_dtype))
    g = tape.gradient(y, x)
    assert g.dtype == tf.float64
    # the image of each one-hot input pixel, and their inner products with the weights
    pixels = np.eye(5 * 4).reshape(20, 1, 5, 4, 1)
    images = np.array([resize_reference(p, (3, 7), method)[0, :, :, 0] for p in pixels])
    adjoint = np.einsum("bop,nopc->nbc", images, w).reshape(2, 5, 4, 3)
    np.testing.assert_allclose(g.numpy(), adjoint, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.image.resize(np.zeros([4, 4]), [2, 2]), ValueError, "at least three"),
    (lambda: tf.image.resize(np.zeros([1, 1, 4, 4, 1]), [2, 2]), ValueError, "3 or 4"),
    (lambda: tf.image.resize(X, [2, 2, 2]), ValueError, "2 elements"),
    (lambda: tf.image.resize(X, [[2, 2]]), ValueError, "2 elements"),
    (lambda: tf.image.resize(X, [2., 2.]), ValueError, "int32"),
    (lambda: tf.image.resize(X, [2, 2], "BILINEAR"), ValueError, "not implemented"),
    (lambda: tf.image.resize(X, [0, 2]), InvalidArgumentError, "must be positive"),
    (lambda: tf.image.resize(np.zeros([1, 0, 4, 1]), [2, 2]), InvalidArgumentError, "non-zero"),
    (lambda: tf.image.resize(np.zeros([1, 3, 4, 0]), [2, 2]), InvalidArgumentError, "non-zero"),
    (lambda: tf.image.resize(np.zeros([1, 3, 4, 1], bool), [2, 2]), InvalidArgumentError,
     "bool"),
    (lambda: tf.image.resize_with_pad(X, 0, 3), ValueError, "target_height must be > 0"),
])
def test_resize_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_resize_with_pad_as_tensorflow():
    img = np.arange(70, dtype=np.float32).reshape(2, 5, 7, 1)
    got = tf.image.resize_with_pad(img, 4, 9).numpy()[0, :, :, 0]
    np.testing.assert_allclose(got[:, :7], [  # TF
        [0.0, 1.075, 2.475, 3.875, 5.275, 6.675, 0.0],
        [0.0, 9.825, 11.225, 12.625, 14.025, 15.425, 0.0],
        [0.0, 18.575, 19.975, 21.375, 22.775, 24.175, 0.0],
        [0.0, 27.325, 28.725, 30.125, 31.525, 32.925, 0.0]], rtol=1e-5)
    assert not got[:, 7:].any()
    near = tf.image.resize_with_pad(img.astype(np.uint8), 9, 4, "nearest")
    assert near.dtype == tf.uint8
    np.testing.assert_array_equal(near.numpy()[1, 3:5, :, 0], [[42, 44, 46, 48],
                                                               [56, 58, 60, 62]])  # TF
    assert not near.numpy()[1, :3].any() and not near.numpy()[1, 5:].any()


# ------------------------------------------------------------------ crops, pads, flips
def test_crops_and_pads_as_tensorflow():
    img = np.arange(70, dtype=np.float32).reshape(2, 5, 7, 1)
    got = tf.image.resize_with_crop_or_pad(img, 3, 9).numpy()[0, :, :, 0]
    np.testing.assert_array_equal(got, [[0, 7, 8, 9, 10, 11, 12, 13, 0],
                                        [0, 14, 15, 16, 17, 18, 19, 20, 0],
                                        [0, 21, 22, 23, 24, 25, 26, 27, 0]])  # TF
    for fraction, shape in ((0.1, (3, 3)), (0.33, (5, 5)), (0.5, (7, 7)), (0.7, (9, 11)),
                            (0.9, (11, 13))):  # TF
        assert tf.image.central_crop(np.zeros([1, 11, 13, 1]), fraction).shape[1:3] == shape
    x = tf.constant(img[0])
    assert tf.image.central_crop(x, 1.0) is x
    padded = tf.image.pad_to_bounding_box(img, 1, 2, 8, 10)
    assert padded.shape == (2, 8, 10, 1)
    np.testing.assert_array_equal(padded.numpy()[:, 1:6, 2:9], img)
    assert padded.numpy().sum() == img.sum()
    crop = tf.image.crop_to_bounding_box(img[0], 2, 3, 3, 4)
    np.testing.assert_array_equal(crop.numpy(), img[0, 2:5, 3:7])


def test_flips_rotations_and_transpose():
    x = np.arange(2 * 3 * 4 * 2).reshape(2, 3, 4, 2)
    np.testing.assert_array_equal(tf.image.flip_left_right(x).numpy(), x[:, :, ::-1])
    np.testing.assert_array_equal(tf.image.flip_up_down(x[0]).numpy(), x[0, ::-1])
    for k in range(-5, 6):
        np.testing.assert_array_equal(tf.image.rot90(x, k).numpy(), np.rot90(x, k, axes=(1, 2)))
    np.testing.assert_array_equal(image_transpose(x).numpy(), x.transpose(0, 2, 1, 3))
    np.testing.assert_array_equal(tf.image.rot90(x[0], tf.constant(3)).numpy(),
                                  np.rot90(x[0], 3))
    assert tf.image.flip_left_right(np.zeros([0, 2, 3, 1])).shape == (0, 2, 3, 1)  # TF: allowed
    v = tf.constant(np.random.default_rng(2).standard_normal((3, 4, 1)))
    with tf.GradientTape() as tape:
        tape.watch(v)
        y = tf.reduce_sum(image_transpose(v) * np.arange(12.).reshape(4, 3, 1))
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(),
                                  np.arange(12.).reshape(4, 3, 1).transpose(1, 0, 2))


@pytest.mark.parametrize("call, match", [  # TensorFlow's ValueErrors and messages
    (lambda: tf.image.flip_left_right(np.zeros([4, 4])), "at least three-dimensional"),
    (lambda: tf.image.flip_up_down(np.zeros([1, 1, 4, 4, 1])), "either 3 or 4 dimensions"),
    (lambda: tf.image.flip_left_right(np.zeros([0, 4, 3])), r"inner 3 dims .* must be > 0"),
    (lambda: tf.image.rot90(np.zeros([2, 2])), "at least three-dimensional"),
    (lambda: image_transpose(np.zeros([2, 0, 1])), "must be > 0"),
    (lambda: tf.image.crop_to_bounding_box(X, -1, 0, 2, 2), "offset_height must be >= 0"),
    (lambda: tf.image.crop_to_bounding_box(X, 0, -1, 2, 2), "offset_width must be >= 0"),
    (lambda: tf.image.crop_to_bounding_box(X, 0, 0, 0, 2), "target_height must be > 0"),
    (lambda: tf.image.crop_to_bounding_box(X, 0, 0, 2, 0), "target_width must be > 0"),
    (lambda: tf.image.crop_to_bounding_box(X, 2, 0, 2, 2), "height must be >= target"),
    (lambda: tf.image.crop_to_bounding_box(X, 0, 3, 2, 2), "width must be >= target"),
    (lambda: tf.image.crop_to_bounding_box(np.zeros([4, 4]), 0, 0, 2, 2), "three"),
    (lambda: tf.image.pad_to_bounding_box(X, -1, 0, 8, 8), "offset_height must be >= 0"),
    (lambda: tf.image.pad_to_bounding_box(X, 0, 0, 2, 8), "height must be <= target"),
    (lambda: tf.image.pad_to_bounding_box(X, 0, 5, 8, 8), "width must be <= target"),
    (lambda: tf.image.resize_with_crop_or_pad(X, 3, 0), "target_width must be > 0"),
    (lambda: tf.image.central_crop(X, 0.0), r"within \(0, 1\]"),
    (lambda: tf.image.central_crop(X, 1.5), r"within \(0, 1\]"),
])
def test_geometry_errors(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_rot90_needs_an_integer_k():
    with pytest.raises(TypeError, match="k"):
        tf.image.rot90(X, 1.5)


# ------------------------------------------------------------------ dtypes and colour
@pytest.mark.parametrize("values, src, dst, saturate, want", [  # TF
    ([0, 1, 128, 255], "uint8", "float32", False, [0., 1 / 255, 0.5019608, 1.]),
    ([0., 0.5, 0.999, 1.], "float32", "uint8", False, [0, 127, 255, 255]),
    ([-0.5, 0., 0.5, 1.5], "float32", "uint8", True, [0, 0, 127, 255]),
    ([0, 1, 128, 255], "uint8", "int32", False, [0, 8388608, 1073741824, 2139095040]),
    ([0, 2 ** 24, -2 ** 24, 2 ** 31 - 1], "int32", "uint8", False, [0, 2, 254, 255]),
    ([0, 5, -5, 127], "int8", "uint8", False, [0, 10, 246, 254]),
    ([0, 5, -5, 127], "int8", "uint8", True, [0, 10, 0, 254]),
    ([0.5, 1., 2.], "float32", "int32", True, [1073741824, 2147483520, 2147483520]),
    ([65535, 256, 255], "uint16", "uint8", False, [255, 1, 0]),
    ([0.5, 1.], "float16", "uint8", False, [127, 255]),
    ([0.5, 1.], "bfloat16", "uint8", False, [128, 255]),  # TF: 0 (256 wraps; tapeflow saturates)
    ([3, 255], "uint8", "float16", False, [0.011765, 1.]),
    ([2 ** 62], "int64", "float32", False, [0.5]),
])
def test_convert_image_dtype_as_tensorflow(values, src, dst, saturate, want):
    x = tf.constant(np.array(values).astype(tf.as_dtype(src).as_numpy_dtype))
    got = tf.image.convert_image_dtype(x, getattr(tf, dst), saturate=saturate)
    assert got.dtype == getattr(tf, dst)
    np.testing.assert_allclose(got.numpy().astype(np.float64), want, rtol=1e-3)


def test_convert_image_dtype_identity_gradient_and_errors():
    x = tf.constant([0.25, 0.5])
    assert tf.image.convert_image_dtype(x, tf.float32) is x
    v = tf.Variable(tf.ones([2]))
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.image.convert_image_dtype(v, tf.float64) * 3.)
    np.testing.assert_array_equal(tape.gradient(y, v).numpy(), [3., 3.])
    with pytest.raises(AttributeError, match="image dtype must be either"):
        tf.image.convert_image_dtype(tf.constant([True]), tf.float32)
    with pytest.raises(AttributeError, match="dtype must be either"):
        tf.image.convert_image_dtype(x, tf.complex64)


def test_adjustments_of_integer_images_as_tensorflow():
    px = tf.constant(np.array([0, 10, 128, 200, 255], np.uint8).reshape(1, 5, 1))
    cases = [(tf.image.adjust_brightness(px, 0.2), [51, 61, 179, 251, 255]),  # TF
             (tf.image.adjust_brightness(px, -0.5), [0, 0, 0, 72, 127]),
             (tf.image.adjust_contrast(px, 1.5), [0, 0, 132, 241, 255]),
             (tf.image.adjust_gamma(px, 0.5, 1.2), [0, 60, 217, 255, 255])]
    for got, want in cases:
        assert got.dtype == tf.uint8
        np.testing.assert_array_equal(got.numpy().ravel(), want)
    std = tf.image.per_image_standardization(px)
    assert std.dtype == tf.float32
    np.testing.assert_allclose(std.numpy().ravel(), [-1.1722573, -1.0734161, 0.0929108,
                                                     0.8045679, 1.3481947], rtol=1e-6)  # TF
    rgb = np.array([[10, 200, 30], [255, 255, 255], [0, 0, 7]], np.uint8).reshape(3, 1, 3)
    gray = tf.image.rgb_to_grayscale(rgb)
    assert gray.dtype == tf.uint8 and gray.shape == (3, 1, 1)
    np.testing.assert_array_equal(gray.numpy().ravel(), [124, 255, 0])  # TF


def test_adjustments_keep_float_dtypes_and_differentiate_their_factors():
    x = np.random.default_rng(3).uniform(0.1, 1, (2, 3, 4, 3))
    for dt in (np.float16, np.float32, np.float64):
        for f in (lambda t: tf.image.adjust_brightness(t, 0.1),
                  lambda t: tf.image.adjust_contrast(t, 1.3),
                  lambda t: tf.image.adjust_gamma(t, 0.8), tf.image.rgb_to_grayscale):
            assert f(x.astype(dt)).dtype == tf.as_dtype(dt)
    assert tf.image.per_image_standardization(x).dtype == tf.float32  # TF: always float32
    delta, factor = tf.Variable(0.2, dtype=tf.float64), tf.Variable(2., dtype=tf.float64)
    with tf.GradientTape() as tape:
        y = tf.reduce_sum(tf.image.adjust_contrast(tf.image.adjust_brightness(x, delta), factor))
    g_delta, g_factor = tape.gradient(y, [delta, factor])
    assert abs(float(g_delta) - x.size) < 1e-9  # contrast keeps each channel's mean
    assert abs(float(g_factor)) < 1e-9  # ... and the sum
    const = tf.image.per_image_standardization(np.full([2, 2, 1], 7.))
    np.testing.assert_array_equal(const.numpy(), np.zeros([2, 2, 1]))  # stddev floored


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.image.adjust_gamma(X, -0.5), ValueError, "non-negative"),
    (lambda: tf.image.adjust_contrast(np.zeros([2, 2]), 2.), InvalidArgumentError, "3-D"),
    (lambda: tf.image.adjust_brightness(np.array([True]), 0.1), InvalidArgumentError, "bool"),
    (lambda: tf.image.per_image_standardization(np.zeros([2, 2])), ValueError, "three"),
    (lambda: tf.image.rgb_to_grayscale(np.zeros([2, 2, 4])), InvalidArgumentError, "axis of 3"),
    (lambda: tf.image.grayscale_to_rgb(np.zeros([2, 2, 3])), ValueError, "size 1"),
    (lambda: tf.image.grayscale_to_rgb(np.zeros([1])), ValueError, "two-dimensional"),
    (lambda: tf.image.image_gradients(np.zeros([5, 7, 3])), ValueError, "4D tensor"),
    (lambda: tf.image.total_variation(np.zeros([2, 2])), ValueError, "three-dimensional"),
    (lambda: tf.image.total_variation(np.zeros([2, 2, 1], np.uint8)), InvalidArgumentError,
     "uint8"),
])
def test_colour_and_measure_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_measures():
    img = np.arange(70, dtype=np.float32).reshape(2, 5, 7, 1)
    np.testing.assert_array_equal(tf.image.total_variation(img).numpy(), [226., 226.])  # TF
    assert tf.image.total_variation(img[0]).shape == ()
    dy, dx = tf.image.image_gradients(np.arange(6).reshape(1, 2, 3, 1))
    assert dy.dtype == tf.int64
    np.testing.assert_array_equal(dy.numpy()[0, :, :, 0], [[3, 3, 3], [0, 0, 0]])
    np.testing.assert_array_equal(dx.numpy()[0, :, :, 0], [[1, 1, 0], [1, 1, 0]])


# ------------------------------------------------------------------ traced, batched, compiled
def test_a_traced_function_gives_eager_values_at_every_size():
    spec = [tf.TensorSpec([None, None, None, 2], tf.float32)]

    def geometry(x):
        return (tf.image.resize(x, [4, 3], "bicubic"), tf.image.central_crop(x, 0.6),
                tf.image.resize_with_crop_or_pad(x, 5, 4), tf.image.flip_left_right(x))

    f = tf.function(geometry, input_signature=spec)
    rng = np.random.default_rng(4)
    for shape in [(1, 6, 5, 2), (2, 3, 9, 2), (3, 12, 10, 2), (1, 7, 4, 2), (2, 18, 15, 2)]:
        x = rng.standard_normal(shape).astype(np.float32)
        for got, want in zip(f(x), geometry(tf.constant(x))):
            assert got.shape == want.shape
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-6, atol=1e-6)


def test_vmap_and_compiled_resize_match_eager():
    x = tf.constant(np.random.default_rng(5).standard_normal((3, 5, 6, 2)), tf.float32)
    per_image = tf.vmap(lambda im: tf.image.resize(im, [7, 4], "bilinear"))(x)
    np.testing.assert_allclose(per_image.numpy(), tf.image.resize(x, [7, 4]).numpy(), rtol=1e-6)
    pytest.importorskip("jax")
    f = tf.function(lambda t: tf.image.resize(tf.image.rot90(t), [3, 9], "area"), jit_compile=True)
    np.testing.assert_allclose(f(x).numpy(), tf.image.resize(tf.image.rot90(x), [3, 9],
                                                             "area").numpy(), rtol=1e-5)


# ------------------------------------------------------------------ random ops
def _randoms(op_seed):
    img = tf.reshape(tf.range(2 * 4 * 5 * 3, dtype=tf.float32), [2, 4, 5, 3]) / 120.
    return [tf.image.random_flip_left_right(img, seed=op_seed).numpy(),
            tf.image.random_flip_up_down(img, seed=op_seed).numpy(),
            tf.image.random_crop(img, [1, 2, 3, 3], seed=op_seed).numpy(),
            tf.image.random_brightness(img, 0.3, seed=op_seed).numpy(),
            tf.image.random_contrast(img, 0.2, 1.8, seed=op_seed).numpy()]


@pytest.mark.parametrize("op_seed", [None, 9])
def test_random_ops_follow_the_seeds(op_seed):
    tf.random.set_seed(17)
    first = _randoms(op_seed) + _randoms(op_seed)
    tf.random.set_seed(17)
    again = _randoms(op_seed) + _randoms(op_seed)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert any(not np.array_equal(a, b) for a, b in zip(first[:5], first[5:]))


def test_random_flips_flip_half_the_images_each_on_its_own():
    tf.random.set_seed(3)
    x = tf.reshape(tf.range(2), [1, 1, 2, 1]) * tf.ones([4000, 1, 1, 1], tf.int32)
    flipped = tf.image.random_flip_left_right(x).numpy()[:, 0, 0, 0] == 1
    assert 0.46 < flipped.mean() < 0.54
    one = [tf.image.random_flip_up_down(tf.reshape(tf.range(2), [2, 1, 1])).numpy()[0, 0, 0]
           for _ in range(400)]
    assert 0.4 < np.mean(one) < 0.6


def test_random_ops_draw_anew_in_traced_functions_and_per_example_in_vmap():
    f = tf.function(lambda im: tf.image.random_crop(im, [3, 3, 1]))
    img = tf.reshape(tf.range(100.), [10, 10, 1])
    crops = [f(img).numpy() for _ in range(6)]
    assert f.experimental_get_tracing_count() == 1
    assert len({c[0, 0, 0] for c in crops}) > 1
    for c in crops:  # a window of the image: consecutive rows and columns
        np.testing.assert_array_equal(c[:, :, 0], c[0, 0, 0] + np.add.outer([0, 10, 20], [0, 1, 2]))
    batch = tf.vmap(lambda im: tf.image.random_crop(im, [2, 2, 1]))(tf.stack([img] * 8))
    assert len({float(b[0, 0, 0]) for b in batch.numpy()}) > 1
    g = tf.function(lambda im: tf.image.random_brightness(im, 0.5))
    assert g(img).numpy()[0, 0, 0] != g(img).numpy()[0, 0, 0]


def test_random_crop_gradient_is_its_window():
    img = tf.constant(np.random.default_rng(6).standard_normal((6, 5, 2)))
    with tf.GradientTape() as tape:
        tape.watch(img)
        crop = tf.image.random_crop(img, [2, 3, 2], seed=4)
        y = tf.reduce_sum(crop)
    g = tape.gradient(y, img).numpy()
    assert g.sum() == 12 and set(np.unique(g)) == {0., 1.}
    np.testing.assert_array_equal(img.numpy()[g[:, :, 0] == 1].reshape(2, 3, 2), crop.numpy())


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.image.random_crop(X, [1, 4, 2, 1]), InvalidArgumentError, "size <= value.shape"),
    (lambda: tf.image.random_crop(X, [2, 2]), InvalidArgumentError, "a size per axis"),
    (lambda: tf.image.random_crop(X, [1, -1, 2, 1]), InvalidArgumentError, "0 <= size"),
    (lambda: tf.image.random_brightness(X, -0.1), ValueError, "max_delta must be non-negative"),
    (lambda: tf.image.random_contrast(X, 0.5, 0.4), ValueError, "upper must be > lower"),
    (lambda: tf.image.random_contrast(X, -0.5, 0.4), ValueError, "lower must be non-negative"),
    (lambda: tf.image.random_flip_left_right(np.zeros([2, 2])), ValueError, "three"),
])
def test_random_op_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def test_random_crop_of_an_empty_window():
    assert tf.image.random_crop(X, [0, 2, 2, 1]).shape == (0, 2, 2, 1)  # TF


# ------------------------------------------------------------------ against TensorFlow
def _tensorflow():
    return pytest.importorskip("tensorflow")


METHODS = ["bilinear", "nearest", "bicubic", "area", "lanczos3", "lanczos5", "gaussian",
           "mitchellcubic"]


@pytest.mark.peers
@pytest.mark.parametrize("method", METHODS)
@pytest.mark.parametrize("antialias", [False, True])
def test_peers_resize_at_odd_sizes_up_and_down(method, antialias):
    real = _tensorflow()
    rng = np.random.default_rng(7)
    for shape in [(2, 5, 7, 3), (1, 1, 1, 2), (1, 13, 11, 1), (2, 2, 40, 1)]:
        x = rng.uniform(0, 255, shape).astype(np.float32)
        for size in [(3, 4), (9, 11), (1, 1), (31, 6), (4, 3), (40, 2)]:
            want = real.image.resize(x, size, method, antialias=antialias)
            got = tf.image.resize(x, size, method, antialias=antialias)
            assert got.dtype.name == want.dtype.name
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=255e-5)


@pytest.mark.peers
@pytest.mark.parametrize("method", ["bilinear", "nearest", "bicubic", "lanczos3"])
def test_peers_resize_gradients(method):
    real = _tensorflow()
    x = np.random.default_rng(8).standard_normal((2, 5, 7, 3)).astype(np.float32)
    grads = []
    for m in (real, tf):
        t = m.constant(x)
        with m.GradientTape() as tape:
            tape.watch(t)
            y = m.reduce_sum(m.sin(m.image.resize(t, [9, 4], method)))
        grads.append(tape.gradient(y, t).numpy())
    np.testing.assert_allclose(grads[1], grads[0], rtol=1e-5, atol=1e-5)


@pytest.mark.peers
def test_peers_resize_dtypes_and_aspect_ratio():
    real = _tensorflow()
    x = np.random.default_rng(9).uniform(0, 200, (2, 5, 7, 3))
    for dt in ("uint8", "int32", "float16", "float64"):
        for method in ("bilinear", "nearest", "area"):
            for kw in ({}, {"preserve_aspect_ratio": True}):
                want = real.image.resize(x.astype(dt), [9, 4], method, **kw)
                got = tf.image.resize(x.astype(dt), [9, 4], method, **kw)
                assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape)
                np.testing.assert_allclose(got.numpy().astype(float), want.numpy().astype(float),
                                           rtol=2e-3 if dt == "float16" else 1e-5)


@pytest.mark.peers
def test_peers_crops_pads_and_rotations():
    real = _tensorflow()
    x = np.random.default_rng(10).standard_normal((2, 5, 7, 3)).astype(np.float32)
    calls = [lambda m: m.image.resize_with_pad(x, 9, 4),
             lambda m: m.image.resize_with_pad(x, 3, 13, "area"),
             lambda m: m.image.resize_with_pad(x[0], 6, 6, "bicubic", antialias=True),
             lambda m: m.image.resize_with_crop_or_pad(x, 3, 13),
             lambda m: m.image.resize_with_crop_or_pad(x[1], 8, 2),
             lambda m: m.image.crop_to_bounding_box(x, 1, 2, 3, 4),
             lambda m: m.image.pad_to_bounding_box(x, 1, 2, 8, 12),
             lambda m: m.image.flip_left_right(x), lambda m: m.image.flip_up_down(x[0])]
    calls += [lambda m, f=f: m.image.central_crop(x, f) for f in (0.1, 0.33, 0.5, 0.7, 0.99)]
    calls += [lambda m, k=k: m.image.rot90(x, k) for k in range(-3, 5)]
    for call in calls:
        want, got = call(real), call(tf)
        assert got.shape == tuple(want.shape)
        np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(image_transpose(x).numpy(), real.image.transpose(x).numpy())


@pytest.mark.peers
def test_peers_convert_image_dtype():
    real = _tensorflow()
    rng = np.random.default_rng(11)
    kinds = ["float32", "float64", "float16", "uint8", "int32", "int8", "uint16", "int64"]
    for src in kinds:
        s = real.as_dtype(src)
        v = rng.integers(s.min, s.max, 50, endpoint=True) if s.is_integer else \
            rng.uniform(0, 1, 50)
        v = np.array(v).astype(src)
        for dst in kinds + ["bfloat16"]:
            d = real.as_dtype(dst)
            for saturate in (False, True):
                # TensorFlow's overflowing float-to-int casts give the machine's value
                if s.is_floating and d.is_integer and (d.size >= 4 or d.max > s.max):
                    if not saturate or dst == "int64" or src == "float16":
                        continue
                want = real.image.convert_image_dtype(v, d, saturate=saturate)
                got = tf.image.convert_image_dtype(v, getattr(tf, dst), saturate=saturate)
                assert got.dtype.name == want.dtype.name
                np.testing.assert_allclose(np.asarray(got.numpy(), float),
                                           np.asarray(want.numpy(), float), rtol=1e-3)


@pytest.mark.peers
@pytest.mark.parametrize("dt", ["float32", "float64", "float16", "uint8", "int32"])
def test_peers_adjustments_and_measures(dt):
    real = _tensorflow()
    x = real.image.convert_image_dtype(
        np.random.default_rng(12).uniform(0, 1, (2, 5, 7, 3)).astype(np.float32), dt).numpy()
    tol = 1e-2 if dt == "float16" else 1e-5
    calls = [lambda m, t: m.image.adjust_brightness(t, 0.3),
             lambda m, t: m.image.adjust_gamma(t, 0.7, 1.3),
             lambda m, t: m.image.per_image_standardization(t),
             lambda m, t: m.image.rgb_to_grayscale(t),
             lambda m, t: m.image.grayscale_to_rgb(t[..., :1]),
             lambda m, t: m.image.image_gradients(t)[0], lambda m, t: m.image.image_gradients(t)[1]]
    if dt != "float16":  # TensorFlow's CPU has no float16 contrast kernel
        calls.append(lambda m, t: m.image.adjust_contrast(t, 1.7))
    if dt != "uint8":  # nor a uint8 abs
        calls.append(lambda m, t: m.image.total_variation(t))
    for call in calls:
        want, got = call(real, real.constant(x)), call(tf, tf.constant(x))
        assert got.dtype.name == want.dtype.name and got.shape == tuple(want.shape)
        np.testing.assert_allclose(np.asarray(got.numpy(), float), np.asarray(want.numpy(), float),
                                   rtol=tol, atol=tol)
