"""Neural-network primitives: relu (the rest of tf.nn comes with the full op set)."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..core import Primitive, bind
from ..tensor import Tensor
from ._rules import as_tensor, batch_unary, check_dtype, defjvp, defvjp

# ------------------------------------------------------------------ relu: d relu(x) = [x > 0] dx


def _relu_mask(x: Tensor) -> Tensor:
    from .elementwise import _mask, greater

    return _mask(greater(x, 0), x)


relu_p = Primitive("relu", lambda x: np.maximum(x, 0))
defjvp(relu_p, lambda t, ans, x: t * _relu_mask(x))
defvjp(relu_p, lambda g, ans, x: g * _relu_mask(x))
batch_unary(relu_p)


def relu(features: Any, name: str | None = None) -> Tensor:
    """max(features, 0); the gradient at 0 is 0 (as TensorFlow).

    Example:
        >>> import tapeflow as tf
        >>> tf.nn.relu(tf.constant([-1., 2.])).numpy()
        array([0., 2.], dtype=float32)
    """
    x = as_tensor(features, "relu", "features")
    check_dtype(x, "fiu", "relu", "features")
    return bind(relu_p, x)
