"""Random draws (tf.random): seeded draws as primitives, with TensorFlow's two-level seeds;
normal, uniform, truncated_normal, categorical, shuffle, set_seed, and the stateless
draws (stateless_normal, stateless_uniform, stateless_truncated_normal,
stateless_categorical), pure functions of their `seed` tensor.

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
that TensorFlow's ops give). `categorical` draws uniform numbers and maps them through
each row's cumulative distribution (`random_categorical`, a pure primitive), so the
draw itself stays a primitive without inputs.

A stateless draw (`stateless_random`) is no draw in that sense: its numbers are a
function of its `seed` input (a NumPy generator seeded with both of its entries), the
same at every call and in every mode, so it is an ordinary primitive without
derivative; under vmap a batch of seeds gives each example its own numbers.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import NO_DERIVATIVE, PER_EXAMPLE, STATEFUL, Codec, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError, UnimplementedError
from ..tensor import Tensor, TensorBase
from .convert import as_tensor, int_arg, static_shape
from .elementwise import add, multiply, subtract
from .indexing import gather
from .structural import move_to_front, shape_of

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


def _truncated_impl(generator: np.random.Generator, shape: tuple, dtype: np.dtype) -> np.ndarray:
    native = dtype if dtype in (np.float32, np.float64) else np.dtype(np.float32)
    out = np.array(generator.standard_normal(shape, dtype=native), ndmin=1)
    far = np.abs(out) > 2  # TensorFlow's bound: redrawn beyond two standard deviations
    while far.any():
        out[far] = generator.standard_normal(int(far.sum()), dtype=native)
        far = np.abs(out) > 2
    return out.reshape(shape).astype(dtype, copy=False)


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
    raise ValueError("the draw's generator is none of tf.random's global or op-seeded "
                     "sequences (a tf.random.Generator's draws are not saved)")


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
truncated_normal_p = define(Primitive("random_truncated_normal", _truncated_impl, effects=_DRAW),
                            _draw_rules)


# ---------------------------------------------------------------- pure primitives of draws
def _categorical_impl(logits: np.ndarray, u: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Per row, the class whose cumulative probability interval holds u (in [0, 1)): the
    count of cumulative sums <= u * total, so zero-probability classes are never picked;
    a row without a finite total (all -inf, NaN) gives the number of classes, as
    TensorFlow's kernel does."""
    lead = np.broadcast_shapes(logits.shape[:-1], u.shape[:-1])
    rows = int(np.prod(lead))
    z = np.broadcast_to(logits, lead + logits.shape[-1:]).reshape(rows, logits.shape[-1])
    v = np.broadcast_to(u, lead + u.shape[-1:]).reshape(rows, u.shape[-1]).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        cdf = np.cumsum(np.exp(z.astype(np.float64) - z.max(-1, keepdims=True)), -1)
        total = cdf[:, -1:]
        v = np.minimum(v * total, np.nextafter(total, 0))  # u * total may round up to it
    out = np.empty(v.shape, dtype)
    for r in range(len(v)):
        out[r] = np.searchsorted(cdf[r], v[r], side="right")
    return out.reshape(lead + u.shape[-1:])


def _categorical_lower(jax: Any, logits: Any, u: Any, dtype: np.dtype) -> Any:
    jnp = jax.numpy
    lead = jnp.broadcast_shapes(logits.shape[:-1], u.shape[:-1])
    z = jnp.broadcast_to(logits, lead + logits.shape[-1:]).astype(jnp.promote_types(u.dtype,
                                                                                     "float32"))
    cdf = jnp.cumsum(jnp.exp(z - z.max(-1, keepdims=True)), -1)
    total = cdf[..., -1:]
    v = jnp.minimum(jnp.broadcast_to(u, lead + u.shape[-1:]) * total, jnp.nextafter(total, 0))
    count = jnp.sum(cdf[..., None, :] <= v[..., :, None], -1)
    return jnp.where(jnp.isfinite(v), count, logits.shape[-1]).astype(dtype)


def _front_batch(prim: Primitive) -> dict:
    """Batching for an impl that broadcasts leading axes: batched inputs' batch axis to
    the front (an unbatched input broadcasts along it)."""
    def batch(vals: tuple, dims: tuple, **params: Any) -> tuple:
        return bind(prim, *[move_to_front(v, d) for v, d in zip(vals, dims)], **params), 0
    return {"batch": batch}


