"""What a layer adds to its `losses` (NOTE(layer-losses)): the call context whose
outermost call clears the terms of the previous one, the weight penalties a regularizer
makes, and the regularizer and constraint arguments of layers with weights.

NOTE(layer-losses): as tf_keras, a tensor given to `Layer.add_loss` in a call lives until
the next call of the outermost layer around it, so `model.losses` holds the last forward
pass's terms, which a training step reads under its tape; a callable (a weight's
penalty, `WeightPenalty`) is evaluated at each read of `losses`, so it is recorded by
whichever tape is active then. Activity penalties are divided by the batch size, as
tf_keras divides them. Rather than clear every sublayer at each outermost call (a walk
of the model on every eager call), each outermost call takes a token from a count; a
layer's terms carry the token of the call that made them (a layer replaces its terms
when one of a newer call comes), and `losses` of a layer keeps the terms made since its
own last outermost call (`current_losses`): what tf_keras's clearing would have left.
"""

from __future__ import annotations

from typing import Any

from .. import scopes
from ..tensor import Variable
from . import constraints, regularizers

__all__ = ["in_call", "call_context", "add_call_loss", "current_losses", "WeightPenalty",
           "weight_options", "weight_options_config"]


class call_context:
    """A layer's call (NOTE(layer-losses)): the outermost one on this thread takes a new
    token and stamps `layer` with it. Layer.__call__, Sequential's and the functional
    model's run their `call` in it. A class, not a generator: it runs on every call."""

    __slots__ = ("layer",)

    def __init__(self, layer: Any) -> None:
        self.layer = layer

    def __enter__(self) -> None:
        outermost = not scopes.in_layer_call()
        token = scopes.enter_layer_call()
        if outermost:
            self.layer.__dict__["_outer_token"] = token

    def __exit__(self, *exc: Any) -> None:
        scopes.exit_layer_call()


def add_call_loss(layer: Any, loss: Any) -> None:
    """Keep `loss`, made in a call, among `layer`'s terms of the running outermost call
    (the terms of an older call go)."""
    d = layer.__dict__
    token = scopes.layer_call_token()
    if d.get("_loss_token") != token:
        d["_loss_token"], d["_eager_losses"] = token, []
    d["_eager_losses"].append(loss)


def current_losses(root: Any, layer: Any) -> list:
    """`layer`'s call terms that `root.losses` shows: those made since root's last
    outermost call (all of them if root never was called outermost)."""
    d = layer.__dict__
    since, token = root.__dict__.get("_outer_token"), d.get("_loss_token")
    if token is None or (since is not None and token < since):
        return []
    return d.get("_eager_losses", [])


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
