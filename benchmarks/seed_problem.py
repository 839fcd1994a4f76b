"""The seed question, end to end: the 10x784 Jacobian of the small CNN (benchmarks/cnn.py)
with respect to its input, at many different inputs, in one run.

The asker re-recorded a TensorFlow GradientTape and called `tape.jacobian` for every
input and asked whether the derivative computation could be recorded once and
re-evaluated. `tapeflow.function` does that: it traces the function, tape and Jacobian
included, once, and replays the graph at each new input. Cases:

  tapeflow eager, re-recording per input: tape.jacobian (vectorized) and the row loop
  tapeflow eager tape.batch_jacobian over all inputs (extra: what the replay saves)
  tapeflow.function replay of tape.jacobian, called once per input (traced once)
  tapeflow.function replay of tape.batch_jacobian over all inputs (one call)
  TensorFlow eager tape.jacobian per input (what the seed's asker did)
  TensorFlow tf.function of tape.jacobian per input (extra) and of batch_jacobian over all
  JAX jax.jit(jax.vmap(jax.jacrev(f))) over all inputs
  PyTorch torch.func.vmap(torch.func.jacrev(f)) over all inputs

Every case returns all Jacobians as one NumPy array [n, 10, 784] (conversion included
in the time) and is checked against `cnn.reference_jacobians` (float64; relative error
< 1e-4) before it is timed. One-time costs (tracing, compiling: the first call with a
new signature) are reported in their own column; the time column is the steady state
for all n Jacobians: the best of at least N runs, the cases' runs interleaved round-robin
(fast cases run more often, up to a second each) so a busy spell on a shared machine
hits every case alike. The header shows the load average and any BLAS/OpenMP thread
variables (tapeflow's small GEMMs are sensitive to OPENBLAS_NUM_THREADS). Then: the ratio of each case to the fastest peer
(JAX / TensorFlow / PyTorch), the speed-up of tapeflow's best replay over TensorFlow's
eager re-recording, and the node counts of tapeflow's traced Jacobian graphs before and
after the graph passes.

Run: python benchmarks/seed_problem.py [--quick] [--json PATH]
(--quick: 8 inputs, 1 repeat.) Peers are optional: a missing one is reported and skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections import Counter
from typing import Any, Callable

import numpy as np

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter

try:
    import tapeflow as tf
except ModuleNotFoundError as e:  # running from a checkout without `pip install -e .`
    if e.name != "tapeflow":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import tapeflow as tf

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchmarks/cnn.py
import cnn  # noqa: E402

TOLERANCE = 1e-4
PEERS = ("tensorflow", "jax", "torch")
THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def best_times(fns: list[Callable[[], Any]], repeat: int, budget: float = 2.0,
               min_total: float = 0.0, max_runs: int = 100) -> list[float]:
    """Best wall time of each function over at least `repeat` runs, the runs interleaved
    round-robin so a busy spell on a shared machine hits every case alike. A fast case
    runs again until it has spent `min_total` seconds (at most `max_runs` runs: the
    minimum is what survives the noise); a slow one stops once its runs exceed
    `budget * repeat` seconds."""
    times: list[list[float]] = [[] for _ in fns]
    pending = list(range(len(fns)))
    while pending:
        for k in list(pending):
            start = time.perf_counter()
            fns[k]()
            times[k].append(time.perf_counter() - start)
            total, runs = sum(times[k]), len(times[k])
            if (runs >= max_runs or total > budget * repeat
                    or (runs >= repeat and total >= min_total)):
                pending.remove(k)
    return [min(t) for t in times]


def timed(make: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    out = make()
    return out, time.perf_counter() - start


class Case:
    """A timed case: `fn()` -> [n, 10, 784] NumPy array; `setup` seconds spent once before
    (tracing / compiling), `family` is "tapeflow" or the peer's name."""

    def __init__(self, name: str, family: str, fn: Callable[[], np.ndarray],
                 setup: float | None = None, replay: bool = False, note: str = "") -> None:
        self.name, self.family, self.fn = name, family, fn
        self.setup, self.replay, self.note = setup, replay, note


Runner = Callable[[np.ndarray], np.ndarray]  # inputs [n, 784] -> Jacobians [n, 10, 784]

