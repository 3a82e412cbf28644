"""The throwaway PostgreSQL of the tests says why it cannot start, so only its tests skip, and
leaves no server behind when its test process is killed."""

from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import tests.postgres
from tests.postgres import ROOT, PostgresUnavailable, start_cluster
from tests.postgres_watch import alive


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


def test_a_killed_test_process_leaves_no_server_behind() -> None:
    started = "from tests.postgres import start_cluster; print(start_cluster().folder, flush=True)"
    with subprocess.Popen(
        [sys.executable, "-c", started + "; import time; time.sleep(120)"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        cwd=ROOT,
    ) as child:
        assert child.stdout is not None
        folder = child.stdout.readline().strip()
        if not folder:
            child.kill()
            pytest.skip("PostgreSQL unavailable")
        server = int((Path(folder) / "data" / "postmaster.pid").read_text().split()[0])
        child.send_signal(signal.SIGKILL)
    deadline = time.monotonic() + 60
    while (alive(server) or Path(folder).exists()) and time.monotonic() < deadline:
        time.sleep(0.2)
    outlived, left = alive(server), Path(folder).exists()
    if outlived:
        os.kill(server, signal.SIGINT)
    shutil.rmtree(folder, ignore_errors=True)
    assert not outlived, "the server outlived its test process"
    assert not left, "the cluster's folder outlived its test process"
