"""The package's import structure: no cycles, every module importable first, few
function-level imports (each saying why), and the recorder stack touched by core.py only.

The import graph is read from the source (module-level `import` and `from ... import`
statements, conditional ones included; those inside functions and classes are not
edges). `from .a import b` is an edge to `a`, and to `a.b` when b is a module; the
implicit import of a module's parent packages is not an edge (a package's __init__
importing its own modules is how packages are built).
"""

from __future__ import annotations

import ast
import re
import concurrent.futures
import subprocess
import sys
from pathlib import Path


import tapeflow
from tapeflow import ops

ROOT = Path(tapeflow.__file__).parent


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _is_package(name: str) -> bool:
    return MODULES[name].name == "__init__.py"


def _resolve(module: str, level: int, target: str | None) -> str:
    """The absolute name of a (possibly relative) import in `module`."""
    if level == 0:
        return target or ""
    base = module.split(".")
    if not _is_package(module):
        base = base[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([target] if target else []))


def _top_level_imports(tree: ast.Module) -> list:
    """Import statements outside function and class bodies."""
    found = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                found.append(child)
            elif not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef,
                                        ast.Lambda)):
                visit(child)

    visit(tree)
    return found


def _edges(module: str) -> set[str]:
    tree = ast.parse(MODULES[module].read_text())
    out = set()
    for node in _top_level_imports(tree):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        else:
            # `from base import name`: an edge to base.name where that is a module, and to
            # base itself where a name is one of its attributes.
            base = _resolve(module, node.level, node.module)
            subs = [f"{base}.{alias.name}" for alias in node.names]
            names = subs + ([base] if any(s not in MODULES for s in subs) else [])
        out.update(n for n in names if n in MODULES and n != module)
    return out


GRAPH = {m: _edges(m) for m in MODULES}


def _find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        path.append(m)
        for n in sorted(graph[m]):
            if state.get(n) == 1:
                return path[path.index(n):] + [n]
            if n not in state:
                cycle = visit(n)
                if cycle:
                    return cycle
        path.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state:
            cycle = visit(m)
            if cycle:
                return cycle
    return None


def test_the_graph_reader_sees_known_edges():
    assert "tapeflow.core" in GRAPH["tapeflow.batching"]
    assert "tapeflow.ops.structural" in GRAPH["tapeflow.ops.elementwise"]
    assert "tapeflow.ops" in GRAPH["tapeflow.math"]
    # tensor.py reaches core and ops from inside a function: not an edge
    assert not {"tapeflow.core", "tapeflow.ops"} & GRAPH["tapeflow.tensor"]
    assert _find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_import_graph_is_acyclic():
    cycle = _find_cycle(GRAPH)
    assert cycle is None, "import cycle: " + " -> ".join(cycle)


def test_each_ops_family_builds_only_on_earlier_ones():
    order = ["tapeflow.ops.simplify", "tapeflow.ops.structural", "tapeflow.ops.convert",
             "tapeflow.ops.windows", "tapeflow.ops.conv_banded", "tapeflow.ops.conv_phases"] + \
        [f.__name__ for f in ops.FAMILIES]
    assert sorted(order) == sorted(m for m in MODULES if m.startswith("tapeflow.ops."))
    for i, module in enumerate(order):
        later = set(order[i + 1:]) & GRAPH[module]
        assert not later, f"{module} imports {sorted(later)}, listed after it in ops.FAMILIES"


def _import_alone(module: str) -> str | None:
    done = subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True,
                          text=True, timeout=120)
    if done.returncode == 0:
        return None
    # A module of an optional extra (tapeflow.scipy, tapeflow.dask) may be missing its
    # dependency here: then its error must name the extra to install.
    last = done.stderr.strip().splitlines()[-1] if done.stderr.strip() else ""
    if last.startswith("ImportError") and "pip install 'tapeflow[" in last:
        return None
    return f"{module}: {done.stderr[-1500:]}"


def test_every_module_imports_first_in_a_fresh_interpreter():
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        failures = [f for f in pool.map(_import_alone, sorted(MODULES)) if f]
    assert not failures, "\n".join(failures)


def _top_level_ids(path: Path) -> set:
    return {(n.lineno, n.col_offset) for n in _top_level_imports(ast.parse(path.read_text()))}


def test_few_function_level_imports_each_saying_why():
    found = []
    for module, path in MODULES.items():
        source = path.read_text()
        lines = source.splitlines()
        top = _top_level_ids(path)
        for node in ast.walk(ast.parse(source)):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and \
                    (node.lineno, node.col_offset) not in top:
                found.append((module, node.lineno, lines[node.lineno - 1]))
    assert len(found) <= 3, found  # optional dependencies load through tapeflow/optional.py
    for module, lineno, line in found:
        assert "#" in line, f"{module}:{lineno}: a function-level import without a comment " \
                            f"naming the cycle or optional dependency it avoids: {line.strip()}"


def test_only_core_touches_the_recorder_stack():
    for module, path in MODULES.items():
        if module == "tapeflow.core":
            continue
        source = path.read_text()
        # `_state` as a whole word: Keras' metric API has update_state/reset_state
        assert not re.search(r"\b_state\b", source), f"{module} uses _state (core.py's alone)"
        assert "_REGISTRY" not in source, f"{module} uses _REGISTRY (core.py's alone)"
        if module != "tapeflow.scopes":  # its per-thread values are not recorders
            assert "threading.local" not in source, f"{module} uses threading.local"
