"""Keras model files: `.keras` (a zip) and legacy `.h5`, as tf_keras 2.21 writes them.

NOTE(keras-model-files): a `.keras` file is a zip of ``config.json`` (the model's
serialized config, `keras.layers.serialize`), ``metadata.json`` and
``model.weights.h5`` (the `.weights.h5` layout, NOTE(keras-h5)); a legacy `.h5` model
file holds the config as JSON in its root's ``model_config`` attribute and the weights
in its ``model_weights`` group (the legacy layout). Loading rebuilds the model from
its config (`from_config`, `custom_objects` for the user's classes) and then loads its
weights. Nothing in a file is executed: a `Lambda` layer saved as Python bytecode is
refused unless the caller passes ``safe_mode=False`` (as Keras' safe mode), the zip's
members are size-checked before they are read, and a file that is not what it claims
raises `DataLossError` naming it.
"""

from __future__ import annotations

import datetime
import inspect
import json
import os
import zipfile
from typing import Any

from ..dtypes import DType
from ..errors import DataLossError
from ..graph.xla import jit_compile_here
from ..keras.serialization import deserialize, serialize
from . import keras_h5, saved_model
from .bundle import temporary_name
from .h5_isolated import read_tree

__all__ = ["save_model", "load_model"]

_MAX_CONFIG = 64 << 20       # bytes of config.json / metadata.json read at most
_MAX_WEIGHTS = 64 << 30      # bytes of model.weights.h5 read at most


def save_model(model: Any, filepath: Any, overwrite: bool = True) -> None:
    """Write `model` (its config and weights) to a `.keras` or legacy `.h5` file,
    atomically (NOTE(keras-model-files))."""
    path = os.fspath(filepath)
    if not overwrite and os.path.exists(path):
        raise FileExistsError(f"save: {path!r} exists and overwrite=False.")
    if not path.endswith(".keras") and not keras_h5.is_h5(path):
        saved_model.save(model, path)  # a directory: a SavedModel, as tf_keras's default
        return
    serialized = serialize(model)
    compiled = model.__dict__.get("_compiled")
    if compiled is not None and path.endswith(".keras"):
        serialized["compile_config"] = _compile_config(model, compiled)
    if compiled is not None and not model.optimizer.variables[1:]:
        model.optimizer.build(model.trainable_variables)  # its slots, before a first step
    config = json.dumps(serialized, default=_jsonable)
    tmp = temporary_name(path)
    try:
        if path.endswith(".keras"):
            weights = temporary_name(path + ".weights.h5")
            try:
                keras_h5.save_weights(model, weights, by_path=True,
                                      optimizer=None if compiled is None else model.optimizer)
                with zipfile.ZipFile(tmp, "w") as z:
                    z.writestr("metadata.json", json.dumps(
                        {"keras_version": keras_h5.KERAS_VERSION, "saved_by": "tapeflow",
                         "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")}))
                    z.writestr("config.json", config)
                    z.write(weights, "model.weights.h5")
            finally:
                if os.path.exists(weights):
                    os.remove(weights)
        elif keras_h5.is_h5(path):
            h5py = keras_h5.h5py_module()
            with h5py.File(tmp, "w") as f:
                f.attrs["model_config"] = config
                f.attrs["keras_version"] = keras_h5.KERAS_VERSION
                f.attrs["backend"] = "tensorflow"
                keras_h5.save_legacy_group(f.create_group("model_weights"), model)
                if compiled is not None:
                    f.attrs["training_config"] = json.dumps(_training_config(model, compiled),
                                                            default=_jsonable)
                    keras_h5.save_legacy_optimizer(f.create_group("optimizer_weights"),
                                                   model.optimizer)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _compile_config(model: Any, compiled: Any) -> dict:
    """What `compile` was given, as tf_keras writes it in a `.keras` file."""
    def named(x: Any, kind: str) -> Any:
        if x is None or isinstance(x, str):
            return x
        if hasattr(x, "get_config") and not isinstance(x, type):
            return {"module": f"keras.{kind}", "class_name": type(x).__name__,
                    "config": x.get_config(), "registered_name": None}
        name = getattr(x, "__name__", None)
        if name is None:
            raise ValueError(f"save: the compiled {kind[:-1]} {x!r:.60} has no name to save.")
        return name
    def each(x: Any, kind: str) -> Any:  # one per output: a list or a dict by name
        if isinstance(x, dict):
            return {k: each(v, kind) for k, v in x.items()}
        if isinstance(x, (list, tuple)):
            return [each(v, kind) for v in x]
        return named(x, kind)
    opt = model.optimizer
    return {"optimizer": {"module": "keras.optimizers", "class_name": type(opt).__name__,
                          "config": opt.get_config(), "registered_name": None},
            "loss": each(compiled.loss_spec, "losses"),
            "metrics": each(compiled.metric_specs, "metrics"),
            "loss_weights": compiled.loss_weights,
            "weighted_metrics": each(compiled.weighted_specs, "metrics") or None,
            "run_eagerly": None, "steps_per_execution": None,
            "jit_compile": compiled.jit_compile or None}


