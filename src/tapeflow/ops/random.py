"""Random draws (tf.random): seeded draws as primitives, with TensorFlow's two-level seeds;
normal, uniform, shuffle, set_seed.

Seeds, as TensorFlow's: the global seed (`set_seed`) and an op's `seed` argument
together pick a reproducible sequence, and every call draws the next numbers of
its sequence (two calls never repeat each other). With no op seed, draws come
from one global sequence; with an op seed, from a sequence of its own for that
(global seed, op seed) pair. `set_seed` restarts every sequence, in place, so
graphs traced before it restart too. One difference: with no global seed set,
tapeflow uses a fixed default rather than a random one, so unseeded programs are
reproducible too.

`shuffle` draws a permutation and gathers `value` with it, so its gradient flows
through the gather.

NOTE(draws): each draw is a primitive (`random_standard_normal`, `random_uniform`,
`random_uniform_int`, `random_permutation`; no derivative) whose params hold the NumPy `Generator` it
draws from, not the numbers it drew. A tracer records the op like any other, and
each replay of the graph calls the impl again and draws the next numbers of the
same sequence, as a random op inside `tf.function` does (a per-call key frozen
into the params would replay the same numbers forever). Graph passes must never
merge, fold or drop draws: they have the STATEFUL effect (tapeflow/catalog.py).

A draw has no tensor inputs, yet inside `vmap` each example must get its own
numbers (TensorFlow's vectorized loops draw per iteration too): `bind` offers a
PER_EXAMPLE primitive to the innermost active batcher, whose batching rule draws
the whole batch at once.

`mean`/`stddev` and `minval`/`maxval` are applied with ordinary ops after the
draw, so gradients flow to them when they are tensors (the reparameterization
that TensorFlow's ops give).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, PER_EXAMPLE, STATEFUL, Codec, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, static_shape
from .elementwise import add, multiply, subtract
from .indexing import gather
from .structural import shape_of

_DEFAULT_SEED = 0


def _seed_entropy(seed: Any) -> int:
    try:
        return int(seed) % 2 ** 64  # TensorFlow seeds are any int64; NumPy wants >= 0
    except (TypeError, ValueError):
        raise TypeError(f"random: a seed must be an integer; got {seed!r}.") from None


def _restart(generator: np.random.Generator, entropy: Any) -> None:
    # In place: graphs traced earlier hold these very generators (NOTE(draws)), so a
    # later set_seed restarts their sequences too.
    generator.bit_generator.state = np.random.PCG64(entropy).state


class _Seeds:
    """The global seed, the global sequence, and one sequence per op seed."""

    def __init__(self) -> None:
        self.seed: int | None = None
        self.rng = np.random.default_rng(_DEFAULT_SEED)
        self.op_rngs: dict[int, np.random.Generator] = {}

    def base(self) -> int:
        return _seed_entropy(_DEFAULT_SEED if self.seed is None else self.seed)

    def reset(self, seed: int | None) -> None:
        self.seed = None if seed is None else _seed_entropy(seed)
        _restart(self.rng, self.base())
        for key, generator in self.op_rngs.items():
            _restart(generator, [self.base(), key])

    def generator(self, op_seed: int | None) -> np.random.Generator:
        """The generator of a call's sequence: the global one, or the op seed's own."""
        if op_seed is None:
            return self.rng
        key = _seed_entropy(op_seed)
        if key not in self.op_rngs:
            self.op_rngs[key] = np.random.default_rng([self.base(), key])
        return self.op_rngs[key]


_seeds = _Seeds()


def set_seed(seed: int | None) -> None:
    """Set the global random seed and restart every random sequence (TensorFlow's
    semantics: after the same `set_seed`, the same calls draw the same numbers).

    Example:
        >>> import tapeflow as tf
        >>> tf.random.set_seed(1); a = tf.random.normal([2])
        >>> tf.random.set_seed(1); b = tf.random.normal([2])
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """
    _seeds.reset(seed)


# ---------------------------------------------------------------- the draw primitives
def _normal_impl(generator: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    return np.asarray(generator.standard_normal(shape, dtype=native)).astype(dtype, copy=False)


def _uniform_impl(generator: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    out = np.asarray(generator.random(shape, dtype=native)).astype(dtype, copy=False)
    if dtype == np.float16:  # rounding to float16 can reach 1.0: keep the range [0, 1)
        out = np.minimum(out, np.nextafter(np.float16(1), np.float16(0)))
    return out


def _permutation_impl(generator: np.random.Generator, shape: tuple, n: int) -> np.ndarray:
    # `shape` leads: one permutation of range(n) per entry (a batch under vmap).
    return generator.permuted(np.broadcast_to(np.arange(n, dtype=np.int64), shape + (n,)),
                              axis=-1)


def _uniform_int_impl(generator: np.random.Generator, shape: tuple, dtype: np.dtype,
                      minval: int, maxval: int) -> np.ndarray:
    return np.asarray(generator.integers(minval, maxval, shape, dtype=dtype))


# XLA (graph/xla.py, NOTE(host-draws)): a compiled call runs the draw's NumPy impl on the
# host, in the graph's order, and its lowering takes that array in: the same numbers as
# the NumPy replay's, and the same sequence consumed, whichever path runs a call.
def _host_drawn(jax: Any, drawn: Any, **params: Any) -> Any:
    return drawn


def _draw_rules(prim: Primitive) -> dict:
    """A draw's rules (a family: catalog.define): the lowering takes the host's draw in, and
    inside vmap a draw draws the whole batch at once, each example its own."""
    def batch(vals: tuple, dims: tuple, shape: tuple, **params: Any) -> tuple:
        return bind(prim, shape=(dims.size,) + shape, **params), 0
    return {"batch": batch, "lower": _host_drawn, "save": _STREAMS}


def _stream_of(params: dict) -> dict:
    """A draw's generator as the sequence it is (a SavedModel stores the name): the global
    one, or an op seed's."""
    generator = params.pop("generator")
    if generator is _seeds.rng:
        return dict(params, stream="global")
    for key, g in _seeds.op_rngs.items():
        if g is generator:
            return dict(params, stream=key)
    raise ValueError("the draw's generator is none of tf.random's sequences")


