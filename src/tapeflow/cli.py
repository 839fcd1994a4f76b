"""The ``tapeflow`` command line: ``tapeflow demo``, ``tapeflow bench`` and ``tapeflow show``.

``tapeflow demo`` runs the TensorFlow examples from the project's seed
documents (the ``tf.autodiff.ForwardAccumulator`` docs and the
``GradientTape.jacobian`` question) with ``import tapeflow as tf`` and prints
each computed value beside the value TensorFlow documents for it.

``tapeflow bench`` runs the benchmark suite (``benchmarks/run.py`` of the source
checkout the package is installed from) beside the installed peer frameworks.

``tapeflow show DIR`` prints what a SavedModel directory holds (its variables, functions,
the calls their graphs serve, their sizes; signatures), as TensorFlow's
``saved_model_cli show --all``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any, Callable, Sequence, TextIO

import numpy as np

import tapeflow as tf
from tapeflow.progress import progress
from tapeflow.saving.saved_model import describe

__all__ = ["main", "demo", "bench", "show"]

# Values TensorFlow prints in its documentation are float32 rounded to about 8
# significant digits, so an exact comparison would be meaningless.
_RTOL = 1e-6


def _fmt(value: Any) -> str:
    """One-line text for a tensor or array, as NumPy prints it."""
    arr = np.asarray(value)
    if arr.ndim == 0:
        return str(arr[()])
    return " ".join(np.array2string(arr, separator=", ").split())


class _Report:
    """Prints checks and remembers whether any of them failed."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.ok = True

    def say(self, text: str = "") -> None:
        print(text, file=self.out)

    def check(self, label: str, value: Any, documented: Any, source: str = "documented") -> None:
        got = np.asarray(value)
        want = np.asarray(documented, dtype=got.dtype if got.dtype.kind in "fc" else None)
        good = got.shape == want.shape and bool(np.allclose(got, want, rtol=_RTOL, atol=0.0))
        line = f"  {label} = {_fmt(got)}  ({source}: {_fmt(want)})"
        if not good:
            line += "  MISMATCH"
            self.ok = False
        self.say(line)

    def fail(self, text: str) -> None:
        self.say(f"  MISMATCH: {text}")
        self.ok = False


def _nested_accumulators(tf: Any, r: _Report) -> None:
    r.say("Nested ForwardAccumulators: second derivative of x ** 3.5 at x = 1.1")
    primal = tf.constant(1.1)
    with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as outer:
        with tf.autodiff.ForwardAccumulator(primal, tf.constant(1.)) as inner:
            primal_out = primal ** tf.constant(3.5)
    inner_jvp = inner.jvp(primal_out)
    r.check("inner.jvp(primal_out)", inner_jvp.numpy(), 4.4417057)
    r.check("outer.jvp(inner_jvp)", outer.jvp(inner_jvp).numpy(), 10.094786)


def _forward_over_backward(tf: Any, r: _Report) -> None:
    r.say("Forward-over-backward Hessian-vector product of sum(v ** 3)")
    v = tf.Variable([1., 2.])
    with tf.autodiff.ForwardAccumulator(v, tf.constant([1., 0.])) as acc:
        with tf.GradientTape() as tape:
            y = tf.reduce_sum(v ** 3.)
        backward = tape.gradient(y, v)
    r.check("tape.gradient(y, v)", backward.numpy(), [3., 12.])
    r.check("acc.jvp(backward)", acc.jvp(backward).numpy(), [6., 0.])