def _training_config(model: Any, compiled: Any) -> dict:
    """A legacy `.h5` file's compile config, as tf_keras writes it (``training_config``)."""
    config = _compile_config(model, compiled)
    opt = config["optimizer"]
    metrics = config["metrics"]
    return {"loss": config["loss"],
            "metrics": metrics if isinstance(metrics, dict) or (
                metrics and all(isinstance(m, list) for m in metrics)) else [metrics],
            "weighted_metrics": config["weighted_metrics"],
            "loss_weights": config["loss_weights"], "optimizer_config": {
                "class_name": f"Custom>{opt['class_name']}", "config": opt["config"]}}


def _recompile(model: Any, config: Any, path: str) -> bool:
    """Compile a loaded model as its file says (`compile_config`); whether it did."""
    if not isinstance(config, dict):
        return False
    from ..keras import losses, metrics, optimizers  # noqa: PLC0415 - keras imports this module
    try:
        spec = config["optimizer"]
        opt = _made(optimizers._BY_NAME[str(spec["class_name"]).lower()], spec["config"],
                    optimizers.Optimizer)

        def named(x: Any, module: Any) -> Any:
            if isinstance(x, dict) and x.get("class_name") == "MeanMetricWrapper":
                return x["config"]["name"]  # a metric by its function's name ("mae")
            if isinstance(x, dict) and "class_name" in x:
                return _made(getattr(module, x["class_name"]), x.get("config", {}))
            if isinstance(x, dict):  # one per output, by name
                return {k: named(v, module) for k, v in x.items()}
            if isinstance(x, list):
                return [named(v, module) for v in x]
            return x
        model.compile(optimizer=opt, loss=named(config.get("loss"), losses),
                      metrics=named(config.get("metrics") or [], metrics),
                      loss_weights=config.get("loss_weights"),
                      weighted_metrics=named(config.get("weighted_metrics"), metrics),
                      jit_compile=jit_compile_here(config.get("jit_compile"),
                                                   f"the model in {path!r}"))
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise DataLossError(f"load_model: the compile_config in {path!r} cannot be used "
                            f"({type(e).__name__}: {e}); pass compile=False to load the "
                            "model without it.") from None
    return True


def _made(cls: type, config: Any, base: type | None = None) -> Any:
    """`cls(**config)`, without the arguments tf_keras writes that tapeflow's class does
    not take where they hold their off value (None or False); any other is an error."""
    known = set(inspect.signature(cls.__init__).parameters)
    if base is not None:
        known |= set(inspect.signature(base.__init__).parameters)
    # a loss class's "fn" names its own function (tf_keras's LossFunctionWrapper)
    config = {k: v for k, v in dict(config).items() if k != "fn"}
    extra = {k: v for k, v in config.items() if k not in known}
    used = [k for k, v in extra.items() if v not in (None, False)]
    if used:
        raise ValueError(f"{cls.__name__} has no argument {used[0]!r} (set to "
                         f"{extra[used[0]]!r}) in tapeflow")
    return cls(**{k: v for k, v in config.items() if k in known})


def _jsonable(x: Any) -> Any:
    if isinstance(x, DType):  # an op's dtype argument, by name (tf_keras' json_utils)
        return x.name
    if hasattr(x, "tolist"):
        return x.tolist()
    if isinstance(x, (tuple, set)):
        return list(x)
    raise TypeError(f"save: a config value of type {type(x).__name__} is not JSON.")


