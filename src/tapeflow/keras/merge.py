"""Keras merge layers: `Add`, `Subtract`, `Multiply`, `Average`, `Maximum`, `Minimum`,
`Concatenate` and `Dot`, and their functional forms `add`, `subtract`, ... (tf_keras
2.21 behaviour, shape rules and messages).

Each takes a list of tensors with the same batch size. The elementwise ones broadcast
the other dims from the right, as NumPy, except that an input of lower rank gains its
new axes after the batch axis (tf_keras expands at axis 1): (batch, 3) meets (batch, 4, 3)
as (batch, 1, 3). Their output mask is the AND of the inputs' masks; `Concatenate`
concatenates the masks (all True for an input without one) and `Dot` gives none.

Inputs are checked on every call, not only when the layer is built, so a later call on
shapes that do not fit fails with the same message naming them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..ops.convert import as_tensor
from ..tensor import TensorShape
from .base_layer import Layer

__all__ = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate",
           "Dot", "add", "subtract", "multiply", "average", "maximum", "minimum",
           "concatenate", "dot"]


def _as_shapes(input_shape: Any, who: str) -> list[tuple]:
    """A list of shapes, as tuples of ints and None; a single shape is an error."""
    if isinstance(input_shape, TensorShape) or not isinstance(input_shape, (list, tuple)) or \
            not input_shape or not all(s is None or isinstance(s, (list, tuple))
                                       for s in input_shape):
        raise ValueError(f"A merge layer ({who}) should be called on a list of inputs. "
                         f"Received: input_shape={_show(input_shape)} (not a list of shapes)")
    return [None if s is None else tuple(TensorShape(s)) for s in input_shape]


def _show(shape: Any) -> Any:
    if isinstance(shape, (list, tuple)) and not isinstance(shape, TensorShape) and \
            all(isinstance(s, (list, tuple)) or s is None for s in shape):
        return [None if s is None else tuple(s) for s in shape]
    return tuple(shape) if isinstance(shape, (list, tuple)) else shape


def _broadcast(shape1: tuple | None, shape2: tuple | None) -> tuple | None:
    """tf_keras' _compute_elemwise_op_output_shape: the non-batch dims two inputs give,
    aligned from the right; a dim of 1 stretches, None is unknown."""
    if shape1 is None or shape2 is None:
        return None
    if len(shape1) < len(shape2):
        return _broadcast(shape2, shape1)
    if not shape2:
        return shape1
    out = list(shape1[:-len(shape2)])
    for i, j in zip(shape1[-len(shape2):], shape2, strict=True):
        if i is None or j is None:
            out.append(None)
        elif i == 1:
            out.append(j)
        elif j == 1 or i == j:
            out.append(i)
        else:
            raise ValueError(f"Inputs have incompatible shapes. Received shapes {shape1} and "
                             f"{shape2}")
    return tuple(out)


class _Merge(Layer):
    """The elementwise merges: shape checks, tf_keras' rank expansion, the mask rule."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.supports_masking = True

    def _merge_function(self, inputs: list) -> Any:
        raise NotImplementedError

    def _check_shapes(self, shapes: list) -> tuple | None:
        """The output's non-batch dims; ValueError where the inputs cannot merge."""
        batch_sizes = {s[0] for s in shapes if s} - {None}
        if len(batch_sizes) > 1:
            raise ValueError(f"Cannot merge tensors with different batch sizes. Got tensors "
                             f"with shapes {_show(shapes)}")
        out = None if shapes[0] is None else shapes[0][1:]
        for shape in shapes[1:]:
            out = _broadcast(out, None if shape is None else shape[1:])
        return out

    def build(self, input_shape: Any) -> None:
        """Check that the input shapes can merge (the layer has no weights)."""
        self._check_shapes(_as_shapes(input_shape, type(self).__name__))
        super().build(input_shape)

    def _inputs(self, inputs: Any) -> list:
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"A merge layer ({type(self).__name__}) should be called on a list "
                             f"of inputs. Received: inputs={inputs!r:.200} (not a list of "
                             f"tensors)")
        return [as_tensor(x, self.name, f"inputs[{i}]") for i, x in enumerate(inputs)]

    def call(self, inputs: Any) -> Any:
        """Merge the inputs elementwise, expanding lower-rank inputs after the batch axis."""
        inputs = self._inputs(inputs)
        self._check_shapes([tuple(np.shape(x._value)) for x in inputs])
        ranks = [x.ndim for x in inputs]
        if len(set(ranks)) > 1:
            top = max(ranks)
            expanded = []
            for x in inputs:
                for _ in range(top - x.ndim):
                    x = ops.shape.expand_dims(x, 1)
                expanded.append(x)
            inputs = expanded
        return self._merge_function(inputs)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """(batch,) + the non-batch dims broadcast from the right."""
        shapes = _as_shapes(input_shape, type(self).__name__)
        out = self._check_shapes(shapes)
        batch_sizes = {s[0] for s in shapes if s is not None} - {None}
        batch = next(iter(batch_sizes)) if len(batch_sizes) == 1 else None
        return TensorShape((batch,) + tuple(out or ()))

    def _mask_args(self, inputs: Any, mask: Any) -> list | None:
        if mask is None:
            return None
        if not isinstance(mask, (list, tuple)):
            raise ValueError(f"`mask` should be a list. Received: mask={mask}")
        if not isinstance(inputs, (list, tuple)):
            raise ValueError(f"`inputs` should be a list. Received: inputs={inputs}")
        if len(mask) != len(inputs):
            raise ValueError(f"The lists `inputs` and `mask` should have the same length. "
                             f"Received: inputs of length {len(inputs)}, and mask={mask} of "
                             f"length {len(mask)}")
        if all(m is None for m in mask):
            return None
        return [None if m is None else as_tensor(m, self.name, "mask") for m in mask]

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The AND of the inputs' masks (None if none has one)."""
        masks = self._mask_args(inputs, mask)
        if masks is None:
            return None
        present = [ops.elementwise.cast(m, "bool") for m in masks if m is not None]
        return ops.reduction.reduce_all(ops.shape.stack(present, axis=0), axis=0)


