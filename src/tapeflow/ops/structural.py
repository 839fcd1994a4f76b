"""The bottom of ops/: the structural primitives, the helpers built only from them, and
the rule families.

Rules are written with tapeflow ops (NOTE(strict-nesting) in core), and a few ops
carry every rule: sums of (co)tangents, undoing NumPy broadcasting, moving a batch
axis. Those are the *structural primitives* defined here (add, multiply, conj, cast,
select, reshape, transpose, broadcast_to, reduce_sum); the *helpers* (`add_any`,
`unbroadcast`, `move_axis`, `align_batched`, ...) bind them directly, never the public
ops, which would validate their arguments again inside every backward pass. The
*rule families* give most primitives their rules in a few lines:

- `defjvp` / `defvjp`: one rule per argument, combined here (Zero tangents skipped,
  NOTE(zero) in core), with NumPy broadcasting undone for broadcasting ops;
- `linear`: a one-input primitive linear in its input (JVP: itself on the tangent);
- `unary`: an elementwise primitive whose rules multiply by its derivative;
- `batch_elementwise`, `batch_unary`, `batch_reduction`, `batch_along_axis`: the
  common batching rules (see tapeflow.batching for the protocol).

Everything else in ops/ builds on this module, which imports nothing from ops/. The
public ops of these primitives (tf.add, tf.reshape, ...) live in their families'
modules (elementwise, shape, reduction), beside the ops of the same kind.
"""

from __future__ import annotations

import dis
import functools
import inspect
import math
from typing import Any, Callable

import numpy as np

from .. import blas
from ..core import Husk, Primitive, Zero, bind, dynamic_shapes
# The dependency-rule families live with the pattern algebra (NOTE(sparsity)); re-exported
# here with the other rule families.
from ..patterns import (along_axis_deps, dense_deps, elementwise_deps, moved_deps,
                        per_example_deps, per_matrix_deps, reduction_deps, scatter_deps)
from ..tensor import Tensor

__all__ = [
    # static helpers
    "shape_of", "dtype_of", "shape_source", "instantiate", "zeros_of", "ones_of",
    "filled", "filled_like",
    # helpers built from the structural primitives
    "add_any", "unbroadcast", "broadcast_tangent", "conj_if_complex", "float_mask",
    "swap_last_axes", "move_axis", "move_to_front", "align_batched", "kept_shape",
    "expand_reduced", "reshape_to",
    # rule families
    "defjvp", "defvjp", "linear", "unary", "batch_elementwise", "batch_unary",
    "batch_reduction", "batch_along_axis",
    # dependency rules (NOTE(sparsity))
    "elementwise_deps", "reduction_deps", "along_axis_deps", "dense_deps", "per_matrix_deps",
    "per_example_deps", "moved_deps", "scatter_deps",
    # simplify-rule helpers (graph passes)
    "constant_is", "is_minus_zero", "is_plus_zero", "is_one", "same_as_input", "neutral_right",
    # the structural primitives
    "add_p", "multiply_p", "conj_p", "cast_p", "select_p", "reshape_p", "transpose_p",
    "broadcast_to_p", "reduce_sum_p",
    # sizes read at replay (NOTE(dynamic-shapes))
    "shape_p", "size_p", "broadcast_dyn_p", "sum_dyn_p", "reshape_dyn_p",
]

Rule = Callable[..., Any]


# ================================================================== static helpers
def shape_of(x: Any) -> tuple:
    """Static shape of a tensor, Zero or Husk (metadata only: NumPy allowed here)."""
    t = type(x)
    if t is Zero or t is Husk:
        return x.shape
    v = x._value
    # An ndarray's or NumPy scalar's own attribute: np.shape's dispatch costs 0.4 us, a
    # tenth of an eager op on a small array (it runs twice per broadcasting VJP).
    return v.shape if isinstance(v, (np.ndarray, np.generic)) else np.shape(v)


def dtype_of(x: Any) -> np.dtype:
    """NumPy dtype of a tensor, Zero or Husk (metadata only)."""
    t = type(x)
    return x.dtype if t is Zero or t is Husk else x._value.dtype


def instantiate(t: Any) -> Tensor:
    """A Zero as a tensor of zeros; a tensor as itself."""
    return t.instantiate() if type(t) is Zero else t


def shape_source(x: Any) -> Any:
    """What a rule needs to know of x's shape: its static shape, or in a size-generic trace
    x itself, whose shape the graph reads when it runs (NOTE(dynamic-shapes)). Metadata
    only, as `shape_of`: what a rule passes here, it does not read (a Husk answers)."""
    if type(x) is Zero or type(x) is Husk or not dynamic_shapes():
        return shape_of(x)
    return x