# The class of each uniform number in its row's distribution: no derivative (NOTE(draws)).
categorical_p = define(Primitive("random_categorical", _categorical_impl,
                                 effects=(NO_DERIVATIVE,)),
                       _front_batch, lower=_categorical_lower)


def _stateless_impl(seed: np.ndarray, kind: str, shape: tuple, dtype: np.dtype,
                    bounds: tuple = ()) -> np.ndarray:
    """Numbers of `kind` from each seed [..., 2] of `seed`: its own NumPy generator."""
    seeds = seed.reshape(-1, 2).tolist()
    out = np.empty((len(seeds),) + shape, dtype)
    for k, (a, b) in enumerate(seeds):
        g = np.random.default_rng([a % 2 ** 64, b % 2 ** 64])
        if kind == "integers":  # bounds: [low, high)
            out[k] = g.integers(*bounds, size=shape, dtype=dtype)
        else:
            out[k] = {"normal": _normal_impl, "uniform": _uniform_impl,
                      "truncated_normal": _truncated_impl}[kind](g, shape, dtype)
    return out.reshape(seed.shape[:-1] + shape)


def _stateless_lower(jax: Any, seed: Any, **params: Any) -> Any:
    # Deterministic in the seed: the compiled program calls the NumPy impl on the host,
    # so compiled, replayed and eager calls give the same numbers.
    shape = tuple(seed.shape[:-1]) + params["shape"]
    return jax.pure_callback(lambda s: _stateless_impl(np.asarray(s), **params),
                             jax.ShapeDtypeStruct(shape, params["dtype"]), seed)


# A function of the seed, with no derivative.
stateless_p = define(Primitive("stateless_random", _stateless_impl, effects=(NO_DERIVATIVE,)),
                     _front_batch, lower=_stateless_lower)


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


def _scaled(out: Tensor, mean: Any, stddev: Any) -> Tensor:
    """out * stddev + mean, skipping a Python 1 and 0 (so no op is added for them)."""
    if not (isinstance(stddev, (int, float)) and stddev == 1):
        out = multiply(out, stddev)
    if not (isinstance(mean, (int, float)) and mean == 0):
        out = add(out, mean)
    return out


def _normal_args(op: str, dtype: Any, mean: Any, stddev: Any) -> tuple:
    dt = _float_dtype(dtype, op)
    return dt, _param(mean, dt, op, "mean"), _param(stddev, dt, op, "stddev")


def _normal(prim: Primitive, generator: np.random.Generator, shape: Any, mean: Any,
            stddev: Any, dtype: Any, op: str) -> Tensor:
    dt, mean, stddev = _normal_args(op, dtype, mean, stddev)
    return _scaled(bind(prim, generator=generator, shape=static_shape(shape, op), dtype=dt),
                   mean, stddev)


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
    return _normal(standard_normal_p, _seeds.generator(seed), shape, mean, stddev, dtype,
                   "random.normal")


def truncated_normal(shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
                     seed: int | None = None, name: str | None = None) -> Tensor:
    """Samples of N(mean, stddev**2) truncated to two standard deviations: a standard
    normal number beyond [-2, 2] is drawn again (TensorFlow's rule), then scaled as
    `normal` scales (gradients flow to tensor `mean` and `stddev`).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.random.truncated_normal([1000], mean=1., stddev=0.5, seed=2).numpy()
        >>> bool(x.min() >= 0. and x.max() <= 2.)
        True
    """
    return _normal(truncated_normal_p, _seeds.generator(seed), shape, mean, stddev, dtype,
                   "random.truncated_normal")


def _int_range(minval: Any, maxval: Any, op: str) -> tuple:
    if maxval is None:
        raise InvalidArgumentError(f"{op}: integer dtypes need `maxval`.")
    lo, hi = _int_bound(minval, op, "minval"), _int_bound(maxval, op, "maxval")
    if lo >= hi:
        raise InvalidArgumentError(f"{op}: need minval < maxval; got minval={lo}, maxval={hi}.")
    return lo, hi


