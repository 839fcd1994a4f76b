"""All primitives and the public op functions (namespaces re-export from here)."""

from .elementwise import *  # noqa: F401,F403
from .elementwise import select  # noqa: F401
from .conv import conv2d  # noqa: F401
from .linalg import matmul  # noqa: F401
from .nn import relu  # noqa: F401
from .reduce import reduce_max, reduce_mean, reduce_min, reduce_sum  # noqa: F401
from .shape import (broadcast_to, concat, expand_dims, gather, getitem, identity,  # noqa: F401
                    ones, read_variable, reshape, squeeze, stack, stop_gradient, transpose,
                    zeros)

from .. import tensor as _tensor  # noqa: E402

_tensor._ops = __import__(__name__, fromlist=["*"])
