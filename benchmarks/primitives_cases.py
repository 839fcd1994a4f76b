"""The cases of benchmarks/primitives.py: one `Case` per (primitive, rule, level, config,
batch size), each building a tapeflow call and the TensorFlow call that computes the same
thing on the same float32 inputs.

Levels (what the tapeflow side runs; the TF side is named in `Case.tf_side`):

- ``impl``: the primitive's NumPy implementation on arrays (``prim.impl(x, **params)``,
  params as the public op computes them): the kernel, with no dispatch at all. Derivative
  primitives (conv2d_input_grad, max_pool2d_grad, gather_transpose, ...) are timed this
  way too, against TensorFlow's own gradient kernels (Conv2DBackpropInput, MaxPoolGrad,
  UnsortedSegmentSum, ...).
- ``op``: the public op, eager, no recorder: for ops that are composites of primitives
  (avg_pool2d, the cross-entropies, reduce_mean, gather with batch_dims, gather_nd).
- ``vmap``: ``tapeflow.vmap`` of a one-op function, i.e. the primitive's batching rule
  and then its impl on the shapes the rule produces, as vectorized Jacobians run it;
  TensorFlow's side is ``tf.vectorized_map`` inside a ``tf.function`` (pfor), traced
  during warm-up.
- ``tape``: ``GradientTape.gradient`` with respect to one input for a fixed random output
  gradient, on a persistent tape whose forward pass was recorded once, outside the
  timing: the derivative rules as the library runs them (rule code, dispatch, the
  derivative primitives' impls), against TensorFlow's tape doing the same.
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Sequence

import numpy as np
import tensorflow as tf

import tapeflow as tp
from tapeflow.ops import conv as tp_conv
from tapeflow.ops import windows as tp_windows
from tapeflow.ops import decompositions as tp_dec
from tapeflow.ops import indexing as tp_idx
from tapeflow.ops import linalg as tp_lin
from tapeflow.ops import nn as tp_nn
from tapeflow.ops import pooling as tp_pool
from tapeflow.ops import reduction as tp_red
from tapeflow.ops import structural as tp_struct

Fn = Callable[[], Any]
Pair = tuple[Fn, Fn]

GROUPS = ("conv", "pool", "matmul", "softmax", "reduce", "gather", "linalg")
MAX_ARRAY_BYTES = 64 << 20  # a batched operand above this is skipped (shared machine)


@dataclasses.dataclass(frozen=True)
class Case:
    """One timed row. `build` makes the inputs and returns (tapeflow call, TF call)."""

    group: str
    prim: str
    rule: str
    level: str
    config: str
    batch: int
    tf_side: str
    build: Callable[[], Pair]

    @property
    def series(self) -> tuple[str, str, str, str, str]:
        """The row's key without the batch size: the points of one linearity curve."""
        return (self.group, self.prim, self.rule, self.level, self.config)


# ------------------------------------------------------------------ inputs and shared calls
def normal(shape: Sequence[int], seed: int, scale: float = 1.0) -> np.ndarray:
    """Standard normal float32 values (times `scale`), from a fixed seed."""
    return (np.random.default_rng(seed).standard_normal(tuple(shape)) * scale).astype(np.float32)


def as_dense(result: Any) -> Any:
    """TensorFlow's sparse gradients (IndexedSlices) as dense tensors, as tapeflow returns."""
    if isinstance(result, tf.IndexedSlices):
        return tf.convert_to_tensor(result)
    return result


def tape_call(lib: Any, forward: Callable[..., Any], arrays: Sequence[np.ndarray], wrt: int,
              seed: int = 99) -> Fn:
    """`lib`'s gradient of forward(lib, *inputs) with respect to input `wrt`, for a fixed
    random output gradient: a persistent tape records the forward pass once, here; the
    returned call runs the backward pass only. The same code serves both libraries."""
    inputs = [lib.constant(a) for a in arrays]
    with lib.GradientTape(persistent=True) as tape:
        tape.watch(inputs[wrt])
        y = forward(lib, *inputs)
    g = lib.constant(normal(np.shape(y.numpy()), seed))
    source = inputs[wrt]
    return lambda: as_dense(tape.gradient(y, source, output_gradients=g))


