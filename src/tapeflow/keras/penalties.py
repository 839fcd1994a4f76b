"""What a layer adds to its `losses` (NOTE(layer-losses)): the call context whose
outermost call clears the terms of the previous one, the weight penalties a regularizer
makes, and the regularizer and constraint arguments of layers with weights.

NOTE(layer-losses): as tf_keras, a tensor given to `Layer.add_loss` in a call lives until
the next call of the outermost layer around it (`call_context`), so `model.losses` holds
the last forward pass's terms, which a training step reads under its tape; a callable
(a weight's penalty, `WeightPenalty`) is evaluated at each read of `losses`, so it is
recorded by whichever tape is active then. Activity penalties are divided by the batch
size, as tf_keras divides them.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

from .. import scopes
from ..tensor import Variable
from . import constraints, regularizers

__all__ = ["in_call", "call_context", "WeightPenalty", "weight_options", "weight_options_config"]


@contextlib.contextmanager
def call_context(layer: Any) -> Iterator[None]:
    """A layer's call: the outermost one (no layer call around it on this thread) clears
    the loss terms every layer under it added in the previous call, as tf_keras does, so
    `losses` holds the last call's. Layer.__call__, Sequential's and the functional
    model's run their `call` in it."""
    with scopes.layer_call() as outermost:
        if outermost:
            for sub in layer._flatten_layers():
                sub.__dict__["_eager_losses"] = []
        yield


def weight_options(layer: Any, **options: Any) -> None:
    """Keep a layer's `<weight>_regularizer` and `<weight>_constraint` arguments as
    attributes, looked up as tf_keras does (names, configs, objects, callables)."""
    for key, value in options.items():
        get = regularizers.get if key.endswith("_regularizer") else constraints.get
        layer.__dict__[key] = get(value)


def weight_options_config(layer: Any, *names: str) -> dict:
    """The config entries of `names` (regularizers and constraints, with the layer's
    `activity_regularizer`), serialized as tf_keras writes them."""
    out = {}
    for key in names:
        to_config = regularizers.serialize if key.endswith("_regularizer") \
            else constraints.serialize
        out[key] = to_config(layer.__dict__.get(key))
    return out


def in_call() -> bool:
    """Whether a layer's call is running on this thread (add_loss takes tensors then)."""
    return scopes.in_layer_call()


class WeightPenalty:
    """A weight's regularization term, evaluated whenever `losses` is read (the weight's
    current value, recorded by whatever tape is active)."""

    def __init__(self, regularizer: Any, weight: Variable) -> None:
        self.regularizer, self.weight = regularizer, weight

    def __call__(self) -> Any:
        return self.regularizer(self.weight)