def _spread(out: Tensor, minval: Any, maxval: Any, dt: np.dtype, op: str) -> Tensor:
    """Uniform [0, 1) numbers moved to [minval, maxval): out * (maxval - minval) + minval."""
    lo = _param(minval, dt, op, "minval")
    hi = _param(1.0 if maxval is None else maxval, dt, op, "maxval")
    if not isinstance(lo, Tensor) and not isinstance(hi, Tensor) and (lo, hi) == (0, 1):
        return out
    # TensorFlow converts both bounds to `dtype` before subtracting: the same rounding here.
    lo_t = lo if isinstance(lo, Tensor) else Tensor(np.asarray(lo, dt))
    hi_t = hi if isinstance(hi, Tensor) else Tensor(np.asarray(hi, dt))
    return add(multiply(out, subtract(hi_t, lo_t)), lo_t)


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
    return _uniform(_seeds.generator(seed), shape, minval, maxval, dtype, "random.uniform")


def _uniform(generator: np.random.Generator, shape: Any, minval: Any, maxval: Any, dtype: Any,
             op: str) -> Tensor:
    dt = _dt.as_dtype(dtype)._np
    dims = static_shape(shape, op)
    if _dt.kind(dt) in "iu":
        lo, hi = _int_range(minval, maxval, op)
        return bind(uniform_int_p, generator=generator, shape=dims, dtype=dt, minval=lo,
                    maxval=hi)
    if _dt.kind(dt) != "f":
        raise InvalidArgumentError(f"{op}: `dtype` must be floating or integer; got {dt}.")
    return _spread(bind(uniform_p, generator=generator, shape=dims, dtype=dt), minval, maxval,
                   dt, op)


def _categorical_args(logits: Any, num_samples: Any, dtype: Any, op: str) -> tuple:
    z = as_tensor(logits, op, "logits")
    if _dt.kind(z._value.dtype) != "f":
        raise InvalidArgumentError(f"{op}: `logits` must be floating; got dtype "
                                   f"{_dt.from_numpy(z._value.dtype).name}.")
    if len(shape_of(z)) != 2 or shape_of(z)[1] == 0:
        raise InvalidArgumentError(f"{op}: `logits` must be a matrix [batch_size, num_classes] "
                                   f"with num_classes > 0; got shape {shape_of(z)}.")
    n = int_arg(num_samples, op, "num_samples")
    if n < 0:
        raise InvalidArgumentError(f"{op}: num_samples should be non-negative, got {n}.")
    dt = _dt.as_dtype(_dt.int64 if dtype is None else dtype)._np
    if dt not in (np.int32, np.int64):
        raise ValueError(f"{op}: Argument `dtype` got invalid value {dtype!r}. Accepted dtypes "
                         "are (tf.int32, tf.int64).")
    return z, (shape_of(z)[0], n), dt


def categorical(logits: Any, num_samples: Any, dtype: Any = None, seed: int | None = None,
                name: str | None = None) -> Tensor:
    """`num_samples` classes drawn for each row of `logits` [batch_size, num_classes], class
    k with probability softmax(logits)[k]: [batch_size, num_samples] of int64 (or
    `dtype`, int32). A class with logit -inf is never drawn.

    Example:
        >>> import tapeflow as tf
        >>> tf.random.categorical([[-1e9, 0., -1e9]], 4, seed=1).numpy()
        array([[1, 1, 1, 1]])
    """
    z, dims, dt = _categorical_args(logits, num_samples, dtype, "random.categorical")
    u = bind(uniform_p, generator=_seeds.generator(seed), shape=dims, dtype=np.dtype(np.float64))
    return bind(categorical_p, z, u, dtype=dt)


# ---------------------------------------------------------------- stateless draws
def _seed_tensor(seed: Any, op: str) -> Tensor:
    t = as_tensor(seed, op, "seed")
    if t._value.dtype not in (np.int32, np.int64) or shape_of(t) != (2,):
        raise InvalidArgumentError(f"{op}: `seed` must be an int32 or int64 tensor of shape [2]; "
                                   f"got {_dt.from_numpy(t._value.dtype).name} of shape "
                                   f"{list(shape_of(t))}.")
    return t


