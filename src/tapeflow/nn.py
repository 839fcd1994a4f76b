"""tf.nn: neural-network ops (re-exports only)."""

from .ops import conv2d, relu, sigmoid, tanh  # noqa: F401

__all__ = ["conv2d", "relu", "sigmoid", "tanh"]
