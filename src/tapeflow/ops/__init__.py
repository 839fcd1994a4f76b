"""All primitives and the public op functions (namespaces re-export from here)."""

from .elementwise import *  # noqa: F401,F403
from .elementwise import select  # noqa: F401
from .conv import conv2d  # noqa: F401
from .linalg import matmul  # noqa: F401
from .nn import relu  # noqa: F401
from .reduce import reduce_max, reduce_mean, reduce_min, reduce_sum  # noqa: F401
from .shape import (broadcast_to, concat, expand_dims, getitem, identity,  # noqa: F401
                    ones, read_variable, reshape, squeeze, stack, stop_gradient, transpose,
                    zeros)

from . import array_ops, linalg_ops, math_ops, nn_ops  # noqa: E402

_GROUPS = (math_ops, array_ops, linalg_ops, nn_ops)


def namespace_exports(namespace: str) -> dict:
    """The ops each group module lists for a namespace ("top", "math", "linalg", "nn")."""
    out = {}
    for module in _GROUPS:
        for name in module.EXPORTS.get(namespace, []):
            out[name] = getattr(module, name)
    return out


for _name, _fn in {**namespace_exports("top"), **namespace_exports("math"),
                   **namespace_exports("linalg"), **namespace_exports("nn")}.items():
    globals().setdefault(_name, _fn)

from .. import tensor as _tensor  # noqa: E402

_tensor._ops = __import__(__name__, fromlist=["*"])
