"""Workload 11: a hand-tracking residual's Jacobian (GradBench's ht, ADBench's hand).

Why: GradBench's hand tracking, where a compiled Jacobian ran slower than tapeflow's
own replay. A skinned hand model (22 bones in a tree, 544 vertices, each bone posed
by three angles) is posed by 26 parameters; the residual is the distance from n
observed points to their corresponding model points, [3 n]. Most of the time goes into
skinning: every vertex times every bone's 4 x 4 transform, [22, 544, 4] per direction
of differentiation, a few MB per column of the Jacobian. Two problems, as GradBench's:
"simple", J w.r.t. the 26 pose parameters ([3 n, 26]: forward mode's shape); and
"complicated", where each point lies on a triangle of the model at barycentric
coordinates that are parameters too, J w.r.t. [2 n + 26] (each point's two coordinates
move only its own residual, so the first 2 n columns are block-diagonal). float64.

The model is synthetic (rigid bone transforms, skinning weights concentrated on a few
bones, seeded), with ADBench's sizes: GradBench's model files are not needed.

The skinning's weighted sum of products is what tapeflow's graph passes turn into one
product (NOTE(weighted-products) in tapeflow/graph/contractions.py).

tapeflow runs jacfwd eager, traced and compiled (function(jit_compile=True) and
jit_compile="auto"), and on the complicated problem also SparseJacobian, which colors
the columns (with SciPy) so that the block-diagonal ones share products; TensorFlow
tape.jacobian under tf.function; JAX jit(jacfwd); torch.func.jacfwd. The reference is
a central difference of the NumPy residual, which is also the NumPy row (not
differentiation: 2 (26 + 2 n) residuals).
"""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from . import common
from .common import Case

NAME = "hand"
TITLE = "Hand tracking (GradBench's ht): Jacobian of the residual (float64)"
ORDER = 11
BONES, VERTICES, TRIANGLES = 22, 544, 1084
POINTS = {"full": 100, "quick": 20, "tiny": 3}
RTOL = 1e-6
# A wrist, a palm bone, then four bones a finger for five fingers.
PARENTS = [-1, 0] + [p for f in range(5) for p in (1, 2 + 4 * f, 3 + 4 * f, 4 + 4 * f)]


def model(seed: int = 0) -> dict[str, np.ndarray]:
    """The hand: each bone's rest transform relative to its parent and the inverse of
    its absolute one ([22, 4, 4], rigid), the vertices' rest positions [544, 4] (w = 1),
    skinning weights [22, 544] (each vertex's sum to 1) and triangles [1084, 3]."""
    rng = np.random.default_rng(seed)

    def rigid() -> np.ndarray:
        m = np.eye(4)
        m[:3, :3] = np.linalg.qr(rng.standard_normal((3, 3)))[0]
        m[:3, 3] = rng.standard_normal(3) / 10
        return m

    weights = rng.random((VERTICES, BONES)) ** 8
    return {"relatives": np.stack([rigid() for _ in range(BONES)]),
            "inverse_absolutes": np.stack([rigid() for _ in range(BONES)]),
            "positions": np.concatenate([rng.standard_normal((VERTICES, 3)),
                                         np.ones((VERTICES, 1))], 1),
            "weights": (weights / weights.sum(1, keepdims=True)).T.copy(),
            "triangles": rng.integers(0, VERTICES, (TRIANGLES, 3))}


def problem(n: int, complicated: bool, seed: int = 1) -> tuple[np.ndarray, ...]:
    """(params, points [n, 3], correspondences [n]): params the 26 pose parameters, with
    complicated each point's barycentric coordinates [n, 2] before them, flattened;
    correspondences index vertices (simple) or triangles (complicated)."""
    rng = np.random.default_rng(seed)
    theta = rng.standard_normal(26) / 3
    points = rng.standard_normal((n, 3))
    if not complicated:
        return theta, points, rng.integers(0, VERTICES, n)
    us = rng.random((n, 2)) / 2
    return np.concatenate([us.ravel(), theta]), points, rng.integers(0, TRIANGLES, n)


