"""NOTE(allocator) in tapeflow/allocator.py: importing tapeflow keeps freed array memory
in the process (glibc), so a computation repeated on large arrays does not fault its
pages in again at every call; the user can opt out. NOTE(zero-page): read-only zeros
that read the kernel's zero page, and relu, which compares with them."""

from __future__ import annotations

import mmap
import os
import subprocess
import sys

import ml_dtypes
import numpy as np
import pytest

import tapeflow as tf
from tapeflow import allocator
from tapeflow.ops import nn

# Five 6 MiB arrays made and freed, ten times: under glibc's default policy their pages
# go back to the system and come back zeroed, about 1,500 faults a round.
SCRIPT = """
import resource
import numpy as np
import tapeflow

def faults():
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

for _ in range(3):
    xs = [np.ones(6 << 18, np.float32) for _ in range(5)]
    del xs
before = faults()
for _ in range(10):
    xs = [np.ones(6 << 18, np.float32) for _ in range(5)]
    del xs
print((faults() - before) / 10)
"""

glibc_only = pytest.mark.skipif(not sys.platform.startswith("linux")
                                or os.confstr("CS_GNU_LIBC_VERSION") is None,
                                reason="the policy is set for glibc only")


def _faults_per_round(**env: str) -> float:
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith("MALLOC_") and k != "TAPEFLOW_KEEP_FREED_MEMORY"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env={**clean, **env},
                          capture_output=True, text=True, timeout=120, check=True)
    return float(done.stdout.strip().splitlines()[-1])


@glibc_only
def test_repeated_large_temporaries_do_not_fault_again():
    assert _faults_per_round() < 50


@glibc_only
def test_the_user_can_opt_out():
    assert _faults_per_round(TAPEFLOW_KEEP_FREED_MEMORY="0") > 500


def test_a_users_own_malloc_settings_are_kept(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    assert allocator.keep_freed_memory() is False


# NOTE(zero-page): read-only zeros that view the kernel's zero page.
posix_only = pytest.mark.skipif(not hasattr(mmap, "PROT_READ"), reason="POSIX mappings")


@posix_only
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16,
                                   np.complex128, np.int8, np.int64, np.bool_])
@pytest.mark.parametrize("shape", [(), (0, 5), (7,), (3, 1, 5), (640, 64)])
def test_zero_page_gives_read_only_zeros_of_any_dtype_and_shape(dtype, shape):
    z = allocator.zero_page(shape, np.dtype(dtype))
    assert z.shape == shape and z.dtype == dtype and z.flags.c_contiguous
    assert not z.flags.writeable and not np.any(z != 0)
    if z.size:
        with pytest.raises(ValueError, match="read-only"):
            z.reshape(-1)[0] = 1


@posix_only
def test_zero_page_grows_keeps_older_views_and_declines_past_its_limit(monkeypatch):
    small = allocator.zero_page((5,), np.dtype(np.float64))
    mapped = allocator._zero_map["bytes"]
    big = allocator.zero_page((mapped // 8 + 3,), np.dtype(np.float64))  # past the mapping
    assert allocator._zero_map["bytes"] > mapped and not big.any()
    assert not small.any()  # a view of the older mapping still reads zeros
    monkeypatch.setattr(allocator, "ZERO_PAGE_MOST_BYTES", 1 << 12)
    assert allocator.zero_page((1 << 10,), np.dtype(np.float32)) is not None  # 4 KiB
    assert allocator.zero_page((1 << 10,), np.dtype(np.float64)) is None


@posix_only
def test_zero_page_views_are_cached_and_the_cache_is_bounded(monkeypatch):
    monkeypatch.setattr(allocator, "_zero_views", {})
    monkeypatch.setattr(allocator, "_MOST_VIEWS", 3)
    first = allocator.zero_page((4, 4), np.dtype(np.float32))
    assert allocator.zero_page((4, 4), np.dtype(np.float32)) is first
    for n in range(5, 10):
        allocator.zero_page((n,), np.dtype(np.float32))
    assert len(allocator._zero_views) <= 3


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.float16, ml_dtypes.bfloat16])
@pytest.mark.parametrize("size", [7, nn._ZERO_PAGE_FROM - 1, nn._ZERO_PAGE_FROM, 40_000,
                                  "past the cache"])
def test_relu_equals_the_maximum_with_zero_at_the_edges(dtype, size, monkeypatch):
    """NaN stays NaN, -inf becomes 0., +inf stays, and zeros keep the sign NumPy's maximum
    with a scalar zero gives them, on both paths (the zero page's from `_ZERO_PAGE_FROM`
    elements of float32 and float64, the scalar's below and for other dtypes); the
    result is a new, writable array."""
    calls = []
    real = nn.zero_page
    monkeypatch.setattr(nn, "zero_page", lambda *a: calls.append(a) or real(*a))
    large = size == "past the cache"  # over SIMD_MAXIMUM_MOST_BYTES, lowered to 32 KiB here
    if large:
        monkeypatch.setattr(nn, "SIMD_MAXIMUM_MOST_BYTES", 32 << 10)
        size = 40_000
    edges = np.array([np.nan, -0.0, 0.0, -np.inf, np.inf, -1.5, 2.5], np.float64)
    x = np.resize(edges, size) * np.linspace(0.5, 1.5, size)
    x = x.astype(dtype)
    got = tf.nn.relu(tf.constant(x)).numpy()
    want = np.maximum(x, np.zeros((), dtype))
    assert got.dtype == dtype
    # compared in float32, exact for every dtype here: older NumPy's array_equal sees
    # bfloat16's NaNs as different
    got32, want32 = got.astype(np.float32), want.astype(np.float32)
    np.testing.assert_array_equal(got32, want32)
    np.testing.assert_array_equal(np.signbit(got32), np.signbit(want32))
    assert bool(calls) == (size >= nn._ZERO_PAGE_FROM and np.dtype(dtype) in nn._SIMD_MAXIMUM
                           and hasattr(mmap, "PROT_READ") and not large)
    got[...] = 3  # the result owns its memory: the next relu is unchanged
    np.testing.assert_array_equal(tf.nn.relu(tf.constant(x)).numpy().astype(np.float32), want32)
