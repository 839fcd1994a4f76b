"""The scan primitive: a loop over a leading axis as one op (tf.scan, tf.foldl, tf.foldr,
tf.map_fn and tf.while_loop's loops are built on it, in control_flow.py).

A Python loop over time steps is unrolled by tracing: T steps put T copies of the body
into a graph, which XLA then compiles copy by copy. `scan_p` is the loop as one op. Its
body is traced once into a graph whose inputs are the carries, one step of each
sequence and the tensors the body reads from outside (variables read, closed-over
tensors: inputs of the op, so tapes see them), and whose outputs are the new carries and
one step of each result. The impl replays the body at each step; XLA lowers it to
`lax.scan`. Its rules are scans of bodies traced from the body graph, so they nest
(second derivatives are scans of scans):

- JVP: a scan of the body's JVP, the tangents of the carries carried along;
- VJP: a reverse scan of the body's VJP, which carries the cotangents of the carries and
  sums those of the outside tensors. It reads the carries entering each step: bound
  under a tape or an accumulator, a scan keeps them (its differentiation form, the
  catalog's `form`: `emits_carries`, its body returns them too, as extra results);
  otherwise a second scan recomputes them. Under a tape the scan also keeps its body's
  intermediates, so the VJP's steps recompute no forward op (NOTE(scan-residuals)); a
  traced graph keeps only those the VJP reads (the `prune` hint);
- batching: a scan of the vmapped body, every carry batched.

The body may not branch on tensor values (a guard), assign variables or make them:
each is a clear error while it is traced.
"""

from __future__ import annotations

import dataclasses
import weakref
from typing import Any, Callable

import numpy as np

from . import dtypes as _dt
from .batching import vmap
from .catalog import READS_VARIABLE, STATEFUL, Hints, define
from .core import Primitive, Zero, bind, substack
from .forward import ForwardAccumulator
from .graph.dims import decided
from .graph.ir import Graph, Node, size_slots
from .graph.passes import eliminate_dead_code, optimize
from .graph.polymorphic import resolved
from .graph.replay import Replay, interpret, plan_runner
from .graph.scope import seal
from .graph.trace import Tracer, TracingError, user_line
from .graph.xla import lower_graph
from .ops.convert import as_tensor
from .ops.structural import (broadcast_to_p, dense_deps, instantiate, move_axis, move_to_front,
                             reshape_p, shape_of, zeros_of)
from .tape import GradientTape, UnconnectedGradients, vjp_reads
from .tensor import Tensor, Variable, key_of, new_key

__all__ = ["scan_p", "bind_scan", "trace_body", "emitting_carries"]


# ------------------------------------------------------------------ the body as a graph
class _BodyTracer(Tracer):
    """Traces a loop body into a closed graph: every tensor it reads from outside, and
    every variable it reads, becomes an input of its own (`captured`, in order)."""

    def __init__(self, graph: Graph, inputs: list) -> None:
        super().__init__(graph, inputs, guards="error")
        self.captured: list = []

    def _new_input(self, tensor: Any, source: Any) -> int:
        slot = self.graph.new_slot(tensor._value)
        self.graph.inputs.append(slot)
        self._slots[key_of(tensor)] = slot
        self.captured.append(source)
        self.may_vary(slot)
        return slot

    def slot_of(self, x: Any) -> int:
        slot = self._slots.get(x._key) if x._key is not None else None
        return slot if slot is not None else self._new_input(x, x)

    def process(self, prim: Primitive, inputs: Any, outputs: tuple, params: dict,
                level: int) -> None:
        if READS_VARIABLE in prim.effects:  # the variable's value: read outside, each call
            out = outputs[0]
            if out._key is None:
                out._key = new_key()
            self._new_input(out, inputs[0])
            self.made.append(weakref.ref(out))
            return
        super().process(prim, inputs, outputs, params, level)

    def size_check(self, check: Any, result: bool) -> None:
        # kept on the graph, checked before the body runs at new sizes (a body has no
        # guards: graph/polymorphic.resolved)
        entry = (check, result, user_line())
        if not decided(check, lambda s: False) and \
                all(c != check for c, _, _ in self.graph.size_checks):
            self.graph.size_checks.append(entry)

    def on_read(self, tensor: Any, how: str) -> None:
        slot = self._slots.get(tensor._key)
        if slot is not None and slot not in self.graph.constants:
            raise TracingError(f"scan: the loop body reads a tensor's value ({how}); a loop "
                               "body cannot branch on values: use tf.where.")

    def on_write(self, var: Variable, value: Tensor) -> None:
        raise TracingError(f"scan: the loop body assigns the variable {var.name!r}; return the "
                           "new value as part of the carry instead.")

    def on_create(self, var: Variable) -> None:
        raise TracingError(f"scan: the loop body makes the variable {var.name!r}; make it "
                           "outside the loop.")


