"""Jacobians per second on Dask: the seed problem's network (benchmarks/cnn.py, the 10x784
Jacobian of the small CNN with respect to its input) at 100,000 inputs, with
`tapeflow.dask.map_jacobian` on a LocalCluster of 1 and of 2 worker processes (one thread
each), and in this process without Dask as the baseline.

The inputs are made where they are used: on the workers, a Dask array of uniform draws in
chunks of `--chunk` inputs along the batch axis; in-process, the same chunks one after the
other. Each chunk's Jacobians ([chunk, 10, 784] float32, one vectorized replay) are summed
over the batch where they were computed, so the time is the Jacobians' and not that of
sending 3 GB of them to the client. The first run on a fresh cluster includes each
worker's trace (one per worker) and is reported apart; then all settings run in turn for
`--repeat` rounds (a busy spell on a shared machine hits each alike), and the throughput is
that of each setting's best run. Dask starts its workers with one BLAS thread each (OMP_NUM_THREADS=1 and
the like); the in-process baseline uses tapeflow's defaults. The LocalClusters' workers
keep freed memory as tapeflow does in any other process (KEEP_FREED_MEMORY below); a last
row shows 2 workers under Dask's default malloc trimming, which that setting replaces.

Run: python benchmarks/dask_throughput.py [--quick] [--inputs N] [--chunk N] [--repeat N]
                                          [--scheduler ADDRESS] [--json PATH]
(--quick: 4,000 inputs in chunks of 500, one round. --scheduler tcp://host:8786 runs
on that cluster, whatever its size, instead of the LocalClusters; docs/dask.md.)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import time
from typing import Any, Callable

import numpy as np

try:
    import tapeflow as tf
except ModuleNotFoundError as e:  # running from a checkout without `pip install -e .`
    if e.name != "tapeflow":
        raise
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import tapeflow as tf

import dask  # noqa: E402
import dask.array as da  # noqa: E402
import distributed  # noqa: E402

import tapeflow.dask as tfd  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # benchmarks/cnn.py
import cnn  # noqa: E402

THREAD_VARS = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
# Dask's nanny starts workers with MALLOC_TRIM_THRESHOLD_=65536, which hands freed memory
# back to the system at once and overrides tapeflow's own setting (NOTE(allocator) in
# tapeflow/allocator.py): every replay would fault its temporaries in again. These are
# tapeflow's values, for the workers of the LocalClusters below (docs/dask.md).
KEEP_FREED_MEMORY = {"distributed.nanny.pre-spawn-environ.MALLOC_TRIM_THRESHOLD_": 128 << 20,
                     "distributed.nanny.pre-spawn-environ.MALLOC_MMAP_THRESHOLD_": 32 << 20}


def per_example(model: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """The network as a function of one input [784] -> [10], as map_jacobian takes it."""
    return lambda x: model(x[None])[0]


def inputs(n: int, chunk: int) -> da.Array:
    """n inputs like cnn.inputs (uniform on [0, 1), float32), drawn chunk by chunk."""
    draws = da.random.default_rng(1).uniform(0., 1., (n, 784), chunks=(chunk, 784))
    return draws.astype(np.float32)


class Setting:
    """One way to compute the checksum of all Jacobians: `run()` -> [10, 784] float64 sums;
    `traces()` -> the traces each worker made (None in-process)."""

    def __init__(self, label: str, workers: int, run: Callable[[], np.ndarray],
                 traces: Callable[[], list[int]] | None = None) -> None:
        self.label, self.workers, self.run, self.traces = label, workers, run, traces


def in_process(f: Callable[[Any], Any], X: da.Array) -> Setting:
    """The baseline: one process, no Dask, the same chunks one after the other."""
    jac = tf.function(tf.vmap(tf.jacobian(f)))
    blocks = [X.blocks[i].compute(scheduler="sync") for i in range(X.numblocks[0])]

    def run() -> np.ndarray:
        return sum(jac(b).numpy().sum(axis=0, dtype=np.float64) for b in blocks)

    return Setting("in-process, no Dask", 0, run)


def on_cluster(client: distributed.Client, label: str, f: Callable[[Any], Any],
               X: da.Array) -> Setting:
    J = tfd.map_jacobian(f, X)
    total = J.sum(axis=0, dtype=np.float64)
    name = next(str(k) for k in dict(J.__dask_graph__()) if str(k).startswith("tapeflow-function-"))
    token = name.removeprefix("tapeflow-function-")

    def traces() -> list[int]:
        return sorted(stats[token]["traces"] for stats in client.run(tfd.trace_stats).values()
                      if token in stats)

    return Setting(label, len(client.scheduler_info()["workers"]),
                   lambda: client.compute(total, sync=True), traces)


def local_client(stack: contextlib.ExitStack, n_workers: int,
                 dask_malloc: bool = False) -> distributed.Client:
    """A client of a new LocalCluster (closed with `stack`); its workers keep freed memory
    as tapeflow does, unless `dask_malloc`."""
    environ = dict(os.environ)
    with dask.config.set({} if dask_malloc else KEEP_FREED_MEMORY):
        cluster = stack.enter_context(distributed.LocalCluster(
            n_workers=n_workers, threads_per_worker=1, processes=True, dashboard_address=":0"))
    # The nanny writes the workers' variables into this process's environment too: the
    # next cluster must not inherit them.
    os.environ.clear()
    os.environ.update(environ)
    return stack.enter_context(distributed.Client(cluster, set_as_default=False))


def measure(settings: list[Setting], repeat: int) -> list[dict]:
    """Each setting's first run, then `repeat` rounds of all settings in turn (a busy spell
    on a shared machine hits every setting alike); the best of its runs."""
    first, checksums = [], []
    for s in settings:
        start = time.perf_counter()
        checksums.append(s.run())
        first.append(time.perf_counter() - start)
    best = list(first)  # a trace is under 1% of a run: the first run counts too
    for _ in range(repeat):
        for i, s in enumerate(settings):
            start = time.perf_counter()
            s.run()
            best[i] = min(best[i], time.perf_counter() - start)
    rows = []
    for s, t0, t, checksum in zip(settings, first, best, checksums, strict=True):
        # Sums of the same float32 Jacobians in float64: equal up to the order of the sums.
        err = float(np.max(np.abs(checksum - checksums[0])) / np.max(np.abs(checksums[0])))
        if not err < 1e-6:
            raise AssertionError(f"{s.label}: the Jacobians differ from in-process "
                                 f"(rel err {err:.1e})")
        rows.append({"setting": s.label, "workers": s.workers, "first_seconds": t0,
                     "seconds": t, "checksum_rel_err": err,
                     "traces_per_worker": s.traces() if s.traces else None})
    return rows


def run(n: int, chunk: int, repeat: int, scheduler: str | None) -> dict:
    environment = {"python": platform.python_version(), "numpy": np.__version__,
                   "dask": distributed.__version__, "cpus": os.cpu_count(),
                   "load_average": [round(v, 2) for v in os.getloadavg()],
                   **{k: os.environ[k] for k in THREAD_VARS if k in os.environ}}
    f = per_example(cnn.tapeflow_model(cnn.weights()))
    X = inputs(n, chunk)
    with contextlib.ExitStack() as stack:
        settings = [in_process(f, X)]
        if scheduler:
            client = stack.enter_context(distributed.Client(scheduler, set_as_default=False))
            settings.append(on_cluster(client, f"cluster at {scheduler}", f, X))
        else:
            for k in (1, 2):
                label = f"LocalCluster, {k} worker{'s' if k > 1 else ''}"
                settings.append(on_cluster(local_client(stack, k), label, f, X))
            settings.append(on_cluster(local_client(stack, 2, dask_malloc=True),
                                       "LocalCluster, 2 workers, Dask's malloc trimming", f, X))
        rows = measure(settings, repeat)
    for r in rows:
        r["inputs_per_second"] = n / r["seconds"]
        r["speedup"] = rows[0]["seconds"] / r["seconds"]
    environment["load_average_after"] = [round(v, 2) for v in os.getloadavg()]
    return {"inputs": n, "chunk": chunk, "repeat": repeat, "rows": rows,
            "environment": environment}


def report(res: dict) -> None:
    env = res["environment"]
    print(f"\nThe seed problem's 10x784 CNN Jacobians at {res['inputs']:,} inputs (float32), "
          f"chunks of {res['chunk']}; best of {1 + res['repeat']} runs")
    print(f"{env['cpus']} CPUs, load average {env['load_average']} before, "
          f"{env['load_average_after']} after, Python {env['python']}, "
          f"NumPy {env['numpy']}, Dask {env['dask']}"
          + "".join(f", {k}={env[k]}" for k in THREAD_VARS if k in env) + "\n")
    print("| setting | inputs/s | x in-process | first run (s) | best run (s) | traces per worker |")
    print("|---|---:|---:|---:|---:|---|")
    for r in res["rows"]:
        traces = ", ".join(map(str, r["traces_per_worker"] or [])) or "-"
        print(f"| {r['setting']} | {r['inputs_per_second']:,.0f} | {r['speedup']:.2f} | "
              f"{r['first_seconds']:.2f} | {r['seconds']:.2f} | {traces} |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="4,000 inputs, chunks of 500, 1 round")
    parser.add_argument("--inputs", type=int, default=100_000)
    parser.add_argument("--chunk", type=int, default=1000, help="inputs per chunk")
    parser.add_argument("--repeat", type=int, default=2, help="timed rounds after the first run")
    parser.add_argument("--scheduler", help="address of a running Dask scheduler to use "
                        "instead of the LocalClusters, e.g. tcp://scheduler:8786")
    parser.add_argument("--json", help="write the results to this file")
    opts = parser.parse_args(argv)
    if opts.quick:
        opts.inputs, opts.chunk, opts.repeat = 4000, 500, 1
    res = run(opts.inputs, opts.chunk, opts.repeat, opts.scheduler)
    report(res)
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(res, fh, indent=2)


if __name__ == "__main__":
    main()
