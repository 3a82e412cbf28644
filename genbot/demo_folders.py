"""The data folders of ``genbot demo``: a fresh temporary one per start, which names the process
that owns it, and the leftovers of demos that ended without deleting theirs (``kill -9``, a
crash), removed at the next start.

A folder is a leftover only when everything says genbot made it and its owner is gone: it is a
real directory (not a link) of the system's temporary folder named ``genbot-demo-…``, owned by
this user, holding an owner file :func:`claim` wrote, whose process no longer runs (or runs as
another program: the process id was reused, which its start time tells). Anything else, such as
a folder of an earlier version (no owner file) or of a demo still running, is left alone.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

PREFIX = "genbot-demo-"
OWNER_FILE = "genbot-demo.owner"
"""In a demo's temporary folder: its process id and start time (``/proc``), one line."""


def claim(folder: Path) -> None:
    """Mark ``folder`` as the data of this process's demo."""
    pid = os.getpid()
    (folder / OWNER_FILE).write_text(f"{pid} {_started(pid) or '-'}\n")


def remove_leftovers(temp: Path) -> list[Path]:
    """Delete the leftover demo folders in ``temp`` (see the module docstring); those
    deleted."""
    removed = []
    for folder in sorted(temp.glob(f"{PREFIX}*")):
        if _leftover(folder):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed


def _leftover(folder: Path) -> bool:
    try:
        if folder.is_symlink() or not folder.is_dir() or folder.stat().st_uid != os.getuid():
            return False
        pid_text, started = (folder / OWNER_FILE).read_text().split()
        pid = int(pid_text)
    except (OSError, ValueError):
        return False
    if pid <= 0 or pid == os.getpid():
        return False
    return _gone(pid, started)


def _gone(pid: int, started: str) -> bool:
    """Whether process ``pid``, started at ``started`` (``-``: unknown), has ended."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    now = _started(pid)
    return started != "-" and now is not None and now != started


def _started(pid: int) -> str | None:
    """When process ``pid`` started, in clock ticks since boot (``/proc``); None when unknown."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat.rpartition(")")[2].split()
    return fields[19] if len(fields) > 19 else None
