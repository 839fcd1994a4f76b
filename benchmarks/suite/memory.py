"""Workload 4: peak memory of a 200-op elementwise chain on 4M float32, forward and reverse.

Why: reverse mode must keep what the backward pass reads (here the input of every
sin: about n/2 arrays), forward mode needs only the current value and tangent, and a
replayed graph or compiled program is free to do better or worse than eager code
(free dead buffers early, fuse, or keep everything alive). Each case runs in a fresh
subprocess (run.py): one untimed warm-up call (tracing, compiling), then the measured
call. Two measures: tracemalloc's peak (sees NumPy's buffers, so tapeflow, NumPy and
autograd; not torch/TF/XLA's own allocators) and the growth of the resident set's
high-water mark, for every framework (glibc is told to mmap large blocks so freed
buffers leave the resident set at once).

The chain is dispatch.py's (sin, * 1.0001); the JVP with a tangent of ones and the
gradient of the sum are the same elementwise derivative, checked against dispatch.py's
hand-written float64 derivative. NumPy by hand is the floor for both modes.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

import dispatch  # noqa: E402 - benchmarks/ is on the path (common)

NAME = "memory"
TITLE = "Peak memory of a 200-op elementwise chain on float32 (fresh subprocess per case)"
ORDER = 4
# (elements, ops)
SHAPES = {"full": (4 * 2 ** 20, 200), "quick": (2 ** 18, 200), "tiny": (1000, 20)}
RTOL = 1e-4  # float32 after 200 ops


def _x(size: int) -> np.ndarray:
    return np.random.default_rng(0).uniform(-1, 1, size).astype(np.float32)


def _numpy(size: int, n: int, forward: bool) -> Callable[[], Any]:
    x = _x(size)
    if forward:
        return lambda: dispatch.numpy_chain_jvp(x, n)
    return lambda: dispatch.numpy_chain_grad(x, n)


def _tf_api(api_name: str, size: int, n: int, forward: bool, traced: bool) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    x, ones = api.constant(_x(size)), api.ones([size], dtype=api.float32)

    def jvp(t: Any, v: Any) -> Any:
        with api.autodiff.ForwardAccumulator(t, v) as acc:
            y = dispatch.chain(api.sin, t, n)
        return acc.jvp(y)

    def gradient(t: Any, _: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(t)
            total = api.reduce_sum(dispatch.chain(api.sin, t, n))
        return tape.gradient(total, t)

    fn = jvp if forward else gradient
    fn = api.function(fn) if traced else fn
    return lambda: np.asarray(fn(x, ones))


def _jax(size: int, n: int, forward: bool, jit: bool) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    x = jnp.asarray(_x(size))
    ones = jnp.ones_like(x)

    def chain(t: Any) -> Any:
        return dispatch.chain(jnp.sin, t, n)

    if forward:
        fn = lambda t, v: jax.jvp(chain, (t,), (v,))[1]  # noqa: E731
    else:
        fn = lambda t, _: jax.grad(lambda u: jnp.sum(chain(u)))(t)  # noqa: E731
    fn = jax.jit(fn) if jit else fn
    return lambda: np.asarray(fn(x, ones))


def _torch(size: int, n: int, forward: bool) -> Callable[[], Any]:
    import torch
    from torch.func import jvp

    x = torch.from_numpy(_x(size))
    ones = torch.ones_like(x)

    def chain(t: Any) -> Any:
        return dispatch.chain(torch.sin, t, n)

    if forward:
        return lambda: jvp(chain, (x,), (ones,))[1].numpy()

    def gradient() -> np.ndarray:
        t = x.detach().requires_grad_()
        chain(t).sum().backward()
        return t.grad.numpy()

    return gradient


def _autograd(size: int, n: int, forward: bool) -> Callable[[], Any]:
    import autograd.numpy as anp
    from autograd import grad, make_jvp

    x = _x(size)
    ones = np.ones_like(x)

    def chain(t: Any) -> Any:
        return dispatch.chain(anp.sin, t, n)

    if forward:  # autograd's JVP is the VJP of a VJP (it has no forward mode)
        return lambda: make_jvp(chain)(x)(ones)[1]
    gradient = grad(lambda t: anp.sum(chain(t)))
    return lambda: gradient(x)


def cases(size: str = "full") -> list[Case]:
    elements, n = common.size_of(size, SHAPES)
    x = _x(elements)
    check = common.close_to(lambda: dispatch.numpy_chain_grad(x.astype(np.float64), n), RTOL)
    out = []
    for forward in (True, False):
        group = ("forward mode (JVP)" if forward else "reverse mode (gradient)") + \
            f", {n} ops on {elements:,} float32"
        what = "JVP" if forward else "gradient"
        contestants: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
            (f"NumPy {what} by hand", "numpy", "by hand",
             lambda f=forward: _numpy(elements, n, f)),
            (f"tapeflow eager {what}", "tapeflow", "eager",
             lambda f=forward: _tf_api("tapeflow", elements, n, f, False)),
            (f"tapeflow function replay {what}", "tapeflow", "traced",
             lambda f=forward: _tf_api("tapeflow", elements, n, f, True)),
            (f"TensorFlow eager {what}", "tensorflow", "eager",
             lambda f=forward: _tf_api("tensorflow", elements, n, f, False)),
            (f"TensorFlow tf.function {what}", "tensorflow", "traced",
             lambda f=forward: _tf_api("tensorflow", elements, n, f, True)),
            (f"JAX eager {what}", "jax", "eager", lambda f=forward: _jax(elements, n, f, False)),
            (f"JAX jit {what}", "jax", "jit", lambda f=forward: _jax(elements, n, f, True)),
            (f"PyTorch eager {what}" + (" (torch.func.jvp)" if forward else ""), "torch",
             "eager", lambda f=forward: _torch(elements, n, f)),
            (f"autograd {what}" + (" (make_jvp)" if forward else ""), "autograd", "eager",
             lambda f=forward: _autograd(elements, n, f)),
        ]
        for name, framework, mode, setup in contestants:
            out.append(Case(name, framework, setup, check, group=group, mode=mode,
                            ops=n, metric="memory"))
    return out
