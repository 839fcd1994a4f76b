"""Convolutions built on conv2d and its transposes: 1-D convolution, transposed
convolution, depthwise and separable convolution, and 1-D pooling."""

from __future__ import annotations

# Public names and the TensorFlow namespaces they appear in ("tf" is the top level).
EXPORTS: dict[str, str] = {}
