"""The benchmark suite (benchmarks/run.py, `tapeflow bench`) works without the peers:
every workload has tapeflow cases, tapeflow's results pass the suite's own checks at a
tiny size, a wrong result is caught, a missing peer is skipped, and the command runs
end to end. No timing is asserted: this machine's speed is not the test's business."""

from __future__ import annotations

import importlib
import json
import os
import pickle
import subprocess
import sys
from typing import Any, Iterator

import numpy as np
import pytest

from tapeflow import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCHMARKS = os.path.join(REPO, "benchmarks")
WORKLOADS = ["seed", "hvp", "chains", "memory", "jacobians", "lenet", "lstm", "rk4", "det",
             "char_lstm", "hand"]
CHEAP = ["chains", "hvp", "lstm", "memory", "rk4", "det", "char_lstm", "hand"]  # tiny sizes: quick


@pytest.fixture(scope="module")
def run_module() -> Iterator[Any]:
    """benchmarks/run.py imported here, with the environment restored afterwards:
    importing it pins thread variables, which other tests' subprocesses would inherit."""
    saved = dict(os.environ)
    sys.path.insert(0, BENCHMARKS)
    try:
        yield importlib.import_module("run")
    finally:
        os.environ.clear()
        os.environ.update(saved)
        sys.path.remove(BENCHMARKS)


@pytest.fixture(scope="module")
def suite(run_module: Any) -> Any:
    return importlib.import_module("suite")


def _module(name: str) -> Any:
    return importlib.import_module(f"suite.{name}")


def test_every_workload_is_found_and_has_tapeflow_cases(run_module: Any, suite: Any) -> None:
    found = [m.NAME for m in run_module.workloads()]
    assert found == WORKLOADS
    for name in WORKLOADS:
        module = _module(name)
        assert module.__doc__ and module.TITLE
        for size in ("tiny", "quick"):
            cases = module.cases(size)
            assert {c.framework for c in cases} <= set(module.common.FRAMEWORKS)
            groups = {c.group for c in cases}
            for group in groups:  # every problem has a tapeflow contestant
                assert any(c.framework == "tapeflow" for c in cases if c.group == group), group
            names = [(c.group, c.name) for c in cases]
            assert len(names) == len(set(names)), f"{name}: duplicate case names"


@pytest.mark.parametrize("name", CHEAP)
def test_tapeflow_cases_pass_their_checks(suite: Any, name: str) -> None:
    for case in _module(name).cases("tiny"):
        if case.framework in ("tapeflow", "numpy"):
            run = case.setup()
            case.check(run())  # first call: traces, where the case is traced
            case.check(run())  # and the replay


def test_a_wrong_result_is_caught(suite: Any) -> None:
    common = _module("common")
    case = next(c for c in _module("chains").cases("tiny") if c.framework == "tapeflow")
    good = np.asarray(case.setup()())
    case.check(good)
    with pytest.raises(common.WrongResult):
        case.check(good * (1 + 1e-6))
    with pytest.raises(common.WrongResult):
        case.check(good[:-1])
    with pytest.raises(common.WrongResult):
        case.check(np.full_like(good, np.nan))


def test_missing_peers_are_skipped(run_module: Any, suite: Any, monkeypatch: Any) -> None:
    common = _module("common")
    # As on a machine with only NumPy: every peer "not installed", whatever this one has.
    monkeypatch.setattr(common, "installed", lambda f: f in ("tapeflow", "numpy"))
    monkeypatch.setattr(common, "prepare", lambda f: "test")  # no global thread settings
    settings = run_module.Settings(repeats=2, min_samples=1, budget=0.05, sample_time=1e-4)
    cases = _module("chains").cases("tiny")
    rows = run_module.time_cases("chains", cases, settings, sys.stdout)
    run_module.add_ratios(rows)
    for row in rows:
        if row["framework"] in ("tapeflow", "numpy"):
            assert row["status"] == "ok", row
            assert row["median_s"] > 0 and row["first_call_s"] > 0
            assert row["x_numpy"] is not None and row["x_best_peer"] is None
        else:
            assert row["status"] == "skipped" and "not installed" in row["error"]


