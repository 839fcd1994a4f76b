"""Strided input gradients over output phases (NOTE(phase-conv)), where `phase_split`
takes them, against im2col's scatter forced on the same operands and against the
transpose of a naive convolution; every case first asserts that the phases are taken, so
none passes on im2col."""

import itertools

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops import conv, conv_phases, windows

import op_table  # noqa: F401 - first: it imports every table, table_conv's too
import table_conv
from table_conv import conv_reference

# (batch, height, width, channels, kernel h, kernel w, filters, strides, pads): the seed's
# second layer, odd sizes, strides 3 and (2, 1), padding wider than a kernel reaches
# (pixels no window covers), asymmetric padding, one example.
CASES = [
    (3, 14, 14, 8, 3, 3, 16, (2, 2), ((0, 1), (0, 1))),   # the seed's second layer (SAME)
    (2, 7, 9, 3, 3, 3, 4, (2, 2), ((1, 1), (1, 1))),      # odd sizes
    (1, 11, 10, 2, 4, 4, 5, (2, 2), ((1, 2), (1, 1))),     # 4x4: no zero taps
    (2, 9, 8, 4, 5, 3, 6, (2, 3), ((2, 2), (0, 1))),       # 5x3 at strides (2, 3)
    (2, 10, 11, 3, 3, 3, 7, (3, 3), ((0, 0), (1, 0))),     # 3x3 at stride 3
    (2, 8, 6, 2, 3, 2, 3, (2, 1), ((1, 1), (0, 1))),       # stride 1 along the width
    (1, 6, 7, 5, 2, 2, 4, (2, 2), ((3, 0), (0, 3))),       # padding no window reaches
    (4, 5, 5, 64, 4, 4, 8, (2, 2), ((1, 2), (1, 2))),      # the most channels
    (2, 6, 6, 8, 2, 2, 64, (2, 2), ((0, 0), (0, 0))),      # the most filters: no zero taps
]


def _operands(case, dtype=np.float64, seed=0):
    n, h, wd, c, kh, kw, o, strides, pads = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, wd, c)).astype(dtype)
    w = rng.standard_normal((kh, kw, c, o)).astype(dtype)
    oh, ow = windows.out_hw(x.shape, (kh, kw), strides, pads)
    g = rng.standard_normal((n, oh, ow, o)).astype(dtype)
    return x, w, g, strides, pads


def _input_grad(g, w, strides, pads, shape):
    return conv._input_grad_impl(g, w, strides, (1, 1), pads, shape)


def _phases_equal_to_im2col(x, w, g, strides, pads, monkeypatch):
    assert conv_phases.phase_split(w.shape, strides, (1, 1), (g, w))
    got = _input_grad(g, w, strides, pads, x.shape)
    with monkeypatch.context() as m:
        m.setattr(conv_phases, "phase_split", lambda *a: False)
        want = _input_grad(g, w, strides, pads, x.shape)
    assert got.shape == want.shape == x.shape and got.dtype == want.dtype
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    return got


@pytest.mark.parametrize("case", CASES, ids=str)
def test_phases_equal_im2col_and_the_transpose_of_the_reference(case, monkeypatch):
    x, w, g, strides, pads = _operands(case)
    got = _phases_equal_to_im2col(x, w, g, strides, pads, monkeypatch)
    # the transpose by its definition: <conv(x, w), g> = <x, input_grad>, with conv naive
    padded = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    forward = conv_reference(padded, w, strides)
    np.testing.assert_allclose(np.vdot(x, got), np.vdot(forward, g), rtol=1e-11)
    # and pixel by pixel: each input pixel's gradient is d<conv(x, w), g>/dx, a sum of taps
    want = np.zeros(padded.shape)
    sh, sw = strides
    for i, j in itertools.product(range(g.shape[1]), range(g.shape[2])):
        want[:, i * sh:i * sh + w.shape[0], j * sw:j * sw + w.shape[1]] += \
            np.einsum("no,hwco->nhwc", g[:, i, j], w)
    want = want[:, pads[0][0]:pads[0][0] + x.shape[1], pads[1][0]:pads[1][0] + x.shape[2]]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_every_geometry_of_a_small_grid(monkeypatch):
    """Heights, widths, kernels, strides and paddings on a grid, each taken by the phases
    and checked against im2col: blocks that overhang the image at either edge, padding
    larger than a kernel, kernels of one stride."""
    count = 0
    for h, k, s, top, bottom in itertools.product((4, 5, 6, 9), (2, 3, 4, 5), (2, 3),
                                                  (0, 1, 3), (0, 2)):
        if h + top + bottom < k or not conv_phases.phase_split((k, k, 2, 3), (s, s), (1, 1), ()):
            continue  # no window, or im2col's (4x4 at stride 3: too many zero taps)
        x, w, g, strides, pads = _operands(
            (2, h, h + 1, 2, k, k, 3, (s, s), ((top, bottom), (bottom, top))), seed=count)
        _phases_equal_to_im2col(x, w, g, strides, pads, monkeypatch)
        count += 1
    assert count > 100


@pytest.mark.parametrize("case", CASES[:2], ids=str)
def test_phase_blocks_equal_one_block(case, monkeypatch):
    """Blocks of one example, of a few (a remainder block), and all examples at once."""
    x, w, g, strides, pads = _operands(case)
    whole = _input_grad(g, w, strides, pads, x.shape)
    for cache in (1, 2 * x[:1].nbytes * w.shape[0] * 2):
        monkeypatch.setattr(windows, "CACHE_BYTES", cache)
        np.testing.assert_allclose(_input_grad(g, w, strides, pads, x.shape), whole,
                                   rtol=1e-12, atol=1e-12)