def tape_pair(forward: Callable[..., Any], arrays: Sequence[np.ndarray], wrt: int) -> Pair:
    return tape_call(tp, forward, arrays, wrt), tape_call(tf, forward, arrays, wrt)


def vmap_pair(fn: Callable[..., Any], batched: Sequence[np.ndarray],
              fixed: Sequence[np.ndarray] = ()) -> Pair:
    """fn(lib, *per_example, *fixed) vectorized over axis 0 of `batched`: tapeflow.vmap
    against tf.vectorized_map in a tf.function (TensorFlow's pfor, as its jacobians)."""
    tp_fixed = [tp.constant(a) for a in fixed]
    tf_fixed = [tf.constant(a) for a in fixed]
    tp_args = [tp.constant(a) for a in batched]
    tf_args = tuple(tf.constant(a) for a in batched)
    ours = tp.vmap(lambda *xs: fn(tp, *xs, *tp_fixed))
    theirs = tf.function(lambda *xs: tf.vectorized_map(lambda e: fn(tf, *e, *tf_fixed), xs))
    return (lambda: ours(*tp_args)), (lambda: theirs(*tf_args))


def too_big(*shapes: Sequence[int]) -> bool:
    return any(int(np.prod(s)) * 4 > MAX_ARRAY_BYTES for s in shapes)


def make(group: str, prim: str, rule: str, level: str, config: str, batches: Sequence[int],
         tf_side: str, build: Callable[[int], Pair]) -> list[Case]:
    """One case per batch size; `build(batch)` is deferred until the row is timed."""
    return [Case(group, prim, rule, level, config, b, tf_side, functools.partial(build, b))
            for b in batches]


# ------------------------------------------------------------------ conv2d
# (image side, in channels, out channels, kernel): the seed CNN's layers and their kin.
CONV_CONFIGS = [(28, 1, 8, 3), (28, 1, 8, 5), (28, 3, 16, 3), (28, 3, 16, 5), (28, 8, 16, 3),
                (28, 8, 16, 5), (14, 64, 64, 3)]
CONV_GEOMETRIES = [(1, "SAME"), (1, "VALID"), (2, "SAME"), (2, "VALID")]
CONV_BATCHES = [16, 32, 64, 128, 320, 640]
VMAP_CONV_CONFIGS = [(28, 1, 8, 3, 2, "SAME"), (28, 8, 16, 3, 2, "SAME")]
VMAP_IMAGES = 8  # images per example in the filter-batched / cotangent-batched vmap rows


@dataclasses.dataclass(frozen=True)
class ConvGeometry:
    side: int
    cin: int
    cout: int
    k: int
    stride: int
    padding: str

    @property
    def name(self) -> str:
        return (f"{self.side}x{self.side}x{self.cin} k{self.k} o{self.cout} s{self.stride} "
                f"{self.padding}")

    def params(self) -> dict:
        """conv2d_p's params, as tapeflow's conv2d computes them."""
        s, hw, k = (self.stride, self.stride), (self.side, self.side), (self.k, self.k)
        return {"strides": s, "dilations": (1, 1),
                "pads": tp_windows.pads_for(self.padding, hw, k, s, (1, 1), "conv2d")}

    def out_side(self) -> int:
        p = self.params()
        return tp_windows.out_size(self.side, self.k, self.stride, 1, p["pads"][0])

    def tf_strides(self) -> list[int]:
        return [1, self.stride, self.stride, 1]

    def arrays(self, n: int, lead: tuple = ()) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """x [*lead, n, H, W, C], filters [K, K, C, O], cotangent [*lead, n, OH, OW, O]."""
        o = self.out_side()
        x = normal(lead + (n, self.side, self.side, self.cin), 1)
        w = normal((self.k, self.k, self.cin, self.cout), 2, 1 / np.sqrt(self.k ** 2 * self.cin))
        g = normal(lead + (n, o, o, self.cout), 3)
        return x, w, g


