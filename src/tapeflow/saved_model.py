"""tf.saved_model: a module's traced functions and variables, saved and loaded without its
Python (saving/saved_model.py), by TensorFlow's names."""

from .saving.saved_model import (LoadOptions, SaveOptions, contains_saved_model, load, save)

__all__ = ["save", "load", "contains_saved_model", "SaveOptions", "LoadOptions"]
