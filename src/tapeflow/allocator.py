"""Freed array memory stays in the process for the next call (NOTE(allocator)).

NOTE(allocator): NumPy allocates arrays with the C library's malloc. Under glibc's
default policy the large temporaries of a computation (an im2col matrix, a batch of
cotangents, a layer's activations) are handed back to the operating system when freed,
so the next call of the same computation faults every page in again, each one zeroed
by the kernel: a replayed training gradient can spend a large share of its time in
those page faults (docs/performance-notes.md, #allocator). TensorFlow and PyTorch keep
freed memory in allocators of their own; tapeflow asks glibc to do the same, once, when
it is imported: blocks under 32 MiB come from the heap (the value glibc's adaptive
policy settles on by itself after the first large frees), and the heap keeps up to
128 MiB of free memory instead of returning it. A process that imports tapeflow may
therefore stay up to 128 MiB above what it uses. ``TAPEFLOW_KEEP_FREED_MEMORY=0`` in
the environment turns this off, and a ``MALLOC_MMAP_THRESHOLD_`` or
``MALLOC_TRIM_THRESHOLD_`` the user set is left as it is. Other C libraries (macOS,
musl, Windows) are left alone.

NOTE(zero-page): `zero_page` gives read-only arrays of zeros that cost neither memory
nor cache: they view an anonymous read-only mapping, whose every page the kernel maps to
its one shared page of zeros. An op that NumPy runs faster against an array than against
a scalar (relu's maximum: docs/performance-notes.md, #zero-page) reads its zeros from
there, one page that stays in the L1 cache.
"""

from __future__ import annotations

import ctypes
import math
import mmap
import os
import sys

import numpy as np

__all__ = ["keep_freed_memory", "zero_page"]

_M_TRIM_THRESHOLD = -1  # glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
HEAP_BLOCK_BYTES = 32 << 20
KEPT_BYTES = 128 << 20


def keep_freed_memory(heap_block_bytes: int = HEAP_BLOCK_BYTES,
                      kept_bytes: int = KEPT_BYTES) -> bool:
    """Ask glibc to serve blocks under `heap_block_bytes` from the heap and to keep up to
    `kept_bytes` of freed heap memory; return whether it did (False off glibc, when the
    user opted out, or set the malloc variables themselves).

    Example:
        >>> from tapeflow.allocator import keep_freed_memory
        >>> keep_freed_memory() in (True, False)
        True
    """
    if os.environ.get("TAPEFLOW_KEEP_FREED_MEMORY", "1") == "0":
        return False
    if "MALLOC_MMAP_THRESHOLD_" in os.environ or "MALLOC_TRIM_THRESHOLD_" in os.environ:
        return False
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # glibc only: musl's mallopt does nothing
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = (ctypes.c_int, ctypes.c_int)
    return bool(mallopt(_M_MMAP_THRESHOLD, int(heap_block_bytes))
                and mallopt(_M_TRIM_THRESHOLD, int(kept_bytes)))


ZERO_PAGE_MOST_BYTES = 1 << 30  # of address space, none of it memory
# Past this many bytes an operand of maximum or minimum no longer fits the cache: the op is
# bound by memory, and the second stream a SIMD loop reads (the zero page, a tiled row)
# costs more than the loop saves (float64 1.27x at 12 MiB, float32 1.06x at 16 MiB on this
# project's machine: docs/performance-notes.md, #zero-page). relu's zero page and the
# replay's tiled scalars stay under it.
SIMD_MAXIMUM_MOST_BYTES = 8 << 20
_zero_map: dict = {}  # "bytes": the mapping's size, "base": a uint8 view of all of it
_zero_views: dict = {}  # (shape, dtype) -> its view: a replay asks for the same ones
_MOST_VIEWS = 256


def zero_page(shape: tuple, dtype: np.dtype) -> np.ndarray | None:
    """A read-only C-ordered array of zeros of `shape` and `dtype` that reads the kernel's
    zero page (NOTE(zero-page)); None where there is no such mapping (not POSIX) or it
    would pass `ZERO_PAGE_MOST_BYTES`. Zero bits are zero in every numeric dtype.

    Example:
        >>> import numpy as np
        >>> from tapeflow.allocator import zero_page
        >>> z = zero_page((2, 3), np.dtype(np.float32))
        >>> z is None or (not z.any() and not z.flags.writeable and z.dtype == np.float32)
        True
    """
    key = (shape, dtype)
    view = _zero_views.get(key)
    if view is not None:
        return view
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    if nbytes > ZERO_PAGE_MOST_BYTES or not hasattr(mmap, "PROT_READ"):
        return None
    if _zero_map.get("bytes", 0) < nbytes:
        # Grown by doubling; the views of an older mapping keep it alive while they live.
        size = min(ZERO_PAGE_MOST_BYTES, max(nbytes, 2 * _zero_map.get("bytes", 1 << 20)))
        pages = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                          prot=mmap.PROT_READ)
        _zero_map.update(bytes=size, base=np.frombuffer(pages, np.uint8))
    view = _zero_map["base"][:nbytes].view(dtype).reshape(shape)
    if len(_zero_views) >= _MOST_VIEWS:
        _zero_views.clear()
    _zero_views[key] = view
    return view
