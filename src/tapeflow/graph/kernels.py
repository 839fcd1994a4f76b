"""Rolled loops compiled by Numba: a scan's steps as one machine-code kernel.

A rolled loop of small values (an LSTM over characters of 14 entries) replays one NumPy
call per node and step, about half a microsecond each, whatever the values' size: the
suite's character-level LSTM gradient makes 17,000 of them. Numba, where it is
installed, compiles the whole loop into one function whose steps run the body's
arithmetic element by element, with no call per node.

NOTE(loop-kernels): a scan node whose body compiles runs as one Numba function
(`loop_kernels`). Its body compiles where every value is float32 or float64 of static
shape, the body holds nodes only (no guard, no variable write, no nested loop), and
each node's primitive has a `kernel` rule for its shapes (catalog.py: a NumPy ufunc impl
without params has one by default). The generated code:

- holds a body's values of a few elements as scalars first (NOTE(scalarize): an ODE's
  `y[0]` and `y[1]`), where the rewrite pays: scalar code then allocates no array;
- runs the steps in a `for` loop; each node's value is a scalar (rank 0) or a flat
  C-ordered array, its shape kept aside;
- runs elementwise nodes (the `elementwise` hint) on one element at a time: consecutive
  ones of the same shape share one loop over the elements (so a value written in that
  loop is read at the element being computed, where a broadcast read could see one not
  yet written), each writing a buffer allocated once for all steps, or a local where
  only that loop reads the value;
- runs other nodes (sums, reshapes, broadcasts) on whole values, by their rule's
  expression, made C-ordered and flat;
- copies each new carry at the end of a step (its buffer is rewritten by the next) and
  writes each per-step result into its row of the stacked result.

The kernel's values are not the NumPy replay's bit for bit: Numba's exp, tanh and sums
are its own (LLVM's), within a few ulps, as XLA's are. So the kernels are one of the
ways of `jit_compile="auto"` (graph/executables.py), timed against XLA and the NumPy
replays, and never the NumPy replay's own. Division by zero gives NumPy's inf or NaN
(`error_model="numpy"`). A kernel that Numba fails to compile at its first call (a
ufunc it does not support) leaves its loop to the NumPy scan from then on.
"""

from __future__ import annotations

import math
import re
import warnings
from typing import Any, Callable

import numpy as np

from ..catalog import rule
from ..core import registry
from ..optional import module_or_none
from .ir import Graph, Node
from .replay import INFIX
from .scalarize import scalarize
from .specialize import OPERATORS

__all__ = ["loop_kernels", "scan_kernel", "available", "MAX_NODES"]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
# Numba compiles a body in about 3 ms a node (a 1,000-node body: 3.2 s, 300 nodes: 0.9 s,
# one core): a graph's kernels hold at most this many nodes, its busiest loops first, so
# that the first calls of jit_compile="auto" spend seconds, not minutes, compiling them.
MAX_NODES = 2048
# The ufuncs whose Python operator is the same IEEE operation (specialize.OPERATORS),
# written as the NumPy replay writes them (replay.INFIX): the generated code reads as
# arithmetic, and compiles a little faster
# (the character-level LSTM's two kernels: 1.34-1.41 and 1.79-1.87 s, against 1.46-1.49
# and 1.88-1.92 s as np.multiply and np.add calls).
_OPERATORS = {ufunc: "(" + INFIX[op] + ")" for ufunc, op in OPERATORS.items()}


def available() -> bool:
    """Whether Numba is installed (the `kernels` extra)."""
    return module_or_none("numba") is not None


