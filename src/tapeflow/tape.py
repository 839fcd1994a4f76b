"""GradientTape: reverse-mode automatic differentiation, TensorFlow's API.

A tape records every op whose inputs it watches (directly, or through an
earlier recorded op) and, on `gradient`, walks the record backwards through
each primitive's VJP rule. The backward pass uses tapeflow ops, so recorders
entered before the tape (NOTE(strict-nesting) in core) record it: that is how
nested tapes give higher derivatives and how an accumulator around a tape
gives forward-over-backward Hessian-vector products.
"""

from __future__ import annotations

import contextlib
import enum
import warnings
from typing import Any, Iterator

import numpy as np

from . import dtypes as _dt
from . import nest
from .batching import rows_tensor, vmap_chunks
from .catalog import CUSTOM_GRADIENT, IDENTITY, NO_DERIVATIVE, READS_VARIABLE, STATEFUL
from .core import Husk, Primitive, Recorder, Zero, bind, reading_records, recording
from .ops.creation import basis
from .ops.shape import concat_p
from .ops.structural import (add_any, dtype_of, fill_p, ones_of, reshape_p, shape_of,
                             shape_source, transpose_p, zeros_of)
from .tensor import Tensor, TensorBase, Variable, convert_to_tensor, key_of, new_key

__all__ = ["GradientTape", "UnconnectedGradients"]


# A copy of an op with these effects is never merged with the first (NOTE(repeated-ops)).
_NEVER_REPEATED = frozenset((STATEFUL, CUSTOM_GRADIENT, READS_VARIABLE, IDENTITY))

# Ops whose inputs and outputs are all smaller than this keep them all (NOTE(saved-values)).
HUSK_AT_BYTES = 64 * 1024
_NO_PARAMS: dict = {}  # the params of every entry without any (one dict, never written)


class UnconnectedGradients(enum.Enum):
    """What `gradient`/`jvp` return for a source the target does not depend on."""

    NONE = "none"
    ZERO = "zero"


def _unconnected(value: Any) -> UnconnectedGradients:
    try:
        return UnconnectedGradients(value.value if isinstance(value, UnconnectedGradients) else value)
    except ValueError:
        raise ValueError(f"unconnected_gradients must be UnconnectedGradients.NONE or .ZERO "
                         f"(or 'none'/'zero'); got {value!r}.") from None


def _differentiable(x: Any) -> bool:
    return (d := x._value.dtype).kind in "fc" or _dt.kind(d) == "f"  # bfloat16: kind V


def _fill_unconnected(result: Any, source: Any, mode: UnconnectedGradients) -> Any:
    if result is None and mode is UnconnectedGradients.ZERO:
        return zeros_of(source)
    return result


