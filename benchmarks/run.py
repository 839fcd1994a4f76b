"""The performance suite in one command: tapeflow beside every installed peer.

Runs each workload of benchmarks/suite/ (the seed problem, an MLP Hessian-vector
product, long elementwise chains, peak memory of a long chain, tall and wide
Jacobians, a LeNet-style CNN, an LSTM, RK4 over many small steps, a cofactor-expansion
determinant, a character-level LSTM) with tapeflow, TensorFlow, JAX, PyTorch and
autograd (whichever are installed; a missing one is reported and skipped) and plain
NumPy as the floor where a hand-written version makes sense, all in this process,
and prints a markdown table per problem: the first call (tracing / compiling
included) apart from the steady state (the median of the repeats), and the ratio of
each case to the fastest peer and to NumPy.

How it measures:
  * one thread per framework: BLAS/OpenMP/XLA variables are set before anything
    imports NumPy, and torch / TensorFlow get their thread pools set to 1;
  * every result is checked against a float64 reference before anything is timed;
    a wrong result is reported loudly, the case is not timed and the exit status is 1;
  * repetitions are interleaved over the cases of a problem, in a new (seeded) order
    each round, so a busy spell on a shared machine hits all of them alike and no case
    always follows the same one; fast cases are looped so one sample lasts long enough
    for the timer;
  * peak memory (the memory workload) is measured in a fresh subprocess per case.

Run:  python benchmarks/run.py [--quick] [--only NAME[,NAME]] [--json PATH] [--plot DIR]
      (or `tapeflow bench ...` from a source checkout). --quick is a smoke run of a
      couple of minutes; the default run takes a good while longer.
"""

from __future__ import annotations

import os

# BLAS, OpenMP and XLA read these once, when they load: this must run before NumPy or
# any peer is imported, or the "one thread per framework" rule silently does not hold.
THREAD_VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                    "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS",
                    "TF_NUM_INTRAOP_THREADS", "TF_NUM_INTEROP_THREADS", "PJRT_NPROC")
for _name in THREAD_VARIABLES:
    os.environ[_name] = "1"
# XLA's CPU client (JAX jit, tapeflow jit_compile=True) sizes its compute pool from
# PJRT_NPROC, else from the number of cores; XLA_FLAGS' thread settings do not reach it.
_XLA = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
if _XLA not in os.environ.get("XLA_FLAGS", ""):
    os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "") + " " + _XLA).strip()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # TensorFlow's start-up chatter
os.environ.setdefault("JAX_PLATFORMS", "cpu")

import argparse  # noqa: E402
import gc  # noqa: E402
import importlib  # noqa: E402
import importlib.metadata  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import pickle  # noqa: E402
import pkgutil  # noqa: E402
import platform  # noqa: E402
import random  # noqa: E402
import statistics  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import tracemalloc  # noqa: E402
import warnings  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from types import ModuleType  # noqa: E402
from typing import Any, Callable, Sequence, TextIO  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

import suite  # noqa: E402
from suite import common  # noqa: E402
from suite.common import Case  # noqa: E402
from tapeflow.progress import progress  # noqa: E402  (found through common's path setup)


@dataclass
class Settings:
    """How long to time: `repeats` samples per case, fewer (at least `min_samples`) once
    a case has spent `budget` seconds; a sample loops the case until it lasts
    `sample_time` seconds. Before sampling, each case warms up for `warm_calls` calls
    (or `warm_budget` seconds, whichever comes first): a tapeflow graph is replayed by
    its plan interpreter for its first calls and compiled to code after 64
    (graph/replay.py), and the steady state is the compiled one. The budget lets a graph
    of 40,000 scalar nodes (the rk4 workload, 15 ms a call before it is compiled) get
    there; with 2 s, a third of its samples were the plan interpreter's."""

    repeats: int
    min_samples: int
    budget: float
    sample_time: float
    warm_calls: int = 70
    warm_budget: float = 5.0


FULL = Settings(repeats=15, min_samples=3, budget=10.0, sample_time=0.05)
QUICK = Settings(repeats=3, min_samples=1, budget=0.5, sample_time=0.005, warm_budget=0.5)
SWEEP_FULL = Settings(repeats=7, min_samples=2, budget=3.0, sample_time=0.02)
SWEEP_QUICK = Settings(repeats=3, min_samples=1, budget=0.3, sample_time=0.005,
                       warm_budget=0.3)


