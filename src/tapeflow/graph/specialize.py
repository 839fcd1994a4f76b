"""Replay-time choices of a node's implementation from the graph's static shapes.

A traced graph knows every array's shape before its first replay, so a replay can pick,
once per node, an implementation that NumPy's generic call would only find slowly. Each
choice computes exactly what the node's impl computes (the same ufunc on the same
elements, bit for bit); it only changes how NumPy walks the memory.

Three choices today. First, an arithmetic ufunc on rank-0 floats (the scalar code of a
cofactor determinant, GradBench's det) runs as the Python operator on NumPy scalars:
`np.float64.__mul__` does the same IEEE operation and honours `np.errstate` as the
ufunc does, in a tenth of the ufunc's dispatch cost (docs/performance-notes.md,
#scalar-operators).

Second, a binary ufunc that broadcasts a small operand over a large one
along its trailing dims (a bias added to NHWC activations, [128, 24, 24, 6] + [6]).
NumPy then runs its inner loop over the 6 elements of a row and pays its per-loop
overhead every 6 elements: several times the cost of adding two whole arrays
(docs/performance-notes.md, #tiled-broadcast). Tiling the
small operand to a row of up to 8,192 elements and viewing the large one as rows of that
width gives the ufunc long inner loops.

Third, broadcast_to makes NumPy's view from the static shapes, at a quarter of
np.broadcast_to's Python cost (docs/performance-notes.md, #small-broadcasts).
"""

from __future__ import annotations

import functools
import math
import operator
from typing import Any, Callable

import numpy as np

from ..allocator import SIMD_MAXIMUM_MOST_BYTES
from ..ops.structural import broadcast_to_p
from .ir import Graph, Node

# A broadcast operand of fewer elements than this makes NumPy's inner loop short enough
# for its per-loop overhead to dominate; rows are tiled up to _ROW_WIDTH elements, and
# only where NumPy would run at least _MIN_ROWS of those short loops does that overhead
# outweigh the tile's own cost (with fewer, the tiled form is slower:
# docs/performance-notes.md, #tiled-broadcast).
_SHORT_ROW = 64
_ROW_WIDTH = 8192
_MIN_ROWS = 2048
# NumPy's maximum and minimum have SIMD loops for two arrays, not for an array and a
# scalar: a float32 scalar against a float32 array of at least _SCALAR_FROM elements is
# tiled into a row of _SCALAR_ROW to _SCALAR_WIDTH elements, up to arrays that no longer
# fit the cache (SIMD_MAXIMUM_MOST_BYTES; float64 gained little, and lost past it:
# docs/performance-notes.md, #tiled-broadcast).
_NO_SCALAR_SIMD = (np.maximum, np.minimum)
_SCALAR_FROM = 1 << 16
_SCALAR_ROW = 256
_SCALAR_WIDTH = 1024


# np.broadcast_to spends about 2.3 us in Python making its read-only view, whatever the
# size; the same view (the same strides, so every later op reads the same memory the same
# way and gives the same bits) made by ndarray's constructor from static shapes costs 0.65
# us (a long loop's per-step broadcast of a sum's cotangent: docs/performance-notes.md,
# #small-broadcasts).
def _broadcast_view(in_shape: tuple, shape: tuple) -> Callable[[Any], Any]:
    lead = len(shape) - len(in_shape)
    steps = [math.prod(in_shape[j + 1:]) for j in range(len(in_shape))]
    elements = tuple(0 if k < lead or (in_shape[k - lead] == 1 and shape[k] != 1)
                     else steps[k - lead] for k in range(len(shape)))

    def run(x: Any) -> Any:
        if type(x) is not np.ndarray or x.shape != in_shape or not x.flags.c_contiguous \
                or not x.size or x.dtype.hasobject:  # object pointers: NumPy's own view
            return np.broadcast_to(x, shape)
        out = np.ndarray(shape, x.dtype, x, 0, tuple(e * x.itemsize for e in elements))
        out.flags.writeable = False
        return out
    return run


def node_impl(g: Graph, n: Node, specialize: bool = True) -> Callable[..., Any]:
    """The function a replay calls for node `n` of graph `g`: its primitive's impl with
    the node's params bound, or (`specialize`) an equivalent specialized to the node's
    shapes."""
    impl = n.prim.impl
    if specialize and n.prim is broadcast_to_p:
        in_shape, shape = tuple(g.avals[n.inputs[0]][0]), tuple(n.params["shape"])
        if shape and all(type(d) is int for d in in_shape + shape):
            return _broadcast_view(in_shape, shape)
    if (specialize and impl in OPERATORS and not n.params
            and not g.avals[n.outputs[0]][0] and _float_scalars(g, n)):
        return OPERATORS[impl]
    if specialize and isinstance(impl, np.ufunc) and impl.nin == 2 and impl.nout == 1 and not n.params:
        fast = tiled_broadcast(impl, g.avals[n.inputs[0]][0], g.avals[n.inputs[1]][0],
                               (g.avals[n.inputs[0]][1], g.avals[n.inputs[1]][1]))
        if fast is not None:
            return fast
    return functools.partial(impl, **n.params) if n.params else impl


