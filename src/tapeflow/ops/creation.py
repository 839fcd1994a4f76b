"""Creation: zeros, ones, zeros_like, ones_like, fill, eye, range, linspace, one_hot,
meshgrid, and the shape queries shape, size and rank.

The queries and most creators return constants, `fill` is a broadcast, `linspace` a few
elementwise ops and a concat, and `one_hot` a comparison and a select, so they
differentiate through the rules of those primitives. The one primitive, `range`, is
tf.range of tensor bounds in a size-generic trace (tf.range(tf.shape(x)[0]),
NOTE(dynamic-shapes) in ops/structural.py): its length is found when the graph runs.
"""

from __future__ import annotations

import builtins
from typing import Any

import numpy as np

from .. import dtypes as _dt
from ..catalog import DATA_SHAPE, NO_DERIVATIVE, define
from ..core import Primitive, bind
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorBase, convert_to_tensor
from .convert import as_tensor, binary_args, int_arg, int_list, int_tensor, static_shape
from .elementwise import divide_p, equal_p, subtract_p
from .indexing import getitem_p
from .shape import broadcast_to, concat_p, expand_dims, shape_operand, stop_gradient
from .structural import (add_p, full_of, batch_no_inputs, broadcast_to_p, cast_p, dense_deps, filled_like, multiply_p, reshape_p, select_p, shape_of, shape_source)
from .sizes import filled, shape_p, size_p

_brange = builtins.range  # this module defines TensorFlow's `range`