def _sum(inputs: list) -> Any:
    output = inputs[0]
    for x in inputs[1:]:
        output = output + x
    return output


class Add(_Merge):
    """The sum of a list of tensors (same batch size; other dims broadcast).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Add()([tf.constant([[1., 2.]]), tf.constant([[10., 20.]])]).numpy()
        array([[11., 22.]], dtype=float32)
    """

    def _merge_function(self, inputs: list) -> Any:
        return _sum(inputs)


class Multiply(_Merge):
    """The elementwise product of a list of tensors.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Multiply()([tf.constant([[2., 3.]]), tf.constant([[4., 5.]])]).numpy()
        array([[ 8., 15.]], dtype=float32)
    """

    def _merge_function(self, inputs: list) -> Any:
        output = inputs[0]
        for x in inputs[1:]:
            output = output * x
        return output


class Average(_Merge):
    """The elementwise mean of a list of tensors.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Average()([tf.constant([[2., 3.]]), tf.constant([[4., 9.]])]).numpy()
        array([[3., 6.]], dtype=float32)
    """

    def _merge_function(self, inputs: list) -> Any:
        return _sum(inputs) / len(inputs)


class Maximum(_Merge):
    """The elementwise maximum of a list of tensors (at ties the gradient goes to the
    earlier input, as tf.maximum).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Maximum()([tf.constant([[2., 7.]]), tf.constant([[4., 5.]])]).numpy()
        array([[4., 7.]], dtype=float32)
    """

    def _merge_function(self, inputs: list) -> Any:
        output = inputs[0]
        for x in inputs[1:]:
            output = ops.elementwise.maximum(output, x)
        return output


class Minimum(_Merge):
    """The elementwise minimum of a list of tensors (at ties the gradient goes to the
    earlier input, as tf.minimum).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Minimum()([tf.constant([[2., 7.]]), tf.constant([[4., 5.]])]).numpy()
        array([[2., 5.]], dtype=float32)
    """

    def _merge_function(self, inputs: list) -> Any:
        output = inputs[0]
        for x in inputs[1:]:
            output = ops.elementwise.minimum(output, x)
        return output


