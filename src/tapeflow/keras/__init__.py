"""A Keras-like layer set with tf.keras (Keras 2) names: `keras.layers`,
`keras.Sequential` (also `keras.models.Sequential`), the functional API (`keras.Input`,
`keras.Model(inputs, outputs)`), `keras.activations` and
`keras.initializers`; `keras.masks` reads and sets the masks tf_keras keeps in
`tensor._keras_mask`."""

from . import (activations, callbacks, initializers, layers, losses, masks, metrics,  # noqa: F401
               models, optimizers)
from .models import Model, Sequential  # noqa: F401
from .functional import Input, InputLayer, KerasTensor  # noqa: F401

__all__ = ["activations", "callbacks", "initializers", "layers", "losses", "masks", "metrics", "models",
           "optimizers", "Model", "Sequential", "Input", "InputLayer", "KerasTensor"]
