"""No package imports itself in a circle, counting imports made only for type checking.

A circle hidden under ``TYPE_CHECKING`` or inside a function still means the modules cannot be
read, tested or moved one at a time, so every ``import`` statement counts.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ["simulator", "bot", "storage", "bench", "adapters", "genbot"]


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def imports_of(path: Path, modules: set[str]) -> set[str]:
    """The package's modules that ``path`` imports (``from pkg import submodule`` counts as the
    submodule, not the package)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.add(submodule if submodule in modules else node.module)
    return found & modules


def import_graph(package: str) -> dict[str, set[str]]:
    paths = {module_name(path): path for path in (ROOT / package).rglob("*.py")}
    modules = set(paths)
    return {name: imports_of(path, modules) - {name} for name, path in paths.items()}


def circles(graph: dict[str, set[str]]) -> Iterator[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()

    def visit(node: str) -> Iterator[list[str]]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in sorted(graph[node]):
            if target not in index:
                yield from visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                yield sorted(group)

    for node in sorted(graph):
        if node not in index:
            yield from visit(node)


@pytest.mark.parametrize("package", PACKAGES)
def test_no_import_circle(package: str) -> None:
    assert list(circles(import_graph(package))) == []


def test_a_circle_is_found() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert list(circles(graph)) == [["a", "b", "c"]]
