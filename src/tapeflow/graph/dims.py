"""Sizes as symbols in a size-generic trace: what an op computes from its inputs' sizes.

NOTE(symbolic-sizes): in a trace meant to serve every size of an input_signature's None
dimensions, the sizes ops read (`core.sizes`, through `shape_source`/`shape_of`) are
`Dim`s: ints of the traced size that remember where they came from. Python arithmetic on
them (+, -, *, //, % with ints or other Dims; sum and math.prod) gives Dims again, whose
expression (`SizeExpr`) lands in the params of the op they feed and is computed again
from the sizes when the graph runs (`ir.resolve`): `tf.split(x, 3)` of a None axis holds
n // 3, not the traced 2. A comparison of a Dim, or its truth (`if n % 2:`), is a decision
the graph holds only at sizes that decide the same: it becomes a size check (a
`size_check` node and a guard on it), so a replay at sizes that decide otherwise traces
again (graph/replay.py's GuardFailed) instead of running the other size's branch.

What no Dim can see (a size read from an array itself, float arithmetic, a Dim made into
a plain int) leaves plain ints, floats and constants in the graph, which the comparison of
two traces (NOTE(two-sizes) in graph/polymorphic.py) finds differing and keeps per size:
it never takes an int for a size it was not recorded as.
"""

from __future__ import annotations

from typing import Any

from .ir import SizeExpr, SizeOf

__all__ = ["Dim", "Sizes", "read_sizes", "leaf", "decided"]


class Dim(int):
    """A size handed out by `tracer` (graph/trace.py) while it traces: `expr` (a SizeOf or
    a SizeExpr of them) of the traced value `int(self)`."""

    size_symbol = True  # core.bind hands impls the plain int

    def __new__(cls, value: int, tracer: Any, expr: Any) -> "Dim":
        self = super().__new__(cls, value)
        self.tracer, self.expr = tracer, expr
        return self

    def __reduce__(self) -> Any:
        return int, (int(self),)  # a copy outside the trace is the plain size

    def _term(self, other: Any) -> Any:
        """`other` as an expression term of this trace: a SizeOf/SizeExpr, an int, or None
        (not one this trace can keep)."""
        if type(other) is Dim:
            return other.expr if other.tracer is self.tracer else None
        if type(other) is int or (isinstance(other, int) and not isinstance(other, bool)):
            return int(other)
        return None

    def _op(self, op: str, value: Any, *terms: Any) -> Any:
        if value is NotImplemented or not self.tracer.sizing or any(t is None for t in terms) \
                or not isinstance(value, int) or isinstance(value, bool):
            return value
        return Dim(value, self.tracer, SizeExpr(op, terms))

    def _check(self, op: str, value: Any, *terms: Any) -> Any:
        if value is NotImplemented or not self.tracer.sizing or any(t is None for t in terms):
            return value
        if op in ("eq", "ne") and type(self.expr) is SizeOf and type(terms[1]) is int and \
                terms[1] == int(self):
            # A size read from an array itself, as shapes are compared: the same size, not
            # a decision. Were it a literal (n == 4 at n = 4), the next trace, at another
            # size, decides otherwise, records the check, and the two traces differ
            # (NOTE(two-sizes)).
            return value
        self.tracer.size_check(SizeExpr(op, terms), bool(value))
        return value

    def __neg__(self) -> Any:
        return self._op("neg", int.__neg__(self), self.expr)

    def __pos__(self) -> Any:
        return self

    def __bool__(self) -> bool:
        return self._check("ne", int(self) != 0, self.expr, 0)


class Sizes(tuple):
    """A shape holding Dims. Two shapes of different ranks are unequal without comparing
    a size (a tuple compares its items first: (n, 6, 3) == (3,) would decide n == 3)."""

    def __eq__(self, other: Any) -> Any:
        if not isinstance(other, tuple):
            return NotImplemented
        return len(self) == len(other) and all(a == b for a, b in zip(self, other))

    def __ne__(self, other: Any) -> Any:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__


