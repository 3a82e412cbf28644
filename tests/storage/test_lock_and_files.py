"""One process per SQLite database (an OS lock that dies with its process), and private files."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from storage import DatabaseInUse, ProcessLock, SqliteStore
from storage.lock import lock_path

HOLD = """
import sys, time
from pathlib import Path
from storage import ProcessLock
ProcessLock.acquire(Path(sys.argv[1]))
print("held", flush=True)
time.sleep(60)
"""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_second_process_is_refused_with_the_first_ones_pid(tmp_path: Path) -> None:
    database = tmp_path / "genbot.db"
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(database)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == "held\n"
        with pytest.raises(DatabaseInUse) as refused:
            ProcessLock.acquire(database)
        assert refused.value.pid == holder.pid
        assert f"in use by another genbot (pid {holder.pid})" in str(refused.value)
    finally:
        holder.kill()
        holder.communicate(timeout=10)
    lock = ProcessLock.acquire(database)
    assert lock_path(database).read_text() == f"{os.getpid()}\n"
    lock.release()
    lock.release()


async def test_the_database_and_a_new_folder_are_private_whatever_the_umask(
    tmp_path: Path,
) -> None:
    database = tmp_path / "new" / "genbot.db"
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)
    previous = os.umask(0)
    try:
        store = await SqliteStore.open(shared / "genbot.db")
        await store.close()
        store = await SqliteStore.open(database)
        await store.close()
        database.chmod(0o644)
        store = await SqliteStore.open(database)
        await store.close()
    finally:
        os.umask(previous)
    assert mode(database.parent) == 0o700
    assert mode(database) == 0o600
    assert mode(shared) == 0o755 and mode(shared / "genbot.db") == 0o600