class Subtract(_Merge):
    """The difference ``inputs[0] - inputs[1]`` of exactly two tensors.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.Subtract()([tf.constant([[5., 7.]]), tf.constant([[1., 2.]])]).numpy()
        array([[4., 5.]], dtype=float32)
    """

    def _check_shapes(self, shapes: list) -> tuple | None:
        if len(shapes) != 2:
            raise ValueError(f"A `Subtract` layer should be called on exactly 2 inputs. "
                             f"Received: input_shape={_show(shapes)}")
        return super()._check_shapes(shapes)

    def _merge_function(self, inputs: list) -> Any:
        return inputs[0] - inputs[1]


class Concatenate(_Merge):
    """Concatenate a list of tensors along `axis`; their other dims must match.

    Example:
        >>> import tapeflow as tf
        >>> a, b = tf.ones([2, 3]), tf.zeros([2, 1])
        >>> tf.keras.layers.Concatenate()([a, b]).numpy()
        array([[1., 1., 1., 0.],
               [1., 1., 1., 0.]], dtype=float32)
        >>> tf.keras.layers.Concatenate(axis=0)([a, tf.zeros([1, 3])]).shape
        TensorShape([3, 3])
    """

    def __init__(self, axis: int = -1, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Concatenate: `axis` must be an int; received axis={axis!r}.")
        self.axis = int(axis)

    def _check_shapes(self, shapes: list) -> tuple | None:
        message = (f"A `Concatenate` layer requires inputs with matching shapes except for the "
                   f"concatenation axis. Received: input_shape={_show(shapes)}")
        known = [s for s in shapes if s is not None]
        if len({len(s) for s in known}) > 1:
            raise ValueError(message + " (inputs of different ranks)")
        for s in known:
            if not -len(s) <= self.axis < len(s):
                raise ValueError(f"Concatenate: axis={self.axis} is out of range for inputs of "
                                 f"rank {len(s)}. Received: input_shape={_show(shapes)}")
        rest = [s[:self.axis % len(s)] + s[self.axis % len(s) + 1:] for s in known]
        for dims in zip(*rest):
            if len({d for d in dims if d is not None}) > 1:
                raise ValueError(message)
        return None

    def call(self, inputs: Any) -> Any:
        """``tf.concat(inputs, axis)``."""
        inputs = self._inputs(inputs)
        self._check_shapes([tuple(np.shape(x._value)) for x in inputs])
        return ops.shape.concat(inputs, axis=self.axis)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The first input's shape with the sizes along `axis` summed (None if unknown)."""
        shapes = _as_shapes(input_shape, "Concatenate")
        self._check_shapes(shapes)
        out = list(shapes[0])
        for shape in shapes[1:]:
            if out[self.axis] is None or shape[self.axis] is None:
                out[self.axis] = None
                break
            out[self.axis] += shape[self.axis]
        return TensorShape(out)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The inputs' masks (all True for an input without one, given one more axis when
        of lower rank) concatenated along `axis`, then ANDed over the last axis, as
        tf_keras."""
        masks = self._mask_args(inputs, mask)
        if masks is None:
            return None
        parts = []
        for x, m in zip(inputs, masks, strict=True):
            x = as_tensor(x, self.name, "inputs")
            if m is None:
                parts.append(ops.creation.ones_like(x, dtype="bool"))
            elif m.ndim < x.ndim:
                parts.append(ops.shape.expand_dims(ops.elementwise.cast(m, "bool"), -1))
            else:
                parts.append(ops.elementwise.cast(m, "bool"))
        return ops.reduction.reduce_all(ops.shape.concat(parts, axis=self.axis), axis=-1)

    def get_config(self) -> dict:
        return dict(super().get_config(), axis=self.axis)


class Dot(_Merge):
    """The dot product of two tensors along `axes` (an int for both, or one per input),
    per example as `keras.backend.batch_dot`: the output has the first input's other
    dims, then the second's (a (batch,) result becomes (batch, 1)). With `normalize`,
    each input is first L2-normalized along its axis (a cosine similarity).

    Example:
        >>> import tapeflow as tf
        >>> a = tf.constant([[1., 2.], [3., 4.]])
        >>> b = tf.constant([[5., 6.], [7., 8.]])
        >>> tf.keras.layers.Dot(axes=1)([a, b]).numpy()
        array([[17.],
               [53.]], dtype=float32)
        >>> tf.keras.layers.Dot(axes=(1, 2))([tf.ones([2, 3, 4]), tf.ones([2, 5, 3])]).shape
        TensorShape([2, 4, 5])
    """

    def __init__(self, axes: Any, normalize: bool = False, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if not isinstance(axes, int):
            if not isinstance(axes, (list, tuple)):
                raise TypeError(f"Invalid type for argument `axes`: it should be a list or an "
                                f"int. Received: axes={axes}")
            if len(axes) != 2:
                raise ValueError(f"Invalid format for argument `axes`: it should contain two "
                                 f"elements. Received: axes={axes}")
            if not isinstance(axes[0], int) or not isinstance(axes[1], int):
                raise ValueError(f"Invalid format for argument `axes`: list elements should be "
                                 f"integers. Received: axes={axes}")
        self.axes = axes
        self.normalize = bool(normalize)

    def _axes_for(self, rank1: int, rank2: int) -> list[int]:
        pair = [self.axes] * 2 if isinstance(self.axes, int) else list(self.axes)
        return [a % r if a < 0 else a for a, r in zip(pair, (rank1, rank2), strict=True)]

    def _check_shapes(self, shapes: list) -> tuple | None:
        if len(shapes) != 2:
            raise ValueError(f"A `Dot` layer should be called on a list of 2 inputs. Received: "
                             f"input_shape={_show(shapes)}")
        shape1, shape2 = shapes
        if shape1 is None or shape2 is None:
            return None
        if len(shape1) < 2 or len(shape2) < 2:
            raise ValueError(f"Dot: both inputs need rank >= 2 (batch, ...); received shapes "
                             f"{shape1} and {shape2}.")
        if shape1[0] is not None and shape2[0] is not None and shape1[0] != shape2[0]:
            raise ValueError(f"Cannot do batch_dot on inputs with different batch sizes. "
                             f"Received inputs with shapes {shape1} and {shape2}.")
        a1, a2 = self._axes_for(len(shape1), len(shape2))
        if not (0 < a1 < len(shape1) and 0 < a2 < len(shape2)):
            raise ValueError(f"Dot: axes={self.axes} must name a non-batch axis of each input "
                             f"(1 .. rank-1); received shapes {shape1} and {shape2}.")
        if shape1[a1] is not None and shape2[a2] is not None and shape1[a1] != shape2[a2]:
            raise ValueError(f"Incompatible input shapes: axis values {shape1[a1]} (at axis "
                             f"{a1}) != {shape2[a2]} (at axis {a2}). Full input shapes: "
                             f"{shape1}, {shape2}")
        return None

    def call(self, inputs: Any) -> Any:
        """The per-example dot product along `axes` (of the L2-normalized inputs with
        `normalize`)."""
        inputs = self._inputs(inputs)
        self._check_shapes([tuple(np.shape(x._value)) for x in inputs])
        x1, x2 = inputs
        a1, a2 = self._axes_for(x1.ndim, x2.ndim)
        if self.normalize:
            x1, x2 = _l2_normalize(x1, a1), _l2_normalize(x2, a2)
        return _batch_dot(x1, x2, a1, a2)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The first input's dims without its axis, then the second's without its batch
        dim and axis ((batch, 1) if nothing is left)."""
        shapes = _as_shapes(input_shape, "Dot")
        self._check_shapes(shapes)
        shape1, shape2 = list(shapes[0]), list(shapes[1])
        a1, a2 = self._axes_for(len(shape1), len(shape2))
        shape1.pop(a1)
        shape2.pop(a2)
        out = shape1 + shape2[1:]
        return TensorShape(out + [1] if len(out) == 1 else out)

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """None: the product's dims are not the inputs' time steps."""
        return None

    def get_config(self) -> dict:
        return dict(super().get_config(), axes=self.axes, normalize=self.normalize)