# ---------------------------------------------------------------------- the residual
def residual_of(ops: Any, hand: dict, n: int, complicated: bool) -> Callable[..., Any]:
    """The residual on a framework's ops, as GradBench's programs compute it: `ops` has
    sin, cos, sqrt, stack and concat (lists, an axis), take (rows), transpose (with a
    permutation), sum (over an axis), reshape and const (a float64 NumPy array as the
    framework's); `hand` holds `model`'s arrays as the framework's, its weights [22,
    544, 1]."""
    zero, one = ops.const(np.array(0.0)), ops.const(np.array(1.0))
    side = ops.const(np.zeros((3, 1)))
    bottom = ops.const(np.array([[0.0, 0.0, 0.0, 1.0]]))

    def rotation(a: Any) -> Any:  # Euler angles (x, z, y) -> Rz Ry Rx
        cx, sx, cy, sy, cz, sz = (ops.cos(a[0]), ops.sin(a[0]), ops.cos(a[2]),
                                  ops.sin(a[2]), ops.cos(a[1]), ops.sin(a[1]))
        rx = ops.stack([ops.stack([one, zero, zero], 0), ops.stack([zero, cx, -sx], 0),
                        ops.stack([zero, sx, cx], 0)], 0)
        ry = ops.stack([ops.stack([cy, zero, -sy], 0), ops.stack([zero, one, zero], 0),
                        ops.stack([sy, zero, cy], 0)], 0)
        rz = ops.stack([ops.stack([cz, -sz, zero], 0), ops.stack([sz, cz, zero], 0),
                        ops.stack([zero, zero, one], 0)], 0)
        return (rz @ ry) @ rx

    def angle_axis(a: Any) -> Any:  # Rodrigues: the rotation about a by |a|
        angle = ops.sqrt(ops.sum(a * a, 0))
        x, y, z = a[0] / angle, a[1] / angle, a[2] / angle
        s, c = ops.sin(angle), ops.cos(angle)
        rows = [[x * x + (1 - x * x) * c, x * y * (1 - c) - z * s, x * z * (1 - c) + y * s],
                [x * y * (1 - c) + z * s, y * y + (1 - y * y) * c, y * z * (1 - c) - x * s],
                [x * z * (1 - c) - y * s, z * y * (1 - c) + x * s, z * z + (1 - z * z) * c]]
        return ops.stack([ops.stack(r, 0) for r in rows], 0)

    def angles(theta: Any) -> list:
        """Each bone's three angles: the wrist's and the palm's zeros; a finger's first
        bone two of theta, its next two one each, its tip zeros (GradBench's rows)."""
        zeros = ops.stack([zero, zero, zero], 0)
        rows, i = [zeros, zeros], 6
        for _ in range(5):
            rows += [ops.stack([theta[i], theta[i + 1], zero], 0),
                     ops.stack([theta[i + 2], zero, zero], 0),
                     ops.stack([theta[i + 3], zero, zero], 0), zeros]
            i += 4
        return rows

    def vertices(theta: Any) -> Any:
        absolutes: list[Any] = []
        for k, a in enumerate(angles(theta)):
            posed = ops.concat([ops.concat([rotation(a), side], 1), bottom], 0)
            rel = hand["relatives"][k] @ posed
            absolutes.append(rel if PARENTS[k] < 0 else absolutes[PARENTS[k]] @ rel)
        transforms = ops.stack(absolutes, 0) @ hand["inverse_absolutes"]
        skinned = hand["positions"] @ ops.transpose(transforms, (0, 2, 1))  # [22, 544, 4]
        skinned = ops.sum(skinned * hand["weights"], 0)[:, :3]
        turned = ops.transpose(angle_axis(theta[0:3]) @ ops.transpose(skinned, (1, 0)), (1, 0))
        return turned + theta[3:6]

    def simple(theta: Any, points: Any, corr: Any) -> Any:
        return ops.reshape(points - ops.take(vertices(theta), corr), (-1,))

    def full(params: Any, points: Any, corr: Any) -> Any:
        us, theta = ops.reshape(params[:2 * n], (n, 2)), params[2 * n:]
        v = vertices(theta)
        corners = [ops.take(v, ops.take(hand["triangles"][:, k], corr)) for k in range(3)]
        u, w = us[:, 0:1], us[:, 1:2]
        return ops.reshape(points - (u * corners[0] + w * corners[1]
                                     + (1.0 - u - w) * corners[2]), (-1,))

    return full if complicated else simple


