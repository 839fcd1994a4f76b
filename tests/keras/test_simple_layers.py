"""The layers without weights of keras/simple_layers.py: values against NumPy, gradients
against finite differences, the config round trip, and tf_keras's values, gradients and
configs (peers)."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf

L = tf.keras.layers


def _softmax(x, axis):
    e = np.exp(x - x.max(axis, keepdims=True))
    return e / e.sum(axis, keepdims=True)


def F(v):
    return float(np.float32(v))


CASES = [  # (name, kwargs, input shape, NumPy reference)
    ("ReLU", {}, (2, 3, 4), lambda x: np.maximum(x, 0)),
    ("ReLU", {"max_value": 0.5, "negative_slope": 0.1, "threshold": 0.2}, (2, 5),
     lambda x: np.where(x >= 0.2, np.minimum(x, 0.5), 0.1 * (x - 0.2))),
    # (alphas as tf_keras keeps them: float32)
    ("LeakyReLU", {}, (2, 6), lambda x: np.where(x > 0, x, F(0.3) * x)),
    ("LeakyReLU", {"alpha": 0.05}, (3, 2, 2), lambda x: np.where(x > 0, x, F(0.05) * x)),
    ("ELU", {"alpha": 0.7}, (2, 6), lambda x: np.where(x > 0, x, F(0.7) * np.expm1(x))),
    ("Softmax", {}, (2, 3, 4), lambda x: _softmax(x, -1)),
    ("Softmax", {"axis": 1}, (2, 3, 4), lambda x: _softmax(x, 1)),
    ("Reshape", {"target_shape": (4, -1)}, (2, 3, 4), lambda x: x.reshape(2, 4, 3)),
    ("Permute", {"dims": (2, 1)}, (2, 3, 4), lambda x: x.transpose(0, 2, 1)),
    ("Permute", {"dims": (3, 1, 2)}, (2, 3, 4, 5), lambda x: x.transpose(0, 3, 1, 2)),
    ("RepeatVector", {"n": 3}, (2, 4), lambda x: np.repeat(x[:, None], 3, axis=1)),
    ("GlobalAveragePooling1D", {}, (2, 5, 3), lambda x: x.mean(1)),
    ("GlobalAveragePooling1D", {"keepdims": True}, (2, 5, 3), lambda x: x.mean(1, keepdims=True)),
    ("GlobalAveragePooling2D", {}, (2, 4, 5, 3), lambda x: x.mean((1, 2))),
    ("GlobalAveragePooling2D", {"data_format": "channels_first"}, (2, 3, 4, 5),
     lambda x: x.mean((2, 3))),
    ("GlobalMaxPooling1D", {}, (2, 5, 3), lambda x: x.max(1)),
    ("GlobalMaxPooling2D", {}, (2, 4, 5, 3), lambda x: x.max((1, 2))),
]


def _input(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("name, kwargs, shape, ref", CASES, ids=lambda c: str(c)[:40])
def test_values_gradients_and_config(name, kwargs, shape, ref):
    layer = getattr(L, name)(dtype="float64", **kwargs)
    x = _input(shape)
    np.testing.assert_allclose(layer(tf.constant(x)).numpy(), ref(x), rtol=1e-12, atol=1e-14)
    # away from the kinks (ReLU's threshold, a tie in a max), finite differences hold
    tf.testing.check_grads(lambda u: layer(u), [x], order=1)
    again = getattr(L, name).from_config(layer.get_config())
    np.testing.assert_array_equal(again(tf.constant(x)).numpy(), layer(tf.constant(x)).numpy())
    assert tf.keras.layers.deserialize(tf.keras.layers.serialize(layer)).get_config() == \
        layer.get_config()


def test_bad_arguments():
    with pytest.raises(ValueError, match="consecutive and start from 1"):
        L.Permute((0, 1))
    with pytest.raises(ValueError, match="cannot be negative"):
        L.ReLU(max_value=-1.0)
    with pytest.raises(ValueError, match="cannot be a negative value"):
        L.ReLU(threshold=-0.5)
    with pytest.raises(ValueError, match="one -1"):
        L.Reshape((-1, -1))
    with pytest.raises(ValueError):
        L.RepeatVector(2)(tf.ones([2, 3, 4]))


@pytest.mark.peers
@pytest.mark.parametrize("name, kwargs, shape, ref", CASES, ids=lambda c: str(c)[:40])
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
        s = tf.reduce_sum(tf.sin(y))
    with real.GradientTape() as rtape:
        rtape.watch(xr)
        yr = theirs(xr)
        sr = real.reduce_sum(real.sin(yr))
    np.testing.assert_allclose(y.numpy(), yr.numpy(), rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(tape.gradient(s, xt).numpy(), rtape.gradient(sr, xr).numpy(),
                               rtol=1e-5, atol=1e-6)
    mine, yours = ours.get_config(), theirs.get_config()
    for key in set(mine) & set(yours) - {"name", "dtype"}:
        a, b = mine[key], yours[key]
        assert (tuple(a) if isinstance(a, (list, tuple)) else a) == \
            (tuple(b) if isinstance(b, (list, tuple)) else b), (key, a, b)
    assert set(yours) - {"dtype"} <= set(mine), set(yours) - set(mine)


def test_global_average_pooling_1d_averages_the_unmasked_steps():
    x = np.random.default_rng(3).standard_normal((2, 4, 3))
    mask = np.array([[True, True, False, False], [True, False, True, True]])
    want = (x * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
    layer = L.GlobalAveragePooling1D(dtype="float64")
    np.testing.assert_allclose(layer(tf.constant(x), mask=tf.constant(mask)).numpy(), want)
    first = L.GlobalAveragePooling1D(data_format="channels_first", dtype="float64")
    np.testing.assert_allclose(first(tf.constant(x.transpose(0, 2, 1)),
                                     mask=tf.constant(mask)).numpy(), want)
    tf.testing.check_grads(lambda u: layer(u, mask=tf.constant(mask)), [x], order=2)
    # an Embedding's mask reaches it, and stops there
    model = tf.keras.Sequential([L.Embedding(5, 2, mask_zero=True), L.GlobalAveragePooling1D()])
    ids = np.array([[1, 2, 0, 0]])
    rows = model.layers[0].embeddings.numpy()[[1, 2]]
    np.testing.assert_allclose(model(tf.constant(ids)).numpy(), rows.mean(0, keepdims=True),
                               rtol=1e-6)
    assert getattr(model(tf.constant(ids)), "_keras_mask", None) is None


@pytest.mark.peers
def test_masked_global_average_pooling_against_tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    x = np.random.default_rng(4).standard_normal((2, 4, 3)).astype(np.float32)
    mask = np.array([[True, True, False, False], [True, False, True, True]])
    np.testing.assert_allclose(
        L.GlobalAveragePooling1D()(tf.constant(x), mask=tf.constant(mask)).numpy(),
        keras.layers.GlobalAveragePooling1D()(real.constant(x), mask=real.constant(mask)).numpy(),
        rtol=1e-6)
