"""tf.py_function and tf.numpy_function: Python code as one op of a program.

Both are stateful primitives: a traced function keeps the call and runs the Python
function again at every replay (never folded, merged or dropped). `py_function` gives
the function tensors and is differentiable as TensorFlow's: its reverse rule runs the
function under a GradientTape, its forward rule under a ForwardAccumulator, each itself a
py_function, so higher derivatives work too. `numpy_function` gives NumPy arrays and has
no derivative. Under vmap both run once per example of a batched input (a host
callback cannot be vectorized) and stack the results; with no batched input, once.
"""

from __future__ import annotations

import functools
from typing import Any, Callable, Sequence

import numpy as np

from . import dtypes as _dt
from .batching import batch_by_loop
from .catalog import CALLS_USER_CODE, HOST_CALLBACK, NO_DERIVATIVE, STATEFUL, Codec, define
from .core import Primitive, bind, no_recorders
from .forward import ForwardAccumulator
from .ops.convert import as_tensor
from .ops.structural import dense_deps, instantiate
from .tape import GradientTape
from .tensor import Tensor, TensorBase, Variable

__all__ = ["py_function", "numpy_function"]


def _results(out: Any, touts: tuple, name: str) -> tuple:
    """The function's results as arrays of the declared dtypes, one per Tout."""
    if out is None and not touts:  # Tout=None: the function is called for its effect
        return ()
    items = list(out) if isinstance(out, (list, tuple)) else [out]
    if len(items) != len(touts):
        raise ValueError(f"{name}: the function returned {len(items)} value(s); Tout declares "
                         f"{len(touts)}.")
    arrays = []
    for i, (item, dtype) in enumerate(zip(items, touts, strict=True)):
        value = np.asarray(item._value if isinstance(item, TensorBase) else item)
        if value.dtype != dtype and not np.can_cast(value.dtype, dtype, "same_kind"):
            raise TypeError(f"{name}: result {i} has dtype {value.dtype}; Tout declares "
                            f"{np.dtype(dtype).name}.")
        arrays.append(value.astype(dtype, copy=False))
    return tuple(arrays)


def _run(*values: np.ndarray, func: Callable, touts: tuple, tensors: bool) -> tuple:
    args = [Tensor(v) for v in values] if tensors else list(values)
    # The function is one op to the program around it: recorders see the op, not its insides.
    with no_recorders():
        out = func(*args)
    return _results(out, touts, "py_function" if tensors else "numpy_function")


def _floating(x: Tensor) -> bool:
    return _dt.kind(x._value.dtype) in "fc"


