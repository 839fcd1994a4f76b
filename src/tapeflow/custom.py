"""custom_gradient and recompute_grad: user-defined reverse rules.

A `custom_gradient` call runs the user's forward function hidden from every
recorder (only variable reads are noted), then binds one primitive whose
outputs are the forward results and whose VJP is the user's `grad_fn`. Its
forward-mode rule is the transpose of `grad_fn` (computed with a tape over the
upstream gradient, which `grad_fn` is linear in), so forward mode agrees with
the custom gradient, as TensorFlow.
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Callable

import numpy as np

from . import nest
from .batching import vmap_sharing
from .catalog import CUSTOM_GRADIENT, READS_VARIABLE, Codec, define
from .core import Primitive, Recorder, Zero, bind, substack
from .ops.convert import as_tensor
from .ops.structural import (add_any, zeros_of, broadcast_to_p, dense_deps, instantiate, move_to_front,
                             multiply_p, reduce_sum_p, reshape_p)
from .tape import GradientTape
from .tensor import Tensor, TensorBase, Variable

__all__ = ["custom_gradient", "recompute_grad", "VariableReads"]


class VariableReads(Recorder):
    """Notes the trainable variables a function reads while it records: a
    custom_gradient's forward function, a differentiable ODE's right-hand side
    (scipy_ode.py)."""

    def __init__(self) -> None:
        self.variables: dict[int, Variable] = {}

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        if READS_VARIABLE in prim.effects and inputs[0]._trainable:
            self.variables.setdefault(id(inputs[0]), inputs[0])


def call_grad_fn(grad_fn: Callable, cts: list, variables: list, n_inputs: int) -> list:
    """grad_fn's results as one cotangent (or None) per input, then per variable."""
    if variables:
        input_grads, var_grads = grad_fn(*cts, variables=variables)
        var_grads = list(var_grads)
        if len(var_grads) != len(variables):
            raise ValueError(f"custom_gradient: grad_fn returned {len(var_grads)} variable "
                             f"gradients for {len(variables)} variables.")
    else:
        input_grads, var_grads = grad_fn(*cts), []
    input_grads = list(input_grads) if isinstance(input_grads, (list, tuple)) else [input_grads]
    if len(input_grads) != n_inputs:
        raise ValueError(f"custom_gradient: grad_fn returned {len(input_grads)} gradients for "
                         f"{n_inputs} tensor inputs; return one per input (None for none).")
    return [None if g is None else as_tensor(g, "custom_gradient", "grad_fn result")
            for g in input_grads + var_grads]


def _custom_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, grad_fn: Callable,
                n_inputs: int, n_vars: int) -> tuple:
    variables = list(primals[n_inputs:n_inputs + n_vars])
    grads = call_grad_fn(grad_fn, [instantiate(c) for c in cts], variables, n_inputs)
    return tuple(grads) + (None,) * len(outs)  # the trailing result inputs get nothing


def _custom_jvp(tangents: tuple, outs: tuple, primals: tuple, grad_fn: Callable, n_inputs: int,
                n_vars: int) -> tuple:
    # The JVP is the transpose of the (linear) custom VJP: d/du <grad_fn(u), t>.
    us = [zeros_of(o) for o in outs]  # zeros of sizes a size-generic trace reads
    with GradientTape() as tape:
        tape.watch(us)
        grads = call_grad_fn(grad_fn, us, list(primals[n_inputs:n_inputs + n_vars]), n_inputs)
        total = None
        for g, t in zip(grads, tangents[:n_inputs + n_vars], strict=True):
            if g is not None and type(t) is not Zero:
                total = add_any(total, bind(reduce_sum_p, bind(multiply_p, g, t), axis=None,
                                            keepdims=False))
    if total is None:
        return tuple(Zero.like(o) for o in outs)
    out = tape.gradient(total, us)
    return tuple(Zero.like(o) if t is None else t for o, t in zip(outs, out, strict=True))


