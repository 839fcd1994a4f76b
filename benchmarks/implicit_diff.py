"""Implicit differentiation of a fit's solution with respect to its regularization:
tapeflow.scipy (the gradient's root, its derivative one matrix-free CG solve) against
finite differences of SciPy's own solve, and against jaxopt where it is installed.

Run (jaxopt optional; never a requirement of tapeflow's)::

    python benchmarks/implicit_diff.py            # full sizes, about a minute
    python benchmarks/implicit_diff.py --quick    # small sizes, seconds

Each problem fits w*(lam) = argmin_w loss(w) + lam / 2 |w|^2 (ridge: squared error;
logistic regression: the logistic loss) and differentiates a validation loss
V(w*(lam)) = |X_val w* - y_val|^2 / 2 in lam, the hypergradient of hyperparameter
search. Rows:

- **SciPy solve**: the fit alone, SciPy's BFGS on a NumPy objective and gradient (the
  baseline a user has);
- **central FD of SciPy's solve**: the hypergradient from two more solves at lam +- eps;
- **tapeflow, eager**: `tfs.minimize(..., args=(lam,))` under a tape, then
  `tape.gradient` (the solve plus one CG solve on Hessian-vector products);
- **tapeflow, tf.function**: the same traced once and replayed (SciPy runs at each call);
- **jaxopt**: `jaxopt.LBFGS(implicit_diff=True)` under `jax.grad`, jitted (its first call
  compiles; the steady call is reported, and the first beside it).

Each time is the median of 5 runs, on one BLAS thread. The error is the hypergradient's relative distance
to the closed form -dV/dw H^-1 w* (H the Hessian at a solution polished to machine
precision).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from typing import Any, Callable

# One BLAS thread for every solver: on a machine whose cores are busy, a threaded product
# (BFGS's 100 x 100 updates) stalls waiting for a time slice, and the stalls, not the
# methods, would decide the times (NOTE(blas-threads) in tapeflow/blas.py).
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import scipy.optimize  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("tapeflow") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402

GTOL = 1e-6  # BFGS stops on precision loss (success False) below this at these sizes


def _timed(run: Callable[[], Any], repeats: int = 5) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _data(n: int, p: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, p)) / np.sqrt(p)
    truth = rng.standard_normal(p)
    y = x @ truth + 0.5 * rng.standard_normal(n)
    labels = np.where(x @ truth + 0.3 * rng.standard_normal(n) > 0, 1.0, -1.0)
    xv = rng.standard_normal((n // 2, p)) / np.sqrt(p)
    return {"x": x, "y": y, "labels": labels, "xv": xv, "yv": xv @ truth}


# ------------------------------------------------------------------ the two problems
def numpy_objective(kind: str, d: dict, lam: float) -> Callable:
    x = d["x"]

    def f(w: np.ndarray) -> tuple:
        if kind == "ridge":
            r = x @ w - d["y"]
            return 0.5 * r @ r + 0.5 * lam * w @ w, x.T @ r + lam * w
        m = d["labels"] * (x @ w)
        return (np.sum(np.logaddexp(0.0, -m)) + 0.5 * lam * w @ w,
                -x.T @ (d["labels"] / (1.0 + np.exp(m))) + lam * w)
    return f


def tf_objective(kind: str, d: dict) -> Callable:
    x = tf.constant(d["x"])

    def f(w: Any, lam: Any) -> Any:
        if kind == "ridge":
            r = tf.linalg.matvec(x, w) - d["y"]
            loss = 0.5 * tf.reduce_sum(r * r)
        else:
            m = tf.constant(d["labels"]) * tf.linalg.matvec(x, w)
            loss = tf.reduce_sum(tf.math.softplus(-m))
        return loss + 0.5 * lam * tf.reduce_sum(w * w)
    return f


def validation(d: dict, w: np.ndarray) -> float:
    r = d["xv"] @ w - d["yv"]
    return 0.5 * float(r @ r)


def scipy_fit(kind: str, d: dict, lam: float, gtol: float = GTOL) -> np.ndarray:
    p = d["x"].shape[1]
    return scipy.optimize.minimize(numpy_objective(kind, d, lam), np.zeros(p), jac=True,
                                   method="BFGS", options={"gtol": gtol}).x


def reference(kind: str, d: dict, lam: float) -> float:
    """The hypergradient from the closed form dw*/dlam = -H^-1 w* (H the Hessian at the
    solution): for ridge H = X^T X + lam I; for logistic, at a solution polished by
    Newton's method to machine precision (a finite difference of SciPy's solves is only
    as exact as their stopping rule: about 1e-6 relative here)."""
    x = d["x"]
    eye = np.eye(x.shape[1])
    if kind == "ridge":
        h = x.T @ x + lam * eye
        w = np.linalg.solve(h, x.T @ d["y"])
    else:
        w = scipy_fit(kind, d, lam, 1e-10)
        for _ in range(8):
            s = 1.0 / (1.0 + np.exp(-d["labels"] * (x @ w)))
            h = x.T @ (x * (s * (1.0 - s))[:, None]) + lam * eye
            w = w - np.linalg.solve(h, numpy_objective(kind, d, lam)(w)[1])
    dw = -np.linalg.solve(h, w)
    return float((d["xv"] @ w - d["yv"]) @ (d["xv"] @ dw))


def tapeflow_hypergradient(kind: str, d: dict) -> Callable:
    fun = tf_objective(kind, d)
    xv, yv = tf.constant(d["xv"]), tf.constant(d["yv"])
    p = d["x"].shape[1]

    def run(lam: Any) -> Any:
        with tf.GradientTape() as tape:
            tape.watch(lam)
            w = tfs.minimize(fun, np.zeros(p), args=(lam,), method="BFGS",
                             options={"gtol": GTOL}).x
            r = tf.linalg.matvec(xv, w) - yv
            v = 0.5 * tf.reduce_sum(r * r)
        return tape.gradient(v, lam)
    return run


def jaxopt_hypergradient(kind: str, d: dict) -> Callable | None:
    try:
        import jax
        import jaxopt
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    jnp = jax.numpy
    x, xv, yv = jnp.asarray(d["x"]), jnp.asarray(d["xv"]), jnp.asarray(d["yv"])
    y, labels = jnp.asarray(d["y"]), jnp.asarray(d["labels"])

    def loss(w: Any, lam: Any) -> Any:
        if kind == "ridge":
            r = x @ w - y
            value = 0.5 * r @ r
        else:
            value = jnp.sum(jnp.logaddexp(0.0, -labels * (x @ w)))
        return value + 0.5 * lam * w @ w

    solver = jaxopt.LBFGS(fun=loss, tol=GTOL, maxiter=2000, implicit_diff=True)

    def outer(lam: Any) -> Any:
        w = solver.run(jnp.zeros(x.shape[1]), lam).params
        r = xv @ w - yv
        return 0.5 * r @ r

    return jax.jit(jax.grad(outer))


def _row(name: str, seconds: float, base: float, error: Any) -> str:
    err = "-" if error is None else f"{error:.1e}"  # relative to the reference
    return f"| {name} | {seconds * 1e3:.1f} ms | {seconds / base:.2f}x | {err} |"


def bench(kind: str, n: int, p: int, lam: float = 1.0) -> list[str]:
    d = _data(n, p, seed=0 if kind == "ridge" else 1)
    want = reference(kind, d, lam)
    lines = [f"### {kind}: n = {n} samples, p = {p} features, lam = {lam}", "",
             "| method | time | vs SciPy solve | hypergradient, relative error |",
             "| --- | --- | --- | --- |"]
    base, _ = _timed(lambda: scipy_fit(kind, d, lam))
    lines.append(_row("SciPy solve (no derivative)", base, base, None))
    eps = 1e-5

    def fd() -> float:
        return (validation(d, scipy_fit(kind, d, lam + eps))
                - validation(d, scipy_fit(kind, d, lam - eps))) / (2 * eps)

    def error(g: float) -> float:
        return abs(g - want) / abs(want)

    t, g = _timed(fd)
    lines.append(_row(f"central FD of SciPy's solve (eps={eps:g}, 2 solves)", t, base,
                      error(g)))
    hyper = tapeflow_hypergradient(kind, d)
    t, g = _timed(lambda: float(hyper(tf.constant(lam, tf.float64))))
    lines.append(_row("tapeflow implicit (eager: solve + CG solve)", t, base, error(g)))
    traced = tf.function(hyper)
    traced(tf.constant(lam, tf.float64))
    t, g = _timed(lambda: float(traced(tf.constant(lam, tf.float64))))
    lines.append(_row("tapeflow implicit (tf.function, replayed)", t, base, error(g)))
    jaxopt_grad = jaxopt_hypergradient(kind, d)
    if jaxopt_grad is not None:
        start = time.perf_counter()
        float(jaxopt_grad(lam))
        first = time.perf_counter() - start
        t, g = _timed(lambda: float(jaxopt_grad(lam)))
        lines.append(_row(f"jaxopt LBFGS implicit_diff, jit (first call {first:.1f} s)",
                          t, base, error(g)))
    else:
        lines.append("| jaxopt | not installed | - | - |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes")
    opts = parser.parse_args()
    sizes = [(200, 10)] if opts.quick else [(400, 20), (2000, 100)]
    out = []
    for kind in ("ridge", "logistic"):
        for n, p in sizes:
            out += bench(kind, n, p)
    print("\n".join(out))


if __name__ == "__main__":
    main()
