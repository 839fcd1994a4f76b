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
