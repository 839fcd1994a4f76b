"""Flatten and rebuild nested structures (lists, tuples, namedtuples, dicts), as tf.nest.

Dicts flatten in sorted key order, as TensorFlow's `tf.nest`; anything else is a leaf,
and so is a class that says it is one (`_nest_leaf`: TensorShape, a tuple that tf.nest
does not open).
"""

from __future__ import annotations

from typing import Any, Callable

__all__ = ["flatten", "pack_sequence_as", "map_structure", "is_nested"]


def is_nested(x: Any) -> bool:
    """Whether `x` has children (a list, tuple, namedtuple or dict, but no leaf class).

    Example:
        >>> import tapeflow as tf
        >>> tf.nest.is_nested((1, 2)), tf.nest.is_nested(tf.TensorShape([1, 2]))
        (True, False)
    """
    kind = type(x)
    if kind is list or kind is tuple or kind is dict:
        return True
    return isinstance(x, (list, tuple, dict)) and not getattr(kind, "_nest_leaf", False)


def _children(x: Any) -> list:
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure: Any) -> list:
    """The leaves of `structure`, depth first.

    Example:
        >>> from tapeflow import nest
        >>> nest.flatten({"b": [1, 2], "a": 3})
        [3, 1, 2]
    """
    if not is_nested(structure):
        return [structure]
    out: list = []
    for child in _children(structure):
        out.extend(flatten(child))
    return out


def _pack(structure: Any, leaves: list, pos: int) -> tuple[Any, int]:
    if not is_nested(structure):
        return leaves[pos], pos + 1
    if isinstance(structure, dict):
        built = {}
        for k in sorted(structure):
            built[k], pos = _pack(structure[k], leaves, pos)
        return type(structure)((k, built[k]) for k in structure), pos
    items = []
    for child in structure:
        item, pos = _pack(child, leaves, pos)
        items.append(item)
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*items), pos
    return type(structure)(items), pos


def pack_sequence_as(structure: Any, flat_sequence: list) -> Any:
    """Rebuild `structure` with the leaves of `flat_sequence`.

    Example:
        >>> from tapeflow import nest
        >>> nest.pack_sequence_as({"b": [0, 0], "a": 0}, [3, 1, 2])
        {'b': [1, 2], 'a': 3}
    """
    if not is_nested(structure) and len(flat_sequence) == 1:
        return flat_sequence[0]  # one leaf (a traced function's single output)
    flat_sequence = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(f"pack_sequence_as: the structure has {n} leaves but "
                         f"{len(flat_sequence)} values were given.")
    return _pack(structure, flat_sequence, 0)[0]


def map_structure(fn: Callable[..., Any], *structures: Any) -> Any:
    """Apply `fn` leafwise to structures of the same shape.

    Example:
        >>> from tapeflow import nest
        >>> nest.map_structure(lambda a, b: a + b, [1, (2,)], [10, (20,)])
        [11, (22,)]
    """
    flats = [flatten(s) for s in structures]
    if any(len(f) != len(flats[0]) for f in flats):
        raise ValueError("map_structure: the structures have different numbers of leaves.")
    return pack_sequence_as(structures[0], [fn(*xs) for xs in zip(*flats, strict=True)])


def flatten_up_to(shallow: Any, tree: Any) -> list:
    """Flatten `tree` only as deep as `shallow` goes: each leaf of `shallow` takes the
    whole matching subtree of `tree` (so a tensor's tangent may be a Python list).

    Example:
        >>> from tapeflow import nest
        >>> nest.flatten_up_to([0, 0], [[1., 2.], 3.])
        [[1.0, 2.0], 3.0]
    """
    if not is_nested(shallow):
        return [tree]
    if not is_nested(tree) or len(_children(tree)) != len(_children(shallow)):
        raise ValueError(f"the structure {tree!r} does not match {shallow!r}.")
    if isinstance(shallow, dict) and (not isinstance(tree, dict) or set(tree) != set(shallow)):
        raise ValueError(f"the keys of {tree!r} do not match {shallow!r}.")
    out: list = []
    for s, t in zip(_children(shallow), _children(tree), strict=True):
        out.extend(flatten_up_to(s, t))
    return out
