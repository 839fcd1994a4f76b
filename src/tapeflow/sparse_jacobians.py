"""Sparse Jacobians: the pattern read off the traced program (NOTE(sparsity) in
tapeflow/patterns.py), columns (or rows) colored so that each color costs one product,
and all colors computed in one vectorized pass.

With a column coloring c (columns of one color share no row), the Jacobian-times-seed
product B = J S, where S[j, c(j)] = 1, holds each entry once: J[i, j] = B[i, c(j)]. A
banded Jacobian of bandwidth w needs w colors whatever its size. Rows colored the same
way give the reverse-mode counterpart (S^T J, one VJP per color), cheaper when a few
rows are long; a few dense rows (an arrowhead, a sum constraint) are split off and
taken by reverse mode, the rest by forward mode ("mixed").

`SparseJacobian(f)` traces f once: the pattern and coloring are found on the first call
and the compressed products replay (`tapeflow.function`) at every later input;
`sparse_jacobian(f, x)` is the one-off form. Results are scipy.sparse CSR matrices of
shape (output size, input size), flattened in C order.
"""

from __future__ import annotations

import collections
import dataclasses
import threading
import warnings
from typing import Any, Callable

import numpy as np

from . import dtypes as _dt
from .batching import vmap
from .graph import function
from .graph.function import MAX_SIGNATURES as MAX_PLANS
from .graph.function import RETRACE_WARN_AFTER
from .graph.sparsity import graph_pattern
from .optional import required
from .patterns import Pattern, sorted_unique
from .tensor import Tensor, TensorBase, convert_to_tensor
from .transforms import jvp as _jvp
from .transforms import vjp as _vjp

__all__ = ["sparse_jacobian", "SparseJacobian", "SparseJacobianInfo", "jacobian_sparsity",
           "color_columns", "arguments"]


# ---------------------------------------------------------------------------- detection
def _trace(f: Callable, x: Tensor, args: tuple = ()) -> tuple[Any, tuple, np.dtype]:
    cf = function(f).get_concrete_function(x, *args)
    graph = cf.graph
    if len(graph.outputs) != 1 or graph.outputs[0] is None:
        raise ValueError("sparse_jacobian: `f` must return one tensor; got "
                         f"{len(graph.outputs)} outputs.")
    shape, dtype = graph.avals[graph.outputs[0]]
    return graph, tuple(shape), np.dtype(dtype)


def _scipy_sparse() -> Any:
    return required("scipy.sparse", "scipy", "sparse Jacobians (scipy.sparse matrices)")


def _detect(f: Callable, x: Tensor, args: tuple = ()) -> tuple[Pattern, tuple]:
    graph, out_shape, out_dtype = _trace(f, x, args)
    if _dt.kind(out_dtype) not in "fc":
        raise TypeError(f"sparse_jacobian: `f` returns {out_dtype.name}; a Jacobian needs a "
                        "floating (or complex) output.")
    pattern = graph_pattern(graph)
    m = int(np.prod(out_shape))
    if pattern is None:  # the output does not depend on x at all
        pattern = Pattern.from_entries((m,), x._value.size, np.zeros(0, np.int64),
                                       np.zeros(0, np.int64))
    return pattern.reshape((m,)), out_shape


def jacobian_sparsity(f: Callable, x: Any) -> Any:
    """The structural sparsity pattern of f's Jacobian at every input shaped like `x`: a
    boolean scipy.sparse CSR matrix of shape (f(x).size, x.size), read off the program's
    structure (NOTE(sparsity)): an entry is there wherever the derivative can be nonzero,
    whatever the numbers at `x`.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> p = tf.jacobian_sparsity(lambda x: x[1:] * x[:-1], np.ones(4))
        >>> p.toarray().astype(int)
        array([[1, 1, 0, 0],
               [0, 1, 1, 0],
               [0, 0, 1, 1]])
    """
    x = _input(x, "jacobian_sparsity")
    pattern, _ = _detect(f, x)
    return _to_csr(pattern, np.ones(pattern.nnz, bool), bool)


def _to_csr(pattern: Pattern, data: np.ndarray, dtype: Any) -> Any:
    sp = _scipy_sparse()
    dtype = np.dtype(dtype)
    if dtype.itemsize == 2 and _dt.kind(dtype) == "f":
        # scipy.sparse holds no float16 or bfloat16: their values, exactly, in float32
        dtype = np.dtype(np.float32)
    return sp.csr_matrix((np.asarray(data, dtype), pattern.indices.copy(), pattern.indptr.copy()),
                         shape=(pattern.size, pattern.n))


