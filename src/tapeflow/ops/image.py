"""tf.image on NHWC images (rank 4, or rank 3 for one image): resizing, crops, flips,
dtype conversion, colour adjustments, measures (the colour spaces are in image_color.py,
the quality measures in image_quality.py). Every op is a composite of earlier
families' ops (their rules are its rules); the random ops draw through tf.random's
seeded sequences (NOTE(draws)), anew at each call of a traced function.

NOTE(resize-taps): a resize is separable. Along each axis, output row o is a weighted
sum of a few input rows, out[o] = sum_t w[o, t] * x[idx[o, t]], the indices and weights
computed in NumPy from the sizes and applied as one `gather` and one multiply per tap
(the derivative: the transposed gathers). The weights are TensorFlow's: half-pixel
centers, source positions in float32 (nearest picks the same pixel at exact ties),
bicubic's Keys kernel (a = -0.5) at fractions rounded to 1/1024 with taps outside the
image dropped and the rest renormalized, area's overlaps, and for `antialias` and the
lanczos, gaussian and mitchellcubic methods the kernel stretched by the downscaling
factor. Other sizes get other weights: a size-generic trace keeps a graph per size.

Where TensorFlow converts float64 to float32 before computing (resize, contrast,
brightness, standardization), tapeflow computes in float64 and gives
TensorFlow's output dtype: the values agree to float32's precision.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .complex import abs as _abs
from .convert import as_tensor, check_dtype, int_arg, int_list
from .elementwise import (add, cast, divide, floordiv, floormod, greater, less, maximum, minimum,
                          multiply, subtract, where)
from .indexing import gather_p, getitem
from .random import uniform
from .reduction import reduce_mean, reduce_std, reduce_sum
from .shape import pad, reshape, reverse, transpose as _transpose
from .structural import dtype_of, shape_of
from .transcendental import pow as _pow

_F32 = np.float32


# ---------------------------------------------------------------- argument checks
def _image(x: Any, op: str, arg: str = "image", ranks: tuple = (3, 4),
           nonempty: bool = False) -> Tensor:
    t = as_tensor(x, op, arg)
    s = shape_of(t)
    if len(s) < 3:
        raise ValueError(f"{op}: '{arg}' (shape {s}) must be at least three-dimensional.")
    if len(s) not in ranks:
        raise ValueError(f"{op}: '{arg}' (shape {s}) must have either 3 or 4 dimensions.")
    if nonempty and 0 in s[-3:]:
        raise ValueError(f"{op}: inner 3 dims of '{arg}.shape' must be > 0: {s}")
    return t


def _number(value: Any, op: str, arg: str) -> float:
    v = np.asarray(value)
    if v.size != 1 or v.dtype.kind not in "iuf":
        raise TypeError(f"{op}: `{arg}` must be a real number; got {value!r}.")
    return float(v.reshape(()))


def _working_float(x: Tensor) -> Tensor:
    """x as TensorFlow's adjustments compute on it: float16/32/64 as they are, others
    scaled to float32."""
    d = dtype_of(x)
    return x if d in (np.float16, np.float32, np.float64) else convert_image_dtype(x, _dt.float32)


def _scalar_like(value: Any, x: Tensor, op: str, arg: str) -> Tensor:
    """A number or a tensor (the gradient flows to it) cast to x's dtype."""
    t = as_tensor(value if isinstance(value, TensorBase) else np.asarray(value), op, arg)
    check_dtype(t, "fiu", op, arg)
    return cast(t, dtype_of(x))


# ---------------------------------------------------------------- resize (NOTE(resize-taps))
def _keys(x: np.ndarray) -> np.ndarray:
    return np.where(x < 1, (1.5 * x - 2.5) * x * x + 1,
                    np.where(x < 2, ((-0.5 * x + 2.5) * x - 4) * x + 2, 0.))


def _lanczos(r: float) -> Any:
    def kernel(x: np.ndarray) -> np.ndarray:
        with np.errstate(all="ignore"):
            v = r * np.sin(np.pi * x) * np.sin(np.pi * x / r) / (np.pi ** 2 * x * x)
        return np.where(x > r, 0., np.where(x < 1e-3, 1., v))
    return kernel


