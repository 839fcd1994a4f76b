"""A Keras-like layer set with tf.keras (Keras 2) names: `keras.layers`,
`keras.Sequential` (also `keras.models.Sequential`), the functional API (`keras.Input`,
`keras.Model(inputs, outputs)`), `keras.activations`, `keras.initializers`,
`keras.regularizers`, `keras.constraints`, `keras.backend` and `keras.utils`; `keras.masks` reads and sets the masks
tf_keras keeps in `tensor._keras_mask`."""

from . import (activations, backend, callbacks, constraints, initializers, layers,  # noqa: F401
               losses, masks, metrics, models, optimizers, regularizers, utils)
from .models import Model, Sequential  # noqa: F401
from .functional import Input, InputLayer, KerasTensor  # noqa: F401

__all__ = ["activations", "backend", "callbacks", "constraints", "initializers", "layers", "losses", "masks",
           "metrics", "models", "optimizers", "regularizers", "utils", "Model", "Sequential", "Input",
           "InputLayer", "KerasTensor"]