class GradientTape(Recorder):
    """Record operations for reverse-mode differentiation (TensorFlow's `tf.GradientTape`).

    Args:
        persistent: allow more than one `gradient`/`jacobian` call.
        watch_accessed_variables: watch trainable variables read while recording.

    Example:
        >>> import tapeflow as tf
        >>> x = tf.constant(3.0)
        >>> with tf.GradientTape() as g:
        ...     g.watch(x)
        ...     y = x * x
        >>> g.gradient(y, x).numpy()
        np.float32(6.0)
    """

    differentiates = True
    reverse = True

    def __init__(self, persistent: bool = False, watch_accessed_variables: bool = True) -> None:
        self._persistent = bool(persistent)
        self._watch_accessed = bool(watch_accessed_variables)
        self._entries: list[tuple] = []
        self._watched: set[int] = set()  # keys of the watched tensors (NOTE(saved-values))
        self._variables: dict[int, Variable] = {}
        self._paused = 0
        self._used = False
        self._keep_all = False  # keep every input and output (linearize replays JVP rules)

    # ---------------------------------------------------------------- context
    # ``with tape:`` enters and leaves the recorder stack (Recorder.__enter__/__exit__ in
    # core); a tape may be entered again after it exits and goes on recording.

    @contextlib.contextmanager
    def stop_recording(self) -> Iterator[None]:
        """Context manager in which this tape records nothing (other tapes and
        accumulators go on, as TensorFlow).

        Example:
            >>> import tapeflow as tf
            >>> x = tf.constant(2.0)
            >>> with tf.GradientTape() as g:
            ...     g.watch(x)
            ...     with g.stop_recording():
            ...         y = x * x
            >>> print(g.gradient(y, x))
            None
        """
        if not self.active:
            raise RuntimeError("GradientTape.stop_recording(): the tape is not recording "
                               "(call it inside the tape's `with` block).")
        self._paused += 1
        try:
            yield
        finally:
            self._paused -= 1

    def reset(self) -> None:
        """Forget everything recorded and watched, as if re-entering with a new tape."""
        self._entries = []
        self._watched = set()
        self._variables = {}
        self._used = False

    # ---------------------------------------------------------------- watching
    def watch(self, tensor: Any) -> None:
        """Watch a tensor, variable, or nested structure of them.

        Integer and bool tensors cannot carry gradients: they are skipped with a
        warning (as TensorFlow), and their gradient is None.
        """
        for i, x in enumerate(nest.flatten(tensor)):
            if not isinstance(x, TensorBase):
                raise ValueError(f"GradientTape.watch: element {i} of `tensor` is a "
                                 f"{type(x).__name__}, not a tf.Tensor or tf.Variable.")
            if not _differentiable(x):
                warnings.warn(f"GradientTape.watch: the dtype of the watched tensor must be "
                              f"floating or complex; got {x.dtype.name}. Its gradient will be None.",
                              stacklevel=2)
                continue
            self._key(x)
            if isinstance(x, Variable):
                self._variables[id(x)] = x

    def watched_variables(self) -> tuple:
        """The variables this tape watches, in the order it started watching them."""
        return tuple(self._variables.values())

    # NOTE(saved-values): the record must not keep every intermediate array alive (a long
    # chain would hold them all, where peers hold only what their backward passes read).
    # An entry keeps the inputs and outputs its VJP rule reads for the inputs that need a
    # cotangent (the rule's `reads`, ops/structural) and a Husk of the others. Tensors
    # are named by keys (tensor.key_of), not id(): an id is reused once its tensor is
    # freed, a key never.
    # Ops on small arrays keep everything: a Husk costs more time than it saves memory.
    def _key(self, x: Any) -> int:
        """x's key, x watched from now on."""
        k = key_of(x)
        self._watched.add(k)
        return k

    def _key_of(self, x: Any) -> int | None:
        """x's key if this tape watches x, else None."""
        k = x._key
        return k if k in self._watched else None

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        if self._paused or NO_DERIVATIVE in prim.effects:
            return
        watched = self._watched
        keys = []
        hit = False
        for x in inputs:
            k = x._key
            if k in watched:
                keys.append(k)
                hit = True
            elif self._watch_accessed and type(x) is Variable and x._trainable and _differentiable(x):
                keys.append(self._key(x))
                self._variables[id(x)] = x
                hit = True
            else:
                keys.append(None)
        if not hit:
            return
        out_keys = []
        large = False
        for o in outputs:
            v = o._value
            if (d := v.dtype).kind in "fc" or _dt.kind(d) == "f":
                k = o._key
                if k is None:  # a fresh output: no other thread can see it yet
                    k = o._key = new_key()
                watched.add(k)
                out_keys.append(k)
            else:
                out_keys.append(None)
            if v.nbytes >= HUSK_AT_BYTES:
                large = True
        if not large:
            for t in inputs:
                if t._value.nbytes >= HUSK_AT_BYTES:
                    large = True
                    break
        if large and not self._keep_all and (reads := prim.rules.get("reads")) is not None:
            keep_in, keep_out = _kept(prim, reads, tuple(k is not None for k in keys),
                                      len(outputs))
            name = prim.name
            inputs = tuple(x if keep else Husk(x, name) for x, keep in zip(inputs, keep_in))
            outputs = tuple(o if keep else Husk(o, name) for o, keep in zip(outputs, keep_out))
        self._entries.append((prim, tuple(keys), tuple(out_keys), inputs, outputs,
                              params or _NO_PARAMS))

    # ---------------------------------------------------------------- backward
    def _check_usable(self, what: str) -> None:
        if self._used and not self._persistent:
            raise RuntimeError(f"GradientTape.{what}: a non-persistent GradientTape can only be "
                               "used to compute one set of gradients (or jacobians); create it "
                               "with persistent=True to call it more than once.")

    def _release(self) -> None:
        self._used = True
        if not self._persistent:
            self._entries = []
            self._watched = set()

    def _plan(self, sources: list, merge: bool = True) -> tuple[list, set]:
        """The recorded ops on a path from some source, and the keys they reach. No
        derivative flows through an integer or bool output (a cast to int, a
        comparison): such an output has no key and is never reached, as in TensorFlow.
        With `merge`, an op that repeats an earlier one (NOTE(repeated-ops)) becomes a
        `_Repeat` of it."""
        # A trainable variable counts as watched even if never read (the tape would have
        # watched it at its first read): tape.gradient(v, v) is ones, as TensorFlow.
        reach = set()
        for s in sources:
            k = self._key_of(s)
            if k is None and self._watch_accessed and type(s) is Variable and s._trainable \
                    and _differentiable(s):
                k = self._key(s)
            if k is not None:
                reach.add(k)
        fixed = None
        if merge:
            # Variables may change between two reads; sources keep their own cotangents.
            fixed = ({v._key for v in self._variables.values()}, set(reach), {})
            seen: dict = {}
        plan = []
        for entry in self._entries:
            if not reach.isdisjoint(entry[1]):  # some input reached (None never is)
                reach.update(entry[2])
                if None in entry[2]:  # an integer output has no key: nothing reaches it
                    reach.discard(None)
                if fixed is not None:
                    first = _repeat_of(entry, seen, fixed)
                    if first is not None:
                        plan.append(_Repeat(first[2], entry[2]))
                        continue
                plan.append(entry)
        return plan, reach

    def _backward(self, plan: list, reach: set, targets: list, cts: list, sources: list) -> list:
        # The record may hold tensors a traced function made on a first call inside this
        # tape; their values are that call's, which is what the tape differentiates.
        with reading_records():
            return self._backward_pass(plan, reach, targets, cts, sources)

    def _backward_pass(self, plan: list, reach: set, targets: list, cts: list,
                       sources: list) -> list:
        source_keys = [self._key_of(s) for s in sources]
        keep = set(source_keys)
        acc: dict[int, Any] = {}
        for t, ct in zip(targets, cts, strict=True):
            k = self._key_of(t)
            if k is not None and k in reach:
                acc[k] = add_any(acc.get(k), ct)
        in_reach = reach.__contains__
        # Nothing records this pass: rules seen often run as compiled code
        # (NOTE(replayed-rules)).
        if recording():
            compiled = None
        else:
            from .graph.replayed_rules import compiled_vjp as compiled  # cycle: trace, custom, tape
        for entry in reversed(plan):
            if type(entry) is _Repeat:  # its cotangents go to the first computation's outputs
                for k, first in zip(entry.keys, entry.first, strict=True):
                    c = acc.pop(k, None)
                    if c is not None:
                        acc[first] = add_any(acc.get(first), c)
                continue
            prim, in_keys, out_keys, inputs, outputs, params = entry
            if len(out_keys) == 1:  # most ops: no lists to build
                k = out_keys[0]
                c = acc.get(k) if k in keep else acc.pop(k, None)
                if c is None:
                    continue
                out_cts = (c,)
            else:
                found = [acc.get(k) if k in keep else acc.pop(k, None) for k in out_keys]
                if all(c is None for c in found):
                    continue
                out_cts = tuple(Zero.like(o) if c is None else c
                                for o, c in zip(outputs, found, strict=True))
            needs = (in_keys[0] in reach,) if len(in_keys) == 1 else tuple(map(in_reach, in_keys))
            try:
                vjp = prim.rules["vjp"]
            except KeyError:
                raise NotImplementedError(f"GradientTape.gradient: primitive {prim.name!r} has "
                                          "no reverse-mode rule (its `vjp`, tapeflow.extend."
                                          "define): it cannot be differentiated in reverse "
                                          "mode.") from None
            if compiled is not None:
                run = compiled(prim, vjp, out_cts, outputs, inputs, needs, params)
                if run is not None:
                    run(acc, out_cts, outputs, inputs, in_keys)
                    continue
            in_cts = vjp(out_cts, outputs, inputs, needs, **params)
            for k, c, need in zip(in_keys, in_cts, needs, strict=True):
                if need and c is not None:
                    prev = acc.get(k)
                    acc[k] = c if prev is None else add_any(prev, c)
        return [None if k is None else acc.get(k) for k in source_keys]

    def _flat_sources(self, sources: Any) -> list:
        flat = nest.flatten(sources)
        for i, s in enumerate(flat):
            if not isinstance(s, TensorBase):
                raise TypeError(f"GradientTape.gradient: `sources` element {i} is a "
                                f"{type(s).__name__}; sources must be tf.Tensor or tf.Variable.")
            if not _differentiable(s):
                warnings.warn(f"GradientTape.gradient: source {i} has dtype {s.dtype.name}; only "
                              "floating and complex sources have gradients. Returning None.",
                              stacklevel=3)
        return flat

    def _flat_targets(self, target: Any) -> list:
        flat = nest.flatten(target)
        for i, t in enumerate(flat):
            if not isinstance(t, TensorBase):
                raise TypeError(f"GradientTape.gradient: `target` element {i} is a "
                                f"{type(t).__name__}; targets must be tf.Tensor or tf.Variable.")
        return flat

    def gradient(self, target: Any, sources: Any, output_gradients: Any = None,
                 unconnected_gradients: Any = UnconnectedGradients.NONE) -> Any:
        """Gradient of `target` (summed over its elements, or weighted by
        `output_gradients`) with respect to `sources`, in the structure of `sources`.

        Example:
            >>> import tapeflow as tf
            >>> v = tf.Variable([1., 2.])
            >>> with tf.GradientTape() as tape:
            ...     y = tf.reduce_sum(v ** 3.)
            >>> tape.gradient(y, v).numpy()
            array([ 3., 12.], dtype=float32)
        """
        self._check_usable("gradient")
        mode = _unconnected(unconnected_gradients)
        flat_s = self._flat_sources(sources)
        flat_t = self._flat_targets(target)
        if output_gradients is None:
            cts = [ones_of(t) for t in flat_t]
        else:
            grads = nest.flatten(output_gradients) if nest.is_nested(output_gradients) \
                else [output_gradients]
            if len(grads) != len(flat_t):
                raise ValueError(f"GradientTape.gradient: `output_gradients` has {len(grads)} "
                                 f"elements but `target` has {len(flat_t)}.")
            cts = []
            for i, (t, g) in enumerate(zip(flat_t, grads, strict=True)):
                if g is None:
                    cts.append(ones_of(t))
                    continue
                g = convert_to_tensor(g, dtype=t.dtype)
                if shape_of(g) != shape_of(t):
                    raise ValueError(f"GradientTape.gradient: output_gradients[{i}] has shape "
                                     f"{shape_of(g)} but target[{i}] has shape {shape_of(t)}.")
                cts.append(g)
        # Merging repeated ops (NOTE(repeated-ops)) pays where the backward pass is itself
        # recorded (traced, nested, batched); a plain eager backward pass skips the search.
        plan, reach = self._plan(flat_s, merge=recording())
        # The backward pass is ordinary ops: every active recorder sees it (as TensorFlow),
        # this tape included when called inside its own context (higher-order use).
        result = self._backward(plan, reach, flat_t, cts, flat_s)
        self._release()
        result = [_fill_unconnected(r, s, mode) if _differentiable(s) else None
                  for r, s in zip(result, flat_s, strict=True)]
        return nest.pack_sequence_as(sources, result)

    # ---------------------------------------------------------------- jacobians
    def jacobian(self, target: Any, sources: Any,
                 unconnected_gradients: Any = UnconnectedGradients.NONE,
                 parallel_iterations: int | None = None,
                 experimental_use_pfor: bool = True) -> Any:
        """Jacobian of `target` with respect to each source: shape target.shape + source.shape.

        Vectorized: one backward pass over the stack of all one-hot cotangents, each
        op run once on the whole stack (`vmap` of the backward pass).
        `parallel_iterations` bounds how many rows one pass handles (peak memory);
        `experimental_use_pfor=False` runs one backward pass per row instead and
        needs a persistent tape, as TensorFlow.

        Example:
            >>> import tapeflow as tf
            >>> with tf.GradientTape() as g:
            ...     x = tf.constant([1.0, 2.0])
            ...     g.watch(x)
            ...     y = x * x
            >>> g.jacobian(y, x).numpy()
            array([[2., 0.],
                   [0., 4.]], dtype=float32)
        """
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError("GradientTape.jacobian: the tape must be created with "
                               "persistent=True to compute the jacobian with "
                               "experimental_use_pfor=False.")
        self._check_usable("jacobian")
        mode = _unconnected(unconnected_gradients)
        if nest.is_nested(target):
            raise TypeError("GradientTape.jacobian: `target` must be a single tensor.")
        (t,) = self._flat_targets(target)
        flat_s = self._flat_sources(sources)
        plan, reach = self._plan(flat_s)
        n = int(np.size(t._value))

        def make(start: int, stop: int) -> Any:
            return basis(t, start, None if start == 0 and stop == n else stop)

        if experimental_use_pfor:
            rows = self._rows_vectorized(plan, reach, [t], n, make, flat_s, parallel_iterations)
        else:
            rows = self._rows_looped(plan, reach, [t], n, make, flat_s)
        self._release()
        out = []
        for s, r in zip(flat_s, rows, strict=True):
            if not _differentiable(s):
                out.append(None)
            elif r is None:
                out.append(_jac_like(t, s) if mode is UnconnectedGradients.ZERO else None)
            else:
                out.append(_reshape(r, shape_source(t) + shape_source(s)))
        return nest.pack_sequence_as(sources, out)

    def _rows_vectorized(self, plan: list, reach: set, targets: list, n: int, make: Any,
                         sources: list, chunk: int | None) -> list:
        """Gradients for n cotangents (rows made by `make`) in one batched backward pass
        (per chunk): [n, *source] per source."""
        if n == 0:
            return self._rows_looped(plan, reach, targets, n, make, sources)
        rows = vmap_chunks(lambda ct: self._backward(plan, reach, targets, [ct], sources),
                           n, make, chunk)
        return list(rows)

    def _rows_looped(self, plan: list, reach: set, targets: list, n: int, make: Any,
                     sources: list) -> list:
        """The same, one backward pass per cotangent."""
        per_row = [self._backward(plan, reach, targets, [rows_tensor(make(j, j + 1))[0]], sources)
                   for j in range(n)]
        out = []
        for j, s in enumerate(sources):
            col = [r[j] for r in per_row]
            if not col:  # an empty target: an empty Jacobian
                out.append(Tensor(np.zeros((0,) + shape_of(s), s._value.dtype)))
                continue
            if all(c is None for c in col):
                out.append(None)
                continue
            rows = [Tensor(np.zeros(shape_of(s), s._value.dtype)) if c is None else c
                    for c in col]
            out.append(bind(concat_p, *[bind(reshape_p, r, shape=(1,) + shape_of(s))
                                        for r in rows], axis=0))
        return out

    def batch_jacobian(self, target: Any, source: Any,
                       unconnected_gradients: Any = UnconnectedGradients.NONE,
                       parallel_iterations: int | None = None,
                       experimental_use_pfor: bool = True) -> Any:
        """Per-example Jacobians: for target [b, y...] and source [b, x...], the
        [b, y..., x...] tensor of d target[i] / d source[i]. Assumes example i of the
        target depends only on example i of the source (as TensorFlow). Vectorized
        like `jacobian`: one batched backward pass for all y elements.

        Example:
            >>> import tapeflow as tf
            >>> x = tf.constant([[1., 2.], [3., 4.]])
            >>> with tf.GradientTape() as g:
            ...     g.watch(x)
            ...     y = x * x
            >>> g.batch_jacobian(y, x).shape
            TensorShape([2, 2, 2])
        """
        if not experimental_use_pfor and not self._persistent:
            raise RuntimeError("GradientTape.batch_jacobian: the tape must be created with "
                               "persistent=True to compute with experimental_use_pfor=False.")
        self._check_usable("batch_jacobian")
        mode = _unconnected(unconnected_gradients)
        (t,) = self._flat_targets(target)
        (s,) = self._flat_sources(source)
        ts, ss = shape_of(t), shape_of(s)
        if len(ss) < 2 or len(ts) < 2 or ts[0] != ss[0]:
            raise ValueError(f"GradientTape.batch_jacobian: `target` {ts} and `source` {ss} "
                             "must have rank >= 2 (a batch of examples, as TensorFlow), with "
                             "the same first (batch) dimension.")
        plan, reach = self._plan([s])
        inner = int(np.prod(ts[1:], dtype=np.int64))

        # Cotangent j is 1 at element j of every example: rows [inner, b, *y].
        def make(start: int, stop: int) -> Any:
            return basis(t, start, None if start == 0 and stop == inner else stop,
                         per_example=True)

        if experimental_use_pfor:
            (rows,) = self._rows_vectorized(plan, reach, [t], inner, make, [s], parallel_iterations)
        else:
            (rows,) = self._rows_looped(plan, reach, [t], inner, make, [s])
        self._release()
        if not _differentiable(s):
            return None
        if rows is None:
            if mode is not UnconnectedGradients.ZERO:
                return None
            return bind(fill_p, shape=shape_source(t) + shape_source(s)[1:], value=0,
                        dtype=dtype_of(s))
        rows = bind(transpose_p, rows, perm=(1, 0) + tuple(range(2, len(ss) + 1)))  # [b, inner, *x]
        return _reshape(rows, shape_source(t) + shape_source(s)[1:])