# ---------------------------------------------------------------------- workloads
def workloads() -> list[ModuleType]:
    """Every module of benchmarks/suite/ with a `cases` function, in workload order."""
    found = []
    for info in pkgutil.iter_modules(suite.__path__):
        module = importlib.import_module(f"suite.{info.name}")
        if callable(getattr(module, "cases", None)):
            found.append(module)
    return sorted(found, key=lambda m: (getattr(m, "ORDER", 99), m.NAME))


def pick_frameworks(names: str | None) -> tuple[str, ...]:
    if not names:
        return common.FRAMEWORKS
    chosen = tuple(n.strip() for n in names.split(",") if n.strip())
    unknown = [n for n in chosen if n not in common.FRAMEWORKS]
    if unknown:
        raise SystemExit(f"unknown framework(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(common.FRAMEWORKS)}")
    return chosen


def select(modules: list[ModuleType], only: str | None) -> list[ModuleType]:
    if not only:
        return modules
    names = [n.strip() for n in only.split(",") if n.strip()]
    by_name = {m.NAME: m for m in modules}
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise SystemExit(f"unknown workload(s) {', '.join(unknown)}; "
                         f"choose from {', '.join(by_name)}")
    return [by_name[n] for n in names]


# ---------------------------------------------------------------------- timing
@dataclass
class Timed:
    """A case being timed, and what was measured."""

    case: Case
    row: dict
    run: Callable[[], Any] | None = None
    number: int = 1
    samples: list[float] = field(default_factory=list)
    rounds: list[int] = field(default_factory=list)  # the round of each sample
    spent: float = 0.0


def _row(workload: str, c: Case) -> dict:
    return {"workload": workload, "group": c.group, "case": c.name, "framework": c.framework,
            "mode": c.mode, "metric": c.metric, "ops": c.ops, "status": "ok", "error": None,
            "jax_twin": c.jax_twin}


def _fail(t: Timed, status: str, error: str, out: TextIO) -> None:
    t.row["status"], t.row["error"], t.run = status, error, None
    if status == "skipped":
        return
    loud = "WRONG RESULT" if status == "wrong" else "ERROR"
    print(f"\n!!! {loud}: {t.row['workload']} / {t.case.name} ({t.case.framework}): {error}\n",
          file=out, flush=True)


def _start(t: Timed, settings: Settings, out: TextIO) -> None:
    """Set up, call once (tracing / compiling), check, and pick the loop count."""
    c = t.case
    try:
        t.row["framework_version"] = common.prepare(c.framework)
        start = time.perf_counter()
        t.run = c.setup()
        t.row["setup_s"] = time.perf_counter() - start
    except ImportError as e:  # a missing peer, or a missing part of one (torch.func)
        _fail(t, "skipped", f"{type(e).__name__}: {e}", out)
        return
    except Exception as e:  # noqa: BLE001 - one broken case must not stop the suite
        _fail(t, "error", f"setup raised {type(e).__name__}: {e}", out)
        return
    try:
        start = time.perf_counter()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", common.XlaFallback)
            result = t.run()
        t.row["first_call_s"] = time.perf_counter() - start
        _note_warnings(t, caught)
        c.check(result)
        del result
        warm_start = time.perf_counter()
        calls = 0
        while True:  # warm up (Settings): the last call's time picks the loop count
            start = time.perf_counter()
            t.run()
            warm = time.perf_counter() - start
            calls += 1
            if calls >= settings.warm_calls or start - warm_start >= settings.warm_budget:
                break
    except common.WrongResult as e:
        _fail(t, "wrong", str(e), out)
        return
    except Exception as e:  # noqa: BLE001
        _fail(t, "error", f"{type(e).__name__}: {e}", out)
        return
    t.number = max(1, min(100_000, math.ceil(settings.sample_time / max(warm, 1e-9))))
    if t.number == 1:  # the warm call was already a full steady-state sample
        t.samples.append(warm)
        t.spent += warm