# ---------------------------------------------------------------------------- coloring
def _greedy(order: np.ndarray, adjacency: list) -> np.ndarray:
    """Each vertex in `order` takes the smallest color none of its neighbors has."""
    colors = [-1] * len(adjacency)
    seen = [-1] * (max((len(a) for a in adjacency), default=0) + 2)
    for v in order.tolist():
        for u in adjacency[v]:
            c = colors[u]
            if c >= 0:
                seen[c] = v
        c = 0
        while seen[c] == v:
            c += 1
        colors[v] = c
    return np.asarray(colors, np.int64)


# Columns conflict when they share a row: the conflict graph has sum(row length^2) edges
# before deduplication. Past this many, a pattern with rows that long is colored trivially
# (one color per column; another plan, reverse or mixed, will be cheaper anyway).
_COLORING_BUDGET = 30_000_000


def color_columns(pattern: Any) -> np.ndarray:
    """A column coloring of a sparsity pattern (boolean array or scipy.sparse matrix, rows
    x columns): columns of one color share no row, so one product with the seed of each
    color gives every entry. Greedy, in natural and largest-first order; the fewer colors
    wins (a banded pattern of bandwidth w gets w colors).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tri = np.eye(6, dtype=bool) | np.eye(6, k=1, dtype=bool) | np.eye(6, k=-1, dtype=bool)
        >>> tf.sparse_jacobians.color_columns(tri).tolist()
        [0, 1, 2, 0, 1, 2]
    """
    p = _as_pattern(pattern)
    return _color(p.indptr, p.indices, p.size, p.n)


