"""Strided input gradients as one gather product over output phases (NOTE(phase-conv)).

NOTE(phase-conv): the input gradient of a convolution of stride s is a transposed
convolution. im2col's way scatters it: one product gives every kernel tap's
contribution, then one strided add per tap (9 for a 3x3 kernel) puts them in place.
With few channels those adds write runs of a few elements every s-th pixel and cost
several times the product. Split the input image instead into blocks of s x s pixels:
input pixel (s*a + r) only receives taps i = s*m + r of outputs a - m, so a block
depends on the M = ceil(K/s) output pixels before it along each axis, and all s x s
pixels of the block come out of one product: the M x M windows of the output gradient
[N*A*B, M*M*O] times a *phase filter* [M*M*O, s*s*C] holding each tap at its (window,
phase) place and zeros where a phase has fewer taps. It does (M*s)^2 / K^2 times the
multiply-adds (16/9 for 3x3 at stride 2), with no adds after it: the product's rows are
the blocks, which one copy interleaves into the image. `phase_split` takes it where that
was timed to win: strided, undilated, 2 to 64 input channels and not many more
multiply-adds than im2col's (docs/performance-notes.md, #phase-conv). Blocks of examples keep each block's windows
in cache, as im2col's do.
"""

from __future__ import annotations

import numpy as np

from .. import blas
from .windows import block_size, copy_runs

# Set from sweeps of 1,260 shapes (benchmarks/conv_phases.py): one input channel makes
# the product's s*s columns too few; where the channels and filters are many, im2col's
# product and adds run efficiently and the zero taps' multiply-adds no longer pay.
_LEAST_CHANNELS = 2
_MOST_CHANNELS = 64
_MOST_WASTE = 16 / 9   # (MH*SH*MW*SW) / (KH*KW), the share of zero taps: 3x3 at stride 2
_MOST_WORK = 512       # that share times C*O


def phase_split(kernel: tuple, strides: tuple, dilations: tuple, operands: tuple) -> bool:
    """Whether the input gradient of a convolution with `kernel` (KH, KW, C, O) runs as a
    gather over output phases: strided, undilated, 4-D operands (no batched filters), a
    kernel at least as large as the stride on each axis (every phase gets a tap), few
    zero taps, and channels and filters in the range timed to win.

    Example:
        >>> from tapeflow.ops.conv_phases import phase_split
        >>> phase_split((3, 3, 8, 16), (2, 2), (1, 1), ())  # the seed's second layer
        True
    """
    kh, kw, c, o = kernel
    sh, sw = strides
    if tuple(dilations) != (1, 1) or (sh, sw) == (1, 1) or kh < sh or kw < sw:
        return False
    if not _LEAST_CHANNELS <= c <= _MOST_CHANNELS or any(np.ndim(a) != 4 for a in operands):
        return False
    waste = (-(-kh // sh) * sh * -(-kw // sw) * sw) / (kh * kw)
    return waste <= _MOST_WASTE and waste * c * o <= _MOST_WORK


def phase_filter(w: np.ndarray, strides: tuple) -> np.ndarray:
    """[MH*MW*O, SH*SW*C]: entry ((jh, jw, o), (rh, rw, c)) is w[i, j, c, o] for the tap
    i = SH*(MH-1-jh) + rh, j = SW*(MW-1-jw) + rw where inside the kernel, else zero."""
    kh, kw, c, o = w.shape
    sh, sw = strides
    mh, mw = -(-kh // sh), -(-kw // sw)
    # The kernel padded with zero taps to MH*SH x MW*SW, flipped by blocks of the stride.
    full = np.zeros((mh * sh, mw * sw, c, o), w.dtype)
    full[:kh, :kw] = w
    taps = full.reshape(mh, sh, mw, sw, c, o)[::-1, :, ::-1]  # [jh, rh, jw, rw, c, o]
    return np.ascontiguousarray(taps.transpose(0, 2, 5, 1, 3, 4)).reshape(mh * mw * o,
                                                                           sh * sw * c)


def input_grad(g: np.ndarray, w: np.ndarray, strides: tuple, pads: tuple,
               input_shape: tuple, dtype: np.dtype) -> np.ndarray:
    """The input gradient [N, H, W, C] of `g` [N, OH, OW, O] through `w` for a
    convolution of `strides` and `pads` ((top, bottom), (left, right)) over images of
    `input_shape`: only the blocks that cover the unpadded image are computed."""
    kh, kw, c, o = w.shape
    n, oh, ow, _ = g.shape
    sh, sw = strides
    h, wd = input_shape[-3], input_shape[-2]
    mh, mw = -(-kh // sh), -(-kw // sw)
    # Blocks [a0, a1) x [b0, b1) of the padded image cover the image's rows and columns.
    a0, a1 = pads[0][0] // sh, -(-(pads[0][0] + h) // sh)
    b0, b1 = pads[1][0] // sw, -(-(pads[1][0] + wd) // sw)
    na, nb = a1 - a0, b1 - b0
    # Output rows a0-MH+1 .. a1-1 feed those blocks; outside the gradient they are zero.
    gp = np.zeros((n, na + mh - 1, nb + mw - 1, o), g.dtype)
    lo_h, hi_h = max(0, a0 - mh + 1), min(oh, a1)
    lo_w, hi_w = max(0, b0 - mw + 1), min(ow, b1)
    if lo_h < hi_h and lo_w < hi_w:
        gp[:, lo_h - (a0 - mh + 1):hi_h - (a0 - mh + 1),
           lo_w - (b0 - mw + 1):hi_w - (b0 - mw + 1)] = g[:, lo_h:hi_h, lo_w:hi_w]
    filt = phase_filter(w, strides)
    out = np.empty((n, na, sh, nb, sw * c), dtype)
    sb, s1, s2, s3 = gp.strides
    step = block_size(n, na * nb * (mh * mw * o + sh * sw * c) * gp.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        windows = copy_runs(np.lib.stride_tricks.as_strided(
            gp[start:stop], (stop - start, na, nb, mh, mw, o), (sb, s1, s2, s1, s2, s3),
            writeable=False)).reshape((stop - start) * na * nb, mh * mw * o)
        res = blas.matmul(windows, filt).reshape(stop - start, na, nb, sh, sw * c)
        out[start:stop] = res.transpose(0, 1, 3, 2, 4)
    top, left = pads[0][0] - a0 * sh, pads[1][0] - b0 * sw
    return out.reshape(n, na * sh, nb * sw, c)[:, top:top + h, left:left + wd]
