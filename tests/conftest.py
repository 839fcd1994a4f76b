import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

# tests/op_table.py is shared by the test packages; it imports the family tables and
# the family tests import their helpers from tests/ops/.
sys.path.insert(0, str(Path(__file__).parent / "ops"))
sys.path.insert(0, str(Path(__file__).parent))

# The randomized tests (test_random_programs.py): a bounded run by default, in CI too;
# `--hypothesis-profile=long` for thousands of programs.
_COMMON = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow], derandomize=False)
settings.register_profile("ci", max_examples=100, **_COMMON)
settings.register_profile("long", max_examples=2500, **_COMMON)
settings.load_profile("ci")


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _husk_every_unread_value(monkeypatch):
    """Tapes keep the values of small ops whole (a Husk costs more than it saves); the
    tests husk every value a rule says it does not read, so a wrong declaration is an
    error in every test that reaches it (NOTE(saved-values) in tapeflow/tape.py)."""
    from tapeflow import tape

    monkeypatch.setattr(tape, "HUSK_AT_BYTES", 0)
