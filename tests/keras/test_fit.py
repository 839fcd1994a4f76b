"""compile, fit, evaluate, predict and the *_on_batch methods (keras/fitting.py), with
callbacks (keras/callbacks.py): the losses equal a hand-written GradientTape loop's, step
by step, and tf_keras's (peers); overriding train_step customizes fit."""

from __future__ import annotations

import csv
import os

import numpy as np
import pytest

import tapeflow as tf


def _data(n=48, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, 4)).astype(np.float32)
    y = (x @ np.array([1.0, -1.0, 0.5, 0.0], np.float32) > 0).astype(np.int64)
    return x, y


def _model(seed=0):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.layers.Dense(6, activation="tanh"),
                                 tf.keras.layers.Dense(2)])
    model(np.zeros((1, 4), np.float32))
    return model


def test_fit_losses_are_a_tape_loops_step_by_step():
    x, y = _data()
    model, manual = _model(), _model()
    manual.set_weights(model.get_weights())
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    model.compile(tf.keras.optimizers.Adam(0.05), loss_fn, metrics=["accuracy"])
    seen = []
    record = tf.keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: seen.append(logs["loss"]))
    history = model.fit(x, y, batch_size=16, epochs=3, shuffle=False, verbose=0,
                        callbacks=[record])
    opt = tf.keras.optimizers.Adam(0.05)
    want_steps, want_epochs = [], []
    for _ in range(3):
        total, count = 0.0, 0
        for start in range(0, 48, 16):
            xb, yb = x[start:start + 16], y[start:start + 16]
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, manual(xb, training=True))
            grads = tape.gradient(loss, manual.trainable_variables)
            opt.apply_gradients(zip(grads, manual.trainable_variables))
            total, count = total + float(loss) * len(xb), count + len(xb)
            want_steps.append(total / count)  # the running mean tf_keras logs
        want_epochs.append(total / count)
    np.testing.assert_allclose(seen, want_steps, rtol=1e-6)
    np.testing.assert_allclose(history.history["loss"], want_epochs, rtol=1e-6)
    for a, b in zip(model.get_weights(), manual.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)
    acc = np.mean(np.argmax(manual(x).numpy(), -1) == y)
    assert model.evaluate(x, y, verbose=0)[1] == pytest.approx(acc)
    assert history.epoch == [0, 1, 2] and model.metrics_names == ["loss", "accuracy"]


def test_fit_on_a_dataset_with_validation_and_the_step_traced_once():
    x, y = _data(64)
    model = _model()
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    train = tf.data.Dataset.from_tensor_slices((x[:48], y[:48])).shuffle(48, seed=0).batch(16)
    val = tf.data.Dataset.from_tensor_slices((x[48:], y[48:])).batch(8)
    history = model.fit(train, epochs=4, validation_data=val, verbose=0)
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert len(history.history["val_loss"]) == 4
    assert model._train_function.experimental_get_tracing_count() == 1
    loss, acc = model.evaluate(x[48:], y[48:], batch_size=8, verbose=0)
    assert loss == pytest.approx(history.history["val_loss"][-1], rel=1e-6)
    # arrays to train on, a dataset to validate with: the batch size is the arrays'
    again = model.fit(x[:48], y[:48], batch_size=16, epochs=1, validation_data=val, verbose=0)
    assert "val_loss" in again.history
    assert model.predict(x, batch_size=10, verbose=0).shape == (64, 2)


