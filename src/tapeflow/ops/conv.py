"""2-D convolution (NHWC) and its two transposes, vectorized with NumPy.

`conv2d(x, w)` is bilinear, and so are its transposes: `conv2d_input_grad(g, w)`
(the VJP with respect to x, a transposed convolution) and
`conv2d_filter_grad(x, g)` (the VJP with respect to w). The three primitives'
rules are written in terms of each other, so every derivative of any order
stays inside this family.

Every implementation accepts extra leading dims on both operands (matched or
broadcast like `matmul`'s batch dims): that is what the batching rules use
when both the images and the filters are batched.

The implementation is im2col: the sliding windows are a strided view of the
padded input, reshaped into one matrix and multiplied by the filter matrix in
one GEMM. The scatter of the input gradient loops over the KH x KW kernel
offsets (9 for a 3x3 kernel), never over pixels.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..dtypes import half_in_float32
from .. import blas
from ..catalog import Hints, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..hessian_patterns import MULTILINEAR
from ..patterns import Pattern
from ..tensor import Tensor
from . import conv_banded, conv_phases
from .convert import binary_args, check_dtype
from .structural import (dense_deps, move_axis, move_to_front, per_example_deps, per_input,
                         reshape_p, shape_of)
from .windows import block_size, copy_runs, out_size, pad, pads_for, pair


def _windows(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides: tuple,
             dilations: tuple) -> np.ndarray:
    """[..., N, OH, OW, KH*KW*C]: the sliding windows of the padded input, as one matrix."""
    *lead, hs, ws, cs = xp.strides
    shape = xp.shape[:-3] + (oh, ow, kh, kw, xp.shape[-1])
    view = np.lib.stride_tricks.as_strided(
        xp, shape, tuple(lead) + (hs * strides[0], ws * strides[1], hs * dilations[0],
                                  ws * dilations[1], cs), writeable=False)
    return copy_runs(view).reshape(xp.shape[:-3] + (oh, ow, kh * kw * xp.shape[-1]))


def _windows_t(xp: np.ndarray, kh: int, kw: int, oh: int, ow: int, strides: tuple,
               dilations: tuple) -> np.ndarray:
    """[..., KH*KW*C, N*OH*OW]: `_windows` transposed, built one kernel offset at a time.
    With few channels a window's elements are scattered (one C-sized run per offset),
    so gathering each offset's plane whole is several times faster than copying windows;
    the GEMMs then read this matrix transposed, at no cost."""
    lead, n, c = xp.shape[:-4], xp.shape[-4], xp.shape[-1]
    cols = np.empty(lead + (kh, kw, c, n, oh, ow), xp.dtype)
    planes = np.moveaxis(xp, -1, -4)  # [..., C, N, H, W]
    sh, sw = strides
    for i in range(kh):
        r0 = i * dilations[0]
        for j in range(kw):
            c0 = j * dilations[1]
            cols[..., i, j, :, :, :, :] = planes[..., r0:r0 + sh * (oh - 1) + 1:sh,
                                                 c0:c0 + sw * (ow - 1) + 1:sw]
    return cols.reshape(lead + (kh * kw * c, n * oh * ow))


# Up to this many input channels, im2col gathers per kernel offset (`_windows_t`).
_FEW_CHANNELS = 2


# The three implementations run over blocks of examples whose im2col matrix (or, for the
# input gradient, kernel-offset blocks and output) stays in cache (windows.block_size).
def _conv_impl(x: np.ndarray, w: np.ndarray, strides: tuple, dilations: tuple,
               pads: tuple) -> np.ndarray:
    kh, kw, c, o = w.shape[-4:]
    n = x.shape[-4]
    oh = out_size(x.shape[-3], kh, strides[0], dilations[0], pads[0])
    ow = out_size(x.shape[-2], kw, strides[1], dilations[1], pads[1])
    xp = pad(x, pads)
    lead = np.broadcast_shapes(x.shape[:-4], w.shape[:-4])
    out = np.empty(lead + (n, oh, ow, o), np.result_type(x, w))
    q = conv_banded.band_width(ow, (kh, kw, c, o), strides, dilations, (x, w))
    if q:  # NOTE(banded-conv)
        return conv_banded.conv(xp, w, q, out)
    # contiguous: the GEMM's rounding would follow the filter's memory layout (a grouped
    # filter is a transposed view in eager, contiguous when a saved graph is loaded)
    wm = np.ascontiguousarray(w).reshape(w.shape[:-4] + (kh * kw * c, o))
    step = block_size(n, oh * ow * kh * kw * c * x.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        block = xp[..., start:stop, :, :, :]
        if c <= _FEW_CHANNELS:
            flat = np.swapaxes(_windows_t(block, kh, kw, oh, ow, strides, dilations), -1, -2)
        else:
            cols = _windows(block, kh, kw, oh, ow, strides, dilations)
            flat = cols.reshape(cols.shape[:-4] + ((stop - start) * oh * ow, kh * kw * c))
        if out.ndim == 4:  # the product is the block's output: made in place
            blas.matmul(flat, wm, out=out[start:stop].reshape(flat.shape[0], o))
            continue
        res = blas.matmul(flat, wm)  # [..., n*OH*OW, O]
        out[..., start:stop, :, :, :] = res.reshape(res.shape[:-2] + (stop - start, oh, ow, o))
    return out


def _check_transpose(op: str, image: tuple, grad: tuple, kernel: tuple, strides: tuple,
                     dilations: tuple, pads: tuple) -> None:
    """Raise unless `grad` [..., OH, OW, O] is the shape a convolution with `kernel` (KH,
    KW, C, O) gives images [..., H, W, C]: a transpose's result would be wrong, not fail."""
    kh, kw, c, o = kernel
    want = (out_size(image[-3], kh, strides[0], dilations[0], pads[0]),
            out_size(image[-2], kw, strides[1], dilations[1], pads[1]), o)
    if tuple(grad[-3:]) != want or image[-1] != c:
        raise InvalidArgumentError(
            f"{op}: a convolution of images [..., {image[-3]}, {image[-2]}, {image[-1]}] with "
            f"a {kh}x{kw} kernel of {c} channels and {o} filters (strides {strides}, "
            f"dilations {dilations}, pads {pads}) gives [..., {want[0]}, {want[1]}, {o}]; "
            f"the gradient has shape {tuple(grad)}.")


