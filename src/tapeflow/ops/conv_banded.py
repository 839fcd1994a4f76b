"""Unstrided convolutions of few channels as banded products (NOTE(banded-conv)).

NOTE(banded-conv): im2col multiplies an [N*OH*OW, KH*KW*C] window matrix by the
[KH*KW*C, O] filter matrix. With few input channels and few filters both inner
dimensions of that product are small: it runs far below the BLAS's peak, bound by
reading a window matrix KH*KW times the size of the image, which it first had to write.
A band of Q adjacent output columns instead reads the KH rows of Q+KW-1 input columns
under it ((Q+KW-1)/(Q*KW) the size of im2col's matrix) and multiplies it by the
*banded filter*: a [KH*(Q+KW-1)*C, Q*O] matrix holding the filter at Q shifts, zeros
elsewhere. The zeros cost (Q+KW-1)/KW times the multiply-adds, in a product whose inner
dimensions are large enough to run near peak. The bands' products are an [N, OH, OW, O]
image already; the input gradient is the same product transposed, added back band by
band; the filter gradient sums the product's diagonals. So the three primitives of
ops/conv.py use it alike, where `band_width` finds a band that pays: unstrided,
undilated, up to `_MOST_CHANNELS` input channels, and a width whose band keeps the
product's inner dimensions in the range timed to win (docs/performance-notes.md,
#banded-conv). Blocks of examples keep each block's rows in cache, as im2col's blocks do.
"""

from __future__ import annotations

import numpy as np

from .. import blas
from .windows import block_size, copy_runs

_MOST_CHANNELS = 6   # input channels: more make im2col's inner dimension large enough
_MOST_BAND = 8       # Q
# Q*O, the band's output columns (the input gradient's inner dimension), at most, and
# KH*(Q+KW-1)*C, the band's depth (the input gradient's output columns), at least: wider
# bands waste more in zeros, shallower ones run as slowly as im2col. The input gradient
# also adds its result back band by band, one add per band and kernel row: few bands.
_MOST_COLUMNS = {False: 48, True: 64}
_LEAST_DEPTH = {False: 40, True: 48}
_MOST_BANDS = 8
# Where no band in range divides the width, the forward's last band may overhang the image
# by up to 1/_MOST_OVERHANG of its width (the zero columns it reads cost that much more).
_MOST_OVERHANG = 8


