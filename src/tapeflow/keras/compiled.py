"""What `Model.compile` keeps, and the loss and metrics of a batch computed from it, for
models of one output or several (NOTE(compiled)).

NOTE(compiled): as tf_keras, a model's outputs are named by their layers (a functional
model's `outputs`; "output_1", ... otherwise; the keys of a dict of outputs), and each
compile argument is given once for all outputs, as a list in the outputs' order, or as a
dict by output name: `loss` (an output without one adds nothing), `loss_weights` (1 where
not given), `metrics` and `weighted_metrics` (a list applies to every output). The total
loss is the sum of each output's loss times its weight, plus the model's `losses`; with
several outputs each output's unweighted loss is logged as "<name>_loss" and each metric
as "<name>_<metric>". `metrics` ignore `sample_weight` (and `class_weight`);
`weighted_metrics` are weighted by it, named "weighted_<metric>" where a plain metric has
the name already. Targets and sample weights come as the outputs do: one for one
output, a list in their order, or a dict by name.
"""

from __future__ import annotations

import numbers
from typing import Any, Callable

from .. import nest
from ..tensor import Tensor, convert_to_tensor
from . import losses as losses_mod
from . import metrics as metrics_mod

__all__ = ["Compiled", "compiled_of", "loss_object", "compute_loss", "update_metrics"]


class Compiled:
    """What `compile` keeps (NOTE(compiled)): the arguments as given (a model file saves
    them), the losses made from them, and the metrics, made at the first batch (their kind
    by the shapes they see, as "accuracy")."""

    def __init__(self, loss: Any, metrics: Any, loss_weights: Any, weighted_metrics: Any,
                 jit_compile: bool, run_eagerly: bool) -> None:
        _check_structure(loss, "loss")
        _check_structure(loss_weights, "loss_weights")
        for w in nest.flatten(loss_weights):  # a model file's are read from its JSON
            if w is not None and (isinstance(w, bool) or not isinstance(w, numbers.Real)):
                raise TypeError(f"compile: `loss_weights` must hold numbers; received "
                                f"{w!r:.60} in {loss_weights!r:.100}.")
        self.loss_spec = loss
        self.loss = nest.map_structure(loss_object, loss) if isinstance(loss, (list, dict)) \
            else loss_object(loss)
        self.loss_weights = loss_weights
        self.metric_specs = metrics if isinstance(metrics, dict) else list(metrics or [])
        self.weighted_specs = weighted_metrics if isinstance(weighted_metrics, dict) \
            else list(weighted_metrics or [])
        self.metrics: list | None = None
        self.feeds: list = []  # (kind, output index) of each metric
        self.loss_tracker = metrics_mod.Mean(name="loss")
        self.jit_compile = jit_compile
        self.run_eagerly = run_eagerly


def _check_structure(spec: Any, what: str) -> None:
    if isinstance(spec, tuple):
        raise TypeError(f"compile: `{what}` must be one value, a list (one per output) or a "
                        f"dict (by output name); received a tuple {spec!r:.100}.")


def loss_object(loss: Any) -> Any:
    """A Loss from a name, a function (tf_keras's sum-over-batch-size reduction) or a Loss;
    None stays None."""
    if loss is None or isinstance(loss, losses_mod.Loss):
        return loss
    fn = losses_mod.get(loss)
    if isinstance(fn, losses_mod.Loss):
        return fn
    return _FunctionLoss(fn)


class _FunctionLoss(losses_mod.Loss):
    """A loss function with TensorFlow's sum-over-batch-size reduction (tf_keras's
    LossFunctionWrapper)."""

    def __init__(self, fn: Callable) -> None:
        super().__init__(name=getattr(fn, "__name__", "loss"))
        self._fn = fn

    def call(self, y_true: Any, y_pred: Any) -> Tensor:
        return self._fn(y_true, y_pred)


def compiled_of(model: Any, who: str) -> Compiled:
    """The model's Compiled, or tf_keras's error for a model not compiled."""
    compiled = model.__dict__.get("_compiled")
    if compiled is None:
        raise RuntimeError(f"You must compile your model before training/testing. Use "
                           f"`model.compile(optimizer, loss)` (called {who}).")
    return compiled


# ------------------------------------------------------------------ outputs
def _names(model: Any, y_pred: Any) -> list[str] | None:
    """The outputs' names (NOTE(compiled)); None for a model of one output."""
    if isinstance(y_pred, dict):
        return sorted(y_pred)  # nest's order of a dict
    if not isinstance(y_pred, (list, tuple)) or len(y_pred) == 1:
        return None
    outputs = list(getattr(model, "outputs", None) or [])
    names: list[str] = []
    for i in range(len(y_pred)):
        history = getattr(outputs[i], "_keras_history", None) if i < len(outputs) else None
        base = history[0].name if history else f"output_{i + 1}"
        name, k = base, 1
        while name in names:
            name, k = f"{base}_{k}", k + 1
        names.append(name)
    return names


