"""`keras.activations`: each activation's values against NumPy formulas, lookup by
name (also as a layer's activation argument), first and second derivatives, relu's
alpha/max_value/threshold options, elu's alpha, softmax over other axes, get and
serialize; and the errors of unknown names and 1-D softmax inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers
from tapeflow.testing import check_grads


# ================================================================ activations
_X = np.array([[-3., -1., -0.25, 0., 0.5, 2., 7.]])
_SIG = 1 / (1 + np.exp(-_X))
ACTIVATIONS = {
    "relu": np.maximum(_X, 0), "sigmoid": _SIG, "tanh": np.tanh(_X),
    "softmax": np.exp(_X) / np.exp(_X).sum(-1, keepdims=True),
    "log_softmax": _X - np.log(np.exp(_X).sum(-1, keepdims=True)),
    "softplus": np.log1p(np.exp(_X)), "softsign": _X / (1 + np.abs(_X)),
    "elu": np.where(_X > 0, _X, np.expm1(_X)),
    "selu": 1.0507009873554805 * np.where(_X > 0, _X, 1.6732632423543772 * np.expm1(_X)),
    "swish": _X * _SIG, "silu": _X * _SIG, "mish": _X * np.tanh(np.log1p(np.exp(_X))),
    "exponential": np.exp(_X), "hard_sigmoid": np.clip(0.2 * _X + 0.5, 0, 1),
    "leaky_relu": np.where(_X > 0, _X, 0.2 * _X), "relu6": np.clip(_X, 0, 6), "linear": _X,
    "gelu": _X * 0.5 * (1 + np.vectorize(__import__("math").erf)(_X / np.sqrt(2))),
}


@pytest.mark.parametrize("name", sorted(ACTIVATIONS))
def test_activation_values_and_get(name):
    fn = keras.activations.get(name)
    assert fn is getattr(keras.activations, name)
    np.testing.assert_allclose(fn(tf.constant(_X)), ACTIVATIONS[name], rtol=1e-12, atol=1e-15)
    out = layers.Dense(3, activation=name)(tf.ones([2, 4]))
    assert out.shape == (2, 3) and out.dtype == tf.float32


@pytest.mark.parametrize("name", ["relu", "sigmoid", "tanh", "softmax", "softplus", "softsign",
                                  "elu", "selu", "gelu", "swish", "mish", "hard_sigmoid",
                                  "leaky_relu", "log_softmax"])
def test_activation_gradients(name):
    x = np.array([[-1.7, -0.3, 0.4, 1.1, 2.2], [0.9, -2.1, 1.3, -0.6, 0.2]])
    check_grads(getattr(keras.activations, name), [x], order=2 if name != "hard_sigmoid" else 1)


def test_relu_keras_options_and_other_signatures():
    x = tf.constant([-10., -5., 0., 5., 10.])
    r = keras.activations.relu
    np.testing.assert_allclose(r(x, alpha=0.5), [-5., -2.5, 0., 5., 10.])
    np.testing.assert_allclose(r(x, max_value=5.), [0., 0., 0., 5., 5.])
    np.testing.assert_allclose(r(x, max_value=6.), [0., 0., 0., 5., 6.])
    np.testing.assert_allclose(r(x, threshold=5.), [0., 0., 0., 0., 10.])
    np.testing.assert_allclose(r(x, alpha=0.5, max_value=7., threshold=1.),
                               [-5.5, -3., -0.5, 5., 7.])
    np.testing.assert_allclose(keras.activations.elu(tf.constant([-1., 1.]), alpha=2.),
                               [2 * np.expm1(-1.), 1.], rtol=1e-6)
    sm = keras.activations.softmax(tf.ones([2, 3, 4]), axis=(1, 2))
    np.testing.assert_allclose(sm, np.full((2, 3, 4), 1 / 12), rtol=1e-6)
    np.testing.assert_allclose(keras.activations.softmax(tf.constant([[1., 1.]]), axis=0),
                               [[1., 1.]])
    assert keras.activations.get(None) is keras.activations.linear
    custom = lambda t: t * 2  # noqa: E731
    assert keras.activations.get(custom) is custom
    assert keras.activations.serialize(keras.activations.gelu) == "gelu"


# ================================================================ errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: layers.Dense(2, activation="nope"), ValueError, "Unknown activation function 'nope'"),
    (lambda: keras.activations.get(3), TypeError, "Could not interpret activation"),
    (lambda: keras.activations.softmax(tf.constant([1., 2.])), ValueError, "1D"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()
