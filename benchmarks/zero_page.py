"""relu against NumPy's maximum with a scalar zero (NOTE(zero-page) in allocator.py).

NumPy's maximum runs SIMD loops for two float arrays and a plain loop for an array and
a scalar. tapeflow's relu compares with an array of zeros that reads the kernel's zero
page; this times both on the same operands (one thread, medians of interleaved rounds)
at users' shapes: a LeNet activation, the seed CNN's, a dense layer's, small vectors.

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

SHAPES = [("LeNet conv1 activation", (128, 24, 24, 6)), ("seed CNN layer 1", (64, 14, 14, 8)),
          ("dense layer, batch 640", (640, 64)), ("dense layer, batch 128", (128, 256)),
          ("1,024 elements", (1024,)), ("16 elements (the scalar path)", (16,))]


def _median_us(fn, rounds: int = 9) -> list[float]:
    number = max(1, int(0.02 / max(1e-7, min(timeit.repeat(fn, number=1, repeat=3)))))
    return [min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6
            for _ in range(rounds)]


def main() -> None:
    print("| shape | dtype | np.maximum(x, 0) us | relu us | ratio |")
    print("|---|---|---:|---:|---:|")
    rng = np.random.default_rng(0)
    for label, shape in SHAPES:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype)
            assert np.array_equal(nn._relu_impl(x), np.maximum(x, 0))
            scalar, relu = [], []
            for _ in range(5):  # interleaved
                scalar += _median_us(lambda: np.maximum(x, 0), 1)
                relu += _median_us(lambda: nn._relu_impl(x), 1)
            a, b = statistics.median(scalar), statistics.median(relu)
            print(f"| {label} {list(shape)} | {np.dtype(dtype).name} | {a:.2f} | {b:.2f} "
                  f"| {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
