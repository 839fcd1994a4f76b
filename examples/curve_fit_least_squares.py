"""Fit an exponential decay y = a exp(-k t) + c to noisy data with SciPy's
least_squares, given tapeflow's exact Jacobian of the residuals, beside SciPy's
default finite differences.

Run: python examples/curve_fit_least_squares.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.optimize

import tapeflow as tf
import tapeflow.scipy as tfs


def problem(points: int = 200) -> tuple:
    rng = np.random.default_rng(0)
    t = np.linspace(0.0, 5.0, points)
    y = 3.0 * np.exp(-1.3 * t) + 0.5 + 0.02 * rng.standard_normal(points)

    def residuals(p):
        return p[0] * tf.exp(-p[1] * t) + p[2] - y

    return residuals, np.array([1.0, 1.0, 0.0])


def main(quick: bool = False) -> dict:
    residuals, p0 = problem(50 if quick else 200)
    start = time.perf_counter()
    ours = tfs.least_squares(residuals, p0)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    fd = scipy.optimize.least_squares(lambda p: np.asarray(residuals(tf.constant(p))), p0)
    fd_s = time.perf_counter() - start
    print(f"exact Jacobian:     a, k, c = {np.round(ours.x, 4)}  {ours_s:.3f} s, "
          f"nfev={ours.nfev} njev={ours.njev}")
    print(f"finite differences: a, k, c = {np.round(fd.x, 4)}  {fd_s:.3f} s, "
          f"nfev={fd.nfev} njev={fd.njev}")
    return {"ours": ours, "fd": fd}


if __name__ == "__main__":
    main("--quick" in sys.argv)
