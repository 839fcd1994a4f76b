"""Op-table rows of src/tapeflow/ops/image_quality.py: psnr, ssim and ssim_multiscale, all
composites.

The public ops give float32 whatever their input (TensorFlow's rule), so the rows call
their dtype-keeping cores (`_psnr`, `_ssim`, `_ssim_multiscale`: the public op is the
conversion of the images, the core and a cast). The references are NumPy's: the 2-D
Gaussian window as an outer product, window means over `sliding_window_view`, and the
multiscale halving as an edge-padded reshape mean. The two images are noisy copies of
one, so the multiscale terms are positive (away from the clip at 0).
"""

from __future__ import annotations

import numpy as np

from tapeflow.ops.image_quality import _psnr, _ssim, _ssim_multiscale

from op_table import Row


def window(size, sigma):
    c = np.arange(size) - (size - 1) / 2
    g = np.exp(-c ** 2 / (2 * sigma ** 2))
    k = np.outer(g, g)
    return k / k.sum()


def window_means(x, kernel):
    k = kernel.shape[0]
    views = np.lib.stride_tricks.sliding_window_view(x, (k, k), axis=(-3, -2))
    return np.einsum("...ij,ij->...", views, kernel)


def ssim_maps(x, y, m, size, sigma, k1, k2):
    kernel = window(size, sigma)
    c1, c2 = (k1 * m) ** 2, (k2 * m) ** 2
    mx, my = window_means(x, kernel), window_means(y, kernel)
    vx, vy = window_means(x * x, kernel) - mx ** 2, window_means(y * y, kernel) - my ** 2
    cov = window_means(x * y, kernel) - mx * my
    cs = (2 * cov + c2) / (vx + vy + c2)
    return (2 * mx * my + c1) / (mx ** 2 + my ** 2 + c1) * cs, cs


def np_ssim(x, y, m, size=11, sigma=1.5, k1=0.01, k2=0.03, index_map=False):
    ssim_map, _ = ssim_maps(x, y, m, size, sigma, k1, k2)
    return ssim_map.mean(-1) if index_map else ssim_map.mean((-3, -2, -1))


def halved(x):
    h, w = x.shape[-3:-1]
    lead = [(0, 0)] * (x.ndim - 3)
    x = np.pad(x, lead + [(0, h % 2), (0, w % 2), (0, 0)], mode="edge")
    s = x.shape
    return x.reshape(s[:-3] + (s[-3] // 2, 2, s[-2] // 2, 2, s[-1])).mean((-4, -2))


def np_ssim_multiscale(x, y, m, powers, size=11, sigma=1.5, k1=0.01, k2=0.03):
    terms = []
    for s, p in enumerate(powers):
        if s:
            x, y = halved(x), halved(y)
        ssim_map, cs = ssim_maps(x, y, m, size, sigma, k1, k2)
        last = s == len(powers) - 1
        terms.append(np.maximum((ssim_map if last else cs).mean((-3, -2)), 0) ** p)
    return np.prod(terms, 0).mean(-1)


def np_psnr(a, b, m):
    return 20 * np.log10(m) - 10 * np.log10(((a - b) ** 2).mean((-3, -2, -1)))


def images(shape1, shape2=None, max_val=()):
    """Two noisy copies of one image (shapes shape1 and shape2), and max_val."""
    def make(rng):
        base = rng.uniform(0.2, 1.0, shape1[-3:])
        x = base + 0.05 * rng.standard_normal(shape1)
        y = base + 0.1 * rng.standard_normal(shape2 or shape1)
        return [x, y, rng.uniform(0.8, 1.2, max_val)]
    return make


SSIM_PRIMS = ("conv2d", "divide", "square", "reduce_sum")

ROWS: list = [
    Row("psnr", lambda a, b, m: _psnr(a, b, m), images((2, 4, 5, 3)), np_psnr,
        prims=("log", "square", "reduce_sum")),
    Row("psnr_broadcast", lambda a, b, m: _psnr(a, b, m), images((4, 5, 2), (3, 4, 5, 2), (3,)),
        np_psnr, prims=("log", "square", "reduce_sum")),
    Row("ssim", lambda x, y, m: _ssim(x, y, m, 3, 0.8, 0.05, 0.1), images((2, 6, 7, 2)),
        lambda x, y, m: np_ssim(x, y, m, 3, 0.8, 0.05, 0.1), prims=SSIM_PRIMS),
    Row("ssim_index_map", lambda x, y, m: _ssim(x, y, m, 4, 1.2, 0.05, 0.1, True),
        images((6, 5, 3), (2, 6, 5, 3)),
        lambda x, y, m: np_ssim(x, y, m, 4, 1.2, 0.05, 0.1, True), prims=SSIM_PRIMS),
    Row("ssim_multiscale",
        lambda x, y, m: _ssim_multiscale(x, y, m, (0.3, 0.3, 0.4), 3, 1.0, 0.05, 0.1),
        images((2, 13, 11, 2)),
        lambda x, y, m: np_ssim_multiscale(x, y, m, (0.3, 0.3, 0.4), 3, 1.0, 0.05, 0.1),
        prims=SSIM_PRIMS + ("window_sum", "pow", "relu", "getitem")),
    Row("ssim_multiscale_broadcast",
        lambda x, y, m: _ssim_multiscale(x, y, m, (0.6, 0.4), 3, 1.5, 0.05, 0.1),
        images((2, 1, 9, 10, 1), (3, 9, 10, 1)),
        lambda x, y, m: np_ssim_multiscale(x, y, m, (0.6, 0.4), 3, 1.5, 0.05, 0.1),
        prims=SSIM_PRIMS + ("window_sum", "pow", "relu", "getitem")),
]

NONDIFF_ROWS: list = []
EXEMPT: dict = {}
