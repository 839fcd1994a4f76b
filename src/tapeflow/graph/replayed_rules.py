"""Rules of eager differentiation, traced once per signature and replayed as code.

NOTE(replayed-rules): `tape.gradient` with nothing recording its backward pass (no
outer tape, accumulator, vmap or trace: the usual first-order gradient) runs each op's
VJP rule for its numbers alone; so does an accumulator with no recorder below it for
each op's JVP rule. A rule is a few tapeflow ops written for every interpreter; on
small arrays the Python around them (the rule family, the broadcasting checks, a Tensor
and a `bind` per op) costs several times NumPy's work: sin's VJP rule took 2.3 us
against 0.67 us for its two ufunc calls, a product's 2.9 us against 0.48
(docs/performance-notes.md, #replayed-rules).

A rule binds the same ops with the same params whenever it sees the same *signature*:
the primitive and its rule, its params, the shapes and dtypes of its (co)tangents,
outputs and inputs, and which of them are symbolic zeros, dropped values (Husks) or, for
a VJP, need no cotangent. Rules compute from that metadata alone and read no values
(ARCHITECTURE's discipline, which traced derivatives rely on too: NOTE(value-reads) in
graph/trace.py). So once a signature has been seen `COMPILE_AFTER` times, its rule is
traced into a graph and compiled to straight-line NumPy code (`compile_graph`: the impls
in order, bit for bit, no graph passes), which each later use calls on the arrays. A
trace that reads a value (a guard) or a Husk, a rule that calls user code (a custom
gradient, a py_function, a host callback), a stateful primitive, an output shape that
is a value (DATA_SHAPE), params that are not plain data, arrays over 64 KiB (where
NumPy's work outweighs the Python) and primitives defined outside tapeflow keep the
rule as it is, for that signature, for good.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Callable

import numpy as np

from ..catalog import (CALLS_USER_CODE, CUSTOM_GRADIENT, DATA_SHAPE, HOST_CALLBACK, READS_VARIABLE,
                       STATEFUL)
from ..core import Husk, Primitive, Zero, substack
from ..ops.structural import add_any
from ..tensor import Tensor
from .ir import Graph, Node
from .replay import compile_graph
from .trace import Tracer

__all__ = ["COMPILE_AFTER", "compiled_vjp", "compiled_jvp", "signature", "forget"]

# Uses of one signature before its rule is compiled. Tracing and compiling a rule of a
# few ops costs 0.08-0.11 ms, what replaying saves in about 50 uses (#replayed-rules):
# compiling after 32 bounds either choice's overhead by about the other's.
COMPILE_AFTER = 32
# Signatures kept at most (compiled, and counted): a program whose shapes never repeat
# starts again rather than grow without bound.
_MOST = 4096

# (A DATA_SHAPE op's output shape is a value of its inputs: a signature does not hold it.)
_KEEP_PLAIN = frozenset((CALLS_USER_CODE, CUSTOM_GRADIENT, DATA_SHAPE, HOST_CALLBACK,
                         READS_VARIABLE, STATEFUL))
# Only tapeflow's own primitives: the op table checks each of their rules replayed at new
# values (tests/rules/test_replayed_rules.py); a rule defined with tapeflow.extend may
# compute with NumPy on its arrays, which a trace would freeze.
_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
_PLAIN_TYPES = (type(None), type(Ellipsis), bool, int, float, complex, str, bytes, np.dtype,
                np.generic)

# Rules on arrays up to this size are compiled. Above it NumPy's work outweighs the Python
# around a rule, and a trace computes the rule once more, on the arrays: at the peak of a
# backward pass, two more arrays alive (the suite's memory workload: 1,648 MB against
# 1,616 with large rules compiled).
_SMALL_BYTES = 1 << 16
# Constants a compiled rule may hold (a fill of zeros its rule made, say): the cache keeps
# them for as long as it keeps the rule, so _MOST rules hold 16 MiB of them at most.
_CONSTANT_BYTES = 1 << 12

_lock = threading.Lock()
_compiled: dict = {}  # signature -> its compiled rule (_runner), or None: the rule as it is
_seen: dict = {}  # signature -> uses so far, until compiled


def forget() -> None:
    """Drop every compiled rule and count (tests that change `COMPILE_AFTER` start clean).

    Example:
        >>> from tapeflow.graph import replayed_rules
        >>> replayed_rules.forget()
    """
    with _lock:
        _compiled.clear()
        _seen.clear()


def compiled_vjp(prim: Primitive, vjp: Callable, cts: tuple, outs: tuple, ins: tuple,
                 needs: tuple, params: dict) -> Callable | None:
    """The compiled form of `vjp`, `prim`'s VJP rule, at one recorded op's signature:
    ``run(acc, cts, outs, ins, in_keys)`` adds the op's input cotangents into `acc` (by
    key, as the backward pass does); or None where the rule runs as it is (a signature
    seen fewer than `COMPILE_AFTER` times, or one kept plain). For the eager backward pass
    only, with no recorder on the stack (NOTE(replayed-rules)).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.core import registry
        >>> from tapeflow.graph.replayed_rules import compiled_vjp, forget
        >>> forget()
        >>> x = tf.constant([1.0, 2.0])
        >>> sin_p = registry()["sin"]
        >>> compiled_vjp(sin_p, sin_p.rules["vjp"], (tf.ones([2]),), (tf.sin(x),), (x,),
        ...              (True,), {}) is None  # a first use: the rule runs as it is
        True
    """
    try:
        if len(cts) == 1 and 0 < len(ins) <= 2 and type(g := cts[0]) is not Zero:
            # one output and one or two inputs (most ops), without signature()'s loops
            v, o, x = g._value, outs[0]._value, ins[0]._value
            if len(ins) == 1:
                key = (prim, vjp, needs, v.shape, v.dtype, o.shape, o.dtype, x.shape, x.dtype)
            else:
                y = ins[1]._value
                key = (prim, vjp, needs, v.shape, v.dtype, o.shape, o.dtype, x.shape, x.dtype,
                       y.shape, y.dtype)
            if params:
                key += tuple(params.items())
        else:
            key = signature(prim, vjp, cts, outs, ins, needs, params)
        return _compiled[key]
    except (KeyError, TypeError):  # not compiled (yet), or a param without a hash
        pass
    except RuntimeError:  # a Husk's value (NOTE(saved-values) in tape.py): the long way
        try:
            key = signature(prim, vjp, cts, outs, ins, needs, params)
        except AttributeError:
            return None
    except AttributeError:  # not a tensor: the rule knows what to do with it
        return None
    return _miss(key, params, _compile_vjp, prim, vjp, cts, outs, ins, needs, params)


def compiled_jvp(prim: Primitive, jvp: Callable, tangents: tuple, outs: tuple, ins: tuple,
                 params: dict) -> Callable | None:
    """The compiled form of `jvp`, `prim`'s JVP rule, at one op's signature: ``run(tangents,
    outs, ins)`` returns the output tangents as the rule does; or None where the rule runs
    as it is (as `compiled_vjp`). For an eager accumulator with no recorder below it: its
    rules' ops are seen by nobody (NOTE(replayed-rules)).

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.core import registry
        >>> from tapeflow.graph.replayed_rules import compiled_jvp, forget
        >>> forget()
        >>> x = tf.constant([1.0, 2.0])
        >>> sin_p = registry()["sin"]
        >>> compiled_jvp(sin_p, sin_p.rules["jvp"], (tf.ones([2]),), (tf.sin(x),), (x,),
        ...              {}) is None  # a first use: the rule runs as it is
        True
    """
    try:
        key = signature(prim, jvp, tangents, outs, ins, (), params)
        return _compiled[key]
    except (KeyError, TypeError):  # not compiled (yet), or a param without a hash
        return _miss(key, params, _compile_jvp, prim, jvp, tangents, outs, ins, params)
    except AttributeError:  # not a tensor: the rule knows what to do with it
        return None


def _miss(key: tuple, params: dict, make: Callable, *args: Any) -> Callable | None:
    """A signature not compiled: counted, and compiled by ``make(*args)`` at its
    `COMPILE_AFTER`th use (None before, and where it stays plain)."""
    try:
        hash(key)
    except TypeError:  # a param without a hash: a slice (Python < 3.12), a list
        try:
            key = key[:-len(params)] + tuple((k, _frozen(v)) for k, v in params.items())
            run = _compiled.get(key, False)
        except TypeError:  # an array
            return None
        if run is not False:
            return run
    n = _seen.get(key, 0) + 1
    if n < COMPILE_AFTER:
        if len(_seen) >= _MOST:
            _seen.clear()
        _seen[key] = n
        return None
    run = make(*args)
    with _lock:
        if len(_compiled) >= _MOST:
            _compiled.clear()
        _compiled[key] = run
        _seen.pop(key, None)
    return run


def signature(prim: Primitive, rule: Callable, first: tuple, outs: tuple, ins: tuple,
              needs: tuple, params: dict) -> tuple:
    """What a rule's ops depend on, as a key: the primitive and its rule (a rule replaced,
    as a test does, is another), which inputs need cotangents (a VJP's), the shape and
    dtype of each cotangent or tangent (`first`), output and input (marked where it is a
    Zero or a Husk, a value the tape dropped because the rule does not read it), and the
    params. Hashing it is a TypeError for an unhashable param."""
    key: list = [prim, rule, needs]
    for group in (first, outs, ins):
        for t in group:
            if type(t) is Zero or type(t) is Husk:
                key += (type(t), t.shape, t.dtype)
            else:
                v = t._value
                key += (v.shape, v.dtype)
    if params:
        key += params.items()
    return tuple(key)


def _frozen(value: Any) -> Any:
    """A param as a hashable value that tells it apart: a slice or a list as a tuple."""
    if isinstance(value, slice):
        return (slice, _frozen(value.start), _frozen(value.stop), _frozen(value.step))
    if isinstance(value, (tuple, list)):
        return (type(value), *map(_frozen, value))
    return value


def _nbytes(t: Any) -> int:
    """The size of a tensor's, Zero's or Husk's value in bytes (its metadata only)."""
    if type(t) is Zero or type(t) is Husk:
        return math.prod(t.shape) * t.dtype.itemsize
    return t._value.nbytes


def _plain(value: Any) -> bool:
    """Whether a param is data a signature can compare (not a function, graph or array)."""
    if isinstance(value, (tuple, list, frozenset)):
        return all(_plain(v) for v in value)
    if isinstance(value, slice):
        return _plain((value.start, value.stop, value.step))
    return isinstance(value, _PLAIN_TYPES)


def _compile_vjp(prim: Primitive, vjp: Callable, cts: tuple, outs: tuple, ins: tuple,
                 needs: tuple, params: dict) -> Callable | None:
    """`_runner` of the VJP rule traced on these values, adding what the backward pass adds
    (the cotangents of the inputs in `needs`), or None where it stays as it is."""
    traced = _trace(prim, lambda *groups: vjp(*groups, needs, **params), (cts, outs, ins),
                    params)
    if traced is None:
        return None
    replay, arguments, structure = traced
    structure = [s if need else None for s, need in zip(structure, needs, strict=True)]
    lines = []
    for i, s in enumerate(structure):
        if s is None:
            continue
        lines.append(f"    k = in_keys[{i}]")
        if type(s) is Zero:
            lines.append(f"    if k not in acc: acc[k] = zero{i}")
        else:
            lines += [f"    c = Tensor(r[{s}])", "    prev = acc.get(k)",
                      "    acc[k] = c if prev is None else add_any(prev, c)"]
    return _runner(replay, "acc, cts, outs, ins, in_keys", ("cts", "outs", "ins"), arguments,
                   structure, lines)


def _compile_jvp(prim: Primitive, jvp: Callable, tangents: tuple, outs: tuple, ins: tuple,
                 params: dict) -> Callable | None:
    """`_runner` of the JVP rule traced on these values, returning the output tangents, or
    None where it stays as it is."""
    traced = _trace(prim, lambda *groups: jvp(*groups, **params), (tangents, outs, ins), params)
    if traced is None:
        return None
    replay, arguments, structure = traced
    items = ["None" if s is None else f"zero{i}" if type(s) is Zero else f"Tensor(r[{s}])"
             for i, s in enumerate(structure)]
    return _runner(replay, "tans, outs, ins", ("tans", "outs", "ins"), arguments, structure,
                   [f"    return ({', '.join(items)},)"])


def _trace(prim: Primitive, call: Callable, groups: tuple, params: dict) -> tuple | None:
    """(replay, its arguments, structure) of ``call(*groups)``, a rule, traced into a graph
    on these values and compiled; None where the rule stays as it is. The arguments are
    (group, index) pairs: a Zero and a Husk are none, the trace sees them as the rule does
    (a Husk's value is an error there too, which keeps the rule plain). The structure has
    one item per result: None, a Zero, or its index among the replay's results."""
    if (not prim.effects.isdisjoint(_KEEP_PLAIN) or not prim.defined_at.startswith(_PACKAGE)
            or not all(_plain(v) for v in params.values())
            or any(_nbytes(t) > _SMALL_BYTES for group in groups for t in group)):
        return None
    placed = [[None if type(t) is Zero or type(t) is Husk else Tensor(t._value) for t in group]
              for group in groups]
    graph = Graph(name=f"{prim.name}_rule")
    tracer = Tracer(graph, [t for group in placed for t in group if t is not None],
                    guards="error")
    traced = [tuple(t if p is None else p for t, p in zip(group, mine, strict=True))
              for group, mine in zip(groups, placed, strict=True)]
    try:
        with substack(lambda r: False, extra=(tracer,)):
            structure, slots = [], []
            for r in call(*traced):
                if r is None or type(r) is Zero:
                    structure.append(r)
                else:
                    structure.append(len(slots))
                    slots.append(tracer.slot_of(r))
            graph.outputs = slots
    except Exception:  # noqa: BLE001 - a value read (a guard), a Husk read: the rule as it is
        return None
    if (graph.variables or tracer.created or any(type(n) is not Node for n in graph.nodes)
            or sum(np.asarray(c).nbytes for c in graph.constants.values()) > _CONSTANT_BYTES):
        return None
    arguments = [(group, i) for group, mine in enumerate(placed)
                 for i, t in enumerate(mine) if t is not None]
    return compile_graph(graph), arguments, structure


def _runner(replay: Any, parameters: str, groups: tuple, arguments: list, structure: list,
            lines: list) -> Callable:
    """``run(parameters)``: `replay` on the `arguments` read from the op's record (from
    the parameters named in `groups`), then `lines` on its results `r`, written out for one
    signature: a loop over the structure would cost more than the replay."""
    ns: dict = {"replay": replay, "Tensor": Tensor, "add_any": add_any}
    ns.update((f"zero{i}", s) for i, s in enumerate(structure) if type(s) is Zero)
    args = ", ".join(f"{groups[g]}[{i}]._value" for g, i in arguments)
    src = "\n".join([f"def run({parameters}):", f"    r = replay({args})", *lines]) + "\n"
    exec(compile(src, f"<tapeflow rule {replay.__name__}>", "exec"), ns)  # noqa: S102 - our own code
    return ns["run"]
