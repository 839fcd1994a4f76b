"""A traced graph as JSON and arrays, and back: the graphs of a SavedModel.

NOTE(graph-format): a graph (graph/ir.py) is written as a JSON object::

    {"name": "f", "inputs": [0, 1], "outputs": [7, null], "next_slot": 9,
     "structure": the outputs' nesting (tagged as values are, leaves {"leaf": 0}),
     "avals": [[slot, [shape...], "float32"], ...],
     "constants": [[slot, value], ...], "variables": [checkpoint key, ...],
     "var_slots": [[slot, variable index], ...],
     "nodes": [{"node": "float32 matmul" primitive name, "inputs": [...], "outputs": [...],
                "params": {...}, "sized": false, "backward": null or
                {"graph": ..., "refs": [...], "ref_values": [...]}},
               {"guard": how, "slot": s, "expected": value, "where": "file:line"},
               {"assign": variable index, "slot": s}, ...]}

A value (a param, a constant, a guard's expectation) is JSON's null, true/false, a
string, an int or a finite float as itself; everything else is an object of one tag:
``{"tuple": [...]}``, ``{"list": [...]}``, ``{"dict": [[key, value], ...]}``,
``{"float": "nan" | "inf" | "-inf"}``, ``{"complex": [re, im]}``, ``{"slice": [start,
stop, step]}``, ``{"ellipsis": 0}``, ``{"dtype": name}``, ``{"array": key}`` (an array
of the SavedModel's arrays file, NumPy scalars too: ``{"scalar": key}``), ``{"size":
[slot, axis, times]}`` (a SizeOf), ``{"sizes": [op, *args]}`` (a SizeExpr), ``{"graph":
...}`` (a loop's body), ``{"primitive": name}``, ``{"bytes": base64}``, ``{"spec": [shape, dtype, name]}`` (a TensorSpec). A primitive's params pass through its `save` rule first
(catalog.Codec): a random draw's generator becomes the name of its stream, a
custom_gradient's grad_fn is dropped (its traced backward graph is saved beside it), and a
primitive whose params are the user's Python (py_function) refuses.

Reading trusts nothing: every tag, type, slot and name is checked (a slot is read only
after something wrote it, a primitive is one this process defines, a dtype one of
tapeflow's), and nothing is executed; a bad graph raises DataLossError naming the file.
"""

from __future__ import annotations

import base64
import collections
import math
from typing import Any, Callable, NoReturn

import numpy as np

from .. import dtypes as _dt
from ..catalog import rule
from ..core import Primitive, registry
from ..errors import DataLossError
from ..graph.ir import SIZE_OPS, Assign, CustomBackward, Graph, Guard, Node, SizeExpr, SizeOf
from ..graph.signature import TensorSpec
from ..tensor import Variable

__all__ = ["Writer", "Reader", "encode_graph", "decode_graph", "dtype_name"]

# what a guard of each kind expects (a shape: a tuple of ints)
_GUARD_KINDS = {"bool": (bool,), "float": (float, int), "int": (int,), "index": (int,),
                "complex": (complex,), "array": (np.ndarray,), "shape": (tuple,), "size": (bool,)}
_DTYPES = {name: _dt.as_dtype(name)._np for name in ("float16", "float32", "float64", "int8",
           "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "bool",
           "complex64", "complex128") + (("bfloat16",) if _dt.bfloat16 is not None else ())}


def dtype_name(dtype: Any) -> str:
    """tapeflow's name of a NumPy dtype (bfloat16's NumPy kind is 'V': the name is exact)."""
    return _dt.from_numpy(np.dtype(dtype)).name