def filled(shape: Tensor, value: Any, dtype: Any) -> Tensor:
    """`value` (of `dtype`) in the shape a 1-D int64 tensor holds, read when the graph
    runs (NOTE(dynamic-shapes))."""
    return bind(broadcast_dyn_p, Tensor(np.array(value, np.dtype(dtype))), shape, lead=0,
                expand=())


def filled_like(x: Tensor, value: Any, dtype: Any = None) -> Tensor:
    """`value` in x's shape (and dtype unless given), connected to nothing: a constant, or
    in a size-generic trace a node that reads x's shape when the graph runs (a scalar has
    no size to read: a constant there too)."""
    dt = dtype_of(x) if dtype is None else np.dtype(dtype)
    if not np.ndim(x._value) or not dynamic_shapes():
        return Tensor(np.full(shape_of(x), value, dt))
    return filled(_trailing_shape(x, 0), value, dt)


def zeros_of(x: Tensor) -> Tensor:
    """Zeros of x's shape and dtype, connected to nothing (a constant; see filled_like)."""
    return filled_like(x, 0)


def ones_of(x: Tensor) -> Tensor:
    """Ones of x's shape and dtype, connected to nothing (a constant; see filled_like)."""
    return filled_like(x, 1)


# ================================================================== helpers built from the primitives
def add_any(a: Any, b: Any) -> Any:
    """Sum of two tangents/cotangents, either of which may be Zero or None."""
    if a is None or type(a) is Zero:
        return b
    if b is None or type(b) is Zero:
        return a
    return bind(add_p, a, b)


def unbroadcast(g: Tensor, shape: tuple) -> Tensor:
    """Sum `g` back to `shape`, the shape an input had before NumPy broadcasting."""
    gshape = shape_of(g)
    shape = tuple(shape)
    if gshape == shape:
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    ones = [i + lead for i, d in enumerate(shape) if d == 1 and gshape[i + lead] != 1]
    if ones and dynamic_shapes():
        # No reshape to `shape`: it would fix the traced sizes (NOTE(dynamic-shapes)). The
        # size-1 axes are kept by their own sum, the leading ones dropped by a second.
        g = bind(reduce_sum_p, g, axis=tuple(ones), keepdims=True)
        return bind(reduce_sum_p, g, axis=tuple(axes), keepdims=False) if axes else g
    axes += ones
    out = bind(reduce_sum_p, g, axis=tuple(axes), keepdims=False) if axes else g
    return bind(reshape_p, out, shape=shape) if shape_of(out) != shape else out


def broadcast_tangent(t: Tensor, shape: Any) -> Tensor:
    """`t` broadcast to `shape` (an input's tangent, to the broadcast output's shape), a
    tuple or a `shape_source`."""
    if isinstance(shape, tuple):
        return t if shape_of(t) == shape else bind(broadcast_to_p, t, shape=shape)
    if shape_of(t) == shape_of(shape):
        return t
    return bind(broadcast_dyn_p, t, _trailing_shape(shape, 0), lead=0, expand=())


def reshape_to(g: Tensor, shape: Any) -> Tensor:
    """`g` reshaped to `shape`, a tuple or a `shape_source`."""
    if isinstance(shape, tuple):
        return g if shape_of(g) == shape else bind(reshape_p, g, shape=shape)
    if shape_of(g) == shape_of(shape):
        return g
    return bind(reshape_dyn_p, g, _trailing_shape(shape, 0), lead=0)


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
def defjvp(prim: Primitive, *rules: Rule | None, broadcasting: bool = False) -> None:
    """Forward rule from one rule per argument: ``rule(t, ans, *primals, **params)``.

    A None rule marks an argument that carries no derivative (indices, conditions).
    With `broadcasting`, each argument's tangent is broadcast to the output's shape.
    """
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

    prim.jvp = jvp


def defvjp(prim: Primitive, *rules: Rule | None, broadcasting: bool = False,
           reads: tuple | None = None) -> None:
    """Reverse rule from one rule per argument: ``rule(g, ans, *primals, **params)``.

    With `broadcasting`, each cotangent is summed back to its argument's shape.
    What each rule reads of the primals and the output is found from its code
    (`rule_reads`), unless `reads` gives it.
    """
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
                ct = unbroadcast(ct, shape_of(x))
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
        return (rules[0](g, outs[0], *primals, **params),)

    if len(rules) == 1 and rules[0] is not None and not broadcasting:
        vjp = vjp_of_one
    if reads is None:
        reads = rule_reads(rules, len(rules))
    if reads is not None:
        vjp.reads = reads  # type: ignore[attr-defined]
        vjp.kept = {}  # type: ignore[attr-defined]  # the tape's cache of what to keep
    prim.vjp = vjp


