"""Per-thread context that is not a recorder: the name scope and muted printing.

`tf.name_scope` (module.py) and `tf.Module`'s scopes prefix the names of the variables
made inside them; a probe trace (NOTE(probe) in graph/polymorphic.py) mutes what the
traced code prints. Neither takes part in recording, so neither lives on core's recorder
stack: each is a per-thread value of its own here, set for a block by a context manager.
"""

from __future__ import annotations

import contextlib
import threading
from typing import Iterator

__all__ = ["name_scope_prefix", "scope_entered", "quiet", "quieted"]


class _Local(threading.local):
    def __init__(self) -> None:
        self.scope = ""  # the name scope ("outer/inner/"), prefix of new variables' names
        self.quiet = 0   # depth of quieted blocks


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
    """Whether this thread runs a block whose printing is muted (a probe trace): tf.print
    and the probe's muted streams check it."""
    return _local.quiet > 0


@contextlib.contextmanager
def quieted() -> Iterator[None]:
    """Mute this thread's printing for a block (see `quiet`)."""
    _local.quiet += 1
    try:
        yield
    finally:
        _local.quiet -= 1
