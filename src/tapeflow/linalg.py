"""tf.linalg: linear algebra (re-exports only)."""

from .ops import matmul  # noqa: F401

__all__ = ["matmul"]
