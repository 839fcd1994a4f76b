"""The bottom of ops/: the structural primitives, the helpers built only from them, and
the rule families.

Rules are written with tapeflow ops (NOTE(strict-nesting) in core), and a few ops
carry every rule: sums of (co)tangents, undoing NumPy broadcasting, moving a batch
axis. Those are the *structural primitives* defined here (add, multiply, conj, cast,
select, reshape, transpose, broadcast_to, reduce_sum); the *helpers* (`add_any`,
`unbroadcast`, `move_axis`, `align_batched`, ...) bind them directly, never the public
ops, which would validate their arguments again inside every backward pass. The
*rule families* give most primitives their rules in a few lines, each a function of the
primitive returning rules by kind, which `catalog.define` assigns:

- `per_input`: forward and reverse rules from one rule per argument (Zero tangents
  skipped, NOTE(zero) in core; NumPy broadcasting undone for broadcasting ops), with
  what each reverse rule reads declared by name (NOTE(saved-values) in tape.py);
- `linear`: a one-input primitive linear in its input (JVP: itself on the tangent);
- `unary` and `binary`: an elementwise primitive whose rules multiply by its partial
  derivatives, made with all its rules, its lowering jax.numpy's twin of its impl;
- `batch_elementwise`, `batch_unary`, `batch_reduction`, `batch_along_axis`: the
  common batching rules (see tapeflow.batching for the protocol).

Everything else in ops/ builds on this module, which imports nothing from ops/. The
public ops of these primitives (tf.add, tf.reshape, ...) live in their families'
modules (elementwise, shape, reduction), beside the ops of the same kind.
"""

from __future__ import annotations

import functools
import inspect
import math
from typing import Any, Callable

import numpy as np

from .. import blas
from .. import dtypes as _dt
from ..dtypes import is_real_floating
from ..catalog import NO_DERIVATIVE, Hints, Lowering, define
from ..core import Husk, Primitive, Zero, bind, sizes, surely_same, symbolic
from ..core import dynamic_traces as _dynamic_traces
# The dependency-rule families live with the pattern algebra (NOTE(sparsity)); re-exported
# here with the other rule families.
from ..hessian_patterns import LINEAR, MULTILINEAR
from ..patterns import (along_axis_deps, dense_deps, elementwise_deps, moved_deps,
                        per_example_deps, per_matrix_deps, reduction_deps, scatter_deps)
from ..tensor import Tensor
from .simplify import (constant_is, is_minus_zero, is_one, is_plus_zero, neutral_right,
                       same_as_input)

__all__ = [
    # static helpers
    "shape_of", "dtype_of", "shape_source", "instantiate", "zeros_of", "ones_of", "full_of",
    "filled_like",
    # helpers built from the structural primitives
    "add_any", "unbroadcast", "broadcast_tangent", "conj_if_complex", "float_mask",
    "swap_last_axes", "move_axis", "move_to_front", "align_batched", "kept_shape",
    "expand_reduced", "reshape_to",
    # rule families (catalog.define takes them)
    "per_input", "linear", "unary", "binary", "no_derivative", "twin", "batch_elementwise", "batch_unary",
    "batch_reduction", "batch_along_axis", "batch_no_inputs",
    # dependency rules (NOTE(sparsity))
    "elementwise_deps", "reduction_deps", "along_axis_deps", "dense_deps", "per_matrix_deps",
    "per_example_deps", "moved_deps", "scatter_deps",
    # simplify rules (graph passes), from ops/simplify.py
    "constant_is", "is_minus_zero", "is_plus_zero", "is_one", "same_as_input", "neutral_right",
    # the structural primitives
    "add_p", "multiply_p", "conj_p", "cast_p", "select_p", "reshape_p", "transpose_p",
    "broadcast_to_p", "fill_p", "reduce_sum_p",

]

Rule = Callable[..., Any]


# ================================================================== static helpers
def shape_of(x: Any) -> tuple:
    """Shape of a tensor, Zero or Husk (metadata only: NumPy allowed here): in a
    size-generic trace, the sizes its graph reads when it runs (`shape_source`, NOTE(
    symbolic-sizes) in graph/dims.py), so that what an op computes from them follows."""
    t = type(x)
    if t is Zero:
        return x.shape
    if _dynamic_traces[0]:
        return sizes(x)
    if t is Husk:
        return x.shape
    v = x._value
    # An ndarray's or NumPy scalar's own attribute: np.shape's dispatch is a noticeable
    # part of an eager op on a small array, and it runs twice per broadcasting VJP
    # (docs/performance-notes.md, #shape-of).
    return v.shape if isinstance(v, (np.ndarray, np.generic)) else np.shape(v)


