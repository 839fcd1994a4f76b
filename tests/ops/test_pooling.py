"""max_pool2d and avg_pool2d beyond the op table: where ties and padding send the
gradient, SAME and explicit padding as TensorFlow computes them, overlapping windows,
second derivatives, the aliases, the errors bad arguments raise, and a large batch in
vectorized time.

Values marked "TF" were printed by TensorFlow 2.21 (CPU) for the same inputs.
"""

from __future__ import annotations

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.errors import InvalidArgumentError, UnimplementedError

from ops_helpers import numpy_value_and_grad


def image(values, dtype=np.float64):
    a = np.asarray(values, dtype)
    return a.reshape((1,) + a.shape + (1,))


def test_max_pool_gradient_ties_go_to_the_first_in_row_major_order():
    for values, want in (([[1., 1.], [1., 1.]], [1., 0., 0., 0.]),
                         ([[0., 2.], [2., 1.]], [0., 1., 0., 0.])):  # TF
        _, g = numpy_value_and_grad(lambda t: tf.nn.max_pool2d(t, 2, 2, "VALID"), image(values))
        np.testing.assert_array_equal(g.ravel(), want)


def test_same_padding_values_as_tensorflow():
    x = tf.constant(image(np.arange(9.).reshape(3, 3)))
    np.testing.assert_array_equal(tf.nn.avg_pool2d(x, 2, 2, "SAME").numpy().ravel(),
                                  [2., 3.5, 6.5, 8.])  # TF: means of unpadded elements only
    np.testing.assert_array_equal(tf.nn.max_pool2d(x, 2, 2, "SAME").numpy().ravel(),
                                  [4., 5., 7., 8.])  # TF


def test_max_pool_overlapping_windows_accumulate_gradients():
    x = image([[0., 1., 0.], [1., 9., 1.], [0., 1., 0.]])
    y, g = numpy_value_and_grad(lambda t: tf.nn.max_pool2d(t, 2, 1, "VALID"), x)
    np.testing.assert_array_equal(y.ravel(), [9., 9., 9., 9.])
    np.testing.assert_array_equal(g[0, :, :, 0], [[0, 0, 0], [0, 4, 0], [0, 0, 0]])


def test_max_pool_gradient_never_goes_to_padding():
    x = image([[-np.inf, -np.inf], [-np.inf, -np.inf]])
    y, g = numpy_value_and_grad(lambda t: tf.nn.max_pool2d(t, 3, 1, "SAME"), x)
    assert np.all(y == -np.inf)
    np.testing.assert_array_equal(g.ravel(), [4., 0., 0., 0.])  # every window's first unpadded


def test_max_pool_explicit_padding_and_integers():
    x = image(np.arange(16.).reshape(4, 4))
    out = tf.nn.max_pool2d(x, 2, 2, [[0, 0], [1, 0], [1, 0], [0, 0]])
    np.testing.assert_array_equal(out.numpy()[0, :, :, 0], [[0., 2.], [8., 10.]])
    ints = tf.nn.max_pool2d(tf.constant(image([[1, -5], [3, 2]], np.int32)), 2, 1, "SAME")
    assert ints.dtype == tf.int32
    np.testing.assert_array_equal(ints.numpy()[0, :, :, 0], [[3, 2], [3, 2]])


def test_pooling_second_derivatives_are_dense_zeros_as_tensorflow():
    x = tf.constant(np.random.default_rng(0).standard_normal((1, 4, 4, 2)))
    for pool in (tf.nn.max_pool2d, tf.nn.avg_pool2d):
        with tf.GradientTape() as outer:
            outer.watch(x)
            with tf.GradientTape() as inner:
                inner.watch(x)
                y = tf.reduce_sum(pool(x, 2, 2, "VALID") ** 2)
            g = inner.gradient(y, x)
            z = tf.reduce_sum(g)
        h = outer.gradient(z, x)
        assert h is not None and h.shape == x.shape


def test_pool_aliases_and_float16():
    x = tf.ones([1, 4, 4, 2], tf.float16)
    assert tf.nn.max_pool(x, 2, 2, "VALID").dtype == tf.float16
    assert tf.nn.avg_pool(x, [1, 2, 2, 1], [1, 2, 2, 1], "VALID").shape == (1, 2, 2, 2)
    with pytest.raises(UnimplementedError, match="4-D"):
        tf.nn.max_pool(tf.ones([1, 4, 2]), 2, 2, "VALID")


