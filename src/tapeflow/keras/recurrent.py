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

A user's cell may take nested inputs (a tuple of (batch, time, ...) tensors, each step
then gets the tuple of their slices; tf_keras' list [inputs, *initial_states] stays
that) and have nested `state_size` and `output_size` (cells.flat_sizes): its outputs
and states keep their structure, as tf_keras'.

NOTE(stateful-rnn): with ``stateful=True`` the final states of a call are the first
states of the next, as tf_keras': they live in variables of shape (batch, *dims) made
at build, which needs the batch size (`batch_input_shape` on the first layer, or
`batch_shape` / `batch_size` on the Input; ValueError otherwise), so every call takes
that batch size. `reset_states()` zeros them, or sets them to given values. They are
no weights (not in `weights`, not in checkpoints, as tf_keras), and they stay as they
are while a call on the functional API's KerasTensors runs the layer to find its
output shapes (NOTE(symbolic-shapes)): such a call of an RNN or a wrapper runs in
`states_kept`.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import numpy as np

from .. import nest, ops, scopes
from ..core import no_recorders
from ..loops import bind_scan as _scan_loop
from ..module import name_scope
from ..ops.convert import as_tensor
from ..tensor import TensorShape, Variable
from .base_layer import InputSpec, Layer
from .cells import (GRUCell, LSTMCell, SimpleRNNCell, flat_sizes, has_builtin_step, is_shape,
                    map_shapes, outer_shape, pack_states, shape_leaves)
from .serialization import deserialize as _deserialize_layer
from .serialization import serialize as _serialize_layer
from .common import SYMBOLIC, call_accepts

__all__ = ["RNN", "SimpleRNN", "LSTM", "GRU"]

_NEEDS_BATCH = ("If a RNN is stateful, it needs to know its batch size. Specify the batch "
                "size of your input tensors: \n- If using a Sequential model, specify the "
                "batch size by passing a `batch_input_shape` argument to your first layer.\n"
                "- If using the functional API, specify the batch size by passing a "
                "`batch_shape` argument to your Input layer.")


# ---------------------------------------------------------------- symbolic calls
def states_kept() -> Any:
    """A block in which stateful RNNs keep their states: their calls compute as usual but
    write no final states (NOTE(stateful-rnn)). A call on KerasTensors runs its layer in
    one to find the output shapes (`states_kept_if_symbolic`).

    Example:
        >>> import tapeflow as tf
        >>> rnn = tf.keras.layers.SimpleRNN(2, stateful=True, bias_initializer="ones")
        >>> with states_kept():
        ...     _ = rnn(tf.ones([1, 3, 2]))
        >>> float(tf.reduce_sum(tf.abs(rnn.states[0])))
        0.0
    """
    return scopes.states_kept()  # per thread: another thread's RNNs go on updating


