"""What a compiled call costs around its program: tapeflow's lean call beside JAX's jit.

NOTE(lean-call) in tapeflow/graph/xla.py: the Python run around a compiled program runs
cold, so each step of a call costs several times its warm time. This times calls of the
same small programs as `tf.function(..., jit_compile=True)` and as `jax.jit`, the result
read as NumPy on both sides (`np.asarray`), interleaved call by call in a new order each
round, and reports each side's median, the difference in microseconds and the ratio.
The signatures are users' ones, not only the suite's: one float64[16] tensor, a
float32[640, 1] batch of one input channel, an odd-sized float32[37, 5] one, a list of 8
tensors with 4 captured variables (the shape of an HVP's call), and the suite's 2,000-op
chain. Two more time what a call costs beyond its sin: a float power (no check to read
back: Primitive.lower_check_needed) and a dropout mask (NOTE(host-draws): tapeflow draws
on the host with NumPy, JAX with jax.random from a per-call seed). Every result is checked
against JAX's first (a dropout's against its input: every value 0 or twice it).

One thread per library, as the suite (benchmarks/run.py): xla_setup.py, imported first.

Run: python benchmarks/xla_call_overhead.py [--quick]   (needs JAX: the xla extra)
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

import tapeflow as tf

import dispatch  # noqa: E402 - benchmarks/ is on the path (this script's directory)

jax.config.update("jax_enable_x64", True)  # as the suite: float64 programs stay float64


def _problems(chain_ops: int) -> dict[str, tuple[Callable[[], Any], Callable[[], Any]]]:
    """name -> (tapeflow's call, JAX's call), each returning a NumPy array."""
    rng = np.random.default_rng(0)
    out = {}

    def one(name: str, api_fn: Callable, jax_fn: Callable, x: np.ndarray) -> None:
        f, g = tf.function(lambda t: api_fn(tf, t), jit_compile=True), jax.jit(
            lambda t: jax_fn(jnp, t))
        xt, xj = tf.constant(x), jnp.asarray(x)
        out[name] = (lambda: np.asarray(f(xt)), lambda: np.asarray(g(xj)))

    one("one op, float64[16]", lambda m, t: m.sin(t), lambda m, t: m.sin(t),
        rng.standard_normal(16))
    one("one op, float32[640, 1]", lambda m, t: m.sin(t), lambda m, t: m.sin(t),
        rng.standard_normal((640, 1)).astype(np.float32))
    one("one op, float32[37, 5]", lambda m, t: m.sin(t), lambda m, t: m.sin(t),
        rng.standard_normal((37, 5)).astype(np.float32))
    one(f"{chain_ops}-op chain, float64[16]", lambda m, t: dispatch.chain(m.sin, t, chain_ops),
        lambda m, t: dispatch.chain(m.sin, t, chain_ops), rng.standard_normal(16))

    xs = [rng.standard_normal(8).astype(np.float32) for _ in range(8)]
    ws = [rng.standard_normal(8).astype(np.float32) for _ in range(4)]
    variables = [tf.Variable(w) for w in ws]

    def tf_sum(ts: list) -> Any:
        total = ts[0] * variables[0]
        for i, t in enumerate(ts[1:], 1):
            total = total + t * variables[i % 4]
        return total

    def jax_sum(ts: list) -> Any:
        total = ts[0] * ws[0]
        for i, t in enumerate(ts[1:], 1):
            total = total + t * ws[i % 4]
        return total

    f, g = tf.function(tf_sum, jit_compile=True), jax.jit(jax_sum)
    xts, xjs = [tf.constant(x) for x in xs], [jnp.asarray(x) for x in xs]
    out["list of 8 tensors, 4 variables"] = (lambda: np.asarray(f(xts)),
                                             lambda: np.asarray(g(xjs)))
    one("float power, float32[37, 5]", lambda m, t: t ** 1.5,
        lambda m, t: t ** 1.5, rng.uniform(0.5, 2.0, (37, 5)).astype(np.float32))
    for shape in ((128, 256), (640, 1), (1024, 1024)):
        x = rng.uniform(0.5, 2.0, shape).astype(np.float32)
        drop = tf.function(lambda t: t * tf.cast(tf.random.uniform(t.shape) > 0.5, t.dtype) * 2.0,
                           jit_compile=True)
        jax_drop = jax.jit(lambda seed, t: t * (jax.random.uniform(jax.random.key(seed), t.shape)
                                                > 0.5).astype(t.dtype) * 2.0)
        seeds = iter(range(2 ** 31 - 1))
        xt, xj = tf.constant(x), jnp.asarray(x)
        out[f"dropout mask, float32{list(shape)}"] = (
            lambda drop=drop, xt=xt: np.asarray(drop(xt)),
            lambda jax_drop=jax_drop, xj=xj: np.asarray(jax_drop(np.uint32(next(seeds)), xj)),
            lambda y, x=x: bool(np.all((y == 0) | (y == 2 * x))))
    return out


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="few calls, a short chain (CI)")
    opts = parser.parse_args(argv)
    calls = 200 if opts.quick else 5000
    order = random.Random(0)
    print("| program | tapeflow jit_compile=True | JAX jit | difference | ratio |")
    print("|---|---:|---:|---:|---:|")
    for name, (ours, theirs, *check) in _problems(100 if opts.quick else 2000).items():
        for _ in range(3):  # traced, compiled, and the lean call made
            ours()
        if check:  # random numbers: each side's against its input
            assert check[0](ours()) and check[0](theirs()), name
        else:
            np.testing.assert_allclose(ours(), theirs(), rtol=1e-5, err_msg=name)
        times: dict[int, list] = {0: [], 1: []}
        sides = [(0, ours), (1, theirs)]
        for _ in range(calls):
            order.shuffle(sides)
            for side, run in sides:
                start = time.perf_counter()
                run()
                times[side].append(time.perf_counter() - start)
        a, b = statistics.median(times[0]), statistics.median(times[1])
        print(f"| {name} | {a * 1e6:.1f} us | {b * 1e6:.1f} us | {(a - b) * 1e6:+.1f} us "
              f"| {a / b:.2f}x |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
