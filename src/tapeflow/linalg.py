"""tf.linalg: linear algebra (re-exports only)."""

from .ops import matmul  # noqa: F401

__all__ = ["matmul"]

from .ops import namespace_exports as _namespace_exports  # noqa: E402

globals().update(_namespace_exports("linalg"))
__all__ = __all__ + [n for n in _namespace_exports("linalg") if n not in __all__]
