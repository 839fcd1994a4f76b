"""Define your own primitives: the same door tapeflow's own ops use.

A primitive is its NumPy implementation plus rules, one per kind of the catalog
(tapeflow/catalog.py: `KINDS`): a forward (JVP) rule and a reverse (VJP) rule make it
differentiable in both modes, written with tapeflow ops so that tapes and accumulators
around them see their work (higher derivatives, HVPs). `define` assigns them; the rule
families (`per_input`, `unary`, `binary`, `linear`, `batch_*`) make most of them one line
each. Everything else has a default: vmap runs a primitive without a batching rule once
per example (with a warning), a sparse Jacobian takes every output to depend on every
input, a sparse Hessian takes it to bend in every input it depends on (its `curvature`:
`LINEAR`, `PIECEWISE_LINEAR`, `MULTILINEAR` or a `Curvature` says otherwise), and
`function(jit_compile=True)` calls its impl back on the host inside the compiled
program. `tapeflow.testing.check_grads` checks the rules against finite
differences.

Example:
    >>> import numpy as np, tapeflow as tf
    >>> from tapeflow import extend
    >>> # cube(x) = x^3, with d cube = 3 x^2 dx; the VJP reads x
    >>> cube_p = extend.define(
    ...     extend.Primitive("my_cube", lambda x: x ** 3),
    ...     extend.per_input(jvp=(lambda t, ans, x: t * 3. * x * x,),
    ...                      vjp=(lambda g, ans, x: g * 3. * x * x,), reads=("x",)))
    >>> def cube(x):
    ...     return extend.bind(cube_p, extend.as_tensor(x, "cube", "x"))
    >>> x = tf.constant([1., 2.])
    >>> with tf.GradientTape() as tape:
    ...     tape.watch(x)
    ...     y = cube(x)
    >>> tape.gradient(y, x).numpy()
    array([ 3., 12.], dtype=float32)
    >>> tf.testing.check_grads(cube, [np.array([0.5, -1.5])], order=2)
"""

from __future__ import annotations

from .catalog import (CALLS_USER_CODE, CUSTOM_GRADIENT, EFFECTS, HOST_CALLBACK, IDENTITY, KINDS,
                      NO_DERIVATIVE, PER_EXAMPLE, READS_VARIABLE, STATEFUL, Effect,
                      Codec, Hints, Kind, Lowering, define, rule)
from .core import Primitive, Zero, bind
from .hessian_patterns import LINEAR, MULTILINEAR, NONLINEAR, PIECEWISE_LINEAR, Curvature
from .ops.convert import as_tensor, binary_args, check_dtype
from .ops.structural import (add_any, batch_along_axis, batch_elementwise, batch_reduction,
                             batch_unary, binary, instantiate, linear, move_to_front, per_input,
                             shape_of, twin, unary, unbroadcast)
from .patterns import (along_axis_deps, dense_deps, elementwise_deps, per_example_deps,
                       reduction_deps)

__all__ = ["Primitive", "define", "rule", "Kind", "KINDS", "Lowering", "Hints", "Codec", "Effect",
           "EFFECTS", "NO_DERIVATIVE", "STATEFUL", "PER_EXAMPLE", "IDENTITY", "READS_VARIABLE",
           "CUSTOM_GRADIENT", "HOST_CALLBACK", "CALLS_USER_CODE", "Zero", "bind",
           "per_input", "linear", "unary", "binary", "twin", "batch_elementwise",
           "batch_unary", "batch_reduction", "batch_along_axis", "elementwise_deps",
           "reduction_deps", "along_axis_deps", "per_example_deps", "dense_deps", "add_any",
           "instantiate", "move_to_front", "shape_of", "unbroadcast", "as_tensor",
           "binary_args", "check_dtype", "Curvature", "LINEAR", "PIECEWISE_LINEAR",
           "MULTILINEAR", "NONLINEAR"]