def _py_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, func: Callable,
            touts: tuple, tensors: bool) -> tuple:
    # The VJP: func again under a tape, seeded with the cotangents; a py_function itself.
    n = len(primals)
    wanted = [i for i in range(n) if needs[i] and _floating(primals[i])]

    def grads(*args: Tensor) -> list:
        xs, gs = list(args[:n]), list(args[n:])
        with GradientTape() as tape:
            tape.watch([xs[i] for i in wanted])
            ys = func(*xs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        got = tape.gradient(ys, [xs[i] for i in wanted], output_gradients=gs)
        return [Tensor(np.zeros_like(xs[i]._value)) if g is None else g
                for i, g in zip(wanted, got, strict=True)]

    if not wanted:
        return (None,) * n
    res = bind(py_function_p, *primals, *[instantiate(c) for c in cts], func=grads,
               touts=tuple(primals[i]._value.dtype for i in wanted), tensors=True)
    out: list = [None] * n
    for i, g in zip(wanted, res, strict=True):
        out[i] = g
    return tuple(out)


def _py_jvp(tangents: tuple, outs: tuple, primals: tuple, func: Callable, touts: tuple,
            tensors: bool) -> tuple:
    # The JVP: func again under a forward accumulator; a py_function itself.
    n = len(primals)
    moving = [i for i in range(n) if _floating(primals[i])]

    def pushed(*args: Tensor) -> list:
        xs, ts = list(args[:n]), list(args[n:])
        with ForwardAccumulator([xs[i] for i in moving], [ts[k] for k in range(len(moving))]) as acc:
            ys = func(*xs)
        ys = list(ys) if isinstance(ys, (list, tuple)) else [ys]
        return [np.zeros(np.shape(y), dtype) if acc.jvp(y) is None else acc.jvp(y)
                for y, dtype in zip(ys, touts, strict=True)]

    ts = [instantiate(tangents[i]) for i in moving]
    return tuple(bind(py_function_p, *primals, *ts, func=pushed, touts=touts, tensors=True))


# A host callback cannot be vectorized: once per example (batching.by_loop). Python code:
# any output may depend on any input.
_CALLBACK = (STATEFUL, HOST_CALLBACK, CALLS_USER_CODE)
# as TensorFlow's: the function is Python, which a SavedModel does not hold
_UNSAVED = Codec(refuse="it calls a Python function at every run, which a SavedModel does not "
                 "hold (as TensorFlow's py_function); compute it with tapeflow ops, or save "
                 "the function without it.")
py_function_p = define(
    Primitive("py_function", lambda *v, func, touts, tensors: _run(
        *v, func=func, touts=touts, tensors=tensors), multiple_results=True,
        effects=_CALLBACK),
    batch_by_loop, vjp=_py_vjp, jvp=_py_jvp, sparsity=dense_deps, save=_UNSAVED)

numpy_function_p = define(
    Primitive("numpy_function", lambda *v, func, touts, tensors: _run(
        *v, func=func, touts=touts, tensors=tensors), multiple_results=True,
        effects=_CALLBACK + (NO_DERIVATIVE,)),
    batch_by_loop, save=_UNSAVED)


def _call(prim: Primitive, func: Callable, inp: Sequence[Any], Tout: Any, name: str,
          tensors: bool) -> Any:
    if not callable(func):
        raise TypeError(f"{name}: `func` must be callable; got {type(func).__name__}.")
    if not isinstance(inp, (list, tuple)):
        raise TypeError(f"{name}: `inp` must be a list of tensors; got {type(inp).__name__}.")
    single = Tout is not None and not isinstance(Tout, (list, tuple))
    touts = () if Tout is None else tuple(
        _dt.as_dtype(t)._np for t in ([Tout] if single else Tout))
    args = [x.value() if isinstance(x, Variable) else as_tensor(x, name, "inp")
            for x in inp]
    outs = bind(prim, *args, func=func, touts=touts, tensors=tensors)
    if Tout is None:
        return None
    return outs[0] if single else list(outs)


def py_function(func: Callable | None = None, inp: Sequence[Any] | None = None,
                Tout: Any = None, name: str | None = None) -> Any:
    """Run `func` on the tensors `inp` as one op: eagerly, at every call and every replay
    of a traced function, differentiable through what `func` computes. `Tout` is a dtype
    (one result) or a list of dtypes (a list of results). Without `func` and `inp`, a
    decorator, as TensorFlow's: ``@tf.py_function(Tout=tf.float32)`` makes a function of
    tensors that runs as one op.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant(2.0)
        >>> with tf.GradientTape() as tape:
        ...     tape.watch(x)
        ...     y = tf.py_function(lambda v: v ** 3, [x], tf.float32)
        >>> float(y), float(tape.gradient(y, x))
        (8.0, 12.0)
        >>> @tf.py_function(Tout=tf.float32)
        ... def cube(v):
        ...     return v ** 3
        >>> float(cube(x))
        8.0
    """
    if func is None or inp is None:
        return _decorator(py_function_p, func, inp, Tout, "py_function", tensors=True)
    return _call(py_function_p, func, inp, Tout, "py_function", tensors=True)


def _decorator(prim: Primitive, func: Callable | None, inp: Any, Tout: Any, name: str,
               tensors: bool) -> Any:
    """TensorFlow's decorator form: `func` wrapped so that its arguments are `inp`."""
    if inp is not None:
        raise TypeError(f"{name}: `inp` without `func`: pass both, or neither to decorate a "
                        "function.")

    def decorate(f: Callable) -> Callable:
        @functools.wraps(f)
        def wrapped(*args: Any) -> Any:
            return _call(prim, f, list(args), Tout, name, tensors)
        return wrapped

    return decorate if func is None else decorate(func)


def numpy_function(func: Callable | None = None, inp: Sequence[Any] | None = None,
                   Tout: Any = None, stateful: bool = True, name: str | None = None) -> Any:
    """Run `func` on the NumPy values of `inp` as one op, at every call and every replay
    of a traced function; it has no derivative. (`stateful` is accepted; the call is
    always kept, as a stateful one.)

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> tf.numpy_function(lambda a: np.sort(a), [tf.constant([3, 1, 2])], tf.int32).numpy()
        array([1, 2, 3], dtype=int32)
    """
    if func is None or inp is None:
        return _decorator(numpy_function_p, func, inp, Tout, "numpy_function", tensors=False)
    return _call(numpy_function_p, func, inp, Tout, "numpy_function", tensors=False)
