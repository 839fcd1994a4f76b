"""vmap: run a per-example function on a whole batch, each op once on the batch.

The batching interpreter is a recorder with a side table, like the forward
accumulator's tangents: for each per-example tensor it knows the batched
tensor and the axis the batch lives on. When an op touches a batched tensor,
the batcher *claims* it (`core.bind`): the primitive's batching rule computes
the op on the batched values, and the per-example result is a view of the
batched one (index 0 of the batch), so shapes and dtypes are right for the
Python code inside `f` at no extra arithmetic.

NOTE(batched-reads): the per-example values are stand-ins (example 0). Python
code that reads one (`float(x)`, `if x > 0`, `x.numpy()`) would silently use
example 0 for every example, so such reads raise inside `vmap`; use `tf.where`.

A primitive's batching rule (its `batch` rule, tapeflow/catalog.py), ``rule(vals, dims,
**params) -> (out, out_dims)``, gets
the batched value of each input (the plain per-example value where an input is not
batched) and `dims`, the batch axis of each input (None where unbatched) as a
`BatchDims` tuple that also carries the batch size (`dims.size`: a random draw has no
batched input to read it from) and the batcher (`dims.batcher`: custom_gradient's rule
batches the user's grad_fn in it). It returns the batched output and its batch axis
(one per output for multiple results). A primitive without one (a user's, from
tapeflow.extend) runs once per example (`by_loop`), after a one-time warning: every
primitive of tapeflow's own has a vectorized rule (tests/rules/test_catalog.py).
"""

from __future__ import annotations

import functools
import warnings
import weakref
from typing import Any, Callable

import numpy as np

from . import nest
from .core import Primitive, Recorder, bind, call_below
from .errors import InvalidArgumentError
from .ops.convert import as_tensor
from .ops.indexing import getitem_p
from .ops.shape import concat_p, stack
from .ops.structural import broadcast_to_p, move_axis, reshape_p
from .progress import progress
from .tensor import Tensor, TensorBase

__all__ = ["vmap", "BatchingError", "BatchDims", "Batcher"]


class BatchingError(NotImplementedError):
    """An op inside `vmap` has no batching rule, or a batched value was read by Python."""


def _example0(value: np.ndarray, axis: int) -> Any:
    """Index 0 of the batch axis, as a view (zeros if the batch is empty)."""
    if value.shape[axis] == 0:
        return np.zeros(value.shape[:axis] + value.shape[axis + 1:], value.dtype)
    return value[(slice(None),) * axis + (0,)]


class BatchDims(tuple):
    """The batch axis of each input of a batched op (None where unbatched), with the batch
    `size` and the `batcher` that runs the rule."""

    def __new__(cls, dims: Any, size: int, batcher: "Batcher") -> "BatchDims":
        self = super().__new__(cls, dims)
        self.size = size
        self.batcher = batcher
        return self