# method -> (kernel of |distance|, radius): the antialiased and kernel-only methods
_KERNELS = {
    "bilinear": (lambda x: np.maximum(0., 1 - x), 1.),
    "bicubic": (_keys, 2.),
    "lanczos3": (_lanczos(3.), 3.),
    "lanczos5": (_lanczos(5.), 5.),
    "gaussian": (lambda x: np.where(x < 1.5, np.exp(-2. * x * x), 0.), 1.5),  # sigma 1/2
    "mitchellcubic": (lambda x: np.where(x < 1, (7 / 6 * x - 2) * x * x + 8 / 9, np.where(
        x < 2, ((-7 / 18 * x + 2) * x - 10 / 3) * x + 16 / 9, 0.)), 2.),
}
METHODS = ("bilinear", "nearest", "bicubic", "area") + tuple(_KERNELS)[2:]


def _taps(method: str, n: int, m: int, antialias: bool) -> tuple:
    """(idx [m, T], weights [m, T] or None: a pick) resampling n rows to m rows."""
    o = np.arange(m)
    scale = _F32(n) / _F32(m)
    if method == "nearest":
        src = np.floor((o.astype(_F32) + _F32(0.5)) * scale)
        return np.clip(src, 0, n - 1).astype(np.int64)[:, None], None
    if method == "area":  # each input row weighted by its overlap with [o, o + 1) * scale
        start, end = o.astype(_F32) * scale, (o + 1).astype(_F32) * scale
        idx = np.floor(start).astype(np.int64)[:, None] + np.arange(int(np.ceil(scale)) + 2)
        lap = np.minimum(idx + 1., end[:, None]) - np.maximum(idx, start[:, None])
        return np.clip(idx, 0, n - 1), np.maximum(lap, 0.) / float(scale)
    if antialias or method not in ("bilinear", "bicubic"):
        return _kernel_taps(method, n, m, antialias)
    src = (o.astype(_F32) + _F32(0.5)) * scale - _F32(0.5)
    base = np.floor(src)
    if method == "bilinear":
        frac = (src - base).astype(np.float64)
        lo, hi = np.maximum(base, 0), np.minimum(np.ceil(src), n - 1)
        return np.stack([lo, hi], 1).astype(np.int64), np.stack([1 - frac, frac], 1)
    t = np.rint((src - base) * _F32(1024)).astype(float) / 1024  # TensorFlow's table
    w = _keys(np.stack([1 + t, t, 1 - t, 2 - t], 1)).astype(_F32)
    idx = base.astype(np.int64)[:, None] + np.arange(-1, 3)
    w = np.where((idx >= 0) & (idx < n), w, _F32(0))
    total = ((w[:, 0] + w[:, 1]) + w[:, 2]) + w[:, 3]  # in TensorFlow's order, in float32
    return np.clip(idx, 0, n - 1), (w * (_F32(1) / total)[:, None]).astype(float)


def _kernel_taps(method: str, n: int, m: int, antialias: bool) -> tuple:
    """TensorFlow's scale-and-translate sampling (antialias: stretched to downscale)."""
    kernel, radius = _KERNELS[method]
    inv = _F32(1) / (_F32(m) / _F32(n))
    stretch = max(float(inv), 1.) if antialias else 1.
    reach = radius * stretch
    centre = ((np.arange(m).astype(_F32) + _F32(0.5)) * inv).astype(np.float64)
    first = np.clip(np.ceil(centre - reach - 0.5), 0, n - 1).astype(np.int64)
    last = np.clip(np.floor(centre + reach - 0.5), 0, n - 1).astype(np.int64)
    idx = first[:, None] + np.arange(min(2 * math.ceil(reach) + 1, n))
    w = np.where(idx <= last[:, None], kernel(np.abs(idx + 0.5 - centre[:, None]) / stretch), 0.)
    total = w.sum(1, keepdims=True)
    w = np.where(np.abs(total) > 1e-35, w / np.where(total == 0, 1., total), w)
    return np.clip(idx, 0, n - 1), np.where(((centre >= 0) & (centre <= n))[:, None], w, 0.)


