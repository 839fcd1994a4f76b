"""Keras' `EinsumDense`: a dense layer whose product with its kernel is an einsum
equation, and the einsum equations MultiHeadAttention (attention.py) is built from: its
projections' and its attention's.

The equation has one of tf_keras's three forms: ``X,Y->Z``, ``...X,Y->...Z`` (the
leading axes pass through) or ``X...,Y->Z...`` (the trailing ones do), X naming the
input's axes, Y the kernel's and Z the output's. `output_shape` gives the output's
sizes after its batch axis (after the elided axes, in the second form), None where an
axis's size is the input's; the kernel's shape follows from the input's and the
output's sizes, and the bias spans the output axes from the first one `bias_axes` names.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..errors import InvalidArgumentError
from ..tensor import Tensor, TensorShape, Variable
from . import activations, initializers, regularizers
from .base_layer import Layer
from .penalties import weight_options, weight_options_config

__all__ = ["EinsumDense"]

_LETTERS = "[a-zA-Z]"
_ALPHABET = "abcdefghijklmnopqrstuvwxyz"
# (pattern, where the ellipsis stands): the three forms tf_keras accepts
_FORMS = ((re.compile(rf"({_LETTERS}+),({_LETTERS}+)->({_LETTERS}+)"), ""),
          (re.compile(rf"\.\.\.({_LETTERS}+),({_LETTERS}+)->\.\.\.({_LETTERS}+)"), "left"),
          (re.compile(rf"({_LETTERS}{{2,}})\.\.\.,({_LETTERS}+)->({_LETTERS}+)\.\.\."), "right"))

def projection_equation(free: int, bound: int, out: int) -> tuple[str, str]:
    """(equation, bias axes) of a projection with `free` input axes kept, `bound` ones
    contracted with the kernel and `out` new ones made from it, as MultiHeadAttention's.

    Example:
        >>> from tapeflow.keras.einsum_dense import projection_equation
        >>> projection_equation(2, 1, 2)
        ('abc,cde->abde', 'de')
    """
    letters = _ALPHABET
    kept, summed, made = (letters[:free], letters[free:free + bound],
                          letters[free + bound:free + bound + out])
    return f"{kept}{summed},{summed}{made}->{kept}{made}", made


def attention_equations(rank: int, axes: tuple) -> tuple[str, str, int]:
    """(scores equation, combination equation, rank of the scores) for projected tensors
    of `rank` (batch, <attention and other axes>, heads, channels), attending over `axes`.

    The key's attention axes take new letters; the scores are laid out as (the other axes
    with the heads, the query's attention axes, the key's), so the softmax is over the
    last len(axes) axes.

    Example:
        >>> from tapeflow.keras.einsum_dense import attention_equations
        >>> attention_equations(4, (1,))
        ('aecd,abcd->acbe', 'acbe,aecd->abcd', 4)
    """
    letters = _ALPHABET
    query = letters[:rank]
    others = [i for i in range(rank - 1) if i not in axes]
    fresh = iter(letters[rank:])
    key = "".join(next(fresh) if i in axes else query[i] for i in range(rank))
    scores = "".join([query[i] for i in others] + [query[i] for i in axes]
                     + [key[i] for i in axes])
    return f"{key},{query}->{scores}", f"{scores},{key}->{query}", len(scores)


def _parse_equation(equation: Any) -> tuple[str, str, str, str]:
    """(input letters, kernel letters, output letters, where the ellipsis is: "", "left"
    or "right") of an EinsumDense equation, or tf_keras's ValueError."""
    if isinstance(equation, str):
        for pattern, side in _FORMS:
            found = pattern.fullmatch(equation)
            if found:
                return found.group(1), found.group(2), found.group(3), side
    raise ValueError(f"Invalid einsum equation '{equation}'. Equations must be in the form "
                     f"[X],[Y]->[Z], ...[X],[Y]->...[Z], or [X]...,[Y]->[Z]....")


