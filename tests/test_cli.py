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


def test_show_prints_what_a_saved_model_holds(tmp_path, capsys):
    import tapeflow as tf

    m = tf.Module()
    m.w = tf.Variable([[1.0], [2.0]], name="w")
    m.f = tf.function(lambda x: x @ m.w, input_signature=[tf.TensorSpec([None, 2], tf.float32)])
    m.g = tf.function(lambda x, scale: x * scale)
    m.g(tf.constant(1.0), scale=2.0)
    tf.saved_model.save(m, tmp_path / "m")
    assert main(["show", str(tmp_path / "m")]) == 0
    out = capsys.readouterr().out
    assert "  w  float32[2, 1]  trainable  (w:0)" in out
    assert "  f  input_signature=(float32[None, 2])" in out
    assert "graph 0: (float32[None, 2]), every size; 2 ops" in out
    assert "graph 0: (float32[]) with 2.0; 1 ops" in out
    assert "serving_default: f(x)" in out
    (tmp_path / "m" / "saved_model.json").write_text("{}")
    assert main(["show", str(tmp_path / "m")]) == 1
    assert "not a tapeflow SavedModel" in capsys.readouterr().out
