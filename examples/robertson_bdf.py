"""Integrate Robertson's stiff chemical kinetics to t = 1e5 with SciPy's BDF, given
tapeflow's exact Jacobian, beside BDF with SciPy's finite-difference Jacobian.

Run: python examples/robertson_bdf.py [--quick]
"""

from __future__ import annotations

import sys
import time

import numpy as np
import scipy.integrate

import tapeflow as tf
import tapeflow.scipy as tfs


def robertson(t, y):
    y1, y2, y3 = y[0], y[1], y[2]
    return tf.stack([-0.04 * y1 + 1e4 * y2 * y3,
                     0.04 * y1 - 1e4 * y2 * y3 - 3e7 * y2 ** 2,
                     3e7 * y2 ** 2])


def problem() -> tuple:
    return robertson, np.array([1.0, 0.0, 0.0])


def main(quick: bool = False) -> dict:
    f, y0 = problem()
    span = (0.0, 1e2 if quick else 1e5)
    opts = {"rtol": 1e-6, "atol": [1e-8, 1e-14, 1e-6]}
    start = time.perf_counter()
    ours = tfs.solve_ivp(f, span, y0, method="BDF", **opts)
    ours_s = time.perf_counter() - start
    start = time.perf_counter()
    fd = scipy.integrate.solve_ivp(lambda t, y: np.asarray(f(t, tf.constant(y))), span, y0,
                                   method="BDF", **opts)
    fd_s = time.perf_counter() - start
    print(f"exact Jacobian:     y(end) = {ours.y[:, -1]}  {ours_s:.3f} s, nfev={ours.nfev} "
          f"njev={ours.njev} nlu={ours.nlu}")
    print(f"finite differences: y(end) = {fd.y[:, -1]}  {fd_s:.3f} s, nfev={fd.nfev} "
          f"njev={fd.njev} nlu={fd.nlu}")
    return {"ours": ours, "fd": fd}


if __name__ == "__main__":
    main("--quick" in sys.argv)