def _analyze(equation: str, bias_axes: str | None, input_shape: Any,
            partial: list) -> tuple[list, list | None, list]:
    """(kernel shape, bias shape or None, full output shape) of an EinsumDense for inputs
    of `input_shape` (None for unknown sizes); a ValueError names what does not fit."""
    inp, ker, out, side = _parse_equation(equation)
    shape = list(TensorShape(input_shape))
    elided = len(shape) - len(inp)
    if elided < 0 or (side == "" and elided):
        need = f"rank {len(inp)}" if side == "" else f"rank > {len(inp)}"
        raise ValueError(f"EinsumDense: equation '{equation}' takes inputs of {need}; received "
                         f"input shape {tuple(shape)}.")
    if side == "left":
        # the elided axes (the batch axis among them) lead, in order; `partial` is Z's sizes
        if len(partial) != len(out):
            raise ValueError(f"EinsumDense: `output_shape` {partial} must give {len(out)} "
                             f"size(s), one per axis of '{out}' (equation '{equation}').")
        full = shape[:elided] + list(partial)
        in_pos = {c: elided + i for i, c in enumerate(inp)}
        out_pos = {c: elided + i for i, c in enumerate(out)}
    else:
        # Z's first axis is the input's batch axis; `partial` is the sizes after it
        if len(partial) != len(out) - 1:
            raise ValueError(f"EinsumDense: `output_shape` {partial} must give {len(out) - 1} "
                             f"size(s), one per axis of '{out}' after the first, the batch "
                             f"axis (equation '{equation}').")
        full = [shape[0]] + list(partial) + shape[len(inp):]
        in_pos = {c: i for i, c in enumerate(inp)}
        out_pos = {c: i for i, c in enumerate(out)}
    for c in inp:
        if c in out_pos and full[out_pos[c]] is not None and full[out_pos[c]] != shape[in_pos[c]]:
            raise ValueError(f"Input shape and output shape do not match at shared dimension "
                             f"'{c}'. Input shape is {shape[in_pos[c]]}, and output shape is "
                             f"{full[out_pos[c]]}.")
        if c in out_pos and full[out_pos[c]] is None:
            full[out_pos[c]] = shape[in_pos[c]]
    for c in out:
        if c not in inp and c not in ker:
            raise ValueError(f"Dimension '{c}' was specified in the output '{out}' but has no "
                             f"corresponding dim in the input spec '{inp}' or weight spec "
                             f"'{ker}'")
    kernel = []
    for c in ker:
        if c in in_pos:
            size = shape[in_pos[c]]
        elif c in out_pos:
            size = full[out_pos[c]]
        else:
            raise ValueError(f"Weight dimension '{c}' did not have a match in either the input "
                             f"spec '{inp}' or the output spec '{out}'. For this layer, the "
                             f"weight must be fully specified.")
        if size is None:
            raise ValueError(f"EinsumDense: the kernel's dimension '{c}' (equation "
                             f"'{equation}') takes an unknown size from input shape "
                             f"{tuple(shape)} and output_shape {partial}; it must be known.")
        kernel.append(int(size))
    bias = None
    if bias_axes is not None:
        for c in bias_axes:
            if c not in out:
                raise ValueError(f"Bias dimension '{c}' was requested, but is not part of the "
                                 f"output spec '{out}'")
        first = min(out.index(c) for c in bias_axes) if bias_axes else len(out)
        bias = [full[out_pos[c]] if c in bias_axes else 1 for c in out[first:]]
        if side == "right":
            bias += [1] * elided  # the passed-through trailing axes broadcast
        if any(b is None for b in bias):
            raise ValueError(f"EinsumDense: the bias over axes '{bias_axes}' needs their sizes; "
                             f"output shape {tuple(full)} leaves one unknown.")
    return kernel, bias, full


