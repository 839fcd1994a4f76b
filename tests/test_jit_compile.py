"""function(jit_compile=True) behaves as the NumPy replay (graph/xla.py): guards retrace,
variables are read before and written after each call, in order, a compiled call is
differentiable from outside, JAX's 64-bit setting is the graph's only for its own calls,
a host callback falls back to NumPy with one warning, and without JAX the error names
the extra; keep_on_device=True without jit_compile=True is refused (its behaviour:
test_xla_device.py)."""

from __future__ import annotations

import importlib
import importlib.util
import sys
import warnings

import numpy as np
import pytest

import tapeflow as tf


def test_without_jax_the_error_names_the_extra(monkeypatch):
    real = importlib.import_module

    def no_jax(name, *args, **kwargs):
        if name == "jax" or name.startswith("jax."):
            raise ImportError("no jax here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(importlib, "import_module", no_jax)
    with pytest.raises(ImportError, match=r"tapeflow\[xla\]"):
        tf.function(lambda x: x, jit_compile=True)
    tf.function(lambda x: x * 2.0, jit_compile=False)(tf.constant(1.0))  # NumPy replay


def test_keep_on_device_needs_jit_compile():
    """Without JAX too: the argument is refused before anything is compiled."""
    both = r"keep_on_device=True.*jit_compile=True"
    with pytest.raises(ValueError, match=both):
        tf.function(lambda x: x, keep_on_device=True)
    with pytest.raises(ValueError, match=both):
        tf.function(keep_on_device=True)  # the decorator form, at once
    with pytest.raises(ValueError, match=both):
        tf.function(lambda x: x, jit_compile=False, keep_on_device=True)
    assert tf.function(lambda x: x * 2.0, keep_on_device=False)(tf.constant(1.0)).numpy() == 2.0


needs_jax = pytest.mark.skipif(importlib.util.find_spec("jax") is None,
                               reason="JAX (the xla extra) is not installed")


@needs_jax
def test_guards_retrace_under_xla():
    @tf.function(jit_compile=True)
    def f(x):
        if bool(tf.reduce_sum(x) > 0):  # a guard on the comparison's value
            return x * 2.0
        return x - 1.0

    assert f(tf.constant([1.0])).numpy().tolist() == [2.0]
    assert f(tf.constant([-1.0])).numpy().tolist() == [-2.0]  # a failed guard: new branch
    assert f(tf.constant([3.0])).numpy().tolist() == [6.0]
    assert f.experimental_get_tracing_count() == 2


@needs_jax
def test_variables_read_before_and_written_after_in_order():
    v = tf.Variable([1.0, 2.0])

    @tf.function(jit_compile=True)
    def step(x):
        before = v.read_value()
        v.assign(v * 2.0 + x)
        after = v.read_value()
        v.assign_add(tf.ones_like(x))
        return before, after

    before, after = step(tf.constant([1.0, 1.0]))
    assert before.numpy().tolist() == [1.0, 2.0] and after.numpy().tolist() == [3.0, 5.0]
    assert v.numpy().tolist() == [4.0, 6.0]
    step(tf.constant([0.0, 0.0]))
    assert v.numpy().tolist() == [9.0, 13.0]
    v.assign([0.0, 0.0])  # a write from outside is read by the next call
    assert step(tf.constant([1.0, 1.0]))[0].numpy().tolist() == [0.0, 0.0]


@needs_jax
def test_a_compiled_call_is_differentiable_from_outside():
    f = tf.function(lambda x: tf.reduce_sum(x * x * 3.0), jit_compile=True)
    x = tf.constant([1.0, 2.0])
    f(x)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = f(x)
    assert tape.gradient(y, x).numpy().tolist() == [6.0, 12.0]
    inner = tf.function(lambda x: tf.grad(lambda v: tf.reduce_sum(v ** 3))(x), jit_compile=True)
    np.testing.assert_allclose(inner(tf.constant([1.0, 2.0])).numpy(), [3.0, 12.0])


@needs_jax
def test_64_bit_types_only_for_the_graphs_own_calls():
    import jax

    before = jax.config.jax_enable_x64
    f = tf.function(lambda x: x * 2.0, jit_compile=True)
    out = f(tf.constant([1.0, 2.0], tf.float64))
    assert out.dtype == tf.float64 and out.numpy().tolist() == [2.0, 4.0]
    assert jax.config.jax_enable_x64 == before
    assert f(tf.constant([1.0], tf.float32)).dtype == tf.float32


@needs_jax
@pytest.mark.parametrize("switch", [True, False], ids=["holder", "context"])
def test_compiled_calls_under_the_users_own_64_bit_setting(switch, monkeypatch):
    # The call enters JAX's 64-bit mode only where the user's setting differs from the
    # graph's need, through JAX's holder of the setting or its context manager; either
    # way each graph keeps its own dtypes and the user's setting is back after the call.
    import jax

    from tapeflow.graph import xla

    if switch and xla.x64_switch(jax) is None:
        pytest.skip("this JAX's x64 setting has no holder with its own switch")
    if not switch:
        monkeypatch.setattr(xla, "x64_switch", lambda jax: None)
    f = tf.function(lambda x: tf.reduce_sum(x * 3.0), jit_compile=True)
    x32, x64 = tf.constant([1.5, 2.0], tf.float32), tf.constant([1e-300, 2.0], tf.float64)
    for user in (True, False):
        with jax.enable_x64(user):
            for x in (x32, x64):
                for _ in range(2):
                    out = f(x)
                    assert out.dtype == x.dtype
                    assert out.numpy() == np.sum(x.numpy() * np.array(3.0, x.numpy().dtype))
            assert jax.config.jax_enable_x64 == user
    with pytest.raises(tf.errors.InvalidArgumentError):  # a checked graph still checks
        g = tf.function(lambda i: tf.gather(tf.constant([1.0, 2.0]), i), jit_compile=True)
        g(tf.constant(0))
        g(tf.constant(5))


_FACTORIZATION_FAILURES = {
    "inv": (lambda a: tf.linalg.inv(a), [[1.0, 2.0], [2.0, 4.0]], "not invertible"),
    "solve": (lambda a: tf.linalg.solve(a, tf.ones([2, 1], a.dtype)), [[1.0, 2.0], [2.0, 4.0]],
              "not invertible"),
    "triangular_solve": (lambda a: tf.linalg.triangular_solve(a, tf.ones([2, 1], a.dtype)),
                         [[0.0, 0.0], [1.0, 1.0]], "singular"),
    "cholesky": (lambda a: tf.linalg.cholesky(a), [[1.0, 2.0], [2.0, 1.0]],
                 "not \\(numerically\\) positive definite"),
}


@needs_jax
@pytest.mark.parametrize("name", sorted(_FACTORIZATION_FAILURES))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_compiled_factorizations_raise_where_numpy_raises(name, dtype):
    # XLA returns inf/nan for a singular or indefinite matrix; the finite check reruns
    # the call on NumPy, which raises as the eager op does. NaN inputs give NaN, as eagerly.
    f, bad, message = _FACTORIZATION_FAILURES[name]
    g = tf.function(f, jit_compile=True)
    good = np.array([[2.0, 0.5], [0.5, 1.0]], dtype)
    np.testing.assert_allclose(g(tf.constant(good)).numpy(), f(tf.constant(good)).numpy(),
                               rtol=1e-5)
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        f(tf.constant(np.array(bad, dtype)))
    with pytest.raises(tf.errors.InvalidArgumentError, match=message):
        g(tf.constant(np.array(bad, dtype)))
    nan = good.copy()
    nan[0, 0] = np.nan
    assert np.isnan(g(tf.constant(nan)).numpy()).any()
    assert np.isnan(f(tf.constant(nan)).numpy()).any()


@needs_jax
def test_a_host_callback_replays_with_numpy_after_one_warning(capsys):
    @tf.function(jit_compile=True)
    def f(x):
        tf.print("x", x, output_stream=sys.stdout)
        return x + 1.0

    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        f(tf.constant(1.0))
        f(tf.constant(2.0))
    assert any("'print' has no XLA lowering" in str(w.message) for w in seen)
    assert capsys.readouterr().out == "x 1\nx 2\n"


@needs_jax
def test_inputs_the_impl_refuses_raise_its_error_never_a_wrong_value():
    """XLA cannot raise: a compiled call whose check fails reruns on NumPy and raises."""
    gather = tf.function(lambda p, i: tf.gather(p, i), jit_compile=True)
    p = tf.constant([1.0, 2.0, 3.0])
    assert gather(p, tf.constant([2, 0])).numpy().tolist() == [3.0, 1.0]
    with pytest.raises(tf.errors.InvalidArgumentError):
        gather(p, tf.constant([3, 0]))
    div = tf.function(lambda x, y: x // y, jit_compile=True)
    assert div(tf.constant([7]), tf.constant([2])).numpy().tolist() == [3]
    with pytest.raises(tf.errors.InvalidArgumentError, match="division by zero"):
        div(tf.constant([7]), tf.constant([0]))
    xent = tf.function(lambda l, z: tf.nn.sparse_softmax_cross_entropy_with_logits(l, z),
                       jit_compile=True)
    z = tf.constant([[0.0, 1.0]])
    xent(tf.constant([1]), z)
    with pytest.raises(tf.errors.InvalidArgumentError, match="label value"):
        xent(tf.constant([5]), z)
    power = tf.function(tf.pow, jit_compile=True)
    assert power(tf.constant([2, 3]), tf.constant([1, 2])).numpy().tolist() == [2, 9]
    with pytest.raises(ValueError, match="negative integer powers"):  # NumPy's, as eager
        power(tf.constant([2, 3]), tf.constant([-1, 2]))
    assert power(tf.constant([2.0]), tf.constant([-1.0])).numpy().tolist() == [0.5]


def test_one_compiled_trace_serves_every_size_of_a_none_dimension():
    """A size-generic graph (graph/polymorphic.py) compiles once per set of sizes; its
    shape ops (tf.shape, the -1 of a reshape, a mean's count, a slice's gradient) stay
    static for XLA."""
    pytest.importorskip("jax")

    def f(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            flat = tf.reshape(tf.sin(x), [tf.shape(x)[0], -1])
            y = tf.reduce_mean(flat ** 2) + tf.reduce_sum(x[:-1])
            y += tf.reduce_sum(tf.expand_dims(x, 1) * 0.5)  # a reshape sized at replay
        return y, tape.gradient(y, x)

    g = tf.function(f, input_signature=[tf.TensorSpec([None, 2, 3], tf.float64)],
                    jit_compile=True)
    for n in (4, 6, 4, 9, 6, 6):
        x = tf.constant(np.random.default_rng(n).standard_normal((n, 2, 3)))
        for got, want in zip(g(x), f(x)):
            np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12)
    assert g.experimental_get_tracing_count() == 2  # at 4 and 6 (NOTE(two-sizes))
    assert g.get_concrete_function(x).serves_all_sizes


def test_conv_input_gradient_lowering_over_geometries():
    """The input gradient's XLA lowerings (the transposed convolution; a product per
    kernel offset, picked for unstrided, undilated ones of 1-3 channels, checked at
    every geometry) equal the NumPy impl over strides, kernels larger
    and smaller than the stride, paddings, odd sizes, dilations, and filters shared by a
    batch of cotangents or one per example (NOTE(conv-input-grad))."""
    jax = pytest.importorskip("jax")
    from tapeflow.ops.conv import (_input_grad_lower, _input_grad_offsets,
                                   _input_grad_transposed, conv2d_input_grad_p)

    rng = np.random.default_rng(0)
    count = 0
    for h, wd, kh, kw, sh, sw, dh in [(5, 7, 3, 3, 2, 2, 1), (6, 6, 2, 2, 2, 2, 1),
                                      (8, 3, 5, 1, 3, 1, 1), (1, 7, 1, 3, 1, 2, 1),
                                      (6, 7, 1, 2, 3, 2, 1), (9, 9, 3, 3, 1, 1, 2),
                                      (7, 8, 2, 3, 2, 3, 2), (28, 28, 3, 3, 2, 2, 1),
                                      (9, 9, 3, 2, 2, 3, 3), (6, 5, 3, 2, 1, 1, 1)]:
        for pads in (((0, 0), (0, 0)), ((1, 1), (0, 2)), ((0, 1), (0, 1))):
            hp, wp = h + sum(pads[0]), wd + sum(pads[1])
            if hp < (kh - 1) * dh + 1 or wp < (kw - 1) * dh + 1:
                continue
            oh, ow = (hp - (kh - 1) * dh - 1) // sh + 1, (wp - (kw - 1) * dh - 1) // sw + 1
            for channels in (2, 5):  # each side of NOTE(conv-input-grad)'s threshold
                g = rng.standard_normal((2, 2, oh, ow, 3))
                w = rng.standard_normal((2, kh, kw, channels, 3))
                params = dict(strides=(sh, sw), dilations=(dh, dh), pads=pads,
                              input_shape=(2, h, wd, channels))
                for gb, wb in ((g[0], w[0]), (g, w[0]), (g, w)):  # shared, per example
                    want = conv2d_input_grad_p.impl(gb, wb, **params)
                    with jax.enable_x64(True):
                        got = jax.jit(lambda g, w: _input_grad_lower(jax, g, w, **params))(gb, wb)
                    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
                want = conv2d_input_grad_p.impl(g[0], w[0], **params)
                with jax.enable_x64(True):  # both lowerings, whichever is picked
                    both = [jax.jit(lambda g, w: _input_grad_transposed(
                        jax, g, w, (sh, sw), (dh, dh), pads, h, wd))(g[0], w[0])]
                    if dh == 1:
                        both.append(jax.jit(lambda g, w: _input_grad_offsets(
                            jax, g, w, (sh, sw), pads, h, wd))(g[0], w[0]))
                for got in both:
                    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-10, atol=1e-10)
                count += 1
    assert count >= 40


@needs_jax
def test_lean_calls_fall_back_wherever_the_full_path_decides():
    """NOTE(lean-call): once a compiled signature has its lean call, calls of another
    shape, dtype or kind of argument, under a tape, with keywords, or run eagerly take
    the full path, and each gives what the NumPy replay gives."""
    runs = []

    def body(x, scale=2.0):
        runs.append(1)  # Python runs only while tracing (or eagerly)
        return tf.sin(x) * scale

    f = tf.function(body, jit_compile=True)
    x = tf.constant([0.5, 1.0])
    f(x)
    f(x)
    assert f._lean is not None
    np.testing.assert_allclose(f(x).numpy(), np.sin([0.5, 1.0]) * 2.0, rtol=1e-6)
    traced = len(runs)
    np.testing.assert_allclose(f(tf.constant([0.5, 1.0, 2.0])).numpy(),  # another shape
                               np.sin([0.5, 1.0, 2.0]) * 2.0, rtol=1e-6)
    out = f(tf.constant([0.5, 1.0], dtype=tf.float64))  # another dtype
    assert out.dtype == tf.float64
    assert f(x, scale=3.0).numpy().tolist() == pytest.approx(list(np.sin([0.5, 1.0]) * 3.0))
    assert len(runs) == traced + 3
    with tf.GradientTape() as tape:  # a recorder: the graph is interpreted where it sees it
        tape.watch(x)
        y = tf.reduce_sum(f(x))
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), 2.0 * np.cos([0.5, 1.0]), rtol=1e-6)
    tf.config.run_functions_eagerly(True)
    try:
        before = len(runs)
        f(x)
        assert len(runs) == before + 1  # the Python body ran
    finally:
        tf.config.run_functions_eagerly(False)
    assert f(x).numpy().tolist() == pytest.approx(list(np.sin([0.5, 1.0]) * 2.0))