def dtype_of(x: Any) -> np.dtype:
    """NumPy dtype of a tensor, Zero or Husk (metadata only)."""
    t = type(x)
    return x.dtype if t is Zero or t is Husk else x._value.dtype


def instantiate(t: Any) -> Tensor:
    """A Zero as a tensor of zeros; a tensor as itself."""
    return t.instantiate() if type(t) is Zero else t


def shape_source(x: Any) -> tuple:
    """x's shape as a rule or op computes a shape from it: its static shape, or in a
    size-generic trace the sizes the graph reads when it runs (core.sizes, NOTE(sized-
    params) in graph/polymorphic.py). Passed in an op's params (a reshape's target, a
    fill's shape), they make that op read them; metadata only, as `shape_of` (a Husk
    answers)."""
    return x.shape if type(x) is Zero else sizes(x)


def filled_like(x: Any, value: Any, dtype: Any = None) -> Tensor:
    """`value` in x's shape (and dtype unless given), connected to nothing: a `fill`, which
    a graph of fixed sizes folds to a constant and a size-generic one makes at each run."""
    dt = dtype_of(x) if dtype is None else np.dtype(dtype)
    return bind(fill_p, shape=shape_source(x), value=value, dtype=dt)


def full_of(shape: tuple, value: Any, dtype: Any) -> Tensor:
    """`value` in `shape`, connected to nothing: a constant, or a fill where the shape holds
    sizes a size-generic trace reads when it runs (NOTE(symbolic-sizes) in graph/dims.py)."""
    if all(type(d) is int for d in shape):
        return Tensor(np.full(shape, value, dtype))
    return bind(fill_p, shape=tuple(shape), value=value, dtype=np.dtype(dtype))


def zeros_of(x: Tensor) -> Tensor:
    """Zeros of x's shape and dtype, connected to nothing (see filled_like)."""
    return filled_like(x, 0)


def ones_of(x: Tensor) -> Tensor:
    """Ones of x's shape and dtype, connected to nothing (see filled_like)."""
    return filled_like(x, 1)


# ================================================================== helpers built from the primitives
def add_any(a: Any, b: Any) -> Any:
    """Sum of two tangents/cotangents, either of which may be Zero or None."""
    if a is None or type(a) is Zero:
        return b
    if b is None or type(b) is Zero:
        return a
    return bind(add_p, a, b)


def _summed(d: int, gd: int) -> bool:
    """Whether a gradient of size `gd` along an axis sums to an input's `d` (broadcast from
    1). Size checks only where they hold at size 1 too (a sum over an axis of 1 changes
    nothing): an input's plain 1 sums whatever the output's size, and a symbol equal to
    the output's size is not 1 by broadcasting. (A symbol that is 1 where the output's is
    not, a batch axis kept by a reduction, is checked: a batch of 1 decides otherwise.)"""
    if surely_same((d,), (gd,)):
        return False
    if not symbolic(d):
        return d == 1
    return d != gd and d == 1


def unbroadcast(g: Tensor, shape: tuple) -> Tensor:
    """Sum `g` back to `shape`, the shape an input had before NumPy broadcasting."""
    gshape = shape_of(g)
    shape = tuple(shape)
    if surely_same(gshape, shape):  # no size check (NOTE(symbolic-sizes)): a sum over
        return g                    # axes where both have 1, and the reshape, change nothing
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    axes += [i + lead for i, d in enumerate(shape) if _summed(d, gshape[i + lead])]
    out = bind(reduce_sum_p, g, axis=tuple(axes), keepdims=False) if axes else g
    return out if surely_same(shape_of(out), shape) else bind(reshape_p, out, shape=shape)


def broadcast_tangent(t: Tensor, shape: tuple) -> Tensor:
    """`t` broadcast to `shape` (an input's tangent, to the broadcast output's shape; a
    `shape_source`)."""
    return t if surely_same(shape_of(t), shape) else bind(broadcast_to_p, t, shape=shape)


