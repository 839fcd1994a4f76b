import sys
from pathlib import Path

# tests/op_table.py is shared by the test packages.
sys.path.insert(0, str(Path(__file__).parent))
