"""NOTE(generated-basis) in tapeflow/graph/xla.py: a large constant that is a block of rows
of the one-hot basis (a reverse-mode Jacobian's cotangents) is lowered as iotas compared,
not as a literal. Recognition is checked on the bases `one_hot_rows` makes and on near
misses; the lowered rows equal the constant; and a compiled tall Jacobian, its program
free of the literal, equals the NumPy replay and central finite differences."""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops.creation import one_hot_rows
from tapeflow.graph import xla

BIG = 600  # rows of 600 x 600 float32 and above: over the MiB the rule looks from


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("shape,start,stop,repeat", [
    ((BIG,), 0, BIG, None),                 # the whole basis
    ((BIG, 1), 0, BIG, None),               # a column's
    ((30, 40), 300, 900, None),             # a chunk of a matrix's
    ((3, 400), 100, 400, 4),                # a batch Jacobian's, repeated per example
    ((2, 20, 30), 0, 550, 2),
], ids=str)
def test_the_bases_one_hot_rows_makes_are_recognized_and_lowered_exactly(
        shape, start, stop, repeat, dtype):
    full = shape if repeat is None else (repeat,) + shape[1:]
    value = one_hot_rows(full, dtype, start, stop, repeat=repeat)
    if value.nbytes < xla._GENERATED_FROM:
        value = one_hot_rows(full, np.complex128, start, stop, repeat=repeat)
    form = xla.one_hot_form(value)
    assert form == (start, repeat)
    jax = pytest.importorskip("jax")
    with jax.enable_x64(True):
        lowered = np.asarray(jax.jit(lambda: xla._lower_one_hot(
            jax, value.shape, value.dtype, *form))())
    assert lowered.dtype == value.dtype
    np.testing.assert_array_equal(lowered, value)


def _near_misses():
    base = one_hot_rows((BIG,), np.float32, 0, BIG)
    yield "small", one_hot_rows((100,), np.float32, 0, 100)
    two = base.copy()
    two[5, 5] = 2.0
    yield "a two", two
    extra = base.copy()
    extra[5, 6] = 1.0
    yield "an extra one", extra
    swapped = base.copy()
    swapped[[3, 4]] = swapped[[4, 3]]
    yield "two rows exchanged", swapped
    missing = base.copy()
    missing[7, 7] = 0.0
    missing[7, 8] = 0.0
    yield "a row of zeros", missing
    moved = base.copy()
    moved[9, 9], moved[9, 10] = 0.0, 1.0
    moved[10, 10], moved[10, 9] = 0.0, 1.0
    yield "a permutation", moved
    repeated = one_hot_rows((4, 400), np.float32, 0, 400, repeat=4)
    repeated[2, 1, 2], repeated[2, 1, 3] = 0.0, 1.0
    yield "one example off", repeated
    negative_zero = base.copy()
    negative_zero[3, 0] = -0.0
    yield "a negative zero", negative_zero
    complex_zero = one_hot_rows((BIG,), np.complex64, 0, BIG)
    complex_zero[3, 0] = complex(0.0, -0.0)
    yield "a complex negative zero", complex_zero
    yield "dense", np.random.default_rng(0).standard_normal((BIG, BIG))
    yield "a vector", np.ones(BIG * BIG)


@pytest.mark.parametrize("name,value", list(_near_misses()), ids=lambda v: v
                         if isinstance(v, str) else "")
def test_other_constants_stay_literals(name, value):
    assert xla.one_hot_form(value) is None, name


def test_a_boolean_identity_is_recognized_too():
    value = np.eye(1100, dtype=bool)[100:]
    assert xla.one_hot_form(value) == (100, None)
    jax = pytest.importorskip("jax")
    np.testing.assert_array_equal(np.asarray(xla._lower_one_hot(
        jax, value.shape, value.dtype, 100, None)), value)


W1 = np.random.default_rng(1).standard_normal((16, 3))
W2 = np.random.default_rng(2).standard_normal((BIG, 16))


def _tall(x):
    return tf.tanh(tf.linalg.matvec(W2, tf.tanh(tf.linalg.matvec(W1, x))))


@pytest.mark.parametrize("generated", [True, False], ids=["generated", "literal"])
def test_a_compiled_tall_reverse_jacobian_equals_the_replay_its_basis_built_or_not(
        generated, monkeypatch):
    jax = pytest.importorskip("jax")
    if not generated:  # the rule off: the same values from the literal
        monkeypatch.setattr(xla, "_GENERATED_FROM", float("inf"))
    x = tf.constant(np.random.default_rng(3).standard_normal(3))
    compiled = tf.function(tf.jacrev(_tall), jit_compile=True)
    got = [np.asarray(compiled(x)) for _ in range(2)]
    replayed = np.asarray(tf.function(tf.jacrev(_tall))(x))
    for g in got:
        np.testing.assert_allclose(g, replayed, rtol=1e-12, atol=1e-13)
    eps, x0 = 1e-6, x.numpy()
    fd = np.stack([(_tall(tf.constant(x0 + eps * e)).numpy()
                    - _tall(tf.constant(x0 - eps * e)).numpy()) / (2 * eps)
                   for e in np.eye(3)], axis=1)
    np.testing.assert_allclose(got[0], fd, rtol=1e-6, atol=1e-8)
    # The basis ([600, 600, 1] float64, 2.9 MB) is in the program as a literal or not.
    replay = compiled.get_concrete_function(x).executable.inner
    with jax.enable_x64(True):
        text = replay._jitted.lower(x.numpy()).as_text()
    literals = [ln for ln in text.splitlines() if "stablehlo.constant" in ln]
    assert any(f"{BIG}x{BIG}" in ln for ln in literals) is not generated
    assert ("iota" in text) is generated