def _linear_regression(tf: Any, r: _Report) -> None:
    r.say("Linear regression: forward-mode columns vs reverse-mode row of the loss Jacobian")
    x = tf.constant([[2.0, 3.0], [1.0, 4.0]])
    dense = tf.keras.layers.Dense(1)
    dense.build([None, 2])
    loss_fn = lambda: tf.reduce_sum((dense(x) - tf.constant([1., -1.])) ** 2.)  # noqa: E731
    kernel_fprop = []
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[1.], [0.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.kernel, tf.constant([[0.], [1.]])) as acc:
        kernel_fprop.append(acc.jvp(loss_fn()))
    with tf.autodiff.ForwardAccumulator(dense.bias, tf.constant([1.])) as acc:
        bias_fprop = acc.jvp(loss_fn())
    with tf.GradientTape() as tape:
        loss = loss_fn()
    kernel_grad, bias_grad = tape.gradient(loss, (dense.kernel, dense.bias))
    kernel_fwd = tf.stack(kernel_fprop)[:, tf.newaxis]
    bias_fwd = bias_fprop[tf.newaxis]
    r.say(f"  kernel_grad = {_fmt(kernel_grad.numpy())}  (forward mode: {_fmt(kernel_fwd.numpy())})")
    r.say(f"  bias_grad   = {_fmt(bias_grad.numpy())}  (forward mode: {_fmt(bias_fwd.numpy())})")
    try:
        # The seed document's assertions, but with a float32-sized tolerance:
        # the two modes add the same float32 products in different orders, so
        # they agree to a few ulps of the largest term. The seed's default
        # rtol=1e-7 fails for about one random Dense initialisation in ten
        # (also in pure NumPy), and near-cancelling components need the atol.
        np.testing.assert_allclose(kernel_grad, kernel_fwd, rtol=_RTOL, atol=1e-4)
        np.testing.assert_allclose(bias_grad, bias_fwd, rtol=_RTOL, atol=1e-4)
    except AssertionError as exc:
        r.fail("reverse and forward mode disagree: " + " ".join(str(exc).split()))
    else:
        r.say("  match")


def _seed_jacobian(tf: Any, r: _Report) -> None:
    r.say("GradientTape.jacobian of y = x * x at x = [1, 2]")
    with tf.GradientTape() as g:
        x = tf.constant([1.0, 2.0])
        g.watch(x)
        y = x * x
    jacobian = g.jacobian(y, x)
    r.check("g.jacobian(y, x)", jacobian.numpy(), [[2., 0.], [0., 4.]])


def _mlp_jacobians(tf: Any, r: _Report) -> None:
    n_in, n_hidden, n_out, n_points = 8, 16, 4, 5
    r.say(f"Jacobian of a tanh MLP ({n_in} -> {n_hidden} -> {n_out}, float64) at {n_points} inputs")
    rng = np.random.default_rng(0)
    w1 = rng.standard_normal((n_in, n_hidden)) / np.sqrt(n_in)
    b1 = rng.standard_normal(n_hidden) * 0.1
    w2 = rng.standard_normal((n_hidden, n_out)) / np.sqrt(n_hidden)
    b2 = rng.standard_normal(n_out) * 0.1
    tw1, tb1, tw2, tb2 = (tf.constant(a) for a in (w1, b1, w2, b2))

    def mlp(x: Any) -> Any:
        h = tf.tanh(tf.matmul(tf.reshape(x, [1, n_in]), tw1) + tb1)
        return tf.reshape(tf.matmul(h, tw2) + tb2, [n_out])

    # The seed question's answer: trace the Jacobian once, replay it at every new input.
    # The Python body (and the tape inside) runs only on the first call.
    traces = []

    @tf.function
    def jacobian_at(x: Any) -> Any:
        traces.append(1)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y = mlp(x)
        return tape.jacobian(y, x)

    for i, point in enumerate(rng.standard_normal((n_points, n_in))):
        jac = np.asarray(jacobian_at(tf.constant(point)).numpy())
        h = np.tanh(point @ w1 + b1)
        expected = (w2.T * (1.0 - h ** 2)) @ w1.T
        if jac.shape != expected.shape:
            r.fail(f"input {i}: jacobian shape {jac.shape}, expected {expected.shape}")
            continue
        err = float(np.max(np.abs(jac - expected)))
        line = f"  input {i}: jacobian shape {jac.shape}, max abs error vs NumPy analytic = {err:.2e}"
        if not err <= 1e-12:
            line += "  MISMATCH"
            r.ok = False
        r.say(line)
    graph = jacobian_at.get_concrete_function(tf.constant(point)).graph
    r.say(f"  tapeflow.function traced the Jacobian {len(traces)} time(s) for {n_points} inputs "
          f"and replayed a {graph.count()}-node graph")
    if len(traces) != 1:
        r.fail(f"the Jacobian was traced {len(traces)} times, expected once")


_SECTIONS: Sequence[Callable[[Any, _Report], None]] = (
    _nested_accumulators,
    _forward_over_backward,
    _linear_regression,
    _seed_jacobian,
    _mlp_jacobians,
)