def _resample(x: Tensor, axis: int, idx: np.ndarray, w: np.ndarray | None) -> Tensor:
    if w is not None:
        keep = np.abs(w).sum(0) > 0  # drop taps no output row uses
        idx, w = idx[:, keep], w[:, keep]
    if idx.shape == (shape_of(x)[axis], 1) and (idx[:, 0] == np.arange(idx.shape[0])).all() \
            and (w is None or (w == 1).all()):
        return x  # the same size, and weights that copy each row
    shape = [1] * axis + [idx.shape[0]] + [1] * (len(shape_of(x)) - axis - 1)
    out = None
    for t in range(idx.shape[1]):
        term = bind(gather_p, x, Tensor(idx[:, t]), axis=axis)
        if w is not None:
            term = multiply(term, Tensor(np.asarray(w[:, t].reshape(shape), dtype_of(x))))
        out = term if out is None else add(out, term)
    return out


def _resized(x: Tensor, size: tuple, method: str, antialias: bool = False) -> Tensor:
    rank = len(shape_of(x))
    for axis, m in zip((rank - 3, rank - 2), size):
        x = _resample(x, axis, *_taps(method, shape_of(x)[axis], m, antialias))
    return x


class ResizeMethod:
    """The names of tf.image.resize's methods, as TensorFlow's `tf.image.ResizeMethod`.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.ResizeMethod.BICUBIC
        'bicubic'
    """

    BILINEAR, NEAREST_NEIGHBOR, BICUBIC, AREA = "bilinear", "nearest", "bicubic", "area"
    LANCZOS3, LANCZOS5, GAUSSIAN, MITCHELLCUBIC = METHODS[4:]


def resize(images: Any, size: Any, method: str = "bilinear", preserve_aspect_ratio: bool = False,
           antialias: bool = False, name: str | None = None) -> Tensor:
    """`images` resized to `size` = [height, width] with TensorFlow's methods and values
    (NOTE(resize-taps)), `antialias` and `preserve_aspect_ratio`: float32, or for
    "nearest" the images' dtype. The gradient flows to the images.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(4.), [1, 2, 2, 1])
        >>> tf.image.resize(x, [1, 3])[0, :, :, 0].numpy().tolist()
        [[1.0, 1.5, 2.0]]
    """
    op = "image.resize"
    x = _image(images, op, "images")
    check_dtype(x, "fiu", op, "images")
    if method not in METHODS:
        raise ValueError(f"{op}: Resize method is not implemented: {method!r}; see {METHODS}")
    h, w = shape_of(x)[-3:-1]
    arr = np.asarray(size)
    if arr.shape != (2,) or arr.dtype.kind not in "iu":
        raise ValueError(f"{op}: 'size' must be a 1-D int32 Tensor of 2 elements; got {size!r}")
    new = int(arr[0]), int(arr[1])
    if preserve_aspect_ratio and h and w:
        s = min(_F32(new[0]) / _F32(h), _F32(new[1]) / _F32(w))
        new = int(np.round(s * _F32(h))), int(np.round(s * _F32(w)))
    if min(new) <= 0:
        raise InvalidArgumentError(f"{op}: output dimensions must be positive; got {new}.")
    if 0 in shape_of(x)[-3:]:
        raise InvalidArgumentError(f"{op}: input image must be of non-zero size: {shape_of(x)}")
    if method == "nearest":
        return _resized(x, new, method)
    if dtype_of(x) != np.float64:
        x = cast(x, _dt.float32)
    return cast(_resized(x, new, method, antialias), _dt.float32)


def _target(value: Any, op: str, arg: str) -> int:
    v = int_arg(value, op, arg)
    if v <= 0:
        raise ValueError(f"{op}: {arg} must be > 0.")
    return v


