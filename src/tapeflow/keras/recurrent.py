"""Keras recurrent layers: `RNN` (any cell over the time axis), and `SimpleRNN`, `LSTM`
and `GRU`, the RNNs of the cells in cells.py (tf_keras 2.21 formulas, defaults, weight
names and layouts, so weights copied from TensorFlow give TensorFlow's outputs).

For the built-in cells the time loop is one loop op (tf.scan's primitive,
control_flow.py: its step traced once, compiled to lax.scan under jit_compile=True), as
tf_keras' symbolic loop; with `unroll=True`, and for a user's own cell (whose call then
runs at every step, as in eager TensorFlow), an unrolled Python loop of tapeflow ops.
Both are differentiable in both modes and give the same values. For the built-in cells, the
input projection of every time step is one matrix product up front.

NOTE(rnn-masks): with a mask (batch, time), a masked step leaves the states as they
were and repeats the previous step's output (zeros before the first unmasked step), as
tf_keras' backend.rnn. With `return_sequences`, the output's mask is the input's.
"""

from __future__ import annotations

import contextlib
from typing import Any

import numpy as np

from .. import ops
from ..loops import bind_scan as _scan_loop
from ..module import name_scope
from ..ops.convert import as_tensor
from ..tensor import TensorShape
from .base_layer import InputSpec, Layer
from .cells import GRUCell, LSTMCell, SimpleRNNCell, has_builtin_step
from .serialization import deserialize as _deserialize_layer
from .serialization import serialize as _serialize_layer
from .utils import call_accepts

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU"]


def _sizes(state_size: Any) -> list[int]:
    return [int(s) for s in state_size] if isinstance(state_size, (list, tuple)) \
        else [int(state_size)]


