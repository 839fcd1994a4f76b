"""Workload 6: a LeNet-style CNN: (a) the training gradient, (b) input batch Jacobians.

Why: the everyday deep-learning workload, convolutions and pooling, where the time
goes into a few large kernels instead of per-op dispatch. The network: 28x28x1 ->
conv 5x5, 6 filters, VALID, relu -> max-pool 2 -> conv 5x5, 16 filters, VALID, relu ->
avg-pool 2 -> dense 120 relu -> dense 84 relu -> dense 10; loss: softmax cross-entropy
against one-hot labels, mean over the batch; float32.
(a) the gradient of the loss w.r.t. all weights at batch 128; (b) the 10x784 Jacobians
of the logits w.r.t. the input at 32 inputs (batch_jacobian).

tapeflow and TensorFlow run the same code, eager and traced (tapeflow also with
function(jit_compile=True), compiled by XLA, when JAX is installed); JAX jit(grad) and
jit(vmap(jacrev)); PyTorch eager autograd and torch.func. The NumPy floor is a
hand-written backward pass; in float64 it is also the reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "lenet"
TITLE = "LeNet-style CNN (float32): training gradient and input batch Jacobian"
ORDER = 6
SHAPES = {"k1": (5, 5, 1, 6), "b1": (6,), "k2": (5, 5, 6, 16), "b2": (16,),
          "w3": (256, 120), "b3": (120,), "w4": (120, 84), "b4": (84,),
          "w5": (84, 10), "b5": (10,)}
ORDER_OF_PARAMS = list(SHAPES)
# (training batch, Jacobian inputs)
BATCHES = {"full": (128, 32), "quick": (32, 8), "tiny": (2, 2)}
RTOL = 1e-4


def weights(seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    out = []
    for shape in SHAPES.values():
        fan_in = int(np.prod(shape[:-1])) if len(shape) > 1 else 10
        out.append((rng.standard_normal(shape) / np.sqrt(fan_in)).astype(np.float32))
    return out


def data(batch: int, seed: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """Images [batch, 28, 28, 1] in [0, 1) and one-hot labels [batch, 10], float32."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(0, 1, (batch, 28, 28, 1)).astype(np.float32)
    labels = np.eye(10, dtype=np.float32)[rng.integers(0, 10, batch)]
    return x, labels