class EinsumDense(Layer):
    """A dense layer of any rank: ``activation(einsum(equation, inputs, kernel) + bias)``.

    `equation` names the input's, the kernel's and the output's axes (``"ab,bc->ac"`` is
    Dense); `output_shape` gives the output's sizes after its batch axis, None for one
    that is the input's; `bias_axes` names the output axes the bias varies along (no bias
    without it). The kernel's shape is found from the first input's shape.

    Example:
        >>> import tapeflow as tf
        >>> layer = tf.keras.layers.EinsumDense("abc,cd->abd", output_shape=(None, 4),
        ...                                     bias_axes="d")
        >>> layer(tf.ones([2, 5, 3])).shape
        TensorShape([2, 5, 4])
        >>> [tuple(w.shape) for w in layer.weights]
        [(3, 4), (4,)]
    """

    def __init__(self, equation: str, output_shape: Any, activation: Any = None,
                 bias_axes: str | None = None, kernel_initializer: Any = "glorot_uniform",
                 bias_initializer: Any = "zeros", kernel_regularizer: Any = None,
                 bias_regularizer: Any = None, activity_regularizer: Any = None,
                 kernel_constraint: Any = None, bias_constraint: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # kept for the config only: tf_keras's EinsumDense applies no activity penalty
        self._activity_config = regularizers.get(activity_regularizer)
        weight_options(self, kernel_regularizer=kernel_regularizer,
                       bias_regularizer=bias_regularizer, kernel_constraint=kernel_constraint,
                       bias_constraint=bias_constraint)
        _parse_equation(equation)
        self.equation = equation
        if isinstance(output_shape, int) and not isinstance(output_shape, bool):
            self.partial_output_shape = [output_shape]
        else:
            try:
                self.partial_output_shape = [None if d is None else int(d) for d in output_shape]
            except (TypeError, ValueError):
                raise ValueError(f"EinsumDense: `output_shape` must be an int or a list of "
                                 f"ints and None; received {output_shape!r}.") from None
        if bias_axes is not None and not isinstance(bias_axes, str):
            raise ValueError(f"EinsumDense: `bias_axes` must be a string of output axis "
                             f"letters or None; received {bias_axes!r}.")
        self.bias_axes = bias_axes
        self.activation = activations.get(activation)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.full_output_shape: list | None = None
        self.kernel: Variable | None = None
        self.bias: Variable | None = None

    def build(self, input_shape: Any) -> None:
        """Create `kernel` and `bias` (if `bias_axes`) for inputs of `input_shape`."""
        kernel, bias, self.full_output_shape = _analyze(
            self.equation, self.bias_axes, input_shape, self.partial_output_shape)
        self.kernel = self.add_weight("kernel", kernel, initializer=self.kernel_initializer,
                                      regularizer=self.kernel_regularizer,
                                      constraint=self.kernel_constraint)
        self.bias = None if bias is None else self.add_weight(
            "bias", bias, initializer=self.bias_initializer, regularizer=self.bias_regularizer,
            constraint=self.bias_constraint)
        super().build(input_shape)

    def compute_output_shape(self, input_shape: Any) -> TensorShape:
        """The full output shape for inputs of `input_shape`."""
        return TensorShape(_analyze(self.equation, self.bias_axes, input_shape,
                                   self.partial_output_shape)[2])

    def call(self, inputs: Any) -> Tensor:
        """``activation(einsum(equation, inputs, kernel) + bias)``."""
        if _dt.kind(inputs._value.dtype) != "f":
            raise InvalidArgumentError(f"EinsumDense '{self.name}': inputs must be floating; "
                                       f"received dtype {inputs.dtype.name}. Cast them first.")
        inp, ker, _, side = _parse_equation(self.equation)
        shape, kshape = np.shape(inputs._value), tuple(self.kernel.shape)
        offset = len(shape) - len(inp) if side == "left" else 0
        if len(shape) < len(inp) or (side == "" and len(shape) != len(inp)):
            raise InvalidArgumentError(f"EinsumDense '{self.name}': equation '{self.equation}' "
                                       f"does not fit inputs of shape {shape}.")
        for i, c in enumerate(inp):
            if c in ker and shape[offset + i] != kshape[ker.index(c)]:
                raise InvalidArgumentError(
                    f"EinsumDense '{self.name}': input axis {offset + i} ('{c}' in "
                    f"'{self.equation}') has size {shape[offset + i]}, but the kernel, built "
                    f"for inputs of shape {tuple(self._build_input_shape or ())}, has "
                    f"{kshape[ker.index(c)]}; received input shape {shape}.")
        y = ops.einsum.einsum(self.equation, inputs, self.kernel)
        if self.bias is not None:
            y = y + self.bias
        return self.activation(y)

    def get_config(self) -> dict:
        return dict(super().get_config(), output_shape=list(self.partial_output_shape),
                    equation=self.equation, activation=activations._config(self.activation),
                    bias_axes=self.bias_axes,
                    kernel_initializer=initializers.serialize(self.kernel_initializer),
                    bias_initializer=initializers.serialize(self.bias_initializer),
                    **dict(weight_options_config(self, *WEIGHT_OPTIONS),
                           activity_regularizer=regularizers.serialize(self._activity_config)))


# the regularizer and constraint entries of a config, in tf_keras's order
WEIGHT_OPTIONS = ("kernel_regularizer", "bias_regularizer", "activity_regularizer",
                  "kernel_constraint", "bias_constraint")
