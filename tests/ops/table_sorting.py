"""Op-table rows of src/tapeflow/ops/sorting.py."""

from __future__ import annotations

ROWS: list = []
NONDIFF_ROWS: list = []
EXEMPT: dict = {}