class Batcher(Recorder):
    """The batching interpreter of one `vmap` call (NOTE(strict-nesting) in core)."""

    batching = True
    watches_reads = True
    sees_custom_forward = True

    def __init__(self, size: int, shares: "Batcher | None" = None) -> None:
        self.size = size
        # A batcher that shares another's table resolves the other's per-example
        # stand-ins too (functions closed over them, e.g. a custom grad_fn run later).
        self._table: dict[int, tuple[Tensor, int]] = {} if shares is None else shares._table
        self._refs: dict[int, weakref.ref] = {} if shares is None else shares._refs

    def add(self, batched: Tensor, axis: int) -> Tensor:
        """A per-example stand-in for `batched`, whose batch lives on `axis`."""
        example = Tensor(_example0(batched._value, axis))
        key = id(example)
        table, refs = self._table, self._refs
        table[key] = (batched, axis)

        # Entries die with their per-example tensor: batched intermediates are not kept.
        def drop(_: Any, key: int = key) -> None:
            table.pop(key, None)
            refs.pop(key, None)

        refs[key] = weakref.ref(example, drop)
        return example

    def lookup(self, x: Any) -> tuple[Tensor, int] | None:
        return self._table.get(id(x))

    def claims(self, inputs: Any) -> bool:
        table = self._table
        return any(id(x) in table for x in inputs)

    def compute(self, prim: Primitive, inputs: Any, params: dict, level: int) -> tuple:
        rule = prim.rules.get("batch")
        if rule is None:
            rule = _default_rule(prim)
        vals, dims = [], []
        for x in inputs:
            entry = self._table.get(id(x))
            vals.append(x if entry is None else entry[0])
            dims.append(None if entry is None else entry[1])
        out, out_dims = call_below(level, rule, tuple(vals),
                                   BatchDims(dims, self.size, self), **params)
        if not prim.multiple_results:
            out, out_dims = (out,), (out_dims,)
        return tuple(o if d is None else self.add(o, d) for o, d in zip(out, out_dims, strict=True))

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        pass  # ops with no batched input are per-example constants: nothing to do

    def on_read(self, tensor: Any, how: str) -> None:
        if id(tensor) in self._table:
            raise BatchingError(
                f"vmap: {how} reads the value of a batched tensor; inside vmap each value "
                "stands for a whole batch, so Python control flow on it cannot be batched "
                "(NOTE(batched-reads)). Use tf.where, tf.maximum and similar ops instead.")


_LOOPED: dict = {}  # primitive -> its by_loop rule, made (and warned of) once


def _default_rule(prim: Primitive) -> Callable:
    """The catalog's default batching rule, `by_loop`, with a one-time warning."""
    rule = _LOOPED.get(prim)
    if rule is None:
        warnings.warn(f"vmap: primitive {prim.name!r} has no batching rule; it runs once per "
                      "example. Give it a `batch` rule (tapeflow.extend.define) to vectorize "
                      "it.", stacklevel=5)
        rule = _LOOPED[prim] = by_loop(prim)
    return rule


def by_loop(prim: Primitive) -> Callable:
    """A batching rule that binds `prim` once per example and stacks the results along
    axis 0 (with no batched input, once per example too: a stateful op runs per example).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> from tapeflow.batching import by_loop, BatchDims
        >>> from tapeflow.core import registry
        >>> rule = by_loop(registry()["sin"])
        >>> out, axis = rule((tf.constant([[0.], [1.]]),), BatchDims([0], 2, None))
        >>> out.shape, axis
        (TensorShape([2, 1]), 0)
    """
    def rule(vals: tuple, dims: tuple, **params: Any) -> tuple:
        if dims.size == 0:
            raise BatchingError(f"vmap: primitive {prim.name!r} has no batching rule, and an "
                                "empty batch has no example to run it on.")
        per = []
        for b in range(dims.size):
            args = [v if d is None else v[(slice(None),) * d + (b,)]
                    for v, d in zip(vals, dims, strict=True)]
            out = bind(prim, *args, **params)
            per.append(out if prim.multiple_results else [out])
        outs = tuple(stack([p[k] for p in per]) for k in range(len(per[0])))
        if prim.multiple_results:
            return outs, (0,) * len(outs)
        return outs[0], 0
    return rule


def batch_by_loop(prim: Primitive) -> dict:
    """`by_loop` as a family (catalog.define): the rule of a host callback, which cannot
    be vectorized."""
    return {"batch": by_loop(prim)}


def vmap_sharing(origin: Batcher, f: Callable) -> Callable:
    """vmap over axis 0 of every argument, resolving `origin`'s per-example stand-ins
    (values `f` closed over inside the vmap that `origin` runs)."""
    def batched(*args: Any) -> Any:
        tensors = [(_as_batched(a, 0, i), 0) for i, a in enumerate(args)]
        return _run(f, args, tensors, origin.size, 0, Batcher(origin.size, shares=origin))
    return batched