# NOTE(saved-values): a tape keeps, of each recorded op, only the inputs and outputs
# its VJP rule reads for the inputs that need a cotangent; the rest become Husks
# (core), so a long chain does not hold every intermediate array. What a rule reads
# is read off its code: a parameter its code never mentions is never read. The
# analysis only errs on the side of keeping (a name mentioned but not used, a value
# passed on to a helper), and a Husk raises if read, so a mistake is loud.
def _unmentioned(fn: Any) -> set[str] | None:
    """Names of `fn`'s positional parameters that its code never mentions (None when
    `fn` cannot be analyzed: not a plain function, or one taking *args)."""
    code = getattr(fn, "__code__", None)
    if code is None or code.co_flags & inspect.CO_VARARGS:
        return None
    params = code.co_varnames[:code.co_argcount]
    mentioned = set(code.co_cellvars)
    ins = [i for i in dis.get_instructions(code) if i.opname != "CACHE"]
    for k, i in enumerate(ins):
        arg = i.argval
        if isinstance(arg, str):
            if not _metadata_read(ins, k):
                mentioned.add(arg)
        elif isinstance(arg, tuple):
            mentioned.update(a for a in arg if isinstance(a, str))
    return {p for p in params if p not in mentioned}


_METADATA = ("shape_of", "dtype_of", "shape_source")


def _metadata_read(ins: list, k: int) -> bool:
    """Whether instruction k loads a local only to pass it alone to shape_of/dtype_of
    (``shape_of(x)``: the load of the function, of x, then a call with one argument),
    which a Husk answers."""
    if ins[k].opname != "LOAD_FAST" or k == 0 or k + 1 == len(ins):
        return False
    before, after = ins[k - 1], ins[k + 1]
    return (before.opname == "LOAD_GLOBAL" and before.argval in _METADATA
            and after.opname in ("PRECALL", "CALL") and after.arg == 1)


def rule_reads(rules: Any, n_inputs: int) -> tuple | None:
    """What each of `rules` (``rule(g, ans, *primals)``, one per input) reads: per input,
    (primal indices, output indices); None if some rule cannot be analyzed."""
    out = []
    for rule in rules:
        if rule is None:
            out.append(((), ()))
            continue
        unread = _unmentioned(rule)
        if unread is None:
            return None
        names = rule.__code__.co_varnames[:rule.__code__.co_argcount]
        if len(names) < 2 + n_inputs:
            return None
        ins = tuple(j for j in range(n_inputs) if names[2 + j] not in unread)
        outs = () if names[1] in unread else (0,)
        out.append((ins, outs))
    return tuple(out)


def linear(prim: Primitive, transpose: Rule) -> None:
    """Rules of a one-input primitive that is linear in its input.

    JVP: the primitive applied to the tangent. VJP: ``transpose(g, x, **params)``.
    """
    defjvp(prim, lambda t, ans, x, **params: bind(prim, t, **params))
    # The rule reads what `transpose(g, x)` reads of x (often only its shape).
    defvjp(prim, lambda g, ans, x, **params: transpose(g, x, **params),
           reads=_reads_of(transpose, ("g", "x")))


def _reads_of(deriv: Callable, names: tuple) -> tuple | None:
    """`defvjp`'s `reads` for a one-input rule that passes ``names`` (from "g", "ans",
    "x") to `deriv`: the input if deriv reads "x", the output if it reads "ans"."""
    unread = _unmentioned(deriv)
    if unread is None:
        return None
    params = deriv.__code__.co_varnames[:deriv.__code__.co_argcount]
    if len(params) < len(names):
        return None
    read = {name for name, p in zip(names, params) if p not in unread}
    return (((0,) if "x" in read else (), (0,) if "ans" in read else ()),)


def unary(name: str, impl: Callable, deriv: Callable[[Tensor, Tensor], Tensor]) -> Primitive:
    """An elementwise primitive f with f'(x) = ``deriv(ans, x)``, and its rules.

    Both rules multiply by the derivative: JVP ``t * f'(x)``, VJP ``g * conj(f'(x))``
    (TensorFlow's convention for complex inputs, NOTE(complex-gradients) in
    ops/complex.py). The batch axis stays where it is.
    """
    prim = Primitive(name, impl)
    defjvp(prim, lambda t, ans, x: bind(multiply_p, t, deriv(ans, x)))
    defvjp(prim, lambda g, ans, x: bind(multiply_p, g, conj_if_complex(deriv(ans, x))),
           reads=_reads_of(deriv, ("ans", "x")))
    batch_unary(prim)
    prim.sparsity = elementwise_deps
    return prim


