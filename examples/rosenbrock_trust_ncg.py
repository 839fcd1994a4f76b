"""Minimize the n-dimensional Rosenbrock function with SciPy's trust-ncg method, given
tapeflow's exact gradient and Hessian-vector products (forward-over-reverse, never the
full Hessian), beside SciPy's BFGS on finite-difference gradients.

Run: python examples/rosenbrock_trust_ncg.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.optimize

import tapeflow as tf
import tapeflow.scipy as tfs


def rosenbrock(x):
    return tf.reduce_sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2)


def problem(n: int = 100) -> tuple:
    x0 = np.full(n, -1.2)
    x0[1::2] = 1.0
    return rosenbrock, x0


def main(quick: bool = False) -> dict:
    f, x0 = problem(20 if quick else 100)
    start = time.perf_counter()
    ours = tfs.minimize(f, x0, method="trust-ncg")
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    fd = scipy.optimize.minimize(lambda x: float(f(tf.constant(x))), x0, method="BFGS")
    fd_s = time.perf_counter() - start
    print(f"trust-ncg, exact gradient and Hessian-vector products: {ours_s:.3f} s, "
          f"nfev={ours.nfev} njev={ours.njev} nhev={ours.nhev}, |x - 1| = "
          f"{np.abs(ours.x - 1).max():.1e}")
    print(f"BFGS, finite-difference gradient:                      {fd_s:.3f} s, "
          f"nfev={fd.nfev}, |x - 1| = {np.abs(fd.x - 1).max():.1e}")
    return {"ours": ours, "fd": fd}


if __name__ == "__main__":
    main("--quick" in sys.argv)
