"""Where Keras masks live between layers: tf_keras' ``tensor._keras_mask``.

A mask marks which time steps (or other leading positions) of a tensor hold data: a
bool tensor whose shape is the leading dims of the tensor's, True where the data is.
tf_keras keeps it on the tensor itself, as the attribute `_keras_mask`, and each layer
reads its inputs' masks and sets its outputs'. tapeflow's `Tensor` has fixed slots and
no room for that attribute, so the masks of tensors live here, in a table keyed by the
tensor's identity that forgets an entry when its tensor is freed (a weak reference).
Objects that take attributes (a functional model's `KerasTensor`) keep theirs as
`_keras_mask`, as in tf_keras.
"""

from __future__ import annotations

import weakref
from typing import Any

__all__ = ["get_mask", "set_mask"]

# id(tensor) -> (weak reference to the tensor, its mask). The weak reference tells a live
# entry from one whose id a new object took over, and its callback drops the entry.
_MASKS: dict[int, tuple[weakref.ref, Any]] = {}


def _forget(ref: weakref.ref, key: int) -> None:
    entry = _MASKS.get(key)
    if entry is not None and entry[0] is ref:
        del _MASKS[key]


def get_mask(x: Any) -> Any:
    """The mask a Keras layer attached to `x` (tf_keras' ``x._keras_mask``), or None.

    Example:
        >>> import tapeflow as tf
        >>> emb = tf.keras.layers.Embedding(5, 2, mask_zero=True)
        >>> out = emb(tf.constant([[3, 1, 0]]))
        >>> tf.keras.masks.get_mask(out).numpy()
        array([[ True,  True, False]])
    """
    entry = _MASKS.get(id(x))
    if entry is not None and entry[0]() is x:
        return entry[1]
    return getattr(x, "_keras_mask", None)


def set_mask(x: Any, mask: Any) -> None:
    """Attach `mask` to `x` (None removes it), as tf_keras' ``x._keras_mask = mask``.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.ones([1, 3, 2])
        >>> tf.keras.masks.set_mask(x, tf.constant([[True, True, False]]))
        >>> y = tf.keras.layers.Dense(4)(x)     # Dense passes its input's mask on
        >>> tf.keras.masks.get_mask(y).numpy()
        array([[ True,  True, False]])
    """
    try:
        x._keras_mask = mask
        return
    except AttributeError:  # a Tensor (fixed slots): the table holds its mask
        pass
    key = id(x)
    if mask is None:
        _MASKS.pop(key, None)
        return
    try:
        ref = weakref.ref(x, lambda r, key=key: _forget(r, key))
    except TypeError:  # no weak references (a Python number): no mask, as tf_keras
        return
    _MASKS[key] = (ref, mask)
