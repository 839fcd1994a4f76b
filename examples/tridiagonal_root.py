"""Solve Broyden's tridiagonal nonlinear system (3 - 2x_i) x_i - x_{i-1} - 2 x_{i+1} = -1
with SciPy's root (hybr), given tapeflow's exact Jacobian: its pattern is read off the
program and colored, so the 1000x1000 Jacobian costs 3 products, not 1000.

Run: python examples/tridiagonal_root.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.optimize

import tapeflow as tf
import tapeflow.scipy as tfs


def broyden_tridiagonal(x):
    zero = tf.zeros([1], x.dtype)
    left = tf.concat([zero, x[:-1]], 0)
    right = tf.concat([x[1:], zero], 0)
    return (3.0 - 2.0 * x) * x - left - 2.0 * right + 1.0


def problem(n: int = 1000) -> tuple:
    return broyden_tridiagonal, -np.ones(n)


def main(quick: bool = False) -> dict:
    f, x0 = problem(100 if quick else 1000)
    start = time.perf_counter()
    ours = tfs.root(f, x0)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    fd = scipy.optimize.root(lambda x: np.asarray(f(tf.constant(x))), x0)
    fd_s = time.perf_counter() - start
    print(f"exact Jacobian (3 colors): {ours_s:.3f} s, nfev={ours.nfev} njev={ours.njev}, "
          f"|f(x)| = {np.abs(ours.fun).max():.1e}")
    print(f"finite differences:        {fd_s:.3f} s, nfev={fd.nfev}, "
          f"|f(x)| = {np.abs(fd.fun).max():.1e}")
    return {"ours": ours, "fd": fd}


if __name__ == "__main__":
    main("--quick" in sys.argv)
