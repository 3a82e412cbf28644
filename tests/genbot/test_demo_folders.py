"""The demo's temporary folders: a folder names the process that owns it, and only folders genbot
made whose owner is gone are deleted at the next start."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from genbot.demo_folders import OWNER_FILE, PREFIX, _started, claim, remove_leftovers


def ended_pid() -> int:
    """The id of a process that has ended (and was waited for)."""
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait(timeout=60)
    return child.pid


def folder(temp: Path, name: str, owner: str | None) -> Path:
    made = temp / name
    made.mkdir()
    (made / "genbot.db").write_bytes(b"data")
    if owner is not None:
        (made / OWNER_FILE).write_text(owner)
    return made


def test_only_folders_genbot_made_whose_owner_is_gone_are_deleted(tmp_path: Path) -> None:
    dead, alive = ended_pid(), os.getppid()
    started = _started(alive)
    assert started is not None
    ended = folder(tmp_path, f"{PREFIX}ended", f"{dead} 12345\n")
    reused = folder(tmp_path, f"{PREFIX}reused", f"{alive} {int(started) + 1}\n")
    kept = {
        "running": folder(tmp_path, f"{PREFIX}running", f"{alive} {started}\n"),
        "running, start unknown": folder(tmp_path, f"{PREFIX}unknown", f"{alive} -\n"),
        "no owner file (an earlier genbot's, or not genbot's)": folder(
            tmp_path, f"{PREFIX}unowned", None
        ),
        "an owner file that is not one": folder(tmp_path, f"{PREFIX}garbled", "not a pid\n"),
        "another name": folder(tmp_path, "other-ended", f"{dead} 12345\n"),
    }
    link = tmp_path / f"{PREFIX}link"
    link.symlink_to(folder(tmp_path, "elsewhere", f"{dead} 12345\n"))

    removed = remove_leftovers(tmp_path)

    assert removed == [ended, reused]
    assert not ended.exists() and not reused.exists()
    assert [why for why, path in kept.items() if not (path / "genbot.db").exists()] == []
    assert (link / "genbot.db").exists(), "a link is not followed"


def test_a_claimed_folder_is_kept_while_its_process_runs(tmp_path: Path) -> None:
    mine = folder(tmp_path, f"{PREFIX}mine", None)
    claim(mine)
    pid, started = (mine / OWNER_FILE).read_text().split()
    assert (int(pid), started) == (os.getpid(), _started(os.getpid()))

    assert remove_leftovers(tmp_path) == []
    assert (mine / "genbot.db").exists()
