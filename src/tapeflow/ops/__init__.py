"""The ops, one module per family: each primitive's impl, JVP, VJP and batching rule in
one block, and the public ops (the TensorFlow functions) built on them.

- structural: the bottom. The structural primitives (add, multiply, conj, cast,
  select, reshape, transpose, broadcast_to, fill, reduce_sum), the helpers built only
  from them (unbroadcast, move_axis, ...) and the rule families (per_input, linear,
  unary, binary, batch_*), which catalog.define takes.
- simplify: the graph passes' simplify rules (x * 1 is x; x + 0. is not, at -0.).
- convert: argument conversion for public ops (as_tensor, binary_args, static_shape).
- windows: window geometry conv and pooling share (sizes, padding, strides).
- conv_banded: conv's three implementations as banded products, for unstrided
  convolutions of few channels (NOTE(banded-conv)).
- conv_phases: conv's input gradient as one product over output phases, for strided
  convolutions of few channels (NOTE(phase-conv)).
- sizes: shapes as tensors (shape, size) and the ops that take their shape from one
  (broadcast_dyn, sum_dyn, reshape_dyn), NOTE(dynamic-shapes).
- elementwise: arithmetic, comparison, logic, cast, where, rounding.
- transcendental: pow, exp, log, trigonometric and hyperbolic functions, sigmoid,
  softplus, erf.
- complex: complex, real, imag, conj, abs, squared_difference.
- indexing: x[key], gather, gather_nd.
- shape: reshape, transpose, expand_dims, squeeze, broadcast_to, concat, stack,
  unstack, split, tile, reverse, pad, identity, stop_gradient.
- reduction: reduce_*, argmax/argmin, cumsum, cumprod.
- creation: zeros, ones, zeros_like, ones_like, fill, eye, range, linspace, one_hot,
  shape, size, rank.
- einsum: einsum (the primitive, its rules and the subscript parsing), tensordot.
- linalg: matmul, matvec, matrix_transpose, adjoint, diag_part, trace, cross.
- decompositions: inv, det, slogdet, solve, triangular_solve, cholesky, eigh, norm.
- nn: relu and the other activations, softmax, the cross-entropies, bias_add, l2_loss.
- conv: conv2d and its two transposes.
- pooling: max_pool2d (and its two companions), avg_pool2d.
- random: normal, uniform, truncated_normal, categorical, shuffle, set_seed, the
  stateless draws and Generator: draws as stateful primitives.
- random_dists: gamma, poisson, stateless_gamma, stateless_poisson (gamma's implicit gradient).
- conv_variants: conv1d, conv2d_transpose, depthwise and separable convolution, 1-D
  pooling, built on conv and pooling.
- nn_composites: moments, weighted_moments, normalize_moments, batch_normalization,
  l2_normalize, dropout, silu/swish, softsign.
- sorting: sort, argsort, top_k, searchsorted, unique, unique_with_counts, roll.
- segments: segment reductions, bincount, boolean_mask, sequence_mask, band_part,
  count_nonzero.
- image: tf.image's resizing, crops, pads, flips, conversions, colour adjustments,
  measures and random ops.
- image_color: tf.image's colour spaces: HSV, YIQ, YUV, grayscale.
- image_quality: psnr, ssim, ssim_multiscale.

A family module builds on the modules listed before it, never on one after it
(tests/test_imports.py checks this order and that no import cycle exists). Each
declares its public names once, in `EXPORTS`: name -> the TensorFlow namespaces it
appears in, "tf" being the top level (``"add": "tf math"``). `namespace` collects them: ``tapeflow``, ``tapeflow.math``,
``tapeflow.linalg``, ``tapeflow.nn`` and ``tapeflow.random`` are built from it.

Example:
    >>> from tapeflow import ops
    >>> sorted(ops.namespace("random"))[:4]
    ['Generator', 'categorical', 'gamma', 'normal']
"""

from __future__ import annotations

