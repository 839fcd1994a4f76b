"""Dependency rules (NOTE(sparsity) in tapeflow/patterns.py), for every row of the op
table: the pattern read off the program holds every entry of the Jacobian that is
nonzero at random inputs (central differences in float64, at three points). And every
differentiable primitive has a rule."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.catalog import NO_DERIVATIVE
from tapeflow.core import registry
from tapeflow.sparse_jacobians import _detect

from op_table import ROWS, package_primitives


def test_every_differentiable_primitive_has_a_dependency_rule():
    # tapeflow's own primitives: not one a docstring example or a test registers
    missing = sorted(n for n in package_primitives() if "sparsity" not in registry()[n].rules
                     and NO_DERIVATIVE not in registry()[n].effects)
    assert not missing, f"primitives without a dependency rule (their `sparsity`): {missing}"


def _flat_fn(row, shapes):
    sizes = [int(np.prod(s)) for s in shapes]
    cuts = np.cumsum(sizes)[:-1].tolist()

    def f(z):
        parts = tf.split(z, sizes) if len(sizes) > 1 else [z]
        out = row.fn(*[tf.reshape(p, s) for p, s in zip(parts, shapes, strict=True)])
        return tf.reshape(tf.math.real(out) if out.dtype.is_complex else out, [-1])

    return f, cuts


def _numeric_jacobian(f, z, h=1e-6):
    cols = []
    for j in range(z.size):
        e = np.zeros_like(z)
        e[j] = h
        up, down = np.asarray(f(tf.constant(z + e))), np.asarray(f(tf.constant(z - e)))
        cols.append((up - down) / (2 * h))
    return np.stack(cols, axis=1)


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_detected_pattern_holds_every_nonzero_entry(row):
    first = row.make(np.random.default_rng(7))
    f, _ = _flat_fn(row, [np.shape(a) for a in first])
    z0 = np.concatenate([np.asarray(a, np.float64).ravel() for a in first])
    pattern, _ = _detect(f, tf.constant(z0))
    allowed = pattern.dense()
    for seed in (7, 8, 9):
        z = np.concatenate([np.asarray(a, np.float64).ravel()
                            for a in row.make(np.random.default_rng(seed))])
        jac = _numeric_jacobian(f, z)
        scale = max(1.0, np.abs(jac).max())
        outside = (np.abs(jac) > 1e-6 * scale) & ~allowed
        assert not outside.any(), (
            f"{row.name}: entries {np.argwhere(outside)[:5].tolist()} are nonzero but not in "
            "the detected pattern")


def test_without_scipy_the_missing_extra_is_named(monkeypatch):
    """Detection is NumPy only; the scipy.sparse result names the extra to install."""
    import sys

    monkeypatch.setitem(sys.modules, "scipy", None)
    monkeypatch.setitem(sys.modules, "scipy.sparse", None)
    pattern, out_shape = _detect(lambda x: x[1:] * x[:-1], tf.constant(np.ones(4)))
    assert pattern.rows() == [[0, 1], [1, 2], [2, 3]] and out_shape == (3,)
    with pytest.raises(ImportError, match=r"tapeflow\[scipy\]"):
        tf.sparse_jacobian(lambda x: x * 2.0, np.ones(3))