TF_EACH = "tapeflow eager tape.jacobian per input (vectorized)"
TF_LOOP = "tapeflow eager tape.jacobian per input (row loop)"
TF_BATCH = "tapeflow eager tape.batch_jacobian, all inputs"
TF_REPLAY_EACH = "tapeflow function replay of tape.jacobian, per input"
TF_REPLAY_BATCH = "tapeflow function replay of batch_jacobian, all inputs"
TENSORFLOW_EAGER = "TensorFlow eager tape.jacobian per input"
TENSORFLOW_EACH = "TensorFlow tf.function tape.jacobian per input"
TENSORFLOW_BATCH = "TensorFlow tf.function batch_jacobian, all inputs"
JAX_BATCH = "JAX jit(vmap(jacrev(f))), all inputs"
TORCH_BATCH = "PyTorch torch.func vmap(jacrev(f)), all inputs"


# ---------------------------------------------------------------------- runners
# Each builder returns functions from the inputs to all their Jacobians (NumPy), nothing
# run yet: the first call of a traced or compiled one pays the tracing / compiling, so
# a caller can time that call apart (the cases below, and benchmarks/suite/seed.py).
def tapeflow_runners(w: dict) -> tuple[dict[str, Runner], tuple[Any, Any]]:
    """tapeflow's ways to the Jacobians, and the two traced functions (for graph stats)."""
    model = cnn.tapeflow_model(w)
    jac, batch_jac = cnn.traced_jacobians(tf, model)

    def replay_each(xs: np.ndarray) -> np.ndarray:
        return np.stack([np.asarray(jac(tf.constant(x[None])))[0, :, 0] for x in xs])

    runners = {
        TF_EACH: lambda xs: cnn.jacobians_per_input(tf, model, xs, True),
        TF_LOOP: lambda xs: cnn.jacobians_per_input(tf, model, xs, False),
        TF_BATCH: lambda xs: cnn.batch_jacobians(tf, model, xs),
        TF_REPLAY_EACH: replay_each,
        TF_REPLAY_BATCH: lambda xs: np.asarray(batch_jac(tf.constant(xs))),
    }
    return runners, (jac, batch_jac)


def tensorflow_runners(w: dict) -> dict[str, Runner]:
    import tensorflow as real_tf

    # Eager tape.jacobian builds (and traces) a new pfor function at every call, and
    # TensorFlow warns about the retracing each time: that cost is what is measured.
    real_tf.get_logger().setLevel("ERROR")
    model = cnn.tensorflow_model(w)
    jac, batch_jac = cnn.traced_jacobians(real_tf, model)

    def function_each(xs: np.ndarray) -> np.ndarray:
        return np.stack([jac(real_tf.constant(x[None])).numpy()[0, :, 0] for x in xs])

    return {
        TENSORFLOW_EAGER: lambda xs: cnn.jacobians_per_input(real_tf, model, xs),
        TENSORFLOW_EACH: function_each,
        TENSORFLOW_BATCH: lambda xs: batch_jac(real_tf.constant(xs)).numpy(),
    }


def jax_runner(w: dict) -> Runner:
    import jax
    import jax.numpy as jnp

    model = cnn.jax_model(w)

    def f(x: Any) -> Any:  # [784] -> [10]
        return model(x[None])[0]

    jac = jax.jit(jax.vmap(jax.jacrev(f)))
    return lambda xs: np.asarray(jac(jnp.asarray(xs)))


def torch_runner(w: dict) -> Runner:
    import torch
    from torch.func import jacrev, vmap

    model = cnn.torch_model(w)

    def f(x: Any) -> Any:  # [784] -> [10]
        return model(x[None])[0]

    jac = vmap(jacrev(f))
    return lambda xs: jac(torch.from_numpy(xs)).numpy()


# ---------------------------------------------------------------------- tapeflow
def tapeflow_cases(w: dict, xs: np.ndarray) -> tuple[list[Case], dict]:
    runners, (jac, batch_jac) = tapeflow_runners(w)

    def case(name: str, setup: float | None = None, replay: bool = False) -> Case:
        fn = runners[name]
        return Case(name, "tapeflow", lambda: fn(xs), setup, replay=replay)

    concrete_jac, trace_jac = timed(lambda: jac.get_concrete_function(tf.constant(xs[:1])))
    concrete_batch, trace_batch = timed(lambda: batch_jac.get_concrete_function(tf.constant(xs)))
    cases = [case(TF_EACH), case(TF_LOOP), case(TF_BATCH),
             case(TF_REPLAY_EACH, trace_jac, replay=True),
             case(TF_REPLAY_BATCH, trace_batch, replay=True)]
    graphs = {"tape.jacobian per input": (jac, concrete_jac),
              "batch_jacobian, all inputs": (batch_jac, concrete_batch)}
    return cases, graphs


