"""The layers of keras/conv_layers.py: Conv1D, the transposed convolutions, the depthwise
and separable convolutions and 1-D pooling. Values against NumPy, gradients (inputs and
weights) against finite differences, output shapes, configs and serialization, models,
traces of open sizes, the errors of bad arguments and inputs; and tf_keras's outputs,
gradients, weights, configs and models (peers).
"""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf

from op_table import pool_reference  # first: it imports every table
from table_conv_variants import (conv1d_reference, depthwise_reference, grouped_reference,
                                 transpose_reference)

L = tf.keras.layers


def _last(x, rank):
    """A channels-first array with its channels moved last (and `_first`, back)."""
    return np.moveaxis(x, -rank - 1, -1)


def _first(y, rank):
    return np.moveaxis(y, -1, -rank - 1)


def _conv1d(x, kernel, bias, strides=(1,), padding="valid", dilation_rate=(1,), **_):
    if padding == "causal":
        x = np.pad(x, [(0, 0)] * (x.ndim - 2) + [((kernel.shape[0] - 1) * dilation_rate[0], 0),
                                                  (0, 0)])
        padding = "valid"
    lead = x.shape[:-2]
    y = conv1d_reference(x.reshape((-1,) + x.shape[-2:]), kernel, strides[0], dilation_rate[0],
                         padding.upper())
    return y.reshape(lead + y.shape[1:]) + bias


def _transpose(x, kernel, bias, out, strides, padding, dilation_rate):
    rank = len(strides)
    if rank == 1:
        return transpose_reference(x[:, None], kernel[None], (x.shape[0], 1) + out + (
            kernel.shape[-2],), (1,) + strides, padding.upper(), (1,) + dilation_rate)[:, 0] + bias
    return transpose_reference(x, kernel, (x.shape[0],) + out + (kernel.shape[-2],), strides,
                               padding.upper(), dilation_rate) + bias


def _depthwise(x, kernel, bias, strides, padding, dilation_rate):
    if kernel.ndim == 3:
        return depthwise_reference(x[:, None], kernel[None], (1,) + strides, (1,) + dilation_rate,
                                   padding.upper())[:, 0] + bias
    return depthwise_reference(x, kernel, strides, dilation_rate, padding.upper()) + bias


def _separable(x, dk, pk, bias, strides, padding, dilation_rate):
    if padding == "causal":
        x = np.pad(x, [(0, 0), ((dk.shape[0] - 1) * dilation_rate[0], 0), (0, 0)])
        padding = "valid"
    return np.einsum("...c,co->...o", _depthwise(x, dk, 0., strides, padding, dilation_rate),
                     pk.reshape(pk.shape[-2:])) + bias


def _reference(layer, x):
    """The layer's output by NumPy, from its weights and arguments."""
    ws = [w.numpy().astype(np.float64) for w in layer.weights]
    rank = getattr(layer, "rank", 1)  # pooling: 1
    first = layer.data_format == "channels_first"
    x = _last(x, rank) if first else x
    geometry = {"strides": layer.strides, "padding": layer.padding,
                "dilation_rate": getattr(layer, "dilation_rate", (1,))}
    if isinstance(layer, (L.MaxPooling1D, L.AveragePooling1D)):
        reduce = np.max if isinstance(layer, L.MaxPooling1D) else np.mean
        y = pool_reference(x[:, None], (1, layer.pool_size[0]), (1, layer.strides[0]),
                           layer.padding.upper(), reduce)[:, 0]
    elif isinstance(layer, L.Conv1D):
        y = _conv1d(x, ws[0], ws[1] if layer.use_bias else 0., **geometry)
    elif isinstance(layer, (L.Conv1DTranspose, L.Conv2DTranspose)):
        out = tuple(layer._out_length(i, n) for i, n in enumerate(x.shape[1:-1]))
        y = _transpose(x, ws[0], ws[1] if layer.use_bias else 0., out, **geometry)
    elif isinstance(layer, (L.DepthwiseConv1D, L.DepthwiseConv2D)):
        y = _depthwise(x, ws[0], ws[1] if layer.use_bias else 0., **geometry)
    else:
        y = _separable(x, ws[0], ws[1], ws[2] if layer.use_bias else 0., **geometry)
    if getattr(layer, "activation", None) is not None and layer.activation.__name__ == "relu":
        y = np.maximum(y, 0)
    return _first(y, rank) if first else y