def demo(out: TextIO | None = None) -> int:
    """Run the seed documents' TensorFlow examples with ``import tapeflow as tf``.

    Each section prints the values tapeflow computes beside the ones TensorFlow
    documents (or, where no number is documented, beside an independent check:
    the other AD mode, or an analytic Jacobian in NumPy). A section that raises
    is reported and the remaining sections still run. Returns 0 when every value
    agrees and 1 otherwise, printing ``MISMATCH`` at each disagreement.
    """
    out = sys.stdout if out is None else out
    r = _Report(out)
    # Progress on stderr when printing to the terminal's stdout (not into a caller's buffer).
    for section in progress(_SECTIONS, desc="demo sections", enabled=out is sys.stdout):
        try:
            section(tf, r)
        except Exception as exc:  # noqa: BLE001 - one broken op must not hide the others
            r.fail(f"{section.__name__} raised {type(exc).__name__}: {exc}")
        r.say()
    r.say("all values match" if r.ok else "MISMATCH: some values differ from the documented ones")
    return 0 if r.ok else 1


def suite_script() -> str | None:
    """``benchmarks/run.py`` of the source checkout this package was installed from
    (``pip install -e .``: the package is ``src/tapeflow`` of the checkout), or None
    for an installed copy that has no checkout beside it."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    script = os.path.join(root, "benchmarks", "run.py")
    return script if os.path.isfile(script) else None


def bench(options: Sequence[str] = (), out: TextIO | None = None) -> int:
    """Run the benchmark suite with `options` (``--quick``, ``--only NAME``, ``--json
    PATH``, ``--plot DIR``, ``--list``) and return its exit status.

    The suite is ``benchmarks/run.py`` in the source checkout, not part of the
    installed package; without a checkout this prints where to get it (to `out`) and
    returns 1. It runs in a new Python process: the suite pins BLAS, OpenMP and XLA to
    one thread through environment variables that only take effect before NumPy is
    imported, and this process has imported it already. Its report goes to this
    process's standard output.
    """
    out = sys.stdout if out is None else out
    script = suite_script()
    if script is None:
        print("tapeflow bench runs the benchmark suite (benchmarks/run.py), which is part of "
              "the source checkout, not of the installed package: clone the repository, "
              "install it with pip install -e '.[bench]' (the peer frameworks are optional) "
              "and run tapeflow bench there.", file=out)
        return 1
    out.flush()
    return subprocess.call([sys.executable, script, *options])


def show(directory: str, out: TextIO | None = None) -> int:
    """Print what the SavedModel at `directory` holds (saving/saved_model.py `describe`) to
    `out`, and return 0; print the error and return 1 for a directory that holds none or a
    damaged one."""
    out = sys.stdout if out is None else out
    try:
        print(describe(directory), file=out)
    except (tf.errors.NotFoundError, tf.errors.DataLossError) as e:
        print(f"tapeflow show: {e}", file=out)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``tapeflow`` console script.

    Parses ``argv`` (``sys.argv[1:]`` when ``None``) into one of the
    subcommands ``demo``, ``bench`` or ``show``, runs it and returns its exit status, so
    that both ``sys.exit(main())`` and tests calling ``main(["demo"])`` work.
    """
    parser = argparse.ArgumentParser(
        prog="tapeflow",
        description="Automatic differentiation on NumPy with TensorFlow's tape API.",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    sub.add_parser("demo", help="run the seed documents' examples and compare with TensorFlow's values")
    bench_parser = sub.add_parser(
        "bench", help="run the benchmark suite beside the installed peers (from a source checkout)",
        description="Run benchmarks/run.py: every workload with tapeflow and each installed peer "
                    "(TensorFlow, JAX, PyTorch, autograd), a markdown table of medians and ratios.")
    bench_parser.add_argument("--quick", action="store_true", help="a smoke run of a few minutes")
    bench_parser.add_argument("--only", metavar="NAME[,NAME]", help="run only these workloads")
    bench_parser.add_argument("--json", metavar="PATH", help="also write every result to PATH")
    bench_parser.add_argument("--plot", metavar="DIR", help="save scaling figures in DIR (matplotlib)")
    bench_parser.add_argument("--list", action="store_true", help="list the workloads")
    show_parser = sub.add_parser(
        "show", help="print what a SavedModel directory holds (as saved_model_cli show --all)")
    show_parser.add_argument("directory", help="a directory written by tf.saved_model.save")
    args = parser.parse_args(argv)
    if args.command == "demo":
        return demo()
    if args.command == "show":
        return show(args.directory)
    options = ["--quick"] if args.quick else []
    for flag, value in (("--only", args.only), ("--json", args.json), ("--plot", args.plot)):
        if value is not None:
            options += [flag, value]
    if args.list:
        options.append("--list")
    return bench(options)


if __name__ == "__main__":
    sys.exit(main())