# A batching rule gets the batched values (or the plain per-example value where an
# input is not batched) and their batch axes (None for unbatched); it returns the
# batched output and the output's batch axis. See tapeflow.batching.
def batch_elementwise(prim: Primitive) -> None:
    """Batching rule of an n-ary broadcasting primitive (the batch goes first, ranks aligned)."""
    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims, strict=True))
        return bind(prim, *align_batched(vals, dims, rank), **params), 0
    prim.batch = rule


def batch_unary(prim: Primitive) -> None:
    """Batching rule of a one-input elementwise primitive: the batch axis stays where it is."""
    prim.batch = lambda vals, dims, **params: (bind(prim, vals[0], **params), dims[0])


def batch_reduction(prim: Primitive) -> None:
    """Batching rule of a reduction with `axis` (tuple or None) and `keepdims` params."""
    def rule(vals: tuple, dims: tuple, axis: Any, **params: Any) -> tuple:
        x = move_to_front(vals[0], dims[0])
        rank = len(shape_of(x)) - 1
        axis = tuple(range(1, rank + 1)) if axis is None else tuple(a + 1 for a in axis)
        return bind(prim, x, axis=axis, **params), 0
    prim.batch = rule


def batch_along_axis(prim: Primitive) -> None:
    """Batching rule of a one-input op along one int `axis` (scans, softmax, argmax): the
    batch goes first and the axis shifts by one."""
    def rule(vals: tuple, dims: tuple, axis: int, **params: Any) -> tuple:
        return bind(prim, move_to_front(vals[0], dims[0]), axis=axis + 1, **params), 0
    prim.batch = rule


# ================================================================== simplify-rule helpers
# The graph passes drop a node whose output always equals one of its inputs exactly
# (Primitive.simplify), NaNs and signed zeros included.
def constant_is(c: Any, test: Callable[[np.ndarray], np.ndarray]) -> bool:
    """Whether `c` is a known, non-empty constant whose every entry passes `test`."""
    if c is None:
        return False
    arr = np.asarray(c)
    if arr.size == 0:
        return False
    passed = test(arr)
    return bool(passed) if arr.ndim == 0 else bool(passed.all())


def _signed_zero(negative: bool) -> Callable[[np.ndarray], np.ndarray]:
    """Entries that are 0 with the given sign bit (both parts, for complex; any 0 for ints)."""
    def test(c: np.ndarray) -> np.ndarray:
        if c.dtype.kind == "c":
            return test(c.real) & test(c.imag)
        if c.dtype.kind != "f":
            return c == 0
        return (c == 0) & (np.signbit(c) == negative)
    return test


is_minus_zero = _signed_zero(True)   # x + (-0.) is x exactly; x + (+0.) is not at x = -0.
is_plus_zero = _signed_zero(False)   # x - (+0.) is x exactly; x - (-0.) is not at x = -0.


def is_one(c: np.ndarray) -> np.ndarray:
    """Entries equal to 1, real dtypes only: a complex (1+0j) times (inf+0j) is inf+nanj."""
    return (c == 1) if c.dtype.kind != "c" else np.zeros(c.shape, bool)


def same_as_input(consts: list, same: Callable[[int], bool], **params: Any) -> int | None:
    """Simplify rule of ops that change nothing when the shape and dtype stay."""
    return 0 if same(0) else None


def neutral_right(test: Callable[[np.ndarray], np.ndarray],
                  left_too: bool = False) -> Callable[..., int | None]:
    """Simplify rule of x op c = x for a constant c passing `test` (and c op x = x with
    `left_too`, for commutative ops)."""
    def rule(consts: list, same: Callable[[int], bool]) -> int | None:
        if same(0) and constant_is(consts[1], test):
            return 0
        if left_too and same(1) and constant_is(consts[0], test):
            return 1
        return None
    return rule


# ================================================================== the structural primitives
# ------------------------------------------------------------------ add: d(x + y) = dx + dy
add_p = Primitive("add", np.add)
defjvp(add_p, lambda t, ans, x, y: t, lambda t, ans, x, y: t, broadcasting=True)
defvjp(add_p, lambda g, ans, x, y: g, lambda g, ans, x, y: g, broadcasting=True)
batch_elementwise(add_p)
add_p.sparsity = elementwise_deps
add_p.lower = lambda jax, x, y: jax.numpy.add(x, y)
add_p.simplify = neutral_right(is_minus_zero, left_too=True)


# ------------------------------------------------------------------ multiply: d(xy) = y dx + x dy
multiply_p = Primitive("multiply", np.multiply)
defjvp(multiply_p, lambda t, ans, x, y: bind(multiply_p, t, y),
       lambda t, ans, x, y: bind(multiply_p, x, t), broadcasting=True)
