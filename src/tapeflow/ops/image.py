"""tf.image: resizing, flips, crops, dtype conversion and standardization of NHWC images."""

from __future__ import annotations

# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {}