def _stateless(seed: Any, kind: str, shape: Any, dt: np.dtype, op: str, bounds: tuple = ()
               ) -> Tensor:
    return bind(stateless_p, _seed_tensor(seed, op), kind=kind, shape=static_shape(shape, op),
                dtype=dt, bounds=bounds)


def stateless_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                     dtype: Any = _dt.float32, name: str | None = None,
                     alg: Any = "auto_select") -> Tensor:
    """Samples of N(mean, stddev**2), a function of `seed` (an int tensor of shape [2]):
    the same seed gives the same numbers, at every call and in traced functions. The
    numbers are NumPy's, not TensorFlow's; `alg` is accepted and has no effect.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.random.stateless_normal([3], seed=[1, 2])
        >>> bool((a.numpy() == tf.random.stateless_normal([3], seed=[1, 2]).numpy()).all())
        True
    """
    op = "random.stateless_normal"
    dt, mean, stddev = _normal_args(op, dtype, mean, stddev)
    return _scaled(_stateless(seed, "normal", shape, dt, op), mean, stddev)


def stateless_truncated_normal(shape: Any, seed: Any, mean: Any = 0.0, stddev: Any = 1.0,
                               dtype: Any = _dt.float32, name: str | None = None,
                               alg: Any = "auto_select") -> Tensor:
    """truncated_normal's samples as a function of `seed` (see stateless_normal).

    Example:
        >>> import tapeflow as tf
        >>> float(abs(tf.random.stateless_truncated_normal([500], [3, 4])).numpy().max()) <= 2
        True
    """
    op = "random.stateless_truncated_normal"
    dt, mean, stddev = _normal_args(op, dtype, mean, stddev)
    return _scaled(_stateless(seed, "truncated_normal", shape, dt, op), mean, stddev)


def stateless_uniform(shape: Any, seed: Any, minval: Any = 0, maxval: Any = None,
                      dtype: Any = _dt.float32, name: str | None = None,
                      alg: Any = "auto_select") -> Tensor:
    """uniform's samples as a function of `seed` (see stateless_normal). Integer dtypes
    (int32, int64, uint32, uint64) take both bounds, or neither for the dtype's full
    range.

    Example:
        >>> import tapeflow as tf
        >>> tf.random.stateless_uniform([2], [5, 6], 0, 10, tf.int64).dtype
        tf.int64
    """
    op = "random.stateless_uniform"
    dt = _dt.as_dtype(dtype)._np
    if dt not in (np.float16, np.float32, np.float64, np.int32, np.int64, np.uint32,
                  np.uint64) and _dt.kind(dt) != "f":
        raise ValueError(f"{op}: Argument `dtype` got invalid value {_dt.from_numpy(dt).name}; "
                         "accepted: float16, bfloat16, float32, float64, int32, int64, uint32, "
                         "uint64.")
    if _dt.kind(dt) == "f":
        return _spread(_stateless(seed, "uniform", shape, dt, op), minval, maxval, dt, op)
    if (minval is None) != (maxval is None):
        raise ValueError(f"{op}: For integer `dtype` argument {_dt.from_numpy(dt).name}, "
                         "argument `minval` and `maxval` must be both None or not None. Got "
                         f"`minval`={minval} and `maxval`={maxval}.")
    info = np.iinfo(dt)
    bounds = (int(info.min), int(info.max) + 1) if minval is None else \
        _int_range(minval, maxval, op)
    return _stateless(seed, "integers", shape, dt, op, bounds)


def stateless_categorical(logits: Any, num_samples: Any, seed: Any, dtype: Any = _dt.int64,
                          name: str | None = None) -> Tensor:
    """categorical's samples as a function of `seed` (see stateless_normal).

    Example:
        >>> import tapeflow as tf
        >>> tf.random.stateless_categorical([[0., 0.]], 5, seed=[7, 8]).shape
        TensorShape([1, 5])
    """
    op = "random.stateless_categorical"
    z, dims, dt = _categorical_args(logits, num_samples, dtype, op)
    return bind(categorical_p, z, _stateless(seed, "uniform", dims, np.dtype(np.float64), op),
                dtype=dt)


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


