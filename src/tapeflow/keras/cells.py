"""Keras RNN cells: `SimpleRNNCell`, `LSTMCell` and `GRUCell` (tf_keras 2.21 formulas,
defaults and weight layouts, so weights copied from TensorFlow give its outputs).

A cell computes one time step: ``output, new_states = cell(inputs, states)`` with inputs
(batch, features) and states a list of (batch, units) tensors. `keras.layers.RNN` runs
a cell over the time axis; `SimpleRNN`, `LSTM` and `GRU` are RNNs of these cells.

Each cell's step is written as two parts: `_project` (the input's matrix product and
input bias) and `_step` (the rest, which needs the previous state). `RNN` projects every
time step in one matrix product up front and loops over `_step` only, which gives the
same numbers as calling the cell at each step, with one large product in place of many
small ones. `has_builtin_step(cell)` tells `RNN` whether a cell's step is these
formulas' (so `_project` and `_step` can stand for its `call`).

Any cell's `state_size` and `output_size` may be nested, as tf_keras allows: an int n
(one tensor (batch, n)), a TensorShape (one tensor (batch, *dims)), or lists and tuples
of these. `flat_sizes` and `pack_states` read such sizes as tf.nest does, with a
TensorShape one leaf. Inputs may be nested too (a tuple of (batch, time, ...) tensors):
`shape_leaves` and `map_shapes` walk structures of shapes, where a shape is a leaf.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..ops.convert import as_tensor
from ..tensor import TensorShape
from . import activations, initializers
from .base_layer import Layer

__all__ = ["SimpleRNNCell", "LSTMCell", "GRUCell", "has_builtin_step", "flat_sizes",
           "pack_states", "is_shape", "shape_leaves", "map_shapes", "outer_shape"]


def _check_units(units: Any) -> int:
    if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
        raise ValueError(f"Received an invalid value for argument `units`, expected a "
                         f"positive integer, got {units!r}.")
    return int(units)


class _GateCell(Layer):
    """What the three cells share: weights kernel [features, gates·units],
    recurrent_kernel [units, gates·units] and bias; arguments, checks and config."""

    _gates = 1

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 kernel_regularizer: Any = None, recurrent_regularizer: Any = None,
                 bias_regularizer: Any = None, kernel_constraint: Any = None,
                 recurrent_constraint: Any = None, bias_constraint: Any = None,
                 dropout: float = 0.0, recurrent_dropout: float = 0.0, **kwargs: Any) -> None:
        kwargs.pop("enable_caching_device", None)  # a TensorFlow device placement hint
        who = type(self).__name__
        for arg, value in (("kernel_regularizer", kernel_regularizer),
                           ("recurrent_regularizer", recurrent_regularizer),
                           ("bias_regularizer", bias_regularizer),
                           ("kernel_constraint", kernel_constraint),
                           ("recurrent_constraint", recurrent_constraint),
                           ("bias_constraint", bias_constraint)):
            if value is not None:
                raise NotImplementedError(f"{who}: `{arg}` is not supported by tapeflow's "
                                          f"Keras layers; pass None.")
        for arg, value in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if value:
                raise NotImplementedError(f"{who}: {arg}={value!r} is not supported by "
                                          f"tapeflow; pass 0.")
        super().__init__(**kwargs)
        self.units = _check_units(units)
        self.activation = activations.get(activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.dropout, self.recurrent_dropout = 0.0, 0.0
        self.kernel = self.recurrent_kernel = self.bias = None

    # -------------------------------------------------- sizes
    @property
    def state_size(self) -> Any:
        """The size of each state: `units` (LSTMCell: ``[units, units]``)."""
        return self.units

    @property
    def output_size(self) -> int:
        """The size of the output: `units`."""
        return self.units

    def _state_sizes(self) -> list[int]:
        size = self.state_size
        return list(size) if isinstance(size, (list, tuple)) else [size]

    def get_initial_state(self, inputs: Any = None, batch_size: int | None = None,
                          dtype: Any = None) -> Any:
        """Zero states for a batch (of `inputs`, or `batch_size`): one tensor, or a list
        of them for a cell with several states (LSTMCell), as tf_keras."""
        if inputs is not None:
            batch_size = ops.structural.shape_of(as_tensor(inputs, self.name, "inputs"))[0]
        zeros = [ops.creation.zeros([batch_size, n], dtype=dtype or self.dtype)
                 for n in self._state_sizes()]
        return zeros if isinstance(self.state_size, (list, tuple)) else zeros[0]

    # -------------------------------------------------- weights
    def _bias_shape(self) -> tuple:
        return (self._gates * self.units,)

    def _bias_value(self, shape: tuple, dtype: Any) -> Any:
        return self.bias_initializer(shape, dtype=dtype)

    def build(self, input_shape: Any) -> None:
        """Create kernel [features, gates·units], recurrent_kernel [units, gates·units]
        and bias, for inputs (batch, features)."""
        shape = TensorShape(input_shape)
        if len(shape) < 1 or shape[-1] is None:
            raise ValueError(f"{type(self).__name__} needs inputs (batch, features) with known "
                             f"features; received input shape {tuple(shape)}.")
        n = self._gates * self.units
        self.kernel = self.add_weight("kernel", (int(shape[-1]), n),
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, n),
                                                initializer=self.recurrent_initializer)
        if self.use_bias:
            self.bias = self.add_weight(
                "bias", self._bias_shape(),
                initializer=lambda s, dtype=None: self._bias_value(s, dtype))
        super().build(input_shape)

    # -------------------------------------------------- the step
    def _project(self, inputs: Any) -> Any:
        """``inputs @ kernel`` plus the input bias, for inputs (..., features)."""
        shape = ops.structural.shape_of(inputs)
        if len(shape) == 2:
            return ops.linalg.matmul(inputs, self.kernel)
        flat = ops.linalg.matmul(ops.shape.reshape(inputs, [-1, shape[-1]]), self.kernel)
        return ops.shape.reshape(flat, list(shape[:-1]) + [self._gates * self.units])

    def _step(self, projected: Any, states: list) -> tuple[Any, list]:
        raise NotImplementedError

    def call(self, inputs: Any, states: Any, training: Any = None) -> tuple[Any, Any]:
        """One time step: ``(output, new_states)`` for inputs (batch, features) and the
        previous states (a list, or one tensor for a one-state cell, which then returns
        one tensor as its new state, as tf_keras)."""
        nested = isinstance(states, (list, tuple))
        given = list(states) if nested else [states]
        sizes = self._state_sizes()
        shape = np.shape(inputs._value)
        if len(shape) != 2 or shape[-1] != self.kernel.shape[0]:
            raise ValueError(f"{type(self).__name__} {self.name!r}: `inputs` must have shape "
                             f"(batch, {self.kernel.shape[0]}); received {tuple(shape)}.")
        if len(given) != len(sizes):
            raise ValueError(f"{type(self).__name__} {self.name!r}: `states` must hold "
                             f"{len(sizes)} tensor(s) of shape (batch, units); received "
                             f"{len(given)}.")
        converted = []
        for i, (s, n) in enumerate(zip(given, sizes, strict=True)):
            s = as_tensor(s, self.name, f"states[{i}]")
            if tuple(np.shape(s._value)) != (shape[0], n):
                raise ValueError(f"{type(self).__name__} {self.name!r}: states[{i}] must have "
                                 f"shape ({shape[0]}, {n}) (batch, units); received "
                                 f"{tuple(np.shape(s._value))}.")
            if s.dtype != inputs.dtype:
                s = ops.elementwise.cast(s, inputs.dtype)
            converted.append(s)
        output, new_states = self._step(self._project(inputs), converted)
        if nested or len(new_states) > 1:
            return output, new_states
        return output, new_states[0]

    # -------------------------------------------------- config
    def get_config(self) -> dict:
        config = {"units": self.units, "activation": activations._config(self.activation),
                  "use_bias": self.use_bias,
                  "kernel_initializer": initializers.serialize(self.kernel_initializer),
                  "recurrent_initializer": initializers.serialize(self.recurrent_initializer),
                  "bias_initializer": initializers.serialize(self.bias_initializer)}
        for arg in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                    "kernel_constraint", "recurrent_constraint", "bias_constraint"):
            config[arg] = None
        config.update(dropout=self.dropout, recurrent_dropout=self.recurrent_dropout)
        return dict(super().get_config(), **config)


class SimpleRNNCell(_GateCell):
    """The cell of a fully connected RNN: ``h = activation(x @ kernel + bias + h_prev @
    recurrent_kernel)``; the output is the new state h. kernel is [features, units],
    recurrent_kernel [units, units], bias [units].

    Example:
        >>> import tapeflow as tf
        >>> cell = tf.keras.layers.SimpleRNNCell(3, kernel_initializer="ones", name="cell")
        >>> out, state = cell(tf.ones([2, 4]), [tf.zeros([2, 3])])
        >>> out.shape, len(state), [v.name for v in cell.weights]
        (TensorShape([2, 3]), 1, ['cell/kernel:0', 'cell/recurrent_kernel:0', 'cell/bias:0'])
        >>> round(float(out[0, 0]), 6)   # tanh(1 + 1 + 1 + 1)
        0.999329
    """

    _gates = 1

    def _project(self, inputs: Any) -> Any:
        projected = super()._project(inputs)
        return projected + self.bias if self.bias is not None else projected

    def _step(self, projected: Any, states: list) -> tuple[Any, list]:
        h = self.activation(projected + ops.linalg.matmul(states[0], self.recurrent_kernel))
        return h, [h]


class LSTMCell(_GateCell):
    """The long short-term memory cell (Keras 2): gates i, f, c, o in that order along
    the last axis of kernel [features, 4·units], recurrent_kernel [units, 4·units] and
    bias [4·units] (the forget gate's part starts at 1 with `unit_forget_bias`):
    ``c = f·c_prev + i·activation(z_c)``, ``h = o·activation(c)`` with
    `recurrent_activation` gates. Its states are ``[h, c]``; its output is h.

    Example:
        >>> import tapeflow as tf
        >>> cell = tf.keras.layers.LSTMCell(3)
        >>> h, (h_state, c_state) = cell(tf.ones([2, 4]), [tf.zeros([2, 3]), tf.zeros([2, 3])])
        >>> h.shape, c_state.shape, cell.state_size
        (TensorShape([2, 3]), TensorShape([2, 3]), [3, 3])
        >>> cell.bias.numpy()[3:6]      # unit_forget_bias
        array([1., 1., 1.], dtype=float32)
    """

    _gates = 4

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, implementation: int = 2,
                 **kwargs: Any) -> None:
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.unit_forget_bias = bool(unit_forget_bias)
        self.implementation = _check_implementation(implementation, type(self).__name__)

    @property
    def state_size(self) -> list[int]:
        """``[units, units]``: the states h and c."""
        return [self.units, self.units]

    def _bias_value(self, shape: tuple, dtype: Any) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer(shape, dtype=dtype)
        u = self.units
        parts = [self.bias_initializer((u,), dtype=dtype), ops.creation.ones([u], dtype=dtype),
                 self.bias_initializer((2 * u,), dtype=dtype)]
        return ops.shape.concat(parts, axis=0)

    def _project(self, inputs: Any) -> Any:
        projected = super()._project(inputs)
        return projected + self.bias if self.bias is not None else projected

    def _step(self, projected: Any, states: list) -> tuple[Any, list]:
        h_tm1, c_tm1 = states
        u = self.units
        z = projected + ops.linalg.matmul(h_tm1, self.recurrent_kernel)
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c = f * c_tm1 + i * self.activation(z[:, 2 * u:3 * u])
        o = self.recurrent_activation(z[:, 3 * u:])
        h = o * self.activation(c)
        return h, [h, c]

    def get_config(self) -> dict:
        return dict(super().get_config(),
                    recurrent_activation=activations._config(self.recurrent_activation),
                    unit_forget_bias=self.unit_forget_bias, implementation=self.implementation)


class GRUCell(_GateCell):
    """The gated recurrent unit cell (Keras 2; TF2's default ``reset_after=True``): gates
    z, r, h along the last axis of kernel [features, 3·units] and recurrent_kernel
    [units, 3·units]; bias is [2, 3·units] (input and recurrent biases), or [3·units]
    with ``reset_after=False``. ``h = z·h_prev + (1 - z)·activation(x_h + r·(h_prev @
    U_h + b_h))``; the output is the new state h.

    Example:
        >>> import tapeflow as tf
        >>> cell = tf.keras.layers.GRUCell(3)
        >>> out, state = cell(tf.ones([2, 4]), tf.zeros([2, 3]))   # one tensor in, one out
        >>> out.shape, state.shape, cell.bias.shape
        (TensorShape([2, 3]), TensorShape([2, 3]), TensorShape([2, 9]))
    """

    _gates = 3

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 reset_after: bool = True, implementation: int = 2, **kwargs: Any) -> None:
        super().__init__(units, activation=activation, use_bias=use_bias,
                         kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.reset_after = bool(reset_after)
        self.implementation = _check_implementation(implementation, type(self).__name__)

    def _bias_shape(self) -> tuple:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _project(self, inputs: Any) -> Any:
        projected = super()._project(inputs)
        if self.bias is None:
            return projected
        return projected + (self.bias[0] if self.reset_after else self.bias)

    def _step(self, projected: Any, states: list) -> tuple[Any, list]:
        (h_tm1,) = states
        u = self.units
        x_z, x_r, x_h = projected[:, :u], projected[:, u:2 * u], projected[:, 2 * u:]
        if self.reset_after:
            inner = ops.linalg.matmul(h_tm1, self.recurrent_kernel)
            if self.bias is not None:
                inner = inner + self.bias[1]
            z = self.recurrent_activation(x_z + inner[:, :u])
            r = self.recurrent_activation(x_r + inner[:, u:2 * u])
            r_h = r * inner[:, 2 * u:]
        else:
            inner = ops.linalg.matmul(h_tm1, self.recurrent_kernel[:, :2 * u])
            z = self.recurrent_activation(x_z + inner[:, :u])
            r = self.recurrent_activation(x_r + inner[:, u:])
            r_h = ops.linalg.matmul(r * h_tm1, self.recurrent_kernel[:, 2 * u:])
        hh = self.activation(x_h + r_h)
        h = z * h_tm1 + (1 - z) * hh
        return h, [h]

    def get_config(self) -> dict:
        return dict(super().get_config(),
                    recurrent_activation=activations._config(self.recurrent_activation),
                    reset_after=self.reset_after, implementation=self.implementation)


def _check_implementation(value: Any, who: str) -> int:
    # Keras' modes 1 (a product per gate) and 2 (one product) differ only in rounding:
    # tapeflow computes mode 2's way for both and keeps the value for the config.
    if value not in (1, 2):
        raise ValueError(f"{who}: `implementation` must be 1 or 2; received {value!r}.")
    return int(value)


def has_builtin_step(cell: Any) -> bool:
    """Whether `cell` steps by the built-in formulas of this module: it is a
    `SimpleRNNCell`, `LSTMCell` or `GRUCell` (or a subclass) whose `call` is not
    overridden. `RNN` then runs the cell's input projection once for all time steps and
    loops over its step alone; any other cell's own `call` runs at every step.

    Example:
        >>> import tapeflow as tf
        >>> has_builtin_step(tf.keras.layers.LSTMCell(4, name="cell"))
        True
        >>> has_builtin_step(tf.keras.layers.Dense(4, name="not_a_cell"))
        False
    """
    return isinstance(cell, _GateCell) and type(cell).call is _GateCell.call


# ---------------------------------------------------------------- nested sizes
def _leaf_size(size: Any) -> bool:
    return isinstance(size, TensorShape) or (isinstance(size, (int, np.integer))
                                             and not isinstance(size, bool))


def flat_sizes(size: Any) -> list[tuple]:
    """The dims after the batch of each tensor that a cell's `state_size` (or
    `output_size`) describes, in tf.nest's order: an int n stands for one tensor of dims
    (n,), a TensorShape for one tensor of its dims, and a list or tuple of these (nested
    at will) for one tensor per leaf. Anything else raises a TypeError naming it.

    Example:
        >>> import tapeflow as tf
        >>> flat_sizes([4, tf.TensorShape([2, 3])])
        [(4,), (2, 3)]
        >>> flat_sizes(5), flat_sizes((1, [2, 3]))
        ([(5,)], [(1,), (2,), (3,)])
    """
    if _leaf_size(size):
        return [tuple(size) if isinstance(size, TensorShape) else (int(size),)]
    if isinstance(size, (list, tuple)):
        return [dims for s in size for dims in flat_sizes(s)]
    raise TypeError(f"A cell's `state_size` and `output_size` must be an int, a TensorShape, "
                    f"or a list or tuple of them; received {size!r} "
                    f"({type(size).__name__}).")


def pack_states(size: Any, flat: list) -> list:
    """The tensors `flat` (one per leaf of `size`, in `flat_sizes` order) in the structure
    a cell's `call` gets its states in: a list of one element per entry of a list or
    tuple `state_size` (each nested as its entry), or of one tensor for a single size.

    Example:
        >>> import tapeflow as tf
        >>> pack_states([4, (2, 3)], ["a", "b", "c"])
        ['a', ('b', 'c')]
        >>> pack_states(tf.TensorShape([2, 3]), ["a"])
        ['a']
    """
    flat = list(flat)
    if len(flat) != len(flat_sizes(size)):
        raise ValueError(f"pack_states: {len(flat)} tensor(s) for the sizes {size!r}, which "
                         f"describe {len(flat_sizes(size))}.")
    leaves = iter(flat)

    def build(s: Any) -> Any:
        if _leaf_size(s):
            return next(leaves)
        items = [build(c) for c in s]
        return type(s)(*items) if hasattr(s, "_fields") else type(s)(items)

    return [build(s) for s in ([size] if _leaf_size(size) else list(size))]


# ---------------------------------------------------------------- nested input shapes
def is_shape(s: Any) -> bool:
    """Whether `s` is one shape (a TensorShape, or a list or tuple of ints and None), not a
    structure of shapes.

    Example:
        >>> is_shape((None, 5, 3)), is_shape(((None, 5, 3), (None, 5, 2)))
        (True, False)
    """
    return isinstance(s, TensorShape) or (isinstance(s, (list, tuple)) and all(
        d is None or (isinstance(d, (int, np.integer)) and not isinstance(d, bool)) for d in s))


def shape_leaves(s: Any) -> list[TensorShape]:
    """The shapes in a structure of shapes (nested lists, tuples, dicts), in tf.nest's
    order, each a TensorShape.

    Example:
        >>> shape_leaves(((None, 5, 3), [(None, 5, 2, 2)]))
        [TensorShape([None, 5, 3]), TensorShape([None, 5, 2, 2])]
    """
    if is_shape(s):
        return [TensorShape(s)]
    if isinstance(s, dict):
        return [leaf for k in sorted(s) for leaf in shape_leaves(s[k])]
    if isinstance(s, (list, tuple)) and s:
        return [leaf for c in s for leaf in shape_leaves(c)]
    raise TypeError(f"Expected an input shape or a structure of them; received {s!r}.")


def map_shapes(fn: Any, s: Any) -> Any:
    """`fn` applied to each shape (a TensorShape) of a structure of shapes, which keeps its
    lists, tuples and dicts.

    Example:
        >>> map_shapes(lambda s: s[0], ((None, 5, 3), (7, 5)))
        (None, 7)
    """
    if is_shape(s):
        return fn(TensorShape(s))
    if isinstance(s, dict):
        return {k: map_shapes(fn, v) for k, v in s.items()}
    return type(s)(map_shapes(fn, c) for c in s)


def outer_shape(input_shape: Any) -> Any:
    """The inputs' shape in the shapes of tf_keras' ``[inputs, *initial_states]`` list (a
    shape, or a structure of them, as given otherwise).

    Example:
        >>> outer_shape([(None, 5, 3), (None, 4)]), outer_shape((None, 5, 3))
        ((None, 5, 3), (None, 5, 3))
    """
    if isinstance(input_shape, list) and input_shape and not is_shape(input_shape):
        return input_shape[0]
    return input_shape