# ---------------------------------------------------------------------------- axis specs
def _flat_axes(spec: Any, tree: Any, what: str) -> list:
    """Broadcast a prefix spec (int/None, or a structure matching `tree`) to tree's leaves."""
    if spec is None or isinstance(spec, (int, np.integer)):
        return [None if spec is None else int(spec)] * len(nest.flatten(tree))
    if isinstance(spec, (list, tuple)) and isinstance(tree, (list, tuple)):
        if len(spec) != len(tree):
            raise ValueError(f"vmap: `{what}` has {len(spec)} entries but there are {len(tree)} "
                             f"{'arguments' if what == 'in_axes' else 'outputs'}.")
        return [a for s, t in zip(spec, tree, strict=True) for a in _flat_axes(s, t, what)]
    if isinstance(spec, dict) and isinstance(tree, dict):
        if set(spec) != set(tree):
            raise ValueError(f"vmap: `{what}` keys {sorted(spec)} do not match {sorted(tree)}.")
        return [a for k in sorted(tree) for a in _flat_axes(spec[k], tree[k], what)]
    raise ValueError(f"vmap: `{what}`={spec!r} does not match the structure of the "
                     f"{'arguments' if what == 'in_axes' else 'outputs'} ({type(tree).__name__}).")


def _as_batched(x: Any, axis: int, i: int) -> Tensor:
    t = as_tensor(x, "vmap", f"argument leaf {i}")
    nd = np.ndim(t._value)
    if not -nd <= axis < nd:
        raise ValueError(f"vmap: in_axes {axis} is out of range for argument leaf {i} of shape "
                         f"{tuple(np.shape(t._value))}.")
    return t


def _broadcast_out(x: Tensor, size: int, axis: int) -> Tensor:
    """An unbatched output repeated along a new batch axis."""
    shape = tuple(np.shape(x._value))
    x = bind(broadcast_to_p, bind(reshape_p, x, shape=(1,) + shape), shape=(size,) + shape)
    return move_axis(x, 0, axis)


def vmap(f: Callable, in_axes: Any = 0, out_axes: Any = 0,
         chunk_size: int | None = None) -> Callable:
    """Vectorize `f` over a batch axis: ``vmap(f)(xs)[i] == f(xs[i])``, each op run once.

    Args:
        f: a function of tensors (nested lists/tuples/dicts allowed) written for one example.
        in_axes: the batch axis of each argument: an int for all, None for unbatched, or a
            structure matching the arguments (a prefix of it).
        out_axes: where the batch axis goes in each output (int, or a matching structure).
        chunk_size: process the batch in chunks of this many examples (each chunk one
            vectorized pass) to bound peak memory.

    Every primitive of tapeflow's has a batching rule; a user's primitive without one
    runs once per example, with a warning naming it. Python control flow on batched
    values raises (NOTE(batched-reads)).

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> dot = lambda a, b: tf.reduce_sum(a * b)
        >>> tf.vmap(dot, in_axes=(0, None))(np.ones((3, 2)), np.array([1., 2.])).numpy()
        array([3., 3., 3.])
    """
    if chunk_size is not None and int(chunk_size) <= 0:
        raise ValueError(f"vmap: chunk_size must be a positive integer; got {chunk_size!r}.")

    @functools.wraps(f)
    def batched(*args: Any) -> Any:
        leaves = nest.flatten(list(args))
        axes = _flat_axes(tuple(in_axes) if isinstance(in_axes, list) else in_axes,
                          tuple(args), "in_axes")
        tensors, size = [], None
        for i, (x, ax) in enumerate(zip(leaves, axes, strict=True)):
            if ax is None:
                tensors.append(x)
                continue
            t = _as_batched(x, ax, i)
            ax = ax % np.ndim(t._value)
            n = np.shape(t._value)[ax]
            if size is not None and n != size:
                raise InvalidArgumentError(f"vmap: mismatched batch sizes: argument leaf {i} has "
                                           f"{n} along axis {ax}, an earlier one has {size}.")
            size = n
            tensors.append((t, ax))
        if size is None:
            raise ValueError("vmap: no argument is batched (all in_axes are None).")
        if chunk_size is not None and size > chunk_size:
            return _chunked(tensors, args, size, int(chunk_size))
        return _run(f, args, tensors, size, out_axes)

    def _chunked(tensors: list, args: tuple, size: int, chunk: int) -> Any:
        pieces = []
        for start in range(0, size, chunk):
            part = []
            for x in tensors:
                if isinstance(x, tuple):
                    t, ax = x
                    key = (slice(None),) * ax + (slice(start, start + chunk),)
                    part.append((bind(getitem_p, t, key=key), ax))
                else:
                    part.append(x)
            pieces.append(_run(f, args, part, min(chunk, size - start), out_axes))
        return _join(pieces, out_axes)

    return batched


