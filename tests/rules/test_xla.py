"""function(jit_compile=True) through JAX (graph/xla.py), for every row of the op table:
the compiled replay equals eager evaluation (float64 to 1e-9 relative, float32 to 1e-4:
XLA may reorder sums and fuse), having really run through XLA; and every primitive has
a lowering rule, except the host callbacks, which replay with NumPy by design. Skipped
when JAX is not installed (the `xla` extra)."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

jax = pytest.importorskip("jax")

import tapeflow as tf  # noqa: E402
from tapeflow.core import registry  # noqa: E402
from tapeflow.graph.xla import missing_lowerings  # noqa: E402

from op_table import NONDIFF_ROWS, ROWS, package_primitives  # noqa: E402

# Python callbacks run on the host: no lowering, the graph replays with NumPy (a warning).
HOST_CALLBACKS = {"print", "py_function", "numpy_function", "solve_ivp", "solve_ivp_vjp"}


def test_every_primitive_has_a_lowering():
    missing = sorted(n for n in package_primitives() - HOST_CALLBACKS
                     if "lower" not in registry()[n].rules)
    assert not missing, f"primitives without an XLA lowering (their `lower` rule): {missing}"


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["f64", "f32"])
@pytest.mark.parametrize("row", ROWS + NONDIFF_ROWS, ids=lambda r: r.name)
def test_compiled_replay_equals_eager(row, dtype):
    xs = [tf.constant(np.asarray(a, dtype)) for a in row.make(np.random.default_rng(7))]
    missing = missing_lowerings(tf.function(row.fn).get_concrete_function(*xs).graph)
    if missing:
        pytest.skip(f"{row.name}: no lowering for {missing}")
    want = row.fn(*xs)
    compiled = tf.function(row.fn, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy fallback would warn: it must not happen
        got = compiled(*xs)
        got = compiled(*xs)  # a replay of the compiled graph
    cf = compiled.get_concrete_function(*xs)
    assert not cf.executable.inner._missing  # it ran through XLA, not the NumPy fallback
    assert got.dtype == want.dtype and got.shape == want.shape
    if want.dtype.is_floating or want.dtype.is_complex:
        rtol = 1e-9 if dtype == np.float64 else 1e-4
        scale = np.abs(np.asarray(want)).max(initial=0)
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=rtol,
                                   atol=rtol * scale)
    else:
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))
