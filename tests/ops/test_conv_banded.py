"""Banded convolutions (NOTE(banded-conv)): the three conv implementations, where
`band_width` picks a band, against im2col forced on the same operands and against a naive
reference; every case first asserts that the band is taken, so none passes on im2col."""

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops import conv, conv_banded, windows

import op_table  # noqa: F401 - first: it imports every table, table_conv's too
import table_conv
from table_conv import conv_reference

ONE = ((1, 1), (1, 1), ((0, 0), (0, 0)))

# (batch, height, width, channels, kernel h, kernel w, filters, pads): odd sizes, one
# channel, several bands (ow / q > 1), bands overhanging the image's edge, asymmetric
# padding, a single example.
CASES = [
    (3, 8, 10, 1, 5, 5, 6, ((0, 0), (0, 0))),    # LeNet-like first layer, q = 6
    (2, 28, 28, 1, 5, 5, 6, ((0, 0), (0, 0))),   # LeNet's first layer: q = 8, three bands
    (5, 12, 12, 6, 5, 5, 16, ((0, 0), (0, 0))),  # LeNet's second layer: q = 2
    (1, 7, 10, 3, 3, 3, 4, ((1, 1), (1, 1))),    # SAME padding, one example
    (4, 6, 7, 2, 5, 3, 4, ((2, 2), (1, 1))),     # non-square kernel and padding
    (2, 9, 12, 5, 3, 5, 3, ((0, 1), (2, 0))),    # asymmetric padding, odd filters
    (3, 9, 27, 1, 5, 5, 6, ((0, 0), (0, 0))),    # 23 columns: three bands of 8, one over
    (1, 7, 11, 3, 3, 3, 4, ((1, 1), (1, 1))),    # 11 columns (SAME): two bands of 6
    (2, 6, 25, 6, 3, 3, 6, ((0, 0), (0, 0))),    # 23 columns: three bands of 8, one over
]


def _operands(case, dtype=np.float64, seed=0):
    n, h, wd, c, kh, kw, o, pads = case
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((n, h, wd, c)).astype(dtype)
    w = rng.standard_normal((kh, kw, c, o)).astype(dtype)
    oh = h + sum(pads[0]) - kh + 1
    ow = wd + sum(pads[1]) - kw + 1
    g = rng.standard_normal((n, oh, ow, o)).astype(dtype)
    return x, w, g, pads


def _three(x, w, g, pads):
    return {
        "forward": conv._conv_impl(x, w, (1, 1), (1, 1), pads),
        "input grad": conv._input_grad_impl(g, w, (1, 1), (1, 1), pads, x.shape),
        "filter grad": conv._filter_grad_impl(x, g, (1, 1), (1, 1), pads, w.shape),
    }


def _assert_banded(x, w, g):
    """The forward takes a band; the gradients too unless that band overhangs (ow not a
    multiple of it), which only the forward's may."""
    kernel = w.shape
    ow = g.shape[2]
    q = conv_banded.band_width(ow, kernel, (1, 1), (1, 1), (x, w))
    assert q > 0
    for kind in ("input grad", "filter grad"):
        assert (conv_banded.band_width(ow, kernel, (1, 1), (1, 1), (g, w), kind) > 0) \
            == (ow % q == 0), kind


def _banded_equal_to_im2col(x, w, g, pads, monkeypatch):
    """The three implementations as the rule chooses, checked against im2col forced."""
    banded = _three(x, w, g, pads)
    with monkeypatch.context() as m:
        m.setattr(conv_banded, "band_width", lambda *a, **k: 0)
        plain = _three(x, w, g, pads)
    for name in plain:
        np.testing.assert_allclose(banded[name], plain[name], rtol=1e-12, atol=1e-12,
                                   err_msg=name)
    return banded


@pytest.mark.parametrize("case", CASES, ids=str)
def test_banded_equals_im2col_and_the_reference(case, monkeypatch):
    x, w, g, pads = _operands(case)
    _assert_banded(x, w, g)
    banded = _banded_equal_to_im2col(x, w, g, pads, monkeypatch)
    padded = np.pad(x, [(0, 0), pads[0], pads[1], (0, 0)])
    np.testing.assert_allclose(banded["forward"], conv_reference(padded, w), rtol=1e-12,
                               atol=1e-12)
    # the transposes, by their definition: <conv(x, w), g> = <x, input_grad> = <w, filter_grad>
    inner = np.vdot(banded["forward"], g)
    np.testing.assert_allclose(np.vdot(x, banded["input grad"]), inner, rtol=1e-11)
    np.testing.assert_allclose(np.vdot(w, banded["filter grad"]), inner, rtol=1e-11)


@pytest.mark.parametrize("case", CASES[:3], ids=str)
def test_banded_blocks_equal_one_block(case, monkeypatch):
    """Blocks of one example, of a few (a remainder block), and all examples at once."""
    x, w, g, pads = _operands(case)
    _assert_banded(x, w, g)
    whole = _three(x, w, g, pads)
    for cache in (1, 2 * x[:1].nbytes * w.shape[0] * 2):
        monkeypatch.setattr(windows, "CACHE_BYTES", cache)
        for name, got in _three(x, w, g, pads).items():
            np.testing.assert_allclose(got, whole[name], rtol=1e-12, atol=1e-12, err_msg=name)


