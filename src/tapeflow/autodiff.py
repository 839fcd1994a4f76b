"""tf.autodiff: ForwardAccumulator and GradientTape (re-exports only)."""

from .forward import ForwardAccumulator  # noqa: F401
from .tape import GradientTape  # noqa: F401

__all__ = ["ForwardAccumulator", "GradientTape"]
