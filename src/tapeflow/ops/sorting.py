"""Sorting and ordering: sort, argsort, top_k, searchsorted, unique, roll."""

from __future__ import annotations

# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {}