def trace_body(fn: Callable[..., list], example: list) -> tuple[Graph, list]:
    """(the graph of `fn`, a function of len(example) tensors returning a list of
    tensors, traced on those values; what it captured: tensors and variables)."""
    graph = Graph(name=getattr(fn, "__name__", "body"))
    inputs = [Tensor(np.asarray(e._value if isinstance(e, Tensor) else e)) for e in example]
    tracer = _BodyTracer(graph, inputs)
    tracer.follow_sizes()
    try:
        with substack(lambda r: False, extra=(tracer,)):
            outs = [as_tensor(o, "scan", "the loop body's result") for o in fn(*inputs)]
            graph.outputs = [tracer.slot_of(o) for o in outs]
    finally:
        tracer.sizing = False
        seal([t for t in (r() for r in tracer.made) if t is not None], "a scan body")
    optimize(graph)
    return graph, tracer.captured


def _values(captured: list) -> list:
    """The captured tensors, each variable read now (an op the caller's tapes see)."""
    return [v.value() if isinstance(v, Variable) else v for v in captured]


def _derived(body: Graph, key: tuple, make: Callable[[], tuple]) -> tuple[Graph, list]:
    """A body derived from `body` (its JVP, its VJP, ...), traced once and kept with it."""
    cache = body.__dict__.setdefault("_derived", {})
    if key not in cache:
        cache[key] = make()
    return cache[key]


def _float(x: Any) -> bool:
    return _dt.kind(np.asarray(x._value).dtype) in "fc"


def _step(x: Tensor) -> Any:
    """Step 0 of a stacked sequence (zeros of a step's shape when there is none)."""
    value = x._value
    return value[0] if value.shape[0] else np.zeros(value.shape[1:], value.dtype)


# ------------------------------------------------------------------ the primitive
def _body_replay(body: Graph, args: list) -> tuple[Callable, list | None]:
    """(the replay of `body` for the shapes of `args`, None), or (that replay, the body's
    outputs at `args`) when it was made now at other shapes than the body was traced at
    (a size-generic graph's loop, graph/polymorphic.py): a replay's buffer reuse and
    specialized impls are chosen from the shapes, so each set of shapes has its own,
    made after a run that finds every shape."""
    shapes = tuple(np.shape(a) for a in args)
    replays = body.__dict__.setdefault("_replays", {})
    run = replays.get(shapes)
    if run is not None:
        return run, None
    if not (body.sized or body.size_checks) and \
            shapes == tuple(tuple(body.avals[s][0]) for s in body.inputs):
        return replays.setdefault(shapes, Replay(body)), None
    avals: dict = {}
    out = plan_runner(body, avals)(*args)
    return replays.setdefault(shapes, Replay(resolved(body, {**body.avals, **avals}))), out


def _scan_impl(*inputs: Any, body: Graph, n_carry: int, n_x: int, length: int,
               reverse: bool, emits_carries: bool) -> list:
    carry = list(inputs[:n_carry])
    xs = inputs[n_carry:n_carry + n_x]
    consts = list(inputs[n_carry + n_x:])
    steps = []
    run = None
    for t in (range(length - 1, -1, -1) if reverse else range(length)):
        args = [*carry, *[x[t] for x in xs], *consts]
        out = None
        if run is None:
            run, out = _body_replay(body, args)
        if out is None:
            out = run(*args)
        carry, ys = out[:n_carry], out[n_carry:]
        steps.append(ys)
    if reverse:
        steps.reverse()
    stacked = []
    for k, slot in enumerate(body.outputs[n_carry:]):
        if steps:
            # np.array stacks a list of equal-shaped values as np.stack does, in C: a
            # third of np.stack's time on a long loop's small values.
            stacked.append(np.array([s[k] for s in steps]))
        else:
            shape, dtype = body.avals[slot]
            stacked.append(np.zeros((0,) + tuple(shape), dtype))
    return [np.asarray(c) for c in carry] + stacked