# The ufuncs whose Python operator on NumPy scalars is the same operation, rounding and
# signed zeros included.
OPERATORS = {np.add: operator.add, np.subtract: operator.sub, np.multiply: operator.mul,
              np.divide: operator.truediv, np.negative: operator.neg}


def _float_scalars(g: Graph, n: Node) -> bool:
    """Whether every input and output of `n` is a rank-0 real float of one dtype. The
    rest keep the ufunc: NumPy's integer scalar operators warn on overflow where the
    ufunc wraps silently, its complex scalar product signs a NaN differently, and
    bfloat16's scalar type (kind 'V') is not NumPy's."""
    avals = [g.avals[s] for s in (*n.inputs, *n.outputs)]
    dtype = np.dtype(avals[0][1])
    return dtype.kind == "f" and all(shape == () and np.dtype(d) == dtype
                                     for shape, d in avals)


def tiled_broadcast(ufunc: np.ufunc, a_shape: tuple, b_shape: tuple,
                    dtypes: tuple | None = None) -> Callable | None:
    """`ufunc(a, b, out=None)` for operands of these shapes with long inner loops, when
    one operand is small and broadcasts along the other's trailing dims, or (maximum,
    minimum, both `dtypes` float32) is a scalar against a large array; None otherwise.

    Example:
        >>> import numpy as np
        >>> f = tiled_broadcast(np.add, (64, 32, 32, 6), (6,))
        >>> x, b = np.ones((64, 32, 32, 6), np.float32), np.arange(6, dtype=np.float32)
        >>> bool((f(x, b) == x + b).all())
        True
    """
    a_shape, b_shape = tuple(a_shape), tuple(b_shape)
    try:
        out_shape = np.broadcast_shapes(a_shape, b_shape)
    except ValueError:
        return None
    size = math.prod(out_shape)
    if (ufunc in _NO_SCALAR_SIMD and _SCALAR_FROM <= size and size * 4 <= SIMD_MAXIMUM_MOST_BYTES
            and dtypes is not None and all(np.dtype(d) == np.float32 for d in dtypes)):
        for small_first in (False, True):
            big, small = (b_shape, a_shape) if small_first else (a_shape, b_shape)
            if math.prod(small) == 1 and big == out_shape:
                widths = [d for d in range(_SCALAR_ROW, _SCALAR_WIDTH + 1) if size % d == 0]
                return _tiled(ufunc, small_first, widths[-1], widths[-1], out_shape) \
                    if widths else None
    for small_first in (False, True):
        big, small = (b_shape, a_shape) if small_first else (a_shape, b_shape)
        core = small
        while core and core[0] == 1:
            core = core[1:]
        s = math.prod(core)
        if big != out_shape or not core or not 2 <= s < _SHORT_ROW or out_shape[-len(core):] != core:
            continue
        rows = size // s
        if rows < _MIN_ROWS:
            return None
        repeats = max(d for d in range(1, _ROW_WIDTH // s + 1) if rows % d == 0)
        if repeats == 1:
            return None
        return _tiled(ufunc, small_first, repeats, s * repeats, out_shape)
    return None


def _tiled(ufunc: np.ufunc, small_first: bool, repeats: int, width: int,
           out_shape: tuple) -> Callable:
    def run(a: Any, b: Any, out: np.ndarray | None = None) -> Any:
        big, small = (b, a) if small_first else (a, b)
        # A view of rows needs C-contiguous memory: anything else takes NumPy's own path
        # (a reshape would copy, and writes into a copied `out` would be lost).
        if not (isinstance(big, np.ndarray) and isinstance(small, np.ndarray)
                and big.flags.c_contiguous and (out is None or out.flags.c_contiguous)):
            return ufunc(a, b, out=out)
        row = np.tile(small.reshape(-1), repeats)
        grid = big.reshape(-1, width)
        target = None if out is None else out.reshape(-1, width)
        res = ufunc(row, grid, out=target) if small_first else ufunc(grid, row, out=target)
        return out if out is not None else res.reshape(out_shape)
    return run
