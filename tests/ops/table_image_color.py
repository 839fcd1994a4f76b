"""Op-table rows of src/tapeflow/ops/image_color.py: tf.image's colour spaces, all
composites.

The HSV references are Python's colorsys, pixel by pixel (the textbook sextant formulas,
not the module's). HSV is piecewise: the RGB inputs have three distinct channels at least
0.1 apart (so the maximum and minimum are single channels and the hue is away from its
wrap-around at red), and the HSV inputs have hues at least 0.1 / 6 from the multiples
of 1/6 where the RGB ramps bend.
"""

from __future__ import annotations

import colorsys

import numpy as np

import tapeflow as tf

from op_table import Row, args, normal

YIQ = np.array([[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
                [0.114, -0.32134392, 0.31119955]])
YIQ_INV = np.array([[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
                    [0.6208248, -0.64720424, 1.70423049]])
YUV = np.array([[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
                [0.114, 0.43601035, -0.10001026]])
YUV_INV = np.array([[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]])


def distinct_rgb(*shape):
    """RGB pixels whose channels are distinct, 0.1 to 0.3 apart, in a random order."""
    def make(rng):
        low = rng.uniform(0.1, 0.3, shape + (1,))
        levels = np.cumsum(np.concatenate([low, rng.uniform(0.1, 0.3, shape + (2,))], -1), -1)
        order = np.argsort(rng.random(shape + (3,)), -1)
        return np.take_along_axis(levels, order, -1)
    return make


def smooth_hsv(*shape):
    """HSV pixels whose hues are inside one sixth of the circle, away from its ends."""
    def make(rng):
        hue = (rng.integers(0, 6, shape) + rng.uniform(0.1, 0.9, shape)) / 6
        return np.stack([hue, rng.uniform(0.2, 1, shape), rng.uniform(0.2, 1, shape)], -1)
    return make


def per_pixel(fn):
    def ref(x):
        flat = np.asarray(x, np.float64).reshape(-1, 3)
        return np.array([fn(*p) for p in flat]).reshape(np.shape(x))
    return ref


ROWS: list = [
    Row("rgb_to_hsv", lambda x: tf.image.rgb_to_hsv(x), args(distinct_rgb(2, 3, 4)),
        per_pixel(colorsys.rgb_to_hsv), prims=("maximum", "minimum", "divide", "select")),
    Row("rgb_to_hsv_pixels", lambda x: tf.image.rgb_to_hsv(x), args(distinct_rgb(7)),
        per_pixel(colorsys.rgb_to_hsv), prims=("maximum", "minimum", "divide", "select")),
    Row("hsv_to_rgb", lambda x: tf.image.hsv_to_rgb(x), args(smooth_hsv(2, 3, 4)),
        per_pixel(colorsys.hsv_to_rgb), prims=("abs", "maximum", "minimum", "multiply")),
    Row("hsv_to_rgb_pixels", lambda x: tf.image.hsv_to_rgb(x), args(smooth_hsv(12)),
        per_pixel(colorsys.hsv_to_rgb), prims=("abs", "maximum", "minimum", "multiply")),
    Row("rgb_to_yiq", lambda x: tf.image.rgb_to_yiq(x), args(normal(2, 3, 4, 3)),
        lambda x: x @ YIQ, prims=("einsum",)),
    Row("yiq_to_rgb", lambda x: tf.image.yiq_to_rgb(x), args(normal(5, 3)),
        lambda x: x @ YIQ_INV, prims=("einsum",)),
    Row("rgb_to_yuv", lambda x: tf.image.rgb_to_yuv(x), args(normal(3, 2, 3)),
        lambda x: x @ YUV, prims=("einsum",)),
    Row("yuv_to_rgb", lambda x: tf.image.yuv_to_rgb(x), args(normal(2, 3, 4, 3)),
        lambda x: x @ YUV_INV, prims=("einsum",)),
    Row("rgb_to_grayscale", lambda x: tf.image.rgb_to_grayscale(x), args(normal(2, 3, 4, 3)),
        lambda x: (x @ np.array([0.2989, 0.5870, 0.1140]))[..., None], prims=("einsum",)),
    Row("grayscale_to_rgb", lambda x: tf.image.grayscale_to_rgb(x), args(normal(2, 3, 1)),
        lambda x: np.concatenate([x, x, x], -1), prims=("concat",)),
]

NONDIFF_ROWS: list = []
EXEMPT: dict = {}
