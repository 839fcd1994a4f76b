"""Einstein summation: the einsum primitive with its rules, the public `einsum` (its
subscript parsing: ellipses, implicit outputs, broadcast size-1 axes) and `tensordot`,
built on it. (Matrix products and views, diag_part and trace among them, which bind
einsum_p: ops/linalg.py.)

einsum's derivative in each operand is another einsum (with the cotangent in place of
that operand), so every order of derivative and vmap stays an einsum, and tensordot is
a composite that needs no rules of its own. einsum's `spec` is explicit and canonical:
letters only, no ellipsis, an output after "->", every label of one size in all
operands (the public `einsum` expands ellipses and squeezes broadcast size-1 axes
before binding).

Complex inputs follow NOTE(complex-gradients) in ops/complex.py: an operand's
cotangent is an einsum with the other operands conjugated.
"""

from __future__ import annotations

import math
import string
from typing import Any

import numpy as np

from ..dtypes import half_in_float32
from .. import blas
from ..catalog import define
from ..core import Primitive, Zero, bind
from ..errors import DTypeMismatchError, InvalidArgumentError
from ..hessian_patterns import MULTILINEAR
from ..patterns import union
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, binary_args, check_dtype, convert_like
from .structural import full_of, add_any, conj_if_complex, instantiate, reshape_p, shape_of

_LETTERS = string.ascii_letters


def _split(spec: str) -> tuple[list[str], str]:
    lhs, out = spec.split("->")
    return lhs.split(","), out


def _fresh(used: str, count: int, why: str) -> list[str]:
    """`count` labels not in `used` (einsum has 52 labels: a-z, A-Z)."""
    free = [c for c in _LETTERS if c not in used]
    if len(free) < count:
        raise InvalidArgumentError(f"einsum: {why} needs {count} more axis labels than the 52 "
                                   "letters left free; use fewer axes.")
    return free[:count]


# ------------------------------------------------------------------ einsum
def _einsum_impl(*operands: np.ndarray, spec: str) -> np.ndarray:
    # Pairwise contraction through BLAS (optimize=True) pays a path search of tens of
    # microseconds: worth it for three or more operands or for large ones only.
    big = len(operands) > 2 or sum(np.size(o) for o in operands) > 4096
    # The naive contraction's multiply-adds (every label's size, once) bound each BLAS
    # product of the path: small ones run on one thread (NOTE(blas-threads)).
    sizes = {}
    for sub, o in zip(spec.split("->")[0].split(","), operands, strict=True):
        sizes.update(zip(sub, np.shape(o), strict=True))
    out = blas.sized(math.prod(sizes.values()), np.einsum, spec, *operands, optimize=big)
    return np.asarray(out)[()]  # rank 0: a NumPy scalar


def _einsum_cotangent(g: Tensor, primals: tuple, spec: str, k: int) -> Tensor:
    """Cotangent of operand k: an einsum of g with the (conjugated) other operands.

    Labels repeated in operand k (diagonals, traces) get a fresh label per extra
    occurrence, tied to the first by an identity matrix; labels of operand k found
    nowhere else (summed out) are broadcast back by a vector of ones.
    """
    ins, out = _split(spec)
    sub, shape = ins[k], shape_of(primals[k])
    dtype = np.result_type(g._value.dtype, primals[k]._value.dtype)
    repeats = len(sub) - len(set(sub))
    fresh = iter(_fresh(spec, repeats, "the derivative of a repeated label"))
    target, extra_subs, extra_ops, seen = [], [], [], set()
    for label, n in zip(sub, shape, strict=True):
        if label in seen:
            f = next(fresh)
            target.append(f)
            extra_subs.append(label + f)
            extra_ops.append(Tensor(np.eye(n, dtype=dtype)))
        else:
            seen.add(label)
            target.append(label)
    elsewhere = set(out).union(*[ins[j] for j in range(len(ins)) if j != k], *extra_subs)
    for label, n in zip(sub, shape, strict=True):
        if label not in elsewhere:
            elsewhere.add(label)
            extra_subs.append(label)
            extra_ops.append(full_of((n,), 1, dtype))
    others = [j for j in range(len(ins)) if j != k]
    operands = [g] + [conj_if_complex(primals[j]) for j in others] + extra_ops
    subs = [out] + [ins[j] for j in others] + extra_subs
    return bind(einsum_p, *operands, spec=",".join(subs) + "->" + "".join(target))