def loop_kernels(g: Graph) -> dict[int, Callable]:
    """The impls of `g`'s scan nodes whose bodies compile (NOTE(loop-kernels)), by node
    index: each takes and returns what the scan's impl does. Empty where Numba is not
    installed or no loop compiles.

    Example:
        >>> import tapeflow as tf
        >>> from tapeflow.graph.kernels import loop_kernels
        >>> from tapeflow.graph.reroll import reroll
        >>> def f(h):
        ...     for _ in range(20):
        ...         h = tf.tanh(h) * 0.5 + 0.1
        ...     return h
        >>> g = reroll(tf.function(f).get_concrete_function(tf.constant([0.3, -1.0])).graph)
        >>> loops = [k for k, n in enumerate(g.nodes) if n.prim.name == "scan"]
        >>> sorted(loop_kernels(g)) == (loops if available() else [])  # {} without Numba
        True
    """
    if not available():
        return {}
    scan = registry()["scan"]
    loops = [(n.params["length"] * len(n.params["body"].nodes), k) for k, n in enumerate(g.nodes)
             if type(n) is Node and n.prim is scan and not n.sized]
    out, budget = {}, MAX_NODES
    for _, k in sorted(loops, reverse=True):  # the loops that make the most NumPy calls first
        size = len(g.nodes[k].params["body"].nodes)
        if size <= budget:
            fn = scan_kernel(g.nodes[k])
            if fn is not None:
                out[k], budget = fn, budget - size
    return out


def scan_kernel(n: Node) -> Callable | None:
    """The impl of scan node `n` as a Numba kernel (NOTE(loop-kernels)), or None where its
    body does not compile."""
    body: Graph = n.params["body"]
    held = scalarize(body)  # NOTE(scalarize): a tiny value's elements as scalars, no arrays
    source = None
    for form in ([held] if held.inputs == body.inputs and held.outputs == body.outputs
                 and held is not body else []) + [body]:
        source = _Source(form, n.params["n_carry"], n.params["n_x"], n.params["reverse"]).make()
        if source is not None:
            body = form
            break
    if source is None:
        return None
    text, ns, const_args = source
    numba = module_or_none("numba")
    exec(compile(text, f"<tapeflow loop kernel {body.name}>", "exec"), ns)  # noqa: S102
    compiled = numba.njit(error_model="numpy")(ns["loop"])
    return _Runner(n, body, compiled, const_args, text)


def _plain_ufunc(impl: Any, n_inputs: int) -> bool:
    """Whether `impl` is a NumPy ufunc of these many inputs and one output that works
    element by element (np.matmul is a ufunc too, of a signature over whole axes)."""
    return (isinstance(impl, np.ufunc) and impl.signature is None and impl.nout == 1
            and impl.nin == n_inputs)


class _Runner:
    """Calls a loop kernel with the scan's inputs laid out as it reads them, and gives
    back what the scan's impl does; falls back to the scan's impl for good where Numba
    fails to compile the kernel."""

    def __init__(self, n: Node, body: Graph, compiled: Any, const_args: list, source: str) -> None:
        self.params = dict(n.params)
        self.impl = n.prim.impl
        self.body = body
        self.compiled: Any = compiled
        self.const_args = const_args
        self.source = source
        self.failed: str | None = None

    def __call__(self, *inputs: Any) -> list:
        if self.compiled is None:
            return self.impl(*inputs, **self.params)
        b, p = self.body, self.params
        nc, nx, length = p["n_carry"], p["n_x"], p["length"]
        args = [self._arg(a, b.avals[b.inputs[j]][0], j < nc, nc <= j < nc + nx, length)
                for j, a in enumerate(inputs)]
        try:
            out = self.compiled(*args, *self.const_args, length)
        except module_or_none("numba").core.errors.NumbaError as e:
            lines = [line.strip() for line in re.sub(r"\x1b\[[0-9;]*m", "", str(e)).splitlines()]
            said = [line for line in lines if line][:2]  # Numba's stage, then the cause
            self.compiled, self.failed = None, ": ".join(said) or type(e).__name__
            warnings.warn(f"Numba did not compile the loop kernel of {self.body.name} "
                          f"({self.failed}); the loop runs as a NumPy scan.", stacklevel=2)
            return self.impl(*inputs, **self.params)
        results = []
        for k, s in enumerate(b.outputs):
            shape, dtype = b.avals[s]
            lead = () if k < nc else (length,)
            results.append(np.asarray(out[k], dtype).reshape(lead + tuple(shape)))
        return results

    @staticmethod
    def _arg(a: Any, shape: tuple, carry: bool, steps: bool, length: int) -> Any:
        """One input as the kernel reads it, of one Numba type whatever the call: a rank-0
        value as a scalar, a sequence as rows of flat steps, a carry as its own writable
        flat array (the kernel rebinds it to arrays it makes), anything else flat and
        read-only (a read-only input and a writable one would each compile a kernel)."""
        a = np.asarray(a)
        if not shape and not steps:
            return a[()]
        if carry:
            return (a if a.flags.c_contiguous and a.flags.writeable else np.array(a, order="C")).reshape(-1)
        flat = np.ascontiguousarray(a).reshape((length, math.prod(shape)) if steps and shape else -1)
        if flat.flags.writeable:
            flat = flat.view()
            flat.flags.writeable = False
        return flat


