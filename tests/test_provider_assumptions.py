"""docs/provider.md's table of assumptions and the code stay in step: every row has an id the code
cites (``docs/provider.md#<id>``) and names tests that exist; the code cites no assumption the table
lacks."""

from __future__ import annotations

import ast
import re
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROVIDER_MD = ROOT / "docs" / "provider.md"
SECTION = "## What genbot assumes where the documentation is silent"
ROW = re.compile(r'^\| <a id="(?P<id>[a-z0-9-]+)"></a>`(?P=id)` \|(?P<rest>.*)\|\s*$')
TEST = re.compile(r"`(tests/[\w/]+\.py)::(test_\w+)`")
CITATION = re.compile(r"docs/provider\.md#([a-z0-9-]+)")
CODE = ("bot", "adapters", "genbot", "storage", "config")


@cache
def rows() -> dict[str, list[tuple[str, str]]]:
    """Assumption id → the tests its row names (file, function)."""
    text = PROVIDER_MD.read_text(encoding="utf-8")
    section = text[text.index(SECTION) :].split("\n## ", 1)[0]
    found: dict[str, list[tuple[str, str]]] = {}
    for line in section.splitlines():
        if line.startswith("| <a id="):
            match = ROW.match(line)
            assert match, f"a row without its id in the first column: {line[:80]}"
            assert match["id"] not in found, f"{match['id']} is in the table twice"
            tests_cell = match["rest"].rsplit("|", 1)[-1]
            found[match["id"]] = TEST.findall(tests_cell)
    return found


def citations() -> dict[str, list[str]]:
    """Assumption id → the files of genbot's code and configuration that cite it."""
    cited: dict[str, list[str]] = {}
    for folder in CODE:
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".toml") or "__pycache__" in path.parts:
                continue
            for found in CITATION.findall(path.read_text(encoding="utf-8")):
                cited.setdefault(found, []).append(str(path.relative_to(ROOT)))
    return cited


def test_the_table_lists_the_assumptions_with_tests() -> None:
    assert len(rows()) >= 30
    assert [name for name, tests in rows().items() if not tests] == []


def test_every_named_test_exists() -> None:
    missing = []
    for name, tests in rows().items():
        for file, function in tests:
            path = ROOT / file
            defined = (
                {
                    node.name
                    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                if path.exists()
                else set()
            )
            if function not in defined:
                missing.append(f"{name}: {file}::{function}")
    assert missing == []


def test_the_code_cites_every_assumption_and_only_those() -> None:
    cited = citations()
    assert sorted(set(rows()) - set(cited)) == [], "documented but not cited by the code"
    unknown = {name: files for name, files in cited.items() if name not in rows()}
    assert unknown == {}, "cited by the code but not documented"
