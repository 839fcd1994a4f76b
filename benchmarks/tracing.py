"""Tracing time against graph size: a 5-op elementwise block repeated to 10k, 50k and
100k nodes on 16-element float64 arrays, traced by `tapeflow.function` and compared with
one eager run of the same code (the target: tracing at most 10x the eager run, growing
linearly). The cold graph is then replayed by the plan interpreter, and after
`COMPILE_AFTER` calls by generated code; both replays are timed too.

Run: python benchmarks/tracing.py [--sizes 10000 50000 100000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

import numpy as np

import tapeflow as tf


def chain(x: Any, n_nodes: int) -> Any:
    for _ in range(n_nodes // 5):
        x = tf.sin(x)
        x = x * 1.0001
        x = tf.tanh(x)
        x = x + 0.5
        x = x * x
    return x


def _seconds(fn: Any) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def measure(n_nodes: int, repeat: int = 3) -> dict[str, float]:
    """Best of `repeat` for eager, tracing (a new function each time), plan and compiled
    replay."""
    x = tf.constant(np.linspace(0., 1., 16))
    eager = min(_seconds(lambda: chain(x, n_nodes)) for _ in range(repeat))
    traces = []
    for _ in range(repeat):
        f = tf.function(lambda a: chain(a, n_nodes))
        traces.append(_seconds(lambda: f(x)))
    replay = f.get_concrete_function(x).executable.inner
    plan = min(_seconds(lambda: f(x)) for _ in range(repeat))
    compile_s = _seconds(replay.compiled)
    compiled = min(_seconds(lambda: f(x)) for _ in range(repeat))
    np.testing.assert_allclose(f(x).numpy(), chain(x, n_nodes).numpy(), rtol=1e-12)
    return {"nodes": n_nodes, "eager_s": eager, "trace_s": min(traces),
            "trace_over_eager": min(traces) / eager, "plan_replay_s": plan,
            "compile_s": compile_s, "compiled_replay_s": compiled}


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--sizes", type=int, nargs="+", default=[10_000, 50_000, 100_000])
    parser.add_argument("--json")
    opts = parser.parse_args(argv)
    rows = [measure(n) for n in opts.sizes]
    print("| nodes | eager ms | trace ms | trace / eager | trace us/node | plan replay ms "
          "| compile ms | compiled replay ms |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['nodes']} | {r['eager_s'] * 1e3:.1f} | {r['trace_s'] * 1e3:.1f} | "
              f"{r['trace_over_eager']:.1f}x | {r['trace_s'] / r['nodes'] * 1e6:.1f} | "
              f"{r['plan_replay_s'] * 1e3:.1f} | {r['compile_s'] * 1e3:.0f} | "
              f"{r['compiled_replay_s'] * 1e3:.1f} |")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=2)
    return rows


if __name__ == "__main__":
    main()
