"""tf.image: image ops (the names the ops/ families declare for it)."""

from .ops import namespace as _namespace

globals().update(_namespace("image"))
__all__ = sorted(_namespace("image"))
