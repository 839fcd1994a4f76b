"""tf ops on KerasTensors (TFOpLambda layers) and a functional model's symbolic losses
and metrics (`Model.add_loss` / `add_metric` of KerasTensors: AddLoss/AddMetric layers),
against eager computation and, under `peers`, against tf_keras 2.21."""

from __future__ import annotations

import os

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import SymbolicValueError

keras = tf.keras
layers = keras.layers

X = np.array([[1.0, -2.0, 3.0], [0.5, 1.0, -1.0], [2.0, 0.25, -0.5]], np.float32)


def _ops_model() -> tuple:
    x = keras.Input(shape=(3,), name="x")
    outputs = {
        "sum": tf.reduce_sum(x, 1, keepdims=True) + tf.constant(1.0),
        "einsum": tf.einsum("bi,bi->b", x, x),
        "where": tf.where(x > 0, x, tf.zeros_like(x)),
        "concat": tf.concat([x, tf.square(x)], axis=1),
        "softmax": tf.nn.softmax(x, axis=-1),
        "first_const": tf.subtract(2.0, x),
        "tensor_left": tf.constant([1.0, 2.0, 3.0]) * x,
        "reflected": 1.0 - x[:, :2],
        "index": x[..., 0] * 2.0 - x[:, tf.newaxis, 1][:, 0],
        "compare": tf.cast(tf.constant(0.5) < x, tf.float32),
        "backend_std": keras.backend.std(x, axis=1),
        "matmul": x @ tf.eye(3) / 2.0,
    }
    return x, outputs


def _eager(v: np.ndarray) -> dict:
    x = tf.constant(v)
    return {
        "sum": tf.reduce_sum(x, 1, keepdims=True) + 1.0,
        "einsum": tf.einsum("bi,bi->b", x, x),
        "where": tf.where(x > 0, x, tf.zeros_like(x)),
        "concat": tf.concat([x, tf.square(x)], axis=1),
        "softmax": tf.nn.softmax(x, axis=-1),
        "first_const": 2.0 - x,
        "tensor_left": tf.constant([1.0, 2.0, 3.0]) * x,
        "reflected": 1.0 - x[:, :2],
        "index": x[..., 0] * 2.0 - x[:, 1],
        "compare": tf.cast(x > 0.5, tf.float32),
        "backend_std": keras.backend.std(x, axis=1),
        "matmul": x / 2.0,
    }


def test_tf_ops_on_keras_tensors_record_layers_that_compute_eagers_values():
    x, outputs = _ops_model()
    assert all(isinstance(o, keras.KerasTensor) for o in outputs.values())
    assert outputs["sum"].shape.as_list() == [None, 1]
    assert outputs["concat"].shape.as_list() == [None, 6]
    assert outputs["einsum"].shape.as_list() == [None]
    assert outputs["compare"].dtype == tf.float32
    model = keras.Model(x, outputs)
    got, want = model(X), _eager(X)
    for k in outputs:
        np.testing.assert_allclose(got[k].numpy(), want[k].numpy(), rtol=1e-6, err_msg=k)
    kinds = {type(layer).__name__ for layer in model.layers}
    assert kinds == {"InputLayer", "TFOpLambda", "SlicingOpLambda"}
    # the gradient through the op layers is the eager one
    with tf.GradientTape() as tape:
        v = tf.constant(X)
        tape.watch(v)
        total = tf.add_n([tf.reduce_sum(t) for t in model(v).values()])
    with tf.GradientTape() as tape2:
        w = tf.constant(X)
        tape2.watch(w)
        expected = tf.add_n([tf.reduce_sum(t) for t in _eager_from(w).values()])
    np.testing.assert_allclose(tape.gradient(total, v).numpy(),
                               tape2.gradient(expected, w).numpy(), rtol=1e-5, atol=1e-6)


def _eager_from(x: tf.Tensor) -> dict:
    return {k: v for k, v in zip(_eager(X), _eager_values(x))}


def _eager_values(x: tf.Tensor) -> list:
    return [tf.reduce_sum(x, 1, keepdims=True) + 1.0, tf.einsum("bi,bi->b", x, x),
            tf.where(x > 0, x, tf.zeros_like(x)), tf.concat([x, tf.square(x)], axis=1),
            tf.nn.softmax(x, axis=-1), 2.0 - x, tf.constant([1.0, 2.0, 3.0]) * x,
            1.0 - x[:, :2], x[..., 0] * 2.0 - x[:, 1], tf.cast(x > 0.5, tf.float32),
            keras.backend.std(x, axis=1), x / 2.0]


def test_op_layers_survive_config_and_both_file_formats(tmp_path):
    x, outputs = _ops_model()
    model = keras.Model(x, outputs)
    want = model(X)
    config = model.get_config()
    ops_config = [e for e in config["layers"]
                  if e["class_name"] in ("TFOpLambda", "SlicingOpLambda")]
    assert {e["config"]["function"] for e in ops_config} >= {
        "math.reduce_sum", "linalg.einsum", "concat", "math.softmax", "__operators__.add",
        "__operators__.getitem", "math.subtract", "keras.backend.std"}
    copies = [keras.Model.from_config(config)]
    for ext in ("keras", "h5"):
        path = str(tmp_path / f"ops.{ext}")
        model.save(path)
        copies.append(keras.models.load_model(path))
    for copy in copies:
        got = copy(X)
        for k in want:
            np.testing.assert_array_equal(got[k].numpy(), want[k].numpy(), err_msg=k)


