"""One trace for every size of an `input_signature`'s None dimensions.

Tracing runs on concrete values, so a graph holds whatever Python computed from the
traced call's sizes: a reshape's target, a mean's divisor, a random draw's shape, a
basis of that many vectors. Replaying it at other sizes would give wrong numbers
wherever one of those depends on a None dimension. So a trace serves other sizes only
once it is shown not to depend on them.

NOTE(two-sizes): the first trace of a signature serves the sizes it was traced at. The
next call at other sizes of the signature traces again, a real call that runs the body
once as any trace does (the body never runs for anything but a call: no extra trace at
sizes the caller never passed, whose side effects in Python could not be undone). If both
graphs are the same node for node (primitives, wiring, parameters, constants, guards,
dtypes) up to ints that are, in both, a size of the same axis (NOTE(sized-params)),
nothing in the graph was computed from those sizes, and it serves every size of the
signature. Otherwise each size keeps a trace of its own: a size-dependent graph is never
replayed at another size. The two traces are compared only where every class of None
dimensions has different sizes in them (a size that stayed the same could be baked into
both: a mean's divisor over it), so a trace waits for one that differs in all.

What the graphs cannot show is decided by construction, from the first trace: Python
code that reads a size that varies (`Tracer.size_reads`: an index of a tensor's shape
on a None dimension, its length, a comparison, any size of a value computed from a
varying input) could use it in any way (x * float(n % 2) is x * 0.0 at both n = 2 and
n = 4), so such a function traces per size from its first trace on, and the retracing
warning names the line.

What the key keeps apart: sizes 0 and 1 (empty arrays, and broadcasting, which treats
a dimension of 1 as any size) trace on their own; so does each pattern of equal None
dimensions (a batch shared by two arguments is one size, and code may rely on it).
"""

from __future__ import annotations

import dataclasses
import types
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import nest
from ..ops.sizes import size_check_p
from ..tensor import Tensor
from .ir import Assign, Graph, Guard, Node, resolve, size_slots
from .replay import GuardFailed

__all__ = ["generic_key", "class_sizes", "same_branch", "difference", "generalize",
           "resolved"]


def generic_key(specs: list, shapes: list[tuple], dtypes: list) -> tuple | None:
    """The key of the calls one size-generic trace serves: each None dimension of the
    signature replaced by the class of its size (equal sizes, one class); None where a
    None dimension is 0 or 1, or where the signature has none."""
    classes: dict[int, int] = {}
    out = []
    for spec, shape, dtype in zip(specs, shapes, dtypes, strict=True):
        dims = None if spec.shape.rank is None else tuple(spec.shape)
        gen = []
        for k, d in enumerate(shape):
            if dims is not None and dims[k] is not None:
                gen.append(d)
            elif d < 2:
                return None
            else:
                gen.append(-1 - classes.setdefault(d, len(classes)))
        out.append((tuple(gen), np.dtype(dtype).str))
    return ("generic",) + tuple(out) if classes else None


def resolved(g: Graph, avals: dict) -> Graph:
    """`g` with the sizes in its params (SizeOf, SizeExpr) read from `avals` (slot ->
    (shape, dtype)): a graph of those sizes alone, which every replay can run. Its size
    checks (NOTE(symbolic-sizes) in graph/dims.py) are decided here, once for these sizes:
    GuardFailed where one decides otherwise than the trace did, and none in the graph."""
    def size(slot: int, axis: int) -> int:
        return avals[slot][0][axis]
    for check, expected, where in g.size_checks:
        if resolve(check, size) != expected:
            raise GuardFailed(Guard(-1, "size", expected, where))
    if not g.sized:
        return dataclasses.replace(g, avals=avals)
    checks: dict[int, bool] = {}
    nodes: list = []
    for n in g.nodes:
        if type(n) is Node and n.prim is size_check_p:
            checks[n.outputs[0]] = resolve(n.params["check"], size)
        elif type(n) is Guard and n.slot in checks:
            if checks[n.slot] != n.expected:
                raise GuardFailed(n)
        elif type(n) is Node and n.sized:
            nodes.append(Node(n.prim, n.inputs, resolve(n.params, size), n.outputs,
                              n.backward, n.phase))
        else:
            nodes.append(n)
    return dataclasses.replace(g, nodes=nodes, avals=avals)


# ------------------------------------------------------------------ graph equality
def class_sizes(generic: tuple, g: Graph) -> dict[int, int]:
    """The size of each class of None dimensions (`generic_key`) in trace `g`."""
    out = {}
    for (gen, _), s in zip(generic[1:], g.inputs):
        for d, size in zip(gen, g.avals[s][0]):
            if d < 0:
                out[-1 - d] = size
    return out


