"""tf.image's colour spaces: RGB to and from HSV, YIQ, YUV and grayscale, on the last
axis of a tensor of any rank. Every op is a composite of earlier families' ops (their
rules are its rules).

HSV follows TensorFlow's kernels: hue in [0, 1) from the channel holding the maximum
(red, then green, then blue at ties), 0 where all three channels are equal; saturation 0
where the value is not positive; the inverse is the piecewise-linear form
((1 - s) + s * clip(...)) * v, which for hues outside [0, 1] is not periodic. float16 and
bfloat16 are computed in float32 and rounded once. The derivative is the formulas'
(through `where`, with divisors kept away from 0 on the branches not taken):
TensorFlow's hand-written gradient of rgb_to_hsv agrees with it where every channel is
positive and the maximum and minimum are single channels; it differs where a channel
is 0 or negative (it drops the terms of a channel that is not positive). TensorFlow's
hsv_to_rgb has no gradient; tapeflow's differentiates as its formula does.

YIQ and YUV are one matrix product with TensorFlow's matrices (those of the inverse
conversions are not the exact inverses, as there).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..errors import InvalidArgumentError
from ..tensor import Tensor
from .complex import abs as _abs
from .convert import as_tensor, check_dtype
from .einsum import tensordot
from .elementwise import (add, cast, divide, equal, greater, less, maximum, minimum, multiply,
                          subtract, where)
from .image import convert_image_dtype
from .indexing import getitem
from .shape import concat, expand_dims, stack
from .structural import dtype_of, shape_of

_RGB_TO_YIQ = [[0.299, 0.59590059, 0.2115], [0.587, -0.27455667, -0.52273617],
               [0.114, -0.32134392, 0.31119955]]
_YIQ_TO_RGB = [[1, 1, 1], [0.95598634, -0.27201283, -1.10674021],
               [0.6208248, -0.64720424, 1.70423049]]
_RGB_TO_YUV = [[0.299, -0.14714119, 0.61497538], [0.587, -0.28886916, -0.51496512],
               [0.114, 0.43601035, -0.10001026]]
_YUV_TO_RGB = [[1, 1, 1], [0, -0.394642334, 2.03206185], [1.13988303, -0.58062185, 0]]


def _three_channels(images: Any, op: str, kinds: str) -> Tensor:
    x = as_tensor(images, op, "images")
    check_dtype(x, kinds, op, "images")
    s = shape_of(x)
    if not s:
        raise InvalidArgumentError(f"{op}: `images` must be at least 1-D (a last axis of 3 "
                                   "channels); got a scalar.")
    if s[-1] != 3:
        raise InvalidArgumentError(f"{op}: `images` must have 3 channels in its last axis; got "
                                   f"shape {s}.")
    return x


def _wide(x: Tensor) -> Tensor:
    """x in the dtype the HSV formulas run in: half types in float32 (rounded once at the
    end), float32 and float64 as they are."""
    return x if dtype_of(x) in (np.float32, np.float64) else cast(x, _dt.float32)


def _channel(x: Tensor, k: int) -> Tensor:
    return getitem(x, (Ellipsis, k))


def _const(value: Any, like: Tensor) -> Tensor:
    return Tensor(np.asarray(value, dtype_of(like)))


def rgb_to_hsv(images: Any, name: str | None = None) -> Tensor:
    """RGB `images` (a last axis of 3, floating point) as hue, saturation and value, each
    in [0, 1] for channels in [0, 1], with TensorFlow's conventions at ties and at grays
    (hue 0); the images' dtype. Differentiable where the maximum and minimum are single
    channels and the hue is not at its wrap-around from 1 to 0.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.rgb_to_hsv(tf.constant([[0., 1., 1.], [0.5, 0.5, 0.5]])).numpy().tolist()
        [[0.5, 1.0, 1.0], [0.0, 0.0, 0.5]]
    """
    op = "image.rgb_to_hsv"
    x = _three_channels(images, op, "f")
    w = _wide(x)
    r, g, b = (_channel(w, k) for k in range(3))
    value = maximum(maximum(r, g), b)
    spread = subtract(value, minimum(minimum(r, g), b))
    zero, one = _const(0, w), _const(1, w)
    lit, colour = greater(value, zero), greater(spread, zero)
    saturation = where(lit, divide(spread, where(lit, value, one)), zero)
    # 1 / (6 spread) as TensorFlow rounds it (1 on the gray branch, not taken)
    norm = multiply(divide(one, where(colour, spread, one)), _const(1 / 6, w))
    hue = where(equal(r, value), multiply(norm, subtract(g, b)),
                where(equal(g, value), add(multiply(norm, subtract(b, r)), _const(2 / 6, w)),
                      add(multiply(norm, subtract(r, g)), _const(4 / 6, w))))
    hue = where(colour, hue, zero)
    hue = where(less(hue, zero), add(hue, one), hue)
    return cast(stack([hue, saturation, value], -1), dtype_of(x))


def hsv_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """HSV `images` (a last axis of hue, saturation, value; floating point) as RGB, with
    TensorFlow's piecewise-linear formula (hue not wrapped: 1.2 is red, as in
    TensorFlow); the images' dtype. Differentiable away from hues at multiples of 1/6.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.hsv_to_rgb(tf.constant([[0.5, 1., 1.], [0., 0., 0.5]])).numpy().tolist()
        [[0.0, 1.0, 1.0], [0.5, 0.5, 0.5]]
    """
    op = "image.hsv_to_rgb"
    x = _three_channels(images, op, "f")
    w = _wide(x)
    hue6 = multiply(getitem(w, (Ellipsis, slice(0, 1))), _const(6, w))
    sat, val = getitem(w, (Ellipsis, slice(1, 2))), getitem(w, (Ellipsis, slice(2, 3)))
    # per channel: red |6h - 3| - 1, green 2 - |6h - 2|, blue 2 - |6h - 4|, within [0, 1]
    ramp = add(multiply(_abs(subtract(hue6, _const([3, 2, 4], w))), _const([1, -1, -1], w)),
               _const([-1, 2, 2], w))
    ramp = minimum(maximum(ramp, _const(0, w)), _const(1, w))
    rgb = multiply(add(subtract(_const(1, w), sat), multiply(sat, ramp)), val)
    return cast(rgb, dtype_of(x))


def _linear(images: Any, op: str, matrix: list) -> Tensor:
    x = as_tensor(images, op, "images")
    if _dt.kind(dtype_of(x)) not in "fc":
        raise TypeError(f"{op}: `images` must be floating point or complex; got dtype "
                        f"{_dt.from_numpy(dtype_of(x)).name}.")
    x = _three_channels(x, op, "fc")
    return tensordot(x, _const(matrix, x), [[-1], [0]])


def rgb_to_yiq(images: Any) -> Tensor:
    """RGB `images` (a last axis of 3) as YIQ: luma and the two chroma axes (TensorFlow's
    matrix); floating point or complex, the images' dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.rgb_to_yiq(tf.constant([1., 0., 0.], tf.float64)).numpy().tolist()
        [0.299, 0.59590059, 0.2115]
    """
    return _linear(images, "image.rgb_to_yiq", _RGB_TO_YIQ)


def yiq_to_rgb(images: Any) -> Tensor:
    """YIQ `images` (a last axis of 3) as RGB (TensorFlow's matrix); floating point or
    complex, the images' dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.yiq_to_rgb(tf.constant([0.5, 0., 0.])).numpy().tolist()
        [0.5, 0.5, 0.5]
    """
    return _linear(images, "image.yiq_to_rgb", _YIQ_TO_RGB)


def rgb_to_yuv(images: Any) -> Tensor:
    """RGB `images` (a last axis of 3) as YUV: luma and the two colour differences
    (TensorFlow's matrix); floating point or complex, the images' dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.rgb_to_yuv(tf.constant([0., 0., 1.], tf.float64)).numpy().tolist()
        [0.114, 0.43601035, -0.10001026]
    """
    return _linear(images, "image.rgb_to_yuv", _RGB_TO_YUV)


def yuv_to_rgb(images: Any) -> Tensor:
    """YUV `images` (a last axis of 3) as RGB (TensorFlow's matrix); floating point or
    complex, the images' dtype.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.yuv_to_rgb(tf.constant([0.5, 0., 0.])).numpy().tolist()
        [0.5, 0.5, 0.5]
    """
    return _linear(images, "image.yuv_to_rgb", _YUV_TO_RGB)


def rgb_to_grayscale(images: Any, name: str | None = None) -> Tensor:
    """The luma of RGB `images` (weights 0.2989, 0.5870, 0.1140) as a last axis of 1;
    integer images are scaled to float32 and back, as TensorFlow's.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.rgb_to_grayscale(tf.constant([[0., 1., 0.]])).numpy()
        array([[0.587]], dtype=float32)
    """
    op = "image.rgb_to_grayscale"
    x = as_tensor(images, op, "images")
    check_dtype(x, "fiu", op, "images")
    if not shape_of(x) or shape_of(x)[-1] != 3:
        raise InvalidArgumentError(f"{op}: `images` must end in an axis of 3: {shape_of(x)}")
    # TensorFlow computes float64 in float32; float64 stays float64 here (the same values
    # to float32's precision)
    flt = x if dtype_of(x) == np.float64 else convert_image_dtype(x, _dt.float32)
    luma = Tensor(np.array([0.2989, 0.5870, 0.1140], dtype_of(flt)))
    return convert_image_dtype(expand_dims(tensordot(flt, luma, [[-1], [-1]]), -1), dtype_of(x))


def grayscale_to_rgb(images: Any, name: str | None = None) -> Tensor:
    """Grayscale `images` (a last axis of 1) repeated into three RGB channels.

    Example:
        >>> import tapeflow as tf
        >>> tf.image.grayscale_to_rgb(tf.constant([[0.5]])).numpy()
        array([[0.5, 0.5, 0.5]], dtype=float32)
    """
    op = "image.grayscale_to_rgb"
    x = as_tensor(images, op, "images")
    if len(shape_of(x)) < 2 or shape_of(x)[-1] != 1:
        raise ValueError(f"{op}: A grayscale image (shape {shape_of(x)}) must be at least "
                         "two-dimensional; Last dimension of a grayscale image should be size 1.")
    return concat([x, x, x], -1)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {name: "image" for name in (
    "rgb_to_hsv", "hsv_to_rgb", "rgb_to_yiq", "yiq_to_rgb", "rgb_to_yuv", "yuv_to_rgb",
    "rgb_to_grayscale", "grayscale_to_rgb")}
