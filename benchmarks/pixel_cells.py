"""Few-channel NHWC work with and without the layouts that give NumPy long inner loops:
max-pool offsets copied whole pixels at a time (NOTE(pixel-cells) in ops/windows.py),
avg_pool2d's transpose spread over windows that tile the image, bias gradients that join summed axes to their few columns (NOTE(sum-by-products) in
blas.py), bias adds tiled to rows of up to 8,192 elements (graph/specialize.py), and
convolution windows copied a window row at a time (windows.copy_runs).

Each row times one computation both ways in this process (one thread, medians of
interleaved rounds): "before" with the switch turned off (windows.PIXELS_FROM past any
size; no spread_windows; blas._FEW_COLUMNS = 1; specialize._ROW_WIDTH = 1024, its
earlier value; windows.RUNS_FROM past any size), "after"
as shipped. Both give the same values: bit for bit for pooling and the bias add, within
summation's rounding for the sums (checked here). The shapes: LeNet's first and second
layers at batch 128, batch 1 (where the copies must not cost), batch 640, one channel, and
a wide 64-channel layer. Figures for docs/performance-notes.md, #pixel-cells,
#window-sums, #sum-by-gemv, #tiled-broadcast and #window-runs.

Run:  python benchmarks/pixel_cells.py  [--convs: the convolutions alone]
"""

from __future__ import annotations

import os
import statistics
import sys
import timeit
from typing import Any, Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import tapeflow  # noqa: F401
except ImportError:  # a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
from tapeflow import blas  # noqa: E402
from tapeflow.graph import specialize  # noqa: E402
from tapeflow.ops import conv, pooling, windows  # noqa: E402
from tapeflow.ops.structural import _sum_impl  # noqa: E402

POOLS = [(128, 24, 24, 6), (1, 24, 24, 6), (640, 24, 24, 6), (128, 8, 8, 16),
         (640, 28, 28, 1), (16, 32, 32, 64)]
SUMS = [(128, 24, 24, 6), (640, 14, 14, 8), (640, 28, 28, 2), (64, 24, 24, 3),
        (16, 8, 8, 6), (128, 8, 8, 16)]


def _us(fn: Callable[[], Any]) -> float:
    number = max(1, int(0.02 / max(1e-7, min(timeit.repeat(fn, number=1, repeat=3)))))
    return min(timeit.repeat(fn, number=number, repeat=3)) / number * 1e6


def _pair(before: Callable[[], Any], after: Callable[[], Any],
          switch: Callable[[bool], None]) -> tuple[float, float]:
    """Medians of 5 interleaved rounds, `switch(False)` around the "before" calls."""
    a, b = [], []
    for _ in range(5):
        switch(False)
        a.append(_us(before))
        switch(True)
        b.append(_us(after))
    return statistics.median(a), statistics.median(b)


def _pixels(on: bool) -> None:
    windows.PIXELS_FROM = PIXELS_FROM if on else 1 << 62


def _columns(on: bool) -> None:
    blas._FEW_COLUMNS = FEW_COLUMNS if on else 1


PIXELS_FROM, FEW_COLUMNS = windows.PIXELS_FROM, blas._FEW_COLUMNS


def pools(rng: np.random.Generator) -> None:
    print("| image, 2x2 max pool, float32 | argmax before / after us | route before / after us "
          "| pick before / after us |")
    print("|---|---:|---:|---:|")
    k, p = (2, 2), ((0, 0), (0, 0))
    for shape in POOLS:
        x = rng.standard_normal(shape).astype(np.float32)
        top, arg = pooling._max_and_argmax(x, k, k, p)
        g = rng.standard_normal(top.shape).astype(np.float32)
        cells = []
        for fn in (lambda: pooling._max_and_argmax(x, k, k, p),
                   lambda: pooling._route_impl(arg, g, k, k, p, shape[1:3]),
                   lambda: pooling._pick_impl(arg, x, k, k, p)):
            _pixels(False)
            want = fn()
            _pixels(True)
            got = fn()
            for u, v in zip(*((r if isinstance(r, tuple) else (r,)) for r in (want, got))):
                assert np.array_equal(u, v)
            a, b = _pair(fn, fn, _pixels)
            cells.append(f"{a:.0f} / {b:.0f} ({b / a:.2f})")
        print(f"| {list(shape)} | " + " | ".join(cells) + " |", flush=True)