def same_branch(a: Graph, b: Graph) -> bool:
    """Whether two traces took the same branches: their guards read the same places, in
    the same ways, with the same results (a trace of another branch says nothing about
    sizes)."""
    ga = [n for n in a.nodes if isinstance(n, Guard)]
    gb = [n for n in b.nodes if isinstance(n, Guard)]
    return len(ga) == len(gb) and all(
        n.where == m.where and n.how == m.how and (n.how == "shape" or _same(n.expected, m.expected))
        for n, m in zip(ga, gb))


def difference(a: Graph, b: Graph) -> str | None:
    """What first differs between two traces besides the sizes of their arrays (no size
    read at replay: the graph `a` itself serves both), or None."""
    general, why = generalize(a, b)
    return why if general is a or why is not None else "a loop's body computed from the sizes"


def generalize(a: Graph, b: Graph) -> tuple[Graph | None, str | None]:
    """(a graph that serves the sizes of both traces and every other size, None), or
    (None, the first thing that keeps it from doing so).

    NOTE(sized-params): the sizes a graph reads when it runs are those its trace recorded
    as sizes (a reshape's target, a random draw's shape, a split's n // 3: NOTE(symbolic-
    sizes) in graph/dims.py), which both traces hold alike as expressions (SizeOf,
    SizeExpr). Anything else that differs between them (an int, a float such as 1/n, a
    constant such as range(n)) was computed from the sizes where no Dim could see it, and
    keeps the graph to the sizes it was traced at: an int is never taken for a size by
    its value (n // 3 is 2 and 4 at n = 6 and 12, as the size of an axis of 2 and 4 rows,
    which at n = 9 it is not). A loop's body (a graph in a node's params) is generalized
    the same way.
    """
    if (a.inputs != b.inputs or a.outputs != b.outputs or a.next_slot != b.next_slot
            or len(a.nodes) != len(b.nodes) or a.var_slots != b.var_slots
            or len(a.variables) != len(b.variables)
            or any(v is not w for v, w in zip(a.variables, b.variables))
            or a.constants.keys() != b.constants.keys() or a.avals.keys() != b.avals.keys()):
        for k, (n, m) in enumerate(zip(a.nodes, b.nodes)):
            if type(n) is not type(m) or (isinstance(n, Node) and n.prim is not m.prim):
                return None, f"the graph's node {k} ({_describe(n)}, then {_describe(m)})"
        return None, "the graph's structure (its number of ops or values)"
    for s, (shape, dtype) in a.avals.items():
        other_shape, other_dtype = b.avals[s]
        if len(shape) != len(other_shape) or np.dtype(dtype) != np.dtype(other_dtype):
            return None, f"the rank or dtype of value %{s}"
    if not _same_structure(a.output_structure, b.output_structure):
        return None, "the structure of the outputs"
    if a.size_checks != b.size_checks:
        return None, "a decision on the sizes in a loop's body"
    for s in a.constants:
        if not _same(a.constants[s], b.constants[s]):
            return None, f"a constant (%{s}, {_short_value(a.constants[s])}) computed from the sizes"
    nodes, sized = [], False
    for k, (n, m) in enumerate(zip(a.nodes, b.nodes)):
        if type(n) is not type(m):
            return None, f"node {k} ({_describe(n)}), whose parameters depend on the sizes"
        if isinstance(n, Node) and _strides_over_a_varying_size(n, a, b):
            return None, (f"node {k} ({_describe(n)}), whose windows stride over a size that "
                          "varies (its padding depends on the size's remainder)")
        if _same_node(n, m):
            nodes.append(n)
            continue
        params = None
        if isinstance(n, Node) and n.prim is m.prim and n.inputs == m.inputs and \
                n.outputs == m.outputs and n.backward is None and m.backward is None:
            params = _bodies(n.params, m.params)
        if params is None:
            return None, f"node {k} ({_describe(n)}), whose parameters depend on the sizes"
        sized = True
        nodes.append(Node(n.prim, n.inputs, params, n.outputs, None, n.phase, sized=True))
    if not sized:
        return a, None
    return dataclasses.replace(a, nodes=nodes), None