defvjp(multiply_p, lambda g, ans, x, y: bind(multiply_p, g, conj_if_complex(y)),
       lambda g, ans, x, y: bind(multiply_p, conj_if_complex(x), g), broadcasting=True)
batch_elementwise(multiply_p)
multiply_p.sparsity = elementwise_deps
multiply_p.lower = lambda jax, x, y: jax.numpy.multiply(x, y)
multiply_p.simplify = neutral_right(is_one, left_too=True)

# ------------------------------------------------------------------ conj: linear, its own transpose
conj_p = Primitive("conj", np.conjugate)
linear(conj_p, lambda g, x: bind(conj_p, g))
batch_unary(conj_p)
conj_p.sparsity = elementwise_deps
conj_p.lower = lambda jax, x: jax.numpy.conj(x)


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
    if x.dtype == np.float16:
        x = x.astype(np.float32)
    lo, hi = _int_bounds(x.dtype, dtype)
    # The common case, every value in range (NaN fails each test); a few values are
    # tested in Python, where NumPy's two reductions cost 2 us.
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
    if x.dtype.kind == "c" and dtype.kind != "c":
        x = x.real  # TensorFlow keeps the real part
    if x.dtype.kind == "f" and dtype.kind in "iu":  # NOTE(float-to-int)
        return _float_to_int(x, dtype)
    return x.astype(dtype, copy=False)


def _cast_lower(jax: Any, x: Any, dtype: np.dtype) -> Any:
    jnp = jax.numpy
    if jnp.iscomplexobj(x) and dtype.kind != "c":
        x = x.real
    if x.dtype.kind != "f" or dtype.kind not in "iu":
        return x.astype(dtype)
    if x.dtype == np.float16:  # NOTE(float-to-int), explicit rather than XLA's own choice
        x = x.astype(np.float32)
    return _saturated(jnp, x, dtype)


def _cast_tangent(t: Tensor, ans: Tensor, x: Tensor, dtype: np.dtype) -> Any:
    # Derivatives flow only between floating and complex dtypes.
    if dtype.kind not in "fc":
        return Zero.like(ans)
    return bind(cast_p, t, dtype=dtype)


cast_p = Primitive("cast", _cast_impl)
defjvp(cast_p, _cast_tangent)
defvjp(cast_p, lambda g, ans, x, dtype: bind(cast_p, g, dtype=dtype_of(x))
       if dtype_of(x).kind in "fc" else None)
batch_unary(cast_p)
cast_p.elementwise = True  # its sparsity rule depends on the dtype
cast_p.lower = _cast_lower
cast_p.sparsity = lambda pats, vals, outs, dtype: (
    elementwise_deps(pats, vals, outs) if dtype.kind in "fc" else (None,))  # ints: no derivative
cast_p.simplify = same_as_input


# ------------------------------------------------------------------ select: where(c, x, y)
def _select_rule(take_x: bool) -> Rule:
    def rule(t: Tensor, ans: Tensor, c: Tensor, x: Tensor, y: Tensor) -> Tensor:
        zero = zeros_of(t)
        return bind(select_p, c, t, zero) if take_x else bind(select_p, c, zero, t)
    return rule


select_p = Primitive("select", lambda c, x, y: np.where(c, x, y)[()])  # rank 0 -> scalar
defjvp(select_p, None, _select_rule(True), _select_rule(False), broadcasting=True)
defvjp(select_p, None, _select_rule(True), _select_rule(False), broadcasting=True)
batch_elementwise(select_p)
select_p.sparsity = elementwise_deps
select_p.lower = lambda jax, c, x, y: jax.numpy.where(c, x, y)

# ------------------------------------------------------------------ reshape: linear
# [()] gives rank-0 results as NumPy scalars, like every other op
def _reshape_impl(x: Any, shape: tuple) -> Any:
    out = x.reshape(shape)  # the method: a fraction of np.reshape's dispatch cost
    return out[()] if not shape else out  # rank 0: a NumPy scalar, as every rank-0 value


reshape_p = Primitive("reshape", _reshape_impl)
linear(reshape_p, lambda g, x, shape: reshape_to(g, shape_source(x)))
reshape_p.batch = lambda vals, dims, shape: (
    bind(reshape_p, move_to_front(vals[0], dims[0]), shape=(shape_of(vals[0])[dims[0]],) + shape), 0)
reshape_p.simplify = same_as_input
moved_deps(reshape_p, 0)
reshape_p.lower = lambda jax, x, shape: jax.numpy.reshape(x, shape)