class _Ops:
    def __init__(self, **fns: Any) -> None:
        self.__dict__.update(fns)


def _numpy_ops() -> _Ops:
    return _Ops(sin=np.sin, cos=np.cos, sqrt=np.sqrt, stack=np.stack, concat=np.concatenate,
                take=lambda x, i: x[i], transpose=np.transpose, sum=np.sum,
                reshape=np.reshape, const=np.asarray)


def _hand_as(hand: dict, const: Callable[[np.ndarray], Any]) -> dict:
    out = {k: const(v) for k, v in hand.items() if k != "weights"}
    out["weights"] = const(hand["weights"][:, :, None])
    return out


def central_jacobian(n: int, complicated: bool, data: tuple) -> np.ndarray:
    """J by central differences of the NumPy residual (error ~1e-9 at this step)."""
    hand = _hand_as(model(), np.asarray)
    f = residual_of(_numpy_ops(), hand, n, complicated)
    params, points, corr = data
    cols = []
    for j in range(params.size):
        step = np.zeros_like(params)
        step[j] = 1e-6
        cols.append((f(params + step, points, corr) - f(params - step, points, corr)) / 2e-6)
    return np.stack(cols, 1)


# ---------------------------------------------------------------------- frameworks
def _tf_ops(api: Any) -> _Ops:
    """The residual's ops in TensorFlow's API (`api` is tapeflow or TensorFlow)."""
    return _Ops(sin=api.sin, cos=api.cos, sqrt=api.sqrt, stack=api.stack, concat=api.concat,
                take=api.gather, transpose=api.transpose, sum=api.reduce_sum,
                reshape=api.reshape, const=lambda a: api.constant(a, api.float64))


def _tf_api(api_name: str, how: str, n: int, complicated: bool,
            data: tuple) -> Callable[[], Any]:
    import importlib

    api = importlib.import_module(api_name)
    f = residual_of(_tf_ops(api), _hand_as(model(), api.constant), n, complicated)
    params, points, corr = (api.constant(a) for a in data)

    def tape_jacobian(p: Any, x: Any, c: Any) -> Any:
        with api.GradientTape() as tape:
            tape.watch(p)
            r = f(p, x, c)
        return tape.jacobian(r, p)

    def jacobian(p: Any, x: Any, c: Any) -> Any:
        return api.jacfwd(lambda q: f(q, x, c))(p)

    if api_name != "tapeflow":  # TensorFlow has no jacfwd
        fn = api.function(tape_jacobian)
    elif how == "xla":
        fn = common.xla_function(jacobian)
    elif how == "auto":
        fn = api.function(jacobian, jit_compile="auto")
    else:
        fn = api.function(jacobian) if how == "traced" else jacobian
    return lambda: np.asarray(fn(params, points, corr))


def _sparse(n: int, data: tuple) -> Callable[[], Any]:
    """tapeflow.SparseJacobian (SciPy's coloring): the columns that reach disjoint rows
    (a point's two barycentric coordinates and another point's) share one product."""
    import tapeflow as tf

    f = residual_of(_tf_ops(tf), _hand_as(model(), tf.constant), n, True)
    params, points, corr = data
    points, corr = tf.constant(points), tf.constant(corr)
    jac = tf.SparseJacobian(lambda p: f(p, points, corr))
    return lambda: jac(params).toarray()


