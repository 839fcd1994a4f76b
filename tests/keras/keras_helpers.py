"""Helpers the keras tests in this directory share: one seeded NumPy generator and
`_rand`, standard-normal arrays of a given shape drawn from it (float32 unless asked)."""

from __future__ import annotations

import numpy as np

RNG = np.random.default_rng(0)


def _rand(*shape, dtype=np.float32):
    return RNG.standard_normal(shape).astype(dtype)