def reshape_to(g: Tensor, shape: tuple) -> Tensor:
    """`g` reshaped to `shape` (a `shape_source`)."""
    return g if surely_same(shape_of(g), shape) else bind(reshape_p, g, shape=shape)


def conj_if_complex(x: Tensor) -> Tensor:
    """conj(x) for complex tensors, x itself otherwise (rules stay cheap for real ones)."""
    return bind(conj_p, x) if x._value.dtype.kind == "c" else x


def float_mask(cond: Tensor, like: Tensor) -> Tensor:
    """A 0/1 tensor of `like`'s dtype from a bool tensor (the masks of max, min, relu)."""
    return bind(cast_p, cond, dtype=dtype_of(like))


def swap_last_axes(x: Tensor) -> Tensor:
    """The transpose of each matrix in the last two axes."""
    nd = len(shape_of(x))
    return bind(transpose_p, x, perm=tuple(range(nd - 2)) + (nd - 1, nd - 2))


def move_axis(x: Tensor, src: int, dst: int) -> Tensor:
    """Move axis `src` of x to position `dst` (a transpose op, so it is differentiable)."""
    nd = np.ndim(x._value)
    src, dst = src % nd, dst % nd
    if src == dst:
        return x
    perm = [i for i in range(nd) if i != src]
    perm.insert(dst, src)
    return bind(transpose_p, x, perm=tuple(perm))


def move_to_front(x: Tensor, d: int | None) -> Tensor:
    """x with its batch axis `d` moved to 0 (x itself when `d` is 0 or None)."""
    return x if not d else move_axis(x, d, 0)


def align_batched(vals: tuple, dims: tuple, rank: int) -> list:
    """Batched values with the batch on axis 0 and rank `rank` + 1 (1s inserted after the
    batch axis), so NumPy's right-aligned broadcasting pairs them with unbatched values."""
    out = []
    for v, d in zip(vals, dims, strict=True):
        if d is None:
            out.append(v)
            continue
        v = move_to_front(v, d)
        s = shape_of(v)
        if len(s) - 1 < rank:
            v = bind(reshape_p, v, shape=s[:1] + (1,) * (rank - len(s) + 1) + s[1:])
        out.append(v)
    return out


# ================================================================== rule families
# A family is a function of the primitive that returns rules by kind; `define(prim,
# family, ..., kind=rule)` (tapeflow/catalog.py) assigns them. The families that need
# more than the primitive (the per-input rules, a derivative) are made by a call:
# ``define(p, per_input(...), batch_unary, sparsity=..., lower=...)``.
def _names_read(rule: Rule, names: str, first: int, n_inputs: int, who: str) -> tuple:
    """`reads` of one per-input rule ``rule(g, ans, *primals)`` from the names of the
    parameters it reads ("ans" the output, a primal's name that primal)."""
    params = list(inspect.signature(rule).parameters)[first:]
    ins, outs = [], []
    for name in names.split():
        if name == params[0]:
            outs.append(0)
        elif name in params[1:1 + n_inputs]:
            ins.append(params.index(name) - 1)
        else:
            raise TypeError(f"{who}: `reads` names {name!r}, which is not among the rule's "
                            f"output and inputs {params[:1 + n_inputs]}.")
    return tuple(sorted(set(ins))), tuple(outs)


def per_input(jvp: tuple = (), vjp: tuple = (), reads: tuple = (),
              broadcasting: bool = False) -> Callable[[Primitive], dict]:
    """Forward and reverse rules from one rule per input: ``jvp[i](t, ans, *primals,
    **params)`` is input i's contribution to the output tangent, ``vjp[i](g, ans, *primals,
    **params)`` input i's cotangent; None for an input without a derivative (indices,
    conditions). `reads[i]` names, space-separated, what ``vjp[i]`` reads of its
    arguments ("ans", a primal's name; "" for nothing), so a tape keeps only those
    (NOTE(saved-values)). With `broadcasting`, tangents are broadcast to the output's
    shape and cotangents summed back to each input's."""
    def family(prim: Primitive) -> dict:
        rules: dict = {}
        if jvp:
            rules["jvp"] = _jvp_per_input(jvp, broadcasting)
        if vjp:
            if len(reads) != len(vjp):
                raise TypeError(f"per_input({prim.name!r}): `reads` declares {len(reads)} "
                                f"rules' reads for {len(vjp)} VJP rules.")
            rules["vjp"] = _vjp_per_input(vjp, broadcasting)
            rules["reads"] = tuple(((), ()) if r is None else
                                   _names_read(r, names, 1, len(vjp), f"per_input({prim.name!r})")
                                   for r, names in zip(vjp, reads, strict=True))
        return rules
    return family


