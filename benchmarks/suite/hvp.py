"""Workload 2: a Hessian-vector product of an MLP's loss with respect to its parameters.

Why: second-order methods (Newton-CG, influence functions, curvature estimates) need
H v without forming H, which is forward-over-reverse: the JVP of the gradient. It
stresses both AD modes nested, on mid-sized GEMMs. The MLP: 64 inputs, three hidden
layers of 256 with tanh, 10 outputs, batch 128, loss 0.5 * mean((out - y) ** 2), float32.

tapeflow and TensorFlow run the same code (ForwardAccumulator around GradientTape),
eagerly and traced with ``function`` (tapeflow also with ``jit_compile=True``, its
graph compiled by XLA, when JAX is installed); JAX jit(jvp(grad)); PyTorch torch.func
jvp(grad); autograd make_hvp (reverse-over-reverse: its only way). The reference is a
central difference of a hand-written float64 NumPy gradient (error ~1e-9, far below
the float32 tolerance).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "hvp"
TITLE = "MLP Hessian-vector product (64 -> 256x3 tanh -> 10, batch 128, float32)"
ORDER = 2
# (inputs, hidden width, hidden layers, outputs, batch)
SHAPES = {"full": (64, 256, 3, 10, 128), "quick": (64, 256, 3, 10, 128),
          "tiny": (4, 8, 3, 2, 5)}
RTOL = 2e-3  # float32 second derivatives through three tanh layers


def problem(shape: tuple[int, ...], seed: int = 0) -> tuple[list[np.ndarray], list[np.ndarray],
                                                            np.ndarray, np.ndarray]:
    """Parameters [W1, b1, ..., W4, b4], a direction of the same structure, x and y."""
    n_in, width, layers, n_out, batch = shape
    rng = np.random.default_rng(seed)
    sizes = [n_in] + [width] * layers + [n_out]
    params, vec = [], []
    for a, b in zip(sizes[:-1], sizes[1:]):
        params += [rng.standard_normal((a, b)) / np.sqrt(a), 0.1 * rng.standard_normal(b)]
        vec += [rng.standard_normal((a, b)), rng.standard_normal(b)]
    as32 = lambda xs: [x.astype(np.float32) for x in xs]  # noqa: E731
    x = rng.standard_normal((batch, n_in)).astype(np.float32)
    y = rng.standard_normal((batch, n_out)).astype(np.float32)
    return as32(params), as32(vec), x, y


# ---------------------------------------------------------------------- reference
def numpy_grad(params: list[np.ndarray], x: np.ndarray, y: np.ndarray) -> list[np.ndarray]:
    """The loss gradient by a hand-written backward pass (any float dtype)."""
    hs, h = [x], x
    for i in range(0, len(params) - 2, 2):
        h = np.tanh(h @ params[i] + params[i + 1])
        hs.append(h)
    out = h @ params[-2] + params[-1]
    d = (out - y) / out.size
    grads: list[np.ndarray] = []
    for i in range(len(params) - 2, -1, -2):
        h_in = hs[i // 2]
        grads = [h_in.T @ d, d.sum(0)] + grads
        if i:
            d = (d @ params[i].T) * (1 - h_in ** 2)
    return grads


def reference(params: list[np.ndarray], vec: list[np.ndarray], x: np.ndarray,
              y: np.ndarray) -> list[np.ndarray]:
    """H v by a central difference of the float64 gradient along v."""
    p64 = [p.astype(np.float64) for p in params]
    x64, y64 = x.astype(np.float64), y.astype(np.float64)
    eps = 1e-5 / max(float(np.sqrt(sum(np.sum(v.astype(np.float64) ** 2) for v in vec))), 1e-30)
    plus = numpy_grad([p + eps * v for p, v in zip(p64, vec)], x64, y64)
    minus = numpy_grad([p - eps * v for p, v in zip(p64, vec)], x64, y64)
    return [(a - b) / (2 * eps) for a, b in zip(plus, minus)]


# ---------------------------------------------------------------------- frameworks
def tf_api_hvp(api: Any) -> Callable[..., Any]:
    """Forward-over-backward H v, written once against TensorFlow's API (`api` is
    tapeflow or TensorFlow): the accumulator pushes v through the tape's gradient."""
    def loss(params: list, x: Any, y: Any) -> Any:
        h = x
        for i in range(0, len(params) - 2, 2):
            h = api.tanh(api.matmul(h, params[i]) + params[i + 1])
        out = api.matmul(h, params[-2]) + params[-1]
        return 0.5 * api.reduce_mean(api.square(out - y))

    def hvp(params: list, vec: list, x: Any, y: Any) -> list:
        with api.autodiff.ForwardAccumulator(params, vec) as acc:
            with api.GradientTape() as tape:
                tape.watch(params)
                value = loss(params, x, y)
            grads = tape.gradient(value, params)
        return acc.jvp(grads)

    return hvp