def _strides_over_a_varying_size(n: Node, a: Graph, b: Graph) -> bool:
    """Whether `n` (a convolution's or a pool's node: `strides` and `pads` in its params)
    strides by more than 1 along a window axis (the two before the channels) whose size
    differs between the traces, with pads that are plain ints. "SAME" pads computed from
    the sizes' symbols are expressions of them (NOTE(symbolic-sizes)), exact at every size;
    plain ints there were computed where no symbol could see (the traces at n and 2n can
    agree, both 0 at n = 4 with stride 2, where n = 7 needs 1), so they keep the graph to
    its sizes, explicit and "VALID" pads too (one trace per size, as without None)."""
    strides = n.params.get("strides")
    if strides is None or "pads" not in n.params or size_slots(n.params["pads"]):
        return False  # (SAME pads computed from the sizes: NOTE(symbolic-sizes))
    for s in n.inputs:
        shape, other = a.avals[s][0], b.avals[s][0]
        if len(shape) < 3:
            continue
        for stride, axis in zip(tuple(strides)[-2:], (len(shape) - 3, len(shape) - 2)):
            if stride > 1 and shape[axis] != other[axis]:
                return True
    return False


def _bodies(p: Any, q: Any) -> Any:
    """`p` with each graph (a loop's body) that differs from `q`'s generalized over both,
    or None if one cannot be, or if anything else differs."""
    if type(p) is not type(q):
        return None
    if isinstance(p, (tuple, list)) and not hasattr(p, "_fields"):
        if len(p) != len(q):
            return None
        items = [_bodies(u, v) for u, v in zip(p, q)]
        return None if any(i is None and u is not None for i, u in zip(items, p)) \
            else type(p)(items)
    if isinstance(p, dict):
        if p.keys() != q.keys():
            return None
        out = {}
        for k in p:
            v = _bodies(p[k], q[k])
            if v is None and p[k] is not None:
                return None
            out[k] = v
        return out
    if isinstance(p, Graph):
        return p if difference(p, q) is None else generalize(p, q)[0]
    return p if _same(p, q) else None


def _describe(n: Any) -> str:
    if isinstance(n, Node):
        params = ", ".join(f"{k}={_short_value(v)}" for k, v in n.params.items())
        return f"{n.prim.name}({params})"
    if isinstance(n, Guard):
        return f"a guard at {n.where}"
    return "a variable assignment"


def _short_value(v: Any) -> str:
    if isinstance(v, np.ndarray):
        return f"array{list(v.shape)}" if v.size > 4 else repr(v.tolist())
    text = getattr(v, "__name__", None) if callable(v) else None
    text = text or repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _same_node(n: Any, m: Any) -> bool:
    if isinstance(n, Node):
        if n.prim is not m.prim or n.inputs != m.inputs or n.outputs != m.outputs:
            return False
        if (n.backward is None) != (m.backward is None):
            return False
        if n.backward is not None and (n.backward.refs != m.backward.refs
                                       or difference(n.backward.graph, m.backward.graph)):
            return False
        return _same(n.params, m.params)
    if isinstance(n, Guard):
        return (n.slot == m.slot and n.how == m.how and n.where == m.where
                and _same(n.expected, m.expected))
    if isinstance(n, Assign):
        return n.var == m.var and n.slot == m.slot
    return False


def _same(x: Any, y: Any) -> bool:
    """Equality of node parameters and constants: arrays by shape, dtype and value (NaN
    equal to NaN), containers item by item, functions by their code (a custom gradient's
    grad_fn is a new closure at each trace; its traced graph is compared instead)."""
    if isinstance(x, Tensor) and isinstance(y, Tensor):
        return _same(x._value, y._value)
    if isinstance(x, (np.ndarray, np.generic)) or isinstance(y, (np.ndarray, np.generic)):
        x, y = np.asarray(x), np.asarray(y)
        return (x.shape == y.shape and x.dtype == y.dtype
                and bool(np.array_equal(x, y, equal_nan=_dt.kind(x.dtype) in "fc")))
    if type(x) is not type(y):
        return False
    if isinstance(x, (list, tuple)):
        return len(x) == len(y) and all(_same(p, q) for p, q in zip(x, y))
    if isinstance(x, dict):
        return x.keys() == y.keys() and all(_same(x[k], y[k]) for k in x)
    if isinstance(x, float):
        return x == y or (x != x and y != y)
    if isinstance(x, Graph):
        return difference(x, y) is None
    if isinstance(x, types.FunctionType):
        return x is y or x.__code__ is y.__code__
    if isinstance(x, slice):
        return _same((x.start, x.stop, x.step), (y.start, y.stop, y.step))
    if x is y:
        return True
    try:
        return bool(x == y)
    except Exception:  # noqa: BLE001 - an object without a usable ==: by identity only
        return False


def _same_structure(x: Any, y: Any) -> bool:
    if nest.is_nested(x) or nest.is_nested(y):
        if type(x) is not type(y):
            return False
        if isinstance(x, dict):
            return sorted(x) == sorted(y) and all(_same_structure(x[k], y[k]) for k in x)
        return len(x) == len(y) and all(_same_structure(p, q) for p, q in zip(x, y))
    return (x is None) == (y is None)
