"""The padding, cropping and upsampling layers of keras/shaping_layers.py: values against
NumPy (bilinear upsampling against np.interp at half-pixel centers), gradients against
finite differences, configs, output shapes, models, traces with a None batch size, the
errors of bad arguments, and tf_keras's values, gradients and configs (peers)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import shaping_layers

L = tf.keras.layers


def _pad(x, pairs, first):
    """np.pad of the spatial axes (from axis 1, or 2 for channels_first)."""
    widths = [(0, 0)] * x.ndim
    for k, pair in enumerate(pairs):
        widths[k + first] = pair
    return np.pad(x, widths)


def _crop(x, pairs, first):
    key = [slice(None)] * x.ndim
    for k, (a, b) in enumerate(pairs):
        key[k + first] = slice(a, x.shape[k + first] - b)
    return x[tuple(key)]


def _repeat(x, sizes, first):
    for k, s in enumerate(sizes):
        x = np.repeat(x, s, axis=k + first)
    return x


def _bilinear(x, sizes, first):
    """Half-pixel-center linear interpolation along each spatial axis: np.interp at
    (i + 1/2) / s - 1/2 (np.interp clamps at the edges, as tf.image.resize does)."""
    for k, s in enumerate(sizes):
        axis, n = k + first, x.shape[k + first]
        src = (np.arange(n * s) + 0.5) / s - 0.5
        x = np.apply_along_axis(lambda v: np.interp(src, np.arange(n), v), axis, x)
    return x


CF = {"data_format": "channels_first"}
CASES = [  # (name, kwargs, input shape, NumPy reference)
    ("ZeroPadding1D", {}, (2, 3, 2), lambda x: _pad(x, [(1, 1)], 1)),
    ("ZeroPadding1D", {"padding": (0, 2)}, (2, 3, 2), lambda x: _pad(x, [(0, 2)], 1)),
    ("ZeroPadding2D", {"padding": ((1, 0), (2, 1))}, (2, 3, 2, 2),
     lambda x: _pad(x, [(1, 0), (2, 1)], 1)),
    ("ZeroPadding2D", dict(padding=(1, 2), **CF), (1, 2, 3, 3),
     lambda x: _pad(x, [(1, 1), (2, 2)], 2)),
    ("ZeroPadding3D", {"padding": (1, (0, 1), 2)}, (1, 2, 2, 1, 2),
     lambda x: _pad(x, [(1, 1), (0, 1), (2, 2)], 1)),
    ("Cropping1D", {"cropping": (1, 2)}, (2, 5, 3), lambda x: _crop(x, [(1, 2)], 1)),
    ("Cropping1D", {"cropping": (2, 0)}, (2, 5, 3), lambda x: _crop(x, [(2, 0)], 1)),
    ("Cropping2D", {"cropping": ((1, 0), (0, 2))}, (2, 4, 5, 2),
     lambda x: _crop(x, [(1, 0), (0, 2)], 1)),
    ("Cropping2D", dict(cropping=1, **CF), (1, 2, 4, 3), lambda x: _crop(x, [(1, 1), (1, 1)], 2)),
    ("Cropping3D", {"cropping": (1, (0, 1), 0)}, (1, 3, 3, 2, 2),
     lambda x: _crop(x, [(1, 1), (0, 1), (0, 0)], 1)),
    ("UpSampling1D", {"size": 3}, (2, 3, 2), lambda x: _repeat(x, [3], 1)),
    ("UpSampling2D", {"size": (2, 3)}, (2, 2, 3, 2), lambda x: _repeat(x, [2, 3], 1)),
    ("UpSampling2D", dict(size=2, **CF), (1, 2, 2, 3), lambda x: _repeat(x, [2, 2], 2)),
    ("UpSampling2D", {"size": (2, 3), "interpolation": "bilinear"}, (2, 3, 4, 2),
     lambda x: _bilinear(x, [2, 3], 1)),
    ("UpSampling2D", dict(size=(3, 1), interpolation="Bilinear", **CF), (1, 2, 4, 3),
     lambda x: _bilinear(x, [3, 1], 2)),
    ("UpSampling3D", {"size": (1, 2, 2)}, (1, 2, 2, 2, 3), lambda x: _repeat(x, [1, 2, 2], 1)),
]
IDS = [f"{name}-{kwargs}" for name, kwargs, *_ in CASES]


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name, kwargs, shape, ref", CASES, ids=IDS)
def test_values_gradients_and_config(name, kwargs, shape, ref):
    layer = getattr(L, name)(dtype="float64", **kwargs)
    x = _input(shape)
    y = layer(tf.constant(x))
    np.testing.assert_allclose(y.numpy(), ref(x), rtol=1e-12, atol=1e-14)
    assert y.dtype == tf.float64
    tf.testing.check_grads(lambda u: layer(u), [x], order=2)
    again = getattr(L, name).from_config(layer.get_config())
    np.testing.assert_array_equal(again(tf.constant(x)).numpy(), y.numpy())
    copy = tf.keras.layers.deserialize(tf.keras.layers.serialize(layer))
    assert type(copy) is type(layer) and copy.get_config() == layer.get_config()
    assert tuple(layer.compute_output_shape(shape)) == y.shape
    open_shape = (None,) + shape[1:]
    assert tuple(layer.compute_output_shape(open_shape)) == (None,) + tuple(y.shape[1:])


@pytest.mark.parametrize("name, kwargs, shape, ref", CASES, ids=IDS)
def test_in_models_and_in_a_trace_of_any_batch_size(name, kwargs, shape, ref):
    layer = getattr(L, name)(**kwargs)
    x = _input(shape).astype(np.float32)
    want = ref(x.astype(np.float64))
    model = tf.keras.Sequential([tf.keras.Input(shape[1:]), layer])
    np.testing.assert_allclose(model(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    inputs = tf.keras.Input(shape=shape[1:])
    functional = tf.keras.Model(inputs, getattr(L, name)(**kwargs)(inputs))
    np.testing.assert_allclose(functional(tf.constant(x)).numpy(), want, rtol=1e-5, atol=1e-6)
    traced = tf.function(lambda t: layer(t),
                         input_signature=[tf.TensorSpec((None,) + shape[1:], tf.float32)])
    for n in (2, 3, 5, 1):
        xs = _input((n,) + shape[1:], seed=n).astype(np.float32)
        np.testing.assert_allclose(traced(tf.constant(xs)).numpy(), layer(tf.constant(xs)).numpy(),
                                   rtol=1e-6, atol=1e-7)
    batch_of_4 = tf.constant(_input((4,) + shape[1:]).astype(np.float32))
    assert traced.get_concrete_function(batch_of_4).serves_all_sizes


def test_compiled_calls_and_their_gradients_give_eager_values():
    pytest.importorskip("jax")  # the xla extra
    x = tf.constant(_input((2, 3, 4, 2)).astype(np.float32))
    for layer in (L.UpSampling2D((2, 3), interpolation="bilinear"), L.UpSampling2D(),
                  L.ZeroPadding2D(1), L.Cropping2D(1)):
        def loss(t, layer=layer):
            with tf.GradientTape() as tape:
                tape.watch(t)
                y = tf.reduce_sum(tf.sin(layer(t)))
            return y, tape.gradient(y, t)
        for got, want in zip(tf.function(loss, jit_compile=True)(x), loss(x), strict=True):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-5, atol=1e-6)


def test_fit_and_a_saved_model_predicts_alike(tmp_path):
    model = tf.keras.Sequential([
        tf.keras.Input((4, 4, 2)), L.ZeroPadding2D(1), L.Conv2D(3, 3),
        L.UpSampling2D(interpolation="bilinear"), L.Cropping2D(((1, 0), (0, 1))),
        L.Flatten(), L.Dense(1)])
    model.compile("adam", "mse")
    rng = np.random.default_rng(1)
    x, y = rng.uniform(size=(16, 4, 4, 2)).astype(np.float32), rng.uniform(size=(16, 1))
    history = model.fit(x, y.astype(np.float32), epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = str(tmp_path / "shaped.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_bilinear_keeps_float64_and_gives_float32_otherwise():
    up = L.UpSampling2D(interpolation="bilinear", dtype="float16")
    assert up(tf.ones([1, 2, 2, 1])).dtype == tf.float32  # tf.image.resize's dtype
    up = L.UpSampling2D(interpolation="bilinear")
    assert up(tf.ones([1, 2, 2, 1], tf.int32)).dtype == tf.float32
    near = L.UpSampling2D(dtype="float16")
    assert near(tf.ones([1, 2, 2, 1])).dtype == tf.float16
    assert L.ZeroPadding2D()(tf.ones([1, 2, 2, 1], tf.int32)).dtype == tf.int32


def test_bilinear_weights_are_rounded_as_tensorflow_rounds_them():
    x = tf.constant(np.array([0., 6., 12.], np.float32).reshape(1, 3, 1, 1))
    y = L.UpSampling2D((3, 1), interpolation="bilinear")(x).numpy().ravel()
    np.testing.assert_array_equal(  # TF: the float32 weights of (i + 0.5) / 3 - 0.5
        y, np.array([0., 0., 2.0000002, 4.0000005, 6., 8., 10., 12., 12.], np.float32))


def test_masks_stop_here_as_tf_keras():
    embedded = L.Embedding(5, 2, mask_zero=True)(tf.constant([[1, 2, 0]]))
    assert tf.keras.masks.get_mask(embedded) is not None
    for layer in (L.ZeroPadding1D(), L.Cropping1D(), L.UpSampling1D()):
        assert tf.keras.masks.get_mask(layer(embedded)) is None


@pytest.mark.parametrize("make, error, match", [
    (lambda: L.ZeroPadding1D(-1), ValueError, ">= 0"),
    (lambda: L.ZeroPadding1D((1, 2, 3)), ValueError, "tuple of 2 integers"),
    (lambda: L.ZeroPadding2D((1, 2, 3)), ValueError, "should have 2 elements"),
    (lambda: L.ZeroPadding2D(((1, 2), (3,))), ValueError, "2nd entry of padding"),
    (lambda: L.ZeroPadding2D("a"), ValueError, "should have 2 elements"),
    (lambda: L.ZeroPadding2D(1.5), ValueError, "should be either an int"),
    (lambda: L.ZeroPadding3D((1, 2)), ValueError, "should have 3 elements"),
    (lambda: L.Cropping2D(-1), ValueError, "non-negative"),
    (lambda: L.Cropping3D(((1, 2), (0, 0), (1, 2, 3))), ValueError, "3rd entry of cropping"),
    (lambda: L.UpSampling1D(0), ValueError, "positive"),
    (lambda: L.UpSampling2D(0), ValueError, "> 0"),
    (lambda: L.UpSampling2D(interpolation="foo"), NotImplementedError, "not recognized"),
    (lambda: L.UpSampling2D(interpolation="bicubic"), NotImplementedError, "not supported"),
    (lambda: L.UpSampling2D(data_format="channels_middle"), ValueError, "data_format"),
    (lambda: L.Cropping1D((3, 3))(tf.ones([1, 5, 2])), ValueError, "cropping"),
    (lambda: L.Cropping2D(((0, 0), (2, 3)))(tf.ones([1, 3, 5, 2])), ValueError, "cropping"),
    (lambda: L.Cropping1D()(tf.ones([1, 5])), ValueError, "expected ndim=3"),
    (lambda: L.UpSampling2D()(tf.ones([1, 5, 2])), ValueError, "expected ndim=4"),
    (lambda: L.ZeroPadding2D().compute_output_shape((1, 2, 3)), ValueError, "rank 4"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_module_lists_its_layers():
    assert set(shaping_layers.__all__) <= set(dir(L))


# ---------------------------------------------------------------- tf_keras (peers)
@pytest.mark.peers
@pytest.mark.parametrize("name, kwargs, shape, ref", CASES, ids=IDS)
def test_against_tf_keras(name, kwargs, shape, ref):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    x = _input(shape).astype(np.float32)
    ours, theirs = getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs)
    xt, xr = tf.constant(x), real.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = ours(xt)
        w = np.linspace(-1, 1, int(np.prod(y.shape))).reshape(y.shape).astype(np.float32)
        s = tf.reduce_sum(tf.sin(y) * w)  # a cotangent that tells every output apart
    with real.GradientTape() as rtape:
        rtape.watch(xr)
        yr = theirs(xr)
        sr = real.reduce_sum(real.sin(yr) * w)
    assert y.dtype.name == yr.dtype.name
    np.testing.assert_allclose(y.numpy(), yr.numpy(), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(tape.gradient(s, xt).numpy(), rtape.gradient(sr, xr).numpy(),
                               rtol=1e-5, atol=1e-5)
    assert tuple(ours.compute_output_shape((None,) + shape[1:])) == \
        tuple(theirs.compute_output_shape((None,) + shape[1:]))
    mine, yours = ours.get_config(), theirs.get_config()
    assert set(mine) - {"name"} == set(yours) - {"name"}
    for key in set(mine) - {"name"}:
        assert mine[key] == yours[key], (key, mine[key], yours[key])
