"""CPU seconds of processes, read from ``/proc`` (Linux): a process's own, and a PostgreSQL
server's with every backend it runs or has reaped."""

from __future__ import annotations

import os
from pathlib import Path

TICKS = os.sysconf("SC_CLK_TCK")


def _times(pid: int) -> tuple[int, int, list[str]]:
    """(own ticks, reaped children's ticks, the fields after the command name)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    fields = text[text.rindex(")") + 2 :].split()
    own = int(fields[11]) + int(fields[12])
    reaped = int(fields[13]) + int(fields[14])
    return own, reaped, fields


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds ``pid`` has used so far (0 once it is gone)."""
    try:
        own, _, _ = _times(pid)
    except (OSError, ValueError):
        return 0.0
    return own / TICKS


def server_cpu_seconds(server_pid: int) -> float:
    """CPU seconds of a server and its children (PostgreSQL's postmaster and backends): its
    own, its reaped children's, and its live children's so far."""
    try:
        own, reaped, _ = _times(server_pid)
    except (OSError, ValueError):
        return 0.0
    total = own + reaped
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            child, _, fields = _times(int(entry.name))
        except (OSError, ValueError):
            continue
        if int(fields[1]) == server_pid:
            total += child
    return total / TICKS


def postmaster_pid(data_dir: Path) -> int:
    """The PostgreSQL server's pid, from ``postmaster.pid`` in its data folder."""
    return int((data_dir / "postmaster.pid").read_text().split()[0])