@needs_jax
def test_compiled_results_read_as_numpy_stay_read_only():
    """A compiled result's value is a read-only view of XLA's buffer: np.asarray hands it
    out as it is (no view made per read), and it cannot be made writeable; numpy() is a
    writeable copy, as for any tensor."""
    f = tf.function(lambda t: t * 2.0, jit_compile=True)
    x = tf.constant([1.0, 2.0])
    for _ in range(3):
        y = f(x)
    a = np.asarray(y)
    assert not a.flags.writeable and a.tolist() == [2.0, 4.0]
    with pytest.raises(ValueError):
        a.flags.writeable = True
    n = y.numpy()
    n[0] = 99.0
    assert y.numpy().tolist() == [2.0, 4.0]
    assert np.asarray(y, dtype=np.float64).dtype == np.float64
    assert np.asarray(y, copy=True).flags.writeable


@needs_jax
def test_no_lean_call_for_graphs_with_guards_draws_or_writes():
    v = tf.Variable(0.0)

    @tf.function(jit_compile=True)
    def guarded(x):
        return x * 2.0 if bool(tf.reduce_sum(x) > 0) else x - 1.0

    @tf.function(jit_compile=True)
    def writes(x):
        v.assign_add(tf.reduce_sum(x))
        return x + v

    @tf.function(jit_compile=True)
    def draws(x):
        return x + tf.random.uniform([2])

    x = tf.constant([1.0, 2.0])
    for f in (guarded, writes, draws):
        f(x)
        f(x)
        assert f._lean is None
    assert guarded(tf.constant([-1.0, -2.0])).numpy().tolist() == [-2.0, -3.0]
    assert v.numpy() == 6.0
    assert not np.array_equal(draws(x).numpy(), draws(x).numpy())


