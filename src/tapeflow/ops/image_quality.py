"""tf.image's image-quality measures: psnr, ssim and ssim_multiscale, on images [...,
height, width, channels] whose leading (batch) dimensions broadcast. Every op is a
composite of earlier families' ops (their rules are its rules).

As TensorFlow's, the images and `max_val` (cast to the images' dtype first) are converted
to float32 with convert_image_dtype's scaling (integers to [0, 1]), the result is
float32, and integer images carry no gradient. Where TensorFlow converts float64 to
float32, tapeflow computes in float64 and gives float32: the values agree to float32's
precision.

NOTE(ssim): SSIM compares local statistics under a Gaussian window of `filter_size`
taps and deviation `filter_sigma` (TensorFlow's: normalized, centred at (size - 1) / 2,
"VALID", so each map is filter_size - 1 smaller): with mu the windowed means,

    luminance = (2 mu_x mu_y + c1) / (mu_x^2 + mu_y^2 + c1)
    cs = (2 (E[xy] - mu_x mu_y) + c2) / (E[x^2] + E[y^2] - mu_x^2 - mu_y^2 + c2),

c1 = (k1 max_val)^2, c2 = (k2 max_val)^2; ssim is the mean of luminance * cs over the
map and the channels. The 2-D window is the outer product of a 1-D one, so each window
mean is two 1-D depthwise convolutions (2 * filter_size taps instead of its square).
The multiscale form halves the images between scales with 2x2 average pooling ("SAME":
an odd row or column at the end averages with itself, TensorFlow's symmetric padding),
and combines the scales' channel means, each clipped at 0, as prod_s cs_s ^ p_s with
the last scale's ssim in place of its cs. Every scale must be at least filter_size high
and wide.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..core import bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .complex import squared_difference
from .conv_variants import convolution
from .convert import as_tensor, check_dtype, int_arg
from .elementwise import add, cast, divide, multiply, square, subtract
from .image import convert_image_dtype
from .indexing import getitem
from .nn import relu
from .pooling import avg_pool2d
from .reduction import reduce_mean
from .shape import broadcast_to
from .structural import dtype_of, reshape_p, shape_of, shape_source
from .transcendental import log, pow as _pow

_F32, _F64 = np.dtype(np.float32), np.dtype(np.float64)
_MSSSIM_WEIGHTS = (0.0448, 0.2856, 0.3001, 0.2363, 0.1333)


# ---------------------------------------------------------------- arguments
def _image(img: Any, op: str, arg: str) -> Tensor:
    t = as_tensor(img, op, arg)
    if _dt.kind(dtype_of(t)) not in "fiu":
        raise AttributeError(f"{op}: `{arg}` dtype must be either floating point or integer; "
                             f"got {_dt.from_numpy(dtype_of(t)).name}.")
    if len(shape_of(t)) < 3:
        raise InvalidArgumentError(f"{op}: `{arg}` must have rank at least 3 ([..., height, "
                                   f"width, channels]); got shape {shape_of(t)}.")
    return t


def _pair(a: Any, b: Any, op: str, names: tuple) -> tuple:
    """Two images of equal height, width and channels whose leading dimensions broadcast."""
    x, y = _image(a, op, names[0]), _image(b, op, names[1])
    sx, sy = shape_of(x), shape_of(y)
    if sx[-3:] != sy[-3:]:
        raise InvalidArgumentError(f"{op}: `{names[0]}` and `{names[1]}` must have the same "
                                   f"height, width and channels; got shapes {sx} and {sy}.")
    for d1, d2 in zip(reversed(sx[:-3]), reversed(sy[:-3])):
        if d1 != d2 and 1 not in (d1, d2):
            raise InvalidArgumentError(f"{op}: the leading (batch) dimensions of `{names[0]}` "
                                       f"and `{names[1]}` must broadcast; got shapes {sx} and "
                                       f"{sy}.")
    return x, y


def _floated(x: Tensor, work: np.dtype) -> Tensor:
    """x as TensorFlow's measures see it: convert_image_dtype to `work` (integers scaled
    to [0, 1], floats cast)."""
    return x if dtype_of(x) == work else convert_image_dtype(x, work)


def _max_value(max_val: Any, image_dtype: np.dtype, work: np.dtype, op: str) -> Tensor:
    """max_val in the images' dtype, then converted as the images are (the gradient flows
    to a floating max_val tensor)."""
    if isinstance(max_val, TensorBase):
        m = as_tensor(max_val, op, "max_val")
        check_dtype(m, "fiu", op, "max_val")
    else:
        v = np.asarray(max_val)
        if v.dtype.kind not in "fiu":
            raise TypeError(f"{op}: `max_val` must be a real number (or numbers); got "
                            f"{max_val!r}.")
        m = Tensor(v)
    return _floated(cast(m, image_dtype), work)


def _work(*dts: np.dtype) -> np.dtype:
    return _F64 if all(d == _F64 for d in dts) else _F32


def _wide(*ts: Tensor) -> list:
    """The tensors in the dtype the measures compute in: float64 stays, the rest float32."""
    work = _work(*(dtype_of(t) for t in ts))
    return [t if dtype_of(t) == work else cast(t, work) for t in ts]


def _scalar(value: Any, like: Tensor, op: str, arg: str) -> Tensor:
    if isinstance(value, TensorBase):
        t = as_tensor(value, op, arg)
        check_dtype(t, "fiu", op, arg)
        return cast(t, dtype_of(like))
    v = np.asarray(value)
    if v.dtype.kind not in "fiu":
        raise TypeError(f"{op}: `{arg}` must be a real number; got {value!r}.")
    return Tensor(v.astype(dtype_of(like)))


def _window(filter_size: Any, filter_sigma: Any, op: str) -> np.ndarray:
    """The 1-D Gaussian window (NOTE(ssim)), float64; its outer square is TensorFlow's."""
    size = int_arg(filter_size, op, "filter_size")
    if size < 1:
        raise InvalidArgumentError(f"{op}: `filter_size` must be at least 1; got {size}.")
    sigma = np.asarray(filter_sigma)
    if sigma.size != 1 or sigma.dtype.kind not in "iuf":
        raise TypeError(f"{op}: `filter_sigma` must be a real number; got {filter_sigma!r}.")
    sigma = float(sigma.reshape(()))
    if sigma == 0 or math.isnan(sigma):
        raise InvalidArgumentError(f"{op}: `filter_sigma` must be nonzero; got {sigma}.")
    logits = -0.5 * np.square(np.arange(size) - (size - 1) / 2) / sigma ** 2
    weights = np.exp(logits - logits.max())
    return weights / weights.sum()


