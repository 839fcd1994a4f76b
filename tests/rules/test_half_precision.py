"""float16 and bfloat16, for every row of the op table: the op accepts them and keeps the
dtype; its value, JVP and VJP agree with float32 at the same (rounded) inputs to the
half type's precision; <u, J v> agrees both ways; and the compiled replay agrees with
eager. bfloat16's NumPy kind is 'V', not 'f': a code path keyed on 'f' skipped it, so
ops refused it, and the tape treated it as not differentiable.

Rows on complex inputs have no half-precision counterpart (TensorFlow has no complex32)
and are left out. Sums, products and decompositions accumulate in float32, as
TensorFlow's do (`dtypes.half_in_float32`).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import tapeflow as tf

from op_table import NONDIFF_ROWS, ROWS

ml_dtypes = pytest.importorskip("ml_dtypes")

HALF = {"float16": (tf.float16, np.dtype(np.float16)),
        "bfloat16": (tf.bfloat16, np.dtype(ml_dtypes.bfloat16))}
# The tolerance, relative to the result's magnitude, in units of the type's epsilon: the
# row's ops round their intermediates to the half type (a chain of a few roundings).
ULPS = 16


def _real(row) -> bool:
    """Whether no value of the row's program is complex (tf.complex of float16 raises, as
    TensorFlow's)."""
    xs = [tf.constant(np.asarray(a, np.float32)) for a in row.make(np.random.default_rng(7))]
    if any(x.dtype.is_complex for x in xs):
        return False
    graph = tf.function(row.fn).get_concrete_function(*xs).graph
    return not any(np.dtype(dtype).kind == "c" for _, dtype in graph.avals.values())


REAL_ROWS = [r for r in ROWS if _real(r)]
REAL_NONDIFF = [r for r in NONDIFF_ROWS if _real(r)]


def _inputs(row, dtype):
    """The row's inputs rounded to `dtype` (and the same values in float32)."""
    low = [np.asarray(np.asarray(a, np.float32).astype(dtype))
           for a in row.make(np.random.default_rng(7))]
    return low, [a.astype(np.float32) for a in low]


def _close(got, want, dtype, what):
    got = np.asarray(got).astype(np.float64)
    want = np.asarray(want, np.float64)
    eps = float(ml_dtypes.finfo(dtype).eps)
    scale = max(1.0, float(np.max(np.abs(want)))) if want.size else 1.0
    np.testing.assert_allclose(got, want, rtol=ULPS * eps, atol=ULPS * eps * scale,
                               err_msg=what)


@pytest.mark.parametrize("name", list(HALF))
@pytest.mark.parametrize("row", REAL_ROWS + REAL_NONDIFF, ids=lambda r: r.name)
def test_value_keeps_the_dtype_and_matches_float32(row, name):
    tdt, dtype = HALF[name]
    low, wide = _inputs(row, dtype)
    out = row.fn(*[tf.constant(a) for a in low])
    want = row.fn(*[tf.constant(a) for a in wide])
    follows = want.dtype == tf.float32 and row.fn(
        *[tf.constant(a.astype(np.float64)) for a in wide]).dtype == tf.float64
    if follows:  # a result of the inputs' dtype
        assert out.dtype == tdt
        _close(out.numpy(), want.numpy(), dtype, "value")
    else:  # of a dtype the op fixes (a size, one_hot's) or an integer or boolean one
        assert out.dtype == want.dtype
        np.testing.assert_array_equal(out.numpy(), want.numpy())


