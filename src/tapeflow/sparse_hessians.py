"""Sparse Hessians: the pattern read off the traced program (NOTE(curvature) in
tapeflow/hessian_patterns.py), a star coloring of its adjacency graph, and all colors'
Hessian-vector products in one vectorized forward-over-reverse pass.

A symmetric matrix needs fewer products than a column coloring would give it: with a
star coloring (a distance-1 coloring in which every path on four vertices uses at least
three colors; Gebremedhin, Manne and Pothen, "What color is your Jacobian? Graph
coloring for computing derivatives", SIAM Review 47(4), 2005), each entry is read
directly off the compressed product B = H S (S[j, c(j)] = 1): H[i, i] = B[i, c(i)], and
for i != j, H[i, j] = B[i, c(j)] when j is the only neighbor of i colored c(j), else
B[j, c(i)] (then i is the only neighbor of j colored c(i): two colors alternating along
a path k-i-j-l would make a path on four vertices with two colors). An arrowhead takes
2 colors where a column coloring takes n; a banded or block matrix takes its
bandwidth or block size.

`SparseHessian(f)` traces f once: the pattern and coloring are found on the first call
and the compressed products replay (`tapeflow.function`) at every later input;
`sparse_hessian(f, x)` is the one-off form. Results are symmetric scipy.sparse CSR
matrices of shape (x.size, x.size), x flattened in C order.
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
from .graph.hessian_sparsity import graph_curvature
from .hessian_patterns import pairs_matrix
from .ops.reduction import reduce_sum
from .patterns import Pattern
from .sparse_jacobians import (MAX_PLANS, RETRACE_WARN_AFTER, _as_pattern, _missing, _probe,
                               _to_csr, arguments, missed_rows)
from .tensor import Tensor, convert_to_tensor
from .transforms import grad
from .transforms import jvp as _jvp

__all__ = ["sparse_hessian", "SparseHessian", "SparseHessianInfo", "hessian_sparsity",
           "star_coloring", "is_star_coloring"]


# ---------------------------------------------------------------------------- detection
def _input(x: Any, fname: str) -> Tensor:
    t = convert_to_tensor(x)
    if not t.dtype.is_floating:
        raise TypeError(f"{fname}: `x` must be a real floating tensor; got {t.dtype.name}.")
    return t


def _detect(f: Callable, x: Tensor, args: tuple, fname: str) -> Pattern:
    graph = function(f).get_concrete_function(x, *args).graph
    if len(graph.outputs) != 1 or graph.outputs[0] is None:
        raise ValueError(f"{fname}: `f` must return one scalar tensor; got "
                         f"{len(graph.outputs)} outputs.")
    shape, dtype = graph.avals[graph.outputs[0]]
    _check_output(tuple(shape), np.dtype(dtype), fname)
    return pairs_matrix(graph_curvature(graph)[1], x._value.size)


def _check_output(shape: tuple, dtype: np.dtype, fname: str) -> None:
    if int(np.prod(shape)) != 1:
        raise ValueError(f"{fname}: `f` must return a scalar (a Hessian is of one value); "
                         f"got shape {list(shape)}.")
    if _dt.kind(dtype) != "f":
        raise TypeError(f"{fname}: `f` returns {np.dtype(dtype).name}; a Hessian needs a real "
                        "floating output.")


def hessian_sparsity(f: Callable, x: Any, args: tuple = ()) -> Any:
    """The structural sparsity pattern of the Hessian of scalar f at every input shaped
    like `x`: a symmetric boolean scipy.sparse CSR matrix of shape (x.size, x.size), read
    off the program's structure (NOTE(curvature)): x * y has a cross term, x + y none,
    whatever the numbers at `x`. `args` are f's other arguments (values that change
    between calls: only their shapes count).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> p = tf.hessian_sparsity(lambda x: tf.reduce_sum(x[1:] * x[:-1]) + x[0] ** 3, np.ones(4))
        >>> p.toarray().astype(int)
        array([[1, 1, 0, 0],
               [1, 0, 1, 0],
               [0, 1, 0, 1],
               [0, 0, 1, 0]])
    """
    x = _input(x, "hessian_sparsity")
    pattern = _detect(f, x, arguments(tuple(args)), "hessian_sparsity")
    return _to_csr(pattern, np.ones(pattern.nnz, bool), bool)


# ---------------------------------------------------------------------------- coloring
def _adjacency(p: Pattern) -> list:
    """Each vertex's neighbors in the graph of a symmetric pattern (no self loops)."""
    rows, cols = p.entries()
    off = rows != cols
    flat = cols[off].tolist()
    ptr = np.concatenate(([0], np.cumsum(np.bincount(rows[off], minlength=p.size)))).tolist()
    return [flat[a:b] for a, b in zip(ptr[:-1], ptr[1:])]


