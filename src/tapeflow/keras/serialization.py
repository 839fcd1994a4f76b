"""Layers as configs and back: `keras.layers.serialize` and `keras.layers.deserialize`,
in tf_keras 2.21's format.

A serialized layer is ``{"module", "class_name", "config", "registered_name"}`` (plus
``"build_config": {"input_shape": ...}`` for a built layer), where `config` is the
layer's `get_config()`. Deserializing looks `class_name` up among tapeflow.keras' layer
classes (then in `custom_objects`), calls its `from_config`, and builds the layer for
`build_config`'s input shape, so the new layer has weights of the right shapes at once
(with fresh values: copy them with `get_weights`/`set_weights`).
"""

from __future__ import annotations

import inspect
from typing import Any

from ..tensor import TensorShape
from .base_layer import Layer
from .common import LAYER_CLASSES
from .utils import with_custom

__all__ = ["serialize", "deserialize"]


def _plain_shape(shape: Any) -> Any:
    """A shape as tf_keras writes it: a tuple of ints and None (a list of them for
    several inputs)."""
    if isinstance(shape, (list, tuple)) and shape and not isinstance(shape, TensorShape) \
            and all(isinstance(s, (list, tuple)) for s in shape):
        return [_plain_shape(s) for s in shape]
    return tuple(TensorShape(shape))


def serialize(layer: Layer) -> dict:
    """A layer's class and config, as tf_keras writes them (`build_config` when built).

    Example:
        >>> import tapeflow as tf
        >>> dense = tf.keras.layers.Dense(2, name="out")
        >>> dense.build((None, 3))
        >>> config = tf.keras.layers.serialize(dense)
        >>> config["class_name"], config["config"]["units"], config["build_config"]
        ('Dense', 2, {'input_shape': (None, 3)})
    """
    if not isinstance(layer, Layer):
        raise TypeError(f"keras.layers.serialize: `layer` must be a Layer; received "
                        f"{type(layer).__name__} {layer!r:.80}.")
    kind = type(layer).__name__
    # tf_keras names the functional model's class by its module (no public name has it)
    module = {"Functional": "tf_keras.src.engine.functional", "Sequential": "keras",
              "Model": "keras"}.get(kind, "keras.layers")
    out = {"module": module,
           "class_name": type(layer).__name__, "config": layer.get_config(),
           "registered_name": None}
    if not type(layer).__module__.startswith("tapeflow."):
        # a user's class: found by its name in custom_objects, as tf_keras writes it
        out["module"], out["registered_name"] = None, kind
    shape = layer._build_input_shape
    if layer.built and shape is not None:
        out["build_config"] = {"input_shape": _plain_shape(shape)}
    return out


def deserialize(config: dict, custom_objects: dict | None = None) -> Layer:
    """A new layer from `serialize`'s dict (or tf_keras' ``{"class_name", "config"}``),
    built for its `build_config` if it has one.

    Example:
        >>> import tapeflow as tf
        >>> layer = tf.keras.layers.deserialize({"class_name": "Dense", "config": {"units": 3}})
        >>> type(layer).__name__, layer.units, layer.built
        ('Dense', 3, False)
    """
    if not isinstance(config, dict) or "class_name" not in config:
        raise ValueError(f"keras.layers.deserialize: expected a dict with 'class_name' and "
                         f"'config' (from keras.layers.serialize); received {config!r:.200}.")
    name = config["class_name"]
    cls = with_custom(custom_objects).get(name) or LAYER_CLASSES.get(name)
    if cls is None:
        raise ValueError(f"Unknown layer: {name!r}. Known layers: {sorted(LAYER_CLASSES)}. "
                         f"Pass a custom layer class in `custom_objects={{{name!r}: cls}}`.")
    inner = dict(config.get("config") or {})
    if "custom_objects" in inspect.signature(cls.from_config).parameters:
        layer = cls.from_config(inner, custom_objects=custom_objects)  # a container's
    else:
        layer = cls.from_config(inner)
    build = config.get("build_config")
    if build and build.get("input_shape") is not None and not layer.built:
        layer.build_from_config(build)
    return layer
