"""Neural-network ops composed of others: moments, batch_normalization, l2_normalize,
dropout, silu/swish, softsign."""

from __future__ import annotations

# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {}
