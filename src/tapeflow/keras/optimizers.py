"""Keras optimizers (`tf.keras.optimizers`, Keras 2 / tf_keras 2.11+): `SGD` (momentum,
nesterov), `Adam` (amsgrad), `RMSprop` (momentum, centered), `Adagrad`, with
`apply_gradients(zip(grads, vars))` and `minimize(loss, var_list)`; `schedules` holds
the learning-rate schedules.

Each update is tf_keras' formula, written with the same float32 operations in the same
order, so a run matches TensorFlow's to float32 rounding. The optimizer's state
(`iterations`, the learning rate, and slots such as momentum or Adam's m and v) is
`tf.Variable`s: the slots of a variable are made the first time a gradient for it is
applied, with no recorder seeing their creation, so a `tf.function` training step
creates them in its first trace and its replays only update them.
"""

from __future__ import annotations

import logging
import threading
import weakref
from typing import Any, Iterable

import numpy as np

from .. import dtypes as _dt
from .. import ops
from ..core import no_recorders
from ..ops.convert import as_tensor
from ..saving import deferred
from ..tape import GradientTape
from ..tensor import Tensor, Variable
from . import schedules
from .schedules import LearningRateSchedule

__all__ = ["Optimizer", "SGD", "Adam", "RMSprop", "Adagrad", "schedules", "get"]

_log = logging.getLogger("tapeflow.keras")

# Builds of every optimizer, one at a time: rare (a variable's first step), and a module
# lock survives copying and pickling an optimizer.
_BUILDING = threading.RLock()
# Each optimizer's steps, one at a time: a step reads `iterations` (Adam's bias correction)
# and adds 1 to it, so two threads stepping at once used one step count, and another none.
# Kept beside the optimizer rather than on it, which then still copies and pickles.
_STEPPING: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()


def _step_lock(optimizer: Any) -> threading.RLock:
    lock = _STEPPING.get(optimizer)
    if lock is None:
        with _BUILDING:
            lock = _STEPPING.setdefault(optimizer, threading.RLock())
    return lock


def _check_float(value: Any, who: str, arg: str, lo: float = 0.0, hi: float | None = None) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise TypeError(f"{who}: `{arg}` must be a number; received {arg}={value!r}.")
    if value < lo or (hi is not None and value > hi):
        bound = f"in [{lo}, {hi}]" if hi is not None else f">= {lo}"
        raise ValueError(f"{who}: `{arg}` must be {bound}; received {arg}={value!r}.")
    return float(value)


def _clip_by_norm(g: Tensor, clip_norm: float) -> Tensor:
    # tf.clip_by_norm's form, which keeps a zero gradient's derivative finite
    l2sum = ops.reduction.reduce_sum(g * g, keepdims=True)
    positive = ops.elementwise.greater(l2sum, 0)
    safe = ops.elementwise.where(positive, l2sum, ops.creation.ones_like(l2sum))
    l2norm = ops.elementwise.where(positive, ops.elementwise.sqrt(safe), l2sum)
    return g * clip_norm / ops.elementwise.maximum(l2norm, clip_norm)