def _jvp_per_input(rules: tuple, broadcasting: bool) -> Rule:
    def jvp(tangents: tuple, outs: tuple, primals: tuple, **params: Any) -> tuple:
        ans = outs[0]
        total = None
        for rule, t in zip(rules, tangents, strict=True):
            if rule is None or type(t) is Zero:
                continue
            total = add_any(total, rule(t, ans, *primals, **params))
        if total is None:
            return (Zero.like(ans),)
        if broadcasting:
            total = broadcast_tangent(total, shape_source(ans))
        return (total,)
    return jvp


def _vjp_per_input(rules: tuple, broadcasting: bool) -> Rule:
    def vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, **params: Any) -> tuple:
        g = cts[0]
        if type(g) is Zero:
            g = g.instantiate()
        ans = outs[0]
        result = []
        for rule, x, need in zip(rules, primals, needs, strict=True):
            if rule is None or not need:
                result.append(None)
                continue
            ct = rule(g, ans, *primals, **params)
            if broadcasting and ct is not None:
                ct = unbroadcast(ct, shape_source(x))
            result.append(ct)
        return tuple(result)

    def vjp_of_one(cts: tuple, outs: tuple, primals: tuple, needs: tuple,
                   **params: Any) -> tuple:
        # One input, no broadcasting (most primitives), without the loop: this runs once
        # per op of every backward pass.
        if not needs[0]:
            return (None,)
        g = cts[0]
        if type(g) is Zero:
            g = g.instantiate()
        return (rule(g, outs[0], *primals, **params),)

    if len(rules) == 1 and rules[0] is not None and not broadcasting:
        rule = rules[0]
        return vjp_of_one
    return vjp


def linear(transpose: Rule, reads: str = "") -> Callable[[Primitive], dict]:
    """Rules of a one-input primitive that is linear in its input: its JVP is the
    primitive applied to the tangent, its VJP ``transpose(g, x, **params)``; `reads`
    names what the transpose reads ("x", or "" for its shape at most)."""
    def family(prim: Primitive) -> dict:
        def jvp(tangents: tuple, outs: tuple, primals: tuple, **params: Any) -> tuple:
            t = tangents[0]
            return (Zero.like(outs[0]),) if type(t) is Zero else (bind(prim, t, **params),)
        vjp_rule = lambda g, ans, x, **params: transpose(g, x, **params)  # noqa: E731
        return {"jvp": jvp, **per_input(vjp=(vjp_rule,), reads=(reads,))(prim)}
    return family


def unary(name: str, impl: Callable, deriv: Callable[[Tensor, Tensor], Tensor], reads: str,
          lower: Any = None, curvature: Any = None, kernel: Any = None) -> Primitive:
    """An elementwise primitive f with f'(x) = ``deriv(ans, x)``, and all its rules.

    Both rules multiply by the derivative: JVP ``t * f'(x)``, VJP ``g * conj(f'(x))``
    (TensorFlow's convention for complex inputs, NOTE(complex-gradients) in
    ops/complex.py); `reads` names what `deriv` reads ("ans", "x", both or ""). The
    batch axis stays where it is. Its lowering is `lower`, by default jax.numpy's
    function of the impl's name (a NumPy ufunc's twin: `twin`); `kernel` its expression
    on one element in a loop kernel (catalog.py), where the impl is not a ufunc.
    """
    prim = Primitive(name, impl)
    names = [p for p in inspect.signature(deriv).parameters][:2]
    unknown = set(reads.split()) - {"ans", "x"}
    if unknown or names != ["ans", "x"]:
        raise TypeError(f"unary({name!r}): `deriv` takes (ans, x) and `reads` names them; "
                        f"got parameters {names} and reads {reads!r}.")
    return define(
        prim,
        per_input(jvp=(lambda t, ans, x: bind(multiply_p, t, deriv(ans, x)),),
                  vjp=(lambda g, ans, x: bind(multiply_p, g, conj_if_complex(deriv(ans, x))),),
                  reads=(reads,)),
        batch_unary, sparsity=elementwise_deps,
        lower=twin(impl.__name__) if lower is None else lower,
        passes=Hints(elementwise=True), curvature=curvature, kernel=kernel)


