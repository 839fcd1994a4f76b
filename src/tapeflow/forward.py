"""ForwardAccumulator: forward-mode automatic differentiation, TensorFlow's API.

While active, an accumulator applies each op's JVP rule as the op runs and
keeps the output's tangent keyed by the output tensor, dropping it when the
tensor is garbage-collected (forward mode keeps no intermediates). `jvp()` only
looks tangents up. JVP rules run with the stack cut below the accumulator
(NOTE(strict-nesting) in core), so outer accumulators and tapes differentiate
them and inner ones do not see them.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from . import dtypes as _dt
from . import nest
from .catalog import NO_DERIVATIVE
from .core import Primitive, Recorder, Zero, call_below
from .errors import DTypeMismatchError
from .graph.replayed_rules import compiled_jvp
from .tape import UnconnectedGradients, _unconnected
from .tensor import Tensor, TensorBase, convert_to_tensor
from .ops.structural import zeros_of

__all__ = ["ForwardAccumulator"]


class ForwardAccumulator(Recorder):
    """Compute Jacobian-vector products with forward-mode autodiff (`tf.autodiff.ForwardAccumulator`).

    Args:
        primals: a tensor or variable, or a nested structure of them, to
            differentiate with respect to.
        tangents: the vector(s) of the JVP, with the structure, shapes and
            dtypes of `primals`.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant([1., 2.])
        >>> with tf.autodiff.ForwardAccumulator(x, tf.constant([1., 0.])) as acc:
        ...     y = x * x
        >>> acc.jvp(y).numpy()
        array([2., 0.], dtype=float32)
    """

    differentiates = True

    def __init__(self, primals: Any, tangents: Any) -> None:
        self._tangents: dict[int, Tensor] = {}
        self._refs: dict[int, weakref.ref] = {}
        flat_p = nest.flatten(primals)
        try:
            flat_t = nest.flatten_up_to(primals, tangents)
        except ValueError as e:
            raise ValueError(f"ForwardAccumulator: `tangents` must have the structure of "
                             f"`primals` (one tangent per primal): {e}") from None
        for i, (p, t) in enumerate(zip(flat_p, flat_t, strict=True)):
            self._watch(i, p, t)

    def _watch(self, i: int, primal: Any, tangent: Any) -> None:
        if not isinstance(primal, TensorBase):
            raise TypeError(f"ForwardAccumulator: primals[{i}] is a {type(primal).__name__}; "
                            "expected a tf.Tensor or tf.Variable.")
        if _dt.kind(primal._value.dtype) not in "fc":
            return  # integers and bools have no tangent: their JVP is None (as TensorFlow)
        if isinstance(tangent, TensorBase) and tangent._value.dtype != primal._value.dtype:
            raise DTypeMismatchError(f"ForwardAccumulator: tangents[{i}] has dtype "
                                     f"{tangent.dtype.name} but primals[{i}] has dtype "
                                     f"{primal.dtype.name}; they must match.")
        t = convert_to_tensor(tangent, dtype=primal.dtype)
        if np.shape(t._value) != np.shape(primal._value):
            raise ValueError(f"ForwardAccumulator: tangents[{i}] has shape "
                             f"{tuple(np.shape(t._value))} but primals[{i}] has shape "
                             f"{tuple(np.shape(primal._value))}; they must match.")
        if id(primal) in self._tangents:
            raise ValueError(f"ForwardAccumulator: primals[{i}] is watched twice; give each "
                             "primal once.")
        self._store(primal, t)

    def _store(self, primal: Any, tangent: Tensor) -> None:
        key = id(primal)
        self._tangents[key] = tangent
        tangents = self._tangents
        refs = self._refs

        # The callback holds the dicts, not the accumulator: a dying tensor drops its JVP.
        def drop(_: Any, key: int = key) -> None:
            tangents.pop(key, None)
            refs.pop(key, None)

        self._refs[key] = weakref.ref(primal, drop)

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        if NO_DERIVATIVE in prim.effects:
            return
        tangents = self._tangents
        found = [tangents.get(id(x)) for x in inputs]
        if found.count(None) == len(found):
            return
        try:
            jvp = prim.rules["jvp"]
        except KeyError:
            raise NotImplementedError(f"ForwardAccumulator: primitive {prim.name!r} has no "
                                      "forward-mode rule (its `jvp`, tapeflow.extend.define): "
                                      "it cannot be differentiated in forward mode.") from None
        tans = tuple(Zero.like(x) if t is None else t for x, t in zip(inputs, found, strict=True))
        # With no recorder below this one, nobody sees the rule's ops: a rule seen often
        # runs as compiled code (NOTE(replayed-rules)).
        run = compiled_jvp(prim, jvp, tans, outputs, inputs, params) if level == 0 else None
        if run is not None:
            out_tangents = run(tans, outputs, inputs)
        else:  # NOTE(strict-nesting): the rule is seen only by the recorders below this one.
            out_tangents = call_below(level, jvp, tans, outputs, inputs, **params)
        for o, t in zip(outputs, out_tangents, strict=True):
            if type(t) is not Zero and t is not None and ((d := o._value.dtype).kind in "fc" or _dt.kind(d) == "f"):
                self._store(o, t)

    def jvp(self, primals: Any, unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """Look up (never compute) the JVPs of `primals`, a tensor or nested structure.

        Works after the context has exited. A tensor this accumulator never saw
        computed from its primals gets None, or zeros with
        ``unconnected_gradients=UnconnectedGradients.ZERO``.
        """
        mode = _unconnected(unconnected_gradients)

        def fetch(x: Any) -> Any:
            if not isinstance(x, TensorBase):
                raise TypeError(f"ForwardAccumulator.jvp: expected tensors or variables; got a "
                                f"{type(x).__name__}.")
            x._value  # noqa: B018 - raises for a tensor of a finished trace (NOTE(out-of-scope))
            t = self._tangents.get(id(x))
            if t is None and mode is UnconnectedGradients.ZERO:
                return zeros_of(x)  # of sizes a size-generic trace reads
            return t

        return nest.map_structure(fetch, primals)

    def __repr__(self) -> str:
        return f"<ForwardAccumulator: {len(self._tangents)} tangents, active={self.active}>"