@needs_jax
def test_lean_calls_take_lists_of_tensors_and_follow_the_latest_signature():
    f = tf.function(lambda ws, x: [w * x for w in ws] + [x], jit_compile=True)
    ws, x = [tf.constant(1.0), tf.constant(2.0)], tf.constant(3.0)
    f(ws, x)
    f(ws, x)
    lean = f._lean
    assert lean is not None
    assert [t.numpy() for t in f(ws, x)] == [3.0, 6.0, 3.0]
    assert [t.numpy() for t in f(tuple(ws), x)] == [3.0, 6.0, 3.0]  # a tuple: full path
    assert [t.numpy() for t in f(ws + [tf.constant(4.0)], x)] == [3.0, 6.0, 12.0, 3.0]
    assert [t.numpy() for t in f([ws[0], 2], x)] == [3.0, 6.0, 3.0]  # a Python number
    x2 = tf.constant([1.0, 2.0])
    f(ws, x2)
    f(ws, x2)
    assert f._lean is not lean
    assert [t.numpy().tolist() for t in f(ws, x2)] == [[1.0, 2.0], [2.0, 4.0], [1.0, 2.0]]
    assert [t.numpy() for t in f(ws, x)] == [3.0, 6.0, 3.0]


@needs_jax
@pytest.mark.parametrize("build, kind", [
    (lambda a, b: [a, b], list), (lambda a, b: (a, b), tuple), (lambda a, b: [a, (b,)], list),
    (lambda a, b: {"y": a, "x": b}, dict), (lambda a, b: [], list), (lambda a, b: [a], list),
    (lambda a, b: (b,), tuple), (lambda a, b: {"a": a}, dict), (lambda a, b: [a, None], list)])