class Optimizer:
    """The base of the optimizers: subclasses create their slots in `build` (with
    `add_variable_from_reference`) and update one variable in `update_step`.

    `learning_rate` is a float (held in a variable, settable) or a
    `schedules.LearningRateSchedule`, evaluated on `iterations` at the start of each
    `apply_gradients`. `clipnorm`, `clipvalue` and `global_clipnorm` clip the gradients
    as Keras does; `weight_decay` subtracts ``var * weight_decay * lr`` before the update.

    Example:
        >>> import tapeflow as tf
        >>> class PlainGD(tf.keras.optimizers.Optimizer):
        ...     def update_step(self, gradient, variable):
        ...         variable.assign_sub(self.learning_rate * gradient)
        >>> v = tf.Variable([1.0, 2.0])
        >>> PlainGD(learning_rate=0.5, name="gd").apply_gradients([(tf.constant([1., 1.]), v)])
        <tapeflow.Variable 'gd/iteration:0' shape=() dtype=int64, numpy=1>
        >>> v.numpy()
        array([0.5, 1.5], dtype=float32)
    """

    def __init__(self, learning_rate: Any = 0.001, name: str | None = None,
                 weight_decay: float | None = None, clipnorm: float | None = None,
                 clipvalue: float | None = None, global_clipnorm: float | None = None,
                 use_ema: bool = False, ema_momentum: float = 0.99,
                 ema_overwrite_frequency: int | None = None, jit_compile: bool = True,
                 **kwargs: Any) -> None:
        who = type(self).__name__
        kwargs.pop("is_legacy_optimizer", None)
        if kwargs:
            raise TypeError(f"{who}: unexpected keyword argument {sorted(kwargs)[0]!r}.")
        if use_ema:
            raise NotImplementedError(f"{who}: `use_ema` is not supported by tapeflow.")
        given = [a for a, v in (("clipnorm", clipnorm), ("clipvalue", clipvalue),
                                ("global_clipnorm", global_clipnorm)) if v is not None]
        if len(given) > 1:
            raise ValueError(f"{who}: at most one of `clipnorm`, `clipvalue` and "
                             f"`global_clipnorm` can be set; received {given}.")
        self.name = name or who
        self.weight_decay = weight_decay
        self.clipnorm, self.clipvalue, self.global_clipnorm = clipnorm, clipvalue, global_clipnorm
        self.jit_compile = jit_compile
        # kept for the config only: tapeflow has no moving average of the weights (use_ema)
        self.ema_momentum, self.ema_overwrite_frequency = ema_momentum, ema_overwrite_frequency
        self._index: dict[int, int] = {}
        self._slots: dict[str, list[Variable]] = {}
        with no_recorders():  # as Keras' init_scope: state is made, never traced
            self._iterations = Variable(0, dtype=_dt.int64, trainable=False,
                                        name=f"{self.name}/iteration")
            self._variables: list[Variable] = [self._iterations]
            if isinstance(learning_rate, LearningRateSchedule):
                self._learning_rate: Any = learning_rate
                first = as_tensor(learning_rate(self._iterations), who, "learning_rate")
                self._current_learning_rate = Variable(first, trainable=False,
                                                       name=f"{self.name}/current_learning_rate")
            elif callable(learning_rate):
                raise TypeError(f"{who}: `learning_rate` must be a float or a "
                                f"LearningRateSchedule; received the callable {learning_rate!r}.")
            else:
                lr = _check_float(learning_rate, who, "learning_rate")
                self._learning_rate = Variable(np.float32(lr), trainable=False,
                                               name=f"{self.name}/learning_rate")

    # -------------------------------------------------- state
    @property
    def iterations(self) -> Variable:
        """The number of `apply_gradients` calls so far (an int64 variable)."""
        return self._iterations

    @property
    def learning_rate(self) -> Any:
        """The learning rate: its variable, or with a schedule, the variable holding the
        schedule's value at the last `apply_gradients`. Set a float to change it."""
        if isinstance(self._learning_rate, LearningRateSchedule):
            return self._current_learning_rate
        return self._learning_rate

    @learning_rate.setter
    def learning_rate(self, value: Any) -> None:
        if isinstance(value, LearningRateSchedule):
            self._learning_rate = value
            if not hasattr(self, "_current_learning_rate"):
                with no_recorders():
                    self._current_learning_rate = Variable(
                        as_tensor(value(self._iterations), self.name, "learning_rate"),
                        trainable=False, name=f"{self.name}/current_learning_rate")
        elif isinstance(self._learning_rate, LearningRateSchedule):
            raise TypeError("This optimizer was created with a `LearningRateSchedule` object as "
                            "its `learning_rate` constructor argument, hence its learning rate "
                            "is not settable. Create the optimizer with a float `learning_rate` "
                            "to set it.")
        else:
            self._learning_rate.assign(value)

    lr = learning_rate

    @property
    def variables(self) -> list[Variable]:
        """The optimizer's variables: `iterations`, then the slots in creation order."""
        return list(self._variables)

    def add_variable_from_reference(self, model_variable: Variable, variable_name: str,
                                    shape: Any = None, initial_value: Any = None) -> Variable:
        """A slot variable like `model_variable` (zeros unless `initial_value` is given),
        named ``"<variable_name>/<model variable's name>"``."""
        with _BUILDING, no_recorders():
            if initial_value is None:
                shape = tuple(model_variable.shape) if shape is None else tuple(shape)
                initial_value = np.zeros(shape, model_variable.dtype.as_numpy_dtype)
            slot = Variable(initial_value, trainable=False, dtype=model_variable.dtype,
                            name=f"{variable_name}/{model_variable._name}")
        self._variables.append(slot)
        return slot

    def build(self, var_list: Iterable[Variable]) -> None:
        """Create the slots of the variables not seen before (each variable once). Threads
        sharing the optimizer build one at a time: a variable's index and its slots' places
        in the slot lists are assigned together."""
        with _BUILDING:
            for var in var_list:
                if id(var) in self._index:
                    continue
                made = self._slot_makers(var)
                self._index[id(var)] = len(self._index)
                for slot_name, slot in made:
                    self._slots.setdefault(slot_name, []).append(slot)
                deferred.slots_created(self, var, made)  # NOTE(deferred-restore)

    def _slot_makers(self, var: Variable) -> list[tuple[str, Variable]]:
        """The (slot name, slot variable) pairs of a new variable (none by default)."""
        return []

    def _slot(self, name: str, var: Variable) -> Variable:
        return self._slots[name][self._index[id(var)]]

    # -------------------------------------------------- updates
    def update_step(self, gradient: Tensor, variable: Variable) -> None:
        """Update one variable from its gradient (subclasses implement it)."""
        raise NotImplementedError(f"{type(self).__name__} must implement `update_step`.")

    def _clip_gradients(self, grads: list) -> list:
        if self.clipnorm and self.clipnorm > 0:
            return [_clip_by_norm(g, self.clipnorm) for g in grads]
        if self.global_clipnorm and self.global_clipnorm > 0:
            total = ops.elementwise.sqrt(sum(ops.reduction.reduce_sum(g * g) for g in grads))
            scale = self.global_clipnorm * ops.elementwise.minimum(
                1.0 / total, 1.0 / self.global_clipnorm)
            return [g * ops.elementwise.cast(scale, g.dtype) for g in grads]
        if self.clipvalue and self.clipvalue > 0:
            return [ops.elementwise.clip_by_value(g, -self.clipvalue, self.clipvalue)
                    for g in grads]
        return grads

    def apply_gradients(self, grads_and_vars: Iterable, name: str | None = None,
                        skip_gradients_aggregation: bool = False, **kwargs: Any) -> Variable:
        """Apply one step to each variable from its gradient, then add 1 to `iterations`
        (returned). Pairs whose gradient is None are skipped, as Keras (with a warning);
        all None is an error.

        Example:
            >>> import tapeflow as tf
            >>> w = tf.Variable([1.0, -2.0])
            >>> opt = tf.keras.optimizers.SGD(learning_rate=0.1)
            >>> with tf.GradientTape() as tape:
            ...     loss = tf.reduce_sum(w ** 2)
            >>> grads = tape.gradient(loss, [w])
            >>> int(opt.apply_gradients(zip(grads, [w], strict=True)))
            1
            >>> w.numpy()
            array([ 0.8, -1.6], dtype=float32)
        """
        who = f"{type(self).__name__}.apply_gradients"
        pairs = list(grads_and_vars)
        for i, pair in enumerate(pairs):
            if not isinstance(pair, (tuple, list)) or len(pair) != 2:
                raise TypeError(f"{who}: `grads_and_vars` must hold (gradient, variable) pairs; "
                                f"item {i} is {pair!r}.")
            if not isinstance(pair[1], Variable):
                raise TypeError(f"{who}: item {i} of `grads_and_vars` pairs a gradient with "
                                f"{type(pair[1]).__name__} {pair[1]!r}; expected a tf.Variable.")
        with _step_lock(self):
            return self._apply(pairs, who)

    def _apply(self, pairs: list, who: str) -> Variable:
        if isinstance(self._learning_rate, LearningRateSchedule):
            self._current_learning_rate.assign(
                ops.elementwise.cast(self._learning_rate(self._iterations),
                                     self._current_learning_rate.dtype))
        if not pairs:
            return self._iterations
        self.build([v for _, v in pairs])
        kept = [(g, v) for g, v in pairs if g is not None]
        if not kept:
            raise ValueError(f"No gradients provided for any variable: "
                             f"{[v.name for _, v in pairs]}.")
        if len(kept) < len(pairs):
            _log.warning("Gradients do not exist for variables %s when minimizing the loss.",
                         [v.name for g, v in pairs if g is None])
        grads = []
        for g, v in kept:
            g = as_tensor(g, who, "grads_and_vars")
            if tuple(g.shape) != tuple(v.shape):
                raise ValueError(f"{who}: the gradient of {v.name} has shape {tuple(g.shape)}; "
                                 f"expected the variable's shape {tuple(v.shape)}.")
            grads.append(g if g.dtype == v.dtype else ops.elementwise.cast(g, v.dtype))
        grads = self._clip_gradients(grads)
        variables = [v for _, v in kept]
        if self.weight_decay is not None:
            for v in variables:
                lr = ops.elementwise.cast(self.learning_rate, v.dtype)
                v.assign_sub(v * ops.elementwise.cast(self.weight_decay, v.dtype) * lr)
        for g, v in zip(grads, variables, strict=True):
            self.update_step(g, v)
            if v.constraint is not None:  # projected after its step, as TensorFlow's optimizers
                v.assign(v.constraint(v))
        self._iterations.assign_add(1)
        return self._iterations

    def compute_gradients(self, loss: Any, var_list: Any, tape: GradientTape | None = None
                          ) -> list[tuple]:
        """(gradient, variable) pairs of `loss` (a callable of no arguments, or a tensor
        recorded on `tape`) with respect to `var_list` (a list, or a callable returning one)."""
        who = f"{type(self).__name__}.minimize"
        if not callable(loss) and tape is None:
            raise ValueError(f"{who}: `tape` is required when a `Tensor` loss is passed; "
                             f"received loss={loss!r} and tape=None.")
        tape = tape if tape is not None else GradientTape()
        if callable(loss):
            with tape:
                if not callable(var_list):
                    tape.watch(var_list)
                loss = loss()
                if callable(var_list):
                    var_list = var_list()
        var_list = list(var_list() if callable(var_list) else var_list)
        if not var_list:
            raise ValueError(f"{who}: `var_list` is empty; expected the variables to update.")
        grads = tape.gradient(loss, var_list)
        return list(zip(grads, var_list, strict=True))

    def minimize(self, loss: Any, var_list: Any, tape: GradientTape | None = None) -> None:
        """One step on `loss`: gradients by `GradientTape`, then `apply_gradients`.

        Example:
            >>> import tapeflow as tf
            >>> w = tf.Variable(3.0)
            >>> opt = tf.keras.optimizers.SGD(learning_rate=0.25)
            >>> opt.minimize(lambda: w * w, [w])
            >>> float(w)
            1.5
        """
        self.apply_gradients(self.compute_gradients(loss, var_list, tape))

    def get_config(self) -> dict:
        """The constructor arguments (a schedule as its serialized dict)."""
        lr = self._learning_rate
        return {"name": self.name, "weight_decay": self.weight_decay,
                "clipnorm": self.clipnorm, "global_clipnorm": self.global_clipnorm,
                "clipvalue": self.clipvalue, "use_ema": False, "ema_momentum": self.ema_momentum,
                "ema_overwrite_frequency": self.ema_overwrite_frequency,
                "jit_compile": self.jit_compile,
                "is_legacy_optimizer": False,
                "learning_rate": schedules.serialize(lr) if isinstance(lr, LearningRateSchedule)
                else float(lr.numpy())}

    @classmethod
    def from_config(cls, config: dict) -> "Optimizer":
        """The optimizer of a `get_config()` dict."""
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"])
        return cls(**config)

    def _lr(self, variable: Variable) -> Tensor:
        return ops.elementwise.cast(self.learning_rate, variable.dtype)