def conv_impl_pair(geo: ConvGeometry, rule: str, n: int) -> Pair:
    x, w, g = geo.arrays(n)
    p = geo.params()
    tx, tw, tg = tf.constant(x), tf.constant(w), tf.constant(g)
    st, pad = geo.tf_strides(), geo.padding
    if rule == "forward":
        return (lambda: tp_conv.conv2d_p.impl(x, w, **p),
                lambda: tf.raw_ops.Conv2D(input=tx, filter=tw, strides=st, padding=pad))
    if rule == "input_grad":
        sizes = tf.constant(x.shape, tf.int32)
        return (lambda: tp_conv.conv2d_input_grad_p.impl(g, w, input_shape=x.shape, **p),
                lambda: tf.raw_ops.Conv2DBackpropInput(input_sizes=sizes, filter=tw,
                                                       out_backprop=tg, strides=st, padding=pad))
    sizes = tf.constant(w.shape, tf.int32)
    return (lambda: tp_conv.conv2d_filter_grad_p.impl(x, g, filter_shape=w.shape, **p),
            lambda: tf.raw_ops.Conv2DBackpropFilter(input=tx, filter_sizes=sizes,
                                                    out_backprop=tg, strides=st, padding=pad))


def conv_tape_pair(geo: ConvGeometry, wrt: int, n: int) -> Pair:
    x, w, _ = geo.arrays(n)
    return tape_pair(lambda lib, a, b: lib.nn.conv2d(a, b, strides=geo.stride,
                                                     padding=geo.padding), [x, w], wrt)


def conv_vmap_pair(geo: ConvGeometry, rule: str, b: int) -> Pair:
    """The batched shapes vectorized Jacobians give the conv family (see conv_cases)."""
    p, st, pad = geo.params(), geo.tf_strides(), geo.padding
    if rule == "filter_grad[vmap x,g]":  # per-example filter gradients
        x, w, g = geo.arrays(1, (b,))
        sizes = tf.constant(w.shape, tf.int32)
        ours = lambda: tp_conv.conv2d_filter_grad_p.impl(x, g, filter_shape=w.shape, **p)
        fn = lambda xs: tf.raw_ops.Conv2DBackpropFilter(input=xs[0], filter_sizes=sizes,
                                                        out_backprop=xs[1], strides=st,
                                                        padding=pad)
        batched = (tf.constant(x), tf.constant(g))
    elif rule == "filter_grad[vmap g]":  # Jacobian rows of one input batch w.r.t. the filters
        x, w, _ = geo.arrays(VMAP_IMAGES)
        _, _, g = geo.arrays(VMAP_IMAGES, (b,))
        sizes, tx = tf.constant(w.shape, tf.int32), tf.constant(x)
        ours = lambda: tp_conv.conv2d_filter_grad_p.impl(x, g, filter_shape=w.shape, **p)
        fn = lambda xs: tf.raw_ops.Conv2DBackpropFilter(input=tx, filter_sizes=sizes,
                                                        out_backprop=xs[0], strides=st,
                                                        padding=pad)
        batched = (tf.constant(g),)
    else:  # "forward[vmap w]": forward-mode tangents of the filters, one per Jacobian column
        x, _, _ = geo.arrays(VMAP_IMAGES)
        w = normal((b, geo.k, geo.k, geo.cin, geo.cout), 4)
        tx = tf.constant(x)
        ours = lambda: tp_conv.conv2d_p.impl(x, w, **p)
        fn = lambda xs: tf.raw_ops.Conv2D(input=tx, filter=xs[0], strides=st, padding=pad)
        batched = (tf.constant(w),)
    theirs = tf.function(lambda *xs: tf.vectorized_map(fn, xs))
    return ours, lambda: theirs(*batched)