def _custom_batch(vals: tuple, dims: tuple, grad_fn: Callable, n_inputs: int,
                  n_vars: int) -> tuple:
    # Batch the forward results and the backward function (vmap of grad_fn); an
    # unbatched input's gradient is summed over the batch, since every example shares it.
    size = dims.size
    n_in = n_inputs + n_vars
    results = []
    for r, d in zip(vals[n_in:], dims[n_in:], strict=True):
        if d is None:
            r = bind(broadcast_to_p, bind(reshape_p, r, shape=(1,) + np.shape(r._value)),
                     shape=(size,) + np.shape(r._value))
        results.append(move_to_front(r, d))
    in_dims = dims[:n_in]
    inputs = [move_to_front(v, d) for v, d in zip(vals[:n_in], in_dims, strict=True)]

    origin = dims.batcher

    def batched_grad_fn(*cts: Any, variables: list | None = None) -> Any:
        # grad_fn may close over forward values: run it where origin's stand-ins resolve.
        per_example = vmap_sharing(origin, lambda *c: call_grad_fn(
            grad_fn, list(c), list(variables or []), n_inputs))
        grads = per_example(*cts)
        grads = [g if g is None or d is not None
                 else bind(reduce_sum_p, g, axis=(0,), keepdims=False)
                 for g, d in zip(grads, in_dims, strict=True)]
        return (grads[:n_inputs], grads[n_inputs:]) if variables else grads

    outs = bind(custom_gradient_p, *inputs, *results, grad_fn=batched_grad_fn,
                n_inputs=n_inputs, n_vars=n_vars)
    return outs, [0] * len(outs)


def _results_of(*xs: Any, grad_fn: Any, n_inputs: int, n_vars: int) -> list:
    return list(xs[n_inputs + n_vars:])


# Inputs: the tensor arguments, the variables read, then the forward results (so
# interpreters that batch or trace see them); outputs: the results.
# The user's rule may relate any output to any input: every output on all of them. Forward,
# the op is its results (the last inputs); its rule matters only to derivatives.
def _unsaved_grad_fn(*cts: Any, variables: Any = None) -> Any:
    raise RuntimeError("custom_gradient: this graph was loaded from a SavedModel, which holds "
                       "its grad_fn as the graph traced when it was saved, not the Python "
                       "function; that graph read a value there (a guard) that differs now, and "
                       "the Python grad_fn that could run instead was not saved.")


# A SavedModel keeps the grad_fn as its traced graph (the node's backward), not its Python.
_SAVE = Codec(lambda params: {k: v for k, v in params.items() if k != "grad_fn"},
              lambda params: dict(params, grad_fn=_unsaved_grad_fn))
custom_gradient_p = define(
    Primitive("custom_gradient", _results_of, multiple_results=True,
              effects=(CUSTOM_GRADIENT,)),
    vjp=_custom_vjp, jvp=_custom_jvp, batch=_custom_batch, sparsity=dense_deps, save=_SAVE,
    lower=lambda jax, *args, n_inputs, n_vars, **params: tuple(args[n_inputs + n_vars:]))


def _as_input(x: Any, f: Callable, what: str) -> Tensor:
    """An argument or result of a custom_gradient function as a tensor (a variable read;
    Python numbers and NumPy arrays converted, as TensorFlow)."""
    if type(x) is Tensor:
        return x
    if isinstance(x, Variable):
        return x.value()
    try:
        return as_tensor(x, "custom_gradient", what)
    except TypeError as e:
        raise TypeError(f"custom_gradient: {getattr(f, '__name__', 'f')}'s {what} is a "
                        f"{type(x).__name__}, which is not a tensor and does not convert to one: "
                        f"{e}") from None


def custom_gradient(f: Callable | None = None) -> Callable:
    """Decorator giving `f` a hand-written gradient, as `tf.custom_gradient`.

    `f(*x)` returns ``(y, grad_fn)``; ``grad_fn(*dy)`` returns one gradient per
    (flattened) positional argument of `f`, Python numbers included, None where there is
    none. `y` may hold Python numbers and NumPy arrays (converted to tensors). If `f` reads trainable variables,
    `grad_fn` must accept ``variables=`` and return ``(input_grads, variable_grads)``.
    Forward-mode JVPs through `f` are the transpose of `grad_fn`. On a method, the
    instance is passed through to `f`, not taken for an input (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> @tf.custom_gradient
        ... def clip_grad(x):
        ...     def grad(dy):
        ...         return tf.maximum(tf.minimum(dy, 1.), -1.)
        ...     return tf.identity(x), grad
        >>> x = tf.constant(2.)
        >>> with tf.GradientTape() as g:
        ...     g.watch(x)
        ...     y = clip_grad(x) * 10.
        >>> g.gradient(y, x).numpy()
        np.float32(1.0)
    """
    if f is None:
        return custom_gradient
    return _CustomGradient(f)