@pytest.mark.parametrize("call, match", [
    (lambda: tf.nn.max_pool2d(tf.ones([1, 2, 2, 1]), 3, 1, "VALID"), "smaller than the window"),
    (lambda: tf.nn.max_pool2d(tf.ones([2, 2, 1]), 2, 1, "VALID"), "rank 4"),
    (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 1]), 2, 1, "VALID", "NCHW"), "NHWC"),
    (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 1]), [2, 2, 2, 1], 1, "VALID"),
     "batch and channel"),
    (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 1]), 2, 1, "FULL"), "padding"),
    (lambda: tf.nn.max_pool2d(tf.ones([1, 4, 4, 1]), 2, 1, [[0, 0], [2, 0], [0, 0], [0, 0]]),
     "smaller than the window size"),
    (lambda: tf.nn.avg_pool2d(tf.ones([1, 4, 4, 1]), 2, 1, [[0, 0], [1, 0], [0, 0], [0, 0]]),
     "'SAME' or 'VALID'"),
    (lambda: tf.nn.avg_pool2d(tf.ones([1, 4, 4, 1], tf.int32), 2, 1, "VALID"), "int32"),
])
def test_pooling_argument_errors(call, match):
    with pytest.raises(InvalidArgumentError, match=match):
        call()


def test_max_pool_of_a_large_batch_is_vectorized():
    """64x28x28x8, 2x2 windows: a loop over pixels would take seconds."""
    import time

    x = tf.constant(np.random.default_rng(0).standard_normal((64, 28, 28, 8)).astype(np.float32))
    start = time.perf_counter()
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "SAME")
    g = tape.gradient(y, x)
    assert time.perf_counter() - start < 1.0
    assert float(tf.reduce_sum(g)) == y.shape.num_elements()


def _reference_argmax(x, ksize, strides, pads):
    """The argmax by the definition: np.argmax over every window's values, row-major
    (padding filled with the lowest value and never chosen, unless a window is padding
    and lowest values only: then its first unpadded element)."""
    from tapeflow.ops import pooling, windows
    xp = windows.pad(x, pads, pooling._lowest(x.dtype))
    oh, ow = windows.out_hw(x.shape, ksize, strides, pads)
    inside = windows.pad(np.ones(x.shape, bool), pads, False)
    out = np.zeros(x.shape[:-3] + (oh, ow, x.shape[-1]), np.intp)
    for idx in np.ndindex(*out.shape):
        *lead, r, c, ch = idx
        window = xp[tuple(lead) + (slice(r * strides[0], r * strides[0] + ksize[0]),
                                   slice(c * strides[1], c * strides[1] + ksize[1]), ch)]
        valid = inside[tuple(lead) + (slice(r * strides[0], r * strides[0] + ksize[0]),
                                      slice(c * strides[1], c * strides[1] + ksize[1]), ch)]
        k = int(np.argmax(window.reshape(-1)))
        if not valid.reshape(-1)[k]:
            k = int(np.argmax(valid.reshape(-1)))
        out[idx] = k
    return out


