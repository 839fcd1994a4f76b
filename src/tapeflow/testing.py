"""check_grads: the numeric derivative checker the test suite uses, public for users.

It checks a function's forward-mode JVP and reverse-mode VJP against central
finite differences along random directions, checks that the two modes agree
(``<u, J v>`` computed both ways), and, for ``order >= 2``, repeats all of that
on the derivative functions themselves (forward-over-forward, forward-over-
reverse, reverse-over-reverse through nested tapes).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from . import nest
from .forward import ForwardAccumulator
from .tape import GradientTape
from .tensor import Tensor, TensorBase

__all__ = ["check_grads", "numerical_jvp"]

_DEFAULT_TOL = {np.dtype(np.float64): (1e-5, 1e-6), np.dtype(np.float32): (2e-2, 1e-3),
                np.dtype(np.float16): (1e-1, 1e-1)}
_DEFAULT_EPS = {np.dtype(np.float64): 1e-6, np.dtype(np.float32): 1e-3,
                np.dtype(np.float16): 1e-2}


def _as_tensors(args: Sequence[Any]) -> list[Tensor]:
    return [a if isinstance(a, TensorBase) else Tensor(np.asarray(a)) for a in args]


def _outputs(f: Callable, args: list) -> list[Tensor]:
    return [o if isinstance(o, TensorBase) else Tensor(np.asarray(o)) for o in nest.flatten(f(*args))]


def _dot(a: Sequence[Any], b: Sequence[Any]) -> float:
    return float(sum(np.vdot(np.asarray(x, np.float64), np.asarray(y, np.float64))
                     for x, y in zip(a, b, strict=True)))


def numerical_jvp(f: Callable, args: Sequence[Any], tangents: Sequence[Any],
                  eps: float | None = None) -> list[np.ndarray]:
    """Central finite difference (f(x + eps v) - f(x - eps v)) / (2 eps), per output.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> d = tf.testing.numerical_jvp(tf.sin, [np.array([0.0])], [np.array([1.0])])
        >>> np.round(d[0], 6)
        array([1.])
    """
    xs = [np.asarray(a) for a in args]
    eps = eps if eps is not None else _DEFAULT_EPS.get(xs[0].dtype, 1e-6)
    plus = [Tensor((x + eps * np.asarray(t)).astype(x.dtype)) for x, t in zip(xs, tangents, strict=True)]
    minus = [Tensor((x - eps * np.asarray(t)).astype(x.dtype)) for x, t in zip(xs, tangents, strict=True)]
    hi, lo = _outputs(f, plus), _outputs(f, minus)
    return [(np.asarray(h, np.float64) - np.asarray(l, np.float64)) / (2 * eps)
            for h, l in zip(hi, lo, strict=True)]


def _close(what: str, got: Any, want: Any, atol: float, rtol: float) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    if not np.allclose(got, want, atol=atol, rtol=rtol, equal_nan=True):
        err = np.max(np.abs(got - want)) if got.size else 0.0
        raise AssertionError(f"check_grads: {what} mismatch (max abs error {err:.3g}, atol={atol}, "
                             f"rtol={rtol}).\n  got:  {got}\n  want: {want}")


def _jvp(f: Callable, args: list, tangents: list) -> list:
    with ForwardAccumulator(args, [Tensor(t) for t in tangents]) as acc:
        outs = _outputs(f, args)
    return [np.zeros(np.shape(o), np.float64) if j is None else np.asarray(j)
            for o, j in zip(outs, acc.jvp(outs), strict=True)]


def _vjp(f: Callable, args: list, cotangents: list) -> list:
    with GradientTape() as tape:
        tape.watch(args)
        outs = _outputs(f, args)
    grads = tape.gradient(outs, args, output_gradients=[Tensor(u) for u in cotangents])
    return [np.zeros(np.shape(a), np.float64) if g is None else np.asarray(g)
            for a, g in zip(args, grads, strict=True)]


def check_grads(f: Callable, args: Sequence[Any], order: int = 1,
                modes: Sequence[str] = ("fwd", "rev"), atol: float | None = None,
                rtol: float | None = None, eps: float | None = None, seed: int = 0) -> None:
    """Check `f`'s derivatives at `args` against finite differences; raise AssertionError if off.

    For random tangents v and cotangents u: the forward JVP against the
    central difference of f along v, ``<J^T u, v>`` from the tape against
    ``<u, FD(v)>``, and the two modes against each other. With ``order >= 2``
    the same checks run on the JVP and VJP functions, so second derivatives
    (nested tapes, forward-over-reverse) are checked too. Use float64 inputs.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.testing.check_grads(lambda x: tf.sin(x) * x, [np.array([0.5, 1.5])], order=2)
    """
    xs = _as_tensors(args)
    dtype = xs[0]._value.dtype
    default_atol, default_rtol = _DEFAULT_TOL.get(dtype, (1e-5, 1e-6))
    atol = default_atol if atol is None else atol
    rtol = default_rtol if rtol is None else rtol
    rng = np.random.default_rng(seed)
    vs = [rng.standard_normal(np.shape(x._value)).astype(x._value.dtype) for x in xs]
    outs = _outputs(f, xs)
    us = [rng.standard_normal(np.shape(o._value)).astype(o._value.dtype) for o in outs]
    fd = numerical_jvp(f, [x._value for x in xs], vs, eps)
    jv = vjp = None
    if "fwd" in modes:
        jv = _jvp(f, xs, vs)
        for i, (got, want) in enumerate(zip(jv, fd, strict=True)):
            _close(f"JVP of output {i} vs finite differences", got, want, atol, rtol)
    if "rev" in modes:
        vjp = _vjp(f, xs, us)
        scale = 1 + abs(_dot(us, fd))
        _close("<VJP(u), v> vs <u, finite differences>", _dot(vjp, vs), _dot(us, fd),
               atol * scale, rtol)
    if jv is not None and vjp is not None:
        scale = 1 + abs(_dot(us, jv))
        _close("<u, JVP(v)> vs <VJP(u), v>", _dot(us, jv), _dot(vjp, vs), atol * scale * 1e-2, rtol)
    if order > 1:
        frozen_vs = [Tensor(v) for v in vs]
        frozen_us = [Tensor(u) for u in us]
        if "fwd" in modes:
            def jvp_fn(*a: Any) -> Any:
                with ForwardAccumulator(list(a), frozen_vs) as acc:
                    o = _outputs(f, list(a))
                return [j if j is not None else Tensor(np.zeros_like(oo._value))
                        for oo, j in zip(o, acc.jvp(o), strict=True)]
            check_grads(jvp_fn, xs, order - 1, modes, atol, rtol, eps, seed + 1)
        if "rev" in modes:
            def vjp_fn(*a: Any) -> Any:
                with GradientTape() as tape:
                    tape.watch(list(a))
                    o = _outputs(f, list(a))
                g = tape.gradient(o, list(a), output_gradients=frozen_us)
                return [gi if gi is not None else Tensor(np.zeros_like(ai._value))
                        for ai, gi in zip(a, g, strict=True)]
            check_grads(vjp_fn, xs, order - 1, modes, atol, rtol, eps, seed + 2)
