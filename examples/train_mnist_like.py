"""Train a Keras-style CNN on synthetic MNIST-like data (28x28 images of a bright square
whose position is the class) with GradientTape and Adam, the training step traced once
by tf.function and replayed for every batch; the loss printed per epoch, with a
progress bar (tqdm when installed).

Run: python examples/train_mnist_like.py [--quick]
"""

from __future__ import annotations

import sys

import numpy as np

import tapeflow as tf
from tapeflow.progress import progress


def synthetic_digits(n: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Images [n, 28, 28, 1] with a 6x6 bright square in one of 10 places, and that place."""
    labels = rng.integers(0, 10, n)
    images = rng.uniform(0.0, 0.2, (n, 28, 28, 1)).astype(np.float32)
    for i, c in enumerate(labels):
        r, q = divmod(int(c), 5)
        images[i, 4 + 12 * r:10 + 12 * r, 2 + 5 * q:8 + 5 * q, 0] += 0.8
    return images, labels.astype(np.int32)


def main(quick: bool = False) -> list[float]:
    rng = np.random.default_rng(0)
    x, y = synthetic_digits(256 if quick else 2048, rng)
    model = tf.keras.Sequential([
        tf.keras.layers.Conv2D(8, 5, activation="relu", input_shape=(28, 28, 1)),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Conv2D(16, 5, activation="relu"),
        tf.keras.layers.MaxPooling2D(2),
        tf.keras.layers.Flatten(),
        tf.keras.layers.Dense(10),
    ])
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    optimizer = tf.keras.optimizers.Adam(learning_rate=1e-2)

    @tf.function
    def train_step(images, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(images))
        grads = tape.gradient(loss, model.trainable_variables)
        optimizer.apply_gradients(zip(grads, model.trainable_variables))
        return loss

    batch = 64
    losses = []
    for epoch in range(2 if quick else 5):
        order = rng.permutation(len(x))
        total = 0.0
        starts = range(0, len(x) - batch + 1, batch)
        for s in progress(starts, desc=f"epoch {epoch + 1}"):
            idx = order[s:s + batch]
            total += float(train_step(tf.constant(x[idx]), tf.constant(y[idx])))
        losses.append(total / len(starts))
        accuracy = float(np.mean(np.argmax(model(tf.constant(x[:256])).numpy(), 1) == y[:256]))
        print(f"epoch {epoch + 1}: loss {losses[-1]:.4f}, accuracy {accuracy:.2f}")
    print(f"train_step traced {train_step.experimental_get_tracing_count()} time(s)")
    return losses


if __name__ == "__main__":
    main("--quick" in sys.argv)
