"""One row per primitive: how to call it, inputs on its valid domain, a NumPy reference.

The rows live with their family: tests/ops/table_<family>.py holds the rows of the
primitives defined in src/tapeflow/ops/<family>.py (table_structural.py those of the
bottom module, ops/structural.py) and of the family's composite ops. This module
defines the row classes and the input
helpers the tables share, holds the rows of the primitives defined outside
tapeflow/ops/ (read_variable in core.py, custom_gradient in custom.py), and joins
everything, structural first and then the families in the order of
`tapeflow.ops.FAMILIES`, into ROWS, NONDIFF_ROWS and EXEMPT.

`tests/rules/` runs every check on every row. Its coverage tests fail when a primitive
of the package has no row (or no reasoned exemption) in its family's table, and its
placement test when a row is not named after an op or primitive of its table's family.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

import tapeflow as tf
from tapeflow import ops
from tapeflow.core import registry


@dataclass
class Row:
    """A differentiable primitive's test case.

    fn: the op, a function of the differentiable arguments only.
    make: rng -> list of float64 arrays on the op's valid domain.
    ref: NumPy reference of fn (None when fn is itself a composition checked elsewhere).
    smooth: second derivatives are checked where the op is smooth at the inputs.
    prims: the primitives the row covers (default: the row's name).
    """

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], list]
    ref: Callable[..., Any] | None = None
    smooth: bool = True
    prims: tuple = ()
    f32_tol: float = 2e-2

    def covers(self) -> tuple:
        return self.prims or (self.name,)


@dataclass
class NondiffRow:
    """A primitive whose outputs carry no derivative: value check and 'no gradient' check."""

    name: str
    fn: Callable[..., Any]
    make: Callable[[np.random.Generator], list]
    ref: Callable[..., Any]
    prims: tuple = field(default=())

    def covers(self) -> tuple:
        return self.prims or (self.name,)


# ---------------------------------------------------------------- inputs
def normal(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape)


def scaled_normal(scale: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: scale * rng.standard_normal(shape)


def uniform(lo: float, hi: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(lo, hi, shape)


def away_from_zero(*shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    """Magnitudes in [0.3, 2] with random signs: no kinks of abs/relu/sign near the inputs."""
    return lambda rng: rng.uniform(0.3, 2.0, shape) * rng.choice([-1.0, 1.0], shape)


def args(*makers: Callable) -> Callable[[np.random.Generator], list]:
    return lambda rng: [m(rng) for m in makers]


# ---------------------------------------------------------------- helpers several tables use
# Complex rules are checked through real functions of real inputs: a row builds
# z = complex(a, b), applies the op and mixes the real and imaginary parts of the result,
# so finite differences, JVP/VJP consistency and second order all see the complex rules
# (NOTE(complex-gradients) in ops/complex.py).
def complex_part_mix(w):
    """A real function of both parts of w, so both parts' rules are checked."""
    return tf.math.real(w) + 0.5 * tf.math.imag(w)


# z = a + ib with a in (0.2, 0.6), b in (0.3, 0.8): off every branch cut of the functions
# given to complex_row.
COMPLEX_ARGS = args(uniform(0.2, 0.6, 4), uniform(0.3, 0.8, 4))


def complex_row(name, ref):
    """The row `<name>_complex` of the unary tf.math op `name` on complex inputs, against
    the NumPy function `ref`."""
    # The op is looked up by name when called, so the differential suite can run the
    # same row with TensorFlow bound to `tf`.
    return Row(f"{name}_complex",
               lambda a, b: complex_part_mix(getattr(tf.math, name)(tf.complex(a, b))),
               COMPLEX_ARGS, lambda a, b: (lambda w: w.real + 0.5 * w.imag)(ref(a + 1j * b)),
               prims=(name, "complex", "real", "imag"))


def pool_reference(x, k, s, padding, reduce):
    """Naive NHWC pooling, one window at a time (TensorFlow's SAME padding; the mean
    over unpadded elements)."""
    n, h, w, c = x.shape
    if padding == "SAME":
        oh, ow = -(-h // s[0]), -(-w // s[1])
        ph = max((oh - 1) * s[0] + k[0] - h, 0)
        pw = max((ow - 1) * s[1] + k[1] - w, 0)
        top, left = ph // 2, pw // 2
    else:
        oh, ow = (h - k[0]) // s[0] + 1, (w - k[1]) // s[1] + 1
        top = left = 0
    out = np.zeros((n, oh, ow, c))
    for i in range(oh):
        for j in range(ow):
            r0, c0 = i * s[0] - top, j * s[1] - left
            win = x[:, max(r0, 0):r0 + k[0], max(c0, 0):c0 + k[1], :]
            out[:, i, j, :] = reduce(win, axis=(1, 2))
    return out


# ---------------------------------------------------------------- primitives outside ops/
@tf.custom_gradient
def _custom_sin(x: Any) -> Any:
    def grad(dy: Any) -> Any:
        return dy * tf.cos(x)
    return tf.sin(x), grad


def _py_sin_times(x: Any, y: Any) -> Any:
    # Python code run as one op: its derivative comes from running it under a tape.
    return tf.py_function(lambda a, b: tf.sin(a) * b, [x, y], x.dtype)


def _np_scan(x, w, reverse=False):
    a, out = np.zeros_like(x[0]), []
    for e in (x[::-1] if reverse else x):
        a = np.tanh(a * w + e)
        out.append(a)
    return np.stack(out[::-1] if reverse else out)


def _pair_scan(x, w):
    # two carries (one a pair), a result that is not a carry, from the last step back
    def step(acc, e):
        h, (s, p) = acc
        h = tf.tanh(h * w + e)
        return h, (s + h, p * 0.5 + tf.sin(e))
    z = tf.zeros_like(x[0])
    h, (s, p) = tf.scan(step, x, initializer=(z, (z, z)), reverse=True)
    return h + s * p


def _np_pair_scan(x, w):
    h = s = p = np.zeros_like(x[0])
    hs, ss, ps = [], [], []
    for e in x[::-1]:
        h = np.tanh(h * w + e)
        s, p = s + h, p * 0.5 + np.sin(e)
        hs.append(h), ss.append(s), ps.append(p)
    return np.stack(hs[::-1]) + np.stack(ss[::-1]) * np.stack(ps[::-1])


def _newton_sqrt(f, x):
    for _ in range(30):  # Newton's method for x * x = a: the solver, unrecorded Python
        x = x - f(x) / (2.0 * x)
    return x


def _sqrt_root(a):
    # f closes over a; the tangent solve divides by f's (diagonal) linearization
    return tf.custom_root(lambda x: x * x - a, tf.ones_like(a), _newton_sqrt,
                          lambda g, y: y / g(tf.ones_like(y)))


def _dense_solve(mv, r):
    # a solver of the map it is given: its matrix, column by column, then LU
    n = int(r.shape[0])
    cols = [mv(tf.one_hot(i, n, dtype=r.dtype)) for i in range(n)]
    return tf.linalg.solve(tf.stack(cols, axis=1), r[:, None])[:, 0]


def _linear_solve(m, b):
    # a non-symmetric system closing over m, its transpose solved by the same solver
    a = m + 3.0 * tf.eye(int(m.shape[0]), dtype=m.dtype)
    return tf.custom_linear_solve(lambda v: tf.linalg.matvec(a, v), b, _dense_solve,
                                  transpose_solve=_dense_solve)


OUTSIDE_ROWS: list[Row] = [
    # loops (tapeflow/loops.py, tapeflow/control_flow.py): the body closes over w
    Row("scan", lambda x, w: tf.scan(lambda a, e: tf.tanh(a * w + e), x,
                                     initializer=tf.zeros_like(x[0])),
        args(normal(4, 3), normal(3)), _np_scan),
    Row("scan_pair_reverse", _pair_scan, args(normal(4, 3), normal(3)), _np_pair_scan,
        prims=("scan",)),
    Row("foldl", lambda x, w: tf.foldl(lambda a, e: a * w + tf.sin(e), x),
        args(normal(5, 2), normal(2)),
        lambda x, w: __import__("functools").reduce(lambda a, e: a * w + np.sin(e), x[1:], x[0]),
        prims=("scan",)),
    Row("map_fn", lambda x, w: tf.map_fn(lambda e: tf.reduce_sum(e * w) * e, x),
        args(normal(4, 3), normal(3)), lambda x, w: (x @ w)[:, None] * x, prims=("scan",)),
    # user rules
    Row("custom_gradient", _custom_sin, args(normal(4)), np.sin),
    # host callbacks (tapeflow/py_function.py)
    Row("py_function", _py_sin_times, args(normal(4), normal(4)), lambda x, y: np.sin(x) * y),
    # implicit differentiation (tapeflow/implicit.py): the solvers are the user's Python
    Row("custom_root", _sqrt_root, args(uniform(0.5, 2.0, 4)), np.sqrt),
    Row("custom_linear_solve", _linear_solve, args(scaled_normal(0.3, 3, 3), normal(3)),
        lambda m, b: np.linalg.solve(m + 3.0 * np.eye(3), b)),
]

def _ode_rows() -> list:
    """solve_ivp differentiable in y0 and args (tapeflow/scipy_ode.py, the scipy extra): a
    row per reverse-mode method, both covering the solve and its VJP primitive."""
    try:
        import scipy.integrate  # noqa: PLC0415 - the scipy extra: rows only where installed
        from tapeflow import scipy_ode  # noqa: PLC0415
    except ImportError:  # no SciPy: its primitives are not defined either
        return []

    def solve(sensitivity):
        def fn(y0, k):
            return scipy_ode.solve_ivp(
                lambda t, y, k: -k * y + 0.3 * tf.sin(y[::-1]), (0.0, 1.0), y0,
                method="DOP853", t_eval=[0.25, 1.0], args=(k,), rtol=1e-13, atol=1e-15,
                sensitivity=sensitivity).y
        return fn

    def ref(y0, k):
        return scipy.integrate.solve_ivp(
            lambda t, y: -k * y + 0.3 * np.sin(y[::-1]), (0.0, 1.0), y0, method="DOP853",
            t_eval=[0.25, 1.0], rtol=1e-13, atol=1e-15).y

    inputs = args(normal(3), uniform(0.5, 1.5, 3))
    return [Row("solve_ivp", solve("forward"), inputs, ref,
                prims=("solve_ivp", "solve_ivp_vjp")),
            Row("solve_ivp_adjoint", solve("adjoint"), inputs, ref,
                prims=("solve_ivp", "solve_ivp_vjp"))]


OUTSIDE_ROWS += _ode_rows()


OUTSIDE_NONDIFF_ROWS: list[NondiffRow] = [
    NondiffRow("numpy_function",
               lambda x: tf.numpy_function(lambda a: np.floor(a * 2), [x], x.dtype),
               args(normal(5)), lambda x: np.floor(x * 2)),
]

# Primitives without a row of their own, and the tests that cover them.
OUTSIDE_EXEMPT = {
    "read_variable": "takes a Variable, not a tensor: tests/test_tape.py and tests/test_forward.py "
                     "differentiate through variable reads (and the seeds do)",
    "print": "an effect with no value: tests/test_callbacks.py checks its output, that traced "
             "functions print at every replay, and that it leaves gradients alone",
}


# ---------------------------------------------------------------- where primitives are defined
PACKAGE = Path(tf.__file__).resolve().parent
OPS = PACKAGE / "ops"


def defined_in(name: str) -> Path:
    """The file that defines the registered primitive `name` (relative paths resolved
    from the working directory, as Python does)."""
    return Path(registry()[name].defined_at.rpartition(":")[0]).resolve()


def package_primitives() -> set:
    """The primitives tapeflow itself defines: not those a user, a test or a docstring
    example registers (extend.py's "my_cube"), which may or may not be registered when
    this runs."""
    return {name for name in registry() if defined_in(name).is_relative_to(PACKAGE)}


# ---------------------------------------------------------------- the joined table
FAMILY_NAMES = ("structural",) + tuple(m.__name__.rpartition(".")[2] for m in ops.FAMILIES)

# family name -> its table module, tests/ops/table_<family>.py (on sys.path: tests/conftest.py)
TABLES = {name: importlib.import_module(f"table_{name}") for name in FAMILY_NAMES}

ROWS: list[Row] = [row for t in TABLES.values() for row in t.ROWS] + OUTSIDE_ROWS
NONDIFF_ROWS: list[NondiffRow] = ([row for t in TABLES.values() for row in t.NONDIFF_ROWS]
                                  + OUTSIDE_NONDIFF_ROWS)
EXEMPT: dict[str, str] = {name: why for t in TABLES.values() for name, why in t.EXEMPT.items()}
EXEMPT.update(OUTSIDE_EXEMPT)
