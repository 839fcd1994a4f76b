"""tf.random: a global seed and the draws Keras initializers need.

The draws are plain constants (no derivative flows into them). `set_seed`
resets the global generator, so a seeded program is reproducible.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from . import dtypes as _dt
from .tensor import Tensor

__all__ = ["set_seed", "normal", "uniform"]

_DEFAULT_SEED = 0
_global = {"seed": None, "rng": np.random.default_rng(_DEFAULT_SEED)}


def set_seed(seed: int | None) -> None:
    """Set the global random seed (draws after it repeat from run to run).

    Example:
        >>> import tapeflow as tf
        >>> tf.random.set_seed(1); a = tf.random.normal([2])
        >>> tf.random.set_seed(1); b = tf.random.normal([2])
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """
    _global["seed"] = seed
    _global["rng"] = np.random.default_rng(_DEFAULT_SEED if seed is None else seed)


def _generator(seed: int | None) -> np.random.Generator:
    if seed is None:
        return _global["rng"]
    # An op seed combines with the global seed, as TensorFlow's two-level seeds.
    return np.random.default_rng([_DEFAULT_SEED if _global["seed"] is None else _global["seed"], seed])


def _shape(shape: Any) -> tuple:
    return tuple(int(d) for d in np.asarray(shape, dtype=np.int64).reshape(-1))


def normal(shape: Any, mean: float = 0.0, stddev: float = 1.0, dtype: Any = _dt.float32,
           seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a normal distribution.

    Example:
        >>> import tapeflow as tf
        >>> tf.random.normal([2, 3]).shape
        TensorShape([2, 3])
    """
    dt = _dt.as_dtype(dtype)._np
    draw = _generator(seed).standard_normal(_shape(shape)) * stddev + mean
    return Tensor(np.asarray(draw, dtype=dt))


def uniform(shape: Any, minval: float = 0, maxval: float | None = None, dtype: Any = _dt.float32,
            seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from a uniform distribution on [minval, maxval) (maxval 1 for floats).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.random.uniform([100], -1., 1.)
        >>> bool((x.numpy() >= -1).all() and (x.numpy() < 1).all())
        True
    """
    dt = _dt.as_dtype(dtype)._np
    rng = _generator(seed)
    if dt.kind in "iu":
        if maxval is None:
            raise ValueError("random.uniform: integer dtypes need `maxval`.")
        return Tensor(rng.integers(minval, maxval, _shape(shape)).astype(dt))
    maxval = 1.0 if maxval is None else maxval
    return Tensor(np.asarray(rng.uniform(minval, maxval, _shape(shape)), dtype=dt))
