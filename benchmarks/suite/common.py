"""What every workload of the suite shares: the Case record, the frameworks, the checks.

A workload module exposes ``NAME``, ``TITLE``, ``ORDER`` and ``cases(size)``, which
returns a list of `Case`; it may also expose ``sweep(size)``, which returns a `Sweep`
for ``run.py --plot``. ``size`` is "full", "quick" (a smoke run) or "tiny" (the tests).
Building the list runs nothing: a case's ``setup()`` builds its inputs and returns
the zero-argument ``run``; the first call of ``run`` pays any tracing or compiling,
later calls are the steady state; ``check(result)`` raises `WrongResult` unless the
result matches a float64 reference computed independently of the framework.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(HERE)
ROOT = os.path.dirname(BENCHMARKS)

# The existing single-purpose benchmarks (cnn.py, seed_problem.py, ...) are plain
# scripts in benchmarks/, imported by module name; and a checkout without
# `pip install -e .` still finds tapeflow in src/.
if BENCHMARKS not in sys.path:
    sys.path.insert(0, BENCHMARKS)
if importlib.util.find_spec("tapeflow") is None:
    sys.path.insert(0, os.path.join(ROOT, "src"))

SIZES = ("full", "quick", "tiny")
FRAMEWORKS = ("tapeflow", "numpy", "tensorflow", "jax", "torch", "autograd")
PEERS = ("tensorflow", "jax", "torch", "autograd")  # NumPy is the floor, not a peer
LABELS = {"tapeflow": "tapeflow", "numpy": "NumPy", "tensorflow": "TensorFlow",
          "jax": "JAX", "torch": "PyTorch", "autograd": "autograd"}


@dataclass
class Case:
    """One contestant of a workload.

    `group` names the problem within the workload (ratios compare cases of one group);
    `mode` says how the framework runs it: "eager", "traced" (tapeflow or TensorFlow
    function), "jit" (JAX), "xla" (tapeflow function(jit_compile=True): the traced graph
    compiled by XLA through JAX), "by hand" (NumPy); `ops` divides times into per-op costs;
    `metric` is "time" or "memory" (peak memory, measured in a fresh subprocess);
    `jax_twin` (an "xla" case's) names the JAX jit case of the same program, which the XLA
    summary compares it with (else with the group's fastest JAX jit case).
    """

    name: str
    framework: str
    setup: Callable[[], Callable[[], Any]]
    check: Callable[[Any], None]
    group: str = ""
    mode: str = "eager"
    ops: int = 1
    metric: str = "time"
    jax_twin: str = ""


@dataclass
class Sweep:
    """Cases at several sizes, for a figure: time against `xlabel` at each x; one line
    per case name, one panel per case group."""

    title: str
    xlabel: str
    filename: str
    points: list[tuple[int, list[Case]]] = field(default_factory=list)


class WrongResult(AssertionError):
    """A framework computed a result that differs from the float64 reference."""


class Unavailable(ImportError):
    """A peer framework is not installed (or cannot be imported): its cases are skipped."""


def size_of(size: str, table: dict[str, Any]) -> Any:
    if size not in SIZES:
        raise ValueError(f"size must be one of {SIZES}; got {size!r}")
    return table[size]


# ---------------------------------------------------------------------- frameworks
@functools.cache
def prepare(framework: str) -> str:
    """Import a framework set to one thread, once; return its version.

    Environment variables (set by run.py before NumPy is imported) cover BLAS, OpenMP
    and XLA; the frameworks' own thread pools are set here, before their first op.
    Raises `Unavailable` if the framework cannot be imported.
    """
    try:
        module = importlib.import_module(framework)
    except Exception as e:  # noqa: BLE001 - a broken peer install is skipped like a missing one
        raise Unavailable(f"{framework} not available ({type(e).__name__}: {e})") from e
    if framework == "torch":
        module.set_num_threads(1)
        try:
            module.set_num_interop_threads(1)
        except RuntimeError:  # only settable before torch's first parallel work
            pass
    elif framework == "tensorflow":
        module.get_logger().setLevel("ERROR")
        try:
            module.config.threading.set_intra_op_parallelism_threads(1)
            module.config.threading.set_inter_op_parallelism_threads(1)
        except RuntimeError:  # the runtime already started; the env variables still hold
            pass
    elif framework == "jax":
        # The float64 workloads must run in float64 in JAX too; float32 inputs stay
        # float32 (every JAX case converts its inputs with their NumPy dtype).
        module.config.update("jax_enable_x64", True)
    elif framework == "numpy":
        try:
            from threadpoolctl import threadpool_limits

            threadpool_limits(1)  # in case the BLAS ignored the environment variables
        except ImportError:
            pass
    return str(getattr(module, "__version__", "?"))


def installed(framework: str) -> bool:
    return importlib.util.find_spec(framework) is not None


# ---------------------------------------------------------------------- tapeflow through XLA
class XlaFallback(UserWarning):
    """A function(jit_compile=True) case's graph holds primitives with no XLA lowering, so
    it ran the NumPy replay: run.py records this in the case's row and its table."""

    def __init__(self, primitives: Sequence[str]) -> None:
        self.primitives = list(primitives)
        super().__init__("no XLA lowering for " + ", ".join(self.primitives)
                         + ": the graph replays with NumPy")


def xla_cases_wanted() -> bool:
    """Whether to build the jit_compile=True cases: only where JAX can be imported (a
    machine without it has no such case, rather than a failing one)."""
    return installed("jax")


def xla_function(fn: Callable[..., Any]) -> Callable[..., Any]:
    """``tapeflow.function(fn, jit_compile=True)`` whose first call is trace + XLA
    compile + run, as JAX jit's first call is.

    A tapeflow function's first call returns the values its trace computed and compiles
    at the second; here the first call traces (``get_concrete_function``) and then runs
    the traced graph, which compiles it, so the suite's "first call" holds the compile
    and the steady state does not. It warns `XlaFallback` if the graph has primitives
    without a lowering (tapeflow warns once per primitive and process; this names them
    per case). JAX's backend is started at once (in the case's setup): a process's first
    XLA computation would otherwise charge its start-up to this first call. Raises
    ImportError (the case is skipped) if JAX is missing.
    """
    import tapeflow as tf
    from tapeflow.graph.function import Function
    from tapeflow.graph.xla import missing_lowerings

    class FirstCall(Function):
        # After the first call the object becomes the plain Function again: a wrapper
        # around each timed call would add a Python layer that JAX's side does not have
        # (NOTE(lean-call) in tapeflow/graph/xla.py).
        def __call__(self, *args: Any, **kwargs: Any) -> Any:
            self.__class__ = Function
            missing = missing_lowerings(self.get_concrete_function(*args, **kwargs).graph)
            if missing:
                warnings.warn(XlaFallback(missing), stacklevel=2)
            return self(*args, **kwargs)

    compiled = tf.function(fn, jit_compile=True)  # ImportError here without JAX
    importlib.import_module("jax").devices()  # the backend started in setup, not timed
    if type(compiled) is not Function:
        raise TypeError(f"tapeflow.function made a {type(compiled).__name__}, not a Function")
    compiled.__class__ = FirstCall
    return compiled


# ---------------------------------------------------------------------- results and checks
def to_numpy(x: Any) -> Any:
    """A framework's result as float64 NumPy arrays (lists and tuples kept as lists)."""
    if isinstance(x, (list, tuple)):
        return [to_numpy(v) for v in x]
    if hasattr(x, "detach"):  # torch
        x = x.detach().cpu()
    return np.asarray(x, dtype=np.float64)


def relative_error(got: Any, want: Any) -> float:
    """max |got - want| / max |want| over every array of the structure."""
    got, want = to_numpy(got), to_numpy(want)
    if isinstance(want, list):
        if not isinstance(got, list) or len(got) != len(want):
            raise WrongResult(f"expected {len(want)} arrays, got "
                              f"{len(got) if isinstance(got, list) else 'one'}")
        return max(relative_error(g, w) for g, w in zip(got, want))
    if isinstance(got, list) or got.shape != want.shape:
        shape = "a list" if isinstance(got, list) else got.shape
        raise WrongResult(f"result has shape {shape}; expected {want.shape}")
    if not np.all(np.isfinite(got)):
        raise WrongResult("result has non-finite values")
    scale = float(np.max(np.abs(want))) or 1.0
    return float(np.max(np.abs(got - want))) / scale


def close_to(reference: Callable[[], Any], rtol: float) -> Callable[[Any], None]:
    """A check against a reference computed on first use (building a case list stays
    cheap) and shared by all the cases that hold this check."""
    want = functools.cache(reference)

    def check(got: Any) -> None:
        err = relative_error(got, want())
        if not err <= rtol:
            raise WrongResult(f"relative error {err:.2e} against the float64 reference "
                              f"(tolerance {rtol:.0e})")

    return check


def split_by(cases: Sequence[Case], framework: str) -> list[Case]:
    return [c for c in cases if c.framework == framework]