def _star_greedy(order: list, adjacency: list) -> list:
    """Each vertex in `order` takes the smallest color that keeps the coloring a star
    coloring of the vertices colored so far: none of its neighbors' colors, and not the
    color of a vertex x two steps away (v-w-x) where that would close a path on four
    vertices with two colors, v-w-x-y (x has another neighbor y colored as w) or
    a-v-w-x (v has another neighbor a colored as w). Every such path is checked when its
    last vertex is colored, so the result has none."""
    n = len(adjacency)
    color = [-1] * n
    near: list[dict] = [{} for _ in range(n)]  # per vertex: color -> its neighbors of it
    forbidden = [-1] * (n + 1)
    for v in order:
        around = near[v]
        for c in around:
            forbidden[c] = v
        for w in adjacency[v]:
            cw = color[w]
            if cw < 0:
                continue
            shared = around[cw] > 1
            for x in adjacency[w]:
                cx = color[x]
                if cx >= 0 and forbidden[cx] != v and (shared or near[x][cw] > 1):
                    forbidden[cx] = v
        c = 0
        while forbidden[c] == v:
            c += 1
        color[v] = c
        for w in adjacency[v]:
            counts = near[w]
            counts[c] = counts.get(c, 0) + 1
    return color


# The greedy star coloring visits every path of two edges: sum(degree^2) steps in Python.
# Past this many, each variable gets a color of its own (a Hessian that dense needs nearly
# as many products anyway).
_STAR_BUDGET = 30_000_000


def _star(p: Pattern) -> np.ndarray:
    n = p.size
    if n == 0:
        return np.zeros(0, np.int64)
    adjacency = _adjacency(p)
    degree = np.fromiter((len(a) for a in adjacency), np.int64, n)
    if int((degree ** 2).sum()) > _STAR_BUDGET:
        return np.arange(n, dtype=np.int64)
    best = np.asarray(_star_greedy(list(range(n)), adjacency), np.int64)
    if 2 * (best.max() + 1) > 3 * (degree.max() + 1):
        # Half as many colors again as the densest row has entries: try largest first.
        colors = np.asarray(_star_greedy(np.argsort(-degree, kind="stable").tolist(),
                                         adjacency), np.int64)
        if colors.max() < best.max():
            best = colors
    return best


def _symmetric(sparsity: Any) -> Pattern:
    p = sparsity if isinstance(sparsity, Pattern) else _as_pattern(sparsity)
    if p.size != p.n:
        raise ValueError(f"a Hessian's pattern must be square; got {p.size} x {p.n}.")
    rows, cols = p.entries()
    return Pattern.from_entries((p.n,), p.n, np.concatenate([rows, cols]),
                                np.concatenate([cols, rows]))


def star_coloring(pattern: Any) -> np.ndarray:
    """A star coloring of a symmetric sparsity pattern (boolean array or scipy.sparse
    matrix; a triangle is completed by symmetry): adjacent vertices differ, and every path
    on four vertices uses at least three colors, so one Hessian-vector product per color
    gives every entry directly. Greedy, in natural order, and in largest-first order
    too where that needs half as many colors again as the densest row has entries; the
    fewer wins.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> arrow = np.eye(6, dtype=bool); arrow[0] = arrow[:, 0] = True
        >>> tf.sparse_hessians.star_coloring(arrow).tolist()
        [0, 1, 1, 1, 1, 1]
    """
    return _star(_symmetric(pattern))


