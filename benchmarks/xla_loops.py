"""Python loops under jit_compile=True: compile time and steady time, rolled (NOTE(reroll))
against the same loop written as tf.foldl, and against JAX's jit.

A Python loop in a traced function is unrolled; the compiled graph has each run of
repeated steps rolled back into one scan (graph/reroll.py), so XLA compiles one step's
body, as it does for tf.foldl (tapeflow's scan, lowered to lax.scan). Each workload is
a gradient through a loop:

- rnn: 200 steps of h = tanh(h W + x_t U), hidden 32, batch 16, input 8 (float32);
- lstm: the suite's LSTM (benchmarks/suite/lstm.py) at 200 steps;
- rk4: 100 unrolled RK4 steps of a pendulum, the gradient of |y(T)|^2 in y0 and k
  (float64: a small-op workload of scalars).

"first calls" is the time to a compiled result in a fresh process: the first call
(tracing, which returns the traced values) and the second (which compiles and runs),
or JAX's first call (trace and compile); each is its own process, the cases
interleaved, repeated `--repeats` times, the median reported. "steady" is the median
call afterwards, every case of a workload made in one process and called in turn (so
they share the process's and the machine's state). The machine's load average is
reported beside them.

Run: python benchmarks/xla_loops.py [--repeats N] [--json PATH]   (needs JAX: the xla extra)
"""

from __future__ import annotations

import xla_setup  # noqa: F401 - first: threads, XLA flags, src/ on the path

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from typing import Any, Callable

import numpy as np

STEPS = {"rnn": 200, "lstm": 200, "rk4": 100}


# ---------------------------------------------------------------------- the programs
def _rnn_data() -> tuple:
    rng = np.random.default_rng(0)
    w = (rng.standard_normal((32, 32)) / 6).astype(np.float32)
    u = (rng.standard_normal((8, 32)) / 3).astype(np.float32)
    xs = rng.standard_normal((STEPS["rnn"], 16, 8)).astype(np.float32)
    return w, u, xs


