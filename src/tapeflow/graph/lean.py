"""The lean call: a compiled function's shortest path from its call to its results.

NOTE(lean-call) in graph/xla.py: Python run around a compiled program runs several times
slower than warm, and each kind of step costs: timed around a one-op program, a loop
over one argument (zip, unpacking, a list built and spread into the call) added time
that the same checks written out do not (docs/performance-notes.md, #lean-call). So a
signature that one compiled graph serves with nothing to check around it gets a
function of its own, generated as straight-line code: one block per tensor argument (its
type, shape and dtype checked, its device copy taken as `device.placed` would), one per
captured variable, the jitted computation called, the results wrapped. The code depends
only on the signature's skeleton (the nesting of the arguments, the number of variables,
the form of the results); each skeleton is compiled once, and a signature's shapes,
dtypes and variables are the constants of the function made from it.
"""

from __future__ import annotations

import functools
import itertools
from typing import Any, Callable

import numpy as np

from .. import nest
from ..config import run_eagerly_flag
from ..core import recorder_stack
from ..tensor import Tensor
from .device import placed

# What a lean call returns for a call it does not serve: the caller takes the full path.
MISS = object()
# Signatures of more tensors and variables than this, and results of more outputs, are
# walked by loops rather than written out (`source`)
UNROLL = 64


def lean_call(replay: Any, graph: Any, arg_keys: tuple) -> Callable[[tuple], Any]:
    """The lean call of a signature: a function of the call's positional arguments that
    returns the results, or `MISS` for a call it does not serve (another structure, shape,
    dtype or kind of argument, a recorder active, functions run eagerly). `replay` is the
    signature's XlaReplay (simple: no guards, draws, writes or checks), `graph` its graph,
    `arg_keys` the `_walk` keys of the arguments: ("T", shape, dtype.str) for a tensor,
    ("list" or "tuple", *keys of the items) for a list or tuple.

    Example (the compiled part runs where JAX is installed):
        >>> import importlib.util, tapeflow as tf
        >>> from tapeflow.graph.lean import MISS
        >>> jax = importlib.util.find_spec("jax")
        >>> f = tf.function(lambda x: x * 2.0, jit_compile=jax is not None)
        >>> x = tf.constant([1.0, 2.0])
        >>> calls = [f(x) for _ in range(3)]  # compiled: the second makes the lean call
        >>> jax is None or f._lean((x,)).numpy().tolist() == [2.0, 4.0]
        True
        >>> jax is None or f._lean((tf.constant([1.0]),)) is MISS  # another shape
        True
    """
    leaves: list[tuple] = []
    skeleton = tuple(_skeleton(k, leaves) for k in arg_keys)
    structure = graph.output_structure
    outputs = tuple(o is not None for o in graph.outputs)
    if not nest.is_nested(structure) and len(outputs) == 1:
        form: Any = "single"
    elif type(structure) in (list, tuple) and not any(nest.is_nested(s) for s in structure):
        form = type(structure).__name__
    else:
        form = "nested"
    switch = replay.x64_switch
    code = _compiled(skeleton, len(graph.variables), outputs, form, replay.bare,
                     switch is not None, UNROLL)
    constants = {f"S{i}": shape for i, (shape, _) in enumerate(leaves)}
    constants.update({f"D{i}": np.dtype(dtype) for i, (_, dtype) in enumerate(leaves)})
    constants.update({f"V{i}": v for i, v in enumerate(graph.variables)})
    namespace = dict(constants, MISS=MISS, Tensor=Tensor, placed=placed, asarray=np.asarray,
                     stack=recorder_stack, eagerly=run_eagerly_flag, jax=replay.jax,
                     jitted=replay._jitted, computation=replay._computation,
                     x64_flag=replay.x64_flag, X64=replay.x64, structure=structure,
                     pack=nest.pack_sequence_as)
    if len(leaves) + len(graph.variables) > UNROLL:  # the code loops (`source`)
        namespace["gather"] = functools.partial(
            _gather, keys=tuple(_with_dtypes(k) for k in arg_keys),
            variables=tuple(graph.variables), jax=replay.jax)
    if switch is not None:
        namespace["swap"], namespace["restore"] = switch
    exec(code, namespace)  # defines `lean` in the namespace: its globals are the constants
    return namespace["lean"]