def binary(name: str, impl: Callable, dx: Any, dy: Any, reads: tuple, lower: Any = None,
           simplify: Rule | None = None, curvature: Any = None) -> Primitive:
    """A broadcasting elementwise primitive f(x, y) with partial derivatives ``dx(ans, x,
    y)`` and ``dy(ans, x, y)``, and all its rules, as `unary`'s: JVP ``tx * dx + ty * dy``,
    VJP ``g * conj(d)`` summed back to each input's shape. A partial may be the number 1
    or -1 (the tangent passes, negated for -1). `reads` names what each partial reads;
    `simplify` is the graph passes' rule (catalog.Hints)."""
    def term(d: Any, conj: bool) -> Rule | None:
        if d == 1:
            return lambda t, ans, x, y: t
        if d == -1:
            return lambda t, ans, x, y: bind(multiply_p, t, Tensor(np.array(-1, dtype_of(t))))
        if conj:
            return lambda t, ans, x, y: bind(multiply_p, t, conj_if_complex(d(ans, x, y)))
        return lambda t, ans, x, y: bind(multiply_p, t, d(ans, x, y))

    prim = Primitive(name, impl)
    rule_reads = tuple("" if not callable(d) else r for d, r in zip((dx, dy), reads, strict=True))
    return define(
        prim,
        per_input(jvp=(term(dx, False), term(dy, False)), vjp=(term(dx, True), term(dy, True)),
                  reads=rule_reads, broadcasting=True),
        batch_elementwise, sparsity=elementwise_deps,
        lower=twin(impl.__name__) if lower is None else lower,
        passes=Hints(simplify=simplify, elementwise=True), curvature=curvature)


def no_derivative(name: str, impl: Callable, batch: Callable[[Primitive], dict]) -> Primitive:
    """An elementwise primitive without a derivative (a comparison, a rounding): its
    batching family `batch` and jax.numpy's twin of its impl as its lowering."""
    return define(Primitive(name, impl, effects=(NO_DERIVATIVE,)), batch,
                  lower=twin(impl.__name__))


def twin(name: str) -> Lowering:
    """The lowering by jax.numpy's function `name` (NumPy's twin of the same name)."""
    return Lowering(lambda jax, *args, **params: getattr(jax.numpy, name)(*args, **params))


# A batching rule gets the batched values (or the plain per-example value where an
# input is not batched) and their batch axes (None for unbatched); it returns the
# batched output and the output's batch axis. See tapeflow.batching.
def batch_elementwise(prim: Primitive) -> dict:
    """Batching rule of an n-ary broadcasting primitive (the batch goes first, ranks aligned)."""
    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims, strict=True))
        return bind(prim, *align_batched(vals, dims, rank), **params), 0
    return {"batch": rule}


def batch_unary(prim: Primitive) -> dict:
    """Batching rule of a one-input elementwise primitive: the batch axis stays where it is."""
    return {"batch": lambda vals, dims, **params: (bind(prim, vals[0], **params), dims[0])}


def batch_reduction(prim: Primitive) -> dict:
    """Batching rule of a reduction with `axis` (tuple or None) and `keepdims` params."""
    def rule(vals: tuple, dims: tuple, axis: Any, **params: Any) -> tuple:
        x = move_to_front(vals[0], dims[0])
        rank = len(shape_of(x)) - 1
        axis = tuple(range(1, rank + 1)) if axis is None else tuple(a + 1 for a in axis)
        return bind(prim, x, axis=axis, **params), 0
    return {"batch": rule}


def batch_no_inputs(prim: Primitive) -> dict:
    """Batching rule of a primitive without inputs (a fill, a shape): the same value for
    every example."""
    return {"batch": lambda vals, dims, **params: (bind(prim, **params), None)}


def batch_along_axis(prim: Primitive) -> dict:
    """Batching rule of a one-input op along one int `axis` (scans, softmax, argmax): the
    batch goes first and the axis shifts by one."""
    def rule(vals: tuple, dims: tuple, axis: int, **params: Any) -> tuple:
        return bind(prim, move_to_front(vals[0], dims[0]), axis=axis + 1, **params), 0
    return {"batch": rule}