def _fits(x: Tensor, size: int, op: str, scale: int = 0, scales: int = 1) -> None:
    h, w = shape_of(x)[-3:-1]
    if min(h, w) >= size:
        return
    if scales == 1:
        raise InvalidArgumentError(f"{op}: the images are {h}x{w} (shape {shape_of(x)}); they "
                                   f"must be at least filter_size={size} high and wide.")
    least = (size - 1) * 2 ** (scales - 1) + 1
    raise InvalidArgumentError(f"{op}: at scale {scale} of {scales} the images are {h}x{w}, "
                               f"less than filter_size={size}: each scale halves them, so the "
                               f"images must be at least {least} high and wide.")


# ---------------------------------------------------------------- building blocks
def _flattened(x: Tensor, y: Tensor) -> tuple:
    """(x, y, lead): the images broadcast against each other and flattened to [N, H, W,
    C], and the leading sizes to restore. Flattened once here, so no reshape of an image
    is made twice (a traced gradient merges such copies' cotangents first, which would
    sum them in another order than eager)."""
    sx, sy = tuple(shape_source(x)), tuple(shape_source(y))
    lead = sx[:-3]
    if sx[:-3] != sy[:-3]:
        lead = tuple(np.broadcast_shapes(tuple(int(d) for d in sx[:-3]),
                                         tuple(int(d) for d in sy[:-3])))
        x, y = (t if s[:-3] == lead else broadcast_to(t, lead + s[-3:])
                for t, s in ((x, sx), (y, sy)))
    if len(lead) != 1:
        n = math.prod(lead)
        x, y = (bind(reshape_p, t, shape=(n,) + sx[-3:]) for t in (x, y))
    return x, y, lead


def _unflattened(v: Tensor, lead: tuple) -> Tensor:
    """v [N, ...] with its first axis as the leading sizes `lead`."""
    return v if len(lead) == 1 else bind(reshape_p, v, shape=lead + tuple(shape_source(v))[1:])


def _blur(x: Tensor, taps: np.ndarray) -> Tensor:
    """The Gaussian window's means of x [N, H, W, C] ("VALID"), channel by channel."""
    k, c = len(taps), shape_of(x)[-1]
    if c == 0:  # no channel to convolve: the empty map of the right shape
        return getitem(x, (Ellipsis, slice(k - 1, None), slice(k - 1, None), slice(None)))
    column = np.tile(taps.astype(dtype_of(x)).reshape(k, 1, 1, 1), (1, 1, 1, c))
    x = convolution(x, Tensor(column), padding="VALID")  # channel-wise: C groups of one
    return convolution(x, Tensor(column.reshape(1, k, 1, c)), padding="VALID")