def test_validation_split_sample_and_class_weights_initial_epoch_and_steps():
    x, y = _data(50)
    model = _model()
    model.compile("sgd", tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    history = model.fit(x, y, batch_size=10, epochs=3, initial_epoch=1, validation_split=0.2,
                        verbose=0)
    assert history.epoch == [1, 2] and "val_loss" in history.history
    # the validation split is the last 20%, before shuffling: evaluate on it agrees
    assert model.evaluate(x[40:], y[40:], verbose=0) == pytest.approx(
        history.history["val_loss"][-1], rel=1e-6)
    # weights: a class weight is a sample weight of that class
    a, b = _model(3), _model(3)
    for m in (a, b):
        m.compile(tf.keras.optimizers.SGD(0.1),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    ha = a.fit(x, y, batch_size=25, epochs=2, shuffle=False, class_weight={0: 2.0, 1: 0.5},
               verbose=0)
    hb = b.fit(x, y, batch_size=25, epochs=2, shuffle=False,
               sample_weight=np.where(y == 0, 2.0, 0.5), verbose=0)
    np.testing.assert_allclose(ha.history["loss"], hb.history["loss"], rtol=1e-6)
    steps = _model()
    steps.compile("sgd", "mse")
    seen = []
    steps.fit(x, np.ones((50, 2), np.float32), batch_size=10, epochs=3, steps_per_epoch=2,
              verbose=0, callbacks=[tf.keras.callbacks.LambdaCallback(
                  on_train_batch_end=lambda b, logs: seen.append(b))])
    assert seen == [0, 1] * 3


def test_overriding_train_step_customizes_fit():
    # The guide "customizing what happens in fit": a train_step of one's own, with a
    # metric tracker; fit runs it as the step.
    class Custom(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.dense = tf.keras.layers.Dense(1)
            self.tracker = tf.keras.metrics.Mean(name="my_loss")

        def call(self, x):
            return self.dense(x)

        def train_step(self, data):
            x, y = data
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(tf.square(self(x, training=True) - y))
            grads = tape.gradient(loss, self.trainable_variables)
            self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
            self.tracker.update_state(loss)
            return {"my_loss": self.tracker.result()}

        @property
        def metrics(self):
            return [self.tracker]

    x = np.random.default_rng(1).standard_normal((32, 3)).astype(np.float32)
    y = x.sum(1, keepdims=True)
    model = Custom()
    model.compile(optimizer=tf.keras.optimizers.SGD(0.1))
    history = model.fit(x, y, batch_size=8, epochs=5, verbose=0)
    losses = history.history["my_loss"]
    assert list(history.history) == ["my_loss"] and losses[-1] < losses[0] / 4


def test_callbacks(tmp_path, capsys):
    x, y = _data(40)
    model = _model()
    model.compile(tf.keras.optimizers.SGD(0.5),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    stop = tf.keras.callbacks.EarlyStopping(monitor="loss", patience=0, min_delta=10.0)
    lrs = tf.keras.callbacks.LearningRateScheduler(lambda epoch, lr: lr * 0.5)
    log = tf.keras.callbacks.CSVLogger(str(tmp_path / "log.csv"))
    save = tf.keras.callbacks.ModelCheckpoint(str(tmp_path / "w-{epoch:02d}.weights.h5"),
                                              save_weights_only=True)
    history = model.fit(x, y, batch_size=8, epochs=10, verbose=0,
                        callbacks=[stop, lrs, log, save])
    assert len(history.epoch) == 2 and stop.stopped_epoch == 1  # no improvement of 10
    assert history.history["lr"] == [0.25, 0.125]
    rows = list(csv.reader(open(tmp_path / "log.csv")))
    assert rows[0] == ["epoch", "accuracy", "loss", "lr"] and len(rows) == 3
    assert sorted(os.listdir(tmp_path)) == ["log.csv", "w-01.weights.h5", "w-02.weights.h5"]
    plateau = tf.keras.callbacks.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1,
                                                   min_delta=10.0)
    model.compile(tf.keras.optimizers.SGD(0.4),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    h = model.fit(x, y, batch_size=8, epochs=4, verbose=0, callbacks=[plateau])
    # each epoch logs the rate it trained with; the first has no plateau yet
    np.testing.assert_allclose(h.history["lr"], [0.4, 0.4, 0.2, 0.1], rtol=1e-6)
    assert float(model.optimizer.learning_rate.numpy()) == pytest.approx(0.05)
    capsys.readouterr()
    model.fit(x, y, batch_size=8, epochs=2, verbose=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "Epoch 1/2" and out[1].startswith("5/5 - ") and "loss: " in out[1]


def test_clear_errors():
    model = _model()
    x, y = _data(8)
    with pytest.raises(RuntimeError, match="must compile your model"):
        model.fit(x, y, verbose=0)
    model.compile("sgd", "mse")
    with pytest.raises(ValueError, match="Data cardinality is ambiguous"):
        model.fit(x, y[:5], verbose=0)
    with pytest.raises(ValueError, match="batch_size.*must not be given with a dataset"):
        model.fit(tf.data.Dataset.from_tensor_slices((x, y)).batch(2), batch_size=4, verbose=0)
    with pytest.raises(ValueError, match="Unknown metric"):
        model.compile("sgd", "mse", metrics=["nonsense"])
        model.fit(x, np.ones((8, 2), np.float32), verbose=0)


# ------------------------------------------------------------------ against tf_keras
@pytest.mark.peers
@pytest.mark.parametrize("optimizer", ["sgd", "adam", "rmsprop"])
def test_fit_matches_tf_keras_step_by_step(optimizer):
    os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
    keras = pytest.importorskip("tf_keras")
    x, y = _data(64)
    ours = _model()
    theirs = keras.Sequential([keras.layers.Dense(6, activation="tanh"), keras.layers.Dense(2)])
    theirs(np.zeros((1, 4), np.float32))
    theirs.set_weights(ours.get_weights())
    logs = {"ours": [], "theirs": []}
    for name, m, k, cb in (("ours", ours, tf.keras, tf.keras.callbacks.LambdaCallback),
                           ("theirs", theirs, keras, keras.callbacks.LambdaCallback)):
        m.compile(optimizer=optimizer,
                  loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
        h = m.fit(x[:48], y[:48], batch_size=16, epochs=3, shuffle=False, verbose=0,
                  validation_data=(x[48:], y[48:]),
                  callbacks=[cb(on_train_batch_end=lambda b, l, n=name: logs[n].append(
                      (l["loss"], l["accuracy"])))])
        logs[name + "_history"] = h.history
    np.testing.assert_allclose(logs["ours"], logs["theirs"], rtol=2e-5, atol=1e-6)
    for k in ("loss", "accuracy", "val_loss", "val_accuracy"):
        np.testing.assert_allclose(logs["ours_history"][k], logs["theirs_history"][k],
                                   rtol=2e-5, atol=1e-6)
    for a, b in zip(ours.get_weights(), theirs.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-6)


def test_batches_do_not_alias_the_callers_arrays():
    from tapeflow.keras import fitting

    x = np.arange(12.0).reshape(6, 2)
    for rows in (slice(0, 4), np.array([3, 1])):
        batch = fitting._take(x, rows)
        assert not np.shares_memory(batch._value, x)
