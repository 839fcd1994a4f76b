"""Jacobians at many inputs: eager re-recording (a tape per input, as TensorFlow's eager
answer) against a traced, replayed, vectorized Jacobian, with timings.

Run: python examples/jacobian_many_inputs.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np

import tapeflow as tf


def make_model(rng: np.random.Generator):
    w1 = tf.constant(rng.standard_normal((20, 64)).astype(np.float32) / 4)
    w2 = tf.constant(rng.standard_normal((64, 10)).astype(np.float32) / 8)
    return lambda x: tf.matmul(tf.tanh(tf.matmul(x, w1)), w2)


def main(quick: bool = False) -> dict:
    rng = np.random.default_rng(0)
    model = make_model(rng)
    batches = [tf.constant(rng.standard_normal((32, 20)).astype(np.float32))
               for _ in range(3 if quick else 30)]

    def eager(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = model(x)
        return tape.batch_jacobian(y, x)

    replayed = tf.function(eager)
    replayed(batches[0])  # the one trace
    times = {}
    for name, fn in (("eager re-recording", eager), ("traced, replayed", replayed)):
        start = time.perf_counter()
        results = [fn(x) for x in batches]
        times[name] = (time.perf_counter() - start) / len(batches)
    np.testing.assert_allclose(results[-1].numpy(), eager(batches[-1]).numpy(), rtol=1e-5,
                               atol=1e-6)
    for name, t in times.items():
        print(f"{name:20s} {t * 1e3:7.2f} ms per batch of 32 Jacobians [10 x 20]")
    print(f"replay speed-up: {times['eager re-recording'] / times['traced, replayed']:.1f}x, "
          f"traces: {replayed.experimental_get_tracing_count()}")
    return times


if __name__ == "__main__":
    main("--quick" in sys.argv)
