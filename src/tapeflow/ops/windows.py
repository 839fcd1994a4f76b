"""Window geometry that conv and pooling share: output sizes, padding, strides, the
TensorFlow forms of their arguments, the blocks of examples an implementation runs
over, and kernel offsets copied whole pixels at a time (NOTE(pixel-cells)).

Everything here is static: shapes, pairs of ints and NumPy padding, never a tensor
or a primitive (the convolution and pooling primitives live in ops/conv.py and
ops/pooling.py, which import these).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..errors import InvalidArgumentError

__all__ = ["CACHE_BYTES", "block_size", "out_size", "out_hw", "pad", "pads_for", "pair",
           "copy_pixels", "copy_runs", "pixel_copies_pay", "spread_windows",
           "window_pixels", "window_slice"]


def out_size(n: int, k: int, stride: int, dilation: int, pad: tuple) -> int:
    """The number of windows of `k` taps, `dilation` apart, `stride` apart along an axis
    of `n` elements padded by `pad` (before, after).

    Example:
        >>> from tapeflow.ops.windows import out_size
        >>> out_size(5, 3, 2, 1, (1, 1))
        3
    """
    span = (k - 1) * dilation + 1
    return (n + pad[0] + pad[1] - span) // stride + 1


def out_hw(x_shape: tuple, ksize: tuple, strides: tuple, pads: tuple,
           dilations: tuple = (1, 1)) -> tuple[int, int]:
    """(OH, OW): the windows of an NHWC image of `x_shape` (its last three axes are H, W,
    C), per axis as `out_size`.

    Example:
        >>> from tapeflow.ops.windows import out_hw
        >>> out_hw((1, 4, 5, 2), (2, 2), (2, 2), ((0, 0), (0, 1)))
        (2, 3)
    """
    return (out_size(x_shape[-3], ksize[0], strides[0], dilations[0], pads[0]),
            out_size(x_shape[-2], ksize[1], strides[1], dilations[1], pads[1]))


def pad(x: np.ndarray, pads: tuple, fill: Any = 0) -> np.ndarray:
    """`x` (an image [..., H, W, C]) padded by `pads` ((top, bottom), (left, right)) with
    `fill`; `x` itself where there is no padding.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import pad
        >>> pad(np.ones((1, 2, 2, 1)), ((1, 0), (0, 1))).shape
        (1, 3, 3, 1)
    """
    if not any(pads[0] + pads[1]):
        return x
    width = [(0, 0)] * (x.ndim - 3) + [pads[0], pads[1], (0, 0)]
    return np.pad(x, width, constant_values=fill)


def window_slice(i: int, j: int, oh: int, ow: int, strides: tuple) -> tuple:
    """The index, in the padded image, of kernel offset (i, j) of every one of the OH x
    OW windows `strides` apart.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import window_slice
        >>> np.arange(16).reshape(1, 4, 4, 1)[window_slice(1, 0, 2, 2, (2, 2))][0, :, :, 0]
        array([[ 4,  6],
               [12, 14]])
    """
    sh, sw = strides
    return (Ellipsis, slice(i, i + sh * (oh - 1) + 1, sh), slice(j, j + sw * (ow - 1) + 1, sw),
            slice(None))


# NOTE(pixel-cells): an NHWC image's kernel offset, read over every window, is a view whose
# innermost contiguous run is one pixel's C channels. NumPy's ufuncs run one inner loop per
# run, so on few channels (LeNet's 6) each comparison or product on such a view spends its
# time in loop overhead (3-8x a contiguous operand's time). Seen as one void element per
# pixel, the same view is copied whole pixels at a time, and the arithmetic then runs on
# contiguous arrays: the same values, element for element (docs/performance-notes.md,
# #pixel-cells).
_VOIDS: dict[int, np.dtype] = {}


def _cells(a: np.ndarray) -> np.ndarray | None:
    """`a` [..., C] with each pixel one void element; None where a void view cannot be made."""
    if a.ndim == 0 or a.dtype.hasobject or a.shape[-1] < 2 or a.strides[-1] != a.itemsize:
        return None
    size = a.shape[-1] * a.itemsize
    void = _VOIDS.get(size)
    if void is None:
        void = _VOIDS[size] = np.dtype((np.void, size))
    try:
        return a.view(void).reshape(a.shape[:-1])
    except ValueError:  # a layout NumPy will not view so
        return None


# Below this many elements the void views' calls cost more than the loops they save
# (docs/performance-notes.md, #pixel-cells).
PIXELS_FROM = 1 << 11


def pixel_copies_pay(view: np.ndarray, once: bool = False) -> bool:
    """Whether `view` (an image's offset over every window) is worth copying whole pixels
    at a time before arithmetic reads it, or into it after arithmetic made its values
    (NOTE(pixel-cells)); `once`: a view read or written by one operation, where the copy
    is a whole extra pass, pays only from a larger size.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import pixel_copies_pay
        >>> x = np.zeros((64, 24, 24, 6), np.float32)
        >>> pixel_copies_pay(x[:, ::2, ::2]), pixel_copies_pay(x[:1, ::2, ::2])
        (True, False)
    """
    if once:  # one channel has no void view; from 32 the strided loops are long enough
        return view.size >= 16 * PIXELS_FROM and view.shape[-1] < 32 and _cells(view) is not None
    return view.size >= PIXELS_FROM


def copy_pixels(dst: np.ndarray, src: np.ndarray) -> None:
    """`dst[...] = src` for two images of one shape and dtype, whole pixels at a time
    where that is possible (NOTE(pixel-cells)).

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import copy_pixels
        >>> x, out = np.arange(24.).reshape(1, 3, 4, 2), np.zeros((1, 3, 2, 2))
        >>> copy_pixels(out, x[:, :, ::2])
        >>> out[0, :, :, 1]
        array([[ 1.,  5.],
               [ 9., 13.],
               [17., 21.]])
    """
    cells_src = _cells(src) if src.size >= PIXELS_FROM else None
    cells_dst = _cells(dst) if cells_src is not None else None
    if cells_dst is None:
        np.copyto(dst, src)
    else:
        cells_dst[...] = cells_src


# An im2col matrix, or a banded convolution's rows, is a copy of a strided view of the
# image whose contiguous runs are a window row's KW*C elements (a band's (Q+KW-1)*C):
# LeNet's first layer has runs of 12 floats. NumPy copies such a view an inner loop per
# run; with each run one void element, the copy moves whole runs, the same bytes (docs/
# performance-notes.md, #window-runs). It pays from RUNS_FROM elements, for runs of up to
# _LONGEST_RUN bytes: longer runs copy faster as NumPy's own loops.
RUNS_FROM = 1 << 16
_LONGEST_RUN = 384


class _Memory:
    """An object NumPy views through its array interface (as np.lib.stride_tricks does)."""

    def __init__(self, interface: dict, base: np.ndarray) -> None:
        self.__array_interface__ = interface
        self.base = base


def copy_runs(view: np.ndarray) -> np.ndarray:
    """`view` (a strided view, such as an image's windows) as a C-ordered array, as
    np.ascontiguousarray gives it (`view` itself where it is C-ordered already, else a
    copy), its innermost contiguous runs copied as one void element each where that pays
    (NOTE(pixel-cells)). Callers read the result; they never write into it.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import copy_runs
        >>> copy_runs(np.arange(12.).reshape(3, 4)[:, 1:3])
        array([[ 1.,  2.],
               [ 5.,  6.],
               [ 9., 10.]])
    """
    item, k, run = view.itemsize, view.ndim, 1
    while k > 0 and (view.strides[k - 1] == run * item or view.shape[k - 1] == 1):
        run *= view.shape[k - 1]
        k -= 1
    size = run * item
    if view.size < RUNS_FROM or run < 2 or size > _LONGEST_RUN or view.dtype.hasobject \
            or k == 0:
        return np.ascontiguousarray(view)
    interface = dict(view.__array_interface__, shape=view.shape[:k], strides=view.strides[:k],
                     typestr=f"|V{size}", descr=[("", f"|V{size}")])
    interface["data"] = (interface["data"][0], True)
    cells = np.asarray(_Memory(interface, view))
    return cells.copy().view(view.dtype).reshape(view.shape)


def window_pixels(xp: np.ndarray, i: int, j: int, oh: int, ow: int, strides: tuple,
                  out: np.ndarray | None = None) -> np.ndarray:
    """Kernel offset (i, j) of every window of the image `xp` (`window_slice`), copied
    into a C-ordered array (`out` if given), whole pixels at a time (NOTE(pixel-cells)).

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import window_pixels
        >>> x = np.arange(32).reshape(1, 4, 4, 2)
        >>> window_pixels(x, 1, 0, 2, 2, (2, 2))[0, :, :, 1]
        array([[ 9, 13],
               [25, 29]])
    """
    view = xp[window_slice(i, j, oh, ow, strides)]
    if out is None:
        out = np.empty(view.shape, view.dtype)
    copy_pixels(out, view)
    return out


def spread_windows(values: np.ndarray, ksize: tuple, image_hw: tuple) -> np.ndarray | None:
    """An image [..., H, W, C] in which every pixel of window (a, b) holds `values[..., a,
    b, :]`, for windows that tile it (stride = window, no padding; pixels past the last
    window are 0), written whole pixels at a time (NOTE(pixel-cells)); None for one
    channel, which has no void view.

    Example:
        >>> import numpy as np
        >>> from tapeflow.ops.windows import spread_windows
        >>> v = np.arange(8.).reshape(1, 2, 2, 2)
        >>> spread_windows(v, (2, 2), (5, 4))[0, :, :, 1]
        array([[1., 1., 3., 3.],
               [1., 1., 3., 3.],
               [5., 5., 7., 7.],
               [5., 5., 7., 7.],
               [0., 0., 0., 0.]])
    """
    (kh, kw), (h, w) = ksize, image_hw
    *lead, oh, ow, c = values.shape
    source = _cells(np.ascontiguousarray(values))
    if source is None:
        return None
    out = np.empty((*lead, h, w, c), values.dtype)
    out[..., oh * kh:, :, :] = 0
    out[..., :, ow * kw:, :] = 0
    band = _cells(out[..., :oh * kh, :ow * kw, :]).reshape((*lead, oh, kh, ow, kw))
    band[...] = source[..., :, None, :, None]
    return out


def pair(value: Any, name: str, op: str) -> tuple[int, int]:
    """(height, width) of a window argument in TensorFlow's forms: an int, [h, w], or
    [1, h, w, 1] (NHWC); an error naming `op` and the argument `name` otherwise.

    Example:
        >>> from tapeflow.ops.windows import pair
        >>> pair([1, 2, 3, 1], "strides", "conv2d")
        (2, 3)
    """
    v = [int(value)] if np.ndim(value) == 0 else [int(a) for a in np.asarray(value).reshape(-1)]
    if len(v) == 1:
        v = v * 2
    elif len(v) == 4:
        if v[0] != 1 or v[3] != 1:
            raise InvalidArgumentError(f"{op}: `{name}` over the batch and channel dims must be 1 "
                                       f"(NHWC); got {value!r}.")
        v = v[1:3]
    if len(v) != 2 or min(v) < 1:
        raise InvalidArgumentError(f"{op}: `{name}` must be a positive int, 2 ints or 4 ints; "
                                   f"got {value!r}.")
    return v[0], v[1]


def pads_for(padding: Any, in_hw: tuple, k_hw: tuple, strides: tuple, dilations: tuple,
             op: str) -> tuple:
    """((top, bottom), (left, right)) for `padding` "SAME", "VALID" or explicit
    [[0,0],[t,b],[l,r],[0,0]], for an image of `in_hw` and a kernel of `k_hw` (SAME pads
    as TensorFlow: the odd element after).

    Example:
        >>> from tapeflow.ops.windows import pads_for
        >>> pads_for("SAME", (5, 6), (3, 2), (2, 2), (1, 1), "max_pool2d")
        ((1, 1), (0, 0))
    """
    if isinstance(padding, str):
        mode = padding.upper()
        if mode == "VALID":
            return (0, 0), (0, 0)
        if mode == "SAME":
            pads = []
            for n, k, s, d in zip(in_hw, k_hw, strides, dilations, strict=True):
                out = -(-n // s)
                total = max((out - 1) * s + (k - 1) * d + 1 - n, 0)
                pads.append((total // 2, total - total // 2))
            return tuple(pads)
        raise InvalidArgumentError(f"{op}: `padding` must be 'SAME', 'VALID' or explicit "
                                   f"[[0, 0], [top, bottom], [left, right], [0, 0]]; got {padding!r}.")
    arr = np.asarray(padding)
    if arr.shape != (4, 2) or arr[0].any() or arr[3].any() or (arr < 0).any():
        raise InvalidArgumentError(f"{op}: explicit `padding` must be [[0, 0], [top, bottom], "
                                   f"[left, right], [0, 0]] with non-negative ints; got {padding!r}.")
    return (int(arr[1, 0]), int(arr[1, 1])), (int(arr[2, 0]), int(arr[2, 1]))


# The conv and pooling implementations run over blocks of examples whose working set (an
# im2col matrix; for conv's input gradient, kernel-offset blocks and output; a window
# sum's rows) stays in cache, about 2 MiB at once: one block for small batches, and time
# linear in the batch size beyond (no cache cliff).
CACHE_BYTES = 1 << 21


def block_size(n: int, per_example_bytes: int) -> int:
    """How many of `n` examples, each `per_example_bytes` of working set, make one block
    of about `CACHE_BYTES` (at least 1, at most `n`).

    Example:
        >>> from tapeflow.ops.windows import block_size
        >>> block_size(640, 64 * 1024)
        32
    """
    return max(1, min(n, CACHE_BYTES // max(1, per_example_bytes)))