class SGD(Optimizer):
    """Gradient descent with momentum: ``m = momentum * m - lr * g``, then ``var += m``,
    or with `nesterov`, ``var += momentum * m - lr * g`` (tf_keras' form; plain
    ``var -= lr * g`` when momentum is 0).

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> opt = tf.keras.optimizers.SGD(learning_rate=0.1, momentum=0.9)
        >>> for _ in range(2):
        ...     opt.minimize(lambda: v ** 2 / 2, [v])   # the gradient is v
        >>> round(float(v), 6)   # v - 0.1, then v - 0.1 * 0.9 - 0.9 * 0.1
        0.72
    """

    def __init__(self, learning_rate: Any = 0.01, momentum: float = 0.0, nesterov: bool = False,
                 name: str = "SGD", **kwargs: Any) -> None:
        self.momentum = _check_float(momentum, "SGD", "momentum", 0.0, 1.0)
        self.nesterov = bool(nesterov)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def _slot_makers(self, var: Variable) -> list:
        # tf_keras makes the momentum slot even when momentum is 0
        return [("m", self.add_variable_from_reference(var, "m"))]

    def update_step(self, gradient: Tensor, variable: Variable) -> None:
        lr = self._lr(variable)
        m = self._slot("m", variable)
        momentum = ops.elementwise.cast(self.momentum, variable.dtype)
        m.assign(-gradient * lr + m * momentum)
        if self.nesterov:
            variable.assign_add(-gradient * lr + m * momentum)
        else:
            variable.assign_add(m)

    def get_config(self) -> dict:
        return dict(super().get_config(), momentum=self.momentum, nesterov=self.nesterov)