def _with_dtypes(key: tuple) -> tuple:
    """`_walk`'s key with each tensor's dtype string made a NumPy dtype (for `_gather`)."""
    if key[0] == "T":
        return ("T", key[1], np.dtype(key[2]))
    return (key[0], *(_with_dtypes(k) for k in key[1:]))


def _skeleton(key: tuple, leaves: list) -> Any:
    """The skeleton of an argument's key: "T" for a tensor (its shape and dtype appended to
    `leaves`), (kind, *skeletons of the items) for a list or tuple."""
    if key[0] == "T":
        leaves.append((key[1], key[2]))
        return "T"
    return (key[0], *(_skeleton(k, leaves) for k in key[1:]))


@functools.lru_cache(maxsize=512)
def _compiled(*skeleton: Any) -> Any:
    """The code object of the lean call for this skeleton (`source`'s arguments)."""
    return compile(source(*skeleton), "<tapeflow lean call>", "exec")


def source(skeleton: tuple, n_variables: int, outputs: tuple, form: str, bare: bool,
           switch: bool, unroll: int = UNROLL) -> str:
    """The Python source of a lean call: `skeleton` the arguments' skeletons (`_skeleton`),
    `outputs` whether each of the graph's outputs is a value (False: None), `form` how the
    results are returned ("single", "list", "tuple" or "nested": nest packs them), `bare`
    whether the jitted computation returns a single result not in a tuple, `switch` whether
    JAX's x64 mode can be switched by the two calls of `xla.x64_switch`; a signature of
    more than `unroll` tensors and variables is walked by a loop (`_gather`), and more than
    `unroll` results are wrapped by one.

    Example:
        >>> print(source(("T",), 0, (True,), "single", True, True), end="")
        def lean(args):
            if stack() or eagerly() or len(args) != 1:
                return MISS
            a0 = args[0]
            if type(a0) is not Tensor:
                return MISS
            v = a0._value
            if v.shape != S0 or (v.dtype is not D0 and v.dtype != D0):
                return MISS
            k = getattr(a0, "_placed", None)
            p0 = k[1] if k is not None and k[0] is v and k[1] is not None else placed(a0, jax)
            if x64_flag.value is X64:
                out = jitted(p0)
            else:
                mode = swap(X64)
                try:
                    out = jitted(p0)
                finally:
                    restore(mode)
            return Tensor(asarray(out))
    """
    if _count_leaves(skeleton) + n_variables > unroll:
        # Written out, each tensor adds its block to what CPython compiles
        # (docs/performance-notes.md, #lean-call): past `unroll`, a loop walks them
        lines = ["def lean(args):",
                 "    if stack() or eagerly():",
                 "        return MISS",
                 "    flat = gather(args)",
                 "    if flat is None:",
                 "        return MISS"]
        return _call_and_results(lines, "*flat", "flat", outputs, form, bare, switch, unroll)
    lines = ["def lean(args):",
             f"    if stack() or eagerly() or len(args) != {len(skeleton)}:",
             "        return MISS"]
    placed_names: list[str] = []
    names = (f"a{i}" for i in itertools.count())  # the locals holding arguments and items

    def argument(name: str, sk: Any) -> None:
        if sk == "T":
            i = len(placed_names)
            lines.extend([
                f"    if type({name}) is not Tensor:",
                "        return MISS",
                f"    v = {name}._value",
                f"    if v.shape != S{i} or (v.dtype is not D{i} and v.dtype != D{i}):",
                "        return MISS",
                f'    k = getattr({name}, "_placed", None)',
                f"    p{i} = k[1] if k is not None and k[0] is v and k[1] is not None "
                f"else placed({name}, jax)"])
            placed_names.append(f"p{i}")
            return
        kind, items = sk[0], sk[1:]
        lines.extend([f"    if type({name}) is not {kind} or len({name}) != {len(items)}:",
                      "        return MISS"])
        for j, item in enumerate(items):
            child = next(names)
            lines.append(f"    {child} = {name}[{j}]")
            argument(child, item)

    for j, sk in enumerate(skeleton):
        name = next(names)
        lines.append(f"    {name} = args[{j}]")
        argument(name, sk)
    for i in range(n_variables):
        lines.extend([f"    v = V{i}._value",
                      f'    k = getattr(V{i}, "_placed", None)',
                      f"    q{i} = k[1] if k is not None and k[0] is v and k[1] is not None "
                      f"else placed(V{i}, jax)"])
        placed_names.append(f"q{i}")
    flat = ", ".join(placed_names)
    return _call_and_results(lines, flat, f"[{flat}]", outputs, form, bare, switch, unroll)


