"""tf.linalg: linear algebra (the names each ops/ family declares for it)."""

from .ops import namespace as _namespace

globals().update(_namespace("linalg"))
__all__ = sorted(_namespace("linalg"))
