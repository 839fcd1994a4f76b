"""Dispatch-overhead micro-benchmark: what does tapeflow add on top of NumPy?

Run from the repository root::

    python benchmarks/dispatch.py            # about half a minute
    python benchmarks/dispatch.py --quick    # a few seconds, rougher numbers
    python benchmarks/dispatch.py --json results.json

On 16-element float64 arrays the arithmetic is negligible, so every number
below is per-op overhead: (a) bare NumPy ufuncs, (b) tapeflow ops with no
recorder active, (c) the same ops while a GradientTape records a watched input
(and while a ForwardAccumulator is active), (d) forward + gradient of a
1,000-op chain against the same 1,000 NumPy calls by hand, (e) that chain under
a ForwardAccumulator. Each case is timed with ``timeit``; the reported time is
the best (minimum) of several repeats, divided by the number of ops.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import sys
import timeit
from dataclasses import asdict, dataclass
from typing import Any, Callable, ContextManager, Iterator

import numpy as np

try:
    import tapeflow as tf
except ImportError:  # running from a checkout without `pip install -e .`
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))
    import tapeflow as tf

N = 16
CHAIN_OPS = 1000
SCALE = 1.0001


@dataclass
class Row:
    """One line of the results table."""

    group: str
    case: str
    ops_per_call: int
    baseline: str | None = None
    us_per_op: float | None = None
    ratio: float | None = None
    number: int = 0
    repeat: int = 0
    error: str | None = None


def best_seconds_per_call(
    fn: Callable[[], Any],
    *,
    target: float,
    repeat: int,
    context: Callable[[], ContextManager[Any]] = contextlib.nullcontext,
) -> tuple[float, int]:
    """Best (minimum) seconds per call of ``fn`` over ``repeat`` timeit runs.

    The loop count is grown until one run takes at least ``target`` seconds, so
    timer resolution does not matter. Each run happens inside a fresh
    ``context()`` so that a recording tape is discarded between runs instead
    of growing for the whole benchmark.
    """
    number = 1
    while True:
        with context():
            elapsed = timeit.Timer(fn).timeit(number)
        if elapsed >= target or number >= 10**7:
            break
        # Aim a little past the target so the loop ends in one or two steps.
        number = max(number * 2, int(number * 1.2 * target / max(elapsed, 1e-9)))
    runs = []
    for _ in range(repeat):
        with context():
            runs.append(timeit.Timer(fn).timeit(number))
    return min(runs) / number, number


def chain(sin: Callable[[Any], Any], x: Any, n_ops: int = CHAIN_OPS) -> Any:
    """The benchmark chain for any array library: alternating ``sin`` and ``* 1.0001``.

    Only ``sin`` differs between libraries (``np.sin``, ``tf.sin``, ``torch.sin``...);
    the product with a Python float keeps the input's dtype in all of them.
    """
    y = x
    for i in range(n_ops):
        y = sin(y) if i % 2 == 0 else y * SCALE
    return y


def numpy_chain(x: np.ndarray, n_ops: int = CHAIN_OPS) -> np.ndarray:
    """The benchmark chain written directly in NumPy: 1,000 ufunc calls."""
    y = x
    for i in range(n_ops):
        y = np.sin(y) if i % 2 == 0 else np.multiply(y, SCALE)
    return y


def numpy_chain_grad(x: np.ndarray, n_ops: int = CHAIN_OPS) -> np.ndarray:
    """Hand-written forward and reverse pass of the chain, for reference."""
    saved = []
    y = x
    for i in range(n_ops):
        if i % 2 == 0:
            saved.append(y)
            y = np.sin(y)
        else:
            y = np.multiply(y, SCALE)
    g = np.ones_like(y)
    for i in reversed(range(n_ops)):
        g = np.multiply(g, np.cos(saved.pop())) if i % 2 == 0 else np.multiply(g, SCALE)
    return g


def numpy_chain_jvp(x: np.ndarray, n_ops: int = CHAIN_OPS) -> np.ndarray:
    """Hand-written forward mode of the chain with a tangent of ones: the same
    elementwise derivative as `numpy_chain_grad`, keeping only the current value."""
    y, t = x, np.ones_like(x)
    for i in range(n_ops):
        if i % 2 == 0:
            t = np.multiply(t, np.cos(y))
            y = np.sin(y)
        else:
            y = np.multiply(y, SCALE)
            t = np.multiply(t, SCALE)
    return t


def tf_chain(t: Any, n_ops: int = CHAIN_OPS) -> Any:
    """The same chain in tapeflow: alternating ``tf.sin`` and ``* 1.0001``."""
    return chain(tf.sin, t, n_ops)


def run(quick: bool) -> list[Row]:
    """Time every case and return the table rows (errors are kept per row)."""
    target, repeat = (0.01, 2) if quick else (0.2, 5)
    rng = np.random.default_rng(0)
    x = rng.standard_normal(N)
    y = rng.standard_normal(N)
    t = tf.constant(x)
    u = tf.constant(y)
    tangent = tf.constant(np.ones(N))

    @contextlib.contextmanager
    def taping() -> Iterator[None]:
        with tf.GradientTape() as tape:
            tape.watch(t)
            yield

    def accumulating() -> ContextManager[Any]:
        return tf.autodiff.ForwardAccumulator(t, tangent)

    def chain_grad() -> Any:
        xt = tf.constant(x)
        with tf.GradientTape() as tape:
            tape.watch(xt)
            out = tf_chain(xt)
            total = tf.reduce_sum(out)
        return tape.gradient(total, xt)

    def chain_jvp() -> Any:
        xt = tf.constant(x)
        with tf.autodiff.ForwardAccumulator(xt, tangent) as acc:
            total = tf.reduce_sum(tf_chain(xt))
        return acc.jvp(total)

    single = [
        ("np.sin(x)", lambda: np.sin(x)),
        ("np.multiply(x, y)", lambda: np.multiply(x, y)),
        ("np.zeros_like(x)", lambda: np.zeros_like(x)),
        ("np.array(x.shape)", lambda: np.array(x.shape, np.int32)),
        ("np.mean(x)", lambda: np.mean(x)),
    ]
    ops = [
        ("tf.sin(t)", lambda: tf.sin(t), "np.sin(x)"),
        ("tf.multiply(t, u)", lambda: tf.multiply(t, u), "np.multiply(x, y)"),
        ("t * u", lambda: t * u, "np.multiply(x, y)"),
    ]
    # Ops whose values come from sizes bind a primitive whose params hold the sizes
    # (NOTE(dynamic-shapes) in ops/sizes.py): one bind, where a constant would do eagerly.
    sized = [
        ("tf.zeros_like(t)", lambda: tf.zeros_like(t), "np.zeros_like(x)"),
        ("tf.shape(t)", lambda: tf.shape(t), "np.array(x.shape)"),
        ("tf.reduce_mean(t)", lambda: tf.reduce_mean(t), "np.mean(x)"),
    ]
    plan: list[tuple[Row, Callable[[], Any], Callable[[], ContextManager[Any]]]] = []
    for name, fn in single:
        plan.append((Row("(a) NumPy", name, 1), fn, contextlib.nullcontext))
    for name, fn, base in sized:
        plan.append((Row("(b) tapeflow, values from sizes", name, 1, baseline=base), fn,
                     contextlib.nullcontext))
    for group, ctx in (
        ("(b) tapeflow, no recorder", contextlib.nullcontext),
        ("(c) tapeflow, GradientTape recording", taping),
        ("(c) tapeflow, ForwardAccumulator active", accumulating),
    ):
        for name, fn, base in ops:
            plan.append((Row(group, name, 1, baseline=base), fn, ctx))
    chain = f"{CHAIN_OPS}-op chain"
    plan += [
        (Row("(d) chain", f"NumPy forward, {chain}", CHAIN_OPS), lambda: numpy_chain(x),
         contextlib.nullcontext),
        (Row("(d) chain", f"NumPy forward+backward by hand, {chain}", CHAIN_OPS,
             baseline=f"NumPy forward, {chain}"), lambda: numpy_chain_grad(x), contextlib.nullcontext),
        (Row("(d) chain", f"tapeflow forward, no recorder, {chain}", CHAIN_OPS,
             baseline=f"NumPy forward, {chain}"), lambda: tf_chain(t), contextlib.nullcontext),
        (Row("(d) chain", f"tapeflow forward+gradient (GradientTape), {chain}", CHAIN_OPS,
             baseline=f"NumPy forward, {chain}"), chain_grad, contextlib.nullcontext),
        (Row("(e) chain", f"tapeflow forward+jvp (ForwardAccumulator), {chain}", CHAIN_OPS,
             baseline=f"NumPy forward, {chain}"), chain_jvp, contextlib.nullcontext),
    ]

    # A benchmark of wrong answers is worthless: check the chain's derivatives
    # against the hand-written reverse pass before timing anything.
    expected = numpy_chain_grad(x)
    checks = {
        f"tapeflow forward+gradient (GradientTape), {chain}": chain_grad,
        f"tapeflow forward+jvp (ForwardAccumulator), {chain}": chain_jvp,
    }

    rows: list[Row] = []
    by_case: dict[str, Row] = {}
    for row, fn, ctx in plan:
        row.repeat = repeat
        try:
            if row.case in checks:
                got = np.asarray(checks[row.case]().numpy())
                # A ones tangent makes the JVP of sum(y) equal to sum of the gradient.
                want = expected if got.shape == expected.shape else np.sum(expected)
                if not np.allclose(got, want, rtol=1e-10, atol=1e-12):
                    raise AssertionError(f"wrong derivative: got {got!r}, expected {want!r}")
            seconds, row.number = best_seconds_per_call(fn, target=target, repeat=repeat, context=ctx)
            row.us_per_op = seconds * 1e6 / row.ops_per_call
        except Exception as exc:  # noqa: BLE001 - report the failing case, time the others
            row.error = f"{type(exc).__name__}: {exc}"
        base = by_case.get(row.baseline) if row.baseline else None
        if base is not None and base.us_per_op and row.us_per_op is not None:
            row.ratio = row.us_per_op / base.us_per_op
        by_case[row.case] = row
        rows.append(row)
    return rows


def print_table(rows: list[Row], out: Any = sys.stdout) -> None:
    """Print the rows as a fixed-width table with microseconds per op."""
    width = max(len(r.case) for r in rows)
    header = f"{'case':<{width}}  {'us/op':>9}  {'x NumPy':>8}  baseline"
    print(header, file=out)
    print("-" * len(header), file=out)
    group = None
    for r in rows:
        if r.group != group:
            group = r.group
            print(f"{group}", file=out)
        if r.error is not None:
            print(f"{r.case:<{width}}  {'error':>9}  {'':>8}  {r.error}", file=out)
            continue
        ratio = f"{r.ratio:8.1f}" if r.ratio is not None else f"{'':>8}"
        print(f"{r.case:<{width}}  {r.us_per_op:9.3f}  {ratio}  {r.baseline or ''}", file=out)
    print(f"\nChain rows: total time per call divided by the {CHAIN_OPS} forward ops, so the "
          "backward or JVP work is\ncounted in that per-op time; 'x NumPy' is the ratio to the "
          "baseline case's time.", file=out)


def main(argv: list[str] | None = None) -> int:
    """Parse arguments, run the benchmark, print (and optionally save) results.

    Returns 0 when every case ran and its derivatives were correct, 1 when any
    case failed (the table still shows the cases that ran).
    """
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (a few seconds in total)")
    parser.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    args = parser.parse_args(argv)

    meta = {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "tapeflow": getattr(tf, "__version__", "unknown"),
        "machine": platform.machine(),
        "platform": platform.platform(),
        "quick": args.quick,
        "n": N,
        "dtype": "float64",
        "chain_ops": CHAIN_OPS,
    }
    print(f"tapeflow {meta['tapeflow']}, NumPy {meta['numpy']}, Python {meta['python']}, "
          f"{meta['platform']}; {N}-element float64 arrays; best of "
          f"{2 if args.quick else 5} repeats{' (--quick)' if args.quick else ''}")
    print()
    rows = run(args.quick)
    print_table(rows)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump({"meta": meta, "rows": [asdict(r) for r in rows]}, fh, indent=2)
        print(f"\nwrote {args.json}")
    return 1 if any(r.error for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
