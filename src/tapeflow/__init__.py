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

from . import allocator as _allocator
from . import (autodiff, config, data, dtypes, errors, extend, image, keras, linalg, math,
               nest, nn, random, saved_model, testing, train)
from .batching import vmap
from .callbacks import print_ as print  # noqa: A001 - TensorFlow's name
from .config import init_scope
from .devices import device
# TensorFlow's own initializer names are tf.keras's initializers (the same arguments,
# defaults and calls)
from .keras.initializers import ConstantInitializer as constant_initializer
from .keras.initializers import Ones as ones_initializer
from .keras.initializers import RandomNormal as random_normal_initializer
from .keras.initializers import RandomUniform as random_uniform_initializer
from .keras.initializers import Zeros as zeros_initializer
from .control_flow import (cond, foldl, foldr, map_fn, scan, switch_case, vectorized_map,
                           while_loop)
from .custom import custom_gradient, grad_pass_through, recompute_grad
from .dtypes import (DType, as_dtype, bfloat16, bool, complex64, complex128, float16, float32,
                     float64, int8, int16, int32, int64, uint8, uint16, uint32, uint64)
from .forward import ForwardAccumulator
from .graph import Graph, TensorSpec, function
from .graph.plot import plot_graph
from .implicit import custom_linear_solve, custom_root
from .module import Module, name_scope
from .py_function import numpy_function, py_function
from .ops import namespace as _namespace
from . import sparse_jacobians
from .sparse_jacobians import SparseJacobian, jacobian_sparsity, sparse_jacobian
from . import sparse_hessians
from .sparse_hessians import SparseHessian, hessian_sparsity, sparse_hessian
from .tape import GradientTape, UnconnectedGradients
from .tensor_array import TensorArray
from .tensor import (Tensor, TensorShape, Variable, constant, convert_to_tensor, is_tensor,
                     newaxis)
from .transforms import (grad, hessian, hvp, jacfwd, jacobian, jacrev, jvp, linearize,
                         value_and_grad, vjp)

__version__ = "0.1.0"

_allocator.keep_freed_memory()  # NOTE(allocator): large temporaries reused, not refaulted

_OPS = _namespace("tf")  # the ops at the top level, as each ops/ family declares them
globals().update(_OPS)

__all__ = [
    # namespaces
    "autodiff", "config", "data", "dtypes", "errors", "extend", "image", "keras", "linalg", "math",
    "nest", "nn",
    "random", "saved_model", "testing", "train",
    # tensors and dtypes
    "Tensor", "TensorArray", "TensorShape", "Variable", "constant", "convert_to_tensor", "is_tensor",
    "newaxis", "DType", "as_dtype", "bfloat16", "bool", "complex64", "complex128", "float16",
    "float32", "float64", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
    "uint64",
    # differentiation, vectorization, tracing
    "GradientTape", "UnconnectedGradients", "ForwardAccumulator", "custom_gradient",
    "grad_pass_through", "init_scope", "device", "constant_initializer", "ones_initializer",
    "zeros_initializer", "random_normal_initializer", "random_uniform_initializer",
 "py_function", "numpy_function", "scan", "foldl",
    "foldr", "map_fn", "cond", "switch_case", "while_loop", "vectorized_map",
    "recompute_grad", "vmap", "function", "TensorSpec", "Graph", "Module", "name_scope", "print", "grad",
    "value_and_grad", "jvp", "vjp", "plot_graph",
    "linearize", "jacfwd", "jacrev", "jacobian", "hessian", "hvp",
    # implicit differentiation
    "custom_root", "custom_linear_solve",
    # sparse Jacobians
    "sparse_jacobians", "sparse_jacobian", "SparseJacobian", "jacobian_sparsity",
    "sparse_hessians", "sparse_hessian", "SparseHessian", "hessian_sparsity",
    "__version__",
] + sorted(_OPS)
