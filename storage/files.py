"""Files only their owner may read: genbot's databases hold webhook secrets, conversations and
users' images, so they are created ``0600`` and, when genbot creates their folder, it is
``0700``."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

PRIVATE_FILE = 0o600
PRIVATE_FOLDER = 0o700


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) ``0700`` when missing; an existing folder is left
    as it is (it may be the operator's working directory)."""
    if folder.is_dir():
        return
    folder.mkdir(mode=PRIVATE_FOLDER, parents=True, exist_ok=True)
    with contextlib.suppress(OSError):
        folder.chmod(PRIVATE_FOLDER)


def private_file(path: Path) -> None:
    """Make sure ``path`` exists and only its owner can read or write it (its folder created
    ``0700`` when missing). Files other tools create beside it (SQLite's ``-wal`` and ``-shm``)
    take the same mode from it."""
    private_folder(path.parent)
    descriptor = os.open(path, os.O_CREAT | os.O_WRONLY, PRIVATE_FILE)
    try:
        if os.fstat(descriptor).st_mode & 0o777 != PRIVATE_FILE:
            os.fchmod(descriptor, PRIVATE_FILE)
    finally:
        os.close(descriptor)