def _note_warnings(t: Timed, caught: list) -> None:
    """Keep a jit_compile=True case's XLA fallback in its row (the primitives without a
    lowering: it ran the NumPy replay); show every other warning as usual."""
    for w in caught:
        if isinstance(w.message, common.XlaFallback):
            t.row.setdefault("xla_fallback", []).extend(w.message.primitives)
        else:
            warnings.showwarning(w.message, w.category, w.filename, w.lineno)


def _done(t: Timed, s: Settings) -> bool:
    return len(t.samples) >= s.repeats or (t.spent >= s.budget and len(t.samples) >= s.min_samples)


def _round_order(active: list[Timed], order: random.Random) -> list[Timed]:
    """One round's order: the cases shuffled, except that a problem's function(jit_compile=
    True) cases and its JAX jit cases run one after another (in a shuffled order among
    themselves), so that their per-round ratios compare samples taken moments apart, not
    a round apart (on a shared machine, two cases that compile to one program measured
    0.93x and 1.22x of the same JAX case in one run when timed apart)."""
    paired = {t.case.group for t in active if t.case.mode == "xla"}
    units: dict[Any, list[Timed]] = {}
    for t in active:
        pair = t.case.group in paired and t.case.mode in ("xla", "jit")
        units.setdefault(("pair", t.case.group) if pair else id(t), []).append(t)
    return [t for unit in order.sample(list(units.values()), len(units))
            for t in order.sample(unit, len(unit))]


def time_cases(workload: str, cases: Sequence[Case], settings: Settings,
               out: TextIO) -> list[dict]:
    """Check every case, then time the good ones interleaved; one row per case."""
    timed = [Timed(c, _row(workload, c)) for c in cases]
    for t in timed:
        if not common.installed(t.case.framework):
            _fail(t, "skipped", f"{t.case.framework} not installed", out)
        else:
            _start(t, settings, out)
    active = [t for t in timed if t.run is not None and not _done(t, settings)]
    # Each round in a new order: a case runs slower right after some others (a heavy eager
    # case leaves its garbage, freed memory and cold caches behind), and rotating one
    # order would keep every case's predecessor the same. Seeded: runs repeat.
    order = random.Random(0)
    round_no = 0
    while active:
        for t in _round_order(active, order):
            start = time.perf_counter()
            for _ in range(t.number):
                t.run()
            elapsed = time.perf_counter() - start
            t.samples.append(elapsed / t.number)
            t.rounds.append(round_no)
            t.spent += elapsed
            gc.collect()  # untimed: no case pays for another's garbage
        active = [t for t in active if not _done(t, settings)]
        round_no += 1
    for t in timed:
        if t.samples:
            t.row.update(median_s=statistics.median(t.samples), min_s=min(t.samples),
                         samples=len(t.samples), loop=t.number,
                         by_round=dict(zip(t.rounds, t.samples)))
        t.run = None  # free what the case holds (models, traced graphs, device arrays)
    gc.collect()
    return [t.row for t in timed]


# ---------------------------------------------------------------------- memory
MEMORY_ENV = {
    # Large blocks straight from mmap (and back to the OS when freed), in every
    # framework that allocates through glibc: the resident set then follows the live
    # buffers instead of keeping freed heap pages, and its high-water mark is the peak.
    "MALLOC_MMAP_THRESHOLD_": "65536",
    "MALLOC_TRIM_THRESHOLD_": "131072",
}


