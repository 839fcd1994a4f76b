"""Workload 9: the gradient of a determinant computed by cofactor expansion.

Why: GradBench's det. The expansion along the first row recurses into every minor, so
an l x l determinant is about 2e l! scalar products and sums (some 4,000 at l = 6) of
single matrix entries: a graph of scalar ops with no loop to roll, whose gradient
graph is several times the primal's. Per-op cost, the size of the backward graph and
a compiler's time on a wide graph decide the times. The gradient with respect to the
matrix, float64.

tapeflow and TensorFlow run the recursion eager and traced (tapeflow also with
function(jit_compile=True)); JAX jit(grad) of the same recursion; PyTorch eager
autograd; autograd. NumPy floor: det(A) inv(A)^T, the closed form (an LU, not the
expansion), which is also the reference.
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "det"
TITLE = "Cofactor-expansion determinant: gradient w.r.t. the matrix (float64)"
ORDER = 9
SIZES = {"full": 6, "quick": 5, "tiny": 3}
RTOL = 1e-9


def problem(n: int, seed: int = 0) -> np.ndarray:
    """An n x n float64 matrix, well conditioned."""
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, n)) + n * np.eye(n) / 2


def numpy_gradient(a: np.ndarray) -> list[np.ndarray]:
    """d det(A) / dA = det(A) inv(A)^T."""
    return [np.linalg.det(a) * np.linalg.inv(a).T]


def expansion(entry: Callable[[int, int], Any], n: int) -> Any:
    """det by cofactor expansion along the first row of the minor left, where
    `entry(i, j)` is one entry of the matrix (a scalar of the framework)."""
    def minor(rows: tuple, cols: tuple) -> Any:
        if len(cols) == 1:
            return entry(rows[0], cols[0])
        total = None
        for k, c in enumerate(cols):
            term = entry(rows[0], c) * minor(rows[1:], cols[:k] + cols[k + 1:])
            total = term if total is None else (total - term if k % 2 else total + term)
        return total

    return minor(tuple(range(n)), tuple(range(n)))


def _tf_api(api_name: str, traced: bool, a: np.ndarray, xla: bool = False) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    matrix = api.constant(a)
    n = a.shape[0]

    def gradient(m: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(m)
            value = expansion(lambda i, j: m[i, j], n)
        return tape.gradient(value, m)

    fn = common.xla_function(gradient) if xla else (api.function(gradient) if traced
                                                    else gradient)
    return lambda: [np.asarray(fn(matrix))]


def _jax(a: np.ndarray) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    n = a.shape[0]
    grad = jax.jit(jax.grad(lambda m: expansion(lambda i, j: m[i, j], n)))
    matrix = jnp.asarray(a)
    return lambda: [np.asarray(grad(matrix))]


def _torch(a: np.ndarray) -> Callable[[], Any]:
    import torch

    m = torch.from_numpy(a).requires_grad_()
    n = a.shape[0]
    return lambda: [torch.autograd.grad(expansion(lambda i, j: m[i, j], n), m)[0].numpy()]


def _autograd(a: np.ndarray) -> Callable[[], Any]:
    from autograd import grad

    n = a.shape[0]
    g = grad(lambda m: expansion(lambda i, j: m[i, j], n))
    return lambda: [g(a)]


def cases(size: str = "full") -> list[Case]:
    n = common.size_of(size, SIZES)
    a = problem(n)
    check = common.close_to(lambda: numpy_gradient(a), RTOL)
    group = f"{n} x {n}"
    spec: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
        ("NumPy det(A) inv(A)^T", "numpy", "by hand", lambda: lambda: numpy_gradient(a)),
        ("tapeflow eager", "tapeflow", "eager", lambda: _tf_api("tapeflow", False, a)),
        ("tapeflow function replay", "tapeflow", "traced", lambda: _tf_api("tapeflow", True, a)),
        *([("tapeflow function(jit_compile=True)", "tapeflow", "xla",
            lambda: _tf_api("tapeflow", True, a, xla=True))]
          if common.xla_cases_wanted() else []),
        ("TensorFlow eager", "tensorflow", "eager", lambda: _tf_api("tensorflow", False, a)),
        ("TensorFlow tf.function", "tensorflow", "traced",
         lambda: _tf_api("tensorflow", True, a)),
        ("JAX jit(grad)", "jax", "jit", lambda: _jax(a)),
        ("PyTorch eager autograd", "torch", "eager", lambda: _torch(a)),
        ("autograd", "autograd", "eager", lambda: _autograd(a)),
    ]
    return [Case(name, framework, setup, check, group=group, mode=mode)
            for name, framework, mode, setup in spec]