CASES = [  # (id, class name, kwargs, input shape)
    ("conv1d", "Conv1D", {"filters": 4, "kernel_size": 3}, (2, 9, 3)),
    ("conv1d_same_strided", "Conv1D", {"filters": 3, "kernel_size": 4, "strides": 2,
                                       "padding": "same"}, (2, 9, 2)),
    ("conv1d_causal_dilated", "Conv1D", {"filters": 2, "kernel_size": 3, "padding": "causal",
                                         "dilation_rate": 2}, (2, 8, 3)),
    ("conv1d_grouped_channels_first", "Conv1D", {"filters": 6, "kernel_size": 2, "groups": 2,
                                                 "data_format": "channels_first"}, (2, 4, 7)),
    ("conv1d_extra_batch_relu", "Conv1D", {"filters": 2, "kernel_size": 2, "activation": "relu",
                                           "use_bias": False}, (2, 3, 5, 2)),
    ("conv2d_transpose_same", "Conv2DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2,
                                                  "padding": "same"}, (2, 4, 5, 2)),
    ("conv2d_transpose_valid", "Conv2DTranspose", {"filters": 2, "kernel_size": (3, 2),
                                                   "strides": (2, 3)}, (2, 3, 4, 3)),
    ("conv2d_transpose_output_padding", "Conv2DTranspose", {
        "filters": 2, "kernel_size": 3, "strides": 2, "padding": "same", "output_padding": 1},
     (1, 3, 4, 2)),
    ("conv2d_transpose_dilated_channels_first", "Conv2DTranspose", {
        "filters": 2, "kernel_size": 2, "dilation_rate": 2, "data_format": "channels_first"},
     (2, 3, 4, 5)),
    ("conv2d_transpose_dilated_unequal", "Conv2DTranspose", {
        "filters": 2, "kernel_size": 3, "padding": "same", "dilation_rate": (2, 1)}, (2, 4, 5, 3)),
    ("conv1d_transpose_same", "Conv1DTranspose", {"filters": 3, "kernel_size": 3, "strides": 2,
                                                  "padding": "same"}, (2, 5, 2)),
    ("conv1d_transpose_output_padding", "Conv1DTranspose", {
        "filters": 2, "kernel_size": 4, "strides": 3, "output_padding": 2}, (2, 4, 3)),
    ("depthwise_conv2d", "DepthwiseConv2D", {"kernel_size": 3, "depth_multiplier": 2,
                                             "strides": 2, "padding": "same"}, (2, 7, 6, 3)),
    ("depthwise_conv2d_dilated_channels_first", "DepthwiseConv2D", {
        "kernel_size": (2, 3), "dilation_rate": 2, "data_format": "channels_first"}, (2, 2, 7, 8)),
    ("depthwise_conv1d", "DepthwiseConv1D", {"kernel_size": 3, "depth_multiplier": 2,
                                             "padding": "same"}, (2, 7, 3)),
    ("separable_conv2d", "SeparableConv2D", {"filters": 4, "kernel_size": 3,
                                             "depth_multiplier": 2}, (2, 6, 7, 3)),
    ("separable_conv2d_same_strided", "SeparableConv2D", {"filters": 2, "kernel_size": 2,
                                                          "strides": 2, "padding": "same"},
     (1, 5, 5, 2)),
    ("separable_conv1d_causal", "SeparableConv1D", {"filters": 3, "kernel_size": 3,
                                                    "padding": "causal"}, (2, 6, 2)),
    ("max_pooling1d", "MaxPooling1D", {}, (2, 7, 3)),
    ("max_pooling1d_same_channels_first", "MaxPooling1D", {
        "pool_size": 3, "strides": 2, "padding": "same", "data_format": "channels_first"},
     (2, 3, 7)),
    ("average_pooling1d_same", "AveragePooling1D", {"pool_size": 3, "strides": 1,
                                                    "padding": "same"}, (2, 6, 2)),
]
IDS = [c[0] for c in CASES]


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def _built(name, kwargs, shape, dtype="float64"):
    layer = getattr(L, name)(dtype=dtype, **kwargs)
    layer.build((None,) + shape[1:])
    rng = np.random.default_rng(1)  # a random bias too: every weight takes part
    layer.set_weights([rng.standard_normal(w.shape) for w in layer.weights])
    return layer


