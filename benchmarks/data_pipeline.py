"""What a tf.data pipeline adds to a training epoch, and an epoch's loop traced whole.

60,000 MNIST-shaped examples (784 float32 features, an int label) feed an MLP 784-128-10
trained with a traced GradientTape step at batch 128. One epoch is timed three ways,
interleaved, with the same step: batches cut from NumPy arrays by a permutation (the
floor: what a hand-written loop costs);
``tf.data.Dataset.from_tensor_slices((x, y)).shuffle(60000).batch(128)`` iterated in
Python around the traced step (the guides' loop); and the same loop inside one
tf.function (`for x, y in dataset:` traced once and run as a loop, NOTE(dataset-loops)).
Where TensorFlow and tf_keras are installed, TensorFlow's tf.function of that loop is
timed beside them in the same process. The medians and the ratios are reported (the
target for the pipeline: under 10% added).

Run: python benchmarks/data_pipeline.py [--repeat 5] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

import tapeflow as tf  # noqa: E402

N, BATCH = 60000, 128


def measure(repeat: int = 5) -> dict[str, Any]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, 784)).astype(np.float32)
    y = rng.integers(0, 10, N)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.layers.Dense(128, activation="relu"),
                                 tf.keras.layers.Dense(10)])
    opt = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def step(xb: Any, yb: Any) -> Any:
        with tf.GradientTape() as tape:
            loss = loss_fn(yb, model(xb))
        opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                model.trainable_variables))
        return loss

    dataset = tf.data.Dataset.from_tensor_slices((x, y)).shuffle(N).batch(BATCH)

    def floor_epoch() -> None:
        order = rng.permutation(N)
        for i in range(0, N, BATCH):
            rows = order[i:i + BATCH]
            step(tf.constant(x[rows]), tf.constant(y[rows]))

    def data_epoch() -> None:
        for xb, yb in dataset:
            step(xb, yb)

    @tf.function
    def traced_epoch(ds: Any) -> Any:
        loss = tf.constant(0.0)  # as autograph asks of a value the loop sets
        for xb, yb in ds:
            loss = step(xb, yb)
        return loss

    epochs = {"floor": floor_epoch, "tf.data": data_epoch,
              "traced loop": lambda: traced_epoch(dataset)}
    peer = _tensorflow_epoch(x, y)
    if peer is not None:
        epochs["TensorFlow traced loop"] = peer
    for epoch in epochs.values():  # trace (both batch sizes), warm up
        epoch()
    times: dict[str, list[float]] = {name: [] for name in epochs}
    for _ in range(repeat):
        for name, epoch in epochs.items():
            start = time.perf_counter()
            epoch()
            times[name].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in times.items()}
    return {"examples": N, "batch": BATCH, "repeat": repeat, "floor_epoch_s": med["floor"],
            "data_epoch_s": med["tf.data"], "added": med["tf.data"] / med["floor"] - 1.0,
            "traced_epoch_s": med["traced loop"],
            "traced_vs_python_loop": med["traced loop"] / med["tf.data"],
            "tensorflow_traced_epoch_s": med.get("TensorFlow traced loop")}


def _tensorflow_epoch(x: np.ndarray, y: np.ndarray) -> Any:
    """TensorFlow's traced epoch over the same pipeline and model, or None without it."""
    try:
        os.environ.setdefault("TF_USE_LEGACY_KERAS", "1")
        import tensorflow as real  # noqa: PLC0415 - a peer, optional
        import tf_keras  # noqa: PLC0415
    except ImportError:
        return None
    real.config.threading.set_intra_op_parallelism_threads(1)
    real.config.threading.set_inter_op_parallelism_threads(1)
    model = tf_keras.Sequential([tf_keras.layers.Dense(128, activation="relu"),
                                 tf_keras.layers.Dense(10)])
    opt = tf_keras.optimizers.SGD(0.01)
    loss_fn = tf_keras.losses.SparseCategoricalCrossentropy(from_logits=True)
    dataset = real.data.Dataset.from_tensor_slices((x, y)).shuffle(N).batch(BATCH)

    @real.function
    def epoch(ds: Any) -> Any:
        loss = real.constant(0.0)
        for xb, yb in ds:
            with real.GradientTape() as tape:
                loss = loss_fn(yb, model(xb))
            opt.apply_gradients(zip(tape.gradient(loss, model.trainable_variables),
                                    model.trainable_variables))
        return loss
    return lambda: epoch(dataset)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    r = measure(args.repeat)
    print(f"MLP epoch over {N} examples, batch {BATCH} (medians of {args.repeat}): "
          f"NumPy batches {r['floor_epoch_s']:.3f} s, tf.data {r['data_epoch_s']:.3f} s: "
          f"the pipeline adds {100 * r['added']:.1f}%")
    print(f"the loop traced in one tf.function: {r['traced_epoch_s']:.3f} s, "
          f"{r['traced_vs_python_loop']:.2f}x the Python loop around the traced step")
    if r["tensorflow_traced_epoch_s"] is not None:
        print(f"TensorFlow's traced loop: {r['tensorflow_traced_epoch_s']:.3f} s "
              f"(tapeflow's: {r['traced_epoch_s'] / r['tensorflow_traced_epoch_s']:.2f}x)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