def _filter_grad_impl(x: np.ndarray, g: np.ndarray, strides: tuple, dilations: tuple,
                      pads: tuple, filter_shape: tuple) -> np.ndarray:
    _check_transpose("conv2d_filter_grad", x.shape, g.shape, filter_shape, strides,
                     dilations, pads)
    kh, kw, c, o = filter_shape
    n, oh, ow = g.shape[-4], g.shape[-3], g.shape[-2]
    xp = pad(x, pads)
    q = conv_banded.band_width(ow, filter_shape, strides, dilations, (x, g), "filter grad")
    if q:  # NOTE(banded-conv)
        return conv_banded.filter_grad(xp, g, q, filter_shape)
    out = None
    step = block_size(n, oh * ow * kh * kw * c * x.itemsize)
    for start in range(0, n, step):
        stop = min(n, start + step)
        block = xp[..., start:stop, :, :, :]
        if c <= _FEW_CHANNELS:
            flat_t = _windows_t(block, kh, kw, oh, ow, strides, dilations)
        else:
            cols = _windows(block, kh, kw, oh, ow, strides, dilations)
            flat_t = np.swapaxes(cols.reshape(cols.shape[:-4] + ((stop - start) * oh * ow,
                                                                 kh * kw * c)), -1, -2)
        gm = g[..., start:stop, :, :, :].reshape(g.shape[:-4] + ((stop - start) * oh * ow, o))
        part = blas.matmul(flat_t, gm)  # [..., K, O]
        out = part if out is None else np.add(out, part, out=out)
    if out is None:  # no examples
        lead = np.broadcast_shapes(x.shape[:-4], g.shape[:-4])
        return np.zeros(lead + (kh, kw, c, o), np.result_type(x, g))
    return out.reshape(out.shape[:-2] + (kh, kw, c, o))