@pytest.mark.parametrize("seed", range(6))
def test_max_pool_argmax_matches_its_definition_with_ties_nans_and_padding(seed):
    from tapeflow.ops import pooling
    rng = np.random.default_rng(seed)
    for _ in range(20):
        ksize = tuple(int(k) for k in rng.integers(1, 4, 2))
        strides = tuple(int(s) for s in rng.integers(1, 3, 2))
        pads = tuple((int(rng.integers(0, k)), int(rng.integers(0, k))) for k in ksize)
        x = rng.integers(-2, 3, (2, int(rng.integers(3, 7)), int(rng.integers(3, 7)), 2)) * 1.0
        x[rng.random(x.shape) < 0.15] = np.nan if seed % 2 else -np.inf
        np.testing.assert_array_equal(pooling._argmax(x, ksize, strides, pads),
                                      _reference_argmax(x, ksize, strides, pads))


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64], ids=str)
def test_the_nan_aware_argmax_runs_only_where_a_window_holds_a_nan(dtype, monkeypatch):
    """The argmax runs NaN-aware again only when some window's maximum is NaN: a NaN in a
    window (first of several, or beside an infinity) gives the definition's argmax, and a
    NaN in no window (a VALID pool's last row) is not looked at."""
    from tapeflow.ops import pooling
    passes = []
    running = pooling._running_argmax
    monkeypatch.setattr(pooling, "_running_argmax",
                        lambda *a, nan: passes.append(nan) or running(*a, nan=nan))
    x = np.random.default_rng(4).standard_normal((3, 9, 8, 5)).astype(dtype)
    x[1, 2, 3, 4] = np.inf
    k, s, p = (2, 2), (2, 2), ((0, 0), (0, 0))
    cases = [(x, [False]), (x.copy(), [False, True]), (x.copy(), [False, True]),
             (x.copy(), [False])]
    cases[1][0][0, 4, 5, 1] = np.nan
    cases[2][0][1, 2, 2, 4] = cases[2][0][1, 3, 3, 4] = np.nan   # beside the infinity
    cases[3][0][2, 8, 0, 0] = np.nan                             # under no window
    for image, want in cases:
        passes.clear()
        np.testing.assert_array_equal(pooling._argmax(image, k, s, p),
                                      _reference_argmax(image, k, s, p))
        assert passes == want


def test_max_pool_gradient_of_infinite_cotangents_stays_finite_elsewhere():
    x = tf.constant(np.arange(16.).reshape(1, 4, 4, 1))
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = tf.nn.max_pool2d(x, 2, 2, "VALID")
    g = tape.gradient(y, x, output_gradients=tf.constant([[[[np.inf], [1.]], [[2.], [3.]]]], tf.float64))
    want = np.zeros((4, 4))
    want[1, 1], want[1, 3], want[3, 1], want[3, 3] = np.inf, 1., 2., 3.
    np.testing.assert_array_equal(g.numpy()[0, :, :, 0], want)


def _reference_grad(x, g, ksize, strides, pads):
    """The max-pool gradient by its definition: each window's cotangent added at its
    argmax (windows that overlap add up; padding is cut off)."""
    arg = _reference_argmax(x, ksize, strides, pads)
    n_h, n_w = x.shape[-3] + sum(pads[0]), x.shape[-2] + sum(pads[1])
    out = np.zeros(x.shape[:-3] + (n_h, n_w, x.shape[-1]))
    for idx in np.ndindex(*arg.shape):
        *lead, r, c, ch = idx
        i, j = divmod(int(arg[idx]), ksize[1])
        out[tuple(lead) + (r * strides[0] + i, c * strides[1] + j, ch)] += g[idx]
    return out[..., pads[0][0]:pads[0][0] + x.shape[-3], pads[1][0]:pads[1][0] + x.shape[-2], :]


@pytest.mark.parametrize("seed", range(4))
def test_max_pool_gradient_matches_its_definition_apart_and_overlapping(seed):
    """Windows apart (stride >= window: written in place) and overlapping (added)."""
    from tapeflow.ops import pooling, windows
    rng = np.random.default_rng(seed)
    for _ in range(15):
        ksize = tuple(int(k) for k in rng.integers(1, 4, 2))
        strides = tuple(int(k + rng.integers(-1, 2)) or 1 for k in ksize)
        pads = tuple((int(rng.integers(0, k)), int(rng.integers(0, k))) for k in ksize)
        x = rng.integers(-3, 4, (2, int(rng.integers(4, 8)), int(rng.integers(4, 8)), 2)) * 1.0
        oh, ow = windows.out_hw(x.shape, ksize, strides, pads)
        g = rng.standard_normal((2, oh, ow, 2))
        if seed % 2:
            g[0, 0, 0, 0] = np.inf
        # (overlapping windows add in another order than the reference: rounding only)
        np.testing.assert_allclose(pooling._grad_impl(x, g, ksize, strides, pads),
                                   _reference_grad(x, g, ksize, strides, pads), rtol=1e-14)


@pytest.mark.parametrize("geom", [((2, 2), (2, 2), ((0, 0), (0, 0))), ((3, 3), (2, 2), ((1, 1), (0, 1))),
                                  ((3, 2), (1, 2), ((2, 0), (1, 1)))], ids=str)
