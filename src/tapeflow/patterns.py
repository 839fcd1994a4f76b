"""Dependency patterns: which inputs each element of a value depends on (NOTE(sparsity)).

NOTE(sparsity): a sparse Jacobian needs its pattern before its values, and the pattern
must hold at every input, not only at the one it was found at (a product that happens to
be 0 at one point is not 0 elsewhere). So it is read off the program's structure: each
primitive has a dependency rule (`Primitive.sparsity`, beside its other rules) mapping
its inputs' patterns to its outputs', and `tapeflow.sparse_jacobians` runs those rules
over a traced graph. A rule sees the values of inputs that are the same at every input
of the function (constants and what is computed from them alone: a gather's fixed
indices, a fixed matrix's zeros) and only the shapes of the others. Rules may
over-approximate (an entry in the pattern whose value is always 0 costs time, never
correctness) and are exact where it matters most: elementwise ops, data movement
(slicing, concatenation, padding, gathers), reductions along axes, products with a
fixed matrix, and per-example (block-diagonal) ops. Convolutions and pooling are
over-approximated per example; scans per line.

A `Pattern` is a boolean matrix (value's elements x function inputs) in compressed-row
form. Every operation on patterns here is one kind of step: rows of the output gather
and union rows of the input, listed as (output row, input row) pairs. NumPy only: the
core needs nothing else, and SciPy meets these arrays only where a user asks for a
scipy.sparse result.
"""

from __future__ import annotations

import math
from typing import Any, Iterable, Sequence

import numpy as np

__all__ = ["Pattern", "Abstract", "union", "pairs_of_broadcast", "sorted_unique"]


class Abstract:
    """The shape and dtype of a value a dependency rule may not read (it changes with the
    function's input)."""

    __slots__ = ("shape", "dtype")

    def __init__(self, shape: tuple, dtype: Any) -> None:
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    def __repr__(self) -> str:
        return f"Abstract({self.shape}, {self.dtype.name})"