def _input_grad_impl(g: np.ndarray, w: np.ndarray, strides: tuple, dilations: tuple,
                     pads: tuple, input_shape: tuple) -> np.ndarray:
    _check_transpose("conv2d_input_grad", input_shape, g.shape, w.shape[-4:], strides,
                     dilations, pads)
    kh, kw, c, o = w.shape[-4:]
    n, oh, ow = g.shape[-4], g.shape[-3], g.shape[-2]
    h, wd = input_shape[-3], input_shape[-2]
    hp, wp = h + sum(pads[0]), wd + sum(pads[1])
    lead = np.broadcast_shapes(g.shape[:-4], w.shape[:-4])
    q = conv_banded.band_width(ow, (kh, kw, c, o), strides, dilations, (g, w), "input grad")
    if q:  # NOTE(banded-conv)
        out = conv_banded.input_grad(g, w, q, (n, hp, wp, c), np.result_type(g, w))
        return out[..., pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]
    if conv_phases.phase_split((kh, kw, c, o), strides, dilations, (g, w)):  # NOTE(phase-conv)
        return conv_phases.input_grad(g, w, strides, pads, input_shape, np.result_type(g, w))
    out = np.zeros(lead + (n, hp, wp, c), dtype=np.result_type(g, w))
    # The weights as [..., KH*KW, O, C] (C > 1) or [..., KH*KW, O] (C = 1), made once.
    if c > 1:
        wt = np.ascontiguousarray(np.swapaxes(w.reshape(w.shape[:-4] + (kh * kw, c, o)), -1, -2))
    else:
        wt = w.reshape(w.shape[:-4] + (kh * kw, o))
    step = block_size(n, (kh * kw * oh * ow + hp * wp) * c * out.itemsize * math.prod(lead))
    for start in range(0, n, step):
        stop = min(n, start + step)
        _input_grad_block(g[..., start:stop, :, :, :], wt, out[..., start:stop, :, :, :],
                          (kh, kw, c), strides, dilations)
    return out[..., pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def _input_grad_block(g: np.ndarray, wt: np.ndarray, out: np.ndarray, kernel: tuple,
                      strides: tuple, dilations: tuple) -> None:
    """Add the input gradient of examples `g` [..., n, OH, OW, O] into `out` (padded)."""
    kh, kw, c = kernel
    n, oh, ow, o = g.shape[-4:]
    gm = g.reshape(g.shape[:-4] + (n * oh * ow, o))
    # One GEMM straight into kernel-offset-major blocks [..., KH*KW, n*OH*OW, C]: each
    # offset's contribution is then read contiguously by the adds below (strided reads of
    # an im2col layout touch a cache line per element when C is small).
    if c > 1:
        taps = blas.matmul(gm[..., None, :, :], wt)
        lead = taps.shape[:-3]
    else:
        taps = blas.matmul(wt, np.swapaxes(gm, -1, -2))  # [..., KH*KW, n*OH*OW]
        lead = taps.shape[:-2]
    taps = taps.reshape(lead + (kh, kw, n, oh, ow, c))
    sh, sw = strides
    for i in range(kh):  # one strided add per kernel offset
        r0 = i * dilations[0]
        for j in range(kw):
            c0 = j * dilations[1]
            out[..., r0:r0 + sh * (oh - 1) + 1:sh, c0:c0 + sw * (ow - 1) + 1:sw, :] += \
                taps[..., i, j, :, :, :, :]


def _geom(p: dict) -> dict:
    return {"strides": p["strides"], "dilations": p["dilations"], "pads": p["pads"]}


def _conv(x: Tensor, w: Tensor, **p: Any) -> Tensor:
    return bind(conv2d_p, x, w, **_geom(p))


def _input_grad(g: Tensor, w: Tensor, input_shape: tuple, **p: Any) -> Tensor:
    return bind(conv2d_input_grad_p, g, w, input_shape=input_shape, **_geom(p))


def _filter_grad(x: Tensor, g: Tensor, filter_shape: tuple, **p: Any) -> Tensor:
    return bind(conv2d_filter_grad_p, x, g, filter_shape=filter_shape, **_geom(p))


# XLA (graph/xla.py): the forward is lax.conv_general_dilated at the impl's geometry;
# the two transposes are its VJPs in x and in w (exact transposes, as the impls), made on
# zeros of the operand's shape. Leading dims broadcast as in the impls (a vmap over them).
def _xla_conv(jax: Any, x: Any, w: Any, strides: tuple, dilations: tuple, pads: tuple) -> Any:
    return jax.lax.conv_general_dilated(
        x, w, window_strides=strides, padding=pads, rhs_dilation=dilations,
        dimension_numbers=("NHWC", "HWIO", "NHWC"), precision=jax.lax.Precision.HIGHEST)


def _xla_leading(jax: Any, f: Any, a: Any, b: Any) -> Any:
    """f(a, b) on rank-4 operands, over the broadcast leading dims of `a` and `b`."""
    jnp = jax.numpy
    lead = np.broadcast_shapes(a.shape[:-4], b.shape[:-4])
    if not lead:
        return f(a, b)
    # An operand without the leading dims is shared (in_axes None), not broadcast: a
    # convolution over a batch of images with one filter stays one convolution, where a
    # batch of filters would make it a grouped one.
    flat, axes = [], []
    for v in (a, b):
        if v.ndim == 4:
            flat.append(v)
            axes.append(None)
        else:
            flat.append(jnp.broadcast_to(v, lead + v.shape[-4:]).reshape((-1,) + v.shape[-4:]))
            axes.append(0)
    out = jax.vmap(f, in_axes=tuple(axes))(*flat)
    return out.reshape(lead + out.shape[1:])


def _xla_common(jax: Any, a: Any, b: Any) -> tuple:
    dtype = jax.numpy.result_type(a, b)
    return a.astype(dtype), b.astype(dtype)


def _conv_lower(jax: Any, x: Any, w: Any, strides: tuple, dilations: tuple, pads: tuple) -> Any:
    x, w = _xla_common(jax, x, w)
    return _xla_leading(jax, lambda a, b: _xla_conv(jax, a, b, strides, dilations, pads), x, w)


def _input_grad_lower(jax: Any, g: Any, w: Any, strides: tuple, dilations: tuple, pads: tuple,
                      input_shape: tuple) -> Any:
    g, w = _xla_common(jax, g, w)
    h, wd = input_shape[-3], input_shape[-2]

    def one(g1: Any, w1: Any) -> Any:
        if w1.shape[2] < _TRANSPOSED_MIN_CHANNELS and tuple(dilations) == (1, 1) \
                and tuple(strides) == (1, 1):
            return _input_grad_offsets(jax, g1, w1, strides, pads, h, wd)
        return _input_grad_transposed(jax, g1, w1, strides, dilations, pads, h, wd)
    return _xla_leading(jax, one, g, w)


# NOTE(conv-input-grad): which lowering of the input gradient on XLA's CPU backend. The
# transposed convolution (the conv's VJP in x: lhs dilation by the stride, the kernel
# flipped; JAX's own lowering, which it matches) runs in XLA's convolution kernels, which
# are slow with few output features: images of 1-3 channels, undilated, take a product
# and a padded add per kernel offset instead. With more channels the transposed
# convolution wins, and dilated ones always take it (by offsets they were several times
# slower). Stride-1 convolutions per phase of the stride, tried before, were slower than
# the transposed convolution at every shape timed. A sweep of 2,436 geometries (strides
# 1-3 per axis, kernels smaller and larger than the stride, paddings, dilations 1-3),
# with a shared filter and with one per example, found no geometry XLA's compiler
# rejects in the transposed one; the geometry test keeps a sample.
# Alone, the offsets win at the seed's strided first layer too; inside the programs they
# belong to, timed whole, only unstrided ones do: a strided kernel's offsets spread with
# interior padding, which XLA fuses into the program's other loops at a loss. So the
# offsets serve 1-3 channels, undilated and unstrided. The timings, alone and in whole
# programs: docs/performance-notes.md, #conv-input-grad.
_TRANSPOSED_MIN_CHANNELS = 4


def _input_grad_transposed(jax: Any, g: Any, w: Any, strides: tuple, dilations: tuple,
                           pads: tuple, h: int, wd: int) -> Any:
    """The input gradient as the VJP in x of the convolution: its exact transpose."""
    x0 = jax.numpy.zeros((g.shape[0], h, wd, w.shape[2]), g.dtype)
    _, vjp = jax.vjp(lambda x: _xla_conv(jax, x, w, strides, dilations, pads), x0)
    return vjp(g)[0]


def _input_grad_offsets(jax: Any, g: Any, w: Any, strides: tuple, pads: tuple, h: int,
                        wd: int) -> Any:
    """The input gradient of an undilated convolution as the NumPy impl computes it: one
    product per kernel offset, spread (interior padding) onto the padded image and added,
    then cropped."""
    jax_lax, jnp = jax.lax, jax.numpy
    hp, wp = h + sum(pads[0]), wd + sum(pads[1])
    (sh, sw), (kh, kw) = strides, w.shape[:2]
    oh, ow = g.shape[1], g.shape[2]
    taps = jnp.einsum("nabo,ijco->ijnabc", g, w, precision=jax_lax.Precision.HIGHEST)
    zero = jnp.zeros((), g.dtype)
    out = jnp.zeros((g.shape[0], hp, wp, w.shape[2]), g.dtype)
    for i in range(kh):
        for j in range(kw):
            out = out + jax_lax.pad(taps[i, j], zero, [
                (0, 0, 0), (i, hp - i - sh * (oh - 1) - 1, sh - 1),
                (j, wp - j - sw * (ow - 1) - 1, sw - 1), (0, 0, 0)])
    return out[:, pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + wd, :]


def _filter_grad_lower(jax: Any, x: Any, g: Any, strides: tuple, dilations: tuple, pads: tuple,
                       filter_shape: tuple) -> Any:
    x, g = _xla_common(jax, x, g)

    def one(x1: Any, g1: Any) -> Any:
        w0 = jax.numpy.zeros(tuple(filter_shape), x1.dtype)
        _, vjp = jax.vjp(lambda w: _xla_conv(jax, x1, w, strides, dilations, pads), w0)
        return vjp(g1)[0]
    return _xla_leading(jax, one, x, g)


def _leading_batch(image_arg: int, mergeable: bool = True) -> Callable[[Primitive], dict]:
    """Batching rule (a family): where images are independent, an image-only batch merges
    into N; otherwise the batch is a leading dim (the implementations broadcast leading
    dims). `image_arg` is the input that carries N."""
    def family(prim: Primitive) -> dict:
        def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
            return _batch_leading(prim, image_arg, mergeable, vals, dims, **params)
        return {"batch": rule}
    return family


def _batch_leading(prim: Primitive, image_arg: int, mergeable: bool, vals: tuple, dims: tuple,
                   **params: Any) -> tuple:
    """`_leading_batch`'s rule for `prim`: (batched output, its batch axis)."""
    other = 1 - image_arg
    if mergeable and dims[other] is None:
        # Merge the batch into N (images are independent): move it next to N first,
        # since the per-example operand may itself carry leading dims.
        x = vals[image_arg]
        n_axis = len(shape_of(x)) - 5  # N's place in the batched value, batch just before
        x = move_axis(x, dims[image_arg], n_axis)
        s = shape_of(x)
        merged = bind(reshape_p, x, shape=s[:n_axis] + (s[n_axis] * s[n_axis + 1],) + s[n_axis + 2:])
        args = [None, None]
        args[image_arg], args[other] = merged, vals[other]
        if "input_shape" in params:
            params = dict(params, input_shape=(s[n_axis] * s[n_axis + 1],) + params["input_shape"][1:])
        out = bind(prim, *args, **params)
        so = shape_of(out)
        return bind(reshape_p, out, shape=so[:n_axis] + (s[n_axis], s[n_axis + 1]) + so[n_axis + 1:]), n_axis
    moved = [v if d is None else move_to_front(v, d) for v, d in zip(vals, dims, strict=True)]
    return bind(prim, *moved, **params), 0


def _conv_deps(pats: tuple, vals: tuple, outs: tuple, strides: tuple, dilations: tuple,
               pads: tuple) -> tuple:
    # An output element depends on its window of the image (padding depends on nothing),
    # through the filter taps that are nonzero when the filter is fixed (a stencil written
    # as a convolution); the filter, when it varies, reaches every output element.
    (px, pw), (x, w) = pats, vals
    shape = outs[0].shape
    if px is not None and tuple(x.shape[:-4]) != tuple(shape[:-4]):
        return per_example_deps(0)(pats, vals, outs)
    rows, cols, n = [], [], (px or pw).n
    if px is not None:
        kh, kw, c, o = w.shape[-4:]
        numbered = np.arange(1, int(np.prod(x.shape)) + 1).reshape(x.shape)
        win = _windows(pad(numbered, pads), kh, kw, shape[-3], shape[-2], strides, dilations)
        fixed = isinstance(w, np.ndarray) and w.ndim == 4
        taps, co = np.nonzero(w.reshape(kh * kw * c, o) != 0 if fixed else
                              np.ones((kh * kw * c, o), bool))
        src = win[..., taps] - 1
        dst = np.arange(int(np.prod(shape))).reshape(shape)[..., co]
        keep = src >= 0
        r, q = px.pairs(dst[keep], src[keep])
        rows.append(r)
        cols.append(q)
    if pw is not None:
        r, q = pw.reduce(None, False).broadcast_to(shape).entries()
        rows.append(r)
        cols.append(q)
    return (Pattern.from_entries(shape, n, np.concatenate(rows), np.concatenate(cols)),)


# Each example on its own, for a filter shared by all (NOTE(example-grid) in graph/transposes).
_SHARED_FILTER = Hints(examples=lambda shape, x, w, **p: (1, (0,)) if len(shape(w)) == 4 else None)

# Dependencies (_conv_deps): the image's windows (per example, exact), the filter reaching
# everything; for the transposes, per example (input_grad) and dense (filter_grad).
# conv(x, w): d = conv(dx, w) + conv(x, dw); x-bar = input_grad(g, w), w-bar = filter_grad(x, g)
conv2d_p = define(
    Primitive("conv2d", half_in_float32(_conv_impl)),
    per_input(jvp=(lambda t, ans, x, w, **p: _conv(t, w, **p),
                   lambda t, ans, x, w, **p: _conv(x, t, **p)),
              vjp=(lambda g, ans, x, w, **p: _input_grad(g, w, shape_of(x)[-4:], **p),
                   lambda g, ans, x, w, **p: _filter_grad(x, g, shape_of(w)[-4:], **p)),
              reads=("w", "x")),
    _leading_batch(0),  # conv2d(x, w): x carries N
    sparsity=_conv_deps, lower=_conv_lower, passes=_SHARED_FILTER, curvature=MULTILINEAR)

# input_grad(g, w) is conv's transpose in x: <conv(x, w), g> = <x, input_grad(g, w)>
conv2d_input_grad_p = define(
    Primitive("conv2d_input_grad", half_in_float32(_input_grad_impl)),
    per_input(jvp=(lambda t, ans, g, w, input_shape, **p: _input_grad(t, w, input_shape, **p),
                   lambda t, ans, g, w, input_shape, **p: _input_grad(g, t, input_shape, **p)),
              vjp=(lambda c, ans, g, w, input_shape, **p: _conv(c, w, **p),
                   lambda c, ans, g, w, input_shape, **p: _filter_grad(c, g, shape_of(w)[-4:],
                                                                       **p)),
              reads=("w", "g")),
    _leading_batch(0),  # input_grad(g, w): g carries N
    sparsity=per_example_deps(0), lower=_input_grad_lower, passes=_SHARED_FILTER,
    curvature=MULTILINEAR)

# filter_grad(x, g) is conv's transpose in w: <conv(x, w), g> = <w, filter_grad(x, g)>
conv2d_filter_grad_p = define(
    Primitive("conv2d_filter_grad", half_in_float32(_filter_grad_impl)),
    per_input(jvp=(lambda t, ans, x, g, filter_shape, **p: _filter_grad(t, g, filter_shape, **p),
                   lambda t, ans, x, g, filter_shape, **p: _filter_grad(x, t, filter_shape, **p)),
              vjp=(lambda c, ans, x, g, filter_shape, **p: _input_grad(g, c, shape_of(x)[-4:],
                                                                       **p),
                   lambda c, ans, x, g, filter_shape, **p: _conv(x, c, **p)),
              reads=("g", "x")),
    _leading_batch(0, mergeable=False),  # sums over N: never merge a batch in
    sparsity=dense_deps,  # a sum over every example
    lower=_filter_grad_lower, curvature=MULTILINEAR)


def conv2d(input: Any, filters: Any, strides: Any = 1, padding: Any = "VALID",  # noqa: A002
           data_format: str = "NHWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """2-D convolution (cross-correlation, as TensorFlow) of NHWC `input` with
    [KH, KW, C, O] `filters`; `padding` is "SAME", "VALID" or explicit pairs.

    Gradients flow to both the input and the filters, to any order.

    Example:
        >>> import tapeflow as tf
        >>> x, w = tf.ones([1, 5, 5, 2]), tf.ones([3, 3, 2, 4])
        >>> tf.nn.conv2d(x, w, strides=1, padding="SAME").shape
        TensorShape([1, 5, 5, 4])
    """
    op = "conv2d"
    if data_format != "NHWC":
        raise InvalidArgumentError(f"{op}: only data_format='NHWC' is supported; got {data_format!r}.")
    x, w = binary_args(input, filters, op)
    check_dtype(x, "fc", op, "input")
    sx, sw = shape_of(x), shape_of(w)
    if len(sx) != 4:
        raise InvalidArgumentError(f"{op}: `input` must have rank 4 (NHWC); got shape {sx}.")
    if len(sw) != 4:
        raise InvalidArgumentError(f"{op}: `filters` must have rank 4 [KH, KW, C_in, C_out]; "
                                   f"got shape {sw}.")
    if sx[3] != sw[2]:
        raise InvalidArgumentError(f"{op}: `input` has {sx[3]} channels but `filters` expects "
                                   f"{sw[2]} (input shape {sx}, filters shape {sw}).")
    st = pair(strides, "strides", op)
    dl = pair(1 if dilations is None else dilations, "dilations", op)
    pads = pads_for(padding, sx[1:3], sw[:2], st, dl, op)
    for n, k, s, d, p, axis in zip(sx[1:3], sw[:2], st, dl, pads, ("height", "width"), strict=True):
        if out_size(n, k, s, d, p) < 1:
            raise InvalidArgumentError(f"{op}: the {axis} {n} (padded {n + sum(p)}) is smaller "
                                       f"than the dilated kernel {(k - 1) * d + 1}.")
    return bind(conv2d_p, x, w, strides=st, dilations=dl, pads=pads)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {"conv2d": "nn"}
