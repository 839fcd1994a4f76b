"""SciPy's solvers with tapeflow's exact derivatives against SciPy's default finite
differences, and the sparse Jacobian of a reaction-diffusion grid against dense ones.

Run (JAX optional, for its jitted dense jacfwd beside ours)::

    python benchmarks/scipy_solvers.py            # the examples' full sizes, a few minutes
    python benchmarks/scipy_solvers.py --quick    # small sizes, seconds

Part 1 runs each problem of examples/ twice in one process, with tapeflow.scipy and
with SciPy alone (its default finite differences: BFGS's gradient, least_squares'
'2-point', root's and BDF's numerical Jacobians; for the reaction-diffusion grid,
where a dense finite-difference Jacobian of 20,000 unknowns is out of reach, BDF with
`jac_sparsity`, SciPy's own colored differences). It reports wall time (the median of
3 runs, tracing included: one solve is what a user runs), function and Jacobian
evaluations, and how far apart the two solutions are.

Part 2 times one Jacobian of the reaction-diffusion right-hand side: tapeflow's sparse
Jacobian (pattern and coloring found once, then replayed), its dense `jacfwd` traced
with `tf.function`, and JAX's `jit(jacfwd)` when installed, at growing grid sizes (the
dense ones stop where the dense matrix would pass 200 MB).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from typing import Any, Callable

import numpy as np
import scipy.integrate
import scipy.optimize

HERE = os.path.dirname(os.path.abspath(__file__))
EXAMPLES = os.path.join(os.path.dirname(HERE), "examples")
if importlib.util.find_spec("tapeflow") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import tapeflow as tf  # noqa: E402
import tapeflow.scipy as tfs  # noqa: E402


def _example(name: str) -> Any:
    spec = importlib.util.spec_from_file_location(name, os.path.join(EXAMPLES, f"{name}.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _timed(run: Callable[[], Any], repeats: int = 3) -> tuple[float, Any]:
    times, out = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        out = run()
        times.append(time.perf_counter() - start)
    return statistics.median(times), out


def _numpy_fun(f: Callable) -> Callable:
    return lambda x: np.asarray(f(tf.constant(np.asarray(x, np.float64))))


def _counts(res: Any) -> str:
    parts = [f"nfev={res.nfev}"]
    for name in ("njev", "nhev", "nlu"):
        if getattr(res, name, None) is not None:
            parts.append(f"{name}={getattr(res, name)}")
    return " ".join(parts)


def solvers(quick: bool) -> list[tuple]:
    rows = []
    rosen = _example("rosenbrock_trust_ncg")
    f, x0 = rosen.problem(20 if quick else 100)
    t1, ours = _timed(lambda: tfs.minimize(f, x0, method="trust-ncg"))
    fn = _numpy_fun(f)
    t2, fd = _timed(lambda: scipy.optimize.minimize(lambda x: float(fn(x)), x0, method="BFGS"))
    rows.append((f"Rosenbrock n={x0.size}: minimize", "trust-ncg, exact grad + Hv", "BFGS, FD gradient",
                 t1, t2, ours, fd, np.abs(ours.x - fd.x).max()))

    fit = _example("curve_fit_least_squares")
    res_fn, p0 = fit.problem(50 if quick else 200)
    t1, ours = _timed(lambda: tfs.least_squares(res_fn, p0))
    t2, fd = _timed(lambda: scipy.optimize.least_squares(_numpy_fun(res_fn), p0))
    rows.append(("exponential fit: least_squares", "exact Jacobian", "2-point FD", t1, t2, ours,
                 fd, np.abs(ours.x - fd.x).max()))

    tri = _example("tridiagonal_root")
    g, x0 = tri.problem(100 if quick else 1000)
    t1, ours = _timed(lambda: tfs.root(g, x0))
    t2, fd = _timed(lambda: scipy.optimize.root(_numpy_fun(g), x0))
    rows.append((f"Broyden tridiagonal n={x0.size}: root (hybr)", "exact Jacobian, 3 colors",
                 "FD Jacobian", t1, t2, ours, fd, np.abs(ours.x - fd.x).max()))

    rob = _example("robertson_bdf")
    h, y0 = rob.problem()
    span = (0.0, 1e2 if quick else 1e5)
    opts = {"rtol": 1e-6, "atol": [1e-8, 1e-14, 1e-6]}
    t1, ours = _timed(lambda: tfs.solve_ivp(h, span, y0, method="BDF", **opts))
    t2, fd = _timed(lambda: scipy.integrate.solve_ivp(
        lambda t, y: np.asarray(h(t, tf.constant(y))), span, y0, method="BDF", **opts))
    rows.append(("Robertson to t=%g: solve_ivp BDF" % span[1], "exact Jacobian", "FD Jacobian",
                 t1, t2, ours, fd, np.abs(ours.y[:, -1] - fd.y[:, -1]).max()))

    rd = _example("reaction_diffusion_bdf")
    n = 30 if quick else 100
    rhs, y0 = rd.problem(n)
    end = 0.5 if quick else 2.0
    jac = tf.SparseJacobian(lambda y: rhs(tf.constant(0.0, tf.float64), y))
    pattern = jac(y0).astype(bool)
    t1, ours = _timed(lambda: tfs.solve_ivp(rhs, (0.0, end), y0, method="BDF", rtol=1e-4,
                                            atol=1e-6), repeats=1)
    traced = tf.function(lambda t, y: rhs(t, y))
    t2, fd = _timed(lambda: scipy.integrate.solve_ivp(
        lambda t, y: np.asarray(traced(tf.constant(t, tf.float64), tf.constant(y))),
        (0.0, end), y0, method="BDF", rtol=1e-4, atol=1e-6, jac_sparsity=pattern), repeats=1)
    rows.append((f"Brusselator {n}x{n} ({y0.size} unknowns): solve_ivp BDF",
                 f"exact sparse Jacobian, {jac.info.colors} colors",
                 "FD with jac_sparsity (SciPy's colored FD)", t1, t2, ours, fd,
                 np.abs(ours.y[:, -1] - fd.y[:, -1]).max()))
    return rows


def jacobians(quick: bool) -> list[tuple]:
    rd = _example("reaction_diffusion_bdf")
    try:
        import jax  # optional: the peer for dense jacfwd under XLA
        import jax.numpy as jnp
        jax.config.update("jax_enable_x64", True)
    except ImportError:
        jax = None
    rows = []
    for n in ((10, 20, 30) if quick else (20, 40, 70, 100)):
        rhs, y0 = rd.problem(n)
        f = lambda y: rhs(tf.constant(0.0, tf.float64), y)  # noqa: E731
        sparse = tf.SparseJacobian(f)
        start = time.perf_counter()
        J = sparse(y0)
        first = time.perf_counter() - start
        t_sparse, _ = _timed(lambda: sparse(y0), 5)
        dense_ok = y0.size ** 2 * 8 <= 200e6
        t_dense = t_jax = None
        if dense_ok:
            dense = tf.function(tf.jacfwd(f))
            dense(tf.constant(y0))
            t_dense, D = _timed(lambda: dense(tf.constant(y0)), 3)
            assert np.allclose(J.toarray(), D.numpy(), atol=1e-9 * np.abs(D.numpy()).max())
            if jax is not None:
                jf = jax.jit(jax.jacfwd(_jax_rhs(n, jnp)))
                jf(y0).block_until_ready()
                t_jax, _ = _timed(lambda: jf(y0).block_until_ready(), 3)
        rows.append((n, y0.size, J.nnz, sparse.info.colors, sparse.info.mode, first, t_sparse,
                     t_dense, t_jax))
    return rows


def _jax_rhs(n: int, jnp: Any) -> Callable:
    rd = _example("reaction_diffusion_bdf")

    def lap(g: Any) -> Any:
        p = jnp.concatenate([g[:1], g, g[-1:]], 0)
        p = jnp.concatenate([p[:, :1], p, p[:, -1:]], 1)
        return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g) * float((n - 1) ** 2)

    def rhs(y: Any) -> Any:
        u, v = y[: n * n].reshape(n, n), y[n * n:].reshape(n, n)
        du = rd.A + u * u * v - (rd.B + 1.0) * u + rd.ALPHA * lap(u)
        dv = rd.B * u - u * u * v + rd.ALPHA * lap(v)
        return jnp.concatenate([du.ravel(), dv.ravel()])

    return rhs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    quick = parser.parse_args().quick
    print("## Solvers: exact derivatives (tapeflow.scipy) vs SciPy's finite differences\n")
    print("| problem | tapeflow | SciPy | time, tapeflow | time, SciPy | ratio | evaluations, "
          "tapeflow | evaluations, SciPy | max difference |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, a, b, t1, t2, ours, fd, diff in solvers(quick):
        print(f"| {name} | {a} | {b} | {t1:.3f} s | {t2:.3f} s | {t1 / t2:.2f}x | "
              f"{_counts(ours)} | {_counts(fd)} | {diff:.1e} |")
    print("\n## One Jacobian of the Brusselator right-hand side\n")
    print("| grid | unknowns | nnz | colors | first call (detect + color + trace) | sparse "
          "replay | dense jacfwd (tf.function) | JAX jit(jacfwd) |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for n, size, nnz, colors, mode, first, ts, td, tj in jacobians(quick):
        dense = "-" if td is None else f"{td * 1e3:.1f} ms ({td / ts:.0f}x)"
        jx = "-" if tj is None else f"{tj * 1e3:.1f} ms ({tj / ts:.1f}x)"
        print(f"| {n}x{n} | {size} | {nnz} | {colors} ({mode}) | {first * 1e3:.0f} ms | "
              f"{ts * 1e3:.2f} ms | {dense} | {jx} |")


if __name__ == "__main__":
    main()
