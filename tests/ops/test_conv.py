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