def _generator_of(params: dict) -> dict:
    """The loading process's generator of a saved draw's sequence (its own global seed's):
    a loaded function draws as the saving one would after the same `set_seed`."""
    stream = params.pop("stream")
    if stream != "global" and not (type(stream) is int and 0 <= stream < 2 ** 64):
        raise ValueError(f"the draw's sequence is {stream!r:.40}, neither 'global' nor a seed")
    return dict(params, generator=_seeds.generator(None if stream == "global" else stream))


_STREAMS = Codec(_stream_of, _generator_of)


# Every evaluation draws new numbers (NOTE(draws)): stateful, each example of a vmap its
# own draw, with no derivative.
_DRAW = (NO_DERIVATIVE, STATEFUL, PER_EXAMPLE)
standard_normal_p = define(Primitive("random_standard_normal", _normal_impl, effects=_DRAW),
                           _draw_rules)
uniform_p = define(Primitive("random_uniform", _uniform_impl, effects=_DRAW), _draw_rules)
uniform_int_p = define(Primitive("random_uniform_int", _uniform_int_impl, effects=_DRAW),
                       _draw_rules)
permutation_p = define(Primitive("random_permutation", _permutation_impl, effects=_DRAW),
                       _draw_rules)


# ---------------------------------------------------------------- public ops
def _float_dtype(dtype: Any, op: str) -> np.dtype:
    dt = _dt.as_dtype(dtype)._np
    if _dt.kind(dt) != "f":
        raise InvalidArgumentError(f"{op}: `dtype` must be a floating dtype; got {dt}.")
    return dt


