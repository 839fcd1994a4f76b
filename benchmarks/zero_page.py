"""relu, and maximum with a scalar in the replay, against NumPy's maximum with a scalar
(NOTE(zero-page) in allocator.py; graph/specialize.py's tiled scalars).

NumPy's maximum runs SIMD loops for two float arrays and a plain loop for an array and
a scalar. tapeflow's relu compares with an array of zeros that reads the kernel's zero
page; the replay tiles a float32 scalar of maximum and minimum into a row. This times
each against NumPy's call on the same operands (one thread, medians of interleaved
rounds) at users' shapes (a LeNet activation, the seed CNN's, a dense layer's, small
vectors) and past SIMD_MAXIMUM_MOST_BYTES (8 MiB), where both keep NumPy's call.

Run:  python benchmarks/zero_page.py
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    from tapeflow.ops import nn
except ImportError:  # a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from tapeflow.ops import nn
from tapeflow.graph.specialize import tiled_broadcast  # noqa: E402

SHAPES = [("LeNet conv1 activation", (128, 24, 24, 6)), ("seed CNN layer 1", (64, 14, 14, 8)),
          ("dense layer, batch 640", (640, 64)), ("dense layer, batch 128", (128, 256)),
          ("1,024 elements", (1024,)), ("16 elements (the scalar path)", (16,)),
          ("past 8 MiB in float64, the scalar path", (640, 64, 32)),
          ("past 8 MiB in both, the scalar path", (1024, 1024, 4))]
TILED = [(64, 1024), (256, 512), (128, 24, 24, 6), (640, 64, 32), (1024, 1024, 4)]


def _median_us(fn, rounds: int = 9) -> list[float]:
    number = max(1, int(0.02 / max(1e-7, min(timeit.repeat(fn, number=1, repeat=3)))))
    return [min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6
            for _ in range(rounds)]


def _pair(first, second) -> tuple[float, float]:
    a, b = [], []
    for _ in range(5):  # interleaved
        a += _median_us(first, 1)
        b += _median_us(second, 1)
    return statistics.median(a), statistics.median(b)


def main() -> None:
    print("| shape | dtype | np.maximum(x, 0) us | relu us | ratio |")
    print("|---|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for label, shape in SHAPES:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype)
            assert np.array_equal(nn._relu_impl(x), np.maximum(x, 0))
            a, b = _pair(lambda: np.maximum(x, 0), lambda: nn._relu_impl(x))
            print(f"| {label} {list(shape)} | {np.dtype(dtype).name} | {a:.2f} | {b:.2f} "
                  f"| {b / a:.2f} |", flush=True)
    print("\n| float32 array | np.maximum(x, 0.5) us | the replay's maximum us | ratio |")
    print("|---|---:|---:|---:|")
    for shape in TILED:
        x = rng.standard_normal(shape).astype(np.float32)
        c = np.asarray(0.5, np.float32)
        fast = tiled_broadcast(np.maximum, shape, (), (np.float32, np.float32))
        fast = fast or np.maximum  # past the limit: NumPy's own call
        assert np.array_equal(fast(x, c), np.maximum(x, c))
        a, b = _pair(lambda: np.maximum(x, c), lambda: fast(x, c))
        print(f"| {list(shape)} | {a:.1f} | {b:.1f} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
