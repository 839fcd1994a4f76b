"""keras.utils: the data helpers Keras programs call (`to_categorical`, `pad_sequences`,
`normalize`, `set_random_seed`), `Sequence` (batches by index, which `fit` takes), and the
registry of custom objects that model files are loaded with (`custom_object_scope`,
`get_custom_objects`, `register_keras_serializable`). Results are NumPy arrays, as
tf_keras's.
"""

from __future__ import annotations

import random as _py_random
from typing import Any, Callable, Iterable

import numpy as np

from .. import scopes
from ..ops import random as _random

__all__ = ["to_categorical", "pad_sequences", "normalize", "set_random_seed", "Sequence",
           "custom_object_scope", "CustomObjectScope", "get_custom_objects",
           "register_keras_serializable", "get_registered_name", "with_custom"]


def to_categorical(y: Any, num_classes: int | None = None, dtype: Any = "float32") -> np.ndarray:
    """One-hot rows of the integer class labels `y` (a trailing axis of size 1 is the
    label's own), `num_classes` columns (max(y) + 1 by default).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.utils.to_categorical([0, 2, 1], num_classes=3)
        array([[1., 0., 0.],
               [0., 0., 1.],
               [0., 1., 0.]], dtype=float32)
    """
    labels = np.asarray(y._value if hasattr(y, "_value") else y)
    if labels.dtype.kind == "f":
        if not np.all(np.isfinite(labels)) or np.any(labels != np.round(labels)):
            raise ValueError(f"to_categorical: `y` must hold integer class labels; found "
                             f"non-integer values such as {labels[labels != np.round(labels)][:3]}.")
    elif labels.dtype.kind not in "iub":
        raise ValueError(f"to_categorical: `y` must hold integer class labels; got dtype "
                         f"{labels.dtype}.")
    labels = labels.astype(np.int64)
    shape = labels.shape
    if len(shape) > 1 and shape[-1] == 1:
        shape = shape[:-1]
    flat = labels.reshape(-1)
    if flat.size and flat.min() < 0:
        raise ValueError(f"to_categorical: class labels must be non-negative; found {flat.min()}.")
    if num_classes is None:
        num_classes = int(flat.max()) + 1 if flat.size else 0
    elif flat.size and flat.max() >= num_classes:
        raise ValueError(f"to_categorical: label {int(flat.max())} is out of range for "
                         f"num_classes={num_classes}.")
    out = np.zeros((flat.size, int(num_classes)), dtype=np.dtype(str(np.dtype(dtype))
                                                                  if not hasattr(dtype, "_np")
                                                                  else dtype._np))
    out[np.arange(flat.size), flat] = 1
    return out.reshape(tuple(shape) + (int(num_classes),))


def pad_sequences(sequences: Iterable, maxlen: int | None = None, dtype: Any = "int32",
                  padding: str = "pre", truncating: str = "pre", value: Any = 0.0) -> np.ndarray:
    """The `sequences` (lists of items, each a scalar or an array of one shape) as one array
    [n, maxlen, ...]: shorter ones padded with `value`, longer ones cut, before ("pre") or
    after ("post"); `maxlen` the longest by default.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.utils.pad_sequences([[1, 2, 3], [4], [5, 6]], maxlen=2, padding="post")
        array([[2, 3],
               [4, 0],
               [5, 6]], dtype=int32)
    """
    for name, arg in (("padding", padding), ("truncating", truncating)):
        if arg not in ("pre", "post"):
            raise ValueError(f'{name.capitalize()} type "{arg}" not understood')
    if not hasattr(sequences, "__len__"):
        raise ValueError("`sequences` must be iterable.")
    seqs = []
    for x in sequences:
        try:
            seqs.append(list(x))
        except TypeError:
            raise ValueError(f"`sequences` must be a list of iterables. Found non-iterable: "
                             f"{x!r}") from None
    lengths = [len(s) for s in seqs]
    if maxlen is None:
        maxlen = max(lengths, default=0)
    if maxlen < 0:
        raise ValueError(f"pad_sequences: `maxlen` must be non-negative; got {maxlen}.")
    sample_shape: tuple = ()
    for s in seqs:
        if s:
            sample_shape = np.asarray(s).shape[1:]
            break
    dt = np.dtype(dtype)
    is_text = dt.kind in "USO"
    if isinstance(value, str) and dt != object and not is_text:
        raise ValueError(f"`dtype` {dtype} is not compatible with `value`'s type: "
                         f"{type(value)}\nYou should set `dtype=object` for variable length "
                         "strings.")
    out = np.full((len(seqs), maxlen) + tuple(sample_shape), value, dtype=dt)
    for i, s in enumerate(seqs):
        if not s or not maxlen:
            continue
        trunc = np.asarray(s[-maxlen:] if truncating == "pre" else s[:maxlen], dtype=dt)
        if trunc.shape[1:] != tuple(sample_shape):
            raise ValueError(f"Shape of sample {trunc.shape[1:]} of sequence at position {i} "
                             f"is different from expected shape {tuple(sample_shape)}")
        if padding == "post":
            out[i, :len(trunc)] = trunc
        else:
            out[i, -len(trunc):] = trunc
    return out


