"""(filled in by the op-set work)."""

from __future__ import annotations

# Public names by namespace: "top" (tf.X), "math" (tf.math.X), "linalg", "nn".
EXPORTS: dict[str, list[str]] = {"top": [], "math": [], "linalg": [], "nn": []}
