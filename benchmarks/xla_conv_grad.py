"""The conv input gradient's two XLA lowerings beside JAX's own, at users' shapes.

tapeflow lowers a convolution's input gradient (ops/conv.py, NOTE(conv-input-grad))
either as one product per kernel offset spread onto the padded image, or as the
transposed convolution (the conv's VJP in x). This times both, compiled alone, beside
`jax.vjp` of `lax.conv_general_dilated` (JAX's own lowering) at the shapes
docs/performance-notes.md quotes (#conv-input-grad): the seed CNN's two layers, LeNet's 5x5 layer, few- and many-channel images and
a dilated one. The cases of a shape run interleaved, in a new order each round; each
result is checked against JAX's first. The figures behind the channel threshold
(`_TRANSPOSED_MIN_CHANNELS`) come from this script.

One thread per library, as the suite (benchmarks/run.py): xla_setup.py, imported first.

Run: python benchmarks/xla_conv_grad.py [--quick]   (needs JAX: the xla extra)
"""

from __future__ import annotations

import xla_setup  # noqa: F401 - first: threads, XLA flags, src/ on the path

import argparse
import random
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np

import jax
import jax.numpy as jnp

from tapeflow.ops import conv

# (batch, image side, channels, filters, kernel, stride, dilation, pads)
SHAPES = [
    (640, 28, 1, 8, 3, 2, 1, ((0, 1), (0, 1))),      # the seed CNN's first layer
    (640, 14, 8, 16, 3, 2, 1, ((0, 1), (0, 1))),     # its second
    (128, 12, 6, 16, 5, 1, 1, ((2, 2), (2, 2))),     # LeNet's 5x5 layer
    (128, 32, 3, 16, 3, 1, 1, ((1, 1), (1, 1))),     # an RGB image
    (64, 32, 32, 32, 3, 1, 1, ((1, 1), (1, 1))),     # many channels
    (128, 32, 16, 16, 3, 1, 2, ((2, 2), (2, 2))),    # dilated
]


def _cases(n: int, h: int, c: int, o: int, k: int, s: int, d: int,
           pads: tuple) -> tuple[dict[str, Callable[[], Any]], tuple]:
    rng = np.random.default_rng(0)
    oh = (h + sum(pads[0]) - (k - 1) * d - 1) // s + 1
    g = jnp.asarray(rng.standard_normal((n, oh, oh, o)).astype(np.float32))
    w = jnp.asarray(rng.standard_normal((k, k, c, o)).astype(np.float32))
    strides, dilations = (s, s), (d, d)

    def jax_own(g: Any, w: Any) -> Any:
        x0 = jnp.zeros((n, h, h, c), g.dtype)
        _, vjp = jax.vjp(lambda x: conv._xla_conv(jax, x, w, strides, dilations, pads), x0)
        return vjp(g)[0]

    fns = {"JAX's own (jax.vjp)": jax.jit(jax_own),
           "transposed convolution": jax.jit(lambda g, w: conv._input_grad_transposed(
               jax, g, w, strides, dilations, pads, h, h))}
    if d == 1:  # the per-offset products are for undilated convolutions
        fns["per-offset products"] = jax.jit(lambda g, w: conv._input_grad_offsets(
            jax, g, w, strides, pads, h, h))
    want = np.asarray(fns["JAX's own (jax.vjp)"](g, w))
    for name, fn in fns.items():
        np.testing.assert_allclose(np.asarray(fn(g, w)), want, rtol=1e-3, atol=1e-3,
                                   err_msg=name)
    return {name: (lambda fn=fn: jax.block_until_ready(fn(g, w))) for name, fn in fns.items()}, \
        (n, h, c, o, k, s, d)


def _time(cases: dict[str, Callable[[], Any]], rounds: int) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {name: [] for name in cases}
    order = random.Random(0)
    for _ in range(rounds):
        for name in order.sample(list(cases), len(cases)):
            start = time.perf_counter()
            for _ in range(3):
                cases[name]()
            samples[name].append((time.perf_counter() - start) / 3)
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="3 rounds instead of 10")
    args = parser.parse_args(argv)
    rounds = 3 if args.quick else 10
    picked = conv._TRANSPOSED_MIN_CHANNELS
    print(f"JAX {jax.__version__}; tapeflow picks the transposed convolution from "
          f"{picked} channels (or when strided or dilated)\n")
    print("| shape [n, h, w, c], kernel, stride, dilation | lowering | median | min "
          "| x JAX's own |")
    print("|---|---|---:|---:|---:|")
    for shape in SHAPES:
        cases, (n, h, c, o, k, s, d) = _cases(*shape)
        samples = _time(cases, rounds)
        ref = statistics.median(samples["JAX's own (jax.vjp)"])
        label = f"[{n}, {h}, {h}, {c}] -> {o}, {k}x{k}, stride {s}, dilation {d}"
        for name, times in samples.items():
            med = statistics.median(times)
            print(f"| {label} | {name} | {med * 1e3:.2f} ms | {min(times) * 1e3:.2f} ms "
                  f"| {med / ref:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