class Writer:
    """What a save collects: the arrays (key -> array) and each variable's key."""

    def __init__(self, variable_key: Callable[[Variable], str]) -> None:
        self.arrays: dict[str, np.ndarray] = {}
        self.variable_key = variable_key

    def array(self, value: Any) -> str:
        key = f"a{len(self.arrays)}"
        self.arrays[key] = np.array(value)  # a copy: the caller's buffer may change later
        return key

    def value(self, v: Any, where: str) -> Any:
        if v is None or isinstance(v, (bool, str)):
            return v
        if type(v) is int:
            return v
        if type(v) is float:
            return v if math.isfinite(v) else {"float": repr(v)}
        if isinstance(v, np.ndarray):
            return {"array": self.array(v)}
        if isinstance(v, np.generic):
            return {"scalar": self.array(v)}
        if type(v) is complex:
            return {"complex": [self.value(v.real, where), self.value(v.imag, where)]}
        if type(v) is tuple:
            return {"tuple": [self.value(x, where) for x in v]}
        if type(v) is list:
            return {"list": [self.value(x, where) for x in v]}
        if type(v) is dict:
            return {"dict": [[self.value(k, where), self.value(x, where)] for k, x in v.items()]}
        if type(v) is slice:
            return {"slice": [self.value(x, where) for x in (v.start, v.stop, v.step)]}
        if v is Ellipsis:
            return {"ellipsis": 0}
        if isinstance(v, np.dtype):
            return {"dtype": dtype_name(v)}
        if isinstance(v, SizeOf):
            return {"size": [v.slot, v.axis, v.times]}
        if isinstance(v, SizeExpr):
            return {"sizes": [v.op] + [self.value(x, where) for x in v.args]}
        if isinstance(v, Graph):
            return {"graph": encode_graph(v, self, where)}
        if isinstance(v, Primitive):
            return {"primitive": v.name}
        if isinstance(v, bytes):
            return {"bytes": base64.b64encode(v).decode()}
        if isinstance(v, TensorSpec):
            return {"spec": [None if v.shape.rank is None else list(v.shape),
                             dtype_name(v.dtype._np), v.name]}
        raise TypeError(f"{where} holds a {type(v).__name__} ({v!r:.80}), which a SavedModel "
                        "cannot hold: its params must be plain data (numbers, strings, tuples, "
                        "dtypes, arrays), or its primitive needs a `save` rule "
                        "(tapeflow.extend.Codec).")


def encode_graph(g: Graph, w: Writer, where: str) -> dict:
    """The JSON object of graph `g` (NOTE(graph-format)); its arrays go to `w`."""
    nodes = []
    for k, n in enumerate(g.nodes):
        at = f"{where}, node {k}"
        if isinstance(n, Node):
            codec = rule(n.prim, "save")
            params = n.params
            if codec is not None:
                if codec.refuse:
                    raise ValueError(f"{at} ({n.prim.name}) cannot be saved: {codec.refuse}")
                params = codec.encode(dict(params)) if codec.encode else params
            entry: dict = {"node": n.prim.name, "inputs": list(n.inputs),
                           "outputs": list(n.outputs), "sized": bool(n.sized),
                           "params": {str(p): w.value(v, f"{at} ({n.prim.name}), param {p!r}")
                                      for p, v in params.items()}}
            if n.backward is not None:
                entry["backward"] = {
                    "graph": encode_graph(n.backward.graph, w, f"{at}'s custom gradient"),
                    "refs": list(n.backward.refs),
                    "ref_values": [w.value(np.asarray(v), at) for v in n.backward.ref_values]}
            nodes.append(entry)
        elif isinstance(n, Guard):
            nodes.append({"guard": n.how, "slot": n.slot, "where": str(n.where),
                          "expected": w.value(n.expected, f"{at} (a guard)")})
        else:
            nodes.append({"assign": n.var, "slot": n.slot})
    return {
        "name": str(g.name), "inputs": list(g.inputs), "outputs": list(g.outputs),
        "next_slot": g.next_slot,
        # (a loop body's graph has no structure: its outputs are a flat list)
        "structure": None if g.output_structure is None else _structure(g.output_structure),
        "avals": [[s, [int(d) for d in shape], dtype_name(dtype)]
                  for s, (shape, dtype) in g.avals.items()],
        "constants": [[s, w.value(np.asarray(v) if not isinstance(v, np.generic) else v,
                                  f"{where}, constant %{s}")]
                      for s, v in g.constants.items()],
        "variables": [w.variable_key(v) for v in g.variables],
        "var_slots": [[s, i] for s, i in g.var_slots.items()],
        "nodes": nodes,
    }


def _structure(x: Any) -> Any:
    """The outputs' nesting (nest's containers), leaves marked."""
    if isinstance(x, dict):
        bad = [k for k in x if type(k) not in (str, int)]
        if bad:
            raise TypeError(f"the traced function returns a dict keyed by {bad[0]!r:.60}; a "
                            "SavedModel's outputs are keyed by strings or ints.")
        return {"dict": [[k, _structure(x[k])] for k in x]}
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return {"namedtuple": [type(x).__name__, list(x._fields), [_structure(c) for c in x]]}
    if isinstance(x, (list, tuple)):
        return {type(x).__name__ if type(x) in (list, tuple) else "list":
                [_structure(c) for c in x]}
    return {"leaf": 0}