class _CustomGradient:
    """`custom_gradient(f)`: callable as `f`; on a class, a method, whose instance goes to
    `f` without being an input."""

    def __init__(self, f: Callable) -> None:
        self._f = f
        functools.update_wrapper(self, f)

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        if instance is None:
            return self
        return functools.partial(_with_custom_gradient, self._f, (instance,))

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return _with_custom_gradient(self._f, (), *args, **kwargs)


def _with_custom_gradient(f: Callable, bound: tuple, *args: Any, **kwargs: Any) -> Any:
    """f(*bound, *args) with its custom gradient; `bound` (a method's instance) is passed
    through, every other positional argument is an input."""
    watcher = VariableReads()
    # Hide the forward from tapes and accumulators (the custom rule replaces its
    # derivative) but not from vmap and tracing, which must compute or record it.
    with substack(lambda r: r.sees_custom_forward, extra=(watcher,)):
        result, grad_fn = f(*bound, *args, **kwargs)
    flat_out = [_as_input(o, f, f"output {i}") for i, o in enumerate(nest.flatten(result))]
    # Every positional argument is an input, Python numbers and arrays included (as
    # TensorFlow): grad_fn returns one gradient per flattened argument.
    inputs = [_as_input(a, f, f"argument {i}")
              for i, a in enumerate(nest.flatten(list(args)))]
    arg_ids = {id(a) for a in nest.flatten(list(args))}
    variables = [v for k, v in watcher.variables.items() if k not in arg_ids]
    if variables and "variables" not in inspect.signature(grad_fn).parameters and not any(
            p.kind is p.VAR_KEYWORD for p in inspect.signature(grad_fn).parameters.values()):
        raise TypeError(f"custom_gradient: {f.__name__} reads the variables "
                        f"{[v.name for v in variables]}, so its grad_fn must accept a "
                        "`variables` keyword argument and return (input_grads, variable_grads).")
    outs = bind(custom_gradient_p, *inputs, *variables, *flat_out, grad_fn=grad_fn,
                n_inputs=len(inputs), n_vars=len(variables))
    return nest.pack_sequence_as(result, outs)


def recompute_grad(f: Callable) -> Callable:
    """Run `f` without keeping its intermediates; recompute them in the backward pass.

    Trades compute for memory (gradient checkpointing), as `tf.recompute_grad`.

    Example:
        >>> import tapeflow as tf
        >>> g_fn = tf.recompute_grad(lambda x: tf.sin(x) * x)
        >>> x = tf.constant(1.)
        >>> with tf.GradientTape() as t:
        ...     t.watch(x)
        ...     y = g_fn(x)
        >>> round(float(t.gradient(y, x)), 5)  # cos(1) + sin(1)
        1.38177
    """
    @custom_gradient
    @functools.wraps(f)
    def inner(*args: Any) -> Any:
        result = f(*args)

        def grad_fn(*dys: Any, variables: list | None = None) -> Any:
            flat = nest.flatten(list(args))
            sources = [a for a in flat if isinstance(a, TensorBase)]
            with GradientTape() as tape:
                tape.watch(sources)
                if variables:
                    tape.watch(variables)
                again = f(*args)
            grads = tape.gradient(again, sources + list(variables or []),
                                  output_gradients=list(dys) if len(dys) > 1 else dys[0])
            n = len(sources)
            # One gradient per flattened argument; None for the non-tensor ones.
            by_arg = {id(a): g for a, g in zip(sources, grads[:n], strict=True)}
            input_grads = [by_arg.get(id(a)) for a in flat]
            return (input_grads, grads[n:]) if variables else input_grads

        return result, grad_fn

    return inner


def grad_pass_through(f: Callable) -> Callable:
    """tf.grad_pass_through: `f` in the forward pass, the identity in the backward pass
    (the cotangent of the result goes to the argument unchanged; variables `f` touches
    get none). The output must have the argument's shape.

    Example:
        >>> import tapeflow as tf
        >>> x, z = tf.Variable(1.0), tf.Variable(3.0)
        >>> with tf.GradientTape() as tape:
        ...     y = tf.grad_pass_through(x.assign)(z ** 2)  # assign has no gradient
        ...     loss = y * 2.0
        >>> float(tape.gradient(loss, z))
        12.0
    """
    @custom_gradient
    def passed(*args: Any, **kwargs: Any) -> Any:
        def grad(*dys: Any, variables: Any = None) -> Any:
            cts = dys[0] if len(dys) == 1 else list(dys)
            return (cts, [None] * len(variables)) if variables is not None else cts
        return f(*args, **kwargs), grad

    return functools.wraps(f)(passed) if callable(f) and hasattr(f, "__name__") else passed