@pytest.mark.parametrize("lead", [(), (2,)], ids=["plain", "leading dims"])
def test_window_sums_blocked_equal_one_block_and_the_definition(geom, lead, monkeypatch):
    """The window sum (rows, then columns, over cache-sized blocks of examples) and its
    transpose: every block size gives the same result, which is the padded windows' sum
    by definition; <window_sum(x), g> = <x, transpose(g)>."""
    from tapeflow.ops import pooling, windows
    ksize, strides, pads = geom
    rng = np.random.default_rng(0)
    x = rng.standard_normal(lead + (5, 7, 6, 3))
    xp = np.pad(x, [(0, 0)] * (x.ndim - 3) + [pads[0], pads[1], (0, 0)])
    oh, ow = windows.out_hw(x.shape, ksize, strides, pads)
    want = np.zeros(x.shape[:-3] + (oh, ow, x.shape[-1]))
    for r in range(oh):  # by definition, one window at a time
        for c in range(ow):
            r0, c0 = r * strides[0], c * strides[1]
            want[..., r, c, :] = xp[..., r0:r0 + ksize[0], c0:c0 + ksize[1], :].sum(axis=(-3, -2))
    g = rng.standard_normal(want.shape)
    results = []
    for cache in (1, 3 * x[..., :1, :, :, :].nbytes, 1 << 40):
        monkeypatch.setattr(windows, "CACHE_BYTES", cache)
        results.append((pooling._window_sum_impl(x, ksize, strides, pads),
                        pooling._window_sum_transpose_impl(g, ksize, strides, pads, x.shape[-4:])))
    for s, t in results:
        np.testing.assert_allclose(s, want, rtol=1e-13, atol=1e-13)
        np.testing.assert_allclose(t, results[-1][1], rtol=1e-13, atol=1e-13)
        assert np.isclose(np.sum(s * g), np.sum(x * t), rtol=1e-12)


def _prim_names(fn, *args):
    from tapeflow.graph.ir import Node
    return [n.prim.name for n in fn.get_concrete_function(*args).graph.nodes
            if isinstance(n, Node)]


def test_the_argmax_is_kept_only_where_derivatives_are_taken():
    x = tf.constant(np.random.default_rng(0).standard_normal((2, 6, 6, 3)))
    infer = tf.function(lambda x: tf.nn.max_pool2d(x, 2, 2, "VALID"))
    infer(x)
    assert _prim_names(infer, x) == ["max_pool2d"]

    @tf.function
    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.nn.max_pool2d(x, 2, 2, "VALID") ** 2)
        return tape.gradient(loss, x)

    grad(x)
    names = _prim_names(grad, x)
    assert "max_pool2d_argmax" in names and "max_pool2d_route" in names
    assert "max_pool2d" not in names and "max_pool2d_grad" not in names


@pytest.mark.parametrize("seed", range(4))
def test_kept_argmax_derivatives_equal_the_recomputed_ones(seed):
    # Ties, NaNs, infinities and padding: routing through the forward's argmax gives what
    # max_pool2d_grad / max_pool2d_grad_grad (which recompute it) give, bit for bit.
    from tapeflow.core import bind
    from tapeflow.ops import pooling
    rng = np.random.default_rng(seed)
    for _ in range(10):
        ksize = tuple(int(k) for k in rng.integers(1, 4, 2))
        strides = tuple(int(s) for s in rng.integers(1, 3, 2))
        pads = tuple((int(rng.integers(0, k)), int(rng.integers(0, k))) for k in ksize)
        xv = rng.integers(-2, 3, (2, int(rng.integers(3, 7)), int(rng.integers(3, 7)), 2)) * 1.0
        xv[rng.random(xv.shape) < 0.1] = np.nan if seed % 2 else -np.inf
        p = {"ksize": ksize, "strides": strides, "pads": pads}
        x = tf.constant(xv)
        y_plain = bind(pooling.max_pool2d_p, x, **p)
        gv = rng.standard_normal(y_plain.shape)
        tv = rng.standard_normal(xv.shape)
        with tf.GradientTape() as tape:
            tape.watch(x)
            y, arg = bind(pooling.max_pool2d_argmax_p, x, **p)
        np.testing.assert_array_equal(y.numpy(), y_plain.numpy())
        assert arg.dtype == tf.uint8
        grad = tape.gradient(y, x, output_gradients=tf.constant(gv)).numpy()
        np.testing.assert_array_equal(
            grad, bind(pooling.max_pool2d_grad_p, x, tf.constant(gv), **p).numpy())
        with tf.autodiff.ForwardAccumulator(x, tf.constant(tv)) as acc:
            y, _ = bind(pooling.max_pool2d_argmax_p, x, **p)
        np.testing.assert_array_equal(
            acc.jvp(y).numpy(), bind(pooling.max_pool2d_grad_grad_p, x, tf.constant(tv), **p).numpy())
        # max_pool2d's own rules, which a tape or an accumulator never runs (they bind the
        # argmax form, catalog `form`), give the same, called here with no recorder.
        rules = pooling.max_pool2d_p.rules
        (own,) = rules["vjp"]((tf.constant(gv),), (y_plain,), (x,), (True,), **p)
        np.testing.assert_array_equal(own.numpy(), grad)
        (own,) = rules["jvp"]((tf.constant(tv),), (y_plain,), (x,), **p)
        np.testing.assert_array_equal(own.numpy(), acc.jvp(y).numpy())


