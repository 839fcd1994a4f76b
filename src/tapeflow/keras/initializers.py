"""Keras weight initializers (the ones Dense needs), drawing from tapeflow's seeded RNG."""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import random as _random
from ..tensor import Tensor

__all__ = ["Initializer", "GlorotUniform", "Zeros", "Ones", "RandomNormal", "get"]


class Initializer:
    """Base class: ``init(shape, dtype)`` returns a tensor."""

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        raise NotImplementedError


class GlorotUniform(Initializer):
    """Uniform on [-limit, limit] with limit = sqrt(6 / (fan_in + fan_out)).

    Example:
        >>> from tapeflow.keras import initializers
        >>> w = initializers.GlorotUniform(seed=0)((3, 2))
        >>> bool((abs(w.numpy()) <= (6 / 5) ** 0.5).all())
        True
    """

    def __init__(self, seed: int | None = None) -> None:
        self.seed = seed

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        shape = tuple(int(d) for d in shape)
        fan_in = shape[-2] if len(shape) >= 2 else (shape[0] if shape else 1)
        fan_out = shape[-1] if shape else 1
        receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
        limit = np.sqrt(6.0 / max(1, (fan_in + fan_out) * receptive))
        dt = _dt.as_dtype(dtype or _dt.float32)
        if self.seed is not None:  # Keras: a seeded initializer gives the same values each call
            rng = np.random.default_rng([self.seed])
            return Tensor(rng.uniform(-limit, limit, shape).astype(dt._np))
        return _random.uniform(shape, -limit, limit, dtype=dt)


class Zeros(Initializer):
    """All zeros."""

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        return Tensor(np.zeros(tuple(shape), _dt.as_dtype(dtype or _dt.float32)._np))


class Ones(Initializer):
    """All ones."""

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        return Tensor(np.ones(tuple(shape), _dt.as_dtype(dtype or _dt.float32)._np))


class RandomNormal(Initializer):
    """Normal draws with `mean` and `stddev`."""

    def __init__(self, mean: float = 0.0, stddev: float = 0.05, seed: int | None = None) -> None:
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape: Any, dtype: Any = None) -> Tensor:
        dt = _dt.as_dtype(dtype or _dt.float32)
        if self.seed is not None:  # Keras: a seeded initializer gives the same values each call
            rng = np.random.default_rng([self.seed])
            return Tensor((rng.standard_normal(tuple(shape)) * self.stddev + self.mean).astype(dt._np))
        return _random.normal(shape, self.mean, self.stddev, dt)


_BY_NAME = {"glorot_uniform": GlorotUniform, "zeros": Zeros, "ones": Ones,
            "random_normal": RandomNormal}


def get(identifier: Any) -> Initializer:
    """An initializer from a name, an instance, or a callable."""
    if isinstance(identifier, str):
        try:
            return _BY_NAME[identifier]()
        except KeyError:
            raise ValueError(f"Unknown initializer {identifier!r}; known: {sorted(_BY_NAME)}.") from None
    if callable(identifier):
        return identifier
    raise TypeError(f"Cannot interpret {identifier!r} as an initializer.")