def conv_cases(quick: bool) -> list[Case]:
    """conv2d, its input gradient and its filter gradient, per geometry and batch N (a vmap
    of per-example images merges into N, so N is the vectorized batch); tape gradients;
    and the three shapes where the batch cannot merge into N (vmap rows)."""
    batches = [16, 64] if quick else CONV_BATCHES
    configs = [(28, 8, 16, 3)] if quick else CONV_CONFIGS
    geoms = [(2, "SAME")] if quick else CONV_GEOMETRIES
    tf_kernel = {"forward": "raw_ops.Conv2D", "input_grad": "raw_ops.Conv2DBackpropInput",
                 "filter_grad": "raw_ops.Conv2DBackpropFilter"}
    cases = []
    for side, cin, cout, k in configs:
        for stride, padding in geoms:
            geo = ConvGeometry(side, cin, cout, k, stride, padding)
            for rule, kernel in tf_kernel.items():
                cases += make("conv", "conv2d", rule, "impl", geo.name, batches, kernel,
                              functools.partial(conv_impl_pair, geo, rule))
            for wrt, rule in ((0, "grad_x"), (1, "grad_w")):
                cases += make("conv", "conv2d", rule, "tape", geo.name, batches, "tape.gradient",
                              functools.partial(conv_tape_pair, geo, wrt))
    for side, cin, cout, k, stride, padding in VMAP_CONV_CONFIGS[:1 if quick else None]:
        geo = ConvGeometry(side, cin, cout, k, stride, padding)
        for rule in ("filter_grad[vmap x,g]", "filter_grad[vmap g]", "forward[vmap w]"):
            cases += make("conv", "conv2d", rule, "impl", geo.name, batches,
                          "tf.function(vectorized_map)",
                          functools.partial(conv_vmap_pair, geo, rule))
    return cases


# ------------------------------------------------------------------ pooling
POOL_CONFIGS = [(28, 8, 2, 2, "VALID"), (28, 8, 3, 2, "SAME"), (14, 64, 2, 2, "VALID"),
                (14, 64, 3, 2, "SAME")]
POOL_BATCHES = [32, 64, 128, 320, 640]


@dataclasses.dataclass(frozen=True)
class PoolGeometry:
    side: int
    channels: int
    k: int
    stride: int
    padding: str

    @property
    def name(self) -> str:
        return f"{self.side}x{self.side}x{self.channels} {self.k}x{self.k}/{self.stride} {self.padding}"

    def params(self) -> dict:
        """max_pool2d_p's params, as tapeflow's max_pool2d computes them."""
        k, s = (self.k, self.k), (self.stride, self.stride)
        return {"ksize": k, "strides": s,
                "pads": tp_windows.pads_for(self.padding, (self.side, self.side), k, s, (1, 1),
                                         "max_pool2d")}

    def tf_attrs(self) -> dict:
        return {"ksize": [1, self.k, self.k, 1], "strides": [1, self.stride, self.stride, 1],
                "padding": self.padding}


def max_pool_impl_pair(geo: PoolGeometry, rule: str, n: int) -> Pair:
    x = normal((n, geo.side, geo.side, geo.channels), 1)
    p, a = geo.params(), geo.tf_attrs()
    tx = tf.constant(x)
    ty = tf.raw_ops.MaxPool(input=tx, **a)
    if rule == "forward":
        return lambda: tp_pool.max_pool2d_p.impl(x, **p), lambda: tf.raw_ops.MaxPool(input=tx, **a)
    if rule == "grad":  # the VJP: route g to each window's argmax
        g = normal(ty.shape, 3)
        tg = tf.constant(g)
        return (lambda: tp_pool.max_pool2d_grad_p.impl(x, g, **p),
                lambda: tf.raw_ops.MaxPoolGrad(orig_input=tx, orig_output=ty, grad=tg, **a))
    t = normal(x.shape, 4)  # "grad_grad": the JVP, t read at each window's argmax
    tt = tf.constant(t)
    return (lambda: tp_pool.max_pool2d_grad_grad_p.impl(x, t, **p),
            lambda: tf.raw_ops.MaxPoolGradGrad(orig_input=tx, orig_output=ty, grad=tt, **a))


def avg_pool_op_pair(geo: PoolGeometry, n: int) -> Pair:
    x = normal((n, geo.side, geo.side, geo.channels), 1)
    px, tx, a = tp.constant(x), tf.constant(x), geo.tf_attrs()
    return (lambda: tp.nn.avg_pool2d(px, geo.k, geo.stride, geo.padding),
            lambda: tf.raw_ops.AvgPool(value=tx, **a))


def pool_tape_pair(geo: PoolGeometry, op: str, n: int) -> Pair:
    x = normal((n, geo.side, geo.side, geo.channels), 1)
    return tape_pair(lambda lib, v: getattr(lib.nn, op)(v, geo.k, geo.stride, geo.padding),
                     [x], 0)