def test_hessian_vector_products_through_a_kept_argmax():
    # Forward over reverse through max pooling: the second derivative of a loss whose
    # curvature comes from a square after the pool, against central differences.
    rng = np.random.default_rng(3)
    x0, v = rng.standard_normal((2, 5, 5, 2)), rng.standard_normal((2, 5, 5, 2))

    def grad(x):
        with tf.GradientTape() as tape:
            tape.watch(x)
            loss = tf.reduce_sum(tf.nn.max_pool2d(x, 2, 2, "SAME") ** 2)
        return tape.gradient(loss, x)

    x = tf.constant(x0)
    with tf.autodiff.ForwardAccumulator(x, tf.constant(v)) as acc:
        g = grad(x)
    eps = 1e-6
    fd = (grad(tf.constant(x0 + eps * v)).numpy() - grad(tf.constant(x0 - eps * v)).numpy()) / (2 * eps)
    np.testing.assert_allclose(acc.jvp(g).numpy(), fd, rtol=1e-6, atol=1e-8)


@pytest.mark.parametrize("arg_lead,g_lead", [((3, 1), (3, 4)), ((1, 4), (3, 4)), ((4,), (3, 4)),
                                             ((3, 4), (3, 1))], ids=str)
def test_route_and_pick_broadcast_every_axis_before_the_windows(arg_lead, g_lead):
    """The argmax and the values broadcast along every axis before the last three, inner
    ones included (graph/transposes.py's example grids make [b, 1] against [b, n]); the
    result equals the argmax spread to the full shape first, and so does XLA's."""
    from tapeflow.ops import pooling
    rng = np.random.default_rng(3)
    ksize, strides, pads = (2, 2), (2, 2), ((0, 1), (0, 1))
    arg = rng.integers(0, 4, arg_lead + (3, 3, 2)).astype(np.uint8)
    g = rng.standard_normal(g_lead + (3, 3, 2))
    lead = np.broadcast_shapes(arg_lead, g_lead)
    full_arg = np.broadcast_to(arg, lead + (3, 3, 2))
    full_g = np.broadcast_to(g, lead + (3, 3, 2))
    routed = pooling._route_impl(arg, g, ksize, strides, pads, (5, 5))
    assert routed.shape == lead + (5, 5, 2)
    for idx in np.ndindex(*lead):  # each example through the plain form
        np.testing.assert_array_equal(routed[idx], pooling._route_impl(
            full_arg[idx], full_g[idx], ksize, strides, pads, (5, 5)))
    t = rng.standard_normal(g_lead + (5, 5, 2))
    picked = pooling._pick_impl(arg, t, ksize, strides, pads)
    full_t = np.broadcast_to(t, lead + (5, 5, 2))
    for idx in np.ndindex(*lead):
        np.testing.assert_array_equal(picked[idx], pooling._pick_impl(
            full_arg[idx], full_t[idx], ksize, strides, pads))
    try:
        import jax
    except ImportError:
        return
    with jax.enable_x64(True):
        np.testing.assert_allclose(np.asarray(pooling._route_lower(
            jax, arg, g, ksize, strides, pads, (5, 5))), routed, rtol=1e-14)
        np.testing.assert_allclose(np.asarray(pooling._pick_lower(
            jax, arg, t, ksize, strides, pads)), picked, rtol=1e-14)