def _arithmetic(op: str, reflected: bool) -> Any:
    name = f"__{'r' if reflected else ''}{op}__"
    plain = getattr(int, name)
    if reflected:
        def method(self: Dim, o: Any) -> Any:
            return self._op(op, plain(self, o), self._term(o), self.expr)
    else:
        def method(self: Dim, o: Any) -> Any:
            return self._op(op, plain(self, o), self.expr, self._term(o))
    method.__name__ = name
    return method


def _comparison(op: str) -> Any:
    plain = getattr(int, f"__{op}__")

    def method(self: Dim, o: Any) -> Any:
        return self._check(op, plain(self, o), self.expr, self._term(o))
    method.__name__ = f"__{op}__"
    return method


for _op in ("add", "sub", "mul", "floordiv", "mod"):
    setattr(Dim, f"__{_op}__", _arithmetic(_op, False))
    setattr(Dim, f"__r{_op}__", _arithmetic(_op, True))
for _op in ("eq", "ne", "lt", "le", "gt", "ge"):
    setattr(Dim, f"__{_op}__", _comparison(_op))
Dim.__hash__ = int.__hash__  # (a class that defines __eq__ loses its inherited hash)


def read_sizes(params: Any, tracer: Any) -> tuple[Any, bool]:
    """`params` with each Dim of `tracer` as its expression (sizes read when the graph
    runs), and whether there was one."""
    if type(params) is Dim:
        if params.tracer is tracer:
            return params.expr, True
        return int(params), False
    if isinstance(params, dict):
        found = False
        out = {}
        for k, v in params.items():
            out[k], hit = read_sizes(v, tracer)
            found |= hit
        return (out, True) if found else (params, False)
    if isinstance(params, (tuple, list)) and not hasattr(params, "_fields"):
        items = [read_sizes(v, tracer) for v in params]
        if not any(hit for _, hit in items):
            return params, False
        return type(params)(v for v, _ in items), True
    if isinstance(params, slice):
        parts, found = read_sizes((params.start, params.stop, params.step), tracer)
        return (slice(*parts), True) if found else (params, False)
    return params, False


def leaf(tracer: Any, value: int, slot: int, axis: int) -> Dim:
    """Axis `axis` of the value in `slot` of `tracer`'s graph, of size `value`."""
    return Dim(value, tracer, SizeOf(slot, axis))


def lower_bound(expr: Any, open_axis: Any) -> int | None:
    """The least value `expr` takes at any sizes of the call's key: a None dimension of
    an input (`open_axis`) is at least 2, any other size at least 0; None where unknown."""
    if type(expr) is int:
        return expr
    if isinstance(expr, SizeOf):
        return 2 * expr.times if open_axis(expr) else 0
    if not isinstance(expr, SizeExpr) or expr.op not in ("add", "mul", "floordiv", "mod"):
        return None
    a, b = (lower_bound(x, open_axis) for x in expr.args)
    if a is None or b is None or a < 0 or b < 0:
        return None
    if expr.op == "add":
        return a + b
    if expr.op == "mul":
        return a * b
    return 0 if type(expr.args[1]) is not int or expr.args[1] > 0 else None


_MIRRORED = {"lt": "gt", "gt": "lt", "le": "ge", "ge": "le", "eq": "eq", "ne": "ne"}


def decided(check: SizeExpr, open_axis: Any) -> bool:
    """Whether a comparison of sizes has one answer at every size of the call's key (a
    size is never negative; a None dimension of an input is at least 2; two of those are
    equal or not as the key says), so that no check need hold it."""
    if len(check.args) != 2 or check.op not in _MIRRORED:
        return False
    a, b = check.args
    op = check.op
    if type(a) is int:
        a, b, op = b, a, _MIRRORED[op]
    if a == b:
        return True  # one size against itself
    if isinstance(a, SizeOf) and isinstance(b, SizeOf):
        return op in ("eq", "ne") and a.times == b.times == 1 and open_axis(a) and open_axis(b)
    low = lower_bound(a, open_axis) if type(b) is int else None
    if low is None:
        return False
    return b <= low if op in ("lt", "ge") else b < low
