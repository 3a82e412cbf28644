"""The API has one facade: request and response models are imported from ``bot.api``."""

from __future__ import annotations

import ast
from pathlib import Path

import bot.api

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = ("bot", "adapters", "genbot", "bench", "tests")


def imported_modules(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_models_are_imported_from_the_facade_only() -> None:
    inside = ROOT / "bot" / "api"
    offenders = {
        str(path.relative_to(ROOT))
        for package in PACKAGES
        for path in (ROOT / package).rglob("*.py")
        if not path.is_relative_to(inside)
        and any(name.startswith("bot.api.models") for name in imported_modules(path))
    }
    assert offenders == set()


def test_the_facade_exports_every_model() -> None:
    for module in ("models_chat", "models_tasks", "models_task_records", "models_diffusion"):
        source = (ROOT / "bot" / "api" / f"{module}.py").read_text(encoding="utf-8")
        classes = {
            node.name
            for node in ast.parse(source).body
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
        }
        missing = {name for name in classes if not hasattr(bot.api, name)}
        assert missing == set(), module
