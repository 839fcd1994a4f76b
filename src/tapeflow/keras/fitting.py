"""Keras' training surface for `Model`: compile, fit, evaluate, predict, the *_on_batch
methods, and the steps they run.

NOTE(fit): `compile` keeps the optimizer, the losses (Loss objects: a name or a function
is wrapped with TensorFlow's sum-over-batch-size reduction) and the metrics: a Mean of
the loss ("loss", each batch weighted by its size, as tf_keras's), then the compiled
ones ("accuracy" becomes the binary, categorical or sparse one by the shapes it first
sees, as tf_keras decides), one per output of a model of several (NOTE(compiled) in
compiled.py). `fit` cuts the data into batches (arrays: by a permutation
each epoch when `shuffle`, the validation split taken from the end first; a
tf.data.Dataset: as it iterates) and runs `train_step` as one tf.function (traced for the
first batch shape and relaxed for another: `reduce_retracing`; `jit_compile` passed
through), so a model that overrides `train_step` (the guide "customizing what happens in
fit") trains the same way. The logs are the metrics' results after each batch, running
means over the epoch as tf_keras reports them; validation runs `test_step` at each
epoch's end and adds ``val_`` logs. Callbacks (keras/callbacks.py) see every epoch and
batch; `History` is returned.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator

import numpy as np

from .. import nest
from ..data import Dataset
from .utils import Sequence
from ..graph.function import function
from ..ops.random import _seeds
from ..tape import GradientTape
from ..tensor import Tensor, TensorBase, convert_to_tensor
from . import callbacks as callbacks_mod
from .compiled import Compiled, compiled_of, compute_loss, update_metrics
from . import optimizers as optimizers_mod

__all__ = ["compile_model", "fit", "evaluate", "predict", "train_on_batch", "test_on_batch",
           "predict_on_batch", "default_train_step", "default_test_step", "unpack",
           "compute_loss", "update_metrics"]


def compile_model(model: Any, optimizer: Any = "rmsprop", loss: Any = None,
                  metrics: Any = None, loss_weights: Any = None, weighted_metrics: Any = None,
                  run_eagerly: bool | None = None, steps_per_execution: Any = None,
                  jit_compile: bool | None = None, **kwargs: Any) -> None:
    model.optimizer = optimizers_mod.get(optimizer)
    model._compiled = Compiled(loss, metrics, loss_weights, weighted_metrics,
                               bool(jit_compile), bool(run_eagerly))
    model._train_function = model._test_function = model._predict_function = None
    model.stop_training = False


# ------------------------------------------------------------------ the steps
def unpack(data: Any) -> tuple[Any, Any, Any]:
    """(x, y, sample_weight) of a batch: ``(x,)``, ``(x, y)``, ``(x, y, w)`` or x."""
    if isinstance(data, (tuple, list)) and len(data) in (1, 2, 3) and not isinstance(
            data[0], (int, float)):
        return tuple(data) + (None,) * (3 - len(data))
    return data, None, None


def default_train_step(model: Any, data: Any) -> dict:
    x, y, sample_weight = unpack(data)
    with GradientTape() as tape:
        y_pred = model(x, training=True)
        loss = model.compute_loss(x, y, y_pred, sample_weight)
    variables = model.trainable_variables
    model.optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
    return update_metrics(model, y, y_pred, sample_weight, loss)


def default_test_step(model: Any, data: Any) -> dict:
    x, y, sample_weight = unpack(data)
    y_pred = model(x, training=False)
    loss = model.compute_loss(x, y, y_pred, sample_weight)
    return update_metrics(model, y, y_pred, sample_weight, loss)


def _step_function(model: Any, name: str) -> Callable:
    compiled = compiled_of(model, name)
    attr = {"train": "_train_function", "test": "_test_function", "predict": "_predict_function"}
    fn = model.__dict__.get(attr[name])
    if fn is None:
        step = getattr(model, f"{name}_step")
        fn = step if compiled.run_eagerly else function(
            step, jit_compile=compiled.jit_compile or None, reduce_retracing=True)
        model.__dict__[attr[name]] = fn
    return fn


def _floats(logs: dict) -> dict:
    return {k: float(np.asarray(v._value if isinstance(v, TensorBase) else v))
            for k, v in logs.items()}


# ------------------------------------------------------------------ data
def _as_arrays(x: Any) -> Any:
    return nest.map_structure(lambda a: None if a is None else np.asarray(
        a._value if isinstance(a, TensorBase) else a), x)


def _length(x: Any) -> int:
    sizes = {len(a) for a in nest.flatten(x) if a is not None}
    if len(sizes) != 1:
        raise ValueError(f"Data cardinality is ambiguous: the arrays have {sorted(sizes)} "
                         "samples; make sure all arrays contain the same number of samples.")
    return sizes.pop()


def _take(x: Any, rows: Any) -> Any:
    """A batch of the caller's arrays: a copy (a slice would be a view of their buffer,
    which the caller may write to while the batch is in use; a permutation's rows are
    copied by the indexing)."""
    return nest.map_structure(lambda a: None if a is None else Tensor(
        a[rows].copy() if isinstance(rows, slice) else a[rows]), x)


class _Data:
    """A fit's, evaluate's or predict's data: arrays cut into batches, or a Dataset."""

    def __init__(self, x: Any, y: Any, sample_weight: Any, batch_size: int | None,
                 shuffle: bool, class_weight: Any = None, steps: int | None = None) -> None:
        self.dataset = x if isinstance(x, Dataset) else _Batches.of(x, shuffle)
        self.steps = steps
        if self.dataset is not None:
            kind = "dataset" if isinstance(x, Dataset) else type(x).__name__
            if y is not None or sample_weight is not None:
                raise ValueError(f"`y` and `sample_weight` must not be given with a {kind}: its "
                                 "elements are (x, y) or (x, y, sample_weight).")
            if batch_size is not None:
                raise ValueError(f"`batch_size` must not be given with a {kind}: it gives "
                                 "batches already.")
            self._iterator: Iterator | None = None
            card = int(self.dataset.cardinality())
            self.batches = steps if steps is not None else (card if card >= 0 else None)
            self.class_weight = class_weight
            return
        self.x, self.y = _as_arrays(x), None if y is None else _as_arrays(y)
        # one array, or one per output (a list or dict, None for an output without)
        self.sw = None if sample_weight is None else (
            nest.map_structure(lambda w: None if w is None else np.asarray(w), sample_weight)
            if isinstance(sample_weight, (list, tuple, dict)) else np.asarray(sample_weight))
        self.n = _length(self.x if self.y is None else (self.x, self.y))
        if class_weight is not None:
            if self.y is None:
                raise ValueError("`class_weight` needs `y`.")
            if self.sw is not None and not isinstance(self.sw, np.ndarray) or \
                    isinstance(self.y, (list, tuple, dict)) and len(nest.flatten(self.y)) > 1:
                raise ValueError("`class_weight` is only supported for models with a single "
                                 "output; weight the outputs' samples with `sample_weight`.")
            self.sw = _class_weights(np.asarray(nest.flatten(self.y)[0]), class_weight,
                                     self.sw)
        self.batch_size = 32 if batch_size is None else int(batch_size)
        self.shuffle = shuffle
        per_epoch = -(-self.n // self.batch_size)
        self.batches = steps if steps is not None else per_epoch
        self._stream: Iterator | None = None

    def epoch(self) -> Iterator:
        """The batches of one epoch (with `steps`, the stream goes on where it stopped)."""
        if self.dataset is not None:
            if self.steps is None:
                it: Iterator = iter(self.dataset)
            else:
                if self._iterator is None:
                    self._iterator = iter(self.dataset)
                it = _limited(self._iterator, self.steps)
            return (_weighted(b, self.class_weight) for b in it)
        if self.steps is None:
            return self._one_pass()
        if self._stream is None:
            self._stream = _forever(self._one_pass)
        return _limited(self._stream, self.steps)

    def _one_pass(self) -> Iterator:
        order = np.random.default_rng(_seed()).permutation(self.n) if self.shuffle else None
        for start in range(0, self.n, self.batch_size):
            rows = slice(start, start + self.batch_size) if order is None else \
                order[start:start + self.batch_size]
            batch = (_take(self.x, rows),) if self.y is None else (
                _take(self.x, rows), _take(self.y, rows))
            if self.sw is not None:
                batch = batch + (_take(self.sw, rows),)
            yield batch if len(batch) > 1 else batch[0]


class _Batches:
    """A keras.utils.Sequence's batches by index (in a new order each epoch with `shuffle`,
    `on_epoch_end` after each), or a generator's as they come: the batch stream `fit`,
    `evaluate` and `predict` read as they read a dataset's."""

    def __init__(self, source: Any, shuffle: bool) -> None:
        self.source, self.shuffle = source, shuffle

    @classmethod
    def of(cls, x: Any, shuffle: bool) -> "_Batches | None":
        if isinstance(x, Sequence) or (hasattr(x, "__next__") and hasattr(x, "__iter__")):
            return cls(x, shuffle)
        return None

    def cardinality(self) -> int:
        return len(self.source) if isinstance(self.source, Sequence) else -1

    def __iter__(self) -> Iterator:
        if not isinstance(self.source, Sequence):
            for batch in self.source:
                yield _tensors(batch)
            return
        n = len(self.source)
        order = np.random.default_rng(_seed()).permutation(n) if self.shuffle else range(n)
        for i in order:
            yield _tensors(self.source[int(i)])
        self.source.on_epoch_end()


def _tensors(batch: Any) -> Any:
    """A batch of arrays as tensors (tuples stay tuples: x, y and sample weights)."""
    if isinstance(batch, list):
        batch = tuple(batch)
    return nest.map_structure(lambda a: a if isinstance(a, TensorBase) else
                              Tensor(np.array(a)), batch)


def _seed() -> int:
    return int(_seeds.rng.integers(2 ** 63))  # the global stream, as tf.data's shuffles draw


def _forever(make: Callable[[], Iterator]) -> Iterator:
    while True:
        yield from make()


def _limited(it: Iterator, steps: int) -> Iterator:
    for _ in range(steps):
        try:
            yield next(it)
        except StopIteration:
            return


def _class_weights(y: np.ndarray, class_weight: dict, sw: Any) -> np.ndarray:
    classes = y.argmax(-1) if y.ndim > 1 and y.shape[-1] > 1 else y.reshape(len(y), -1)[:, 0]
    weights = np.array([class_weight.get(int(c), 1.0) for c in classes], np.float32)
    return weights if sw is None else weights * sw


def _weighted(batch: Any, class_weight: Any) -> Any:
    if class_weight is None:
        return batch
    x, y, sw = unpack(batch)
    w = _class_weights(np.asarray(y._value if isinstance(y, TensorBase) else y), class_weight,
                       None if sw is None else np.asarray(sw._value))
    return (x, y, Tensor(w))


def _split(x: Any, y: Any, sample_weight: Any, split: float) -> tuple:
    """(training, validation) of arrays: the validation data is the last `split` of them,
    taken before any shuffling (tf_keras)."""
    if isinstance(x, Dataset):
        raise ValueError("`validation_split` is only supported for arrays, not datasets: "
                         "pass `validation_data`.")
    xs = _as_arrays(x)
    n = _length(xs)
    cut = int(n * (1.0 - split))
    head = lambda a: None if a is None else nest.map_structure(  # noqa: E731
        lambda v: None if v is None else v[:cut], _as_arrays(a))
    tail = lambda a: None if a is None else nest.map_structure(  # noqa: E731
        lambda v: None if v is None else v[cut:], _as_arrays(a))
    return (head(x), head(y), head(sample_weight)), (tail(x), tail(y), tail(sample_weight))


# ------------------------------------------------------------------ the loops
def _callbacks(model: Any, given: Any, level: Any, **params: Any) -> Any:
    history = callbacks_mod.History()
    cbs = list(given or [])
    level = 1 if level == "auto" else int(level)
    if level and not any(isinstance(c, callbacks_mod.ProgbarLogger) for c in cbs):
        cbs.insert(0, callbacks_mod.ProgbarLogger(level))
    # as tf_keras orders them: the progress bar first, History last (it sees the logs the
    # others add, a scheduler's "lr")
    return callbacks_mod.CallbackList(cbs + [history], model=model, **params), history


def fit(model: Any, x: Any = None, y: Any = None, batch_size: int | None = None,
        epochs: int = 1, verbose: Any = "auto", callbacks: Any = None,
        validation_split: float = 0.0, validation_data: Any = None, shuffle: bool = True,
        class_weight: Any = None, sample_weight: Any = None, initial_epoch: int = 0,
        steps_per_epoch: int | None = None, validation_steps: int | None = None,
        validation_batch_size: int | None = None, validation_freq: int = 1,
        **kwargs: Any) -> Any:
    compiled_of(model, "fit")
    if validation_split and validation_data is None:
        (x, y, sample_weight), validation_data = _split(x, y, sample_weight, validation_split)
    data = _Data(x, y, sample_weight, batch_size, shuffle, class_weight, steps_per_epoch)
    cbs, history = _callbacks(model, callbacks, verbose, epochs=epochs, steps=data.batches,
                              verbose=verbose)
    train = _step_function(model, "train")
    model.stop_training = False
    cbs.on_train_begin()
    logs: dict = {}
    for epoch in range(initial_epoch, epochs):
        model.reset_metrics()
        cbs.on_epoch_begin(epoch)
        for step, batch in enumerate(data.epoch()):
            cbs.on_train_batch_begin(step)
            logs = _floats(train(batch))
            cbs.on_train_batch_end(step, logs)
            if model.stop_training:
                break
        epoch_logs = dict(logs)
        if validation_data is not None and (epoch + 1) % validation_freq == 0:
            batched = isinstance(validation_data, Dataset)
            vx, vy, vw = (validation_data, None, None) if batched else unpack(validation_data)
            val = evaluate(model, vx, vy, batch_size=None if batched else (
                validation_batch_size or batch_size), sample_weight=vw, steps=validation_steps,
                verbose=0, return_dict=True, _callbacks=cbs)
            epoch_logs.update({f"val_{k}": v for k, v in val.items()})
        cbs.on_epoch_end(epoch, epoch_logs)
        if model.stop_training:
            break
    cbs.on_train_end(logs)
    history.model, history.params = model, cbs.params
    return history


def evaluate(model: Any, x: Any = None, y: Any = None, batch_size: int | None = None,
             verbose: Any = "auto", sample_weight: Any = None, steps: int | None = None,
             callbacks: Any = None, return_dict: bool = False, _callbacks: Any = None,
             **kwargs: Any) -> Any:
    compiled_of(model, "evaluate")
    data = _Data(x, y, sample_weight, batch_size, False, None, steps)
    cbs = _callbacks or _callbacks_only(model, callbacks)
    test = _step_function(model, "test")
    model.reset_metrics()
    cbs.on_test_begin()
    logs: dict = {}
    for step, batch in enumerate(data.epoch()):
        cbs.on_test_batch_begin(step)
        logs = _floats(test(batch))
        cbs.on_test_batch_end(step, logs)
    cbs.on_test_end(logs)
    if verbose and _callbacks is None:  # (inside fit, its validation is in the epoch's logs)
        print(f"{data.batches}/{data.batches} - " +
              " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()))
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def _callbacks_only(model: Any, callbacks: Any) -> Any:
    return callbacks_mod.CallbackList(list(callbacks or []), model=model)


def predict(model: Any, x: Any, batch_size: int | None = None, verbose: Any = "auto",
            steps: int | None = None, callbacks: Any = None, **kwargs: Any) -> Any:
    data = _Data(x, None, None, batch_size, False, None, steps)
    fn = model.__dict__.get("_predict_function")
    if fn is None:
        fn = function(model.predict_step, reduce_retracing=True)
        model.__dict__["_predict_function"] = fn
    cbs = _callbacks_only(model, callbacks)
    cbs.on_predict_begin()
    outs = []
    for step, batch in enumerate(data.epoch()):
        cbs.on_predict_batch_begin(step)
        out = fn(batch)
        outs.append(nest.map_structure(lambda t: np.asarray(t._value), out))
        cbs.on_predict_batch_end(step, {"outputs": out})
    cbs.on_predict_end()
    if not outs:
        raise ValueError("predict: the data has no batches.")
    return nest.map_structure(lambda *parts: np.concatenate(parts), *outs)


def default_predict_step(model: Any, data: Any) -> Any:
    x, _, _ = unpack(data)
    return model(x, training=False)


def train_on_batch(model: Any, x: Any, y: Any = None, sample_weight: Any = None,
                   class_weight: Any = None, reset_metrics: bool = True,
                   return_dict: bool = False) -> Any:
    return _on_batch(model, "train", x, y, sample_weight, class_weight, reset_metrics,
                     return_dict)


def test_on_batch(model: Any, x: Any, y: Any = None, sample_weight: Any = None,
                  reset_metrics: bool = True, return_dict: bool = False) -> Any:
    return _on_batch(model, "test", x, y, sample_weight, None, reset_metrics, return_dict)


def _on_batch(model: Any, name: str, x: Any, y: Any, sample_weight: Any, class_weight: Any,
              reset_metrics: bool, return_dict: bool) -> Any:
    data = _Data(x, y, sample_weight, None, False, class_weight)
    data.batch_size = data.n  # the whole data is the one batch
    batch = next(iter(data.epoch()))
    if reset_metrics:
        model.reset_metrics()
    logs = _floats(_step_function(model, name)(batch))
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def predict_on_batch(model: Any, x: Any) -> Any:
    out = model(nest.map_structure(lambda a: convert_to_tensor(a), x), training=False)
    return nest.map_structure(lambda t: np.asarray(t._value), out)