def is_star_coloring(pattern: Any, colors: Any) -> bool:
    """Whether `colors` is a star coloring of a symmetric pattern: no two adjacent
    vertices share a color, and no path on four vertices alternates two colors
    (equivalently: for every edge {i, j}, i is the only neighbor of j colored c(i), or j
    the only neighbor of i colored c(j)).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> path = np.eye(4, dtype=bool) | np.eye(4, k=1, dtype=bool) | np.eye(4, k=-1, dtype=bool)
        >>> tf.sparse_hessians.is_star_coloring(path, [0, 1, 0, 1])  # 0-1-0-1: two colors
        False
        >>> tf.sparse_hessians.is_star_coloring(path, [0, 1, 2, 0])
        True
    """
    p = _symmetric(pattern)
    colors = np.asarray(colors, np.int64)
    if colors.shape != (p.n,):
        raise ValueError(f"is_star_coloring: expected {p.n} colors; got shape {colors.shape}.")
    rows, cols = p.entries()
    off = rows != cols
    rows, cols = rows[off], cols[off]
    if np.any(colors[rows] == colors[cols]):
        return False
    unique_ij, unique_ji = _unique_neighbor(rows, cols, colors)
    return bool(np.all(unique_ij | unique_ji))


def _unique_neighbor(rows: np.ndarray, cols: np.ndarray, colors: np.ndarray) -> tuple:
    """For each off-diagonal entry (i, j): whether j is i's only neighbor colored c(j),
    and whether i is j's only neighbor colored c(i)."""
    k = int(colors.max()) + 1 if colors.size else 1
    keys = rows * k + colors[cols]
    uniq, inverse, counts = np.unique(keys, return_inverse=True, return_counts=True)
    alone = counts[inverse] == 1
    back = np.searchsorted(uniq, cols * k + colors[rows])
    return alone, counts[back] == 1


# ---------------------------------------------------------------------------- the plan
@dataclasses.dataclass
class SparseHessianInfo:
    """How a sparse Hessian was computed.

    Attributes:
        colors: the number of Hessian-vector products in the vectorized pass (the star
            coloring's colors).
        nnz: entries in the (symmetric) sparsity pattern; shape: (x.size, x.size).
        densest_row: the most entries of one row (a column coloring of the rows' kind
            needs at least this many colors; a star coloring may need fewer).
        detected: True if the pattern was read off the program, False if supplied.
        coloring: each variable's color.
    """

    colors: int
    nnz: int
    shape: tuple
    densest_row: int
    detected: bool
    coloring: np.ndarray = dataclasses.field(repr=False)


@dataclasses.dataclass
class _Plan:
    pattern: Pattern
    info: SparseHessianInfo
    seeds: np.ndarray       # (colors, n)
    read_row: np.ndarray    # each pattern entry (i, j) with i <= j, in order, is
    read_color: np.ndarray  # B[read_color, read_row] of the products B = H S
    mirror: np.ndarray      # for every pattern entry, its (i <= j) entry above


def _make_plan(pattern: Pattern, detected: bool) -> _Plan:
    n = pattern.n
    coloring = _star(pattern)
    k = int(coloring.max()) + 1 if pattern.nnz else 0  # no entries: no products
    seeds = np.zeros((k, n))
    if k:
        seeds[coloring, np.arange(n)] = 1
    rows, cols = pattern.entries()
    alone = np.zeros(rows.size, bool)
    off = rows != cols
    if off.any():
        alone[off] = _unique_neighbor(rows[off], cols[off], coloring)[0]
    upper = np.flatnonzero(rows <= cols)
    i, j, a = rows[upper], cols[upper], alone[upper]
    diag = i == j
    # The diagonal: B[c(i), i]. j alone among i's neighbors in its color: B[c(j), i];
    # else i is alone among j's in its color (the star property): B[c(i), j].
    read_row = np.where(diag | a, i, j)
    read_color = np.where(a & ~diag, coloring[j], coloring[i])
    lo, hi = np.minimum(rows, cols), np.maximum(rows, cols)
    mirror = np.searchsorted(i * max(n, 1) + j, lo * max(n, 1) + hi)
    counts = np.diff(pattern.indptr)
    info = SparseHessianInfo(k, pattern.nnz, (n, n), int(counts.max(initial=0)), detected,
                             coloring)
    return _Plan(pattern, info, seeds, read_row, read_color, mirror)


