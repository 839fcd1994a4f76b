"""Keras weight files in HDF5, in the two layouts tf_keras 2.21 writes (h5py: the `h5` extra).

NOTE(keras-h5): the legacy layout (`save_weights("w.h5")`, and the `model_weights`
group of `model.save("m.h5")`) lists the model's layers in the root's `layer_names`;
each layer's group lists its weights' names in `weight_names`, each a dataset at
``<layer>/<weight name>``. Loading matches the layers that have weights in order, and
their weights in order (trainable, then the others), as tf_keras does; names are not
compared. The `.weights.h5` layout (also inside a `.keras` file) keys each object's own
weights by its path, ``layers/dense/vars/0``: tf_keras walks a model's attributes in
reverse name order (a model's `layers` list among them), the first path to an object
wins, and a list names its layers by class (``dense``, ``dense_1``, ...); this module
walks tapeflow's objects the same way (public attributes, and `layers` of a model).

A file being loaded is hostile input: it is read in a child process (NOTE(h5-isolated):
the HDF5 C library can crash on a damaged file), and every value is read and checked (its layer, count,
shape and a numeric dtype) before any weight is assigned, so a file that does not fit
leaves the model as it was, and an unreadable one raises `DataLossError` naming it.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

from ..errors import DataLossError
from ..keras.base_layer import Layer, _to_snake_case
from ..optional import required
from ..tensor import Variable
from .bundle import temporary_name
from .h5_isolated import read_tree

__all__ = ["save_weights", "load_weights", "load_tree", "load_optimizer", "is_h5",
           "save_legacy_optimizer", "load_legacy_optimizer", "WeightsMismatch", "save_legacy_group", "h5py_module",
           "KERAS_VERSION"]

KERAS_VERSION = "2.21.0"  # the layouts' version; tf_keras converts only files of Keras 1


class WeightsMismatch(ValueError):
    """A readable weights file that does not fit the model (its layers, counts, shapes)."""


def is_h5(path: str) -> bool:
    return path.endswith((".h5", ".hdf5"))


def h5py_module() -> Any:
    """h5py, or an ImportError naming the `h5` extra."""
    return required("h5py", "h5", "Keras HDF5 files")


def _own(layer: Any) -> list[Variable]:
    own = layer._own_variables()
    return [w for w in own if w.trainable] + [w for w in own if not w.trainable]


def _v3_entries(model: Any) -> list[tuple[str, list]]:
    """(path, own weights) of each layer under `model`, NOTE(keras-h5)."""
    out: list = []
    visited: set = set()

    def children(obj: Any) -> list:
        # tf_keras walks every attribute but dunders: a layer held privately
        # (MultiHeadAttention's `_query_dense`) is saved under that attribute's name; a
        # private list or dict is bookkeeping (tracked sublayers, metrics), not saved
        found = {k: v for k, v in vars(obj).items() if not k.startswith("__") and
                 (isinstance(v, Layer) if k.startswith("_")
                  else isinstance(v, (Layer, list, tuple, dict)))}
        if hasattr(obj, "layers"):  # a model's list of its layers
            found["layers"] = obj.layers
        return [(k, found[k]) for k in sorted(found, reverse=True)]

    def visit(obj: Any, path: str) -> None:
        if id(obj) in visited:
            return
        visited.add(id(obj))
        out.append((path, _own(obj)))
        for name, child in children(obj):
            inner = f"{path}/{name}" if path else name
            if isinstance(child, Layer):
                visit(child, inner)
            elif isinstance(child, (list, tuple, dict)):
                used: dict = {}
                for item in child.values() if isinstance(child, dict) else child:
                    if not isinstance(item, Layer) or id(item) in visited:
                        continue
                    key = _to_snake_case(type(item).__name__)  # as tf_keras names them
                    used[key] = used.get(key, -1) + 1
                    visit(item, f"{inner}/{key}" + (f"_{used[key]}" if used[key] else ""))

    visit(model, "")
    return out


def _weighted_layers(model: Any) -> list:
    return [layer for layer in model.layers if layer.weights]


# ------------------------------------------------------------------ saving
def save_weights(model: Any, path: str, by_path: bool | None = None,
                 optimizer: Any = None) -> None:
    """Write `model`'s weights to the HDF5 file at `path` in the `.weights.h5` layout
    (`by_path`; by default where `path` ends so) or the legacy one, atomically (a
    temporary file renamed); with `optimizer` (a `.keras` file of a compiled model), its
    variables too, under ``optimizer/vars`` in their order (tf_keras's: the step count,
    then each variable's slots)."""
    h5py = h5py_module()
    if by_path is None:
        by_path = path.endswith(".weights.h5")
    tmp = temporary_name(path)
    try:
        with h5py.File(tmp, "w") as f:
            if by_path:
                for p, weights in _v3_entries(model):
                    group = f.require_group(f"{p}/vars" if p else "vars")
                    for i, w in enumerate(weights):
                        group.create_dataset(str(i), data=np.asarray(w.numpy()))
                if optimizer is not None:
                    group = f.require_group("optimizer/vars")
                    for i, w in enumerate(optimizer.variables):
                        group.create_dataset(str(i), data=np.asarray(w.numpy()))
            else:
                save_legacy_group(f, model)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def save_legacy_group(f: Any, model: Any) -> None:
    """Write `model`'s weights into the HDF5 group `f` in the legacy layout."""
    f.attrs["layer_names"] = [layer.name.encode("utf8") for layer in model.layers]
    f.attrs["backend"] = b"tensorflow"
    f.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    for layer in model.layers:
        group = f.create_group(layer.name)
        names = [w.name if w.name.endswith(":0") else w.name + ":0" for w in layer.weights]
        group.attrs["weight_names"] = [n.encode("utf8") for n in names]
        for name, w in zip(names, layer.weights):
            group.create_dataset(name, data=np.asarray(w.numpy()))
    f.create_group("top_level_model_weights").attrs["weight_names"] = np.array([], "S1")


# ------------------------------------------------------------------ loading
def load_weights(model: Any, path: str, source: bytes | None = None) -> None:
    """Assign `model`'s weights from the HDF5 file at `path` (its bytes `source`, if given:
    a `.keras` zip's member), in either layout (NOTE(keras-h5)), read in a child process
    (NOTE(h5-isolated)): every value checked first, then all assigned."""
    h5py_module()  # the child reads with it: named here if it is missing
    if source is None and not os.path.isfile(path):
        raise FileNotFoundError(f"load_weights: no file at {path!r}.")
    load_tree(model, read_tree(path, source), path)


def load_tree(model: Any, f: Any, path: str) -> None:
    """Assign `model`'s weights from a file's tree (`read_tree`), every value checked
    first, then all assigned."""
    try:
        pairs = _read_legacy(f, model, path) if _is_legacy(f) else _read_v3(f, model, path)
    except WeightsMismatch:
        raise
    except (KeyError, TypeError, ValueError, UnicodeError, AttributeError,
            IndexError) as e:  # from a file that is not what it claims
        raise DataLossError(f"load_weights: {path!r} is not a readable Keras weights file "
                            f"({type(e).__name__}: {e}).") from None
    for var, value in pairs:
        var.assign(value)


def load_optimizer(optimizer: Any, variables: list, f: Any, path: str) -> None:
    """Assign a compiled model's optimizer (built for `variables`) its state from a
    `.keras` file's ``optimizer/vars``, every value checked first (tf_keras's order)."""
    group = f.get("optimizer/vars")
    if group is None:
        return
    optimizer.build(variables)
    own = optimizer.variables
    if len(group) != len(own):
        raise WeightsMismatch(f"load_model: {path!r} holds {len(group)} optimizer variables; "
                              f"the {type(optimizer).__name__} of the model has {len(own)}; "
                              "nothing was loaded.")
    values = [_value(path, f"optimizer/vars/{i}", group[str(i)], v) for i, v in enumerate(own)]
    for v, value in zip(own, values):
        v.assign(value)


def _optimizer_names(optimizer: Any) -> list[str]:
    """tf_keras's names of an optimizer's variables ("iteration:0", "Adam/m/dense/kernel:0")."""
    names: list = []
    for k, v in enumerate(optimizer.variables):
        name = "iteration:0" if k == 0 else f"{optimizer.name}/{v.name.split(':')[0]}:0"
        while name in names:  # two variables of one name (loading goes by order)
            name = name[:-2] + "_:0"
        names.append(name)
    return names


def save_legacy_optimizer(group: Any, optimizer: Any) -> None:
    """An optimizer's variables in a legacy `.h5` model file's ``optimizer_weights``."""
    names = _optimizer_names(optimizer)
    group.attrs["weight_names"] = [n.encode("utf8") for n in names]
    for name, v in zip(names, optimizer.variables):
        group.create_dataset(name, data=np.asarray(v.numpy()))


def load_legacy_optimizer(optimizer: Any, variables: list, f: Any, path: str) -> None:
    """An optimizer's state from a legacy `.h5` model file's ``optimizer_weights``, in the
    order of its `weight_names`, every value checked first."""
    group = f.get("optimizer_weights")
    if group is None or "weight_names" not in group.attrs:
        return
    optimizer.build(variables)
    names, own = _names(group.attrs["weight_names"]), optimizer.variables
    if len(names) != len(own):
        raise WeightsMismatch(f"load_model: {path!r} holds {len(names)} optimizer variables; "
                              f"the {type(optimizer).__name__} of the model has {len(own)}; "
                              "nothing was loaded.")
    values = [_value(path, f"optimizer_weights/{n}", group[n], v) for n, v in zip(names, own)]
    for v, value in zip(own, values):
        v.assign(value)


def _is_legacy(f: Any) -> bool:
    return "layer_names" in f.attrs or ("model_weights" in f and
                                        "layer_names" in f["model_weights"].attrs)


def _value(path: str, where: str, dataset: Any, var: Variable) -> np.ndarray:
    value = np.asarray(dataset[()])
    if value.dtype.kind not in "biufc" or tuple(value.shape) != tuple(var.shape):
        raise WeightsMismatch(f"load_weights: {path!r} holds {value.dtype} {tuple(value.shape)} at "
                         f"{where!r} for the weight {var.name!r} of shape {tuple(var.shape)}; "
                         "nothing was loaded.")
    return value.astype(var.dtype.as_numpy_dtype, copy=False)


def _names(attr: Any) -> list[str]:
    return [n.decode("utf8") if isinstance(n, bytes) else str(n) for n in np.asarray(attr).ravel()]


def _read_legacy(f: Any, model: Any, path: str) -> list:
    if "layer_names" not in f.attrs:
        f = f["model_weights"]  # a model file's (model.save("m.h5")) weights
    saved = [(name, _names(f[name].attrs["weight_names"])) for name in _names(f.attrs["layer_names"])]
    saved = [(name, weights) for name, weights in saved if weights]
    layers = _weighted_layers(model)
    if saved and not layers:
        raise WeightsMismatch(f"load_weights: the model {model.name!r} has no weights yet; call it "
                         "on inputs (or build it) first, then load the weights (as tf_keras "
                         "asks for HDF5 files).")
    if len(saved) != len(layers):
        raise WeightsMismatch(f"load_weights: {path!r} holds the weights of {len(saved)} layers; the "
                         f"model {model.name!r} has {len(layers)} layers with weights; nothing "
                         "was loaded.")
    pairs = []
    for (name, weight_names), layer in zip(saved, layers):
        if len(weight_names) != len(layer.weights):
            raise WeightsMismatch(f"load_weights: the layer {name!r} in {path!r} has "
                             f"{len(weight_names)} weights; the model's layer {layer.name!r} "
                             f"has {len(layer.weights)}; nothing was loaded.")
        for weight_name, var in zip(weight_names, layer.weights):
            pairs.append((var, _value(path, f"{name}/{weight_name}", f[name][weight_name], var)))
    return pairs


def _stored(f: Any) -> list[str]:
    """The groups of a `.weights.h5` file that hold a layer's weights (``.../vars``): an
    optimizer's and the metrics' aside (a model file's; `load_optimizer` reads the
    optimizer's, and metrics start over, as in tf_keras)."""
    found: list = []
    f.visititems(lambda name, obj: found.append(name) if name.split("/")[-1] == "vars" and
                 not name.startswith(("optimizer", "metrics")) and len(obj) else None)
    return found


def _read_v3(f: Any, model: Any, path: str) -> list:
    pairs = []
    entries = [(p, weights) for p, weights in _v3_entries(model) if weights]
    taken = {f"{p}/vars" if p else "vars" for p, _ in entries}
    extra = sorted(set(_stored(f)) - taken)
    if extra:
        # weights with no layer of the model to take them would be dropped silently
        raise WeightsMismatch(f"load_weights: {path!r} holds weights at {extra[0]!r}, where the "
                              f"model {model.name!r} has no layer with weights (is it built? "
                              "a subclassed model builds on its first call); nothing was "
                              "loaded.")
    for p, weights in entries:
        key = f"{p}/vars" if p else "vars"
        group = f.get(key)
        count = 0 if group is None else len(group)
        if count != len(weights):
            raise WeightsMismatch(f"load_weights: {path!r} holds {count} weights at {key!r}; the "
                             f"model's layer there has {len(weights)}; nothing was loaded.")
        for i, var in enumerate(weights):
            pairs.append((var, _value(path, f"{key}/{i}", group[str(i)], var)))
    return pairs

