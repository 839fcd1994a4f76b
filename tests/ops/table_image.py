"""Op-table rows of src/tapeflow/ops/image.py: tf.image's ops, all composites.

tf.image.resize gives float32 whatever its input (TensorFlow's rule), so the resize rows
call its dtype-keeping core `_resized` (the public op is that and a cast); "nearest"
keeps the dtype and goes through the public op. The NumPy reference builds each axis's
interpolation matrix pixel by pixel from TensorFlow's definitions (float32 source
positions, half-pixel centers, bicubic's table of 1024 fractions, area's overlaps, the
scale-and-translate kernels), independently of the module's vectorized taps.
"""

from __future__ import annotations

import math

import numpy as np

import tapeflow as tf
from tapeflow.ops.image import _resized

from op_table import Row, args, normal, uniform

F = np.float32


def _keys(d):
    d = abs(d)
    if d < 1:
        return (1.5 * d - 2.5) * d * d + 1
    return ((-0.5 * d + 2.5) * d - 4) * d + 2 if d < 2 else 0.


def _lanczos(r):
    def k(d):
        d = abs(d)
        if d > r:
            return 0.
        return 1. if d < 1e-3 else r * math.sin(math.pi * d) * math.sin(math.pi * d / r) / (
            math.pi ** 2 * d * d)
    return k


KERNELS = {"bilinear": (lambda d: max(0., 1 - abs(d)), 1.), "bicubic": (_keys, 2.),
           "lanczos3": (_lanczos(3.), 3.), "lanczos5": (_lanczos(5.), 5.),
           "gaussian": (lambda d: math.exp(-2 * d * d) if abs(d) < 1.5 else 0., 1.5),
           "mitchellcubic": (lambda d: (7 / 6 * abs(d) - 2) * d * d + 8 / 9 if abs(d) < 1 else (
               ((-7 / 18 * abs(d) + 2) * abs(d) - 10 / 3) * abs(d) + 16 / 9 if abs(d) < 2 else 0.),
               2.)}


def resize_matrix(method, n, m, antialias=False):
    """[m, n]: output row o as a combination of the input rows, as TensorFlow defines it."""
    out = np.zeros((m, n))
    scale = F(n) / F(m)
    for o in range(m):
        centre = (F(o) + F(0.5)) * scale
        if method == "nearest":
            out[o, min(int(np.floor(centre)), n - 1)] = 1.
        elif method == "area":
            start, end = float(F(o) * scale), float(F(o + 1) * scale)
            for i in range(int(np.floor(start)), int(np.ceil(end))):
                out[o, min(i, n - 1)] += (min(i + 1., end) - max(float(i), start)) / float(scale)
        elif method in ("bilinear", "bicubic") and not antialias:
            src = centre - F(0.5)
            base = int(np.floor(src))
            if method == "bilinear":
                frac = float(src - F(base))
                out[o, max(base, 0)] += 1 - frac
                out[o, min(int(np.ceil(src)), n - 1)] += frac
                continue
            t = float(np.rint((src - F(base)) * F(1024))) / 1024
            w = [F(_keys(d)) for d in (1 + t, t, 1 - t, 2 - t)]
            w = [wk if 0 <= base - 1 + k < n else F(0) for k, wk in enumerate(w)]
            total = F(1) / (w[0] + w[1] + w[2] + w[3])
            for k in range(4):
                out[o, min(max(base - 1 + k, 0), n - 1)] += float(w[k] * total)
        else:
            kernel, radius = KERNELS[method]
            stretch = max(float(F(1) / (F(m) / F(n))), 1.) if antialias else 1.
            c = float((F(o) + F(0.5)) * (F(1) / (F(m) / F(n))))
            w = {i: kernel((i + 0.5 - c) / stretch) for i in range(n)
                 if abs(i + 0.5 - c) < radius * stretch + 0.5}
            total = sum(w.values())
            for i, wi in w.items():
                out[o, i] += wi / total
    return out


def resize_reference(x, size, method, antialias=False):
    rows = resize_matrix(method, x.shape[-3], size[0], antialias)
    cols = resize_matrix(method, x.shape[-2], size[1], antialias)
    return np.einsum("oh,...hwc,pw->...opc", rows, x, cols)


def _resize_row(name, method, shape, size, antialias=False):
    return Row(name, lambda x: _resized(x, size, method, antialias), args(normal(*shape)),
               lambda x: resize_reference(x, size, method, antialias), prims=("gather",))


def _standardize(x):
    centred = x - x.mean(axis=(-3, -2, -1), keepdims=True)
    return centred / np.maximum(x.std(axis=(-3, -2, -1), keepdims=True), 1 / np.sqrt(x[0].size))


def _np_rot90(x, k):
    return np.rot90(x, k, axes=(-3, -2))


def _np_tv(x):
    return np.abs(np.diff(x, axis=-3)).sum((-3, -2, -1)) + np.abs(np.diff(x, axis=-2)).sum(
        (-3, -2, -1))


