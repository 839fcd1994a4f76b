"""Op-table rows for the ops in src/tapeflow/ops/nn_ops.py (see tests/op_table.py)."""

from __future__ import annotations

from op_table import NondiffRow, Row, args, away_from_zero, normal, uniform  # noqa: F401

ROWS: list = []
NONDIFF_ROWS: list = []
EXEMPT: dict = {}