# ------------------------------------------------------------------ transpose: linear
transpose_p = Primitive("transpose", lambda x, perm: np.transpose(x, perm))
linear(transpose_p, lambda g, x, perm: bind(transpose_p, g, perm=tuple(np.argsort(perm).tolist())))
transpose_p.batch = lambda vals, dims, perm: (
    bind(transpose_p, move_to_front(vals[0], dims[0]), perm=(0,) + tuple(p + 1 for p in perm)), 0)
transpose_p.simplify = lambda consts, same, perm: (
    0 if tuple(perm) == tuple(range(len(perm))) else None)
moved_deps(transpose_p, 0)
transpose_p.lower = lambda jax, x, perm: jax.numpy.transpose(x, perm)

# ------------------------------------------------------------------ broadcast_to: linear, summed back
broadcast_to_p = Primitive("broadcast_to", lambda x, shape: np.broadcast_to(x, shape))
linear(broadcast_to_p, lambda g, x, shape: unbroadcast(g, shape_of(x)))


def _broadcast_to_batch(vals: tuple, dims: tuple, shape: tuple) -> tuple:
    (x,) = align_batched(vals, dims, len(shape))
    return bind(broadcast_to_p, x, shape=shape_of(x)[:1] + shape), 0


broadcast_to_p.batch = _broadcast_to_batch
moved_deps(broadcast_to_p, 0)
broadcast_to_p.lower = lambda jax, x, shape: jax.numpy.broadcast_to(x, shape)
broadcast_to_p.simplify = same_as_input


# ------------------------------------------------------------------ reduce_sum: linear
def _sum_impl(x: np.ndarray, axis: tuple | None, keepdims: bool) -> Any:
    if x.dtype.kind in "iu":
        # Integers keep their dtype (NumPy would widen int32 sums to int64; TensorFlow does not).
        return np.sum(x, axis=axis, keepdims=keepdims, dtype=x.dtype)
    if axis and len(axis) < x.ndim and x.size >= _GEMV_FROM and x.dtype in _BLAS_REAL \
            and x.flags.c_contiguous \
            and axis[0] >= 0 and axis == tuple(range(axis[0], axis[-1] + 1)):
        out = _sum_by_gemv(x, axis[0], axis[-1] + 1)
        if out is not None:
            return out.reshape(kept_shape(x.shape, axis) if keepdims else
                               tuple(d for i, d in enumerate(x.shape) if i not in axis))
    return np.sum(x, axis=axis, keepdims=keepdims)


# A sum over some of an array's axes is, to NumPy, one inner loop per kept element (over
# the reduced axis) or per row of the kept part: short loops, each with its call overhead,
# so a sum over the middle axis of [640, 64, 64] runs at a quarter of memory speed and a
# bias gradient summing [N, H, W] with C=6 kept at less. The same sum is a product with a
# vector of ones, which BLAS streams at memory speed: 3-13x faster ([640, 64, 64] over
# axis 1: 0.77 -> 0.16 ms; [100000, 3] over axis 1: 1.55 -> 0.12 ms), and no less exact
# than NumPy's accumulation, which is sequential over non-innermost axes. Over the
# innermost axis NumPy sums long rows pairwise; there the GEMV's sequential lanes would
# lose digits, so rows longer than _PAIRWISE_FROM stay with NumPy.
_BLAS_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_PAIRWISE_FROM = 4096
# Below this many elements a BLAS call's overhead is twice NumPy's whole sum (a small
# gradient's unbroadcast: [4, 3] over axis 1, 2.2 vs 4.5 us), so small sums stay NumPy's.
_GEMV_FROM = 4096


def _sum_by_gemv(x: np.ndarray, lo: int, hi: int) -> np.ndarray | None:
    """The sum of C-contiguous `x` over axes lo..hi-1, as ones-vector products; None where
    NumPy's own sum is the better choice."""
    outer = math.prod(x.shape[:lo])
    n = math.prod(x.shape[lo:hi])
    inner = math.prod(x.shape[hi:])
    if n <= 1 or outer * inner == 0 or (inner == 1 and n > _PAIRWISE_FROM):
        return None  # nothing to add (a copy), or NumPy's pairwise rows
    ones = np.ones(n, x.dtype)
    if inner == 1:
        return blas.matmul(x.reshape(outer, n), ones)
    if outer == 1:
        return blas.matmul(ones, x.reshape(n, inner))
    return blas.matmul(ones, x.reshape(outer, n, inner))


def kept_shape(shape: tuple, axis: tuple | None) -> tuple:
    """The shape of a keepdims=True reduction of `shape` over `axis`."""
    if axis is None:
        return (1,) * len(shape)
    return tuple(1 if i in axis else d for i, d in enumerate(shape))


