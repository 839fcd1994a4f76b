"""tf.image: image ops (the names the ops/ families declare for it)."""

from .ops import namespace as _namespace
from .ops.image import transpose  # noqa: F401 - tf.image.transpose; tf.transpose holds the name

globals().update(_namespace("image"))
__all__ = sorted([*_namespace("image"), "transpose"])
