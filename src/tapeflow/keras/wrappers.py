"""Keras layer wrappers: TimeDistributed and Bidirectional."""

from __future__ import annotations

__all__: list[str] = []
