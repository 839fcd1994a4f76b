"""A graph pass: a weighted sum of matrix products computed as one product.

NOTE(weighted-products): linear blend skinning, a hand or body model's vertices posed by
its bones, sums each bone's transform of the rest positions weighted by how much the
vertex follows that bone: `sum_b w[b, v] * (X @ T[b])[v, :]`, written as a product of
one matrix X [m, k] (m vertices) with a batch of small ones T [..., b, k, n], times
the weights, summed over the bones. Written so, the product materializes [..., b, m, n]
(22 bones x 544 vertices x 4 in GradBench's hand tracking; x 226 more under a forward-
mode Jacobian of 226 columns: 86 MB in float64) only for the sum to reduce it again, and
NumPy loops over the batch of small products; XLA, given the product's layout after
jnp.matmul's transpose, materializes it too (JAX's jit as much as tapeflow's). Both sums
run over the same axes, so the weights can be taken into X instead: Xw [b, m, k] =
w[b, :, None] * X (the size of the weights times k), then one product [m, b k] @ [b k,
... n] contracts the bones and k together, and the big intermediate is never made
(the hand's 226-column Jacobian: 38 ms -> 2.1 ms for this sum on the NumPy replay, one
thread: docs/performance-notes.md, #weighted-products).

The pass rewrites `reduce_sum(multiply(matmul(X, T), W))` where X is 2-D, T has batch
axes, the product and the multiply are read by the next node only, W does not broadcast
the product (it is 1 along n and along every batch axis the sum keeps, and spans every
axis it sums and m or is 1 there), the sum runs over batch axes only, every value is
float32 or float64, and it pays: the product avoided holds at least `_FROM` elements,
X has at least 8 k rows (T, which the rewrite transposes, stays an eighth of the product
or less), and the kept batch axes times n make at least 4 k columns (Xw, which the rewrite
makes, is k / (kept x n) times the product; with no kept axis, a sum's own primal, the
rewrite runs 2.4-6x slower: docs/performance-notes.md, #weighted-products). Each output
is the same sum of the same products, in another order: results agree to rounding, not
bit for bit, as any change of BLAS call does.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np

from ..ops.linalg import matmul_p
from ..ops.structural import multiply_p, reduce_sum_p, reshape_p, transpose_p
from .ir import Graph, Node, readers

__all__ = ["fold_weighted_products"]

_FROM = 1 << 15  # elements of the product avoided
_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def fold_weighted_products(g: Graph) -> bool:
    """Rewrite each weighted sum of products (NOTE(weighted-products)) in place; whether
    any was. Graphs whose sizes are read at replay are left alone."""
    if g.sized:
        return False
    # Found without a call per node (tracing's cost is counted in calls).
    sums = [n for n in g.nodes if n.__class__ is Node and n.prim is reduce_sum_p]
    if not sums:
        return False
    uses, producer = readers(g)
    replaced: dict[int, list] = {}
    for n in sums:
        new = _rewritten(g, n, uses, producer)
        if new is not None:
            replaced[id(n)] = new
    if not replaced:
        return False
    g.nodes = [m for n in g.nodes for m in replaced.get(id(n), (n,))]
    return True


def _rewritten(g: Graph, total: Node, uses: Counter, producer: dict) -> list | None:
    """The nodes that compute `total` (a reduce_sum) as one product, or None where it is
    not a weighted sum of products the pass rewrites."""
    weighted = producer.get(total.inputs[0])
    if weighted is None or weighted.prim is not multiply_p or uses[total.inputs[0]] != 1:
        return None
    for p, w in (weighted.inputs, weighted.inputs[::-1]):
        product = producer.get(p)
        if product is not None and product.prim is matmul_p and uses[p] == 1:
            break
    else:
        return None
    x, t = product.inputs
    shape = lambda s: tuple(g.avals[s][0])  # noqa: E731
    sx, st, sp, sw = shape(x), shape(t), shape(p), shape(w)
    if any(g.avals[s][1] != g.avals[p][1] for s in (x, t, w)) or g.avals[p][1] not in _DTYPES:
        return None
    rank = len(sp)
    if len(sx) != 2 or len(st) < 3 or shape(weighted.outputs[0]) != sp or len(sw) > rank:
        return None
    axis, keepdims = total.params["axis"], total.params["keepdims"]
    if axis is None:
        return None
    summed = sorted({a % rank for a in axis})
    kept = [a for a in range(rank - 2) if a not in summed]
    wide = (1,) * (rank - len(sw)) + sw
    if (not summed or summed[-1] >= rank - 2 or wide[-1] != 1 or wide[-2] not in (1, sp[-2])
            or any(wide[a] != 1 for a in kept) or any(wide[a] != sp[a] for a in summed)):
        return None
    m, k = sx
    n = sp[-1]
    bones = math.prod(sp[a] for a in summed)
    rest = math.prod(sp[a] for a in kept)
    if math.prod(sp) < _FROM or m < 8 * k or rest * n < 4 * k:
        return None
    nodes: list[Node] = []

    def emit(prim: Any, inputs: list, out_shape: tuple, params: dict,
             slot: int | None = None) -> int:
        if slot is None:
            slot = g.next_slot
            g.next_slot += 1
            g.avals[slot] = (tuple(out_shape), g.avals[p][1])
        nodes.append(Node(prim, list(inputs), params, [slot], phase=total.phase))
        return slot

    # X with the weights taken in, bones and k side by side: [m, bones * k]
    ws = emit(reshape_p, [w], (bones, wide[-2], 1), {"shape": (bones, wide[-2], 1)})
    xw = emit(multiply_p, [ws, x], (bones, m, k), {})
    xw = emit(transpose_p, [xw], (m, bones, k), {"perm": (1, 0, 2)})
    xw = emit(reshape_p, [xw], (m, bones * k), {"shape": (m, bones * k)})
    # T with the summed axes and k first, the kept axes and n after: [bones * k, rest * n]
    perm = tuple(summed) + (rank - 2,) + tuple(kept) + (rank - 1,)
    tt = emit(transpose_p, [t], tuple(st[a] for a in perm), {"perm": perm})
    # -1 for the kept axes' product: the params then hold no size a size-generic trace
    # would see change (NOTE(two-sizes) in graph/polymorphic.py; the final reshape's
    # target holds the kept axes' own sizes, which it reads as sizes)
    tt = emit(reshape_p, [tt], (bones * k, rest * n), {"shape": (bones * k, -1)})
    out = emit(matmul_p, [xw, tt], (m, rest * n), {})
    if rest > 1:
        out = emit(reshape_p, [out], (m, rest, n), {"shape": (m, -1, n)})
        out = emit(transpose_p, [out], (rest, m, n), {"perm": (1, 0, 2)})
    target = shape(total.outputs[0])
    emit(reshape_p, [out], target, {"shape": target}, slot=total.outputs[0])
    return nodes
