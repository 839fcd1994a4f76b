"""A Keras-like layer set with tf.keras (Keras 2) names: `keras.layers`,
`keras.Sequential` (also `keras.models.Sequential`), `keras.activations` and
`keras.initializers`."""

from . import activations, initializers, layers, models, optimizers  # noqa: F401
from .models import Sequential  # noqa: F401

__all__ = ["activations", "initializers", "layers", "models", "optimizers", "Sequential"]