# ---------------------------------------------------------------------- peers
def tensorflow_cases(w: dict, xs: np.ndarray) -> list[Case]:
    runners = tensorflow_runners(w)
    each, batch = runners[TENSORFLOW_EACH], runners[TENSORFLOW_BATCH]
    _, trace_jac = timed(lambda: each(xs[:1]))
    _, trace_batch = timed(lambda: batch(xs))
    return [Case(TENSORFLOW_EAGER, "tensorflow", lambda: runners[TENSORFLOW_EAGER](xs)),
            Case(TENSORFLOW_EACH, "tensorflow", lambda: each(xs), trace_jac),
            Case(TENSORFLOW_BATCH, "tensorflow", lambda: batch(xs), trace_batch)]


def jax_cases(w: dict, xs: np.ndarray) -> list[Case]:
    run = jax_runner(w)
    _, compile_time = timed(lambda: run(xs))
    return [Case(JAX_BATCH, "jax", lambda: run(xs), compile_time)]


def torch_cases(w: dict, xs: np.ndarray) -> list[Case]:
    run = torch_runner(w)
    return [Case(TORCH_BATCH, "torch", lambda: run(xs))]


def peer_cases(w: dict, xs: np.ndarray) -> tuple[list[Case], dict]:
    cases, versions = [], {}
    for name, make in (("tensorflow", tensorflow_cases), ("jax", jax_cases),
                       ("torch", torch_cases)):
        try:
            module = __import__(name)
        except Exception as e:  # noqa: BLE001 - a missing or broken peer is skipped, not fatal
            print(f"  ({name} not available: skipped; {type(e).__name__}: {e})")
            continue
        versions[name] = getattr(module, "__version__", "?")
        cases.extend(make(w, xs))
    return cases, versions


# ---------------------------------------------------------------------- running
def relative_error(got: np.ndarray, want: np.ndarray) -> float:
    got = np.asarray(got, dtype=np.float64)
    if got.shape != want.shape:
        raise AssertionError(f"Jacobians have shape {got.shape}; expected {want.shape}")
    return float(np.max(np.abs(got - want)) / np.max(np.abs(want)))


def graph_stats(graphs: dict) -> dict:
    out = {}
    for label, (fn, concrete) in graphs.items():
        ops = Counter(op.type for op in concrete.graph.get_operations())
        out[label] = {"before": concrete.pass_stats["before"],
                      "after": concrete.pass_stats["after"],
                      "traces": fn.experimental_get_tracing_count(),
                      "ops_after": dict(sorted(ops.items(), key=lambda kv: -kv[1]))}
    return out


