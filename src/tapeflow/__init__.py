"""tapeflow: automatic differentiation for Python on NumPy, with TensorFlow's API.

``import tapeflow as tf`` runs a TensorFlow program's autodiff code: tensors,
`GradientTape`, `autodiff.ForwardAccumulator`, the op namespaces.

Example:
    >>> import tapeflow as tf
    >>> v = tf.Variable([1., 2.])
    >>> with tf.autodiff.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
    ...     with tf.GradientTape() as tape:
    ...         y = tf.reduce_sum(v ** 3.)
    ...     backward = tape.gradient(y, v)
    >>> acc.jvp(backward).numpy()
    array([6., 0.], dtype=float32)
"""

from . import autodiff, dtypes, errors, keras, linalg, math, nest, nn, random, testing  # noqa: F401
from .batching import vmap  # noqa: F401
from .custom import custom_gradient, recompute_grad  # noqa: F401
from .dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128,  # noqa: F401
                     float16, float32, float64, int8, int16, int32, int64, uint8, uint16,
                     uint32, uint64)
from .forward import ForwardAccumulator  # noqa: F401
from .graph import TensorSpec, function  # noqa: F401
from .ops import (abs, add, broadcast_to, cast, concat, cos, divide, equal, exp,  # noqa: F401
                  expand_dims, floordiv, floormod, greater, greater_equal, identity, less, less_equal, log,
                  logical_and, logical_not, logical_or, matmul, maximum, minimum, multiply,
                  negative, not_equal, ones, ones_like, pow, reduce_max, reduce_mean, reduce_min,
                  reduce_sum, reshape, sigmoid, sign, sin, sqrt, square, squeeze, stack,
                  stop_gradient, subtract, tanh, transpose, truediv, where, zeros, zeros_like)
from .tape import GradientTape, UnconnectedGradients  # noqa: F401
from .transforms import (grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp,  # noqa: F401
                         linearize, value_and_grad, vjp)
from .tensor import (Tensor, TensorShape, Variable, constant, convert_to_tensor,  # noqa: F401
                     is_tensor, newaxis)

from .ops import namespace_exports as _namespace_exports  # noqa: E402

globals().update(_namespace_exports("top"))

__version__ = "0.1.0"

__all__ = [
    "autodiff", "dtypes", "errors", "keras", "linalg", "math", "nest", "nn", "random", "testing",
    "function", "TensorSpec", "vmap", "grad", "hessian", "hvp", "jacfwd", "jacobian", "jacrev", "jvp", "linearize",
    "value_and_grad", "vjp", "custom_gradient", "recompute_grad", "DType", "as_dtype", "bfloat16", "bool", "complex64",
    "complex128", "float16", "float32", "float64", "int8", "int16", "int32", "int64", "uint8",
    "uint16", "uint32", "uint64", "ForwardAccumulator", "abs", "add", "broadcast_to", "cast",
    "concat", "cos", "divide", "equal", "exp", "expand_dims", "floordiv", "floormod", "greater",
    "greater_equal", "identity", "less", "less_equal", "log", "logical_and", "logical_not",
    "logical_or", "matmul", "maximum", "minimum", "multiply", "negative", "not_equal",
    "ones", "ones_like", "pow", "reduce_max", "reduce_mean", "reduce_min", "reduce_sum", "reshape",
    "sigmoid", "sign", "sin", "sqrt", "square", "squeeze", "stack", "stop_gradient", "subtract",
    "tanh", "transpose", "truediv", "where", "zeros", "zeros_like", "GradientTape",
    "UnconnectedGradients", "Tensor", "TensorShape", "Variable", "constant",
    "convert_to_tensor", "is_tensor", "newaxis", "__version__",
] + [n for n in _namespace_exports("top")]