def _split(seq: Any, *sizes: int) -> list:
    out, i = [], 0
    for n in sizes:
        out.append(list(seq[i:i + n]))
        i += n
    return out


def _scan_jvp(tangents: tuple, outs: tuple, primals: tuple, body: Graph, n_carry: int,
              n_x: int, length: int, reverse: bool, emits_carries: bool) -> tuple:
    nc, nx = n_carry, n_x
    nk = len(primals) - nc - nx
    n_y = len(outs) - nc
    live = [type(t) is not Zero for t in tangents]
    if not any(live):
        return tuple(Zero.like(o) for o in outs)
    fc = [j for j in range(nc) if _float(primals[j])]      # carries that carry a tangent
    tx = [j for j in range(nx) if live[nc + j]]
    tk = [j for j in range(nk) if live[nc + nx + j]]
    fy = [j for j in range(n_y) if _float(outs[nc + j])]
    carry, xs, consts = _split(primals, nc, nx, nk)
    cdot = [instantiate(tangents[j]) for j in fc]
    xdot = [tangents[nc + j] for j in tx]
    kdot = [tangents[nc + nx + j] for j in tk]

    def make() -> tuple:
        def jvp_step(*a: Any) -> list:
            c, cd, x, xd, k, kd = _split(a, nc, len(fc), nx, len(tx), nk, len(tk))
            watched = [c[j] for j in fc] + [x[j] for j in tx] + [k[j] for j in tk]
            with ForwardAccumulator(watched, cd + xd + kd) as acc:
                out = interpret(body, c + x + k)
            new_c, ys = out[:nc], out[nc:]
            d = [acc.jvp(o, unconnected_gradients=UnconnectedGradients.ZERO)
                 for o in [new_c[j] for j in fc] + [ys[j] for j in fy]]
            return new_c + d[:len(fc)] + ys + d[len(fc):]
        return trace_body(jvp_step, carry + cdot + [_step(x) for x in xs] +
                          [_step(t) for t in xdot] + consts + kdot)

    jbody, captured = _derived(body, ("jvp", tuple(fc), tuple(tx), tuple(tk)), make)
    res = bind(scan_p, *carry, *cdot, *xs, *xdot, *consts, *kdot, *_values(captured),
               body=jbody, n_carry=nc + len(fc), n_x=nx + len(tx), length=length,
               reverse=reverse, emits_carries=False)
    new_c, dc, ys, dy = _split(res, nc, len(fc), n_y, len(fy))
    out = [dc[fc.index(j)] if j in fc else Zero.like(outs[j]) for j in range(nc)]
    out += [dy[fy.index(j)] if j in fy else Zero.like(outs[nc + j]) for j in range(n_y)]
    return tuple(out)


