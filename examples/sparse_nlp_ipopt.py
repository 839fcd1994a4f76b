"""Steer a Van der Pol oscillator to rest at least cost: a large sparse nonlinear program
solved by IPOPT with tapeflow's exact sparse derivatives.

    minimize   int_0^T x1^2 + x2^2 + u^2 dt
    subject to x1' = (1 - x2^2) x1 - x2 + u,   x2' = x1,   x(0) = (0, 1),
               -1 <= u <= 1,   x1 >= -0.25,

discretized by the trapezoidal rule on N intervals: 3N + 2 unknowns (both states at
every node, the control on every interval) and 2N + 2 equality constraints (the
defects and the initial state). The objective and the constraints are plain tapeflow
functions of the flat vector of unknowns; `tapeflow.scipy.minimize_ipopt` reads the
Jacobian's and the Lagrangian Hessian's sparsity off them (a few nonzeros per row,
whatever N), colors them, and hands IPOPT both as sparse matrices computed from a few
vectorized products per iterate. The script checks the solution: IPOPT's success,
the defects and bounds, and that doubling N changes the optimal cost by little.

Needs cyipopt (``pip install 'tapeflow[ipopt]'``); without it the script says so and
stops.

Run: python examples/sparse_nlp_ipopt.py [--quick]
"""

from __future__ import annotations

import importlib.util
import sys
import time

import numpy as np

import tapeflow as tf
import tapeflow.scipy as tfs

T = 10.0


def unpack(z, n):
    return z[:n + 1], z[n + 1:2 * n + 2], z[2 * n + 2:]


def vdp_problem(n: int) -> tuple:
    """(objective, constraints, bounds, x0) for N = n intervals."""
    h = T / n

    def cost(z):
        x1, x2, u = unpack(z, n)
        stage = x1 ** 2 + x2 ** 2
        return h * (tf.reduce_sum(stage[1:] + stage[:-1]) / 2.0 + tf.reduce_sum(u ** 2))

    def defects(z):
        x1, x2, u = unpack(z, n)
        f1 = (1.0 - x2 ** 2) * x1 - x2
        d1 = x1[1:] - x1[:-1] - h / 2.0 * (f1[1:] + f1[:-1]) - h * u
        d2 = x2[1:] - x2[:-1] - h / 2.0 * (x1[1:] + x1[:-1])
        start = tf.stack([x1[0], x2[0] - 1.0])
        return tf.concat([d1, d2, start], 0)

    lower = np.concatenate([np.full(n + 1, -0.25), np.full(n + 1, -np.inf), -np.ones(n)])
    upper = np.concatenate([np.full(2 * n + 2, np.inf), np.ones(n)])
    x0 = np.concatenate([np.zeros(n + 1), np.linspace(1.0, 0.0, n + 1), np.zeros(n)])
    return cost, {"type": "eq", "fun": defects}, list(zip(lower, upper)), x0


def solve(n: int) -> tuple:
    cost, constraint, bounds, x0 = vdp_problem(n)
    start = time.perf_counter()
    res = tfs.minimize_ipopt(cost, x0, constraints=constraint, bounds=bounds,
                             options={"tol": 1e-9})
    seconds = time.perf_counter() - start
    assert res.success, res.message
    defects = np.asarray(constraint["fun"](tf.constant(res.x)))
    assert np.abs(defects).max() < 1e-8, np.abs(defects).max()
    x1, _, u = unpack(res.x, n)
    assert x1.min() >= -0.25 - 1e-8 and np.abs(u).max() <= 1.0 + 1e-8
    print(f"N = {n:>6}: {res.x.size} unknowns, {defects.size} constraints; cost {res.fun:.6f} "
          f"in {res.nit} iterations, {seconds:.2f} s; Hessian {res.hess_info.colors} colors "
          f"({res.hess_info.nnz} entries), Jacobian {res.jac_info.colors} products "
          f"({res.jac_info.nnz} entries)")
    return res.fun


def main(quick: bool = False) -> None:
    if importlib.util.find_spec("cyipopt") is None:
        print("sparse_nlp_ipopt: cyipopt is not installed (pip install 'tapeflow[ipopt]'); "
              "skipping.")
        return
    n = 500 if quick else 10000
    coarse, fine = solve(n), solve(2 * n)
    assert abs(coarse - fine) < 1e-3 * abs(fine), (coarse, fine)  # second order in h


if __name__ == "__main__":
    main("--quick" in sys.argv)