import functools
import types
from typing import Any, Callable

from .. import nest
from ..errors import SymbolicValueError

from . import simplify, structural, convert, windows  # noqa: F401 - the bottom and the helpers of families
from . import (complex, conv, creation, decompositions, einsum, elementwise, indexing, linalg,
               nn, pooling, random, reduction, shape, sizes, transcendental)
from . import random_dists
from . import conv_variants, image, nn_composites, segments, sorting
from . import image_color, image_quality

__all__ = ["FAMILIES", "NAMESPACES", "namespace", "public_ops", "symbolic_dispatch"]

FAMILIES = (sizes, elementwise, transcendental, complex, indexing, shape, reduction, creation,
            einsum, linalg, decompositions, nn, conv, pooling, random, random_dists, conv_variants,
            nn_composites, sorting, segments, image, image_color, image_quality)
NAMESPACES = ("tf", "math", "linalg", "nn", "random", "image")


def namespace(name: str) -> dict[str, Any]:
    """The public ops of one TensorFlow namespace ("tf", "math", "linalg", "nn", "random",
    "image"),
    by name, from every family's EXPORTS."""
    if name not in NAMESPACES:
        raise ValueError(f"namespace: {name!r} is not one of {NAMESPACES}.")
    return {op: _exported(family, op, where) for family in FAMILIES
            for op, where in family.EXPORTS.items() if name in where.split()}


# NOTE(symbolic-dispatch): the Keras functional API's KerasTensor has a shape and a dtype
# but no value; an op called on one (tf.reduce_sum(x) while building a model) fails to
# convert it with a SymbolicValueError. The ops the namespaces export catch that error and
# hand the whole call to the placeholder's type (its `_symbolic_call`), which records it
# as a layer of the model, as tf_keras's TFOpLambda. The families' own functions, which the
# ops and Tensor's operators call among themselves, are not wrapped: only a call a user
# makes through a namespace pays the one extra frame.
_EXPORTED: dict[int, Any] = {}
_PREFERRED = ("math", "linalg", "nn", "random", "image")  # TensorFlow's canonical paths


def _exported(family: Any, op: str, where: str) -> Any:
    fn = getattr(family, op)
    if not isinstance(fn, types.FunctionType):
        return fn  # a class (tf.random.Generator)
    got = _EXPORTED.get(id(fn))
    if got is None:
        spaces = where.split()
        path = next((f"{s}.{op}" for s in _PREFERRED if s in spaces), op)
        got = _EXPORTED[id(fn)] = symbolic_dispatch(fn, path)
    return got


def symbolic_dispatch(fn: Callable, path: str) -> Callable:
    """`fn` that hands a call on a symbolic placeholder to the placeholder's type
    (NOTE(symbolic-dispatch)), naming the op `path` (its name under ``tapeflow.``).

    Example:
        >>> import tapeflow as tf
        >>> x = tf.keras.Input(shape=(3,))
        >>> total = tf.reduce_sum(x, axis=1)    # recorded as a layer of the model
        >>> total.shape, total.node.layer.name.startswith("tf.math.reduce_sum")
        (TensorShape([None]), True)
        >>> model = tf.keras.Model(x, total)
        >>> model(tf.ones([2, 3])).numpy()
        array([3., 3.], dtype=float32)
    """
    @functools.wraps(fn)
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except SymbolicValueError:
            for leaf in nest.flatten((args, kwargs)):
                handler = getattr(type(leaf), "_symbolic_call", None)
                if handler is not None:
                    return handler(fn, path, args, kwargs)
            raise

    call.symbolic_path = path  # what a model's config may name (keras/op_layers.op_at)
    return call


def public_ops() -> dict[str, Any]:
    """Every family's public ops by name, whatever their namespaces (Tensor's operators
    call them; `getitem` is `x[key]`)."""
    return {op: getattr(family, op) for family in FAMILIES for op in family.EXPORTS}