def _tf_api_setup(api_name: str, traced: bool, data: tuple, xla: bool = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    params, vec, x, y = ([api.constant(a) for a in t] if isinstance(t, list) else api.constant(t)
                         for t in data)
    if xla:
        hvp = common.xla_function(tf_api_hvp(api))
    else:
        hvp = api.function(tf_api_hvp(api)) if traced else tf_api_hvp(api)
    return lambda: [np.asarray(g) for g in hvp(params, vec, x, y)]


def _jax_setup(data: tuple) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    params, vec, x, y = ([jnp.asarray(a) for a in t] if isinstance(t, list) else jnp.asarray(t)
                         for t in data)

    def loss(p: list, x: Any, y: Any) -> Any:
        h = x
        for i in range(0, len(p) - 2, 2):
            h = jnp.tanh(h @ p[i] + p[i + 1])
        return 0.5 * jnp.mean(jnp.square(h @ p[-2] + p[-1] - y))

    @jax.jit
    def hvp(p: list, v: list, x: Any, y: Any) -> Any:
        return jax.jvp(lambda q: jax.grad(loss)(q, x, y), (p,), (v,))[1]

    return lambda: [np.asarray(g) for g in hvp(params, vec, x, y)]


def _torch_setup(data: tuple) -> Callable[[], Any]:
    import torch
    from torch.func import grad, jvp

    params, vec, x, y = (tuple(torch.from_numpy(a) for a in t) if isinstance(t, list)
                         else torch.from_numpy(t) for t in data)

    def loss(p: tuple) -> Any:
        h = x
        for i in range(0, len(p) - 2, 2):
            h = torch.tanh(h @ p[i] + p[i + 1])
        return 0.5 * torch.mean(torch.square(h @ p[-2] + p[-1] - y))

    return lambda: [g.numpy() for g in jvp(grad(loss), (params,), (vec,))[1]]


def _autograd_setup(data: tuple) -> Callable[[], Any]:
    import autograd.numpy as anp
    from autograd import make_hvp

    params, vec, x, y = data

    def loss(p: list) -> Any:
        h = x
        for i in range(0, len(p) - 2, 2):
            h = anp.tanh(anp.dot(h, p[i]) + p[i + 1])
        return 0.5 * anp.mean(anp.square(anp.dot(h, p[-2]) + p[-1] - y))

    return lambda: list(make_hvp(loss)(list(params))[0](list(vec)))


def cases(size: str = "full") -> list[Case]:
    shape = common.size_of(size, SHAPES)
    data = problem(shape)
    check = common.close_to(lambda: reference(*data), RTOL)
    group = "H v w.r.t. {} parameters".format(sum(p.size for p in data[0]))

    def case(name: str, framework: str, mode: str, setup: Callable[[], Callable[[], Any]]) -> Case:
        return Case(name, framework, setup, check, group=group, mode=mode)

    xla = [case("tapeflow function(jit_compile=True) of the same", "tapeflow", "xla",
                lambda: _tf_api_setup("tapeflow", True, data, xla=True))
           ] if common.xla_cases_wanted() else []
    return [
        case("tapeflow eager ForwardAccumulator(GradientTape)", "tapeflow", "eager",
             lambda: _tf_api_setup("tapeflow", False, data)),
        case("tapeflow function replay of the same", "tapeflow", "traced",
             lambda: _tf_api_setup("tapeflow", True, data)),
        case("TensorFlow eager ForwardAccumulator(GradientTape)", "tensorflow", "eager",
             lambda: _tf_api_setup("tensorflow", False, data)),
        case("TensorFlow tf.function of the same", "tensorflow", "traced",
             lambda: _tf_api_setup("tensorflow", True, data)),
        *xla,
        case("JAX jit(jvp(grad))", "jax", "jit", lambda: _jax_setup(data)),
        case("PyTorch torch.func jvp(grad)", "torch", "eager", lambda: _torch_setup(data)),
        case("autograd make_hvp (reverse-over-reverse)", "autograd", "eager",
             lambda: _autograd_setup(data)),
    ]