class RNN(Layer):
    """Run a cell over the time axis of (batch, time, features) inputs: the last output,
    or every output with `return_sequences`, followed by the final states with
    `return_state`. `go_backwards` reads the steps last to first (and returns the outputs
    in that order). A cell is a layer with ``call(inputs, states) -> (output,
    new_states)`` and a `state_size` (an int, or a list for several states).

    ``initial_state=`` gives the first states (zeros by default); a (batch, time) bool
    ``mask=``, or the mask the inputs carry (after `Embedding(mask_zero=True)` or
    `Masking`), skips the masked steps (NOTE(rnn-masks)).

    Example:
        >>> import tapeflow as tf
        >>> cell = tf.keras.layers.LSTMCell(4, name="cell")
        >>> rnn = tf.keras.layers.RNN(cell, return_sequences=True, return_state=True, name="rnn")
        >>> seq, h, c = rnn(tf.ones([2, 5, 3]))
        >>> seq.shape, h.shape, c.shape
        (TensorShape([2, 5, 4]), TensorShape([2, 4]), TensorShape([2, 4]))
        >>> [v.name for v in rnn.weights]      # the cell's weights, named under the RNN
        ['rnn/cell/kernel:0', 'rnn/cell/recurrent_kernel:0', 'rnn/cell/bias:0']
    """

    def __init__(self, cell: Any, return_sequences: bool = False, return_state: bool = False,
                 go_backwards: bool = False, stateful: bool = False, unroll: bool = False,
                 time_major: bool = False, **kwargs: Any) -> None:
        if isinstance(cell, (list, tuple)):
            raise NotImplementedError("RNN: a list of cells (StackedRNNCells) is not supported "
                                      "by tapeflow; stack RNN layers instead.")
        if not hasattr(cell, "call") or not hasattr(cell, "state_size"):
            raise ValueError(f"Argument `cell` should have a `call` method and a `state_size` "
                             f"attribute. Received: cell={cell!r}")
        for arg, value in (("stateful", stateful), ("time_major", time_major)):
            if value:
                raise NotImplementedError(f"{type(self).__name__}: {arg}=True is not supported "
                                          f"by tapeflow.")
        self.zero_output_for_mask = bool(kwargs.pop("zero_output_for_mask", False))
        if "input_shape" not in kwargs and ("input_dim" in kwargs or "input_length" in kwargs):
            kwargs["input_shape"] = (kwargs.pop("input_length", None),
                                     kwargs.pop("input_dim", None))
        kwargs.pop("input_dim", None)
        kwargs.pop("input_length", None)
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)
        self.stateful, self.time_major = False, False
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3)

    @property
    def states(self) -> list:
        """None for each state: a layer that is not stateful keeps no states (tf_keras)."""
        return [None] * len(_sizes(self.cell.state_size))

    def _scope(self) -> Any:
        try:
            return name_scope(self.name)
        except ValueError:  # a name no scope accepts: the cell's weights go unscoped
            return contextlib.nullcontext()

    def build(self, input_shape: Any) -> None:
        """Build the cell for one step's inputs (batch, features), naming its weights under
        this layer ("lstm/lstm_cell/kernel:0")."""
        if isinstance(input_shape, list) and input_shape and \
                isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]  # [inputs, *initial_states]
        shape = TensorShape(input_shape)
        if len(shape) != 3 or shape[-1] is None:
            raise ValueError(f"{type(self).__name__} expects inputs of shape (batch, time, "
                             f"features) with known features; received {tuple(shape)}.")
        if not getattr(self.cell, "built", True):
            build = getattr(self.cell, "_maybe_build", None) or self.cell.build
            with self._scope():
                build(TensorShape((shape[0], shape[-1])))
        self.input_spec = InputSpec(ndim=3, axes={-1: int(shape[-1])})
        super().build(input_shape)

    # -------------------------------------------------- the loop
    def _initial_states(self, inputs: Any, initial_state: Any) -> list:
        batch = int(inputs.shape[0])
        sizes = _sizes(self.cell.state_size)
        who = type(self).__name__
        if initial_state is None:
            if hasattr(self.cell, "get_initial_state"):
                states = self.cell.get_initial_state(batch_size=batch, dtype=inputs.dtype)
            else:
                states = [ops.creation.zeros([batch, n], dtype=inputs.dtype) for n in sizes]
            return list(states) if isinstance(states, (list, tuple)) else [states]
        states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
            else [initial_state]
        if len(states) != len(sizes):
            raise ValueError(f"{who}: `initial_state` must hold {len(sizes)} tensor(s) of shape "
                             f"(batch, units); received {len(states)}.")
        out = []
        for i, (s, n) in enumerate(zip(states, sizes, strict=True)):
            s = as_tensor(s, self.name, f"initial_state[{i}]")
            if tuple(np.shape(s._value)) != (batch, n):
                raise ValueError(f"{who}: initial_state[{i}] must have shape ({batch}, {n}) "
                                 f"(batch, state size); received {tuple(np.shape(s._value))}.")
            out.append(ops.elementwise.cast(s, inputs.dtype))
        return out

    def _step_fn(self, training: Any) -> tuple[Any, Any]:
        """(project, step): the projection of all inputs and one step of the recurrence."""
        cell = self.cell
        if has_builtin_step(cell):
            return cell._project, cell._step
        kwargs = {"training": training} if call_accepts(cell.call)[0] else {}

        def step(x: Any, states: list) -> tuple[Any, list]:
            output, new_states = cell.call(x, states, **kwargs)
            return output, list(new_states) if isinstance(new_states, (list, tuple)) \
                else [new_states]

        return (lambda x: x), step

    def _time_mask(self, mask: Any, batch: int, steps: int) -> Any:
        if isinstance(mask, (list, tuple)):
            mask = mask[0]  # the mask of the inputs, not of the initial states
        if mask is None:
            return None
        mask = as_tensor(mask, self.name, "mask")
        if tuple(np.shape(mask._value)) != (batch, steps):
            raise ValueError(f"{type(self).__name__} {self.name!r}: `mask` must have shape "
                             f"({batch}, {steps}) (batch, time); received "
                             f"{tuple(np.shape(mask._value))}.")
        if mask.dtype.name != "bool":
            mask = ops.elementwise.cast(mask, "bool")
        return mask

    def call(self, inputs: Any, mask: Any = None, training: Any = None,
             initial_state: Any = None) -> Any:
        """Run the recurrence; the last output, or all of them with `return_sequences`,
        followed by the final states with `return_state`."""
        if isinstance(inputs, (list, tuple)):  # tf_keras' [inputs, *initial_states]
            if initial_state is None and len(inputs) > 1:
                initial_state = list(inputs[1:])
            inputs = inputs[0]
        batch, steps = int(inputs.shape[0]), int(inputs.shape[1])
        if steps == 0:
            raise ValueError(f"{type(self).__name__}: the inputs have no time steps "
                             f"(shape {tuple(inputs.shape)}).")
        states = self._initial_states(inputs, initial_state)
        mask = self._time_mask(mask, batch, steps)
        project, step = self._step_fn(training)
        projected = project(inputs)
        if not self.unroll and self._builtin_step():
            return self._scanned(projected, mask, states, step)
        outputs, previous = [], None
        for t in (range(steps - 1, -1, -1) if self.go_backwards else range(steps)):
            output, new_states = step(projected[:, t], states)
            if mask is not None:  # NOTE(rnn-masks)
                keep = mask[:, t]
                if previous is None or self.zero_output_for_mask:
                    previous = ops.creation.zeros_like(output)
                output = _where_steps(keep, output, previous)
                new_states = [_where_steps(keep, n, s)
                              for n, s in zip(new_states, states, strict=True)]
                previous = output
            states = new_states
            outputs.append(output)
        out = ops.shape.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [out] + list(states)
        return out

    def _builtin_step(self) -> bool:
        """Whether the step is a built-in cell's own (a user's cell keeps the Python loop:
        its call runs at every step, as in eager TensorFlow)."""
        return has_builtin_step(self.cell)

    def _scanned(self, projected: Any, mask: Any, states: list, step: Any) -> Any:
        """The recurrence as one loop op (tf.scan's primitive, as tf_keras' symbolic loop
        with unroll=False): the same step, masks (NOTE(rnn-masks)) and results as the
        unrolled loop of `call`."""
        n = len(states)
        xs = [_time_major(projected, self.go_backwards)]
        if mask is not None:
            xs.append(_time_major(mask, self.go_backwards))

        def body(*a: Any) -> list:
            states, previous, x_t = list(a[:n]), a[n], a[n + 1]
            output, new_states = step(x_t, states)
            if mask is not None:  # NOTE(rnn-masks)
                keep = a[n + 2]
                if self.zero_output_for_mask:
                    previous = ops.creation.zeros_like(output)
                output = _where_steps(keep, output, previous)
                new_states = [_where_steps(keep, s_new, s_old)
                              for s_new, s_old in zip(new_states, states, strict=True)]
            return list(new_states) + [output, output]

        # The output of a step before the first unmasked one: zeros of the output's shape,
        # which is the first state's (h) for the built-in cells.
        results = _scan_loop(body, list(states) + [ops.creation.zeros_like(states[0])], xs,
                             False)
        final_states, last, outputs = results[:n], results[n], results[n + 1]
        if self.return_sequences:
            out = ops.shape.transpose(outputs, [1, 0] + list(range(2, outputs.ndim)))
        else:
            out = last
        if self.return_state:
            return [out] + list(final_states)
        return out

    # -------------------------------------------------- shapes and masks
    def compute_output_shape(self, input_shape: Any) -> Any:
        if isinstance(input_shape, list) and input_shape and \
                isinstance(input_shape[0], (list, tuple)):
            input_shape = input_shape[0]
        shape = TensorShape(input_shape)
        size = getattr(self.cell, "output_size", None)
        if size is None:
            size = _sizes(self.cell.state_size)[0]
        out = TensorShape((shape[0], shape[1], size) if self.return_sequences
                          else (shape[0], size))
        if self.return_state:
            return [out] + [TensorShape((shape[0], n)) for n in _sizes(self.cell.state_size)]
        return out

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for the output sequence with `return_sequences`, else None; None
        for the states (tf_keras keeps the mask's order with `go_backwards` too)."""
        if isinstance(mask, (list, tuple)):
            mask = mask[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(_sizes(self.cell.state_size))
        return output_mask

    def get_config(self) -> dict:
        config = {"return_sequences": self.return_sequences, "return_state": self.return_state,
                  "go_backwards": self.go_backwards, "stateful": self.stateful,
                  "unroll": self.unroll, "time_major": self.time_major}
        if self.zero_output_for_mask:
            config["zero_output_for_mask"] = True
        from_base = super().get_config()
        if type(self) is RNN:
            from_base["cell"] = _serialize_layer(self.cell)
        return dict(from_base, **config)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "RNN":
        """An RNN from `get_config()`: the cell is rebuilt from its own config."""
        config = dict(config)
        cell = _deserialize_layer(config.pop("cell"), custom_objects)
        return cls(cell, **config)


def _time_major(x: Any, backwards: bool) -> Any:
    """(batch, time, ...) -> (time, batch, ...), in the order the loop reads it."""
    x = ops.shape.transpose(x, [1, 0] + list(range(2, x.ndim)))
    return x[::-1] if backwards else x


def _where_steps(keep: Any, new: Any, old: Any) -> Any:
    """`new` where the (batch,) mask `keep` holds, else `old`; any trailing dims."""
    extra = new.ndim - 1
    if extra:
        keep = ops.shape.reshape(keep, [-1] + [1] * extra)
    return ops.elementwise.where(keep, new, old)


# ---------------------------------------------------------------- the three layers
_CELL_ARGS = ("units", "activation", "use_bias", "kernel_initializer", "recurrent_initializer",
              "bias_initializer", "kernel_regularizer", "recurrent_regularizer",
              "bias_regularizer", "kernel_constraint", "recurrent_constraint", "bias_constraint",
              "dropout", "recurrent_dropout")


class _CellRNN(RNN):
    """An RNN of one built-in cell made from the layer's arguments: the cell's arguments
    are readable on the layer (``lstm.units``), and its config is the cell's and the
    RNN's together, as tf_keras."""

    _cell_class: type = SimpleRNNCell
    _cell_name = ""

    def __init__(self, units: int, cell_kwargs: dict, **kwargs: Any) -> None:
        for arg in ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                    "kernel_constraint", "recurrent_constraint", "bias_constraint"):
            if arg in kwargs:
                cell_kwargs[arg] = kwargs.pop(arg)
        if kwargs.get("activity_regularizer") is not None:
            raise NotImplementedError(f"{type(self).__name__}: `activity_regularizer` is not "
                                      f"supported by tapeflow's Keras layers; pass None.")
        for arg in ("dropout", "recurrent_dropout", "implementation"):
            if arg in kwargs:
                cell_kwargs[arg] = kwargs.pop(arg)
        cell = self._cell_class(units, dtype=kwargs.get("dtype"),
                                trainable=kwargs.get("trainable", True), name=self._cell_name,
                                **cell_kwargs)
        super().__init__(cell, **kwargs)

    def get_config(self) -> dict:
        cell_config = self.cell.get_config()
        for key in ("name", "trainable", "dtype"):
            cell_config.pop(key, None)
        return dict(super().get_config(), activity_regularizer=None, **cell_config)

    @classmethod
    def from_config(cls, config: dict, custom_objects: dict | None = None) -> "_CellRNN":
        """The layer of a `get_config()` dict."""
        config = dict(config)
        if config.get("implementation") == 0:  # tf_keras' old mode 0 is mode 1
            config["implementation"] = 1
        return cls(**config)


def _cell_property(name: str) -> property:
    def read(self: _CellRNN) -> Any:
        return getattr(self.cell, name)

    return property(read, doc=f"The cell's `{name}`.")


for _name in _CELL_ARGS + ("kernel", "recurrent_kernel", "bias"):
    setattr(_CellRNN, _name, _cell_property(_name))
del _name


class SimpleRNN(_CellRNN):
    """A fully connected RNN: ``h_t = activation(x_t @ kernel + bias + h_{t-1} @
    recurrent_kernel)`` (an `RNN` of a `SimpleRNNCell`; weights named
    "simple_rnn/simple_rnn_cell/kernel:0", ...).

    Example:
        >>> import tapeflow as tf
        >>> rnn = tf.keras.layers.SimpleRNN(4, return_sequences=True)
        >>> rnn(tf.ones([2, 5, 3])).shape
        TensorShape([2, 5, 4])
        >>> [tuple(w.shape) for w in rnn.weights]
        [(3, 4), (4, 4), (4,)]
    """

    _cell_class = SimpleRNNCell
    _cell_name = "simple_rnn_cell"

    def __init__(self, units: int, activation: Any = "tanh", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 **kwargs: Any) -> None:
        super().__init__(units, dict(activation=activation, use_bias=use_bias,
                                     kernel_initializer=kernel_initializer,
                                     recurrent_initializer=recurrent_initializer,
                                     bias_initializer=bias_initializer), **kwargs)


class LSTM(_CellRNN):
    """Long short-term memory (Keras 2), an `RNN` of an `LSTMCell`: gates i, f, c, o in
    that order along the last axis of ``kernel`` [features, 4·units],
    ``recurrent_kernel`` [units, 4·units] and ``bias`` [4·units] (the forget gate's part
    initialized to 1 with `unit_forget_bias`): ``c = f·c + i·tanh(z_c)``,
    ``h = o·tanh(c)``, with sigmoid gates. The states are h and c.

    Example:
        >>> import tapeflow as tf
        >>> lstm = tf.keras.layers.LSTM(4, return_sequences=True, return_state=True)
        >>> seq, h, c = lstm(tf.ones([2, 5, 3]))
        >>> seq.shape, h.shape, c.shape
        (TensorShape([2, 5, 4]), TensorShape([2, 4]), TensorShape([2, 4]))
        >>> [tuple(w.shape) for w in lstm.weights]
        [(3, 16), (4, 16), (16,)]
    """

    _cell_class = LSTMCell
    _cell_name = "lstm_cell"
    recurrent_activation = _cell_property("recurrent_activation")
    unit_forget_bias = _cell_property("unit_forget_bias")
    implementation = _cell_property("implementation")

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 unit_forget_bias: bool = True, **kwargs: Any) -> None:
        super().__init__(units, dict(activation=activation,
                                     recurrent_activation=recurrent_activation,
                                     use_bias=use_bias, kernel_initializer=kernel_initializer,
                                     recurrent_initializer=recurrent_initializer,
                                     bias_initializer=bias_initializer,
                                     unit_forget_bias=unit_forget_bias), **kwargs)