# ================================================================== the structural primitives
# ------------------------------------------------------------------ add: d(x + y) = dx + dy
add_p = binary("add", np.add, 1, 1, reads=("", ""),
               simplify=neutral_right(is_minus_zero, left_too=True), curvature=LINEAR)
# ------------------------------------------------------------------ multiply: d(xy) = y dx + x dy
multiply_p = binary("multiply", np.multiply, lambda ans, x, y: y, lambda ans, x, y: x,
                    reads=("y", "x"), simplify=neutral_right(is_one, left_too=True),
                    curvature=MULTILINEAR)
# ------------------------------------------------------------------ conj: linear, its own transpose
conj_p = define(Primitive("conj", np.conjugate), linear(lambda g, x: bind(conj_p, g)),
                batch_unary, sparsity=elementwise_deps, lower=twin("conj"),
                passes=Hints(elementwise=True), curvature=LINEAR)


# ------------------------------------------------------------------ cast
# NOTE(float-to-int): TensorFlow leaves a float cast to an integer type undefined for
# NaN, infinities and values outside the type's range: its CPU kernel gives whatever the
# machine's conversion gives (NumPy too: 300.0 -> int8 is 44, NaN -> int32 is INT_MIN,
# and other values again on another CPU), XLA saturates. tapeflow saturates in every
# mode, eager, replayed and compiled alike: NaN -> 0, below the range -> its minimum,
# above -> its maximum, as XLA; in range, truncation toward zero, as everywhere.
@functools.lru_cache(maxsize=None)
def _int_bounds(float_dtype: np.dtype, dtype: np.dtype) -> tuple:
    """The type's range as [lo, hi) in the float dtype, exact: 0 or -2^(b-1), and 2^b or
    2^(b-1), powers of two (float16 values compare as float32: 2^31 overflows it)."""
    info = np.iinfo(dtype)
    return float_dtype.type(info.min), float_dtype.type(float(info.max) + 1.0)


