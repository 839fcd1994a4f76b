"""Jacobians at many inputs on a Dask cluster: `map_jacobian`.

`map_jacobian(f, X)` turns a Dask array of inputs, chunked along its batch axis, into a
Dask array of Jacobians. Each chunk is one vectorized replay of
``tf.function(tf.vmap(tf.jacobian(f)))`` on a worker. `f` travels to the workers
pickled by cloudpickle (tapeflow functions pickle without their traces, and a pickled
primitive is loaded by name), once per worker as a key of the Dask graph, and each worker
process traces its Jacobian once and keeps it in a cache here, keyed by a hash of the
pickled `f`: every later chunk on that worker, in this computation or a later one, is a
replay. Chunks shorter than the longest are padded with copies of their last example (the
padding's Jacobians are dropped), so every chunk has the shape of the one trace.

Dask is optional (``pip install 'tapeflow[dask]'``); ``import tapeflow`` never loads
this module. See docs/dask.md for clusters across machines and the throughput figures.
"""

from __future__ import annotations

import collections
import hashlib
import os
import socket
import tempfile
import threading
import types
from typing import Any, Callable

import numpy as np

try:
    import cloudpickle
    import dask
    import dask.array as da
except ImportError as e:  # the optional dependency is missing
    raise ImportError("tapeflow.dask needs Dask and cloudpickle, which tapeflow does not "
                      "install by default: pip install 'tapeflow[dask]' (on the client and on "
                      f"every worker). ({e})") from e

from .batching import vmap
from .graph.function import Function
from .graph.function import function as traced
from .saving.saved_model import contains_saved_model
from .saving.saved_model import load as load_saved
from .transforms import jacobian

__all__ = ["map_jacobian", "trace_stats"]

MAX_FUNCTIONS = 16  # traced Jacobians kept per process (least recently used dropped)
SEARCH_DEPTH = 6    # how deep an unpicklable object is looked for in f's references


class _Traced:
    """A worker's traced Jacobian of one pickled function, with its chunk count."""

    def __init__(self, jac: Function) -> None:
        self.jac = jac
        self.chunks = 0


# This process's traced Jacobians by the hash of the pickled (f, mode): on a Dask worker,
# one trace serves every chunk it computes.
_TRACED: collections.OrderedDict[str, _Traced] = collections.OrderedDict()
_TRACED_LOCK = threading.Lock()


def _batched_jacobian(f: Callable, mode: str) -> Callable:
    """[n, *in] -> [n, *out, *in]: f's Jacobian at each example, in one vectorized pass."""
    def batched_jacobian(xs: Any) -> Any:
        return vmap(jacobian(f, mode=mode))(xs)

    return batched_jacobian


