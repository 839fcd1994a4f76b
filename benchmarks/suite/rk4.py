"""Workload 8: the gradient of an RK4 integration unrolled over many small steps.

Why: an ODE solved by a fixed-step integrator written as a Python loop is the small-op
workload at its purest: each step is 4 evaluations of a 2-state right-hand side, a few
dozen scalar ops, so the per-op cost of each framework dominates, and a compiled program
grows with the number of steps unless the loop is one op (GradBench's ode). The
system: Lotka-Volterra, y = (prey, predators), y' = (a y0 - b y0 y1, c y0 y1 - d y1);
h = 0.01; the loss |y(T)|^2; the gradient with respect to y(0) and (a, b, c, d);
float64.

tapeflow and TensorFlow run the Python loop eager and traced (tapeflow also with
function(jit_compile=True), the graph's loop rolled into one loop op: NOTE(reroll) in
tapeflow/graph/reroll.py, and with jit_compile="auto": the fastest of that, the NumPy
replays and, with Numba installed, the rolled loops compiled by Numba, NOTE(loop-kernels)
in tapeflow/graph/kernels.py); JAX jit(grad) over lax.scan (JAX's jit of the Python loop
compiles every step: over 90 s at 100 steps, so it is not run); PyTorch eager autograd
over the loop; autograd. NumPy floor: the discrete adjoint of the RK4 steps by hand,
which is also the reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "rk4"
TITLE = "RK4 over many small steps: gradient of |y(T)|^2 in y(0) and the parameters (float64)"
ORDER = 8
STEPS = {"full": 200, "quick": 50, "tiny": 6}
H = 0.01
RTOL = 1e-9


def problem(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """y(0) [2] and the parameters (a, b, c, d) [4], float64."""
    rng = np.random.default_rng(seed)
    y0 = np.array([1.0, 0.5]) + 0.1 * rng.random(2)
    params = np.array([1.5, 1.0, 1.0, 3.0]) + 0.1 * rng.random(4)
    return y0, params


# ---------------------------------------------------------------------- NumPy by hand
def _f(y: np.ndarray, p: np.ndarray) -> np.ndarray:
    a, b, c, d = p
    return np.array([a * y[0] - b * y[0] * y[1], c * y[0] * y[1] - d * y[1]])


def _pull(y: np.ndarray, p: np.ndarray, g: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(J_y(y)^T g, J_p(y)^T g) of the right-hand side."""
    a, b, c, d = p
    u, v = y
    gy = np.array([(a - b * v) * g[0] + c * v * g[1], -b * u * g[0] + (c * u - d) * g[1]])
    gp = np.array([u * g[0], -u * v * g[0], u * v * g[1], -v * g[1]])
    return gy, gp


def numpy_gradient(y0: np.ndarray, p: np.ndarray, steps: int) -> list[np.ndarray]:
    """(d loss / d y0, d loss / d p) by the discrete adjoint of the RK4 steps."""
    y, saved = y0.copy(), []
    for _ in range(steps):
        k1 = _f(y, p)
        u2 = y + H / 2 * k1
        k2 = _f(u2, p)
        u3 = y + H / 2 * k2
        k3 = _f(u3, p)
        u4 = y + H * k3
        k4 = _f(u4, p)
        saved.append((y, u2, u3, u4))
        y = y + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)
    gy, gp = 2 * y, np.zeros(4)
    for u1, u2, u3, u4 in reversed(saved):
        # y' = y + h/6 (k1 + 2 k2 + 2 k3 + k4); k_i = f(u_i); u2 = y + h/2 k1,
        # u3 = y + h/2 k2, u4 = y + h k3: pulled back from k4 to k1
        g_y = gy.copy()
        g4 = H / 6 * gy
        d4, p4 = _pull(u4, p, g4)
        g3 = H / 3 * gy + H * d4
        d3, p3 = _pull(u3, p, g3)
        g2 = H / 3 * gy + H / 2 * d3
        d2, p2 = _pull(u2, p, g2)
        g1 = H / 6 * gy + H / 2 * d2
        d1, p1 = _pull(u1, p, g1)
        gy = g_y + d1 + d2 + d3 + d4
        gp += p1 + p2 + p3 + p4
    return [gy, gp]


# ---------------------------------------------------------------------- frameworks
def step(f: Callable[[Any], Any], y: Any) -> Any:
    """One RK4 step of y' = f(y), on any framework's arrays."""
    k1 = f(y)
    k2 = f(y + H / 2 * k1)
    k3 = f(y + H / 2 * k2)
    k4 = f(y + H * k3)
    return y + H / 6 * (k1 + 2 * k2 + 2 * k3 + k4)


