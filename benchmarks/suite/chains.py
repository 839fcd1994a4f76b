"""Workload 3: long elementwise chains on float64[16]: per-op cost of dispatch and of AD.

Why: on 16-element arrays the arithmetic is negligible, so the time is what each
framework spends per op around it: Python dispatch, recording a tape, building
a graph, or (traced / jitted) nothing at all. A 2,000-op chain (alternating sin and
* 1.0001, benchmarks/dispatch.py's chain) is timed forward only and forward plus
gradient of its sum; the "per op" column divides by the 2,000 forward ops. tapeflow's
function(jit_compile=True) (the chain compiled by XLA; built only when JAX is
installed) stands beside JAX jit.
NumPy is the floor: the same ufunc calls (and a hand-written backward pass).
References: dispatch.py's NumPy chain and hand-written gradient, in float64.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

import dispatch  # noqa: E402 - benchmarks/ is on the path (common)

NAME = "chains"
TITLE = "Elementwise chains on float64[16] (sin, * 1.0001): per-op cost"
ORDER = 3
N = 16
N_OPS = {"full": 2000, "quick": 500, "tiny": 20}  # TF traces 2,000 in ~50 s
RTOL = 1e-9  # float64 throughout; libms differ by an ulp or so per sin


def _x() -> np.ndarray:
    return np.random.default_rng(0).standard_normal(N)


# Each setup returns (forward, gradient) for the framework: both take nothing and
# return NumPy arrays; the input is made once, in the setup.
def _numpy(n: int) -> tuple[Callable, Callable]:
    x = _x()
    return (lambda: dispatch.numpy_chain(x, n)), (lambda: dispatch.numpy_chain_grad(x, n))


def _tf_api(api_name: str, n: int, traced: bool, xla: bool = False) -> tuple[Callable, Callable]:
    import importlib

    api = importlib.import_module(api_name)
    x = api.constant(_x())

    def forward(t: Any) -> Any:
        return dispatch.chain(api.sin, t, n)

    def gradient(t: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(t)
            total = api.reduce_sum(forward(t))
        return tape.gradient(total, t)

    if xla:  # the gradient over the plain forward: one graph each, no nested function
        plain = forward

        def plain_gradient(t: Any) -> Any:
            with api.GradientTape() as tape:
                tape.watch(t)
                total = api.reduce_sum(plain(t))
            return tape.gradient(total, t)

        forward, gradient = common.xla_function(plain), common.xla_function(plain_gradient)
    elif traced:
        forward, gradient = api.function(forward), api.function(gradient)
    return (lambda: np.asarray(forward(x))), (lambda: np.asarray(gradient(x)))


def _jax(n: int, jit: bool) -> tuple[Callable, Callable]:
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(_x())

    def forward(t: Any) -> Any:
        return dispatch.chain(jnp.sin, t, n)

    gradient = jax.grad(lambda t: jnp.sum(forward(t)))
    if jit:
        forward, gradient = jax.jit(forward), jax.jit(gradient)
    return (lambda: np.asarray(forward(x))), (lambda: np.asarray(gradient(x)))


def _torch(n: int) -> tuple[Callable, Callable]:
    import torch

    x = torch.from_numpy(_x())

    def forward() -> np.ndarray:  # x does not require grad: nothing is recorded
        return dispatch.chain(torch.sin, x, n).numpy()

    def gradient() -> np.ndarray:
        t = x.detach().requires_grad_()
        dispatch.chain(torch.sin, t, n).sum().backward()
        return t.grad.numpy()

    return forward, gradient


def _autograd(n: int) -> tuple[Callable, Callable]:
    import autograd.numpy as anp
    from autograd import grad

    x = _x()
    gradient = grad(lambda t: anp.sum(dispatch.chain(anp.sin, t, n)))
    return (lambda: dispatch.chain(anp.sin, x, n)), (lambda: gradient(x))


def cases(size: str = "full") -> list[Case]:
    n = common.size_of(size, N_OPS)
    x = _x()
    want_forward = common.close_to(lambda: dispatch.numpy_chain(x, n), RTOL)
    want_gradient = common.close_to(lambda: dispatch.numpy_chain_grad(x, n), RTOL)
    contestants: list[tuple[str, str, str, Callable[[], tuple[Callable, Callable]]]] = [
        ("NumPy", "numpy", "by hand", lambda: _numpy(n)),
        ("tapeflow eager", "tapeflow", "eager", lambda: _tf_api("tapeflow", n, False)),
        ("tapeflow function replay", "tapeflow", "traced", lambda: _tf_api("tapeflow", n, True)),
        ("TensorFlow eager", "tensorflow", "eager", lambda: _tf_api("tensorflow", n, False)),
        ("TensorFlow tf.function", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", n, True)),
        ("JAX eager", "jax", "eager", lambda: _jax(n, False)),
    ]
    if common.xla_cases_wanted():
        contestants.append(("tapeflow function(jit_compile=True)", "tapeflow", "xla",
                            lambda: _tf_api("tapeflow", n, True, xla=True)))
    contestants += [
        ("JAX jit", "jax", "jit", lambda: _jax(n, True)),
        ("PyTorch eager", "torch", "eager", lambda: _torch(n)),
        ("autograd", "autograd", "eager", lambda: _autograd(n)),
    ]
    out = []
    for label, framework, mode, make in contestants:
        fwd_name = f"{label} forward" + (" (ufuncs)" if framework == "numpy" else "")
        grad_name = (f"{label} forward+backward by hand" if framework == "numpy"
                     else f"{label} forward+gradient")
        out.append(Case(fwd_name, framework, lambda make=make: make()[0], want_forward,
                        group=f"forward, {n} ops", mode=mode, ops=n))
        out.append(Case(grad_name, framework, lambda make=make: make()[1], want_gradient,
                        group=f"forward+gradient, {n} ops", mode=mode, ops=n))
    return out
