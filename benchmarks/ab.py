"""Same-process A/B of tapeflow's per-op costs: this checkout against another revision.

Run from the repository root::

    python benchmarks/ab.py                 # against HEAD~1, about a minute
    python benchmarks/ab.py --base main --quick

The baseline revision's `src/tapeflow` is extracted with `git archive` into a
temporary directory as the package `tapeflow_base` (tapeflow imports itself only
relatively, so both copies load side by side), and every case runs on both in
turn, repeat after repeat, in this one process: drift of a shared machine then hits
both sides alike. Reported: the median over repeats of the best time per op, and
the ratio new/base (below 1 is faster). The cases are the dispatch benchmark's
(one op with no recorder, with a tape, under an accumulator; a 1,000-op chain's
forward, gradient and JVP) and the replay benchmark's (a traced 2,000-op graph).
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tarfile
import tempfile
import timeit
from typing import Any, Callable

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "src"))

N = 16


def load_base(rev: str) -> Any:
    """The package at git revision `rev`, imported as `tapeflow_base`."""
    data = subprocess.run(["git", "-C", ROOT, "archive", "--format=tar", rev, "src/tapeflow"],
                          check=True, capture_output=True).stdout
    where = tempfile.mkdtemp(prefix="tapeflow_ab_")
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(where, filter="data")
    os.rename(os.path.join(where, "src", "tapeflow"), os.path.join(where, "tapeflow_base"))
    sys.path.insert(0, where)
    import tapeflow_base
    return tapeflow_base


def cases(tf: Any) -> dict[str, tuple[Callable[[], Any], int]]:
    """name -> (a call, how many ops it runs)."""
    x, y = np.linspace(0.1, 1.6, N), np.linspace(1.0, 2.0, N)
    t, u, tangent = tf.constant(x), tf.constant(y), tf.constant(np.ones(N))
    u2 = tf.constant(np.linspace(1.0, 2.0, N // 4))

    def chain(v: Any) -> Any:
        for i in range(1000):
            v = tf.sin(v) if i % 2 == 0 else v * 1.0001
        return v

    def chain_grad() -> Any:
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            total = tf.reduce_sum(chain(xt))
        return tape.gradient(total, xt)

    def chain_jvp() -> Any:
        xt = tf.constant(x)
        with tf.autodiff.ForwardAccumulator(xt, tangent) as acc:
            total = tf.reduce_sum(chain(xt))
        return acc.jvp(total)

    def mean_grad() -> Any:
        with tf.GradientTape() as tape:
            tape.watch(t)
            total = tf.reduce_mean(tf.reshape(t, (4, -1)) * u2)
        return tape.gradient(total, t)

    def taped() -> None:
        with tf.GradientTape() as tape:
            tape.watch(t)
            for _ in range(100):
                tf.sin(t)
                t * u

    def accumulated() -> None:
        with tf.autodiff.ForwardAccumulator(t, tangent):
            for _ in range(100):
                tf.sin(t)
                t * u

    def body(a: Any, b: Any) -> Any:
        for _ in range(500):
            a = tf.sin(a) * b
            a = tf.tanh(a) + b
        return a

    traced = tf.function(body)
    traced(t, u)
    return {
        "tf.sin(t)": (lambda: tf.sin(t), 1),
        "tf.multiply(t, u)": (lambda: tf.multiply(t, u), 1),
        "t * u": (lambda: t * u, 1),
        "t * 2.0": (lambda: t * 2.0, 1),
        "tf.zeros_like(t)": (lambda: tf.zeros_like(t), 1),
        "tf.shape(t)": (lambda: tf.shape(t), 1),
        "tf.reduce_mean(t)": (lambda: tf.reduce_mean(t), 1),
        "mean, reshape: gradient": (mean_grad, 1),
        "sin, * under a tape": (taped, 200),
        "sin, * under an accumulator": (accumulated, 200),
        "1,000-op chain, forward": (lambda: chain(t), 1000),
        "1,000-op chain, gradient": (chain_grad, 1000),
        "1,000-op chain, JVP": (chain_jvp, 1000),
        "replay of a 2,000-op graph": (lambda: traced(t, u), 2000),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--base", default="HEAD~1", help="git revision to compare against")
    parser.add_argument("--quick", action="store_true", help="fewer repeats")
    args = parser.parse_args(argv)
    import tapeflow
    base = load_base(args.base)
    new_cases, base_cases = cases(tapeflow), cases(base)
    repeats = 3 if args.quick else 9
    times: dict[str, tuple[list, list]] = {k: ([], []) for k in new_cases}
    for _ in range(repeats):
        for name in new_cases:
            for side, table in ((0, base_cases), (1, new_cases)):
                fn, ops = table[name]
                number = max(1, 20000 // ops)
                best = min(timeit.repeat(fn, number=number, repeat=3)) / number / ops
                times[name][side].append(best)
    print(f"base {args.base} vs this checkout; {repeats} repeats, {N}-element float64 arrays")
    print(f"{'case':32s} {'base us/op':>11s} {'new us/op':>11s} {'new/base':>9s}")
    for name, (b, n) in times.items():
        mb, mn = np.median(b) * 1e6, np.median(n) * 1e6
        print(f"{name:32s} {mb:11.3f} {mn:11.3f} {mn / mb:9.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