def _jax(n: int, complicated: bool, data: tuple) -> Callable[[], Any]:
    import jax
    import jax.numpy as jnp

    ops = _Ops(sin=jnp.sin, cos=jnp.cos, sqrt=jnp.sqrt, stack=jnp.stack,
               concat=jnp.concatenate, take=lambda x, i: x[i], transpose=jnp.transpose,
               sum=jnp.sum, reshape=jnp.reshape, const=jnp.asarray)
    hand = _hand_as(model(), jnp.asarray)  # float64: the suite turns JAX's x64 on
    jac = jax.jit(jax.jacfwd(residual_of(ops, hand, n, complicated)))
    params, points, corr = (jnp.asarray(a) for a in data)
    return lambda: np.asarray(jac(params, points, corr))


def _torch(n: int, complicated: bool, data: tuple) -> Callable[[], Any]:
    import torch
    import torch.func

    def stack(xs: list, axis: int) -> Any:
        return torch.stack(xs, axis)

    ops = _Ops(sin=torch.sin, cos=torch.cos, sqrt=torch.sqrt, stack=stack,
               concat=lambda xs, axis: torch.cat(xs, axis), take=lambda x, i: x[i],
               transpose=lambda x, perm: x.permute(*perm), sum=torch.sum,
               reshape=torch.reshape, const=lambda a: torch.as_tensor(a, dtype=torch.float64))
    hand = _hand_as(model(), torch.as_tensor)
    f = residual_of(ops, hand, n, complicated)
    params, points, corr = (torch.as_tensor(a) for a in data)
    jac = torch.func.jacfwd(f)
    return lambda: jac(params, points, corr).numpy()


def cases(size: str = "full") -> list[Case]:
    n = common.size_of(size, POINTS)
    out: list[Case] = []
    for complicated in (False, True):
        data = problem(n, complicated)
        check = common.close_to(lambda c=complicated, d=data: central_jacobian(n, c, d), RTOL)
        cols = 2 * n + 26 if complicated else 26
        group = (f"{'complicated' if complicated else 'simple'}, {n} points, "
                 f"J [{3 * n}, {cols}]")
        spec: list[tuple[str, str, str, Callable[[], Callable[[], Any]]]] = [
            ("NumPy central differences", "numpy", "by hand",
             lambda c=complicated, d=data: lambda: central_jacobian(n, c, d)),
            ("tapeflow eager jacfwd", "tapeflow", "eager",
             lambda c=complicated, d=data: _tf_api("tapeflow", "eager", n, c, d)),
            ("tapeflow function replay jacfwd", "tapeflow", "traced",
             lambda c=complicated, d=data: _tf_api("tapeflow", "traced", n, c, d)),
            *([("tapeflow function(jit_compile=True) jacfwd", "tapeflow", "xla",
                lambda c=complicated, d=data: _tf_api("tapeflow", "xla", n, c, d)),
               ("tapeflow function(jit_compile='auto') jacfwd", "tapeflow", "traced",
                lambda c=complicated, d=data: _tf_api("tapeflow", "auto", n, c, d))]
              if common.xla_cases_wanted() else []),
            *([("tapeflow SparseJacobian (colored products)", "tapeflow", "traced",
                lambda d=data: _sparse(n, d))] if complicated else []),
            ("TensorFlow tf.function tape.jacobian", "tensorflow", "traced",
             lambda c=complicated, d=data: _tf_api("tensorflow", "traced", n, c, d)),
            ("JAX jit(jacfwd)", "jax", "jit", lambda c=complicated, d=data: _jax(n, c, d)),
            ("PyTorch torch.func.jacfwd", "torch", "eager",
             lambda c=complicated, d=data: _torch(n, c, d)),
        ]
        out += [Case(name, framework, setup, check, group=group, mode=mode)
                for name, framework, mode, setup in spec]
    return out