def _call_and_results(lines: list, arguments: str, as_list: str, outputs: tuple, form: str,
                      bare: bool, switch: bool, unroll: int) -> str:
    """`lines` (a lean call's checks) and the rest of its source: the jitted computation
    called with `arguments` (`as_list` the same as a list) and its results returned."""
    # The jitted computation in the graph's x64 mode: JAX's as it is, or switched to it for
    # the call (XlaReplay._computation's steps; through it where JAX has no switch)
    target = "out" if bare else "outs"  # bare: the jitted computation returns one result
    lines.extend(["    if x64_flag.value is X64:",
                  f"        {target} = jitted({arguments})",
                  "    else:"])
    if switch:
        lines.extend(["        mode = swap(X64)",
                      "        try:",
                      f"            {target} = jitted({arguments})",
                      "        finally:",
                      "            restore(mode)"])
    else:
        lines.append(f"        {target} = computation({as_list}){'[0]' if bare else ''}")
    if len(outputs) > unroll and not bare and form != "single":
        lines.append("    results = [None if r is None else Tensor(asarray(r)) for r in outs]")
        lines.append("    return " + {"list": "results", "tuple": "tuple(results)",
                                      "nested": "pack(structure, results)"}[form])
        return "\n".join(lines) + "\n"
    results = ["Tensor(asarray(out))"] if bare else [
        f"Tensor(asarray(outs[{i}]))" if value else "None" for i, value in enumerate(outputs)]
    if form == "single":
        lines.append(f"    return {results[0]}")
    elif form == "list":
        lines.append(f"    return [{', '.join(results)}]")
    elif form == "tuple":
        lines.append(f"    return ({''.join(r + ', ' for r in results)})")
    else:
        lines.append(f"    return pack(structure, [{', '.join(results)}])")
    return "\n".join(lines) + "\n"


def _count_leaves(skeleton: Any) -> int:
    return 1 if skeleton == "T" else sum(_count_leaves(s) for s in skeleton
                                         if s not in ("list", "tuple"))


def _gather(args: tuple, keys: tuple, variables: tuple, jax: Any) -> list | None:
    """The flat arguments of a call with the signature `_walk`'s `keys` describe (each
    tensor's placed copy, then each variable's), or None for a call of another one: a
    large signature's lean call walks them with this loop (see `source`)."""
    if len(args) != len(keys):
        return None
    flat: list = []
    for a, k in zip(args, keys):
        if not _gather_one(a, k, flat, jax):
            return None
    flat.extend([placed(v, jax) for v in variables])
    return flat


def _gather_one(x: Any, k: tuple, flat: list, jax: Any) -> bool:
    if k[0] == "T":
        if type(x) is not Tensor:
            return False
        value = x._value
        if value.shape != k[1] or value.dtype != k[2]:
            return False
        flat.append(placed(x, jax))
        return True
    if type(x) is not (list if k[0] == "list" else tuple) or len(x) != len(k) - 1:
        return False
    return all(_gather_one(c, ck, flat, jax) for c, ck in zip(x, k[1:]))