def _halved(x: Tensor) -> Tensor:
    """x [N, H, W, C] averaged over 2x2 blocks, an odd last row or column on its own."""
    return avg_pool2d(x, 2, 2, "SAME")


def _stabilizers(max_val: Tensor, k1: Any, k2: Any, op: str) -> tuple:
    """(c1, c2) = ((k1 max_val)^2, (k2 max_val)^2), made once for all the scales: copies
    made per scale would be merged in a traced graph, which would then sum max_val's
    cotangents in another order than eager."""
    return tuple(square(multiply(_scalar(k, max_val, op, arg), max_val))
                 for k, arg in ((k1, "k1"), (k2, "k2")))


def _ssim_maps(x: Tensor, y: Tensor, taps: np.ndarray, c1: Tensor, c2: Tensor) -> tuple:
    """(luminance * cs, cs) maps [N, H - k + 1, W - k + 1, C] (NOTE(ssim))."""
    two = Tensor(np.asarray(2, dtype_of(x)))
    mean_x, mean_y = _blur(x, taps), _blur(y, taps)
    num0 = multiply(multiply(mean_x, mean_y), two)
    den0 = add(square(mean_x), square(mean_y))
    luminance = divide(add(num0, c1), add(den0, c1))
    num1 = multiply(_blur(multiply(x, y), taps), two)
    den1 = _blur(add(square(x), square(y)), taps)
    cs = divide(add(subtract(num1, num0), c2), add(subtract(den1, den0), c2))
    return multiply(luminance, cs), cs


# ---------------------------------------------------------------- the measures, in any float dtype
def _psnr(a: Tensor, b: Tensor, max_val: Tensor) -> Tensor:
    """psnr of float images in their dtype (half types computed in float32)."""
    out = dtype_of(a)
    a, b, m = _wide(a, b, max_val)
    mse = reduce_mean(squared_difference(a, b), [-3, -2, -1])
    ten = Tensor(np.asarray(10 / math.log(10), dtype_of(a)))
    return cast(subtract(multiply(multiply(log(m), ten), Tensor(np.asarray(2, dtype_of(a)))),
                         multiply(log(mse), ten)), out)


def _ssim(x: Tensor, y: Tensor, max_val: Tensor, filter_size: Any = 11, filter_sigma: Any = 1.5,
          k1: Any = 0.01, k2: Any = 0.03, return_index_map: bool = False,
          op: str = "image.ssim") -> Tensor:
    """ssim of float images in their dtype (half types computed in float32)."""
    out = dtype_of(x)
    x, y, m = _wide(x, y, max_val)
    taps = _window(filter_size, filter_sigma, op)
    _fits(x, len(taps), op)
    x, y, lead = _flattened(x, y)
    ssim_map, _ = _ssim_maps(x, y, taps, *_stabilizers(m, k1, k2, op))
    value = reduce_mean(ssim_map, -1 if return_index_map else [-3, -2, -1])
    return cast(_unflattened(value, lead), out)


def _power_factors(power_factors: Any, like: Tensor, op: str) -> Tensor:
    if isinstance(power_factors, TensorBase):
        p = as_tensor(power_factors, op, "power_factors")
        check_dtype(p, "fiu", op, "power_factors")
        p = cast(p, dtype_of(like))
    else:
        values = np.asarray(power_factors)
        if values.dtype.kind not in "iuf":
            raise TypeError(f"{op}: `power_factors` must be real numbers; got {power_factors!r}.")
        p = Tensor(values.astype(dtype_of(like)))
    if len(shape_of(p)) != 1 or not shape_of(p)[0]:
        raise InvalidArgumentError(f"{op}: `power_factors` must be a non-empty list of numbers, "
                                   f"one per scale; got shape {shape_of(p)}.")
    return p


def _ssim_multiscale(x: Tensor, y: Tensor, max_val: Tensor, power_factors: Any = _MSSSIM_WEIGHTS,
                     filter_size: Any = 11, filter_sigma: Any = 1.5, k1: Any = 0.01,
                     k2: Any = 0.03, op: str = "image.ssim_multiscale") -> Tensor:
    """ssim_multiscale of float images in their dtype (half types computed in float32)."""
    out = dtype_of(x)
    x, y, m = _wide(x, y, max_val)
    taps = _window(filter_size, filter_sigma, op)
    powers = _power_factors(power_factors, x, op)
    scales = shape_of(powers)[0]
    c1, c2 = _stabilizers(m, k1, k2, op)
    x, y, lead = _flattened(x, y)
    combined = None
    for s in range(scales):
        if s:
            x, y = _halved(x), _halved(y)
        _fits(x, len(taps), op, s, scales)
        ssim_map, cs = _ssim_maps(x, y, taps, c1, c2)
        term = _pow(relu(reduce_mean(ssim_map if s == scales - 1 else cs, [-3, -2])),
                    getitem(powers, s))
        combined = term if combined is None else multiply(combined, term)
    return cast(_unflattened(reduce_mean(combined, -1), lead), out)