class Pattern:
    """Row r (element r of a value of `shape`, C order) lists, sorted and unique, the
    function inputs it depends on: ``indices[indptr[r]:indptr[r + 1]]``, columns of `n`.

    Example:
        >>> from tapeflow.patterns import Pattern
        >>> p = Pattern.identity((3,))
        >>> p.reduce((0,), keepdims=False).rows()
        [[0, 1, 2]]
    """

    __slots__ = ("shape", "n", "indptr", "indices")

    def __init__(self, shape: tuple, n: int, indptr: np.ndarray, indices: np.ndarray) -> None:
        self.shape = tuple(int(d) for d in shape)
        self.n = int(n)
        self.indptr = indptr
        self.indices = indices

    # ------------------------------------------------------------------ making
    @classmethod
    def identity(cls, shape: tuple) -> "Pattern":
        """The pattern of the function's input itself: element r depends on input r."""
        size = math.prod(shape)
        return cls(shape, size, np.arange(size + 1, dtype=np.int64),
                   np.arange(size, dtype=np.int64))

    @classmethod
    def from_entries(cls, shape: tuple, n: int, rows: np.ndarray, cols: np.ndarray) -> "Pattern":
        """The pattern holding the (row, column) entries given (any order, repeats allowed)."""
        size = math.prod(shape)
        if rows.size:
            keys = sorted_unique(rows.astype(np.int64) * max(n, 1) + cols)
            rows, cols = keys // max(n, 1), keys % max(n, 1)
        indptr = np.zeros(size + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=size), out=indptr[1:])
        return cls(shape, n, indptr, np.asarray(cols, np.int64))

    # ------------------------------------------------------------------ reading
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nnz(self) -> int:
        return int(self.indptr[-1])

    def rows(self) -> list[list[int]]:
        """Each row's inputs, as lists (for tests and printing)."""
        return [self.indices[a:b].tolist() for a, b in zip(self.indptr[:-1], self.indptr[1:])]

    def entries(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, columns) of every entry, row-major."""
        return np.repeat(np.arange(self.size, dtype=np.int64), np.diff(self.indptr)), self.indices

    def dense(self) -> np.ndarray:
        """The pattern as a boolean array of shape (size, n)."""
        out = np.zeros((self.size, self.n), bool)
        out[self.entries()] = True
        return out

    # ------------------------------------------------------------------ the one step
    def pairs(self, dst: np.ndarray, src: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The entries that output row dst[k] takes from this pattern's row src[k], for
        every k: (rows, columns), unsorted, with repeats."""
        dst = np.asarray(dst, np.int64).ravel()
        src = np.asarray(src, np.int64).ravel()
        starts, counts = self.indptr[src], np.diff(self.indptr)[src]
        total = int(counts.sum())
        rows = np.repeat(dst, counts)
        offsets = np.arange(total, dtype=np.int64) - np.repeat(np.cumsum(counts) - counts, counts)
        return rows, self.indices[np.repeat(starts, counts) + offsets]

    def gather(self, shape: tuple, dst: np.ndarray, src: np.ndarray) -> "Pattern":
        """A value of `shape` whose row dst[k] depends on what this row src[k] does."""
        rows, cols = self.pairs(dst, src)
        return Pattern.from_entries(shape, self.n, rows, cols)

    # ------------------------------------------------------------------ common steps
    def reshape(self, shape: tuple) -> "Pattern":
        return Pattern(shape, self.n, self.indptr, self.indices)

    def take(self, src: np.ndarray) -> "Pattern":
        """Element i of the result is element src.flat[i] of this value (-1: a constant)."""
        src = np.asarray(src, np.int64)
        flat = src.ravel()
        keep = np.flatnonzero(flat >= 0)
        return self.gather(src.shape, keep, flat[keep])

    def broadcast_to(self, shape: tuple) -> "Pattern":
        if tuple(shape) == self.shape:
            return self
        return self.take(np.broadcast_to(np.arange(self.size).reshape(self.shape), shape))

    def reduce(self, axis: Sequence[int] | None, keepdims: bool) -> "Pattern":
        """The union over `axis` (all axes if None), as a reduction's output depends."""
        axes = range(len(self.shape)) if axis is None else [a % len(self.shape) for a in axis]
        kept = tuple(1 if i in axes else d for i, d in enumerate(self.shape))
        dst = np.broadcast_to(np.arange(math.prod(kept)).reshape(kept), self.shape)
        shape = kept if keepdims else tuple(d for i, d in enumerate(self.shape) if i not in axes)
        return self.gather(shape, dst, np.arange(self.size))

    def blocks(self, lead: int, shape: tuple) -> "Pattern":
        """Per example over the first `lead` axes: every element of block b of a value of
        `shape` depends on all of block b here (a batched matrix op: block diagonal)."""
        per = self.reduce(tuple(range(lead, len(self.shape))), keepdims=False)
        return per.reshape(per.shape + (1,) * (len(shape) - lead)).broadcast_to(tuple(shape))


def sorted_unique(a: np.ndarray) -> np.ndarray:
    """np.unique of an int array by sorting: NumPy 2's hash-based unique is several times
    slower on the millions of keys a pattern has."""
    a = np.sort(a, kind="stable" if a.size < 64 else "quicksort")
    return a[np.concatenate(([True], a[1:] != a[:-1]))] if a.size else a


def pairs_of_broadcast(shape: tuple, out_shape: tuple) -> np.ndarray:
    """For each element of a value of `out_shape`, the element of a `shape` value that
    broadcasts to it."""
    return np.broadcast_to(np.arange(math.prod(shape)).reshape(shape), out_shape)


def union(parts: Iterable[tuple["Pattern", np.ndarray | None]], shape: tuple) -> "Pattern | None":
    """The union of patterns, each taken through its source map (None: the same shape as
    `shape`, element for element); None when no part has a pattern."""
    rows, cols, n = [], [], None
    for pattern, src in parts:
        if pattern is None:
            continue
        n = pattern.n
        if src is None:
            r, c = pattern.entries()
        else:
            flat = np.asarray(src, np.int64).ravel()
            keep = np.flatnonzero(flat >= 0)
            r, c = pattern.pairs(keep, flat[keep])
        rows.append(r)
        cols.append(c)
    if n is None:
        return None
    return Pattern.from_entries(shape, n, np.concatenate(rows), np.concatenate(cols))
