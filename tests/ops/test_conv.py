"""The conv implementations run over cache-sized blocks of examples: blocked results
equal the one-block results (every geometry, one and several channels, batched filters)."""

import numpy as np
import pytest

from tapeflow.ops import conv, windows

GEOMETRIES = [  # (kernel, strides, dilations, pads, channels)
    (3, (1, 1), (1, 1), ((1, 1), (1, 1)), 1),
    (5, (1, 1), (1, 1), ((0, 0), (0, 0)), 1),
    (3, (2, 2), (1, 1), ((0, 1), (0, 1)), 3),
    (3, (1, 2), (2, 1), ((2, 2), (1, 1)), 4),
]


def _run(fn, monkeypatch, cache_bytes):
    monkeypatch.setattr(windows, "CACHE_BYTES", cache_bytes)
    return fn()


@pytest.mark.parametrize("geom", GEOMETRIES, ids=str)
@pytest.mark.parametrize("lead", [(), (2,)], ids=["plain", "batched filters"])
def test_blocked_equals_one_block(geom, lead, monkeypatch):
    k, strides, dil, pads, c = geom
    rng = np.random.default_rng(0)
    n, h, o = 7, 9, 5
    x = rng.standard_normal(lead + (n, h, h, c))
    w = rng.standard_normal(lead + (k, k, c, o))
    y = conv._conv_impl(x, w, strides, dil, pads)
    g = rng.standard_normal(y.shape)
    calls = {
        "forward": lambda: conv._conv_impl(x, w, strides, dil, pads),
        "input grad": lambda: conv._input_grad_impl(g, w, strides, dil, pads, x.shape[-4:]),
        "filter grad": lambda: conv._filter_grad_impl(x, g, strides, dil, pads, w.shape[-4:]),
    }
    for name, fn in calls.items():
        whole = _run(fn, monkeypatch, 1 << 40)
        for cache in (1, 3 * x[..., :1, :, :, :].nbytes):  # one example a block, then a few
            np.testing.assert_allclose(_run(fn, monkeypatch, cache), whole, rtol=1e-12,
                                       atol=1e-12, err_msg=name)


def test_an_empty_batch_gives_empty_results():
    x = np.zeros((0, 5, 5, 2))
    w = np.ones((3, 3, 2, 4))
    y = conv._conv_impl(x, w, (1, 1), (1, 1), ((1, 1), (1, 1)))
    assert y.shape == (0, 5, 5, 4)
    assert conv._filter_grad_impl(x, y, (1, 1), (1, 1), ((1, 1), (1, 1)), w.shape).shape == w.shape
    assert not conv._filter_grad_impl(x, y, (1, 1), (1, 1), ((1, 1), (1, 1)), w.shape).any()
    assert conv._input_grad_impl(y, w, (1, 1), (1, 1), ((1, 1), (1, 1)), x.shape).shape == x.shape


@pytest.mark.parametrize("geom", GEOMETRIES, ids=str)
@pytest.mark.parametrize("lead", [(), (2,)], ids=["plain", "batched filters"])
def test_offset_major_im2col_equals_windows(geom, lead, monkeypatch):
    """Few channels gather im2col one kernel offset at a time (`_windows_t`); every
    channel count, forced through either path, gives the same forward and filter grad."""
    k, strides, dil, pads, c = geom
    rng = np.random.default_rng(1)
    x = rng.standard_normal(lead + (6, 9, 9, c))
    w = rng.standard_normal(lead + (k, k, c, 4))
    g = rng.standard_normal(conv._conv_impl(x, w, strides, dil, pads).shape)
    results = []
    for few in (0, 64):  # never, always
        monkeypatch.setattr(conv, "_FEW_CHANNELS", few)
        results.append((conv._conv_impl(x, w, strides, dil, pads),
                        conv._filter_grad_impl(x, g, strides, dil, pads, w.shape[-4:])))
    for a, b in zip(*results):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


# ---------------------------------------------------------------- window runs (NOTE(pixel-cells))
def _spied(monkeypatch):
    """Count the copies `copy_runs` makes as void runs."""
    made = []
    memory = windows._Memory
    monkeypatch.setattr(windows, "_Memory", lambda i, b: made.append(i["typestr"]) or memory(i, b))
    return made


def _dtypes():
    out = [np.float16, np.float32, np.float64, np.int8, np.complex128, np.bool_, ">f4"]
    try:
        import ml_dtypes
        out.append(ml_dtypes.bfloat16)
    except ImportError:
        pass
    return out


