"""The command line: `tapeflow demo` reproduces the seed documents' numbers,
and the dispatch benchmark runs end to end in its quick mode (`tapeflow bench`, the
whole suite, is tested in test_bench_suite.py)."""

from __future__ import annotations

import os
import subprocess
import sys

from tapeflow.cli import main

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_demo_prints_documented_values(capsys):
    status = main(["demo"])
    out = capsys.readouterr().out
    assert status == 0, out
    assert "MISMATCH" not in out
    assert "4.4417057" in out
    assert "10.094786" in out


def test_dispatch_benchmark_quick_runs(tmp_path):
    # --quick keeps this to a few seconds; the full run is for humans.
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "dispatch.py"), "--quick",
         "--json", str(results)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "us/op" in proc.stdout
    assert results.exists()
