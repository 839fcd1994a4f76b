"""tf.data: input pipelines of NumPy-backed tensors, lazy, by TensorFlow's names.

NOTE(datasets): a `Dataset` is a recipe, not data: `_elements()` makes a new Python
iterator over its elements (nested tuples and dicts of NumPy arrays), each
transformation wrapping its input's, so nothing is computed before iteration and each
iteration (an epoch) starts over. Elements become tensors where the user receives them.
Sources copy what they are given (a NumPy array written to later does not change the
dataset, as TensorFlow's constant does not) and hand out read-only views of the copy.
`map` and `filter` run the user's function as a traced `tf.function` (TensorFlow traces
it too: its Python runs once per element signature, and the graph for each element);
`shuffle` keeps TensorFlow's buffer semantics (a buffer of `buffer_size` elements, one
drawn at random and replaced by the next input) and seeds: with `tf.random.set_seed`
the orders repeat, each epoch its own unless ``reshuffle_each_iteration=False``.
`prefetch` is the identity (the elements are in memory already) and `cache` keeps them
in memory. Iterated by a `tf.function`'s own code, a dataset hands the trace probe
elements, and the loop is read off the trace (NOTE(dataset-loops) in
graph/dataset_loops.py); iterated inside a tape or a loop body in the trace, it makes
the function run its Python eagerly (the loop over its elements is Python's, each
call), where nothing was recorded yet that a second run would repeat.
"""

from __future__ import annotations

import functools
import itertools
import warnings
from typing import Any, Callable, Iterator

import numpy as np

from . import dtypes as _dt
from .graph.function import function
from .graph.signature import TensorSpec
from .graph.dataset_loops import iterated_in_trace
from .ops.random import _seeds
from .tensor import Tensor, TensorBase, TensorShape, convert_to_tensor

__all__ = ["Dataset", "AUTOTUNE", "INFINITE_CARDINALITY", "UNKNOWN_CARDINALITY",
           "experimental"]

AUTOTUNE = -1
INFINITE_CARDINALITY = -1
UNKNOWN_CARDINALITY = -2


# ------------------------------------------------------------------ structures
def _is_structure(x: Any) -> bool:
    """tf.data's structures: tuples (namedtuples too) and dicts; a list is one tensor."""
    return isinstance(x, (tuple, dict))


def _map(fn: Callable[[Any], Any], x: Any) -> Any:
    if isinstance(x, dict):
        return {k: _map(fn, v) for k, v in x.items()}
    if isinstance(x, tuple):
        items = [_map(fn, v) for v in x]
        return type(x)(*items) if hasattr(x, "_fields") else tuple(items)
    return fn(x)


def _leaves(x: Any) -> list:
    if isinstance(x, dict):
        return [leaf for k in x for leaf in _leaves(x[k])]
    if isinstance(x, tuple):
        return [leaf for v in x for leaf in _leaves(v)]
    return [x]


def _zip_map(fn: Callable[..., Any], first: Any, *rest: Any) -> Any:
    """`fn` over the leaves of structures of one shape."""
    if isinstance(first, dict):
        return {k: _zip_map(fn, first[k], *[r[k] for r in rest]) for k in first}
    if isinstance(first, tuple):
        items = [_zip_map(fn, *parts) for parts in zip(first, *rest)]
        return type(first)(*items) if hasattr(first, "_fields") else tuple(items)
    return fn(first, *rest)


def _array(x: Any, what: str) -> np.ndarray:
    """A value as a read-only array with TensorFlow's dtype (Python floats: float32)."""
    if isinstance(x, TensorBase):
        x = x.value() if hasattr(x, "assign") else x
        a = np.array(x._value)
    elif isinstance(x, np.ndarray):
        a = np.array(x)
    else:
        try:
            a = np.array(convert_to_tensor(x)._value)
        except (TypeError, ValueError) as e:
            raise TypeError(f"{what}: cannot make a tensor of {x!r:.80} ({e}); a dataset "
                            "holds tensors, arrays and Python numbers, in tuples and dicts "
                            "(a list is one tensor, as TensorFlow's).") from None
    a.setflags(write=False)
    return a


