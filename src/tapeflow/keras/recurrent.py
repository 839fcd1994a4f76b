"""Keras recurrent layers `LSTM` and `GRU` (Keras 2 formulas, defaults and weight layouts,
so weights copied from TensorFlow give TensorFlow's outputs).

Both run over the time axis of (batch, time, features) inputs as an unrolled Python loop
of tapeflow ops, so they are differentiable in both modes and trace into one graph. The
input projection of every time step is one matrix product up front.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .. import ops
from ..tensor import TensorShape
from . import activations, initializers
from .base_layer import InputSpec, Layer

__all__ = ["LSTM", "GRU"]


class _RNN(Layer):
    """The loop shared by LSTM and GRU: subclasses give the gate count, the bias shape and
    `_step(x_projected_t, states) -> (h, states)`."""

    _gates = 1
    _n_states = 1

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, dropout: float = 0.0, recurrent_dropout: float = 0.0,
                 **kwargs: Any) -> None:
        for arg in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                    "kernel_constraint", "recurrent_constraint", "bias_constraint"):
            if kwargs.pop(arg, None) is not None:
                raise NotImplementedError(f"{type(self).__name__}: `{arg}` is not supported by "
                                          f"tapeflow's Keras layers; pass None.")
        unsupported = [a for a, v in (("stateful", stateful), ("time_major", time_major),
                                      ("dropout", dropout), ("recurrent_dropout",
                                                             recurrent_dropout)) if v]
        if unsupported:
            raise NotImplementedError(f"{type(self).__name__}: {unsupported[0]} is not "
                                      f"supported by tapeflow.")
        super().__init__(**kwargs)
        if isinstance(units, bool) or not isinstance(units, (int, np.integer)) or units <= 0:
            raise ValueError(f"Received an invalid value for argument `units`, expected a "
                             f"positive integer, got {units!r}.")
        self.units = int(units)
        self.activation = activations.get(activation)
        self.recurrent_activation = activations.get(recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = initializers.get(kernel_initializer)
        self.recurrent_initializer = initializers.get(recurrent_initializer)
        self.bias_initializer = initializers.get(bias_initializer)
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)
        self.input_spec = InputSpec(ndim=3)
        self.kernel = self.recurrent_kernel = self.bias = None

    def _bias_value(self, shape: tuple, dtype: Any) -> Any:
        return self.bias_initializer(shape, dtype=dtype)

    def build(self, input_shape: Any) -> None:
        """Create kernel [features, gates*units], recurrent_kernel [units, gates*units]
        and bias."""
        shape = TensorShape(input_shape)
        if len(shape) != 3 or shape[-1] is None:
            raise ValueError(f"{type(self).__name__} expects inputs of shape (batch, time, "
                             f"features) with known features; received {tuple(shape)}.")
        n = self._gates * self.units
        self.kernel = self.add_weight("kernel", (int(shape[-1]), n),
                                      initializer=self.kernel_initializer)
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, n),
                                                initializer=self.recurrent_initializer)
        if self.use_bias:
            bias_shape = self._bias_shape()
            self.bias = self.add_weight("bias", bias_shape,
                                        initializer=lambda s, dtype=None: self._bias_value(s, dtype))
        self.input_spec = InputSpec(ndim=3, axes={-1: int(shape[-1])})
        self.built = True

    def _bias_shape(self) -> tuple:
        return (self._gates * self.units,)

    def _project_inputs(self, inputs: Any) -> Any:
        """x @ kernel (+ input bias) for every step at once: (batch, time, gates*units)."""
        b, t, f = (int(d) for d in inputs.shape)
        flat = ops.linalg.matmul(ops.shape.reshape(inputs, [b * t, f]), self.kernel)
        return ops.shape.reshape(flat, [b, t, self._gates * self.units])

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None) -> Any:
        """Run the recurrence; the last output, or all of them with `return_sequences`,
        followed by the final states with `return_state`."""
        if mask is not None:
            raise NotImplementedError(f"{type(self).__name__}: masks are not supported by "
                                      f"tapeflow.")
        batch, steps = int(inputs.shape[0]), int(inputs.shape[1])
        if initial_state is None:
            zeros = ops.creation.zeros([batch, self.units], dtype=inputs.dtype)
            states = [zeros] * self._n_states
        else:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            if len(states) != self._n_states:
                raise ValueError(f"{type(self).__name__}: `initial_state` must hold "
                                 f"{self._n_states} tensor(s) of shape (batch, units); received "
                                 f"{len(states)}.")
            states = [ops.elementwise.cast(s, inputs.dtype) for s in states]
        projected = self._project_inputs(inputs)
        order = range(steps - 1, -1, -1) if self.go_backwards else range(steps)
        outputs = []
        for t in order:
            h, states = self._step(projected[:, t, :], states)
            outputs.append(h)
        if steps == 0:
            raise ValueError(f"{type(self).__name__}: the inputs have no time steps "
                             f"(shape {tuple(inputs.shape)}).")
        out = ops.shape.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [out] + list(states)
        return out

    def compute_output_shape(self, input_shape: Any) -> Any:
        shape = TensorShape(input_shape)
        out = TensorShape((shape[0], shape[1], self.units) if self.return_sequences
                          else (shape[0], self.units))
        if self.return_state:
            return [out] + [TensorShape((shape[0], self.units))] * self._n_states
        return out

    def get_config(self) -> dict:
        return dict(super().get_config(), units=self.units,
                    return_sequences=self.return_sequences, return_state=self.return_state,
                    go_backwards=self.go_backwards, use_bias=self.use_bias)


class LSTM(_RNN):
    """Long short-term memory (Keras 2): gates i, f, c, o in that order along the last
    axis of ``kernel`` [features, 4·units], ``recurrent_kernel`` [units, 4·units] and
    ``bias`` [4·units] (the forget gate's part initialized to 1 with `unit_forget_bias`):
    ``c = f·c + i·tanh(z_c)``, ``h = o·tanh(c)``, with sigmoid gates.

    Example:
        >>> import tapeflow as tf
        >>> lstm = tf.keras.layers.LSTM(4, return_sequences=True, return_state=True)
        >>> seq, h, c = lstm(tf.ones([2, 5, 3]))
        >>> seq.shape, h.shape, c.shape
        (TensorShape([2, 5, 4]), TensorShape([2, 4]), TensorShape([2, 4]))
        >>> [tuple(w.shape) for w in lstm.weights]
        [(3, 16), (4, 16), (16,)]
    """

    _gates = 4
    _n_states = 2

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_value(self, shape: tuple, dtype: Any) -> Any:
        if not self.unit_forget_bias:
            return self.bias_initializer(shape, dtype=dtype)
        u = self.units
        parts = [self.bias_initializer((u,), dtype=dtype), ops.creation.ones([u], dtype=dtype),
                 self.bias_initializer((2 * u,), dtype=dtype)]
        return ops.shape.concat(parts, axis=0)

    def _project_inputs(self, inputs: Any) -> Any:
        projected = super()._project_inputs(inputs)
        return projected + self.bias if self.bias is not None else projected

    def _step(self, x: Any, states: list) -> tuple:
        h_tm1, c_tm1 = states
        u = self.units
        z = x + ops.linalg.matmul(h_tm1, self.recurrent_kernel)
        i = self.recurrent_activation(z[:, :u])
        f = self.recurrent_activation(z[:, u:2 * u])
        c = f * c_tm1 + i * self.activation(z[:, 2 * u:3 * u])
        o = self.recurrent_activation(z[:, 3 * u:])
        h = o * self.activation(c)
        return h, [h, c]


class GRU(_RNN):
    """Gated recurrent unit (Keras 2, TF2 default ``reset_after=True``): gates z, r, h
    along the last axis of ``kernel`` [features, 3·units] and ``recurrent_kernel``
    [units, 3·units]; ``bias`` is [2, 3·units] (input and recurrent biases), or [3·units]
    with ``reset_after=False``. ``h = z·h_prev + (1 - z)·tanh(x_h + r·(h_prev @ U_h + b_h))``.

    Example:
        >>> import tapeflow as tf
        >>> gru = tf.keras.layers.GRU(4)
        >>> gru(tf.ones([2, 5, 3])).shape
        TensorShape([2, 4])
        >>> [tuple(w.shape) for w in gru.weights]
        [(3, 12), (4, 12), (2, 12)]
    """

    _gates = 3
    _n_states = 1

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 reset_after: bool = True, **kwargs: Any) -> None:
        self.reset_after = bool(reset_after)
        super().__init__(units, activation=activation, recurrent_activation=recurrent_activation,
                         use_bias=use_bias, kernel_initializer=kernel_initializer,
                         recurrent_initializer=recurrent_initializer,
                         bias_initializer=bias_initializer, **kwargs)

    def _bias_shape(self) -> tuple:
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _project_inputs(self, inputs: Any) -> Any:
        projected = super()._project_inputs(inputs)
        if self.bias is None:
            return projected
        return projected + (self.bias[0] if self.reset_after else self.bias)

    def _step(self, x: Any, states: list) -> tuple:
        (h_tm1,) = states
        u = self.units
        x_z, x_r, x_h = x[:, :u], x[:, u:2 * u], x[:, 2 * u:]
        if self.reset_after:
            inner = ops.linalg.matmul(h_tm1, self.recurrent_kernel)
            if self.bias is not None:
                inner = inner + self.bias[1]
            r_z, r_r, r_h = inner[:, :u], inner[:, u:2 * u], inner[:, 2 * u:]
            z = self.recurrent_activation(x_z + r_z)
            r = self.recurrent_activation(x_r + r_r)
            r_h = r * r_h
        else:
            inner = ops.linalg.matmul(h_tm1, self.recurrent_kernel[:, :2 * u])
            z = self.recurrent_activation(x_z + inner[:, :u])
            r = self.recurrent_activation(x_r + inner[:, u:])
            r_h = ops.linalg.matmul(r * h_tm1, self.recurrent_kernel[:, 2 * u:])
        hh = self.activation(x_h + r_h)
        h = z * h_tm1 + (1 - z) * hh
        return h, [h]

    def get_config(self) -> dict:
        return dict(super().get_config(), reset_after=self.reset_after)
