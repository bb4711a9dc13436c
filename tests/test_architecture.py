"""The package's own import graph: no cycles, no private name imported across modules.

Checked statically (``ast``), over every module of ``nczarr``, including imports made
inside functions: a lazy import hides a cycle from the interpreter, not from a reader.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "nczarr"


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(module: str, node: ast.ImportFrom) -> str:
    """The absolute module an ``ImportFrom`` names, seen from ``module``."""
    if node.level == 0:
        return node.module or ""
    is_package = MODULES[module].name == "__init__.py"
    base = module.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, node.module] if node.module else base)


def _imports(module: str) -> list[tuple[str, str | None, int]]:
    """``(target module, imported name or None, line)`` for each nczarr import."""
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    found: list[tuple[str, str | None, int]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names if a.name in MODULES]
        elif isinstance(node, ast.ImportFrom):
            target = _resolve(module, node)
            if target.split(".")[0] != "nczarr":
                continue
            for alias in node.names:
                sub = f"{target}.{alias.name}"
                if sub in MODULES:  # ``from . import maps`` imports a module
                    found.append((sub, None, node.lineno))
                else:
                    found.append((target, alias.name, node.lineno))
    return found


def _graph() -> dict[str, set[str]]:
    """Module -> the nczarr modules it imports, at top level or inside functions."""
    graph: dict[str, set[str]] = {}
    for module in MODULES:
        edges: set[str] = set()
        for target, _name, _line in _imports(module):
            edges.add(target)
        graph[module] = {t for t in edges if t in MODULES and t != module}
    return graph


def test_every_module_is_seen() -> None:
    assert "nczarr.errors" in MODULES and len(MODULES) > 20


def test_no_private_name_is_imported_from_another_module() -> None:
    offenders = [
        f"{module}:{line} imports {name} from {target}"
        for module in MODULES
        for target, name, line in _imports(module)
        if name is not None and name.startswith("_") and not name.startswith("__")
    ]
    assert offenders == []


def test_no_import_cycles() -> None:
    graph = _graph()
    cycles: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> None:
        state[node] = 1
        stack.append(node)
        for succ in sorted(graph[node]):
            if state.get(succ) == 1:
                cycles.append([*stack[stack.index(succ) :], succ])
            elif succ not in state:
                visit(succ)
        stack.pop()
        state[node] = 2

    for module in sorted(graph):
        if module not in state:
            visit(module)
    assert cycles == []
