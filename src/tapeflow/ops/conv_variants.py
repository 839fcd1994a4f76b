"""Convolutions built on conv2d and its transposes: 1-D convolution, transposed
convolution (1-D and 2-D), depthwise and separable convolution, the `convolution` and
`conv_transpose` dispatchers, and 1-D pooling.

No primitive is defined here: each op reshapes and transposes its operands into those
of ops/conv.py (`conv2d_p`, `conv2d_input_grad_p`) and ops/pooling.py (max_pool2d,
avg_pool2d), whose rules (derivatives of every order, batching, XLA lowering, sparsity,
size-generic traces) then apply.

- A 1-D operand is a 2-D one of height 1: windows of height 1, stride 1 down it.
- Channels-first formats (NCW, NCHW), which TensorFlow's CPU kernels refuse, are the
  channels-last op between two transposes.
- A transposed convolution is `conv2d_input_grad_p` (conv2d's input gradient is one),
  its `output_shape` checked as TensorFlow checks it: a convolution of an output of
  that shape, with these filters, strides and padding, must give the input's sizes.
- NOTE(grouped-conv): a grouped convolution (input channels G * c, filters [kh, kw, c,
  G * o]) is one `conv2d_p` over a leading axis of G groups: conv2d_p broadcasts leading
  dims of both operands as matmul does, so x [G, N, H, W, c] with w [G, kh, kw, c, o]
  is G convolutions in one bind (per group one GEMM; on XLA a vmap, which is a
  feature-grouped convolution). Depthwise convolution is the grouped one with G = C
  input channels of one channel each. Timed (3x3 filters, batch 32-128, 28-64 px, 1-64
  channels, forward and forward with backward) against a plain conv2d with as many
  channels in and out: from about its time (1.5 times at worst, a 128x28x28x32 forward)
  to 3-13 times less (32-64 channels at 32-64 px); about the time of a NumPy sum of the
  nine shifted images.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from ..core import bind
from ..errors import InvalidArgumentError, UnimplementedError
from ..tensor import Tensor
from .conv import conv2d_input_grad_p, conv2d_p
from .convert import as_tensor, binary_args, check_dtype, static_shape
from .pooling import avg_pool2d, max_pool2d
from .structural import reshape_p, shape_of, shape_source, transpose_p
from .windows import out_size, pads_for

# ================================================================== arguments
_LAST = {1: ("NWC",), 2: ("NHWC",)}
_FIRST = {1: ("NCW",), 2: ("NCHW",)}


def _channels_first(data_format: Any, op: str, last: tuple, first: tuple) -> bool:
    """Whether `data_format` puts the channels before the spatial axes (None: after)."""
    if data_format is None or data_format in last:
        return False
    if data_format in first:
        return True
    raise InvalidArgumentError(f"{op}: `data_format` must be '{last[0]}' or '{first[0]}'. "
                               f"Received: data_format={data_format!r}")


def _seq(value: Any, n: int, name: str, op: str, first: bool = False) -> tuple:
    """A window argument (strides, dilations, ksize) as `n` spatial ints, from TensorFlow's
    forms: one int, or a list of 1, n or n + 2 (the batch and channel entries then 1)."""
    if value is None:
        return (1,) * n
    try:
        v = [int(a) for a in np.asarray(value).reshape(-1)]
    except (TypeError, ValueError):
        raise TypeError(f"{op}: `{name}` must be an int or a list of ints; "
                        f"got {value!r}.") from None
    if len(v) == n + 2:
        if (v[0], v[1] if first else v[-1]) != (1, 1):
            raise InvalidArgumentError(f"{op}: `{name}` over the batch and channel dims must be "
                                       f"1; got {name}={value!r}.")
        v = v[2:] if first else v[1:-1]
    elif len(v) == 1:
        v = v * n
    elif len(v) != n:
        raise InvalidArgumentError(f"{op}: `{name}` should be of length 1, {n} or {n + 2}. "
                                   f"Received: {name}={value!r} of length {len(v)}")
    if min(v) < 1:
        raise InvalidArgumentError(f"{op}: `{name}` must be positive; got {name}={value!r}.")
    return tuple(v)


def _padding(padding: Any, op: str, nd: int, first: bool, explicit: bool) -> Any:
    """`padding` as windows.pads_for takes it: "SAME", "VALID", or explicit pairs (one per
    axis of the op's data format) reordered to NHWC's [[0, 0], [top, bottom], [left,
    right], [0, 0]], a 1-D op's height unpadded."""
    if isinstance(padding, str):
        return padding
    if not explicit:
        raise TypeError(f"{op}: Expected string for argument 'padding' not {padding!r}: "
                        f"'SAME' or 'VALID'.")
    arr = np.asarray(padding)
    if arr.shape != (nd + 2, 2) or arr.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{op}: explicit `padding` must be {nd + 2} pairs of ints, "
                                   f"one per axis of the input; got {padding!r}.")
    if first:
        arr = arr[[0] + list(range(2, nd + 2)) + [1]]
    if nd == 1:
        arr = np.concatenate([arr[:1], [[0, 0]], arr[1:]])
    return arr.tolist()