def _tensor(a: Any) -> Tensor:
    return Tensor(a)


class _Row:
    """Element `i` of a from_tensor_slices source, not sliced yet: a batch of rows of one
    source is one gather per component (NOTE(datasets)), not a stack of slices."""

    __slots__ = ("source", "i")

    def __init__(self, source: Any, i: int) -> None:
        self.source = source
        self.i = i


def _value(element: Any) -> Any:
    """An element with its rows sliced (a structure of arrays)."""
    if type(element) is _Row:
        i = element.i
        return _map(lambda a: a[i], element.source)
    if isinstance(element, (tuple, dict)):
        return _map(_value, element)
    return element


def _spec_of(element: Any) -> Any:
    return _map(lambda a: TensorSpec(np.shape(a), _dt.from_numpy(np.asarray(a).dtype)), element)


def _relaxed(spec: Any, other: Any) -> Any:
    """Two specs' shapes with None where they differ (the spec of both)."""
    def relax(s: TensorSpec, t: TensorSpec) -> TensorSpec:
        if s.shape.rank != t.shape.rank:
            return TensorSpec(None, s.dtype)
        if s.shape.rank is None:
            return s
        return TensorSpec([d if d == e else None for d, e in zip(s.shape, t.shape)], s.dtype)
    return _zip_map(relax, spec, other)