class Reader:
    """What a load reads from: the file's name (for errors), its arrays and variables."""

    def __init__(self, path: str, arrays: dict[str, np.ndarray],
                 variables: dict[str, Variable]) -> None:
        self.path = path
        self.arrays = arrays
        self.variables = variables

    def fail(self, message: str) -> NoReturn:
        raise DataLossError(f"{self.path}: not a valid SavedModel graph: {message}.")

    def int_(self, x: Any, what: str, low: int = 0) -> int:
        if type(x) is not int or x < low:
            self.fail(f"{what} is {x!r:.60}, not an int >= {low}")
        return x

    def list_(self, x: Any, what: str) -> list:
        if type(x) is not list:
            self.fail(f"{what} is a {type(x).__name__}, not a list")
        return x

    def value(self, x: Any, what: str) -> Any:
        if x is None or type(x) in (bool, str, int, float):
            return x
        if type(x) is not dict or len(x) != 1:
            self.fail(f"{what} is {x!r:.60}, not a value")
        (tag, v), = x.items()
        if tag in ("tuple", "list"):
            items = [self.value(c, what) for c in self.list_(v, what)]
            return tuple(items) if tag == "tuple" else items
        if tag == "dict":
            pairs = [self.list_(p, what) for p in self.list_(v, what)]
            if any(len(p) != 2 for p in pairs):
                self.fail(f"{what} has a dict entry that is not a pair")
            out = {}
            for k, c in pairs:
                k = self.value(k, what)
                try:
                    out[k] = self.value(c, what)
                except TypeError:
                    self.fail(f"{what} has a dict key that is not hashable")
            return out
        if tag == "float" and v in ("nan", "inf", "-inf"):
            return float(v)
        if tag == "complex":
            parts = self.list_(v, what)
            if len(parts) != 2 or not all(type(self.value(p, what)) in (int, float)
                                          for p in parts):
                self.fail(f"{what} is a complex number without two real parts")
            return complex(self.value(parts[0], what), self.value(parts[1], what))
        if tag == "slice":
            parts = [self.value(c, what) for c in self.list_(v, what)]
            if len(parts) != 3:
                self.fail(f"{what} is a slice without start, stop and step")
            return slice(*parts)
        if tag == "ellipsis":
            return Ellipsis
        if tag == "dtype":
            return self.dtype(v, what)
        if tag in ("array", "scalar"):
            if type(v) is not str or v not in self.arrays:
                self.fail(f"{what} names the array {v!r:.60}, which the arrays file lacks")
            a = self.arrays[v]
            if tag == "scalar":
                if a.ndim:
                    self.fail(f"{what} is a scalar of shape {a.shape}")
                return a[()]
            return a.copy()
        if tag == "size":
            parts = self.list_(v, what)
            if len(parts) != 3:
                self.fail(f"{what} is a size without a slot, an axis and a count")
            return SizeOf(self.int_(parts[0], what), self.int_(parts[1], what),
                          self.int_(parts[2], what, 1))
        if tag == "sizes":  # arithmetic or a comparison of sizes (graph/dims.py)
            parts = self.list_(v, what)
            if not parts or parts[0] not in SIZE_OPS or \
                    len(parts) != (2 if parts[0] == "neg" else 3):
                self.fail(f"{what} is {v!r:.60}, not an operation of sizes")
            args = tuple(self.value(x, what) for x in parts[1:])
            if not all(type(x) is int or isinstance(x, (SizeOf, SizeExpr)) for x in args) or \
                    (parts[0] in ("floordiv", "mod") and args[1] == 0):
                self.fail(f"{what} computes {parts[0]} of {args!r:.60}, not of sizes and ints")
            return SizeExpr(parts[0], args)
        if tag == "graph":
            return decode_graph(v, self, what)
        if tag == "primitive":
            return self.primitive(v, what)
        if tag == "spec":
            parts = self.list_(v, what)
            if len(parts) != 3 or not (parts[0] is None or (type(parts[0]) is list and all(
                    d is None or (type(d) is int and d >= 0) for d in parts[0]))) or \
                    not (parts[2] is None or type(parts[2]) is str):
                self.fail(f"{what} is a malformed TensorSpec")
            return TensorSpec(parts[0], self.dtype(parts[1], what), parts[2])
        if tag == "bytes" and type(v) is str:
            try:
                return base64.b64decode(v, validate=True)
            except ValueError:
                self.fail(f"{what} holds bytes that are not base64")
        self.fail(f"{what} has the unknown tag {tag!r:.40}")

    def dtype(self, name: Any, what: str) -> np.dtype:
        if type(name) is not str or name not in _DTYPES:
            self.fail(f"{what} has the dtype {name!r:.40}, which is not tapeflow's")
        return _DTYPES[name]

    def primitive(self, name: Any, what: str) -> Primitive:
        prim = registry().get(name) if type(name) is str else None
        if prim is None:
            self.fail(f"{what} uses the primitive {name!r:.60}, which is not defined in this "
                      "process (import the module that defines it before loading)")
        return prim