class Adam(Optimizer):
    """Adam: ``m += (g - m)(1 - beta_1)``, ``v += (g² - v)(1 - beta_2)``, ``var -= m·alpha /
    (sqrt(v) + epsilon)`` with ``alpha = lr·sqrt(1 - beta_2^t) / (1 - beta_1^t)`` (the bias
    correction folded into the step, epsilon outside the square root, as tf_keras);
    `amsgrad` uses the running maximum of v.

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable([1.0, -1.0])
        >>> opt = tf.keras.optimizers.Adam(learning_rate=0.1)
        >>> _ = opt.apply_gradients([(tf.constant([0.5, -2.0]), v)])
        >>> v.numpy().round(4)   # the first step moves each coordinate by about lr
        array([ 0.9, -0.9], dtype=float32)
    """

    def __init__(self, learning_rate: Any = 0.001, beta_1: float = 0.9, beta_2: float = 0.999,
                 epsilon: float = 1e-7, amsgrad: bool = False, name: str = "Adam",
                 **kwargs: Any) -> None:
        self.beta_1 = _check_float(beta_1, "Adam", "beta_1", 0.0, 1.0)
        self.beta_2 = _check_float(beta_2, "Adam", "beta_2", 0.0, 1.0)
        self.epsilon = _check_float(epsilon, "Adam", "epsilon")
        self.amsgrad = bool(amsgrad)
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def _slot_makers(self, var: Variable) -> list:
        out = [("m", self.add_variable_from_reference(var, "m")),
               ("v", self.add_variable_from_reference(var, "v"))]
        if self.amsgrad:
            out.append(("vhat", self.add_variable_from_reference(var, "vhat")))
        return out

    def update_step(self, gradient: Tensor, variable: Variable) -> None:
        dt = variable.dtype
        lr = self._lr(variable)
        local_step = ops.elementwise.cast(self._iterations + 1, dt)
        beta_1_power = ops.transcendental.pow(ops.elementwise.cast(self.beta_1, dt), local_step)
        beta_2_power = ops.transcendental.pow(ops.elementwise.cast(self.beta_2, dt), local_step)
        m, v = self._slot("m", variable), self._slot("v", variable)
        alpha = lr * ops.elementwise.sqrt(1 - beta_2_power) / (1 - beta_1_power)
        m.assign_add((gradient - m) * (1 - self.beta_1))
        v.assign_add((ops.elementwise.square(gradient) - v) * (1 - self.beta_2))
        if self.amsgrad:
            v_hat = self._slot("vhat", variable)
            v_hat.assign(ops.elementwise.maximum(v_hat, v))
            v = v_hat
        variable.assign_sub((m * alpha) / (ops.elementwise.sqrt(v) + self.epsilon))

    def get_config(self) -> dict:
        return dict(super().get_config(), beta_1=self.beta_1, beta_2=self.beta_2,
                    epsilon=self.epsilon, amsgrad=self.amsgrad)