def _weight_names(layer):
    return [n for n in ("kernel", "depthwise_kernel", "pointwise_kernel", "bias")
            if isinstance(getattr(layer, n, None), tf.Variable)]


def _call_with(layer, x, ws):
    """The layer's output with its weights replaced by the tensors `ws` (so derivatives
    with respect to them can be checked)."""
    names = _weight_names(layer)
    saved = {n: layer.__dict__[n] for n in names}
    layer.__dict__.update(zip(names, ws))
    try:
        return layer(x)
    finally:
        layer.__dict__.update(saved)


@pytest.mark.parametrize("name, kwargs, shape", [c[1:] for c in CASES], ids=IDS)
def test_values_and_gradients(name, kwargs, shape):
    layer = _built(name, kwargs, shape)
    x = _input(shape)
    y = layer(tf.constant(x))
    np.testing.assert_allclose(y.numpy(), _reference(layer, x), rtol=1e-12, atol=1e-12)
    assert y.dtype == tf.float64
    assert layer.compute_output_shape((None,) + shape[1:]) == (None,) + y.shape[1:]
    ws = [w.numpy() for w in layer.weights]
    tf.testing.check_grads(lambda u, *w: _call_with(layer, u, w), [x] + ws, order=1)


@pytest.mark.parametrize("name, kwargs, shape", [c[1:] for c in CASES], ids=IDS)
def test_config_round_trip(name, kwargs, shape):
    layer = _built(name, kwargs, shape, dtype="float32")
    config = layer.get_config()
    again = getattr(L, name).from_config(config)
    assert again.get_config() == config and not again.built
    copy = tf.keras.layers.deserialize(tf.keras.layers.serialize(layer))
    assert type(copy) is type(layer) and copy.get_config() == config
    assert copy.built  # serialize keeps the build input shape
    copy.set_weights(layer.get_weights())
    x = tf.constant(_input(shape).astype(np.float32))
    np.testing.assert_array_equal(copy(x).numpy(), layer(x).numpy())


@pytest.mark.parametrize("name, kwargs, shape", [c[1:] for c in CASES], ids=IDS)
def test_in_sequential_and_functional_models(name, kwargs, shape):
    layer = _built(name, kwargs, shape, dtype="float32")
    x = _input(shape, seed=2).astype(np.float32)
    want = layer(x).numpy()
    np.testing.assert_array_equal(layer(x, training=True).numpy(), want)  # no training mode
    seq = tf.keras.Sequential([tf.keras.Input(shape[1:]), layer])
    np.testing.assert_array_equal(seq(x).numpy(), want)
    inputs = tf.keras.Input(shape[1:])
    model = tf.keras.Model(inputs, layer(inputs))
    assert tuple(model.outputs[0].shape) == (None,) + want.shape[1:]
    np.testing.assert_array_equal(model(x).numpy(), want)


def test_aliases_and_weights():
    assert L.Convolution1D is L.Conv1D and L.Convolution2DTranspose is L.Conv2DTranspose
    assert L.Convolution1DTranspose is L.Conv1DTranspose
    assert L.SeparableConvolution2D is L.SeparableConv2D
    assert L.SeparableConvolution1D is L.SeparableConv1D
    assert L.MaxPool1D is L.MaxPooling1D and L.AvgPool1D is L.AveragePooling1D
    sep = L.SeparableConv2D(4, 3, depth_multiplier=2, name="sep")
    sep.build((None, 8, 8, 3))
    assert [(w.name, tuple(w.shape)) for w in sep.weights] == [
        ("sep/depthwise_kernel:0", (3, 3, 3, 2)), ("sep/pointwise_kernel:0", (1, 1, 6, 4)),
        ("sep/bias:0", (4,))]
    up = L.Conv2DTranspose(5, (3, 2), use_bias=False)
    up.build((None, 4, 4, 3))
    assert [tuple(w.shape) for w in up.weights] == [(3, 2, 5, 3)]
    assert L.MaxPooling1D().weights == [] and L.MaxPooling1D().get_config()["strides"] == (2,)


