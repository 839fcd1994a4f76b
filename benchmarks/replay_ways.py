"""The NumPy replay's ways, timed on one graph each: as traced, its small values held as
scalars (NOTE(scalarize) in tapeflow/graph/scalarize.py), its loops rolled
(NOTE(reroll)), and rolled with the work that reads no carry out of the loops
(NOTE(hoist) in tapeflow/graph/hoist.py: what the replay runs for rolled loops) and, with
Numba installed, those loops compiled (NOTE(loop-kernels) in tapeflow/graph/kernels.py:
one of jit_compile="auto"'s ways). Figures for docs/performance-notes.md, #scalarize,
#rolled-replay, #hoist and #loop-kernels; "compile s" includes Numba's compile.

`Fastest` (graph/executables.py) makes this choice at run time for each graph; this
script shows the figures behind it. Every way's generated code is made first, then the
ways are called in turn, `--repeats` rounds of `--number` calls each; reported: the
fastest round per call, and each way against the graph as traced. The graphs:

- rk4: the suite's RK4 gradient (200 steps of a 2-element state, float64): scalar code;
- rnn: 50 steps of h = tanh(h W + x_t U), hidden 32, batch 16 (float32): a loop on
  arrays, where rolling may pay and scalars do not apply;
- chain3: a 200-op sin/multiply chain's gradient on 3 elements (float64);
- chain100k: the same on 100,000 elements;
- char_lstm: the suite's character-level LSTM gradient (2 layers, 256 characters, codes
  of 14, float64): tens of thousands of ops on 14 elements;
- lstm, lstm_foldl: the suite's LSTM gradient (input 32, hidden 64, 50 steps, batch 16,
  float32), as a Python loop and over tf.foldl (a scan the user wrote).

Run: python benchmarks/replay_ways.py [--repeats N] [--number N] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any, Callable

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tapeflow as tf  # noqa: E402
from tapeflow.graph.hoist import hoist  # noqa: E402
from tapeflow.graph.kernels import loop_kernels  # noqa: E402
from tapeflow.graph.replay import Replay  # noqa: E402
from tapeflow.graph.reroll import reroll  # noqa: E402
from tapeflow.graph.scalarize import replay_cost, scalarize  # noqa: E402


def _rk4() -> tuple[Callable, tuple]:
    from suite import rk4

    loss = rk4.tf_api_loss(tf, 200)

    def gradient(y0: Any, p: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([y0, p])
            value = loss(y0, p)
        return tape.gradient(value, [y0, p])

    return gradient, tuple(tf.constant(a) for a in rk4.problem())


def _rnn() -> tuple[Callable, tuple]:
    rng = np.random.default_rng(0)
    w = tf.constant(rng.standard_normal((32, 32)).astype(np.float32) * 0.2)
    u = tf.constant(rng.standard_normal((8, 32)).astype(np.float32) * 0.2)
    xs = tf.constant(rng.standard_normal((50, 16, 8)).astype(np.float32))

    def gradient(w: Any, u: Any, xs: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([w, u])
            h = tf.zeros([16, 32])
            for t in range(50):
                h = tf.tanh(tf.matmul(h, w) + tf.matmul(xs[t], u))
            loss = tf.reduce_sum(h * h)
        return tape.gradient(loss, [w, u])

    return gradient, (w, u, xs)


def _chain(n: int) -> tuple[Callable, tuple]:
    def gradient(x: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = x
            for _ in range(100):
                y = tf.sin(y) * 1.0001
            total = tf.reduce_sum(y)
        return tape.gradient(total, x)

    return gradient, (tf.constant(np.linspace(-1.0, 1.0, n)),)


def _gradient_of_two(loss: Callable[..., Any]) -> Callable[..., Any]:
    """The gradient of ``loss(a, b, *data)`` with respect to a and b."""
    def gradient(a: Any, b: Any, *data: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            value = loss(a, b, *data)
        return tape.gradient(value, [a, b])

    return gradient


def _char_lstm() -> tuple[Callable, tuple]:
    from suite import char_lstm

    loss = char_lstm.loss_of(char_lstm._Ops(sigmoid=tf.sigmoid, tanh=tf.tanh, exp=tf.exp,
                                            log=tf.math.log, sum=tf.reduce_sum,
                                            rows=tf.unstack))

    data = char_lstm.problem(char_lstm.SHAPES["full"])
    return _gradient_of_two(loss), tuple(tf.constant(a) for a in data)


def _lstm(scan: bool) -> tuple[Callable, tuple]:
    from suite import lstm

    loss = lstm.tf_api_scan_loss(tf) if scan else lstm.tf_api_loss(tf)

    data = lstm.problem(lstm.SHAPES["full"])
    return _gradient_of_two(loss), tuple(tf.constant(a) for a in data)


KERNELS = "loops rolled, work hoisted, compiled by Numba"

GRAPHS = {"rk4": _rk4, "rnn": _rnn, "chain3": lambda: _chain(3),
          "chain100k": lambda: _chain(100_000), "char_lstm": _char_lstm,
          "lstm": lambda: _lstm(False), "lstm_foldl": lambda: _lstm(True)}


def measure(name: str, repeats: int, number: int) -> dict:
    fn, args = GRAPHS[name]()
    g = tf.function(fn).get_concrete_function(*args).graph
    arrays = [a.numpy() for a in args]
    ways, rewrite_s = {"as traced": g}, {"as traced": 0.0}
    for way, rewrite in (("small values as scalars", scalarize), ("loops rolled", reroll),
                         ("loops rolled, work hoisted", lambda g: hoist(reroll(g)))):
        start = time.perf_counter()
        h = rewrite(g)
        if h is not g:
            ways[way], rewrite_s[way] = h, time.perf_counter() - start
    impls: dict = {}
    hoisted = ways.get("loops rolled, work hoisted")
    if hoisted is not None and loop_kernels(hoisted):  # NOTE(loop-kernels), with Numba
        ways[KERNELS] = hoisted
        rewrite_s[KERNELS] = rewrite_s["loops rolled, work hoisted"]
        impls[KERNELS] = loop_kernels(hoisted)
    replays: dict = {}
    for way, h in ways.items():
        start = time.perf_counter()
        run = Replay(h, impls.get(way)).compiled()
        if way == KERNELS:  # Numba compiles at the first call
            run(*arrays)
        replays[way] = (run, time.perf_counter() - start)
        want, got = replays["as traced"][0](*arrays), run(*arrays)
        for a, b in zip(want, got, strict=True):
            np.testing.assert_allclose(b, a, rtol=1e-12, atol=0 if way != KERNELS else
                                       1e-12 * float(np.max(np.abs(a), initial=0.0)))
    if "loops rolled, work hoisted" in replays:  # NOTE(hoist): the same bits
        base = replays.get("loops rolled", replays["as traced"])[0](*arrays)
        for a, b in zip(base, replays["loops rolled, work hoisted"][0](*arrays), strict=True):
            np.testing.assert_array_equal(b, a)
    best = {way: float("inf") for way in ways}
    for _ in range(repeats):
        for way, (run, _) in replays.items():
            start = time.perf_counter()
            for _ in range(number):
                run(*arrays)
            best[way] = min(best[way], (time.perf_counter() - start) / number)
    rows = []
    for way, h in ways.items():
        rows.append({"way": way, "nodes": h.count(), "estimated_calls": replay_cost(h),
                     "ms": best[way] * 1e3, "x_traced": best[way] / best["as traced"],
                     "rewrite_s": rewrite_s[way],
                     "compile_s": replays[way][1]})
    return {"graph": name, "rows": rows}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--number", type=int, default=10)
    parser.add_argument("--only", default=",".join(GRAPHS))
    parser.add_argument("--json", default=None)
    args = parser.parse_args(argv)
    results = [measure(name, args.repeats, args.number) for name in args.only.split(",")]
    print(f"load average: {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| graph | way | nodes | ms a call | x as traced | rewrite s | compile s |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for r in results:
        for row in r["rows"]:
            print(f"| {r['graph']} | {row['way']} | {row['nodes']:,} | "
                  f"{row['ms']:.3g} | {row['x_traced']:.2f}x | "
                  f"{row['rewrite_s']:.2f} | {row['compile_s']:.2f} |")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
