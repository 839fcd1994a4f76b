"""Gamma and Poisson draws (tf.random.gamma, poisson, stateless_gamma, stateless_poisson)
and the derivative of a gamma draw in its concentration.

NOTE(seeded-draws): a draw here is a pure function of a seed (an integer pair) and its
parameter: `random_gamma(seed, alpha)` and `random_poisson(seed, lam)` seed a NumPy
generator with it and draw (NumPy's standard_gamma and poisson, exact samplers). The
stateful ops draw that seed from tf.random's sequences (a `random_uniform_int` draw,
NOTE(draws) in ops/random.py), so `set_seed`, traced functions (a new seed at each
replay), vmap (a seed per example), XLA's host draws and SavedModels treat them as every
draw, with no stateful primitive of their own; the stateless ops take the caller's seed.
Both primitives take `lead` leading axes shared by the seed and the parameter, one
example each (what their batching rule adds), so a batch holds each example's numbers.

NOTE(implicit-gamma-gradient): a gamma sample x of concentration a moves with a as the
quantile of its fixed probability P(a, x) does (P the regularized lower incomplete gamma
function, the distribution's CDF): dx/da = -(dP/da) / p(a, x), p = dP/dx the density,
TensorFlow's RandomGammaGrad (Figurnov et al.'s implicit reparameterization). The rate
beta divides standard samples, so its gradient comes from the division. The primitive
`random_gamma_grad(a, x; order=k)` is D_k = -(d^k P / da^k) / p; D_1 is that derivative,
and D_k's own derivatives are D_(k+1) and elementary functions:
    dD_k/da = D_(k+1) - D_k (log x - digamma(a)),
    dD_k/dx = -B_k - D_k ((a - 1) / x - 1),
B_k = (d^k p / da^k) / p, the complete Bell polynomial of log x - digamma(a) and
-polygamma(j, a), j >= 1. So draws have derivatives of every order in a (TensorFlow stops
at the first). D_k is computed from Taylor coefficients in a carried through the power
series of P (x < a + 1) or Legendre's continued fraction of Q = 1 - P (above), in float64,
each side divided by the density analytically (P / p = x S / a, Q / p = x f), so nothing
overflows or underflows where p does.

Poisson draws have no derivative (integer values; TensorFlow registers none).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, Hints, Lowering, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..patterns import elementwise_deps
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, static_shape
from .elementwise import (add, divide, greater, is_finite, logical_and, maximum, multiply, negative,
                          subtract, where)
from .random import _seed_tensor, _seeds, uniform_int_p
from .reduction import reduce_sum
from .shape import broadcast_to, reshape
from .structural import batch_elementwise, move_to_front, per_input, shape_of
from .transcendental import digamma, digamma_p, lgamma_p, log, polygamma, polygamma_p

_EPS = 1e-17  # a term this small relative to the sum changes no float64 digit
_MAX_TERMS = 200_000  # ~9 sqrt(a) terms near x = a: enough for a up to ~5e8


# ---------------------------------------------------------------- Taylor coefficients in a
# A "jet" is an array [k + 1, n]: row m holds the m-th Taylor coefficient in a (the m-th
# derivative / m!) of n values at once.
def _times_linear(jet: np.ndarray, c0: Any, c1: Any) -> np.ndarray:
    """jet * (c0 + c1 e)."""
    out = jet * c0
    out[1:] += c1 * jet[:-1]
    return out


def _jet_div(num: np.ndarray, den: np.ndarray) -> np.ndarray:
    out = np.empty_like(num)
    for m in range(len(num)):
        acc = num[m] - sum(den[i] * out[m - i] for i in range(1, m + 1))
        out[m] = acc / den[0]
    return out


def _jet_log(f: np.ndarray) -> np.ndarray:
    out = np.empty_like(f)
    out[0] = np.log(f[0])
    for m in range(1, len(f)):
        acc = f[m] - sum((i / m) * out[i] * f[m - i] for i in range(1, m))
        out[m] = acc / f[0]
    return out


def _jet_exp_shifted(g: np.ndarray) -> np.ndarray:
    """exp(g - g[0]): the coefficients of exp(g) relative to its value."""
    out = np.zeros_like(g)
    out[0] = 1.0
    for m in range(1, len(g)):
        out[m] = sum(i * g[i] * out[m - i] for i in range(1, m + 1)) / m
    return out


def _settled(step: np.ndarray, total: np.ndarray, eps: float = _EPS) -> np.ndarray:
    # A coefficient near 0 is measured against the value's own scale.
    scale = np.maximum(np.abs(total), 1e-8 * np.abs(total[:1]))
    return np.all(np.abs(step) <= eps * scale, axis=0)


def _series(a: np.ndarray, x: np.ndarray, k: int) -> np.ndarray:
    """S = sum_n x^n / ((a + 1) ... (a + n)), P(a, x) = x^a e^-x S / Gamma(a + 1), as a jet."""
    total = np.zeros((k + 1, a.size))
    total[0] = 1.0
    live, al, xl, term, acc = np.arange(a.size), a, x, total.copy(), total.copy()
    for j in range(1, _MAX_TERMS):
        if not live.size:
            return total
        q = 1.0 / (al + j)
        for m in range(1, k + 1):  # term / (1 + q e): the geometric series, row by row
            term[m] -= q * term[m - 1]
        term *= xl * q  # terms fall from the first on: x / (a + j) < 1 when x < a + 1
        acc += term
        done = _settled(term, acc)
        if done.any():
            total[:, live[done]] = acc[:, done]
            keep = ~done
            live, al, xl, term, acc = live[keep], al[keep], xl[keep], term[:, keep], acc[:, keep]
    total[:, live] = np.nan
    return total


def _fraction(a: np.ndarray, x: np.ndarray, k: int) -> np.ndarray:
    """Legendre's continued fraction f = 1 / (x + 1 - a - 1 (1 - a) / (x + 3 - a - 2 (2 - a) /
    (x + 5 - a - ...))), Q(a, x) = x^a e^-x f / Gamma(a), as a jet, by the recurrence of its
    convergents A_n / B_n (both rescaled at each step; their ratio is unchanged)."""
    n = a.size
    a_prev, b_prev, a_cur, b_cur = (np.zeros((k + 1, n)) for _ in range(4))
    b_prev[0] = a_cur[0] = 1.0
    b_cur[0] = x + 1.0 - a
    if k:
        b_cur[1] = -1.0
    ratio = _jet_div(a_cur, b_cur)
    total = np.empty((k + 1, n))
    live, al, xl, since = np.arange(n), a, x, np.full(n, np.inf)
    floors = 30.0 ** np.arange(k + 1)[:, None]  # the coefficients' rounding floors (below)
    for i in range(1, _MAX_TERMS):
        if not live.size:
            return total
        c0, d0 = -i * (i - al), xl + (2 * i + 1) - al  # -i (i - a) and x + 2i + 1 - a
        a_new = _times_linear(a_cur, d0, -1.0) + _times_linear(a_prev, c0, float(i))
        b_new = _times_linear(b_cur, d0, -1.0) + _times_linear(b_prev, c0, float(i))
        s = 1.0 / np.where(b_new[0] == 0, 1.0, np.abs(b_new[0]))
        a_prev, b_prev, a_cur, b_cur = a_cur * s, b_cur * s, a_new * s, b_new * s
        new = _jet_div(a_cur, b_cur)
        # Convergents' differences fall geometrically to a floor of rounding, each higher
        # coefficient's floor about 30 times the one below (the division's cancellations).
        # The value may settle long before its coefficients (an integer a ends the value's
        # fraction, not theirs); should a coefficient never reach its floor, it stops at
        # thrice the value's steps.
        step = np.abs(new - ratio)
        since = np.where((since == np.inf) & (step[0] <= 1e-15 * new[0]), i, since)
        ratio = new
        done = _settled(step / floors, new, 1e-15) | (i >= 3 * since + 50)
        if done.any():
            total[:, live[done]] = ratio[:, done]
            keep = ~done
            live, al, xl, ratio, since = live[keep], al[keep], xl[keep], ratio[:, keep], since[keep]
            a_prev, b_prev, a_cur, b_cur = (v[:, keep] for v in (a_prev, b_prev, a_cur, b_cur))
    total[:, live] = np.nan
    return total


def _log_jet(a: np.ndarray, x: np.ndarray, k: int) -> tuple:
    """For 0 < x < inf, a > 0 (float64 vectors): where the series side applies (x < a + 1),
    the jet of log P there and of log Q elsewhere (row 0: log S or log f only), and P / p
    there, Q / p elsewhere."""
    lower = x < a + 1
    jet, ratio = np.empty((k + 1, a.size)), np.empty(a.size)
    if lower.any():
        s = _series(a[lower], x[lower], k)
        jet[:, lower], ratio[lower] = _jet_log(s), x[lower] * s[0] / a[lower]
    if not lower.all():
        f = _fraction(a[~lower], x[~lower], k)
        jet[:, ~lower], ratio[~lower] = _jet_log(f), x[~lower] * f[0]
    base = np.where(lower, a + 1.0, a)  # log P holds -lgamma(a + 1), log Q -lgamma(a)
    if k:
        jet[1] += np.log(x) - digamma_p.impl(base)
    for m in range(2, k + 1):
        jet[m] -= polygamma_p.impl(np.full_like(base, m - 1), base) / math.factorial(m)
    return lower, jet, ratio


def _igamma(a: np.ndarray, x: np.ndarray, upper: bool = False) -> np.ndarray:
    """The regularized lower incomplete gamma function P(a, x), or Q = 1 - P with `upper`
    (each accurate where it is the smaller), for a > 0, 0 < x < inf."""
    a, x, upper = np.broadcast_arrays(np.asarray(a, np.float64), np.asarray(x, np.float64),
                                      upper)
    shape, a, x, upper = a.shape, a.ravel(), x.ravel(), upper.ravel()
    lower, jet, _ = _log_jet(a, x, 0)
    with np.errstate(under="ignore"):
        e = np.exp(a * np.log(x) - x - lgamma_p.impl(np.where(lower, a + 1.0, a)) + jet[0])
    return np.where(lower != upper, e, 1.0 - e).reshape(shape)


def _gamma_grad_impl(alpha: np.ndarray, sample: np.ndarray, order: int) -> np.ndarray:
    """D_order(alpha, sample) = -(d^order P / dalpha^order) / p, in float64, then the
    inputs' dtype; 0 at a sample of 0 or inf, NaN off the domain (TensorFlow's values)."""
    a, x = np.broadcast_arrays(np.asarray(alpha, np.float64), np.asarray(sample, np.float64))
    out = np.full(a.shape, np.nan)
    with np.errstate(invalid="ignore"):
        valid = (a > 0) & (a < np.inf) & (x >= 0)
        edge = valid & ((x == 0) | (x == np.inf))
    out[edge] = 0.0
    inner = valid & ~edge
    if inner.any():
        with np.errstate(over="ignore", under="ignore"):
            lower, jet, ratio = _log_jet(a[inner], x[inner], order)
            coef = _jet_exp_shifted(jet)[order] * math.factorial(order)
            out[inner] = np.where(lower, -coef, coef) * ratio
    return out.astype(np.result_type(alpha, sample), copy=False)[()]


def _on_host(impl: Any, result: Any) -> Any:
    """A lowering that runs the NumPy impl on the host (jax.pure_callback), so compiled calls
    give the eager numbers; `result(shapes, dtypes, **params)` is the output's shape and
    dtype."""
    def lower(jax: Any, *args: Any, **params: Any) -> Any:
        shape, dtype = result([a.shape for a in args], [a.dtype for a in args], **params)
        return jax.pure_callback(
            lambda *xs: np.asarray(impl(*(np.asarray(v) for v in xs), **params), dtype),
            jax.ShapeDtypeStruct(tuple(shape), dtype), *args)
    return lower


# ---------------------------------------------------------------- random_gamma_grad
def _safe_sample(x: Tensor) -> tuple:
    """Where x is 0 or inf (D_k is 0 there), 1 in its place, so that no rule computes
    log 0 or 1 / 0 (whose derivatives would turn a zero cotangent into NaN)."""
    inside = logical_and(greater(x, 0), is_finite(x))
    return inside, where(inside, x, Tensor(np.ones((), x._value.dtype)))


def _d_alpha(ans: Tensor, alpha: Tensor, sample: Tensor, order: int) -> Tensor:
    _, x = _safe_sample(sample)
    return subtract(bind(gamma_grad_p, alpha, sample, order=order + 1),
                    multiply(ans, subtract(log(x), digamma(alpha))))


def _d_sample(ans: Tensor, alpha: Tensor, sample: Tensor, order: int) -> Tensor:
    inside, x = _safe_sample(sample)
    dt = alpha._value.dtype
    d = [None, subtract(log(x), digamma(alpha))]  # the derivatives of log p in alpha
    d += [negative(polygamma(Tensor(np.asarray(j - 1, dt)), alpha)) for j in range(2, order + 1)]
    bell: list = [None]  # B_0 = 1
    for n in range(order):  # B_(n+1) = sum_i C(n, i) B_(n-i) d_(i+1)
        terms = [d[i + 1] if n == i else multiply(bell[n - i], d[i + 1]) for i in range(n + 1)]
        terms = [t if math.comb(n, i) == 1 else multiply(t, float(math.comb(n, i)))
                 for i, t in enumerate(terms)]
        bell.append(functools.reduce(add, terms))
    # D_k p_x / p = D_k ((a - 1) / x - 1), with D_k / x first: D_k is near x where x is tiny
    # (a draw below the smallest normal number), and (a - 1) / x would overflow.
    scaled = subtract(multiply(divide(ans, x), subtract(alpha, 1.0)), ans)
    value = negative(add(bell[order], scaled))
    return where(inside, value, Tensor(np.zeros((), dt)))


# D_k(a, x): dD_k/da = D_(k+1) - D_k (log x - digamma a); dD_k/dx = -B_k - D_k ((a-1)/x - 1)
gamma_grad_p = define(
    Primitive("random_gamma_grad", _gamma_grad_impl),
    per_input(jvp=(lambda t, ans, alpha, sample, order: multiply(t, _d_alpha(ans, alpha, sample,
                                                                             order)),
                   lambda t, ans, alpha, sample, order: multiply(t, _d_sample(ans, alpha, sample,
                                                                              order))),
              vjp=(lambda g, ans, alpha, sample, order: multiply(g, _d_alpha(ans, alpha, sample,
                                                                             order)),
                   lambda g, ans, alpha, sample, order: multiply(g, _d_sample(ans, alpha, sample,
                                                                              order))),
              reads=("ans alpha sample", "ans alpha sample"), broadcasting=True),
    batch_elementwise,
    sparsity=elementwise_deps, passes=Hints(elementwise=True),
    lower=_on_host(_gamma_grad_impl, lambda shapes, dtypes, order: (
        np.broadcast_shapes(*shapes), np.result_type(*dtypes))))



# ---------------------------------------------------------------- the seeded draws
def _per_seed(seed: np.ndarray, param: np.ndarray, shape: tuple, lead: int, draw: Any
              ) -> np.ndarray:
    """draw(generator, parameter, size) for each example (the first `lead` axes of `seed`
    [..., 2] and `param`), each with a NumPy generator seeded with its seed pair."""
    rest = param.shape[lead:]
    seeds = seed.reshape(-1, 2).tolist()
    params = np.asarray(param, np.float64).reshape((len(seeds),) + rest)
    out = np.empty((len(seeds),) + shape + rest)
    with np.errstate(invalid="ignore", over="ignore"):
        for k, (s0, s1) in enumerate(seeds):
            out[k] = draw(np.random.default_rng([s0 % 2 ** 64, s1 % 2 ** 64]), params[k],
                          shape + rest)
    return out.reshape(seed.shape[:lead] + shape + rest)


def _standard_gamma(g: np.random.Generator, a: np.ndarray, size: tuple) -> np.ndarray:
    ok = (a > 0) & (a < np.inf)  # NumPy raises below 0 and on NaN: TensorFlow's values instead
    x = g.standard_gamma(np.where(ok, a, 1.0), size)
    return np.where(ok, x, np.where(a == 0, 0.0, np.where(a == np.inf, np.inf, np.nan)))


_POISSON_NORMAL = 1e18  # above NumPy's largest rate (~9.2e18) the normal limit, to 1e-9


def _poisson(g: np.random.Generator, lam: np.ndarray, size: tuple) -> np.ndarray:
    small = (lam >= 0) & (lam <= _POISSON_NORMAL)
    n = g.poisson(np.where(small, lam, 0.0), size).astype(np.float64)
    big = lam > _POISSON_NORMAL
    if big.any():
        n = np.where(big, np.round(lam + np.sqrt(lam) * g.standard_normal(size)), n)
    # TensorFlow's 0 below zero; a NaN rate gives NaN, an infinite one inf.
    return np.where(np.isnan(lam), np.nan, np.where(lam == np.inf, np.inf, n))


def _gamma_impl(seed: np.ndarray, alpha: np.ndarray, shape: tuple, lead: int) -> np.ndarray:
    return _per_seed(seed, alpha, shape, lead, _standard_gamma).astype(alpha.dtype, copy=False)


def _poisson_impl(seed: np.ndarray, lam: np.ndarray, shape: tuple, lead: int,
                  dtype: np.dtype) -> np.ndarray:
    n = _per_seed(seed, lam, shape, lead, _poisson)
    if dtype.kind == "f":
        return n.astype(dtype)
    if np.isnan(n).any():
        raise InvalidArgumentError("random.poisson: `lam` holds NaN, and an integer `dtype` "
                                   "has no value for a NaN rate's draw.")
    hi = float(np.iinfo(dtype).max)
    hi = np.nextafter(hi, 0) if int(hi) > np.iinfo(dtype).max else hi
    return np.minimum(n, hi).astype(dtype)  # saturated where a count exceeds the dtype


def _seeded_result(shapes: list, dtypes: list, shape: tuple, lead: int,
                   dtype: np.dtype | None = None) -> tuple:
    return (shapes[0][:lead] + shape + shapes[1][lead:],
            dtypes[1] if dtype is None else dtype)


def _seeded_batch(prim: Primitive) -> dict:
    """Batching: the batch goes first in the seed and the parameter (an unbatched one is
    broadcast: each example then has the same seed or parameter), one more `lead` axis."""
    def batch(vals: tuple, dims: tuple, lead: int, **params: Any) -> tuple:
        front = [broadcast_to(v, (dims.size,) + shape_of(v)) if d is None else move_to_front(v, d)
                 for v, d in zip(vals, dims, strict=True)]
        return bind(prim, *front, lead=lead + 1, **params), 0
    return {"batch": batch}


def _expanded(v: Tensor, shape: tuple, lead: int) -> Tensor:
    """An alpha-shaped value with 1s for the sample axes, to broadcast against a draw."""
    s = shape_of(v)
    return reshape(v, s[:lead] + (1,) * len(shape) + s[lead:]) if shape else v


def _gamma_tangent(t: Tensor, ans: Tensor, seed: Tensor, alpha: Tensor, shape: tuple,
                   lead: int) -> Tensor:
    return multiply(_expanded(t, shape, lead),
                    bind(gamma_grad_p, _expanded(alpha, shape, lead), ans, order=1))


def _gamma_cotangent(g: Tensor, ans: Tensor, seed: Tensor, alpha: Tensor, shape: tuple,
                     lead: int) -> Tensor:
    per_sample = multiply(g, bind(gamma_grad_p, _expanded(alpha, shape, lead), ans, order=1))
    return reduce_sum(per_sample, list(range(lead, lead + len(shape)))) if shape else per_sample


def _gamma_deps(pats: tuple, vals: tuple, outs: tuple, shape: tuple, lead: int) -> tuple:
    """Each sample depends on its own alpha element (the seed carries no derivative)."""
    if pats[1] is None:
        return (None,)
    s = vals[1].shape
    return (pats[1].reshape(s[:lead] + (1,) * len(shape) + s[lead:]).broadcast_to(outs[0].shape),)


# Standard gamma samples of concentration alpha, a function of the seed: d x / d alpha is
# D_1(alpha, x) (NOTE(implicit-gamma-gradient)); the seed has no derivative.
gamma_p = define(Primitive("random_gamma", _gamma_impl),
                 per_input(jvp=(None, _gamma_tangent), vjp=(None, _gamma_cotangent),
                           reads=("", "ans alpha")),
                 _seeded_batch, sparsity=_gamma_deps,
                 lower=_on_host(_gamma_impl, _seeded_result))


def _rate_check(jax: Any, seed: Any, lam: Any, **params: Any) -> Any:
    return ~jax.numpy.any(jax.numpy.isnan(lam))  # else the NumPy impl raises


def _poisson_unchecked(seed: np.ndarray, lam: np.ndarray, **params: Any) -> np.ndarray:
    # The compiled call's draw: where a NaN rate fails the check, the NumPy rerun raises,
    # and this value is never used.
    return _poisson_impl(seed, np.where(np.isnan(lam), 0, lam), **params)


def _rate_check_needed(seed: tuple, lam: tuple, dtype: np.dtype, **params: Any) -> bool:
    return dtype.kind != "f" and np.dtype(lam[1]).kind == "f"


# Poisson counts of rate lam, a function of the seed; no derivative.
poisson_p = define(Primitive("random_poisson", _poisson_impl, effects=(NO_DERIVATIVE,)),
                   _seeded_batch,
                   lower=Lowering(_on_host(_poisson_unchecked, _seeded_result), check=_rate_check,
                                  check_needed=_rate_check_needed))


# ---------------------------------------------------------------- public ops
_GAMMA_DTYPES = (np.float16, np.float32, np.float64)
_POISSON_DTYPES = (np.float16, np.float32, np.float64, np.int32, np.int64)
_ALLOWED = "float16, float32, float64, int32, int64"


def _dtype_in(dtype: Any, allowed: tuple, names: str, op: str, arg: str = "dtype") -> np.dtype:
    dt = _dt.as_dtype(dtype)._np
    if not any(dt == a for a in allowed):
        raise InvalidArgumentError(f"{op}: `{arg}` must be one of {names}; got "
                                   f"{_dt.from_numpy(dt).name}.")
    return dt


def _typed(value: Any, dt: np.dtype, op: str, arg: str) -> Tensor:
    """A tensor argument must have `dt` (TensorFlow converts with dtype=`dtype`); Python
    numbers and arrays are converted to it."""
    if isinstance(value, TensorBase):
        t = as_tensor(value, op, arg)
        if t._value.dtype != dt:
            raise InvalidArgumentError(
                f"{op}: `{arg}` has dtype {_dt.from_numpy(t._value.dtype).name} but `dtype` is "
                f"{_dt.from_numpy(dt).name}; cast it first.")
        return t
    try:
        arr = np.asarray(value)
    except (TypeError, ValueError) as e:
        raise TypeError(f"{op}: `{arg}` could not be converted to a tensor: {e}") from None
    if arr.dtype.kind not in "iuf":
        raise TypeError(f"{op}: `{arg}` must be numbers; got {value!r:.60}.")
    return Tensor(arr.astype(dt))


def _gamma_args(op: str, dtype: Any, alpha: Any, beta: Any) -> tuple:
    dt = _dtype_in(dtype, _GAMMA_DTYPES, "float16, float32, float64", op)
    a = _typed(alpha, dt, op, "alpha")
    b = None if beta is None else _typed(beta, dt, op, "beta")
    try:
        bshape = shape_of(a) if b is None else np.broadcast_shapes(shape_of(a), shape_of(b))
    except ValueError:
        raise InvalidArgumentError(f"{op}: `alpha` of shape {list(shape_of(a))} and `beta` of "
                                   f"shape {list(shape_of(b))} do not broadcast.") from None
    return dt, a, b, tuple(bshape)


def _gamma_draws(seed: Tensor, a: Tensor, b: Tensor | None, bshape: tuple, shape: tuple,
                 dt: np.dtype) -> Tensor:
    if shape_of(a) != bshape:
        a = broadcast_to(a, bshape)
    x = bind(gamma_p, seed, a, shape=shape, lead=0)
    if b is not None:
        x = divide(x, b)
    # TensorFlow's floor: the smallest normal number (ties give the sample no gradient).
    return maximum(Tensor(np.asarray(np.finfo(dt).tiny, dt)), x)


def _drawn_seed(seed: int | None) -> Tensor:
    """A seed pair drawn from the op seed's sequence (NOTE(seeded-draws))."""
    info = np.iinfo(np.int64)
    return bind(uniform_int_p, generator=_seeds.generator(seed), shape=(2,),
                dtype=np.dtype(np.int64), minval=int(info.min), maxval=int(info.max))