_PIXEL_CASES = [((64, 24, 24, 6), (2, 2), (2, 2), ((0, 0), (0, 0))),  # LeNet's first pool
                ((48, 17, 17, 3), (3, 3), (2, 2), ((1, 1), (1, 1))),  # overlapping, padded
                ((160, 28, 28, 1), (2, 2), (2, 2), ((0, 0), (0, 0))),  # one channel
                ((4, 3, 14, 13, 8), (3, 2), (3, 2), ((1, 0), (0, 1))),  # leading dims, odd sizes
                ((6, 16, 16, 64), (2, 2), (2, 2), ((0, 0), (0, 0)))]


@pytest.mark.parametrize("shape,ksize,strides,pads", _PIXEL_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, np.int32], ids=str)
def test_pixel_copies_give_the_bits_of_the_strided_views(shape, ksize, strides, pads, dtype,
                                                        monkeypatch):
    """On images large enough to copy whole pixels of each kernel offset
    (NOTE(pixel-cells) in ops/windows.py), the maximum, argmax, route and pick equal bit
    for bit what the same ufuncs give on the strided views, ties, NaN and infinities
    included; and the copies did run."""
    from tapeflow.ops import pooling, windows
    rng = np.random.default_rng(7)
    x = (rng.integers(-4, 5, shape) * 0.5).astype(dtype)  # many ties
    if dtype != np.int32:
        x.reshape(-1)[rng.choice(x.size, 40, replace=False)] = [np.nan, np.inf, -np.inf, -0.0] * 10
    oh, ow = windows.out_hw(shape, ksize, strides, pads)
    g = rng.standard_normal(shape[:-3] + (oh, ow, shape[-1])).astype(
        np.float32 if dtype == np.int32 else dtype)
    g.reshape(-1)[:3] = [np.inf, -0.0, np.nan] if dtype != np.int32 else [1, 2, 3]
    t = rng.standard_normal(shape).astype(g.dtype)

    def run():
        top, arg = pooling._max_and_argmax(x, ksize, strides, pads)
        return (top, arg, pooling._route_impl(arg, g, ksize, strides, pads, shape[-3:-1]),
                pooling._pick_impl(arg, t, ksize, strides, pads))

    copies = []
    cells = windows._cells
    monkeypatch.setattr(windows, "_cells", lambda a: copies.append(a.shape) or cells(a))
    with np.errstate(invalid="ignore"):
        fast = run()
        assert copies, "no pixel copies ran"
        monkeypatch.setattr(windows, "PIXELS_FROM", 1 << 62)  # the strided views throughout
        plain = run()
    for a, b in zip(fast, plain, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))


def test_pixel_copied_argmax_and_route_match_their_definitions():
    """Above the copy size, the argmax and the gradient against the definitions."""
    from tapeflow.ops import pooling, windows
    rng = np.random.default_rng(8)
    x = rng.integers(-2, 3, (3, 40, 38, 3)) * 1.0
    ksize, strides, pads = (2, 2), (2, 2), ((0, 0), (0, 0))
    oh, ow = windows.out_hw(x.shape, ksize, strides, pads)
    assert windows.pixel_copies_pay(x[windows.window_slice(0, 0, oh, ow, strides)])
    np.testing.assert_array_equal(pooling._argmax(x, ksize, strides, pads),
                                  _reference_argmax(x, ksize, strides, pads))
    x = rng.integers(-2, 3, (20, 48, 48, 3)) * 1.0  # the route copies from 16x the size
    assert windows.pixel_copies_pay(x[windows.window_slice(0, 0, 24, 24, strides)], once=True)
    g = rng.standard_normal((20, 24, 24, 3))
    np.testing.assert_array_equal(pooling._grad_impl(x, g, ksize, strides, pads),
                                  _reference_grad(x, g, ksize, strides, pads))


