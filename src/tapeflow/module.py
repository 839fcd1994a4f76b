"""tf.Module and tf.name_scope: named containers that find their variables and
submodules by walking their attributes, as TensorFlow's guides build models and
optimizers.

A Module's `variables` are every `tf.Variable` reachable from its attributes: directly,
inside lists, tuples and dicts (dicts in sorted key order), and inside submodules, each
once, in the order TensorFlow gives: the module's own attributes in sorted name order,
then each submodule's, depth first. Variables created inside ``with module.name_scope:``
(or a method decorated with ``Module.with_name_scope``) are named under it.
"""

from __future__ import annotations

import functools
import re
from typing import Any, Callable, Iterator

from . import nest, scopes
from .saving import deferred
from .tensor import Variable

__all__ = ["Module", "name_scope"]

_VALID_SCOPE = re.compile(r"^[A-Za-z0-9.][A-Za-z0-9_.\\/>-]*$")
_VALID_MODULE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class name_scope:  # noqa: N801 - TensorFlow's name
    """A context manager that names the variables created inside it "name/...".

    Nested scopes join with "/"; a name ending in "/" is absolute (it replaces the
    current scope) and "" returns to the root.

    Example:
        >>> import tapeflow as tf
        >>> with tf.name_scope("outer"):
        ...     with tf.name_scope("inner") as scope:
        ...         v = tf.Variable(1.0, name="v")
        >>> scope, v.name
        ('outer/inner/', 'outer/inner/v:0')
    """

    def __init__(self, name: str) -> None:
        if not isinstance(name, str):
            raise TypeError(f"name_scope: `name` must be a string; got {name!r}.")
        if name and not _VALID_SCOPE.match(name.rstrip("/") or "x"):
            raise ValueError(f"name_scope: {name!r} is not a valid scope name (letters, digits, "
                             "'_', '.', '-' and '/', not starting with '_' or '-').")
        self._name = name
        self._entered: Any = None

    @property
    def name(self) -> str:
        return self._name

    def __enter__(self) -> str:
        if not self._name or self._name.endswith("/"):
            scope = self._name
        else:
            scope = scopes.name_scope_prefix() + self._name + "/"
        self._entered = scopes.scope_entered(scope)
        return self._entered.__enter__()

    def __exit__(self, *exc: Any) -> None:
        entered, self._entered = self._entered, None
        entered.__exit__(*exc)


def _snake(name: str) -> str:
    s = re.sub(r"(.)([A-Z][a-z0-9]+)", r"\1_\2", name)
    return re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", s).lower()


