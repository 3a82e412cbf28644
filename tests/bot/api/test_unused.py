"""The provider client keeps no function nothing calls: each module-level function of
``bot/api`` is named somewhere in genbot's code (``bot``, ``adapters``, ``genbot``,
``storage``), not only by the tests and the package's exports."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
CODE = ("bot", "adapters", "genbot", "storage")


def _names_used() -> set[str]:
    used: set[str] = set()
    for package in CODE:
        for path in (ROOT / package).rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Name):
                    used.add(node.id)
                elif isinstance(node, ast.Attribute):
                    used.add(node.attr)
    return used


def test_every_function_of_the_client_is_used() -> None:
    used = _names_used()
    unused = [
        f"{path.relative_to(ROOT)}::{node.name}"
        for path in sorted((ROOT / "bot" / "api").glob("*.py"))
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name not in used
    ]
    assert unused == []
