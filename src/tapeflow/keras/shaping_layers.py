"""Keras layers that pad, crop and upsample the spatial axes of (batch, steps, features)
sequences, images and volumes: ZeroPadding1D/2D/3D, Cropping1D/2D/3D, UpSampling1D/2D/3D,
with tf_keras's arguments, checks, configs and "channels_first" support.

Each is tapeflow ops composed (pad, slicing, gathers), so their derivatives are the ops'
own. UpSampling2D's "bilinear" interpolation is tf.image.resize's with half-pixel
centers, computed here from gathers of the two neighbouring rows (then columns) and
their weights, the weights rounded as TensorFlow's kernel rounds them (float32), so its
values are tf_keras's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..tensor import Tensor, TensorShape
from .base_layer import InputSpec, Layer
from .common import normalize_data_format, normalize_tuple

__all__ = ["ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D", "Cropping1D", "Cropping2D",
           "Cropping3D", "UpSampling1D", "UpSampling2D", "UpSampling3D"]

_ORDINALS = ("1st", "2nd", "3rd")
# tf_keras's interpolation names (image_utils): the two tapeflow computes, and the others
_INTERPOLATIONS = ("bilinear", "nearest")
_OTHER_INTERPOLATIONS = ("bicubic", "area", "lanczos3", "lanczos5", "gaussian", "mitchellcubic")


def _pairs(value: Any, n: int, what: str, forms: str) -> tuple:
    """A 2-D or 3-D padding or cropping as n (before, after) pairs, parsed as tf_keras:
    one int for every side, n ints (one per axis), or n pairs."""
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        if value < 0:
            raise ValueError(f"The `{what}` argument must be non-negative. Received: {value}")
        return ((int(value), int(value)),) * n
    if hasattr(value, "__len__"):
        if len(value) != n:
            raise ValueError(f"`{what}` should have {n} elements. Received: {value}.")
        return tuple(normalize_tuple(v, 2, f"{_ORDINALS[i]} entry of {what}", allow_zero=True)
                     for i, v in enumerate(value))
    raise ValueError(f"`{what}` should be either an int, {forms}. Received: {value}.")


def _forms(n: int, what: str) -> str:
    return (f"a tuple of {n} ints (symmetric_dim_{what} for each axis), or a tuple of {n} "
            f"tuples of 2 ints ((before, after) for each axis)")


class _Spatial(Layer):
    """A layer over the `_rank` spatial axes of (batch, *spatial, channels) inputs, or
    (batch, channels, *spatial) with data_format="channels_first"."""

    _rank = 1

    def __init__(self, data_format: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_format = normalize_data_format(data_format)
        self.input_spec = InputSpec(ndim=self._rank + 2)

    def _axes(self) -> list[int]:
        first = 2 if self.data_format == "channels_first" else 1
        return list(range(first, first + self._rank))

    def _sizes_out(self, input_shape: Any, size: Any) -> TensorShape:
        """The input shape with each spatial size s replaced by size(k, s) (None stays)."""
        dims = list(TensorShape(input_shape))
        if len(dims) != self._rank + 2:
            raise ValueError(f"{type(self).__name__} expects inputs of rank {self._rank + 2}; "
                             f"received input_shape={tuple(dims)}.")
        for k, a in enumerate(self._axes()):
            dims[a] = None if dims[a] is None else size(k, int(dims[a]))
        return TensorShape(dims)

    def _format(self) -> dict:
        """The data_format entry of the config (1-D layers have none, as tf_keras)."""
        return {"data_format": self.data_format} if self._rank > 1 else {}


# ---------------------------------------------------------------- zero padding
class _ZeroPadding(_Spatial):
    def _pads(self) -> tuple:
        """(before, after) for each spatial axis."""
        return self.padding

    def call(self, inputs: Any) -> Tensor:
        paddings = [[0, 0] for _ in range(self._rank + 2)]
        for a, pair in zip(self._axes(), self._pads(), strict=True):
            paddings[a] = list(pair)
        return ops.shape.pad(inputs, paddings)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return self._sizes_out(input_shape, lambda k, s: s + sum(self._pads()[k]))

    def get_config(self) -> dict:
        return dict(super().get_config(), padding=self.padding, **self._format())


class ZeroPadding1D(_ZeroPadding):
    """Zeros added before and after the steps of (batch, steps, features) inputs:
    `padding` is an int (both ends) or a pair (before, after).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.ZeroPadding1D((1, 2))(tf.ones([1, 2, 1]))[0, :, 0].numpy()
        array([0., 1., 1., 0., 0.], dtype=float32)
    """

    def __init__(self, padding: Any = 1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.padding = normalize_tuple(padding, 2, "padding", allow_zero=True)

    def _pads(self) -> tuple:
        return (self.padding,)


class ZeroPadding2D(_ZeroPadding):
    """Rows and columns of zeros around images: `padding` is an int, (rows, cols) added
    at both ends, or ((top, bottom), (left, right)).

    Example:
        >>> import tapeflow as tf
        >>> pad = tf.keras.layers.ZeroPadding2D(((1, 0), (0, 2)))
        >>> pad(tf.ones([1, 2, 2, 1]))[0, :, :, 0].numpy()
        array([[0., 0., 0., 0.],
               [1., 1., 0., 0.],
               [1., 1., 0., 0.]], dtype=float32)
    """

    _rank = 2

    def __init__(self, padding: Any = (1, 1), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs(padding, 2, "padding", _forms(2, "pad"))


class ZeroPadding3D(_ZeroPadding):
    """Zeros around volumes (batch, dim1, dim2, dim3, channels): `padding` is an int, 3
    ints (both ends of each axis), or 3 pairs (before, after).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.ZeroPadding3D((1, 0, 2))(tf.ones([1, 2, 2, 2, 3])).shape
        TensorShape([1, 4, 2, 6, 3])
    """

    _rank = 3

    def __init__(self, padding: Any = (1, 1, 1), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.padding = _pairs(padding, 3, "padding", _forms(3, "pad"))


# ---------------------------------------------------------------- cropping
class _Cropping(_Spatial):
    def _crops(self) -> tuple:
        """(before, after) for each spatial axis."""
        return self.cropping

    def call(self, inputs: Any) -> Tensor:
        shape = tuple(inputs.shape)
        key: list = [slice(None)] * (self._rank + 2)
        for a, (before, after) in zip(self._axes(), self._crops(), strict=True):
            if before + after >= shape[a]:
                raise ValueError(f"Argument `cropping` must be smaller than the input shape "
                                 f"along each cropped axis. Received: inputs.shape={shape}, "
                                 f"and cropping={self.cropping}")
            # counted from the end, as tf_keras, so no size is read for the slice
            key[a] = slice(before, -after if after else None)
        return inputs[tuple(key)]

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return self._sizes_out(input_shape, lambda k, s: s - sum(self._crops()[k]))

    def get_config(self) -> dict:
        return dict(super().get_config(), cropping=self.cropping, **self._format())


class Cropping1D(_Cropping):
    """Steps removed from the start and end of (batch, steps, features) inputs:
    `cropping` is an int (both ends) or a pair (start, end).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(5.), [1, 5, 1])
        >>> tf.keras.layers.Cropping1D((1, 2))(x)[0, :, 0].numpy()
        array([1., 2.], dtype=float32)
    """

    def __init__(self, cropping: Any = (1, 1), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cropping = normalize_tuple(cropping, 2, "cropping", allow_zero=True)

    def _crops(self) -> tuple:
        return (self.cropping,)


class Cropping2D(_Cropping):
    """Rows and columns removed from the borders of images: `cropping` is an int,
    (rows, cols) removed at both ends, or ((top, bottom), (left, right)).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Cropping2D(((1, 0), (1, 1)))(tf.ones([2, 4, 5, 3])).shape
        TensorShape([2, 3, 3, 3])
    """

    _rank = 2

    def __init__(self, cropping: Any = ((0, 0), (0, 0)), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = _pairs(cropping, 2, "cropping", _forms(2, "crop"))


class Cropping3D(_Cropping):
    """Borders removed from volumes: `cropping` is an int, 3 ints, or 3 pairs.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Cropping3D((1, 0, 1))(tf.ones([1, 4, 4, 4, 2])).shape
        TensorShape([1, 2, 4, 2, 2])
    """

    _rank = 3

    def __init__(self, cropping: Any = ((1, 1), (1, 1), (1, 1)), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.cropping = _pairs(cropping, 3, "cropping", _forms(3, "crop"))


# ---------------------------------------------------------------- upsampling
def _repeat(x: Tensor, axis: int, times: int) -> Tensor:
    """Each slice along `axis` repeated `times` times in place (nearest-neighbour
    upsampling by an integer factor: TensorFlow's half-pixel nearest picks the same)."""
    if times == 1:
        return x
    n = int(x.shape[axis])
    return ops.indexing.gather(x, np.repeat(np.arange(n), times), axis=axis)


def _bilinear_taps(n: int, times: int, dtype: np.dtype) -> tuple:
    """The two source indices and the weight of the second, for each of the n * times
    outputs along one axis: source (i + 1/2) / times - 1/2, clamped to the edges. Below
    float64 the arithmetic is float32, as TensorFlow's resize kernel does it."""
    ft = np.float64 if dtype == np.float64 else np.float32
    scale = ft(n) / ft(n * times)
    src = (np.arange(n * times, dtype=ft) + ft(0.5)) * scale - ft(0.5)
    floor = np.floor(src)
    lower = np.maximum(floor, 0).astype(np.int64)
    upper = np.minimum(np.ceil(src), n - 1).astype(np.int64)
    return lower, upper, (src - floor).astype(ft)


def _lerp_along(x: Tensor, axis: int, times: int) -> Tensor:
    """x upsampled `times` times along `axis` by linear interpolation with half-pixel
    centers: a + (b - a) * w, a and b the two neighbours (TensorFlow's order)."""
    if times == 1:
        return x
    lower, upper, weight = _bilinear_taps(int(x.shape[axis]), times, x._value.dtype)
    a = ops.indexing.gather(x, lower, axis=axis)
    b = ops.indexing.gather(x, upper, axis=axis)
    w = Tensor(weight.astype(x._value.dtype).reshape((-1,) + (1,) * (x.ndim - axis - 1)))
    return a + (b - a) * w


class _UpSampling(_Spatial):
    interpolation = "nearest"

    def _factors(self) -> tuple:
        """The factor of each spatial axis."""
        return self.size

    def call(self, inputs: Any) -> Tensor:
        axes = self._axes()
        if self.interpolation == "nearest":
            out = inputs
            for a, times in zip(axes, self._factors(), strict=True):
                out = _repeat(out, a, times)
            return ops.shape.identity(out) if out is inputs else out
        # tf.image.resize's output is float32, float64 kept (TensorFlow rounds it to float32)
        out = inputs if inputs.dtype == _dt.float64 else ops.elementwise.cast(inputs,
                                                                             _dt.float32)
        for a, times in reversed(list(zip(axes, self._factors(), strict=True))):  # columns first
            out = _lerp_along(out, a, times)
        return out

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        return self._sizes_out(input_shape, lambda k, s: s * self._factors()[k])

    def get_config(self) -> dict:
        return dict(super().get_config(), size=self.size, **self._format())


class UpSampling1D(_UpSampling):
    """Each step of (batch, steps, features) inputs repeated `size` times.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(3.), [1, 3, 1])
        >>> tf.keras.layers.UpSampling1D(2)(x)[0, :, 0].numpy()
        array([0., 0., 1., 1., 2., 2.], dtype=float32)
    """

    def __init__(self, size: int = 2, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.size = int(size)
        if self.size < 1:
            raise ValueError(f"The `size` argument of UpSampling1D must be a positive integer. "
                             f"Received: size={size}")

    def _factors(self) -> tuple:
        return (self.size,)


class UpSampling2D(_UpSampling):
    """Images enlarged `size` = (rows, cols) times (an int for both): "nearest" repeats
    each pixel; "bilinear" interpolates with half-pixel centers, as tf_keras (through
    tf.image.resize), giving float32 (float64 inputs stay float64: tf_keras rounds them to
    float32).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[[[0.], [4.]]]])              # one row: 0, 4
        >>> tf.keras.layers.UpSampling2D((1, 2), interpolation="bilinear")(x)[0, 0, :, 0].numpy()
        array([0., 1., 3., 4.], dtype=float32)
    """

    _rank = 2

    def __init__(self, size: Any = (2, 2), data_format: str | None = None,
                 interpolation: str = "nearest", **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.size = normalize_tuple(size, 2, "size")
        name = str(interpolation).lower()
        if name in _OTHER_INTERPOLATIONS:
            raise NotImplementedError(f"UpSampling2D: interpolation={interpolation!r} is not "
                                      f"supported by tapeflow; use one of {_INTERPOLATIONS}.")
        if name not in _INTERPOLATIONS:
            raise NotImplementedError(f"Value not recognized for `interpolation`: "
                                      f"{interpolation}. Supported values are: "
                                      f"{_INTERPOLATIONS + _OTHER_INTERPOLATIONS}")
        self.interpolation = name

    def get_config(self) -> dict:
        return dict(super().get_config(), interpolation=self.interpolation)


class UpSampling3D(_UpSampling):
    """Volumes enlarged `size` = (dim1, dim2, dim3) times by repeating each voxel.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.UpSampling3D((1, 2, 3))(tf.ones([1, 2, 2, 2, 4])).shape
        TensorShape([1, 2, 4, 6, 4])
    """

    _rank = 3

    def __init__(self, size: Any = (2, 2, 2), data_format: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(data_format=data_format, **kwargs)
        self.size = normalize_tuple(size, 3, "size")