def expand_reduced(g: Tensor, shape: Any, axis: tuple | None, keepdims: bool) -> Tensor:
    """A reduction's cotangent broadcast back over the reduced axes of an input of `shape`
    (a tuple or a `shape_source`)."""
    if not isinstance(shape, tuple):
        if shape_of(g) == shape_of(shape):
            return g
        rank = len(shape_of(shape))
        axes = range(rank) if axis is None else axis
        expand = () if keepdims else tuple(sorted(a % rank - rank for a in axes))
        return bind(broadcast_dyn_p, g, _trailing_shape(shape, 0), lead=0, expand=expand)
    kept = kept_shape(shape, axis)
    if not keepdims and shape_of(g) != kept:
        g = bind(reshape_p, g, shape=kept)
    return broadcast_tangent(g, shape)


reduce_sum_p = Primitive("reduce_sum", _sum_impl)
linear(reduce_sum_p, lambda g, x, axis, keepdims: expand_reduced(g, shape_source(x), axis,
                                                                 keepdims))
batch_reduction(reduce_sum_p)
reduce_sum_p.sparsity = reduction_deps
# The axes before the first one summed index examples (NOTE(example-grid) in graph/transposes).
reduce_sum_p.examples = lambda shape, x, axis, keepdims: None if not axis else (
    min(a % len(shape(x)) for a in axis), (0,))
# Integers keep their dtype, as the impl.
reduce_sum_p.lower = lambda jax, x, axis, keepdims: jax.numpy.sum(x, axis=axis, keepdims=keepdims,
                                                                  dtype=x.dtype)


# ================================================================== sizes read at replay
# NOTE(dynamic-shapes): a trace that serves every size of its inputs' None dimensions
# (NOTE(probe) in graph/polymorphic.py) must not hold numbers computed from the sizes it
# was traced at. While one is active (core.dynamic_shapes), tf.shape, a mean's divisor,
# a gradient broadcast back to an input's shape and the like are these primitives, which
# read the sizes when the graph runs. A shape is a 1-D int64 tensor (never batched: every
# example of a vmap has the same shape); `lead` leading axes of the data pass through
# (a batch axis, from the batching rules).
def _shape_impl(x: Any, start: int, dtype: np.dtype) -> np.ndarray:
    return np.array(np.shape(x)[start:], dtype)


def _shape_batch(vals: tuple, dims: tuple, start: int, dtype: np.dtype) -> tuple:
    return bind(shape_p, move_to_front(vals[0], dims[0]), start=start + 1, dtype=dtype), None


shape_p = Primitive("shape", _shape_impl, differentiable=False)
shape_p.batch = _shape_batch
shape_p.sparsity = dense_deps
# The sizes are static in a JAX trace: a NumPy array, which graph/xla.py keeps static.
shape_p.lower = lambda jax, x, start, dtype: _shape_impl(x, start, dtype)


def _size_impl(x: Any, axis: tuple | None, dtype: np.dtype) -> Any:
    shape = np.shape(x)
    axes = range(len(shape)) if axis is None else axis
    return np.array(math.prod(shape[a] for a in axes), dtype)[()]


def _size_batch(vals: tuple, dims: tuple, axis: tuple | None, dtype: np.dtype) -> tuple:
    x = move_to_front(vals[0], dims[0])
    axis = tuple(range(1, len(shape_of(x)))) if axis is None else tuple(a + 1 for a in axis)
    return bind(size_p, x, axis=axis, dtype=dtype), None


size_p = Primitive("size", _size_impl, differentiable=False)
size_p.batch = _size_batch
size_p.sparsity = dense_deps
size_p.lower = lambda jax, x, axis, dtype: _size_impl(x, axis, dtype)


def _dims(shape: Any) -> tuple:
    return tuple(int(d) for d in np.asarray(shape).reshape(-1))


def _inserted(shape: tuple, expand: tuple) -> tuple:
    """`shape` with 1s inserted at the (negative) axes `expand` of the result."""
    if not expand:
        return shape
    rank = len(shape) + len(expand)
    at = sorted(a % rank for a in expand)
    out, rest = [], iter(shape)
    for i in range(rank):
        out.append(1 if i in at else next(rest))
    return tuple(out)


def _aligned(shape: tuple, lead: int, expand: tuple, rank: int) -> tuple:
    """`shape` with 1s inserted at `expand` and after its `lead` axes, so that its trailing
    axes line up with a broadcast target's `rank` trailing axes."""
    trailing = _inserted(shape[lead:], expand)
    return shape[:lead] + (1,) * (rank - len(trailing)) + trailing