def _float_to_int(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if x.dtype.itemsize < 4:  # float16, bfloat16: compared as float32 (2^31 overflows them)
        x = x.astype(np.float32)
    lo, hi = _int_bounds(x.dtype, dtype)
    # The common case, every value in range (NaN fails each test); a few values are
    # tested in Python, where NumPy's two reductions cost more.
    if x.size <= 16:
        inside = all(lo <= v < hi for v in x.ravel().tolist())
    else:
        inside = bool(x.min() >= lo and x.max() < hi)
    if inside:
        return x.astype(dtype)
    return _saturated(np, x, dtype)[()]


def _saturated(xp: Any, x: Any, dtype: np.dtype) -> Any:
    """x (float32 or float64) cast to the integer `dtype` as NOTE(float-to-int) says, with
    `xp` NumPy (the impl) or jax.numpy (the lowering): one rule, both backends."""
    lo, hi = _int_bounds(np.dtype(x.dtype), dtype)
    info = np.iinfo(dtype)
    out = xp.where((x >= lo) & (x < hi), x, 0).astype(dtype)
    out = xp.where(x >= hi, np.asarray(info.max, dtype), out)
    return xp.where(x < lo, np.asarray(info.min, dtype), out)


def _cast_impl(x: np.ndarray, dtype: np.dtype) -> np.ndarray:
    if _dt.kind(x.dtype) == "c" and _dt.kind(dtype) != "c":
        x = x.real  # TensorFlow keeps the real part
    if _dt.kind(dtype) in "iu" and is_real_floating(x.dtype):  # NOTE(float-to-int)
        return _float_to_int(x, dtype)
    return x.astype(dtype, copy=False)


def _cast_lower(jax: Any, x: Any, dtype: np.dtype) -> Any:
    jnp = jax.numpy
    if jnp.iscomplexobj(x) and _dt.kind(dtype) != "c":
        x = x.real
    if _dt.kind(dtype) not in "iu" or not is_real_floating(x.dtype):
        return x.astype(dtype)
    if np.dtype(x.dtype).itemsize < 4:  # NOTE(float-to-int): float16, bfloat16 as float32
        x = x.astype(np.float32)
    return _saturated(jnp, x, dtype)


def _cast_tangent(t: Tensor, ans: Tensor, x: Tensor, dtype: np.dtype) -> Any:
    # Derivatives flow only between floating and complex dtypes.
    if _dt.kind(dtype) not in "fc":
        return Zero.like(ans)
    return bind(cast_p, t, dtype=dtype)


def _cast_cotangent(g: Tensor, ans: Tensor, x: Tensor, dtype: np.dtype) -> Any:
    return bind(cast_p, g, dtype=dtype_of(x)) if _dt.kind(dtype_of(x)) in "fc" else None


cast_p = define(
    Primitive("cast", _cast_impl),
    per_input(jvp=(_cast_tangent,), vjp=(_cast_cotangent,), reads=("",)),
    batch_unary, lower=_cast_lower,
    sparsity=lambda pats, vals, outs, dtype: (
        elementwise_deps(pats, vals, outs) if _dt.kind(dtype) in "fc" else (None,)),  # ints: none
    passes=Hints(simplify=same_as_input, elementwise=True), curvature=LINEAR)


# ------------------------------------------------------------------ select: where(c, x, y)
def _select_rule(take_x: bool) -> Rule:
    def rule(t: Tensor, ans: Tensor, c: Tensor, x: Tensor, y: Tensor) -> Tensor:
        zero = zeros_of(t)
        return bind(select_p, c, t, zero) if take_x else bind(select_p, c, zero, t)
    return rule


select_p = define(
    Primitive("select", lambda c, x, y: np.where(c, x, y)[()]),  # rank 0 -> scalar
    per_input(jvp=(None, _select_rule(True), _select_rule(False)),
              vjp=(None, _select_rule(True), _select_rule(False)), reads=("", "c", "c"),
              broadcasting=True),
    batch_elementwise, sparsity=elementwise_deps, lower=twin("where"),
    passes=Hints(elementwise=True), curvature=LINEAR)


# ------------------------------------------------------------------ reshape: linear
def _reshape_impl(x: Any, shape: tuple) -> Any:
    out = x.reshape(shape)  # the method: a fraction of np.reshape's dispatch cost
    return out[()] if not shape else out  # rank 0: a NumPy scalar, as every rank-0 value


reshape_p = define(
    Primitive("reshape", _reshape_impl),
    linear(lambda g, x, shape: reshape_to(g, shape_source(x))),
    moved_deps(0), lower=lambda jax, x, shape: jax.numpy.reshape(x, shape),
    batch=lambda vals, dims, shape: (bind(reshape_p, move_to_front(vals[0], dims[0]),
                                          shape=(shape_of(vals[0])[dims[0]],) + shape), 0),
    passes=Hints(simplify=same_as_input, moves=True), curvature=LINEAR,
    kernel=lambda shapes, shape: _kernel_fill(shapes, shape) or (
        "{0}" if tuple(shapes[0]) == tuple(shape) else "{0}.reshape(-1)[0]" if not shape
        else f"{{0}}.reshape({tuple(shape)!r})"))


def _kernel_fill(shapes: list, shape: tuple) -> str | None:
    """A loop kernel's array of `shape` filled with a scalar (catalog `kernel`), where the
    one input is a scalar; None otherwise."""
    return f"np.full({tuple(shape)!r}, {{0}})" if not shapes[0] and shape else None

# ------------------------------------------------------------------ transpose: linear
transpose_p = define(
    Primitive("transpose", lambda x, perm: np.transpose(x, perm)),
    linear(lambda g, x, perm: bind(transpose_p, g, perm=tuple(np.argsort(perm).tolist()))),
    moved_deps(0), lower=lambda jax, x, perm: jax.numpy.transpose(x, perm),
    batch=lambda vals, dims, perm: (bind(transpose_p, move_to_front(vals[0], dims[0]),
                                         perm=(0,) + tuple(p + 1 for p in perm)), 0),
    passes=Hints(simplify=lambda consts, same, perm: (
        0 if tuple(perm) == tuple(range(len(perm))) else None), moves=True), curvature=LINEAR)


# ------------------------------------------------------------------ broadcast_to: linear, summed back
def _broadcast_to_batch(vals: tuple, dims: tuple, shape: tuple) -> tuple:
    (x,) = align_batched(vals, dims, len(shape))
    return bind(broadcast_to_p, x, shape=shape_of(x)[:1] + shape), 0


broadcast_to_p = define(
    Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape)),
    linear(lambda g, x, shape: unbroadcast(g, shape_of(x))),
    moved_deps(0), batch=_broadcast_to_batch,
    lower=lambda jax, x, shape: jax.numpy.broadcast_to(x, shape),
    passes=Hints(simplify=same_as_input, moves=True), curvature=LINEAR,
    kernel=lambda shapes, shape: _kernel_fill(shapes, shape) or (
        "{0}" if tuple(shapes[0]) == tuple(shape) else f"np.broadcast_to({{0}}, {tuple(shape)!r})"))


