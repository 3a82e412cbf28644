"""Documentation points inside the repository: links resolve in a clone, the provider's own
documentation is not referred to by a path outside it, and the architecture map names files
that exist."""

from __future__ import annotations

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SKIPPED = {".git", ".venv", ".mypy_cache", ".ruff_cache", "build", "node_modules"}
LINK = re.compile(r"\]\(([^)\s]+)\)")
OUTSIDE = re.compile(r"shared/spec|genai-api\.md|\.\./shared")
MAPPED = re.compile(
    r"`((?:adapters|bench|bot|config|docs|genbot|simulator|storage|tests)/[^`\s]*)`"
)


def tracked(*suffixes: str) -> list[Path]:
    found = []
    for folder, subfolders, files in os.walk(ROOT):
        subfolders[:] = [
            name for name in subfolders if name not in SKIPPED and not name.endswith(".egg-info")
        ]
        found += [Path(folder, name) for name in files if Path(name).suffix in suffixes]
    return sorted(found)


def test_relative_links_in_markdown_resolve_inside_the_repository() -> None:
    broken = []
    for document in tracked(".md"):
        for target in LINK.findall(document.read_text(encoding="utf-8")):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            resolved = (document.parent / target.split("#")[0]).resolve()
            if not resolved.is_relative_to(ROOT) or not resolved.exists():
                broken.append(f"{document.relative_to(ROOT)}: {target}")
    assert broken == []


def test_nothing_refers_to_the_provider_documentation_outside_the_repository() -> None:
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in tracked(".py", ".md", ".toml", ".yaml", ".js", ".html")
        if path != Path(__file__).resolve()
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if OUTSIDE.search(line)
    ]
    assert found == []


def test_the_architecture_map_names_files_that_exist() -> None:
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    named = {name for name in MAPPED.findall(text) if "<" not in name}
    assert len(named) > 30
    missing = sorted(name for name in named if not list(ROOT.glob(name.rstrip("/"))))
    assert missing == []