def test_banded_float32_complex_and_strided_views(monkeypatch):
    case = CASES[1]
    x, w, g, pads = _operands(case)
    want = _three(x, w, g, pads)
    got32 = _three(*(a.astype(np.float32) for a in (x, w, g)), pads)
    for name in want:
        assert got32[name].dtype == np.float32
        np.testing.assert_allclose(got32[name], want[name], rtol=2e-4, atol=2e-4, err_msg=name)
    # operands that are views with gaps and reversed strides
    xv = np.ascontiguousarray(x[:, ::-1])[:, ::-1]
    wide = np.zeros(x.shape[:3] + (2 * x.shape[3],))
    wide[..., ::2] = x
    for view in (xv, wide[..., ::2], np.asfortranarray(x)):
        for name, val in _three(view, w, g, pads).items():
            np.testing.assert_allclose(val, want[name], rtol=1e-12, atol=1e-12, err_msg=name)
    # complex operands: the same bilinear products, no conjugation
    rng = np.random.default_rng(3)
    xc = x + 1j * rng.standard_normal(x.shape)
    wc = w - 1j * rng.standard_normal(w.shape)
    gc = g + 0.5j * rng.standard_normal(g.shape)
    _banded_equal_to_im2col(xc, wc, gc, pads, monkeypatch)


def test_an_empty_batch_takes_the_band_too():
    x, w, g, pads = _operands(CASES[1])
    x, g = x[:0], g[:0]
    got = _three(x, w, g, pads)
    assert got["forward"].shape == g.shape
    assert got["input grad"].shape == x.shape
    assert got["filter grad"].shape == w.shape and not got["filter grad"].any()


@pytest.mark.parametrize("why, args", [
    ("strided", (24, (5, 5, 1, 6), (2, 1), (1, 1))),
    ("dilated", (24, (5, 5, 1, 6), (1, 1), (1, 2))),
    ("many channels", (24, (5, 5, 7, 6), (1, 1), (1, 1))),
    ("overhanging by more than an eighth", (5, (3, 3, 3, 16), (1, 1), (1, 1))),
    ("a band too shallow", (24, (3, 3, 1, 6), (1, 1), (1, 1))),
    ("wide filters, the band's columns over the limit", (24, (5, 5, 1, 64), (1, 1), (1, 1))),
])
def test_im2col_serves_where_no_band_pays(why, args):
    assert conv_banded.band_width(*args, (np.empty((1,) * 4),)) == 0, why


def test_batched_operands_and_many_bands_of_a_transpose_take_im2col():
    four, five = np.empty((1,) * 4), np.empty((1,) * 5)
    assert conv_banded.band_width(24, (5, 5, 1, 6), (1, 1), (1, 1), (five, four)) == 0
    # 70 columns: ten bands of 7, too many for the input gradient to add back
    assert conv_banded.band_width(70, (3, 3, 3, 6), (1, 1), (1, 1), (four,)) == 7
    assert conv_banded.band_width(70, (3, 3, 3, 6), (1, 1), (1, 1), (four,), "input grad") == 0


def test_the_widest_dividing_band_else_one_overhanging_by_at_most_an_eighth():
    four = (np.empty((1,) * 4),)
    assert conv_banded.band_width(24, (5, 5, 1, 6), (1, 1), (1, 1), four) == 8   # divides
    assert conv_banded.band_width(20, (5, 5, 1, 6), (1, 1), (1, 1), four) == 5   # divides
    assert conv_banded.band_width(23, (5, 5, 1, 6), (1, 1), (1, 1), four) == 8   # 1 over
    for kind in ("input grad", "filter grad"):  # the forward's alone
        assert conv_banded.band_width(23, (5, 5, 1, 6), (1, 1), (1, 1), four, kind) == 0
    assert conv_banded.band_width(22, (5, 5, 1, 6), (1, 1), (1, 1), four) == 8   # 2 over
    assert conv_banded.band_width(13, (5, 5, 1, 6), (1, 1), (1, 1), four) == 7   # 1 over
    assert conv_banded.band_width(10, (3, 3, 6, 16), (1, 1), (1, 1), four) == 2  # divides
    assert conv_banded.band_width(9, (5, 5, 1, 6), (1, 1), (1, 1), four) == 5    # 1 over


def test_banded_gradients_against_finite_differences():
    """Through the primitives: the gradient and the JVP of a banded conv, in float64."""
    x, w, _, _ = _operands((2, 8, 10, 1, 5, 5, 6, ((0, 0), (0, 0))))
    _assert_banded(x, w, np.empty((2, 4, 6, 6)))
    tf.testing.check_grads(lambda a, b: tf.nn.conv2d(a, b, strides=1, padding="VALID"),
                           [x, w], order=2)


@pytest.mark.parametrize("row", [r for r in table_conv.ROWS if r.name.endswith("_banded")],
                         ids=lambda r: r.name)
def test_the_op_tables_banded_rows_take_the_band(row, monkeypatch):
    """The op table checks these rows every way (finite differences, forward against
    reverse, batched, compiled); here, that their ops and both derivatives are banded."""
    calls = []
    for name in ("conv", "input_grad", "filter_grad"):
        real = getattr(conv_banded, name)
        monkeypatch.setattr(conv_banded, name,
                            lambda *a, _real=real, _name=name: calls.append(_name) or _real(*a))
    values = [tf.constant(a) for a in row.make(np.random.default_rng(0))]
    with tf.GradientTape() as tape:
        tape.watch(values)
        y = row.fn(*values)
    tape.gradient(y, values, output_gradients=tf.ones_like(y))
    assert set(calls) == {"conv", "input_grad", "filter_grad"}, calls
