"""conv1d, convolution, the transposed convolutions, depthwise and separable convolution
and 1-D pooling beyond the op table: more geometries against NumPy, TensorFlow's
argument forms (stride lists, output shapes as tensors, explicit padding, channels
first), size-0 and too-small inputs, the errors bad arguments raise, traces with None
dimensions at many sizes (odd ones: SAME padding's remainder), vmap, XLA, half
precision, and TensorFlow's own values and derivatives (peers).
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import bind
from tapeflow.errors import InvalidArgumentError, UnimplementedError
from tapeflow.ops.conv import conv2d_p
from tapeflow.tensor import Tensor

from op_table import pool_reference  # first: it imports every table, this family's too
from table_conv_variants import (conv1d_reference, depthwise_reference, grouped_reference,
                                 transpose_reference)

RNG = np.random.default_rng(3)


def rand(*shape):
    return RNG.standard_normal(shape)


def _sep_reference(x, d, p, strides=(1, 1), padding="VALID"):
    return np.einsum("nhwc,co->nhwo", depthwise_reference(x, d, strides, padding=padding), p[0, 0])


# ------------------------------------------------------------------ values against NumPy
VALUE_CASES = [
    # (name, op of the inputs, inputs, NumPy reference)
    ("conv1d_extra_batch_dims", lambda x, w: tf.nn.conv1d(x, w, [1, 2, 1], "VALID"),
     (rand(2, 3, 8, 2), rand(3, 2, 4)),
     lambda x, w: conv1d_reference(x.reshape(6, 8, 2), w, 2).reshape(2, 3, 3, 4)),
    ("conv1d_nhwc_alias", lambda x, w: tf.nn.conv1d(x, w, 1, "SAME", data_format="NHWC"),
     (rand(2, 6, 3), rand(4, 3, 2)), lambda x, w: conv1d_reference(x, w, padding="SAME")),
    ("conv1d_strided_dilated", lambda x, w: tf.nn.conv1d(x, w, 2, "SAME", dilations=2),
     (rand(2, 9, 2), rand(3, 2, 3)), lambda x, w: conv1d_reference(x, w, 2, 2, "SAME")),
    ("convolution_1d_ncw", lambda x, w: tf.nn.convolution(x, w, 2, "SAME", data_format="NCW"),
     (rand(2, 3, 7), rand(3, 3, 2)),
     lambda x, w: conv1d_reference(x.transpose(0, 2, 1), w, 2, padding="SAME").transpose(0, 2, 1)),
    ("convolution_2d_dilated", lambda x, w: tf.nn.convolution(x, w, dilations=[1, 2]),
     (rand(1, 6, 7, 2), rand(2, 3, 2, 3)),
     lambda x, w: grouped_reference(x, w, dilations=(1, 2))),
    ("convolution_nchw_grouped", lambda x, w: tf.nn.convolution(x, w, [1, 1, 2, 2], "SAME",
                                                                 data_format="NCHW"),
     (rand(2, 6, 5, 5), rand(3, 3, 2, 3)),
     lambda x, w: grouped_reference(x.transpose(0, 2, 3, 1), w, (2, 2),
                                    padding="SAME").transpose(0, 3, 1, 2)),
    ("conv2d_transpose_explicit", lambda x, w: tf.nn.conv2d_transpose(
        x, w, [2, 7, 8, 3], [1, 2, 2, 1], [[0, 0], [1, 1], [1, 0], [0, 0]]),
     (rand(2, 4, 4, 2), rand(3, 3, 3, 2)),
     lambda x, w: transpose_reference(x, w, (2, 9, 9, 3), (2, 2), "VALID")[:, 1:8, 1:9]),
    ("conv2d_transpose_output_tensor", lambda x, w: tf.nn.conv2d_transpose(
        x, w, tf.constant([2, 8, 7, 3]), 2), (rand(2, 4, 4, 2), rand(2, 3, 3, 2)),
     lambda x, w: transpose_reference(x, w, (2, 8, 7, 3), (2, 2), "SAME")),
    ("conv2d_transpose_spatial_output_shape", lambda x, w: tf.nn.conv2d_transpose(
        x, w, [9, 9], 2, "VALID"), (rand(2, 4, 4, 2), rand(3, 3, 3, 2)),
     lambda x, w: transpose_reference(x, w, (2, 9, 9, 3), (2, 2), "VALID")),
    ("conv1d_transpose_ncw_same", lambda x, w: tf.nn.conv1d_transpose(
        x, w, [2, 3, 7], 2, data_format="NCW"), (rand(2, 2, 4), rand(3, 3, 2)),
     lambda x, w: transpose_reference(x.transpose(0, 2, 1)[:, None], w[None], (2, 1, 7, 3),
                                      (1, 2), "SAME")[:, 0].transpose(0, 2, 1)),
    ("conv_transpose_2d", lambda x, w: tf.nn.conv_transpose(x, w, [2, 6, 6, 3], 2, "VALID"),
     (rand(2, 3, 3, 2), rand(2, 2, 3, 2)),
     lambda x, w: transpose_reference(x, w, (2, 6, 6, 3), (2, 2), "VALID")),
    ("depthwise_explicit", lambda x, w: tf.nn.depthwise_conv2d(
        x, w, [1, 1, 1, 1], [[0, 0], [1, 2], [0, 1], [0, 0]]), (rand(2, 5, 4, 3), rand(3, 2, 3, 1)),
     lambda x, w: depthwise_reference(np.pad(x, [(0, 0), (1, 2), (0, 1), (0, 0)]), w)),
    ("depthwise_unequal_strides", lambda x, w: tf.nn.depthwise_conv2d(x, w, [2, 1], "SAME"),
     (rand(1, 7, 6, 2), rand(3, 3, 2, 3)),
     lambda x, w: depthwise_reference(x, w, (2, 1), padding="SAME")),
    ("separable_nchw_strided", lambda x, d, p: tf.nn.separable_conv2d(
        x, d, p, [1, 1, 2, 2], "SAME", data_format="NCHW"),
     (rand(2, 3, 7, 6), rand(3, 3, 3, 2), rand(1, 1, 6, 4)),
     lambda x, d, p: _sep_reference(x.transpose(0, 2, 3, 1), d, p, (2, 2),
                                    "SAME").transpose(0, 3, 1, 2)),
    ("separable_dilated", lambda x, d, p: tf.nn.separable_conv2d(x, d, p, 1, "VALID",
                                                                 dilations=[2, 2]),
     (rand(2, 7, 7, 2), rand(2, 2, 2, 1), rand(1, 1, 2, 3)),
     lambda x, d, p: np.einsum("nhwc,co->nhwo", depthwise_reference(x, d, dilations=(2, 2)),
                               p[0, 0])),
    ("max_pool1d_explicit", lambda x: tf.nn.max_pool1d(x, 3, 1, [[0, 0], [1, 2], [0, 0]]),
     (rand(2, 5, 3),), lambda x: pool_reference(
         np.pad(x, [(0, 0), (1, 2), (0, 0)], constant_values=-np.inf)[:, None], (1, 3), (1, 1),
         "VALID", np.max)[:, 0]),
    ("max_pool1d_ncw", lambda x: tf.nn.max_pool1d(x, [1, 1, 2], [1, 1, 2], "VALID", "NCW"),
     (rand(2, 3, 7),), lambda x: pool_reference(x.transpose(0, 2, 1)[:, None], (1, 2), (1, 2),
                                                "VALID", np.max)[:, 0].transpose(0, 2, 1)),
    ("avg_pool1d_valid", lambda x: tf.nn.avg_pool1d(x, 3, 2, "VALID"), (rand(2, 8, 2),),
     lambda x: pool_reference(x[:, None], (1, 3), (1, 2), "VALID", np.mean)[:, 0]),
]


@pytest.mark.parametrize("name, fn, xs, ref", VALUE_CASES, ids=[c[0] for c in VALUE_CASES])
def test_values_against_numpy_and_gradients(name, fn, xs, ref):
    got = fn(*[tf.constant(x) for x in xs])
    np.testing.assert_allclose(got.numpy(), ref(*xs), rtol=1e-12, atol=1e-12)
    tf.testing.check_grads(fn, list(xs), order=1)


def test_output_shape_may_hold_scalar_tensors_as_keras_builds_it():
    x, w = tf.constant(rand(3, 4, 4, 2)), tf.constant(rand(3, 3, 5, 2))
    shape = [tf.shape(x)[0], 8, 8, 5]
    got = tf.nn.conv2d_transpose(x, w, tf.stack(shape), 2)
    np.testing.assert_array_equal(got.numpy(), tf.nn.conv2d_transpose(x, w, shape, 2).numpy())
    np.testing.assert_allclose(got.numpy(), transpose_reference(x.numpy(), w.numpy(),
                                                                (3, 8, 8, 5), (2, 2), "SAME"))


def test_transposed_convolution_is_the_adjoint_of_convolution():
    """<conv(x, w), g> = <x, conv_transpose(g, w)>, for every SAME remainder of stride 3."""
    for size in (6, 7, 8):
        x, w = rand(2, size, size + 1, 3), rand(3, 2, 3, 4)
        y = tf.nn.conv2d(x, w, 3, "SAME")
        g = rand(*y.shape)
        back = tf.nn.conv2d_transpose(g, w, x.shape, 3, "SAME")
        np.testing.assert_allclose(np.sum(y.numpy() * g), np.sum(x * back.numpy()), rtol=1e-12)


def test_max_pool1d_keeps_integers_and_ties_go_to_the_first():
    ints = tf.nn.max_pool1d(tf.constant([[[1], [3], [3], [-2]]], tf.int32), 2, 1, "VALID")
    assert ints.dtype == tf.int32
    np.testing.assert_array_equal(ints.numpy().ravel(), [3, 3, 3])
    x = tf.constant(np.array([[[1.], [3.], [3.], [2.]]]))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool1d(x, 2, 2, "VALID")
    np.testing.assert_array_equal(tape.gradient(y, x).numpy().ravel(), [0., 1., 1., 0.])


# ------------------------------------------------------------------ sizes 0 and too small
@pytest.mark.parametrize("call, shape", [
    (lambda: tf.nn.conv1d(tf.ones([0, 7, 3]), tf.ones([3, 3, 4]), 1, "SAME"), (0, 7, 4)),
    (lambda: tf.nn.conv1d(tf.ones([2, 0, 3]), tf.ones([3, 3, 4]), 1, "SAME"), (2, 0, 4)),
    # too small for the filters: empty, as TensorFlow
    (lambda: tf.nn.conv1d(tf.ones([2, 2, 3]), tf.ones([3, 3, 4]), 1, "VALID"), (2, 0, 4)),
    (lambda: tf.nn.depthwise_conv2d(tf.ones([2, 2, 2, 3]), tf.ones([3, 3, 3, 2]), 1, "VALID"),
     (2, 0, 0, 6)),
    (lambda: tf.nn.depthwise_conv2d(tf.ones([0, 4, 4, 3]), tf.ones([3, 3, 3, 1]), 1, "SAME"),
     (0, 4, 4, 3)),
    (lambda: tf.nn.conv2d_transpose(tf.ones([0, 4, 4, 3]), tf.ones([3, 3, 5, 3]),
                                    [0, 8, 8, 5], 2), (0, 8, 8, 5)),
    (lambda: tf.nn.conv2d_transpose(tf.ones([2, 0, 4, 3]), tf.ones([3, 3, 5, 3]),
                                    [2, 0, 8, 5], 2), (2, 0, 8, 5)),
    (lambda: tf.nn.max_pool1d(tf.ones([0, 4, 2]), 2, 2, "VALID"), (0, 2, 2)),
])
def test_empty_axes(call, shape):
    assert call().shape == shape


def test_gradients_through_empty_outputs_are_zeros():
    x, w = tf.constant(rand(2, 2, 3)), tf.constant(rand(3, 3, 4))
    with tf.GradientTape() as tape:
        tape.watch([x, w])
        y = tf.reduce_sum(tf.nn.conv1d(x, w, 1, "VALID"))
    gx, gw = tape.gradient(y, [x, w])
    assert not gx.numpy().any() and not gw.numpy().any() and gw.shape == w.shape


# ------------------------------------------------------------------ errors
X3, W3 = tf.ones([2, 7, 3]), tf.ones([3, 3, 4])
X4, W4 = tf.ones([2, 4, 4, 3]), tf.ones([3, 3, 5, 3])
DW = tf.ones([3, 3, 3, 2])


@pytest.mark.parametrize("call, error, match", [
    (lambda: tf.nn.conv1d(X3, W3, [1, 2], "SAME"), InvalidArgumentError, "length 1, 1 or 3"),
    (lambda: tf.nn.conv1d(X3, W3, [2, 2, 1], "SAME"), InvalidArgumentError, "batch and channel"),
    (lambda: tf.nn.conv1d(X3, W3, 0, "SAME"), InvalidArgumentError, "positive"),
    (lambda: tf.nn.conv1d(X3, tf.ones([3, 2, 4]), 1, "SAME"), InvalidArgumentError,
     "evenly divisible by filter depth: 3 vs 2"),
    (lambda: tf.nn.conv1d(tf.ones([2, 7, 4]), tf.ones([3, 2, 3]), 1, "SAME"),
     InvalidArgumentError, "3 output channels must be evenly divisible by the 2 groups"),
    (lambda: tf.nn.conv1d(tf.ones([7, 3]), W3, 1, "SAME"), InvalidArgumentError, "rank 3 or more"),
    (lambda: tf.nn.conv1d(X3, tf.ones([3, 3]), 1, "SAME"), InvalidArgumentError,
     r"`filters` must have rank 3"),
    (lambda: tf.nn.conv1d(X3, W3, 1, [[0, 0], [1, 1], [0, 0]]), TypeError, "Expected string"),
    (lambda: tf.nn.conv1d(X3, W3, 1, "FULL"), InvalidArgumentError, "padding"),
    (lambda: tf.nn.conv1d(X3, W3, 1, "SAME", data_format="NHCW"), InvalidArgumentError,
     "'NWC' or 'NCW'"),
    (lambda: tf.nn.conv1d(tf.ones([2, 1, 3]), tf.ones([5, 3, 4]), 1, "VALID"),
     InvalidArgumentError, r"output size would be negative: -3 \[input_size: 1, effective_filter"),
    (lambda: tf.nn.conv1d(tf.ones([2, 7, 3], tf.int32), tf.ones([3, 3, 4], tf.int32), 1, "VALID"),
     InvalidArgumentError, "int32"),
    (lambda: tf.nn.conv1d(X3, tf.ones([3, 3, 4], tf.float64), 1, "VALID"), TypeError, "dtype"),
    (lambda: tf.nn.convolution(X4, tf.ones([3, 3, 3, 4]), 2, dilations=2), InvalidArgumentError,
     "`strides > 1` not supported in conjunction with `dilation_rate > 1`"),
    (lambda: tf.nn.convolution(tf.ones([3, 3]), tf.ones([3, 3])), InvalidArgumentError,
     "num_spatial_dims"),
    (lambda: tf.nn.convolution(tf.ones([1, 4, 4, 4, 1]), tf.ones([2, 2, 2, 1, 2])),
     UnimplementedError, "3-D"),
    (lambda: tf.nn.convolution(X4, tf.ones([3, 3, 3, 4]), padding=[[0, 0], [1, 1], [1, 1], [0, 0]]),
     TypeError, "Expected string"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2, 6, 6, 5], 2), InvalidArgumentError,
     "Size of out_backprop doesn't match computed: actual = 4, computed = 3"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2, 9, 8, 5], 2), InvalidArgumentError,
     "actual = 4, computed = 5"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [3, 8, 8, 5], 2), InvalidArgumentError,
     "same batch size"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2, 8, 8, 4], 2), InvalidArgumentError,
     "`output_shape` has 4 channels"),
    (lambda: tf.nn.conv2d_transpose(tf.ones([2, 4, 4, 2]), W4, [2, 8, 8, 5], 2),
     InvalidArgumentError, "same out_depth"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [8, 8, 5], 2), InvalidArgumentError, "4 values"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2, -1, 8, 5], 2), InvalidArgumentError,
     "non-negative"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2., 8., 8., 5.], 2), TypeError, "integers"),
    (lambda: tf.nn.conv2d_transpose(X4, W4, [2, 8, 8, 5], [2, 2, 2, 1]), InvalidArgumentError,
     "batch and channel"),
    (lambda: tf.nn.conv2d_transpose(tf.ones([4, 4, 3]), W4, [2, 8, 8, 5], 2),
     InvalidArgumentError, "`input` must have rank 4"),
    (lambda: tf.nn.conv1d_transpose(X3, tf.ones([3, 5, 3]), [2, 12, 5], 2), InvalidArgumentError,
     "doesn't match computed"),
    (lambda: tf.nn.conv1d_transpose(X3, tf.ones([3, 5, 3]), [2, 14, 5], 2, "SAME", "NHWC"),
     InvalidArgumentError, "'NWC' or 'NCW'"),
    (lambda: tf.nn.conv_transpose(tf.ones([2, 3]), W3, [2, 3], 1), InvalidArgumentError,
     "rank 3 or 4"),
    (lambda: tf.nn.depthwise_conv2d(X4, tf.ones([3, 3, 2, 2]), 1, "SAME"), InvalidArgumentError,
     "same depth: 3 vs 2"),
    (lambda: tf.nn.depthwise_conv2d(X4, DW, [1, 2, 2, 1], "SAME", dilations=[2, 2]),
     InvalidArgumentError, "`strides > 1` not supported"),
    (lambda: tf.nn.depthwise_conv2d(X4, DW, [1, 1, 1, 1], "SAME", data_format="NWC"),
     InvalidArgumentError, "'NHWC' or 'NCHW'"),
    (lambda: tf.nn.depthwise_conv2d(X4, DW, 1, [[0, 0], [1, 1], [0, 0]]), InvalidArgumentError,
     "4 pairs of ints"),
    (lambda: tf.nn.depthwise_conv2d(tf.ones([4, 4, 3]), DW, 1, "SAME"), InvalidArgumentError,
     "rank 4"),
    (lambda: tf.nn.depthwise_conv2d(X4, tf.ones([3, 3, 3]), 1, "SAME"), InvalidArgumentError,
     "`filter` must have rank 4"),
    (lambda: tf.nn.separable_conv2d(X4, DW, tf.ones([1, 1, 5, 4]), 1, "SAME"),
     InvalidArgumentError, r"pointwise_filter` must have shape \[1, 1, .* = 6"),
    (lambda: tf.nn.separable_conv2d(X4, DW, tf.ones([2, 1, 6, 4]), 1, "SAME"),
     InvalidArgumentError, "pointwise_filter"),
    (lambda: tf.nn.separable_conv2d(X4, DW, tf.ones([6, 4]), 1, "SAME"), InvalidArgumentError,
     "pointwise_filter"),
    (lambda: tf.nn.max_pool1d(X3, [2, 2], 2, "SAME"), InvalidArgumentError, "length 1, 1 or 3"),
    (lambda: tf.nn.max_pool1d(X3, 0, 2, "SAME"), InvalidArgumentError, "positive"),
    (lambda: tf.nn.max_pool1d(X3, 3, 1, [[0, 0], [3, 1], [0, 0]]), InvalidArgumentError,
     "smaller than the window size 3"),
    (lambda: tf.nn.max_pool1d(tf.ones([2, 1, 3]), 2, 2, "VALID"), InvalidArgumentError,
     "width 1 \\(padded 1\\) is smaller than the window size 2"),
    (lambda: tf.nn.max_pool1d(tf.ones([2, 2, 7, 3]), 2, 2, "VALID"), InvalidArgumentError,
     "rank 3"),
    (lambda: tf.nn.avg_pool1d(X3, 3, 1, [[0, 0], [1, 1], [0, 0]]), TypeError, "Expected string"),
    (lambda: tf.nn.avg_pool1d(tf.ones([2, 7, 3], tf.int32), 2, 2, "VALID"), InvalidArgumentError,
     "int32"),
])
def test_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


# ------------------------------------------------------------------ traces of every size
def _generic(fn, specs):
    return tf.function(fn, input_signature=[tf.TensorSpec(s, tf.float64) for s in specs])


def _value_and_grads(fn):
    def run(*xs):
        with tf.GradientTape() as tape:
            tape.watch(list(xs))
            y = fn(*xs)
            loss = tf.reduce_sum(tf.sin(y))
        return [y] + tape.gradient(loss, list(xs))
    return run


def _agree(traced, eager, xs):
    got = traced(*[tf.constant(x) for x in xs])
    want = eager(*[tf.constant(x) for x in xs])
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-12, atol=1e-12)


GENERIC_CASES = [
    # (name, op, input shapes with None for the sizes a trace leaves open, sizes tried)
    ("conv1d_same_strided", lambda x, w: tf.nn.conv1d(x, w, 2, "SAME"),
     [[None, None, 3], [3, 3, 2]], [(2, 8), (3, 5), (2, 6), (4, 7), (2, 9), (5, 8)]),
    ("conv1d_same", lambda x, w: tf.nn.conv1d(x, w, 1, "SAME", dilations=2),
     [[None, None, 2], [3, 2, 2]], [(2, 6), (3, 5), (4, 9), (2, 8), (5, 7)]),
    ("depthwise_same_strided", lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
     [[None, None, None, 2], [3, 3, 2, 2]], [(2, 6), (3, 5), (2, 8), (4, 7), (3, 9)]),
    ("separable_same", lambda x, d, p: tf.nn.separable_conv2d(x, d, p, 1, "SAME"),
     [[None, None, None, 2], [3, 3, 2, 1], [1, 1, 2, 3]], [(2, 6), (3, 5), (2, 8), (4, 7)]),
    ("max_pool1d_same", lambda x: tf.nn.max_pool1d(x, 3, 2, "SAME"), [[None, None, 2]],
     [(2, 6), (3, 5), (2, 8), (4, 7), (3, 9)]),
    ("avg_pool1d_same", lambda x: tf.nn.avg_pool1d(x, 2, 2, "SAME"), [[None, None, 2]],
     [(2, 6), (3, 5), (2, 8), (4, 7), (3, 9)]),
]


@pytest.mark.filterwarnings("ignore:.*has been traced")  # strided: a trace per size, by design
@pytest.mark.parametrize("name, fn, specs, sizes", GENERIC_CASES, ids=[c[0] for c in GENERIC_CASES])
def test_a_trace_with_open_sizes_gives_eager_values_at_every_size(name, fn, specs, sizes):
    program = _value_and_grads(fn)
    traced = _generic(program, specs)
    for n, size in sizes:
        xs = [rand(*[(n if i == 0 else size) if d is None else d for i, d in enumerate(s)])
              for s in specs]
        _agree(traced, program, xs)


@pytest.mark.parametrize("strides, padding", [(2, "SAME"), (1, "SAME"), (2, "VALID"),
                                              (3, "VALID"), (1, "VALID")])
def test_transposed_convolution_at_every_size_with_the_output_shape_computed(strides, padding):
    """Keras computes the output shape from the input's: a trace with open sizes must
    follow it (the output size of a strided SAME transpose is not a size of the input)."""
    def fn(x, w):
        n, h, wd = tf.shape(x)[0], tf.shape(x)[1], tf.shape(x)[2]
        extra = 0 if padding == "SAME" else max(3 - strides, 0)
        return tf.nn.conv2d_transpose(x, w, tf.stack([n, h * strides + extra,
                                                      wd * strides + extra, 2]),
                                      strides, padding)
    program = _value_and_grads(fn)
    traced = _generic(program, [[None, None, None, 3], [3, 3, 2, 3]])
    for n, size in [(2, 4), (3, 5), (2, 8), (4, 7), (2, 3)]:
        _agree(traced, program, [rand(n, size, size + 1, 3), rand(3, 3, 2, 3)])


# ------------------------------------------------------------------ vmap, XLA, half precision
def test_vmap_over_per_example_filters_equals_a_loop():
    xs, ws = rand(3, 2, 6, 5, 2), rand(3, 3, 3, 2, 2)
    for op in (lambda x, w: tf.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
               lambda x, w: tf.nn.conv1d(x[:, 0], w[0], 2, "SAME")):
        got = tf.vmap(op)(tf.constant(xs), tf.constant(ws))
        want = np.stack([op(tf.constant(x), tf.constant(w)).numpy() for x, w in zip(xs, ws)])
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in VALUE_CASES if "output_tensor" not in c[0]],
                         ids=lambda c: c[0])
def test_jit_compile_equals_eager(case):
    pytest.importorskip("jax")
    _, fn, xs, _ = case
    program = _value_and_grads(fn)
    compiled = tf.function(program, jit_compile=True)
    _agree(compiled, program, xs)


@pytest.mark.parametrize("dtype", [tf.float16, tf.bfloat16])
def test_half_precision_keeps_its_dtype(dtype):
    x, w = rand(2, 7, 3), rand(3, 3, 4)
    got = tf.nn.conv1d(tf.cast(x, dtype), tf.cast(w, dtype), 2, "SAME")
    assert got.dtype == dtype
    np.testing.assert_allclose(tf.cast(got, tf.float64).numpy(),
                               conv1d_reference(x, w, 2, padding="SAME"), atol=0.15, rtol=0.05)
    dw = tf.nn.depthwise_conv2d(tf.cast(rand(1, 4, 4, 2), dtype), tf.cast(rand(2, 2, 2, 2), dtype),
                                1, "VALID")
    up = tf.nn.conv2d_transpose(tf.cast(rand(1, 2, 2, 3), dtype), tf.cast(rand(2, 2, 1, 3), dtype),
                                [1, 4, 4, 1], 2)
    pooled = tf.nn.avg_pool1d(tf.cast(x, dtype), 2, 2, "VALID")
    assert dw.dtype == up.dtype == pooled.dtype == dtype


def test_grouped_values_do_not_depend_on_the_filters_memory_layout():
    """The filters of a depthwise convolution of multiplier 1 as it binds conv2d_p
    (NOTE(grouped-conv)): [G, kh, kw, 1, 1], a transposed view in eager. The GEMM's
    rounding follows the filter's memory layout unless the impl makes it contiguous; a
    saved graph, whose folded filter is loaded contiguous, then differed from eager in
    the last bit."""
    x = Tensor(rand(2, 1, 7, 5, 1))
    view = rand(3, 2, 1, 2, 1).transpose(3, 0, 1, 2, 4)
    got = [bind(conv2d_p, x, Tensor(w), strides=(1, 1), dilations=(2, 1),
                pads=((0, 0), (0, 0))).numpy() for w in (view, np.ascontiguousarray(view))]
    np.testing.assert_array_equal(got[0], got[1])


# ------------------------------------------------------------------ against TensorFlow itself
# Opt-in (`-m peers`, in an environment with TensorFlow): the same calls, with `m` bound to
# either library, give the same values and gradients. TensorFlow's CPU kernels take
# neither channels-first formats nor dilated transposes (those cases are NumPy's above),
# and differentiate neither grouped nor dilated convolutions: for the cases named in
# VALUES_ONLY the values are compared, the gradients checked by finite differences above.
VALUES_ONLY = {"conv1d_dilated_grouped", "convolution_2d_grouped"}
PEER_CASES = [
    ("conv1d_same_strided", lambda m, x, w: m.nn.conv1d(x, w, 2, "SAME"), [(2, 9, 3), (3, 3, 4)]),
    ("conv1d_dilated_grouped", lambda m, x, w: m.nn.conv1d(x, w, 1, "VALID", dilations=2),
     [(2, 9, 4), (3, 2, 6)]),
    ("conv1d_extra_batch", lambda m, x, w: m.nn.conv1d(x, w, [1, 2, 1], "SAME"),
     [(2, 3, 7, 2), (2, 2, 3)]),
    ("convolution_1d", lambda m, x, w: m.nn.convolution(x, w, padding="SAME"),
     [(2, 6, 3), (2, 3, 2)]),
    ("convolution_2d_grouped", lambda m, x, w: m.nn.convolution(x, w, [2, 1], "SAME"),
     [(2, 7, 6, 4), (3, 2, 2, 6)]),
    ("conv2d_transpose_same", lambda m, x, w: m.nn.conv2d_transpose(x, w, [2, 7, 8, 2], 2),
     [(2, 4, 4, 3), (3, 3, 2, 3)]),
    ("conv2d_transpose_valid", lambda m, x, w: m.nn.conv2d_transpose(
        x, w, [2, 9, 10, 2], [1, 2, 3, 1], "VALID"), [(2, 4, 3, 3), (3, 4, 2, 3)]),
    ("conv2d_transpose_explicit", lambda m, x, w: m.nn.conv2d_transpose(
        x, w, [2, 7, 8, 2], 2, [[0, 0], [1, 1], [0, 1], [0, 0]]), [(2, 4, 4, 3), (3, 3, 2, 3)]),
    ("conv2d_transpose_spatial", lambda m, x, w: m.nn.conv2d_transpose(x, w, [8, 8], 2),
     [(2, 4, 4, 3), (3, 3, 2, 3)]),
    ("conv1d_transpose", lambda m, x, w: m.nn.conv1d_transpose(x, w, [2, 11, 2], 3, "VALID"),
     [(2, 3, 3), (4, 2, 3)]),
    ("conv_transpose", lambda m, x, w: m.nn.conv_transpose(x, w, [2, 8, 2], 2),
     [(2, 4, 3), (3, 2, 3)]),
    ("depthwise_same_strided", lambda m, x, w: m.nn.depthwise_conv2d(x, w, [1, 2, 2, 1], "SAME"),
     [(2, 7, 6, 3), (3, 3, 3, 2)]),
    ("depthwise_dilated", lambda m, x, w: m.nn.depthwise_conv2d(x, w, [1, 1, 1, 1], "SAME",
                                                                dilations=[2, 1]),
     [(2, 7, 6, 3), (3, 3, 3, 1)]),
    ("depthwise_explicit", lambda m, x, w: m.nn.depthwise_conv2d(
        x, w, [1, 1, 1, 1], [[0, 0], [2, 0], [1, 1], [0, 0]]), [(2, 5, 5, 2), (3, 2, 2, 2)]),
    ("separable", lambda m, x, d, p: m.nn.separable_conv2d(x, d, p, [1, 2, 2, 1], "SAME"),
     [(2, 7, 7, 2), (3, 3, 2, 2), (1, 1, 4, 3)]),
    ("separable_dilated", lambda m, x, d, p: m.nn.separable_conv2d(x, d, p, [1, 1, 1, 1], "VALID",
                                                                   dilations=[2, 2]),
     [(2, 7, 7, 2), (2, 2, 2, 1), (1, 1, 2, 3)]),
] + [(f"{pool}_{k}_{s}_{pad}",
      lambda m, x, pool=pool, k=k, s=s, pad=pad: getattr(m.nn, pool)(x, k, s, pad), [(2, 7, 3)])
     for pool in ("max_pool1d", "avg_pool1d") for k in (2, 3) for s in (1, 2)
     for pad in ("SAME", "VALID")] + [
    ("max_pool1d_explicit", lambda m, x: m.nn.max_pool1d(x, 3, 2, [[0, 0], [2, 1], [0, 0]]),
     [(2, 7, 3)]),
]


def _peer_value_and_grads(m, fn, xs, u, grads=True):
    xs = [m.constant(x) for x in xs]
    with m.GradientTape() as tape:
        tape.watch(xs)
        y = fn(m, *xs)
        loss = m.reduce_sum(y * m.constant(u))
    return [np.asarray(a) for a in [y, *(tape.gradient(loss, xs) if grads else [])]]


@pytest.mark.peers
@pytest.mark.parametrize("name, fn, shapes", PEER_CASES, ids=[c[0] for c in PEER_CASES])
def test_matches_tensorflow(name, fn, shapes):
    real_tf = pytest.importorskip("tensorflow")
    rng = np.random.default_rng(0)
    xs = [rng.standard_normal(s) for s in shapes]
    u = rng.standard_normal(np.shape(fn(tf, *[tf.constant(x) for x in xs])))
    grads = name not in VALUES_ONLY
    ours = _peer_value_and_grads(tf, fn, xs, u, grads)
    theirs = _peer_value_and_grads(real_tf, fn, xs, u, grads)
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape
        np.testing.assert_allclose(a, b, rtol=1e-10, atol=1e-10)


@pytest.mark.peers
@pytest.mark.parametrize("call", [
    lambda m: m.nn.conv1d(m.ones([2, 2, 3]), m.ones([3, 3, 4]), 1, "VALID"),
    lambda m: m.nn.depthwise_conv2d(m.ones([2, 2, 2, 3]), m.ones([3, 3, 3, 2]), [1, 1, 1, 1],
                                    "VALID"),
    lambda m: m.nn.conv2d_transpose(m.ones([0, 4, 4, 3]), m.ones([3, 3, 5, 3]), [0, 8, 8, 5], 2),
], ids=["conv1d_too_small", "depthwise_too_small", "transpose_no_examples"])
def test_empty_outputs_as_tensorflow(call):
    real_tf = pytest.importorskip("tensorflow")
    assert tuple(call(tf).shape) == tuple(call(real_tf).shape)