class GRU(_CellRNN):
    """Gated recurrent unit (Keras 2, TF2 default ``reset_after=True``), an `RNN` of a
    `GRUCell`: gates z, r, h along the last axis of ``kernel`` [features, 3·units] and
    ``recurrent_kernel`` [units, 3·units]; ``bias`` is [2, 3·units] (input and recurrent
    biases), or [3·units] with ``reset_after=False``.
    ``h = z·h_prev + (1 - z)·tanh(x_h + r·(h_prev @ U_h + b_h))``.

    Example:
        >>> import tapeflow as tf
        >>> gru = tf.keras.layers.GRU(4)
        >>> gru(tf.ones([2, 5, 3])).shape
        TensorShape([2, 4])
        >>> [tuple(w.shape) for w in gru.weights]
        [(3, 12), (4, 12), (2, 12)]
    """

    _cell_class = GRUCell
    _cell_name = "gru_cell"
    recurrent_activation = _cell_property("recurrent_activation")
    reset_after = _cell_property("reset_after")
    implementation = _cell_property("implementation")

    def __init__(self, units: int, activation: Any = "tanh",
                 recurrent_activation: Any = "sigmoid", use_bias: bool = True,
                 kernel_initializer: Any = "glorot_uniform",
                 recurrent_initializer: Any = "orthogonal", bias_initializer: Any = "zeros",
                 reset_after: bool = True, **kwargs: Any) -> None:
        super().__init__(units, dict(activation=activation,
                                     recurrent_activation=recurrent_activation,
                                     use_bias=use_bias, kernel_initializer=kernel_initializer,
                                     recurrent_initializer=recurrent_initializer,
                                     bias_initializer=bias_initializer,
                                     reset_after=reset_after), **kwargs)