# ------------------------------------------------------------------ the dataset
class Dataset:
    """A lazy pipeline of elements (NOTE(datasets)), TensorFlow's `tf.data.Dataset`.

    Example:
        >>> import numpy as np, tapeflow as tf
        >>> ds = tf.data.Dataset.from_tensor_slices((np.arange(6.0), np.arange(6) % 2))
        >>> ds = ds.map(lambda x, y: (x * 2.0, y)).batch(4)
        >>> [tuple(tuple(b.numpy().tolist()) for b in batch) for batch in ds]
        [((0.0, 2.0, 4.0, 6.0), (0, 1, 0, 1)), ((8.0, 10.0), (0, 1))]
    """

    def __init__(self, elements: Callable[[], Iterator], spec: Any, cardinality: int,
                 name: str = "Dataset") -> None:
        self._make = elements
        self._spec = spec  # a structure of TensorSpecs, or a function giving it
        self._cardinality = cardinality
        self._name = name

    # ---------------------------------------------------------------- sources
    @staticmethod
    def from_tensor_slices(tensors: Any, name: str | None = None) -> "Dataset":
        """The slices of `tensors` (a structure of tensors with one first dimension) along
        their first axis, one element each."""
        arrays = _map(lambda x: _array(x, "from_tensor_slices"), tensors)
        leaves = _leaves(arrays)
        sizes = {a.shape[0] if a.ndim else None for a in leaves}
        if None in sizes:
            raise ValueError("from_tensor_slices: every component needs a first dimension to "
                             "slice; got a scalar.")
        if len(sizes) != 1:
            raise ValueError(f"from_tensor_slices: the components have first dimensions "
                             f"{sorted(sizes)}; they must all have the same size.")
        n = sizes.pop()

        def elements() -> Iterator:
            return map(_Row, itertools.repeat(arrays, n), range(n))

        return Dataset(elements, _map(lambda a: TensorSpec(a.shape[1:], _dt.from_numpy(a.dtype)),
                                      arrays), n, "TensorSliceDataset")

    @staticmethod
    def from_tensors(tensors: Any, name: str | None = None) -> "Dataset":
        """One element: `tensors` itself."""
        arrays = _map(lambda x: _array(x, "from_tensors"), tensors)
        return Dataset(lambda: iter([arrays]), _spec_of(arrays), 1, "TensorDataset")

    @staticmethod
    def range(*args: int, dtype: Any = _dt.int64, name: str | None = None) -> "Dataset":
        """The integers of Python's ``range(*args)``, as scalars of `dtype` (int64)."""
        r = range(*args)
        np_dtype = _dt.as_dtype(dtype)._np

        def elements() -> Iterator:
            for v in r:
                a = np.array(v, np_dtype)
                a.setflags(write=False)
                yield a

        return Dataset(elements, TensorSpec([], dtype), len(r), "RangeDataset")

    @staticmethod
    def from_generator(generator: Callable, output_types: Any = None, output_shapes: Any = None,
                       args: Any = None, output_signature: Any = None,
                       name: str | None = None) -> "Dataset":
        """The elements `generator(*args)` yields (called anew for each iteration), each
        checked against `output_signature` (TensorSpecs; or `output_types` and
        `output_shapes`) and converted to its dtypes."""
        if not callable(generator):
            raise TypeError(f"from_generator: `generator` must be a callable that returns an "
                            f"iterator; got {generator!r:.80}.")
        if output_signature is None:
            if output_types is None:
                raise TypeError("from_generator: pass `output_signature` (a structure of "
                                "tf.TensorSpec), or `output_types` (and `output_shapes`).")
            shapes = output_shapes if output_shapes is not None else \
                _map(lambda _: None, output_types)
            output_signature = _zip_map(lambda t, s: TensorSpec(s, t), output_types, shapes)
        spec = output_signature
        call_args = tuple(args or ())

        def check(value: Any, s: TensorSpec) -> np.ndarray:
            try:
                a = np.array(convert_to_tensor(value, dtype=s.dtype)._value)
            except (TypeError, ValueError) as e:
                raise TypeError(f"from_generator: the generator yielded {value!r:.80}, which is "
                                f"not a {s.dtype.name} tensor ({e}).") from None
            if not s.shape.is_compatible_with(a.shape):
                raise ValueError(f"from_generator: the generator yielded a {s.dtype.name} of "
                                 f"shape {a.shape}; the output_signature says {s.shape}.")
            a.setflags(write=False)
            return a

        def elements() -> Iterator:
            for value in generator(*call_args):
                if not _is_structure(spec) and _is_structure(value):
                    raise TypeError(f"from_generator: the generator yielded a structure "
                                    f"({type(value).__name__}); the output_signature is one "
                                    "TensorSpec.")
                try:
                    yield _zip_map(check, value, spec) if _is_structure(spec) else \
                        check(value, spec)
                except (KeyError, TypeError) as e:
                    if "from_generator" in str(e):
                        raise
                    raise TypeError(f"from_generator: the generator yielded {value!r:.80}, "
                                    f"whose structure is not the output_signature's "
                                    f"({spec}).") from None

        return Dataset(elements, spec, UNKNOWN_CARDINALITY, "FlatMapDataset")

    @staticmethod
    def zip(*datasets: Any, name: str | None = None) -> "Dataset":
        """Elements of several datasets side by side (a tuple, or the structure given),
        as long as the shortest."""
        structure = datasets[0] if len(datasets) == 1 and _is_structure(datasets[0]) \
            else tuple(datasets)
        parts = _leaves(structure)
        if not all(isinstance(d, Dataset) for d in parts):
            raise TypeError("Dataset.zip: expected datasets (or a tuple or dict of them).")

        def elements() -> Iterator:
            iterators = [map(_value, d._elements()) for d in parts]
            for values in zip(*iterators):
                it = iter(values)
                yield _map(lambda _: next(it), structure)

        cards = [d._cardinality for d in parts]
        known = [c for c in cards if c >= 0]
        card = min(known) if known else (INFINITE_CARDINALITY if all(
            c == INFINITE_CARDINALITY for c in cards) else UNKNOWN_CARDINALITY)
        return Dataset(elements, lambda: _map(lambda d: d.element_spec, structure), card,
                       "ZipDataset")

    # ---------------------------------------------------------------- iteration
    def _elements(self) -> Iterator:
        return self._make()

    def __iter__(self) -> Iterator:
        probe = iterated_in_trace(self, _values)  # a tf.function's trace: NOTE(dataset-loops)
        if probe is not None:
            return probe
        return map(functools.partial(_map, _tensor), _values(self))

    def as_numpy_iterator(self) -> Iterator:
        """The elements as NumPy arrays (copies the caller may write to)."""
        return (_map(np.array, _value(element)) for element in self._elements())

    @property
    def element_spec(self) -> Any:
        """The structure of TensorSpecs of an element (None where sizes vary)."""
        if callable(self._spec):
            self._spec = self._spec()
        return self._spec

    def cardinality(self) -> Tensor:
        """The number of elements (INFINITE_CARDINALITY, or UNKNOWN_CARDINALITY where it is
        known only by iterating), as an int64 tensor."""
        return Tensor(np.array(self._cardinality, np.int64))

    def __len__(self) -> int:
        if self._cardinality == INFINITE_CARDINALITY:
            raise TypeError("The dataset is infinite.")
        if self._cardinality < 0:
            raise TypeError("The dataset length is unknown.")
        return self._cardinality

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        return f"<_{self._name} element_spec={self.element_spec}>"

    def options(self) -> dict:
        return {}

    def with_options(self, options: Any, name: str | None = None) -> "Dataset":
        return self

    # ---------------------------------------------------------------- transformations
    def _then(self, elements: Callable[[], Iterator], spec: Any, cardinality: int,
              name: str) -> "Dataset":
        return Dataset(elements, spec, cardinality, name)

    def map(self, map_func: Callable, num_parallel_calls: Any = None, deterministic: Any = None,
            name: str | None = None) -> "Dataset":
        """`map_func` of each element (its components as arguments where it is a tuple),
        run as a traced tf.function: its Python runs once per element signature."""
        traced = _traced(map_func, "map")

        def elements() -> Iterator:
            for element in self._elements():
                out = _call(traced, _value(element))
                yield _map(lambda x: _array(x, "map: map_func's result"), out)

        def spec() -> Any:
            first = next(iter(elements()), None)
            return None if first is None else _spec_of(first)

        return self._then(elements, spec, self._cardinality, "MapDataset")

    def filter(self, predicate: Callable, name: str | None = None) -> "Dataset":
        """The elements for which `predicate` (a scalar boolean tensor) is true."""
        traced = _traced(predicate, "filter")

        def elements() -> Iterator:
            for element in self._elements():
                keep = _call(traced, _value(element))
                keep = np.asarray(keep._value if isinstance(keep, TensorBase) else keep)
                if keep.shape != () or keep.dtype != np.bool_:
                    raise TypeError(f"filter: the predicate must return a scalar bool tensor; "
                                    f"got {keep.dtype} of shape {keep.shape}.")
                if keep:
                    yield element

        return self._then(elements, lambda: self.element_spec, UNKNOWN_CARDINALITY if
                          self._cardinality >= 0 else self._cardinality, "FilterDataset")

    def batch(self, batch_size: int, drop_remainder: bool = False, num_parallel_calls: Any = None,
              deterministic: Any = None, name: str | None = None) -> "Dataset":
        """Consecutive elements stacked, `batch_size` at a time (the last batch shorter
        unless `drop_remainder`). Elements whose shapes differ cannot stack: a ValueError
        says which (padded_batch pads them)."""
        size = _count(batch_size, "batch", "batch_size", 1)

        def elements() -> Iterator:
            for group in _groups(self._elements(), size, drop_remainder):
                first = group[0]
                if type(first) is _Row and all(type(e) is _Row and e.source is first.source
                                               for e in group):
                    rows = np.fromiter((e.i for e in group), np.intp, len(group))
                    yield _map(lambda a: _frozen(a[rows]), first.source)
                else:
                    yield _zip_map(lambda *xs: _stack(xs, "batch"), *map(_value, group))

        return self._then(elements, lambda: _map(
            lambda s: TensorSpec([size if drop_remainder else None] + (
                list(s.shape) if s.shape.rank is not None else []), s.dtype)
            if s.shape.rank is not None else TensorSpec(None, s.dtype), self.element_spec),
            _batched_cardinality(self._cardinality, size, drop_remainder), "BatchDataset")

    def padded_batch(self, batch_size: int, padded_shapes: Any = None, padding_values: Any = None,
                     drop_remainder: bool = False, name: str | None = None) -> "Dataset":
        """Like `batch`, each component padded at the end of every axis to the largest in
        its batch (or to `padded_shapes`, None for the largest), with `padding_values`
        (0 by default)."""
        size = _count(batch_size, "padded_batch", "batch_size", 1)

        def elements() -> Iterator:
            for group in _groups(self._elements(), size, drop_remainder):
                group = [_value(e) for e in group]
                shapes = padded_shapes if padded_shapes is not None else \
                    _map(lambda _: None, group[0])
                values = padding_values if padding_values is not None else \
                    _map(lambda _: 0, group[0])
                yield _zip_map(lambda s, v, *xs: _pad_stack(xs, s, v), shapes, values, *group)

        return self._then(elements, lambda: _map(
            lambda s: TensorSpec([size if drop_remainder else None] + [None] * (
                s.shape.rank or 0), s.dtype), self.element_spec),
            _batched_cardinality(self._cardinality, size, drop_remainder), "PaddedBatchDataset")

    def unbatch(self, name: str | None = None) -> "Dataset":
        """Each element split along its first axis into elements."""
        def elements() -> Iterator:
            for element in map(_value, self._elements()):
                leaves = _leaves(element)
                sizes = {np.shape(a)[0] if np.ndim(a) else None for a in leaves}
                if None in sizes or len(sizes) != 1:
                    raise ValueError(f"unbatch: the components have first dimensions "
                                     f"{sorted(sizes, key=str)}; they need one same size.")
                for i in range(sizes.pop()):
                    yield _map(lambda a: a[i], element)

        return self._then(elements, lambda: _map(
            lambda s: TensorSpec(list(s.shape)[1:], s.dtype), self.element_spec),
            UNKNOWN_CARDINALITY, "UnbatchDataset")

    def shuffle(self, buffer_size: int, seed: int | None = None,
                reshuffle_each_iteration: bool | None = None,
                name: str | None = None) -> "Dataset":
        """The elements in a random order, through a buffer of `buffer_size` (TensorFlow's
        semantics: the buffer fills, then each output is a random element of it, replaced
        by the next input). Seeded by `seed` and `tf.random.set_seed`; each iteration
        draws a new order unless ``reshuffle_each_iteration=False``."""
        size = _count(buffer_size, "shuffle", "buffer_size", 1)
        again = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        # One seed per shuffle, drawn now: the same program after the same set_seed
        # shuffles the same; each epoch's order from its own draw.
        base = _seeds.rng.integers(2 ** 63) if seed is None else \
            [_seeds.base(), int(seed) % 2 ** 63]
        orders = np.random.default_rng(base)
        first = int(orders.integers(2 ** 63))

        def elements() -> Iterator:
            draws = _Uniform(np.random.default_rng(int(orders.integers(2 ** 63)) if again
                                                   else first))
            it = self._elements()
            buffer = list(itertools.islice(it, size))
            following = next(it, _END)
            if following is _END:
                # The buffer holds every element: drained at random, each output is a
                # uniform pick among those left, which a uniform permutation is.
                yield from map(buffer.__getitem__, draws.rng.permutation(len(buffer)).tolist())
                return
            for element in itertools.chain((following,), it):
                k = draws.below(size)
                yield buffer[k]
                buffer[k] = element
            while buffer:
                k = draws.below(len(buffer))
                buffer[k], buffer[-1] = buffer[-1], buffer[k]
                yield buffer.pop()

        return self._then(elements, lambda: self.element_spec, self._cardinality,
                          "ShuffleDataset")

    def repeat(self, count: int | None = None, name: str | None = None) -> "Dataset":
        """The elements `count` times over (forever for None or -1), each pass a new
        iteration of this dataset (a shuffle before it reshuffles)."""
        times = -1 if count is None else int(count)

        def elements() -> Iterator:
            passes = itertools.count() if times < 0 else range(times)
            for _ in passes:
                empty = True
                for element in self._elements():
                    empty = False
                    yield element
                if empty:
                    return

        card = self._cardinality  # as TensorFlow counts (forever of unknown: infinite)
        if times < 0:
            card = 0 if card == 0 else INFINITE_CARDINALITY
        elif times == 0:
            card = 0
        elif card >= 0:
            card *= times
        return self._then(elements, lambda: self.element_spec, card, "RepeatDataset")

    def take(self, count: int, name: str | None = None) -> "Dataset":
        """The first `count` elements (all for -1)."""
        count = int(count)

        def elements() -> Iterator:
            return self._elements() if count < 0 else itertools.islice(self._elements(), count)

        card = self._cardinality
        if count >= 0:
            card = count if card == INFINITE_CARDINALITY else (
                min(card, count) if card >= 0 else UNKNOWN_CARDINALITY)
        return self._then(elements, lambda: self.element_spec, card, "TakeDataset")

    def skip(self, count: int, name: str | None = None) -> "Dataset":
        """The elements after the first `count` (none for -1)."""
        count = int(count)

        def elements() -> Iterator:
            if count < 0:
                return iter(())
            return itertools.islice(self._elements(), count, None)

        card = self._cardinality
        if count < 0:
            card = 0
        elif card >= 0:
            card = max(card - count, 0)
        return self._then(elements, lambda: self.element_spec, card, "SkipDataset")

    def enumerate(self, start: int = 0, name: str | None = None) -> "Dataset":
        """(index, element) pairs, the index an int64 from `start`."""
        def elements() -> Iterator:
            for i, element in enumerate(self._elements(), start):
                index = np.array(i, np.int64)
                index.setflags(write=False)
                yield (index, element)

        return self._then(elements, lambda: (TensorSpec([], _dt.int64), self.element_spec),
                          self._cardinality, "EnumerateDataset")

    def concatenate(self, dataset: "Dataset", name: str | None = None) -> "Dataset":
        """This dataset's elements, then `dataset`'s."""
        def elements() -> Iterator:
            return itertools.chain(self._elements(), dataset._elements())

        a, b = self._cardinality, dataset._cardinality
        card = a + b if a >= 0 and b >= 0 else (
            INFINITE_CARDINALITY if INFINITE_CARDINALITY in (a, b) else UNKNOWN_CARDINALITY)
        return self._then(elements, lambda: _relaxed(self.element_spec, dataset.element_spec),
                          card, "ConcatenateDataset")

    def prefetch(self, buffer_size: int, name: str | None = None) -> "Dataset":
        """The same elements (they are in memory: there is nothing to fetch ahead)."""
        return self

    def cache(self, filename: str = "", name: str | None = None) -> "Dataset":
        """The same elements, computed by the first complete iteration and kept in memory
        for the next ones."""
        if filename:
            raise NotImplementedError("cache: tapeflow caches in memory; a `filename` (a "
                                      "cache on disk) is not supported: pass none.")
        kept: list = []
        complete = [False]

        def elements() -> Iterator:
            if complete[0]:
                yield from kept
                return
            fresh: list = []
            for element in self._elements():
                fresh.append(element)
                yield element
            kept[:] = fresh
            complete[0] = True

        return self._then(elements, lambda: self.element_spec, self._cardinality,
                          "CacheDataset")

    def reduce(self, initial_state: Any, reduce_func: Callable) -> Any:
        """`reduce_func(state, element)` folded over the elements from `initial_state`."""
        state = _map(lambda x: convert_to_tensor(x) if not isinstance(x, TensorBase) else x,
                     initial_state)
        for element in self:
            state = reduce_func(state, element)
        return state