@pytest.mark.parametrize("dtype", _dtypes(), ids=str)
def test_copy_runs_copies_the_bytes_of_the_view(dtype, monkeypatch):
    """Windows of an image (runs of KW*C elements), a band's rows (runs of a band), a view
    with reversed and offset leading axes: the copy is the view's C-ordered copy, byte for
    byte, owns its memory, and was made as void runs."""
    rng = np.random.default_rng(0)
    image = (rng.standard_normal((20, 15, 17, 3)) * 50).astype(dtype)
    sb, sh, sw, sc = image.strides
    views = [
        np.lib.stride_tricks.as_strided(image, (20, 13, 15, 3, 3, 3), (sb, sh, sw, sh, sw, sc)),
        np.lib.stride_tricks.as_strided(image, (20, 15, 5, 5, 3), (sb, sh, 3 * sw, sw, sc)),
        image[::-1, 2:, 1:9][:, ::2],
    ]
    made = _spied(monkeypatch)
    monkeypatch.setattr(windows, "RUNS_FROM", 1)
    for view in views:
        got = windows.copy_runs(view)
        assert got.dtype == view.dtype and got.shape == view.shape and got.flags.c_contiguous
        assert not np.shares_memory(got, image) and got.flags.writeable
        want = np.ascontiguousarray(view)
        assert got.view(np.uint8).tobytes() == want.view(np.uint8).tobytes()
    assert len(made) == len(views)


def test_copy_runs_copies_plainly_where_runs_do_not_pay(monkeypatch):
    """Small views, runs longer than `_LONGEST_RUN` bytes, runs of one element, object
    arrays and views with no strided axis are NumPy's own copies, with the same values."""
    made = _spied(monkeypatch)
    big = np.arange(4 * 40 * 40 * 64, dtype=np.float64).reshape(4, 40, 40, 64)
    cases = [big[:1, :5, :5, :4],        # 100 elements: under RUNS_FROM
             big[:, :, ::2, :],          # runs of 512 bytes
             big[..., ::2],              # runs of one element
             big.reshape(-1, 8)[:, :4].astype(object)]
    for view in cases:
        got = windows.copy_runs(view)
        np.testing.assert_array_equal(got, view)
        assert got.flags.c_contiguous
    monkeypatch.setattr(windows, "RUNS_FROM", 1)
    got = windows.copy_runs(big[:2])  # contiguous: one run, no strided axis
    np.testing.assert_array_equal(got, big[:2])
    assert not made


# (batch, height, width, channels, kernel, filters, strides, pads): the band of LeNet's
# first and second layers, im2col (7 and 8 channels), the phases of a strided transpose
RUN_CASES = [
    (24, 28, 28, 1, 5, 6, (1, 1), ((0, 0), (0, 0))),
    (40, 12, 12, 6, 5, 16, (1, 1), ((0, 0), (0, 0))),
    (16, 14, 13, 7, 3, 16, (1, 1), ((1, 1), (1, 1))),
    (32, 17, 16, 8, 3, 8, (2, 2), ((0, 1), (1, 1))),
]


@pytest.mark.parametrize("case", RUN_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=str)
def test_conv_implementations_give_the_bits_of_strided_copies(case, dtype, monkeypatch):
    """The forward and both transposes at sizes where their windows are copied as runs
    equal, bit for bit, the same implementations with NumPy's strided copies."""
    n, h, wd, c, k, o, strides, pads = case
    rng = np.random.default_rng(2)
    x = rng.standard_normal((n, h, wd, c)).astype(dtype)
    w = rng.standard_normal((k, k, c, o)).astype(dtype)
    dil = (1, 1)
    g = rng.standard_normal(conv._conv_impl(x, w, strides, dil, pads).shape).astype(dtype)
    calls = [lambda: conv._conv_impl(x, w, strides, dil, pads),
             lambda: conv._input_grad_impl(g, w, strides, dil, pads, x.shape),
             lambda: conv._filter_grad_impl(x, g, strides, dil, pads, w.shape)]
    made = _spied(monkeypatch)
    runs = []
    for name, f in zip(("forward", "input grad", "filter grad"), calls):
        before = len(made)
        runs.append(f())
        # the input gradient reads windows only where it is split in phases (strided)
        assert len(made) > before or (name == "input grad" and strides == (1, 1)), name
    monkeypatch.setattr(windows, "RUNS_FROM", 1 << 62)
    for f, got in zip(calls, runs):
        want = f()
        assert got.tobytes() == want.tobytes()