def _status_kb(field_name: str) -> int | None:
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith(field_name + ":"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def _reset_peak_rss() -> bool:
    """Reset the resident set's high-water mark to the current size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def _peak_growth(run: Callable[[], Any], base_kb: int | None) -> tuple[Any, int | None]:
    """Call `run`; return its result and the resident set's high-water mark during the
    call above `base_kb` (None where /proc cannot tell)."""
    if base_kb is None or not _reset_peak_rss():
        return run(), None
    result = run()
    return result, ((_status_kb("VmHWM") or 0) - base_kb) * 1024


def memory_child(module_name: str, index: int, size: str, path: str) -> int:
    """In a fresh process: set up one case, then measure the peak of its first call
    (tracing, compiling), of a second call (the steady state) and, for the frameworks
    whose buffers NumPy allocates, tracemalloc's peak of a third; print the numbers as
    JSON and save the second call's result for the parent's check.

    The RSS growth is taken above the resident set right after setup, not right before
    the call: a pooling allocator (TensorFlow's) keeps the first call's peak resident
    and reuses it, and that memory is as much the computation's as a fresh allocation.
    """
    module = importlib.import_module(f"suite.{module_name}")
    case = module.cases(size)[index]
    common.prepare(case.framework)
    run = case.setup()
    gc.collect()
    base_kb = _status_kb("VmRSS")
    result, first = _peak_growth(run, base_kb)
    del result
    gc.collect()
    result, steady = _peak_growth(run, base_kb)
    with open(path, "wb") as fh:
        pickle.dump(common.to_numpy(result), fh)
    del result
    gc.collect()
    traced = None
    if case.framework in NUMPY_BASED:
        tracemalloc.start()
        run()
        traced = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(json.dumps({"case": case.name, "first_bytes": first, "steady_bytes": steady,
                      "tracemalloc_bytes": traced}))
    return 0


def _memory_run(module: ModuleType, index: int, size: str, tmp: str) -> tuple[dict, Any]:
    path = os.path.join(tmp, f"{module.NAME}-{index}.pkl")
    env = {**os.environ, **MEMORY_ENV}
    proc = subprocess.run([sys.executable, os.path.abspath(__file__), "--memory-child",
                           module.NAME, str(index), size, path],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise RuntimeError(f"the measuring subprocess failed: {tail}")
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    with open(path, "rb") as fh:
        result = pickle.load(fh)
    os.remove(path)
    return report, result


NUMPY_BASED = ("tapeflow", "numpy", "autograd")  # tracemalloc sees their buffers


def measure_memory(module: ModuleType, size: str, frameworks: Sequence[str],
                   out: TextIO) -> list[dict]:
    """Peak memory of each memory case, each in a fresh subprocess (two at a time:
    memory, unlike time, does not suffer from a neighbour); results checked here."""
    from concurrent.futures import ThreadPoolExecutor

    # The child finds its case by index in the full list, so the filter applies here.
    timed = {i: Timed(c, _row(module.NAME, c)) for i, c in enumerate(module.cases(size))
             if c.framework in frameworks}
    with tempfile.TemporaryDirectory(prefix="tapeflow_bench_") as tmp, \
            ThreadPoolExecutor(max_workers=2) as pool:
        jobs = {}
        for index, t in timed.items():
            if common.installed(t.case.framework):
                jobs[index] = pool.submit(_memory_run, module, index, size, tmp)
            else:
                _fail(t, "skipped", f"{t.case.framework} not installed", out)
        for index, job in jobs.items():
            t = timed[index]
            try:
                report, result = job.result()
                t.case.check(result)
            except common.WrongResult as e:
                _fail(t, "wrong", str(e), out)
                continue
            except Exception as e:  # noqa: BLE001 - one broken case must not stop the suite
                _fail(t, "error", str(e), out)
                continue
            mb = {k: None if report[k] is None else report[k] / 2 ** 20
                  for k in ("first_bytes", "steady_bytes", "tracemalloc_bytes")}
            t.row.update(peak_rss_mb=mb["steady_bytes"], first_call_rss_mb=mb["first_bytes"],
                         peak_tracemalloc_mb=mb["tracemalloc_bytes"])
    return [t.row for t in timed.values()]


# ---------------------------------------------------------------------- ratios and tables
def _metric(row: dict) -> float | None:
    return row.get("peak_rss_mb") if row["metric"] == "memory" else row.get("median_s")


def add_ratios(rows: list[dict]) -> None:
    """Per group: each case against the best peer and against NumPy (if present)."""
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["group"]), []).append(r)
    for members in groups.values():
        ok = [r for r in members if r["status"] == "ok" and _metric(r) is not None]
        peers = [r for r in ok if r["framework"] in common.PEERS]
        best = min(peers, key=_metric) if peers else None
        floor = min((r for r in ok if r["framework"] == "numpy"), key=_metric, default=None)
        for r in ok:
            value = _metric(r)
            r["best_peer"] = best["case"] if best else None
            r["x_best_peer"] = value / _metric(best) if best and _metric(best) else None
            r["x_numpy"] = value / _metric(floor) if floor and _metric(floor) else None


def _time(seconds: float | None) -> str:
    if seconds is None:
        return ""
    if seconds >= 1:
        return f"{seconds:.2f} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def _ratio(x: float | None) -> str:
    return "" if x is None else f"{x:.2f}x" if x < 100 else f"{x:.0f}x"


def _mb(x: float | None) -> str:
    return "" if x is None else f"{x:,.1f}"


def _status_text(r: dict) -> str:
    return {"skipped": "skipped", "wrong": "**WRONG RESULT**", "error": "**ERROR**"}[r["status"]]


def print_group(title: str, rows: list[dict], out: TextIO) -> None:
    memory = rows[0]["metric"] == "memory"
    per_op = any(r["ops"] > 1 for r in rows) and not memory
    if memory:
        head = ["case", "framework", "mode", "first call RSS MB", "peak RSS MB",
                "tracemalloc peak MB", "x best peer", "x NumPy"]
    else:
        head = ["case", "framework", "mode", "first call", "median"] + \
            (["per op"] if per_op else []) + ["x best peer", "x NumPy"]
    print(f"\n#### {title}\n", file=out)
    print("| " + " | ".join(head) + " |", file=out)
    print("|" + "|".join("---" if i < 3 else "---:" for i in range(len(head))) + "|", file=out)

    def order(r: dict) -> tuple:
        value = _metric(r)
        return (r["status"] != "ok", r["framework"] != "tapeflow",
                value if value is not None else math.inf)

    for r in sorted(rows, key=order):
        label = common.LABELS.get(r["framework"], r["framework"])
        if r["status"] != "ok":
            cells = [r["case"], label, r["mode"], _status_text(r)] + [""] * (len(head) - 5) + \
                [(r["error"] or "")[:90]]
        elif memory:
            cells = [r["case"], label, r["mode"], _mb(r.get("first_call_rss_mb")),
                     _mb(r.get("peak_rss_mb")), _mb(r.get("peak_tracemalloc_mb")),
                     _ratio(r.get("x_best_peer")),
                     _ratio(r.get("x_numpy"))]
        else:
            cells = [r["case"], label, _mode(r), _time(r.get("first_call_s")),
                     _time(r.get("median_s"))]
            if per_op:
                cells.append(_time(r["median_s"] / r["ops"]))
            cells += [_ratio(r.get("x_best_peer")), _ratio(r.get("x_numpy"))]
        print("| " + " | ".join(cells) + " |", file=out)
    for r in rows:
        if r.get("xla_fallback"):
            print(f"\n{r['case']}: no XLA lowering for {', '.join(r['xla_fallback'])}; "
                  "its graph ran the NumPy replay.", file=out)


def _mode(r: dict) -> str:
    return r["mode"] + (" (NumPy fallback)" if r.get("xla_fallback") else "")


def print_workload(module: ModuleType, rows: list[dict], out: TextIO) -> None:
    print(f"\n### {module.ORDER}. {module.NAME}: {module.TITLE}", file=out)
    groups: dict[str, list[dict]] = {}
    for r in rows:
        groups.setdefault(r["group"], []).append(r)
    for title, members in groups.items():
        print_group(title or module.NAME, members, out)
    if rows and rows[0]["metric"] == "memory":
        print("\nEach case in a fresh subprocess. Peak RSS: the resident set's high-water "
              "mark during a second (steady-state) call, above the resident set after setup "
              "(every framework; memory a framework keeps from its first call counts); first "
              "call RSS: the same for the first call (tracing / compiling included); "
              "tracemalloc: peak of the buffers NumPy allocates during a third call "
              "(tapeflow, NumPy, autograd only). Ratios use the peak RSS column.", file=out)


def print_summary(rows: list[dict], out: TextIO) -> None:
    """The best tapeflow case of each problem against the best peer."""
    print("\n### Summary: best tapeflow case against the best peer, per problem\n", file=out)
    print("| workload | problem | best tapeflow | tapeflow | best peer | peer | tapeflow / peer |",
          file=out)
    print("|---|---|---|---:|---|---:|---:|", file=out)
    groups: dict[tuple, list[dict]] = {}
    for r in rows:
        groups.setdefault((r["workload"], r["group"]), []).append(r)
    for (workload, group), members in groups.items():
        ok = [r for r in members if r["status"] == "ok" and _metric(r) is not None]
        ours = min((r for r in ok if r["framework"] == "tapeflow"), key=_metric, default=None)
        peer = min((r for r in ok if r["framework"] in common.PEERS), key=_metric, default=None)
        fmt = _mb if members[0]["metric"] == "memory" else _time
        unit = " MB" if members[0]["metric"] == "memory" else ""
        cells = [workload, group,
                 ours["case"] if ours else "(none)", fmt(_metric(ours)) + unit if ours else "",
                 peer["case"] if peer else "(no peer)", fmt(_metric(peer)) + unit if peer else "",
                 _ratio(_metric(ours) / _metric(peer)) if ours and peer and _metric(peer) else ""]
        print("| " + " | ".join(cells) + " |", file=out)


def paired_ratio(a: dict, b: dict) -> float | None:
    """The median over the rounds both rows were timed in of a's sample / b's."""
    ra, rb = a.get("by_round") or {}, b.get("by_round") or {}
    ratios = [ra[k] / rb[k] for k in ra if k in rb and rb[k]]
    return statistics.median(ratios) if ratios else None


def print_xla_summary(rows: list[dict], out: TextIO) -> None:
    """Each function(jit_compile=True) case against its JAX twin (the same program under
    JAX jit) if it names one, else the fastest JAX jit case of its problem: steady state
    and first call (tracing + XLA compiling) side by side."""
    xla = [r for r in rows if r["mode"] == "xla"]
    if not xla:
        return
    print("\n### tapeflow function(jit_compile=True) against JAX jit\n", file=out)
    print("| workload | problem | case | first call | median | JAX jit | first call | median "
          "| x JAX jit | per round | fastest x fastest | first call x JAX |", file=out)
    print("|---|---|---|---:|---:|---|---:|---:|---:|---:|---:|---:|", file=out)
    for r in xla:
        jits = [j for j in rows if j["workload"] == r["workload"] and j["group"] == r["group"]
                and j["framework"] == "jax" and j["mode"] == "jit" and j["status"] == "ok"
                and j.get("median_s")]
        twins = [j for j in jits if j["case"] == r.get("jax_twin")]
        jit = min(twins or jits, key=lambda j: j["median_s"], default=None)
        ok = r["status"] == "ok" and r.get("median_s")
        name = r["case"] + (" (NumPy fallback: " + ", ".join(r["xla_fallback"]) + ")"
                            if r.get("xla_fallback") else "")
        cells = [r["workload"], r["group"], name,
                 _time(r.get("first_call_s")) if ok else _status_text(r),
                 _time(r.get("median_s")) if ok else "",
                 jit["case"] if jit else "(none)",
                 _time(jit.get("first_call_s")) if jit else "",
                 _time(jit["median_s"]) if jit else "",
                 _ratio(r["median_s"] / jit["median_s"]) if ok and jit else "",
                 _ratio(paired_ratio(r, jit)) if ok and jit else "",
                 _ratio(r["min_s"] / jit["min_s"]) if ok and jit and jit.get("min_s") else "",
                 _ratio(r["first_call_s"] / jit["first_call_s"])
                 if ok and jit and jit.get("first_call_s") else ""]
        print("| " + " | ".join(cells) + " |", file=out)
    print("\nJAX jit: the case's twin (the same program under JAX jit) where it has one, else "
          "the fastest JAX jit case of the problem; 'x JAX jit': median / its "
          "median; 'per round': the median of the two cases' ratios within one round "
          "(each round times every case once, a problem's XLA and JAX jit cases one after "
          "another, so a slow spell of the machine weighs on both sides of a ratio); "
          "'fastest x fastest': the fastest sample / its fastest (on a shared machine the "
          "least disturbed one of each); 'first call x JAX': first "
          "call (trace + XLA compile) / its first call (trace + compile). A NumPy fallback "
          "case ran tapeflow's NumPy replay, not XLA.", file=out)


# ---------------------------------------------------------------------- environment
def _version(name: str) -> str | None:
    for dist in (name, f"{name}-cpu"):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def environment() -> dict:
    env: dict[str, Any] = {
        "python": platform.python_version(), "platform": platform.platform(),
        "cpus": os.cpu_count(), "numpy": np.__version__,
        "tapeflow": _version("tapeflow") or "?",
        "threads": {k: os.environ[k] for k in THREAD_VARIABLES},
        "xla_flags": os.environ.get("XLA_FLAGS"),
        "peers": {p: (_version(p) if common.installed(p) else None) for p in common.PEERS},
    }
    try:
        env["load_average"] = [round(v, 2) for v in os.getloadavg()]
    except (AttributeError, OSError):
        env["load_average"] = None
    try:
        from threadpoolctl import threadpool_info

        env["blas"] = [f"{i.get('internal_api')} {i.get('version')} ({i.get('num_threads')} thread)"
                       for i in threadpool_info()]
    except ImportError:
        env["blas"] = None
    return env


def print_environment(env: dict, settings: Settings, quick: bool, out: TextIO) -> None:
    print("## tapeflow benchmark suite" + (" (--quick)" if quick else ""), file=out)
    print(f"\n- tapeflow {env['tapeflow']}, NumPy {env['numpy']}, Python {env['python']}, "
          f"{env['platform']}, {env['cpus']} CPUs, load average {env['load_average']}", file=out)
    found = [f"{common.LABELS[p]} {v}" for p, v in env["peers"].items() if v]
    missing = [common.LABELS[p] for p, v in env["peers"].items() if not v]
    print(f"- peers: {', '.join(found) or 'none'}"
          + (f"; not installed (skipped): {', '.join(missing)}" if missing else ""), file=out)
    print("- one thread per framework: " + ", ".join(f"{k}=1" for k in THREAD_VARIABLES[:3])
          + ", PJRT_NPROC=1 (XLA's CPU compute pool: JAX jit and jit_compile=True)"
          + f", XLA_FLAGS='{env['xla_flags']}', torch.set_num_threads(1), "
          "TF intra/inter-op threads 1"
          + (f"; BLAS: {', '.join(env['blas'])}" if env["blas"] else ""),
          file=out)
    print(f"- 'first call': the first call after setup (tracing / compiling included); "
          f"'median': median of up to {settings.repeats} samples after it, the cases of a "
          "problem interleaved, in a new order each round; 'x best peer': median / the "
          "fastest peer's "
          "(TensorFlow, JAX, PyTorch, autograd); 'x NumPy': / NumPy by hand. Every result "
          "was checked against a float64 reference first.", file=out)
    print("- modes: 'eager'; 'traced' (tapeflow function's NumPy replay, TensorFlow "
          "tf.function); 'jit' (JAX); 'xla' (tapeflow function(jit_compile=True): the traced "
          "graph compiled by XLA through JAX, its first call the trace and the compile; "
          "'NumPy fallback' where a primitive has no lowering); 'by hand' (NumPy).", file=out)


# ---------------------------------------------------------------------- plots
def run_sweeps(modules: list[ModuleType], size: str, settings: Settings,
               out: TextIO) -> list[dict]:
    sweeps = []
    for module in modules:
        make = getattr(module, "sweep", None)
        if make is None:
            continue
        s = make(size)
        print(f"\n(figure data: {s.title} ...)", file=out, flush=True)
        points = []
        for x, cases in s.points:
            for r in time_cases(module.NAME, cases, settings, out):
                points.append({"x": x, **r})
        sweeps.append({"workload": module.NAME, "title": s.title, "xlabel": s.xlabel,
                       "filename": s.filename, "points": points})
    return sweeps


def plot(sweeps: list[dict], directory: str, out: TextIO) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    os.makedirs(directory, exist_ok=True)
    for s in sweeps:
        panels = list(dict.fromkeys(p["group"] for p in s["points"]))
        fig, axes = plt.subplots(1, len(panels), figsize=(6.5 * len(panels), 4.8), squeeze=False)
        for ax, panel in zip(axes[0], panels):
            members = [p for p in s["points"] if p["group"] == panel and p.get("median_s")]
            for name in dict.fromkeys(p["case"] for p in members):
                line = sorted((p["x"], p["median_s"] * 1e3, p["framework"])
                              for p in members if p["case"] == name)
                ours = line[0][2] == "tapeflow"
                ax.plot([p[0] for p in line], [p[1] for p in line],
                        marker="o" if ours else "s", linestyle="-" if ours else "--",
                        linewidth=2 if ours else 1.2, label=name)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.set_xlabel(s["xlabel"])
            ax.set_ylabel("time, ms (median)")
            ax.set_title(panel, fontsize=10)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(fontsize=7)
        fig.suptitle(s["title"], fontsize=11)
        fig.tight_layout()
        path = os.path.join(directory, s["filename"])
        fig.savefig(path, dpi=120)
        plt.close(fig)
        print(f"wrote {path}", file=out)


# ---------------------------------------------------------------------- main
def main(argv: Sequence[str] | None = None, out: TextIO | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--memory-child"]:  # internal: one memory case in a fresh process
        module_name, index, size, path = argv[1:5]
        return memory_child(module_name, int(index), size, path)
    out = sys.stdout if out is None else out
    modules = workloads()
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true",
                        help="small repeats (and smaller problems where the full ones are "
                             "slow): a smoke run of the whole suite")
    parser.add_argument("--only", metavar="NAME[,NAME]",
                        help="run only these workloads: " + ", ".join(m.NAME for m in modules))
    parser.add_argument("--json", metavar="PATH", help="also write every result to PATH")
    parser.add_argument("--plot", metavar="DIR",
                        help="also time the scaling sweeps and save PNG figures in DIR "
                             "(needs matplotlib)")
    parser.add_argument("--frameworks", metavar="NAME[,NAME]",
                        help="run only these frameworks' cases: "
                             + ", ".join(common.FRAMEWORKS))
    parser.add_argument("--tiny", action="store_true",
                        help="problems of a few elements, to check that the suite itself runs "
                             "(the timings mean nothing)")
    parser.add_argument("--list", action="store_true", help="list the workloads and exit")
    args = parser.parse_args(argv)
    if args.list:
        for m in modules:
            print(f"{m.NAME:10s} {m.TITLE}", file=out)
        return 0
    if args.plot and not common.installed("matplotlib"):
        print("--plot needs matplotlib, which is not installed: pip install matplotlib "
              "(or pip install -e '.[bench]' for all the peers). Nothing was run.", file=out)
        return 2
    chosen = select(modules, args.only)
    frameworks = pick_frameworks(args.frameworks)
    size = "tiny" if args.tiny else "quick" if args.quick else "full"
    settings = QUICK if args.quick or args.tiny else FULL
    env = environment()
    print_environment(env, settings, args.quick, out)
    started = time.perf_counter()
    rows: list[dict] = []
    for module in progress(chosen, desc="workloads", enabled=out is sys.stdout):
        cases = [c for c in module.cases(size) if c.framework in frameworks]
        print(f"\n(running {module.NAME}: {len(cases)} cases ...)", file=out, flush=True)
        if cases and cases[0].metric == "memory":
            these = measure_memory(module, size, frameworks, out)
        else:
            these = time_cases(module.NAME, cases, settings, out)
        add_ratios(these)
        print_workload(module, these, out)
        out.flush()
        rows += these
    print_summary(rows, out)
    print_xla_summary(rows, out)
    sweeps = []
    if args.plot:
        sweeps = run_sweeps(chosen, size, SWEEP_QUICK if args.quick else SWEEP_FULL, out)
        plot(sweeps, args.plot, out)
    failures = [r for r in rows if r["status"] in ("wrong", "error")]
    skipped = sorted({r["framework"] for r in rows if r["status"] == "skipped"})
    print(f"\n{len(rows)} cases in {time.perf_counter() - started:.0f} s; "
          f"skipped frameworks: {', '.join(skipped) or 'none'}; "
          f"failures: {len(failures)}", file=out)
    for r in failures:
        print(f"  FAILED {r['workload']} / {r['case']}: {r['error']}", file=out)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump({"environment": env, "quick": args.quick, "rows": rows,
                       "sweeps": sweeps}, fh, indent=2, default=str)
        print(f"wrote {args.json}", file=out)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