def _scan_vjp(cts: tuple, outs: tuple, primals: tuple, needs: tuple, body: Graph,
              n_carry: int, n_x: int, length: int, reverse: bool,
              emits_carries: bool) -> tuple:
    nc, nx = n_carry, n_x
    nk = len(primals) - nc - nx
    n_y = len(outs) - nc
    carry, xs, consts = _split(primals, nc, nx, nk)
    fc = [j for j in range(nc) if _float(carry[j])]
    fx = [j for j in range(nx) if _float(xs[j])]
    fk = [j for j in range(nk) if _float(consts[j])]
    # NOTE(scan-residuals): what the forward scan kept: its body's intermediates
    # (`residuals` of them, the body's own graph `given`), then the carries entering each
    # step. They are no results of the user's: their cotangents are zeros, unless
    # something did read them (a second derivative).
    given, slots = body.__dict__.get("_residuals", (None, ())) if emits_carries else (None, ())
    n_user = n_y - (len(slots) + nc if emits_carries else 0)
    fy = [j for j in range(n_y) if _float(outs[nc + j]) and not (
        j >= n_user and type(cts[nc + j]) is Zero)]
    if length == 0:  # nothing ran: the final carries are the initial ones
        grads = [instantiate(cts[j]) if j in fc else None for j in range(nc)]
        grads += [zeros_of(x) if j in fx else None for j, x in enumerate(xs)]
        return tuple(grads + [zeros_of(k) if j in fk else None for j, k in enumerate(consts)])

    if given is not None:
        return _scan_vjp_given(cts, outs, primals, body, given, slots, fc, fx, fk, fy,
                               n_user, nc, nx, nk, length, reverse)
    if emits_carries:  # the carries entering each step, kept by the forward scan
        carries_t = list(outs[len(outs) - nc:])
    else:  # recomputed: a scan whose body also emits them
        cbody, ccap = _derived(body, ("carries",), lambda: emitting_carries(
            body, nc, carry + [_step(x) for x in xs] + consts))
        res = bind(scan_p, *primals, *_values(ccap), body=cbody, n_carry=nc, n_x=nx,
                   length=length, reverse=reverse, emits_carries=True)
        carries_t = list(res[nc + n_y:])
    ct_c = [instantiate(cts[j]) for j in fc]
    ct_y = [instantiate(cts[nc + j]) for j in fy]
    acc0 = [zeros_of(consts[j]) for j in fk]

    def make_vjp() -> tuple:
        def vjp_step(*a: Any) -> list:
            gc, acc, c, x, gy, k = _split(a, len(fc), len(fk), nc, nx, len(fy), nk)
            watched = [c[j] for j in fc] + [x[j] for j in fx] + [k[j] for j in fk]
            with GradientTape() as tape:
                tape.watch(watched)
                out = interpret(body, c + x + k)
            targets = [out[j] for j in fc] + [out[nc + j] for j in fy]
            grads = tape.gradient(targets, watched, output_gradients=gc + gy,
                                  unconnected_gradients=UnconnectedGradients.ZERO)
            g_c, g_x, g_k = _split(grads, len(fc), len(fx), len(fk))
            return g_c + [s + g for s, g in zip(acc, g_k, strict=True)] + g_x
        return trace_body(vjp_step, ct_c + acc0 + [_step(c) for c in carries_t] +
                          [_step(x) for x in xs] + [_step(g) for g in ct_y] + consts)

    vbody, vcap = _derived(body, ("vjp", tuple(fc), tuple(fk), tuple(fy)), make_vjp)
    back = bind(scan_p, *ct_c, *acc0, *carries_t, *xs, *ct_y, *consts, *_values(vcap),
                body=vbody, n_carry=len(fc) + len(fk), n_x=nc + nx + len(fy), length=length,
                reverse=not reverse, emits_carries=False)
    g_c, g_k, g_x = _split(back, len(fc), len(fk), len(fx))
    grads = [g_c[fc.index(j)] if j in fc else None for j in range(nc)]
    grads += [g_x[fx.index(j)] if j in fx else None for j in range(nx)]
    grads += [g_k[fk.index(j)] if j in fk else None for j in range(nk)]
    return tuple(grads)