def _leading(shape: Any, param_shape: tuple, op: str, what: str) -> tuple:
    """A stateless op's `shape` less the parameters' shape it must end with."""
    dims = static_shape(shape, op)
    cut = len(dims) - len(param_shape)
    if cut < 0 or dims[cut:] != tuple(param_shape):
        raise InvalidArgumentError(f"{op}: `shape` {list(dims)} must end with the shape of "
                                   f"{what}, {list(param_shape)}.")
    return dims[:cut]


def gamma(shape: Any, alpha: Any, beta: Any = None, dtype: Any = _dt.float32,
          seed: int | None = None, name: str | None = None) -> Tensor:
    """`shape` samples from each gamma distribution of concentration `alpha` and rate
    (inverse scale) `beta`: a tensor of shape `shape + broadcast(alpha, beta).shape`, in
    `dtype` (float16, float32 or float64; tensor parameters must have it). Samples are at
    least the dtype's smallest normal number, as TensorFlow's. Seeds as tf.random's other
    draws: `set_seed` and `seed` make the draws repeatable, each call draws anew.

    Gradients flow to `alpha` by implicit reparameterization (TensorFlow's: d sample /
    d alpha = -(dF/d alpha) / (dF/d sample) for the distribution's CDF F) and to `beta`
    through the division of standard samples by it.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.random.gamma([4000], alpha=[1., 5.], beta=2., seed=1)
        >>> x.shape
        TensorShape([4000, 2])
        >>> bool(abs(float(tf.reduce_mean(x[:, 1])) - 2.5) < 0.1)
        True
        >>> alpha = tf.Variable(3.)
        >>> with tf.GradientTape() as tape:
        ...     mean = tf.reduce_mean(tf.random.gamma([4000], alpha, seed=2))
        >>> bool(abs(float(tape.gradient(mean, alpha)) - 1.) < 0.05)  # d E[x] / d alpha = 1
        True
    """
    op = "random.gamma"
    dt, a, b, bshape = _gamma_args(op, dtype, alpha, beta)
    return _gamma_draws(_drawn_seed(seed), a, b, bshape, static_shape(shape, op), dt)