def _per_output(value: Any, names: list[str], what: str, default: Any = None,
                broadcast: bool = True) -> list:
    """`value` (a compile argument, targets or sample weights) as one entry per output: a
    dict by name, a list in order, or one value for all (`broadcast`) or for none."""
    n = len(names)
    if isinstance(value, dict):
        unknown = sorted(set(value) - set(names))
        if unknown:
            raise ValueError(f"`{what}` names {unknown}, which are not outputs of the model; "
                             f"its outputs are {names}.")
        return [value.get(k, default) for k in names]
    if isinstance(value, (list, tuple)) and not (what == "metrics" and not _nested(value)):
        if len(value) != n:
            raise ValueError(f"`{what}` has {len(value)} entries, but the model has {n} "
                             f"outputs {names}: give one per output, or a dict by name.")
        return list(value)
    if value is None:
        return [default] * n
    if not broadcast:
        raise ValueError(f"The model has {n} outputs {names}: `{what}` must be a list of {n} "
                         f"(one per output) or a dict by name; received "
                         f"{type(value).__name__}.")
    return [value] * n


def _nested(metrics: list) -> bool:
    """Whether a metrics list is one list per output (tf_keras's [[...], [...]])."""
    return bool(metrics) and all(isinstance(m, (list, tuple)) for m in metrics)


def _outputs(model: Any, y: Any, y_pred: Any, sample_weight: Any) -> list[tuple]:
    """(name, target, prediction, sample weight) of each output."""
    names = _names(model, y_pred)
    if names is None:
        pred = y_pred[0] if isinstance(y_pred, (list, tuple)) else y_pred
        true = y[0] if isinstance(y, (list, tuple)) and len(y) == 1 else y
        sw = sample_weight[0] if isinstance(sample_weight, (list, tuple)) and \
            len(sample_weight) == 1 else sample_weight
        return [("", true, pred, sw)]
    preds = [y_pred[k] for k in names] if isinstance(y_pred, dict) else list(y_pred)
    trues = _per_output(y, names, "y", broadcast=False)
    weights = _per_output(sample_weight, names, "sample_weight")
    return list(zip(names, trues, preds, weights, strict=True))


# ------------------------------------------------------------------ loss and metrics
def _losses(compiled: Compiled, names: list[str] | None) -> list[tuple]:
    """(loss, weight) of each output."""
    if names is None:
        weight = compiled.loss_weights
        if isinstance(weight, (list, tuple)):
            if len(weight) != 1:
                raise ValueError(f"`loss_weights` has {len(weight)} entries, but the model has "
                                 "one output.")
            weight = weight[0]
        elif isinstance(weight, dict):
            raise ValueError("`loss_weights` is a dict, but the model has one output.")
        loss = compiled.loss
        if isinstance(loss, list) and len(loss) == 1:
            loss = loss[0]
        elif isinstance(loss, (list, dict)):
            raise ValueError(f"`loss` is a {type(loss).__name__} of {len(loss)}, but the model "
                             "has one output.")
        return [(loss, 1.0 if weight is None else weight)]
    losses = _per_output(compiled.loss, names, "loss")
    weights = _per_output(compiled.loss_weights, names, "loss_weights", default=1.0)
    return list(zip(losses, weights, strict=True))


def compute_loss(model: Any, x: Any, y: Any, y_pred: Any, sample_weight: Any) -> Tensor:
    """The compiled loss of a batch: each output's loss times its weight, summed, plus the
    model's `losses` (NOTE(compiled))."""
    compiled = compiled_of(model, "compute_loss")
    outputs = _outputs(model, y, y_pred, sample_weight)
    losses = _losses(compiled, _names(model, y_pred))
    if all(loss is None for loss, _ in losses):
        raise ValueError("compile was given no `loss`: pass one, or override train_step.")
    total = None
    for (_, y_true, pred, sw), (loss, weight) in zip(outputs, losses, strict=True):
        if loss is None:
            continue
        value = loss(y_true, pred, sample_weight=sw)
        if weight != 1.0:
            value = value * weight
        total = value if total is None else total + value
    for term in list(getattr(model, "losses", []) or []):
        total = total + term
    return total


