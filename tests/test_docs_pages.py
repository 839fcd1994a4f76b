"""Every ```python block of the documentation site (docs/*.md) runs, each page's blocks
in order in one namespace, as a reader would run them. A block whose first line is a
comment starting "# not run:" (one that needs a remote cluster) is skipped, with that
reason."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parent.parent / "docs"
BLOCK = re.compile(r"^( *)```python\n(.*?)^\1```", re.S | re.M)


def _blocks(page: Path) -> list[str]:
    out = []
    for indent, body in BLOCK.findall(page.read_text()):
        lines = [line[len(indent):] for line in body.splitlines()]
        out.append("\n".join(lines))
    return out


PAGES = sorted(p for p in DOCS.glob("*.md") if _blocks(p))


@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_page_code_runs(page, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": f"docs_{page.stem}"}
    for i, code in enumerate(_blocks(page)):
        if code.lstrip().startswith("# not run:"):
            continue
        try:
            exec(compile(code, f"{page.name} block {i + 1}", "exec"), namespace)
        except Exception as e:  # the page and block in the failure, not a bare traceback
            raise AssertionError(f"{page.name}, code block {i + 1} failed: "
                                 f"{type(e).__name__}: {e}") from e


def test_the_site_lists_every_page():
    nav = (DOCS.parent / "mkdocs.yml").read_text()
    missing = [p.name for p in DOCS.glob("*.md") if p.name not in nav]
    assert not missing, f"pages not in mkdocs.yml's nav: {missing}"
