"""Jacobian modes side by side: tapeflow's jacfwd / jacrev / auto / row loop against JAX
(eager and jitted) and PyTorch (torch.func), in one process.

f: R^n -> R^m, f(x) = tanh(W2 tanh(W1 x)), hidden 256, float32, for
(n, m) = (8, 4096) (forward mode should win) and (4096, 8) (reverse should win).
Every result is checked against one reference before it is timed.

Run: python benchmarks/jacobian_modes.py [--quick] [--json PATH]
Peers are optional: a missing one is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any, Callable

import os
import sys

import numpy as np

import tapeflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchmarks/cnn.py

HIDDEN = 256


def best_time(fn: Callable[[], Any], repeat: int, budget: float = 2.0) -> float:
    """Best wall time of `repeat` runs (fewer if one run already exceeds the budget)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
        if sum(times) > budget * repeat:
            break
    return min(times)


def weights(n: int, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    w1 = (rng.standard_normal((HIDDEN, n)) / np.sqrt(n)).astype(np.float32)
    w2 = (rng.standard_normal((m, HIDDEN)) / np.sqrt(HIDDEN)).astype(np.float32)
    x = rng.standard_normal(n).astype(np.float32)
    return w1, w2, x


def reference(w1: np.ndarray, w2: np.ndarray, x: np.ndarray) -> np.ndarray:
    h = np.tanh(w1.astype(np.float64) @ x)
    y = np.tanh(w2.astype(np.float64) @ h)
    return (1 - y ** 2)[:, None] * (w2 * (1 - h ** 2)[None, :]) @ w1


def tf_api_f(api: Any, w1: np.ndarray, w2: np.ndarray) -> Callable[[Any], Any]:
    """f written once against TensorFlow's API: `api` is tapeflow or TensorFlow."""
    W1, W2 = api.constant(w1), api.constant(w2)

    def f(v: Any) -> Any:
        h = api.tanh(api.matmul(W1, api.reshape(v, [-1, 1])))
        return api.reshape(api.tanh(api.matmul(W2, h)), [-1])

    return f


def jax_f(w1: np.ndarray, w2: np.ndarray) -> Callable[[Any], Any]:
    import jax.numpy as jnp

    W1, W2 = jnp.asarray(w1), jnp.asarray(w2)
    return lambda v: jnp.tanh(W2 @ jnp.tanh(W1 @ v))


def torch_f(w1: np.ndarray, w2: np.ndarray) -> Callable[[Any], Any]:
    import torch

    W1, W2 = torch.from_numpy(w1), torch.from_numpy(w2)
    return lambda v: torch.tanh(W2 @ torch.tanh(W1 @ v))


def tapeflow_cases(w1: np.ndarray, w2: np.ndarray, x: np.ndarray) -> dict[str, Callable]:
    f = tf_api_f(tf, w1, w2)

    def row_loop() -> Any:
        xt = tf.constant(x)
        with tf.GradientTape(persistent=True) as tape:
            tape.watch(xt)
            y = f(xt)
        return tape.jacobian(y, xt, experimental_use_pfor=False)

    def tape_vectorized() -> Any:
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            y = f(xt)
        return tape.jacobian(y, xt)

    return {
        "tapeflow jacfwd": lambda: tf.jacfwd(f)(x),
        "tapeflow jacrev": lambda: tf.jacrev(f)(x),
        "tapeflow jacobian(auto)": lambda: tf.jacobian(f)(x),
        "tapeflow tape.jacobian": tape_vectorized,
        "tapeflow row loop": row_loop,
    }


def jax_cases(w1: np.ndarray, w2: np.ndarray, x: np.ndarray) -> dict[str, Callable]:
    import jax
    import jax.numpy as jnp

    f, X = jax_f(w1, w2), jnp.asarray(x)
    fwd, rev = jax.jacfwd(f), jax.jacrev(f)
    jfwd, jrev = jax.jit(fwd), jax.jit(rev)
    jfwd(X).block_until_ready()
    jrev(X).block_until_ready()
    return {
        "jax jacfwd (eager)": lambda: fwd(X).block_until_ready(),
        "jax jacrev (eager)": lambda: rev(X).block_until_ready(),
        "jax jacfwd (jit)": lambda: jfwd(X).block_until_ready(),
        "jax jacrev (jit)": lambda: jrev(X).block_until_ready(),
    }


def torch_cases(w1: np.ndarray, w2: np.ndarray, x: np.ndarray) -> dict[str, Callable]:
    import torch
    from torch.func import jacfwd, jacrev

    torch.set_num_threads(2)
    f, X = torch_f(w1, w2), torch.from_numpy(x)
    return {
        "torch.func jacfwd": lambda: jacfwd(f)(X),
        "torch.func jacrev": lambda: jacrev(f)(X),
    }


def as_numpy(result: Any) -> np.ndarray:
    if hasattr(result, "detach"):
        result = result.detach()
    return np.asarray(result, dtype=np.float64)


def run(n: int, m: int, repeat: int, skip_loop: bool) -> list[dict]:
    w1, w2, x = weights(n, m)
    want = reference(w1, w2, x)
    cases = tapeflow_cases(w1, w2, x)
    if skip_loop:
        cases.pop("tapeflow row loop")
    for name, make in (("jax", jax_cases), ("torch", torch_cases)):
        try:
            cases.update(make(w1, w2, x))
        except ImportError:
            print(f"  ({name} not installed: skipped)")
    rows = []
    for name, fn in cases.items():
        got = as_numpy(fn())
        err = float(np.max(np.abs(got - want)) / (np.max(np.abs(want)) + 1e-30))
        if not err < 1e-4:
            raise AssertionError(f"{name}: Jacobian differs from the reference (rel err {err:.2e})")
        rows.append({"case": name, "seconds": best_time(fn, repeat), "rel_err": err})
    fastest = min(r["seconds"] for r in rows)
    for r in rows:
        r["ratio_to_fastest"] = r["seconds"] / fastest
    return rows


def seed_cnn(n_inputs: int, repeat: int, quick: bool) -> list[dict]:
    """The seed question in eager mode: 10x784 Jacobians of the small CNN at many inputs."""
    import cnn

    w, xs = cnn.weights(), cnn.inputs(n_inputs)
    want = cnn.reference_jacobians(w, xs)
    model = cnn.tapeflow_model(w)

    cases = {
        "tapeflow tape.jacobian per input (vectorized)":
            lambda: cnn.jacobians_per_input(tf, model, xs, use_pfor=True),
        "tapeflow tape.jacobian per input (row loop)":
            lambda: cnn.jacobians_per_input(tf, model, xs, use_pfor=False),
        "tapeflow tape.batch_jacobian, all inputs": lambda: cnn.batch_jacobians(tf, model, xs)}
    try:
        import tensorflow as real_tf
        tf_model = cnn.tensorflow_model(w)
        cases["TensorFlow eager tape.jacobian per input"] = \
            lambda: cnn.jacobians_per_input(real_tf, tf_model, xs)
    except ImportError:
        print("  (tensorflow not installed: skipped)")
    rows = []
    for name, fn in cases.items():
        got = fn()
        err = float(np.max(np.abs(got - want)) / np.max(np.abs(want)))
        if not err < 1e-4:
            raise AssertionError(f"{name}: Jacobians differ from the reference (rel err {err:.2e})")
        rows.append({"case": name, "seconds": best_time(fn, 1 if quick else repeat), "rel_err": err})
    fastest = min(r["seconds"] for r in rows)
    for r in rows:
        r["ratio_to_fastest"] = r["seconds"] / fastest
    return rows


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repeats, no row loop")
    parser.add_argument("--json", help="write the results to this file")
    opts = parser.parse_args(argv)
    repeat = 2 if opts.quick else 5
    results = {}
    for n, m in ((8, 4096), (4096, 8)):
        print(f"\nf: R^{n} -> R^{m} (hidden {HIDDEN}, float32), Jacobian {m}x{n}")
        rows = run(n, m, repeat, skip_loop=opts.quick)
        results[f"{n}x{m}"] = rows
        print(f"  {'case':28s} {'ms':>10s} {'x fastest':>10s}")
        for r in sorted(rows, key=lambda r: r["seconds"]):
            print(f"  {r['case']:28s} {r['seconds'] * 1e3:10.2f} {r['ratio_to_fastest']:10.2f}")
    n_inputs = 8 if opts.quick else 64
    print(f"\nSeed problem, eager: 10x784 Jacobian of the small CNN at {n_inputs} inputs")
    rows = seed_cnn(n_inputs, 3, opts.quick)
    results["seed_cnn_eager"] = rows
    print(f"  {'case':48s} {'ms':>10s} {'x fastest':>10s}")
    for r in sorted(rows, key=lambda r: r["seconds"]):
        print(f"  {r['case']:48s} {r['seconds'] * 1e3:10.1f} {r['ratio_to_fastest']:10.2f}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(results, fh, indent=2)


if __name__ == "__main__":
    main()
