"""Deferred restoration: checkpoint values waiting for the variables they belong to.

NOTE(deferred-restore): as in TensorFlow, restoring a checkpoint before a Keras layer is
built (or before an optimizer has made its slots) keeps the values of the variables
that do not exist yet, and assigns each when it is created: `Layer.add_weight` and
`Optimizer.build` call here. What waits is keyed weakly by the object that will create
the variable, so a layer or an optimizer that dies takes its waiting values with it.
This module imports nothing of Keras: the layers and optimizers import it.
"""

from __future__ import annotations

import threading
import weakref
from typing import Any

__all__ = ["wait", "wait_slot", "weight_created", "slots_created"]

_lock = threading.Lock()
# layer -> weight name -> (value, on_restored); slot values of a weight not made yet ride
# along: -> [(optimizer, slot name, value, on_restored)]
_weights: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
_weight_slots: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()
# optimizer -> id(model variable) -> (a weak reference to it, {slot name: (value,
# on_restored)}): the reference tells the variable from a later one of the same id
_slots: "weakref.WeakKeyDictionary[Any, dict]" = weakref.WeakKeyDictionary()


def wait(layer: Any, name: str, value: Any, on_restored: Any) -> None:
    """Assign `value` to `layer`'s weight `name` when it is made; then call on_restored()."""
    with _lock:
        _weights.setdefault(layer, {})[name] = (value, on_restored)


def wait_slot(optimizer: Any, owner: Any, slot_name: str, value: Any, on_restored: Any) -> None:
    """Assign `value` to `optimizer`'s slot `slot_name` of a model variable: `owner` is
    that variable if it exists, else (layer, weight name) that will make it."""
    with _lock:
        if isinstance(owner, tuple):
            layer, name = owner
            _weight_slots.setdefault(layer, {}).setdefault(name, []).append(
                (optimizer, slot_name, value, on_restored))
        else:
            _slot_entry(optimizer, owner)[slot_name] = (value, on_restored)


def _slot_entry(optimizer: Any, var: Any) -> dict:
    entries = _slots.setdefault(optimizer, {})
    ref, waiting = entries.get(id(var), (None, None))
    if ref is None or ref() is not var:
        ref, waiting = weakref.ref(var), {}
        entries[id(var)] = (ref, waiting)
    return waiting


def weight_created(layer: Any, name: str, var: Any) -> None:
    """`layer` made its weight `name`: assign what waits for it (NOTE(deferred-restore))."""
    if layer not in _weights and layer not in _weight_slots:
        return
    with _lock:
        waiting = _weights.get(layer, {}).pop(name, None)
        slots = _weight_slots.get(layer, {}).pop(name, [])
        for optimizer, slot_name, value, done in slots:
            _slot_entry(optimizer, var)[slot_name] = (value, done)
    if waiting is not None:
        value, done = waiting
        var.assign(value)
        done()


def slots_created(optimizer: Any, var: Any, made: list) -> None:
    """`optimizer` made the slots `made` ((name, slot) pairs) of model variable `var`."""
    if optimizer not in _slots:
        return
    with _lock:
        ref, waiting = _slots[optimizer].pop(id(var), (None, {}))
    if ref is None or ref() is not var:
        return
    for slot_name, slot in made:
        if slot_name in waiting:
            value, done = waiting.pop(slot_name)
            slot.assign(value)
            done()