def _l2_normalize(x: Any, axis: int) -> Any:
    # tf.math.l2_normalize: x / sqrt(max(sum(x²), 1e-12))
    square_sum = ops.reduction.reduce_sum(x * x, axis=axis, keepdims=True)
    return x * ops.elementwise.rsqrt(ops.elementwise.maximum(square_sum, 1e-12))


def _batch_dot(x: Any, y: Any, a1: int, a2: int) -> Any:
    """keras.backend.batch_dot: x's axis a1 moved last, y's axis a2 moved to 1, one
    batched matrix product, the other dims restored."""
    xs, ys = tuple(np.shape(x._value)), tuple(np.shape(y._value))
    x_rest = [i for i in range(1, len(xs)) if i != a1]
    y_rest = [i for i in range(1, len(ys)) if i != a2]
    xt = ops.shape.transpose(x, [0] + x_rest + [a1])
    yt = ops.shape.transpose(y, [0, a2] + y_rest)
    batch, n = xs[0], xs[a1]
    product = ops.linalg.matmul(ops.shape.reshape(xt, [batch, -1, n]),
                                ops.shape.reshape(yt, [batch, n, -1]))
    out_dims = [batch] + [xs[i] for i in x_rest] + [ys[i] for i in y_rest]
    return ops.shape.reshape(product, out_dims if len(out_dims) > 1 else [batch, 1])