def test_lean_calls_return_the_traced_structure(build, kind):
    """A lean call builds a flat list or tuple of results itself and any other structure
    with nest: each is what the full path returns."""
    f = tf.function(lambda x: build(x * 2.0, x + 1.0), jit_compile=True)
    x = tf.constant([1.0, 2.0])
    full = f(x)
    f(x)
    assert f._lean is not None
    lean = f(x)
    assert type(lean) is kind
    def values(results):
        return [None if t is None else t.numpy().tolist() for t in tf.nest.flatten(results)]

    assert values(lean) == values(full)
    assert tf.nest.map_structure(lambda t: None, lean) == \
        tf.nest.map_structure(lambda t: None, full)


@needs_jax
def test_a_trace_of_another_signature_keeps_lean_calls_for_the_first():
    f = tf.function(lambda x: x * 2.0, jit_compile=True)
    x, other = tf.constant([1.0]), tf.constant([1.0, 2.0])
    f(x)
    f(x)
    assert f._lean is not None
    f(other)  # a trace: the lean call is chosen again
    f(x)
    assert f._lean is not None and f(x).numpy().tolist() == [2.0]


@needs_jax
@pytest.mark.parametrize("fixed", [True, False], ids=["fixed", "argument"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex64, np.int32])
@pytest.mark.parametrize("examples", [2, 6])
def test_vmap_of_a_matrix_times_a_column_compiles_with_matmuls_dtype(examples, dtype, fixed):
    """vmap binds matmul_rows (NOTE(matmul-rows) in ops/linalg.py), given the matrix as it
    is for 2 examples of a 30-row matrix and transposed for 6; its lowering is the rows
    form at both, the matrix a constant (transposed while lowering) or an argument: the
    compiled values and dtype are the NumPy replay's."""
    rng = np.random.default_rng(3)
    a = tf.constant((rng.standard_normal((30, 4)) * 4).astype(dtype))
    cols = tf.constant((rng.standard_normal((examples, 4, 1)) * 4).astype(dtype))
    if fixed:
        fn, args = tf.vmap(lambda c: tf.matmul(a, c)), (cols,)
    else:
        fn, args = tf.vmap(tf.matmul, in_axes=(None, 0)), (a, cols)
    compiled = tf.function(fn, jit_compile=True)
    want = tf.function(fn)(*args)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a NumPy fallback would warn
        compiled(*args)
        got = compiled(*args)
    assert not compiled.get_concrete_function(*args).executable.inner._missing
    assert got.dtype == want.dtype == tf.as_dtype(dtype) and got.shape == (examples, 30, 1)
    scale = np.abs(np.asarray(want)).max()  # XLA may sum in another order: float rounding
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-5, atol=1e-5 * scale)


