"""Strided input gradients over output phases against im2col's scatter (NOTE(phase-conv)).

For each shape, conv's input gradient (ops/conv.py, the VJP of a strided conv2d, and
conv2d_transpose) runs on the same float32 operands over the phases and with im2col's
scatter forced; the two alternate round by round, and the table gives the medians and
their ratio. The shapes: the seed problem's two layers at its batch of 640 cotangents
(benchmarks/cnn.py), decoders' transposed convolutions, users' odd sizes, and shapes the
rule declines (there the phases are forced, to show what declining saves).

With --sweep: the grid the rule was checked on (batch 1 and 64 with square images 7, 14
and 28 wide, batch 640 with 14 wide; 1, 3, 8, 32 and 64 channels; 8, 32 and 128
filters; kernels and strides 3/2, 2/2, 4/2, 5/2 and 3/3; SAME), each shape's ratio,
then the ratios' range over the shapes the rule takes and over those it declines.

Run:  python benchmarks/conv_phases.py [--quick] [--sweep]
"""

from __future__ import annotations

import itertools
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from conv_banded import parse_flags, time_per_call  # noqa: E402 - it finds tapeflow too

import numpy as np  # noqa: E402

from tapeflow.ops import conv, conv_phases, windows  # noqa: E402

ONE = (1, 1)
# (label, batch, height, width, channels, kernel, filters, stride): the image is the
# gradient's result, [batch, height, width, channels]; SAME padding throughout
SHAPES = [
    ("seed layer 2 (640 cotangents)", 640, 14, 14, 8, 3, 16, 2),
    ("seed layer 1: one channel, declined", 640, 28, 28, 1, 3, 8, 2),
    ("batch 1", 1, 14, 14, 8, 3, 16, 2),
    ("decoder 4x4, stride 2", 64, 28, 28, 16, 4, 32, 2),
    ("RGB out, 5x5, stride 2", 32, 32, 32, 3, 5, 16, 2),
    ("odd sizes, 3x3 at stride 3", 7, 13, 11, 3, 3, 5, 3),
    ("64 channels, 8 filters", 64, 14, 14, 64, 4, 8, 2),
    ("declined: 64 filters with zero taps", 64, 14, 14, 8, 3, 64, 2),
    ("declined: 64 channels", 64, 14, 14, 64, 3, 32, 2),
]


def _operands(n: int, h: int, w: int, c: int, k: int, o: int, s: int) -> tuple:
    rng = np.random.default_rng(0)
    pads = windows.pads_for("SAME", (h, w), (k, k), (s, s), ONE, "bench")
    oh, ow = windows.out_hw((n, h, w, c), (k, k), (s, s), pads)
    g = rng.standard_normal((n, oh, ow, o)).astype(np.float32)
    f = rng.standard_normal((k, k, c, o)).astype(np.float32)
    return g, f, pads


def _both(shape: tuple, rounds: int, check: bool = False) -> tuple[float, float]:
    """Medians (ms) of the input gradient of `shape` with im2col's scatter forced and over
    the phases (forced too, where the rule declines them), alternating."""
    n, h, w, c, k, o, s = shape
    g, f, pads = _operands(*shape)
    im2col = lambda: conv._input_grad_impl(g, f, (s, s), ONE, pads, (n, h, w, c))  # noqa: E731
    phases = lambda: conv_phases.input_grad(g, f, (s, s), pads, (n, h, w, c), g.dtype)  # noqa: E731
    chosen = conv_phases.phase_split
    times: dict[str, list] = {"im2col": [], "phases": []}
    conv_phases.phase_split = lambda *a: False
    try:
        if check:
            want = im2col()
            np.testing.assert_allclose(phases(), want, rtol=1e-3,
                                       atol=1e-3 * np.abs(want).max())
        for _ in range(rounds):
            times["im2col"].append(time_per_call(im2col))
            times["phases"].append(time_per_call(phases))
    finally:
        conv_phases.phase_split = chosen
    return statistics.median(times["im2col"]) * 1e3, statistics.median(times["phases"]) * 1e3


def _taken(c: int, k: int, o: int, s: int) -> bool:
    return conv_phases.phase_split((k, k, c, o), (s, s), ONE, ())


# batch 640 (the seed's cotangents) at one image size, to keep the sweep near 20 minutes
SWEEP = [shape for shape in itertools.product(
    [1, 64, 640], [7, 14, 28], [1, 3, 8, 32, 64], [8, 32, 128],
    [(3, 2), (2, 2), (4, 2), (5, 2), (3, 3)])
    if shape[0] < 640 or shape[1] == 14]


def sweep(rounds: int) -> None:
    print("| [N, H, W, C], kernel / stride, filters | taken | im2col ms | phases ms | ratio |")
    print("|---|---|---:|---:|---:|")
    ratios: dict[bool, list] = {True: [], False: []}
    for n, hw, c, o, (k, s) in SWEEP:
        a, b = _both((n, hw, hw, c, k, o, s), rounds)
        taken = _taken(c, k, o, s)
        ratios[taken].append(b / a)
        print(f"| [{n}, {hw}, {hw}, {c}], {k}x{k} / {s}, {o} | {'yes' if taken else 'no'} "
              f"| {a:.3f} | {b:.3f} | {b / a:.2f} |", flush=True)
    for taken, rs in ratios.items():
        if rs:
            print(f"\n{'taken' if taken else 'declined'}: {len(rs)} shapes, phases / im2col "
                  f"{min(rs):.2f}-{max(rs):.2f} (median {statistics.median(rs):.2f})")


def main() -> None:
    rounds, sweeping = parse_flags(__doc__)
    if sweeping:
        sweep(3)
        return
    print("| shape | [N, H, W, C], kernel / stride, filters | taken | im2col ms | phases ms "
          "| phases / im2col |")
    print("|---|---|---|---:|---:|---:|")
    for label, n, h, w, c, k, o, s in SHAPES:
        a, b = _both((n, h, w, c, k, o, s), rounds, check=True)
        print(f"| {label} | [{n}, {h}, {w}, {c}], {k}x{k} / {s}, {o} "
              f"| {'yes' if _taken(c, k, o, s) else 'no'} | {a:.3f} | {b:.3f} | {b / a:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