# ---------------------------------------------------------------- functional forms
def add(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Add(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.add([tf.ones([1, 2]), tf.ones([1, 2])]).numpy()
        array([[2., 2.]], dtype=float32)
    """
    return Add(**kwargs)(inputs)


def subtract(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Subtract(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.subtract([tf.ones([1, 2]), tf.ones([1, 2])]).numpy()
        array([[0., 0.]], dtype=float32)
    """
    return Subtract(**kwargs)(inputs)


def multiply(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Multiply(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.multiply([tf.fill([1, 2], 3.), tf.fill([1, 2], 2.)]).numpy()
        array([[6., 6.]], dtype=float32)
    """
    return Multiply(**kwargs)(inputs)


def average(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Average(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.average([tf.fill([1, 2], 3.), tf.fill([1, 2], 2.)]).numpy()
        array([[2.5, 2.5]], dtype=float32)
    """
    return Average(**kwargs)(inputs)


def maximum(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Maximum(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.maximum([tf.constant([[1., 5.]]), tf.constant([[3., 2.]])]).numpy()
        array([[3., 5.]], dtype=float32)
    """
    return Maximum(**kwargs)(inputs)


def minimum(inputs: list, **kwargs: Any) -> Any:
    """``keras.layers.Minimum(**kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.minimum([tf.constant([[1., 5.]]), tf.constant([[3., 2.]])]).numpy()
        array([[1., 2.]], dtype=float32)
    """
    return Minimum(**kwargs)(inputs)


def concatenate(inputs: list, axis: int = -1, **kwargs: Any) -> Any:
    """``keras.layers.Concatenate(axis=axis, **kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.layers.concatenate([tf.ones([2, 1]), tf.zeros([2, 2])]).shape
        TensorShape([2, 3])
    """
    return Concatenate(axis=axis, **kwargs)(inputs)


def dot(inputs: list, axes: Any, normalize: bool = False, **kwargs: Any) -> Any:
    """``keras.layers.Dot(axes, normalize, **kwargs)(inputs)``.

    Example:
        >>> import tapeflow as tf
        >>> a = tf.constant([[3., 4.]])
        >>> tf.keras.layers.dot([a, a], axes=1, normalize=True).numpy()  # cosine similarity
        array([[1.]], dtype=float32)
    """
    return Dot(axes=axes, normalize=normalize, **kwargs)(inputs)
