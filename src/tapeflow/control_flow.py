"""TensorFlow's control flow: tf.scan, tf.foldl, tf.foldr and tf.map_fn (a loop over a
leading axis as one op, the scan primitive of loops.py), and tf.cond, tf.switch_case,
tf.while_loop and tf.vectorized_map.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import nest
from .batching import vmap
from .core import bind
from .ops.convert import as_tensor
from .ops.shape import concat
from .ops.structural import reshape_p, shape_of
from .loops import bind_scan
from .tensor import Tensor, Variable

__all__ = ["scan", "foldl", "foldr", "map_fn", "cond", "switch_case", "while_loop",
           "vectorized_map"]


# ------------------------------------------------------------------ TensorFlow's functions
def _tensors(structure: Any, what: str) -> list:
    return [as_tensor(x, "scan", what) for x in nest.flatten(structure)]


def _same_structure(a: Any, b: Any, what: str) -> None:
    if nest.is_nested(a) != nest.is_nested(b) or len(nest.flatten(a)) != len(nest.flatten(b)):
        raise TypeError(f"scan: {what}: the function returned a structure of "
                        f"{len(nest.flatten(b))} tensors where {len(nest.flatten(a))} were "
                        "expected (the initializer's structure).")


def scan(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
         back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
         reverse: bool = False, name: str | None = None) -> Any:
    """TensorFlow's tf.scan: ``a = fn(a, e)`` for each `e` of `elems` along their first
    axis (from the last with `reverse`), returning every `a`, stacked. Without an
    initializer, the first element is the first `a`. One op (NOTE in control_flow): traced
    once, differentiable in both modes, batched by vmap, compiled to lax.scan under
    jit_compile=True.

    Example:
        >>> import tapeflow as tf
        >>> tf.scan(lambda a, x: a + x, tf.constant([1., 2., 3., 4.])).numpy()
        array([ 1.,  3.,  6., 10.], dtype=float32)
    """
    xs = _tensors(elems, "elems")
    if initializer is None:
        first = [x[-1] if reverse else x[0] for x in xs]
        rest = [x[:-1] if reverse else x[1:] for x in xs]
        structure = elems
        init = first
    else:
        structure, init, rest = initializer, _tensors(initializer, "initializer"), xs
    nc = len(init)

    def step(*a: Any) -> list:
        acc = nest.pack_sequence_as(structure, list(a[:nc]))
        new = fn(acc, nest.pack_sequence_as(elems, list(a[nc:])))
        _same_structure(structure, new, "fn(accumulator, element)")
        flat = nest.flatten(new)
        return flat + flat

    out = bind_scan(step, init, rest, reverse)
    stacked = out[nc:]
    if initializer is None:  # the first element leads the results
        stacked = [_join(f, s, reverse) for f, s in zip(first, stacked, strict=True)]
    return nest.pack_sequence_as(structure, stacked)


def _join(first: Tensor, rest: Tensor, reverse: bool) -> Tensor:
    one = bind(reshape_p, first, shape=(1,) + shape_of(first))
    return concat([rest, one] if reverse else [one, rest], axis=0)


def foldl(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """TensorFlow's tf.foldl: ``a = fn(a, e)`` for each `e` of `elems` from the first;
    returns the last `a` (the first element, without an initializer, starts it).

    Example:
        >>> import tapeflow as tf
        >>> float(tf.foldl(lambda a, x: a * x, tf.constant([1., 2., 3., 4.])))
        24.0
    """
    return _fold(fn, elems, initializer, reverse=False)


def foldr(fn: Callable, elems: Any, initializer: Any = None, parallel_iterations: int = 10,
          back_prop: bool = True, swap_memory: bool = False, name: str | None = None) -> Any:
    """TensorFlow's tf.foldr: as foldl, from the last element to the first.

    Example:
        >>> import tapeflow as tf
        >>> float(tf.foldr(lambda a, x: a - x, tf.constant([1., 2., 10.])))
        7.0
    """
    return _fold(fn, elems, initializer, reverse=True)


def _fold(fn: Callable, elems: Any, initializer: Any, reverse: bool) -> Any:
    xs = _tensors(elems, "elems")
    if initializer is None:
        structure = elems
        init = [x[-1] if reverse else x[0] for x in xs]
        xs = [x[:-1] if reverse else x[1:] for x in xs]
    else:
        structure, init = initializer, _tensors(initializer, "initializer")
    nc = len(init)

    def step(*a: Any) -> list:
        new = fn(nest.pack_sequence_as(structure, list(a[:nc])),
                 nest.pack_sequence_as(elems, list(a[nc:])))
        _same_structure(structure, new, "fn(accumulator, element)")
        return nest.flatten(new)

    return nest.pack_sequence_as(structure, bind_scan(step, init, xs, reverse)[:nc])


def map_fn(fn: Callable, elems: Any, dtype: Any = None, parallel_iterations: Any = None,
           back_prop: bool = True, swap_memory: bool = False, infer_shape: bool = True,
           name: str | None = None, fn_output_signature: Any = None) -> Any:
    """TensorFlow's tf.map_fn: `fn` applied to each element of `elems` along their first
    axis, one at a time, the results stacked (tf.vectorized_map / tapeflow.vmap run all at
    once where `fn` allows).

    Example:
        >>> import tapeflow as tf
        >>> tf.map_fn(lambda x: x * x, tf.constant([1., 2., 3.])).numpy()
        array([1., 4., 9.], dtype=float32)
    """
    xs = _tensors(elems, "elems")
    structure: list = []

    def step(*a: Any) -> list:
        out = fn(nest.pack_sequence_as(elems, list(a)))
        structure.append(out)
        return nest.flatten(out)

    out = bind_scan(step, [], xs, False)
    return nest.pack_sequence_as(structure[0], out)


# ------------------------------------------------------------------ branches and while loops
# NOTE(python-control-flow): tf.cond, tf.switch_case and tf.while_loop run as the Python
# they stand for: the predicate (and each loop test) is read as a Python bool, which a
# traced function guards (NOTE(value-reads) in graph/trace.py): a call that takes
# another branch, or loops another number of times, is traced again. Every value equals
# the eager program's; the graph holds the branch taken, or the loop unrolled.
def cond(pred: Any, true_fn: Callable[[], Any] | None = None,
         false_fn: Callable[[], Any] | None = None, name: str | None = None) -> Any:
    """TensorFlow's tf.cond: `true_fn()` if `pred` holds, else `false_fn()`
    (NOTE(python-control-flow) in control_flow.py: traced, each branch is a graph of its
    own). For an elementwise choice in one graph, use tf.where.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant(3.0)
        >>> float(tf.cond(x > 0, lambda: x * 2.0, lambda: -x))
        6.0
    """
    if true_fn is None or false_fn is None:
        raise TypeError("cond: both `true_fn` and `false_fn` must be given (callables of no "
                        "arguments).")
    return nest.map_structure(_as_result, true_fn() if _truth(pred, "cond") else false_fn())


def switch_case(branch_index: Any, branch_fns: Any, default: Callable[[], Any] | None = None,
                name: str | None = None) -> Any:
    """TensorFlow's tf.switch_case: ``branch_fns[branch_index]()``, or `default()` (the
    last branch when not given) for an index out of range (NOTE(python-control-flow)).

    Example:
        >>> import tapeflow as tf
        >>> branches = [lambda: tf.constant(10.), lambda: tf.constant(20.)]
        >>> float(tf.switch_case(tf.constant(1), branches))
        20.0
    """
    fns = dict(branch_fns) if isinstance(branch_fns, dict) else dict(enumerate(branch_fns))
    if not fns:
        raise ValueError("switch_case: `branch_fns` is empty.")
    index = int(as_tensor(branch_index, "switch_case", "branch_index"))
    fn = fns.get(index, default if default is not None else fns[max(fns)])
    return nest.map_structure(_as_result, fn())


def while_loop(cond: Callable[..., Any], body: Callable[..., Any], loop_vars: Any,
               shape_invariants: Any = None, parallel_iterations: int = 10,
               back_prop: bool = True, swap_memory: bool = False,
               maximum_iterations: Any = None, name: str | None = None) -> Any:
    """TensorFlow's tf.while_loop: ``loop_vars = body(*loop_vars)`` while
    ``cond(*loop_vars)`` holds (and fewer than `maximum_iterations` have run); returns
    the last loop variables, in their structure (NOTE(python-control-flow): traced, the
    loop is unrolled for the number of iterations taken; tf.scan / tf.foldl are one op).

    Example:
        >>> import tapeflow as tf
        >>> i, total = tf.while_loop(lambda i, t: i < 4, lambda i, t: (i + 1, t + i),
        ...                          [tf.constant(0), tf.constant(0)])
        >>> int(i), int(total)
        (4, 6)
    """
    listed = isinstance(loop_vars, (list, tuple)) and not hasattr(loop_vars, "_fields")
    state = nest.map_structure(_as_result, loop_vars)
    limit = None if maximum_iterations is None else int(
        as_tensor(maximum_iterations, "while_loop", "maximum_iterations"))
    steps = 0
    while (limit is None or steps < limit) and _truth(
            cond(*state) if listed else cond(state), "while_loop"):
        new = body(*state) if listed else body(state)
        if listed and not isinstance(new, (list, tuple)):
            new = [new]
        if len(nest.flatten(new)) != len(nest.flatten(state)):
            raise TypeError(f"while_loop: `body` returned {len(nest.flatten(new))} tensors for "
                            f"{len(nest.flatten(state))} loop variables; it returns them all, "
                            "in their structure.")
        state = nest.pack_sequence_as(loop_vars, [_as_result(v) for v in nest.flatten(new)])
        steps += 1
    return state


def vectorized_map(fn: Callable[[Any], Any], elems: Any,
                   fallback_to_while_loop: bool = True, warn: bool = True) -> Any:
    """TensorFlow's tf.vectorized_map: `fn` over the first axis of `elems`, all at once
    (tapeflow.vmap; every primitive has a batching rule).

    Example:
        >>> import tapeflow as tf
        >>> tf.vectorized_map(lambda x: tf.reduce_sum(x * x), tf.ones([3, 2])).numpy()
        array([2., 2., 2.], dtype=float32)
    """
    return vmap(fn)(elems)


def _truth(pred: Any, who: str) -> bool:
    if isinstance(pred, (bool, np.bool_)):
        return bool(pred)
    t = as_tensor(pred, who, "pred")
    if np.ndim(t._value) != 0:
        raise ValueError(f"{who}: the predicate must be a scalar; got shape "
                         f"{tuple(np.shape(t._value))}.")
    return bool(t)


def _as_result(x: Any) -> Any:
    return x if x is None or isinstance(x, (Tensor, Variable)) or not isinstance(
        x, (bool, int, float, complex, np.ndarray, np.generic)) else as_tensor(x, "while_loop",
                                                                             "loop variable")