# NOTE(repeated-ops): code often computes the same thing twice (a determinant by cofactors
# recomputes minors; a traced function's primal graph merges the copies by CSE). The
# copies' backward passes would still run once each, on different cotangents, and a graph
# pass cannot merge them. But a VJP is linear in the cotangent: the second copy's
# cotangents can be added to the first copy's outputs and the rule run once. A copy is
# the same primitive with equal params on the same input tensors or on their copies (all
# watched: an unwatched input has no key to compare), deterministic, with no variable
# input (a write may lie between) and no source among its outputs (a source keeps its own
# cotangent). Copies of copies matter: `m[i, j]` read again makes a new tensor, so a
# minor recomputed from fresh reads is a copy only through its entries' copies (a 6 x 6
# cofactor determinant's traced gradient: 5,313 nodes with copies of the same tensors
# alone, 1,113 with copies of copies, against the primal's 351).
class _Repeat:
    """A recorded op that repeats an earlier one: its outputs' keys and the first's."""

    __slots__ = ("first", "keys")

    def __init__(self, first: tuple, keys: tuple) -> None:
        self.first, self.keys = first, keys


def _repeat_of(entry: tuple, seen: dict, fixed: tuple) -> tuple | None:
    """The earlier entry `entry` repeats, if any (NOTE(repeated-ops)); else None, and
    `entry` is remembered in `seen` when a later one may repeat it. `fixed`: the keys of
    the variables (no input of a copy) and of the sources (no output of one), and the map
    from a copy's output keys to the first's, which it fills: an op on copies repeats the
    same op on the firsts (`m[0, 0] * m[1, 1]` read twice)."""
    prim, in_keys, out_keys = entry[0], entry[1], entry[2]
    variables, sources, firsts = fixed
    if (not prim.effects.isdisjoint(_NEVER_REPEATED) or None in in_keys or None in out_keys or not variables.isdisjoint(in_keys)
            or not sources.isdisjoint(out_keys)):
        return None
    params = entry[5]
    if firsts:
        in_keys = tuple([firsts.get(k, k) for k in in_keys])
    try:
        key = (prim, in_keys, tuple(sorted(params.items()))) if params else (prim, in_keys)
        first = seen.get(key)
    except TypeError:  # a param that cannot be compared by hash (a slice, an array)
        return None
    if first is None:
        seen[key] = entry
    else:
        firsts.update(zip(out_keys, first[2]))
    return first


