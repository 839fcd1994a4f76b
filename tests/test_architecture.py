"""docs/architecture.md, the map of the house, stays true: it names every module of the
package, its tables of rule kinds and effects are the catalog's (tapeflow/catalog.py),
and every module stays within the line budget (a longer one is split by concept, or
named in ALLOWED with its reason; at most two)."""

from __future__ import annotations

import re
from pathlib import Path

import tapeflow as tf
from tapeflow import catalog

PACKAGE = Path(tf.__file__).resolve().parent
PAGE = (PACKAGE.parents[1] / "docs" / "architecture.md").read_text()

BUDGET = 700
ALLOWED: dict[str, str] = {
}


def _modules() -> list[str]:
    return sorted(str(p.relative_to(PACKAGE)) for p in PACKAGE.rglob("*.py"))


def _between(marker: str) -> str:
    found = re.search(rf"<!-- {marker}:[^>]*-->\n(.*?)<!-- /{marker} -->", PAGE, re.S)
    assert found, f"docs/architecture.md has no <!-- {marker} --> block"
    return found.group(1)


def test_the_page_names_every_module():
    # A module is named by its file name, in the tree of its directory (graph/, ops/,
    # keras/) or as a path.
    names = set(re.findall(r"[\w/]*?(\w+\.py)\b", PAGE)) | set(re.findall(r"`(\w+)`", PAGE))
    missing = [m for m in _modules()
               if Path(m).name not in names and Path(m).stem not in names]
    assert not missing, f"modules docs/architecture.md does not name: {missing}"


def test_the_tables_of_the_catalog_are_generated_from_it():
    assert _between("rule-kinds") == catalog.markdown_table(), \
        "regenerate the table: python -c 'import tapeflow.catalog as c; print(c.markdown_table())'"
    assert _between("effects") == catalog.markdown_effects()


def test_every_module_stays_within_the_line_budget():
    over = {m: n for m in _modules()
            if (n := len((PACKAGE / m).read_text().splitlines())) > BUDGET}
    assert set(over) <= set(ALLOWED), f"modules over {BUDGET} lines: {over}"
    assert len(ALLOWED) <= 2
    stale = [m for m in ALLOWED if m not in over]
    assert not stale, f"allowed to be long but no longer is: {stale}"


def test_no_op_asks_which_interpreter_is_active():
    """Ops, Keras layers and control flow bind the same primitives whatever surrounds
    them: the recorders and the catalog decide (this page's "How to add a mode")."""
    pure = [p for p in _modules() if p.startswith(("ops/", "keras/"))] + \
        ["control_flow.py", "loops.py"]
    queries = re.compile(r"\b(current_stack|recorder_stack|recording|differentiating|taping|"
                         r"dynamic_shapes)\(|\.(differentiates|dynamic)\b")
    found = [(m, line.strip()) for m in pure
             for line in (PACKAGE / m).read_text().splitlines()
             if queries.search(line) and not line.strip().startswith("#")]
    assert not found, found


def test_no_bytecode_is_read():
    found = [m for m in _modules() if re.search(r"^\s*(import dis|from dis )",
                                                (PACKAGE / m).read_text(), re.M)]
    assert not found, found