def states_kept_if_symbolic(inputs: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
    """A context for a layer's call: `states_kept` when the call is on the functional API's
    symbolic inputs (a KerasTensor anywhere in `inputs`, `args` or `kwargs`), where the
    layer is run only to find its output shapes; for any other call, a context that does
    nothing.

    Example:
        >>> import tapeflow as tf
        >>> lstm = tf.keras.layers.LSTM(2, stateful=True, bias_initializer="ones")
        >>> with states_kept_if_symbolic(tf.keras.Input(batch_shape=(3, 4, 5))):
        ...     _ = lstm(tf.ones([3, 4, 5]))
        >>> float(tf.reduce_sum(tf.abs(lstm.states[0])))
        0.0
    """
    symbolic = SYMBOLIC[0]
    if symbolic is not None and symbolic[0]((inputs, args, kwargs or {})):
        return states_kept()
    return contextlib.nullcontext()


def _states_kept() -> bool:
    return scopes.keeping_states()


class _Held:
    """A value a layer keeps out of its weights and its checkpoints: tf_keras tracks no
    stateful RNN's state variables."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


class RNN(Layer):
    """Run a cell over the time axis of (batch, time, ...) inputs: the last output, or
    every output with `return_sequences`, followed by the final states with
    `return_state`. `go_backwards` reads the steps last to first (and returns the outputs
    in that order). A cell is a layer with ``call(inputs, states) -> (output,
    new_states)`` and a `state_size`: an int, a TensorShape, or a (nested) list or tuple
    of them for several states; likewise its optional `output_size`. A cell of the user's
    own may take nested inputs: ``rnn((x1, x2))`` hands each step the tuple of slices.

    ``initial_state=`` gives the first states (zeros by default); a (batch, time) bool
    ``mask=``, or the mask the inputs carry (after `Embedding(mask_zero=True)` or
    `Masking`), skips the masked steps (NOTE(rnn-masks)). With ``stateful=True`` the
    final states of a call are the next call's first ones, until `reset_states`
    (NOTE(stateful-rnn)).

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
        if time_major:
            raise NotImplementedError(f"{type(self).__name__}: time_major=True is not "
                                      f"supported by tapeflow.")
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
        self.stateful, self.time_major = bool(stateful), False
        self.supports_masking = True
        self.input_spec = InputSpec(ndim=3) if has_builtin_step(cell) else InputSpec(min_ndim=2)

    def __call__(self, inputs: Any, *args: Any, **kwargs: Any) -> Any:
        with states_kept_if_symbolic(inputs, args, kwargs):
            return super().__call__(inputs, *args, **kwargs)

    @property
    def states(self) -> list:
        """A stateful RNN's state variables (once built), in the structure its cell gets
        its states in; None for each state otherwise, as tf_keras."""
        held = self.__dict__.get("_held_states")
        if held is not None:
            return held.value
        return pack_states(self.cell.state_size, [None] * len(self._state_dims()))

    def _state_dims(self) -> list[tuple]:
        return flat_sizes(self.cell.state_size)

    def _scope(self) -> Any:
        try:
            return name_scope(self.name)
        except ValueError:  # a name no scope accepts: the cell's weights go unscoped
            return contextlib.nullcontext()

    def build(self, input_shape: Any) -> None:
        """Build the cell for one step's inputs (batch, ...), naming its weights under this
        layer ("lstm/lstm_cell/kernel:0"); a stateful RNN also makes its state variables
        (NOTE(stateful-rnn))."""
        input_shape = outer_shape(input_shape)
        nested = not is_shape(input_shape)
        leaves = shape_leaves(input_shape)
        builtin = has_builtin_step(self.cell)
        who = type(self).__name__
        for shape in leaves:
            if len(shape) < 2 or (not nested and len(shape) < 3) or \
                    (builtin and (nested or len(shape) != 3 or shape[-1] is None)):
                raise ValueError(f"{who} expects inputs of shape (batch, time, features)"
                                 f"{'' if builtin else ' (or a structure of (batch, time, ...))'}"
                                 f" with known features; received "
                                 f"{input_shape if nested else tuple(leaves[0])}.")
        step_shape = map_shapes(lambda s: TensorShape((s[0],) + tuple(s[2:])), input_shape)
        if not getattr(self.cell, "built", True):
            build = getattr(self.cell, "_maybe_build", None) or self.cell.build
            with self._scope():
                build(step_shape)
        batch = leaves[0][0]
        if nested:
            self.input_spec = None
        elif self.stateful:
            self.input_spec = InputSpec(shape=(batch, None) + tuple(leaves[0][2:]))
        else:
            self.input_spec = InputSpec(ndim=len(leaves[0]), axes={-1: leaves[0][-1]})
        self.__dict__["_state_batch"] = batch
        if self.stateful:
            self.reset_states()
        super().build(input_shape)

    # -------------------------------------------------- stateful
    def reset_states(self, states: Any = None) -> None:
        """Zero a stateful RNN's states, or set them to `states` (arrays in the structure
        of `states`, each (batch, *state dims)), as tf_keras; AttributeError on an RNN that
        is not stateful, ValueError while its batch size is unknown.

        Example:
            >>> import numpy as np, tapeflow as tf
            >>> rnn = tf.keras.layers.SimpleRNN(2, stateful=True)
            >>> rnn.build((3, 4, 5))           # a batch of 3
            >>> rnn.reset_states([np.ones((3, 2))])
            >>> rnn.states[0].numpy()[0]
            array([1., 1.], dtype=float32)
        """
        if not self.stateful:
            raise AttributeError("Layer must be stateful.")
        batch = self.__dict__.get("_state_batch")
        if not batch:
            raise ValueError(_NEEDS_BATCH)
        if self.__dict__.get("_held_states") is None:
            self._make_state_variables(int(batch))
        elif states is None:
            for var in nest.flatten(self.states):
                var.assign(np.zeros(tuple(var.shape), var.dtype.as_numpy_dtype))
        if states is None:
            return
        variables, given = nest.flatten(self.states), nest.flatten(states)
        if len(given) != len(variables):
            raise ValueError(f"Layer {self.name} expects {len(variables)} states, but it "
                             f"received {len(given)} state values. States received: {states}")
        values = [np.asarray(v) for v in given]
        for i, (value, var) in enumerate(zip(values, variables, strict=True)):
            if value.shape != tuple(var.shape):
                raise ValueError(f"State {i} is incompatible with layer {self.name}: expected "
                                 f"shape={tuple(var.shape)} but found shape={value.shape}")
        for value, var in zip(values, variables, strict=True):
            var.assign(value.astype(var.dtype.as_numpy_dtype))

    def _make_state_variables(self, batch: int) -> None:
        dims = self._state_dims()
        if hasattr(self.cell, "get_initial_state"):
            first = nest.flatten(self.cell.get_initial_state(inputs=None, batch_size=batch,
                                                             dtype=self.dtype))
        else:
            first = [ops.creation.zeros((batch,) + d, dtype=self.dtype) for d in dims]
        if len(first) != len(dims):
            raise ValueError(f"{type(self).__name__}: the cell's get_initial_state gave "
                             f"{len(first)} tensor(s) for the {len(dims)} states of its "
                             f"state_size {self.cell.state_size!r}.")
        with no_recorders(), self._scope():
            variables = [Variable(v, trainable=False, name="Variable", dtype=self.dtype)
                         for v in first]
        self.__dict__["_held_states"] = _Held(pack_states(self.cell.state_size, variables))

    def get_initial_state(self, inputs: Any) -> list:
        """The first states for `inputs` (batch, time, ...) when no `initial_state` is
        given: the cell's `get_initial_state`, or zeros, in the cell's state structure.

        Example:
            >>> import tapeflow as tf
            >>> h, c = tf.keras.layers.LSTM(3).get_initial_state(tf.ones([2, 5, 4]))
            >>> h.shape, float(tf.reduce_sum(c))
            (TensorShape([2, 3]), 0.0)
        """
        first = nest.flatten(inputs)[0]
        first = as_tensor(first, self.name, "inputs")
        return pack_states(self.cell.state_size, self._zero_states(first))

    def _zero_states(self, first: Any) -> list:
        batch, dims = ops.structural.shape_of(first)[0], self._state_dims()
        if hasattr(self.cell, "get_initial_state"):
            states = nest.flatten(self.cell.get_initial_state(inputs=None, batch_size=batch,
                                                              dtype=first.dtype))
        else:
            states = [ops.creation.zeros((batch,) + d, dtype=first.dtype) for d in dims]
        if len(states) != len(dims):
            raise ValueError(f"{type(self).__name__}: the cell's get_initial_state gave "
                             f"{len(states)} tensor(s) for {len(dims)} states.")
        return states

    # -------------------------------------------------- the loop
    def _initial_states(self, first: Any, initial_state: Any) -> list:
        """The first states, flat: given, stored (stateful) or zeros."""
        batch, dims, who = int(first.shape[0]), self._state_dims(), type(self).__name__
        given = None
        if initial_state is not None:
            states = list(initial_state) if isinstance(initial_state, (list, tuple)) \
                else [initial_state]
            states = nest.flatten(states)
            if len(states) != len(dims):
                raise ValueError(f"{who}: `initial_state` must hold {len(dims)} tensor(s), "
                                 f"one per state, of shapes {[(batch,) + d for d in dims]}; "
                                 f"received {len(states)}.")
            given = []
            for i, (s, d) in enumerate(zip(states, dims, strict=True)):
                s = as_tensor(s, self.name, f"initial_state[{i}]")
                if tuple(np.shape(s._value)) != (batch,) + d:
                    raise ValueError(f"{who}: initial_state[{i}] must have shape "
                                     f"{(batch,) + d} (batch, state size); received "
                                     f"{tuple(np.shape(s._value))}.")
                given.append(ops.elementwise.cast(s, first.dtype))
        if not self.stateful:
            return given if given is not None else self._zero_states(first)
        variables = nest.flatten(self.states)
        if variables[0] is None or int(variables[0].shape[0]) != batch:
            raise ValueError(f"{who} {self.name!r} is stateful with states for batches of "
                             f"{self.__dict__.get('_state_batch')}; received inputs of batch "
                             f"{batch}: a stateful RNN takes batches of the one size it was "
                             f"built for.")
        stored = [ops.elementwise.cast(v, first.dtype) for v in variables]
        if given is None:
            return stored
        # tf_keras: the stored states once any of them is nonzero, else the given ones
        used = ops.reduction.reduce_any(ops.shape.stack(
            [ops.reduction.reduce_any(ops.elementwise.not_equal(s, 0)) for s in stored]))
        return [ops.elementwise.where(used, s, g) for s, g in zip(stored, given, strict=True)]

    def _user_step(self, training: Any) -> Any:
        """One step of a cell's own `call`, on flat states."""
        cell, size, n = self.cell, self.cell.state_size, len(self._state_dims())
        kwargs = {"training": training} if call_accepts(cell.call)[0] else {}

        def step(x: Any, states: list) -> tuple[Any, list]:
            output, new_states = cell.call(x, pack_states(size, states), **kwargs)
            flat = nest.flatten(new_states)
            if len(flat) != n:
                raise ValueError(f"{type(self).__name__}: the cell {cell.name!r} returned "
                                 f"{len(flat)} new state tensor(s); its state_size {size!r} "
                                 f"describes {n}.")
            return output, flat

        return step

    def _time_mask(self, mask: Any, batch: int, steps: int) -> Any:
        mask = nest.flatten(mask)[0]  # the mask of the (first) inputs, not of the states
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
        if isinstance(inputs, list):  # tf_keras' [inputs, *initial_states]; a tuple nests
            if initial_state is None and len(inputs) > 1:
                initial_state = list(inputs[1:])
            inputs = inputs[0]
        first = nest.flatten(inputs)[0]
        batch, steps = int(first.shape[0]), int(first.shape[1])
        if steps == 0:
            raise ValueError(f"{type(self).__name__}: the inputs have no time steps "
                             f"(shape {tuple(first.shape)}).")
        states = self._initial_states(first, initial_state)
        mask = self._time_mask(mask, batch, steps)
        if self._builtin_step():
            if nest.is_nested(inputs):
                raise ValueError(f"{type(self).__name__}: the cell "
                                 f"{type(self.cell).__name__} takes one input tensor; "
                                 f"received a structure of {len(nest.flatten(inputs))}.")
            projected, step = self.cell._project(inputs), self.cell._step
            if not self.unroll:
                return self._finish(*self._scanned(projected, mask, states, step))
        else:
            projected, step = inputs, self._user_step(training)
        outputs, previous = [], None
        for t in (range(steps - 1, -1, -1) if self.go_backwards else range(steps)):
            output, new_states = step(nest.map_structure(lambda a: a[:, t], projected), states)
            if mask is not None:  # NOTE(rnn-masks)
                keep = mask[:, t]
                if previous is None or self.zero_output_for_mask:
                    previous = nest.map_structure(ops.creation.zeros_like, output)
                output = nest.map_structure(lambda n, o: _where_steps(keep, n, o), output,
                                            previous)
                new_states = [_where_steps(keep, n, s)
                              for n, s in zip(new_states, states, strict=True)]
                previous = output
            states = new_states
            outputs.append(output)
        if self.return_sequences:
            out = nest.map_structure(lambda *o: ops.shape.stack(list(o), axis=1), *outputs)
        else:
            out = outputs[-1]
        return self._finish(out, states)

    def _finish(self, out: Any, final_states: list) -> Any:
        """Keep a stateful RNN's final states; the outputs, and the states if returned."""
        if self.stateful and not _states_kept():
            for var, s in zip(nest.flatten(self.states), final_states, strict=True):
                var.assign(ops.elementwise.cast(s, var.dtype))
        if not self.return_state:
            return out
        return (out if isinstance(out, list) else [out]) + \
            pack_states(self.cell.state_size, final_states)

    def _builtin_step(self) -> bool:
        """Whether the step is a built-in cell's own (a user's cell keeps the Python loop:
        its call runs at every step, as in eager TensorFlow)."""
        return has_builtin_step(self.cell)

    def _scanned(self, projected: Any, mask: Any, states: list, step: Any) -> tuple:
        """The recurrence as one loop op (tf.scan's primitive, as tf_keras' symbolic loop
        with unroll=False): the same step, masks (NOTE(rnn-masks)) and results as the
        unrolled loop of `call`, as (outputs, final states)."""
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
                    # of the static shape: the loop's reverse rule fails on a zeros_like
                    # made inside its body (tf.scan's too)
                    previous = ops.creation.zeros(list(output.shape), output.dtype)
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
            return ops.shape.transpose(outputs, [1, 0] + list(range(2, outputs.ndim))), \
                list(final_states)
        return last, list(final_states)

    # -------------------------------------------------- shapes and masks
    def compute_output_shape(self, input_shape: Any) -> Any:
        first = shape_leaves(outer_shape(input_shape))[0]
        batch, time = first[0], first[1]
        size = getattr(self.cell, "output_size", None)
        dims = flat_sizes(size) if size is not None else self._state_dims()[:1]
        outs = [TensorShape((batch, time) + d if self.return_sequences else (batch,) + d)
                for d in dims]
        if self.return_state:
            return outs + [TensorShape((batch,) + d) for d in self._state_dims()]
        return outs[0] if len(outs) == 1 else outs

    def compute_mask(self, inputs: Any, mask: Any = None) -> Any:
        """The input mask for the output sequence with `return_sequences`, else None; None
        for the states (tf_keras keeps the mask's order with `go_backwards` too)."""
        mask = nest.flatten(mask)[0]
        output_mask = mask if self.return_sequences else None
        if self.return_state:
            return [output_mask] + [None] * len(self.states)
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
