"""Workload 5: tall and wide Jacobians, forward against reverse mode.

Why: forward mode costs one JVP per input, reverse mode one VJP per output, so the
right mode depends on the Jacobian's shape; ``tapeflow.jacobian`` (mode "auto") picks
it. f(x) = tanh(W2 tanh(W1 x)), hidden 256, float32 (benchmarks/jacobian_modes.py),
at (n, m) = (8, 4096), where forward mode should win, and (4096, 8), where reverse
should. tapeflow jacfwd / jacrev / jacobian(auto) / tape.jacobian, eager and traced
(the first three also with function(jit_compile=True), when JAX is installed);
TensorFlow tape.jacobian eager and tf.function; JAX jacfwd / jacrev eager and jit;
torch.func jacfwd / jacrev; autograd.jacobian. NumPy floor: the closed form, by hand.
The reference is that closed form in float64.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case, Sweep

import jacobian_modes as jm  # noqa: E402 - benchmarks/ is on the path (common)

NAME = "jacobians"
TITLE = "Tall and wide Jacobians of f(x) = tanh(W2 tanh(W1 x)), hidden 256, float32"
ORDER = 5
SHAPES = {"full": [(8, 4096), (4096, 8)], "quick": [(8, 1024), (1024, 8)],
          "tiny": [(3, 5), (5, 3)]}
SWEEP_N = 256  # inputs; outputs vary across the crossover at m = n
SWEEP_M = {"full": [16, 64, 256, 1024, 4096], "quick": [16, 256, 4096], "tiny": [2, 4]}
RTOL = 1e-4

TAPEFLOW_MODES = {"jacfwd": "jacfwd", "jacrev": "jacrev", "jacobian(auto)": "jacobian"}


def _closed_form(w1: np.ndarray, w2: np.ndarray, x: np.ndarray) -> Callable[[], np.ndarray]:
    def jac() -> np.ndarray:
        h = np.tanh(w1 @ x)
        y = np.tanh(w2 @ h)
        return ((1 - y * y)[:, None] * w2 * (1 - h * h)[None, :]) @ w1
    return jac


def _tapeflow(transform: str, traced: bool, data: tuple,
              xla: bool = False) -> Callable[[], np.ndarray]:
    import tapeflow as tf

    w1, w2, x = data
    f = jm.tf_api_f(tf, w1, w2)
    if transform == "tape.jacobian":
        def jac(v: Any) -> Any:
            with tf.GradientTape() as tape:
                tape.watch(v)
                y = f(v)
            return tape.jacobian(y, v)
    else:
        jac = getattr(tf, transform)(f)
    if xla:
        jac = common.xla_function(jac)
    else:
        jac = tf.function(jac) if traced else jac
    xt = tf.constant(x)
    return lambda: np.asarray(jac(xt))


def _tensorflow(traced: bool, data: tuple) -> Callable[[], np.ndarray]:
    import tensorflow as real_tf

    w1, w2, x = data
    f = jm.tf_api_f(real_tf, w1, w2)

    def jac(v: Any) -> Any:
        with real_tf.GradientTape() as tape:
            tape.watch(v)
            y = f(v)
        return tape.jacobian(y, v)

    jac = real_tf.function(jac) if traced else jac
    xt = real_tf.constant(x)
    return lambda: jac(xt).numpy()


def _jax(transform: str, jit: bool, data: tuple) -> Callable[[], np.ndarray]:
    import jax
    import jax.numpy as jnp

    w1, w2, x = data
    jac = getattr(jax, transform)(jm.jax_f(w1, w2))
    jac = jax.jit(jac) if jit else jac
    xj = jnp.asarray(x)
    return lambda: np.asarray(jac(xj))


def _torch(transform: str, data: tuple) -> Callable[[], np.ndarray]:
    import torch
    import torch.func

    w1, w2, x = data
    jac = getattr(torch.func, transform)(jm.torch_f(w1, w2))
    xt = torch.from_numpy(x)
    return lambda: jac(xt).numpy()


def _autograd(data: tuple) -> Callable[[], np.ndarray]:
    import autograd.numpy as anp
    from autograd import jacobian

    w1, w2, x = data
    jac = jacobian(lambda v: anp.tanh(anp.dot(w2, anp.tanh(anp.dot(w1, v)))))
    return lambda: jac(x)


def _shape_cases(n: int, m: int, group: str, sweep: bool = False) -> list[Case]:
    """The cases at one shape; for the figure (`sweep`), only tapeflow's three modes and
    JAX's two, in two groups (panels): eager, and traced / jit."""
    data = jm.weights(n, m)
    check = common.close_to(lambda: jm.reference(*data), RTOL)
    out: list[Case] = []

    def add(name: str, framework: str, mode: str, setup: Callable[[], Callable],
            jax_twin: str = "") -> None:
        panel = group if not sweep else (
            "eager" if mode == "eager" else "traced (tapeflow), jit (JAX)")
        out.append(Case(name, framework, setup, check, group=panel, mode=mode, jax_twin=jax_twin))

    for label, transform in TAPEFLOW_MODES.items():
        add(f"tapeflow {label} eager", "tapeflow", "eager",
            lambda t=transform: _tapeflow(t, False, data))
        add(f"tapeflow {label} traced", "tapeflow", "traced",
            lambda t=transform: _tapeflow(t, True, data))
    if common.xla_cases_wanted():
        for label, transform in TAPEFLOW_MODES.items():
            # jacfwd and jacrev against JAX's same mode (a wrong-mode case against JAX's
            # right one would measure the mode, not the compiler); jacobian(auto) against
            # JAX's faster mode, the one it should pick.
            add(f"tapeflow function(jit_compile=True) {label}", "tapeflow", "xla",
                lambda t=transform: _tapeflow(t, True, data, xla=True),
                jax_twin=f"JAX {transform} jit" if transform != "jacobian" else "")
    for transform in ("jacfwd", "jacrev"):
        add(f"JAX {transform} eager", "jax", "eager", lambda t=transform: _jax(t, False, data))
        add(f"JAX {transform} jit", "jax", "jit", lambda t=transform: _jax(t, True, data))
    if sweep:
        return out
    add("NumPy closed form", "numpy", "by hand", lambda: _closed_form(*data))
    add("tapeflow tape.jacobian eager", "tapeflow", "eager",
        lambda: _tapeflow("tape.jacobian", False, data))
    add("tapeflow tape.jacobian traced", "tapeflow", "traced",
        lambda: _tapeflow("tape.jacobian", True, data))
    add("TensorFlow tape.jacobian eager", "tensorflow", "eager", lambda: _tensorflow(False, data))
    add("TensorFlow tape.jacobian tf.function", "tensorflow", "traced",
        lambda: _tensorflow(True, data))
    for transform in ("jacfwd", "jacrev"):
        add(f"torch.func {transform}", "torch", "eager", lambda t=transform: _torch(t, data))
    add("autograd jacobian (a VJP per output)", "autograd", "eager", lambda: _autograd(data))
    return out


def cases(size: str = "full") -> list[Case]:
    out = []
    for n, m in common.size_of(size, SHAPES):
        out += _shape_cases(n, m, f"{m}x{n} Jacobian (n={n} inputs, m={m} outputs)")
    return out


def sweep(size: str = "full") -> Sweep:
    n = SWEEP_N if size != "tiny" else 3
    s = Sweep(f"Jacobian of R^{n} -> R^m: time against the output count m",
              "outputs m", "jacobian_modes_scaling.png")
    for m in common.size_of(size, SWEEP_M):
        s.points.append((m, _shape_cases(n, m, "", sweep=True)))
    return s