def _join(pieces: list, out_axes: Any) -> Any:
    """The outputs of chunked runs, concatenated along each output's batch axis (outputs
    with out_axes None, the same in every chunk, are taken from the first)."""
    if len(pieces) == 1:
        return pieces[0]
    flat = [nest.flatten(p) for p in pieces]
    axes = _flat_axes(out_axes, pieces[0], "out_axes")
    joined = [flat[0][j] if ax is None or flat[0][j] is None
              else bind(concat_p, *[f[j] for f in flat], axis=ax % np.ndim(flat[0][j]._value))
              for j, ax in enumerate(axes)]
    return nest.pack_sequence_as(pieces[0], joined)


def rows_tensor(rows: Any) -> Tensor:
    """Rows as a tensor: an array made now, or a tensor a graph makes when it runs."""
    return rows if isinstance(rows, Tensor) else Tensor(rows)


def vmap_chunks(fn: Callable, n: int, make_rows: Callable[[int, int], np.ndarray],
                chunk_size: int | None = None, out_axes: Any = 0,
                show_progress: bool = False) -> Any:
    """vmap `fn` over n rows made by ``make_rows(start, stop)``, one chunk at a time, so
    only a chunk of rows (and of every batched intermediate) exists at once. Outputs
    with out_axes 0 are joined along axis 0; those with None are taken from the first
    chunk. `show_progress` reports the chunks done (tapeflow.progress)."""
    chunk = max(n, 1) if chunk_size is None else max(1, int(chunk_size))
    # No rows: one empty chunk, whose vmap gives the outputs' empty batch (a Jacobian of a
    # size-0 input is an empty array, as JAX's).
    starts = progress(range(0, max(n, 1), chunk), desc="Jacobian chunks", enabled=show_progress)
    pieces = [vmap(fn, out_axes=out_axes)(rows_tensor(make_rows(s, min(s + chunk, n))))
              for s in starts]
    return _join(pieces, out_axes)


def _run(f: Callable, args: tuple, tensors: list, size: int, out_axes: Any,
         batcher: Batcher | None = None) -> Any:
    batcher = Batcher(size) if batcher is None else batcher
    with batcher:
        inner = [batcher.add(*x) if isinstance(x, tuple) else x for x in tensors]
        out = f(*nest.pack_sequence_as(list(args), inner))
    flat = nest.flatten(out)
    axes = _flat_axes(out_axes, out, "out_axes")
    result = []
    for j, (o, ax) in enumerate(zip(flat, axes, strict=True)):
        if o is None:  # e.g. an unconnected gradient
            result.append(None)
            continue
        if not isinstance(o, TensorBase):  # a Python number or NumPy array (as JAX)
            o = as_tensor(o, "vmap", f"output {j} of the function")
        entry = batcher.lookup(o)
        if ax is None:
            if entry is not None:
                raise ValueError(f"vmap: output {j} depends on the batch but out_axes is None.")
            result.append(o)
        elif entry is None:
            nd = np.ndim(o._value) + 1
            if not -nd <= ax < nd:
                raise ValueError(f"vmap: out_axes {ax} is out of range for output {j}, which has "
                                 f"rank {nd} with the batch axis.")
            result.append(_broadcast_out(o, size, ax))
        else:
            b, d = entry
            nd = np.ndim(b._value)
            if not -nd <= ax < nd:
                raise ValueError(f"vmap: out_axes {ax} is out of range for output {j}, which has "
                                 f"rank {nd} with the batch axis.")
            result.append(move_axis(b, d, ax))
    return nest.pack_sequence_as(out, result)