class _Source:
    """The text of one loop kernel (NOTE(loop-kernels)): each node's expression found
    first (`plan`), then written out (`text`)."""

    def __init__(self, body: Graph, n_carry: int, n_x: int, reverse: bool) -> None:
        self.b, self.nc, self.nx, self.reverse = body, n_carry, n_x, reverse
        self.ns: dict[str, Any] = {"np": np}
        self.exprs: list[tuple[str, bool]] = []   # per node: (rule text, elementwise)
        self.groups: list[int | None] = []        # per node: its element loop, if any
        self.local: set[int] = set()              # values held as one element, not a buffer

    def make(self) -> tuple[str, dict, list] | None:
        b = self.b
        if not b.outputs or b.var_slots or b.sized or any(
                type(n) is not Node or n.backward is not None or n.prim.multiple_results
                for n in b.nodes):
            return None
        for shape, dtype in b.avals.values():
            if np.dtype(dtype) not in _FLOATS or not all(type(d) is int for d in shape):
                return None
        if not self.plan():
            return None
        return self.text()

    # ---------------------------------------------------------------- values
    def shape(self, s: int) -> tuple:
        return tuple(self.b.avals[s][0])

    def dtype(self, s: int) -> str:
        dtype = np.dtype(self.b.avals[s][1])
        self.ns[f"D{dtype.name}"] = dtype.type
        return f"D{dtype.name}"

    def whole(self, s: int) -> str:
        """Value s as a whole (a scalar, or an array of its shape)."""
        shape = self.shape(s)
        return f"a{s}" if len(shape) <= 1 else f"a{s}.reshape({shape!r})"

    def element(self, s: int, out_shape: tuple) -> str:
        """Value s read at element `j` of a loop over `out_shape` (broadcast as NumPy)."""
        shape = self.shape(s)
        if s in self.local:
            return f"e{s}"
        if not shape:
            return f"a{s}"
        if shape == out_shape:
            return f"a{s}[j]"
        if math.prod(shape) == 1:
            return f"a{s}[0]"
        terms, out_step, in_step = [], 1, 1
        for d in range(1, len(out_shape) + 1):
            size = out_shape[-d]
            have = shape[-d] if d <= len(shape) else 1
            if have != 1:
                index = f"(j // {out_step})" if out_step > 1 else "j"
                terms.append(f"({index} % {size}) * {in_step}" if in_step > 1 else f"({index} % {size})")
            out_step *= size
            in_step *= have
        return f"a{s}[{' + '.join(terms) or '0'}]"

    # ---------------------------------------------------------------- the plan
    def plan(self) -> bool:
        """Each node's rule text and element loop; False where a node has no kernel."""
        made_in: dict[int, int] = {}   # value -> the element loop that writes it
        group, group_shape = -1, None
        for k, n in enumerate(self.b.nodes):
            kernel = rule(n.prim, "kernel")
            elementwise = rule(n.prim, "passes").elementwise
            shapes = [self.shape(s) for s in n.inputs]
            if kernel is not None:
                text = kernel(shapes, **n.params)
            elif _plain_ufunc(n.prim.impl, len(shapes)) and not n.params:
                text = _OPERATORS.get(n.prim.impl) or \
                    f"np.{n.prim.impl.__name__}({', '.join('{%d}' % i for i in range(len(shapes)))})"
                elementwise = True
            else:
                return False
            if text is None:
                return False
            self.exprs.append((text, elementwise))
            out_shape = self.shape(n.outputs[0])
            if not (elementwise and out_shape):
                group_shape = None
                self.groups.append(None)
                continue
            # Values of one shape alone share a loop: a value written in it is read at
            # the element being computed, never at one the loop has not reached.
            if group_shape != out_shape:
                group, group_shape = group + 1, out_shape
            self.groups.append(group)
            made_in[n.outputs[0]] = group
        readers: dict[int, set] = {}
        for k, n in enumerate(self.b.nodes):
            for s in n.inputs:
                readers.setdefault(s, set()).add(self.groups[k])
        kept = set(self.b.outputs)
        self.local = {s for s, g in made_in.items()
                      if s not in kept and readers.get(s, {None}) <= {g}}
        return True

    # ---------------------------------------------------------------- the function
    def text(self) -> tuple[str, dict, list]:
        b, nc, nx = self.b, self.nc, self.nx
        params, const_args, inside = [], [], []
        for j, s in enumerate(b.inputs):
            if j < nc:
                params.append(f"c{j}")
                inside.append(f"        a{s} = c{j}")
            elif j < nc + nx:
                params.append(f"x{j}")
                inside.append(f"        a{s} = x{j}[t]")
            else:
                params.append(f"a{s}")
        for s, value in b.constants.items():
            params.append(f"a{s}")
            value = np.asarray(value)
            const_args.append(_Runner._arg(value, value.shape, False, False, 0))
        head = [f"def loop({', '.join(params + ['length'])}):"]
        ys = b.outputs[nc:]
        for k, s in enumerate(ys):
            width = () if not self.shape(s) else (math.prod(self.shape(s)),)
            head.append(f"    ys{k} = np.empty((length,) + {width!r}, {self.dtype(s)})")
        body, open_group = [], None
        for k, n in enumerate(b.nodes):
            text, elementwise = self.exprs[k]
            out = n.outputs[0]
            out_shape = self.shape(out)
            group = self.groups[k]
            if group is not None:
                if group != open_group:
                    body.append(f"        for j in range({math.prod(out_shape)}):")
                    open_group = group
                expr = text.format(*[self.element(s, out_shape) for s in n.inputs])
                if out in self.local:
                    body.append(f"            e{out} = {expr}")
                else:
                    head.append(f"    a{out} = np.empty({math.prod(out_shape)}, {self.dtype(out)})")
                    body.append(f"            a{out}[j] = {expr}")
                continue
            open_group = None
            expr = text.format(*[self.element(s, ()) if elementwise else self.whole(s)
                                 for s in n.inputs])
            if out_shape:
                body.append(f"        a{out} = np.ascontiguousarray({expr}).reshape(-1)")
            else:
                body.append(f"        a{out} = {self.dtype(out)}({expr})")
        step = "length - 1 - i" if self.reverse else "i"
        end = []
        for j, s in enumerate(b.outputs[:nc]):
            end.append(f"        n{j} = a{s}.copy()" if self.shape(s) else f"        n{j} = a{s}")
        end += [f"        c{j} = n{j}" for j in range(nc)]
        for k, s in enumerate(ys):  # element by element: a row assigned whole compiles
            if self.shape(s):       # Numba's broadcasting setitem, seconds a kernel
                end += [f"        for j in range({math.prod(self.shape(s))}):",
                        f"            ys{k}[t, j] = a{s}[j]"]
            else:
                end.append(f"        ys{k}[t] = a{s}")
        results = [f"c{j}" for j in range(nc)] + [f"ys{k}" for k in range(len(ys))]
        lines = (head + ["    for i in range(length):", f"        t = {step}"]
                 + inside + body + end + [f"    return ({', '.join(results)},)"])
        return "\n".join(lines) + "\n", self.ns, const_args
