"""The layers of keras/noise_layers.py: the noise layers (identity in inference; in
training, their draws' structure and statistics, seeds, gradients, traces of any batch
size, vmap), ActivityRegularization's loss, and PReLU (values against NumPy, gradients
against finite differences, shared axes, regularizers); configs, models and errors; and
tf_keras's behaviour (peers): inference values, configs, PReLU's values and gradients."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.keras import noise_layers

L = tf.keras.layers
RNG = np.random.default_rng(5)

ALPHA_P = -1.6732632423543772 * 1.0507009873554805

NOISE_CASES = [  # (name, kwargs, input shape)
    ("GaussianNoise", {"stddev": 0.3, "seed": 1}, (3, 4)),
    ("GaussianDropout", {"rate": 0.4, "seed": 2}, (2, 3, 4)),
    ("AlphaDropout", {"rate": 0.2, "seed": 3}, (3, 5)),
    ("AlphaDropout", {"rate": 0.3, "noise_shape": (3, 1)}, (3, 5)),
    ("SpatialDropout1D", {"rate": 0.5, "seed": 4}, (2, 3, 4)),
    ("SpatialDropout2D", {"rate": 0.5}, (2, 3, 3, 4)),
    ("SpatialDropout2D", {"rate": 0.5, "data_format": "channels_first"}, (2, 4, 3, 3)),
    ("SpatialDropout3D", {"rate": 0.25}, (2, 2, 2, 2, 3)),
]
IDS = [f"{name}-{kwargs}" for name, kwargs, _ in NOISE_CASES]


def _input(shape, seed=0, dtype=np.float64):
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape).astype(dtype)


# ---------------------------------------------------------------- the noise layers
@pytest.mark.parametrize("name, kwargs, shape", NOISE_CASES, ids=IDS)
def test_identity_in_inference_config_and_models(name, kwargs, shape):
    layer = getattr(L, name)(**kwargs)
    x = tf.constant(_input(shape, dtype=np.float32))
    for training in (None, False):
        np.testing.assert_array_equal(layer(x, training=training).numpy(), x.numpy())
    again = getattr(L, name).from_config(layer.get_config())
    assert again.get_config() == layer.get_config()
    copy = tf.keras.layers.deserialize(tf.keras.layers.serialize(layer))
    assert type(copy) is type(layer) and copy.get_config() == layer.get_config()
    assert tuple(layer.compute_output_shape((None,) + shape[1:])) == (None,) + shape[1:]
    model = tf.keras.Sequential([tf.keras.Input(shape[1:]), getattr(L, name)(**kwargs)])
    np.testing.assert_array_equal(model(x).numpy(), x.numpy())
    assert model(x, training=True).shape == x.shape
    inputs = tf.keras.Input(shape=shape[1:])
    functional = tf.keras.Model(inputs, getattr(L, name)(**kwargs)(inputs))
    np.testing.assert_array_equal(functional(x).numpy(), x.numpy())


@pytest.mark.parametrize("name, kwargs, shape", NOISE_CASES, ids=IDS)
def test_training_draws_seeds_gradient_and_traces(name, kwargs, shape):
    layer = getattr(L, name)(dtype="float64", **kwargs)
    x = tf.constant(_input(shape))
    tf.random.set_seed(7)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x, training=True)
    g = tape.gradient(y, x)
    assert y.dtype == tf.float64 and not np.array_equal(y.numpy(), x.numpy())
    # every noise here is an affine function of x with a drawn slope: the gradient is it
    slope = g.numpy()
    offset = y.numpy() - slope * x.numpy()
    again = layer(x * 2., training=True).numpy()
    assert not np.allclose(again, 2 * slope * x.numpy() + offset)  # a new draw each call
    tf.random.set_seed(7)
    np.testing.assert_array_equal(layer(x, training=True).numpy(), y.numpy())
    if "noise_shape" in kwargs:
        return  # a noise shape of fixed sizes fits inputs of its batch size only
    traced = tf.function(lambda t: layer(t, training=True),
                         input_signature=[tf.TensorSpec((None,) + shape[1:], tf.float64)])
    for n in (2, 3, 5):
        assert traced(tf.constant(_input((n,) + shape[1:], seed=n))).shape == (n,) + shape[1:]
    assert traced.get_concrete_function(tf.constant(_input((4,) + shape[1:]))).serves_all_sizes


def test_gaussian_noise_and_dropout_statistics():
    x = tf.ones([200, 100])
    noisy = L.GaussianNoise(0.5, seed=1)(x, training=True).numpy()
    assert abs(noisy.mean() - 1) < 0.01 and abs(noisy.std() - 0.5) < 0.01
    scaled = L.GaussianDropout(0.2, seed=1)(x, training=True).numpy()
    assert abs(scaled.mean() - 1) < 0.01 and abs(scaled.std() - 0.5) < 0.01
    for rate in (0., 1., 1.5):  # outside (0, 1): the identity, as tf_keras
        np.testing.assert_array_equal(L.GaussianDropout(rate)(x, training=True).numpy(), 1.)


def test_alpha_dropout_keeps_mean_and_variance_and_sets_the_saturation_value():
    rate = 0.2
    x = tf.random.normal([40000], seed=3)
    y = L.AlphaDropout(rate, seed=1)(x, training=True).numpy()
    assert abs(y.mean()) < 0.02 and abs(y.std() - 1) < 0.02
    a = ((1 - rate) * (1 + rate * ALPHA_P ** 2)) ** -0.5
    dropped = np.isclose(y, a * ALPHA_P - a * ALPHA_P * rate, rtol=1e-6)
    assert abs(dropped.mean() - rate) < 0.01
    np.testing.assert_allclose(y[~dropped], a * x.numpy()[~dropped] - a * ALPHA_P * rate,
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name, kwargs, shape, channel_axis", [
    ("SpatialDropout1D", {}, (4, 6, 8), 2),
    ("SpatialDropout2D", {}, (4, 3, 3, 8), 3),
    ("SpatialDropout2D", {"data_format": "channels_first"}, (4, 8, 3, 3), 1),
    ("SpatialDropout3D", {"data_format": "channels_first"}, (4, 8, 2, 2, 2), 1),
])
def test_spatial_dropout_draws_once_per_example_and_channel(name, kwargs, shape, channel_axis):
    y = getattr(L, name)(0.5, seed=1, **kwargs)(tf.ones(shape), training=True).numpy()
    spatial = tuple(a for a in range(1, len(shape)) if a != channel_axis)
    assert set(np.unique(y).tolist()) == {0.0, 2.0}
    assert (y.std(axis=spatial) == 0).all()
    assert len(np.unique(y.mean(axis=spatial))) == 2  # both kept and dropped channels


def test_spatial_dropout_rates_and_masks():
    x = tf.ones([2, 3, 4])
    np.testing.assert_array_equal(L.SpatialDropout1D(0.)(x, training=True).numpy(), 1.)
    np.testing.assert_array_equal(L.SpatialDropout1D(1.)(x, training=True).numpy(), 0.)
    embedded = L.Embedding(5, 2, mask_zero=True)(tf.constant([[1, 2, 0]]))
    for layer in (L.SpatialDropout1D(0.5), L.GaussianNoise(0.1), L.AlphaDropout(0.1),
                  L.PReLU(), L.ActivityRegularization()):
        np.testing.assert_array_equal(tf.keras.masks.get_mask(layer(embedded)).numpy(),
                                      [[True, True, False]])


def test_noise_layers_under_vmap_draw_per_example():
    layer = L.GaussianNoise(1.0, seed=2)
    y = tf.vectorized_map(lambda row: layer(row[None], training=True)[0], tf.zeros([5, 3]))
    assert len({tuple(r) for r in y.numpy()}) == 5


def test_fit_trains_through_the_noise_and_a_saved_model_predicts_alike(tmp_path):
    model = tf.keras.Sequential([
        tf.keras.Input((6, 4)), L.GaussianNoise(0.1), L.SpatialDropout1D(0.2), L.PReLU(),
        L.GaussianDropout(0.1), L.AlphaDropout(0.1), L.ActivityRegularization(l2=0.01),
        L.Flatten(), L.Dense(1)])
    model.compile("adam", "mse")
    x = RNG.uniform(size=(32, 6, 4)).astype(np.float32)
    y = RNG.uniform(size=(32, 1)).astype(np.float32)
    history = model.fit(x, y, epochs=2, batch_size=8, verbose=0)
    assert np.all(np.isfinite(history.history["loss"]))
    path = str(tmp_path / "noisy.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    np.testing.assert_array_equal(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


# ---------------------------------------------------------------- ActivityRegularization
def test_activity_regularization_adds_its_penalty_over_the_batch():
    layer = L.ActivityRegularization(l1=0.1, l2=0.5)
    x = np.array([[1., -2.], [3., 0.5]], np.float32)
    y = layer(tf.constant(x))
    np.testing.assert_array_equal(y.numpy(), x)
    (loss,) = layer.losses
    want = (0.1 * np.abs(x).sum() + 0.5 * (x ** 2).sum()) / 2
    np.testing.assert_allclose(float(loss), want, rtol=1e-6)
    config = layer.get_config()
    assert (config["l1"], config["l2"]) == (0.1, 0.5) and "activity_regularizer" not in config
    assert L.ActivityRegularization.from_config(config).get_config() == config


# ---------------------------------------------------------------- PReLU
PRELU_CASES = [  # (kwargs, input shape, alpha shape)
    ({}, (3, 4), (4,)),
    ({"shared_axes": [1, 2]}, (2, 3, 3, 4), (1, 1, 4)),
    ({"shared_axes": 2}, (2, 3, 4), (3, 1)),
]


def _prelu(x, alpha):
    return np.where(x > 0, x, alpha * x)


@pytest.mark.parametrize("kwargs, shape, alpha_shape", PRELU_CASES, ids=str)
def test_prelu_values_gradients_and_config(kwargs, shape, alpha_shape):
    layer = L.PReLU(alpha_initializer=tf.keras.initializers.RandomUniform(0.1, 0.5, seed=1),
                    dtype="float64", name="act", **kwargs)
    rng = np.random.default_rng(2)
    x = rng.uniform(0.2, 2.0, shape) * rng.choice([-1., 1.], shape)  # away from the kink
    y = layer(tf.constant(x))
    assert [(w.name, tuple(w.shape)) for w in layer.weights] == [("act/alpha:0", alpha_shape)]
    np.testing.assert_allclose(y.numpy(), _prelu(x, layer.alpha.numpy()), rtol=1e-14)
    tf.testing.check_grads(lambda u: layer(u), [x], order=2)
    with tf.GradientTape() as tape:
        total = tf.reduce_sum(layer(tf.constant(x)))
    shared = (0,) + tuple(kwargs.get("shared_axes", ()) if isinstance(kwargs.get("shared_axes"),
                                                                      list)
                          else [kwargs["shared_axes"]] if "shared_axes" in kwargs else [])
    np.testing.assert_allclose(tape.gradient(total, layer.alpha).numpy(),
                               np.minimum(x, 0).sum(axis=shared, keepdims=True)[0], rtol=1e-12)
    config = layer.get_config()
    again = L.PReLU.from_config(config)
    again.build(shape)
    again.set_weights(layer.get_weights())
    np.testing.assert_array_equal(again(tf.constant(x)).numpy(), y.numpy())
    assert tf.keras.layers.deserialize(tf.keras.layers.serialize(layer)).get_config() == config
    traced = tf.function(lambda t: layer(t),
                         input_signature=[tf.TensorSpec((None,) + shape[1:], tf.float64)])
    for n in (2, 3, 5):
        xs = rng.standard_normal((n,) + shape[1:])
        np.testing.assert_allclose(traced(tf.constant(xs)).numpy(), layer(tf.constant(xs)).numpy())


def test_prelu_gradient_at_zero_and_in_models():
    layer = L.PReLU(alpha_initializer=tf.keras.initializers.Constant(0.25))
    x = tf.constant([[0., -2., 3.]])
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = layer(x)
    np.testing.assert_allclose(y.numpy(), [[0., -0.5, 3.]])
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), [[0., 0.25, 1.]])  # TF: 0 at 0
    model = tf.keras.Sequential([tf.keras.Input((3,)), layer])
    np.testing.assert_allclose(model(x).numpy(), y.numpy())


def test_prelu_regularizer_and_constraint_pass_through():
    layer = L.PReLU(alpha_initializer="ones", alpha_regularizer=tf.keras.regularizers.L2(0.5),
                    alpha_constraint=tf.keras.constraints.NonNeg())
    layer(tf.ones([1, 2]))
    np.testing.assert_allclose([float(v) for v in layer.losses], [1.0])
    config = layer.get_config()
    assert config["alpha_regularizer"]["class_name"] == "L2"
    assert config["alpha_constraint"]["class_name"] == "NonNeg"
    assert L.PReLU.from_config(config).get_config() == config


@pytest.mark.parametrize("make, error, match", [
    (lambda: L.PReLU(shared_axes=[3])(tf.ones([2, 3])), ValueError, "shared_axes"),
    (lambda: L.PReLU(shared_axes=[0])(tf.ones([2, 3])), ValueError, "shared_axes"),
    (lambda: L.PReLU(alpha_regularizer="nope"), ValueError, "nope"),
    (lambda: (lambda p: (p(tf.ones([2, 3])), p(tf.ones([2, 4]))))(L.PReLU()), ValueError,
     "incompatible"),
    (lambda: L.SpatialDropout2D(1.5), ValueError, "rate"),
    (lambda: L.SpatialDropout2D(0.5, data_format="x"), ValueError, "data_format"),
    (lambda: L.SpatialDropout1D(0.5)(tf.ones([2, 3])), ValueError, "expected ndim=3"),
    (lambda: L.SpatialDropout3D(0.5)(tf.ones([2, 3, 3, 3])), ValueError, "expected ndim=5"),
    (lambda: L.AlphaDropout(0.5, noise_shape=(2, 3))(tf.ones([2, 4]), training=True),
     tf.errors.InvalidArgumentError, "broadcast"),
])
def test_bad_arguments(make, error, match):
    with pytest.raises(error, match=match):
        make()


def test_module_lists_its_layers():
    assert set(noise_layers.__all__) <= set(dir(L))


# ---------------------------------------------------------------- tf_keras (peers)
def _keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    return pytest.importorskip("tensorflow"), pytest.importorskip("tf_keras")


def _same_config(mine, yours):
    assert set(yours) - {"name"} <= set(mine) - {"name"}, set(yours) - set(mine)
    for key in set(yours) - {"name"}:
        a, b = mine[key], yours[key]
        if isinstance(b, (list, tuple)):
            a, b = list(a), list(b)
        assert a == b, (key, a, b)


@pytest.mark.peers
@pytest.mark.parametrize("name, kwargs, shape", NOISE_CASES, ids=IDS)
def test_noise_layers_against_tf_keras(name, kwargs, shape):
    real, keras = _keras()
    ours, theirs = getattr(L, name)(**kwargs), getattr(keras.layers, name)(**kwargs)
    x = _input(shape, dtype=np.float32)
    np.testing.assert_array_equal(ours(tf.constant(x)).numpy(), theirs(real.constant(x)).numpy())
    _same_config(ours.get_config(), theirs.get_config())
    x = _input((16,) + shape[1:], dtype=np.float32)  # enough draws to see both outcomes
    if "noise_shape" in kwargs:
        x = x[:shape[0]]
    mine = ours(tf.constant(x), training=True).numpy()
    yours = theirs(real.constant(x), training=True).numpy()
    assert mine.shape == yours.shape and mine.dtype == yours.dtype
    if name.startswith("Spatial"):  # each element kept (scaled) or dropped, in both
        assert set(np.unique(np.round(mine / x, 5))) == set(np.unique(np.round(yours / x, 5)))


@pytest.mark.peers
def test_noise_statistics_against_tf_keras():
    real, keras = _keras()
    x = np.ones((300, 300), np.float32)
    for name, kwargs in (("GaussianNoise", {"stddev": 0.3}), ("GaussianDropout", {"rate": 0.3}),
                         ("AlphaDropout", {"rate": 0.3})):
        mine = getattr(L, name)(**kwargs)(tf.constant(x), training=True).numpy()
        yours = getattr(keras.layers, name)(**kwargs)(real.constant(x), training=True).numpy()
        assert abs(mine.mean() - yours.mean()) < 0.03, name
        assert abs(mine.std() - yours.std()) < 0.03, name
    mine = L.AlphaDropout(0.3)(tf.constant(x), training=True).numpy()
    yours = keras.layers.AlphaDropout(0.3)(real.constant(x), training=True).numpy()
    np.testing.assert_allclose(np.unique(mine), np.unique(yours), rtol=1e-6)


@pytest.mark.peers
@pytest.mark.parametrize("kwargs, shape, alpha_shape", PRELU_CASES, ids=str)
def test_prelu_against_tf_keras(kwargs, shape, alpha_shape):
    real, keras = _keras()
    init = {"alpha_initializer": "random_uniform"}
    ours, theirs = L.PReLU(**init, **kwargs), keras.layers.PReLU(**init, **kwargs)
    x = (np.random.default_rng(1).standard_normal(shape)).astype(np.float32)
    theirs(real.constant(x))
    ours(tf.constant(x))
    assert [(w.name.rpartition("/")[2], tuple(w.shape)) for w in ours.weights] == \
        [(w.name.rpartition("/")[2], tuple(w.shape)) for w in theirs.weights]
    ours.set_weights(theirs.get_weights())
    xt, xr = tf.constant(x), real.constant(x)
    with tf.GradientTape() as tape:
        tape.watch(xt)
        y = ours(xt)
        s = tf.reduce_sum(tf.sin(y))
    with real.GradientTape() as rtape:
        rtape.watch(xr)
        yr = theirs(xr)
        sr = real.reduce_sum(real.sin(yr))
    np.testing.assert_allclose(y.numpy(), yr.numpy(), rtol=1e-6)
    mine = tape.gradient(s, [xt] + ours.trainable_weights)
    yours = rtape.gradient(sr, [xr] + theirs.trainable_weights)
    for a, b in zip(mine, yours, strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-5, atol=1e-6)
    _same_config(ours.get_config(), theirs.get_config())