def _param(value: Any, dt: np.dtype, op: str, arg: str) -> Any:
    """A Python number stays a number (folded into the op); a tensor must have `dt`."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if isinstance(value, TensorBase):
        t = as_tensor(value, op, arg)
    else:
        t = Tensor(np.asarray(value, dt))
    if t._value.dtype != dt:
        raise InvalidArgumentError(f"{op}: `{arg}` has dtype {t._value.dtype} but `dtype` is {dt}.")
    return t


def _int_bound(value: Any, op: str, arg: str) -> int:
    v = np.asarray(value)
    if v.size != 1 or v.dtype.kind not in "iu":
        raise InvalidArgumentError(f"{op}: for integer dtypes `{arg}` must be a scalar integer; "
                                   f"got {value!r}.")
    return int(v.reshape(()))


def normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
           seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples of N(mean, stddev**2) with the given `shape` (float dtypes only).

    `mean` and `stddev` broadcast with the samples; gradients flow to them when they
    are tensors (samples = standard normal * stddev + mean, as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.random.normal([2, 3], seed=4).shape
        TensorShape([2, 3])
    """
    op = "random.normal"
    dt = _float_dtype(dtype, op)
    mean, stddev = _param(mean, dt, op, "mean"), _param(stddev, dt, op, "stddev")
    out = bind(standard_normal_p, generator=_seeds.generator(seed), shape=static_shape(shape, op),
                     dtype=dt)
    if not (isinstance(stddev, (int, float)) and stddev == 1):
        out = multiply(out, stddev)
    if not (isinstance(mean, (int, float)) and mean == 0):
        out = add(out, mean)
    return out


def uniform(shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
            seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples from the uniform distribution on [minval, maxval) with the given `shape`.

    Floats: `maxval` defaults to 1, and the samples are u * (maxval - minval) + minval for
    u uniform on [0, 1), so gradients flow to tensor bounds. Integers: `maxval` is
    required, the bounds are Python or scalar ints with minval < maxval.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.random.uniform([100], -1., 1.)
        >>> bool((x.numpy() >= -1).all() and (x.numpy() < 1).all())
        True
        >>> tf.random.uniform([3], 0, 10, dtype=tf.int32, seed=7).dtype
        tf.int32
    """
    op = "random.uniform"
    dt = _dt.as_dtype(dtype)._np
    dims = static_shape(shape, op)
    if _dt.kind(dt) in "iu":
        if maxval is None:
            raise InvalidArgumentError(f"{op}: integer dtypes need `maxval`.")
        lo, hi = _int_bound(minval, op, "minval"), _int_bound(maxval, op, "maxval")
        if lo >= hi:
            raise InvalidArgumentError(f"{op}: need minval < maxval; got minval={lo}, "
                                       f"maxval={hi}.")
        return bind(uniform_int_p, generator=_seeds.generator(seed), shape=dims, dtype=dt,
                          minval=lo, maxval=hi)
    if _dt.kind(dt) != "f":
        raise InvalidArgumentError(f"{op}: `dtype` must be floating or integer; got {dt}.")
    lo = _param(minval, dt, op, "minval")
    hi = _param(1.0 if maxval is None else maxval, dt, op, "maxval")
    out = bind(uniform_p, generator=_seeds.generator(seed), shape=dims, dtype=dt)
    if not isinstance(lo, Tensor) and not isinstance(hi, Tensor) and (lo, hi) == (0, 1):
        return out
    # TensorFlow converts both bounds to `dtype` before subtracting: the same rounding here.
    lo_t = lo if isinstance(lo, Tensor) else Tensor(np.asarray(lo, dt))
    hi_t = hi if isinstance(hi, Tensor) else Tensor(np.asarray(hi, dt))
    return add(multiply(out, subtract(hi_t, lo_t)), lo_t)


def shuffle(value: Any, seed: int | None = None, name: str | None = None) -> Tensor:
    """`value` with its slices along axis 0 in a random order, a new order at each call
    (and at each replay of a traced function); the same seeds give the same orders.

    The order is a draw (a `random_permutation` primitive), then a gather, so the
    gradient flows back to `value` through the permutation. Under vmap each example
    gets its own order.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.random.shuffle(tf.range(5), seed=3)
        >>> sorted(x.numpy().tolist())
        [0, 1, 2, 3, 4]
    """
    op = "random.shuffle"
    x = as_tensor(value, op, "value")
    if not shape_of(x):
        raise InvalidArgumentError(f"{op}: `value` must have rank >= 1 (it is shuffled along "
                                   "axis 0); got a scalar.")
    order = bind(permutation_p, generator=_seeds.generator(seed), shape=(), n=shape_of(x)[0])
    return gather(x, order)


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {"normal": "random", "uniform": "random", "set_seed": "random", "shuffle": "random"}