def test_pooling_keeps_integers():
    x = tf.constant(np.array([[[1], [4], [2], [3]]], np.int32))
    y = L.MaxPooling1D()(x)
    assert y.dtype == tf.int32
    np.testing.assert_array_equal(y.numpy().ravel(), [4, 3])


def test_a_mask_is_dropped_as_tf_keras_drops_it():
    model = tf.keras.Sequential([L.Embedding(10, 4, mask_zero=True),
                                 L.Conv1D(3, 2, padding="same")])
    y = model(np.array([[1, 2, 0, 0]]))
    assert y.shape == (1, 4, 3) and getattr(y, "_keras_mask", None) is None


@pytest.mark.parametrize("make, spec, sizes", [
    (lambda: L.Conv2DTranspose(2, 3, strides=2, padding="same"), [None, None, None, 3],
     [(2, 4, 5), (3, 5, 3), (2, 7, 6)]),
    (lambda: L.Conv1D(2, 3, padding="causal", dilation_rate=2), [None, None, 3],
     [(2, 5), (3, 8), (2, 7)]),
    (lambda: L.Conv1D(2, 3, strides=2, padding="same"), [None, None, 3],
     [(2, 5), (3, 8), (2, 7), (4, 9)]),
    (lambda: L.SeparableConv1D(2, 3, padding="same"), [None, None, 3], [(2, 5), (3, 8), (2, 7)]),
    (lambda: L.AveragePooling1D(3, 2, "same"), [None, None, 3], [(2, 5), (3, 8), (2, 7)]),
])
def test_traces_with_open_sizes_give_eager_values(make, spec, sizes):
    layer = make()
    traced = tf.function(lambda x: layer(x), input_signature=[tf.TensorSpec(spec, tf.float32)])
    for sized in sizes:  # the open sizes, then the channels
        x = tf.constant(_input(sized + (spec[-1],)).astype(np.float32))
        np.testing.assert_allclose(traced(x).numpy(), layer(x).numpy(), rtol=1e-6, atol=1e-6)