# ---------------------------------------------------------------------------- evaluation
class SparseHessian:
    """The Hessian of scalar f as a symmetric scipy.sparse CSR matrix, traced once and
    replayed at new inputs.

    On the first call (and on a new input shape or dtype) the sparsity pattern is read
    off f's traced program (NOTE(curvature)) or taken from `sparsity` (a square boolean
    array or scipy.sparse matrix; one triangle is enough), star-colored, and the
    Hessian-vector products of all colors (forward over reverse, one vectorized pass)
    traced into one `tapeflow.function`; later calls replay it. A supplied pattern is
    checked at every call against one extra random product: an entry it misses that is
    nonzero there raises ValueError (never a silently wrong Hessian); one the program's
    structure has but the pattern lacks is warned about once. A half-precision x gives
    float32 values (scipy.sparse holds no 16-bit floats).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> hess = tf.SparseHessian(lambda x: tf.reduce_sum(x[1:] ** 2 * x[:-1]))
        >>> hess(np.arange(4.)).toarray()
        array([[0., 2., 0., 0.],
               [2., 0., 4., 0.],
               [0., 4., 2., 6.],
               [0., 0., 6., 4.]])
        >>> hess.info.colors, hess.info.nnz
        (3, 9)
    """

    def __init__(self, f: Callable, sparsity: Any = None) -> None:
        self.f = f
        self.sparsity = sparsity
        # (input shape, dtype) -> (plan, compressed products), the least recently used
        # dropped beyond MAX_PLANS, as tf.function drops signatures
        self._plans: collections.OrderedDict = collections.OrderedDict()
        self._planned = 0
        # Calls run one at a time: a call learns that its input took a new branch of f
        # only from the tracing count rising during its own run (NOTE(value-reads)).
        self._lock = threading.RLock()
        self.info: SparseHessianInfo | None = None

    def __call__(self, x: Any, *args: Any) -> Any:
        """The Hessian in `x` at (x, *args); `args` are passed to f as tensors, so new
        values replay the same trace."""
        x = _input(x, "SparseHessian")
        args = arguments(args)
        with self._lock:
            key = (tuple(x.shape), np.dtype(x._value.dtype).str)
            entry = self._plans.get(key)
            if entry is None:
                entry = self._new_plan(x, args)
                self._keep(key, entry)
            else:
                self._plans.move_to_end(key)
            return self._run(key, x, args, *entry)

    def _new_plan(self, x: Tensor, args: tuple) -> tuple:
        detected = _detect(self.f, x, args, "SparseHessian")
        if self.sparsity is None:
            plan = _make_plan(detected, True)
        else:
            n = x._value.size
            pattern = _symmetric(_as_pattern(self.sparsity, (n, n)))
            missed = _missing(detected, pattern)
            if missed:
                warnings.warn(
                    f"SparseHessian: the supplied sparsity pattern lacks {missed} entries the "
                    "program's structure can make nonzero; each call checks the result and "
                    "raises if one is nonzero there.", stacklevel=4)
            plan = _make_plan(pattern, False)
        return plan, _compressed(self.f, plan, self.sparsity is not None)

    def _keep(self, key: tuple, entry: tuple) -> None:
        self._plans[key] = entry
        while len(self._plans) > MAX_PLANS:
            self._plans.popitem(last=False)
        self._planned += 1
        if self._planned == RETRACE_WARN_AFTER + 1 or (
                self._planned > RETRACE_WARN_AFTER and self._planned % 50 == 0):
            warnings.warn(f"SparseHessian has found a pattern and traced its products "
                          f"{self._planned} times, once per new input shape or new branch of "
                          "f: keep the input's shape fixed (each plan is kept, up to "
                          f"{MAX_PLANS}).", stacklevel=4)

    def _run(self, key: tuple, x: Tensor, args: tuple, plan: _Plan, run: Callable) -> Any:
        traced = run.experimental_get_tracing_count()
        products = run(x, *args)
        if traced and run.experimental_get_tracing_count() > traced and self.sparsity is None:
            # A guard sent this input down another branch of f (NOTE(value-reads)): its
            # pattern may hold entries the first branch's lacked. Keep the union of both.
            detected = _detect(self.f, x, args, "SparseHessian")
            if _missing(detected, plan.pattern):
                rows, cols = zip(plan.pattern.entries(), detected.entries(), strict=True)
                merged = Pattern.from_entries(plan.pattern.shape, plan.pattern.n,
                                              np.concatenate(rows), np.concatenate(cols))
                plan = _make_plan(merged, True)
                run = _compressed(self.f, plan, False)
                self._keep(key, (plan, run))
                products = run(x, *args)
        b = None
        if products is not None:
            b = np.asarray(products.numpy())
            b = b.reshape(b.shape[0], -1)
            if b.dtype.itemsize < 4:  # float16, bfloat16: scipy.sparse holds neither
                b = b.astype(np.float32)
        values = _recover(plan, b, x)
        if self.sparsity is not None:
            _check(plan, values, b[-1], b.dtype)
        self.info = plan.info
        return _to_csr(plan.pattern, values, values.dtype)


