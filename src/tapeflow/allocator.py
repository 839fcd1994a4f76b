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
"""

from __future__ import annotations

import ctypes
import os
import sys

__all__ = ["keep_freed_memory"]

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