# ---------------------------------------------------------------- errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: L.Conv1D(0, 3), ValueError, "strictly positive value. Received filters=0"),
    (lambda: L.Conv1D(3, 2, groups=2), ValueError, "filters must be evenly divisible"),
    (lambda: L.Conv1D(2, 0), ValueError, "`kernel_size`"),
    (lambda: L.Conv1D(2, (3, 3)), ValueError, "tuple of 1 integers"),
    (lambda: L.Conv1D(2, 3, strides=2, dilation_rate=2), ValueError, "`strides > 1` not"),
    (lambda: L.Conv1D(2, 3, padding="full"), ValueError, "`padding` argument"),
    (lambda: L.Conv1D(2, 3, data_format="nwc"), ValueError, "data_format"),
    (lambda: L.Conv1D(2, 3, unknown=1), TypeError, "unknown"),
    (lambda: L.Conv2DTranspose(2, 3, padding="causal"), ValueError, "Causal padding"),
    (lambda: L.Conv2DTranspose(2, 3, strides=2, output_padding=2), ValueError,
     "Strides must be greater than output padding"),
    (lambda: L.Conv2DTranspose(2, 3, groups=2), ValueError, "does not take `groups`"),
    (lambda: L.Conv1DTranspose(2, 3, output_padding=(1, 1)), ValueError, "tuple of 1"),
    (lambda: L.DepthwiseConv2D(3, padding="causal"), ValueError, "Causal padding"),
    (lambda: L.DepthwiseConv1D(3, depth_multiplier=-1), ValueError, "depth_multiplier"),
    (lambda: L.SeparableConv2D(2, 3, depth_multiplier=0), ValueError, "depth_multiplier"),
    (lambda: L.SeparableConv2D(2, 3, pointwise_regularizer="l3"), ValueError,
     "Unknown regularizer"),
    (lambda: L.MaxPooling1D(padding="causal"), ValueError, "'valid' or 'same'"),
    (lambda: L.AveragePooling1D(strides=0), ValueError, "`strides`"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()


@pytest.mark.parametrize("layer, x, error, match", [
    (lambda: L.Conv1D(2, 3, name="c1"), np.zeros((2, 3), np.float32), ValueError,
     r'"c1" \(Conv1D\).*expected min_ndim=3, found ndim=2'),
    (lambda: L.Conv1D(2, 5), np.zeros((2, 2, 3), np.float32), ValueError,
     "dimensions in the output is <= 0"),
    (lambda: L.Conv1D(2, 3, groups=2), np.zeros((2, 7, 3), np.float32), ValueError,
     "input channels must be evenly divisible by the number of groups"),
    (lambda: L.Conv1D(2, 3), np.zeros((2, 7, 3), np.int32), TypeError, "floating inputs"),
    (lambda: L.Conv2DTranspose(2, 3), np.zeros((1, 2, 5, 5, 3), np.float32), ValueError,
     "Inputs should have rank 4"),
    (lambda: L.Conv2DTranspose(2, 2, strides=2, padding="same", output_padding=0),
     np.zeros((1, 5, 5, 3), np.float32), tf.errors.InvalidArgumentError,
     "doesn't match computed"),
    (lambda: L.DepthwiseConv2D(3), np.zeros((1, 2, 5, 5, 3), np.float32), ValueError,
     "Inputs to `DepthwiseConv` should have rank 4"),
    (lambda: L.SeparableConv1D(2, 3), np.zeros((2, 3, 5, 3), np.float32), ValueError,
     "Inputs should have rank 3"),
    (lambda: L.MaxPooling1D(3), np.zeros((2, 2, 3), np.float32), ValueError,
     "smaller than the pool size"),
    (lambda: L.MaxPooling1D(), np.zeros((2, 6, 3, 1), np.float32), ValueError,
     "expected ndim=3, found ndim=4"),
    (lambda: L.AveragePooling1D(), np.zeros((2, 6, 3), np.int32), tf.errors.InvalidArgumentError,
     "int32"),
])
def test_input_errors(layer, x, error, match):
    with pytest.raises(error, match=match):
        layer()(x)


def test_a_channel_dimension_must_be_known():
    with pytest.raises(ValueError, match="channel dimension of the inputs should be defined"):
        L.Conv1D(2, 3, data_format="channels_first").build((None, None, 7))
    with pytest.raises(ValueError, match="channel dimension"):
        L.DepthwiseConv2D(3).build((None, 5, 5, None))


# ---------------------------------------------------------------- against tf_keras
# Cases tf_keras refuses (NumPy checks them above).
NOT_IN_TF_KERAS = {"conv2d_transpose_dilated_unequal": "tf_keras's Conv2DTranspose takes equal "
                   "dilation rates only (a ValueError when called)"}
def _tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    return pytest.importorskip("tensorflow"), keras


def _run(m, layer, x):
    xt = m.constant(x)
    with m.GradientTape() as tape:
        tape.watch(xt)
        y = layer(xt)
        s = m.reduce_sum(m.sin(y))
    grads = tape.gradient(s, [xt] + list(layer.trainable_weights))
    return [np.asarray(v) for v in [y] + grads]


def _plain(v):
    return tuple(v) if isinstance(v, list) else v


@pytest.mark.peers
@pytest.mark.parametrize("name, kwargs, shape", [
    pytest.param(*c[1:], marks=pytest.mark.skip(NOT_IN_TF_KERAS[c[0]])) if c[0] in NOT_IN_TF_KERAS
    else c[1:] for c in CASES], ids=IDS)
def test_against_tf_keras(name, kwargs, shape):
    real, keras = _tf_keras()
    x = _input(shape).astype(np.float32)
    ours, theirs = getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs)
    theirs.build((None,) + shape[1:])
    ours.build((None,) + shape[1:])
    assert [(w.name.split("/")[-1], tuple(w.shape)) for w in ours.weights] == \
        [(w.name.split("/")[-1], tuple(w.shape)) for w in theirs.weights]
    ours.set_weights(theirs.get_weights())
    want, got = _run(real, theirs, x), _run(tf, ours, x)
    for a, b in zip(got, want, strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=2e-5)
    assert tuple(ours.compute_output_shape((None,) + shape[1:])) == \
        tuple(theirs.compute_output_shape((None,) + shape[1:]))
    mine, yours = ours.get_config(), theirs.get_config()
    assert set(mine) == set(yours)
    for key in set(mine) - {"name"}:
        assert _plain(mine[key]) == _plain(yours[key]), (key, mine[key], yours[key])
    # tf_keras's config makes our layer, and ours makes tf_keras's
    assert getattr(L, name).from_config(dict(yours, name="x")).get_config() == dict(mine, name="x")
    theirs_again = getattr(keras.layers, name).from_config(mine)
    assert theirs_again.get_config() == dict(yours, name=mine["name"])