@pytest.mark.parametrize("name", list(HALF))
@pytest.mark.parametrize("row", REAL_ROWS, ids=lambda r: r.name)
def test_jvp_and_vjp_match_float32_and_each_other(row, name):
    tdt, dtype = HALF[name]
    low, wide = _inputs(row, dtype)
    rng = np.random.default_rng(11)
    v = [rng.standard_normal(a.shape).astype(dtype) for a in low]
    out, jv = tf.jvp(row.fn, [tf.constant(a) for a in low], [tf.constant(t) for t in v])
    out32, jv32 = tf.jvp(row.fn, [tf.constant(a) for a in wide],
                         [tf.constant(t.astype(np.float32)) for t in v])
    assert out.dtype == tdt and jv.dtype == tdt
    _close(jv.numpy(), jv32.numpy(), dtype, "JVP")

    u = rng.standard_normal(out.shape).astype(dtype)
    _, pull = tf.vjp(row.fn, *[tf.constant(a) for a in low])
    _, pull32 = tf.vjp(row.fn, *[tf.constant(a) for a in wide])
    cts = pull(tf.constant(u))
    cts32 = pull32(tf.constant(u.astype(np.float32)))
    cts, cts32 = (c if isinstance(c, (list, tuple)) else [c] for c in (cts, cts32))
    for c, c32 in zip(cts, cts32, strict=True):
        assert c.dtype == tdt, "a half-precision input gets a cotangent of its dtype"
        _close(c.numpy(), c32.numpy(), dtype, "VJP")
    # <u, J v> both ways, each computed in the half type
    ujv = float(np.sum(u.astype(np.float64) * jv.numpy().astype(np.float64)))
    vjtu = sum(float(np.sum(c.numpy().astype(np.float64) * t.astype(np.float64)))
               for c, t in zip(cts, v, strict=True))
    _close(ujv, vjtu, dtype, "<u, J v>")


@pytest.mark.parametrize("name", list(HALF))
@pytest.mark.parametrize("row", REAL_ROWS + REAL_NONDIFF, ids=lambda r: r.name)
def test_compiled_replay_matches_eager(row, name):
    pytest.importorskip("jax")
    from tapeflow.graph.xla import missing_lowerings

    tdt, dtype = HALF[name]
    low, _ = _inputs(row, dtype)
    xs = [tf.constant(a) for a in low]
    if missing_lowerings(tf.function(row.fn).get_concrete_function(*xs).graph):
        pytest.skip(f"{row.name}: not every primitive lowers")
    want = row.fn(*xs)
    compiled = tf.function(row.fn, jit_compile=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy fallback would warn: it must not happen
        compiled(*xs)
        got = compiled(*xs)  # a replay of the compiled graph
    assert not compiled.get_concrete_function(*xs).executable.inner._missing  # ran by XLA
    assert got.dtype == want.dtype
    if want.dtype == tdt:
        _close(got.numpy(), want.numpy().astype(np.float32), dtype, "compiled")
    else:
        np.testing.assert_array_equal(got.numpy(), want.numpy())


@pytest.mark.parametrize("name", list(HALF))
@pytest.mark.parametrize("op", [
    lambda x: tf.reduce_sum(x),
    lambda x: tf.reduce_mean(x) * 1000.0,
    lambda x: tf.math.cumsum(x)[-1],
    lambda x: tf.matmul(x[None], x[:, None])[0, 0],
    lambda x: tf.einsum("i,i->", x, x),
    lambda x: tf.nn.l2_loss(x) * 2.0,
    lambda x: 1.0 / tf.nn.softmax(x)[0],
    lambda x: tf.nn.avg_pool2d(tf.reshape(x, [1, 1, 1000, 1]), [1, 1000], 1, "VALID")[
        0, 0, 0, 0] * 1000.0,
], ids=["sum", "mean", "cumsum", "matmul", "einsum", "l2_loss", "softmax", "avg_pool"])
def test_sums_accumulate_in_float32_as_tensorflows_do(op, name):
    # NumPy's bfloat16 sum rounds at every step: 1000 ones summed to 256.
    tdt, _ = HALF[name]
    x = tf.ones([1000], tdt)
    assert op(x).dtype == tdt
    np.testing.assert_allclose(float(op(x)), 1000.0, rtol=2.0 ** -8)
    np.testing.assert_allclose(float(tf.function(op)(x)), 1000.0, rtol=2.0 ** -8)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.reduce_sum(x * x)
    g = tape.gradient(y, x)
    assert g.dtype == tdt and float(tf.reduce_sum(g)) == 2000.0