def test_op_layer_in_a_traced_call_with_a_none_batch():
    x = keras.Input(shape=(3,))
    model = keras.Model(x, tf.reduce_mean(tf.square(x), axis=1) + x[:, 0])
    f = tf.function(model, input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    rng = np.random.default_rng(1)
    for n in (1, 2, 3, 5):
        v = rng.standard_normal((n, 3)).astype(np.float32)
        np.testing.assert_allclose(f(v).numpy(), np.mean(v ** 2, 1) + v[:, 0], rtol=1e-6)


def test_a_config_names_only_ops():
    """A model file is hostile: its TFOpLambda may name an op, never another callable of
    tapeflow (a loader, a saver, a class) that each call of the model would run."""
    from tapeflow.keras.op_layers import TFOpLambda

    assert TFOpLambda("math.reduce_sum").op(tf.ones([2])).numpy() == 2.0
    assert TFOpLambda("keras.backend.std").op is keras.backend.std
    for path in ("keras.models.load_model", "saved_model.save", "keras.Model", "nest.flatten",
                 "math", "no.such.op"):
        with pytest.raises(ValueError, match="names no op of tapeflow"):
            TFOpLambda(path)


def test_values_a_keras_tensor_cannot_give():
    x = keras.Input(shape=(3,))
    with pytest.raises(SymbolicValueError, match="no value.*Lambda"):
        float(tf.reduce_sum(x))
    with pytest.raises(TypeError, match="could not be converted"):
        tf.ops.reduction.reduce_sum(x)  # a family's function is not a namespace's
    with pytest.raises(TypeError):
        tf.reduce_sum(x, nonexistent=1)  # the op's own signature is checked


# ================================================================ symbolic losses
def _guide_model(k: object) -> tuple:
    """The functional model of Keras' "training and evaluation" guide, with a symbolic
    activity loss and metric."""
    inputs = k.Input(shape=(16,), name="digits")
    x1 = k.layers.Dense(8, activation="relu", name="dense_1")(inputs)
    x2 = k.layers.Dense(8, activation="relu", name="dense_2")(x1)
    outputs = k.layers.Dense(4, name="predictions")(x2)
    model = k.Model(inputs=inputs, outputs=outputs)
    return model, x1


def test_symbolic_loss_and_metric_follow_each_call_and_reach_fit(tmp_path):
    model, x1 = _guide_model(keras)
    model.add_loss(tf.reduce_sum(x1) * 0.1)
    model.add_metric(keras.backend.std(x1), name="std_of_activation", aggregation="mean")
    # tf_keras's order: the outputs' layers, then those of each insert
    assert [type(layer).__name__ for layer in model.layers][-5:] == [
        "TFOpLambda", "TFOpLambda", "AddLoss", "TFOpLambda", "AddMetric"]
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 16)).astype(np.float32)
    y = rng.integers(0, 4, 32)
    hidden = keras.Model(model.input, x1)
    for rows in (slice(0, 3), slice(3, 10)):
        model(x[rows])
        (loss,) = model.losses
        np.testing.assert_allclose(float(loss), 0.1 * float(tf.reduce_sum(hidden(x[rows]))),
                                   rtol=1e-6)
    ce = keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(optimizer="sgd", loss=ce)
    evaluated = model.evaluate(x, y, batch_size=32, verbose=0)
    expected = float(ce(y, model(x))) + 0.1 * float(tf.reduce_sum(hidden(x)))
    np.testing.assert_allclose(evaluated[0], expected, rtol=1e-5)  # then the metric
    history = model.fit(x, y, batch_size=8, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "std_of_activation"}
    # a copy (config, .keras, .h5) computes the same loss
    copies = [keras.Model.from_config(model.get_config())]
    copies[0].set_weights(model.get_weights())
    for ext in ("keras", "h5"):
        path = str(tmp_path / f"guide.{ext}")
        model.save(path)
        copies.append(keras.models.load_model(path, compile=False))
    model(x[:5])
    for copy in copies:
        copy(x[:5])
        assert len(copy.losses) == 1
        np.testing.assert_allclose(float(copy.losses[0]), float(model.losses[0]), rtol=1e-6)


def test_symbolic_loss_must_come_from_the_model_inputs():
    model, _ = _guide_model(keras)
    other = keras.Input(shape=(16,), name="other")
    stray = tf.reduce_sum(keras.layers.Dense(2)(other))
    with pytest.raises(ValueError, match="computed from the model's inputs"):
        model.add_loss(stray)
    assert [type(layer).__name__ for layer in model.layers][-1] == "Dense"  # unchanged
    with pytest.raises(ValueError, match="name for your metric"):
        model.add_metric(tf.reduce_sum(model.output))


