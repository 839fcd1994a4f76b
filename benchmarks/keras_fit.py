"""Keras `fit` per epoch: tapeflow against tf_keras 2.21, one thread each, one process.

Two models at batch 128, each fitted one epoch at a time with the same compile
(Adam, sparse categorical cross-entropy from logits, accuracy) on the same synthetic
MNIST-shaped data (NumPy arrays, shuffled each epoch):

- an MLP 784-128-10 over 60,000 examples;
- a LeNet-style CNN (Conv2D 6@5x5, max-pool, Conv2D 16@5x5, max-pool, Dense 120, 84,
  10) over 12,000 28x28x1 images.

The frameworks alternate epoch by epoch after a warm-up epoch each (which traces the
steps); the medians and the ratio tapeflow / tf_keras are reported (the target: within
1.5x). tf_keras runs with `TF_USE_LEGACY_KERAS=1`, TensorFlow's intra- and inter-op
thread pools at one thread, and `jit_compile` off in both (each framework's default).

Run: TF_USE_LEGACY_KERAS=1 python benchmarks/keras_fit.py [--repeat 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any, Callable

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402

BATCH = 128


def mlp(k: Any) -> Any:
    return k.Sequential([k.layers.Dense(128, activation="relu", input_shape=(784,)),
                         k.layers.Dense(10)])


def lenet(k: Any) -> Any:
    return k.Sequential([
        k.layers.Conv2D(6, 5, activation="relu", padding="same", input_shape=(28, 28, 1)),
        k.layers.MaxPooling2D(2),
        k.layers.Conv2D(16, 5, activation="relu"),
        k.layers.MaxPooling2D(2),
        k.layers.Flatten(),
        k.layers.Dense(120, activation="relu"),
        k.layers.Dense(84, activation="relu"),
        k.layers.Dense(10)])


def compiled(k: Any, build: Callable, weights: list | None) -> Any:
    model = build(k)
    if weights is not None:
        model.set_weights(weights)
    model.compile(optimizer=k.optimizers.Adam(1e-3),
                  loss=k.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    return model


def peer_keras() -> Any:
    """tf_keras with TensorFlow at one thread, or None where it is not installed."""
    try:
        import tensorflow as real_tf
        import tf_keras
    except ImportError:
        return None
    real_tf.config.threading.set_intra_op_parallelism_threads(1)
    real_tf.config.threading.set_inter_op_parallelism_threads(1)
    return tf_keras


def measure(repeat: int = 5) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    cases = {"mlp": (mlp, rng.standard_normal((60000, 784)).astype(np.float32),
                     rng.integers(0, 10, 60000)),
             "lenet": (lenet, rng.standard_normal((12000, 28, 28, 1)).astype(np.float32),
                       rng.integers(0, 10, 12000))}
    peer = peer_keras()
    out: dict[str, Any] = {"batch": BATCH, "repeat": repeat}
    for name, (build, x, y) in cases.items():
        tf.random.set_seed(0)
        ours = compiled(tf.keras, build, None)
        models = {"tapeflow": ours}
        if peer is not None:
            models["tf_keras"] = compiled(peer, build, ours.get_weights())
        times: dict[str, list[float]] = {k: [] for k in models}
        for model in models.values():  # warm-up: traces the step
            model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
        for _ in range(repeat):
            for k, model in models.items():
                start = time.perf_counter()
                model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0)
                times[k].append(time.perf_counter() - start)
        row = {k: statistics.median(v) for k, v in times.items()}
        row["examples"] = len(x)
        if peer is not None:
            row["ratio"] = row["tapeflow"] / row["tf_keras"]
        out[name] = row
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    r = measure(args.repeat)
    for name in ("mlp", "lenet"):
        row = r[name]
        peer = (f", tf_keras {row['tf_keras']:.3f} s: {row['ratio']:.2f}x"
                if "ratio" in row else " (tf_keras not installed)")
        print(f"{name}: fit epoch over {row['examples']} examples at batch {BATCH} "
              f"(medians of {args.repeat}): tapeflow {row['tapeflow']:.3f} s{peer}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
