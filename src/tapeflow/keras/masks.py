"""Where Keras masks live between layers: tf_keras' ``tensor._keras_mask``.

A mask marks which time steps (or other leading positions) of a tensor hold data: a
bool tensor whose shape is the leading dims of the tensor's, True where the data is.
tf_keras keeps it on the tensor itself, as the attribute `_keras_mask`, and so do
tapeflow's tensors (a slot of `Tensor`) and a functional model's `KerasTensor`. Objects
without room for the attribute (a `Variable`'s fixed slots) keep theirs here, in a table
keyed by the object's identity that forgets an entry when its object is freed (a weak
reference).

NOTE(masks): how `Layer.__call__` passes masks on, as tf_keras' base layer does. A
`mask=` given to the call wins; otherwise the masks the inputs carry are the input
masks, given to a `call` that takes `mask`. After the call, a layer that
`supports_masking` attaches ``compute_mask(inputs, input_masks)`` to its outputs,
unless they carry masks already (the layer set them, or returned its input). A layer
that does not support masking attaches nothing: the mask stops there.
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
    except AttributeError:  # fixed slots without it (a Variable): the table holds its mask
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