def test_building_a_model_updates_no_metric():
    """Recording a layer call runs the layer on zeros to learn its output shapes: its
    add_metric must not count them (tf_keras's symbolic call updates nothing)."""
    class Watched(keras.layers.Layer):
        def call(self, x):
            self.add_metric(tf.reduce_mean(x), name="mean_input")
            return x

    x = keras.Input(shape=(2,))
    model = keras.Model(x, Watched()(x))
    model.add_metric(tf.reduce_max(x), name="max_input")
    assert sorted(m.name for m in model.metrics) == ["max_input", "mean_input"]
    model(tf.constant([[1.0, 3.0]]))
    assert {m.name: float(m.result()) for m in model.metrics} == {"mean_input": 2.0,
                                                                   "max_input": 3.0}


# ================================================================ tf_keras (peers)
@pytest.fixture(scope="module")
def tfk() -> object:
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    pytest.importorskip("tensorflow")
    return pytest.importorskip("tf_keras")


@pytest.mark.peers
def test_guide_model_trains_as_tf_keras_step_by_step(tfk):
    import tensorflow as real_tf

    ours, x1 = _guide_model(keras)
    ours.add_loss(tf.reduce_sum(x1) * 0.1)
    ours.add_metric(keras.backend.std(x1), name="std_of_activation", aggregation="mean")
    theirs, t1 = _guide_model(tfk)
    theirs.add_loss(real_tf.reduce_sum(t1) * 0.1)
    theirs.add_metric(tfk.backend.std(t1), name="std_of_activation", aggregation="mean")
    theirs.set_weights(ours.get_weights())
    assert [type(layer).__name__ for layer in ours.layers] == \
        [type(layer).__name__ for layer in theirs.layers]
    ours.compile(optimizer=keras.optimizers.SGD(0.01),
                 loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    theirs.compile(optimizer=tfk.optimizers.SGD(0.01),
                   loss=tfk.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(3)
    for _ in range(4):
        x = rng.standard_normal((8, 16)).astype(np.float32)
        y = rng.integers(0, 4, 8)
        a = ours.train_on_batch(x, y, return_dict=True)
        b = theirs.train_on_batch(x, y, return_dict=True)
        assert set(a) == set(b)
        for k in a:
            np.testing.assert_allclose(a[k], b[k], rtol=2e-5, err_msg=k)
    for w, v in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(w, v, rtol=1e-4, atol=1e-6)


@pytest.mark.peers
def test_op_layer_configs_name_the_ops_as_tf_keras(tfk):
    import tensorflow as real_tf

    def build(k: object, t: object) -> object:
        x = k.Input(shape=(3,), name="x")
        y = t.reduce_sum(x, axis=1, keepdims=True) + 1.0
        z = t.concat([x, t.square(x)], axis=1)
        return k.Model(x, [y, z, x[:, 1:] * 2.0])

    ours, theirs = build(keras, tf), build(tfk, real_tf)
    want = [(type(layer).__name__, layer.name.rsplit("_", 1)[0] if layer.name[-1].isdigit()
             else layer.name) for layer in theirs.layers]
    got = [(type(layer).__name__, layer.name.rsplit("_", 1)[0] if layer.name[-1].isdigit()
            else layer.name) for layer in ours.layers]
    assert sorted(got) == sorted(want)
    their_fns = {e["config"]["function"] for e in theirs.get_config()["layers"]
                 if e["class_name"] == "TFOpLambda"}
    our_fns = {e["config"]["function"] for e in ours.get_config()["layers"]
               if e["class_name"] == "TFOpLambda"}
    assert our_fns == their_fns
    for a, b in zip(ours(X), theirs(X)):
        np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=1e-6)


@pytest.mark.peers
def test_tf_keras_files_with_op_layers_and_a_symbolic_loss_load(tfk, tmp_path):
    import tensorflow as real_tf

    x = tfk.Input(shape=(4, 3), name="x")
    hidden = tfk.layers.Dense(3, name="hidden")(x)
    outputs = [hidden[:, 1:, ::2] * 2.0, hidden[:, :, 0], real_tf.cast(x, real_tf.float64),
               1.0 - real_tf.reduce_sum(hidden, axis=-1)]
    theirs = tfk.Model(x, outputs)
    theirs.add_loss(0.1 * real_tf.reduce_mean(hidden))
    v = np.random.default_rng(4).standard_normal((2, 4, 3)).astype(np.float32)
    want = [np.asarray(t) for t in theirs(v)]
    want_loss = float(theirs.losses[0])
    for ext in ("keras", "h5"):
        path = str(tmp_path / f"theirs.{ext}")
        theirs.save(path)
        ours = keras.models.load_model(path, compile=False)
        got = ours(v)
        for a, b in zip(got, want):
            np.testing.assert_allclose(a.numpy(), b, rtol=1e-6)
        assert [type(layer).__name__ for layer in ours.layers] == \
            [type(layer).__name__ for layer in theirs.layers]
        np.testing.assert_allclose(float(ours.losses[0]), want_loss, rtol=1e-6)
