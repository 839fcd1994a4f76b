"""Second-order dependency patterns: which pairs of inputs interact nonlinearly in a
program's output (NOTE(curvature)).

NOTE(curvature): a Hessian's pattern is not its Jacobian's. x * y and x + y depend on
the same inputs, but only the product has a cross term. By the chain rule, element r of
a primitive's output, depending on elements S_r of its inputs (its first-order
dependency rule, NOTE(sparsity) in tapeflow/patterns.py), has

    d2 y_r = sum_s dy_r/du_s d2 u_s + sum_s,t d2 y_r/du_s du_t (grad u_s)(grad u_t)^T:

the interactions of the elements it reads, plus new pairs from the second term. A
primitive's `Curvature` says which: none for a linear primitive (add, slicing, sums,
gathers), D_r x D_r for a nonlinear one (D_r: the inputs y_r depends on; sin, exp, the
default, safe for any primitive whose first-order rule is), and for a multilinear one
(multiply, matmul, einsum) only the cross pairs D_r(a) x D_r(b) of distinct operands
(x * x still gets (i, i): a and b are the same tensor). Piecewise linear primitives
(relu, abs, max, max-pooling) count as linear: their second derivative is zero
wherever it exists, as the Hessian computed by differentiating twice is.

Unrolled, the output's interactions are the union of the new pairs of every element
of every value that the output depends on (through any chain of primitives). So
rather than carrying a set of pairs per element forward (a window sum of values that
each hold many pairs would copy them all), `graph/hessian_sparsity.py` runs the
first-order rules forward, marks backward which elements reach the output (each rule
run on the numbered elements of one input gives its S_r), and unions the new pairs of
the marked elements once: the same pattern, at the cost of the new pairs alone. Pairs
(i, j), i <= j, of n inputs are keys i * n + j. Over-approximations (a contraction's
cross pairs are taken between whole rows and columns) cost colors, never correctness.
"""

from __future__ import annotations

import dataclasses
import itertools
from typing import Callable

import numpy as np

from .patterns import Pattern, sorted_unique

__all__ = ["Curvature", "LINEAR", "NONLINEAR", "MULTILINEAR", "square_pairs", "cross_pairs",
           "pairs_matrix", "rows_of", "reached", "new_pairs"]


@dataclasses.dataclass(frozen=True)
class Curvature:
    """How a primitive's outputs bend in its inputs: `alone` lists the inputs with a
    nonzero second derivative in themselves (None: every input), `cross` the pairs of
    inputs with a nonzero mixed derivative (None: every pair). The inputs not named enter
    linearly.

    Example:
        >>> from tapeflow.hessian_patterns import Curvature
        >>> divide = Curvature(alone=(1,), cross=((0, 1),))  # a / b: linear in a
        >>> divide.bends(0), divide.bends(1), divide.couples(0, 1)
        (False, True, True)
    """

    alone: tuple | None = None
    cross: tuple | None = None

    def bends(self, k: int) -> bool:
        return self.alone is None or k in self.alone

    def couples(self, a: int, b: int) -> bool:
        return self.cross is None or (a, b) in self.cross or (b, a) in self.cross

    @property
    def linear(self) -> bool:
        return self.alone == () and self.cross == ()


LINEAR = Curvature((), ())          # add, slicing, sums, gathers; and piecewise linear ops
NONLINEAR = Curvature(None, None)   # the default: every input bends, every pair couples
MULTILINEAR = Curvature((), None)   # linear in each input alone: products, contractions
# Piecewise linear (abs, max, relu, max-pooling): the second derivative is zero wherever
# it exists (the pieces are picked by comparisons, which carry no derivative), as
# twice-differentiated programs compute it.
PIECEWISE_LINEAR = LINEAR


# ---------------------------------------------------------------------------- pairs
def _row_products(a: Pattern, b: Pattern) -> tuple[np.ndarray, np.ndarray]:
    """Every (a column, b column) with both columns in one row of a and of b."""
    rows_a, cols_a = a.entries()
    reps = np.diff(b.indptr)[rows_a]
    total = int(reps.sum())
    left = np.repeat(cols_a, reps)
    offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(reps) - reps, reps)
    right = b.indices[np.repeat(b.indptr[rows_a], reps) + offsets]
    return left, right


def cross_pairs(a: Pattern | None, b: Pattern | None, n: int) -> np.ndarray:
    """The pairs {i, j} with i in a row of a and j in the same row of b (two patterns of
    one shape over n inputs), as sorted unique keys i * n + j, i <= j.

    Example:
        >>> from tapeflow.patterns import Pattern
        >>> from tapeflow.hessian_patterns import cross_pairs
        >>> x = Pattern.identity((3,))
        >>> cross_pairs(x, x.take([1, 2, 0]), 3).tolist()  # x * roll(x): (0,1) (0,2) (1,2)
        [1, 2, 5]
    """
    if a is None or b is None:
        return np.zeros(0, np.int64)
    left, right = _row_products(a, b)
    return sorted_unique(np.minimum(left, right) * n + np.maximum(left, right))