@pytest.mark.peers
def test_a_model_of_these_layers_against_tf_keras():
    _, keras = _tf_keras()

    def model(k):
        inputs, lay = k.Input((16, 3)), k.layers
        h = lay.Conv1D(8, 3, padding="causal", activation="relu")(inputs)
        h = lay.SeparableConv1D(8, 3, padding="same", depth_multiplier=2)(h)
        h = lay.MaxPooling1D()(h)
        h = lay.Conv1DTranspose(4, 3, strides=2, padding="same")(h)
        h = lay.AveragePooling1D(2)(h)
        h = lay.Reshape((8, 1, 4))(h)
        h = lay.DepthwiseConv2D((3, 1), padding="same", depth_multiplier=2)(h)
        h = lay.Conv2DTranspose(2, (2, 1), strides=(2, 1))(h)
        return k.Model(inputs, h)

    ours, theirs = model(tf.keras), model(keras)
    ours.set_weights(theirs.get_weights())
    x = _input((3, 16, 3)).astype(np.float32)
    np.testing.assert_allclose(ours(x).numpy(), theirs(x).numpy(), rtol=2e-5, atol=2e-5)
    assert [tuple(w.shape) for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]


@pytest.mark.parametrize("make, weights", [
    (lambda: L.Conv1D(2, 3, kernel_regularizer=tf.keras.regularizers.L2(0.5),
                      bias_regularizer="l1", bias_initializer="ones"), ("kernel", "bias")),
    (lambda: L.Conv2DTranspose(2, 3, kernel_regularizer=tf.keras.regularizers.L2(0.5),
                               bias_regularizer="l1", bias_initializer="ones"),
     ("kernel", "bias")),
    (lambda: L.DepthwiseConv2D(3, depthwise_regularizer=tf.keras.regularizers.L2(0.5),
                               bias_regularizer="l1", bias_initializer="ones"),
     ("depthwise_kernel", "bias")),
    (lambda: L.SeparableConv2D(2, 3, depthwise_regularizer=tf.keras.regularizers.L2(0.5),
                               pointwise_regularizer=tf.keras.regularizers.L2(0.5),
                               bias_regularizer="l1", bias_initializer="ones"),
     ("depthwise_kernel", "pointwise_kernel", "bias")),
])
def test_regularizers_and_constraints_reach_the_weights(make, weights):
    layer = make()
    rank = 3 if isinstance(layer, L.Conv1D) else 4
    layer(tf.ones((2,) + (6,) * (rank - 2) + (3,)))
    want = [0.5 * float(np.sum(getattr(layer, w).numpy() ** 2)) if w != "bias"
            else float(np.float32(0.01)) * getattr(layer, w).numpy().size for w in weights]
    np.testing.assert_allclose([float(v) for v in layer.losses], want, rtol=1e-5)
    config = layer.get_config()
    assert type(layer).from_config(config).get_config() == config
    constrained = type(layer).from_config(dict(config, bias_constraint="non_neg"))
    assert isinstance(constrained.get_config()["bias_constraint"], dict)
