"""One row per primitive: how to call it, inputs on its valid domain, a NumPy reference.

`tests/rules/` runs every check on every row; the coverage test fails when a
registered primitive has no row here (or no reasoned exemption).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.ops.conv import conv2d_filter_grad_p, conv2d_input_grad_p
from tapeflow.ops.structural import conj_p
from tapeflow.ops.indexing import gather_transpose_p, getitem_transpose_p


@dataclass
class Row:
    """A differentiable primitive's test case.

    fn: the op, a function of the differentiable arguments only.
    make: rng -> list of float64 arrays on the op's valid domain.
    ref: NumPy reference of fn (None when fn is itself a composition checked elsewhere).
    smooth: second derivatives are checked where the op is smooth at the inputs.
    prims: the primitives the row covers (default: the row's name).
    """

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], list]
    ref: Callable[..., Any] | None = None
    smooth: bool = True
    prims: tuple = ()
    f32_tol: float = 2e-2

    def covers(self) -> tuple:
        return self.prims or (self.name,)


@dataclass
class NondiffRow:
    """A primitive whose outputs carry no derivative: value check and 'no gradient' check."""

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], list]
    ref: Callable[..., Any]
    prims: tuple = field(default=())

    def covers(self) -> tuple:
        return self.prims or (self.name,)


def normal(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape)


def uniform(lo: float, hi: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, shape)


def away_from_zero(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """Magnitudes in [0.3, 2] with random signs: no kinks of abs/relu/sign near the inputs."""
    return lambda rng: rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def args(*makers: Callable) -> Callable[[np.random.Generator], list]:
    return lambda rng: [m(rng) for m in makers]


def conv_reference(x, w, strides=(1, 1), dilations=(1, 1), padding="VALID"):
    """Naive NHWC cross-correlation, one output pixel at a time (TensorFlow's SAME padding)."""
    n, h, wd, c = x.shape
    kh, kw, _, o = w.shape
    pads = []
    for size, k, s, d in ((h, kh, strides[0], dilations[0]), (wd, kw, strides[1], dilations[1])):
        if padding == "SAME":
            out = -(-size // s)
            total = max((out - 1) * s + (k - 1) * d + 1 - size, 0)
            pads.append((total // 2, total - total // 2))
        else:
            pads.append((0, 0))
    xp = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    oh = (xp.shape[1] - (kh - 1) * dilations[0] - 1) // strides[0] + 1
    ow = (xp.shape[2] - (kw - 1) * dilations[1] - 1) // strides[1] + 1
    out = np.zeros((n, oh, ow, o))
    for i in range(oh):
        for j in range(ow):
            patch = xp[:, i * strides[0]:i * strides[0] + (kh - 1) * dilations[0] + 1:dilations[0],
                       j * strides[1]:j * strides[1] + (kw - 1) * dilations[1] + 1:dilations[1], :]
            out[:, i, j, :] = np.tensordot(patch, w, axes=([1, 2, 3], [0, 1, 2]))
    return out


_COND = np.array([[True, False, True, False]] * 3)
_IDX = np.array([2, 0, 2, 1, 2])
_KEY = (slice(None, None, -1), None, slice(1, 3))


@tf.custom_gradient
def _custom_sin(x: Any) -> Any:
    def grad(dy: Any) -> Any:
        return dy * tf.cos(x)
    return tf.sin(x), grad


ROWS: list[Row] = [
    # elementwise, binary (with broadcasting)
    Row("add", tf.add, args(normal(3, 4), normal(4)), np.add),
    Row("subtract", tf.subtract, args(normal(3, 4), normal(3, 1)), np.subtract),
    Row("multiply", tf.multiply, args(normal(3, 4), normal(4)), np.multiply),
    Row("divide", tf.divide, args(normal(3, 4), away_from_zero(4)), np.divide),
    Row("pow", tf.pow, args(uniform(0.5, 2.0, 3, 4), normal(4)), np.power),
    Row("maximum", tf.maximum, args(normal(3, 4), normal(3, 4)), np.maximum, smooth=False),
    Row("minimum", tf.minimum, args(normal(3, 4), normal(4)), np.minimum, smooth=False),
    # x/y stays in (0.1, 0.6): away from the jumps of floor
    Row("floormod", tf.math.floormod, args(uniform(0.2, 0.8, 5), uniform(1.5, 2.0, 5)), np.mod),
    # elementwise, unary
    Row("negative", tf.negative, args(normal(5)), np.negative),
    Row("conj", lambda x: bind(conj_p, x), args(normal(5)), np.conj),
    Row("square", tf.square, args(normal(5)), np.square),
    Row("sqrt", tf.sqrt, args(uniform(0.5, 3.0, 5)), np.sqrt),
    Row("exp", tf.exp, args(normal(5)), np.exp),
    Row("log", tf.math.log, args(uniform(0.5, 3.0, 5)), np.log),
    Row("sin", tf.sin, args(normal(5)), np.sin),
    Row("cos", tf.cos, args(normal(5)), np.cos),
    Row("tanh", tf.tanh, args(normal(5)), np.tanh),
    Row("sigmoid", tf.sigmoid, args(normal(5)), lambda x: 1 / (1 + np.exp(-x))),
    Row("abs", tf.abs, args(away_from_zero(5)), np.abs),
    Row("sign", lambda x: tf.sign(x) * x, args(away_from_zero(5)), lambda x: np.sign(x) * x),
    Row("select", lambda x, y: tf.where(_COND, x, y), args(normal(3, 4), normal(4)),
        lambda x, y: np.where(_COND, x, y)),
    Row("cast", lambda x: tf.cast(tf.cast(x, tf.complex128) * 2., x.dtype),
        args(normal(5)), lambda x: 2 * x),
    Row("relu", tf.nn.relu, args(away_from_zero(5)), lambda x: np.maximum(x, 0)),
    # reductions
    Row("reduce_sum", lambda x: tf.reduce_sum(x, axis=1, keepdims=True), args(normal(3, 4)),
        lambda x: x.sum(1, keepdims=True)),
    Row("reduce_sum_all", lambda x: tf.reduce_sum(x), args(normal(3, 4)), np.sum,
        prims=("reduce_sum",)),
    Row("reduce_mean", lambda x: tf.reduce_mean(x, axis=0), args(normal(3, 4)),
        lambda x: x.mean(0), prims=("reduce_sum",)),
    Row("reduce_max", lambda x: tf.reduce_max(x, axis=[0, 2]), args(normal(3, 4, 2)),
        lambda x: x.max((0, 2)), smooth=False),
    Row("reduce_min", lambda x: tf.reduce_min(x, axis=1), args(normal(3, 4)),
        lambda x: x.min(1), smooth=False),
    # shape and indexing
    Row("reshape", lambda x: tf.reshape(x, [4, -1]), args(normal(2, 6)),
        lambda x: x.reshape(4, -1)),
    Row("expand_dims", lambda x: tf.squeeze(tf.expand_dims(x, 1) * 2., axis=1),
        args(normal(3, 2)), lambda x: 2 * x, prims=("reshape",)),
    Row("transpose", lambda x: tf.transpose(x, [2, 0, 1]), args(normal(2, 3, 4)),
        lambda x: x.transpose(2, 0, 1)),
    Row("broadcast_to", lambda x: tf.broadcast_to(x, [2, 3, 4]), args(normal(3, 1)),
        lambda x: np.broadcast_to(x, (2, 3, 4))),
    Row("identity", tf.identity, args(normal(5)), lambda x: x),
    Row("getitem", lambda x: x[::-1, tf.newaxis, 1:3], args(normal(3, 4)), lambda x: x[_KEY]),
    Row("getitem_transpose", lambda g: bind(getitem_transpose_p, g, key=_KEY, shape=(3, 4)),
        args(normal(3, 1, 2)), None),
    Row("concat", lambda x, y: tf.concat([x, y, x], axis=1), args(normal(2, 3), normal(2, 1)),
        lambda x, y: np.concatenate([x, y, x], 1)),
    Row("stack", lambda x, y: tf.stack([x, y], axis=1), args(normal(2, 3), normal(2, 3)),
        lambda x, y: np.stack([x, y], 1), prims=("concat", "reshape")),
    Row("gather", lambda p: tf.gather(p, _IDX, axis=1), args(normal(2, 3, 2)),
        lambda p: np.take(p, _IDX, axis=1)),
    Row("gather_transpose", lambda g: bind(gather_transpose_p, g, tf.constant(_IDX), axis=0,
                                           shape=(3, 2)), args(normal(5, 2)), None),
    # linear algebra
    Row("matmul", tf.matmul, args(normal(2, 3, 4), normal(4, 5)), np.matmul),
    Row("matmul_transposed", lambda a, b: tf.matmul(a, b, transpose_a=True, transpose_b=True),
        args(normal(4, 3), normal(5, 4)), lambda a, b: a.T @ b.T, prims=("matmul", "transpose")),
    # convolution (NHWC): padding, strides, dilations; its two transposes directly
    Row("conv2d", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="SAME"),
        args(normal(2, 5, 6, 3), normal(3, 3, 3, 4)),
        lambda x, w: conv_reference(x, w, padding="SAME")),
    Row("conv2d_strided", lambda x, w: tf.nn.conv2d(x, w, strides=[1, 2, 2, 1], padding="SAME"),
        args(normal(1, 7, 6, 2), normal(3, 2, 2, 3)),
        lambda x, w: conv_reference(x, w, (2, 2), padding="SAME"), prims=("conv2d",)),
    Row("conv2d_dilated", lambda x, w: tf.nn.conv2d(x, w, strides=1, padding="VALID",
                                                    dilations=2),
        args(normal(1, 7, 7, 2), normal(2, 3, 2, 2)),
        lambda x, w: conv_reference(x, w, dilations=(2, 2)), prims=("conv2d",)),
    Row("conv2d_input_grad", lambda g, w: bind(conv2d_input_grad_p, g, w, strides=(2, 1),
                                               dilations=(1, 1), pads=((1, 1), (0, 1)),
                                               input_shape=(2, 6, 5, 3)),
        args(normal(2, 3, 5, 4), normal(3, 2, 3, 4)), None),
    Row("conv2d_filter_grad", lambda x, g: bind(conv2d_filter_grad_p, x, g, strides=(2, 1),
                                                dilations=(1, 1), pads=((1, 1), (0, 1)),
                                                filter_shape=(3, 2, 3, 4)),
        args(normal(2, 6, 5, 3), normal(2, 3, 5, 4)), None),
    # user rules
    Row("custom_gradient", _custom_sin, args(normal(4)), np.sin),
]

NONDIFF_ROWS: list[NondiffRow] = [
    NondiffRow("equal", tf.equal, args(normal(4), normal(4)), np.equal),
    NondiffRow("not_equal", tf.not_equal, args(normal(4), normal(4)), np.not_equal),
    NondiffRow("less", tf.less, args(normal(4), normal(4)), np.less),
    NondiffRow("less_equal", tf.less_equal, args(normal(4), normal(4)), np.less_equal),
    NondiffRow("greater", tf.greater, args(normal(4), normal(4)), np.greater),
    NondiffRow("greater_equal", tf.greater_equal, args(normal(4), normal(4)), np.greater_equal),
    NondiffRow("logical_and", lambda x, y: tf.logical_and(x > 0, y > 0), args(normal(4), normal(4)),
               lambda x, y: (x > 0) & (y > 0), prims=("logical_and", "greater")),
    NondiffRow("logical_or", lambda x, y: tf.logical_or(x > 0, y > 0), args(normal(4), normal(4)),
               lambda x, y: (x > 0) | (y > 0)),
    NondiffRow("logical_xor", lambda x, y: tf.math.logical_xor(x > 0, y > 0),
               args(normal(4), normal(4)), lambda x, y: (x > 0) ^ (y > 0)),
    NondiffRow("logical_not", lambda x: tf.logical_not(x > 0), args(normal(4)), lambda x: ~(x > 0)),
    NondiffRow("floordiv", tf.math.floordiv, args(normal(4), uniform(0.5, 1.0, 4)), np.floor_divide),
    NondiffRow("stop_gradient", tf.stop_gradient, args(normal(4)), lambda x: x),
]

# Primitives without a row of their own, and the tests that cover them.
EXEMPT = {
    "read_variable": "takes a Variable, not a tensor: tests/test_tape.py and tests/test_forward.py "
                     "differentiate through variable reads (and the seeds do)",
}


def _group_tables() -> None:
    """Rows of the op groups live beside this file, one table file per ops module."""
    import op_table_array
    import op_table_linalg
    import op_table_math
    import op_table_nn

    for table in (op_table_math, op_table_array, op_table_linalg, op_table_nn):
        ROWS.extend(table.ROWS)
        NONDIFF_ROWS.extend(table.NONDIFF_ROWS)
        EXEMPT.update(table.EXEMPT)


_group_tables()
