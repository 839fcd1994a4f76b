"""tf.train.Checkpoint and CheckpointManager: TensorFlow's training checkpoints.

What is saved is the object graph under the checkpoint's objects (NOTE(object-graph) in
saving/objects.py), in tapeflow's file format (NOTE(bundle-format) in
saving/bundle.py), at the paths TensorFlow uses: ``save`` writes ``prefix-N.index`` and
``prefix-N.data-00000-of-00001`` and points the directory's ``checkpoint`` file at
them, which `latest_checkpoint` reads.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Any, Callable

import numpy as np

from .. import dtypes as _dt
from ..core import recording
from ..errors import DataLossError, NotFoundError
from ..tensor import Variable
from . import bundle, deferred
from .objects import SLOT, VALUE, walk

__all__ = ["Checkpoint", "CheckpointManager", "CheckpointLoadStatus", "latest_checkpoint",
           "list_variables", "load_variable", "write_pointer"]

_POINTER = "checkpoint"


class CheckpointLoadStatus:
    """What a restore matched, as TensorFlow's status object: its assertions raise
    AssertionError naming what did not match."""

    def __init__(self, path: str, unmatched: set, missing: list, waiting: set) -> None:
        self._path = path
        self._unmatched = unmatched  # checkpoint keys no object of the graph took
        self._missing = missing      # variables of the graph the checkpoint has no value for
        self._waiting = waiting      # keys of variables not made yet (NOTE(deferred-restore))
        self._matched = 0

    def _restored(self, key: str) -> Callable[[], None]:
        def done() -> None:
            self._waiting.discard(key)
            self._matched += 1
        return done

    def assert_consumed(self) -> "CheckpointLoadStatus":
        """Every value of the checkpoint was restored (none waits for its variable) and
        every variable of the objects had a value in it."""
        self.assert_existing_objects_matched()
        left = sorted(self._unmatched | self._waiting)
        if left:
            raise AssertionError(f"Checkpoint {self._path!r}: {len(left)} value(s) were not "
                                 f"restored (no such variable exists yet): {_few(left)}.")
        return self

    def assert_existing_objects_matched(self) -> "CheckpointLoadStatus":
        """Every variable the objects have now had a value in the checkpoint."""
        if self._missing:
            raise AssertionError(f"Checkpoint {self._path!r} has no value for {len(self._missing)}"
                                 f" variable(s) of the objects: {_few(self._missing)}.")
        return self

    def assert_nontrivial_match(self) -> "CheckpointLoadStatus":
        """At least one value of the checkpoint was restored."""
        if not self._matched:
            raise AssertionError(f"Checkpoint {self._path!r}: nothing matched the objects.")
        return self

    def expect_partial(self) -> "CheckpointLoadStatus":
        """Silence complaints about values left unused (a partial restore is intended)."""
        return self

    def run_restore_ops(self, session: Any = None) -> None:
        """Nothing to run: restoring is eager (TensorFlow 1 graph mode's hook)."""

    def initialize_or_restore(self, session: Any = None) -> None:
        """Nothing to run: restoring is eager (TensorFlow 1 graph mode's hook)."""


def _few(names: list) -> str:
    return ", ".join(repr(n) for n in names[:5]) + (", ..." if len(names) > 5 else "")


class Checkpoint:
    """Save and restore the variables of objects (modules, Keras layers and models,
    optimizers, variables, lists and dicts of them), as TensorFlow's.

    Example:
        >>> import os, tempfile
        >>> import tapeflow as tf
        >>> v = tf.Variable(1.0)
        >>> ckpt = tf.train.Checkpoint(v=v)
        >>> path = ckpt.save(os.path.join(tempfile.mkdtemp(), "ckpt"))
        >>> _ = v.assign(5.0)
        >>> _ = ckpt.restore(path).assert_consumed()
        >>> float(v), os.path.basename(path)
        (1.0, 'ckpt-1')
    """

    def __init__(self, root: Any = None, **kwargs: Any) -> None:
        """`root`'s dependencies are saved at the top level (as TensorFlow's root object:
        ``tf.train.Checkpoint(model)`` saves ``kernel`` paths, not ``model/kernel``), each
        keyword's object under its name."""
        objects = dict(kwargs)
        for name, obj in objects.items() if root is None else [("root", root), *objects.items()]:
            if not isinstance(obj, (Variable, list, tuple, dict)) and \
                    not hasattr(obj, "__dict__"):
                raise ValueError(f"tf.train.Checkpoint: `{name}` is a {type(obj).__name__}, "
                                 "which holds no variables; pass modules, layers, models, "
                                 "optimizers, variables, or lists and dicts of them.")
        self._objects = objects
        self._root = root
        self._save_counter: Variable | None = None

    @property
    def save_counter(self) -> Variable:
        """How many times `save` has written (an int64 variable, saved too)."""
        if self._save_counter is None:
            self._save_counter = Variable(np.int64(0), trainable=False, name="save_counter")
        return self._save_counter

    def _roots(self) -> dict:
        roots = dict(self._objects)
        if self._save_counter is not None:
            roots["save_counter"] = self._save_counter
        return roots

    def write(self, file_prefix: str, options: Any = None) -> str:
        """Write a checkpoint at exactly `file_prefix` (no number, no pointer file)."""
        file_prefix = os.fspath(file_prefix)
        g = walk(self._roots(), self._root)
        arrays = {k: np.asarray(v._value) for k, v in g.variables.items()}
        bundle.write_bundle(file_prefix, arrays, {k: v.dtype.name for k, v in g.variables.items()})
        return file_prefix

    def save(self, file_prefix: str, options: Any = None) -> str:
        """Write the checkpoint ``file_prefix-N`` (N: the save counter, incremented) and
        point the directory's ``checkpoint`` file at it."""
        counter = self.save_counter
        counter.assign_add(1)
        path = self.write(f"{os.fspath(file_prefix)}-{int(counter.numpy())}")
        write_pointer(os.path.dirname(path) or ".", path, [path])
        return path

    def restore(self, save_path: str | None, options: Any = None) -> CheckpointLoadStatus:
        """Restore the objects from the checkpoint at `save_path`: every value checked
        first, then all assigned (or none, if anything does not match); values of
        variables not made yet wait for them (NOTE(deferred-restore))."""
        if save_path is None:
            return CheckpointLoadStatus("(none)", set(), [], set())
        save_path = os.fspath(save_path)
        if os.path.isdir(save_path) and not bundle.exists(save_path):
            raise NotFoundError(f"tf.train.Checkpoint.restore: {save_path!r} is a directory; "
                                "pass a checkpoint's prefix (tf.train.latest_checkpoint(dir) "
                                "finds the newest).")
        values = bundle.read_bundle(save_path)
        if "save_counter/" + VALUE in values:
            self.save_counter  # restored with the rest
        g = walk(self._roots(), self._root)
        assign = []
        for key, var in g.variables.items():
            if key in values:
                value = values[key]
                if tuple(value.shape) != tuple(var.shape) or \
                        value.dtype != var.dtype.as_numpy_dtype:
                    raise ValueError(
                        f"tf.train.Checkpoint.restore: the value of {_name(key)!r} in "
                        f"{save_path!r} has shape {tuple(value.shape)} and dtype "
                        f"{_dt.as_dtype(value.dtype).name}; the variable has shape "
                        f"{tuple(var.shape)} and dtype {var.dtype.name}. Nothing was restored.")
                assign.append((var, value))
        missing = sorted(_name(k) for k in g.variables if k not in values)
        status = CheckpointLoadStatus(save_path, set(), missing, set())
        for var, value in assign:
            _set(var, value)
        status._matched = len(assign)
        for key in sorted(set(values) - set(g.variables)):
            if not _wait(key, values[key], g, status):
                status._unmatched.add(_name(key))
        return status

    def read(self, save_path: str, options: Any = None) -> CheckpointLoadStatus:
        """Restore a checkpoint written by `write` (the same as `restore`)."""
        return self.restore(save_path, options)


def _set(var: Variable, value: np.ndarray) -> None:
    """var.assign(value), without its copy where nothing records the write: `value` is a
    view of the checkpoint's freshly read buffer, which nothing else holds."""
    if recording():
        var.assign(value)
    else:
        with var._lock:
            var._value = value


def _name(key: str) -> str:
    return key[:-len(VALUE) - 1] if key.endswith("/" + VALUE) else key


def _wait(key: str, value: np.ndarray, g: Any, status: CheckpointLoadStatus) -> bool:
    """Keep a value whose variable does not exist yet for the object that will make it
    (NOTE(deferred-restore)): a layer's weight, or an optimizer's slot. False if no
    object of the graph can."""
    name = _name(key)
    if "/" + SLOT + "/" in name:
        var_path, rest = name.split("/" + SLOT + "/", 1)
        opt_path, _, slot_name = rest.rpartition("/")
        optimizer = g.objects.get(opt_path)
        if optimizer is None or not hasattr(optimizer, "_slots"):
            return False
        var = g.variables.get(f"{var_path}/{VALUE}")
        if var is None:
            layer_path, _, weight = var_path.rpartition("/")
            layer = g.objects.get(layer_path)
            if layer is None or not hasattr(layer, "add_weight"):
                return False
            owner: Any = (layer, weight)
        else:
            owner = var
        status._waiting.add(name)
        deferred.wait_slot(optimizer, owner, slot_name, value, status._restored(name))
        return True
    owner_path, _, attribute = name.rpartition("/")
    owner = g.objects.get(owner_path)  # a module's (a layer's) variable made later
    if owner is None or getattr(owner, "built", False) or \
            not hasattr(owner, "__dict__") or isinstance(vars(owner).get(attribute), Variable):
        return False
    status._waiting.add(name)
    deferred.wait(owner, attribute, value, status._restored(name))
    return True


# ------------------------------------------------------------------ the pointer file
def _read_pointer(directory: str, latest_filename: str | None = None) -> tuple[str | None, list]:
    """(the newest checkpoint, all listed) from the directory's ``checkpoint`` file, in
    TensorFlow's text format; (None, []) if there is none."""
    path = os.path.join(directory, latest_filename or _POINTER)
    if not os.path.isfile(path):
        return None, []
    latest, listed = None, []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = re.match(r'\s*(model_checkpoint_path|all_model_checkpoint_paths)\s*:\s*(".*")\s*$',
                         line)
            if m is None:
                continue
            try:
                value = json.loads(m.group(2))
            except ValueError:
                raise DataLossError(f"{path!r}: the line {line.strip()!r} is not a quoted "
                                    "path.") from None
            full = value if os.path.isabs(value) else os.path.join(directory, value)
            if m.group(1) == "model_checkpoint_path":
                latest = full
            else:
                listed.append(full)
    return latest, listed


def write_pointer(directory: str, latest: str, kept: list, timestamps: list | None = None) -> None:
    """Point `directory`'s ``checkpoint`` file at `latest` (listing `kept`), atomically."""
    def rel(p: str) -> str:
        return os.path.relpath(p, directory) if os.path.dirname(p) == directory.rstrip("/") \
            or os.path.dirname(os.path.abspath(p)) == os.path.abspath(directory) else p

    lines = [f"model_checkpoint_path: {json.dumps(rel(latest))}"]
    lines += [f"all_model_checkpoint_paths: {json.dumps(rel(p))}" for p in kept]
    lines += [f"all_model_checkpoint_timestamps: {t}" for t in (timestamps or [])]
    bundle.write_text(os.path.join(directory, _POINTER), "\n".join(lines) + "\n")


def latest_checkpoint(checkpoint_dir: str, latest_filename: str | None = None) -> str | None:
    """The newest checkpoint in `checkpoint_dir` (its ``checkpoint`` file's), or None.

    Example:
        >>> import tempfile
        >>> import tapeflow as tf
        >>> tf.train.latest_checkpoint(tempfile.mkdtemp()) is None
        True
    """
    latest, _ = _read_pointer(os.fspath(checkpoint_dir), latest_filename)
    return latest if latest is not None and bundle.exists(latest) else None


def _prefix(ckpt_dir_or_file: str) -> str:
    path = os.fspath(ckpt_dir_or_file)
    if os.path.isdir(path):
        latest = latest_checkpoint(path)
        if latest is None:
            raise NotFoundError(f"no checkpoint in the directory {path!r}.")
        return latest
    return path


def list_variables(ckpt_dir_or_file: str) -> list[tuple[str, list]]:
    """(name, shape) of each value in a checkpoint (or a directory's newest), sorted."""
    entries = bundle.read_index(_prefix(ckpt_dir_or_file))["entries"]
    return [(k, list(entries[k]["shape"])) for k in sorted(entries)]


def load_variable(ckpt_dir_or_file: str, name: str) -> np.ndarray:
    """The value of `name` (a key of `list_variables`) in a checkpoint, as an array."""
    prefix = _prefix(ckpt_dir_or_file)
    values = bundle.read_bundle(prefix, [name])
    if name not in values:
        raise NotFoundError(f"the checkpoint {prefix!r} has no value named {name!r}.")
    return values[name]


# ------------------------------------------------------------------ CheckpointManager
class CheckpointManager:
    """Numbered checkpoints in a directory, the newest `max_to_keep` kept, as TensorFlow's.

    Example:
        >>> import tempfile
        >>> import tapeflow as tf
        >>> step = tf.Variable(0)
        >>> manager = tf.train.CheckpointManager(tf.train.Checkpoint(step=step),
        ...                                      tempfile.mkdtemp(), max_to_keep=2)
        >>> for _ in range(3):
        ...     _ = step.assign_add(1); path = manager.save()
        >>> tuple(p.rsplit("-", 1)[1] for p in manager.checkpoints)
        ('2', '3')
    """

    def __init__(self, checkpoint: Checkpoint, directory: str, max_to_keep: int | None,
                 keep_checkpoint_every_n_hours: float | None = None,
                 checkpoint_name: str = "ckpt", step_counter: Any = None,
                 checkpoint_interval: int | None = None, init_fn: Callable | None = None) -> None:
        if not isinstance(checkpoint, Checkpoint):
            raise TypeError("CheckpointManager: `checkpoint` must be a tf.train.Checkpoint; got "
                            f"{type(checkpoint).__name__}.")
        if max_to_keep is not None and (not isinstance(max_to_keep, int) or max_to_keep < 1):
            raise ValueError(f"CheckpointManager: `max_to_keep` must be None or a positive int; "
                             f"got {max_to_keep!r}.")
        if checkpoint_interval is not None and step_counter is None:
            raise ValueError("CheckpointManager: `checkpoint_interval` needs a `step_counter`.")
        self._checkpoint = checkpoint
        self._directory = os.fspath(directory)
        self._max_to_keep = max_to_keep
        self._keep_hours = keep_checkpoint_every_n_hours
        self._prefix = os.path.join(self._directory, checkpoint_name)
        self._step_counter = step_counter
        self._interval = checkpoint_interval
        self._init_fn = init_fn
        self._last_step: int | None = None
        latest, listed = _read_pointer(self._directory)
        now = time.time()
        self._kept = [(p, now) for p in listed if bundle.exists(p)]
        if latest is not None and bundle.exists(latest) and latest not in (p for p, _ in self._kept):
            self._kept.append((latest, now))
        self._last_preserved = now

    @property
    def directory(self) -> str:
        return self._directory

    @property
    def checkpoint(self) -> Checkpoint:
        return self._checkpoint

    @property
    def checkpoint_interval(self) -> int | None:
        return self._interval

    @property
    def checkpoints(self) -> list[str]:
        """The kept checkpoints, oldest first."""
        return [p for p, _ in self._kept]

    @property
    def latest_checkpoint(self) -> str | None:
        """The newest kept checkpoint, or None."""
        return self._kept[-1][0] if self._kept else None

    def save(self, checkpoint_number: Any = None, check_interval: bool = True,
             options: Any = None) -> str | None:
        """Write the next checkpoint (``<directory>/<checkpoint_name>-N``), delete the
        oldest beyond `max_to_keep`, and update the ``checkpoint`` file; None where the
        step counter has not moved `checkpoint_interval` steps since the last save."""
        if self._interval is not None and check_interval:
            step = int(np.asarray(getattr(self._step_counter, "_value", self._step_counter)))
            if self._last_step is not None and step < self._last_step + self._interval:
                return None
            self._last_step = step
        counter = self._checkpoint.save_counter
        counter.assign_add(1)
        number = int(counter.numpy()) if checkpoint_number is None else int(
            np.asarray(getattr(checkpoint_number, "_value", checkpoint_number)))
        path = self._checkpoint.write(f"{self._prefix}-{number}")
        now = time.time()
        self._kept = [(p, t) for p, t in self._kept if p != path] + [(path, now)]
        doomed = []
        if self._max_to_keep is not None:
            while len(self._kept) > self._max_to_keep:
                old, stamp = self._kept.pop(0)
                if self._keep_hours is not None and \
                        stamp - self._last_preserved >= self._keep_hours * 3600:
                    self._last_preserved = stamp  # kept on disk, no longer managed
                    continue
                doomed.append(old)
        write_pointer(self._directory, path, self.checkpoints, [t for _, t in self._kept])
        for old in doomed:  # after the pointer no longer names them
            for suffix in (bundle.INDEX_SUFFIX, bundle.DATA_SUFFIX):
                try:
                    os.remove(old + suffix)
                except FileNotFoundError:
                    pass
        return path

    def restore_or_initialize(self) -> str | None:
        """Restore the newest checkpoint and return its path; without one, call `init_fn`
        (if given) and return None."""
        if self.latest_checkpoint is not None:
            self._checkpoint.restore(self.latest_checkpoint)
            return self.latest_checkpoint
        if self._init_fn is not None:
            self._init_fn()
        return None