def _scan_vjp_given(cts: tuple, outs: tuple, primals: tuple, body: Graph, given: Graph,
                    slots: tuple, fc: list, fx: list, fk: list, fy: list, n_user: int,
                    nc: int, nx: int, nk: int, length: int, reverse: bool) -> tuple:
    """The VJP of a scan whose forward pass kept its body's intermediates
    (NOTE(scan-residuals)): a reverse scan of the VJP of `given` (the body the user's step
    traced to), each step's ops shown to the tape with the values the forward step made
    (those of `slots`), so the backward pass recomputes none that a VJP reads."""
    carry, xs, consts = _split(primals, nc, nx, nk)
    residuals = len(slots)
    kept = list(outs[nc + n_user:nc + n_user + residuals])
    carries_t = list(outs[len(outs) - nc:])
    ct_c = [instantiate(cts[j]) for j in fc]
    ct_y = [instantiate(cts[nc + j]) for j in fy]
    acc0 = [zeros_of(consts[j]) for j in fk]

    def make_vjp() -> tuple:
        def vjp_step(*a: Any) -> list:
            gc, acc, c, x, gy, r, k = _split(a, len(fc), len(fk), nc, nx, len(fy), residuals,
                                             nk)
            watched = [c[j] for j in fc] + [x[j] for j in fx] + [k[j] for j in fk]
            with GradientTape() as tape:
                tape.watch(watched)
                # the body's own inputs: tracing it again to emit its residuals may have
                # captured values of its own (a zeros_like's), passed after them
                out = _shown_to(tape, given, (c + x + k)[:len(given.inputs)],
                                dict(zip(slots, r, strict=True)))
            # the step's results: the user's, then the kept intermediates and carries
            ys = out[nc:] + r + c
            targets = [out[j] for j in fc] + [ys[j] for j in fy]
            grads = tape.gradient(targets, watched, output_gradients=gc + gy,
                                  unconnected_gradients=UnconnectedGradients.ZERO)
            g_c, g_x, g_k = _split(grads, len(fc), len(fx), len(fk))
            return g_c + [s + g for s, g in zip(acc, g_k, strict=True)] + g_x
        return trace_body(vjp_step, ct_c + acc0 + [_step(c) for c in carries_t] +
                          [_step(x) for x in xs] + [_step(g) for g in ct_y] +
                          [_step(r) for r in kept] + consts)

    vbody, vcap = _derived(body, ("vjp-given", tuple(fc), tuple(fk), tuple(fy)), make_vjp)
    back = bind(scan_p, *ct_c, *acc0, *carries_t, *xs, *ct_y, *kept, *consts, *_values(vcap),
                body=vbody, n_carry=len(fc) + len(fk), n_x=nc + nx + len(fy) + residuals,
                length=length, reverse=not reverse, emits_carries=False)
    g_c, g_k, g_x = _split(back, len(fc), len(fk), len(fx))
    grads = [g_c[fc.index(j)] if j in fc else None for j in range(nc)]
    grads += [g_x[fx.index(j)] if j in fx else None for j in range(nx)]
    grads += [g_k[fk.index(j)] if j in fk else None for j in range(nk)]
    return tuple(grads)


def _shown_to(tape: GradientTape, body: Graph, inputs: list, made: dict) -> list:
    """`body`'s outputs, each op whose outputs `made` holds (by slot) shown to `tape` alone
    with them instead of computed: the tape can take its VJP, and the enclosing trace
    records no forward op. The others run (the trace keeps them if a VJP reads them)."""
    env: dict[int, Any] = dict(zip(body.inputs, inputs, strict=True))
    env.update((s, Tensor(v)) for s, v in body.constants.items())
    for n in body.nodes:
        args = [env[i] for i in n.inputs]
        if n.outputs[0] in made:
            outputs = tuple(made[o] for o in n.outputs)
            tape.process(n.prim, args, outputs, n.params, 0)
        else:
            out = bind(n.prim, *args, **n.params)
            outputs = tuple(out) if n.prim.multiple_results else (out,)
        env.update(zip(n.outputs, outputs, strict=True))
    return [env[o] for o in body.outputs]


