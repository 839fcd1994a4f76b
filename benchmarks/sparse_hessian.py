"""Sparse Hessians of a discretized minimal-surface problem, and its full IPOPT solve,
against CasADi with IPOPT.

Run (cyipopt and CasADi optional: ``pip install 'tapeflow[ipopt]' casadi``)::

    python benchmarks/sparse_hessian.py            # 10^4 and 10^5 variables, ~10 minutes
    python benchmarks/sparse_hessian.py --quick    # 2,500 variables, seconds

The problem: the surface of least area over the unit square with fixed boundary values,
resting on an obstacle (a bump in the middle: bounds on the variables), discretized on
an m x m grid of interior points by forward differences,

    A(u) = h^2 sum_cells sqrt(1 + ((u[i+1,j] - u[i,j]) / h)^2 + ((u[i,j+1] - u[i,j]) / h)^2).

Part 1, the Hessian alone: the pattern read off the program (each variable meets its
six neighbours of the stencil: 7 entries in the densest row), the star coloring's
colors against that bound (a column coloring's lower bound; a star coloring may go
below it on other patterns), the first call (pattern, coloring and the trace of the
vectorized products) and the median time per Hessian after it; beside it, CasADi's
exact Hessian (SX, its own sparsity and graph coloring) per call.

Part 2, the full solve: tapeflow.scipy.minimize_ipopt (exact sparse gradient and
Lagrangian Hessian) against CasADi's nlpsol("ipopt") on the same problem and options;
iterations, wall time (setup included: what a user waits for) and the optimal areas,
which must agree.
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

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("tapeflow") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import tapeflow as tf  # noqa: E402

HAVE_IPOPT = importlib.util.find_spec("cyipopt") is not None
HAVE_CASADI = importlib.util.find_spec("casadi") is not None


def problem(m: int) -> tuple:
    """(area, x0, lower bounds, boundary) for an m x m interior grid."""
    h = 1.0 / (m + 1)
    t = np.linspace(0.0, 1.0, m + 2)
    x, y = np.meshgrid(t, t, indexing="ij")
    boundary = 0.5 * np.sin(np.pi * x) * (1 - y) + 0.25 * np.sin(2 * np.pi * y) * x
    boundary[1:-1, 1:-1] = 0.0
    inner_x, inner_y = x[1:-1, 1:-1], y[1:-1, 1:-1]
    obstacle = 0.6 - 8.0 * ((inner_x - 0.5) ** 2 + (inner_y - 0.5) ** 2)
    lower = np.maximum(obstacle, -1e20).ravel()
    lower[obstacle.ravel() <= 0.0] = -np.inf
    fixed = tf.constant(boundary)

    def area(z):
        u = tf.pad(tf.reshape(z, [m, m]), [[1, 1], [1, 1]]) + fixed
        ux = (u[1:, :-1] - u[:-1, :-1]) / h
        uy = (u[:-1, 1:] - u[:-1, :-1]) / h
        return h * h * tf.reduce_sum(tf.sqrt(1.0 + ux ** 2 + uy ** 2))

    x0 = np.maximum(np.where(np.isfinite(lower), lower, 0.0), 0.0) + 0.05
    return area, x0, lower, boundary


def casadi_area(m: int, boundary: np.ndarray) -> tuple:
    import casadi as ca

    h = 1.0 / (m + 1)
    z = ca.SX.sym("z", m * m)
    inner = ca.reshape(z, m, m).T  # CasADi reshapes column-major: rows of the grid
    u = ca.SX(boundary)
    u[1:-1, 1:-1] = inner
    ux = (u[1:, :-1] - u[:-1, :-1]) / h
    uy = (u[:-1, 1:] - u[:-1, :-1]) / h
    return ca, z, h * h * ca.sum1(ca.sum2(ca.sqrt(1.0 + ux ** 2 + uy ** 2)))


def _median(run: Callable[[], Any], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def hessians(m: int, repeats: int) -> None:
    area, x0, _, boundary = problem(m)
    hess = tf.SparseHessian(area)
    start = time.perf_counter()
    H = hess(x0)
    first = time.perf_counter() - start
    info = hess.info
    per = _median(lambda: hess(x0 + 0.01), repeats)
    print(f"n = {m * m:>6}: {info.nnz} entries, densest row {info.densest_row}, "
          f"{info.colors} colors (x{info.colors / info.densest_row:.2f} the row bound); "
          f"first call {first:.2f} s, then {per * 1e3:.1f} ms per Hessian")
    if HAVE_CASADI:
        ca, z, expr = casadi_area(m, boundary)
        start = time.perf_counter()
        fn = ca.Function("h", [z], [ca.hessian(expr, z)[0]])
        setup = time.perf_counter() - start
        per_ca = _median(lambda: fn(x0), repeats)
        Hc = fn(x0).sparse()
        diff = abs(Hc - H).max()
        print(f"          CasADi SX: setup {setup:.2f} s, then {per_ca * 1e3:.1f} ms per Hessian "
              f"({Hc.nnz} entries; max difference {diff:.1e})")
        assert diff < 1e-8 * abs(H).max()


def solve(m: int) -> None:
    area, x0, lower, boundary = problem(m)
    bounds = list(zip(lower, [None] * lower.size))
    if not HAVE_IPOPT:
        print("tapeflow + IPOPT: skipped (pip install 'tapeflow[ipopt]')")
        return
    import tapeflow.scipy as tfs

    options = {"tol": 1e-8, "max_iter": 500}
    start = time.perf_counter()
    res = tfs.minimize_ipopt(area, x0, bounds=bounds, options=options)
    ours = time.perf_counter() - start
    print(f"n = {m * m:>6}: tapeflow + IPOPT: {ours:.2f} s, {res.nit} iterations, "
          f"area {res.fun:.10f}, {res.hess_info.colors} colors ({res.message})")
    if HAVE_CASADI:
        ca, z, expr = casadi_area(m, boundary)
        start = time.perf_counter()
        solver = ca.nlpsol("s", "ipopt", {"x": z, "f": expr},
                           {"print_time": False, "ipopt": {"print_level": 0, "sb": "yes",
                                                           "mu_strategy": "adaptive",
                                                           **options}})
        sol = solver(x0=x0, lbx=np.where(np.isfinite(lower), lower, -np.inf), ubx=np.inf)
        theirs = time.perf_counter() - start
        stats = solver.stats()
        print(f"          CasADi + IPOPT:   {theirs:.2f} s, {stats['iter_count']} iterations, "
              f"area {float(sol['f']):.10f} ({stats['return_status']})")
        assert abs(float(sol["f"]) - res.fun) < 1e-7 * abs(res.fun)
    else:
        print("          CasADi: skipped (pip install casadi)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2,500 variables (seconds)")
    quick = parser.parse_args().quick
    sizes = [50] if quick else [100, 316]
    print("Part 1: one Hessian of the minimal-surface area")
    for m in sizes:
        hessians(m, 3 if quick else 5)
    print("Part 2: the obstacle problem solved by IPOPT")
    for m in sizes:
        solve(m)


if __name__ == "__main__":
    main()
