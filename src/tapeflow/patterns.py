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
from typing import Any, Callable, Iterable, Sequence

import numpy as np

Rule = Callable[..., Any]

__all__ = ["Pattern", "Abstract", "union", "pairs_of_broadcast", "sorted_unique",
           "elementwise_deps", "reduction_deps", "along_axis_deps", "dense_deps",
           "per_matrix_deps", "per_example_deps", "moved_deps", "scatter_deps"]


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


# ---------------------------------------------------------------------------- rule families
# NOTE(sparsity) in tapeflow/patterns.py. A dependency rule gets its inputs' patterns (None
# where an input depends on nothing the function is differentiated in), their values
# where they are the same at every input (Abstract shapes where not) and the outputs'
# shapes; it returns one pattern (or None) per output.
def elementwise_deps(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
    """Each output element depends on the input elements broadcast onto it."""
    shape = outs[0].shape
    return (union(((p, None if v.shape == shape else pairs_of_broadcast(v.shape, shape))
                   for p, v in zip(pats, vals, strict=True)), shape),)


def reduction_deps(pats: tuple, vals: tuple, outs: tuple, axis: Any, keepdims: bool,
                   **params: Any) -> tuple:
    """The union over the reduced axes (`axis` a tuple or None)."""
    return (None if pats[0] is None else pats[0].reduce(axis, keepdims),)


def along_axis_deps(pats: tuple, vals: tuple, outs: tuple, axis: int, **params: Any) -> tuple:
    """Every element depends on its whole line along one int `axis` (softmax; a scan,
    over-approximated by the line)."""
    p = pats[0]
    return (None if p is None else p.reduce((axis,), True).broadcast_to(outs[0].shape),)


def dense_deps(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
    """Every output element depends on every input element (an op with no structure
    worth tracking: the safe over-approximation)."""
    whole = union(((p.reduce(None, False), np.zeros((), np.int64)) for p in pats
                   if p is not None), ())
    return tuple(None if whole is None else whole.broadcast_to(o.shape) for o in outs)


def per_matrix_deps(core: int) -> Rule:
    """Per example over the batch axes (all but each input's last `core`): block
    diagonal, as batched matrix ops (inverse, solve, decompositions) act."""
    def rule(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
        batch = np.broadcast_shapes(*(v.shape[:len(v.shape) - core] for v in vals))
        whole = union(((p.reduce(tuple(range(len(v.shape) - core, len(v.shape))), False),
                        pairs_of_broadcast(v.shape[:len(v.shape) - core], batch))
                       for p, v in zip(pats, vals, strict=True) if p is not None), batch)
        if whole is None:
            return (None,) * len(outs)
        return tuple(whole.reshape(batch + (1,) * (len(o.shape) - len(batch)))
                     .broadcast_to(o.shape) for o in outs)
    return rule


def per_example_deps(*batched: int) -> Rule:
    """Per example along axis 0 for the inputs `batched` (all inputs when none given):
    each output element of example b depends on all of example b (block diagonal); any
    other input (a filter) reaches every output element."""
    def rule(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
        res = []
        for o in outs:
            parts = [(p.blocks(1, o.shape) if not batched or k in batched else
                      p.reduce(None, False).broadcast_to(o.shape), None)
                     for k, p in enumerate(pats) if p is not None]
            res.append(union(parts, o.shape))
        return tuple(res)
    return rule


def moved_deps(*argnums: int) -> Callable[[Any], dict]:
    """The dependency rule (a family: catalog.define) of data movement (reshape, slicing, gathers, concatenation, padding): each output
    element is one element of the inputs `argnums` or a constant. Read off the impl run on
    numbered elements (twice, with the numbers shifted: a constant fill does not shift),
    with the other inputs' values (fixed indices). Indices that change with the input
    could move anything anywhere: then every output depends on all the data. No
    `argnums`: every input is data (concat)."""
    return lambda prim: {"sparsity": _moved(prim, argnums)}


def _moved(prim: Any, argnums: tuple) -> Rule:
    def rule(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
        data = argnums or range(len(vals))
        if all(pats[k] is None for k in data):
            return (None,) * len(outs)
        if any(isinstance(v, Abstract) for i, v in enumerate(vals) if i not in data):
            return dense_deps(tuple(pats[k] for k in data), vals, outs)
        offsets, total = {}, 1
        for k in data:
            if pats[k] is not None:
                offsets[k], total = total, total + vals[k].size

        def probe(shift: int) -> list:
            args = list(vals)
            for k in data:
                if k in offsets:
                    args[k] = np.arange(offsets[k] + shift, offsets[k] + shift + vals[k].size,
                                        dtype=np.int64).reshape(vals[k].shape)
                else:
                    args[k] = np.zeros(vals[k].shape, np.int64)
            got = prim.impl(*args, **params)
            return [np.asarray(g) for g in (got if prim.multiple_results else (got,))]

        res = []
        for a, b in zip(probe(0), probe(total), strict=True):
            moved = (b - a) == total
            parts = [(pats[k], np.where(moved & (a >= off) & (a < off + vals[k].size),
                                        a - off, -1)) for k, off in offsets.items()]
            res.append(union(parts, a.shape))
        return tuple(res)
    return rule


def scatter_deps(forward: Callable[..., np.ndarray], arg: int = 0) -> Rule:
    """The dependency rule of the transpose of a movement (a gather's or a slice's scatter-add): each element of
    input `arg` is added into the output element `forward` (the movement itself, run on
    the numbered output elements, the other inputs' values and these params) takes it
    from."""
    def rule(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
        if pats[arg] is None:
            return (None,)
        if any(isinstance(v, Abstract) for i, v in enumerate(vals) if i != arg):
            return dense_deps((pats[arg],), vals, outs)
        shape = outs[0].shape
        numbered = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
        dst = forward(numbered, vals, **params)
        return (pats[arg].gather(shape, np.asarray(dst).ravel(), np.arange(vals[arg].size)),)
    return rule
