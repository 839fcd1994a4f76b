"""tf.random: seeded random draws (the names each ops/ family declares for it)."""

from .ops import namespace as _namespace

globals().update(_namespace("random"))
__all__ = sorted(_namespace("random"))
