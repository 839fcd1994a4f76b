"""Banded convolution products against im2col, per implementation (NOTE(banded-conv)).

For each shape, the three NumPy implementations of ops/conv.py (forward, input gradient,
filter gradient) run twice on the same float32 operands: as they choose (a band where
`band_width` finds one) and with im2col forced; the two alternate round by round, and
the table gives the medians and their ratio. The shapes: LeNet's two layers (the suite's
lenet workload), users' shapes (one channel, batch 640, odd sizes, SAME padding), and a
few where the rule declines the band (ratio 1.00 by construction: the same code runs).

With --sweep: the grid the rule was checked on (batch 32 and 128; square images 8, 11, 12,
16, 23 and 28 wide; 1, 3 and 6 channels; 3x3 and 5x5 kernels; 6, 16 and 32 filters;
VALID), the shapes that take a band, each implementation's ratio and the layer's (the
three together).

Run:  python benchmarks/conv_banded.py [--quick] [--sweep]
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import timeit
from typing import Callable

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    from tapeflow.ops import conv, conv_banded
except ImportError:  # a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    from tapeflow.ops import conv, conv_banded

ONE = (1, 1)
# (label, batch, height, width, channels, kernel, filters, SAME padding)
SHAPES = [
    ("LeNet conv1", 128, 28, 28, 1, 5, 6, False),
    ("LeNet conv2", 128, 12, 12, 6, 5, 16, False),
    ("1 channel, batch 640", 640, 28, 28, 1, 3, 8, True),
    ("batch 1", 1, 28, 28, 1, 5, 6, False),
    ("odd sizes", 7, 13, 11, 3, 3, 5, True),
    ("RGB 32x32, 3x3", 64, 32, 32, 3, 3, 16, True),
    ("RGB 32x32, 5x5", 64, 32, 32, 3, 5, 6, False),
    ("3 channels, 8 wide", 128, 8, 8, 3, 3, 6, False),
    ("declined: 16 channels", 32, 16, 16, 16, 3, 32, True),
    ("a prime width (23 columns)", 64, 27, 27, 1, 5, 6, False),
]


def _pads(k: int, same: bool) -> tuple:
    lo = (k - 1) // 2 if same else 0
    hi = k - 1 - lo if same else 0
    return ((lo, hi), (lo, hi))


def _calls(n: int, h: int, w: int, c: int, k: int, o: int, same: bool) -> dict:
    rng = np.random.default_rng(0)
    pads = _pads(k, same)
    x = rng.standard_normal((n, h, w, c)).astype(np.float32)
    f = rng.standard_normal((k, k, c, o)).astype(np.float32)
    g = rng.standard_normal(conv._conv_impl(x, f, ONE, ONE, pads).shape).astype(np.float32)
    return {
        "forward": lambda: conv._conv_impl(x, f, ONE, ONE, pads),
        "input grad": lambda: conv._input_grad_impl(g, f, ONE, ONE, pads, x.shape),
        "filter grad": lambda: conv._filter_grad_impl(x, g, ONE, ONE, pads, f.shape),
    }, (x, f, g)


def time_per_call(fn: Callable) -> float:
    """Seconds a call of `fn`: the best of 3 loops of about 20 ms (benchmarks/conv_phases.py
    times its products alike)."""
    number = max(1, int(0.02 / max(1e-7, min(timeit.repeat(fn, number=1, repeat=3)))))
    return min(timeit.repeat(fn, number=number, repeat=3)) / number


SWEEP = list(itertools.product([32, 128], [8, 11, 12, 16, 23, 28], [1, 3, 6], [3, 5],
                                [6, 16, 32]))


def _both(fn: Callable, rounds: int) -> tuple[float, float]:
    """Medians of `fn` with im2col forced and as the rule chooses, alternating."""
    chosen = conv_banded.band_width
    times: dict[str, list] = {"im2col": [], "banded": []}
    try:
        for _ in range(rounds):
            conv_banded.band_width = lambda *a, **kw: 0
            times["im2col"].append(time_per_call(fn))
            conv_banded.band_width = chosen
            times["banded"].append(time_per_call(fn))
    finally:
        conv_banded.band_width = chosen
    return statistics.median(times["im2col"]) * 1e3, statistics.median(times["banded"]) * 1e3


def sweep(rounds: int) -> None:
    print("| [N, H, W, C], kernel, filters | Q (forward, input, filter) | forward | input grad "
          "| filter grad | layer |")
    print("|---|---|---:|---:|---:|---:|")
    layers = []
    for n, h, c, k, o in SWEEP:
        ow = h - k + 1
        qs = [conv_banded.band_width(ow, (k, k, c, o), ONE, ONE, (), kind)
              for kind in ("forward", "input grad", "filter grad")]
        if h <= k or not any(qs):
            continue
        calls, _ = _calls(n, h, h, c, k, o, False)
        pairs = [_both(fn, rounds) for fn in calls.values()]
        layer = sum(b for _, b in pairs) / sum(a for a, _ in pairs)
        layers.append(layer)
        print(f"| [{n}, {h}, {h}, {c}], {k}x{k}, {o} | {qs[0]}, {qs[1]}, {qs[2]} | "
              + " | ".join(f"{b / a:.2f}" for a, b in pairs) + f" | {layer:.2f} |", flush=True)
    print(f"\n{len(layers)} of {len(SWEEP)} shapes take a band; layers "
          f"{min(layers):.2f}-{max(layers):.2f}x im2col")


def parse_flags(doc: str) -> tuple[int, bool]:
    """(rounds, whether to sweep) from the command line of a conv benchmark (this one's
    and benchmarks/conv_phases.py's): --quick runs 3 rounds instead of 7."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds")
    parser.add_argument("--sweep", action="store_true", help="the grid the rule was set from")
    flags = parser.parse_args()
    return (3 if flags.quick else 7), flags.sweep


def main() -> None:
    rounds, sweeping = parse_flags(__doc__)
    if sweeping:
        sweep(3)
        return
    chosen = conv_banded.band_width
    print("| shape | [N, H, W, C], kernel, filters | implementation | band Q | im2col ms "
          "| banded ms | banded / im2col |")
    print("|---|---|---|---:|---:|---:|---:|")
    for label, n, h, w, c, k, o, same in SHAPES:
        calls, (x, f, g) = _calls(n, h, w, c, k, o, same)
        for name, fn in calls.items():
            q = chosen(g.shape[2], f.shape, ONE, ONE, (x, f), name)
            want = fn()
            conv_banded.band_width = lambda *a, **kw: 0
            try:
                np.testing.assert_allclose(fn(), want, rtol=1e-3, atol=1e-3 * np.abs(want).max())
            finally:
                conv_banded.band_width = chosen
            a, b = _both(fn, rounds)
            print(f"| {label} | [{n}, {h}, {w}, {c}], {k}x{k}{' SAME' if same else ''}, {o} "
                  f"| {name} | {q or '-'} | {a:.3f} | {b:.3f} | {b / a:.2f} |", flush=True)


if __name__ == "__main__":
    main()
