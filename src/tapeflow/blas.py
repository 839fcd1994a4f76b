"""Matrix products with BLAS threads matched to the work (NOTE(blas-threads)).

NOTE(blas-threads): OpenBLAS (what NumPy's Linux wheels ship) splits every product with
more than 2^18 multiply-adds across all cores. On a machine whose cores are busy with
other work, one of those threads waits for a time slice and the product stalls, taking
many times its one-thread time, and a vectorized Jacobian with it. Threads pay off only
for products long enough to dwarf a scheduling delay, so the products tapeflow runs
(matmul, the convolutions' GEMMs) use one thread up to `ONE_THREAD_UP_TO` multiply-adds
(a fraction of a millisecond of one core) and whatever OpenBLAS chooses above. On an
idle multi-core machine this gives up some speed on products of that size; on a busy
one it avoids stalls that cost far more (docs/performance-notes.md, #blas-threads). The
switch is two calls into OpenBLAS, which cost next to nothing. On most CPUs it changes
no result (a GEMM's elements are each computed by one thread whatever the count), but
not on all: on an AMD EPYC (OpenBLAS's Zen kernels) a float32 product of moderate size
rounds differently on two threads than on one, float64 alike
(docs/performance-notes.md, #blas-rounding). Such a product is then NumPy's to the last bits of its
one-thread result, and a size's thread count, so its rounding, no longer depends on how
many cores the machine has. Other BLAS libraries are left alone, and
``ONE_THREAD_UP_TO = 0`` turns the switch off.
"""

from __future__ import annotations

import ctypes
import math
import os
from typing import Any, Callable

import numpy as np

__all__ = ["matmul", "sized", "sum_by_products", "ONE_THREAD_UP_TO"]

ONE_THREAD_UP_TO = 1 << 24  # multiply-adds of one product
_OPENBLAS_ALONE = 1 << 18  # OpenBLAS runs products up to this size on one thread itself

# Symbol names of the thread setters: plain OpenBLAS, its 64-bit-integer builds, and the
# scipy-openblas build NumPy's wheels bundle.
_PREFIXES = ("openblas", "scipy_openblas")
_SUFFIXES = ("", "64_")

_controls: Any = None  # (get, set) once found; False where there is no OpenBLAS to drive


def _find_openblas() -> tuple[Callable[[], int], Callable[[int], None]] | None:
    """NumPy's OpenBLAS thread getter and setter, from the libraries this process has
    loaded (Linux: /proc/self/maps); None elsewhere."""
    try:
        with open("/proc/self/maps") as fh:
            paths = {line.split()[-1] for line in fh if "openblas" in line.rsplit("/", 1)[-1]}
    except OSError:
        return None
    # NumPy's own copy first (a wheel's numpy.libs/), then any other (a system OpenBLAS).
    for path in sorted(paths, key=lambda p: "numpy" not in p):
        if not os.path.isfile(path):
            continue
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for prefix in _PREFIXES:
            for suffix in _SUFFIXES:
                get = getattr(lib, f"{prefix}_get_num_threads{suffix}", None)
                put = getattr(lib, f"{prefix}_set_num_threads{suffix}", None)
                if get is not None and put is not None:
                    get.restype, get.argtypes = ctypes.c_int, ()
                    put.restype, put.argtypes = None, (ctypes.c_int,)
                    return get, put
    return None


def _thread_controls() -> Any:
    global _controls
    if _controls is None:
        _controls = _find_openblas() or False
    return _controls