def _broadcast_dyn_impl(x: Any, shape: Any, lead: int, expand: tuple) -> Any:
    x = np.asarray(x)
    dims = _dims(shape)
    return np.broadcast_to(x.reshape(_aligned(x.shape, lead, expand, len(dims))),
                           x.shape[:lead] + dims)


def _sum_dyn_impl(x: Any, shape: Any, lead: int, expand: tuple) -> Any:
    x = np.asarray(x)
    dims = _dims(shape)
    kept = _inserted(dims, expand)  # the broadcast operand's trailing shape, axes inserted
    extra = x.ndim - lead - len(kept)
    axes = tuple(range(lead, lead + extra)) + tuple(
        lead + extra + i for i, d in enumerate(kept) if d == 1 and x.shape[lead + extra + i] != 1)
    out = x.sum(axis=axes, keepdims=True) if axes else x
    return out.reshape(x.shape[:lead] + dims)


def _reshape_dyn_impl(x: Any, shape: Any, lead: int) -> Any:
    x = np.asarray(x)
    out = x.reshape(x.shape[:lead] + _dims(shape))
    return out[()] if not out.shape else out


def _trailing_shape(x: Tensor, lead: int) -> Tensor:
    return bind(shape_p, x, start=lead, dtype=np.dtype(np.int64))


def _unbatched_shape(prim: Primitive, dims: tuple) -> None:
    if dims[1] is not None:
        raise ValueError(f"{prim.name}: the shape argument is batched (vmap over a tensor of "
                         "shapes); every example must have the same shape.")


def _dyn_batch(prim: Primitive) -> Callable:
    def rule(vals: tuple, dims: tuple, lead: int, **params: Any) -> tuple:
        _unbatched_shape(prim, dims)
        return bind(prim, move_to_front(vals[0], dims[0]), vals[1], lead=lead + 1, **params), 0
    return rule


broadcast_dyn_p = Primitive("broadcast_dyn", _broadcast_dyn_impl)
sum_dyn_p = Primitive("sum_dyn", _sum_dyn_impl)
reshape_dyn_p = Primitive("reshape_dyn", _reshape_dyn_impl)
# Linear in the data, each the other's transpose; the shape carries no derivative.
defjvp(broadcast_dyn_p, lambda t, ans, x, s, lead, expand: bind(
    broadcast_dyn_p, t, s, lead=lead, expand=expand), None)
defvjp(broadcast_dyn_p, lambda g, ans, x, s, lead, expand: bind(
    sum_dyn_p, g, _trailing_shape(x, lead), lead=lead, expand=expand), None)
defjvp(sum_dyn_p, lambda t, ans, x, s, lead, expand: bind(
    sum_dyn_p, t, s, lead=lead, expand=expand), None)
defvjp(sum_dyn_p, lambda g, ans, x, s, lead, expand: bind(
    broadcast_dyn_p, g, _trailing_shape(x, lead), lead=lead, expand=expand), None)
defjvp(reshape_dyn_p, lambda t, ans, x, s, lead: bind(reshape_dyn_p, t, s, lead=lead), None)
defvjp(reshape_dyn_p, lambda g, ans, x, s, lead: bind(
    reshape_dyn_p, g, _trailing_shape(x, lead), lead=lead), None)
for _p in (broadcast_dyn_p, sum_dyn_p, reshape_dyn_p):
    _p.batch = _dyn_batch(_p)
moved_deps(broadcast_dyn_p, 0)
moved_deps(reshape_dyn_p, 0)
sum_dyn_p.sparsity = dense_deps
# graph/xla.py keeps shapes static (NumPy), so these lower to JAX's static-shape ops.
broadcast_dyn_p.lower = lambda jax, x, s, lead, expand: jax.numpy.broadcast_to(
    jax.numpy.reshape(x, _aligned(x.shape, lead, expand, len(_dims(s)))),
    x.shape[:lead] + _dims(s))


def _sum_dyn_lower(jax: Any, x: Any, s: Any, lead: int, expand: tuple) -> Any:
    dims = _dims(s)
    kept = _inserted(dims, expand)
    extra = x.ndim - lead - len(kept)
    axes = tuple(range(lead, lead + extra)) + tuple(
        lead + extra + i for i, d in enumerate(kept) if d == 1 and x.shape[lead + extra + i] != 1)
    out = jax.numpy.sum(x, axis=axes, keepdims=True) if axes else x
    return jax.numpy.reshape(out, x.shape[:lead] + dims)


sum_dyn_p.lower = _sum_dyn_lower
reshape_dyn_p.lower = lambda jax, x, s, lead: jax.numpy.reshape(x, x.shape[:lead] + _dims(s))