# ---------------------------------------------------------------- public ops
def psnr(a: Any, b: Any, max_val: Any, name: str | None = None) -> Tensor:
    """The peak signal-to-noise ratio of images `a` and `b` [..., height, width, channels]
    (leading dimensions broadcast): 20 log10(max_val) - 10 log10(mean squared error), per
    image, float32 (inf for equal images). `max_val` is the dynamic range in the images'
    dtype (1 for floats in [0, 1], 255 for uint8); a tensor of it broadcasts per image.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.zeros([2, 2, 1])
        >>> round(float(tf.image.psnr(a, a + 0.1, max_val=1.0)), 4)
        20.0
    """
    op = "image.psnr"
    x, y = _pair(a, b, op, ("a", "b"))
    work = _work(dtype_of(x), dtype_of(y))
    m = _max_value(max_val, dtype_of(x), work, op)
    return cast(_psnr(_floated(x, work), _floated(y, work), m), _dt.float32)


def _same_dtype(x: Tensor, y: Tensor, op: str) -> None:
    if dtype_of(x) != dtype_of(y):
        raise InvalidArgumentError(f"{op}: `img1` and `img2` must have the same dtype; got "
                                   f"{_dt.from_numpy(dtype_of(x)).name} and "
                                   f"{_dt.from_numpy(dtype_of(y)).name}.")


def ssim(img1: Any, img2: Any, max_val: Any, filter_size: int = 11, filter_sigma: float = 1.5,
         k1: float = 0.01, k2: float = 0.03, return_index_map: bool = False) -> Tensor:
    """The structural similarity of images `img1` and `img2` [..., height, width,
    channels] (one dtype; leading dimensions broadcast), TensorFlow's Gaussian-window
    SSIM (NOTE(ssim)): per image, float32, 1 for equal images. `max_val` is the dynamic
    range in the images' dtype; height and width must be at least `filter_size`.
    `return_index_map` gives the map averaged over channels instead, [..., height -
    filter_size + 1, width - filter_size + 1].

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(48.) / 48., [4, 4, 3])
        >>> float(tf.image.ssim(x, x, max_val=1.0, filter_size=3))
        1.0
        >>> tf.image.ssim(x, x, 1.0, filter_size=3, return_index_map=True).shape
        TensorShape([2, 2])
    """
    op = "image.ssim"
    x, y = _pair(img1, img2, op, ("img1", "img2"))
    _same_dtype(x, y, op)
    work = _work(dtype_of(x))
    m = _max_value(max_val, dtype_of(x), work, op)
    return cast(_ssim(_floated(x, work), _floated(y, work), m, filter_size, filter_sigma, k1, k2,
                      return_index_map, op), _dt.float32)


def ssim_multiscale(img1: Any, img2: Any, max_val: Any, power_factors: Any = _MSSSIM_WEIGHTS,
                    filter_size: int = 11, filter_sigma: float = 1.5, k1: float = 0.01,
                    k2: float = 0.03) -> Tensor:
    """The multiscale structural similarity of images `img1` and `img2` (as `ssim`): one
    scale per entry of `power_factors`, the images halved between scales, the scales'
    contrast-structure terms (the last one's ssim) raised to their power factors and
    multiplied (NOTE(ssim)); per image, float32. The images must be at least
    (filter_size - 1) * 2 ** (scales - 1) + 1 high and wide (161 with the defaults).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(300.) / 300., [10, 10, 3])
        >>> float(tf.image.ssim_multiscale(x, x, 1.0, power_factors=[0.5, 0.5], filter_size=3))
        1.0
    """
    op = "image.ssim_multiscale"
    x, y = _pair(img1, img2, op, ("img1", "img2"))
    _same_dtype(x, y, op)
    work = _work(dtype_of(x))
    m = _max_value(max_val, dtype_of(x), work, op)
    return cast(_ssim_multiscale(_floated(x, work), _floated(y, work), m, power_factors,
                                 filter_size, filter_sigma, k1, k2, op), _dt.float32)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {name: "image" for name in ("psnr", "ssim", "ssim_multiscale")}