def matmul(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    """``np.matmul(a, b, out=out)``, on one BLAS thread when each product is small enough
    that threads would risk a stall more than they save (NOTE(blas-threads)). `out`, if
    given, is a C-ordered array of the product's shape and dtype.

    Example:
        >>> import numpy as np
        >>> from tapeflow.blas import matmul
        >>> matmul(np.ones((2, 3)), np.ones((3, 4))).shape
        (2, 4)
    """
    if a.ndim > 1 and b.ndim > 1 and a.shape[-1] == 1 and b.shape[-2] == 1:
        # Outer products (one-column times one-row; a batch of per-example weight
        # gradients): nothing to sum, and one broadcast multiply is faster than a GEMM
        # call per matrix (docs/performance-notes.md, #outer-products). The same
        # products, so the same values.
        return np.multiply(a, b, out=out)
    m = a.shape[-2] if a.ndim > 1 else 1
    n = b.shape[-1] if b.ndim > 1 else 1
    k = a.shape[-1]
    if (k >= 4 * _K_CHUNK and 128 <= m * n <= _SMALL_RESULT and a.ndim > 1 and b.ndim > 1
            and a.dtype.kind in "fc" and b.dtype.kind in "fc"):
        product = _long_k(a, b)
        if out is None:
            return product
        out[...] = product
        return out
    if (2 <= n <= _NARROW and _SMALL_KERNEL < m * n * k <= ONE_THREAD_UP_TO and a.ndim == 2
            and b.ndim == 2 and b.shape[0] == k and _MIN_ROWS * k * n <= _SMALL_KERNEL
            and a.dtype == b.dtype and a.dtype in _REAL_BLAS and a.flags.c_contiguous
            and _thread_controls()):
        return sized(m * n * k, _row_blocks, a, b, out)
    if out is None:
        return sized(m * n * k, np.matmul, a, b)
    return sized(m * n * k, np.matmul, a, b, out=out)


# NOTE(long-k): a product with a small result and a long inner dimension (a convolution's
# filter gradient sums over every pixel of the batch: [25, 20736] @ [20736, 6] per block)
# runs faster in OpenBLAS as a sum of products over inner chunks of 2,048 than as one
# product, whose packed panels then no longer fit in cache: the filter gradients of 1-
# and 3-channel convolutions gain, more so on a busy machine. Results under 128
# elements are left whole: there the extra calls cost more than the chunks save
# (docs/performance-notes.md, #long-k). The chunked sum rounds differently, never less
# accurately (a blocked sum).
_K_CHUNK = 2048
_SMALL_RESULT = 64 * 64


def _long_k(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    k = a.shape[-1]
    acc = np.matmul(a[..., :_K_CHUNK], b[..., :_K_CHUNK, :])
    for start in range(_K_CHUNK, k, _K_CHUNK):
        stop = min(k, start + _K_CHUNK)
        np.add(acc, np.matmul(a[..., start:stop], b[..., start:stop, :]), out=acc)
    return acc


# NOTE(row-blocks): OpenBLAS (x86-64 builds since 0.3.17) takes a product of at most
# 100^3 = 10^6 multiply-adds through unpacked small-matrix kernels, and a larger one through
# its packed GEMM. For a product with a few columns (n = 2..12: a forward-mode Jacobian's
# W @ [k, n] tangents, a reverse-mode one's cotangents as matmul_rows turns them) the packed
# path is the slower, by 2x near the threshold (float32 [1001, 250] @ [250, 4]: 69 us,
# against 30 us for [1000, 250]), and stays so above it: [4096, 256] @ [256, 8] runs in
# 344 us whole, 205 us as blocks of rows under the threshold. Row blocks of a C-ordered `a`
# are separate products with the same `b`: the same values a row's product gets from the
# small kernels, a different rounding from the packed path's, never a less accurate one.
# Only where NumPy's BLAS is OpenBLAS (whose thread controls blas.py finds) and the
# product runs on one thread (docs/performance-notes.md, #row-blocks).
_SMALL_KERNEL = 10 ** 6
_NARROW = 12
_MIN_ROWS = 16  # rows of the smallest block: a longer inner size leaves the product whole
_REAL_BLAS = (np.dtype(np.float32), np.dtype(np.float64))


def _row_blocks(a: np.ndarray, b: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
    m, k = a.shape
    n = b.shape[1]
    rows = _SMALL_KERNEL // (k * n) // _MIN_ROWS * _MIN_ROWS
    if out is None:
        out = np.empty((m, n), a.dtype)
    for start in range(0, m, rows):
        np.matmul(a[start:start + rows], b, out=out[start:start + rows])
    return out


def sized(work: int, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``fn(*args, **kwargs)``, a computation whose BLAS products are about `work`
    multiply-adds each, on one BLAS thread when that is small enough (NOTE(blas-threads)).

    Example:
        >>> import numpy as np
        >>> from tapeflow.blas import sized
        >>> float(sized(8, np.einsum, "ij,ij->", np.ones((2, 2)), np.ones((2, 2))))
        4.0
    """
    if not _OPENBLAS_ALONE < work <= ONE_THREAD_UP_TO:
        return fn(*args, **kwargs)
    controls = _thread_controls()
    if not controls:
        return fn(*args, **kwargs)
    get, put = controls
    before = get()
    if before <= 1:
        return fn(*args, **kwargs)
    put(1)
    try:
        return fn(*args, **kwargs)
    finally:
        put(before)


# NOTE(sum-by-products): a sum over some of an array's axes is, to NumPy, one inner loop per
# kept element (over the reduced axis) or per row of the kept part: short loops, each with
# its call overhead, so a sum over a middle axis, or a bias gradient summing [N, H, W] with
# few channels kept, runs well below memory speed. The same sum is a product with a vector
# of ones, which BLAS streams at memory speed (docs/performance-notes.md, #sum-by-gemv),
# and no less exact than NumPy's accumulation, which is sequential over non-innermost
# axes. Over the innermost axis NumPy sums long rows pairwise; there the GEMV's sequential
# lanes would lose digits, so rows longer than _PAIRWISE_FROM stay with NumPy. A product
# with fewer than _FEW_COLUMNS columns kept ([N*H*W] x [6]) runs at a fraction of BLAS's
# speed: the trailing summed axes join the columns up to _WIDE_COLUMNS, and a short NumPy
# sum adds those partial sums (shorter sequential lanes: closer to the exact sum, not
# further from it).
_BLAS_REAL = (np.dtype(np.float32), np.dtype(np.float64))
_PAIRWISE_FROM = 4096
# Below this many elements a BLAS call's overhead outweighs NumPy's whole sum (a small
# gradient's unbroadcast; docs/performance-notes.md, #sum-by-gemv), so small sums stay
# NumPy's.
_GEMV_FROM = 4096
_FEW_COLUMNS = 16
_WIDE_COLUMNS = 2048
_JOIN_FROM = 1 << 15  # below, the short NumPy sum costs about what the join saves


def sum_by_products(x: np.ndarray, lo: int, hi: int) -> np.ndarray | None:
    """The sum of `x` over its axes lo..hi-1 (the kept axes' shape, without the summed
    ones), as products with a vector of ones (NOTE(sum-by-products)); None where NumPy's
    own sum is the better choice (small, integer or half-precision arrays, arrays that are
    not C-ordered, and long rows of the innermost axis).

    Example:
        >>> import numpy as np
        >>> from tapeflow.blas import sum_by_products
        >>> x = np.ones((64, 24, 24, 6), np.float32)
        >>> sum_by_products(x, 0, 3)
        array([36864., 36864., 36864., 36864., 36864., 36864.], dtype=float32)
    """
    if x.size < _GEMV_FROM or x.dtype not in _BLAS_REAL or not x.flags.c_contiguous:
        return None
    outer = math.prod(x.shape[:lo])
    n = math.prod(x.shape[lo:hi])
    inner = math.prod(x.shape[hi:])
    if n <= 1 or outer * inner == 0 or (inner == 1 and n > _PAIRWISE_FROM):
        return None  # nothing to add (a copy), or NumPy's pairwise rows
    kept = x.shape[:lo] + x.shape[hi:]
    if inner == 1:
        return matmul(x.reshape(outer, n), np.ones(n, x.dtype)).reshape(kept)
    if outer > 1:
        return matmul(np.ones(n, x.dtype), x.reshape(outer, n, inner)).reshape(kept)
    joined, axis = 1, hi
    while inner < _FEW_COLUMNS and x.size >= _JOIN_FROM and axis > lo + 1 and \
            joined * x.shape[axis - 1] * inner <= _WIDE_COLUMNS:
        axis -= 1
        joined *= x.shape[axis]
    part = matmul(np.ones(n // joined, x.dtype), x.reshape(n // joined, joined * inner))
    return np.add.reduce(part.reshape(joined, inner), axis=0).reshape(kept) if joined > 1 \
        else part.reshape(kept)
