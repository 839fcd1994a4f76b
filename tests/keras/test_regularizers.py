"""keras.regularizers and keras.constraints, Layer.add_loss / losses / add_metric: values
against NumPy, the losses' lifetime (tf_keras's: a call's terms until the next outermost
call, weight penalties always), fit adding them, optimizers applying constraints, configs;
and tf_keras's values, configs and fit losses (peers)."""

from __future__ import annotations

import copy
import os

import numpy as np
import pytest

import tapeflow as tf

R, C = tf.keras.regularizers, tf.keras.constraints
F32 = lambda v: float(np.float32(v))  # noqa: E731 - factors as tf_keras keeps them


def _x(*shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("reg, ref", [
    (R.L1(0.3), lambda x: F32(0.3) * np.abs(x).sum()),
    (R.L2(0.3), lambda x: F32(0.3) * (x * x).sum()),
    (R.L1L2(0.2, 0.7), lambda x: F32(0.2) * np.abs(x).sum() + F32(0.7) * (x * x).sum()),
    (R.l1_l2(), lambda x: F32(0.01) * (np.abs(x).sum() + (x * x).sum())),
    (R.get("l2"), lambda x: F32(0.01) * (x * x).sum()),
])
def test_regularizer_values_and_gradients(reg, ref):
    x = _x(3, 4)
    out = reg(tf.constant(x))
    assert out.dtype == tf.float64  # the weight's dtype, as tf_keras
    np.testing.assert_allclose(out.numpy(), ref(x), rtol=1e-12)
    tf.testing.check_grads(lambda u: reg(u), [x], order=2)
    again = R.deserialize(R.serialize(reg))
    assert type(again) is type(reg) and again.get_config() == reg.get_config()


def test_orthogonal_regularizer():
    x = _x(4, 3)
    for mode, m in (("rows", x), ("columns", x.T)):
        n = m / np.linalg.norm(m, axis=1, keepdims=True)
        p = np.abs(n @ n.T)
        want = F32(0.5) * (p.sum() - np.trace(p)) / (len(m) * (len(m) - 1))
        got = R.OrthogonalRegularizer(0.5, mode=mode)(tf.constant(x)).numpy()
        np.testing.assert_allclose(got, want, rtol=1e-12)
    tf.testing.check_grads(lambda u: R.OrthogonalRegularizer(0.5)(u), [x], order=1)
    with pytest.raises(ValueError, match="rank 2"):
        R.OrthogonalRegularizer()(tf.ones([2, 2, 2]))
    with pytest.raises(ValueError, match="mode"):
        R.OrthogonalRegularizer(mode="diagonal")


def test_regularizer_lookup_errors():
    with pytest.raises(ValueError, match="Unknown regularizer"):
        R.get("l3")
    with pytest.raises(ValueError, match="Could not interpret regularizer identifier"):
        R.get(3)
    with pytest.raises(ValueError, match="not a valid factor"):
        R.L2(float("nan"))
    with pytest.raises(ValueError, match="not a valid factor"):
        R.L1("big")
    with pytest.raises(ValueError, match="Unknown regularizer"):
        R.deserialize({"class_name": "Nope", "config": {}})
    assert R.get(None) is None and R.serialize(None) is None


@pytest.mark.parametrize("con, ref", [
    (C.MaxNorm(1.5), lambda w: w * np.clip(np.linalg.norm(w, axis=0), 0, 1.5)
     / (1e-7 + np.linalg.norm(w, axis=0))),
    (C.MaxNorm(1.5, axis=1), lambda w: w * (np.clip(np.linalg.norm(w, axis=1), 0, 1.5)
                                            / (1e-7 + np.linalg.norm(w, axis=1)))[:, None]),
    (C.NonNeg(), lambda w: w * (w >= 0)),
    (C.UnitNorm(), lambda w: w / (1e-7 + np.linalg.norm(w, axis=0))),
    (C.MinMaxNorm(1.0, 2.0, rate=0.5), lambda w: w * (
        0.5 * np.clip(np.linalg.norm(w, axis=0), 1.0, 2.0) + 0.5 * np.linalg.norm(w, axis=0))
     / (1e-7 + np.linalg.norm(w, axis=0))),
])
def test_constraint_values_and_configs(con, ref):
    w = 2 * _x(5, 3)
    np.testing.assert_allclose(con(tf.constant(w)).numpy(), ref(w), rtol=1e-12)
    again = C.deserialize(C.serialize(con))
    assert type(again) is type(con) and again.get_config() == con.get_config()


def test_radial_constraint_rings():
    # tf_keras's construction: odd k = 2m + 1 gives ring r the diagonal entry m - 1 + r;
    # even k = 2m the inner 2x2 ring (m - 1, m - 1), ring r >= 1 (m + r, m + r)
    for k, rings in ((3, [0, 4]), (4, [5, 15]), (5, [6, 12, 18])):
        w = np.arange(k * k * 2, dtype=np.float64).reshape(k, k, 1, 2)
        out = C.RadialConstraint()(tf.constant(w)).numpy()
        c = (k - 1) / 2
        dist = np.maximum(np.abs(np.arange(k)[:, None] - c), np.abs(np.arange(k)[None] - c))
        ring = np.round(dist - (0.5 if k % 2 == 0 else 0)).astype(int)
        np.testing.assert_array_equal(out[..., 0, 0], np.array(rings, float)[ring] * 2)
        np.testing.assert_array_equal(out[..., 0, 1], np.array(rings, float)[ring] * 2 + 1)
    with pytest.raises(ValueError, match="square kernel"):
        C.RadialConstraint()(tf.ones([3, 2, 1, 1]))


def test_add_loss_lifetime_as_tf_keras():
    class Inner(tf.keras.layers.Layer):
        def call(self, x):
            self.add_loss(tf.reduce_sum(x))
            return x

    class Outer(tf.keras.layers.Layer):
        def __init__(self):
            super().__init__()
            self.a, self.b = Inner(), Inner()

        def call(self, x):
            return self.b(self.a(x) * 2)

    outer = Outer()
    outer(tf.ones([4, 3]))
    assert [float(v) for v in outer.losses] == [12.0, 24.0]
    outer(tf.ones([1, 3]))  # the outermost call clears the last call's terms
    assert [float(v) for v in outer.losses] == [3.0, 6.0]
    outer.a(tf.ones([2, 3]))  # a call of the inner layer alone replaces its own only
    assert [float(v) for v in outer.losses] == [6.0, 6.0]
    layer = tf.keras.layers.Layer()
    with pytest.raises(ValueError, match="zero argument `lambda`"):
        layer.add_loss(tf.constant(1.0))
    layer.add_loss(lambda: tf.constant(2.0))
    layer.add_loss([None, lambda: tf.constant(3.0)])
    assert [float(v) for v in layer.losses] == [2.0, 3.0]


def test_weight_and_activity_penalties_of_a_layer():
    x = _x(4, 2).astype(np.float32)
    dense = tf.keras.layers.Dense(3, kernel_regularizer=R.L2(0.5), bias_regularizer="l1",
                                  activity_regularizer=R.L1(0.1), bias_initializer="ones")
    y = dense(tf.constant(x)).numpy()
    k = dense.kernel.numpy()
    activity, kernel, bias = [v.numpy() for v in dense.losses]
    np.testing.assert_allclose(activity, F32(0.1) * np.abs(y).sum() / 4, rtol=1e-6)
    np.testing.assert_allclose(kernel, F32(0.5) * (k * k).sum(), rtol=1e-6)
    np.testing.assert_allclose(bias, F32(0.01) * 3, rtol=1e-6)
    # a penalty reads the weight's value now, under the active tape
    dense.kernel.assign(2 * k)
    np.testing.assert_allclose(dense.losses[1].numpy(), F32(0.5) * (4 * k * k).sum(), rtol=1e-6)
    with tf.GradientTape() as tape:
        total = tf.add_n(dense.losses[1:])
    np.testing.assert_allclose(tape.gradient(total, dense.kernel).numpy(), F32(0.5) * 4 * k,
                               rtol=1e-6)
    model = tf.keras.Sequential([tf.keras.Input((2,)), dense])
    model(tf.constant(x))
    assert len(model.losses) == 3


def test_regularized_layers_round_trip_their_configs():
    layers = [tf.keras.layers.Dense(2, kernel_regularizer="l2", bias_constraint="non_neg",
                                    activity_regularizer=R.L1L2(0.1, 0.2)),
              tf.keras.layers.Conv2D(2, 3, kernel_regularizer=R.L1(0.2),
                                     kernel_constraint=C.MaxNorm(3, axis=[0, 1, 2])),
              tf.keras.layers.Embedding(5, 2, embeddings_regularizer="l1",
                                        embeddings_constraint="unit_norm")]
    for layer in layers:
        config = layer.get_config()
        again = type(layer).from_config(config)
        assert again.get_config() == config
        assert tf.keras.layers.deserialize(tf.keras.layers.serialize(layer)).get_config() == config


def test_fit_adds_the_penalties_and_optimizers_apply_constraints():
    x, y = _x(16, 3).astype(np.float32), _x(16, 2).astype(np.float32)
    dense = tf.keras.layers.Dense(2, kernel_regularizer=R.L2(0.1),
                                  kernel_constraint=C.MaxNorm(0.5), kernel_initializer="ones")
    model = tf.keras.Sequential([tf.keras.Input((3,)), dense])
    model.compile(tf.keras.optimizers.SGD(0.1), "mse")
    before = dense.kernel.numpy(), dense.bias.numpy()
    loss = model.train_on_batch(x, y)
    k, b = before
    pred = x @ k + b
    want = ((pred - y) ** 2).mean() + F32(0.1) * (k * k).sum()
    np.testing.assert_allclose(loss, want, rtol=1e-5)
    # the step, then the projection onto column norms <= 0.5
    g = 2 * x.T @ (pred - y) / pred.size + 2 * F32(0.1) * k
    stepped = k - 0.1 * g
    norms = np.linalg.norm(stepped, axis=0)
    np.testing.assert_allclose(dense.kernel.numpy(),
                               stepped * np.minimum(norms, 0.5) / (1e-7 + norms), rtol=1e-5)
    assert np.all(np.linalg.norm(dense.kernel.numpy(), axis=0) <= 0.5 + 1e-6)


def test_variable_constraint():
    v = tf.Variable([-1.0, 2.0], constraint=C.NonNeg())
    tf.keras.optimizers.SGD(0.5).apply_gradients([(tf.constant([1.0, 1.0]), v)])
    np.testing.assert_array_equal(v.numpy(), [0.0, 1.5])
    assert isinstance(copy.deepcopy(v).constraint, C.NonNeg)
    assert tf.Variable(1.0).constraint is None
    with pytest.raises(ValueError, match="not callable"):
        tf.Variable(1.0, constraint="non_neg")


def test_add_metric_in_fit_and_traced_steps():
    class Watched(tf.keras.layers.Layer):
        def call(self, x):
            self.add_metric(tf.reduce_mean(x), name="mean_input")
            self.add_loss(0.0 * tf.reduce_sum(x))
            return x

    inputs = tf.keras.Input((2,))
    model = tf.keras.Model(inputs, tf.keras.layers.Dense(1)(Watched()(inputs)))
    model.compile("sgd", "mse")
    x = np.arange(16, dtype=np.float32).reshape(8, 2)
    history = model.fit(x, np.zeros((8, 1), np.float32), batch_size=4, epochs=2, verbose=0,
                        shuffle=False)
    # per epoch: the mean over the two batches' means
    assert history.history["mean_input"] == [pytest.approx(7.5)] * 2
    assert model.metrics_names[-1] == "mean_input"
    with pytest.raises(ValueError, match="provide a name"):
        Watched().add_metric(tf.constant(1.0))


@pytest.mark.peers
def test_against_tf_keras():
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    real = pytest.importorskip("tensorflow")
    x, y = _x(32, 3).astype(np.float32), _x(32, 2).astype(np.float32)

    def build(k):
        inputs = k.Input((3,))
        h = k.layers.Dense(4, activation="tanh", kernel_regularizer=k.regularizers.L2(0.05),
                           bias_regularizer="l1", activity_regularizer=k.regularizers.L1(0.01),
                           kernel_constraint=k.constraints.MaxNorm(1.2),
                           bias_constraint=k.constraints.NonNeg())(inputs)
        out = k.layers.Dense(2, kernel_regularizer=k.regularizers.L1L2(0.01, 0.02),
                             kernel_constraint=k.constraints.UnitNorm(axis=0))(h)
        model = k.Model(inputs, out)
        model.compile(k.optimizers.SGD(0.2), "mse")
        return model

    ours, theirs = build(tf.keras), build(keras)
    ours.set_weights(theirs.get_weights())
    h1 = ours.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    h2 = theirs.fit(x, y, batch_size=8, epochs=3, shuffle=False, verbose=0).history["loss"]
    np.testing.assert_allclose(h1, h2, rtol=2e-5)
    for a, b in zip(ours.get_weights(), theirs.get_weights(), strict=True):
        np.testing.assert_allclose(a, b, rtol=2e-5, atol=1e-6)
    for a, b in zip(ours.layers[1:], theirs.layers[1:], strict=True):
        mine, yours = a.get_config(), b.get_config()
        for key in ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                    "kernel_constraint", "bias_constraint"):
            assert mine[key] == yours[key], key
    for name in ("MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm"):
        w = _x(3, 3, 2, 4).astype(np.float32)
        np.testing.assert_allclose(getattr(C, name)()(tf.constant(w)).numpy(),
                                   getattr(keras.constraints, name)()(real.constant(w)).numpy(), rtol=1e-6)
        assert getattr(C, name)().get_config() == getattr(keras.constraints, name)().get_config()
    for k in (3, 4, 5):
        w = _x(k, k, 2, 3).astype(np.float32)
        np.testing.assert_array_equal(C.RadialConstraint()(tf.constant(w)).numpy(),
                                      keras.constraints.RadialConstraint()(real.constant(w)).numpy())
    for reg in ("l1", "l2", "l1_l2"):
        assert R.serialize(R.get(reg)) == keras.regularizers.serialize(keras.regularizers.get(reg))
    w = _x(5, 3).astype(np.float32)
    for mode in ("rows", "columns"):
        np.testing.assert_allclose(R.OrthogonalRegularizer(0.3, mode)(tf.constant(w)).numpy(),
                                   keras.regularizers.OrthogonalRegularizer(0.3, mode)(real.constant(w)).numpy(),
                                   rtol=1e-5)
