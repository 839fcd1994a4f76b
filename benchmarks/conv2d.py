"""conv2d forward, and forward + backward, against TensorFlow CPU and a NumPy floor.

Run with the peers' virtualenv (TensorFlow installed; without it those rows are
skipped, not errors)::

    /work/peers-venv/bin/python benchmarks/conv2d.py
    /work/peers-venv/bin/python benchmarks/conv2d.py --quick --json out.json

The problem: a 64x28x28x8 float32 NHWC input, 16 filters of 3x3x8, padding SAME,
stride 1. Forward is ``conv2d(x, w)``; forward + backward also computes the
gradients with respect to the input and the filters for a fixed random output
cotangent. Contestants, all in one process: tapeflow eager (and traced with
``tapeflow.function`` when available), TensorFlow eager and inside
``tf.function``, and plain NumPy im2col (one strided view, one GEMM; the
backward pass is two GEMMs and a scatter over the 9 kernel offsets), the floor
that any NumPy-based library pays. Every result is checked against one float64
reference before timing; times are the best of N rounds (``timeit``; the
contestants alternate round by round, so load changes hit them alike), and
ratios are to the NumPy floor and to TensorFlow eager.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import timeit
from typing import Any, Callable

import numpy as np

try:
    import tapeflow as tp
except ImportError:  # a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import tapeflow as tp

N, H, W, C, O, K = 64, 28, 28, 8, 16, 3
PAD = (K - 1) // 2  # SAME with stride 1 and an odd kernel: symmetric


# ---------------------------------------------------------------- NumPy im2col (the floor)
def _cols(x: np.ndarray) -> np.ndarray:
    xp = np.pad(x, [(0, 0), (PAD, PAD), (PAD, PAD), (0, 0)])
    n, hs, ws, cs = xp.strides
    view = np.lib.stride_tricks.as_strided(xp, (N, H, W, K, K, C), (n, hs, ws, hs, ws, cs),
                                           writeable=False)
    return view.reshape(N * H * W, K * K * C)


def numpy_forward(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (_cols(x) @ w.reshape(K * K * C, O)).reshape(N, H, W, O)


def numpy_forward_backward(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> tuple:
    cols = _cols(x)
    y = (cols @ w.reshape(K * K * C, O)).reshape(N, H, W, O)
    gm = g.reshape(N * H * W, O)
    dw = (cols.T @ gm).reshape(K, K, C, O)
    dcols = (gm @ w.reshape(K * K * C, O).T).reshape(N, H, W, K, K, C)
    dxp = np.zeros((N, H + 2 * PAD, W + 2 * PAD, C), x.dtype)
    for i in range(K):
        for j in range(K):
            dxp[:, i:i + H, j:j + W, :] += dcols[:, :, :, i, j, :]
    return y, dxp[:, PAD:PAD + H, PAD:PAD + W, :], dw


# ---------------------------------------------------------------- contestants
def tapeflow_cases(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> dict[str, Callable]:
    tx, tw, tg = tp.constant(x), tp.constant(w), tp.constant(g)

    def forward() -> Any:
        return tp.nn.conv2d(tx, tw, strides=1, padding="SAME")

    def forward_backward() -> Any:
        with tp.GradientTape() as tape:
            tape.watch([tx, tw])
            y = tp.nn.conv2d(tx, tw, strides=1, padding="SAME")
        dx, dw = tape.gradient(y, [tx, tw], output_gradients=tg)
        return y, dx, dw

    cases = {"tapeflow eager": (forward, forward_backward)}
    if hasattr(tp, "function"):
        traced_f = tp.function(lambda a, b: tp.nn.conv2d(a, b, strides=1, padding="SAME"))

        def fb(a: Any, b: Any, c: Any) -> Any:
            with tp.GradientTape() as tape:
                tape.watch([a, b])
                y = tp.nn.conv2d(a, b, strides=1, padding="SAME")
            dx, dw = tape.gradient(y, [a, b], output_gradients=c)
            return y, dx, dw

        traced_fb = tp.function(fb)
        cases["tapeflow function"] = (lambda: traced_f(tx, tw), lambda: traced_fb(tx, tw, tg))
    return cases


def tensorflow_cases(x: np.ndarray, w: np.ndarray, g: np.ndarray) -> dict[str, Callable]:
    import tensorflow as tf

    tx, tw, tg = tf.constant(x), tf.constant(w), tf.constant(g)

    def forward(a: Any, b: Any) -> Any:
        return tf.nn.conv2d(a, b, strides=1, padding="SAME")

    def forward_backward(a: Any, b: Any, c: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch([a, b])
            y = tf.nn.conv2d(a, b, strides=1, padding="SAME")
        dx, dw = tape.gradient(y, [a, b], output_gradients=c)
        return y, dx, dw

    traced_f, traced_fb = tf.function(forward), tf.function(forward_backward)
    return {"TensorFlow eager": (lambda: forward(tx, tw), lambda: forward_backward(tx, tw, tg)),
            "TensorFlow tf.function": (lambda: traced_f(tx, tw),
                                       lambda: traced_fb(tx, tw, tg))}


# ---------------------------------------------------------------- timing and checks
def best_seconds(fns: dict[str, Callable[[], Any]], repeat: int,
                 target: float = 0.1) -> dict[str, float]:
    """Best (minimum) seconds per call of each function over `repeat` timed loops of
    ~`target` seconds. The loops of all contestants alternate round by round, so a
    change in machine load hits them alike."""
    numbers = {}
    for name, fn in fns.items():
        fn()  # warm-up (and tracing, for the traced contestants)
        once = timeit.Timer(fn).timeit(1)
        numbers[name] = max(1, int(target / max(once, 1e-6)))
    best = dict.fromkeys(fns, float("inf"))
    for _ in range(repeat):
        for name, fn in fns.items():
            per_call = timeit.Timer(fn).timeit(numbers[name]) / numbers[name]
            best[name] = min(best[name], per_call)
    return best


def check(name: str, got: Any, want: tuple) -> None:
    got = got if isinstance(got, (tuple, list)) else (got,)
    for label, a, b in zip(("y", "dx", "dw"), got, want):
        a = np.asarray(a, np.float64)
        err = np.max(np.abs(a - b)) / np.max(np.abs(b))
        if a.shape != b.shape or not err < 1e-5:
            raise AssertionError(f"{name}: {label} differs from the float64 reference "
                                 f"(shape {a.shape} vs {b.shape}, relative error {err:.2e}).")


def run(repeat: int) -> list[dict]:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, H, W, C)).astype(np.float32)
    w = (rng.standard_normal((K, K, C, O)) / np.sqrt(K * K * C)).astype(np.float32)
    g = rng.standard_normal((N, H, W, O)).astype(np.float32)
    reference = numpy_forward_backward(*(a.astype(np.float64) for a in (x, w, g)))

    cases = {"NumPy im2col": (lambda: numpy_forward(x, w), lambda: numpy_forward_backward(x, w, g))}
    cases.update(tapeflow_cases(x, w, g))
    skipped = []
    try:
        cases.update(tensorflow_cases(x, w, g))
    except ImportError as e:
        skipped.append(f"TensorFlow: {e}")

    rows = []
    for task, index, want in (("forward", 0, reference[:1]), ("forward+backward", 1, reference)):
        fns = {name: fns[index] for name, fns in cases.items()}
        for name, fn in fns.items():
            check(f"{name} {task}", fn(), want)
        for name, seconds in best_seconds(fns, repeat).items():
            rows.append({"task": task, "case": name, "seconds": seconds})
    for task in ("forward", "forward+backward"):
        here = [r for r in rows if r["task"] == task]
        floor = next(r["seconds"] for r in here if r["case"] == "NumPy im2col")
        tf_eager = next((r["seconds"] for r in here if r["case"] == "TensorFlow eager"), None)
        for r in here:
            r["vs_numpy"] = r["seconds"] / floor
            r["vs_tf_eager"] = None if tf_eager is None else r["seconds"] / tf_eager
    for s in skipped:
        print(f"skipped: {s}")
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds instead of 10")
    parser.add_argument("--json", help="write the results to this file")
    opts = parser.parse_args(argv)
    rows = run(2 if opts.quick else 10)
    print(f"conv2d {N}x{H}x{W}x{C} * {K}x{K}x{C}x{O}, SAME, stride 1, float32 "
          f"({platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"NumPy {np.__version__})")
    for task in ("forward", "forward+backward"):
        print(f"\n  {task:24s} {'ms':>9s} {'x NumPy':>9s} {'x TF eager':>11s}")
        for r in sorted((r for r in rows if r["task"] == task), key=lambda r: r["seconds"]):
            vs_tf = "" if r["vs_tf_eager"] is None else f"{r['vs_tf_eager']:11.2f}"
            print(f"  {r['case']:24s} {r['seconds'] * 1e3:9.2f} {r['vs_numpy']:9.2f} {vs_tf}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(rows, fh, indent=2)


if __name__ == "__main__":
    main()
