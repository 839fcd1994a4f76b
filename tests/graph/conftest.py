"""Every graph test runs twice: once with cold graphs (replayed by the plan interpreter)
and once with every graph compiled at its first replay (the generated code)."""

import pytest

from tapeflow.graph import replay


@pytest.fixture(autouse=True, params=["plan", "compiled"])
def replay_tier(request, monkeypatch):
    monkeypatch.setattr(replay, "COMPILE_AFTER", 10**9 if request.param == "plan" else 0)
    return request.param
