"""tf.nn: neural-network ops (re-exports only)."""

from .ops import relu, sigmoid, tanh  # noqa: F401

__all__ = ["relu", "sigmoid", "tanh"]