def test_window_pixels_of_views_and_one_channel():
    """window_pixels and copy_pixels on a transposed image (no void view: a plain
    copy) and on one channel give the strided view's values."""
    from tapeflow.ops import windows
    x = np.arange(2 * 30 * 30 * 5, dtype=np.float32).reshape(2, 30, 30, 5)
    for image in (x, x.transpose(0, 2, 1, 3), x[..., :1], x[..., ::2]):
        want = image[windows.window_slice(1, 0, 14, 15, (2, 2))]
        got = windows.window_pixels(image, 1, 0, 14, 15, (2, 2))
        assert got.flags.c_contiguous
        np.testing.assert_array_equal(got, want)
        out = np.zeros(image.shape, image.dtype)
        windows.copy_pixels(out[windows.window_slice(1, 0, 14, 15, (2, 2))], got)
        np.testing.assert_array_equal(out[windows.window_slice(1, 0, 14, 15, (2, 2))], want)
        assert out.sum() == want.sum()


@pytest.mark.parametrize("shape,ksize", [((16, 8, 8, 16), (2, 2)), ((3, 2, 9, 11, 6), (2, 3)),
                                         ((5, 7, 6, 3), (3, 2)), ((4, 6, 6, 1), (2, 2))], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=str)
def test_tiling_windows_spread_the_bits_of_the_general_transpose(shape, ksize, dtype, monkeypatch):
    """The window-sum transpose of windows that tile the image (avg_pool2d's usual 2x2/2)
    spreads each value over its window (windows.spread_windows), remainder rows and
    columns zero: the bits of the general two-phase form, a -0 made +0 as it adds it,
    NaN and infinities included."""
    from tapeflow.ops import pooling, windows
    rng = np.random.default_rng(4)
    oh, ow = windows.out_hw(shape, ksize, ksize, ((0, 0), (0, 0)))
    g = (rng.standard_normal(shape[:-3] + (oh, ow, shape[-1])) * 4).astype(dtype)
    if dtype != np.int32:
        g.reshape(-1)[:4] = [-0.0, np.nan, np.inf, -np.inf]
    spreads = []
    spread = windows.spread_windows
    monkeypatch.setattr(pooling, "spread_windows", lambda *a: spreads.append(1) or spread(*a))
    fast = pooling._window_sum_transpose_impl(g, ksize, ksize, ((0, 0), (0, 0)), shape)
    assert spreads
    monkeypatch.setattr(pooling, "spread_windows", lambda *a: None)
    general = pooling._window_sum_transpose_impl(g, ksize, ksize, ((0, 0), (0, 0)), shape)
    assert fast.shape == general.shape == shape and fast.dtype == general.dtype
    np.testing.assert_array_equal(fast.view(np.uint8), general.view(np.uint8))


@pytest.mark.parametrize("shape,ksize,strides,pads", _PIXEL_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.int32], ids=str)
def test_separable_pools_give_the_bits_of_the_strided_columns(shape, ksize, strides, pads, dtype,
                                                             monkeypatch):
    """max_pool2d's maximum and the window sum (avg_pool2d) read each column offset of
    their row results copied whole pixels at a time where that pays (NOTE(pixel-cells)):
    the bits of the strided reads, NaN and signed zeros included."""
    from tapeflow.ops import pooling, windows
    rng = np.random.default_rng(9)
    x = (rng.standard_normal(shape) * 4).astype(dtype)
    if dtype != np.int32:
        x.reshape(-1)[rng.choice(x.size, 30, replace=False)] = [np.nan, np.inf, -np.inf, -0.0, 0.0] * 6
    with np.errstate(invalid="ignore"):
        fast = [pooling._max_pool_impl(x, ksize, strides, pads),
                pooling._window_sum_impl(x, ksize, strides, pads)]
        monkeypatch.setattr(windows, "PIXELS_FROM", 1 << 62)
        plain = [pooling._max_pool_impl(x, ksize, strides, pads),
                 pooling._window_sum_impl(x, ksize, strides, pads)]
    for a, b in zip(fast, plain, strict=True):
        assert a.dtype == b.dtype and a.shape == b.shape
        np.testing.assert_array_equal(a.view(np.uint8), b.view(np.uint8))
