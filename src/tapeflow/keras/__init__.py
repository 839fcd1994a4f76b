"""A small Keras-like layer set (tf.keras names)."""

from . import activations, initializers, layers  # noqa: F401
