"""Per-primitive timing against TensorFlow's CPU kernels, and cliff detection over batch size.

Run with the peers' virtualenv (TensorFlow required)::

    python benchmarks/primitives.py --quick                  # a small subset, about a minute
    python benchmarks/primitives.py --only conv,pool --json out.json --markdown out.md

What is measured, and why: vectorized Jacobians spend their time in a few expensive
primitives (conv2d and its two transposes, pooling, batched matmul/einsum, softmax and
the cross-entropies, reductions, gather and its scatter-add transpose, small batched
linear algebra), run on batched shapes. Each row times one such computation in tapeflow
and the TensorFlow kernel doing the same work on the same float32 inputs: the forward
and every derivative rule, at several levels (the primitive's NumPy impl, the public op,
the vmap batching rule, a tape's backward pass: see benchmarks/primitives_cases.py). The
batch size varies over each row family so that a cliff (time per example jumping at
some batch size: a copy falling out of cache, a per-matrix loop, a path switch) shows
as a bend in the per-example time.

Method: one thread on each side (OMP/OpenBLAS/MKL_NUM_THREADS=1 set before NumPy is
imported; TensorFlow's intra- and inter-op pools of 1). Each row is built, warmed up
and checked (tapeflow's result equals TensorFlow's to rtol 1e-4, with an absolute
tolerance of 1e-4 times the largest magnitude, so cancellation near zero is not a
failure); a row that differs is reported and not timed. Then tapeflow and TensorFlow
alternate, repeat after repeat, each timing a loop of calls long enough to time
reliably; the median per-call time of each side is reported. On a shared machine a
busy spell inflates single samples, so every flagged row (ratio > 2, or part of a
cliff) is measured a second time and keeps, per side, the lower of its two medians;
flags are computed from those.

Flags: ``slow`` where tapeflow/TF > 2; ``cliff`` on a row family whose tapeflow time per
example rises by more than 1.5x from a smaller batch to a larger one (the largest such
rise is reported, with TensorFlow's over the same batches for comparison).
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"  # before NumPy (and TensorFlow) are imported
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import argparse  # noqa: E402
import dataclasses  # noqa: E402
import json  # noqa: E402
import platform  # noqa: E402
import statistics  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
from typing import Any, Callable, Iterable, Sequence  # noqa: E402

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(1)
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.get_logger().setLevel("ERROR")

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from primitives_cases import BUILDERS, GROUPS, Case  # noqa: E402

SLOW_RATIO = 2.0
CLIFF_RISE = 1.5
RTOL = 1e-4


# ------------------------------------------------------------------ measurement
@dataclasses.dataclass
class Row:
    """One measured case: per-side median seconds per call (None if not timed)."""

    case: Case
    ours: float | None = None
    theirs: float | None = None
    medians: list[tuple[float, float]] = dataclasses.field(default_factory=list)
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        return None if self.ours is None else self.ours / self.theirs

    def to_json(self) -> dict:
        c = self.case
        return {"group": c.group, "primitive": c.prim, "rule": c.rule, "level": c.level,
                "config": c.config, "batch": c.batch, "tf_side": c.tf_side,
                "tapeflow_s": self.ours, "tf_s": self.theirs, "ratio": self.ratio,
                "medians": self.medians, "error": self.error}


def to_arrays(result: Any) -> list[np.ndarray]:
    """A result (array, tensor, or a tuple/list of them) as a list of NumPy arrays."""
    items = result if isinstance(result, (tuple, list)) else [result]
    return [np.asarray(r.numpy() if hasattr(r, "numpy") else r) for r in items]


def mismatch(ours: Any, theirs: Any) -> str | None:
    """Why tapeflow's result differs from TensorFlow's, or None if they agree."""
    a, b = to_arrays(ours), to_arrays(theirs)
    if len(a) != len(b):
        return f"{len(a)} outputs vs {len(b)}"
    for i, (x, y) in enumerate(zip(a, b)):
        if x.shape != y.shape:
            return f"output {i}: shape {x.shape} vs {y.shape}"
        scale = float(np.max(np.abs(y))) if y.size else 0.0
        if not np.allclose(x, y, rtol=RTOL, atol=RTOL * scale):
            err = float(np.max(np.abs(x.astype(np.float64) - y)))
            return f"output {i}: max abs error {err:.3g} (scale {scale:.3g})"
    return None


def loop_size(fn: Callable[[], Any], target: float) -> int:
    """Calls per timed loop so that one loop lasts about `target` seconds."""
    once = timeit.Timer(fn).timeit(1)
    return max(1, int(target / max(once, 1e-7)))


def interleaved_medians(ours: Callable[[], Any], theirs: Callable[[], Any], repeats: int,
                        target: float) -> tuple[float, float]:
    """Median seconds per call of each side over `repeats` loops, the sides alternating
    loop by loop so that a change of machine load hits both alike."""
    n_ours, n_theirs = loop_size(ours, target), loop_size(theirs, target)
    if max(n_ours, n_theirs) == 1 and timeit.Timer(ours).timeit(1) > 1.0:
        repeats = min(repeats, 3)  # very slow rows: fewer samples
    a, b = [], []
    for _ in range(repeats):
        a.append(timeit.Timer(ours).timeit(n_ours) / n_ours)
        b.append(timeit.Timer(theirs).timeit(n_theirs) / n_theirs)
    return statistics.median(a), statistics.median(b)


def measure(case: Case, repeats: int, target: float) -> Row:
    """Build, warm up, check, then time one case."""
    row = Row(case)
    try:
        ours, theirs = case.build()
        ours(), theirs()  # warm-up (TensorFlow traces its tf.function rows here)
        row.error = mismatch(ours(), theirs())
        if row.error is None:
            row.medians.append(interleaved_medians(ours, theirs, repeats, target))
            row.ours, row.theirs = row.medians[0]
    except Exception as e:  # noqa: BLE001 - one broken row must not end the run
        row.error = f"{type(e).__name__}: {e}"[:300]
    return row


def remeasure(row: Row, repeats: int, target: float) -> None:
    """Time a flagged row again; each side keeps the lower of its medians (load only
    ever adds time)."""
    ours, theirs = row.case.build()
    ours(), theirs()
    row.medians.append(interleaved_medians(ours, theirs, repeats, target))
    row.ours = min(m[0] for m in row.medians)
    row.theirs = min(m[1] for m in row.medians)


# ------------------------------------------------------------------ analysis
@dataclasses.dataclass
class Curve:
    """One row family over batch sizes: time per example on each side, and its rises."""

    key: tuple
    batches: list[int]
    ours_pe: list[float]
    theirs_pe: list[float]
    rise: float           # largest tapeflow per-example ratio, larger batch over smaller
    rise_at: tuple[int, int]
    theirs_rise: float    # TensorFlow's ratio over the same two batch sizes
    spread: float         # worst / best tapeflow per-example time

    @property
    def cliff(self) -> bool:
        return self.rise > CLIFF_RISE


def largest_rise(values: Sequence[float]) -> tuple[float, int, int]:
    """max over i < j of values[j] / values[i], with its (i, j)."""
    best, at = 1.0, (0, 0)
    for j in range(len(values)):
        for i in range(j):
            if values[j] / values[i] > best:
                best, at = values[j] / values[i], (i, j)
    return best, at[0], at[1]


def curves(rows: Iterable[Row]) -> list[Curve]:
    families: dict[tuple, list[Row]] = {}
    for r in rows:
        if r.ours is not None:
            families.setdefault(r.case.series, []).append(r)
    out = []
    for key, members in families.items():
        members.sort(key=lambda r: r.case.batch)
        if len(members) < 2:
            continue
        batches = [r.case.batch for r in members]
        ours = [r.ours / r.case.batch for r in members]
        theirs = [r.theirs / r.case.batch for r in members]
        rise, i, j = largest_rise(ours)
        out.append(Curve(key, batches, ours, theirs, rise, (batches[i], batches[j]),
                         theirs[j] / theirs[i], max(ours) / min(ours)))
    return out


def suspects(rows: list[Row]) -> list[Row]:
    """Rows to measure again: ratio above the threshold, or the two ends of a cliff."""
    picked = {id(r): r for r in rows if r.ratio is not None and r.ratio > SLOW_RATIO}
    by_key = {(r.case.series, r.case.batch): r for r in rows}
    for c in curves(rows):
        if c.cliff:
            for b in c.rise_at:
                r = by_key[(c.key, b)]
                picked[id(r)] = r
    return list(picked.values())


# ------------------------------------------------------------------ output
def fmt_time(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    return f"{seconds * 1e3:.3f}" if seconds < 0.01 else f"{seconds * 1e3:.1f}"


def rows_table(rows: list[Row]) -> list[str]:
    lines = ["| primitive | rule | level | config | B | tapeflow ms | TF ms | tapeflow/TF | TF side | flag |",
             "|---|---|---|---|---:|---:|---:|---:|---|---|"]
    for r in rows:
        c = r.case
        ratio = "-" if r.ratio is None else f"{r.ratio:.2f}"
        flag = ("MISMATCH: " + r.error) if r.error else ("slow" if r.ratio > SLOW_RATIO else "")
        lines.append(f"| {c.prim} | {c.rule} | {c.level} | {c.config} | {c.batch} | "
                     f"{fmt_time(r.ours)} | {fmt_time(r.theirs)} | {ratio} | {c.tf_side} | {flag} |")
    return lines


def curves_table(cs: list[Curve]) -> list[str]:
    lines = ["| primitive | rule | level | config | tapeflow us/example (B: value) | worst/best | "
             "largest rise (batches) | TF rise same batches | flag |",
             "|---|---|---|---|---|---:|---:|---:|---|"]
    for c in cs:
        _, prim, rule, level, config = c.key
        per = ", ".join(f"{b}: {v * 1e6:.3g}" for b, v in zip(c.batches, c.ours_pe))
        lines.append(f"| {prim} | {rule} | {level} | {config} | {per} | {c.spread:.2f} | "
                     f"{c.rise:.2f} ({c.rise_at[0]}->{c.rise_at[1]}) | {c.theirs_rise:.2f} | "
                     f"{'cliff' if c.cliff else ''} |")
    return lines


def header() -> list[str]:
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("?",)
    return [f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
            f"load average {' '.join(f'{v:.2f}' for v in load)}; Python "
            f"{platform.python_version()}, NumPy {np.__version__}, TensorFlow {tf.__version__}; "
            "one thread per side (OMP/OPENBLAS/MKL_NUM_THREADS=1, TF intra/inter-op 1).", ""]


def report(rows: list[Row], groups: Sequence[str]) -> str:
    lines = ["# tapeflow primitives against TensorFlow CPU kernels (float32)", ""] + header()
    flagged_rows = [r for r in rows if r.error or (r.ratio is not None and r.ratio > SLOW_RATIO)]
    cliffs = [c for c in curves(rows) if c.cliff]
    lines += ["## Flagged", "",
              f"{len(flagged_rows)} rows with tapeflow/TF > {SLOW_RATIO} or a mismatch; "
              f"{len(cliffs)} row families whose per-example time rises > {CLIFF_RISE}x.", ""]
    if flagged_rows:
        lines += rows_table(sorted(flagged_rows, key=lambda r: -(r.ratio or 0))) + [""]
    if cliffs:
        lines += curves_table(sorted(cliffs, key=lambda c: -c.rise)) + [""]
    for g in groups:
        mine = [r for r in rows if r.case.group == g]
        if not mine:
            continue
        lines += [f"## {g}", ""] + rows_table(mine) + ["", "Linearity:", ""]
        lines += curves_table(curves(mine)) + [""]
    return "\n".join(lines)


# ------------------------------------------------------------------ driver
def progress(row: Row, index: int, total: int) -> None:
    c = row.case
    what = row.error or f"{fmt_time(row.ours)} ms vs {fmt_time(row.theirs)} ms ({row.ratio:.2f}x)"
    print(f"[{index}/{total}] {c.prim} {c.rule} {c.level} {c.config} B={c.batch}: {what}",
          file=sys.stderr, flush=True)


def run_group(group: str, quick: bool, repeats: int, target: float, confirm: bool) -> list[Row]:
    cases = BUILDERS[group](quick)
    rows = []
    for i, case in enumerate(cases, 1):
        rows.append(measure(case, repeats, target))
        progress(rows[-1], i, len(cases))
    if confirm:
        again = suspects(rows)
        for i, row in enumerate(again, 1):
            remeasure(row, repeats, target)
            ours, theirs = row.medians[-1]
            print(f"  again {i}/{len(again)}: {fmt_time(ours)} ms vs {fmt_time(theirs)} ms;",
                  end=" ", file=sys.stderr)
            progress(row, i, len(again))
    return rows


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="a small subset (about a minute)")
    parser.add_argument("--only", default=",".join(GROUPS),
                        help=f"comma-separated groups among {'|'.join(GROUPS)}")
    parser.add_argument("--repeats", type=int, default=None, help="timed loops per side")
    parser.add_argument("--no-confirm", action="store_true",
                        help="do not measure flagged rows a second time")
    parser.add_argument("--json", help="write the rows to this file")
    parser.add_argument("--markdown", help="write the report to this file too")
    opts = parser.parse_args(argv)
    opts.groups = [g.strip() for g in opts.only.split(",") if g.strip()]
    unknown = set(opts.groups) - set(GROUPS)
    if unknown:
        parser.error(f"unknown group(s) {sorted(unknown)}; choose among {', '.join(GROUPS)}")
    return opts


def main(argv: list[str] | None = None) -> None:
    opts = parse(argv)
    repeats = opts.repeats or (3 if opts.quick else 7)
    target = 0.01 if opts.quick else 0.03
    start, rows = time.time(), []
    for g in opts.groups:
        rows += run_group(g, opts.quick, repeats, target, not opts.no_confirm)
        if opts.json:  # written after every group: a long run keeps what it measured
            with open(opts.json, "w") as fh:
                json.dump({"header": header(), "rows": [r.to_json() for r in rows]}, fh, indent=1)
    text = report(rows, opts.groups) + f"\n\n({time.time() - start:.0f} s)\n"
    print(text)
    if opts.markdown:
        with open(opts.markdown, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