def _rnn_tapeflow(scan: bool) -> Callable[[], Any]:
    import tapeflow as tf

    w, u, xs = (tf.constant(a) for a in _rnn_data())

    def gradient(w: Any, u: Any, xs: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([w, u])
            h = tf.zeros([xs.shape[1], w.shape[0]])
            if scan:
                h = tf.foldl(lambda h, x: tf.tanh(tf.matmul(h, w) + tf.matmul(x, u)), xs,
                             initializer=h)
            else:
                for t in range(xs.shape[0]):
                    h = tf.tanh(tf.matmul(h, w) + tf.matmul(xs[t], u))
            loss = tf.reduce_sum(h * h)
        return tape.gradient(loss, [w, u])

    f = tf.function(gradient, jit_compile=True)
    return lambda: [np.asarray(g) for g in f(w, u, xs)]


def _rnn_jax(scan: bool) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    w, u, xs = (jnp.asarray(a) for a in _rnn_data())

    def loss(w: Any, u: Any, xs: Any) -> Any:
        h = jnp.zeros((xs.shape[1], w.shape[0]), xs.dtype)
        if scan:
            h, _ = jax.lax.scan(lambda h, x: (jnp.tanh(h @ w + x @ u), None), h, xs)
        else:
            for t in range(xs.shape[0]):
                h = jnp.tanh(h @ w + xs[t] @ u)
        return jnp.sum(h * h)

    g = jax.jit(jax.grad(loss, argnums=(0, 1)))
    return lambda: [np.asarray(a) for a in g(w, u, xs)]


def _lstm(framework: str, scan: bool) -> Callable[[], Any]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from suite import lstm

    data = lstm.problem((32, 64, STEPS["lstm"], 16))
    if framework == "jax":
        return lstm._jax(data, unrolled=not scan)
    import tapeflow as tf

    loss = lstm.tf_api_scan_loss(tf) if scan else lstm.tf_api_loss(tf)
    tensors = [tf.constant(a) for a in data]

    def gradient(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([w, b])
            value = loss(w, b, xs, ys)
        return tape.gradient(value, [w, b])

    f = tf.function(gradient, jit_compile=True)
    return lambda: [np.asarray(g) for g in f(*tensors)]


def _rk4(framework: str, scan: bool) -> Callable[[], Any]:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from suite import rk4  # its step, h = 0.01

    y0, k0 = np.array([1.0, 0.0]), np.array(2.0)
    if framework == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)

        def f(y: Any, k: Any) -> Any:
            return jnp.stack([y[1], -k * jnp.sin(y[0])])

        def step(y: Any, k: Any) -> Any:
            return rk4.step(lambda z: f(z, k), y)

        def loss(y: Any, k: Any) -> Any:
            if scan:
                y, _ = jax.lax.scan(lambda y, _: (step(y, k), None), y, None,
                                    length=STEPS["rk4"])
            else:
                for _ in range(STEPS["rk4"]):
                    y = step(y, k)
            return jnp.sum(y * y)

        g = jax.jit(jax.grad(loss, argnums=(0, 1)))
        ya, ka = jnp.asarray(y0), jnp.asarray(k0)
        return lambda: [np.asarray(a) for a in g(ya, ka)]
    import tapeflow as tf

    def tf_step(y: Any, k: Any) -> Any:
        return rk4.step(lambda z: tf.stack([z[1], -k * tf.sin(z[0])]), y)

    def gradient(y: Any, k: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([y, k])
            if scan:
                out = tf.foldl(lambda y, _: tf_step(y, k),
                               tf.zeros([STEPS["rk4"]], tf.float64), initializer=y)
            else:
                out = y
                for _ in range(STEPS["rk4"]):
                    out = tf_step(out, k)
            loss = tf.reduce_sum(out * out)
        return tape.gradient(loss, [y, k])

    compiled = tf.function(gradient, jit_compile=True)
    yt, kt = tf.constant(y0), tf.constant(k0)
    return lambda: [np.asarray(g) for g in compiled(yt, kt)]


CASES: dict[str, Callable[[], Callable[[], Any]]] = {
    "rnn: tapeflow Python loop": lambda: _rnn_tapeflow(False),
    "rnn: tapeflow tf.foldl": lambda: _rnn_tapeflow(True),
    "rnn: JAX lax.scan": lambda: _rnn_jax(True),
    "rnn: JAX Python loop": lambda: _rnn_jax(False),
    "lstm: tapeflow Python loop": lambda: _lstm("tapeflow", False),
    "lstm: tapeflow tf.foldl": lambda: _lstm("tapeflow", True),
    "lstm: JAX lax.scan": lambda: _lstm("jax", True),
    "lstm: JAX Python loop": lambda: _lstm("jax", False),
    "rk4: tapeflow Python loop": lambda: _rk4("tapeflow", False),
    "rk4: tapeflow tf.foldl": lambda: _rk4("tapeflow", True),
    "rk4: JAX lax.scan": lambda: _rk4("jax", True),
    "rk4: JAX Python loop": lambda: _rk4("jax", False),
}


def one(name: str) -> dict:
    """The first calls of one case, in this (fresh) process, and its results."""
    call = CASES[name]()
    start = time.perf_counter()
    first = call()
    if not name.split(": ")[1].startswith("JAX"):
        first = call()  # the call that compiles (the first returned the trace's values)
    return {"first": time.perf_counter() - start,
            "result": [np.asarray(a).tolist() for a in first]}


def steady(names: list[str], rounds: int) -> dict:
    """Each case's median call, the cases made in this process and called in turn (five
    calls each per round), so that they share its state and the machine's."""
    calls = {}
    for name in names:
        calls[name] = CASES[name]()
        calls[name]()
        calls[name]()
    times: dict = {name: [] for name in names}
    for _ in range(rounds):
        for name in names:
            for _ in range(5):
                t = time.perf_counter()
                calls[name]()
                times[name].append(time.perf_counter() - t)
    return {name: statistics.median(ts) for name, ts in times.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=40,
                        help="rounds of the steady phase (five calls of each case each)")
    parser.add_argument("--only", default="", help="workloads, comma-separated (rnn,lstm,rk4)")
    parser.add_argument("--timeout", type=float, default=120.0,
                        help="seconds a case's process may take (JAX's unrolled loops)")
    parser.add_argument("--json", default="")
    parser.add_argument("--one", default="", help=argparse.SUPPRESS)
    parser.add_argument("--steady", default="", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(args.one)))
        return
    if args.steady:
        print(json.dumps(steady(args.steady.split(";"), args.calls)))
        return
    wanted = [n for n in CASES if not args.only or n.split(":")[0] in args.only.split(",")]
    runs: dict = {n: [] for n in wanted}
    loads = []
    slow: set = set()  # cases whose first calls took longer than --timeout
    for _ in range(args.repeats):
        for name in wanted:
            loads.append(os.getloadavg()[0])
            if name in slow:
                continue
            try:
                out = subprocess.run([sys.executable, __file__, "--one", name],
                                     capture_output=True, text=True, check=True,
                                     timeout=args.timeout)
            except subprocess.TimeoutExpired:
                slow.add(name)  # not run again
                continue
            runs[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    steadies: dict = {}
    for workload in dict.fromkeys(n.split(":")[0] for n in wanted):
        names = [n for n in wanted if n.startswith(workload + ":") and runs[n]]
        loads.append(os.getloadavg()[0])
        out = subprocess.run([sys.executable, __file__, "--steady", ";".join(names),
                              "--calls", str(args.calls)], capture_output=True, text=True,
                             check=True)
        steadies.update(json.loads(out.stdout.strip().splitlines()[-1]))
    print(f"load average during the runs: {min(loads):.2f}-{max(loads):.2f} "
          f"({os.cpu_count()} cores)\n")
    print("| case | first calls (s) | steady (ms) | first vs tf.foldl | steady vs tf.foldl |")
    print("| --- | --- | --- | --- | --- |")
    summary: dict = {}
    references: dict = {}
    for name in wanted:
        if not runs[name]:
            print(f"| {name} | > {args.timeout:.0f} (did not finish) | | | |")
            summary[name] = {"first_s": None, "steady_ms": None}
            continue
        first = statistics.median(r["first"] for r in runs[name])
        per_call = steadies[name]
        summary[name] = {"first_s": first, "steady_ms": 1e3 * per_call}
        base = name.split(":")[0] + ": tapeflow tf.foldl"
        if runs.get(base):
            b_first = statistics.median(r["first"] for r in runs[base])
            b_steady = steadies[base]
            ratios = f"{first / b_first:.2f}x | {per_call / b_steady:.2f}x"
        else:
            ratios = "| "
        print(f"| {name} | {first:.2f} | {1e3 * per_call:.3f} | {ratios} |")
        reference = references.setdefault(name.split(":")[0], runs[name][0]["result"])
        for got, want in zip(runs[name][0]["result"], reference, strict=True):
            np.testing.assert_allclose(got, want, rtol=2e-4, atol=1e-5)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"load": [min(loads), max(loads)], "cases": summary}, f, indent=1)


if __name__ == "__main__":
    main()