class RMSprop(Optimizer):
    """RMSprop: ``velocity = rho·velocity + (1 - rho)·g²``, ``increment = lr·g /
    sqrt(velocity + epsilon)`` (epsilon inside the root, as tf_keras); `centered`
    subtracts the square of the running mean gradient inside the root; with
    `momentum`, ``mom = momentum·mom + increment`` is the step.

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> opt = tf.keras.optimizers.RMSprop(learning_rate=0.01)
        >>> _ = opt.apply_gradients([(tf.constant(2.0), v)])
        >>> round(float(v), 6)   # 1 - 0.01 * 2 / sqrt(0.1 * 4)
        0.968377
    """

    def __init__(self, learning_rate: Any = 0.001, rho: float = 0.9, momentum: float = 0.0,
                 epsilon: float = 1e-7, centered: bool = False, name: str = "RMSprop",
                 **kwargs: Any) -> None:
        self.rho = _check_float(rho, "RMSprop", "rho", 0.0, 1.0)
        self.momentum = _check_float(momentum, "RMSprop", "momentum", 0.0)
        self.epsilon = _check_float(epsilon, "RMSprop", "epsilon")
        self.centered = bool(centered)
        kwargs.setdefault("ema_overwrite_frequency", 100)  # tf_keras' RMSprop default
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def _slot_makers(self, var: Variable) -> list:
        out = [("velocity", self.add_variable_from_reference(var, "velocity"))]
        if self.momentum > 0:
            out.append(("momentum", self.add_variable_from_reference(var, "momentum")))
        if self.centered:
            out.append(("average_gradient",
                        self.add_variable_from_reference(var, "average_gradient")))
        return out

    def update_step(self, gradient: Tensor, variable: Variable) -> None:
        lr = self._lr(variable)
        rho = self.rho
        velocity = self._slot("velocity", variable)
        velocity.assign(rho * velocity + (1 - rho) * ops.elementwise.square(gradient))
        if self.centered:
            average_grad = self._slot("average_gradient", variable)
            average_grad.assign(rho * average_grad + (1 - rho) * gradient)
            denominator = velocity - ops.elementwise.square(average_grad) + self.epsilon
        else:
            denominator = velocity + self.epsilon
        increment = lr * gradient * ops.elementwise.rsqrt(denominator)
        if self.momentum > 0:
            momentum = self._slot("momentum", variable)
            momentum.assign(self.momentum * momentum + increment)
            variable.assign_add(-momentum)
        else:
            variable.assign_add(-increment)

    def get_config(self) -> dict:
        return dict(super().get_config(), rho=self.rho, momentum=self.momentum,
                    epsilon=self.epsilon, centered=self.centered)