def _einsum_jvp(tangents: tuple, outs: tuple, primals: tuple, spec: str) -> tuple:
    # Multilinear: d einsum(x1..xn) = sum_k einsum(x1, .., dxk, .., xn).
    total = None
    for k, t in enumerate(tangents):
        if type(t) is Zero:
            continue
        args = list(primals)
        args[k] = t
        total = add_any(total, bind(einsum_p, *args, spec=spec))
    return (Zero.like(outs[0]) if total is None else total,)


def _einsum_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, spec: str) -> tuple:
    # x_k's cotangent: einsum(g, conj(x_j) for j != k) back to x_k's labels (see above).
    g = instantiate(cts[0])
    return tuple(_einsum_cotangent(g, primals, spec, k) if need else None
                 for k, need in enumerate(needs))


def _einsum_batch(vals: tuple, dims: tuple, spec: str) -> tuple:
    # The batch axis gets a label of its own, where it already is: no transposes.
    ins, out = _split(spec)
    (b,) = _fresh(spec, 1, "vmap")
    subs = [s if d is None else s[:d] + b + s[d:] for s, d in zip(ins, dims, strict=True)]
    return bind(einsum_p, *vals, spec=",".join(subs) + "->" + b + out), 0


def _einsum_deps(pats: tuple, vals: tuple, outs: tuple, spec: str) -> tuple:
    # An output element depends on the elements of each operand that agree with it on the
    # operand's output labels, over every value of the summed ones. A label repeated within
    # one term (a diagonal) is over-approximated: the whole operand.
    subs, target = _split(spec)
    shape = outs[0].shape
    parts = []
    for p, sub in zip(pats, subs, strict=True):
        if p is None:
            continue
        if len(set(sub)) < len(sub) or len(set(target)) < len(target):
            parts.append((p.reduce(None, False), np.zeros(shape, np.int64)))
            continue
        kept = p.reduce(tuple(i for i, c in enumerate(sub) if c not in target), False)
        labels = [c for c in sub if c in target]
        numbered = np.arange(kept.size).reshape(kept.shape)
        numbered = np.transpose(numbered, [labels.index(c) for c in target if c in labels])
        placed = iter(numbered.shape)
        numbered = numbered.reshape([next(placed) if c in labels else 1 for c in target])
        parts.append((kept, np.broadcast_to(numbered, shape)))
    return (union(parts, shape),)


# The VJP reads every operand (the others, conjugated, into each one's cotangent): no
# `reads` (an einsum takes any number of operands).
einsum_p = define(
    Primitive("einsum", half_in_float32(_einsum_impl)),
    jvp=_einsum_jvp, vjp=_einsum_vjp, batch=_einsum_batch, sparsity=_einsum_deps,
    lower=lambda jax, *operands, spec: jax.numpy.einsum(
        spec, *operands, precision=jax.lax.Precision.HIGHEST), curvature=MULTILINEAR)


def _operands(inputs: tuple, op: str) -> list[Tensor]:
    """All operands in one dtype (TensorFlow's no-promotion rule); non-tensors adapt."""
    ts = [as_tensor(x, op, f"inputs[{i}]") if isinstance(x, TensorBase) else None
          for i, x in enumerate(inputs)]
    first = next((t for t in ts if t is not None), None)
    out = [t if t is not None else as_tensor(x, op, f"inputs[{i}]") if first is None
           else convert_like(x, first, op, f"inputs[{i}]") for i, (x, t) in enumerate(zip(inputs, ts, strict=True))]
    for i, t in enumerate(out):
        if t._value.dtype != out[0]._value.dtype:
            raise DTypeMismatchError(f"{op}: inputs[0] has dtype {out[0].dtype.name} and "
                                     f"inputs[{i}] has dtype {t.dtype.name}; all operands "
                                     "must share one dtype (use tf.cast).")
        check_dtype(t, "fciu", op, f"inputs[{i}]")
    return out


def _parse_subscripts(sub: str, where: str) -> tuple[str, str | None]:
    """(labels before '...', labels after '...') or (labels, None) without ellipsis."""
    if sub.count("...") > 1:
        raise InvalidArgumentError(f"einsum: {where} {sub!r} has more than one ellipsis.")
    head, _, tail = sub.partition("...")
    for c in head + tail:
        if c not in _LETTERS:
            raise InvalidArgumentError(f"einsum: {where} {sub!r} contains {c!r}; labels must "
                                       "be letters (a-z, A-Z), with at most one '...'.")
    return (head, tail) if "..." in sub else (sub, None)


