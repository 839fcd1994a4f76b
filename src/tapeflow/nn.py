"""tf.nn: neural-network ops (the names each ops/ family declares for it)."""

from .ops import namespace as _namespace

globals().update(_namespace("nn"))
__all__ = sorted(_namespace("nn"))
