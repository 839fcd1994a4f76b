"""The catalog of rule kinds and effects: everything a primitive can declare, once.

A primitive (`core.Primitive`) is its NumPy impl plus one mapping of rules, one rule per
kind, and a set of effects. This module is the one place that says which kinds exist:
for each, its signature, the interpreter that reads it, which primitives must have it,
and what applies to a primitive without it. `define(prim, ...)` assigns a primitive's
rules, rejecting unknown kinds and a kind given twice; `rule(prim, kind)` reads one
with its default. A new interpreter adds a kind here (and reads it), never an
attribute on `Primitive` or a branch in an op.

Values of two kinds are small objects rather than functions: a `Lowering` (the XLA
rule with the check that stands in for the impl's errors) and `Hints` (what the graph
passes may do with a node). A primitive's effects (`EFFECTS`) say what it *is* to the
interpreters, which act on them and never on a primitive's name.

docs/architecture.md's table of rule kinds is generated from `KINDS` (`markdown_table`;
tests/test_architecture.py checks it).
"""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

from .hessian_patterns import NONLINEAR, Curvature
from .patterns import dense_deps

__all__ = ["Effect", "EFFECTS", "NO_DERIVATIVE", "STATEFUL", "PER_EXAMPLE", "IDENTITY",
           "READS_VARIABLE", "CUSTOM_GRADIENT", "HOST_CALLBACK", "CALLS_USER_CODE", "DATA_SHAPE", "SHAPE_OPERAND",
           "Kind", "KINDS", "Lowering", "Hints", "NO_HINTS", "Codec", "define", "rule", "reads_all",
           "markdown_table", "markdown_effects"]


class Effect:
    """What a primitive is, to the interpreters (compared by identity: a frozenset of these
    is a primitive's `effects`)."""

    __slots__ = ("name", "doc")

    def __init__(self, name: str, doc: str) -> None:
        self.name = name
        self.doc = doc

    def __repr__(self) -> str:
        return f"<Effect {self.name}>"


NO_DERIVATIVE = Effect("no_derivative", "its outputs carry no derivative (comparisons, argmax, "
                       "stop_gradient): tapes and accumulators ignore the op")
STATEFUL = Effect("stateful", "every evaluation matters (random draws, host callbacks): the "
                  "graph passes never fold, merge or drop it")
PER_EXAMPLE = Effect("per_example", "the innermost vmap claims it even with no batched input, "
                     "so each example gets its own evaluation (a random draw)")
IDENTITY = Effect("identity", "the impl returns its one input array itself: a replay passes "
                  "it on")
READS_VARIABLE = Effect("reads_variable", "its one input is a Variable, read at this moment: a "
                        "traced graph reads it at each replay and never merges two reads")
CUSTOM_GRADIENT = Effect("custom_gradient", "its `grad_fn` param is the user's code "
                         "(custom_gradient): a tracer traces it too, so a replay can be "
                         "differentiated from outside")
HOST_CALLBACK = Effect("host_callback", "its impl calls back into Python at every run "
                       "(tf.print, py_function): never compiled, a graph holding it replays "
                       "with NumPy")
DATA_SHAPE = Effect("data_shape", "its output's shape depends on its inputs' values (tf.range "
                    "of tensors): a trace guards that shape, so a replay at another traces again")
SHAPE_OPERAND = Effect("shape_operand", "with DATA_SHAPE: the values deciding its output's "
                       "shape are its last input's alone (a shape operand, as reshape_dyn's); "
                       "its other inputs give their shapes only")
CALLS_USER_CODE = Effect("calls_user_code", "its impl runs the user's Python (py_function, "
                         "numpy_function): a replay runs it at every call, as eagerly")

EFFECTS = (NO_DERIVATIVE, STATEFUL, PER_EXAMPLE, IDENTITY, READS_VARIABLE, CUSTOM_GRADIENT,
           HOST_CALLBACK, CALLS_USER_CODE, DATA_SHAPE, SHAPE_OPERAND)