def test_phases_float32_complex_views_and_an_empty_batch(monkeypatch):
    x, w, g, strides, pads = _operands(CASES[0])
    want = _input_grad(g, w, strides, pads, x.shape)
    got32 = _input_grad(g.astype(np.float32), w.astype(np.float32), strides, pads, x.shape)
    assert got32.dtype == np.float32
    np.testing.assert_allclose(got32, want, rtol=2e-4, atol=2e-4)
    # operands that are views with gaps, reversed strides and Fortran order
    wide = np.zeros(g.shape[:3] + (2 * g.shape[3],))
    wide[..., ::2] = g
    for view in (np.ascontiguousarray(g[:, ::-1])[:, ::-1], wide[..., ::2],
                 np.asfortranarray(g)):
        np.testing.assert_allclose(_input_grad(view, np.asfortranarray(w), strides, pads,
                                               x.shape), want, rtol=1e-12, atol=1e-12)
    # complex operands: the same bilinear product, no conjugation
    rng = np.random.default_rng(3)
    _phases_equal_to_im2col(x, w - 1j * rng.standard_normal(w.shape),
                            g + 0.5j * rng.standard_normal(g.shape), strides, pads, monkeypatch)
    empty = _input_grad(g[:0], w, strides, pads, (0,) + x.shape[1:])
    assert empty.shape == (0,) + x.shape[1:]


def test_the_result_owns_no_operand():
    """Writing the result leaves the operands alone, and a second call is unchanged."""
    x, w, g, strides, pads = _operands(CASES[1])
    g0, w0 = g.copy(), w.copy()
    first = _input_grad(g, w, strides, pads, x.shape)
    keep = first.copy()
    first[...] = 7.0
    np.testing.assert_array_equal(g, g0)
    np.testing.assert_array_equal(w, w0)
    np.testing.assert_array_equal(_input_grad(g, w, strides, pads, x.shape), keep)


@pytest.mark.parametrize("why, kernel, strides, dilations", [
    ("unstrided", (3, 3, 8, 16), (1, 1), (1, 1)),
    ("dilated", (3, 3, 8, 16), (2, 2), (1, 2)),
    ("one channel: the product's s*s columns too few", (3, 3, 1, 8), (2, 2), (1, 1)),
    ("more channels than swept", (2, 2, 65, 4), (2, 2), (1, 1)),
    ("many filters, with zero taps", (3, 3, 8, 64), (2, 2), (1, 1)),
    ("channels times filters, with zero taps", (3, 3, 32, 32), (2, 2), (1, 1)),
    ("channels times filters, without zero taps", (2, 2, 8, 128), (2, 2), (1, 1)),
    ("a kernel smaller than the stride", (1, 1, 8, 16), (2, 2), (1, 1)),
    ("mostly zero taps", (5, 5, 8, 16), (4, 4), (1, 1)),
])
def test_im2col_serves_where_the_phases_do_not_pay(why, kernel, strides, dilations):
    assert not conv_phases.phase_split(kernel, strides, dilations, (np.empty((1,) * 4),)), why


def test_batched_operands_take_im2col():
    four, five = np.empty((1,) * 4), np.empty((1,) * 5)
    assert conv_phases.phase_split((3, 3, 8, 16), (2, 2), (1, 1), (four, four))
    assert not conv_phases.phase_split((3, 3, 8, 16), (2, 2), (1, 1), (five, four))
    assert conv_phases.phase_split((2, 2, 8, 64), (2, 2), (1, 1), (four,))  # no zero taps


def test_phase_gradients_against_finite_differences():
    """Through the primitives, to second order: conv2d at stride 2, whose input gradient
    runs over the phases, and that gradient's own derivatives."""
    x, w, g, strides, pads = _operands((2, 7, 6, 3, 3, 3, 4, (2, 2), ((1, 1), (0, 1))))
    assert conv_phases.phase_split(w.shape, strides, (1, 1), (g, w))
    tf.testing.check_grads(lambda a, b: tf.nn.conv2d(a, b, strides=2, padding="SAME"),
                           [x, w], order=2)


@pytest.mark.parametrize("row", [r for r in table_conv.ROWS if "_phases" in r.name],
                         ids=lambda r: r.name)
def test_the_op_tables_phase_rows_take_the_phases(row, monkeypatch):
    """The op table checks these rows every way (finite differences, forward against
    reverse, batched, compiled); here, that the rows run over the phases."""
    calls = []
    real = conv_phases.input_grad
    monkeypatch.setattr(conv_phases, "input_grad", lambda *a: calls.append(1) or real(*a))
    row.fn(*[tf.constant(a) for a in row.make(np.random.default_rng(0))])
    assert calls


@pytest.mark.parametrize("impl, args", [
    (conv._input_grad_impl, lambda g, w, x: (g[:, :-1], w, (2, 2), (1, 1), ((0, 1), (0, 1)),
                                              x.shape)),
    (conv._input_grad_impl, lambda g, w, x: (g, w[:, :, :4], (2, 2), (1, 1), ((0, 1), (0, 1)),
                                              x.shape)),
    (conv._filter_grad_impl, lambda g, w, x: (x[:, 1:], g, (2, 2), (1, 1), ((0, 1), (0, 1)),
                                               w.shape)),
], ids=["gradient rows", "filter channels", "image rows"])
def test_a_transpose_of_mismatched_shapes_raises(impl, args):
    """Primitives bound with shapes no convolution relates (the phases would otherwise
    give numbers) raise, naming both shapes."""
    x, w, g, _, _ = _operands(CASES[0])
    with pytest.raises(tf.errors.InvalidArgumentError, match="the gradient has shape"):
        impl(*args(g, w, x))