def band_width(ow: int, kernel: tuple, strides: tuple, dilations: tuple, operands: tuple,
               kind: str = "forward") -> int:
    """The band's width Q for the `kind` ("forward", "input grad", "filter grad") of a
    convolution of `ow` output columns and `kernel` (KH, KW, C, O), or 0 where im2col
    serves better: strided, dilated or batched (leading dims) operands, many channels, or
    no band in range. The widest band that divides `ow`, else, for the forward alone, the
    widest that overhangs it by little (the gradients would copy zero columns of their
    operands, which cost them more than the band saves).

    Example:
        >>> from tapeflow.ops.conv_banded import band_width
        >>> band_width(24, (5, 5, 1, 6), (1, 1), (1, 1), ())  # LeNet's first layer
        8
    """
    kh, kw, c, o = kernel
    if tuple(strides) != (1, 1) or tuple(dilations) != (1, 1) or c > _MOST_CHANNELS:
        return 0
    if any(np.ndim(a) != 4 for a in operands):
        return 0
    transposed = kind == "input grad"
    fits = [q for q in range(2, min(ow, _MOST_BAND) + 1)
            if q * o <= _MOST_COLUMNS[transposed]
            and kh * (q + kw - 1) * c >= _LEAST_DEPTH[transposed]
            and not (transposed and -(-ow // q) > _MOST_BANDS)]
    exact = [q for q in fits if ow % q == 0]
    over = [q for q in fits if (-(-ow // q) * q - ow) * _MOST_OVERHANG <= ow] \
        if kind == "forward" else []
    return max(exact or over or [0])


def banded_filter(w: np.ndarray, q: int) -> np.ndarray:
    """[KH*(Q+KW-1)*C, Q*O]: entry ((i, s, c), (t, o)) is w[i, s - t, c, o] where
    0 <= s - t < KW, else zero."""
    kh, kw, c, o = w.shape
    band = np.zeros((kh, q + kw - 1, c, q, o), w.dtype)
    for t in range(q):
        band[:, t:t + kw, :, t, :] = w
    return band.reshape(kh * (q + kw - 1) * c, q * o)


def _rows(xp: np.ndarray, kh: int, kw: int, q: int, oh: int, nq: int) -> np.ndarray:
    """[n*OH*NQ, KH*(Q+KW-1)*C]: for each of the NQ output bands, the input rows under it."""
    n, _, _, c = xp.shape
    sb, sh, sw, sc = xp.strides
    span = q + kw - 1
    view = np.lib.stride_tricks.as_strided(
        xp, (n, oh, nq, kh, span, c), (sb, sh, q * sw, sh, sw, sc), writeable=False)
    return copy_runs(view).reshape(n * oh * nq, kh * span * c)


def conv(xp: np.ndarray, w: np.ndarray, q: int, out: np.ndarray) -> np.ndarray:
    """The convolution of the padded images `xp` [N, HP, WP, C] with `w`, into `out`
    [N, OH, OW, O]. A last band that overhangs the image reads zero columns, and its
    outputs there are dropped."""
    kh, kw, c, o = w.shape
    n, oh, ow, _ = out.shape
    nq = -(-ow // q)
    if nq * q > ow:  # the last band overhangs: zero columns past the image's edge
        wide = np.zeros(xp.shape[:2] + (nq * q + kw - 1, c), xp.dtype)
        wide[:, :, :xp.shape[2]] = xp
        xp = wide
    band = banded_filter(w, q)
    step = block_size(n, oh * nq * kh * (q + kw - 1) * c * xp.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        rows = _rows(xp[start:stop], kh, kw, q, oh, nq)
        if nq * q == ow:  # the bands' products are the block's output rows: made in place
            blas.matmul(rows, band, out=out[start:stop].reshape(len(rows), q * o))
            continue
        res = blas.matmul(rows, band)
        out[start:stop] = res.reshape(stop - start, oh, nq * q, o)[:, :, :ow]
    return out


def input_grad(g: np.ndarray, w: np.ndarray, q: int, padded_shape: tuple,
               dtype: np.dtype) -> np.ndarray:
    """The input gradient [N, HP, WP, C] (of the padded image) of `g` [N, OH, OW, O]
    through `w`, for a band `q` that divides OW: each band's product added back at its
    place."""
    kh, kw, c, o = w.shape
    n, oh, ow, _ = g.shape
    nq, span = ow // q, q + kw - 1
    band_t = np.ascontiguousarray(banded_filter(w, q).T)  # a transposed operand runs slower
    out = np.zeros(padded_shape, dtype)
    rows = out.reshape(n, padded_shape[1], padded_shape[2] * c)
    step = block_size(n, oh * nq * kh * span * c * g.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        gm = g[start:stop].reshape((stop - start) * oh * nq, q * o)
        taps = blas.matmul(gm, band_t).reshape(stop - start, oh, nq, kh, span * c)
        for i in range(kh):  # one add per kernel row and band: contiguous runs
            for k in range(nq):
                rows[start:stop, i:i + oh, k * q * c:(k * q + span) * c] += taps[:, :, k, i]
    return out


def filter_grad(xp: np.ndarray, g: np.ndarray, q: int, filter_shape: tuple) -> np.ndarray:
    """The filter gradient [KH, KW, C, O] of `g` [N, OH, OW, O] for padded images `xp`,
    for a band `q` that divides OW."""
    kh, kw, c, o = filter_shape
    n, oh, ow, _ = g.shape
    nq, span = ow // q, q + kw - 1
    acc = None
    step = block_size(n, oh * nq * kh * span * c * xp.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        rows = _rows(xp[start:stop], kh, kw, q, oh, nq)
        gm = g[start:stop].reshape((stop - start) * oh * nq, q * o)
        part = blas.matmul(rows.T, gm)
        acc = part if acc is None else np.add(acc, part, out=acc)
    if acc is None:  # no examples
        return np.zeros(filter_shape, np.result_type(xp, g))
    diag = acc.reshape(kh, span, c, q, o)
    out = diag[:, 0:kw, :, 0, :].copy()
    for t in range(1, q):  # the band's diagonals: shift t holds w[:, s - t]
        out += diag[:, t:t + kw, :, t, :]
    return out