@dataclasses.dataclass(frozen=True)
class Kind:
    """One kind of rule: `signature` is how its reader calls it, `reader` the interpreter
    (module) that reads it, `required` which primitives must have it ("differentiable",
    "compiled": every primitive but host callbacks, "built-in": every primitive tapeflow
    defines, or "" for none), `default` what applies where a primitive has none."""

    name: str
    signature: str
    reader: str
    required: str
    default: str
    doc: str


KINDS: dict[str, Kind] = {k.name: k for k in (
    Kind("jvp", "jvp(tangents, outs, primals, **params) -> output tangents",
         "forward.ForwardAccumulator", "differentiable",
         "none: an accumulator raises naming the primitive",
         "forward rule; tangents and results may be `Zero`"),
    Kind("vjp", "vjp(cotangents, outs, primals, needs, **params) -> input cotangents",
         "tape.GradientTape", "differentiable",
         "none: a tape raises naming the primitive",
         "reverse rule; one cotangent (or None) per input, computed where `needs[i]`"),
    Kind("reads", "per input: (primal indices, output indices) its VJP reads",
         "tape.GradientTape, control_flow (scan residuals)", "",
         "every input and output (`reads_all`)",
         "what the VJP reads of the values, declared beside it (NOTE(saved-values))"),
    Kind("batch", "batch(vals, dims, **params) -> (out, out_dims)",
         "batching.Batcher", "built-in",
         "a loop over the examples, with a one-time warning (batching.by_loop)",
         "batching rule of vmap; `dims` is a BatchDims"),
    Kind("sparsity", "sparsity(pats, vals, outs, **params) -> output patterns",
         "graph/sparsity.py", "differentiable",
         "every output on every input (dense); no dependency without a derivative",
         "dependency rule for sparse Jacobians (NOTE(sparsity))"),
    Kind("curvature", "Curvature(alone, cross): the inputs its outputs bend in alone, and the "
         "pairs of inputs that interact",
         "graph/hessian_sparsity.py", "",
         "nonlinear in every input it depends on (hessian_patterns.NONLINEAR)",
         "second-order dependency rule for sparse Hessians (NOTE(curvature) in "
         "hessian_patterns.py): LINEAR, PIECEWISE_LINEAR, MULTILINEAR or a Curvature"),
    Kind("lower", "Lowering(fn(jax, *args, **params), check, check_needed)",
         "graph/xla.py", "compiled",
         "the impl called back on the host (jax.pure_callback)",
         "XLA lowering for function(jit_compile=True)"),
    Kind("kernel", "kernel(shapes, **params) -> str | None",
         "graph/kernels.py", "",
         "a NumPy ufunc impl without params: that ufunc on each element; otherwise none: a "
         "loop holding the primitive is not compiled",
         "the node in a loop compiled by Numba (NOTE(loop-kernels)): a Python expression "
         "over its inputs' names `{0}`, `{1}`, ..., given their shapes: of one element each "
         "where the primitive is elementwise, else of whole values (rank 0 as scalars, "
         "arrays C-ordered); None where these shapes or params are not served"),
    Kind("passes", "Hints(simplify, prune, swap, examples, elementwise, moves)",
         "graph/passes.py, graph/transposes.py", "",
         "no hints: the passes treat the node as opaque",
         "what the graph passes may do with a node"),
    Kind("save", "Codec(encode(params) -> params, decode(params) -> params, refuse)",
         "saving/graph_codec.py", "",
         "the params as they are: plain data (numbers, strings, tuples, dtypes, slices, "
         "arrays, sizes, graphs)",
         "how a SavedModel writes a node's params: a live object (a random stream, the "
         "user's grad_fn) to plain data and back, or why the primitive cannot be saved"),
    Kind("form", "form(args, params, reverse) -> outputs | None",
         "core.bind, under a recorder that differentiates", "",
         "none: the primitive runs as bound",
         "the differentiation form: the op bound with what its rules want kept "
         "(max-pool's argmax, a scan's carries); None where it does not apply"),
)}