def _scan_batch(vals: tuple, dims: tuple, body: Graph, n_carry: int, n_x: int, length: int,
                reverse: bool, emits_carries: bool) -> tuple:
    size = dims.size
    nc, nx = n_carry, n_x
    carry = []
    for v, d in zip(vals[:nc], dims[:nc], strict=True):
        if d is None:  # a batched input reaches every carry after one step
            shape = shape_of(v)
            v = bind(broadcast_to_p, bind(reshape_p, v, shape=(1,) + shape),
                     shape=(size,) + shape)
        carry.append(move_to_front(v, d))
    # A sequence's batch axis goes second: its first stays the loop's.
    xs = [v if d is None else move_axis(v, d, 1)
          for v, d in zip(vals[nc:nc + nx], dims[nc:nc + nx], strict=True)]
    consts = [move_to_front(v, d) for v, d in zip(vals[nc + nx:], dims[nc + nx:], strict=True)]
    in_axes = tuple([0] * nc + [None if d is None else 0 for d in dims[nc:]])

    def make() -> tuple:
        def batch_step(*a: Any) -> list:
            return list(vmap(lambda *b: interpret(body, list(b)), in_axes=in_axes)(*a))
        return trace_body(batch_step, carry + [_step(x) for x in xs] + consts)

    bbody, captured = _derived(body, ("batch", in_axes, size), make)
    res = bind(scan_p, *carry, *xs, *consts, *_values(captured), body=bbody, n_carry=nc,
               n_x=nx, length=length, reverse=reverse, emits_carries=emits_carries)
    return res, [0] * nc + [1] * (len(res) - nc)


def _scan_lower(jax: Any, *args: Any, body: Graph, n_carry: int, n_x: int, length: int,
                reverse: bool, emits_carries: bool) -> list:
    carry, xs, consts = _split(args, n_carry, n_x, len(args) - n_carry - n_x)

    def step(c: tuple, x: tuple) -> tuple:
        out = lower_graph(jax, body, list(c) + list(x) + consts)
        return tuple(out[:n_carry]), tuple(out[n_carry:])

    final, ys = jax.lax.scan(step, tuple(jax.numpy.asarray(c) for c in carry),
                             tuple(jax.numpy.asarray(x) for x in xs), length=length,
                             reverse=reverse)
    return list(final) + list(ys)


def _scan_prune(params: dict, live: list) -> tuple | None:
    """A traced scan without the per-step results nobody reads (the intermediates a VJP
    does not use, NOTE(scan-residuals)) and the sequences and outside tensors its body
    then reads no more; the carries stay. None if nothing can go."""
    body, nc, nx = params["body"], params["n_carry"], params["n_x"]
    keep_out = [k < nc or alive for k, alive in enumerate(live)]
    pruned = dataclasses.replace(
        body, inputs=list(body.inputs), constants=dict(body.constants),
        outputs=[o for o, keep in zip(body.outputs, keep_out, strict=True) if keep],
        nodes=[dataclasses.replace(n) for n in body.nodes])  # the body may be shared
    eliminate_dead_code(pruned)
    read = set(pruned.outputs)
    for n in pruned.nodes:
        read.update(n.inputs)
        if n.sized:  # the sizes it reads (NOTE(sized-params))
            read.update(size_slots(n.params))
        if n.backward is not None:
            read.update(n.backward.refs)
    for check, _, _ in pruned.size_checks:
        read.update(size_slots(check))
    keep_in = [k < nc or s in read for k, s in enumerate(body.inputs)]
    if all(keep_out) and all(keep_in):
        return None
    pruned.inputs = [s for s, keep in zip(body.inputs, keep_in, strict=True) if keep]
    # Its VJP (if the replay is differentiated from outside) recomputes what it needs:
    # the outputs no longer end with the kept carries.
    return (dict(params, body=pruned, n_x=sum(keep_in[nc:nc + nx]),
                 emits_carries=params["emits_carries"] and all(keep_out)), keep_in, keep_out)


def _scan_form(args: tuple, params: dict, reverse: bool) -> list | None:
    """The scan bound under a tape or an accumulator (catalog's `form`): it also keeps the
    carries entering each step, which its VJP would otherwise recompute with a second
    forward scan; under a tape, its body's intermediates too (NOTE(scan-residuals)). None
    for a scan that keeps them already."""
    if params["emits_carries"]:
        return None
    body, nc, nx = params["body"], params["n_carry"], params["n_x"]
    example = list(args[:nc]) + [_step(x) for x in args[nc:nc + nx]] + list(args[nc + nx:])
    emitting, more = emitting_carries(body, nc, example, residuals=reverse and _plain(body))
    outs = bind(scan_p, *args, *_values(more), **dict(params, body=emitting, emits_carries=True))
    return list(outs[:len(body.outputs)])