ROWS: list = [
    # resize, each method up and down at odd sizes (the gathers and their weights)
    _resize_row("resize_bilinear_up", "bilinear", (2, 3, 5, 2), (7, 9)),
    _resize_row("resize_bilinear_down", "bilinear", (2, 7, 9, 2), (3, 4)),
    _resize_row("resize_bicubic_up", "bicubic", (1, 4, 5, 2), (9, 7)),
    _resize_row("resize_bicubic_down", "bicubic", (1, 9, 7, 3), (4, 3)),
    _resize_row("resize_area_down", "area", (2, 7, 9, 1), (3, 4)),
    _resize_row("resize_area_up", "area", (2, 3, 2, 2), (5, 7)),
    _resize_row("resize_bilinear_antialias", "bilinear", (1, 9, 8, 2), (4, 3), antialias=True),
    _resize_row("resize_bicubic_antialias_rank3", "bicubic", (9, 8, 2), (3, 5), antialias=True),
    _resize_row("resize_lanczos3", "lanczos3", (1, 6, 7, 1), (9, 4)),
    _resize_row("resize_lanczos5_antialias", "lanczos5", (1, 11, 4, 1), (4, 6), antialias=True),
    _resize_row("resize_gaussian", "gaussian", (1, 5, 6, 2), (8, 3), antialias=True),
    _resize_row("resize_mitchellcubic", "mitchellcubic", (1, 5, 6, 1), (3, 8), antialias=True),
    Row("resize_nearest", lambda x: tf.image.resize(x, [7, 3], "nearest"), args(normal(2, 4, 5, 2)),
        lambda x: resize_reference(x, (7, 3), "nearest"), prims=("gather",)),
    # crops, pads and flips
    Row("crop_to_bounding_box", lambda x: tf.image.crop_to_bounding_box(x, 1, 2, 3, 2),
        args(normal(2, 5, 6, 2)), lambda x: x[:, 1:4, 2:4], prims=("getitem",)),
    Row("pad_to_bounding_box", lambda x: tf.image.pad_to_bounding_box(x, 2, 1, 6, 5),
        args(normal(3, 2, 3)), lambda x: np.pad(x, ((2, 1), (1, 2), (0, 0))),
        prims=("getitem_transpose",)),
    Row("resize_with_crop_or_pad", lambda x: tf.image.resize_with_crop_or_pad(x, 3, 8),
        args(normal(2, 6, 5, 1)), lambda x: np.pad(x[:, 1:4], ((0, 0), (0, 0), (1, 2), (0, 0))),
        prims=("getitem", "getitem_transpose")),
    Row("central_crop", lambda x: tf.image.central_crop(x, 0.5), args(normal(1, 7, 6, 2)),
        lambda x: x[:, 1:6, 1:5], prims=("getitem",)),
    Row("flip_left_right", lambda x: tf.image.flip_left_right(x), args(normal(2, 3, 4, 2)),
        lambda x: x[:, :, ::-1], prims=("getitem",)),
    Row("flip_up_down", lambda x: tf.image.flip_up_down(x), args(normal(3, 4, 2)),
        lambda x: x[::-1], prims=("getitem",)),
    Row("rot90", lambda x: tf.image.rot90(x), args(normal(2, 3, 4, 1)),
        lambda x: _np_rot90(x, 1), prims=("getitem", "transpose")),
    Row("rot90_three", lambda x: tf.image.rot90(x, 3), args(normal(3, 5, 2)),
        lambda x: _np_rot90(x, 3), prims=("getitem", "transpose")),  # the image transpose
    Row("rot90_two", lambda x: tf.image.rot90(x, -2), args(normal(2, 3, 4, 1)),
        lambda x: _np_rot90(x, 2), prims=("getitem",)),
    # adjustments (float images are adjusted in their own dtype)
    # (results away from 0: TensorFlow computes float64 brightness in float32)
    Row("adjust_brightness", lambda x, d: tf.image.adjust_brightness(x, d),
        args(uniform(1.0, 2.0, 2, 3, 4, 3), uniform(0.5, 1.0)), lambda x, d: x + d,
        prims=("add",)),
    Row("adjust_contrast", lambda x, c: tf.image.adjust_contrast(x, c),
        args(normal(2, 3, 4, 3), uniform(0.5, 2.0)),
        lambda x, c: (x - x.mean((1, 2), keepdims=True)) * c + x.mean((1, 2), keepdims=True),
        prims=("subtract", "multiply", "reduce_sum")),
    Row("adjust_gamma", lambda x, g, k: tf.image.adjust_gamma(x, g, k),
        args(uniform(0.2, 1.0, 3, 4, 2), uniform(0.5, 2.0), uniform(0.5, 2.0)),
        lambda x, g, k: k * x ** g, prims=("pow", "multiply")),
    Row("image_gradients", lambda x: tf.concat(tf.image.image_gradients(x), -1),
        args(normal(2, 3, 4, 2)),
        lambda x: np.concatenate([np.pad(np.diff(x, axis=1), ((0, 0), (0, 1), (0, 0), (0, 0))),
                                  np.pad(np.diff(x, axis=2), ((0, 0), (0, 0), (0, 1), (0, 0)))],
                                 -1), prims=("getitem", "getitem_transpose", "subtract")),
    Row("total_variation", lambda x: tf.image.total_variation(x), args(normal(2, 3, 4, 2)), _np_tv,
        prims=("abs", "subtract")),
    Row("total_variation_rank3", lambda x: tf.image.total_variation(x), args(normal(3, 4, 2)),
        _np_tv, prims=("abs", "subtract")),
]

NONDIFF_ROWS: list = []
EXEMPT: dict = {}