@dataclasses.dataclass(frozen=True)
class Lowering:
    """The XLA lowering of a primitive: `fn(jax, *args, **params)` written with the given
    jax module's jax.numpy / jax.lax (a random draw gets ``drawn=``, the array its impl
    drew on the host: NOTE(host-draws) in graph/xla.py); `check` (same arguments) is a
    boolean that is False where the impl would raise (an index out of range): a compiled
    call whose check fails reruns on NumPy, which raises the error; `check_needed(*avals,
    **params)`, given each input's (shape, dtype), says whether a node needs the check
    at all (default: whenever there is one)."""

    fn: Callable[..., Any]
    check: Callable[..., Any] | None = None
    check_needed: Callable[..., bool] | None = None


@dataclasses.dataclass(frozen=True)
class Hints:
    """What the graph passes may do with a node of a primitive.

    - ``simplify(consts, same, **params) -> int | None``: an input the output always
      equals exactly (``consts[i]`` is input i's value when it is a constant, else
      None; ``same(i)`` says whether input i has the output's shape and dtype).
    - ``prune(params, live) -> (params, kept inputs, kept outputs) | None``: for dead-code
      elimination, given which outputs something reads: the node's params without the
      others, and which inputs and outputs it keeps (a loop's unread per-step results).
    - ``swap(emit, shape, *inputs, **params) -> slot | None``: the output (two axes above
      size 1) with those axes swapped, built of new nodes ``emit(prim, input slots,
      shape, params) -> slot``; ``shape(slot)`` reads a slot's shape (graph/transposes.py).
    - ``examples(shape, *inputs, **params) -> (count, input positions) | None``: where the
      op computes each example on its own: the first `count` axes of the output index
      examples, as the same axes of the inputs at those positions (None: every input,
      broadcast as by an elementwise op). NOTE(example-grid) in graph/transposes.py.
    - ``elementwise``: each output element is the same function of the inputs' elements
      at its position (inputs broadcast together), so the passes may permute its axes.
    - ``moves``: data movement: each output element is one element of the inputs (every
      input is data) or a zero, and the impl moves the elements of arrays of any dtype
      alike, so the passes may run it on numbered elements to see which goes where
      (NOTE(scalarize) in graph/scalarize.py).
    """

    simplify: Callable[..., Any] | None = None
    prune: Callable[..., Any] | None = None
    swap: Callable[..., Any] | None = None
    examples: Callable[..., Any] | None = None
    elementwise: bool = False
    moves: bool = False


NO_HINTS = Hints()


@dataclasses.dataclass(frozen=True)
class Codec:
    """How a SavedModel writes a primitive's params (saving/graph_codec.py, NOTE(graph-format)):
    `encode(params) -> params` of plain data only (numbers, strings, tuples, dtypes,
    arrays), and `decode` its inverse where the graph is loaded; or `refuse`, why a graph
    holding the primitive cannot be saved (its params are the user's Python)."""

    encode: Callable[[dict], dict] | None = None
    decode: Callable[[dict], dict] | None = None
    refuse: str | None = None


def reads_all(n_inputs: int, n_outputs: int) -> tuple:
    """The `reads` of a VJP that may read every input and output (the default)."""
    everything = (tuple(range(n_inputs)), tuple(range(n_outputs)))
    return (everything,) * n_inputs