# ---------------------------------------------------------------------- NumPy by hand
def _conv(x: np.ndarray, k: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """VALID cross-correlation as one GEMM on the im2col matrix (returned for backward)."""
    b, h, w, c = x.shape
    kh = k.shape[0]
    ho, wo = h - kh + 1, w - kh + 1
    windows = np.lib.stride_tricks.sliding_window_view(x, (kh, kh), axis=(1, 2))
    cols = windows.transpose(0, 1, 2, 4, 5, 3).reshape(b * ho * wo, kh * kh * c)
    return (cols @ k.reshape(kh * kh * c, -1)).reshape(b, ho, wo, -1), cols


def _conv_input_grad(dy: np.ndarray, k: np.ndarray, x_shape: tuple) -> np.ndarray:
    kh = k.shape[0]
    b, ho, wo, o = dy.shape
    dcols = (dy.reshape(-1, o) @ k.reshape(-1, o).T).reshape(b, ho, wo, kh, kh, -1)
    dx = np.zeros(x_shape, dy.dtype)
    for i in range(kh):
        for j in range(kh):
            dx[:, i:i + ho, j:j + wo, :] += dcols[:, :, :, i, j, :]
    return dx


def _windows(x: np.ndarray) -> np.ndarray:
    """[b, h, w, c] -> [b, h/2, w/2, c, 4]: the 2x2 pooling windows."""
    b, h, w, c = x.shape
    return x.reshape(b, h // 2, 2, w // 2, 2, c).transpose(0, 1, 3, 5, 2, 4).reshape(
        b, h // 2, w // 2, c, 4)


def _unwindows(r: np.ndarray) -> np.ndarray:
    b, h, w, c, _ = r.shape
    return r.reshape(b, h, w, c, 2, 2).transpose(0, 1, 4, 2, 5, 3).reshape(b, 2 * h, 2 * w, c)


def numpy_forward(p: list[np.ndarray], x: np.ndarray) -> tuple[np.ndarray, dict]:
    """Logits and what the backward pass reads."""
    k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = p
    a1, cols1 = _conv(x, k1)
    a1 = a1 + b1
    r1 = _windows(np.maximum(a1, 0))
    arg1 = r1.argmax(-1)[..., None]  # the gradient goes to the first maximum, as TF
    p1 = np.take_along_axis(r1, arg1, -1)[..., 0]
    a2, cols2 = _conv(p1, k2)
    a2 = a2 + b2
    f = _windows(np.maximum(a2, 0)).mean(-1).reshape(len(x), -1)
    a3 = f @ w3 + b3
    a4 = np.maximum(a3, 0) @ w4 + b4
    logits = np.maximum(a4, 0) @ w5 + b5
    return logits, dict(x=x, a1=a1, cols1=cols1, r1=r1, arg1=arg1, p1=p1, a2=a2, cols2=cols2,
                        f=f, a3=a3, a4=a4)


def numpy_backward(p: list[np.ndarray], s: dict, dlogits: np.ndarray,
                   weights_too: bool = True) -> tuple[list[np.ndarray], np.ndarray | None]:
    """Gradients of the weights (if `weights_too`) and of the input, given d logits."""
    k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = p
    h3, h4 = np.maximum(s["a3"], 0), np.maximum(s["a4"], 0)
    da4 = (dlogits @ w5.T) * (s["a4"] > 0)
    da3 = (da4 @ w4.T) * (s["a3"] > 0)
    df = (da3 @ w3.T).reshape(s["a2"].shape[0], 4, 4, 16)
    dr2 = np.repeat(np.repeat(df, 2, axis=1), 2, axis=2) / 4
    da2 = dr2 * (s["a2"] > 0)
    dp1 = _conv_input_grad(da2, k2, s["p1"].shape)
    dr1 = np.zeros_like(s["r1"])
    np.put_along_axis(dr1, s["arg1"], dp1[..., None], -1)
    da1 = _unwindows(dr1) * (s["a1"] > 0)
    dx = None if weights_too else _conv_input_grad(da1, k1, s["x"].shape)
    if not weights_too:
        return [], dx
    grads = [(s["cols1"].T @ da1.reshape(-1, 6)).reshape(k1.shape), da1.sum((0, 1, 2)),
             (s["cols2"].T @ da2.reshape(-1, 16)).reshape(k2.shape), da2.sum((0, 1, 2)),
             s["f"].T @ da3, da3.sum(0), h3.T @ da4, da4.sum(0), h4.T @ dlogits, dlogits.sum(0)]
    return grads, dx


def numpy_gradient(p: list[np.ndarray], x: np.ndarray, labels: np.ndarray) -> list[np.ndarray]:
    logits, saved = numpy_forward(p, x)
    e = np.exp(logits - logits.max(1, keepdims=True))
    softmax = e / e.sum(1, keepdims=True)
    return numpy_backward(p, saved, (softmax - labels) / len(x))[0]


def numpy_batch_jacobian(p: list[np.ndarray], x: np.ndarray) -> np.ndarray:
    """[n, 10, 784]: one backward pass per logit."""
    _, saved = numpy_forward(p, x)
    rows = []
    for k in range(10):
        dlogits = np.zeros((len(x), 10), x.dtype)
        dlogits[:, k] = 1
        rows.append(numpy_backward(p, saved, dlogits, weights_too=False)[1].reshape(len(x), 784))
    return np.stack(rows, axis=1)


def _as64(arrays: list[np.ndarray]) -> list[np.ndarray]:
    return [a.astype(np.float64) for a in arrays]


# ---------------------------------------------------------------------- frameworks
def tf_api_model(api: Any) -> tuple[Callable, Callable]:
    """(logits(params, x), loss(params, x, labels)) against TensorFlow's API."""
    def logits(p: list, x: Any) -> Any:
        k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = p
        h = api.nn.relu(api.nn.conv2d(x, k1, strides=1, padding="VALID") + b1)
        h = api.nn.max_pool2d(h, 2, 2, "VALID")
        h = api.nn.relu(api.nn.conv2d(h, k2, strides=1, padding="VALID") + b2)
        h = api.reshape(api.nn.avg_pool2d(h, 2, 2, "VALID"), [-1, 256])
        h = api.nn.relu(api.matmul(h, w3) + b3)
        h = api.nn.relu(api.matmul(h, w4) + b4)
        return api.matmul(h, w5) + b5

    def loss(p: list, x: Any, labels: Any) -> Any:
        return api.reduce_mean(api.nn.softmax_cross_entropy_with_logits(labels, logits(p, x)))

    return logits, loss


def _tf_api(api_name: str, traced: bool, jacobian: bool, p: list, x: np.ndarray,
            labels: np.ndarray, xla: bool = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    logits, loss = tf_api_model(api)
    pt, xt, lt = [api.constant(a) for a in p], api.constant(x), api.constant(labels)

    def gradient(q: list, x: Any, labels: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(q)
            value = loss(q, x, labels)
        return tape.gradient(value, q)

    def batch_jacobian(q: list, x: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(x)
            y = logits(q, x)
        return tape.batch_jacobian(y, x)

    def wrap(f: Callable) -> Callable:
        return common.xla_function(f) if xla else api.function(f) if traced else f

    if jacobian:
        fn = wrap(batch_jacobian)
        return lambda: np.asarray(fn(pt, xt)).reshape(len(x), 10, 784)
    fn = wrap(gradient)
    return lambda: [np.asarray(g) for g in fn(pt, xt, lt)]


def _jax(jacobian: bool, p: list, x: np.ndarray, labels: np.ndarray) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp
    from jax import lax

    pj, xj, lj = [jnp.asarray(a) for a in p], jnp.asarray(x), jnp.asarray(labels)
    dims = ("NHWC", "HWIO", "NHWC")

    def logits(q: list, x: Any) -> Any:
        k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = q
        h = jax.nn.relu(lax.conv_general_dilated(x, k1, (1, 1), "VALID",
                                                 dimension_numbers=dims) + b1)
        h = lax.reduce_window(h, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
        h = jax.nn.relu(lax.conv_general_dilated(h, k2, (1, 1), "VALID",
                                                 dimension_numbers=dims) + b2)
        h = lax.reduce_window(h, 0.0, lax.add, (1, 2, 2, 1), (1, 2, 2, 1), "VALID") / 4
        h = jax.nn.relu(h.reshape(-1, 256) @ w3 + b3)
        h = jax.nn.relu(h @ w4 + b4)
        return h @ w5 + b5

    def loss(q: list, x: Any, labels: Any) -> Any:
        return jnp.mean(-jnp.sum(labels * jax.nn.log_softmax(logits(q, x)), axis=1))

    if jacobian:
        jac = jax.jit(jax.vmap(jax.jacrev(lambda q, v: logits(q, v[None])[0], argnums=1),
                               in_axes=(None, 0)))
        return lambda: np.asarray(jac(pj, xj)).reshape(len(x), 10, 784)
    grad = jax.jit(jax.grad(loss))
    return lambda: [np.asarray(g) for g in grad(pj, xj, lj)]


def _torch(func: bool, jacobian: bool, p: list, x: np.ndarray,
           labels: np.ndarray) -> Callable[[], Any]:
    import torch
    import torch.nn.functional as F

    # HWIO -> OIHW filters and NHWC -> NCHW images; the flatten goes back to NHWC order
    # so the dense weights are the same arrays as everyone else's.
    pt = [torch.from_numpy(np.ascontiguousarray(a.transpose(3, 2, 0, 1)) if a.ndim == 4 else a)
          for a in p]
    xt = torch.from_numpy(np.ascontiguousarray(x.transpose(0, 3, 1, 2)))
    lt = torch.from_numpy(labels)

    def logits(q: Any, v: Any) -> Any:
        k1, b1, k2, b2, w3, b3, w4, b4, w5, b5 = q
        h = F.max_pool2d(F.relu(F.conv2d(v, k1, b1)), 2)
        h = F.avg_pool2d(F.relu(F.conv2d(h, k2, b2)), 2)
        h = F.relu(h.permute(0, 2, 3, 1).reshape(-1, 256) @ w3 + b3)
        h = F.relu(h @ w4 + b4)
        return h @ w5 + b5

    def loss(q: Any) -> Any:
        return torch.mean(-torch.sum(lt * F.log_softmax(logits(q, xt), dim=1), dim=1))

    def back_to_hwio(grads: Any) -> list[np.ndarray]:
        return [g.numpy().transpose(2, 3, 1, 0) if g.ndim == 4 else g.numpy() for g in grads]

    def as_jacobian(j: Any) -> np.ndarray:  # [n, 10, 1, 28, 28] -> [n, 10, 784]
        return j.numpy().reshape(len(x), 10, 784)

    if func:
        from torch.func import grad, jacrev, vmap

        if jacobian:
            jac = vmap(jacrev(lambda v: logits(pt, v[None])[0]))
            return lambda: as_jacobian(jac(xt))
        g = grad(loss)
        return lambda: back_to_hwio(g(tuple(pt)))
    if jacobian:
        def eager_jacobian() -> np.ndarray:
            v = xt.detach().requires_grad_()
            y = logits(pt, v)
            rows = [torch.autograd.grad(y[:, k].sum(), v, retain_graph=k < 9)[0]
                    for k in range(10)]
            return as_jacobian(torch.stack(rows, dim=1))
        return eager_jacobian
    leaves = [a.detach().requires_grad_() for a in pt]
    return lambda: back_to_hwio(torch.autograd.grad(loss(leaves), leaves))


def cases(size: str = "full") -> list[Case]:
    n_train, n_jac = common.size_of(size, BATCHES)
    p = weights()
    x, labels = data(n_train)
    xj = data(n_jac, seed=2)[0]
    train = f"(a) training gradient, batch {n_train}"
    jac = f"(b) input batch_jacobian, {n_jac} inputs"
    check_train = common.close_to(lambda: numpy_gradient(_as64(p), *_as64([x, labels])), RTOL)
    check_jac = common.close_to(lambda: numpy_batch_jacobian(_as64(p), xj.astype(np.float64)),
                                RTOL)
    out = []
    for group, is_jac, check, xs in ((train, False, check_train, x), (jac, True, check_jac, xj)):
        def case(name: str, framework: str, mode: str, setup: Callable[[], Callable]) -> None:
            out.append(Case(name, framework, setup, check, group=group, mode=mode))

        if is_jac:
            case("NumPy by hand (a backward pass per logit)", "numpy", "by hand",
                 lambda: lambda: numpy_batch_jacobian(p, xj))
        else:
            case("NumPy by hand", "numpy", "by hand",
                 lambda: lambda: numpy_gradient(p, x, labels))
        for api, label in (("tapeflow", "tapeflow"), ("tensorflow", "TensorFlow")):
            case(f"{label} eager", api, "eager",
                 lambda a=api, j=is_jac, v=xs: _tf_api(a, False, j, p, v, labels[:len(v)]))
            case(f"{label} " + ("function replay" if api == "tapeflow" else "tf.function"), api,
                 "traced", lambda a=api, j=is_jac, v=xs: _tf_api(a, True, j, p, v,
                                                                 labels[:len(v)]))
        if common.xla_cases_wanted():
            case("tapeflow function(jit_compile=True)", "tapeflow", "xla",
                 lambda j=is_jac, v=xs: _tf_api("tapeflow", True, j, p, v, labels[:len(v)],
                                                xla=True))
        case("JAX jit(vmap(jacrev))" if is_jac else "JAX jit(grad)", "jax", "jit",
             lambda j=is_jac, v=xs: _jax(j, p, v, labels[:len(v)]))
        case("PyTorch eager autograd", "torch", "eager",
             lambda j=is_jac, v=xs: _torch(False, j, p, v, labels[:len(v)]))
        case("PyTorch torch.func " + ("vmap(jacrev)" if is_jac else "grad"), "torch", "eager",
             lambda j=is_jac, v=xs: _torch(True, j, p, v, labels[:len(v)]))
    return out
