"""Workload 1, the seed problem: the 10x784 Jacobian of the small CNN (benchmarks/cnn.py)
with respect to its input, at many inputs.

Why: this is the question tapeflow was built to answer ("record the derivative once,
re-evaluate it at every new input"). Measured: the time for the Jacobians at all n
inputs, per-input and batched, eager and traced, beside TensorFlow (eager, as the
question's asker did, and tf.function), tapeflow's batch_jacobian as
function(jit_compile=True) (compiled by XLA; only when JAX is installed), JAX
jit(vmap(jacrev)) and torch.func vmap(jacrev). The runners come from benchmarks/seed_problem.py; every result is checked
against `cnn.numpy_jacobians`, a float64 NumPy computation independent of all frameworks.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case, Sweep

import cnn  # noqa: E402 - benchmarks/ is on the path (common)
import seed_problem as sp  # noqa: E402

NAME = "seed"
TITLE = "Seed problem: 10x784 Jacobians of the small CNN (float32) at n inputs"
ORDER = 1
N_INPUTS = {"full": 64, "quick": 4, "tiny": 2}
SWEEP_SIZES = {"full": [1, 4, 16, 64, 256], "quick": [1, 8, 32], "tiny": [1, 2]}
RTOL = 1e-4  # float32 results against the float64 reference

TF_XLA_BATCH = "tapeflow function(jit_compile=True) batch_jacobian, all inputs"

# (runner name in seed_problem, framework, mode); the row loop is left out: it is
# seed_problem.py's business (and slow), the vectorized per-input case stands for it.
CASES = [
    (sp.TF_EACH, "tapeflow", "eager"),
    (sp.TF_BATCH, "tapeflow", "eager"),
    (sp.TF_REPLAY_EACH, "tapeflow", "traced"),
    (sp.TF_REPLAY_BATCH, "tapeflow", "traced"),
    (sp.TENSORFLOW_EAGER, "tensorflow", "eager"),
    (sp.TENSORFLOW_EACH, "tensorflow", "traced"),
    (sp.TENSORFLOW_BATCH, "tensorflow", "traced"),
    (TF_XLA_BATCH, "tapeflow", "xla"),  # only where JAX is installed (`_cases`)
    (sp.JAX_BATCH, "jax", "jit"),
    (sp.TORCH_BATCH, "torch", "eager"),
]
# Batched ways only for the figure: the per-input ones just scale linearly.
SWEEP_CASES = [sp.TF_BATCH, sp.TF_REPLAY_BATCH, sp.TF_REPLAY_EACH, sp.TENSORFLOW_BATCH,
               TF_XLA_BATCH, sp.JAX_BATCH, sp.TORCH_BATCH]


def xla_runner(w: dict) -> Callable[[np.ndarray], np.ndarray]:
    """tapeflow's batch_jacobian over all inputs as function(jit_compile=True): the
    traced graph (the model, the tape and the Jacobian) compiled by XLA."""
    import tapeflow as tf

    model = cnn.tapeflow_model(w)

    def batch_jac(x: Any) -> Any:
        with tf.GradientTape() as t:
            t.watch(x)
            y = model(x)
        return t.batch_jacobian(y, x)

    jac = common.xla_function(batch_jac)
    return lambda xs: np.asarray(jac(tf.constant(xs)))


def _runner(name: str, framework: str, w: dict) -> Callable[[np.ndarray], np.ndarray]:
    if name == TF_XLA_BATCH:
        return xla_runner(w)
    if framework == "tapeflow":
        return sp.tapeflow_runners(w)[0][name]
    if framework == "tensorflow":
        return sp.tensorflow_runners(w)[name]
    if framework == "jax":
        return sp.jax_runner(w)
    return sp.torch_runner(w)


def _cases(n: int, names: list[str] | None = None) -> list[Case]:
    w, xs = cnn.weights(), cnn.inputs(n)
    check = common.close_to(lambda: cnn.numpy_jacobians(w, xs), RTOL)
    out = []
    for name, framework, mode in CASES:
        if names is not None and name not in names:
            continue
        if mode == "xla" and not common.xla_cases_wanted():
            continue

        def setup(name: str = name, framework: str = framework) -> Callable[[], Any]:
            run = _runner(name, framework, w)
            return lambda: run(xs)

        out.append(Case(name, framework, setup, check, group=f"{n} inputs", mode=mode))
    return out


def cases(size: str = "full") -> list[Case]:
    return _cases(common.size_of(size, N_INPUTS))


def sweep(size: str = "full") -> Sweep:
    s = Sweep("Seed problem: time for all Jacobians against the number of inputs",
              "inputs (batch size)", "seed_batch_scaling.png")
    for n in common.size_of(size, SWEEP_SIZES):
        s.points.append((n, [_regroup(c) for c in _cases(n, SWEEP_CASES)]))
    return s


def _regroup(c: Case) -> Case:
    c.group = "10x784 Jacobians of the small CNN"  # one panel for all sizes
    return c