# ------------------------------------------------------------------ helpers
_END = object()


class _Uniform:
    """Uniform indices below n, drawn from `rng` a block at a time (a draw per element
    would cost more than the rest of a shuffle)."""

    def __init__(self, rng: np.random.Generator) -> None:
        self.rng = rng
        self.block: list = []

    def below(self, n: int) -> int:
        if not self.block:
            self.block = self.rng.random(4096).tolist()
        return min(int(self.block.pop() * n), n - 1)


def _values(dataset: Dataset) -> Iterator:
    """A pass over `dataset`: its elements as structures of arrays; the rest of a pass a
    traced loop began, where it handed one back (NOTE(dataset-loops))."""
    resumed = dataset.__dict__.pop("_resumed", None)
    return resumed if resumed is not None else map(_value, dataset._elements())


def _frozen(a: np.ndarray) -> np.ndarray:
    a.setflags(write=False)
    return a


def _traced(fn: Callable, op: str) -> Any:
    if not callable(fn):
        raise TypeError(f"{op}: expected a function of the element; got {fn!r:.80}.")
    return function(fn, reduce_retracing=True)


def _call(fn: Any, element: Any) -> Any:
    tensors = _map(_tensor, element)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*has been traced.*")
        if isinstance(tensors, tuple) and not hasattr(tensors, "_fields"):
            return fn(*tensors)
        return fn(tensors)