def square_pairs(d: Pattern | None, n: int) -> np.ndarray:
    """The pairs of inputs within each row of `d` (a nonlinear function of them), as sorted
    unique keys i * n + j, i <= j.

    Example:
        >>> from tapeflow.patterns import Pattern
        >>> from tapeflow.hessian_patterns import square_pairs
        >>> square_pairs(Pattern.identity((2,)).reduce(None, False), 2).tolist()
        [0, 1, 3]
    """
    if d is None:
        return np.zeros(0, np.int64)
    left, right = _row_products(d, d)
    keep = left <= right
    return sorted_unique(left[keep] * n + right[keep])


def pairs_matrix(keys: np.ndarray, n: int) -> Pattern:
    """The symmetric n x n pattern holding the pairs `keys` (i * n + j).

    Example:
        >>> import numpy as np
        >>> from tapeflow.hessian_patterns import pairs_matrix
        >>> pairs_matrix(np.array([1, 8]), 3).rows()  # (0, 1) and (2, 2)
        [[1], [0], [2]]
    """
    keys = np.asarray(keys, np.int64)
    i, j = keys // max(n, 1), keys % max(n, 1)
    return Pattern.from_entries((n,), n, np.concatenate([i, j]), np.concatenate([j, i]))


def rows_of(p: Pattern | None, rows: np.ndarray) -> Pattern | None:
    """The pattern of the elements `rows` of a value alone (a 1-D pattern)."""
    if p is None:
        return None
    if rows.size == p.size:
        return p.reshape((p.size,))
    indptr = np.zeros(rows.size + 1, np.int64)
    np.cumsum(np.diff(p.indptr)[rows], out=indptr[1:])
    return Pattern((rows.size,), p.n, indptr, p.pairs(np.arange(rows.size), rows)[1])


# ---------------------------------------------------------------------------- the steps
def _alone(deps: tuple, k: int) -> tuple:
    return tuple(p if i == k else None for i, p in enumerate(deps))


def reached(rule: Callable, deps: tuple, vals: tuple, outs: tuple, params: dict,
            needed: tuple) -> tuple:
    """Which elements of each input the `needed` elements of the outputs read (boolean
    masks per output; None where none is needed): per input that depends on the function's
    input, a mask over its elements (None for the others). The rule runs on the input's
    numbered elements, the others absent, so its rows are the S_r of NOTE(curvature)."""
    masks = []
    for k, p in enumerate(deps):
        if p is None:
            masks.append(None)
            continue
        shape = vals[k].shape
        numbered = tuple(Pattern.identity(shape) if i == k else None for i in range(len(deps)))
        got = rule(numbered, vals, outs, **params)
        mask = np.zeros(int(np.prod(shape)), bool)
        for g, want in zip(got, needed, strict=True):
            if g is not None and want is not None:
                rows = np.flatnonzero(want.ravel())
                mask[g.pairs(rows, rows)[1]] = True
        masks.append(mask)
    return tuple(masks)


def new_pairs(curv: Curvature, rule: Callable, deps: tuple, d_out: tuple, vals: tuple,
              outs: tuple, params: dict, needed: tuple, n: int) -> np.ndarray:
    """The pairs a primitive adds at the `needed` elements of its outputs (NOTE(curvature)),
    given its inputs' dependencies `deps` and its outputs' `d_out`: sorted unique keys."""
    if curv.linear:
        return np.zeros(0, np.int64)
    present = [k for k, p in enumerate(deps) if p is not None]
    alone = [k for k in present if curv.bends(k)]
    pairs = [(a, b) for a, b in itertools.combinations(present, 2) if curv.couples(a, b)]
    wanted = [None if w is None else np.flatnonzero(w.ravel()) for w in needed]
    found = []
    if len(alone) == len(present) and len(pairs) == len(present) * (len(present) - 1) // 2:
        # Nonlinear in all it depends on: every pair of each output element's deps.
        found = [square_pairs(rows_of(d, w), n) for d, w in zip(d_out, wanted, strict=True)
                 if w is not None]
    else:
        needed_inputs = sorted(set(alone) | {k for pair in pairs for k in pair})
        single = {k: (d_out if len(present) == 1 else tuple(rule(_alone(deps, k), vals, outs,
                                                                  **params)))
                  for k in needed_inputs}
        for o, w in enumerate(wanted):
            if w is None:
                continue
            part = {k: rows_of(single[k][o], w) for k in needed_inputs}
            found += [square_pairs(part[k], n) for k in alone]
            found += [cross_pairs(part[a], part[b], n) for a, b in pairs]
    return sorted_unique(np.concatenate(found)) if found else np.zeros(0, np.int64)
