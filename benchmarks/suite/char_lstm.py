"""Workload 10: a character-level LSTM's loss gradient, written as a Python loop.

Why: GradBench's lstm (ADBench's): a stacked LSTM whose weights are diagonal (each gate
an elementwise product of a vector of b entries), run over a sequence of c characters,
each step predicting the next character's one-hot code through a log-softmax. Every op
is on a vector of b = 14 entries: tens of thousands of tiny ops in a loop, which the
per-op cost, and a compiler's handling of the loop, decide. The gradient with respect
to the layers' weights and biases [2 l, 4, b] and the extra parameters [3, b]; float64.

tapeflow and TensorFlow run the Python loop eager and traced (tapeflow also with
function(jit_compile=True), the loop rolled into one loop op: NOTE(reroll) in
tapeflow/graph/reroll.py, and with jit_compile="auto", the fastest of that, the NumPy
replays and, with Numba installed, the rolled loops compiled by Numba: NOTE(loop-kernels)
in tapeflow/graph/kernels.py); JAX jit(grad) over lax.scan; PyTorch eager autograd over
the loop; autograd. NumPy floor: backpropagation through time by hand, which is also
the reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "char_lstm"
TITLE = "Character-level LSTM (GradBench's lstm): loss gradient w.r.t. the parameters (float64)"
ORDER = 10
# (layers, characters, entries of a character's code)
SHAPES = {"full": (2, 256, 14), "quick": (2, 64, 14), "tiny": (2, 5, 4)}
RTOL = 1e-9


def problem(shape: tuple[int, int, int], seed: int = 0) -> tuple[np.ndarray, ...]:
    """main [2 l, 4, b], extra [3, b], state [2 l, b], sequence [c, b] (one-hot rows)."""
    layers, chars, b = shape
    rng = np.random.default_rng(seed)
    main = rng.standard_normal((2 * layers, 4, b)) / 2
    extra = rng.standard_normal((3, b)) / 2
    state = rng.standard_normal((2 * layers, b)) / 4
    sequence = np.eye(b)[rng.integers(0, b, chars)]
    return main, extra, state, sequence


# ---------------------------------------------------------------------- NumPy by hand
def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-z))


def numpy_gradient(main: np.ndarray, extra: np.ndarray, state: np.ndarray,
                   sequence: np.ndarray) -> list[np.ndarray]:
    """(d loss / d main, d loss / d extra) by backpropagation through time."""
    layers = main.shape[0] // 2
    chars, b = sequence.shape
    h = [state[2 * k].copy() for k in range(layers)]
    c = [state[2 * k + 1].copy() for k in range(layers)]
    steps = []
    for t in range(chars - 1):
        x = sequence[t] * extra[0]
        saved = []
        for k in range(layers):
            w, bias = main[2 * k], main[2 * k + 1]
            f = _sigmoid(x * w[0] + bias[0])
            i = _sigmoid(h[k] * w[1] + bias[1])
            o = _sigmoid(x * w[2] + bias[2])
            g = np.tanh(h[k] * w[3] + bias[3])
            cell = c[k] * f + i * g
            saved.append((x, h[k], c[k], f, i, o, g, np.tanh(cell)))
            c[k], h[k] = cell, o * np.tanh(cell)
            x = h[k]
        y = x * extra[1] + extra[2]
        steps.append((saved, x, y))
    count = (chars - 1) * b
    d_main, d_extra = np.zeros_like(main), np.zeros_like(extra)
    dh = [np.zeros(b) for _ in range(layers)]
    dc = [np.zeros(b) for _ in range(layers)]
    for t in reversed(range(chars - 1)):
        saved, top, y = steps[t]
        target = sequence[t + 1]
        soft = np.exp(y - y.max())
        soft /= soft.sum()
        dy = -(target - soft * target.sum()) / count
        d_extra[1] += dy * top
        d_extra[2] += dy
        dx = dy * extra[1]
        for k in reversed(range(layers)):
            x, h_in, c_in, f, i, o, g, tc = saved[k]
            w = main[2 * k]
            d_h = dx + dh[k]
            d_cell = dc[k] + d_h * o * (1 - tc ** 2)
            zf = d_cell * c_in * f * (1 - f)
            zi = d_cell * g * i * (1 - i)
            zo = d_h * tc * o * (1 - o)
            zg = d_cell * i * (1 - g ** 2)
            d_main[2 * k] += np.stack([zf * x, zi * h_in, zo * x, zg * h_in])
            d_main[2 * k + 1] += np.stack([zf, zi, zo, zg])
            dc[k] = d_cell * f
            dh[k] = zi * w[1] + zg * w[3]
            dx = zf * w[0] + zo * w[2]
        d_extra[0] += dx * sequence[t]
    return [d_main, d_extra]


# ---------------------------------------------------------------------- frameworks
def loss_of(ops: Any) -> Callable[..., Any]:
    """The loss on a framework's ops: `ops` has sigmoid, tanh, exp, log, sum, rows (a
    [n, ...] array's rows as a list)."""
    def loss(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
        params, ex = ops.rows(main), ops.rows(extra)
        layers = len(params) // 2
        st = ops.rows(state)
        h, c = st[0::2], st[1::2]
        seq = ops.rows(sequence)
        weights = [ops.rows(p) for p in params]
        total = 0.0
        for t in range(len(seq) - 1):
            x = seq[t] * ex[0]
            for k in range(layers):
                w, bias = weights[2 * k], weights[2 * k + 1]
                f = ops.sigmoid(x * w[0] + bias[0])
                i = ops.sigmoid(h[k] * w[1] + bias[1])
                o = ops.sigmoid(x * w[2] + bias[2])
                g = ops.tanh(h[k] * w[3] + bias[3])
                c[k] = c[k] * f + i * g
                h[k] = o * ops.tanh(c[k])
                x = h[k]
            y = x * ex[1] + ex[2]
            total = total + ops.sum(seq[t + 1] * (y - ops.log(ops.sum(ops.exp(y)))))
        return -total / float((len(seq) - 1) * len(ex[0]))

    return loss


class _Ops:
    def __init__(self, **fns: Any) -> None:
        self.__dict__.update(fns)


def _tf_api(api_name: str, traced: bool, data: tuple, xla: bool | str = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    loss = loss_of(_Ops(sigmoid=api.sigmoid, tanh=api.tanh, exp=api.exp, log=api.math.log,
                        sum=api.reduce_sum, rows=api.unstack))
    tensors = [api.constant(a) for a in data]

    def gradient(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch([main, extra])
            value = loss(main, extra, state, sequence)
        return tape.gradient(value, [main, extra])

    if xla == "auto":  # the fastest of XLA, the NumPy replays and Numba's loop kernels
        fn = api.function(gradient, jit_compile="auto")
    else:
        fn = common.xla_function(gradient) if xla else (api.function(gradient) if traced
                                                        else gradient)
    return lambda: [np.asarray(g) for g in fn(*tensors)]


def _jax(data: tuple) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    def loss(main: Any, extra: Any, state: Any, sequence: Any) -> Any:
        layers = main.shape[0] // 2

        def step(carry: tuple, pair: tuple) -> tuple:
            h, c = carry
            now, after = pair
            x = now * extra[0]
            hs, cs = [], []
            for k in range(layers):
                w, bias = main[2 * k], main[2 * k + 1]
                f = jax.nn.sigmoid(x * w[0] + bias[0])
                i = jax.nn.sigmoid(h[k] * w[1] + bias[1])
                o = jax.nn.sigmoid(x * w[2] + bias[2])
                g = jnp.tanh(h[k] * w[3] + bias[3])
                cell = c[k] * f + i * g
                x = o * jnp.tanh(cell)
                hs.append(x)
                cs.append(cell)
            y = x * extra[1] + extra[2]
            term = jnp.sum(after * (y - jnp.log(jnp.sum(jnp.exp(y)))))
            return (jnp.stack(hs), jnp.stack(cs)), term

        _, terms = jax.lax.scan(step, (state[0::2], state[1::2]), (sequence[:-1], sequence[1:]))
        return -jnp.sum(terms) / ((sequence.shape[0] - 1) * sequence.shape[1])

    grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
    arrays = [jnp.asarray(a) for a in data]
    return lambda: [np.asarray(g) for g in grad(*arrays)]


def _torch(data: tuple) -> Callable[[], Any]:
    import torch

    main, extra, state, sequence = (torch.from_numpy(a) for a in data)
    main.requires_grad_()
    extra.requires_grad_()
    loss = loss_of(_Ops(sigmoid=torch.sigmoid, tanh=torch.tanh, exp=torch.exp, log=torch.log,
                        sum=torch.sum, rows=lambda a: list(torch.unbind(a))))
    return lambda: [g.numpy() for g in torch.autograd.grad(
        loss(main, extra, state, sequence), (main, extra))]


def _autograd(data: tuple) -> Callable[[], Any]:
    import autograd.numpy as anp
    from autograd import grad

    loss = loss_of(_Ops(sigmoid=lambda z: 1 / (1 + anp.exp(-z)), tanh=anp.tanh, exp=anp.exp,
                        log=anp.log, sum=anp.sum, rows=lambda a: [a[k] for k in range(len(a))]))
    g = grad(lambda m, e: loss(m, e, data[2], data[3]), argnum=(0, 1))
    return lambda: list(g(data[0], data[1]))


def cases(size: str = "full") -> list[Case]:
    shape = common.size_of(size, SHAPES)
    data = problem(shape)
    check = common.close_to(lambda: numpy_gradient(*data), RTOL)
    layers, chars, b = shape
    group = f"{layers} layers, {chars} characters, codes of {b}"
    spec: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
        ("NumPy backpropagation through time by hand", "numpy", "by hand",
         lambda: lambda: numpy_gradient(*data)),
        ("tapeflow eager", "tapeflow", "eager", lambda: _tf_api("tapeflow", False, data)),
        ("tapeflow function replay", "tapeflow", "traced", lambda: _tf_api("tapeflow", True, data)),
        *([("tapeflow function(jit_compile=True), Python loop rolled", "tapeflow", "xla",
            lambda: _tf_api("tapeflow", True, data, xla=True))]
          if common.xla_cases_wanted() else []),
        ("tapeflow function(jit_compile='auto')", "tapeflow", "traced",
         lambda: _tf_api("tapeflow", True, data, xla="auto")),
        ("TensorFlow eager", "tensorflow", "eager", lambda: _tf_api("tensorflow", False, data)),
        ("TensorFlow tf.function", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", True, data)),
        ("JAX jit(grad) over lax.scan", "jax", "jit", lambda: _jax(data)),
        ("PyTorch eager autograd, Python loop", "torch", "eager", lambda: _torch(data)),
        ("autograd", "autograd", "eager", lambda: _autograd(data)),
    ]
    return [Case(name, framework, setup, check, group=group, mode=mode)
            for name, framework, mode, setup in spec]