def _no_dilated_strides(strides: tuple, dilations: tuple, op: str) -> None:
    if max(strides) > 1 and max(dilations) > 1:
        raise InvalidArgumentError(f"{op}: `strides > 1` not supported in conjunction with "
                                   f"`dilation_rate > 1`. Received: strides={list(strides)} "
                                   f"and dilation_rate={list(dilations)}")


def _check_sizes(op: str, hw: tuple, k: tuple, strides: tuple, dilations: tuple,
                 pads: tuple) -> None:
    """An input too small for its window gives an empty output, as TensorFlow; one whose
    output size would be negative is an error."""
    for n, kk, s, d, p in zip(hw, k, strides, dilations, pads, strict=True):
        out = out_size(n, kk, s, d, p)
        if out < 0:
            raise InvalidArgumentError(
                f"{op}: Computed output size would be negative: {out} [input_size: {n}, "
                f"effective_filter_size: {(kk - 1) * d + 1}, stride: {s}]")


def _float_args(x: Any, w: Any, op: str, names: tuple = ("input", "filters")) -> tuple:
    x, w = binary_args(x, w, op)
    check_dtype(x, "f", op, names[0])
    return x, w


def _rank(x: Tensor, rank: int, op: str, arg: str, what: str, at_least: bool = False) -> tuple:
    s = shape_of(x)
    if len(s) < rank if at_least else len(s) != rank:
        more = " or more (leading batch dims)" if at_least else ""
        raise InvalidArgumentError(f"{op}: `{arg}` must have rank {rank}{more} {what}; "
                                   f"got shape {s}.")
    return s


# ================================================================== building blocks
def _reshape(x: Tensor, shape: tuple) -> Tensor:
    # Sizes from shape_source (read at replay in a size-generic trace) pass through as they
    # are; arithmetic on them gives the traced ints, which the trace comparison checks.
    shape = tuple(shape)
    return x if shape == shape_of(x) else bind(reshape_p, x, shape=shape)


def _transpose(x: Tensor, perm: tuple) -> Tensor:
    return x if tuple(perm) == tuple(range(len(perm))) else bind(transpose_p, x, perm=tuple(perm))


def _to_last(x: Tensor, first: bool) -> Tensor:
    """Channels moved from axis -nd-1 to the end, for a channels-first input of rank 3 or 4
    (only these have a channels-first format here)."""
    r = len(shape_of(x))
    return _transpose(x, (0,) + tuple(range(2, r)) + (1,)) if first else x


def _to_first(y: Tensor, first: bool) -> Tensor:
    r = len(shape_of(y))
    return _transpose(y, (0, r - 1) + tuple(range(1, r - 1))) if first else y