def test_memory_is_measured_in_a_child(run_module: Any, suite: Any, tmp_path: Any,
                                       capsys: Any) -> None:
    cases = _module("memory").cases("tiny")
    index = next(i for i, c in enumerate(cases) if c.framework == "tapeflow" and c.mode == "traced")
    path = tmp_path / "result.pkl"
    assert run_module.memory_child("memory", index, "tiny", str(path)) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["case"] == cases[index].name
    assert report["tracemalloc_bytes"] > 0
    with open(path, "rb") as fh:
        cases[index].check(pickle.load(fh))


def test_suite_command_runs(tmp_path: Any) -> None:
    results = tmp_path / "results.json"
    proc = subprocess.run(
        [sys.executable, os.path.join(BENCHMARKS, "run.py"), "--tiny", "--only", "chains",
         "--frameworks", "tapeflow,numpy", "--json", str(results)],
        cwd=REPO, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "| tapeflow function replay forward |" in proc.stdout
    rows = json.loads(results.read_text())["rows"]
    assert rows and all(r["status"] == "ok" for r in rows)
    assert {r["framework"] for r in rows} == {"tapeflow", "numpy"}


def test_bench_command_runs_the_suite(monkeypatch: Any) -> None:
    calls = []
    monkeypatch.setattr(cli.subprocess, "call", lambda cmd: calls.append(cmd) or 0)
    assert cli.main(["bench", "--quick", "--only", "hvp", "--json", "out.json"]) == 0
    (cmd,) = calls
    assert cmd[0] == sys.executable
    assert os.path.samefile(cmd[1], os.path.join(BENCHMARKS, "run.py"))
    assert cmd[2:] == ["--quick", "--only", "hvp", "--json", "out.json"]


def test_bench_outside_a_checkout_says_so(monkeypatch: Any, capsys: Any) -> None:
    monkeypatch.setattr(cli, "suite_script", lambda: None)
    assert cli.main(["bench"]) == 1
    assert "source checkout" in capsys.readouterr().out


def test_the_xla_summary_compares_a_case_with_its_jax_twin(run_module: Any) -> None:
    """An XLA case naming a JAX twin (the same program under JAX jit) is compared with it,
    not with a faster JAX program (an unrolled loop against lax.scan); a case naming none
    is compared with the fastest JAX jit case of its problem."""
    import io

    def row(case: str, framework: str, mode: str, median: float, twin: str = "") -> dict:
        return {"workload": "w", "group": "g", "case": case, "framework": framework,
                "mode": mode, "status": "ok", "median_s": median, "min_s": median,
                "first_call_s": 1.0, "jax_twin": twin,
                "by_round": {0: median, 1: 2 * median}}

    rows = [row("ours unrolled", "tapeflow", "xla", 0.010, twin="jax unrolled"),
            row("ours scan", "tapeflow", "xla", 0.003),
            row("jax scan", "jax", "jit", 0.0025),
            row("jax unrolled", "jax", "jit", 0.008)]
    out = io.StringIO()
    run_module.print_xla_summary(rows, out)
    lines = {line.split(" | ")[2]: line for line in out.getvalue().splitlines()
             if line.startswith("| w |")}
    assert "| jax unrolled |" in lines["ours unrolled"] and "1.25x" in lines["ours unrolled"]
    assert "| jax scan |" in lines["ours scan"] and "1.20x" in lines["ours scan"]


def test_the_per_round_ratio_pairs_samples_of_one_round(run_module: Any) -> None:
    """A slow round (both cases 3x slower) leaves the per-round ratio alone; rounds only
    one case ran in are left out."""
    ours = {"by_round": {0: 1.1, 1: 3.3, 2: 1.2, 3: 9.0}}
    theirs = {"by_round": {0: 1.0, 1: 3.0, 2: 1.0}}
    assert run_module.paired_ratio(ours, theirs) == pytest.approx(1.1)
    assert run_module.paired_ratio(ours, {}) is None
