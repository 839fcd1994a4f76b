"""Define your own primitives: the same door tapeflow's own ops use.

A primitive is its NumPy implementation plus one rule per interpreter: a forward
(JVP) rule, a reverse (VJP) rule and a batching rule, written with tapeflow ops so
that tapes and accumulators around them see their work (higher derivatives, HVPs).
The rule families make most of them one line each; `tapeflow.testing.check_grads`
checks them against finite differences.

Example:
    >>> import numpy as np, tapeflow as tf
    >>> from tapeflow import extend
    >>> # cube(x) = x^3, with d cube = 3 x^2 dx
    >>> cube_p = extend.Primitive("my_cube", lambda x: x ** 3)
    >>> extend.defjvp(cube_p, lambda t, ans, x: t * 3. * x * x)
    >>> extend.defvjp(cube_p, lambda g, ans, x: g * 3. * x * x)
    >>> extend.batch_unary(cube_p)
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

from .core import Primitive, Zero, bind
from .ops.convert import as_tensor, binary_args, check_dtype
from .ops.structural import (add_any, batch_along_axis, batch_elementwise, batch_reduction,
                             batch_unary, defjvp, defvjp, instantiate, linear, move_to_front,
                             shape_of, unary, unbroadcast)

__all__ = ["Primitive", "Zero", "bind", "defjvp", "defvjp", "linear", "unary",
           "batch_elementwise", "batch_unary", "batch_reduction", "batch_along_axis",
           "add_any", "instantiate", "move_to_front", "shape_of", "unbroadcast", "as_tensor",
           "binary_args", "check_dtype"]
