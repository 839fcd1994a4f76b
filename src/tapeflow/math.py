"""tf.math: elementwise math, reductions and scans (the names each ops/ family declares for it)."""

from .ops import namespace as _namespace

globals().update(_namespace("math"))
__all__ = sorted(_namespace("math"))