def _metric_for(spec: Any, y_true: Any, y_pred: Any, loss: Any) -> Any:
    """A compiled metric object from its spec, "accuracy" by the shapes (tf_keras)."""
    if isinstance(spec, metrics_mod.Metric):
        return spec
    if isinstance(spec, str) and spec in ("accuracy", "acc"):
        true_last = y_true.shape[-1] if y_true.shape.rank else 1
        pred_last = y_pred.shape[-1] if y_pred.shape.rank else 1
        if isinstance(loss, losses_mod.SparseCategoricalCrossentropy) or (
                true_last == 1 and pred_last != 1) or y_true.shape.rank == y_pred.shape.rank - 1:
            fn = metrics_mod.sparse_categorical_accuracy
        elif pred_last == 1:
            fn = metrics_mod.binary_accuracy
        else:
            fn = metrics_mod.categorical_accuracy
        return metrics_mod.MeanMetricWrapper(fn, name=spec)
    if isinstance(spec, str):
        names = {"mse": losses_mod.mean_squared_error, "mae": losses_mod.mean_absolute_error,
                 "mean_squared_error": losses_mod.mean_squared_error,
                 "mean_absolute_error": losses_mod.mean_absolute_error,
                 "binary_accuracy": metrics_mod.binary_accuracy,
                 "categorical_accuracy": metrics_mod.categorical_accuracy,
                 "sparse_categorical_accuracy": metrics_mod.sparse_categorical_accuracy}
        if spec not in names:
            raise ValueError(f"Unknown metric {spec!r}; known: {sorted(names)} or a "
                             "keras.metrics.Metric.")
        return metrics_mod.MeanMetricWrapper(names[spec], name=spec)
    if callable(spec):
        return metrics_mod.MeanMetricWrapper(spec, name=getattr(spec, "__name__", "metric"))
    raise TypeError(f"compile: a metric must be a name, a function or a Metric; got {spec!r}.")


def _metric_lists(specs: Any, names: list[str] | None, what: str) -> list[list]:
    """The metric specs of each output (NOTE(compiled))."""
    if names is None:
        if isinstance(specs, dict):
            raise ValueError(f"`{what}` is a dict, but the model has one output.")
        return [list(specs[0]) if _nested(specs) and len(specs) == 1 else list(specs)]
    per = _per_output(specs, names, "metrics" if not isinstance(specs, dict) else what,
                      default=[])
    return [list(p) if isinstance(p, (list, tuple)) else [p] for p in per]


def _make_metrics(compiled: Compiled, outputs: list, names: list[str] | None) -> None:
    compiled.metrics, compiled.feeds = [], []
    losses = _losses(compiled, names)
    several = names is not None
    if several:  # each output's unweighted loss, "<output>_loss" (tf_keras)
        for i, (name, *_rest) in enumerate(outputs):
            if losses[i][0] is not None:
                compiled.metrics.append(metrics_mod.Mean(name=f"{name}_loss"))
                compiled.feeds.append(("loss", i))
    plain = _metric_lists(compiled.metric_specs, names, "metrics")
    weighted = _metric_lists(compiled.weighted_specs, names, "weighted_metrics")
    for kind, per_output in (("metric", plain), ("weighted", weighted)):
        for i, specs in enumerate(per_output):
            name, y_true, pred, _ = outputs[i]
            for spec in specs:
                if several and isinstance(spec, metrics_mod.Metric) and \
                        any(spec is m for m in compiled.metrics):
                    spec = type(spec).from_config(spec.get_config())  # one per output
                m = _metric_for(spec, convert_to_tensor(y_true), pred, losses[i][0])
                base = m.name
                if kind == "weighted" and any(
                        f == ("metric", i) and n.name == (f"{name}_{base}" if several else base)
                        for n, f in zip(compiled.metrics, compiled.feeds, strict=True)):
                    base = f"weighted_{base}"
                m.__dict__["_name"] = f"{name}_{base}" if several else base
                compiled.metrics.append(m)
                compiled.feeds.append((kind, i))


def update_metrics(model: Any, y: Any, y_pred: Any, sample_weight: Any, loss: Any) -> dict:
    """Update the loss tracker and the compiled metrics with a batch; every metric's result
    by name (NOTE(compiled))."""
    compiled = compiled_of(model, "compute_metrics")
    batch = nest.flatten(y_pred)[0].shape[0] if y_pred is not None else None
    if loss is not None:
        compiled.loss_tracker.update_state(loss, sample_weight=batch)
    names = _names(model, y_pred)
    outputs = _outputs(model, y, y_pred, sample_weight)
    if compiled.metrics is None:
        _make_metrics(compiled, outputs, names)
    losses = _losses(compiled, names)
    for m, (kind, i) in zip(compiled.metrics, compiled.feeds, strict=True):
        _, y_true, pred, sw = outputs[i]
        if kind == "loss":
            m.update_state(losses[i][0](y_true, pred, sample_weight=sw), sample_weight=batch)
        else:
            m.update_state(y_true, pred, sample_weight=sw if kind == "weighted" else None)
    return {m.name: m.result() for m in model.metrics}