def _count(value: Any, op: str, what: str, low: int) -> int:
    if isinstance(value, TensorBase):
        value = value.numpy()
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < low:
        raise ValueError(f"{op}: `{what}` must be an integer >= {low}; got {value!r}.")
    return int(value)


def _groups(it: Iterator, size: int, drop_remainder: bool) -> Iterator[list]:
    while True:
        group = list(itertools.islice(it, size))
        if not group or (drop_remainder and len(group) < size):
            return
        yield group


def _batched_cardinality(card: int, size: int, drop_remainder: bool) -> int:
    if card < 0:
        return card
    return card // size if drop_remainder else -(-card // size)


def _stack(xs: tuple, op: str) -> np.ndarray:
    shapes = {np.shape(x) for x in xs}
    if len(shapes) > 1:
        raise ValueError(f"{op}: cannot batch elements of different shapes "
                         f"({' and '.join(str(s) for s in sorted(shapes)[:2])}); pad them "
                         "with padded_batch, or make them one shape in a map first.")
    return _frozen(np.stack(xs))


def _pad_stack(xs: tuple, shape: Any, value: Any) -> np.ndarray:
    ranks = {np.ndim(x) for x in xs}
    if len(ranks) > 1:
        raise ValueError(f"padded_batch: the elements have ranks {sorted(ranks)}; padding "
                         "needs one rank.")
    largest = np.max([np.shape(x) for x in xs], axis=0) if xs[0].ndim else ()
    target = list(largest)
    if shape is not None:
        wanted = list(TensorShape(shape))
        if len(wanted) != len(target):
            raise ValueError(f"padded_batch: padded_shapes {wanted} has rank {len(wanted)}; "
                             f"the elements have rank {len(target)}.")
        for k, d in enumerate(wanted):
            if d is not None:
                if d < target[k]:
                    raise ValueError(f"padded_batch: an element of size {target[k]} along "
                                     f"axis {k} does not fit padded_shapes {wanted}.")
                target[k] = d
    out = np.full([len(xs)] + [int(d) for d in target], value, dtype=xs[0].dtype)
    for i, x in enumerate(xs):
        out[(i,) + tuple(slice(0, d) for d in np.shape(x))] = x
    out.setflags(write=False)
    return out


class experimental:  # noqa: N801 - TensorFlow's namespace
    """tf.data.experimental: the names TensorFlow's code still uses."""

    AUTOTUNE = AUTOTUNE
    INFINITE_CARDINALITY = INFINITE_CARDINALITY
    UNKNOWN_CARDINALITY = UNKNOWN_CARDINALITY

    @staticmethod
    def cardinality(dataset: Dataset) -> Tensor:
        return dataset.cardinality()