class _Saved:
    """A SavedModel directory's files, sent to the workers as data, and the name of the
    traced function in it that is `f`: a worker loads it (saving/saved_model.py) with
    tapeflow alone, none of the code that defined it."""

    def __init__(self, directory: str, name: str | None) -> None:
        self.files: dict[str, bytes] = {}
        for base, _, names in os.walk(directory):
            for file in names:
                path = os.path.join(base, file)
                with open(path, "rb") as fh:
                    self.files[os.path.relpath(path, directory)] = fh.read()
        self.name = name
        self.directory = directory

    def load(self) -> Callable:
        """The function, loaded from a copy of the files (a worker has no shared disk)."""
        with tempfile.TemporaryDirectory() as tmp:
            for rel, data in self.files.items():
                path = os.path.join(tmp, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                with open(path, "wb") as fh:
                    fh.write(data)
            loaded = load_saved(tmp)
        if self.name is not None:
            fn = getattr(loaded, self.name, None)
            if fn is None:
                raise ValueError(f"map_jacobian: the SavedModel at {self.directory!r} has no "
                                 f"function {self.name!r}.")
        elif "serving_default" in loaded.signatures:
            fn = loaded.signatures["serving_default"]._call
        elif "__call__" in vars(loaded):
            fn = vars(loaded)["__call__"]
        else:
            raise ValueError(f"map_jacobian: the SavedModel at {self.directory!r} has no serving "
                             "signature and no __call__: name its function with `function=`.")
        return fn


def _per_example(fn: Callable, rank: int) -> Callable:
    """A loaded function of one example: itself, or, where its input_signature takes a
    batch (one more axis), it called on a batch of one."""
    specs = getattr(getattr(fn, "_function", fn), "_input_signature", None)
    if specs and len(specs) == 1 and specs[0].shape.rank == rank + 1:
        return lambda x: fn(x[None])[0]
    return fn


def _traced(token: str, payload: bytes) -> _Traced:
    with _TRACED_LOCK:  # threads of one worker share the trace
        entry = _TRACED.get(token)
        if entry is None:
            try:
                f, mode = cloudpickle.loads(payload)
                if isinstance(f, tuple):  # a SavedModel's function: (_Saved, example rank)
                    f = _per_example(f[0].load(), f[1])
            except Exception as e:
                raise RuntimeError(
                    f"map_jacobian: f could not be loaded on the Dask worker at "
                    f"{socket.gethostname()} (process {os.getpid()}): {type(e).__name__}: {e}. "
                    "Workers load f with cloudpickle: tapeflow and every module f refers to by "
                    "name (the module f is defined in, unless it is __main__) must be installed "
                    "on every worker, or sent by value with "
                    "cloudpickle.register_pickle_by_value(module).") from e
            entry = _TRACED[token] = _Traced(traced(_batched_jacobian(f, mode)))
        _TRACED.move_to_end(token)
        while len(_TRACED) > MAX_FUNCTIONS:
            _TRACED.popitem(last=False)
        entry.chunks += 1
        return entry


def _jacobian_chunk(block: np.ndarray, payload: bytes, token: str, size: int,
                    dtype: np.dtype, tail: tuple) -> np.ndarray:
    """The Jacobians of one chunk of examples (a task of the graph `map_jacobian` builds)."""
    n = block.shape[0]
    if n == 0:
        return np.zeros((0,) + tail, dtype)
    entry = _traced(token, payload)
    if n < size:  # one trace per worker: every chunk has the longest chunk's shape
        block = np.concatenate([block, np.repeat(block[-1:], size - n, axis=0)])
    return entry.jac(block).numpy()[:n]


def trace_stats() -> dict[str, dict[str, int]]:
    """What this process has traced for `map_jacobian`: per function (the first 16 hex
    digits of the hash of the pickled `f` and mode), how many times its Jacobian was traced
    and how many chunks it computed. On a cluster, ``client.run(tapeflow.dask.trace_stats)``
    asks every worker: one trace per worker, however many chunks, is the expected answer.

    Example:
        >>> import numpy as np, dask.array as da
        >>> from tapeflow.dask import map_jacobian, trace_stats
        >>> X = da.from_array(np.arange(6.).reshape(3, 2), chunks=(1, 2))
        >>> before = trace_stats()
        >>> _ = map_jacobian(lambda x: 3. * x + 1., X).compute(scheduler="sync")
        >>> [s for token, s in trace_stats().items() if s != before.get(token)]
        [{'traces': 1, 'chunks': 3}]
    """
    with _TRACED_LOCK:
        return {token[:16]: {"traces": e.jac.experimental_get_tracing_count(),
                             "chunks": e.chunks} for token, e in _TRACED.items()}


# ---------------------------------------------------------------------------- checks
def _references(obj: Any) -> list[tuple[str, Any]]:
    """What pickling `obj` pickles in turn, each with a label for an error message."""
    if isinstance(obj, Function):
        return [("its Python function", obj.python_function)]
    if isinstance(obj, types.MethodType):
        return [("the bound object", obj.__self__), ("the method", obj.__func__)]
    if isinstance(obj, types.FunctionType):
        code = obj.__code__
        out = [(f"closure variable {name!r}", cell.cell_contents)
               for name, cell in zip(code.co_freevars, obj.__closure__ or (), strict=True)
               if cell.cell_contents is not None]
        out += [(f"global {name!r}", obj.__globals__[name]) for name in _global_names(code)
                if name in obj.__globals__]
        out += [("a default argument", d) for d in obj.__defaults__ or ()]
        return out + [(f"default argument {k!r}", d) for k, d in (obj.__kwdefaults__ or {}).items()]
    if hasattr(obj, "func") and hasattr(obj, "args") and hasattr(obj, "keywords"):  # partial
        return ([("the wrapped function", obj.func)] + [("an argument", a) for a in obj.args]
                + [(f"argument {k!r}", v) for k, v in obj.keywords.items()])
    if isinstance(obj, (list, tuple, set, frozenset)):
        return [(f"item {i}", v) for i, v in enumerate(obj)]
    if isinstance(obj, dict):
        return [(f"item {k!r}", v) for k, v in obj.items()]
    if isinstance(obj, types.ModuleType):
        return []  # pickled by name
    return [(f"attribute {k!r}", v) for k, v in getattr(obj, "__dict__", {}).items()]


def _global_names(code: types.CodeType) -> list[str]:
    names = list(code.co_names)
    for const in code.co_consts:  # nested functions and comprehensions
        if isinstance(const, types.CodeType):
            names += _global_names(const)
    return names


def _picklable(obj: Any) -> bool:
    try:
        cloudpickle.dumps(obj)
    except Exception:  # noqa: BLE001 - any failure of pickling is what is looked for
        return False
    return True


def _unpicklable(obj: Any, path: list[str], seen: set[int]) -> tuple[list[str], Any] | None:
    """The deepest reference of `obj` that does not pickle (a path of labels, the object)."""
    if len(path) > SEARCH_DEPTH or id(obj) in seen:
        return None
    seen.add(id(obj))
    for label, value in _references(obj):
        if not _picklable(value):
            return _unpicklable(value, path + [label], seen) or (path + [label], value)
    return None


def _pickle(f: Callable, mode: str) -> bytes:
    """(f, mode) pickled for the workers, or a TypeError naming what does not pickle."""
    try:
        return cloudpickle.dumps((f, mode))
    except Exception as e:
        found = _unpicklable(f, [], set())
        name = getattr(f, "__qualname__", type(f).__name__)
        if found:
            kind = type(found[1])
            kind = kind.__qualname__ if kind.__module__ == "builtins" else \
                f"{kind.__module__}.{kind.__qualname__}"
            what = f"refers to an object that cannot be pickled: {' -> '.join(found[0])}, a {kind}"
        else:
            what = "cannot be pickled"
        raise TypeError(
            f"map_jacobian: f ({name}) {what} ({type(e).__name__}: {e}). Dask pickles f (with "
            "cloudpickle) to send it to the workers: make f refer only to values that pickle "
            "(arrays, tensors, variables, tapeflow functions, modules): create that object "
            "inside f instead of closing over it, or pass what f needs from it as "
            "arrays.") from e


def _as_dask_array(X: Any, chunk_size: int) -> "da.Array":
    if isinstance(X, da.Array):
        return X
    if dask.is_dask_collection(X):
        raise TypeError(f"map_jacobian: X must be a Dask array (or a NumPy array); got a "
                        f"{type(X).__name__}: convert it, e.g. with .to_dask_array(lengths=True).")
    x = np.asarray(X)
    if x.ndim == 0:
        raise ValueError("map_jacobian: X is a scalar; it needs a batch axis (axis 0).")
    if not (isinstance(chunk_size, (int, np.integer)) and chunk_size > 0):
        raise ValueError(f"map_jacobian: chunk_size must be a positive int; got {chunk_size!r}.")
    return da.from_array(x, chunks=(int(chunk_size),) + x.shape[1:])


def _check_chunks(X: "da.Array") -> None:
    if X.ndim == 0:
        raise ValueError("map_jacobian: X is a scalar; it needs a batch axis (axis 0).")
    if any(np.isnan(c) for c in X.chunks[0]):
        raise ValueError("map_jacobian: X has unknown chunk sizes along axis 0 (NaN); "
                         "call X.compute_chunk_sizes() first.")
    split = [axis for axis in range(1, X.ndim) if len(X.chunks[axis]) > 1]
    if split:
        fix = ", ".join(["0: 'auto'"] + [f"{axis}: -1" for axis in range(1, X.ndim)])
        raise ValueError(f"map_jacobian: X is chunked along axis {split[0]} as well as the batch "
                         f"axis (chunks {X.chunks}); each chunk must hold whole examples, so "
                         f"chunk X along axis 0 only: X.rechunk({{{fix}}}).")
    if not np.issubdtype(X.dtype, np.inexact):
        raise TypeError(f"map_jacobian: X has dtype {X.dtype}; Jacobians need floating-point "
                        "inputs: X.astype('float64') (or 'float32').")


def _probe(f: Callable, mode: str, X: "da.Array") -> np.ndarray:
    """One example's Jacobian, computed here: its shape and dtype are the result's."""
    jac = _batched_jacobian(f, mode)
    try:
        with np.errstate(all="ignore"):  # zero is not the user's input: no warnings about it
            return jac(np.zeros((1,) + X.shape[1:], X.dtype)).numpy()
    except Exception:  # noqa: BLE001 - f may be undefined at zero: try a real example
        pass
    first = np.asarray(X[:1].compute())
    try:
        return jac(first).numpy()
    except Exception as e:
        raise ValueError(f"map_jacobian: f's Jacobian fails at the first example of X (run "
                         f"once on the client to learn its shape): {type(e).__name__}: "
                         f"{e}") from e


def map_jacobian(f: Callable | str, X: Any, *, mode: str = "auto",
                 chunk_size: int = 1024, function: str | None = None) -> "da.Array":
    """The Jacobian of the per-example function `f` at every example of `X` (axis 0 the
    batch), as a Dask array ``J`` with ``J[i] = tf.jacobian(f)(X[i])`` of shape
    ``[n, *f(x).shape, *x.shape]``, chunked as `X` along axis 0: each chunk is one vectorized
    replay of ``tf.function(tf.vmap(tf.jacobian(f, mode=mode)))`` on a Dask worker, traced
    once per worker process. `X` must be chunked along axis 0 only (a ValueError says how to
    rechunk); a NumPy array is wrapped with ``da.from_array`` in chunks of `chunk_size`
    examples. `f` is pickled here, before anything is submitted (a TypeError names what does
    not pickle), and run once on one example of zeros (or on ``X[0]``, where it fails at
    zeros) to learn the result's shape and dtype. Nothing else is computed until ``J`` is:
    with a ``distributed.Client`` active, on its cluster.

    `f` may instead be the path of a SavedModel directory (`tf.saved_model.save`): its
    files travel to the workers as data, and each loads the function with tapeflow alone,
    none of the code that defined it. The function is the one named by `function` (an
    attribute of the saved object), else the serving signature's, else its `__call__`; it
    takes one example, or a batch (an input_signature of one more axis, called on a batch
    of one).

    Example:
        >>> import numpy as np, dask.array as da, tapeflow as tf
        >>> from tapeflow.dask import map_jacobian
        >>> X = da.from_array(np.array([[1., 2.], [3., 4.], [5., 6.]]), chunks=(2, 2))
        >>> J = map_jacobian(lambda x: tf.reduce_sum(x * x), X)   # gradients: [3, 2]
        >>> J.chunks
        ((2, 1), (2,))
        >>> J.compute()
        array([[ 2.,  4.],
               [ 6.,  8.],
               [10., 12.]])
    """
    if mode not in ("auto", "forward", "fwd", "reverse", "rev"):
        raise ValueError(f"map_jacobian: mode must be 'auto', 'forward' or 'reverse'; "
                         f"got {mode!r}.")
    X = _as_dask_array(X, chunk_size)
    _check_chunks(X)
    if isinstance(f, (str, os.PathLike)):
        if not contains_saved_model(f):
            raise ValueError(f"map_jacobian: f is the path {os.fspath(f)!r}, which holds no "
                             "SavedModel (tf.saved_model.save writes one).")
        saved = _Saved(os.fspath(f), function)
        payload = cloudpickle.dumps(((saved, X.ndim - 1), mode))
        f = _per_example(saved.load(), X.ndim - 1)
    elif not callable(f):
        raise TypeError(f"map_jacobian: f must be a function of one example or a SavedModel "
                        f"directory; got {f!r}.")
    else:
        payload = _pickle(f, mode)
    token = hashlib.sha256(payload).hexdigest()
    probe = _probe(f, mode, X)
    out_shape = probe.shape[1:probe.ndim - (X.ndim - 1)]
    # The pickled f is one key of the graph: each worker fetches it once, not once per chunk.
    shared = dask.delayed(payload, name=f"tapeflow-function-{token[:16]}")
    size = max(X.chunks[0], default=0)
    return da.map_blocks(_jacobian_chunk, X, shared, token, size, probe.dtype, probe.shape[1:],
                         new_axis=list(range(1, 1 + len(out_shape))),
                         chunks=(X.chunks[0],) + tuple((d,) for d in out_shape)
                         + X.chunks[1:],
                         dtype=probe.dtype, meta=np.empty((0,) * probe.ndim, probe.dtype),
                         name=f"tapeflow-jacobian-{dask.base.tokenize(token, X.name)}")
