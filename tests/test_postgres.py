"""The throwaway PostgreSQL of the tests says why it cannot start, so only its tests skip."""

from __future__ import annotations

import glob
import shutil
from pathlib import Path

import pytest

import tests.postgres
from tests.postgres import PostgresUnavailable, start_cluster


def test_missing_binaries_are_a_reason_to_skip_not_a_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tests.postgres, "binaries", lambda: tmp_path)
    with pytest.raises(PostgresUnavailable, match="initdb failed"):
        start_cluster()


def test_no_postgresql_installed_names_the_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    monkeypatch.setattr(glob, "glob", lambda _pattern: [])
    with pytest.raises(PostgresUnavailable, match="not installed"):
        tests.postgres.binaries()