def stateless_gamma(shape: Any, seed: Any, alpha: Any, beta: Any = None,
                    dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
    """gamma's samples as a function of `seed` (an int32 or int64 tensor of shape [2]): the
    same seed gives the same numbers, at every call and in traced functions. As
    TensorFlow's, the output's shape is `shape`, which must end with
    broadcast(alpha, beta).shape. Gradients flow to `alpha` and `beta` as in `gamma`. The
    numbers are NumPy's, not TensorFlow's.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.random.stateless_gamma([3, 2], seed=[1, 2], alpha=[0.5, 4.])
        >>> b = tf.random.stateless_gamma([3, 2], seed=[1, 2], alpha=[0.5, 4.])
        >>> a.shape, bool((a.numpy() == b.numpy()).all())
        (TensorShape([3, 2]), True)
    """
    op = "random.stateless_gamma"
    dt, a, b, bshape = _gamma_args(op, dtype, alpha, beta)
    lead = _leading(shape, bshape, op, "broadcast(alpha, beta)")
    return _gamma_draws(_seed_tensor(seed, op), a, b, bshape, lead, dt)


def _rate(lam: Any, op: str) -> Tensor:
    t = as_tensor(lam, op, "lam")
    _dtype_in(t._value.dtype, _POISSON_DTYPES, _ALLOWED, op, "lam")
    return t


def poisson(shape: Any, lam: Any, dtype: Any = _dt.float32, seed: int | None = None,
            name: str | None = None) -> Tensor:
    """`shape` samples from each Poisson distribution of rate `lam`: a tensor of shape
    `shape + lam.shape` in `dtype` (float16, float32, float64, int32 or int64; `lam` may be
    any of these). A negative rate gives 0, as TensorFlow's; a count beyond an integer
    dtype saturates. No gradient (the samples are counts). Seeds as `gamma`'s.

    Example:
        >>> import tapeflow as tf
        >>> n = tf.random.poisson([5000], lam=[0.5, 20.], dtype=tf.int32, seed=3)
        >>> n.shape, n.dtype
        (TensorShape([5000, 2]), tf.int32)
        >>> bool(abs(float(tf.reduce_mean(tf.cast(n[:, 1], tf.float32))) - 20.) < 0.3)
        True
    """
    op = "random.poisson"
    dt = _dtype_in(dtype, _POISSON_DTYPES, _ALLOWED, op)
    return bind(poisson_p, _drawn_seed(seed), _rate(lam, op), shape=static_shape(shape, op),
                lead=0, dtype=dt)


def stateless_poisson(shape: Any, seed: Any, lam: Any, dtype: Any = _dt.int32,
                      name: str | None = None) -> Tensor:
    """poisson's samples as a function of `seed` (see stateless_gamma); the output's shape is
    `shape`, which must end with `lam`'s shape; `dtype` defaults to int32, as TensorFlow's.

    Example:
        >>> import tapeflow as tf
        >>> tf.random.stateless_poisson([4, 2], seed=[5, 6], lam=[1., 10.]).shape
        TensorShape([4, 2])
    """
    op = "random.stateless_poisson"
    dt = _dtype_in(dtype, _POISSON_DTYPES, _ALLOWED, op)
    rate = _rate(lam, op)
    lead = _leading(shape, shape_of(rate), op, "`lam`")
    return bind(poisson_p, _seed_tensor(seed, op), rate, shape=lead, lead=0, dtype=dt)


# Public names and the TensorFlow namespaces they appear in.
EXPORTS = {name: "random" for name in ("gamma", "poisson", "stateless_gamma",
                                       "stateless_poisson")}
