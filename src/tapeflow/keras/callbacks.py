"""keras.callbacks: what `fit`, `evaluate` and `predict` call at each epoch and batch, by
tf_keras's names (NOTE(fit) in keras/fitting.py).

`History` is what `fit` returns; `ProgbarLogger` is the progress display `verbose` asks
for (a bar per epoch with 1, a line per epoch with 2); `EarlyStopping`,
`ModelCheckpoint`, `LearningRateScheduler`, `ReduceLROnPlateau`, `LambdaCallback` and
`CSVLogger` behave as tf_keras documents them.
"""

from __future__ import annotations

import csv
import os
import sys
import time
from typing import Any, Callable

import numpy as np

__all__ = ["Callback", "CallbackList", "History", "ProgbarLogger", "LambdaCallback",
           "EarlyStopping", "ModelCheckpoint", "LearningRateScheduler", "ReduceLROnPlateau",
           "CSVLogger"]


class Callback:
    """The base: every hook does nothing; `self.model` and `self.params` are set by
    `fit`.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> class Count(tf.keras.callbacks.Callback):
        ...     def on_epoch_end(self, epoch, logs=None):
        ...         print("epoch", epoch, "loss" in logs)
        >>> model = tf.keras.Sequential([tf.keras.layers.Dense(1)])
        >>> model.compile("sgd", "mse")
        >>> _ = model.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=2, verbose=0,
        ...               callbacks=[Count()])
        epoch 0 True
        epoch 1 True
    """

    def __init__(self) -> None:
        self.model: Any = None
        self.params: dict = {}

    def set_model(self, model: Any) -> None:
        self.model = model

    def set_params(self, params: dict) -> None:
        self.params = params

    def on_train_begin(self, logs: dict | None = None) -> None: ...
    def on_train_end(self, logs: dict | None = None) -> None: ...
    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_begin(self, logs: dict | None = None) -> None: ...
    def on_test_end(self, logs: dict | None = None) -> None: ...
    def on_test_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_test_batch_end(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_begin(self, logs: dict | None = None) -> None: ...
    def on_predict_end(self, logs: dict | None = None) -> None: ...
    def on_predict_batch_begin(self, batch: int, logs: dict | None = None) -> None: ...
    def on_predict_batch_end(self, batch: int, logs: dict | None = None) -> None: ...


class CallbackList(Callback):
    """Callbacks called in order, as one."""

    def __init__(self, callbacks: Any = None, model: Any = None, **params: Any) -> None:
        super().__init__()
        self.callbacks = list(callbacks or [])
        if model is not None:
            self.set_model(model)
        self.set_params(params)

    def set_model(self, model: Any) -> None:
        self.model = model
        for c in self.callbacks:
            c.set_model(model)

    def set_params(self, params: dict) -> None:
        self.params = params
        for c in self.callbacks:
            c.set_params(params)

    def __getattribute__(self, name: str) -> Any:
        if name.startswith("on_"):
            def every(*args: Any, **kwargs: Any) -> None:
                for c in object.__getattribute__(self, "callbacks"):
                    getattr(c, name)(*args, **kwargs)
            return every
        return object.__getattribute__(self, name)


class History(Callback):
    """The logs of every epoch: `history` (name -> list of values) and `epoch`."""

    def __init__(self) -> None:
        super().__init__()
        self.history: dict[str, list] = {}
        self.epoch: list[int] = []

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.epoch = []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        self.epoch.append(epoch)
        for k, v in (logs or {}).items():
            self.history.setdefault(k, []).append(v)


def _format(logs: dict) -> str:
    return " - ".join(f"{k}: {v:.4f}" for k, v in logs.items()
                      if isinstance(v, (float, int, np.floating)))


class ProgbarLogger(Callback):
    """Keras' progress display: with `verbose` 1 a bar per epoch (redrawn in place on a
    terminal, its last state otherwise), with 2 a line per epoch."""

    def __init__(self, verbose: int = 1, stream: Any = None) -> None:
        super().__init__()
        self.verbose = verbose
        self.stream = stream

    def _out(self) -> Any:
        return self.stream or sys.stdout

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        self._start = time.perf_counter()
        self._seen = 0
        epochs = self.params.get("epochs")
        if epochs is not None:
            print(f"Epoch {epoch + 1}/{epochs}", file=self._out())

    def on_train_batch_end(self, batch: int, logs: dict | None = None) -> None:
        self._seen = batch + 1
        out = self._out()
        if self.verbose == 1 and getattr(out, "isatty", lambda: False)():
            out.write("\r" + self._bar(logs or {}))
            out.flush()

    def _bar(self, logs: dict) -> str:
        steps = self.params.get("steps")
        width = 30
        if steps:
            done = int(width * self._seen / steps)
            bar = "=" * max(done - 1, 0) + (">" if done < width else "=") + "." * (width - done)
            head = f"{self._seen}/{steps} [{bar}]"
        else:
            head = f"{self._seen}/Unknown"
        elapsed = time.perf_counter() - self._start
        per = 1000 * elapsed / max(self._seen, 1)
        text = _format(logs)
        return f"{head} - {elapsed:.0f}s {per:.0f}ms/step" + (f" - {text}" if text else "")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        out = self._out()
        if self.verbose == 1:
            end = "\r" if getattr(out, "isatty", lambda: False)() else ""
            out.write(end + self._bar(logs or {}) + "\n")
        else:
            elapsed = time.perf_counter() - self._start
            text = _format(logs or {})
            out.write(f"{self._seen}/{self.params.get('steps') or self._seen} - "
                      f"{elapsed:.0f}s" + (f" - {text}" if text else "") +
                      f" - {1000 * elapsed:.0f}ms/epoch - "
                      f"{1000 * elapsed / max(self._seen, 1):.0f}ms/step\n")
        out.flush()


class LambdaCallback(Callback):
    """A callback of the functions given for its hooks (``on_epoch_end=lambda epoch, logs:
    ...``, and the others by their names)."""

    def __init__(self, **hooks: Callable) -> None:
        super().__init__()
        for name, fn in hooks.items():
            if not name.startswith("on_") or not hasattr(Callback, name):
                raise ValueError(f"LambdaCallback: unknown hook {name!r}.")
            setattr(self, name, fn)


def _better(mode: str, monitor: str) -> Callable[[float, float], bool]:
    if mode not in ("auto", "min", "max"):
        raise ValueError(f"mode must be 'auto', 'min' or 'max'; received {mode!r}.")
    if mode == "max" or (mode == "auto" and ("acc" in monitor or monitor.startswith("fmeasure"))):
        return lambda a, b: a > b
    return lambda a, b: a < b


class EarlyStopping(Callback):
    """Stop training when `monitor` has not improved by more than `min_delta` for
    `patience` epochs (restoring the best epoch's weights with `restore_best_weights`)."""

    def __init__(self, monitor: str = "val_loss", min_delta: float = 0.0, patience: int = 0,
                 verbose: int = 0, mode: str = "auto", baseline: float | None = None,
                 restore_best_weights: bool = False, start_from_epoch: int = 0) -> None:
        super().__init__()
        self.monitor, self.patience, self.verbose = monitor, patience, verbose
        self.baseline, self.restore_best_weights = baseline, restore_best_weights
        self.start_from_epoch = start_from_epoch
        self._better = _better(mode, monitor)
        self.min_delta = abs(min_delta) if self._better(1, 0) else -abs(min_delta)
        self.stopped_epoch = 0

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait, self.stopped_epoch, self.best_weights, self.best_epoch = 0, 0, None, 0
        self.best = np.inf if not self._better(1, 0) else -np.inf

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        current = (logs or {}).get(self.monitor)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            self.best_weights = self.model.get_weights()
        self.wait += 1
        if self._better(current - self.min_delta, self.best):
            self.best, self.best_epoch = current, epoch
            if self.restore_best_weights:
                self.best_weights = self.model.get_weights()
            if self.baseline is None or self._better(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True
            if self.restore_best_weights and self.best_weights is not None:
                self.model.set_weights(self.best_weights)

    def on_train_end(self, logs: dict | None = None) -> None:
        if self.stopped_epoch > 0 and self.verbose > 0:
            print(f"Epoch {self.stopped_epoch + 1}: early stopping")


class ModelCheckpoint(Callback):
    """Save the model (or its weights) after each epoch to `filepath`, formatted with the
    epoch and the logs (``"ckpt-{epoch:02d}-{val_loss:.2f}.weights.h5"``); with
    `save_best_only`, only when `monitor` improved."""

    def __init__(self, filepath: str, monitor: str = "val_loss", verbose: int = 0,
                 save_best_only: bool = False, save_weights_only: bool = False,
                 mode: str = "auto", save_freq: Any = "epoch", **kwargs: Any) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise NotImplementedError("ModelCheckpoint: tapeflow saves once per epoch "
                                      "(save_freq='epoch').")
        self.filepath, self.monitor, self.verbose = os.fspath(filepath), monitor, verbose
        self.save_best_only, self.save_weights_only = save_best_only, save_weights_only
        self._better = _better(mode, monitor)
        self.best = -np.inf if self._better(1, 0) else np.inf

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        path = self.filepath.format(epoch=epoch + 1, **logs)
        if self.save_best_only:
            current = logs.get(self.monitor)
            if current is None or not self._better(current, self.best):
                return
            self.best = current
        if self.verbose > 0:
            print(f"Epoch {epoch + 1}: saving model to {path}")
        if self.save_weights_only:
            self.model.save_weights(path)
        else:
            self.model.save(path)


class LearningRateScheduler(Callback):
    """Set the optimizer's learning rate at each epoch's start to ``schedule(epoch,
    lr)`` (or ``schedule(epoch)``)."""

    def __init__(self, schedule: Callable, verbose: int = 0) -> None:
        super().__init__()
        self.schedule, self.verbose = schedule, verbose

    def on_epoch_begin(self, epoch: int, logs: dict | None = None) -> None:
        opt = self.model.optimizer
        lr = float(np.asarray(opt.learning_rate.numpy()))
        try:
            new = self.schedule(epoch, lr)
        except TypeError:
            new = self.schedule(epoch)
        new = float(np.asarray(getattr(new, "numpy", lambda: new)()))
        if not np.isfinite(new):
            raise ValueError(f"LearningRateScheduler: the schedule gave {new} at epoch {epoch}.")
        opt.learning_rate = new
        if self.verbose > 0:
            print(f"Epoch {epoch + 1}: LearningRateScheduler setting learning rate to {new}.")

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        if logs is not None:
            logs["lr"] = float(np.asarray(self.model.optimizer.learning_rate.numpy()))


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` has not improved for
    `patience` epochs (then wait `cooldown` epochs; never below `min_lr`)."""

    def __init__(self, monitor: str = "val_loss", factor: float = 0.1, patience: int = 10,
                 verbose: int = 0, mode: str = "auto", min_delta: float = 1e-4,
                 cooldown: int = 0, min_lr: float = 0.0, **kwargs: Any) -> None:
        super().__init__()
        if factor >= 1.0:
            raise ValueError(f"ReduceLROnPlateau: `factor` must be < 1; received {factor}.")
        self.monitor, self.factor, self.patience, self.verbose = monitor, factor, patience, verbose
        self.min_delta, self.cooldown, self.min_lr = min_delta, cooldown, min_lr
        self._better = _better(mode, monitor)

    def on_train_begin(self, logs: dict | None = None) -> None:
        self.wait, self.cooldown_counter = 0, 0
        self.best = -np.inf if self._better(1, 0) else np.inf

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs if logs is not None else {}
        opt = self.model.optimizer
        logs["lr"] = float(np.asarray(opt.learning_rate.numpy()))
        current = logs.get(self.monitor)
        if current is None:
            return
        if self.cooldown_counter > 0:
            self.cooldown_counter -= 1
            self.wait = 0
        delta = self.min_delta if self._better(1, 0) else -self.min_delta
        if self._better(current - delta, self.best):
            self.best, self.wait = current, 0
        elif self.cooldown_counter <= 0:
            self.wait += 1
            if self.wait >= self.patience:
                lr = logs["lr"]
                if lr > self.min_lr:
                    new = max(lr * self.factor, self.min_lr)
                    opt.learning_rate = new
                    if self.verbose > 0:
                        print(f"Epoch {epoch + 1}: ReduceLROnPlateau reducing learning rate "
                              f"to {new}.")
                    self.cooldown_counter, self.wait = self.cooldown, 0


class CSVLogger(Callback):
    """Write each epoch's logs as a row of a CSV file (`append` to an existing one)."""

    def __init__(self, filename: str, separator: str = ",", append: bool = False) -> None:
        super().__init__()
        self.filename, self.sep, self.append = os.fspath(filename), separator, append
        self._file: Any = None
        self._keys: list | None = None

    def on_train_begin(self, logs: dict | None = None) -> None:
        exists = self.append and os.path.exists(self.filename) and \
            os.path.getsize(self.filename) > 0
        self._file = open(self.filename, "a" if self.append else "w", newline="")
        self._keys = None if not exists else []

    def on_epoch_end(self, epoch: int, logs: dict | None = None) -> None:
        logs = logs or {}
        writer = csv.writer(self._file, delimiter=self.sep)
        if self._keys is None:
            self._keys = sorted(logs)
            writer.writerow(["epoch"] + self._keys)
        elif not self._keys:
            self._keys = sorted(logs)
        writer.writerow([epoch] + [logs.get(k, "NA") for k in self._keys])
        self._file.flush()

    def on_train_end(self, logs: dict | None = None) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