class Adagrad(Optimizer):
    """Adagrad: ``accumulator += g²``, ``var -= lr·g / sqrt(accumulator + epsilon)``, the
    accumulator starting at `initial_accumulator_value` (0.1, as Keras).

    Example:
        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> opt = tf.keras.optimizers.Adagrad(learning_rate=0.1)
        >>> _ = opt.apply_gradients([(tf.constant(0.3), v)])
        >>> round(float(v), 6)   # 1 - 0.1 * 0.3 / sqrt(0.1 + 0.09)
        0.931175
    """

    def __init__(self, learning_rate: Any = 0.001, initial_accumulator_value: float = 0.1,
                 epsilon: float = 1e-7, name: str = "Adagrad", **kwargs: Any) -> None:
        self.initial_accumulator_value = _check_float(
            initial_accumulator_value, "Adagrad", "initial_accumulator_value")
        self.epsilon = _check_float(epsilon, "Adagrad", "epsilon")
        super().__init__(learning_rate=learning_rate, name=name, **kwargs)

    def _slot_makers(self, var: Variable) -> list:
        init = np.full(tuple(var.shape), self.initial_accumulator_value,
                       var.dtype.as_numpy_dtype)
        return [("accumulator", self.add_variable_from_reference(var, "accumulator",
                                                                 initial_value=init))]

    def update_step(self, gradient: Tensor, variable: Variable) -> None:
        lr = self._lr(variable)
        accumulator = self._slot("accumulator", variable)
        accumulator.assign_add(gradient * gradient)
        variable.assign_sub(lr * gradient / ops.elementwise.sqrt(accumulator + self.epsilon))

    def get_config(self) -> dict:
        return dict(super().get_config(), initial_accumulator_value=self.initial_accumulator_value,
                    epsilon=self.epsilon)


_BY_NAME = {"sgd": SGD, "adam": Adam, "rmsprop": RMSprop, "adagrad": Adagrad}


def get(identifier: Any) -> Optimizer:
    """An optimizer from a name ("adam", "sgd", ...) with default arguments, or an
    optimizer instance (returned as is).

    Example:
        >>> import tapeflow as tf
        >>> type(tf.keras.optimizers.get("adam")).__name__
        'Adam'
    """
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, str) and identifier.lower() in _BY_NAME:
        return _BY_NAME[identifier.lower()]()
    raise ValueError(f"Could not interpret optimizer identifier: {identifier!r}; expected an "
                     f"Optimizer or one of {sorted(_BY_NAME)}.")
