"""Train a small CNN with Keras' `compile`/`fit` on a `tf.data` pipeline (synthetic
MNIST-like images: a bright square whose position is the class), with validation, an
EarlyStopping callback and a checkpoint of the best epoch's weights; then evaluate,
restore the checkpoint into a new model and check that it predicts the same.

Run: python examples/fit_cnn_dataset.py [--quick]
"""

from __future__ import annotations

import os
import sys
import tempfile

import numpy as np

import tapeflow as tf
from train_mnist_like import synthetic_digits  # the same synthetic digits (examples/)


def make_model() -> tf.keras.Model:
    return tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 3, strides=2, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10)])


def main(quick: bool = False) -> float:
    rng = np.random.default_rng(0)
    n = 512 if quick else 4096
    x, y = synthetic_digits(n, rng)
    vx, vy = synthetic_digits(n // 4, rng)
    tf.random.set_seed(0)
    train = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(n).batch(64)
    val = tf.data.Dataset.from_tensor_slices((vx, vy)).batch(128)
    model = make_model()
    model.compile(optimizer=tf.keras.optimizers.Adam(3e-3),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    directory = tempfile.mkdtemp()
    best = os.path.join(directory, "best.weights.h5")
    history = model.fit(train, epochs=4 if quick else 8, validation_data=val, verbose=2,
                        callbacks=[tf.keras.callbacks.EarlyStopping(monitor="val_loss",
                                                                    patience=2),
                                   tf.keras.callbacks.ModelCheckpoint(
                                       best, save_best_only=True, save_weights_only=True)])
    loss, accuracy = model.evaluate(val, verbose=0)
    print(f"validation: loss {loss:.4f}, accuracy {accuracy:.3f}")
    assert history.history["loss"][-1] < history.history["loss"][0]
    assert accuracy > (0.5 if quick else 0.9), accuracy
    # the best epoch's weights, checkpointed, into a new model
    restored = make_model()
    restored(x[:1])
    restored.load_weights(best)
    epoch = int(np.argmin(history.history["val_loss"]))
    print(f"checkpoint: the weights of epoch {epoch + 1} (val_loss "
          f"{history.history['val_loss'][epoch]:.4f})")
    restored.compile(loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True))
    assert abs(restored.evaluate(val, verbose=0) - history.history["val_loss"][epoch]) < 1e-5
    return accuracy


if __name__ == "__main__":
    main(quick="--quick" in sys.argv)
