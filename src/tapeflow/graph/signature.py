"""A traced function's signature: what a call's arguments are, as a cache key.

`walk` reads a call's arguments into a hashable key (tensor shapes and dtypes, Python
values, structure, objects by identity) and collects its tensor leaves; `rebuild` puts
new tensors back into the structure; `TensorSpec` describes a tensor argument of an
`input_signature`. The key is this module's format: `positional_keys` reads the keys of
a call's positional arguments back out of it (for a lean call, NOTE(lean-call)), so no
other module decodes it.
"""

from __future__ import annotations

import inspect
import weakref
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..tensor import Tensor, TensorBase, TensorShape, Variable, convert_to_tensor
from .device import DeviceTensor, array_of
from .trace import TracingError

__all__ = ["TensorSpec", "walk", "rebuild", "positional_keys", "tensor_key", "output_leaf",
           "argument_names", "skeleton", "fits", "relaxed_shapes", "call_template"]


class TensorSpec:
    """Shape (None for any size) and dtype of a tensor argument, for `input_signature`.

    Example:
        >>> import tapeflow as tf
        >>> tf.TensorSpec([None, 3], tf.float32).is_compatible_with(tf.zeros([2, 3]))
        True
    """

    def __init__(self, shape: Any, dtype: Any = _dt.float32, name: str | None = None) -> None:
        self.shape = TensorShape(shape)
        self.dtype = _dt.as_dtype(dtype)
        self.name = name

    def is_compatible_with(self, x: Any) -> bool:
        # array_of: a DeviceTensor's shape and dtype without copying it to the host
        value = array_of(x) if isinstance(x, Tensor) else \
            x._value if isinstance(x, TensorBase) else np.asarray(x)
        return self.dtype._np == value.dtype and self.shape.is_compatible_with(np.shape(value))

    def __repr__(self) -> str:
        return f"TensorSpec(shape={self.shape}, dtype={self.dtype!r}, name={self.name!r})"


def walk(x: Any, leaves: list) -> Any:
    """A hashable key of an argument structure; tensor leaves are appended to `leaves`."""
    if isinstance(x, Tensor):  # one of a finished trace raises here (NOTE(out-of-scope))
        leaves.append(x)
        # A DeviceTensor's device array: its key needs no host copy (array_of, inlined:
        # this runs for every tensor argument of every call).
        value = x._device if type(x) is DeviceTensor else x._value
        return ("T", np.shape(value), value.dtype.str)
    if isinstance(x, np.ndarray) or isinstance(x, np.generic):
        t = convert_to_tensor(x)  # a copy: the caller may write into the array later
        leaves.append(t)
        return ("T", np.shape(x), x.dtype.str)
    if isinstance(x, Variable):
        return ("V", id(x))  # captured by reference: the graph reads it at each replay
    if isinstance(x, (list, tuple)):
        return (type(x).__name__,) + tuple(walk(c, leaves) for c in x)
    if isinstance(x, dict):
        return ("dict",) + tuple((k, walk(x[k], leaves)) for k in sorted(x))
    if isinstance(x, (bool, int, float, complex, str, bytes, type(None))):
        return ("P", type(x).__name__, x)
    return ("O", _object_key(x))  # any other object (a layer, `self`), as TensorFlow


def _object_key(x: Any) -> Any:
    """An object by identity without keeping it alive (a weak reference hashes as its
    object), so a new object that reuses a dead one's id never matches its graphs."""
    try:
        return weakref.ref(x)
    except TypeError:
        return x if getattr(type(x), "__hash__", None) is not None else ("id", id(x))


def rebuild(x: Any, leaves: list, pos: list) -> Any:
    """The argument structure with its tensor leaves replaced, in `_walk` order."""
    if isinstance(x, (Tensor, np.ndarray, np.generic)):
        pos[0] += 1
        return leaves[pos[0] - 1]
    if isinstance(x, (list, tuple)) and not isinstance(x, Variable):
        items = [rebuild(c, leaves, pos) for c in x]
        return type(x)(*items) if hasattr(x, "_fields") else type(x)(items)
    if isinstance(x, dict):
        out = {}
        for k in sorted(x):
            out[k] = rebuild(x[k], leaves, pos)
        return type(x)((k, out[k]) for k in x)
    return x


def tensor_key(t: Tensor) -> tuple:
    """`walk`'s key of one tensor argument."""
    value = t._value
    return ("T", value.shape, value.dtype.str)


def positional_keys(key: Any) -> tuple | None:
    """The keys of a call's positional arguments, from `walk`'s key of the call (``(list
    of args, kwargs)``), where it has no keyword arguments and each is a tensor, or a list
    or tuple of such; else None."""
    if not (isinstance(key, tuple) and len(key) == 3 and key[2] == ("dict",)
            and all(_lean_key(k) for k in key[1][1:])):
        return None
    return key[1][1:]


