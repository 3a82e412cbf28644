"""The watch that stops a test cluster whose test process died without stopping it.

``python -m tests.postgres_watch <pid> <folder> <command…>``, started in its own session (so a
signal to the test run's process group does not reach it), waits until process ``pid`` is gone
or ``folder`` was removed. If ``pid`` died first, it runs ``command`` (the cluster's immediate
stop) and removes ``folder``: a killed pytest leaves no server running.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from pathlib import Path

EVERY = 0.5
STOP_TIMEOUT = 60


def alive(pid: int) -> bool:
    """Whether process ``pid`` still exists (a zombie counts as gone)."""
    try:
        status = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return status.rsplit(")", 1)[1].split()[0] != "Z"


def watch(pid: int, folder: Path, stop: list[str]) -> None:
    """Wait for ``pid`` to die or ``folder`` to go; in the first case, run ``stop`` and
    remove ``folder``."""
    while folder.exists():
        if not alive(pid):
            subprocess.run(stop, capture_output=True, timeout=STOP_TIMEOUT)
            shutil.rmtree(folder, ignore_errors=True)
            return
        time.sleep(EVERY)


if __name__ == "__main__":
    watch(int(sys.argv[1]), Path(sys.argv[2]), sys.argv[3:])