def resize_with_pad(image: Any, target_height: Any, target_width: Any, method: str = "bilinear",
                    antialias: bool = False) -> Tensor:
    """`image` resized to fit [target_height, target_width] with its aspect ratio, then
    padded with zeros, centred, to that size (TensorFlow's sizes and offsets).

    Example:
        >>> import tapeflow as tf
        >>> tf.image.resize_with_pad(tf.ones([2, 4, 1]), 4, 4)[:, 0, 0].numpy().tolist()
        [0.0, 1.0, 1.0, 0.0]
    """
    op = "image.resize_with_pad"
    x = _image(image, op, nonempty=True)
    th, tw = _target(target_height, op, "target_height"), _target(target_width, op, "target_width")
    h, w = (_F32(d) for d in shape_of(x)[-3:-1])
    ratio = max(w / _F32(tw), h / _F32(th))
    rh, rw = h / ratio, w / ratio
    resized = resize(x, [int(np.floor(rh)), int(np.floor(rw))], method, antialias=antialias)
    top, left = (max(0, int(np.floor((_F32(t) - r) / _F32(2)))) for t, r in ((th, rh), (tw, rw)))
    return pad_to_bounding_box(resized, top, left, th, tw)


# ---------------------------------------------------------------- crops, pads, flips
def _box(image: Any, op: str, *values: Any) -> tuple:
    return (_image(image, op),) + tuple(int_arg(v, op, a) for v, a in zip(values, (
        "offset_height", "offset_width", "target_height", "target_width")))


def crop_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                         target_width: Any) -> Tensor:
    """The [target_height, target_width] window of `image` whose top-left corner is at
    (offset_height, offset_width).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(9), [3, 3, 1])
        >>> tf.image.crop_to_bounding_box(x, 1, 0, 2, 2)[:, :, 0].numpy().tolist()
        [[3, 4], [6, 7]]
    """
    op = "image.crop_to_bounding_box"
    x, oh, ow, th, tw = _box(image, op, offset_height, offset_width, target_height, target_width)
    h, w = shape_of(x)[-3:-1]
    for v, what, bound in ((oh, "offset_height", ">="), (ow, "offset_width", ">="),
                           (th - 1, "target_height", ">"), (tw - 1, "target_width", ">")):
        if v < 0:
            raise ValueError(f"{op}: {what} must be {bound} 0.")
    if w < tw + ow or h < th + oh:
        raise ValueError(f"{op}: {'width' if w < tw + ow else 'height'} must be >= target + "
                         f"offset; got {(h, w)}, offsets {(oh, ow)}, target {(th, tw)}.")
    return getitem(x, (Ellipsis, slice(oh, oh + th), slice(ow, ow + tw), slice(None)))


def pad_to_bounding_box(image: Any, offset_height: Any, offset_width: Any, target_height: Any,
                        target_width: Any) -> Tensor:
    """`image` in a [target_height, target_width] canvas of zeros, its top-left corner at
    (offset_height, offset_width).

    Example:
        >>> import tapeflow as tf
        >>> tf.image.pad_to_bounding_box(tf.ones([1, 2, 1]), 1, 0, 3, 3)[:, :, 0].numpy().tolist()
        [[0.0, 0.0, 0.0], [1.0, 1.0, 0.0], [0.0, 0.0, 0.0]]
    """
    op = "image.pad_to_bounding_box"
    x, oh, ow, th, tw = _box(image, op, offset_height, offset_width, target_height, target_width)
    h, w = shape_of(x)[-3:-1]
    if min(oh, ow) < 0:
        raise ValueError(f"{op}: offset_{'height' if oh < 0 else 'width'} must be >= 0")
    if th - oh < h or tw - ow < w:
        raise ValueError(f"{op}: {'height' if th - oh < h else 'width'} must be <= target - "
                         f"offset; got image {(h, w)}, offsets {(oh, ow)}, target {(th, tw)}.")
    lead = [[0, 0]] * (len(shape_of(x)) - 3)
    return pad(x, lead + [[oh, th - oh - h], [ow, tw - ow - w], [0, 0]])