def pool_cases(quick: bool) -> list[Case]:
    """max_pool2d forward, its VJP and JVP primitives against MaxPoolGrad/MaxPoolGradGrad
    (TensorFlow gets the forward output precomputed; tapeflow's rules recompute the argmax
    from x), avg_pool2d (a composite around conv2d), and both tape gradients."""
    batches = [32, 128] if quick else POOL_BATCHES
    cases = []
    for cfg in POOL_CONFIGS[:1 if quick else None]:
        geo = PoolGeometry(*cfg)
        for rule, kernel in (("forward", "raw_ops.MaxPool"), ("grad", "raw_ops.MaxPoolGrad"),
                             ("grad_grad", "raw_ops.MaxPoolGradGrad")):
            cases += make("pool", "max_pool2d", rule, "impl", geo.name, batches, kernel,
                          functools.partial(max_pool_impl_pair, geo, rule))
        cases += make("pool", "max_pool2d", "grad", "tape", geo.name, batches, "tape.gradient",
                      functools.partial(pool_tape_pair, geo, "max_pool2d"))
        cases += make("pool", "avg_pool2d", "forward", "op", geo.name, batches, "raw_ops.AvgPool",
                      functools.partial(avg_pool_op_pair, geo))
        cases += make("pool", "avg_pool2d", "grad", "tape", geo.name, batches,
                      "tape.gradient (AvgPoolGrad)",
                      functools.partial(pool_tape_pair, geo, "avg_pool2d"))
    return cases


# ------------------------------------------------------------------ matmul / einsum
MATMUL_CONFIGS = [(1, 784, 64), (10, 784, 64), (10, 64, 10), (16, 256, 256)]  # (n, k, m)
MATMUL_BATCHES = [16, 32, 64, 128, 320, 640]


def matmul_pair(n: int, k: int, m: int, rule: str, b: int) -> Pair:
    """The batched products of a vmapped `a @ b` (a: [n, k], b: [k, m]) and of its VJP."""
    a1, b1 = normal((n, k), 5, k ** -0.5), normal((k, m), 6)
    ab, bb = normal((b, n, k), 7, k ** -0.5), normal((b, k, m), 8)
    mm = lambda lib, x, y: lib.matmul(x, y)
    if rule == "fwd[vmap a]":
        return vmap_pair(mm, [ab], [b1])
    if rule == "fwd[vmap b]":
        return vmap_pair(lambda lib, y, x: lib.matmul(x, y), [bb], [a1])
    if rule == "fwd[vmap a,b]":
        return vmap_pair(mm, [ab, bb])
    if rule == "vjp_b[vmap a,g]":  # per-example weight gradient a^T g
        g = normal((b, n, m), 9)
        return vmap_pair(lambda lib, x, y: lib.matmul(x, y, transpose_a=True), [ab, g])
    if rule == "fwd[impl a,b]":  # what the both-batched rule hands to the impl
        ta, tb = tf.constant(ab), tf.constant(bb)
        return lambda: tp_lin.matmul_p.impl(ab, bb), lambda: tf.matmul(ta, tb)
    if rule == "einsum[vmap a]":
        return vmap_pair(lambda lib, x, y: lib.einsum("nk,km->nm", x, y), [ab], [b1])
    return vmap_pair(lambda lib, x, y: lib.einsum("nk,km->nm", x, y), [ab, bb])  # einsum[vmap a,b]


def matmul_cases(quick: bool) -> list[Case]:
    """matmul and einsum with one or both operands batched, as vmap's rules produce them
    for MLP Jacobians (weights k x m = 784x64, 64x10, 256x256; n rows per example)."""
    batches = [16, 128] if quick else MATMUL_BATCHES
    rules = ["fwd[vmap a]", "fwd[vmap b]", "fwd[vmap a,b]", "vjp_b[vmap a,g]", "fwd[impl a,b]",
             "einsum[vmap a]", "einsum[vmap a,b]"]
    cases = []
    for n, k, m in MATMUL_CONFIGS[1:2] if quick else MATMUL_CONFIGS:
        config = f"n{n} {k}x{m}"
        for rule in rules:
            usable = [b for b in batches if "b]" not in rule or not too_big((b, k, m))]
            prim = "einsum" if rule.startswith("einsum") else "matmul"
            side = "tf.matmul (BatchMatMulV2)" if "impl" in rule else "tf.function(vectorized_map)"
            cases += make("matmul", prim, rule, "impl" if "impl" in rule else "vmap", config,
                          usable, side, functools.partial(matmul_pair, n, k, m, rule))
    return cases