def _grouped(x: Tensor, w: Tensor, strides: tuple, dilations: tuple, pads: tuple,
             op: str) -> Tensor:
    """The convolution of NHWC `x` with [kh, kw, c, O] `w`, grouped where x has G * c
    channels (NOTE(grouped-conv))."""
    n, h, wd, cx = shape_source(x)
    kh, kw, c, o = shape_of(w)
    if (c == 0 and cx != 0) or (c and (cx % c or cx == 0)):
        raise InvalidArgumentError(f"{op}: input depth must be evenly divisible by filter depth: "
                                   f"{cx} vs {c} (input shape {shape_of(x)}, filters shape "
                                   f"{shape_of(w)}).")
    g = cx // c if c else 1
    if o % g:
        raise InvalidArgumentError(f"{op}: the filters' {o} output channels must be evenly "
                                   f"divisible by the {g} groups of the input's {cx} channels.")
    geometry = {"strides": strides, "dilations": dilations, "pads": pads}
    if g == 1:
        return bind(conv2d_p, x, w, **geometry)
    xg = _transpose(_reshape(x, (n, h, wd, g, c)), (3, 0, 1, 2, 4))
    wg = _transpose(_reshape(w, (kh, kw, c, g, o // g)), (3, 0, 1, 2, 4))
    y = bind(conv2d_p, xg, wg, **geometry)  # [G, N, OH, OW, O / G]
    _, n, oh, ow, _ = shape_source(y)
    return _reshape(_transpose(y, (1, 2, 3, 0, 4)), (n, oh, ow, o))


def _conv(x: Tensor, w: Tensor, nd: int, strides: tuple, dilations: tuple, padding: Any,
          first: bool, op: str) -> Tensor:
    """The (grouped) convolution of `x` [..., *spatial, C] (channels first: [..., C,
    *spatial]) with `w` [*k, C / G, O], `nd` spatial axes (1 or 2), leading axes kept."""
    sw = _rank(w, nd + 2, op, "filters", f"[{'kw' if nd == 1 else 'kh, kw'}, in_channels, "
                                          f"out_channels]")
    _rank(x, nd + 2, op, "input", "(batch, spatial..., channels)", at_least=True)
    if first and len(shape_of(x)) != nd + 2:
        raise InvalidArgumentError(f"{op}: a channels-first `input` must have rank {nd + 2}; "
                                   f"got shape {shape_of(x)}.")
    x = _to_last(x, first)
    src = shape_source(x)
    lead, spatial, c = src[:-nd - 1], tuple(src[-nd - 1:-1]), src[-1]
    n = lead[0] if len(lead) == 1 else math.prod(lead)
    hw, k = ((1,) + spatial, (1, sw[0])) if nd == 1 else (spatial, tuple(sw[:2]))
    st, dl = ((1,) + strides, (1,) + dilations) if nd == 1 else (strides, dilations)
    pads = pads_for(padding, hw, k, st, dl, op)
    _check_sizes(op, hw, k, st, dl, pads)
    y = _grouped(_reshape(x, (n,) + hw + (c,)), _reshape(w, k + tuple(sw[-2:])), st, dl, pads, op)
    ys = shape_source(y)
    y = _reshape(y, tuple(lead) + tuple(ys[3 - nd:3]) + (ys[3],))
    return _to_first(y, first)


def _output_shape(value: Any, nd: int, op: str) -> tuple:
    """`output_shape` (a list, possibly of scalar tensors, or a 1-D int tensor) as ints:
    nd + 2 of them, or the nd spatial sizes."""
    if isinstance(value, (list, tuple)):
        value = [np.asarray(v).reshape(()) if np.ndim(v) <= 1 and np.size(v) == 1 else v
                 for v in value]
    dims = static_shape(value, op, "output_shape")
    if np.ndim(value) > 1 or len(dims) not in (nd, nd + 2):
        raise InvalidArgumentError(f"{op}: `output_shape` must hold {nd + 2} values (or the {nd} "
                                   f"spatial sizes); got {value!r}.")
    return dims


def _transposed(x: Tensor, w: Tensor, output_shape: Any, nd: int, strides: tuple,
                dilations: tuple, padding: Any, first: bool, op: str) -> Tensor:
    """The transposed convolution of `x` [N, *spatial, C_in] (channels first: [N, C_in,
    *spatial]) with `w` [*k, C_out, C_in], to `output_shape` (in the data format)."""
    _rank(x, nd + 2, op, "input", "(batch, spatial..., channels)")
    sw = _rank(w, nd + 2, op, "filters", f"[{'kw' if nd == 1 else 'kh, kw'}, out_channels, "
                                          f"in_channels]")
    out = _output_shape(output_shape, nd, op)
    x = _to_last(x, first)
    n, *spatial, cin = shape_source(x)
    if len(out) == nd:
        out = (n,) + out + (sw[-2],)
    elif first:
        out = (out[0],) + out[2:] + (out[1],)
    if out[0] != n:
        raise InvalidArgumentError(f"{op}: input and out_backprop must have the same batch size: "
                                   f"`output_shape` {list(out)} has batch {out[0]}, `input` {n}.")
    if out[-1] != sw[-2]:
        raise InvalidArgumentError(f"{op}: `output_shape` has {out[-1]} channels but `filters` of "
                                   f"shape {sw} [..., out_channels, in_channels] makes {sw[-2]}.")
    if cin != sw[-1]:
        raise InvalidArgumentError(f"{op}: filter and out_backprop must have the same out_depth: "
                                   f"`input` has {cin} channels, `filters` of shape {sw} "
                                   f"[..., out_channels, in_channels] take {sw[-1]}.")
    hw_in, hw_out = tuple(spatial), tuple(out[1:-1])
    k = tuple(sw[:nd])
    if nd == 1:
        hw_in, hw_out, k = (1,) + hw_in, (1,) + hw_out, (1,) + k
        strides, dilations = (1,) + strides, (1,) + dilations
    pads = pads_for(padding, hw_out, k, strides, dilations, op)
    for i in range(2):
        computed = out_size(hw_out[i], k[i], strides[i], dilations[i], pads[i])
        if computed != hw_in[i]:
            raise InvalidArgumentError(
                f"{op}: Size of out_backprop doesn't match computed: actual = {hw_in[i]}, computed "
                f"= {computed} spatial_dim: {i + 3 - nd} input: {hw_out[i]} filter: {k[i]} output: "
                f"{hw_in[i]} stride: {strides[i]} dilation: {dilations[i]} (a convolution of an "
                f"output of shape {list(out)} would not give the input's sizes).")
    x4 = _reshape(x, (n,) + hw_in + (cin,))
    w4 = _reshape(w, k + tuple(sw[-2:]))
    y = bind(conv2d_input_grad_p, x4, w4, strides=strides, dilations=dilations, pads=pads,
             input_shape=(n,) + hw_out + (out[-1],))
    return _to_first(_reshape(y, (n,) + tuple(out[1:])), first)


def _depthwise(x: Tensor, w: Tensor, strides: tuple, dilations: tuple, padding: Any,
               op: str) -> Tensor:
    """NHWC `x` convolved channel by channel with [kh, kw, C, M] `w`: C * M channels."""
    kh, kw, c, m = shape_of(w)
    hw = tuple(shape_source(x)[1:3])
    pads = pads_for(padding, hw, (kh, kw), strides, dilations, op)
    _check_sizes(op, hw, (kh, kw), strides, dilations, pads)
    # the grouped convolution of C groups of one channel, C * M filters [kh, kw, 1]
    return _grouped(x, _reshape(w, (kh, kw, 1 if c else 0, c * m)), strides, dilations, pads, op)


def _depthwise_args(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                    data_format: Any, dilations: Any, op: str) -> tuple:
    first = _channels_first(data_format, op, _LAST[2], _FIRST[2])
    x, w = _float_args(input, filter, op, ("input", "filter"))
    _rank(x, 4, op, "input", "(NHWC or NCHW)")
    sw = _rank(w, 4, op, "filter", "[kh, kw, in_channels, channel_multiplier]")
    st = _seq(strides, 2, "strides", op, first)
    dl = _seq(dilations, 2, "dilations", op, first)
    _no_dilated_strides(st, dl, op)
    x = _to_last(x, first)
    if shape_of(x)[-1] != sw[2]:
        raise InvalidArgumentError(f"{op}: input and filter must have the same depth: "
                                   f"{shape_of(x)[-1]} vs {sw[2]} (filter shape {sw}: [kh, kw, "
                                   f"in_channels, channel_multiplier]).")
    return x, w, st, dl, _padding(padding, op, 2, first, explicit=True), first


# ================================================================== public ops
def conv1d(input: Any, filters: Any, stride: Any, padding: str,  # noqa: A002
           data_format: str = "NWC", dilations: Any = None, name: str | None = None) -> Tensor:
    """1-D convolution (cross-correlation) of `input` [batch, width, in_channels] ("NWC";
    [batch, in_channels, width] with "NCW"; extra leading batch dims allowed) with
    `filters` [width, in_channels / groups, out_channels]; `padding` "SAME" or "VALID".
    An input of G times the filters' channels is a grouped convolution, as TensorFlow.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.reshape(tf.range(5.), [1, 5, 1])
        >>> tf.nn.conv1d(x, tf.ones([2, 1, 1]), stride=1, padding="VALID")[0, :, 0].numpy()
        array([1., 3., 5., 7.], dtype=float32)
    """
    op = "conv1d"
    first = _channels_first(data_format, op, ("NWC", "NHWC"), ("NCW", "NCHW"))
    x, w = _float_args(input, filters, op)
    st, dl = _seq(stride, 1, "stride", op, first), _seq(dilations, 1, "dilations", op, first)
    return _conv(x, w, 1, st, dl, _padding(padding, op, 1, first, False), first, op)


def convolution(input: Any, filters: Any, strides: Any = None, padding: str = "VALID",  # noqa: A002
                data_format: str | None = None, dilations: Any = None,
                name: str | None = None) -> Tensor:
    """N-D convolution as `tf.nn.convolution`: 1-D (filters of rank 3, as `conv1d`) or
    2-D (rank 4, as `conv2d`, grouped where the input has G times the filters' channels);
    `strides` and `dilations` not both above 1. 3-D convolution is not implemented.

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.convolution(tf.ones([2, 7, 7, 4]), tf.ones([3, 3, 2, 6]), padding="SAME").shape
        TensorShape([2, 7, 7, 6])
    """
    op = "convolution"
    x, w = _float_args(input, filters, op)
    nd = len(shape_of(w)) - 2
    if nd == 3:
        raise UnimplementedError(f"{op}: 3-D convolution (filters of rank 5) is not implemented.")
    if nd not in (1, 2):
        raise InvalidArgumentError(f"{op}: `num_spatial_dims` must be 1, 2, or 3. Received: "
                                   f"num_spatial_dims={nd} (filters of shape {shape_of(w)}).")
    first = _channels_first(data_format, op, _LAST[nd], _FIRST[nd])
    st, dl = _seq(strides, nd, "strides", op, first), _seq(dilations, nd, "dilations", op, first)
    _no_dilated_strides(st, dl, op)
    return _conv(x, w, nd, st, dl, _padding(padding, op, nd, first, False), first, op)


def conv2d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: Any = "SAME", data_format: str = "NHWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose of `conv2d` (its gradient with respect to its input, "deconvolution"):
    `input` [batch, height, width, in_channels] with `filters` [kh, kw, out_channels,
    in_channels] to `output_shape` [batch, out_height, out_width, out_channels] (a list or
    a 1-D tensor; or the two spatial sizes), which a conv2d with these filters, strides and
    padding must take back to the input's sizes. `padding` is "SAME", "VALID" or explicit.

    Example:
        >>> import tapeflow as tf
        >>> y = tf.nn.conv2d_transpose(tf.ones([1, 2, 2, 1]), tf.ones([2, 2, 1, 1]),
        ...                            output_shape=[1, 4, 4, 1], strides=2)
        >>> y[0, :, :, 0].numpy()
        array([[1., 1., 1., 1.],
               [1., 1., 1., 1.],
               [1., 1., 1., 1.],
               [1., 1., 1., 1.]], dtype=float32)
    """
    op = "conv2d_transpose"
    first = _channels_first(data_format, op, _LAST[2], _FIRST[2])
    x, w = _float_args(input, filters, op)
    st, dl = _seq(strides, 2, "strides", op, first), _seq(dilations, 2, "dilations", op, first)
    return _transposed(x, w, output_shape, 2, st, dl, _padding(padding, op, 2, first, True),
                       first, op)


def conv1d_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                     padding: str = "SAME", data_format: str = "NWC", dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """The transpose of `conv1d`: `input` [batch, width, in_channels] ("NWC"; "NCW" too)
    with `filters` [kw, out_channels, in_channels] to `output_shape` [batch, out_width,
    out_channels], which a conv1d of these filters, strides and padding takes back to the
    input's width.

    Example:
        >>> import tapeflow as tf
        >>> y = tf.nn.conv1d_transpose(tf.ones([1, 3, 1]), tf.ones([3, 1, 1]), [1, 5, 1], 2)
        >>> y[0, :, 0].numpy()
        array([1., 2., 1., 2., 1.], dtype=float32)
    """
    op = "conv1d_transpose"
    first = _channels_first(data_format, op, _LAST[1], _FIRST[1])
    x, w = _float_args(input, filters, op)
    st, dl = _seq(strides, 1, "strides", op, first), _seq(dilations, 1, "dilations", op, first)
    return _transposed(x, w, output_shape, 1, st, dl, _padding(padding, op, 1, first, False),
                       first, op)


def conv_transpose(input: Any, filters: Any, output_shape: Any, strides: Any,  # noqa: A002
                   padding: str = "SAME", data_format: str | None = None, dilations: Any = None,
                   name: str | None = None) -> Tensor:
    """`conv1d_transpose` or `conv2d_transpose`, by the rank of `input` (3 or 4).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.conv_transpose(tf.ones([2, 4, 3]), tf.ones([3, 5, 3]), [2, 8, 5], 2).shape
        TensorShape([2, 8, 5])
    """
    rank = len(shape_of(as_tensor(input, "conv_transpose", "input")))
    if rank == 5:
        raise UnimplementedError("conv_transpose: 3-D transposed convolution (rank-5 input) is "
                                 "not implemented.")
    if rank not in (3, 4):
        raise InvalidArgumentError(f"conv_transpose: `input` must have rank 3 or 4; got rank "
                                   f"{rank}.")
    f = conv1d_transpose if rank == 3 else conv2d_transpose
    return f(input, filters, output_shape, strides, padding,
             data_format or ("NWC" if rank == 3 else "NHWC"), dilations)


def depthwise_conv2d(input: Any, filter: Any, strides: Any, padding: Any,  # noqa: A002
                     data_format: str | None = None, dilations: Any = None,
                     name: str | None = None) -> Tensor:
    """Depthwise 2-D convolution: each channel of `input` (NHWC; "NCHW" too) convolved on
    its own with `filter` [kh, kw, in_channels, channel_multiplier], giving in_channels *
    channel_multiplier channels (channel c * multiplier + m from input channel c).
    `strides` (1, 2 or 4 ints) and `dilations` are not both above 1; `padding` is "SAME",
    "VALID" or explicit.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.ones([1, 3, 3, 2])
        >>> w = tf.stack([tf.ones([2, 2]), 2 * tf.ones([2, 2])], axis=-1)[..., None]
        >>> tf.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "VALID")[0, 0, 0].numpy()
        array([4., 8.], dtype=float32)
    """
    op = "depthwise_conv2d"
    x, w, st, dl, pad, first = _depthwise_args(input, filter, strides, padding, data_format,
                                               dilations, op)
    return _to_first(_depthwise(x, w, st, dl, pad, op), first)


def separable_conv2d(input: Any, depthwise_filter: Any, pointwise_filter: Any,  # noqa: A002
                     strides: Any, padding: Any, data_format: str | None = None,
                     dilations: Any = None, name: str | None = None) -> Tensor:
    """A depthwise convolution (`depthwise_conv2d` with `depthwise_filter` [kh, kw,
    in_channels, channel_multiplier], `strides`, `padding`, `dilations`) followed by a 1x1
    convolution with `pointwise_filter` [1, 1, in_channels * channel_multiplier,
    out_channels].

    Example:
        >>> import tapeflow as tf
        >>> y = tf.nn.separable_conv2d(tf.ones([2, 5, 5, 3]), tf.ones([3, 3, 3, 2]),
        ...                            tf.ones([1, 1, 6, 4]), [1, 1, 1, 1], "SAME")
        >>> y.shape, float(y[0, 2, 2, 0])
        (TensorShape([2, 5, 5, 4]), 54.0)
    """
    op = "separable_conv2d"
    x, w, st, dl, pad, first = _depthwise_args(input, depthwise_filter, strides, padding,
                                               data_format, dilations, op)
    _, pw = binary_args(x, pointwise_filter, op)
    spw = shape_of(pw)
    channels = shape_of(w)[2] * shape_of(w)[3]
    if len(spw) != 4 or spw[:3] != (1, 1, channels):
        raise InvalidArgumentError(f"{op}: `pointwise_filter` must have shape [1, 1, "
                                   f"in_channels * channel_multiplier = {channels}, "
                                   f"out_channels]; got shape {spw}.")
    y = _depthwise(x, w, st, dl, pad, op)
    y = bind(conv2d_p, y, pw, strides=(1, 1), dilations=(1, 1), pads=((0, 0), (0, 0)))
    return _to_first(y, first)


def _pool1d(pool2d: Callable, input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
            data_format: Any, op: str, kinds: str, explicit: bool) -> Tensor:
    """`pool2d` (max_pool2d, avg_pool2d) over windows of height 1 of the input [N, W, C]
    made [N, 1, W, C]."""
    first = _channels_first(data_format, op, _LAST[1], _FIRST[1])
    x = as_tensor(input, op, "input")
    check_dtype(x, kinds, op, "input")
    _rank(x, 3, op, "input", "(NWC or NCW)")
    k = _seq(ksize, 1, "ksize", op, first)
    st = _seq(strides, 1, "strides", op, first)
    pad = _padding(padding, op, 1, first, explicit)
    x = _to_last(x, first)
    n, w, c = shape_source(x)
    pads = pads_for(pad, (1, w), (1,) + k, (1,) + st, (1, 1), op)[1]
    if max(pads) >= k[0]:
        raise InvalidArgumentError(f"{op}: explicit padding {list(pads)} must be smaller than "
                                   f"the window size {k[0]}.")
    if w + sum(pads) < k[0]:
        raise InvalidArgumentError(f"{op}: the width {w} (padded {w + sum(pads)}) is smaller "
                                   f"than the window size {k[0]}.")
    y = pool2d(_reshape(x, (n, 1, w, c)), (1,) + k, (1,) + st, pad)
    ys = shape_source(y)
    return _to_first(_reshape(y, (ys[0], ys[2], ys[3])), first)


def max_pool1d(input: Any, ksize: Any, strides: Any, padding: Any,  # noqa: A002
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """The maximum of each `ksize` window of `input` [batch, width, channels] ("NWC";
    "NCW" too), windows `strides` apart; `padding` is "SAME", "VALID" or explicit [[0, 0],
    [left, right], [0, 0]]. Gradients go to each window's first maximum, as max_pool2d.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[[1.], [3.], [2.], [5.], [4.]]])
        >>> tf.nn.max_pool1d(x, ksize=2, strides=2, padding="SAME")[0, :, 0].numpy()
        array([3., 5., 4.], dtype=float32)
    """
    return _pool1d(max_pool2d, input, ksize, strides, padding, data_format, "max_pool1d", "fiu",
                   explicit=True)


def avg_pool1d(input: Any, ksize: Any, strides: Any, padding: str,  # noqa: A002
               data_format: str = "NWC", name: str | None = None) -> Tensor:
    """The mean of each `ksize` window of `input` [batch, width, channels] ("NWC"; "NCW"
    too), windows `strides` apart; with "SAME" padding, over the unpadded elements only.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([[[1.], [3.], [2.], [5.], [4.]]])
        >>> tf.nn.avg_pool1d(x, ksize=2, strides=2, padding="SAME")[0, :, 0].numpy()
        array([2. , 3.5, 4. ], dtype=float32)
    """
    return _pool1d(avg_pool2d, input, ksize, strides, padding, data_format, "avg_pool1d", "f",
                   explicit=False)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {
    "conv1d": "nn", "convolution": "nn", "conv2d_transpose": "nn", "conv1d_transpose": "nn",
    "conv_transpose": "nn", "depthwise_conv2d": "nn", "separable_conv2d": "nn",
    "max_pool1d": "nn", "avg_pool1d": "nn"}
