"""Replay cost: a traced 1,000-op elementwise graph on 16-element arrays against the same
NumPy calls written by hand (the floor), and against tapeflow eager.

The chain alternates sin, multiply, add, tanh, multiply (by a constant) and
exp-free ops so values stay bounded. The target: replay within 1.3x of the
hand-written NumPy code.

Run: python benchmarks/replay.py [--quick] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import timeit
from typing import Any, Callable

import numpy as np

import tapeflow as tf

N_OPS = 1000


def chain_tapeflow(x: Any, y: Any) -> Any:
    for i in range(N_OPS // 5):
        x = tf.sin(x)
        x = x * y
        x = x + y
        x = tf.tanh(x)
        x = x * 0.5
    return x


def chain_numpy(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    half = np.float64(0.5)
    for i in range(N_OPS // 5):
        x = np.sin(x)
        x = np.multiply(x, y)
        x = np.add(x, y)
        x = np.tanh(x)
        x = np.multiply(x, half)
    return x


def unrolled_numpy() -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """The chain as straight-line code (what a person would write without a loop)."""
    lines = ["def f(x, y):"]
    for i in range(N_OPS // 5):
        lines += ["    x = sin(x)", "    x = multiply(x, y)", "    x = add(x, y)",
                  "    x = tanh(x)", "    x = multiply(x, half)"]
    lines.append("    return x")
    ns = {"sin": np.sin, "multiply": np.multiply, "add": np.add, "tanh": np.tanh,
          "half": np.float64(0.5)}
    exec("\n".join(lines), ns)  # noqa: S102
    return ns["f"]


def best(fn: Callable[[], Any], number: int, repeat: int) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    opts = parser.parse_args(argv)
    number, repeat = (20, 3) if opts.quick else (200, 7)
    rng = np.random.default_rng(0)
    xa, ya = rng.standard_normal(16), rng.standard_normal(16)
    xt, yt = tf.constant(xa), tf.constant(ya)
    traced = tf.function(chain_tapeflow)
    traced(xt, yt)
    straight = unrolled_numpy()
    want = chain_numpy(xa, ya)
    for name, got in (("replay", traced(xt, yt)), ("eager", chain_tapeflow(xt, yt)),
                      ("unrolled", straight(xa, ya))):
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, err_msg=name)
    cf = traced.get_concrete_function(xt, yt)
    results = {
        "numpy by hand (loop)": best(lambda: chain_numpy(xa, ya), number, repeat),
        "numpy by hand (straight-line)": best(lambda: straight(xa, ya), number, repeat),
        "tapeflow function replay": best(lambda: traced(xt, yt), number, repeat),
        "tapeflow eager": best(lambda: chain_tapeflow(xt, yt), max(1, number // 4), repeat),
    }
    floor = results["numpy by hand (straight-line)"]
    print(f"{N_OPS}-op elementwise chain on 16-element float64 arrays "
          f"(graph: {cf.pass_stats['after']} nodes)")
    print(f"  {'case':34s} {'us/call':>10s} {'x NumPy':>8s}")
    for name, t in results.items():
        print(f"  {name:34s} {t * 1e6:10.1f} {t / floor:8.2f}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