def decode_graph(d: Any, r: Reader, where: str) -> Graph:
    """The graph of JSON object `d` (NOTE(graph-format)), checked as it is read."""
    if type(d) is not dict:
        r.fail(f"{where} is not an object")
    need = ("name", "inputs", "outputs", "next_slot", "structure", "avals", "constants",
            "variables", "var_slots", "nodes")
    missing = [k for k in need if k not in d]
    if missing:
        r.fail(f"{where} lacks {', '.join(missing)}")
    g = Graph(name=str(d["name"]))
    g.next_slot = r.int_(d["next_slot"], f"{where}'s next_slot")

    def slot(x: Any, what: str) -> int:
        s = r.int_(x, what)
        if s >= g.next_slot:
            r.fail(f"{what} is the slot {s}, beyond the graph's {g.next_slot}")
        return s

    for entry in r.list_(d["avals"], f"{where}'s avals"):
        if type(entry) is not list or len(entry) != 3:
            r.fail(f"{where} has an aval that is not [slot, shape, dtype]")
        s = slot(entry[0], f"{where}'s aval")
        shape = tuple(r.int_(n, f"{where}'s shape of %{s}")
                      for n in r.list_(entry[1], f"{where}'s shape of %{s}"))
        g.avals[s] = (shape, r.dtype(entry[2], f"{where}'s %{s}"))
    defined: set = set()

    def define(s: Any, what: str) -> int:
        s = slot(s, what)
        if s in defined:
            r.fail(f"{what} writes the slot {s}, which is written before")
        if s not in g.avals:
            r.fail(f"{what} writes the slot {s}, which has no shape and dtype")
        defined.add(s)
        return s

    def read(s: Any, what: str) -> int:
        s = slot(s, what)
        if s not in defined:
            r.fail(f"{what} reads the slot {s} before anything writes it")
        return s

    g.inputs = [define(s, f"{where}'s input") for s in r.list_(d["inputs"], f"{where}'s inputs")]
    for entry in r.list_(d["constants"], f"{where}'s constants"):
        if type(entry) is not list or len(entry) != 2:
            r.fail(f"{where} has a constant that is not [slot, value]")
        s = define(entry[0], f"{where}'s constant")
        value = r.value(entry[1], f"{where}'s constant %{s}")
        if not isinstance(value, (np.ndarray, np.generic)) or \
                np.shape(value) != g.avals[s][0] or value.dtype != g.avals[s][1]:
            r.fail(f"{where}'s constant %{s} does not have its slot's shape and dtype")
        g.constants[s] = value
    for i, key in enumerate(r.list_(d["variables"], f"{where}'s variables")):
        if type(key) is not str or key not in r.variables:
            r.fail(f"{where} captures the variable {key!r:.80}, which the SavedModel's "
                   "variables lack")
        g.variables.append(r.variables[key])
    for entry in r.list_(d["var_slots"], f"{where}'s var_slots"):
        if type(entry) is not list or len(entry) != 2 or type(entry[1]) is not int or \
                not 0 <= entry[1] < len(g.variables):
            r.fail(f"{where} has a variable slot that is not [slot, variable index]")
        s = slot(entry[0], f"{where}'s variable slot")
        if s in defined:
            r.fail(f"{where}'s variable slot {s} is written before")
        defined.add(s)
        g.var_slots[s] = entry[1]
    for k, e in enumerate(r.list_(d["nodes"], f"{where}'s nodes")):
        at = f"{where}, node {k}"
        if type(e) is not dict:
            r.fail(f"{at} is not an object")
        if "node" in e:
            prim = r.primitive(e["node"], at)
            params = e.get("params")
            if type(params) is not dict:
                r.fail(f"{at} has no params object")
            params = {p: r.value(v, f"{at}, param {p!r}") for p, v in params.items()}
            codec = rule(prim, "save")
            if codec is not None:
                if codec.refuse:
                    r.fail(f"{at} is a {prim.name}, which a SavedModel cannot hold")
                if codec.decode:
                    try:
                        params = codec.decode(params)
                    except (TypeError, ValueError, KeyError) as err:
                        r.fail(f"{at} ({prim.name}) has params its rule rejects: {err}")
            inputs = [read(s, at) for s in r.list_(e.get("inputs"), f"{at}'s inputs")]
            backward = None
            if e.get("backward") is not None:
                b = e["backward"]
                if type(b) is not dict:
                    r.fail(f"{at}'s backward is not an object")
                backward = CustomBackward(
                    decode_graph(b.get("graph"), r, f"{at}'s custom gradient"),
                    [read(s, at) for s in r.list_(b.get("refs"), f"{at}'s refs")],
                    [r.value(v, at) for v in r.list_(b.get("ref_values"), f"{at}'s refs")])
            outputs = [define(s, at) for s in r.list_(e.get("outputs"), f"{at}'s outputs")]
            if not prim.multiple_results and len(outputs) != 1:
                r.fail(f"{at} ({prim.name}) has {len(outputs)} outputs, not 1")
            sized = e.get("sized", False)
            if type(sized) is not bool:
                r.fail(f"{at}'s sized is not true or false")
            g.nodes.append(Node(prim, inputs, params, outputs, backward, sized=sized))
        elif "guard" in e:
            if type(e["guard"]) is not str or e["guard"] not in _GUARD_KINDS or \
                    type(e.get("where")) is not str:
                r.fail(f"{at} is a guard of an unknown kind")
            expected = r.value(e.get("expected"), at)
            if not isinstance(expected, _GUARD_KINDS[e["guard"]]) or (
                    e["guard"] == "shape" and not all(type(n) is int for n in expected)):
                r.fail(f"{at} is a {e['guard']} guard expecting {expected!r:.60}")
            g.nodes.append(Guard(read(e.get("slot"), at), e["guard"], expected, e["where"]))
        elif "assign" in e:
            var = e["assign"]
            if type(var) is not int or not 0 <= var < len(g.variables):
                r.fail(f"{at} assigns a variable the graph does not capture")
            g.nodes.append(Assign(var, read(e.get("slot"), at)))
        else:
            r.fail(f"{at} is neither a node, a guard nor an assignment")
    g.outputs = [None if s is None else read(s, f"{where}'s output")
                 for s in r.list_(d["outputs"], f"{where}'s outputs")]
    if d["structure"] is not None:
        g.output_structure = _unstructure(d["structure"], r, where)
    leaves = _count_leaves(g.output_structure)
    if d["structure"] is not None and leaves != len(g.outputs):
        r.fail(f"{where}'s output structure has {leaves} leaves for {len(g.outputs)} outputs")
    return g