def normalize(x: Any, axis: int = -1, order: int = 2) -> np.ndarray:
    """`x` with its `order`-norm along `axis` scaled to 1 (zero vectors stay zero).

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.utils.normalize([[3.0, 4.0], [0.0, 0.0]])
        array([[0.6, 0.8],
               [0. , 0. ]])
    """
    arr = np.asarray(x._value if hasattr(x, "_value") else x)
    norms = np.atleast_1d(np.linalg.norm(arr, order, axis))
    norms[norms == 0] = 1
    return arr / np.expand_dims(norms, axis)


def set_random_seed(seed: int) -> None:
    """Seed Python's `random`, NumPy's global stream and tapeflow's (tf.random.set_seed) at
    once, as tf_keras's.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.utils.set_random_seed(1); a = tf.random.uniform([2]).numpy()
        >>> tf.keras.utils.set_random_seed(1); bool((a == tf.random.uniform([2]).numpy()).all())
        True
    """
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"Expected `seed` argument to be an integer. Received: seed={seed!r} "
                         f"(of type {type(seed)})")
    _py_random.seed(int(seed))
    np.random.seed(int(seed) % 2 ** 32)
    _random.set_seed(int(seed))


class Sequence:
    """Batches by index, for `fit`, `evaluate` and `predict`: override `__getitem__(i)`
    (the i-th batch: x, (x, y) or (x, y, sample_weight)) and `__len__` (the number of
    batches); `on_epoch_end` runs after each epoch (reshuffle there). `fit(shuffle=True)`
    visits the batches in a new order each epoch, as tf_keras.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> class Batches(tf.keras.utils.Sequence):
        ...     def __len__(self):
        ...         return 2
        ...     def __getitem__(self, i):
        ...         x = np.full((4, 1), float(i), np.float32)
        ...         return x, 2 * x
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1, kernel_initializer="ones")])
        >>> model.compile("sgd", "mse")
        >>> len(model.fit(Batches(), epochs=3, verbose=0).history["loss"])
        3
    """

    def __getitem__(self, index: int) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define __getitem__(index).")

    def __len__(self) -> int:
        raise NotImplementedError(f"{type(self).__name__} must define __len__().")

    def on_epoch_end(self) -> None:
        pass

    def __iter__(self) -> Any:
        for i in range(len(self)):
            yield self[i]


# ---------------------------------------------------------------- custom objects
_GLOBAL: dict[str, Any] = {}


def get_custom_objects() -> dict:
    """The process's registry of custom objects by name (a dict to add to), which model
    files and configs are loaded with.

    Example:
        >>> import tapeflow as tf
        >>> tf.keras.utils.get_custom_objects()["my_activation"] = tf.nn.relu
        >>> tf.keras.activations.get("my_activation") is tf.nn.relu
        True
        >>> del tf.keras.utils.get_custom_objects()["my_activation"]
    """
    return _GLOBAL


def with_custom(given: dict | None = None) -> dict:
    """Every custom object in effect now: the registry's, the open scopes' (inner last,
    so it wins), then `given` (a call's `custom_objects`), which deserialization looks a
    name up in before the built-in ones."""
    out = dict(_GLOBAL)
    for scope in scopes.custom_object_scopes():
        out.update(scope)
    out.update(given or {})
    return out


class CustomObjectScope:
    """A block in which the given custom objects (name -> class or function) are known to
    deserialization and model loading, as tf_keras's `custom_object_scope`.

    Example:
        >>> import tapeflow as tf
        >>> class Twice(tf.keras.layers.Layer):
        ...     def call(self, x):
        ...         return 2 * x
        >>> config = tf.keras.layers.serialize(Twice())
        >>> with tf.keras.utils.custom_object_scope({"Twice": Twice}):
        ...     layer = tf.keras.layers.deserialize(config)
        >>> type(layer).__name__
        'Twice'
    """

    def __init__(self, *objects: dict) -> None:
        merged: dict = {}
        for d in objects:
            if not isinstance(d, dict):
                raise TypeError(f"custom_object_scope: expected dicts of name -> object; got "
                                f"{type(d).__name__}.")
            merged.update(d)
        self._objects = merged

    def __enter__(self) -> "CustomObjectScope":
        self._block = scopes.custom_objects_entered(self._objects)
        self._block.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._block.__exit__(*exc)


custom_object_scope = CustomObjectScope


def register_keras_serializable(package: str = "Custom", name: str | None = None) -> Callable:
    """A decorator registering a class or function under "package>name" (and its plain
    name) so configs and model files naming it load without `custom_objects`.

    Example:
        >>> import tapeflow as tf
        >>> @tf.keras.utils.register_keras_serializable(package="demo")
        ... def scaled_relu(x):
        ...     return 2 * tf.nn.relu(x)
        >>> tf.keras.utils.get_registered_name(scaled_relu)
        'demo>scaled_relu'
    """
    def register(obj: Any) -> Any:
        key = f"{package}>{name or obj.__name__}"
        if key in _GLOBAL and _GLOBAL[key] is not obj:
            raise ValueError(f"{key} has already been registered to {_GLOBAL[key]}")
        if isinstance(obj, type) and not hasattr(obj, "get_config"):
            raise ValueError("Cannot register a class that does not have a get_config() "
                             "method.")
        _GLOBAL[key] = obj
        _GLOBAL.setdefault(name or obj.__name__, obj)
        obj._keras_registered_name = key
        return obj
    return register


def get_registered_name(obj: Any) -> str:
    """The name `obj` is registered under, else its own name."""
    return getattr(obj, "_keras_registered_name", None) or getattr(obj, "__name__",
                                                                   type(obj).__name__)
