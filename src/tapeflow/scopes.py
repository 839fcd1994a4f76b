"""Per-thread context that is not a recorder: the name scope, muted and held printing, the
device block (tf.device), Keras' layer-call depth and its custom-object scopes.

`tf.name_scope` (module.py) and `tf.Module`'s scopes prefix the names of the variables
made inside them; a trace that is no call (`get_concrete_function`) and the backward
pass a trace records mute what tf.print prints; a replay holds it back
until its guards have passed (a replay a guard abandons printed nothing, as it wrote no
variable). None takes part in recording, so none lives on core's recorder stack: each
is a per-thread value of its own here, set for a block by a context manager.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
from typing import Any, Callable, Iterator

__all__ = ["name_scope_prefix", "scope_entered", "quiet", "quieted", "emit", "held_output",
           "device_entered", "current_device", "enter_layer_call", "exit_layer_call",
           "layer_call_token", "in_layer_call", "custom_objects_entered",
           "custom_object_scopes", "states_kept", "keeping_states"]


class _Local(threading.local):
    def __init__(self) -> None:
        self.scope = ""  # the name scope ("outer/inner/"), prefix of new variables' names
        self.quiet = 0   # depth of quieted blocks
        self.held: list | None = None  # (write, text) pairs a replay holds back
        self.device: str | None = None  # the innermost tf.device block's name
        self.layer_calls = 0  # depth of Keras layer calls (NOTE(layer-losses))
        self.layer_token = 0  # the outermost one's token
        self.custom_objects: tuple = ()  # custom_object_scope dicts, innermost last
        self.states_kept = 0  # depth of blocks where stateful RNNs write no states


_local = _Local()
_LAYER_TOKENS = itertools.count(1)  # outermost layer calls, in order, over all threads


def name_scope_prefix() -> str:
    """This thread's current name scope, "" or ending in "/" (tapeflow.module.name_scope).

    Example:
        >>> from tapeflow import scopes
        >>> with scopes.scope_entered("outer/"):
        ...     scopes.name_scope_prefix()
        'outer/'
    """
    return _local.scope


@contextlib.contextmanager
def scope_entered(scope: str) -> Iterator[str]:
    """Make `scope` (absolute: "" or ending in "/") this thread's name scope for a block."""
    before = _local.scope
    _local.scope = scope
    try:
        yield scope
    finally:
        _local.scope = before


def quiet() -> bool:
    """Whether this thread runs a block whose printing is muted (a trace that is no call):
    tf.print checks it."""
    return _local.quiet > 0


@contextlib.contextmanager
def quieted() -> Iterator[None]:
    """Mute this thread's printing for a block (see `quiet`)."""
    _local.quiet += 1
    try:
        yield
    finally:
        _local.quiet -= 1


def emit(write: Callable[[str], Any], text: str) -> None:
    """Print `text` with `write` (a stream's), or hold it where a block holds output
    (`held_output`); nothing where printing is muted."""
    if _local.quiet > 0:
        return
    if _local.held is not None:
        _local.held.append((write, text))
    else:
        write(text)


class held_output:
    """A block whose printing (`emit`) is held back: written in order when the block ends,
    or dropped by `discard()` (a replay abandoned at a failed guard)."""

    __slots__ = ("before", "items")

    def __enter__(self) -> "held_output":
        self.before = _local.held
        self.items = _local.held = []
        return self

    def discard(self) -> None:
        self.items.clear()

    def __exit__(self, *exc: Any) -> None:
        _local.held = self.before
        for write, text in self.items:
            emit(write, text)


@contextlib.contextmanager
def device_entered(name: str | None) -> Iterator[None]:
    """Make `name` this thread's device for a block (tf.device, devices.py)."""
    before = _local.device
    _local.device = name
    try:
        yield
    finally:
        _local.device = before


def current_device() -> str | None:
    """The device name of this thread's innermost tf.device block, or None."""
    return _local.device


def enter_layer_call() -> int:
    """Enter a Keras layer's call on this thread; the token of the outermost call around
    it (a new one, from a process-wide count, when it is the outermost)."""
    if _local.layer_calls == 0:
        _local.layer_token = next(_LAYER_TOKENS)
    _local.layer_calls += 1
    return _local.layer_token


def exit_layer_call() -> None:
    """Leave the layer call `enter_layer_call` entered."""
    _local.layer_calls -= 1


def layer_call_token() -> int:
    """The token of this thread's outermost running layer call (see enter_layer_call)."""
    return _local.layer_token


def in_layer_call() -> bool:
    """Whether a Keras layer's call is running on this thread."""
    return _local.layer_calls > 0


@contextlib.contextmanager
def custom_objects_entered(objects: dict) -> Iterator[None]:
    """Add a dict of Keras custom objects for a block (keras.utils.custom_object_scope)."""
    _local.custom_objects = _local.custom_objects + (objects,)
    try:
        yield
    finally:
        _local.custom_objects = _local.custom_objects[:-1]


def custom_object_scopes() -> tuple:
    """This thread's custom-object dicts, innermost last."""
    return _local.custom_objects


@contextlib.contextmanager
def states_kept() -> Iterator[None]:
    """A block of this thread in which layers keep their state: stateful RNNs write no
    states (keras/recurrent.py) and `add_metric` updates no metric (a functional model's
    probes of a layer on zeros run in one)."""
    _local.states_kept += 1
    try:
        yield
    finally:
        _local.states_kept -= 1


def keeping_states() -> bool:
    """Whether this thread runs a `states_kept` block."""
    return _local.states_kept > 0