# ------------------------------------------------------------------ softmax family
SOFTMAX_CLASSES = [10, 1000]
SOFTMAX_BATCHES = [128, 256, 320, 640]


def softmax_impl_pair(prim: str, classes: int, n: int) -> Pair:
    x = normal((n, classes), 1, 3.0)
    tx = tf.constant(x)
    if prim == "softmax":
        return lambda: tp_nn.softmax_p.impl(x, axis=1), lambda: tf.raw_ops.Softmax(logits=tx)
    return lambda: tp_nn.log_softmax_p.impl(x, axis=1), lambda: tf.raw_ops.LogSoftmax(logits=tx)


def xent_inputs(prim: str, classes: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """(labels, logits): a label distribution per row, or one class index per row."""
    logits = normal((n, classes), 1, 3.0)
    if prim.startswith("sparse"):
        return np.random.default_rng(2).integers(0, classes, n).astype(np.int32), logits
    p = np.exp(normal((n, classes), 2))
    return (p / p.sum(1, keepdims=True)).astype(np.float32), logits


def xent(lib: Any, prim: str, labels: Any, logits: Any) -> Any:
    return getattr(lib.nn, prim)(labels=labels, logits=logits)


def xent_op_pair(prim: str, classes: int, n: int) -> Pair:
    z, x = xent_inputs(prim, classes, n)
    pz, px, tz, tx = tp.constant(z), tp.constant(x), tf.constant(z), tf.constant(x)
    return lambda: xent(tp, prim, pz, px), lambda: xent(tf, prim, tz, tx)


def softmax_tape_pair(prim: str, classes: int, n: int) -> Pair:
    if prim in ("softmax", "log_softmax"):
        x = normal((n, classes), 1, 3.0)
        return tape_pair(lambda lib, v: getattr(lib.nn, prim)(v), [x], 0)
    z, x = xent_inputs(prim, classes, n)
    return tape_pair(lambda lib, lab, v: xent(lib, prim, lab, v), [z, x], 1)


def softmax_cases(quick: bool) -> list[Case]:
    """softmax, log_softmax (primitives: impl forward) and the two cross-entropies
    (composites over log_softmax: public-op forward; TensorFlow's is one fused kernel that
    also computes the gradient), each with its tape gradient w.r.t. the logits."""
    batches = [128, 640] if quick else SOFTMAX_BATCHES
    cases = []
    for classes in SOFTMAX_CLASSES[1:] if quick else SOFTMAX_CLASSES:
        config = f"{classes} classes"
        for prim in ("softmax", "log_softmax"):
            cases += make("softmax", prim, "forward", "impl", config, batches,
                          f"raw_ops.{'Softmax' if prim == 'softmax' else 'LogSoftmax'}",
                          functools.partial(softmax_impl_pair, prim, classes))
        for prim in ("softmax_cross_entropy_with_logits",
                     "sparse_softmax_cross_entropy_with_logits"):
            cases += make("softmax", prim, "forward", "op", config, batches, f"tf.nn.{prim}",
                          functools.partial(xent_op_pair, prim, classes))
        for prim in ("softmax", "log_softmax", "softmax_cross_entropy_with_logits",
                     "sparse_softmax_cross_entropy_with_logits"):
            cases += make("softmax", prim, "grad", "tape", config, batches, "tape.gradient",
                          functools.partial(softmax_tape_pair, prim, classes))
    return cases


# ------------------------------------------------------------------ reductions
REDUCE_CONFIGS = [((784,), 1), ((64, 64), 1)]  # (per-example shape, axis of the batched array)
REDUCE_BATCHES = [16, 32, 64, 128, 320, 640]


def reduce_pair(prim: str, level: str, shape: tuple, axis: int, n: int) -> Pair:
    x = normal((n,) + shape, 1)
    if level == "tape":
        return tape_pair(lambda lib, v: getattr(lib, prim)(v, axis=axis), [x], 0)
    tx = tf.constant(x)
    theirs = lambda: getattr(tf, prim)(tx, axis=axis)
    if prim == "reduce_mean":  # a composite: the public op
        px = tp.constant(x)
        return lambda: tp.reduce_mean(px, axis=axis), theirs
    impl = {"reduce_sum": tp_struct.reduce_sum_p, "reduce_max": tp_red.reduce_max_p}[prim].impl
    return lambda: impl(x, axis=(axis,), keepdims=False), theirs


def reduce_cases(quick: bool) -> list[Case]:
    """reduce_sum / reduce_max (primitives) and reduce_mean (a composite) along one axis,
    the last one and a middle one, with their tape gradients."""
    batches = [16, 128] if quick else REDUCE_BATCHES
    cases = []
    for shape, axis in REDUCE_CONFIGS[:1 if quick else None]:
        config = f"[B,{','.join(map(str, shape))}] axis {axis}"
        for prim in ("reduce_sum", "reduce_max", "reduce_mean"):
            level = "op" if prim == "reduce_mean" else "impl"
            cases += make("reduce", prim, "forward", level, config, batches, f"tf.{prim}",
                          functools.partial(reduce_pair, prim, level, shape, axis))
            cases += make("reduce", prim, "grad", "tape", config, batches, "tape.gradient",
                          functools.partial(reduce_pair, prim, "tape", shape, axis))
    return cases


# ------------------------------------------------------------------ gather / scatter
GATHER_BATCHES = [16, 32, 64, 128, 320, 640]
TABLE_ROWS, TABLE_COLS, LOOKUPS = 1000, 64, 16  # an embedding table, lookups per example
PICKS = 10  # per-example picks from 1000 logits


def gather_table_pair(rule: str, n: int) -> Pair:
    """gather along axis 0 of a [1000, 64] table with [B, 16] indices (the vmap of a
    per-example lookup with the table unbatched), and its transpose (the scatter-add)."""
    table = normal((TABLE_ROWS, TABLE_COLS), 1)
    idx = np.random.default_rng(2).integers(0, TABLE_ROWS, (n, LOOKUPS)).astype(np.int32)
    if rule == "tape":
        return tape_pair(lambda lib, p, i: lib.gather(p, i), [table, idx], 0)
    if rule == "forward":
        tt, ti = tf.constant(table), tf.constant(idx)
        return lambda: tp_idx.gather_p.impl(table, idx, axis=0), lambda: tf.gather(tt, ti)
    g = normal((n, LOOKUPS, TABLE_COLS), 3)
    tg, ti = tf.constant(g.reshape(-1, TABLE_COLS)), tf.constant(idx.reshape(-1))
    return (lambda: tp_idx.gather_transpose_p.impl(g, idx, axis=0, shape=table.shape),
            lambda: tf.math.unsorted_segment_sum(tg, ti, TABLE_ROWS))


def gather_rows_pair(prim: str, level: str, n: int) -> Pair:
    """Per-example picks from [B, 1000]: gather(batch_dims=1) with [B, 10] indices, or
    gather_nd with [B, 2] (row, class) tuples; both composites in tapeflow."""
    params = normal((n, TABLE_ROWS), 1)
    rng = np.random.default_rng(2)
    if prim == "gather":
        idx = rng.integers(0, TABLE_ROWS, (n, PICKS)).astype(np.int32)
        fn = lambda lib, p, i: lib.gather(p, i, batch_dims=1)
    else:
        idx = np.stack([np.arange(n), rng.integers(0, TABLE_ROWS, n)], 1).astype(np.int32)
        fn = lambda lib, p, i: lib.gather_nd(p, i)
    if level == "tape":
        return tape_pair(fn, [params, idx], 0)
    pp, pi, tt, ti = tp.constant(params), tp.constant(idx), tf.constant(params), tf.constant(idx)
    return lambda: fn(tp, pp, pi), lambda: fn(tf, tt, ti)


def gather_cases(quick: bool) -> list[Case]:
    """gather (impl) and its transpose gather_transpose, tapeflow's only scatter (a dense
    scatter-add, against UnsortedSegmentSum: what TensorFlow's IndexedSlices gradient
    becomes when made dense); gather with batch_dims=1 and gather_nd (composites)."""
    batches = [16, 128] if quick else GATHER_BATCHES
    cfg = f"[{TABLE_ROWS},{TABLE_COLS}] idx [B,{LOOKUPS}]"
    cases = make("gather", "gather", "forward", "impl", cfg, batches, "tf.gather (GatherV2)",
                 functools.partial(gather_table_pair, "forward"))
    cases += make("gather", "gather_transpose", "scatter_add", "impl", cfg, batches,
                  "tf.math.unsorted_segment_sum", functools.partial(gather_table_pair, "scatter"))
    cases += make("gather", "gather", "grad", "tape", cfg, batches,
                  "tape.gradient (IndexedSlices -> dense)",
                  functools.partial(gather_table_pair, "tape"))
    if quick:
        return cases
    for prim, cfg in (("gather", f"[B,{TABLE_ROWS}] idx [B,{PICKS}] batch_dims=1"),
                      ("gather_nd", f"[B,{TABLE_ROWS}] idx [B,2]")):
        cases += make("gather", prim, "forward", "op", cfg, batches, f"tf.{prim}",
                      functools.partial(gather_rows_pair, prim, "op"))
        cases += make("gather", prim, "grad", "tape", cfg, batches, "tape.gradient",
                      functools.partial(gather_rows_pair, prim, "tape"))
    return cases


# ------------------------------------------------------------------ linalg
LINALG_SIZES = [8, 64]
LINALG_BATCHES = [16, 32, 64, 128, 320, 640]
RHS_COLUMNS = 4


def linalg_inputs(prim: str, b: int, n: int) -> list[np.ndarray]:
    """Well-conditioned float32 matrices (SPD for cholesky), and a right-hand side."""
    m = normal((b, n, n), 1, 0.3 / np.sqrt(n))
    if prim == "cholesky":
        return [(m @ np.swapaxes(m, -1, -2) * 10 + np.eye(n, dtype=np.float32)).astype(np.float32)]
    a = (m + np.eye(n, dtype=np.float32)).astype(np.float32)
    return [a, normal((b, n, RHS_COLUMNS), 2)] if prim == "solve" else [a]


def linalg_fn(lib: Any, prim: str, *args: Any) -> Any:
    out = getattr(lib.linalg, prim)(*args)
    return out[1] if prim == "slogdet" else out  # log|det| carries the derivative


LINALG_IMPLS = {"inv": tp_dec.inv_p, "cholesky": tp_dec.cholesky_p, "solve": tp_dec.solve_p,
                "det": tp_dec.det_p, "slogdet": tp_dec.slogdet_p}


def linalg_pair(prim: str, level: str, n: int, b: int) -> Pair:
    arrays = linalg_inputs(prim, b, n)
    if level == "tape":
        return tape_pair(lambda lib, *xs: linalg_fn(lib, prim, *xs), arrays, 0)
    tfs = [tf.constant(a) for a in arrays]
    impl = LINALG_IMPLS[prim].impl
    return lambda: impl(*arrays), lambda: getattr(tf.linalg, prim)(*tfs)


def linalg_cases(quick: bool) -> list[Case]:
    """inv, cholesky, solve, det, slogdet on batches of small matrices (one LAPACK call
    per matrix in NumPy; Eigen per matrix in TensorFlow), with their tape gradients."""
    batches = [16, 128] if quick else LINALG_BATCHES
    kernels = {"inv": "MatrixInverse", "cholesky": "Cholesky", "solve": "MatrixSolve",
               "det": "MatrixDeterminant", "slogdet": "LogMatrixDeterminant"}
    cases = []
    for n in LINALG_SIZES[:1 if quick else None]:
        for prim, kernel in kernels.items():
            cfg = f"[B,{n},{n}]" + (f" rhs [B,{n},{RHS_COLUMNS}]" if prim == "solve" else "")
            cases += make("linalg", prim, "forward", "impl", cfg, batches, kernel,
                          functools.partial(linalg_pair, prim, "impl", n))
            cases += make("linalg", prim, "grad", "tape", cfg, batches, "tape.gradient",
                          functools.partial(linalg_pair, prim, "tape", n))
    return cases


BUILDERS: dict[str, Callable[[bool], list[Case]]] = {
    "conv": conv_cases, "pool": pool_cases, "matmul": matmul_cases, "softmax": softmax_cases,
    "reduce": reduce_cases, "gather": gather_cases, "linalg": linalg_cases,
}
