"""Rule families: the shared shapes of JVP/VJP rules, so each primitive is a few lines.

- `defjvp` / `defvjp`: one rule per argument, combined here (zero tangents
  skipped, NOTE(zero) in core), with NumPy broadcasting undone for
  broadcasting ops (`unbroadcast`).
- `unary`: an elementwise primitive whose both rules are "multiply by the
  derivative".
- `linear`: a primitive linear in its first argument, whose JVP applies the
  primitive itself to the tangent.
- argument conversion shared by every public op: TensorFlow's no-promotion rule.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..core import _REGISTRY, Primitive, Zero, bind
from ..errors import DTypeMismatchError, InvalidArgumentError
from ..tensor import Tensor, Variable, _TensorLike, convert_to_tensor

Rule = Callable[..., Any]


def shape_of(x: Any) -> tuple:
    """Static shape of a tensor or Zero (metadata only: NumPy allowed here)."""
    return x.shape if type(x) is Zero else np.shape(x._value)


def np_dtype(x: Any) -> np.dtype:
    return x.dtype if type(x) is Zero else x._value.dtype


def unbroadcast(g: Tensor, shape: tuple) -> Tensor:
    """Sum `g` back to `shape`, the shape an input had before NumPy broadcasting."""
    from .reduce import reduce_sum
    from .shape import reshape

    gshape = shape_of(g)
    if gshape == tuple(shape):
        return g
    lead = len(gshape) - len(shape)
    axes = list(range(lead))
    axes += [i + lead for i, d in enumerate(shape) if d == 1 and gshape[i + lead] != 1]
    out = reduce_sum(g, axis=axes) if axes else g
    return reshape(out, shape) if shape_of(out) != tuple(shape) else out


def broadcast_tangent(t: Tensor, shape: tuple) -> Tensor:
    from .shape import broadcast_to

    return t if shape_of(t) == tuple(shape) else broadcast_to(t, shape)


def add_any(a: Any, b: Any) -> Any:
    """Sum of two tangents/cotangents, either of which may be Zero or None."""
    from .elementwise import add

    if a is None or type(a) is Zero:
        return b
    if b is None or type(b) is Zero:
        return a
    return add(a, b)


def instantiate(t: Any) -> Tensor:
    return t.instantiate() if type(t) is Zero else t


def defjvp(prim: Primitive, *rules: Rule | None, broadcasting: bool = False) -> None:
    """Forward rule from one rule per argument: ``rule(t, ans, *primals, **params)``.

    A None rule marks an argument that carries no derivative (indices, conditions).
    """
    def jvp(primals: tuple, tangents: tuple, outs: tuple, **params: Any) -> tuple:
        ans = outs[0]
        total = None
        for rule, t in zip(rules, tangents):
            if rule is None or type(t) is Zero:
                continue
            total = add_any(total, rule(t, ans, *primals, **params))
        if total is None:
            return (Zero.like(ans),)
        if broadcasting:
            total = broadcast_tangent(total, shape_of(ans))
        return (total,)

    prim.jvp = jvp


def defvjp(prim: Primitive, *rules: Rule | None, broadcasting: bool = False) -> None:
    """Reverse rule from one rule per argument: ``rule(g, ans, *primals, **params)``."""
    def vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, **params: Any) -> tuple:
        g = instantiate(cts[0])
        ans = outs[0]
        result = []
        for rule, x, need in zip(rules, primals, needs):
            if rule is None or not need:
                result.append(None)
                continue
            ct = rule(g, ans, *primals, **params)
            if broadcasting:
                ct = unbroadcast(ct, shape_of(x))
            result.append(ct)
        return tuple(result)

    prim.vjp = vjp


def linear(prim: Primitive, transpose: Rule) -> None:
    """Rules of a primitive linear in its first argument.

    JVP: the primitive applied to the tangent. VJP: ``transpose(g, x, **params)``.
    """
    defjvp(prim, lambda t, ans, x, *rest, **p: bind(prim, t, *rest, **p))
    defvjp(prim, lambda g, ans, x, *rest, **p: transpose(g, x, *rest, **p))


def unary(name: str, impl: Callable, deriv: Callable[[Tensor, Tensor], Tensor]) -> Primitive:
    """An elementwise primitive f with f'(x) = ``deriv(ans, x)``.

    Both rules multiply by the derivative: JVP ``t * f'(x)``, VJP ``g * conj(f'(x))``
    (TensorFlow's convention for complex inputs).
    """
    prim = Primitive(name, impl)

    def jvp(t: Tensor, ans: Tensor, x: Tensor) -> Tensor:
        return bind(_REGISTRY["multiply"], t, deriv(ans, x))

    def vjp(g: Tensor, ans: Tensor, x: Tensor) -> Tensor:
        d = deriv(ans, x)
        if d._value.dtype.kind == "c":
            d = bind(_REGISTRY["conj"], d)
        return bind(_REGISTRY["multiply"], g, d)

    defjvp(prim, jvp)
    defvjp(prim, vjp)
    batch_unary(prim)
    return prim


# ---------------------------------------------------------------- argument conversion

def as_tensor(x: Any, op: str, arg: str) -> Tensor:
    """Convert one op argument, naming the op and argument on failure."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Variable):
        return x.value()
    try:
        return convert_to_tensor(x)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: argument `{arg}` could not be converted to a tensor: {e}") from None


def _like(x: Any, other: Tensor, op: str, arg: str) -> Tensor:
    """Convert a non-tensor operand to `other`'s dtype (Python and NumPy scalars adapt)."""
    target = other._value.dtype
    kind = type(x)
    if (kind is float or kind is int) and target.kind in "fc":
        return Tensor(target.type(x))  # the common `t * 2.0`: no array round trip
    try:
        return convert_to_tensor(x, dtype=target)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: argument `{arg}`={x!r} cannot be converted to "
                        f"{_dt.from_numpy(target).name} to match the other operand: {e}") from None