def vjp_reads(prim: Primitive, needs: tuple, n_out: int) -> tuple:
    """Which inputs and outputs `prim`'s VJP reads when the inputs in `needs` need
    cotangents (two tuples of bools): what its `reads` rule declares, else all of them."""
    if "vjp" not in prim.rules or NO_DERIVATIVE in prim.effects or not any(needs):
        return (False,) * len(needs), (False,) * n_out
    reads = prim.rules.get("reads")
    if reads is not None:
        return _kept(prim, reads, needs, n_out)
    return (True,) * len(needs), (True,) * n_out


_KEPT: dict = {}  # (primitive, needs, number of outputs) -> what its VJP reads


def _kept(prim: Primitive, reads: tuple, needs: tuple, n_out: int) -> tuple:
    """Which inputs and outputs a VJP that declares `reads` (catalog) reads when the inputs
    in `needs` need cotangents: two tuples of bools, cached."""
    key = (prim, needs, n_out)
    hit = _KEPT.get(key)
    if hit is None:
        read_in, read_out = set(), set()
        for need, (ins, outs) in zip(needs, reads, strict=True):
            if need:
                read_in.update(ins)
                read_out.update(outs)
        hit = _KEPT[key] = (tuple(i in read_in for i in range(len(needs))),
                            tuple(i in read_out for i in range(n_out)))
    return hit


def _jac_like(t: Any, s: Any) -> Tensor:
    return bind(fill_p, shape=shape_source(t) + shape_source(s), value=0, dtype=dtype_of(s))


def _reshape(x: Tensor, shape: tuple) -> Tensor:
    return x if shape_of(x) == tuple(shape) else bind(reshape_p, x, shape=tuple(shape))
