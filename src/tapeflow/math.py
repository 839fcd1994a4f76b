"""tf.math: elementwise ops and reductions (re-exports only)."""

from .ops import (abs, add, cast, conj, cos, divide, equal, exp, floordiv, floormod,  # noqa: F401
                  greater, greater_equal, less, less_equal, log, logical_and, logical_not,
                  logical_or, logical_xor, maximum, minimum, multiply, negative, not_equal, pow,
                  reduce_max, reduce_mean, reduce_min, reduce_sum, sigmoid, sign, sin, sqrt,
                  square, subtract, tanh, truediv, where)

__all__ = ["abs", "add", "cast", "conj", "cos", "divide", "equal", "exp", "floordiv", "floormod",
           "greater", "greater_equal", "less", "less_equal", "log", "logical_and",
           "logical_not", "logical_or", "logical_xor", "maximum", "minimum", "multiply",
           "negative", "not_equal", "pow", "reduce_max", "reduce_mean", "reduce_min",
           "reduce_sum", "sigmoid", "sign", "sin", "sqrt", "square", "subtract", "tanh",
           "truediv", "where"]

from .ops import namespace_exports as _namespace_exports  # noqa: E402

globals().update(_namespace_exports("math"))
__all__ = __all__ + [n for n in _namespace_exports("math") if n not in __all__]