def _color(row_ptr: np.ndarray, row_cols: np.ndarray, m: int, n: int) -> np.ndarray:
    if n == 0:
        return np.zeros(0, np.int64)
    counts = np.diff(row_ptr)
    if int((counts.astype(np.int64) ** 2).sum()) > _COLORING_BUDGET:
        return np.arange(n, dtype=np.int64)
    # The conflict graph: every pair of columns within each row, deduplicated.
    rows = np.repeat(np.arange(m, dtype=np.int64), counts ** 2)
    offset = np.arange(rows.size, dtype=np.int64) - np.repeat(np.cumsum(counts ** 2) - counts ** 2,
                                                             counts ** 2)
    k = counts[rows]
    a = row_cols[row_ptr[rows] + offset // np.maximum(k, 1)]
    b = row_cols[row_ptr[rows] + offset % np.maximum(k, 1)]
    keys = sorted_unique(a[a != b] * n + b[a != b])
    first, second = keys // n, keys % n
    cuts = np.searchsorted(first, np.arange(1, n))
    adjacency = [part.tolist() for part in np.split(second, cuts)]
    degree = np.diff(np.concatenate(([0], cuts, [first.size])))
    best = None
    for order in (np.arange(n), np.argsort(-degree, kind="stable")):  # natural, largest first
        colors = _greedy(order, adjacency)
        if best is None or colors.max() < best.max():
            best = colors
    return best


def _transpose(p: Pattern) -> Pattern:
    rows, cols = p.entries()
    return Pattern.from_entries((p.n,), p.size, cols, rows)


def _subset_rows(p: Pattern, keep: np.ndarray) -> Pattern:
    return p.gather((keep.size,), np.arange(keep.size), keep)


# ---------------------------------------------------------------------------- the plan
@dataclasses.dataclass
class SparseJacobianInfo:
    """How a sparse Jacobian was computed.

    Attributes:
        mode: "forward" (one JVP per column color), "reverse" (one VJP per row color) or
            "mixed" (the densest rows by reverse mode, the rest by forward mode).
        colors: the number of products in the vectorized pass (JVPs + VJPs).
        forward_colors, reverse_rows: the two parts of that count.
        nnz: entries in the sparsity pattern; shape: (outputs, inputs).
        detected: True if the pattern was read off the program, False if supplied.
        coloring: each column's color (forward and mixed) or each row's (reverse).
    """

    mode: str
    colors: int
    forward_colors: int
    reverse_rows: int
    nnz: int
    shape: tuple
    detected: bool
    coloring: np.ndarray = dataclasses.field(repr=False)


@dataclasses.dataclass
class _Plan:
    pattern: Pattern
    info: SparseJacobianInfo
    seeds: np.ndarray | None      # (k, n) forward seeds
    cotangents: np.ndarray | None  # (r, m) reverse seeds
    fwd_rows: np.ndarray           # pattern rows taken from the forward pass
    rev_rows: np.ndarray           # pattern rows taken from the reverse pass (their colors)
    row_color: np.ndarray | None   # reverse mode: each row's color


def _make_plan(pattern: Pattern, mode: str, detected: bool) -> _Plan:
    m, n = pattern.size, pattern.n
    counts = np.diff(pattern.indptr)
    candidates = []
    if mode in ("auto", "forward"):
        candidates.append(("forward", np.arange(m), _color(pattern.indptr, pattern.indices, m, n)))
    if mode in ("auto", "reverse"):
        t = _transpose(pattern)
        candidates.append(("reverse", None, _color(t.indptr, t.indices, n, m)))
    if mode in ("auto", "mixed") and m:
        ranked = np.argsort(-counts, kind="stable")
        median = max(1.0, float(np.median(counts)))
        for r in (1, 2, 4, 8, 16, 32, 64):
            if r >= m or (mode == "auto" and counts[ranked[r - 1]] < 4 * median):
                break
            rest = np.sort(ranked[r:])
            sub = _subset_rows(pattern, rest)
            candidates.append(("mixed", rest, _color(sub.indptr, sub.indices, rest.size, n),
                               np.sort(ranked[:r])))

    def cost(c: tuple) -> int:
        k = int(c[2].max()) + 1 if c[2].size else 0
        return k + (len(c[3]) if c[0] == "mixed" else 0)

    best = min(candidates, key=cost)
    kind, coloring = best[0], best[2]
    k = int(coloring.max()) + 1 if coloring.size else 0
    if kind == "reverse":
        cot = np.zeros((k, m))
        cot[coloring, np.arange(m)] = 1
        info = SparseJacobianInfo("reverse", k, 0, k, pattern.nnz, (m, n), detected, coloring)
        return _Plan(pattern, info, None, cot, np.zeros(0, np.int64), np.arange(m), coloring)
    seeds = np.zeros((k, n))
    seeds[coloring, np.arange(n)] = 1
    dense_rows = best[3] if kind == "mixed" else np.zeros(0, np.int64)
    cot = None
    if dense_rows.size:
        cot = np.zeros((dense_rows.size, m))
        cot[np.arange(dense_rows.size), dense_rows] = 1
    info = SparseJacobianInfo(kind, k + dense_rows.size, k, int(dense_rows.size), pattern.nnz,
                              (m, n), detected, coloring)
    return _Plan(pattern, info, seeds, cot, best[1], dense_rows, None)


# ---------------------------------------------------------------------------- evaluation
def arguments(args: tuple) -> tuple:
    """Extra arguments of `f`: arrays (and tensors) as tensors, inputs of the traces rather
    than constants frozen into them; anything else (a Python number, a dict, an object)
    unchanged, as `f` gets it eagerly (a traced function keys its traces on such values).

    Example:
        >>> import numpy as np
        >>> from tapeflow.sparse_jacobians import arguments
        >>> " ".join(type(a).__name__ for a in arguments((np.ones(2), 3, {"k": 1.0})))
        'Tensor int dict'
    """
    return tuple(convert_to_tensor(a) if isinstance(a, (np.ndarray, np.generic, TensorBase))
                 else a for a in args)


def _input(x: Any, fname: str) -> Tensor:
    t = convert_to_tensor(x)
    if not (t.dtype.is_floating or t.dtype.is_complex):
        raise TypeError(f"{fname}: `x` must be a floating tensor; got {t.dtype.name}.")
    return t


def _as_pattern(sparsity: Any, shape: tuple | None = None) -> Pattern:
    """A user's pattern (boolean array or scipy.sparse matrix) as a Pattern, checked."""
    if hasattr(sparsity, "tocsr") and hasattr(sparsity, "nnz"):
        csr = sparsity.tocsr()
        csr.sum_duplicates()
        rows = np.repeat(np.arange(csr.shape[0]), np.diff(csr.indptr))
        keep = csr.data != 0
        got_shape = csr.shape
        rows, cols = rows[keep], csr.indices[keep].astype(np.int64)
    else:
        arr = np.asarray(sparsity)
        if arr.ndim != 2 or _dt.kind(arr.dtype) not in "biuf":
            raise ValueError("sparsity: expected a 2-D boolean array or scipy.sparse matrix "
                             f"(outputs x inputs); got an array of shape {arr.shape} and dtype "
                             f"{arr.dtype}.")
        got_shape = arr.shape
        rows, cols = np.nonzero(arr)
    if shape is not None and tuple(got_shape) != tuple(shape):
        raise ValueError(f"sparsity: expected a pattern of shape {tuple(shape)} (f(x).size "
                         f"outputs x x.size inputs); got {tuple(got_shape)}.")
    return Pattern.from_entries((got_shape[0],), got_shape[1], rows.astype(np.int64), cols)


class SparseJacobian:
    """f's Jacobian as a scipy.sparse CSR matrix, traced once and replayed at new inputs.

    On the first call (and on a new input shape) the sparsity pattern is read off f's
    traced program (NOTE(sparsity)) or taken from `sparsity`, colored, and the compressed
    products of all colors traced into one `tapeflow.function`; later calls replay it.
    `mode` is "auto" (the fewest products), "forward", "reverse" or "mixed". A supplied
    pattern is checked at every call against one extra random product: an entry it misses
    that is nonzero there raises ValueError (never a silently wrong Jacobian); one the
    program's structure has but the pattern lacks is warned about once.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> jac = tf.SparseJacobian(lambda x: x[1:] ** 2 - x[:-1])
        >>> jac(np.arange(5.)).toarray()[0]
        array([-1.,  2.,  0.,  0.,  0.])
        >>> jac.info.mode, jac.info.colors
        ('forward', 2)
    """

    def __init__(self, f: Callable, sparsity: Any = None, mode: str = "auto") -> None:
        if mode not in ("auto", "forward", "reverse", "mixed"):
            raise ValueError(f"SparseJacobian: `mode` must be 'auto', 'forward', 'reverse' or "
                             f"'mixed'; got {mode!r}.")
        self.f = f
        self.sparsity = sparsity
        self.mode = mode
        # (input shape and dtype, output shape) -> (plan, output shape, compressed
        # products; f may branch on values to outputs of other shapes), the least
        # recently used dropped beyond MAX_PLANS, as tf.function drops signatures
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._recent: dict = {}  # input shape and dtype -> the output shape f gave last
        self._planned = 0
        # Calls run one at a time: a call learns that its input took a new branch of f
        # only from the tracing count rising during its own run (NOTE(value-reads)).
        self._lock = threading.RLock()
        self.info: SparseJacobianInfo | None = None

    def _plan_for(self, x: Tensor, args: tuple, out_shape: tuple | None) -> tuple:
        """The plan for x's shape and the output shape `out_shape` (None: the one f gave
        last at x's shape), made from f's pattern at x where there is none."""
        shape = (tuple(x.shape), np.dtype(x._value.dtype).str)
        if out_shape is None:
            out_shape = self._recent.get(shape)
        entry = self._plans.get((shape, out_shape))
        if entry is not None:
            self._plans.move_to_end((shape, out_shape))
        else:
            detected, out_shape = _detect(self.f, x, args)
            n = x._value.size
            if self.sparsity is None:
                pattern, is_detected = detected, True
            else:
                pattern = _as_pattern(self.sparsity, (detected.size, n))
                is_detected = False
                missed = _missing(detected, pattern)
                if missed:
                    warnings.warn(
                        f"SparseJacobian: the supplied sparsity pattern lacks {missed} entries "
                        "the program's structure can make nonzero; each call checks the result "
                        "and raises if one is nonzero there.", stacklevel=4)
            plan = _make_plan(pattern, self.mode, is_detected)
            entry = (plan, out_shape, _compressed(self.f, plan, not is_detected, out_shape))
            self._keep((shape, out_shape), entry)
        self._recent[shape] = out_shape
        return entry

    def _keep(self, key: tuple, entry: tuple) -> None:
        self._plans[key] = entry
        while len(self._plans) > MAX_PLANS:
            (shape, out_shape), _ = self._plans.popitem(last=False)
            if self._recent.get(shape) == out_shape:
                del self._recent[shape]
        self._planned += 1
        if self._planned == RETRACE_WARN_AFTER + 1 or (
                self._planned > RETRACE_WARN_AFTER and self._planned % 50 == 0):
            warnings.warn(f"SparseJacobian has found a pattern and traced its products "
                          f"{self._planned} times, once per new input shape or new branch of "
                          "f: keep the input's shape fixed (each plan is kept, up to "
                          f"{MAX_PLANS}).", stacklevel=4)

    def __call__(self, x: Any, *args: Any) -> Any:
        """The Jacobian in `x` at (x, *args); `args` are passed to f as tensors, so new
        values replay the same trace."""
        x = _input(x, "SparseJacobian")
        args = arguments(args)
        with self._lock:
            return self._call(x, args)

    def _call(self, x: Tensor, args: tuple) -> Any:
        out_shape = None
        for _ in range(2):
            try:
                return self._run(x, args, *self._plan_for(x, args, out_shape))
            except _OtherOutputShape as other:
                # f branched on x's values to an output of another shape: its own plan.
                out_shape = other.shape
        raise ValueError(f"SparseJacobian: f's output shape at one input changed between "
                         f"two traces (now {out_shape}): f must be a function of x and args.")

    def _run(self, x: Tensor, args: tuple, plan: _Plan, out_shape: tuple,
             run: Callable) -> Any:
        dtype = np.result_type(x._value.dtype, np.float32)
        traced = run.experimental_get_tracing_count()
        fwd, rev, probe = run(x, *args)
        if traced and run.experimental_get_tracing_count() > traced and self.sparsity is None:
            # A guard sent this input down another branch of f (NOTE(value-reads)): its
            # pattern may hold entries the first branch's lacked. Keep the union of both.
            detected, _ = _detect(self.f, x, args)
            if _missing(detected, plan.pattern):
                rows, cols = zip(plan.pattern.entries(), detected.entries(), strict=True)
                merged = Pattern.from_entries(plan.pattern.shape, plan.pattern.n,
                                              np.concatenate(rows), np.concatenate(cols))
                plan = _make_plan(merged, self.mode, True)
                run = _compressed(self.f, plan, False, out_shape)
                self._keep(((tuple(x.shape), np.dtype(x._value.dtype).str), out_shape),
                           (plan, out_shape, run))
                fwd, rev, probe = run(x, *args)
        values = _recover(plan, fwd, rev)
        if probe is not None:
            _check(plan, values, probe, dtype)
        self.info = plan.info
        return _to_csr(plan.pattern, values, values.dtype)


def _missing(detected: Pattern, supplied: Pattern) -> int:
    d_rows, d_cols = detected.entries()
    s_rows, s_cols = supplied.entries()
    n = max(detected.n, 1)
    return int(np.setdiff1d(d_rows * n + d_cols, s_rows * n + s_cols, assume_unique=True).size)


class _OtherOutputShape(Exception):
    """A trace of the products found f's output shaped otherwise than its plan's."""

    def __init__(self, shape: tuple) -> None:
        super().__init__(shape)
        self.shape = shape


def _compressed(f: Callable, plan: _Plan, check: bool, out_shape: tuple) -> Callable:
    """The traced pass: JVPs of the forward seeds, VJPs of the reverse ones, and (for a
    supplied pattern) one random JVP to check the result against. A trace that finds f's
    output shaped otherwise than `out_shape` (a branch on x's values) raises
    _OtherOutputShape: decoded with this plan, its products would be wrong."""
    seeds, cots = plan.seeds, plan.cotangents
    probe = _probe(plan.pattern.n) if check else None

    def run(x: Tensor, *args: Tensor) -> tuple:
        g = (lambda v: f(v, *args)) if args else f
        shape = tuple(x.shape)
        dtype = x.dtype
        fwd = rev = chk = None
        if seeds is not None and seeds.shape[0]:
            s = convert_to_tensor(seeds.reshape((-1,) + shape), dtype=dtype)
            fwd = vmap(lambda v: _jvp(g, (x,), (v,))[1])(s)
            if tuple(fwd.shape[1:]) != out_shape:
                raise _OtherOutputShape(tuple(fwd.shape[1:]))
        if cots is not None and cots.shape[0]:
            y, pull = _vjp(g, x)
            if tuple(y.shape) != out_shape:
                raise _OtherOutputShape(tuple(y.shape))
            c = convert_to_tensor(cots.reshape((-1,) + tuple(y.shape)), dtype=y.dtype)
            rev = vmap(lambda ct: pull(ct)[0])(c)
        if probe is not None:
            chk = _jvp(g, (x,), (convert_to_tensor(probe.reshape(shape), dtype=dtype),))[1]
            if tuple(chk.shape) != out_shape:
                raise _OtherOutputShape(tuple(chk.shape))
        return fwd, rev, chk

    return function(run)


def _probe(n: int) -> np.ndarray:
    """The random direction a supplied pattern is checked along (the same every call)."""
    return np.random.default_rng(0).standard_normal(n)


def _recover(plan: _Plan, fwd: Any, rev: Any) -> np.ndarray:
    p = plan.pattern
    rows, cols = p.entries()
    dtype = np.result_type(*(np.asarray(t.numpy()).dtype for t in (fwd, rev) if t is not None)) \
        if (fwd is not None or rev is not None) else np.float64
    values = np.zeros(p.nnz, dtype)
    if plan.info.mode == "reverse":
        if rev is not None:
            r = rev.numpy().reshape(rev.shape[0], -1)  # (colors, n)
            values[:] = r[plan.row_color[rows], cols]
        return values
    if fwd is not None:
        b = fwd.numpy().reshape(fwd.shape[0], -1)  # (colors, m)
        values[:] = b[plan.info.coloring[cols], rows]
    if plan.rev_rows.size and rev is not None:
        r = rev.numpy().reshape(rev.shape[0], -1)  # (dense rows, n)
        where = np.searchsorted(plan.rev_rows, rows)
        hit = plan.rev_rows[np.minimum(where, plan.rev_rows.size - 1)] == rows
        values[hit] = r[where[hit], cols[hit]]
    return values


# A Jacobian goes to SciPy as a sparse matrix when at most this fraction of it is
# structurally nonzero and it is big enough for sparse factorizations and products to pay
# (tapeflow.scipy's adapters, trust-constr, the stiff ODE methods).
SPARSE_DENSITY = 0.1
SPARSE_MIN_SIZE = 2500


def sparse_pays(shape: tuple, nnz: int) -> bool:
    """Whether a matrix of `shape` with `nnz` structural nonzeros goes to SciPy sparse."""
    size = int(np.prod(shape))
    return size >= SPARSE_MIN_SIZE and nnz <= SPARSE_DENSITY * size


def missed_rows(p: Pattern, values: np.ndarray, want: np.ndarray, dtype: Any) -> np.ndarray:
    """The rows where the matrix of pattern `p` and `values`, times the probe direction,
    is not `want` (the full product along it) to the dtype's precision: a supplied
    pattern that misses nonzeros there."""
    rows, cols = p.entries()
    terms = values * _probe(p.n)[cols]
    got = np.zeros(p.size, values.dtype)
    np.add.at(got, rows, terms)
    scale = np.zeros(p.size)
    np.add.at(scale, rows, np.abs(terms))
    want = np.asarray(want, np.float64).reshape(-1)
    rtol = 1e-4 if np.dtype(dtype).itemsize <= 4 else 1e-9
    tol = rtol * (scale + np.abs(want) + 1e-3 * np.abs(want).max(initial=0))
    return np.flatnonzero(np.abs(got - want) > tol)


def _check(plan: _Plan, values: np.ndarray, probe: Any, dtype: np.dtype) -> None:
    bad = missed_rows(plan.pattern, values, probe.numpy(), dtype)
    if bad.size:
        raise ValueError(
            f"SparseJacobian: the supplied sparsity pattern misses nonzero Jacobian entries "
            f"(in {bad.size} output rows, first row {int(bad[0])}); the compressed result would "
            "be wrong. Pass a pattern that includes them, or sparsity=None to detect it.")


def sparse_jacobian(f: Callable, x: Any, sparsity: Any = None, *, mode: str = "auto",
                    return_info: bool = False) -> Any:
    """The Jacobian of f at x as a scipy.sparse CSR matrix of shape (f(x).size, x.size),
    from one vectorized pass of compressed products (see SparseJacobian, which keeps the
    trace for new inputs). ``return_info=True`` also returns a SparseJacobianInfo: the
    mode and number of colors used.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> J, info = tf.sparse_jacobian(lambda x: tf.sin(x) * 2., np.zeros(4), return_info=True)
        >>> J.toarray().diagonal(), info.colors
        (array([2., 2., 2., 2.]), 1)
    """
    jac = SparseJacobian(f, sparsity, mode)
    out = jac(x)
    return (out, jac.info) if return_info else out
