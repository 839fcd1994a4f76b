import sys
from pathlib import Path

# tests/op_table.py is shared by the test packages; it imports the family tables and
# the family tests import their helpers from tests/ops/.
sys.path.insert(0, str(Path(__file__).parent / "ops"))
sys.path.insert(0, str(Path(__file__).parent))