_CUT = [complex(re, im) for re in (-2.0, -1.0, -0.5, -0.0, 0.0, 0.5, 2.0)
        for im in (-2.0, -0.5, -0.0, 0.0, 0.5, 2.0)]


@needs_jax
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
@pytest.mark.parametrize("op", [tf.sqrt, tf.math.rsqrt, tf.math.asin, tf.math.acos,
                                tf.math.asinh, tf.math.acosh, tf.math.atanh, tf.math.log],
                         ids=lambda op: op.__name__)
def test_complex_branch_cuts_take_the_signed_zeros_side(op, dtype):
    """On a branch cut, x + 0i and x - 0i map to either side of it (NumPy, TensorFlow);
    XLA's own functions take both to one side (on_branch_cut in ops/elementwise.py)."""
    z = tf.constant(np.array(_CUT, dtype))
    f = tf.function(op, jit_compile=True)
    f(z)  # the first call traces on NumPy; the second runs the compiled program
    got, want = f(z).numpy(), op(z).numpy()
    tol = 1e-5 if dtype == np.complex64 else 1e-12
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


_OUT_OF_RANGE = np.array([np.nan, np.inf, -np.inf, 3e9, -3e9, 1e19, -1e19, 2.0 ** 63, 2.0 ** 64,
                          300.0, -1.7, -129.0, 70000.0, -70000.0, 255.9, -0.5, 2.0 ** 31 - 128])