def run(n_inputs: int, repeat: int, min_total: float) -> dict:
    w, xs = cnn.weights(), cnn.inputs(n_inputs)
    want = cnn.reference_jacobians(w, xs)
    cases, graphs = tapeflow_cases(w, xs)
    more, versions = peer_cases(w, xs)
    cases += more
    errors = []
    for c in cases:  # checked first (and warmed up): a wrong case is never timed
        err = relative_error(c.fn(), want)
        if not err < TOLERANCE:
            raise AssertionError(f"{c.name}: Jacobians differ from the reference "
                                 f"(rel err {err:.2e})")
        errors.append(err)
    seconds = best_times([c.fn for c in cases], repeat, min_total=min_total)
    rows = [{"case": c.name, "family": c.family, "replay": c.replay, "seconds": t,
             "ms_per_jacobian": t * 1e3 / n_inputs, "setup_seconds": c.setup, "rel_err": err}
            for c, t, err in zip(cases, seconds, errors)]
    peers = [r for r in rows if r["family"] != "tapeflow"]
    fastest_peer = min(peers, key=lambda r: r["seconds"]) if peers else None
    for r in rows:
        r["ratio_to_fastest_peer"] = (r["seconds"] / fastest_peer["seconds"]
                                      if fastest_peer else None)
    replays = [r for r in rows if r["replay"]]
    best_replay = min(replays, key=lambda r: r["seconds"])
    tf_eager = next((r for r in rows if r["case"] == TENSORFLOW_EAGER), None)
    summary = {
        "best_tapeflow_replay": best_replay["case"],
        "best_tapeflow_replay_seconds": best_replay["seconds"],
        "fastest_peer": fastest_peer["case"] if fastest_peer else None,
        "fastest_peer_seconds": fastest_peer["seconds"] if fastest_peer else None,
        "replay_over_fastest_peer": best_replay["ratio_to_fastest_peer"],
        "speedup_over_tensorflow_eager": (tf_eager["seconds"] / best_replay["seconds"]
                                          if tf_eager else None),
        "goal": "replay <= 1.0x fastest peer (JAX jit); speed-up over TF eager >= 20x",
    }
    summary["meets_peer_goal"] = (None if fastest_peer is None
                                  else summary["replay_over_fastest_peer"] <= 1.0)
    summary["meets_tf_eager_goal"] = (None if tf_eager is None
                                      else summary["speedup_over_tensorflow_eager"] >= 20.0)
    return {"n_inputs": n_inputs, "repeat": repeat, "rows": rows, "summary": summary,
            "graphs": graph_stats(graphs),
            "environment": {"python": platform.python_version(), "numpy": np.__version__,
                            "cpus": os.cpu_count(), "load_average": _load(),
                            **{k: os.environ[k] for k in THREAD_VARS if k in os.environ},
                            **versions}}


def _load() -> list[float] | None:
    try:
        return [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def report(res: dict) -> None:
    n = res["n_inputs"]
    env = res["environment"]
    print(f"\nSeed problem: the 10x784 Jacobian of the small CNN at {n} inputs "
          f"(float32; best of >= {res['repeat']} runs; time for all {n} Jacobians)")
    print(f"  {env['cpus']} CPUs, load average {env['load_average']}; "
          + ", ".join(f"{k} {env[k]}" for k in ("numpy",) + PEERS + THREAD_VARS if k in env))
    print(f"  {'case':58s} {'setup s':>8s} {'ms':>9s} {'ms/jac':>8s} {'x peer':>8s}")
    for r in sorted(res["rows"], key=lambda r: r["seconds"]):
        setup = "" if r["setup_seconds"] is None else f"{r['setup_seconds']:8.2f}"
        ratio = "" if r["ratio_to_fastest_peer"] is None else f"{r['ratio_to_fastest_peer']:8.2f}"
        print(f"  {r['case']:58s} {setup:>8s} {r['seconds'] * 1e3:9.1f} "
              f"{r['ms_per_jacobian']:8.3f} {ratio:>8s}")
    s = res["summary"]
    print("\n  'setup s' = tracing / compiling, once (first call of a new signature); "
          "'x peer' = time / fastest peer's time")
    print(f"  best tapeflow replay: {s['best_tapeflow_replay']}")
    if s["fastest_peer"]:
        print(f"  fastest peer:         {s['fastest_peer']}")
        print(f"  replay / fastest peer:              {s['replay_over_fastest_peer']:8.2f}x"
              "   (goal <= 1)")
    else:
        print("  no peer installed: no peer ratios")
    if s["speedup_over_tensorflow_eager"] is not None:
        print(f"  TF eager re-recording / best replay: {s['speedup_over_tensorflow_eager']:7.1f}x"
              "   (goal >= 20)")
    print("\n  tapeflow traced Jacobian graphs, primitive nodes before -> after the passes:")
    for label, g in res["graphs"].items():
        ops = ", ".join(f"{k} {v}" for k, v in g["ops_after"].items())
        print(f"    {label:28s} {g['before']:4d} -> {g['after']:4d}   "
              f"(traced {g['traces']}x)  {ops}")
        if g["traces"] != 1:
            print(f"    WARNING: {label} was traced {g['traces']} times: the timed calls "
                  "were not all replays")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="8 inputs, 1 repeat")
    parser.add_argument("--json", help="write the results to this file")
    opts = parser.parse_args(argv)
    res = run(8 if opts.quick else 64, 1 if opts.quick else 5, 0.0 if opts.quick else 1.0)
    report(res)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
