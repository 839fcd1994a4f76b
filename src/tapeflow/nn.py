"""tf.nn: neural-network ops (re-exports only)."""

from .ops import conv2d, relu, sigmoid, tanh  # noqa: F401

__all__ = ["conv2d", "relu", "sigmoid", "tanh"]

from .ops import namespace_exports as _namespace_exports  # noqa: E402

globals().update(_namespace_exports("nn"))
__all__ = __all__ + [n for n in _namespace_exports("nn") if n not in __all__]