def tf_api_loss(api: Any, steps: int) -> Callable[..., Any]:
    """|y(T)|^2 against TensorFlow's API (`api` is tapeflow or TensorFlow)."""
    def loss(y0: Any, p: Any) -> Any:
        a, b, c, d = api.unstack(p)

        def f(y: Any) -> Any:
            u, v = y[0], y[1]
            return api.stack([a * u - b * u * v, c * u * v - d * v])

        y = y0
        for _ in range(steps):
            y = step(f, y)
        return api.reduce_sum(y * y)

    return loss


def _tf_api(api_name: str, traced: bool, data: tuple, steps: int,
            xla: bool | str = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    loss = tf_api_loss(api, steps)
    y0, p = (api.constant(a) for a in data)

    def gradient(y0: Any, p: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch([y0, p])
            value = loss(y0, p)
        return tape.gradient(value, [y0, p])

    if xla == "auto":  # the fastest of XLA, the NumPy replays and Numba's loop kernels
        fn = api.function(gradient, jit_compile="auto")
    else:
        fn = common.xla_function(gradient) if xla else (api.function(gradient) if traced
                                                        else gradient)
    return lambda: [np.asarray(g) for g in fn(y0, p)]


def _jax(data: tuple, steps: int) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    def f(y: Any, p: Any) -> Any:
        return jnp.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def one_step(y: Any, p: Any) -> Any:
        return step(lambda z: f(z, p), y)

    def loss(y0: Any, p: Any) -> Any:
        y, _ = jax.lax.scan(lambda y, _: (one_step(y, p), None), y0, None, length=steps)
        return jnp.sum(y * y)

    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
    y0, p = (jnp.asarray(a) for a in data)
    return lambda: [np.asarray(g) for g in grad(y0, p)]


def _torch(data: tuple, steps: int) -> Callable[[], Any]:
    import torch

    y0, p = (torch.from_numpy(a).requires_grad_() for a in data)

    def f(y: Any) -> Any:
        return torch.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def gradient() -> list:
        y = y0
        for _ in range(steps):
            y = step(f, y)
        return [g.numpy() for g in torch.autograd.grad(torch.sum(y * y), (y0, p))]

    return gradient


def _autograd(data: tuple, steps: int) -> Callable[[], Any]:
    import autograd.numpy as anp
    from autograd import grad

    def f(y: Any, p: Any) -> Any:
        return anp.stack([p[0] * y[0] - p[1] * y[0] * y[1], p[2] * y[0] * y[1] - p[3] * y[1]])

    def loss(y: Any, p: Any) -> Any:
        for _ in range(steps):
            y = step(lambda z: f(z, p), y)
        return anp.sum(y * y)

    g = grad(loss, argnum=(0, 1))
    return lambda: list(g(*data))


def cases(size: str = "full") -> list[Case]:
    steps = common.size_of(size, STEPS)
    data = problem()
    check = common.close_to(lambda: numpy_gradient(*data, steps), RTOL)
    group = f"Lotka-Volterra, {steps} steps of h = {H}"
    spec: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
        ("NumPy discrete adjoint by hand", "numpy", "by hand",
         lambda: lambda: numpy_gradient(*data, steps)),
        ("tapeflow eager", "tapeflow", "eager", lambda: _tf_api("tapeflow", False, data, steps)),
        ("tapeflow function replay", "tapeflow", "traced",
         lambda: _tf_api("tapeflow", True, data, steps)),
        *([("tapeflow function(jit_compile=True), Python loop rolled", "tapeflow", "xla",
            lambda: _tf_api("tapeflow", True, data, steps, xla=True))]
          if common.xla_cases_wanted() else []),
        ("tapeflow function(jit_compile='auto')", "tapeflow", "traced",
         lambda: _tf_api("tapeflow", True, data, steps, xla="auto")),
        ("TensorFlow eager", "tensorflow", "eager",
         lambda: _tf_api("tensorflow", False, data, steps)),
        ("TensorFlow tf.function", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", True, data, steps)),
        ("JAX jit(grad) over lax.scan", "jax", "jit", lambda: _jax(data, steps)),
        ("PyTorch eager autograd, Python loop", "torch", "eager", lambda: _torch(data, steps)),
        ("autograd", "autograd", "eager", lambda: _autograd(data, steps)),
    ]
    return [Case(name, framework, setup, check, group=group, mode=mode)
            for name, framework, mode, setup in spec]
