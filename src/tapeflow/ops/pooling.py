"""2-D pooling (NHWC): max_pool2d and its two companions, and avg_pool2d as a composite.

max_pool2d's derivative routes each window's tangent or cotangent through the
window's argmax, so its family is three primitives whose rules refer to each
other, as TensorFlow's MaxPool / MaxPoolGrad / MaxPoolGradGrad:

- `max_pool2d(x)`: the maximum of each window;
- `max_pool2d_grad(x, g)`: g of each window added at the window's argmax in x
  (the VJP; linear in g, piecewise constant in x);
- `max_pool2d_grad_grad(x, t)`: t read at each window's argmax in x (the JVP, and
  the transpose of max_pool2d_grad in g).

Under a tape or an accumulator, max_pool2d keeps the argmax its running maximum
finds (its `form` rule binds `max_pool2d_argmax`, two outputs), and its rules
route a cotangent to it and pick a tangent at it (`max_pool2d_route`,
`max_pool2d_pick`) instead of finding it again: see "the argmax, kept" below.

Ties: the first maximum of a window in row-major (row, then column) order takes
the whole derivative, as TensorFlow's CPU kernel does; padding never does.

Every implementation loops over the KH x KW kernel offsets (vectorized over all
pixels, never a loop over pixels) and accepts extra leading dims on its operands
(broadcast like matmul's batch dims), which is what the batching rules use.
avg_pool2d is linear: a window sum (a primitive, with its transpose) divided by the
number of unpadded elements of each window.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..dtypes import half_in_float32
from ..catalog import Hints, define
from ..core import Primitive, Zero, bind
from ..errors import InvalidArgumentError, UnimplementedError
from ..hessian_patterns import LINEAR, PIECEWISE_LINEAR
from ..tensor import Tensor
from .convert import as_tensor, check_dtype
from .elementwise import multiply
from .structural import (full_of, batch_elementwise, dtype_of, linear, move_to_front, per_example_deps,
                         per_input, shape_of)
from .windows import (block_size, copy_pixels, out_hw, pad, pads_for, pair, pixel_copies_pay,
                      spread_windows, window_pixels, window_slice)


def _offsets(ksize: tuple) -> list[tuple[int, int]]:
    """Kernel offsets in row-major order: the order in which ties are broken."""
    return [(i, j) for i in range(ksize[0]) for j in range(ksize[1])]


def _lowest(dtype: np.dtype) -> Any:
    return -np.inf if _dt.kind(dtype) == "f" else np.iinfo(dtype).min


def _max_pool_impl(x: np.ndarray, ksize: tuple, strides: tuple, pads: tuple) -> np.ndarray:
    return _separable(np.maximum, _lowest(x.dtype), x, ksize, strides, pads)


def _argmax(x: np.ndarray, ksize: tuple, strides: tuple, pads: tuple) -> np.ndarray:
    """[..., N, OH, OW, C]: the row-major offset of each window's first maximum (a NaN
    counts as the maximum, as np.argmax)."""
    return _max_and_argmax(x, ksize, strides, pads)[1]


def _max_and_argmax(x: np.ndarray, ksize: tuple, strides: tuple, pads: tuple) -> tuple:
    """(the maximum of each window, `_argmax`): one running maximum gives both."""
    xp = pad(x, pads, _lowest(x.dtype))
    oh, ow = out_hw(x.shape, ksize, strides, pads)
    top, arg = _running_argmax(xp, ksize, strides, oh, ow, nan=False)
    # np.maximum propagates NaN: a window holding one has a NaN maximum. np.max over the
    # maxima (a quarter of the image for 2x2/2 windows) costs less than np.isnan over the
    # image; only where it finds a NaN does the argmax run again, NaN-aware.
    if _dt.kind(x.dtype) == "f" and top.size and np.isnan(
            np.max(top) if top.dtype.kind == "f" else top).any():
        top, arg = _running_argmax(xp, ksize, strides, oh, ow, nan=True)
    if any(pads[0] + pads[1]):
        # A window whose unpadded values are all the lowest value ties with its padding:
        # the derivative goes to its first unpadded element, never to the padding.
        tied = top == _lowest(x.dtype)
        if tied.any():
            first = _first_unpadded(x.shape, ksize, strides, pads)[:, :, None]
            arg = np.where(tied, first, arg).astype(arg.dtype)
    return top, arg


def _running_argmax(xp: np.ndarray, ksize: tuple, strides: tuple, oh: int, ow: int,
                    nan: bool) -> tuple:
    """(maximum, argmax) of each window of the padded image `xp`; `nan`: a window's first
    NaN is its maximum and argmax."""
    # A running maximum over the offsets, in order: a later offset wins only if strictly
    # greater (the first maximum keeps ties), and then its offset is the largest yet, so
    # the argmax is a running maximum too. Branch-free ufuncs only: np.argmax over a
    # stacked copy reads across a non-contiguous axis, and masked copies with a random
    # mask mispredict at every element; either is several times slower. Each offset is
    # read twice: copied contiguous first where that pays (NOTE(pixel-cells)).
    n_off = ksize[0] * ksize[1]
    idx = np.uint8 if n_off < 256 else np.intp
    top = arg = buf = None
    for k, (i, j) in enumerate(_offsets(ksize)):
        if top is None:
            top = window_pixels(xp, i, j, oh, ow, strides)
            arg = np.zeros(top.shape, idx)
            copy = pixel_copies_pay(xp[window_slice(i, j, oh, ow, strides)])
            continue
        v = buf = window_pixels(xp, i, j, oh, ow, strides, out=buf) if copy else \
            xp[window_slice(i, j, oh, ow, strides)]
        better = v > top
        if nan:  # the first NaN wins, and nothing beats it
            better |= np.isnan(v) & ~np.isnan(top)
        np.maximum(top, v, out=top)  # NaN-propagating: a NaN, once seen, stays the top
        np.maximum(arg, better.view(np.uint8) * idx(k), out=arg, casting="unsafe")
    return top, arg


def _first_unpadded(x_shape: tuple, ksize: tuple, strides: tuple, pads: tuple) -> np.ndarray:
    """[OH, OW]: the first offset of each window that falls inside the image (static)."""
    oh, ow = out_hw(x_shape, ksize, strides, pads)
    rows = np.arange(oh)[None, :] * strides[0] + np.arange(ksize[0])[:, None] - pads[0][0]
    cols = np.arange(ow)[None, :] * strides[1] + np.arange(ksize[1])[:, None] - pads[1][0]
    row_in = (rows >= 0) & (rows < x_shape[-3])          # [KH, OH]
    col_in = (cols >= 0) & (cols < x_shape[-2])          # [KW, OW]
    valid = row_in[:, None, :, None] & col_in[None, :, None, :]   # [KH, KW, OH, OW]
    return np.argmax(valid.reshape(ksize[0] * ksize[1], oh, ow), axis=0)


def _grad_impl(x: np.ndarray, g: np.ndarray, ksize: tuple, strides: tuple,
               pads: tuple) -> np.ndarray:
    return _route_impl(_argmax(x, ksize, strides, pads), g, ksize, strides, pads,
                       x.shape[-3:-1])


def _route_impl(arg: np.ndarray, g: np.ndarray, ksize: tuple, strides: tuple, pads: tuple,
                input_hw: tuple) -> np.ndarray:
    """g of each window added at offset `arg` of the window, in an image of `input_hw`."""
    oh, ow = arg.shape[-3], arg.shape[-2]
    lead = np.broadcast_shapes(arg.shape[:-3], g.shape[:-3])  # the examples' axes broadcast
    arg = _spread_inner(arg, lead)
    h, w = input_hw
    out = np.zeros(lead + (h + sum(pads[0]), w + sum(pads[1]), arg.shape[-1]), dtype=g.dtype)
    pick = _selector(g)
    # Windows that do not overlap (stride >= window, the usual 2x2/2) cover each pixel at
    # most once: the product is written straight into place instead of added.
    # Where that pays, the products are made contiguous and then written whole pixels at
    # a time (NOTE(pixel-cells)).
    apart = strides[0] >= ksize[0] and strides[1] >= ksize[1]
    copy = apart and pixel_copies_pay(out[window_slice(0, 0, oh, ow, strides)], once=True)
    picked = None
    for k, (i, j) in enumerate(_offsets(ksize)):  # one strided write per kernel offset
        view = out[window_slice(i, j, oh, ow, strides)]
        if copy:
            picked = pick(arg == k, out=picked)
            copy_pixels(view, picked)
        elif apart:
            pick(arg == k, out=view)
        else:
            view += pick(arg == k)
    return out[..., pads[0][0]:pads[0][0] + h, pads[1][0]:pads[1][0] + w, :]


def _spread_inner(arg: np.ndarray, lead: tuple) -> np.ndarray:
    """The argmax over all of `lead` where it is broadcast along an inner axis of it: the
    products with its masks then run faster, NumPy's loops over a stride-0 middle axis
    being slow (docs/performance-notes.md, #spread-inner; NOTE(example-grid) in
    graph/transposes.py makes such grids). Broadcast ahead, it is left as it is."""
    if arg.ndim != len(lead) + 3 or arg.shape[:-3] == lead:
        return arg
    return np.ascontiguousarray(np.broadcast_to(arg, lead + arg.shape[-3:]))


def _grad_grad_impl(x: np.ndarray, t: np.ndarray, ksize: tuple, strides: tuple,
                    pads: tuple) -> np.ndarray:
    return _pick_impl(_argmax(x, ksize, strides, pads), t, ksize, strides, pads)


def _pick_impl(arg: np.ndarray, t: np.ndarray, ksize: tuple, strides: tuple,
               pads: tuple) -> np.ndarray:
    """t (an image) read at offset `arg` of each window."""
    oh, ow = arg.shape[-3], arg.shape[-2]
    tp = pad(t, pads)
    lead = np.broadcast_shapes(arg.shape[:-3], t.shape[:-3])
    arg = _spread_inner(arg, lead)
    out = np.zeros(lead + arg.shape[-3:], dtype=t.dtype)
    copy = pixel_copies_pay(tp[window_slice(0, 0, oh, ow, strides)])
    buf = None
    for k, (i, j) in enumerate(_offsets(ksize)):  # contiguous where that pays (NOTE(pixel-cells))
        v = buf = window_pixels(tp, i, j, oh, ow, strides, out=buf) if copy else \
            tp[window_slice(i, j, oh, ow, strides)]
        out += _selector(v)(arg == k)
    return out


def _selector(values: np.ndarray) -> Any:
    """(mask, out=None) -> values where mask, else 0 (into `out` if given). A product with
    the mask is branch-free (a select with a random mask is several times slower), exact
    where values are finite."""
    if _dt.kind(values.dtype) in "fc" and not np.isfinite(values).all():
        def select(mask: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
            picked = np.where(mask, values, 0)  # inf * 0 would be NaN
            if out is None:
                return picked
            out[...] = picked
            return out
        return select
    return lambda mask, out=None: np.multiply(values, mask, out=out)


def _route(x: Tensor, g: Tensor, **p: Any) -> Tensor:
    return bind(max_pool2d_grad_p, x, g, **p)


def _pick(x: Tensor, t: Tensor, **p: Any) -> Tensor:
    return bind(max_pool2d_grad_grad_p, x, t, **p)


def _zero_cotangent(c: Tensor, ans: Tensor, x: Tensor, *args: Any, **p: Any) -> Tensor:
    # The argmax is piecewise constant in x: a zero derivative, dense as TensorFlow's.
    return full_of(shape_of(x), 0, x._value.dtype)


# XLA (graph/xla.py): the maximum is lax.reduce_window; the argmax, as the impl's, a
# running maximum over the kernel offsets in row-major order (first maximum wins, the
# first NaN wins, padding never wins), so both companions route through the same element.
def _xla_window(jax: Any, xp: Any, i: int, j: int, oh: int, ow: int, strides: tuple) -> Any:
    """Offset (i, j) of every window of the padded `xp` (`windows.window_slice`)."""
    lead = xp.ndim - 3
    start = (0,) * lead + (i, j, 0)
    limit = xp.shape[:lead] + (i + strides[0] * (oh - 1) + 1, j + strides[1] * (ow - 1) + 1,
                               xp.shape[-1])
    return jax.lax.slice(xp, start, limit, (1,) * lead + (strides[0], strides[1], 1))


def _xla_pads(lead: int, pads: tuple) -> list:
    return [(0, 0)] * lead + [tuple(pads[0]), tuple(pads[1]), (0, 0)]


def _xla_reduce(jax: Any, x: Any, init: Any, op: Any, ksize: tuple, strides: tuple,
                pads: tuple) -> Any:
    lead = x.ndim - 3
    return jax.lax.reduce_window(x, init, op, (1,) * lead + (ksize[0], ksize[1], 1),
                                 (1,) * lead + (strides[0], strides[1], 1), _xla_pads(lead, pads))


def _xla_argmax(jax: Any, x: Any, ksize: tuple, strides: tuple, pads: tuple) -> Any:
    jnp = jax.numpy
    low = _lowest(np.dtype(x.dtype))
    xp = jnp.pad(x, _xla_pads(x.ndim - 3, pads), constant_values=low)
    oh, ow = out_hw(x.shape, ksize, strides, pads)
    nan = _dt.kind(np.dtype(x.dtype)) == "f"
    top = arg = None
    for k, (i, j) in enumerate(_offsets(ksize)):
        v = _xla_window(jax, xp, i, j, oh, ow, strides)
        if top is None:
            top, arg = v, jnp.zeros(v.shape, jnp.int32)
            continue
        better = v > top
        if nan:
            better = better | (jnp.isnan(v) & ~jnp.isnan(top))
        top = jnp.maximum(top, v)
        arg = jnp.where(better, k, arg)
    if any(pads[0] + pads[1]):
        first = _first_unpadded(x.shape, ksize, strides, pads)[:, :, None].astype(np.int32)
        arg = jnp.where(top == low, first, arg)
    return arg


def _xla_spread(jax: Any, parts: Any, hw: tuple, ksize: tuple, strides: tuple,
                pads: tuple) -> Any:
    """Sum over offsets k of parts(k) [..., OH, OW, C] placed at offset k of each window
    of the padded image, cropped to the image `hw`."""
    jax_lax = jax.lax
    hp, wp = hw[0] + sum(pads[0]), hw[1] + sum(pads[1])
    out = None
    for k, (i, j) in enumerate(_offsets(ksize)):
        part = parts(k)
        oh, ow = part.shape[-3], part.shape[-2]
        placed = jax_lax.pad(part, jax.numpy.zeros((), part.dtype),
                             [(0, 0, 0)] * (part.ndim - 3) + [
                                 (i, hp - i - strides[0] * (oh - 1) - 1, strides[0] - 1),
                                 (j, wp - j - strides[1] * (ow - 1) - 1, strides[1] - 1),
                                 (0, 0, 0)])
        out = placed if out is None else out + placed
    return out[..., pads[0][0]:pads[0][0] + hw[0], pads[1][0]:pads[1][0] + hw[1], :]


def _max_pool_lower(jax: Any, x: Any, ksize: tuple, strides: tuple, pads: tuple) -> Any:
    low = np.asarray(_lowest(np.dtype(x.dtype)), x.dtype)
    return _xla_reduce(jax, x, low, jax.lax.max, ksize, strides, pads)


def _grad_lower(jax: Any, x: Any, g: Any, ksize: tuple, strides: tuple, pads: tuple) -> Any:
    return _route_lower(jax, _xla_argmax(jax, x, ksize, strides, pads), g, ksize, strides,
                        pads, x.shape[-3:-1])


def _route_lower(jax: Any, arg: Any, g: Any, ksize: tuple, strides: tuple, pads: tuple,
                 input_hw: tuple) -> Any:
    jnp = jax.numpy
    lead = np.broadcast_shapes(arg.shape[:-3], g.shape[:-3])
    arg = jnp.broadcast_to(arg, lead + arg.shape[-3:])
    g = jnp.broadcast_to(g, lead + g.shape[-3:])
    return _xla_spread(jax, lambda k: jnp.where(arg == k, g, jnp.zeros((), g.dtype)),
                       tuple(input_hw), ksize, strides, pads)


def _grad_grad_lower(jax: Any, x: Any, t: Any, ksize: tuple, strides: tuple, pads: tuple) -> Any:
    return _pick_lower(jax, _xla_argmax(jax, x, ksize, strides, pads), t, ksize, strides, pads)


def _pick_lower(jax: Any, arg: Any, t: Any, ksize: tuple, strides: tuple, pads: tuple) -> Any:
    jnp = jax.numpy
    oh, ow = arg.shape[-3], arg.shape[-2]
    tp = jnp.pad(t, _xla_pads(t.ndim - 3, pads))
    zero = jnp.zeros((), t.dtype)
    out = None
    for k, (i, j) in enumerate(_offsets(ksize)):
        part = jnp.where(arg == k, _xla_window(jax, tp, i, j, oh, ow, strides), zero)
        out = part if out is None else out + part
    lead = np.broadcast_shapes(arg.shape[:-3], t.shape[:-3])
    return jnp.broadcast_to(out, lead + arg.shape[-3:])


def _leading_examples(shape: Any, *inputs: int, **params: Any) -> tuple:
    # Windows of the last three axes; the axes before them broadcast (batch_elementwise).
    return max(len(shape(x)) for x in inputs) - 3, None


def _windowed(deps: Any, batch: Callable[[Primitive], dict] = batch_elementwise,
              ) -> Callable[[Primitive], dict]:
    """The rules every windowed primitive here shares (a family): its batching rule (by
    default `batch_elementwise`: leading dims broadcast in every implementation, so the
    batch goes first, ranks aligned), its dependency rule `deps` (per example), and its
    examples: the axes before the windows (NOTE(example-grid) in graph/transposes.py)."""
    def family(prim: Primitive) -> dict:
        return {**batch(prim), "sparsity": deps, "passes": Hints(examples=_leading_examples)}
    return family


def _argmax_form(args: tuple, params: dict, reverse: bool) -> Any:
    """max_pool2d's differentiation form (catalog.KINDS["form"]): under a tape or an
    accumulator, a float maximum keeps its argmax (`max_pool2d_argmax`, "the argmax, kept"
    below); other dtypes, which carry no derivative, run as bound (None)."""
    if _dt.kind(dtype_of(args[0])) in "fc":
        return bind(max_pool2d_argmax_p, *args, **params)[0]
    return None


# max_pool2d(x): d = pick(x, dx); x-bar = route(x, g)
max_pool2d_p = define(
    Primitive("max_pool2d", _max_pool_impl),
    per_input(jvp=(lambda t, ans, x, **p: _pick(x, t, **p),),
              vjp=(lambda g, ans, x, **p: _route(x, g, **p),), reads=("x",)),
    _windowed(per_example_deps()),  # each example's windows: block diagonal
    lower=_max_pool_lower, form=_argmax_form, curvature=PIECEWISE_LINEAR)

# route(x, g) is linear in g (x only picks the argmax: no tangent), and its transpose
# is pick: <route(x, g), c> = <g, pick(x, c)>
max_pool2d_grad_p = define(
    Primitive("max_pool2d_grad", _grad_impl),
    per_input(jvp=(None, lambda t, ans, x, g, **p: _route(x, t, **p)),
              vjp=(_zero_cotangent, lambda c, ans, x, g, **p: _pick(x, c, **p)),
              reads=("x", "x"), broadcasting=True),
    _windowed(per_example_deps()), lower=_grad_lower, curvature=LINEAR)

# pick(x, t) is linear in t (x only picks), and its transpose is route:
# <pick(x, t), c> = <t, route(x, c)>
max_pool2d_grad_grad_p = define(
    Primitive("max_pool2d_grad_grad", _grad_grad_impl),
    per_input(jvp=(None, lambda t_, ans, x, t, **p: _pick(x, t_, **p)),
              vjp=(_zero_cotangent, lambda c, ans, x, t, **p: _route(x, c, **p)),
              reads=("x", "x"), broadcasting=True),
    _windowed(per_example_deps()), lower=_grad_grad_lower, curvature=LINEAR)


# ================================================================== the argmax, kept
# Under a tape or an accumulator, max_pool2d keeps the argmax its running maximum finds
# anyway, and its rules route and pick through it: the gradient then costs one strided
# write per kernel offset instead of the argmax's recomputation, which costs more than
# the maximum itself (docs/performance-notes.md, #pool-argmax). A forward
# pass that is not differentiated keeps the plain maximum: max_pool2d's `form`
# (`_argmax_form`, catalog.KINDS["form"]) binds the argmax only where core.bind finds a
# recorder that differentiates.
#
# - `max_pool2d_argmax(x)`: (the maximum, the argmax) of each window; the argmax is an
#   integer output (the kernel offset, row-major) and carries no derivative;
# - `max_pool2d_route(arg, g)`: g of each window added at its argmax (the VJP);
# - `max_pool2d_pick(arg, t)`: t read at each window's argmax (the JVP), route's
#   transpose in g and route its transpose in t.
def _argmax_dtype(ksize: tuple) -> np.dtype:
    return np.dtype(np.uint8 if ksize[0] * ksize[1] < 256 else np.intp)


def _hw_of(x: Tensor) -> tuple:
    return tuple(shape_of(x)[-3:-1])


def _argmax_jvp(tangents: tuple, outs: tuple, primals: tuple, **p: Any) -> tuple:
    t = tangents[0]
    y = Zero.like(outs[0]) if type(t) is Zero else bind(max_pool2d_pick_p, outs[1], t, **p)
    return y, Zero.like(outs[1])


def _argmax_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, **p: Any) -> tuple:
    g = cts[0]
    if not needs[0] or type(g) is Zero:
        return (None,)
    return (bind(max_pool2d_route_p, outs[1], g, input_hw=_hw_of(primals[0]), **p),)


def _argmax_lower(jax: Any, x: Any, ksize: tuple, strides: tuple, pads: tuple) -> tuple:
    arg = _xla_argmax(jax, x, ksize, strides, pads).astype(_argmax_dtype(ksize))
    return _max_pool_lower(jax, x, ksize, strides, pads), arg


max_pool2d_argmax_p = define(
    Primitive("max_pool2d_argmax", _max_and_argmax, multiple_results=True),
    jvp=_argmax_jvp, vjp=_argmax_vjp,
    reads=(((), (1,)),),  # the argmax only: x can go (its shape is all the rule reads)
    batch=lambda vals, dims, **p: (
        bind(max_pool2d_argmax_p, move_to_front(vals[0], dims[0]), **p), [0, 0]),
    sparsity=lambda pats, vals, outs, **p: (
        per_example_deps()(pats, vals, outs[:1])[0], None),  # the argmax: piecewise constant
    lower=_argmax_lower, curvature=PIECEWISE_LINEAR)

# route(arg, g) is linear in g; pick(arg, t) in t; each is the other's transpose. The
# argmax is an integer input: no derivative reaches it. Both broadcast the argmax as the
# values are (their examples too), and depend on the routed values, per example.
max_pool2d_route_p = define(
    Primitive("max_pool2d_route", _route_impl),
    per_input(jvp=(None, lambda t, ans, arg, g, **p: bind(max_pool2d_route_p, arg, t, **p))),
    per_input(vjp=(None, lambda c, ans, arg, g, input_hw, **p: bind(max_pool2d_pick_p, arg, c,
                                                                     **p)),
              reads=("", "arg"), broadcasting=True),
    _windowed(per_example_deps(1)), lower=_route_lower, curvature=LINEAR)

max_pool2d_pick_p = define(
    Primitive("max_pool2d_pick", _pick_impl),
    per_input(jvp=(None, lambda t_, ans, arg, t, **p: bind(max_pool2d_pick_p, arg, t_, **p))),
    per_input(vjp=(None, lambda c, ans, arg, t, **p: bind(max_pool2d_route_p, arg, c,
                                                          input_hw=_hw_of(t), **p)),
              reads=("", "arg"), broadcasting=True),  # t: its shape only
    _windowed(per_example_deps(1)), lower=_pick_lower, curvature=LINEAR)


# ================================================================== window sums
# avg_pool2d is a window sum times a constant. The sum adds the KH*KW strided views of the
# padded input (as max_pool2d takes their maximum); its transpose adds the cotangent back
# into each view. A convolution with a window of ones did the same work through an
# im2col copy and a one-column GEMM per channel, several times slower than TensorFlow's
# AvgPool (docs/performance-notes.md, #window-sums).
def _clipped(n_in: int, n_out: int, k: int, stride: int, pad_before: int) -> tuple | None:
    """For kernel offset `k` along one axis: the output positions whose input position
    (o * stride + k - pad_before) lies inside the image, as (out slice, in slice), or
    None when none does. Padding is never materialized: it would only add zeros."""
    first = max(0, -(-(pad_before - k) // stride))
    last = min(n_out - 1, (n_in - 1 + pad_before - k) // stride)
    if first > last:
        return None
    start = first * stride + k - pad_before
    return (slice(first, last + 1),
            slice(start, start + (last - first) * stride + 1, stride))


def _separable_plan(arr: np.ndarray, hw: tuple, ohw: tuple, ksize: tuple, strides: tuple,
                    pads: tuple) -> tuple:
    """For a window sum between images `hw` and outputs `ohw`: the (output, input) index
    pairs of the rows and of the columns, and the examples per cache-sized block."""
    rows = [r for i in range(ksize[0]) if (r := _clipped(hw[0], ohw[0], i, strides[0], pads[0][0]))]
    cols = [c for j in range(ksize[1]) if (c := _clipped(hw[1], ohw[1], j, strides[1], pads[1][0]))]
    lead = arr.shape[:-4]
    per_example = (hw[0] * hw[1] + 2 * ohw[0] * hw[1]) * arr.shape[-1] * arr.itemsize
    return rows, cols, block_size(arr.shape[-4], per_example * math.prod(lead))


def _separable(ufunc: np.ufunc, fill: Any, x: np.ndarray, ksize: tuple, strides: tuple,
               pads: tuple) -> np.ndarray:
    """`ufunc` (add, maximum) over each window: windows are separable, so rows first
    (whole image rows, long contiguous runs), then columns on the row results (runs of C
    elements, NumPy's slow case, but over 1/KH of the data). Padding is never made: the
    clipped index ranges skip it (`fill`, the ufunc's identity, is what it would add).
    Cache-sized blocks of examples (as conv2d's) keep the time per example from jumping
    with the batch size."""
    h, w = x.shape[-3], x.shape[-2]
    oh, ow = out_hw(x.shape, ksize, strides, pads)
    rows, cols, step = _separable_plan(x, (h, w), (oh, ow), ksize, strides, pads)
    out = np.full(x.shape[:-3] + (oh, ow, x.shape[-1]), fill, x.dtype)
    for start in range(0, x.shape[-4], step):
        xb = x[..., start:start + step, :, :, :]
        by_rows = np.full(xb.shape[:-3] + (oh, w, x.shape[-1]), fill, x.dtype)
        for o, i in rows:
            view = by_rows[..., o, :, :]
            ufunc(view, xb[..., i, :, :], out=view)
        ob = out[..., start:start + step, :, :, :]
        buf = None
        for o, i in cols:  # each column offset contiguous where that pays (NOTE(pixel-cells))
            view, src = ob[..., o, :], by_rows[..., i, :]
            if pixel_copies_pay(src, once=True):
                if buf is None or buf.shape != src.shape:
                    buf = np.empty(src.shape, src.dtype)
                copy_pixels(buf, src)
                src = buf
            ufunc(view, src, out=view)
    return out


def _window_sum_impl(x: np.ndarray, ksize: tuple, strides: tuple, pads: tuple) -> np.ndarray:
    return _separable(np.add, 0, x, ksize, strides, pads)


def _window_sum_transpose_impl(g: np.ndarray, ksize: tuple, strides: tuple, pads: tuple,
                               input_shape: tuple) -> np.ndarray:
    # The transpose of the above, in reverse: columns spread first, then whole rows.
    h, w = input_shape[-3], input_shape[-2]
    oh, ow = g.shape[-3], g.shape[-2]
    if tuple(strides) == tuple(ksize) and not any(pads[0] + pads[1]):
        # Windows that tile the image: each pixel receives one value, 0 + g as the
        # general form adds it (a -0 becomes +0), spread whole pixels at a time.
        spread = spread_windows(np.add(g, 0, dtype=g.dtype), ksize, (h, w))
        if spread is not None:
            return spread
    rows, cols, step = _separable_plan(g, (h, w), (oh, ow), ksize, strides, pads)
    out = np.zeros(g.shape[:-3] + (h, w, g.shape[-1]), g.dtype)
    for start in range(0, g.shape[-4], step):
        gb = g[..., start:start + step, :, :, :]
        by_cols = np.zeros(gb.shape[:-3] + (oh, w, g.shape[-1]), g.dtype)
        for o, i in cols:
            by_cols[..., i, :] += gb[..., o, :]
        ob = out[..., start:start + step, :, :, :]
        for o, i in rows:
            ob[..., i, :, :] += by_cols[..., o, :, :]
    return out


def _window_sum(x: Tensor, ksize: tuple, strides: tuple, pads: tuple) -> Tensor:
    return bind(window_sum_p, x, ksize=ksize, strides=strides, pads=pads)


def _batch_first(prim: Primitive) -> dict:
    """Batching rule of a window sum: the implementations slice the last three axes, so
    any batch axis goes first."""
    return {"batch": lambda vals, dims, **params: (
        bind(prim, move_to_front(vals[0], dims[0]), **params), 0)}


# XLA: the sum is lax.reduce_window; its transpose spreads g onto each offset, as the impl.
window_sum_p = define(
    Primitive("window_sum", half_in_float32(_window_sum_impl)),
    linear(lambda g, x, ksize, strides, pads: bind(
        window_sum_transpose_p, g, ksize=ksize, strides=strides, pads=pads,
        input_shape=shape_of(x)[-4:])),
    _windowed(per_example_deps(), batch=_batch_first),
    lower=lambda jax, x, ksize, strides, pads: _xla_reduce(
        jax, x, np.zeros((), x.dtype), jax.lax.add, ksize, strides, pads), curvature=LINEAR)
window_sum_transpose_p = define(
    Primitive("window_sum_transpose", half_in_float32(_window_sum_transpose_impl)),
    linear(lambda g, x, ksize, strides, pads, input_shape: _window_sum(g, ksize, strides, pads)),
    _windowed(per_example_deps(), batch=_batch_first),
    lower=lambda jax, g, ksize, strides, pads, input_shape: _xla_spread(
        jax, lambda k: g, tuple(input_shape[-3:-1]), ksize, strides, pads), curvature=LINEAR)


# ================================================================== public ops
def _pool_args(input: Any, ksize: Any, strides: Any, padding: Any, data_format: Any,  # noqa: A002
               op: str, kinds: str, explicit: bool) -> tuple:
    if data_format not in (None, "NHWC"):
        raise InvalidArgumentError(f"{op}: only data_format='NHWC' is supported; "
                                   f"got {data_format!r}.")
    x = as_tensor(input, op, "input")
    check_dtype(x, kinds, op, "input")
    sx = shape_of(x)
    if len(sx) != 4:
        raise InvalidArgumentError(f"{op}: `input` must have rank 4 (NHWC); got shape {sx}.")
    k = pair(ksize, "ksize", op)
    st = pair(strides, "strides", op)
    if not isinstance(padding, str) and not explicit:
        raise InvalidArgumentError(f"{op}: `padding` must be 'SAME' or 'VALID'; got {padding!r}.")
    pads = pads_for(padding, sx[1:3], k, st, (1, 1), op)
    for n, kk, p, axis in zip(sx[1:3], k, pads, ("height", "width"), strict=True):
        if max(p) >= kk:
            raise InvalidArgumentError(f"{op}: explicit padding {p} on the {axis} must be smaller "
                                       f"than the window size {kk}.")
        if n + sum(p) < kk:
            raise InvalidArgumentError(f"{op}: the {axis} {n} (padded {n + sum(p)}) is smaller "
                                       f"than the window size {kk}.")
    return x, k, st, pads


def max_pool2d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """The maximum of each `ksize` window of the NHWC `input`, windows `strides` apart;
    `padding` is "SAME", "VALID" or explicit [[0, 0], [top, bottom], [left, right], [0, 0]].

    The gradient goes to each window's maximum; at ties, to the first one in row-major
    order (as TensorFlow's CPU kernel). Padding never wins a window.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.constant([float(i) for i in range(16)]), [1, 4, 4, 1])
        >>> tf.nn.max_pool2d(x, ksize=2, strides=2, padding="VALID")[0, :, :, 0].numpy()
        array([[ 5.,  7.],
               [13., 15.]], dtype=float32)
    """
    x, k, st, pads = _pool_args(input, ksize, strides, padding, data_format, "max_pool2d",
                                "fiu", explicit=True)
    # Under a tape or an accumulator, max_pool2d_p's form keeps the argmax (_argmax_form).
    return bind(max_pool2d_p, x, ksize=k, strides=st, pads=pads)


def _valid_counts(x_shape: tuple, ksize: tuple, strides: tuple, pads: tuple) -> np.ndarray:
    """[OH, OW]: how many unpadded elements each window holds (static: shapes only)."""
    oh, ow = out_hw(x_shape, ksize, strides, pads)
    rows = np.arange(oh)[:, None] * strides[0] + np.arange(ksize[0])[None, :] - pads[0][0]
    cols = np.arange(ow)[:, None] * strides[1] + np.arange(ksize[1])[None, :] - pads[1][0]
    per_row = ((rows >= 0) & (rows < x_shape[-3])).sum(1)
    per_col = ((cols >= 0) & (cols < x_shape[-2])).sum(1)
    return per_row[:, None] * per_col[None, :]


def avg_pool2d(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NHWC", name: str | None = None) -> Tensor:
    """The mean of each `ksize` window of the NHWC `input`, windows `strides` apart;
    with padding "SAME", each mean is over the window's unpadded elements only (as
    TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.constant([float(i) for i in range(9)]), [1, 3, 3, 1])
        >>> tf.nn.avg_pool2d(x, ksize=2, strides=2, padding="SAME")[0, :, :, 0].numpy()
        array([[2. , 3.5],
               [6.5, 8. ]], dtype=float32)
    """
    x, k, st, pads = _pool_args(input, ksize, strides, padding, data_format, "avg_pool2d",
                                "f", explicit=False)
    n, h, w, c = shape_of(x)
    dtype = x._value.dtype
    sums = _window_sum(x, k, st, pads)
    inv = Tensor((1.0 / _valid_counts((n, h, w, c), k, st, pads)).astype(dtype)[:, :, None])
    return multiply(sums, inv)


def _rank4_only(x: Any, op: str) -> None:
    rank = np.ndim(as_tensor(x, op, "input")._value)
    if rank != 4:
        raise UnimplementedError(f"{op}: only 4-D (NHWC) inputs are supported; got rank {rank}. "
                                 f"Use tf.nn.{op}2d.")


def max_pool(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """tf.nn.max_pool for 4-D NHWC inputs: the same as `max_pool2d`.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.max_pool(tf.ones([1, 4, 4, 2]), 2, 2, "VALID").shape
        TensorShape([1, 2, 2, 2])
    """
    _rank4_only(input, "max_pool")
    return max_pool2d(input, ksize, strides, padding, data_format or "NHWC")


def avg_pool(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
             data_format: str | None = None, name: str | None = None) -> Tensor:
    """tf.nn.avg_pool for 4-D NHWC inputs: the same as `avg_pool2d`.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.avg_pool(tf.ones([1, 4, 4, 2]), 2, 2, "VALID").shape
        TensorShape([1, 2, 2, 2])
    """
    _rank4_only(input, "avg_pool")
    return avg_pool2d(input, ksize, strides, padding, data_format or "NHWC")


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {"max_pool2d": "nn", "avg_pool2d": "nn", "max_pool": "nn", "avg_pool": "nn"}