def resize_with_crop_or_pad(image: Any, target_height: Any, target_width: Any) -> Tensor:
    """`image` cropped or zero-padded, centred, to [target_height, target_width].

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(1, 5), [1, 4, 1])
        >>> tf.image.resize_with_crop_or_pad(x, 3, 2)[:, :, 0].numpy().tolist()
        [[0, 0], [2, 3], [0, 0]]
    """
    op = "image.resize_with_crop_or_pad"
    x = _image(image, op)
    th, tw = _target(target_height, op, "target_height"), _target(target_width, op, "target_width")
    h, w = shape_of(x)[-3:-1]
    x = crop_to_bounding_box(x, max((h - th) // 2, 0), max((w - tw) // 2, 0), min(th, h),
                             min(tw, w))
    return pad_to_bounding_box(x, max((th - h) // 2, 0), max((tw - w) // 2, 0), th, tw)


def central_crop(image: Any, central_fraction: float) -> Tensor:
    """The central `central_fraction` (in (0, 1]) of `image`'s height and width.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(16), [4, 4, 1])
        >>> tf.image.central_crop(x, 0.5)[:, :, 0].numpy().tolist()
        [[5, 6], [9, 10]]
    """
    op = "image.central_crop"
    x = _image(image, op, nonempty=True)
    fraction = _number(central_fraction, op, "central_fraction")
    if not 0 < fraction <= 1:
        raise ValueError(f"{op}: central_fraction must be within (0, 1]; got {fraction}.")
    if fraction == 1:
        return x
    h, w = shape_of(x)[-3:-1]
    top, left = (int(_F32((d - d * fraction) / 2)) for d in (float(h), float(w)))
    return crop_to_bounding_box(x, top, left, h - 2 * top, w - 2 * left)


def _flipped(image: Any, op: str, axis: int) -> Tensor:
    x = _image(image, op, nonempty=True)
    return reverse(x, [len(shape_of(x)) + axis])


def flip_left_right(image: Any) -> Tensor:
    """`image` mirrored along its width.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.flip_left_right(tf.reshape(tf.range(3), [1, 3, 1]))[0, :, 0].numpy().tolist()
        [2, 1, 0]
    """
    return _flipped(image, "image.flip_left_right", -2)


def flip_up_down(image: Any) -> Tensor:
    """`image` mirrored along its height.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.flip_up_down(tf.reshape(tf.range(3), [3, 1, 1]))[:, 0, 0].numpy().tolist()
        [2, 1, 0]
    """
    return _flipped(image, "image.flip_up_down", -3)


def transpose(image: Any, name: str | None = None) -> Tensor:
    """`image` with its height and width swapped (tf.image.transpose).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.ops.image import transpose
        >>> transpose(tf.zeros([2, 5, 7, 3])).shape
        TensorShape([2, 7, 5, 3])
    """
    x = _image(image, "image.transpose", nonempty=True)
    r = len(shape_of(x))
    return _transpose(x, list(range(r - 3)) + [r - 2, r - 3, r - 1])


def rot90(image: Any, k: Any = 1, name: str | None = None) -> Tensor:
    """`image` rotated counter-clockwise by k * 90 degrees (any integer k, as np.rot90).

    Example:
        >>> import tapeflow as tf
        >>> tf.image.rot90(tf.reshape(tf.range(4), [2, 2, 1]))[:, :, 0].numpy().tolist()
        [[1, 3], [0, 2]]
    """
    op = "image.rot90"
    x = _image(image, op, nonempty=True)
    turns = int_arg(k, op, "k") % 4
    if turns == 2:
        return reverse(x, [len(shape_of(x)) - 3, len(shape_of(x)) - 2])
    if turns == 1:
        return transpose(flip_left_right(x))
    return flip_left_right(transpose(x)) if turns == 3 else x


# ---------------------------------------------------------------- dtypes and colour
def _limits(dt: np.dtype) -> tuple:
    kind = int if _dt.kind(dt) in "iu" else float
    return kind(_dt.from_numpy(dt).min), kind(_dt.from_numpy(dt).max)


def _saturate_cast(x: Tensor, dst: np.dtype) -> Tensor:
    """x clipped to the values both dtypes hold (for floats, up to the largest float not
    above dst's maximum), then cast: TensorFlow's saturate_cast."""
    src = dtype_of(x)
    lo, hi = max(_limits(src)[0], _limits(dst)[0]), min(_limits(src)[1], _limits(dst)[1])
    if _dt.kind(src) == "f":
        x = x if src.itemsize >= 4 else cast(x, _dt.float32)  # half types clip as float32
        work = dtype_of(x)
        top = np.asarray(hi, work)
        if float(top) > hi:
            top = np.nextafter(top, work.type(0))
        return cast(minimum(maximum(x, Tensor(np.asarray(lo, work))), Tensor(top)), dst)
    if (lo, hi) != _limits(src):
        x = minimum(maximum(x, Tensor(np.asarray(lo, src))), Tensor(np.asarray(hi, src)))
    return cast(x, dst)


def convert_image_dtype(image: Any, dtype: Any, saturate: bool = False,
                        name: str | None = None) -> Tensor:
    """`image` in `dtype` with TensorFlow's scaling (floats span [0, 1], integers [0,
    max]); `saturate` clips first (tapeflow's cast saturates floats anyway, where
    TensorFlow's result is the machine's). Float to float is a cast: the gradient flows.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.convert_image_dtype(tf.constant([0, 255], tf.uint8), tf.float32).numpy()
        array([0., 1.], dtype=float32)
        >>> tf.image.convert_image_dtype(tf.constant([0.5, 1.]), tf.uint8).numpy()
        array([127, 255], dtype=uint8)
    """
    op = "image.convert_image_dtype"
    x = as_tensor(image, op, "image")
    src, dst = dtype_of(x), _dt.as_dtype(dtype)._np
    for d, what in ((src, "image dtype"), (dst, "dtype")):
        if _dt.kind(d) not in "fiu":
            raise AttributeError(f"{op}: {what} must be either floating point or integer: {d}")
    convert = _saturate_cast if saturate else cast
    if src == dst:
        return x
    if _dt.kind(src) == "f" and _dt.kind(dst) == "f":
        return cast(x, dst)
    if _dt.kind(dst) == "f":
        return multiply(cast(x, dst), Tensor(np.asarray(1. / _limits(src)[1], dst)))
    if _dt.kind(src) == "f":
        return convert(multiply(x, Tensor(np.asarray(_limits(dst)[1] + 0.5, src))), dst)
    top_in, top_out = _limits(src)[1], _limits(dst)[1]
    if top_in > top_out:  # scale down, then cast
        return convert(floordiv(x, Tensor(np.asarray((top_in + 1) // (top_out + 1), src))), dst)
    return multiply(convert(x, dst), Tensor(np.asarray((top_out + 1) // (top_in + 1), dst)))


def _adjusted(image: Any, op: str, arg: str, adjust: Any) -> Tensor:
    """adjust(x) on x in floating point, converted back to the image's dtype, saturated."""
    x = as_tensor(image, op, arg)
    check_dtype(x, "fiu", op, arg)
    return convert_image_dtype(adjust(_working_float(x)), dtype_of(x), saturate=True)


def adjust_brightness(image: Any, delta: Any) -> Tensor:
    """`image` + `delta`; integer images are scaled to [0, 1], adjusted, converted back.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.adjust_brightness(tf.constant([[[0.2]]]), 0.5).numpy().ravel()
        array([0.7], dtype=float32)
    """
    op = "image.adjust_brightness"
    return _adjusted(image, op, "image", lambda x: add(x, _scalar_like(delta, x, op, "delta")))


def adjust_contrast(images: Any, contrast_factor: Any) -> Tensor:
    """(x - mean) * contrast_factor + mean, each channel's mean over height and width.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.adjust_contrast(tf.constant([[[1.], [3.]]]), 2.)[0, :, 0].numpy()
        array([0., 4.], dtype=float32)
    """
    op = "image.adjust_contrast"
    if len(s := shape_of(as_tensor(images, op, "images"))) < 3:
        raise InvalidArgumentError(f"{op}: `images` must be at least 3-D; got shape {s}.")
    return _adjusted(images, op, "images", lambda x: add(multiply(
        subtract(x, m := reduce_mean(x, axis=[-3, -2], keepdims=True)),
        _scalar_like(contrast_factor, x, op, "contrast_factor")), m))


def adjust_gamma(image: Any, gamma: Any = 1, gain: Any = 1) -> Tensor:
    """gain * image ** gamma (a number gamma must be >= 0; integers as adjust_brightness).

    Example:
        >>> import tapeflow as tf
        >>> tf.image.adjust_gamma(tf.constant([[[0.25]]]), 0.5, 2.).numpy().ravel()
        array([1.], dtype=float32)
    """
    op = "image.adjust_gamma"
    g = gamma if isinstance(gamma, TensorBase) else _number(gamma, op, "gamma")
    if not isinstance(g, TensorBase) and g < 0:  # a tensor's value is not read (traced, vmap)
        raise ValueError(f"{op}: Gamma should be a non-negative real number; got {gamma!r}.")
    return _adjusted(image, op, "image", lambda x: multiply(
        _scalar_like(gain, x, op, "gain"), _pow(x, _scalar_like(g, x, op, "gamma"))))


def per_image_standardization(image: Any) -> Tensor:
    """Each image (the last three axes) as float32 (x - mean) / max(stddev, 1 /
    sqrt(its size)); integers are not rescaled first.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.per_image_standardization(tf.constant([[[1.], [3.]]]))[0, :, 0].numpy()
        array([-1.,  1.], dtype=float32)
    """
    op = "image.per_image_standardization"
    x = _image(image, op, ranks=tuple(range(3, 33)))
    check_dtype(x, "fiub", op, "image")
    x, axes = x if dtype_of(x) in (np.float32, np.float64) else cast(x, _dt.float32), [-3, -2, -1]
    least = Tensor(np.asarray(1. / math.sqrt(max(int(np.prod(shape_of(x)[-3:])), 1)), dtype_of(x)))
    centred = subtract(x, reduce_mean(x, axis=axes, keepdims=True))
    return cast(divide(centred, maximum(reduce_std(x, axis=axes, keepdims=True), least)), "float32")


# ---------------------------------------------------------------- measures
def _step(x: Tensor, axis: int) -> Tensor:
    lead = (slice(None),) * axis
    return subtract(getitem(x, lead + (slice(1, None),)), getitem(x, lead + (slice(-1),)))


def image_gradients(image: Any) -> tuple:
    """(dy, dx): each pixel's difference with the one below and the one to its right.

    Example:
        >>> import tapeflow as tf
        >>> dy, dx = tf.image.image_gradients(tf.reshape(tf.range(4.), [1, 2, 2, 1]))
        >>> dy[0, :, :, 0].numpy().tolist(), dx[0, :, :, 0].numpy().tolist()
        ([[2.0, 2.0], [0.0, 0.0]], [[1.0, 0.0], [1.0, 0.0]])
    """
    op = "image.image_gradients"
    x = as_tensor(image, op, "image")
    if len(shape_of(x)) != 4:
        raise ValueError(f"{op}: expects a 4D tensor [batch_size, h, w, d], not {shape_of(x)}.")
    return (pad(_step(x, 1), [[0, 0], [0, 1], [0, 0], [0, 0]]),
            pad(_step(x, 2), [[0, 0], [0, 0], [0, 1], [0, 0]]))


def total_variation(images: Any, name: str | None = None) -> Tensor:
    """The sum of absolute differences of neighbouring pixels, per image of a batch.

    Example:
        >>> import tapeflow as tf
        >>> float(tf.image.total_variation(tf.reshape(tf.range(4.), [2, 2, 1])))
        6.0
    """
    op = "image.total_variation"
    x = _image(images, op, "images")
    check_dtype(x, "fi", op, "images")
    r, axes = len(shape_of(x)), [-3, -2, -1]
    return add(reduce_sum(_abs(_step(x, r - 3)), axis=axes),
               reduce_sum(_abs(_step(x, r - 2)), axis=axes))


# ---------------------------------------------------------------- random ops (NOTE(draws))
def _flip_at_random(image: Any, seed: Any, op: str, axis: int) -> Tensor:
    x = _image(image, op, nonempty=True)
    flipped = reverse(x, [len(shape_of(x)) + axis])
    if len(shape_of(x)) == 3:
        return where(less(uniform([], seed=seed), 0.5), flipped, x)
    n = shape_of(x)[0]  # each image of the batch on its own
    return where(greater(reshape(uniform([n], seed=seed), [n, 1, 1, 1]), 0.5), flipped, x)


def random_flip_left_right(image: Any, seed: int | None = None) -> Tensor:
    """`image` mirrored along its width with probability 1/2, each image on its own.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(2), [1, 2, 1])
        >>> sorted(tf.image.random_flip_left_right(x, seed=1)[0, :, 0].numpy().tolist())
        [0, 1]
    """
    return _flip_at_random(image, seed, "image.random_flip_left_right", -2)


def random_flip_up_down(image: Any, seed: int | None = None) -> Tensor:
    """`image` mirrored along its height with probability 1/2 (as random_flip_left_right).

    Example:
        >>> import tapeflow as tf
        >>> tf.image.random_flip_up_down(tf.zeros([4, 2, 3, 1]), seed=2).shape
        TensorShape([4, 2, 3, 1])
    """
    return _flip_at_random(image, seed, "image.random_flip_up_down", -3)


def random_crop(value: Any, size: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """A window of shape `size` (a size per axis of `value`) at a random offset.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.random_crop(tf.reshape(tf.range(10), [10, 1]), [3, 1], seed=5).shape
        TensorShape([3, 1])
    """
    op = "image.random_crop"
    x = as_tensor(value, op, "value")
    dims, want = shape_of(x), int_list(size, op, "size")
    if len(want) != len(dims) or any(not 0 <= s <= d for s, d in zip(want, dims)):
        raise InvalidArgumentError(f"{op}: need 0 <= size <= value.shape, a size per axis; "
                                   f"got value.shape {dims} and size {tuple(want)}.")
    if 0 in want:
        return getitem(x, tuple(slice(0, s) for s in want))
    limits = np.array([d - s + 1 for s, d in zip(want, dims)], np.int64)
    offsets = floormod(uniform([len(dims)], 0, 2 ** 31 - 1, _dt.int64, seed=seed), limits)
    for axis, s in enumerate(want):
        if limits[axis] > 1:
            rows = add(getitem(offsets, axis), Tensor(np.arange(s, dtype=np.int64)))
            x = bind(gather_p, x, rows, axis=axis)
    return x


def random_brightness(image: Any, max_delta: float, seed: int | None = None) -> Tensor:
    """adjust_brightness by a delta drawn uniformly from [-max_delta, max_delta).

    Example:
        >>> import tapeflow as tf
        >>> float(abs(tf.image.random_brightness(tf.zeros([2, 1, 1]), 0.1, seed=3)[0, 0, 0])) <= 0.1
        True
    """
    op = "image.random_brightness"
    top = _number(max_delta, op, "max_delta")
    if top < 0:
        raise ValueError(f"{op}: max_delta must be non-negative; got {max_delta!r}.")
    return adjust_brightness(image, uniform([], -top, top, seed=seed))


def random_contrast(image: Any, lower: float, upper: float, seed: int | None = None) -> Tensor:
    """adjust_contrast by a factor drawn uniformly from [lower, upper).

    Example:
        >>> import tapeflow as tf
        >>> float(tf.image.random_contrast(tf.ones([2, 2, 3]), 0.5, 1.5, seed=4).numpy().max())
        1.0
    """
    op = "image.random_contrast"
    lo, hi = _number(lower, op, "lower"), _number(upper, op, "upper")
    if hi <= lo:
        raise ValueError(f"{op}: upper must be > lower; got lower={lower!r}, upper={upper!r}.")
    if lo < 0:
        raise ValueError(f"{op}: lower must be non-negative; got {lower!r}.")
    return adjust_contrast(image, uniform([], lo, hi, seed=seed))


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {name: "image" for name in (
    "ResizeMethod", "resize", "resize_with_pad", "resize_with_crop_or_pad", "central_crop",
    "crop_to_bounding_box", "pad_to_bounding_box", "flip_left_right", "flip_up_down", "rot90",
    "convert_image_dtype", "adjust_brightness", "adjust_contrast", "adjust_gamma",
    "per_image_standardization", "image_gradients", "total_variation", "random_flip_left_right",
    "random_flip_up_down", "random_crop", "random_brightness", "random_contrast")}
