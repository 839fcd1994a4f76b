"""Per-thread context that is not a recorder: the name scope, muted and held printing.

`tf.name_scope` (module.py) and `tf.Module`'s scopes prefix the names of the variables
made inside them; a trace that is no call (`get_concrete_function`) and the backward
pass a trace records mute what tf.print prints; a replay holds it back
until its guards have passed (a replay a guard abandons printed nothing, as it wrote no
variable). None takes part in recording, so none lives on core's recorder stack: each
is a per-thread value of its own here, set for a block by a context manager.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Any, Callable, Iterator

__all__ = ["name_scope_prefix", "scope_entered", "quiet", "quieted", "emit", "held_output"]


class _Local(threading.local):
    def __init__(self) -> None:
        self.scope = ""  # the name scope ("outer/inner/"), prefix of new variables' names
        self.quiet = 0   # depth of quieted blocks
        self.held: list | None = None  # (write, text) pairs a replay holds back


_local = _Local()


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