# ================================================================== constants
def zeros(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    """A tensor of zeros (float32 unless `dtype` is given); a constant.

    Example:
        >>> import tapeflow as tf
        >>> tf.zeros([2]).numpy()
        array([0., 0.], dtype=float32)
    """
    dynamic = shape_operand(shape, "zeros", "shape")
    if dynamic is not None:
        return filled(dynamic, 0, _dt.as_dtype(dtype)._np)
    return full_of(static_shape(shape, "zeros"), 0, _dt.as_dtype(dtype)._np)


def ones(shape: Any, dtype: Any = "float32", name: str | None = None) -> Tensor:
    """A tensor of ones (float32 unless `dtype` is given); a constant.

    Example:
        >>> import tapeflow as tf
        >>> tf.ones([2], tf.int32).numpy()
        array([1, 1], dtype=int32)
    """
    dynamic = shape_operand(shape, "ones", "shape")
    if dynamic is not None:
        return filled(dynamic, 1, _dt.as_dtype(dtype)._np)
    return full_of(static_shape(shape, "ones"), 1, _dt.as_dtype(dtype)._np)



def zeros_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """A tensor of zeros with `input`'s shape (and dtype unless given); carries no gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.zeros_like(tf.constant([1., 2.])).numpy()
        array([0., 0.], dtype=float32)
    """
    x = as_tensor(input, "zeros_like", "input")
    return filled_like(x, 0, None if dtype is None else _dt.as_dtype(dtype)._np)


def ones_like(input: Any, dtype: Any = None, name: str | None = None) -> Tensor:  # noqa: A002
    """A tensor of ones with `input`'s shape (and dtype unless given); carries no gradient.

    Example:
        >>> import tapeflow as tf
        >>> tf.ones_like(tf.constant([1, 2])).numpy()
        array([1, 1], dtype=int32)
    """
    x = as_tensor(input, "ones_like", "input")
    return filled_like(x, 1, None if dtype is None else _dt.as_dtype(dtype)._np)



# ================================================================== shape queries
def _query_dtype(out_type: Any, op: str) -> np.dtype:
    dt = _dt.as_dtype(out_type)._np
    if dt not in (np.dtype(np.int32), np.dtype(np.int64)):
        raise TypeError(f"{op}: `out_type` must be int32 or int64; got {out_type!r}.")
    return dt


def shape(input: Any, out_type: Any = "int32", name: str | None = None) -> Tensor:  # noqa: A002
    """The shape of `input` as a 1-D integer tensor (int32 unless `out_type` is int64).

    Example:
        >>> import tapeflow as tf
        >>> tf.shape(tf.zeros([2, 3])).numpy()
        array([2, 3], dtype=int32)
    """
    x = as_tensor(input, "shape", "input")
    # sizes a size-generic graph reads when it runs (NOTE(dynamic-shapes) in ops/structural)
    return bind(shape_p, sizes=shape_source(x), dtype=_query_dtype(out_type, "shape"))


def size(input: Any, out_type: Any = "int32", name: str | None = None) -> Tensor:  # noqa: A002
    """The number of elements of `input`, a scalar integer tensor (int32 by default).

    Example:
        >>> import tapeflow as tf
        >>> tf.size(tf.zeros([2, 3])).numpy()
        np.int32(6)
    """
    x = as_tensor(input, "size", "input")
    return bind(size_p, sizes=shape_source(x), dtype=_query_dtype(out_type, "size"))


def rank(input: Any, name: str | None = None) -> Tensor:  # noqa: A002
    """The number of axes of `input`, a scalar int32 tensor.

    Example:
        >>> import tapeflow as tf
        >>> tf.rank(tf.zeros([2, 3])).numpy()
        np.int32(2)
    """
    x = as_tensor(input, "rank", "input")
    return Tensor(np.int32(np.ndim(x._value)))


# ================================================================== creation
def fill(dims: Any, value: Any, name: str | None = None) -> Tensor:
    """A tensor of shape `dims` filled with the scalar `value` (its dtype: Python floats
    give float32, ints int32). The gradient of `value` is the sum of the result's.

    Example:
        >>> import tapeflow as tf
        >>> tf.fill([2, 2], 7).numpy()
        array([[7, 7],
               [7, 7]], dtype=int32)
    """
    dynamic = shape_operand(dims, "fill", "dims")
    target = None if dynamic is not None else static_shape(dims, "fill", "dims")
    v = as_tensor(value, "fill", "value")
    if np.ndim(v._value) != 0:
        raise InvalidArgumentError(f"fill: `value` must be a scalar; got shape {shape_of(v)}.")
    return broadcast_to(v, dynamic if dynamic is not None else target)


def eye(num_rows: Any, num_columns: Any = None, batch_shape: Any = None, dtype: Any = "float32",
        name: str | None = None) -> Tensor:
    """An identity matrix [num_rows, num_columns] (square by default), repeated over
    `batch_shape` leading axes; a constant.

    Example:
        >>> import tapeflow as tf
        >>> tf.eye(2, 3, dtype=tf.int32).numpy()
        array([[1, 0, 0],
               [0, 1, 0]], dtype=int32)
    """
    r = int_arg(num_rows, "eye", "num_rows")
    c = r if num_columns is None else int_arg(num_columns, "eye", "num_columns")
    batch = [] if batch_shape is None else int_list(batch_shape, "eye", "batch_shape")
    if min([r, c] + batch) < 0:
        raise InvalidArgumentError(f"eye: sizes must be non-negative; got num_rows={r}, "
                                   f"num_columns={c}, batch_shape={batch}.")
    m = np.eye(r, c, dtype=_dt.as_dtype(dtype)._np)
    return Tensor(np.array(np.broadcast_to(m, tuple(batch) + (r, c))))


_RANGE_TYPES = [np.dtype(t) for t in (np.int32, np.int64, np.float16, np.float32, np.float64)]


def range(start: Any, limit: Any = None, delta: Any = 1, dtype: Any = None,  # noqa: A001
          name: str | None = "range") -> Tensor:
    """The numbers start, start + delta, ... up to but excluding `limit` (with one
    argument, 0 to `start`); a constant.

    Without `dtype`, the widest of the arguments' dtypes (int32 < int64 < float16 <
    float32 < float64; Python ints are int32, floats float32). As TensorFlow, `delta`
    must not be 0 and must point from `start` towards `limit`.

    Example:
        >>> import tapeflow as tf
        >>> tf.range(5).numpy(), tf.range(0, 1, 0.25).numpy()
        (array([0, 1, 2, 3, 4], dtype=int32), array([0.  , 0.25, 0.5 , 0.75], dtype=float32))
    """
    if limit is None:
        start, limit = 0, start
    want = None if dtype is None else _dt.as_dtype(dtype)._np
    bounds = []
    for v, arg in ((start, "start"), (limit, "limit"), (delta, "delta")):
        if isinstance(v, TensorBase) or want is None:
            t = as_tensor(v, "range", arg)
        else:
            t = convert_to_tensor(v, dtype=want)
        if np.ndim(t._value) != 0:
            raise InvalidArgumentError(f"range: `{arg}` must be a scalar; got shape {shape_of(t)}.")
        if want is None and t._value.dtype not in _RANGE_TYPES:
            raise TypeError(f"range: `{arg}` has dtype {t.dtype.name}; expected one of "
                            "int32, int64, float16, float32, float64.")
        bounds.append(t)
    kind = want if want is not None else max((t._value.dtype for t in bounds),
                                             key=_RANGE_TYPES.index)
    if any(isinstance(v, TensorBase) for v in (start, limit, delta)):
        # Bounds read when the graph runs (tf.range(tf.shape(x)[0])), not while tracing.
        return bind(range_p, *bounds, dtype=kind)
    return Tensor(_range_impl(*(np.asarray(t) for t in bounds), dtype=kind))


def _range_impl(start: Any, limit: Any, delta: Any, dtype: np.dtype) -> np.ndarray:
    s, lim, d = (np.asarray(v).astype(dtype) for v in (start, limit, delta))
    if d == 0:
        raise InvalidArgumentError("range: `delta` must not be 0.")
    if (d > 0 and s > lim) or (d < 0 and s < lim):
        raise InvalidArgumentError(f"range: `delta`={d} does not step from `start`={s} towards "
                                   f"`limit`={lim}.")
    if _dt.kind(dtype) in "iu":
        n = (abs(int(lim) - int(s)) + abs(int(d)) - 1) // abs(int(d))
    else:
        n = int(np.ceil(np.abs((lim - s) / d)))
    return (s + np.arange(n).astype(dtype) * d).astype(dtype)


def _range_batch(vals: tuple, dims: tuple, dtype: np.dtype) -> tuple:
    raise ValueError("range: vmap over tensor bounds would make ranges of different lengths; "
                     "every example of a vmap has the same shape.")


def _range_lower(jax: Any, start: Any, limit: Any, delta: Any, dtype: np.dtype) -> Any:
    if not all(isinstance(v, (np.ndarray, np.generic)) for v in (start, limit, delta)):
        raise ValueError("range: under jit_compile=True its bounds must come from sizes "
                         "(tf.shape), not from data: XLA needs every length before it runs.")
    return _range_impl(start, limit, delta, dtype)


range_p = define(Primitive("range", _range_impl, effects=(NO_DERIVATIVE, DATA_SHAPE)),
                 batch=_range_batch, sparsity=dense_deps,
                 lower=_range_lower)  # static bounds are NumPy values there (graph/xla.py)


# ------------------------------------------------------------------ basis: one-hot rows
# A vectorized Jacobian's cotangents (or tangents): rows of the one-hot basis of a value.
# No inputs, its shape a param: a graph of fixed sizes folds it to a constant (which
# graph/xla.py recognizes, NOTE(generated-basis)), a size-generic one makes it at each
# run from the sizes it reads.
def one_hot_rows(shape: tuple, dtype: Any, start: int, stop: int | None,
                 repeat: int | None = None) -> np.ndarray:
    """Rows start..stop (None: to the end) of the one-hot basis of `shape`: [rows,
    *shape]; with `repeat`, each row is the one-hot of shape[1:] repeated along shape[0]
    (the per-example basis of a batch Jacobian).

    Example:
        >>> from tapeflow.ops.creation import one_hot_rows
        >>> one_hot_rows((3,), "float32", 1, None).tolist()
        [[0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
    """
    inner = shape if repeat is None else shape[1:]
    size = int(np.prod(inner, dtype=np.int64))
    stop = size if stop is None else stop
    rows = np.zeros((stop - start, size), dtype=dtype)
    rows[np.arange(stop - start), np.arange(start, stop)] = 1
    rows = rows.reshape((stop - start,) + tuple(inner))
    if repeat is not None:
        rows = np.ascontiguousarray(np.broadcast_to(rows[:, None], (stop - start, repeat)
                                                    + tuple(inner)))
    return rows


def _basis_lower(jax: Any, shape: tuple, dtype: np.dtype, start: int, stop: int | None,
                 repeat: int | None) -> Any:
    lax = jax.lax
    inner = tuple(shape) if repeat is None else tuple(shape[1:])
    size = int(np.prod(inner, dtype=np.int64))
    n = (size if stop is None else stop) - start
    row = lax.broadcasted_iota(np.int32, (n, size), 0)
    col = lax.broadcasted_iota(np.int32, (n, size), 1)
    rows = (col == row + start).astype(dtype).reshape((n,) + inner)
    if repeat is not None:
        rows = jax.numpy.broadcast_to(rows[:, None], (n, repeat) + inner)
    return rows


basis_p = define(Primitive("basis", one_hot_rows, effects=(NO_DERIVATIVE,)), batch_no_inputs,
                 lower=_basis_lower)


def basis(x: Any, start: int = 0, stop: int | None = None, per_example: bool = False) -> Tensor:
    """Rows start..stop (None: all) of the one-hot basis of x's shape, a tensor of x's
    dtype; with `per_example`, of each example's shape (x's first axis), repeated for
    every example: the cotangents of a vectorized Jacobian (GradientTape.jacobian)."""
    shape = shape_source(x)
    return bind(basis_p, shape=tuple(shape), dtype=np.dtype(x._value.dtype), start=start,
                stop=stop, repeat=shape[0] if per_example else None)


def linspace(start: Any, stop: Any, num: Any, name: str | None = None, axis: int = 0) -> Tensor:
    """`num` evenly spaced values from `start` to `stop`, both included exactly.

    `start` and `stop` may be tensors (broadcast together); the values then run along
    a new axis `axis` of the result. Integer inputs give float64 (as TensorFlow's
    division). Differentiable in `start` and `stop`: a composite of elementwise ops
    and a concat of the endpoints.

    Example:
        >>> import tapeflow as tf
        >>> tf.linspace(0., 1., 5).numpy()
        array([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float32)
    """
    a, b = binary_args(start, stop, "linspace")
    kind = _dt.kind(a._value.dtype)
    if kind in "iu":
        a, b = (bind(cast_p, t, dtype=np.dtype(np.float64)) for t in (a, b))
    elif kind != "f":
        raise TypeError(f"linspace: `start` and `stop` must be floating or integer; got dtype "
                        f"{a.dtype.name}.")
    n = int_arg(num, "linspace", "num")
    if n < 0:
        raise InvalidArgumentError(f"linspace: `num` must be non-negative; got {n}.")
    try:
        common = np.broadcast_shapes(shape_of(a), shape_of(b))
    except ValueError:
        raise InvalidArgumentError(f"linspace: shapes of `start` {shape_of(a)} and `stop` "
                                   f"{shape_of(b)} do not broadcast.") from None
    rank = len(common)
    ax = int_arg(axis, "linspace", "axis")
    if not -rank - 1 <= ax <= rank:
        raise InvalidArgumentError(f"linspace: `axis`={axis} is out of range for results of "
                                   f"rank {rank + 1}.")
    ax %= rank + 1
    first = expand_dims(broadcast_to(a, common), ax)
    if n == 0:
        return bind(getitem_p, first, key=(slice(None),) * ax + (slice(0, 0),))
    if n == 1:
        return first
    last = expand_dims(broadcast_to(b, common), ax)
    pieces = [first]
    if n > 2:
        dt = a._value.dtype
        delta = bind(divide_p, bind(subtract_p, last, first), Tensor(np.asarray(n - 1, dt)))
        steps = np.arange(1, n - 1, dtype=dt).reshape([n - 2 if i == ax else 1
                                                       for i in _brange(rank + 1)])
        pieces.append(bind(add_p, first, bind(multiply_p, delta, Tensor(steps))))
    pieces.append(last)
    return bind(concat_p, *pieces, axis=ax)



# ================================================================== one_hot
def one_hot(indices: Any, depth: Any, on_value: Any = None, off_value: Any = None,
            axis: Any = None, dtype: Any = None, name: str | None = None) -> Tensor:
    """A one-hot encoding of integer `indices`: a new axis of length `depth` (at `axis`,
    the last by default) holds `on_value` at each index and `off_value` elsewhere.

    Indices outside [0, depth) (e.g. -1) give a row of `off_value`. The dtype is
    `dtype`, else that of `on_value` or `off_value`, else float32. As TensorFlow, no
    gradient flows through one_hot.

    Example:
        >>> import tapeflow as tf
        >>> tf.one_hot([0, 2, -1], 3).numpy()
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 0., 0.]], dtype=float32)
    """
    i = int_tensor(indices, "one_hot", "indices")
    n = int_arg(depth, "one_hot", "depth")
    if n < 0:
        raise InvalidArgumentError(f"one_hot: `depth` must be non-negative; got {n}.")
    rank = np.ndim(i._value)
    ax = -1 if axis is None else int_arg(axis, "one_hot", "axis")
    if ax == -1:
        ax = rank
    if not 0 <= ax <= rank:
        raise InvalidArgumentError(f"one_hot: `axis`={axis} must be -1 or in [0, {rank}] for "
                                   f"indices of rank {rank}.")
    if dtype is not None:
        target = _dt.as_dtype(dtype)._np
    elif on_value is not None:
        target = as_tensor(on_value, "one_hot", "on_value")._value.dtype
    elif off_value is not None:
        target = as_tensor(off_value, "one_hot", "off_value")._value.dtype
    else:
        target = np.dtype(np.float32)
    on = _one_hot_value(on_value, 1, target, "on_value")
    off = _one_hot_value(off_value, 0, target, "off_value")
    classes = np.arange(n, dtype=np.int64).reshape([n if a == ax else 1 for a in _brange(rank + 1)])
    hit = bind(equal_p, expand_dims(i, ax), Tensor(classes))
    return bind(select_p, hit, on, off)


def _one_hot_value(value: Any, default: int, target: np.dtype, arg: str) -> Tensor:
    if value is None:
        return Tensor(np.asarray(default, target))
    if isinstance(value, TensorBase):
        v = as_tensor(value, "one_hot", arg)
        if v._value.dtype != target:
            raise TypeError(f"one_hot: `{arg}` has dtype {v.dtype.name}, expected "
                            f"{_dt.from_numpy(target).name}.")
        v = stop_gradient(v)
    else:
        try:
            v = convert_to_tensor(value, dtype=target)
        except (TypeError, ValueError) as e:
            raise TypeError(f"one_hot: `{arg}`={value!r} does not fit dtype "
                            f"{_dt.from_numpy(target).name}: {e}") from None
    if np.ndim(v._value) != 0:
        raise InvalidArgumentError(f"one_hot: `{arg}` must be a scalar; got shape {shape_of(v)}.")
    return v



def meshgrid(*args: Any, **kwargs: Any) -> list[Tensor]:
    """Coordinate grids from N coordinate tensors: N tensors of one shape, the i-th
    holding `args[i]` (flattened, as TensorFlow) along its own axis.

    `indexing="xy"` (the default, Cartesian) swaps the first two axes of the grid, so
    with x of length n and y of length m the grids are [m, n]; `"ij"` (matrix indexing)
    keeps them in argument order. Every input must have the first one's dtype, as
    TensorFlow's product with a ones tensor demands. Each grid is a reshape and a
    broadcast, so the gradient of an input sums its grid's cotangent over the other axes.

    Example:
        >>> import tapeflow as tf
        >>> X, Y = tf.meshgrid([1, 2, 3], [4, 5])
        >>> X.numpy()
        array([[1, 2, 3],
               [1, 2, 3]], dtype=int32)
        >>> Y.numpy()
        array([[4, 4, 4],
               [5, 5, 5]], dtype=int32)
    """
    indexing = kwargs.pop("indexing", "xy")
    kwargs.pop("name", None)
    if kwargs:
        raise TypeError(f"meshgrid: {next(iter(kwargs))!r} is an invalid keyword argument; "
                        "expected `indexing` or `name`.")
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: argument `indexing` must be either 'xy' or 'ij'; got "
                         f"{indexing!r}.")
    xs = [as_tensor(x, "meshgrid", f"args[{i}]") for i, x in enumerate(args)]
    if not xs:
        return []
    dt = xs[0]._value.dtype
    for i, x in enumerate(xs[1:], 1):
        if x._value.dtype != dt:
            raise InvalidArgumentError(
                f"meshgrid: `args[{i}]` has dtype {_dt.from_numpy(x._value.dtype).name}; "
                f"expected {_dt.from_numpy(dt).name}, the dtype of `args[0]`.")
    n = len(xs)
    sizes = [int(np.size(x._value)) for x in xs]
    axes = list(_brange(n))
    if indexing == "xy" and n > 1:
        axes[0], axes[1] = 1, 0
    grid = [0] * n
    for i, size in zip(axes, sizes, strict=True):
        grid[i] = size
    out = []
    for x, ax in zip(xs, axes, strict=True):
        shape = tuple(s if k == ax else 1 for k, s in enumerate(grid))
        line = bind(reshape_p, x, shape=shape) if shape_of(x) != shape else x
        out.append(bind(broadcast_to_p, line, shape=tuple(grid)) if n > 1 else line)
    return out


# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS = {
    "zeros": "tf", "ones": "tf", "zeros_like": "tf", "ones_like": "tf", "fill": "tf",
    "eye": "tf linalg", "range": "tf", "linspace": "tf", "one_hot": "tf", "shape": "tf",
    "size": "tf", "rank": "tf", "meshgrid": "tf",
}