@needs_jax
@pytest.mark.parametrize("src", [np.float16, np.float32, np.float64, np.complex64, "bfloat16"])
@pytest.mark.parametrize("dtype", [tf.int8, tf.uint8, tf.int16, tf.uint16, tf.int32, tf.uint32,
                                   tf.int64, tf.uint64])
def test_float_to_int_casts_saturate_compiled_as_eager(src, dtype):
    """NOTE(float-to-int): NaN -> 0, out of range -> the nearest bound, in every mode."""
    if src == "bfloat16":  # ml_dtypes' (JAX installs it): NumPy kind 'V'
        src = tf.bfloat16.as_numpy_dtype
    with np.errstate(over="ignore"):
        x = tf.constant(_OUT_OF_RANGE.astype(src))
    f = tf.function(lambda v: tf.cast(v, dtype), jit_compile=True)
    f(x)
    got, want = f(x).numpy(), tf.cast(x, dtype).numpy()
    assert got.dtype == want.dtype == dtype.as_numpy_dtype
    np.testing.assert_array_equal(got, want)


@needs_jax
def test_a_guard_xla_computes_otherwise_is_decided_by_the_numpy_replay():
    # XLA folds x + 0.0 to x: at x = -0.0 the compiled guard value is -0.0 where the trace
    # (NumPy, IEEE) read +0.0. The replay decides, so one trace serves every call.
    def fn(x):
        y = x + 0.0
        return y * 2.0 if np.signbit(y.numpy()).any() else y - 1.0

    f = tf.function(fn, jit_compile=True)
    x = tf.constant([-0.0, 1.0])
    for _ in range(4):
        assert f(x).numpy().tolist() == fn(x).numpy().tolist() == [-1.0, 0.0]
    assert f.experimental_get_tracing_count() == 1
    assert f(tf.constant([-1.0, 0.0])).numpy().tolist() == [-2.0, 0.0]  # a real failure retraces
    assert f.experimental_get_tracing_count() == 2