def spreads(rng: np.random.Generator) -> None:
    print("\n| avg_pool2d's transpose, 2x2 windows, float32 | two phases us | spread us "
          "| ratio |")
    print("|---|---:|---:|---:|")
    k, p = (2, 2), ((0, 0), (0, 0))
    spread = pooling.spread_windows
    for shape in POOLS:
        g = rng.standard_normal((shape[0], shape[1] // 2, shape[2] // 2, shape[3])).astype(
            np.float32)

        def switch(on: bool) -> None:
            pooling.spread_windows = spread if on else (lambda *a: None)

        fn = lambda: pooling._window_sum_transpose_impl(g, k, k, p, shape)  # noqa: E731
        switch(False)
        want = fn()
        switch(True)
        assert np.array_equal(fn(), want)
        a, b = _pair(fn, fn, switch)
        print(f"| {list(shape)} | {a:.0f} | {b:.0f} | {b / a:.2f} |", flush=True)


def sums(rng: np.random.Generator) -> None:
    print("\n| bias gradient, sum over [N, H, W], float32 | before us | after us | ratio |")
    print("|---|---:|---:|---:|")
    for shape in SUMS:
        x = rng.standard_normal(shape).astype(np.float32)
        exact = np.sum(x.astype(np.float64), axis=(0, 1, 2))
        np.testing.assert_allclose(_sum_impl(x, (0, 1, 2), False), exact, rtol=1e-3, atol=1e-2)
        a, b = _pair(lambda: _sum_impl(x, (0, 1, 2), False),
                     lambda: _sum_impl(x, (0, 1, 2), False), _columns)
        print(f"| {list(shape)} | {a:.1f} | {b:.1f} | {b / a:.2f} |", flush=True)


def bias_adds(rng: np.random.Generator) -> None:
    print("\n| bias add [N, H, W, C] + [C] | dtype | NumPy us | rows of 1,024 us "
          "| rows of 8,192 us |")
    print("|---|---|---:|---:|---:|")
    for shape in [(128, 24, 24, 6), (640, 14, 14, 8), (128, 8, 8, 16), (4096, 10),
                  (3000, 7)]:
        for dtype in (np.float32, np.float64):
            x = rng.standard_normal(shape).astype(dtype)
            b = rng.standard_normal(shape[-1:]).astype(dtype)
            width = specialize._ROW_WIDTH
            specialize._ROW_WIDTH = 1024
            old = specialize.tiled_broadcast(np.add, x.shape, b.shape) or np.add
            specialize._ROW_WIDTH = width
            new = specialize.tiled_broadcast(np.add, x.shape, b.shape) or np.add
            assert np.array_equal(old(x, b), np.add(x, b))
            assert np.array_equal(new(x, b), np.add(x, b))
            plain, a, b_ = (statistics.median(_us(f) for _ in range(5))
                            for f in (lambda: np.add(x, b), lambda: old(x, b),
                                      lambda: new(x, b)))
            print(f"| {list(shape)} | {np.dtype(dtype).name} | {plain:.1f} | {a:.1f} "
                  f"| {b_:.1f} |", flush=True)


def _runs(on: bool) -> None:
    windows.RUNS_FROM = RUNS_FROM if on else 1 << 62


RUNS_FROM = windows.RUNS_FROM
# (batch, height, width, channels, kernel, filters, stride, padding)
CONVS = [(128, 28, 28, 1, 5, 6, 1, "VALID"), (128, 12, 12, 6, 5, 16, 1, "VALID"),
         (1, 28, 28, 1, 5, 6, 1, "VALID"), (640, 28, 28, 1, 5, 6, 1, "VALID"),
         (64, 28, 28, 3, 3, 16, 1, "SAME"), (64, 28, 28, 1, 3, 8, 2, "SAME"),
         (64, 14, 14, 8, 3, 16, 2, "SAME"), (32, 32, 32, 16, 3, 32, 1, "SAME"),
         (16, 32, 32, 64, 3, 64, 1, "SAME"), (33, 19, 17, 5, 3, 7, 1, "VALID")]


def conv_runs(rng: np.random.Generator) -> None:
    print("\n| conv2d, float32 | forward before / after us | input grad before / after us "
          "| filter grad before / after us |")
    print("|---|---:|---:|---:|")
    for n, h, w, c, k, o, s, padding in CONVS:
        x = rng.standard_normal((n, h, w, c)).astype(np.float32)
        f = rng.standard_normal((k, k, c, o)).astype(np.float32)
        strides, dil = (s, s), (1, 1)
        pads = windows.pads_for(padding, (h, w), (k, k), strides, dil, "conv2d")
        g = rng.standard_normal(conv._conv_impl(x, f, strides, dil, pads).shape).astype(
            np.float32)
        cells = []
        for fn in (lambda: conv._conv_impl(x, f, strides, dil, pads),
                   lambda: conv._input_grad_impl(g, f, strides, dil, pads, x.shape),
                   lambda: conv._filter_grad_impl(x, g, strides, dil, pads, f.shape)):
            _runs(False)
            want = fn()
            _runs(True)
            assert np.array_equal(fn(), want)
            a, b = _pair(fn, fn, _runs)
            cells.append(f"{a:.0f} / {b:.0f} ({b / a:.2f})")
        print(f"| {[n, h, w, c]} {k}x{k}x{o}/{s} {padding} | " + " | ".join(cells) + " |",
              flush=True)


def main() -> None:
    rng = np.random.default_rng(0)
    if sys.argv[1:] == ["--convs"]:
        conv_runs(rng)
        return
    pools(rng)
    spreads(rng)
    sums(rng)
    bias_adds(rng)
    conv_runs(rng)


if __name__ == "__main__":
    main()