def load_model(filepath: Any, custom_objects: dict | None = None, compile: bool = True,
               safe_mode: bool = True) -> Any:
    """The model saved in a `.keras` or legacy `.h5` file (by tf_keras or tapeflow),
    rebuilt from its config with its weights (NOTE(keras-model-files))."""
    path = os.fspath(filepath)
    if not os.path.isfile(path) and not os.path.isdir(path):
        raise FileNotFoundError(f"load_model: no file at {path!r}.")
    if os.path.isdir(path) and saved_model.contains_saved_model(path):
        # A SavedModel directory: its object, with its saved call (TensorFlow's loader
        # without the Keras metadata it can rebuild a Keras model from)
        return saved_model.load(path)
    if zipfile.is_zipfile(path):
        config, weights = _read_keras(path)
        model = _rebuild(config, custom_objects, safe_mode, path)
        keras_h5.h5py_module()
        tree = read_tree(path, weights)
        keras_h5.load_tree(model, tree, path)
        if compile and _recompile(model, config.get("compile_config"), path):
            keras_h5.load_optimizer(model.optimizer, model.trainable_variables, tree, path)
        return model
    keras_h5.h5py_module()
    try:
        tree = read_tree(path)
    except DataLossError as e:
        raise DataLossError(f"load_model: {path!r} is neither a .keras zip nor an HDF5 model "
                            f"file ({e}).") from None
    raw = tree.attrs.get("model_config")
    if raw is None:
        raise DataLossError(f"load_model: {path!r} holds no model config (a weights file? "
                            "build the model and call load_weights).")
    model = _rebuild(_json(raw.decode("utf8") if isinstance(raw, bytes) else str(raw), path),
                     custom_objects, safe_mode, path)
    keras_h5.load_tree(model, tree, path)
    training = tree.attrs.get("training_config")
    if compile and training is not None:
        # the legacy file's compile config (tf_keras's "training_config"), as .keras's
        legacy = _json(training.decode("utf8") if isinstance(training, bytes) else
                       str(training), path)
        if isinstance(legacy, dict) and isinstance(legacy.get("optimizer_config"), dict):
            opt = dict(legacy["optimizer_config"])
            opt["class_name"] = str(opt.get("class_name", "")).split(">")[-1]
            metrics = legacy.get("metrics") or []
            if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
                metrics = metrics[0]  # one output's list
            config = {"optimizer": opt, "loss": legacy.get("loss"), "metrics": metrics,
                      "loss_weights": legacy.get("loss_weights"),
                      "weighted_metrics": legacy.get("weighted_metrics")}
            if _recompile(model, config, path):
                keras_h5.load_legacy_optimizer(model.optimizer, model.trainable_variables,
                                               tree, path)
    return model


def _json(text: str, path: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:
        raise DataLossError(f"load_model: the config in {path!r} is not JSON ({e}).") from None


def _read_keras(path: str) -> tuple[Any, bytes]:
    try:
        with zipfile.ZipFile(path) as z:
            members = {info.filename: info for info in z.infolist()}
            for name, limit in (("config.json", _MAX_CONFIG), ("model.weights.h5", _MAX_WEIGHTS)):
                if name not in members:
                    raise DataLossError(f"load_model: {path!r} has no {name}: not a Keras "
                                        "model file.")
                if members[name].file_size > limit:
                    raise DataLossError(f"load_model: {name} in {path!r} claims "
                                        f"{members[name].file_size} bytes; refused.")
            config = _json(z.read("config.json").decode("utf8", errors="replace"), path)
            return config, z.read("model.weights.h5")
    except (zipfile.BadZipFile, OSError, EOFError) as e:
        raise DataLossError(f"load_model: {path!r} is a damaged zip ({e}).") from None


def _rebuild(config: Any, custom_objects: dict | None, safe_mode: bool, path: str) -> Any:
    if not isinstance(config, dict) or "class_name" not in config:
        raise DataLossError(f"load_model: the config in {path!r} is not a Keras model's.")
    if safe_mode:
        code = _python_code(config)
        if code is not None:
            raise ValueError(f"load_model: {path!r} holds Python bytecode (the {code!r} layer, "
                             "a Lambda): loading it would run code from the file. Pass "
                             "safe_mode=False to load a file you trust.")
    return deserialize(config, custom_objects)


def _python_code(config: Any) -> str | None:
    """The name of a layer whose config holds marshalled Python code, or None."""
    if isinstance(config, dict):
        inner = config.get("config")
        if config.get("class_name") == "Lambda" and isinstance(inner, dict) and any(
                inner.get(k) == "lambda" for k in ("function_type", "output_shape_type",
                                                   "mask_type")):
            return str(inner.get("name", "lambda"))
        for value in config.values():
            found = _python_code(value)
            if found is not None:
                return found
    elif isinstance(config, list):
        for value in config:
            found = _python_code(value)
            if found is not None:
                return found
    return None