class _Leaf:
    """An output's place in a loaded graph's output structure (nest treats it as a leaf)."""

    __slots__ = ()


_LEAF = _Leaf()


def _unstructure(x: Any, r: Reader, where: str) -> Any:
    if type(x) is not dict or len(x) != 1:
        r.fail(f"{where}'s output structure is malformed")
    (tag, v), = x.items()
    if tag == "leaf":
        return _LEAF
    if tag in ("list", "tuple"):
        items = [_unstructure(c, r, where) for c in r.list_(v, where)]
        return items if tag == "list" else tuple(items)
    if tag == "dict":
        out = {}
        for p in r.list_(v, where):
            if type(p) is not list or len(p) != 2 or type(p[0]) not in (str, int):
                r.fail(f"{where}'s output structure has a bad dict entry")
            out[p[0]] = _unstructure(p[1], r, where)
        return out
    if tag == "namedtuple":
        parts = r.list_(v, where)
        if len(parts) != 3 or type(parts[0]) is not str or not all(
                type(f) is str and f.isidentifier() for f in r.list_(parts[1], where)):
            r.fail(f"{where}'s output structure has a bad namedtuple")
        name = parts[0] if parts[0].isidentifier() else "Outputs"
        try:
            kind = collections.namedtuple(name, parts[1])
            return kind(*[_unstructure(c, r, where) for c in r.list_(parts[2], where)])
        except (TypeError, ValueError):
            r.fail(f"{where}'s output structure has a bad namedtuple")
    r.fail(f"{where}'s output structure has the unknown tag {tag!r:.40}")


def _count_leaves(x: Any) -> int:
    if isinstance(x, dict):
        return sum(_count_leaves(c) for c in x.values())
    if isinstance(x, (list, tuple)):
        return sum(_count_leaves(c) for c in x)
    return 1
