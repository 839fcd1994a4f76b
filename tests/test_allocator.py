"""NOTE(allocator) in tapeflow/allocator.py: importing tapeflow keeps freed array memory
in the process (glibc), so a computation repeated on large arrays does not fault its
pages in again at every call; the user can opt out."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tapeflow import allocator

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
