"""`keras.initializers`: seeded initializers return the same values at every call,
unseeded ones draw anew (and follow tf.random.set_seed); the variance-scaling family's
bounds and statistics for dense and convolution kernels; constant, zeros, ones,
identity, orthogonal and the random ones' ranges; get and serialize, and initializers
as layer arguments; the errors of unknown names and invalid arguments.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow import keras
from tapeflow.keras import layers


# ================================================================ initializers
INITS = ["GlorotUniform", "GlorotNormal", "HeNormal", "HeUniform", "LecunNormal", "LecunUniform",
         "RandomNormal", "RandomUniform", "TruncatedNormal", "Orthogonal"]


@pytest.mark.parametrize("name", INITS)
def test_seeded_initializers_are_stateless_and_unseeded_ones_draw(name):
    cls = getattr(keras.initializers, name)
    a, b = cls(seed=3)((6, 5)), cls(seed=3)((6, 5))
    assert a.shape == (6, 5) and a.dtype == tf.float32
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, cls(seed=3)((6, 5)))
    assert not np.array_equal(a, cls(seed=4)((6, 5)))
    init = cls()
    assert not np.array_equal(init((6, 5)), init((6, 5)))
    assert cls(seed=1)((2, 3), dtype="float64").dtype == tf.float64
    tf.random.set_seed(11)
    c = cls()((4, 4))
    tf.random.set_seed(11)
    np.testing.assert_array_equal(c, cls()((4, 4)))
    tf.random.set_seed(None)


def _fans(shape):
    if len(shape) == 2:
        return shape
    receptive = int(np.prod(shape[:-2]))
    return shape[-2] * receptive, shape[-1] * receptive


@pytest.mark.parametrize("name, kind, scale, mode", [
    ("GlorotUniform", "uniform", 1., "avg"), ("GlorotNormal", "normal", 1., "avg"),
    ("HeUniform", "uniform", 2., "in"), ("HeNormal", "normal", 2., "in"),
    ("LecunUniform", "uniform", 1., "in"), ("LecunNormal", "normal", 1., "in"),
])
@pytest.mark.parametrize("shape", [(300, 200), (3, 3, 16, 32)])
def test_variance_scaling_statistics(name, kind, scale, mode, shape):
    w = getattr(keras.initializers, name)(seed=0)(shape, dtype="float64").numpy()
    fan_in, fan_out = _fans(shape)
    n = fan_in if mode == "in" else (fan_in + fan_out) / 2
    std = np.sqrt(scale / n)
    if kind == "uniform":
        assert np.abs(w).max() <= np.sqrt(3) * std
    else:
        assert np.abs(w).max() <= 2 * std / 0.87962566103423978 + 1e-12  # truncated at 2 sigma
    assert abs(w.std() / std - 1) < 0.05 and abs(w.mean()) < 0.1 * std


def test_constant_zeros_ones_identity_orthogonal():
    ki = keras.initializers
    np.testing.assert_array_equal(ki.Zeros()((2, 3)), np.zeros((2, 3)))
    np.testing.assert_array_equal(ki.Ones()((2,), dtype="int32"), [1, 1])
    np.testing.assert_array_equal(ki.Constant(2.5)((2, 2)), np.full((2, 2), 2.5))
    np.testing.assert_array_equal(ki.Constant([1, 2, 3, 4])((2, 2)), [[1, 2], [3, 4]])
    np.testing.assert_array_equal(ki.Identity(3.)((2, 2)), 3 * np.eye(2))
    q = ki.Orthogonal(seed=0)((4, 6), dtype="float64").numpy()
    np.testing.assert_allclose(q @ q.T, np.eye(4), atol=1e-12)
    r = ki.RandomUniform(0, 10, seed=0)((50,), dtype="int32").numpy()
    assert r.dtype == np.int32 and r.min() >= 0 and r.max() < 10
    u = ki.RandomUniform(-2., 3., seed=0)((1000,)).numpy()
    assert u.min() >= -2 and u.max() < 3
    n = ki.RandomNormal(1., 2., seed=0)((20000,)).numpy()
    assert abs(n.mean() - 1) < 0.05 and abs(n.std() - 2) < 0.05


@pytest.mark.parametrize("ident, cls", [
    ("glorot_uniform", "GlorotUniform"), ("GlorotNormal", "GlorotNormal"), ("he_normal", "HeNormal"),
    ("he_uniform", "HeUniform"), ("zeros", "Zeros"), ("ones", "Ones"), ("random_normal", "RandomNormal"),
    ("random_uniform", "RandomUniform"), ("constant", "Constant"), ("truncated_normal", "TruncatedNormal"),
    ("orthogonal", "Orthogonal"), ("identity", "Identity"), ("lecun_normal", "LecunNormal"),
    ({"class_name": "HeUniform", "config": {"seed": 2}}, "HeUniform"),
])
def test_initializers_get(ident, cls):
    init = keras.initializers.get(ident)
    assert type(init).__name__ == cls


def test_initializers_get_other_forms_and_layer_arguments():
    ki = keras.initializers
    inst = ki.HeNormal(seed=1)
    assert ki.get(inst) is inst and ki.get(None) is None
    assert isinstance(ki.get(ki.Ones), ki.Ones)
    fn = lambda shape, dtype=None: tf.ones(shape, dtype=dtype)  # noqa: E731
    assert ki.get(fn) is fn
    dense = layers.Dense(2, kernel_initializer=fn, bias_initializer=ki.Constant(3.))
    dense.build((None, 2))
    np.testing.assert_array_equal(dense.kernel, np.ones((2, 2)))
    np.testing.assert_array_equal(dense.bias, [3., 3.])
    assert ki.he_normal is ki.HeNormal and ki.zeros is ki.Zeros
    assert ki.get(ki.serialize(inst)).get_config() == {"seed": 1}


# ================================================================ errors
@pytest.mark.parametrize("make, error, match", [
    (lambda: keras.initializers.get("nope"), ValueError, "Unknown initializer: 'nope'"),
    (lambda: keras.initializers.get(3), ValueError, "Could not interpret initializer"),
    (lambda: keras.initializers.HeNormal()((2, 2), dtype="int32"), ValueError, "floating point"),
    (lambda: keras.initializers.Identity()((2, 2, 2)), ValueError, "2D matrices"),
    (lambda: keras.initializers.VarianceScaling(mode="fan"), ValueError, "Invalid `mode`"),
    (lambda: keras.initializers.VarianceScaling(distribution="x"), ValueError, "distribution"),
])
def test_argument_errors(make, error, match):
    with pytest.raises(error, match=match):
        make()