# ---------------------------------------------------------------- tf.random.Generator
class Generator:
    """A random number generator with a sequence of its own (tf.random.Generator): its
    draws are tf.random's draw primitives reading its NumPy generator, so a traced
    function draws the next numbers at each call, and vmap gives each example its own.
    Its numbers are NumPy's (PCG64), not TensorFlow's Philox; its state is not a
    Variable (checkpoints and SavedModels do not hold it).

    Example:
        >>> import tapeflow as tf
        >>> a = tf.random.Generator.from_seed(1).normal([3])
        >>> b = tf.random.Generator.from_seed(1).normal([3])
        >>> bool((a.numpy() == b.numpy()).all())
        True
    """

    def __init__(self, copy_from: "Generator | None" = None, state: Any = None,
                 alg: Any = None) -> None:
        if state is not None:
            raise UnimplementedError("tf.random.Generator(state=...): tapeflow's generators "
                                     "are NumPy's PCG64, not TensorFlow's states; use "
                                     "Generator.from_seed.")
        self._rng, self._alg = np.random.default_rng(), alg
        if copy_from is not None:  # the same sequence from here on, drawn apart
            self._rng.bit_generator.state = copy_from._rng.bit_generator.state
            self._alg = copy_from._alg if alg is None else alg

    @classmethod
    def _of(cls, rng: np.random.Generator, alg: Any) -> "Generator":
        g = cls(alg=alg)
        g._rng = rng
        return g

    @classmethod
    def from_seed(cls, seed: Any, alg: Any = None) -> "Generator":
        """A generator whose sequence is a function of the integer `seed`."""
        return cls._of(np.random.default_rng(np.random.SeedSequence(_seed_entropy(seed),
                                                                    spawn_key=(0x6765,))), alg)

    @classmethod
    def from_non_deterministic_state(cls, alg: Any = None) -> "Generator":
        """A generator seeded from the operating system's entropy."""
        return cls(alg=alg)

    def reset_from_seed(self, seed: Any) -> None:
        """Restart the sequence as from_seed(seed) starts it (in place: functions traced
        earlier draw from the restarted sequence)."""
        _restart(self._rng, np.random.SeedSequence(_seed_entropy(seed), spawn_key=(0x6765,)))

    @property
    def algorithm(self) -> Any:
        """The `alg` the generator was made with (its numbers are PCG64's whatever it is)."""
        return self._alg

    def normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0, dtype: Any = _dt.float32,
               name: str | None = None) -> Tensor:
        """As tf.random.normal, from this generator's sequence."""
        return _normal(standard_normal_p, self._rng, shape, mean, stddev, dtype,
                       "Generator.normal")

    def truncated_normal(self, shape: Any, mean: Any = 0.0, stddev: Any = 1.0,
                         dtype: Any = _dt.float32, name: str | None = None) -> Tensor:
        """As tf.random.truncated_normal, from this generator's sequence."""
        return _normal(truncated_normal_p, self._rng, shape, mean, stddev, dtype,
                       "Generator.truncated_normal")

    def uniform(self, shape: Any, minval: Any = 0, maxval: Any = None, dtype: Any = _dt.float32,
                name: str | None = None) -> Tensor:
        """As tf.random.uniform, from this generator's sequence."""
        return _uniform(self._rng, shape, minval, maxval, dtype, "Generator.uniform")

    def make_seeds(self, count: int = 1) -> Tensor:
        """[2, count] int64: `count` seeds for the stateless draws, drawn from the sequence."""
        info = np.iinfo(np.int64)
        return bind(uniform_int_p, generator=self._rng, shape=(2, int_arg(count, "make_seeds",
                    "count")), dtype=np.dtype(np.int64), minval=int(info.min), maxval=int(info.max))

    def split(self, count: int = 1) -> list:
        """`count` new generators whose sequences are independent of this one's."""
        return [Generator._of(np.random.default_rng(s), self._alg)
                for s in self._rng.bit_generator.seed_seq.spawn(int_arg(count, "split", "count"))]


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {name: "random" for name in (
    "normal", "uniform", "set_seed", "shuffle", "truncated_normal", "categorical",
    "stateless_normal", "stateless_truncated_normal", "stateless_uniform",
    "stateless_categorical", "Generator")}
