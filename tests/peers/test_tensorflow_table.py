"""Differential suite: every row of the op tables against TensorFlow (`pytest -m peers`).

Each row's function is written against `tf`; here the same function runs once
with tapeflow and once with TensorFlow bound to the name `tf` in the table
modules, on the same float64 inputs. Values and gradients (of sum(sin(f)), a
cotangent that touches every output) must agree. Rows that call tapeflow
internals (transpose primitives bound directly, custom_gradient) have no
TensorFlow spelling and are skipped with the reason. Needs TensorFlow installed;
CI does not run it.
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

tensorflow = pytest.importorskip("tensorflow")

import tapeflow  # noqa: E402

import op_table  # noqa: E402
from op_table import NONDIFF_ROWS, ROWS  # noqa: E402

pytestmark = pytest.mark.peers

# op_table and the family tables it joins: the modules whose rows read `tf`
TABLE_MODULES = [op_table, *op_table.TABLES.values()]


@contextlib.contextmanager
def tf_is(module):
    saved = {m: m.__dict__.get("tf") for m in TABLE_MODULES}
    for m in TABLE_MODULES:
        m.tf = module
    try:
        yield
    finally:
        for m, value in saved.items():
            m.tf = value


def _public_paths():
    """id(tapeflow function) -> its public path, e.g. ("nn", "relu6")."""
    paths = {}
    for ns in ("math", "nn", "linalg", ""):  # TensorFlow has some ops only under math
        module = getattr(tapeflow, ns) if ns else tapeflow
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name, None)
            if callable(obj):
                paths.setdefault(id(obj), (ns, name) if ns else (name,))
    return paths


PATHS = _public_paths()


def _spelled_in(module, fn):
    """The row's function for `module`: a tapeflow function object (not a lambda that
    resolves `tf` when called) is looked up by its public path."""
    if module is tapeflow or not getattr(fn, "__module__", "").startswith("tapeflow"):
        return fn
    path = PATHS.get(id(fn))
    if path is None:
        raise TypeError(f"{fn.__name__} is not a public tapeflow op")
    target = module
    for part in path:
        target = getattr(target, part)
    return target


def _inputs(row):
    return [np.asarray(a, np.float64) if np.asarray(a).dtype.kind == "f" else np.asarray(a)
            for a in row.make(np.random.default_rng(21))]


def _run(module, row, xs, grad):
    with tf_is(module):
        ts = [module.constant(x) for x in xs]
        with module.GradientTape() as tape:
            for t in ts:
                tape.watch(t)
            out = _spelled_in(module, row.fn)(*ts)
            if module is tensorflow and not isinstance(out, tensorflow.Tensor):
                raise TypeError("the row computes with tapeflow internals, not `tf`")
            if not grad:
                return [np.asarray(out)]
            loss = module.reduce_sum(module.sin(module.math.real(out) if out.dtype.is_complex
                                                else out))
        grads = tape.gradient(loss, ts)
        return [np.asarray(out)] + [None if g is None else np.asarray(g) for g in grads]


# Rows where TensorFlow is wrong and tapeflow is right (checked by finite differences in
# tests/rules): reported, not failed.
KNOWN_TF_DIFFERENCES = {
    "cumprod": "TensorFlow's cumprod gradient divides by x, wrong where x has zeros",
    "cumprod_exclusive_reverse": "TensorFlow's cumprod gradient divides by x, wrong at zeros",
}


def _compare(row, grad):
    if row.name in KNOWN_TF_DIFFERENCES:
        pytest.xfail(KNOWN_TF_DIFFERENCES[row.name])
    xs = _inputs(row)
    want_tf = None
    try:
        want_tf = _run(tensorflow, row, xs, grad)
    except Exception as e:  # noqa: BLE001 - a row with no TensorFlow spelling
        pytest.skip(f"no TensorFlow spelling for this row ({type(e).__name__}: {e})"[:200])
    got = _run(tapeflow, row, xs, grad)
    for i, (g, w) in enumerate(zip(got, want_tf)):
        if w is None or g is None:
            assert (g is None or not np.any(g)) and (w is None or not np.any(w)), \
                f"{row.name}: gradient {i} is None on one side only"
            continue
        np.testing.assert_allclose(g, w, rtol=1e-6, atol=1e-8,
                                   err_msg=f"{row.name}: {'value' if i == 0 else f'gradient {i}'}")


@pytest.mark.parametrize("row", ROWS, ids=lambda r: r.name)
def test_value_and_gradient_match_tensorflow(row):
    _compare(row, grad=True)


@pytest.mark.parametrize("row", NONDIFF_ROWS, ids=lambda r: r.name)
def test_value_matches_tensorflow(row):
    _compare(row, grad=False)