def _lean_key(k: Any) -> bool:
    """Whether `_walk`'s key `k` is of a tensor, or a list or tuple of such."""
    if k[0] == "T":
        return True
    return k[0] in ("list", "tuple") and all(_lean_key(c) for c in k[1:])


def output_leaf(o: Any, i: int) -> Any:
    if o is None or isinstance(o, Tensor):
        return o
    if isinstance(o, Variable):
        return o.value()
    if isinstance(o, (bool, int, float, complex, np.ndarray, np.generic)):
        return convert_to_tensor(o)
    raise TracingError(f"tapeflow.function: output {i} of the traced function is a "
                       f"{type(o).__name__}; a traced function returns tensors, Python numbers, "
                       "None, or lists/tuples/dicts of them.")


def argument_names(fn: Callable, args: tuple, kwargs: dict, n: int) -> list[str]:
    """The names of a call's tensor arguments, for printed graph tensors ("x:0", as
    TensorFlow): the parameters' names where each of the `n` tensors is an argument."""
    if kwargs:
        return []
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return []
    if len(params) < len(args) or any(p.kind not in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
                                      for p in params[:len(args)]):
        return []
    names = [p.name for p, a in zip(params, args) if isinstance(a, TensorBase)]
    return names if len(names) == n else []




def skeleton(key: Any, any_rank: frozenset = frozenset()) -> Any:
    """A call key with each tensor's shape replaced by its rank (None for the tensors
    numbered in `any_rank`, of TensorSpecs of unknown rank): the calls one trace for
    TensorSpecs may serve, Python values and structure the same (see `fits`)."""
    count = iter(range(1 << 62))

    def strip(k: Any) -> Any:
        if type(k) is tuple:
            if len(k) == 3 and k[0] == "T" and type(k[1]) is tuple:
                return ("T", None if next(count) in any_rank else len(k[1]), k[2])
            return tuple(strip(c) for c in k)
        return k

    return strip(key)


def fits(pattern: Any, skel: Any) -> bool:
    """Whether a call of skeleton `skel` is one a trace of skeleton `pattern` serves."""
    if pattern == skel:
        return True
    if type(pattern) is not tuple or type(skel) is not tuple or len(pattern) != len(skel):
        return False
    if len(pattern) == 3 and pattern[0] == "T" and pattern[1] is None:
        return skel[0] == "T" and skel[2] == pattern[2]
    return all(fits(a, b) for a, b in zip(pattern, skel))


def relaxed_shapes(a: Any, b: Any) -> list | None:
    """The shapes of the tensors of two call keys of one skeleton, None along each
    dimension where their sizes differ (`reduce_retracing`); None if the skeletons differ."""
    if skeleton(a) != skeleton(b):
        return None
    specs: list = []

    def visit(x: Any, y: Any) -> None:
        if type(x) is tuple:
            if len(x) == 3 and x[0] == "T" and type(x[1]) is tuple:
                specs.append([d if d == e else None for d, e in zip(x[1], y[1])])
            else:
                for u, v in zip(x, y):
                    visit(u, v)

    visit(a, b)
    return specs


def call_template(key: Any, specs: list, instance: Any = None) -> tuple[list, dict] | None:
    """The arguments of a call whose key (`walk`'s) is `key`, each tensor replaced by the
    next of `specs` (TensorSpecs, in order) and each Python value itself: what a saved
    function is called with. With `instance` (a method's), the call's first argument must
    be that object, and is left out; None where it is another. A ValueError names an
    argument that is a variable or another object (a call that no file can describe)."""
    _, (_, *positional), (_, *named) = key
    if instance is not None:
        if not positional or positional[0][0] != "O" or not isinstance(
                positional[0][1], weakref.ref) or positional[0][1]() is not instance:
            return None
        positional = positional[1:]
    leaves = iter(specs)

    def build(k: Any) -> Any:
        tag = k[0]
        if tag == "T":
            return next(leaves)
        if tag == "P":
            return k[2]
        if tag == "list":
            return [build(c) for c in k[1:]]
        if tag == "tuple":
            return tuple(build(c) for c in k[1:])
        if tag == "dict":
            return {name: build(c) for name, c in k[1:]}
        what = {"V": "a tf.Variable", "O": "a Python object"}.get(tag, f"a {tag}")
        raise ValueError(f"an argument of the call is {what}; a saved function is called with "
                         "tensors and Python numbers, strings and lists, tuples or dicts of "
                         "them (pass the tensor, or make the object an attribute of the module)")

    return [build(k) for k in positional], {name: build(k) for name, k in named}
