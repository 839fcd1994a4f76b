"""Workload 7: the gradient of an LSTM's sequence loss with respect to its weights.

Why: recurrent networks are long chains of small ops (here 50 steps of a [16, 96] x
[96, 256] GEMM and a dozen elementwise ops each), between the per-op overhead of the
chains workload and the big kernels of LeNet; reverse mode must keep every step.
The LSTM: input 32, hidden 64, sequence 50, batch 16, gates i, f, g, o from one
weight matrix W [96, 256] and bias b; loss 0.5 * mean((h_t - y_t) ** 2) over all
steps; float32; gradient w.r.t. (W, b).

tapeflow and TensorFlow run the same Python loop, eager and traced (tapeflow also with
function(jit_compile=True), when JAX is installed: the graph's loop, and its gradient's,
rolled back into loop ops before XLA compiles it, NOTE(reroll) in
tapeflow/graph/reroll.py), and the same loop as tf.foldl (one loop op: tapeflow's scan,
compiled to lax.scan under jit_compile=True; TensorFlow's while loop); JAX jit(grad)
over lax.scan (and, beside the Python-loop XLA case, over the unrolled Python loop,
which JAX compiles step by step); PyTorch eager
autograd and torch.func.grad over the same loop, and torch.nn.LSTM (its fused kernel,
loaded with the same weights); autograd. NumPy floor: backpropagation through time by
hand, which in float64 is the reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "lstm"
TITLE = "LSTM sequence loss gradient w.r.t. the weights (float32)"
ORDER = 7
# (input, hidden, steps, batch)
SHAPES = {"full": (32, 64, 50, 16), "quick": (32, 64, 20, 16), "tiny": (3, 4, 5, 2)}
RTOL = 1e-4
UNROLLED_XLA = "tapeflow function(jit_compile=True), Python loop rolled"
# The same Python loop under JAX jit, beside it where its XLA case runs (JAX compiles
# every step: ~17 s at 50 steps)
UNROLLED_JAX = "JAX jit(grad), Python loop unrolled"


def problem(shape: tuple[int, int, int, int], seed: int = 0) -> tuple[np.ndarray, ...]:
    """W [I+H, 4H], b [4H], inputs [T, B, I], targets [T, B, H], all float32."""
    n_in, hidden, steps, batch = shape
    rng = np.random.default_rng(seed)
    w = rng.standard_normal((n_in + hidden, 4 * hidden)) / np.sqrt(n_in + hidden)
    b = 0.1 * rng.standard_normal(4 * hidden)
    xs = rng.standard_normal((steps, batch, n_in))
    ys = 0.5 * rng.standard_normal((steps, batch, hidden))
    return tuple(a.astype(np.float32) for a in (w, b, xs, ys))


# ---------------------------------------------------------------------- NumPy by hand
def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def numpy_gradient(w: np.ndarray, b: np.ndarray, xs: np.ndarray,
                   ys: np.ndarray) -> list[np.ndarray]:
    """(dW, db) by backpropagation through time; the dtype of the inputs throughout."""
    steps, batch, n_in = xs.shape
    hidden = w.shape[1] // 4
    h = c = np.zeros((batch, hidden), xs.dtype)
    saved = []
    for t in range(steps):
        xh = np.concatenate([xs[t], h], axis=1)
        z = xh @ w + b
        i, f, o = _sigmoid(z[:, :hidden]), _sigmoid(z[:, hidden:2 * hidden]), \
            _sigmoid(z[:, 3 * hidden:])
        g = np.tanh(z[:, 2 * hidden:3 * hidden])
        c_prev, c = c, f * c + i * g
        tanh_c = np.tanh(c)
        h = o * tanh_c
        saved.append((xh, i, f, g, o, c_prev, tanh_c, h))
    dw, db = np.zeros_like(w), np.zeros_like(b)
    dh_next = dc_next = np.zeros((batch, hidden), xs.dtype)
    scale = xs.dtype.type(1.0 / ys.size)
    for t in reversed(range(steps)):
        xh, i, f, g, o, c_prev, tanh_c, h = saved[t]
        dh = (h - ys[t]) * scale + dh_next
        dc = dh * o * (1 - tanh_c ** 2) + dc_next
        dz = np.concatenate([dc * g * i * (1 - i), dc * c_prev * f * (1 - f),
                             dc * i * (1 - g ** 2), dh * tanh_c * o * (1 - o)], axis=1)
        dw += xh.T @ dz
        db += dz.sum(0)
        dh_next, dc_next = (dz @ w.T)[:, n_in:], dc * f
    return [dw, db]


# ---------------------------------------------------------------------- frameworks
def tf_api_loss(api: Any) -> Callable[..., Any]:
    """The sequence loss against TensorFlow's API (`api` is tapeflow or TensorFlow)."""
    def loss(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        hidden = w.shape[1] // 4
        h = c = api.zeros([xs.shape[1], hidden], dtype=xs.dtype)
        total = 0.0
        for x_t, y_t in zip(api.unstack(xs), api.unstack(ys)):
            z = api.matmul(api.concat([x_t, h], axis=1), w) + b
            i, f, g, o = api.split(z, 4, axis=1)
            c = api.sigmoid(f) * c + api.sigmoid(i) * api.tanh(g)
            h = api.sigmoid(o) * api.tanh(c)
            total = total + api.reduce_sum(api.square(h - y_t))
        return 0.5 * total / float(np.prod(ys.shape))

    return loss


def tf_api_scan_loss(api: Any) -> Callable[..., Any]:
    """The same loss with the loop as one op: tf.foldl over the steps."""
    def loss(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        hidden = w.shape[1] // 4
        zeros = api.zeros([xs.shape[1], hidden], dtype=xs.dtype)

        def step(carry: tuple, inputs: tuple) -> tuple:
            h, c, total = carry
            x_t, y_t = inputs
            z = api.matmul(api.concat([x_t, h], axis=1), w) + b
            i, f, g, o = api.split(z, 4, axis=1)
            c = api.sigmoid(f) * c + api.sigmoid(i) * api.tanh(g)
            h = api.sigmoid(o) * api.tanh(c)
            return h, c, total + api.reduce_sum(api.square(h - y_t))

        _, _, total = api.foldl(step, (xs, ys),
                                initializer=(zeros, zeros, api.constant(0.0, xs.dtype)))
        return 0.5 * total / float(np.prod(ys.shape))

    return loss


def _tf_api(api_name: str, traced: bool, data: tuple, xla: bool = False,
            scan: bool = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    loss = tf_api_scan_loss(api) if scan else tf_api_loss(api)
    w, b, xs, ys = (api.constant(a) for a in data)

    def gradient(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch([w, b])
            value = loss(w, b, xs, ys)
        return tape.gradient(value, [w, b])

    if xla:
        fn = common.xla_function(gradient)
    else:
        fn = api.function(gradient) if traced else gradient
    return lambda: [np.asarray(g) for g in fn(w, b, xs, ys)]


def _jax(data: tuple, unrolled: bool = False) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    w, b, xs, ys = (jnp.asarray(a) for a in data)

    def unrolled_loss(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        hidden = w.shape[1] // 4
        h = c = jnp.zeros((xs.shape[1], hidden), xs.dtype)
        total = 0.0
        for t in range(xs.shape[0]):
            z = jnp.concatenate([xs[t], h], axis=1) @ w + b
            i, f, g, o = jnp.split(z, 4, axis=1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            total = total + jnp.sum(jnp.square(h - ys[t]))
        return 0.5 * total / ys.size

    def loss(w: Any, b: Any, xs: Any, ys: Any) -> Any:
        hidden = w.shape[1] // 4

        def step(carry: tuple, inputs: tuple) -> tuple:
            h, c = carry
            x_t, y_t = inputs
            z = jnp.concatenate([x_t, h], axis=1) @ w + b
            i, f, g, o = jnp.split(z, 4, axis=1)
            c = jax.nn.sigmoid(f) * c + jax.nn.sigmoid(i) * jnp.tanh(g)
            h = jax.nn.sigmoid(o) * jnp.tanh(c)
            return (h, c), jnp.sum(jnp.square(h - y_t))

        zeros = jnp.zeros((xs.shape[1], hidden), xs.dtype)
        _, per_step = jax.lax.scan(step, (zeros, zeros), (xs, ys))
        return 0.5 * jnp.sum(per_step) / ys.size

    grad = jax.jit(jax.grad(unrolled_loss if unrolled else loss, argnums=(0, 1)))
    return lambda: [np.asarray(g) for g in grad(w, b, xs, ys)]


def _torch_loss(torch: Any, w: Any, b: Any, xs: Any, ys: Any) -> Any:
    hidden = w.shape[1] // 4
    h = c = torch.zeros((xs.shape[1], hidden), dtype=xs.dtype)
    total = 0.0
    for x_t, y_t in zip(xs, ys):
        i, f, g, o = torch.chunk(torch.cat([x_t, h], dim=1) @ w + b, 4, dim=1)
        c = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h = torch.sigmoid(o) * torch.tanh(c)
        total = total + torch.sum(torch.square(h - y_t))
    return 0.5 * total / ys.numel()


def _torch(how: str, data: tuple) -> Callable[[], Any]:
    import torch

    w, b, xs, ys = (torch.from_numpy(a) for a in data)
    if how == "func":
        from torch.func import grad

        g = grad(lambda w, b: _torch_loss(torch, w, b, xs, ys), argnums=(0, 1))
        return lambda: [t.numpy() for t in g(w, b)]
    if how == "eager":
        leaves = [w.detach().requires_grad_(), b.detach().requires_grad_()]
        return lambda: [t.numpy() for t in torch.autograd.grad(
            _torch_loss(torch, *leaves, xs, ys), leaves)]
    # torch.nn.LSTM: gates i, f, g, o as ours; W splits into the input and hidden parts.
    n_in, hidden = xs.shape[2], w.shape[1] // 4
    lstm = torch.nn.LSTM(n_in, hidden)
    with torch.no_grad():
        lstm.weight_ih_l0.copy_(w[:n_in].T)
        lstm.weight_hh_l0.copy_(w[n_in:].T)
        lstm.bias_ih_l0.copy_(b)
        lstm.bias_hh_l0.zero_()
    params = [lstm.weight_ih_l0, lstm.weight_hh_l0, lstm.bias_ih_l0]

    def module_gradient() -> list[np.ndarray]:
        hs, _ = lstm(xs)
        loss = 0.5 * torch.mean(torch.square(hs - ys))
        g_ih, g_hh, g_b = torch.autograd.grad(loss, params)
        return [torch.cat([g_ih.T, g_hh.T]).numpy(), g_b.numpy()]

    return module_gradient


def _autograd(data: tuple) -> Callable[[], Any]:
    import autograd.numpy as anp
    from autograd import grad

    w, b, xs, ys = data

    def sigmoid(z: Any) -> Any:
        return 1 / (1 + anp.exp(-z))

    def loss(w: Any, b: Any) -> Any:
        hidden = w.shape[1] // 4
        h = c = np.zeros((xs.shape[1], hidden), xs.dtype)
        total = 0.0
        for x_t, y_t in zip(xs, ys):
            z = anp.dot(anp.concatenate([x_t, h], axis=1), w) + b
            i, f = sigmoid(z[:, :hidden]), sigmoid(z[:, hidden:2 * hidden])
            g, o = anp.tanh(z[:, 2 * hidden:3 * hidden]), sigmoid(z[:, 3 * hidden:])
            c = f * c + i * g
            h = o * anp.tanh(c)
            total = total + anp.sum(anp.square(h - y_t))
        return 0.5 * total / ys.size

    g = grad(loss, argnum=(0, 1))
    return lambda: list(g(w, b))


def cases(size: str = "full") -> list[Case]:
    shape = common.size_of(size, SHAPES)
    data = problem(shape)
    check = common.close_to(lambda: numpy_gradient(*(a.astype(np.float64) for a in data)),
                            RTOL)
    n_in, hidden, steps, batch = shape
    group = f"input {n_in}, hidden {hidden}, {steps} steps, batch {batch}"
    spec: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
        ("NumPy backpropagation through time by hand", "numpy", "by hand",
         lambda: lambda: numpy_gradient(*data)),
        ("tapeflow eager", "tapeflow", "eager", lambda: _tf_api("tapeflow", False, data)),
        ("tapeflow function replay", "tapeflow", "traced", lambda: _tf_api("tapeflow", True, data)),
        ("TensorFlow eager", "tensorflow", "eager", lambda: _tf_api("tensorflow", False, data)),
        ("TensorFlow tf.function", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", True, data)),
        ("tapeflow function replay over tf.foldl", "tapeflow", "traced",
         lambda: _tf_api("tapeflow", True, data, scan=True)),
        ("TensorFlow tf.function over tf.foldl", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", True, data, scan=True)),
        *([(UNROLLED_XLA, "tapeflow", "xla",
            lambda: _tf_api("tapeflow", True, data, xla=True)),
           ("tapeflow function(jit_compile=True) over tf.foldl (lax.scan)", "tapeflow", "xla",
            lambda: _tf_api("tapeflow", True, data, xla=True, scan=True))]
          if common.xla_cases_wanted() else []),
        ("JAX jit(grad) over lax.scan", "jax", "jit", lambda: _jax(data)),
        *([(UNROLLED_JAX, "jax", "jit", lambda: _jax(data, unrolled=True))]
          if common.xla_cases_wanted() else []),
        ("PyTorch eager autograd, Python loop", "torch", "eager", lambda: _torch("eager", data)),
        ("PyTorch torch.func.grad, Python loop", "torch", "eager", lambda: _torch("func", data)),
        ("PyTorch torch.nn.LSTM (fused kernel)", "torch", "eager", lambda: _torch("module", data)),
        ("autograd", "autograd", "eager", lambda: _autograd(data)),
    ]
    return [Case(name, framework, setup, check, group=group, mode=mode,
                 jax_twin=UNROLLED_JAX if name == UNROLLED_XLA else "")
            for name, framework, mode, setup in spec]