def _explicit_einsum(equation: str, shapes: list[tuple]) -> tuple[str, list[tuple]]:
    """An explicit spec for `equation` and, per operand, the size-1 axes to squeeze
    (ellipsis axes that broadcast against a longer one)."""
    eq = "".join(equation.split())
    if eq.count("->") > 1:
        raise InvalidArgumentError(f"einsum: equation {equation!r} has more than one '->'.")
    lhs, arrow, rhs = eq.partition("->")
    subs = lhs.split(",")
    if len(subs) != len(shapes):
        raise InvalidArgumentError(f"einsum: equation {equation!r} names {len(subs)} operand(s) "
                                   f"but {len(shapes)} input(s) were given.")
    parsed = [_parse_subscripts(s, f"the subscripts of inputs[{i}]") for i, s in enumerate(subs)]
    named = "".join(h + (t or "") for h, t in parsed)
    ell_ranks = []
    for i, ((head, tail), shape) in enumerate(zip(parsed, shapes, strict=True)):
        n = len(head) + len(tail or "")
        if (tail is None and n != len(shape)) or len(shape) < n:
            raise InvalidArgumentError(f"einsum: inputs[{i}] has rank {len(shape)} (shape "
                                       f"{shape}) but its subscripts {subs[i]!r} name {n} axes.")
        ell_ranks.append(len(shape) - n)
    n_ell = max(ell_ranks)
    ell = _fresh(named + rhs, n_ell, "the ellipsis")
    # Broadcast the ellipsis axes (right-aligned), remembering size-1 axes that stretch.
    ell_size = [1] * n_ell
    for (head, tail), shape, r in zip(parsed, shapes, ell_ranks, strict=True):
        for j, n in enumerate(shape[len(head):len(head) + r]):
            pos = n_ell - r + j
            if n != 1 and ell_size[pos] not in (1, n):
                raise InvalidArgumentError(f"einsum: the '...' axes of the inputs do not "
                                           f"broadcast: shapes {shapes}, equation {equation!r}.")
            ell_size[pos] = max(ell_size[pos], n)
    sizes: dict[str, int] = {}
    explicit, squeezes = [], []
    for i, ((head, tail), shape, r) in enumerate(zip(parsed, shapes, ell_ranks, strict=True)):
        labels, drop = [], []
        for axis, n in enumerate(shape):
            if axis < len(head):
                label = head[axis]
            elif axis < len(head) + r:
                pos = n_ell - r + axis - len(head)
                if n == 1 and ell_size[pos] != 1:
                    drop.append(axis)
                    continue
                label = ell[pos]
            else:
                label = tail[axis - len(head) - r]
            if sizes.setdefault(label, n) != n:
                raise InvalidArgumentError(f"einsum: label {label!r} has size {sizes[label]} in "
                                           f"one place and {n} in inputs[{i}] (shapes {shapes}, "
                                           f"equation {equation!r}).")
            labels.append(label)
        explicit.append("".join(labels))
        squeezes.append(tuple(drop))
    if arrow:
        head, tail = _parse_subscripts(rhs, "the output subscripts")
        if tail is None and n_ell:
            raise InvalidArgumentError(f"einsum: the inputs have {n_ell} '...' axes but the "
                                       f"output subscripts {rhs!r} have no ellipsis.")
        out = head + ("".join(ell) if tail is not None else "") + (tail or "")
        for c in out:
            if out.count(c) > 1:
                raise InvalidArgumentError(f"einsum: output label {c!r} is repeated in {rhs!r}.")
            if c not in named and c not in ell:
                raise InvalidArgumentError(f"einsum: output label {c!r} appears in no input "
                                           f"subscripts ({lhs!r}).")
    else:  # implicit mode: labels seen exactly once, in alphabetical order
        out = "".join(ell) + "".join(sorted(c for c in set(named) if named.count(c) == 1))
    return ",".join(explicit) + "->" + out, squeezes


def einsum(equation: str, *inputs: Any, **kwargs: Any) -> Tensor:
    """Einstein summation: multiply `inputs` along shared labels and sum the labels
    missing from the output, as `tf.einsum`.

    Labels are letters; a label repeated within one operand takes its diagonal
    (``"ii->i"``, ``"ii->"`` is the trace); ``...`` stands for broadcast
    (batch) axes; without ``->`` the output is the labels used once, sorted.
    Any number of operands. The gradient with respect to each operand is itself
    an einsum, so every order of derivative and vmap work. ``optimize`` is
    accepted and ignored (NumPy chooses the contraction order).

    Example:
        >>> import tapeflow as tf
        >>> a = tf.constant([[1., 2.], [3., 4.]])
        >>> tf.einsum("ij,jk->ik", a, a).numpy()
        array([[ 7., 10.],
               [15., 22.]], dtype=float32)
        >>> tf.einsum("ii", a).numpy()
        np.float32(5.0)
    """
    unknown = set(kwargs) - {"name", "optimize"}
    if unknown:
        raise TypeError(f"einsum: unexpected keyword argument(s) {sorted(unknown)}; accepted: "
                        "name, optimize.")
    if not isinstance(equation, str):
        raise TypeError(f"einsum: `equation` must be a string; got {type(equation).__name__}.")
    if not inputs:
        raise InvalidArgumentError("einsum: no inputs were given.")
    ops = _operands(inputs, "einsum")
    spec, squeezes = _explicit_einsum(equation, [shape_of(t) for t in ops])
    for i, drop in enumerate(squeezes):
        if drop:
            shape = tuple(n for a, n in enumerate(shape_of(ops[i])) if a not in drop)
            ops[i] = bind(reshape_p, ops[i], shape=shape)
    return bind(einsum_p, *ops, spec=spec)


