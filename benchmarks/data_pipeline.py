"""What a tf.data pipeline adds to a training epoch.

60,000 MNIST-shaped examples (784 float32 features, an int label) feed an MLP 784-128-10
trained with a traced GradientTape step at batch 128. One epoch is timed two ways,
interleaved, with the same step: batches cut from NumPy arrays by a permutation (the
floor: what a hand-written loop costs), and
``tf.data.Dataset.from_tensor_slices((x, y)).shuffle(60000).batch(128)``. The medians
and the pipeline's share of the epoch are reported (the target: under 10% added).

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

    floor_epoch()  # trace the step (both batch sizes), warm up
    data_epoch()
    times: dict[str, list[float]] = {"floor": [], "tf.data": []}
    for _ in range(repeat):
        for name, epoch in (("floor", floor_epoch), ("tf.data", data_epoch)):
            start = time.perf_counter()
            epoch()
            times[name].append(time.perf_counter() - start)
    floor, data = (statistics.median(times[k]) for k in ("floor", "tf.data"))
    return {"examples": N, "batch": BATCH, "repeat": repeat, "floor_epoch_s": floor,
            "data_epoch_s": data, "added": data / floor - 1.0}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", metavar="PATH")
    args = parser.parse_args()
    r = measure(args.repeat)
    print(f"MLP epoch over {N} examples, batch {BATCH} (medians of {args.repeat}): "
          f"NumPy batches {r['floor_epoch_s']:.3f} s, tf.data {r['data_epoch_s']:.3f} s: "
          f"the pipeline adds {100 * r['added']:.1f}%")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(r, f, indent=1)


if __name__ == "__main__":
    main()
