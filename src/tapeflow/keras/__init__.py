"""A Keras-like layer set with tf.keras (Keras 2) names: `keras.layers`,
`keras.Sequential` (also `keras.models.Sequential`), `keras.activations` and
`keras.initializers`."""

from . import activations, initializers, layers, losses, metrics, models, optimizers  # noqa: F401
from .models import Model, Sequential  # noqa: F401

__all__ = ["activations", "initializers", "layers", "losses", "metrics", "models", "optimizers", "Model", "Sequential"]
