"""A chain of three compiled functions, with and without keep_on_device.

Three `tf.function(..., jit_compile=True)` stages, each a multiply-add, run in
sequence on a [4096, 1024] float32 input (16 MiB), the result read as a NumPy array at
the end. With keep_on_device=False every stage returns its result as a host NumPy array,
which the next hands back to XLA; with keep_on_device=True the stages pass JAX device
arrays on and only the final read goes to the host. The same chain as JAX jit functions is the
floor. Every case's result is checked against the first's.

What it shows depends on the backend. On JAX's CPU backend a result read as NumPy is a
view of XLA's buffer, and JAX takes a 64-byte-aligned NumPy array back into XLA without
a copy, so the intermediate round trips keep_on_device removes cost little there. The
input (a `tf.constant`) is placed in XLA when it is passed a second time and the copy
kept with it (NOTE(placed) in graph/device.py), so passing it again costs no copy either. On a GPU
every round trip crosses the bus.

One thread per library, as the suite (benchmarks/run.py): xla_setup.py, imported first.

Run: python benchmarks/xla_chain.py [--quick] [--json PATH]   (needs JAX: the xla extra)
"""

from __future__ import annotations

import xla_setup  # noqa: F401 - first: threads, XLA flags, src/ on the path

import argparse
import json
import statistics
import time
from typing import Any, Callable

import numpy as np

import tapeflow as tf
from tapeflow.graph.device import DeviceTensor

SHAPE = (4096, 1024)


# Light stages (a multiply-add each, fused by XLA into one loop): a copy between stages
# would then be a visible share of a stage's time.
def stage1(x: Any) -> Any:
    return x * 0.5 + 1.0


def stage2(x: Any) -> Any:
    return x * x - 0.25


def stage3(x: Any) -> Any:
    return x * 2.0 - 1.0


def chain(keep_on_device: bool) -> Callable[[Any], Any]:
    f, g, h = (tf.function(s, jit_compile=True, keep_on_device=keep_on_device)
               for s in (stage1, stage2, stage3))
    return lambda x: h(g(f(x)))


def jax_chain(jax: Any) -> Callable[[Any], Any]:
    f = jax.jit(lambda x: x * 0.5 + 1.0)
    g = jax.jit(lambda x: x * x - 0.25)
    h = jax.jit(lambda x: x * 2.0 - 1.0)
    return lambda x: h(g(f(x)))


def timed(cases: dict[str, Callable[[], Any]], repeat: int) -> dict:
    """Median and minimum wall seconds per call of each case, and median CPU seconds of
    the process (all its threads: the work done, which a busy machine's scheduling does
    not inflate as it does wall time). The cases take turns, one call each per round, so
    a change in the machine's load falls on all of them alike."""
    for run in cases.values():
        run()
        run()  # traced and compiled: the steady state from here
    wall: dict[str, list] = {name: [] for name in cases}
    cpu: dict[str, list] = {name: [] for name in cases}
    for _ in range(repeat):
        for name, run in cases.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start)
    return {name: {"median": statistics.median(wall[name]), "min": min(wall[name]),
                   "cpu": statistics.median(cpu[name])} for name in cases}


def main(argv: list[str] | None = None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("--json")
    opts = parser.parse_args(argv)
    import jax  # the xla extra; imported after the thread settings above

    repeat = 5 if opts.quick else 100
    xa = np.random.default_rng(0).standard_normal(SHAPE).astype(np.float32)
    x = tf.constant(xa)
    host, device, floor = chain(False), chain(True), jax_chain(jax)
    xj = jax.device_put(xa)
    xd = DeviceTensor(xj)  # an input already on the device (an earlier call's result)
    cases = {
        "keep_on_device=False, result read": lambda: np.asarray(host(x)),
        "keep_on_device=True, result read": lambda: np.asarray(device(x)),
        "keep_on_device=True, result left on the device":
            lambda: device(x).device_array.block_until_ready(),
        "keep_on_device=True, DeviceTensor in, result left on the device":
            lambda: device(xd).device_array.block_until_ready(),
        "JAX jit chain, NumPy in and out": lambda: np.asarray(floor(xa)),
        "JAX jit chain, device array in and out": lambda: floor(xj).block_until_ready(),
    }
    want = np.asarray(host(x))
    for name, run in cases.items():
        got = run()
        np.testing.assert_allclose(np.asarray(got), want, rtol=1e-5, atol=1e-5, err_msg=name)
    results = timed(cases, repeat)
    base = results["keep_on_device=False, result read"]["median"]
    base_cpu = results["keep_on_device=False, result read"]["cpu"]
    print(f"3 compiled elementwise stages on a {list(SHAPE)} float32 input "
          f"({xa.nbytes / 2 ** 20:.0f} MiB), JAX {jax.__version__} on "
          f"{jax.devices()[0].platform}, {repeat} calls each")
    print(f"  {'case':66s} {'median ms':>10s} {'min ms':>8s} {'x keep=False':>13s} "
          f"{'CPU ms':>8s} {'x keep=False':>13s}")
    for name, r in results.items():
        print(f"  {name:66s} {r['median'] * 1e3:10.2f} {r['min'] * 1e3:8.2f} "
              f"{r['median'] / base:13.2f} {r['cpu'] * 1e3:8.2f} {r['cpu'] / base_cpu:13.2f}")
    if opts.json:
        with open(opts.json, "w") as fh:
            json.dump(results, fh, indent=2)
    return results


if __name__ == "__main__":
    main()