# ------------------------------------------------------------------ fill: a constant of a shape
# Made by rules and ops from an input's shape (`filled_like`): no input, its shape a param,
# which a size-generic trace reads when the graph runs; a graph of fixed sizes folds it.
def _fill_impl(shape: tuple, value: Any, dtype: np.dtype) -> Any:
    # np.zeros and np.ones cost a fraction of np.full, and most fills are one of them.
    out = np.zeros(shape, dtype) if value == 0 else np.ones(shape, dtype) if value == 1 else \
        np.full(shape, value, dtype)
    return out[()] if not shape else out  # rank 0: a NumPy scalar, as every rank-0 value


fill_p = define(
    Primitive("fill", _fill_impl, effects=(NO_DERIVATIVE,)), batch_no_inputs,
    lower=lambda jax, shape, value, dtype: jax.numpy.full(shape, value, dtype))


# ------------------------------------------------------------------ reduce_sum: linear
def _sum_impl(x: np.ndarray, axis: tuple | None, keepdims: bool) -> Any:
    if x.dtype.kind in "iu":
        # Integers keep their dtype (NumPy would widen int32 sums to int64; TensorFlow does not).
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    if x.dtype.itemsize == 2:  # float16, bfloat16: accumulated in float32 (half_in_float32)
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=np.float32).astype(x.dtype)
    if axis and len(axis) < x.ndim and axis[0] >= 0 \
            and axis == tuple(range(axis[0], axis[-1] + 1)):
        out = blas.sum_by_products(x, axis[0], axis[-1] + 1)
        if out is not None:
            return out.reshape(kept_shape(x.shape, axis) if keepdims else
                               tuple(d for i, d in enumerate(x.shape) if i not in axis))
    # np.sum's own result, without its Python wrapper (1.5 us of a small sum's 2.5)
    return np.add.reduce(x, axis=axis, keepdims=keepdims)



def kept_shape(shape: tuple, axis: tuple | None) -> tuple:
    """The shape of a keepdims=True reduction of `shape` over `axis`."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else d for i, d in enumerate(shape))


def expand_reduced(g: Tensor, shape: Any, axis: tuple | None, keepdims: bool) -> Tensor:
    """A reduction's cotangent broadcast back over the reduced axes of an input of `shape`
    (a `shape_source`)."""
    kept = kept_shape(shape, axis)
    if not keepdims and shape_of(g) != kept:
        g = bind(reshape_p, g, shape=kept)
    return broadcast_tangent(g, shape)


reduce_sum_p = define(
    Primitive("reduce_sum", _sum_impl),
    linear(lambda g, x, axis, keepdims: expand_reduced(g, shape_source(x), axis, keepdims)),
    batch_reduction, sparsity=reduction_deps,
    # Integers keep their dtype, as the impl.
    lower=lambda jax, x, axis, keepdims: jax.numpy.sum(x, axis=axis, keepdims=keepdims,
                                                       dtype=x.dtype),
    # The axes before the first one summed index examples (NOTE(example-grid) in
    # graph/transposes).
    passes=Hints(examples=lambda shape, x, axis, keepdims: None if not axis else (
        min(a % len(shape(x)) for a in axis), (0,))), curvature=LINEAR,
    kernel=lambda shapes, axis, keepdims: _kernel_sum(len(shapes[0]), axis, keepdims))


def _kernel_sum(rank: int, axis: Any, keepdims: bool) -> str:
    """reduce_sum in a loop kernel (catalog `kernel`): np.sum over each axis, the last first
    (Numba's np.sum takes one axis); keepdims changes the shape alone, which the kernel
    keeps aside."""
    axes = range(rank) if axis is None else sorted({a % rank for a in axis})
    if len(axes) == rank:
        return "np.sum({0})" if rank else "{0}"
    expr = "{0}"
    for a in reversed(list(axes)):
        expr = f"np.sum({expr}, axis={a})"
    return expr
