"""Simplify rules: the graph passes' rule (catalog.Hints.simplify) for dropping a node whose
output always equals one of its inputs exactly, NaNs and signed zeros included: x * 1 is
x, x + (-0.) is x, but x + 0. is not, at x = -0. (graph/passes.py).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt

__all__ = ["constant_is", "is_minus_zero", "is_plus_zero", "is_one", "same_as_input",
           "neutral_right"]


def constant_is(c: Any, test: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether `c` is a known, non-empty constant whose every entry passes `test`."""
    if c is None:
        return False
    arr = np.asarray(c)
    if arr.size == 0:
        return False
    passed = test(arr)
    return bool(passed) if arr.ndim == 0 else bool(passed.all())


def _signed_zero(negative: bool) -> Callable[[np.ndarray], np.ndarray]:
    """Entries that are 0 with the given sign bit (both parts, for complex; any 0 for ints)."""
    def test(c: np.ndarray) -> np.ndarray:
        if _dt.kind(c.dtype) == "c":
            return test(c.real) & test(c.imag)
        if _dt.kind(c.dtype) != "f":
            return c == 0
        return (c == 0) & (np.signbit(c) == negative)
    return test


is_minus_zero = _signed_zero(True)   # x + (-0.) is x exactly; x + (+0.) is not at x = -0.
is_plus_zero = _signed_zero(False)   # x - (+0.) is x exactly; x - (-0.) is not at x = -0.


def is_one(c: np.ndarray) -> np.ndarray:
    """Entries equal to 1, real dtypes only: a complex (1+0j) times (inf+0j) is inf+nanj."""
    return (c == 1) if _dt.kind(c.dtype) != "c" else np.zeros(c.shape, bool)


def same_as_input(consts: list, same: Callable[[int], bool], **params: Any) -> int | None:
    """Simplify rule of ops that change nothing when the shape and dtype stay."""
    return 0 if same(0) else None


def neutral_right(test: Callable[[np.ndarray], np.ndarray],
                  left_too: bool = False) -> Callable[..., int | None]:
    """Simplify rule of x op c = x for a constant c passing `test` (and c op x = x with
    `left_too`, for commutative ops)."""
    def rule(consts: list, same: Callable[[int], bool]) -> int | None:
        if same(0) and constant_is(consts[1], test):
            return 0
        if left_too and same(1) and constant_is(consts[0], test):
            return 1
        return None
    return rule