def _checked(prim: Any, kind: str, value: Any) -> Any:
    """`value` as the rule of `kind`, or a TypeError naming the primitive."""
    if kind == "lower":
        if isinstance(value, Lowering):
            return value
        if callable(value):
            return Lowering(value)
        raise TypeError(f"define({prim.name!r}): `lower` must be a function or a Lowering; "
                        f"got {type(value).__name__}.")
    if kind == "save" and not isinstance(value, Codec):
        raise TypeError(f"define({prim.name!r}): `save` must be a Codec; got "
                        f"{type(value).__name__}.")
    if kind == "curvature":
        if not isinstance(value, Curvature):
            raise TypeError(f"define({prim.name!r}): `curvature` must be a Curvature; got "
                            f"{type(value).__name__}.")
        return value
    if kind == "passes" and not isinstance(value, Hints):
        raise TypeError(f"define({prim.name!r}): `passes` must be a Hints; got "
                        f"{type(value).__name__}.")
    if kind == "reads":
        if not isinstance(value, tuple) or not all(
                isinstance(r, tuple) and len(r) == 2 for r in value):
            raise TypeError(f"define({prim.name!r}): `reads` must hold, per input, a pair "
                            f"(primal indices, output indices); got {value!r}.")
        return tuple((tuple(ins), tuple(outs)) for ins, outs in value)
    if kind not in ("reads", "passes", "save") and not callable(value):
        raise TypeError(f"define({prim.name!r}): the `{kind}` rule must be callable; got "
                        f"{type(value).__name__}.")
    return value


def define(prim: Any, *families: Callable[[Any], dict], **rules: Any) -> Any:
    """Assign `prim`'s rules: each family (a function of the primitive returning rules by
    kind: `unary`'s, `batch_elementwise`, ...), then the rules given by kind. An unknown
    kind, or a kind given twice (here or in an earlier `define`), is an error naming the
    primitive. Returns `prim`.

    Example:
        >>> import numpy as np
        >>> from tapeflow.core import Primitive
        >>> from tapeflow.catalog import define, rule
        >>> twice_p = define(Primitive("twice_doc_example", lambda x: 2 * x),
        ...                  lower=lambda jax, x: 2 * x)
        >>> rule(twice_p, "lower").fn(None, np.float64(3.0))
        np.float64(6.0)
    """
    given: list[tuple[str, Any]] = []
    for family in families:
        given.extend(family(prim).items())
    given.extend(rules.items())
    for kind, value in given:
        if kind not in KINDS:
            raise TypeError(f"define({prim.name!r}): unknown rule kind {kind!r}; the kinds are "
                            f"{', '.join(KINDS)} (tapeflow/catalog.py).")
        if kind in prim.rules:
            raise ValueError(f"define({prim.name!r}): its `{kind}` rule is given twice.")
        if value is not None:
            prim.rules[kind] = _checked(prim, kind, value)
    return prim


def rule(prim: Any, kind: str) -> Any:
    """`prim`'s rule of `kind`, or the catalog's default where it has none (None where the
    default is the reader's to apply: a missing derivative rule raises there, batching
    loops, lowering calls back)."""
    found = prim.rules.get(kind)
    if found is not None:
        return found
    if kind == "passes":
        return NO_HINTS
    if kind == "sparsity":
        return _no_dependency if NO_DERIVATIVE in prim.effects else dense_deps
    if kind == "curvature":
        return NONLINEAR
    if kind not in KINDS:
        raise KeyError(f"unknown rule kind {kind!r}; the kinds are {', '.join(KINDS)}.")
    return None


def _no_dependency(pats: tuple, vals: tuple, outs: tuple, **params: Any) -> tuple:
    return (None,) * len(outs)


def markdown_effects() -> str:
    """The table of effects, as docs/architecture.md shows it."""
    lines = ["| effect | what it means |", "|---|---|"]
    lines += [f"| `{e.name.upper()}` | {e.doc} |" for e in EFFECTS]
    return "\n".join(lines) + "\n"


def markdown_table() -> str:
    """The table of rule kinds, as docs/architecture.md shows it.

    Example:
        >>> from tapeflow.catalog import markdown_table
        >>> markdown_table().splitlines()[2].split("|")[1].strip()
        '`jvp`'
    """
    lines = ["| kind | signature | read by | required of | default |",
             "|---|---|---|---|---|"]
    for k in KINDS.values():
        required = {"differentiable": "differentiable primitives",
                    "compiled": "every primitive but host callbacks",
                    "built-in": "every primitive of tapeflow's", "": "none"}[k.required]
        lines.append(f"| `{k.name}` | `{k.signature}` | {k.reader} | {required} | "
                     f"{k.default} |")
    return "\n".join(lines) + "\n"