# The body may relate any output to any input.
scan_p = define(Primitive("scan", _scan_impl, multiple_results=True),
                jvp=_scan_jvp, vjp=_scan_vjp, batch=_scan_batch, sparsity=dense_deps,
                lower=_scan_lower, form=_scan_form, passes=Hints(prune=_scan_prune))


def bind_scan(step: Callable[..., list], init: list, xs: list, reverse: bool) -> list:
    """bind scan_p for `step` (carries, one step of each sequence -> new carries, one step
    of each result) over the sequences `xs` (at least one) from the carries `init`."""
    lengths = {shape_of(x)[0] if shape_of(x) else None for x in xs}
    if len(lengths) != 1 or None in lengths:
        raise ValueError(f"scan: the sequences must all have a leading axis of one length; "
                         f"got shapes {[tuple(shape_of(x)) for x in xs]}.")
    (length,) = lengths
    example = list(init) + [_step(x) for x in xs]
    body, captured = trace_body(step, example)
    for k, (c, slot) in enumerate(zip(init, body.outputs, strict=False)):
        shape, dtype = body.avals[slot]
        if tuple(shape) != tuple(shape_of(c)) or np.dtype(dtype) != np.asarray(c._value).dtype:
            raise TypeError(f"scan: the loop body turns carry {k} of shape {tuple(shape_of(c))} "
                            f"and dtype {np.asarray(c._value).dtype} into shape {tuple(shape)} "
                            f"and dtype {np.dtype(dtype)}; a carry keeps its shape and dtype "
                            "(cast the initializer, or the body's result).")
    outs = bind(scan_p, *init, *xs, *_values(captured), body=body, n_carry=len(init),
                n_x=len(xs), length=length, reverse=reverse, emits_carries=False)
    return list(outs)


# NOTE(scan-residuals): a scan's VJP needs, at each step, the values its body's ops made
# (an LSTM step's gates and activations). Recomputing them in the backward scan costs a
# second forward pass: more flops and twice the transcendentals of JAX's LSTM gradient
# (docs/performance-notes.md, #scan-residuals). So a scan run under a tape returns, stacked as extra results, the values of
# its body that VJPs read (`_read_by_vjps`: what each rule's `reads` says, NOTE(saved-
# values) in ops/structural.py; a random draw's always), the carries entering each step
# after them. Its VJP shows each step's ops to a tape with those values (`_shown_to`)
# and traces only their VJPs; an op whose values were not kept runs again there, so a
# rule that reads more than its `reads` says costs time, never a wrong value. A traced
# graph then drops what its VJP does not read after all (the `prune` rule). A body
# with a custom gradient or sizes read at replay keeps the recomputing VJP.
def _plain(body: Graph) -> bool:
    """Whether `body` is plain ops only (no custom gradient, no sizes read at replay)."""
    return not body.sized and all(type(n) is Node and n.backward is None for n in body.nodes)


def _read_by_vjps(body: Graph) -> list:
    """The output slots of the nodes of `body` some VJP reads (all of such a node's),
    every float input taken to need a cotangent."""
    read = set()
    for n in body.nodes:
        needs = tuple(_dt.kind(np.dtype(body.avals[i][1])) in "fc" for i in n.inputs)
        ins, outs = vjp_reads(n.prim, needs, len(n.outputs))
        read.update(i for i, r in zip(n.inputs, ins, strict=True) if r)
        read.update(o for o, r in zip(n.outputs, outs, strict=True)
                    if r or STATEFUL in n.prim.effects)
    return [o for n in body.nodes if not read.isdisjoint(n.outputs) for o in n.outputs]


def emitting_carries(body: Graph, n_carry: int, example: list,
                     residuals: bool = False) -> tuple[Graph, list]:
    """`body` that also returns its input carries, as results of each step; with
    `residuals`, the values of its ops that VJPs read before them (NOTE(scan-residuals))."""
    slots = _read_by_vjps(body) if residuals else []

    def step(*a: Any) -> list:
        values: dict = {}
        out = interpret(body, list(a), values)
        return out + [values[s] for s in slots] + list(a[:n_carry])

    graph, captured = trace_body(step, example)
    if residuals:
        graph.__dict__["_residuals"] = (body, tuple(slots))
    return graph, captured