@needs_jax
def test_checks_only_where_the_impl_can_raise():
    """An integer exponent or divisor needs its check; a float one cannot make the impl
    raise: its graph takes no check (the lean call), and compiles inside a loop."""
    from tapeflow.graph.xla import XlaReplay

    def compiled_replay(fn, *args):
        cf = tf.function(fn, jit_compile=True).get_concrete_function(*args)
        assert isinstance(cf.executable.inner, XlaReplay)
        return cf.executable.inner

    x, n = tf.constant([1.5, 2.5]), tf.constant([3, 4])
    assert not compiled_replay(lambda x: x ** 1.5 + x // 0.5 + x % 0.7, x).checked
    assert compiled_replay(lambda n: n ** 2 + n // 3, n).checked
    loop = compiled_replay(lambda x: tf.foldl(lambda a, v: a + v ** 3.0 + v // 0.5, x), x)
    assert loop.compiled and not loop.checked
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        f = tf.function(lambda x: tf.foldl(lambda a, v: a + v ** 3.0, x), jit_compile=True)
        assert f(x).numpy() == pytest.approx(1.5 + 2.5 ** 3)


@needs_jax
def test_complex_sigmoid_compiled_stays_finite_as_eager():
    x = tf.constant(np.array([1 + 1j, -100 + 1j, -800 + 3j, 800 - 3j, -30 + 2j], np.complex64))
    f = tf.function(tf.math.sigmoid, jit_compile=True)
    f(x)
    got = f(x).numpy()
    assert np.isfinite(got).all()
    np.testing.assert_allclose(got, tf.math.sigmoid(x).numpy(), rtol=1e-5, atol=1e-30)