# ------------------------------------------------------------------ tensordot
def _tensordot_axes(axes: Any, ra: int, rb: int) -> tuple[list[int], list[int]]:
    if isinstance(axes, TensorBase):
        axes = axes.numpy().tolist()
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        n = int(axes)
        if not 0 <= n <= min(ra, rb):
            raise InvalidArgumentError(f"tensordot: `axes`={n} must lie in [0, {min(ra, rb)}] "
                                       f"for inputs of ranks {ra} and {rb}.")
        return list(range(ra - n, ra)), list(range(n))
    if not isinstance(axes, (list, tuple)) or len(axes) != 2:
        raise InvalidArgumentError(f"tensordot: `axes` must be an int or a pair [a_axes, b_axes]; "
                                   f"got {axes!r}.")
    pair = [[x] if np.ndim(x) == 0 else list(np.asarray(x).reshape(-1).tolist()) for x in axes]
    if len(pair[0]) != len(pair[1]):
        raise InvalidArgumentError(f"tensordot: `axes` pairs {len(pair[0])} axes of `a` with "
                                   f"{len(pair[1])} axes of `b`; the counts must match.")
    out = []
    for arg, lst, r in (("a", pair[0], ra), ("b", pair[1], rb)):
        fixed = []
        for x in lst:
            if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
                raise TypeError(f"tensordot: `axes` must hold ints; got {x!r} for `{arg}`.")
            if not -r <= x < r:
                raise InvalidArgumentError(f"tensordot: axis {x} is out of range for `{arg}` of "
                                           f"rank {r}.")
            fixed.append(int(x) % r)
        if len(set(fixed)) != len(fixed):
            raise InvalidArgumentError(f"tensordot: `axes` repeats an axis of `{arg}`: {lst}.")
        out.append(fixed)
    return out[0], out[1]


def tensordot(a: Any, b: Any, axes: Any, name: str | None = None) -> Tensor:
    """Sum the products of `a` and `b` over the axes paired by `axes`, as `tf.tensordot`.

    `axes` is an int N (the last N axes of `a` with the first N of `b`; 0 is the
    outer product) or a pair ``[a_axes, b_axes]`` of ints or lists. The result's
    axes are the free axes of `a`, then those of `b`, each in order. Built on einsum.

    Example:
        >>> import tapeflow as tf
        >>> a, b = tf.ones([2, 3, 4]), tf.ones([4, 3, 5])
        >>> tf.tensordot(a, b, axes=[[1, 2], [1, 0]]).shape
        TensorShape([2, 5])
    """
    a, b = binary_args(a, b, "tensordot")
    check_dtype(a, "fciu", "tensordot", "a")
    sa, sb = shape_of(a), shape_of(b)
    if len(sa) + len(sb) > len(_LETTERS):
        raise InvalidArgumentError(f"tensordot: ranks {len(sa)} + {len(sb)} exceed 52 axes.")
    a_axes, b_axes = _tensordot_axes(axes, len(sa), len(sb))
    for i, j in zip(a_axes, b_axes, strict=True):
        if sa[i] != sb[j]:
            raise InvalidArgumentError(f"tensordot: axis {i} of `a` (shape {sa}) has size {sa[i]} "
                                       f"but axis {j} of `b` (shape {sb}) has size {sb[j]}.")
    la = _LETTERS[:len(sa)]
    free_b = iter(_LETTERS[len(sa):])
    lb = "".join(la[a_axes[b_axes.index(j)]] if j in b_axes else next(free_b)
                 for j in range(len(sb)))
    out = "".join(la[i] for i in range(len(sa)) if i not in a_axes) + \
        "".join(lb[j] for j in range(len(sb)) if j not in b_axes)
    return bind(einsum_p, a, b, spec=f"{la},{lb}->{out}")


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {"einsum": "tf linalg", "tensordot": "tf linalg"}