def binary_args(x: Any, y: Any, op: str) -> tuple[Tensor, Tensor]:
    """Operands of a binary op: no implicit promotion between tensors (as TensorFlow)."""
    tx = isinstance(x, _TensorLike)
    ty = isinstance(y, _TensorLike)
    if tx and ty:
        x = x if type(x) is Tensor else x.value()
        y = y if type(y) is Tensor else y.value()
        dx, dy = x._value.dtype, y._value.dtype
        if dx is not dy and dx != dy:
            raise DTypeMismatchError(
                f"{op}: `x` has dtype {_dt.from_numpy(dx).name} and `y` has dtype "
                f"{_dt.from_numpy(dy).name}; tapeflow (like TensorFlow) does not promote "
                "implicitly: use tf.cast.")
        return x, y
    if tx:
        x = x if type(x) is Tensor else x.value()
        return x, _like(y, x, op, "y")
    if ty:
        y = y if type(y) is Tensor else y.value()
        return _like(x, y, op, "x"), y
    x = as_tensor(x, op, "x")
    return x, _like(y, x, op, "y")


def check_dtype(x: Tensor, kinds: str, op: str, arg: str = "x") -> None:
    """Raise if `x`'s dtype kind is not in `kinds` ('f' float, 'c' complex, 'i'/'u' int, 'b' bool)."""
    if x._value.dtype.kind not in kinds:
        names = {"f": "floating", "c": "complex", "i": "signed integer",
                 "u": "unsigned integer", "b": "bool"}
        allowed = ", ".join(names[k] for k in kinds)
        raise InvalidArgumentError(f"{op}: argument `{arg}` has dtype "
                                   f"{_dt.from_numpy(x._value.dtype).name}; expected {allowed}.")


def static_shape(value: Any, op: str, arg: str = "shape") -> tuple[int, ...]:
    """A shape argument (list, array or tensor, read now: shapes are static) as a tuple of
    non-negative ints, or a clear error naming the op and argument."""
    dims = np.asarray(value).reshape(-1)
    if dims.size and dims.dtype.kind not in "iu":
        raise TypeError(f"{op}: `{arg}` must be integers; got {value!r}.")
    if (dims < 0).any():
        raise InvalidArgumentError(f"{op}: `{arg}` must be non-negative; got {value!r}.")
    return tuple(int(d) for d in dims)


def normalize_axis(axis: Any, ndim: int, op: str, arg: str = "axis") -> tuple[int, ...] | None:
    """Axis argument as a sorted tuple of non-negative ints (None stays None)."""
    if axis is None:
        return None
    if isinstance(axis, _TensorLike):
        axis = np.asarray(axis).tolist()
    axes = [axis] if np.ndim(axis) == 0 else list(np.asarray(axis).reshape(-1).tolist())
    out = []
    for a in axes:
        if isinstance(a, float) or not isinstance(a, (int, np.integer)):
            raise TypeError(f"{op}: `{arg}` must be ints; got {axis!r}.")
        a = int(a)
        if not -ndim <= a < ndim:
            raise InvalidArgumentError(f"{op}: `{arg}`={axis!r} is out of range for a tensor "
                                       f"of rank {ndim} (valid: [{-ndim}, {ndim}) ).")
        out.append(a % ndim)
    if len(set(out)) != len(out):
        raise InvalidArgumentError(f"{op}: `{arg}`={axis!r} repeats an axis.")
    return tuple(sorted(out))


# ---------------------------------------------------------------- batching rule families
# A batching rule gets the batched values (or the plain per-example value where an
# input is not batched) and their batch axes (None for unbatched); it returns the
# batched output and the output's batch axis. See tapeflow.batching.

def move_to_front(x: Tensor, d: int | None) -> Tensor:
    """x with its batch axis `d` moved to 0 (a transpose op)."""
    from ..batching import move_axis
    return x if not d else move_axis(x, d, 0)


def batch_size(vals: tuple, dims: tuple) -> int:
    return next(shape_of(v)[d] for v, d in zip(vals, dims) if d is not None)


def align_batched(vals: tuple, dims: tuple, rank: int) -> list:
    """Batched values with the batch on axis 0 and rank `rank` + 1 (1s inserted after the
    batch axis), so NumPy's right-aligned broadcasting pairs them with unbatched values."""
    from .shape import reshape_p

    out = []
    for v, d in zip(vals, dims):
        if d is None:
            out.append(v)
            continue
        v = move_to_front(v, d)
        s = shape_of(v)
        if len(s) - 1 < rank:
            v = bind(reshape_p, v, shape=s[:1] + (1,) * (rank - len(s) + 1) + s[1:])
        out.append(v)
    return out


def batch_elementwise(prim: Primitive) -> None:
    """Batching rule of an n-ary broadcasting elementwise primitive."""
    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        rank = max(len(shape_of(v)) - (d is not None) for v, d in zip(vals, dims))
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