class Module:
    """A named container of variables and submodules (the base of models and layers in
    TensorFlow's guides), which finds them by walking its attributes.

    Example:
        >>> import tapeflow as tf
        >>> class Dense(tf.Module):
        ...     def __init__(self, n_in, n_out, name=None):
        ...         super().__init__(name=name)
        ...         self.w = tf.Variable(tf.ones([n_in, n_out]), name="w")
        ...         self.b = tf.Variable(tf.zeros([n_out]), name="b")
        ...     def __call__(self, x):
        ...         return tf.matmul(x, self.w) + self.b
        >>> class MLP(tf.Module):
        ...     def __init__(self, name=None):
        ...         super().__init__(name=name)
        ...         with self.name_scope:
        ...             self.layers = [Dense(3, 4), Dense(4, 1)]
        >>> m = MLP(name="mlp")
        >>> [v.name for v in m.trainable_variables]  # made in MLP's scope, not Dense's
        ['mlp/b:0', 'mlp/w:0', 'mlp/b:0', 'mlp/w:0']
        >>> len(m.submodules)
        2
    """

    # Attributes the walk skips: the module's own bookkeeping.
    _TF_MODULE_IGNORED_PROPERTIES = frozenset(("_name", "_scope_name", "_module_name_scope"))

    def __init__(self, name: str | None = None) -> None:
        if name is None:
            name = _snake(type(self).__name__)
        elif not isinstance(name, str) or not _VALID_MODULE_NAME.match(name):
            raise ValueError(f"{name!r} is not a valid module name. Module names must be valid "
                             "Python identifiers (e.g. a valid class name).")
        self._name = name
        with name_scope(name) as scope:
            self._scope_name = scope
        self._module_name_scope = name_scope(scope)

    def __setattr__(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)
        if type(value) is Variable:  # a checkpoint's value may wait for it (NOTE(deferred-restore))
            deferred.weight_created(self, name, value)

    @property
    def name(self) -> str:
        """The module's name, without its enclosing scopes."""
        return self._name

    @property
    def name_scope(self) -> name_scope:
        """The scope this module was created in, joined with its name (enter it to name
        variables under the module)."""
        return self._module_name_scope

    @property
    def variables(self) -> tuple:
        """Every variable reachable from the module's attributes and submodules."""
        return tuple(self._flatten(predicate=_is_variable))

    @property
    def trainable_variables(self) -> tuple:
        """The reachable variables with ``trainable=True``."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and v.trainable))

    @property
    def non_trainable_variables(self) -> tuple:
        """The reachable variables with ``trainable=False``."""
        return tuple(self._flatten(predicate=lambda v: _is_variable(v) and not v.trainable))

    @property
    def submodules(self) -> tuple:
        """Every module reachable from this one's attributes, depth first, itself excluded."""
        return tuple(self._flatten(predicate=lambda m: isinstance(m, Module)))

    def _flatten(self, recursive: bool = True, predicate: Callable[[Any], bool] | None = None,
                 attribute_traversal_key: Callable | None = None, with_path: bool = False,
                 expand_composites: bool = False) -> Iterator[Any]:
        """The leaves under the module's attributes that pass `predicate`, each once
        (``with_path=True``: (path, leaf) pairs, a leaf once per path)."""
        return _walk(self, recursive, predicate or (lambda _: True), attribute_traversal_key,
                     with_path, (), {id(self)} if not with_path else None, [])

    @classmethod
    def with_name_scope(cls, method: Callable) -> Callable:
        """Decorate a method to run inside the module's name scope.

        Example:
            >>> import tapeflow as tf
            >>> class Scale(tf.Module):
            ...     @tf.Module.with_name_scope
            ...     def __call__(self, x):
            ...         if not hasattr(self, "s"):
            ...             self.s = tf.Variable(2.0, name="s")
            ...         return x * self.s
            >>> m = Scale(name="scale"); _ = m(tf.constant(1.0)); m.s.name
            'scale/s:0'
        """
        @functools.wraps(method)
        def wrapped(self: Module, *args: Any, **kwargs: Any) -> Any:
            with self.name_scope:
                return method(self, *args, **kwargs)
        return wrapped


def _is_variable(x: Any) -> bool:
    return isinstance(x, Variable)


def _leaves_with_paths(x: Any, path: tuple) -> Iterator[tuple]:
    if isinstance(x, dict):
        for k in sorted(x, key=lambda k: (str(type(k)), k) if not isinstance(k, str) else ("", k)):
            yield from _leaves_with_paths(x[k], path + (k,))
    elif nest.is_nested(x):
        for i, item in enumerate(x):
            yield from _leaves_with_paths(item, path + (i,))
    else:
        yield path, x


def _walk(module: Module, recursive: bool, predicate: Callable, key: Callable | None,
          with_path: bool, path: tuple, seen: set | None, stack: list) -> Iterator[Any]:
    """TensorFlow's order: this module's attributes (sorted by name), then each submodule
    found among them, depth first; a module already being walked (a cycle) is not
    entered again."""
    attributes = vars(module)
    submodules = []
    ignored = getattr(module, "_TF_MODULE_IGNORED_PROPERTIES", frozenset())
    for name in sorted(attributes, key=key):
        if name in ignored:
            continue
        for leaf_path, leaf in _leaves_with_paths(attributes[name], (name,)):
            if seen is not None:
                if id(leaf) in seen:
                    continue
                seen.add(id(leaf))
            if predicate(leaf):
                yield (path + leaf_path, leaf) if with_path else leaf
            if recursive and isinstance(leaf, Module) and id(leaf) not in stack:
                submodules.append((path + leaf_path, leaf))
    stack.append(id(module))
    for sub_path, sub in submodules:
        yield from _walk(sub, recursive, predicate, key, with_path, sub_path, seen, stack)
    stack.pop()