def _compressed(f: Callable, plan: _Plan, check: bool) -> Callable:
    """The traced pass: the Hessian-vector products of every color's seed (and, for a
    supplied pattern, of one random direction to check the result against), forward over
    reverse, vectorized over the seeds."""
    seeds = plan.seeds
    if check:
        seeds = np.concatenate([seeds, _probe(plan.pattern.n)[None]], 0)

    def run(x: Tensor, *args: Tensor) -> Any:
        def scalar(v: Tensor) -> Tensor:
            y = f(v, *args) if args else f(v)
            _check_output(tuple(y.shape), np.dtype(y.dtype.as_numpy_dtype), "SparseHessian")
            return reduce_sum(y)

        if not seeds.shape[0]:
            scalar(x)  # f's output is checked at every trace
            return None
        s = convert_to_tensor(seeds.reshape((-1,) + tuple(x.shape)), dtype=x.dtype)
        return vmap(lambda v: _jvp(grad(scalar), (x,), (v,))[1])(s)

    return function(run)


def _recover(plan: _Plan, b: np.ndarray | None, x: Tensor) -> np.ndarray:
    dtype = b.dtype if b is not None else np.result_type(x._value.dtype, np.float32)
    if b is None or not plan.pattern.nnz:
        return np.zeros(plan.pattern.nnz, dtype)
    upper = b[plan.read_color, plan.read_row]
    return upper[plan.mirror]


def _check(plan: _Plan, values: np.ndarray, probe: np.ndarray, dtype: np.dtype) -> None:
    bad = missed_rows(plan.pattern, values, probe, dtype)
    if bad.size:
        raise ValueError(
            f"SparseHessian: the supplied sparsity pattern misses nonzero Hessian entries (in "
            f"{bad.size} rows, first row {int(bad[0])}); the compressed result would be wrong. "
            "Pass a pattern that includes them, or sparsity=None to detect it.")


def sparse_hessian(f: Callable, x: Any, sparsity: Any = None, *, args: tuple = (),
                   return_info: bool = False) -> Any:
    """The Hessian of scalar f at x as a symmetric scipy.sparse CSR matrix of shape
    (x.size, x.size), from one vectorized pass of Hessian-vector products, one per color
    of a star coloring of its pattern (see SparseHessian, which keeps the trace for new
    inputs). `args` are f's other arguments; ``return_info=True`` also returns a
    SparseHessianInfo: the colors and nonzeros.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> arrow = lambda x: x[0] * tf.reduce_sum(x[1:] ** 2)
        >>> H, info = tf.sparse_hessian(arrow, np.ones(5), return_info=True)
        >>> H.toarray()[0], info.colors, info.densest_row
        (array([0., 2., 2., 2., 2.]), 2, 4)
    """
    hess = SparseHessian(f, sparsity)
    out = hess(x, *args)
    return (out, hess.info) if return_info else out
