"""Segments, masks and bands: segment and unsorted-segment reductions, bincount,
boolean_mask, sequence_mask, band_part."""

from __future__ import annotations

# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {}
