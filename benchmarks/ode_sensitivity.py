"""Parameter gradients through `solve_ivp`: tapeflow's forward sensitivities and adjoint
method against central finite differences of SciPy's solve and against diffrax (JAX)
where it is installed.

Run (diffrax optional)::

    python benchmarks/ode_sensitivity.py            # Robertson and a 100 x 100 Brusselator
    python benchmarks/ode_sensitivity.py --quick    # a 20 x 20 Brusselator, seconds

Each problem's loss is ``sum(W * y(t_eval))`` for fixed random weights W; its gradient
is taken with respect to y0 and the parameters. Times are wall time of one gradient
(the solve and its derivative, tracing included: what one call costs a user); the
error is the largest difference from a reference (Robertson: tapeflow's forward
sensitivities at rtol 1e-10; the Brusselator: central differences of SciPy's solve at
rtol 1e-9 along a random direction of y0 and along each parameter), relative to the
reference's largest entry.

- Robertson (3 states, 3 rate constants spanning 10^9, stiff, t to 1e5): BDF.
- Brusselator 2-D on an N x N grid (2 N^2 states, 3 parameters: A, B, alpha), BDF with
  the exact sparse Jacobian: the adjoint gives the gradient in all 2 N^2 + 3 inputs from
  one backward solve. Finite differences are timed for the 3 parameters (6 solves) and
  extrapolated to the 2 N^2 entries of y0; diffrax runs Tsit5 (its implicit solvers
  factor a dense Jacobian, 3.2 GB at N = 100).
- The crossover: a gradient by each method for growing systems (chains of m coupled
  decays under RK45 and BDF, small Brusselators): where "auto" switches
  (tapeflow.scipy_ode.AUTO_FORWARD_STATES, NOTE(ode-auto)).
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from typing import Any, Callable

import numpy as np
import scipy.integrate

HERE = os.path.dirname(os.path.abspath(__file__))
if importlib.util.find_spec("tapeflow") is None:
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import tapeflow as tf  # noqa: E402
from tapeflow.scipy_ode import AUTO_FORWARD_STATES, solve_ivp, use_forward  # noqa: E402

try:
    import diffrax
    import jax
except ImportError:  # diffrax is optional
    diffrax = jax = None


def _timed(run: Callable[[], Any]) -> tuple[float, Any]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def _err(got: np.ndarray, ref: np.ndarray) -> float:
    return float(np.max(np.abs(got - ref)) / np.max(np.abs(ref)))


# ------------------------------------------------------------------------ problems
def robertson_tf(t, y, k):
    return tf.stack([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def robertson_np(t, y, k):
    return np.array([-k[0] * y[0] + k[2] * y[1] * y[2],
                     k[0] * y[0] - k[2] * y[1] * y[2] - k[1] * y[1] ** 2,
                     k[1] * y[1] ** 2])


def brusselator_tf(n: int) -> Callable:
    def lap(g):
        p = tf.concat([g[:1], g, g[-1:]], 0)
        p = tf.concat([p[:, :1], p, p[:, -1:]], 1)
        return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g) * \
            float((n - 1) ** 2)

    def rhs(t, y, p):
        u, v = tf.reshape(y[:n * n], [n, n]), tf.reshape(y[n * n:], [n, n])
        du = p[0] + u * u * v - (p[1] + 1.0) * u + p[2] * lap(u)
        dv = p[1] * u - u * u * v + p[2] * lap(v)
        return tf.concat([tf.reshape(du, [-1]), tf.reshape(dv, [-1])], 0)
    return rhs


def brusselator_np(n: int, xp: Any = np) -> Callable:
    def lap(g):
        p = xp.pad(g, 1, mode="edge")
        return (p[:-2, 1:-1] + p[2:, 1:-1] + p[1:-1, :-2] + p[1:-1, 2:] - 4.0 * g) * (n - 1) ** 2

    def rhs(t, y, p):
        u, v = y[:n * n].reshape(n, n), y[n * n:].reshape(n, n)
        du = p[0] + u * u * v - (p[1] + 1.0) * u + p[2] * lap(u)
        dv = p[1] * u - u * u * v + p[2] * lap(v)
        return xp.concatenate([du.ravel(), dv.ravel()])
    return rhs


def brusselator_y0(n: int) -> np.ndarray:
    x = np.linspace(0.0, 1.0, n)
    return np.concatenate([(0.5 + np.outer(np.ones(n), x)).ravel(),
                           (1.0 + 0.5 * np.outer(x, np.ones(n))).ravel()])


def chain_tf(t, y, p):
    return -p * y + 0.5 * tf.roll(y, 1, 0) * tf.cos(y)


# ------------------------------------------------------------------------ gradients
def tapeflow_grad(fun, span, y0, p, t_eval, w, sensitivity, **opts) -> np.ndarray:
    def loss(y, q):
        sol = solve_ivp(fun, span, y, t_eval=t_eval, args=(q,), sensitivity=sensitivity,
                        **opts)
        return tf.reduce_sum(sol.y * w)
    gy, gp = tf.grad(loss, argnums=(0, 1))(tf.constant(y0), tf.constant(p))
    return np.concatenate([gy.numpy(), gp.numpy()])


def scipy_fd(fun, span, y0, p, t_eval, w, which: str, rel: float = 1e-6,
             along: np.ndarray | None = None, **opts) -> np.ndarray:
    """Central differences of SciPy's own solve (NumPy right-hand side, SciPy's
    finite-difference Jacobian), over y0 and p ("all") or p alone ("p"), after the one
    along the direction `along` of y0 if given."""
    def value(y, q):
        sol = scipy.integrate.solve_ivp(fun, span, y, t_eval=t_eval, args=(q,), **opts)
        return float(np.sum(sol.y * w))
    out = []
    if along is not None:
        h = rel * max(1.0, float(np.max(np.abs(y0))))
        out.append((value(y0 + h * along, p) - value(y0 - h * along, p)) / (2 * h))
    if which == "all":
        for i in range(y0.size):
            h = rel * max(1.0, abs(y0[i]))
            e = np.zeros_like(y0)
            e[i] = h
            out.append((value(y0 + e, p) - value(y0 - e, p)) / (2 * h))
    for i in range(p.size):
        h = rel * max(1.0, abs(p[i]))
        e = np.zeros_like(p)
        e[i] = h
        out.append((value(y0, p + e) - value(y0, p - e)) / (2 * h))
    return np.array(out)


def diffrax_grad(vf, y0, p, t_eval, w, solver, rtol, atol, dt0) -> tuple:
    """diffrax's gradient (its default RecursiveCheckpointAdjoint) and the time of the
    first call (compilation) and of a second one."""
    jnp = jax.numpy

    def loss(y, q):
        sol = diffrax.diffeqsolve(
            diffrax.ODETerm(lambda t, s, args: vf(t, s, args)), solver, t0=0.0,
            t1=float(t_eval[-1]), dt0=dt0, y0=y, args=q,
            saveat=diffrax.SaveAt(ts=jnp.asarray(t_eval)),
            stepsize_controller=diffrax.PIDController(rtol=rtol, atol=atol),
            max_steps=1_000_000)
        return jnp.sum(sol.ys.T * w)

    with jax.enable_x64(True):
        grad = jax.jit(jax.grad(loss, argnums=(0, 1)))
        first, out = _timed(lambda: jax.block_until_ready(grad(jnp.asarray(y0),
                                                                jnp.asarray(p))))
        again, out = _timed(lambda: jax.block_until_ready(grad(jnp.asarray(y0),
                                                                jnp.asarray(p))))
        return np.concatenate([np.asarray(out[0]), np.asarray(out[1])]), first, again


def _row(name: str, seconds: float, base: float, err: Any, note: str = "") -> None:
    err_s = "-" if err is None else f"{err:.1e}"
    print(f"| {name} | {seconds:.2f} s | {seconds / base:.2f}x | {err_s} | {note} |")


# ------------------------------------------------------------------------ parts
def robertson() -> None:
    print("## Robertson (3 states, 3 rate constants), BDF, t to 1e5, 30 output times\n")
    k, y0 = np.array([0.04, 3e7, 1e4]), np.array([1.0, 0.0, 0.0])
    t_eval = np.logspace(-5, 5, 30)
    w = np.random.default_rng(0).standard_normal((3, t_eval.size))
    opts = {"method": "BDF", "rtol": 1e-6, "atol": [1e-10, 1e-14, 1e-10]}
    ref = tapeflow_grad(robertson_tf, (0.0, 1e5), y0, k, t_eval, w, "forward", method="BDF",
                        rtol=1e-10, atol=[1e-14, 1e-18, 1e-14])
    primal, _ = _timed(lambda: solve_ivp(robertson_tf, (0.0, 1e5), tf.constant(y0),
                                         t_eval=t_eval, args=(tf.constant(k),), **opts))
    print("| gradient in y0 and k (6 inputs) | time | vs the solve | error | |")
    print("| --- | --- | --- | --- | --- |")
    _row("the solve alone (tapeflow)", primal, primal, None)
    for sens in ("forward", "adjoint", "auto"):
        s, g = _timed(lambda: tapeflow_grad(robertson_tf, (0.0, 1e5), y0, k, t_eval, w, sens,
                                            **opts))
        _row(f"tapeflow, sensitivity={sens}", s, primal, _err(g, ref))
    s, g = _timed(lambda: scipy_fd(robertson_np, (0.0, 1e5), y0, k, t_eval, w, "all",
                                   **opts))
    _row("SciPy, central differences (12 solves)", s, primal, _err(g, ref),
         "FD Jacobian in BDF")
    if diffrax is not None:
        jnp = jax.numpy

        def vf(t, y, q):
            return jnp.stack([-q[0] * y[0] + q[2] * y[1] * y[2],
                              q[0] * y[0] - q[2] * y[1] * y[2] - q[1] * y[1] ** 2,
                              q[1] * y[1] ** 2])
        g, first, again = diffrax_grad(vf, y0, k, t_eval, w, diffrax.Kvaerno5(), 1e-6, 1e-10,
                                       1e-8)
        _row("diffrax Kvaerno5, first call (compiles)", first, primal, _err(g, ref))
        _row("diffrax Kvaerno5, second call", again, primal, _err(g, ref))
    print()


def brusselator(n: int) -> None:
    states = 2 * n * n
    print(f"## Brusselator {n} x {n} ({states} states, 3 parameters), BDF, t in [0, 1], "
          "4 output times\n")
    p, y0 = np.array([1.0, 3.4, 0.002]), brusselator_y0(n)
    t_eval = np.array([0.25, 0.5, 0.75, 1.0])
    w = np.random.default_rng(0).standard_normal((states, t_eval.size))
    v = np.random.default_rng(1).standard_normal(states)
    opts = {"method": "BDF", "rtol": 1e-6, "atol": 1e-8}
    fun = brusselator_tf(n)
    pattern = _pattern(n)
    # The reference: central differences of SciPy's solve at rtol 1e-9 along a random
    # direction in y0 and along each parameter (8 solves).
    ref = scipy_fd(brusselator_np(n), (0.0, 1.0), y0, p, t_eval, w, "p", rel=1e-5,
                   jac_sparsity=pattern, method="BDF", rtol=1e-9, atol=1e-11, along=v)

    def against(g: np.ndarray) -> float:
        return _err(np.concatenate([[g[:states] @ v], g[states:]]), ref)

    primal, _ = _timed(lambda: solve_ivp(fun, (0.0, 1.0), tf.constant(y0), t_eval=t_eval,
                                         args=(tf.constant(p),), **opts))
    s_adj, g = _timed(lambda: tapeflow_grad(fun, (0.0, 1.0), y0, p, t_eval, w, "adjoint",
                                            **opts))
    # forward mode (jacfwd of the scalar loss): one tangent solve with 3 columns
    s_fwd, g_p = _timed(lambda: tf.jacfwd(lambda q: tf.reduce_sum(solve_ivp(
        fun, (0.0, 1.0), tf.constant(y0), t_eval=t_eval, args=(q,), **opts).y * w))(
        tf.constant(p)).numpy())
    s_fd, fd = _timed(lambda: scipy_fd(brusselator_np(n), (0.0, 1.0), y0, p, t_eval, w, "p",
                                       jac_sparsity=pattern, **opts))
    print("| gradient | time | vs the solve | error (along a random direction of y0 and "
          "each parameter) | |")
    print("| --- | --- | --- | --- | --- |")
    _row("the solve alone (tapeflow)", primal, primal, None)
    _row(f"tapeflow adjoint: y0 and p ({states + 3} inputs)", s_adj, primal, against(g),
         "the discrete adjoint of a recorded BDF solve")
    _row("tapeflow forward sensitivities (jacfwd): p (3 inputs)", s_fwd, primal,
         _err(g_p, ref[1:]), f"one solve of {4 * states} states")
    _row("SciPy, central differences: p (6 solves)", s_fd, primal, _err(fd, ref[1:]),
         "jac_sparsity given")
    est = s_fd / 6 * 2 * (states + 3)
    print(f"| SciPy, central differences: y0 and p ({2 * (states + 3)} solves), "
          f"extrapolated | {est:.0f} s | {est / primal:.0f}x | - | |")
    if diffrax is not None:
        g_d, first, again = diffrax_grad(brusselator_np(n, jax.numpy), y0, p, t_eval, w,
                                         diffrax.Tsit5(), 1e-6, 1e-8, 1e-3)
        note = f"parameters alone: {_err(g_d[states:], ref[1:]):.1e}"
        _row("diffrax Tsit5, first call (compiles)", first, primal, against(g_d), note)
        _row("diffrax Tsit5, second call", again, primal, against(g_d))
    print()


def _pattern(n: int) -> Any:
    jac = tf.SparseJacobian(lambda y: brusselator_tf(n)(tf.constant(0.0, tf.float64), y,
                                                        tf.constant([1.0, 3.4, 0.002],
                                                                    tf.float64)))
    return jac(brusselator_y0(n)) != 0


def crossover(quick: bool) -> None:
    print("## Where forward sensitivities stop paying (a gradient: one cotangent row)\n")
    print("Chains of m coupled decays (gradient in m rates and m initial values, 10 output "
          "times, rtol 1e-8) and small Brusselators (gradient in y0 and A, B, alpha, 3 output "
          "times). n (1 + n_in) is the size of the forward-sensitivity system; \"auto\" takes "
          f"forward sensitivities up to {AUTO_FORWARD_STATES['implicit']} per cotangent row "
          f"under the implicit methods and {AUTO_FORWARD_STATES['explicit']} under the "
          "explicit ones.\n")
    print("| problem | method | n (1 + n_in) | forward | adjoint | adjoint / forward | "
          "auto takes |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    cases = []
    for method, sizes in (("RK45", (4, 32) if quick else (4, 32, 128)),
                          ("BDF", (4, 16) if quick else (4, 16, 64))):
        for m in sizes:
            cases.append((f"chain, m = {m}", method, chain_tf, (0.0, 5.0),
                          np.linspace(1.0, 2.0, m), np.linspace(0.5, 1.5, m),
                          np.linspace(0.5, 5.0, 10), {"rtol": 1e-8, "atol": 1e-10}))
    for g in ((3,) if quick else (3, 4, 6)):
        cases.append((f"Brusselator {g} x {g}", "BDF", brusselator_tf(g), (0.0, 0.5),
                      brusselator_y0(g), np.array([1.0, 3.4, 0.02]),
                      np.array([0.1, 0.3, 0.5]), {"rtol": 1e-8, "atol": 1e-10}))
    for name, method, fun, span, y0, p, t_eval, tol in cases:
        w = np.random.default_rng(0).standard_normal((y0.size, t_eval.size))
        times = {}
        for sens in ("forward", "adjoint"):
            times[sens], _ = _timed(lambda: tapeflow_grad(fun, span, y0, p, t_eval, w, sens,
                                                          method=method, **tol))
        n, n_in = y0.size, y0.size + p.size
        auto = "forward" if use_forward("auto", n, n_in, 1, method) else "adjoint"
        print(f"| {name} | {method} | {n * (1 + n_in)} | {times['forward']:.2f} s | "
              f"{times['adjoint']:.2f} s | {times['adjoint'] / times['forward']:.2f} | "
              f"{auto} |")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes (seconds)")
    quick = parser.parse_args().quick
    robertson()
    brusselator(20 if quick else 100)
    crossover(quick)


if __name__ == "__main__":
    main()
