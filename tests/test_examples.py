"""Every script in examples/ runs to the end (its --quick size), so none rots; each
script checks its own results (assertions against the other mode, SciPy's finite
differences, or known values) and has a docstring saying what it shows."""

from __future__ import annotations

import ast
import concurrent.futures
import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = sorted((Path(__file__).resolve().parent.parent / "examples").glob("*.py"))


def test_there_are_examples_and_each_says_what_it_shows():
    assert len(EXAMPLES) >= 10
    for path in EXAMPLES:
        doc = ast.get_docstring(ast.parse(path.read_text()))
        assert doc and "Run: python examples/" in doc, f"{path.name}: no docstring with Run:"


def _run(path: Path) -> tuple[str, int, str]:
    env = dict(os.environ, PYTHONWARNINGS="ignore")
    done = subprocess.run([sys.executable, str(path), "--quick"], capture_output=True,
                          text=True, timeout=600, env=env)
    return path.name, done.returncode, done.stdout[-2000:] + done.stderr[-2000:]


def test_every_example_runs():
    pytest.importorskip("scipy")  # the SciPy examples
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        results = list(pool.map(_run, EXAMPLES))
    failed = [f"{name} (exit {code}):\n{out}" for name, code, out in results if code != 0]
    assert not failed, "\n\n".join(failed)
