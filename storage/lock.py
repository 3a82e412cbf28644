"""One SQLite database, one genbot process: :class:`ProcessLock` is an exclusive ``flock`` on
``<database>.lock``, which holds the owner's pid. The operating system releases it when the
process ends, however it ends, so a crash never leaves a stale lock behind."""

from __future__ import annotations

import contextlib
import fcntl
import os
from pathlib import Path

from storage.errors import StorageError
from storage.files import private_file


class DatabaseInUse(StorageError):
    """Another process holds the database's lock; ``pid`` is its process id when known."""

    def __init__(self, database: Path, pid: int | None) -> None:
        owner = f"pid {pid}" if pid is not None else "pid unknown"
        super().__init__(
            f"the database {database} is in use by another genbot ({owner}); stop it first, "
            "or give this one its own [storage] path"
        )
        self.pid = pid


def lock_path(database: Path) -> Path:
    """Where the lock of ``database`` lives (``genbot.db`` → ``genbot.db.lock``)."""
    return database.with_name(database.name + ".lock")


class ProcessLock:
    """Held from :meth:`acquire` until :meth:`release` (or the process's end)."""

    def __init__(self, path: Path, descriptor: int) -> None:
        self.path = path
        self._descriptor: int | None = descriptor

    @classmethod
    def acquire(cls, database: Path) -> ProcessLock:
        """Lock ``database`` for this process; :class:`DatabaseInUse` at once when another
        process holds it."""
        path = lock_path(database)
        private_file(path)
        descriptor = os.open(path, os.O_RDWR)
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            pid = _read_pid(descriptor)
            os.close(descriptor)
            raise DatabaseInUse(database, pid) from None
        except BaseException:
            os.close(descriptor)
            raise
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
        return cls(path, descriptor)

    def release(self) -> None:
        """Give the database up (releasing twice is harmless)."""
        descriptor, self._descriptor = self._descriptor, None
        if descriptor is not None:
            with contextlib.suppress(OSError):
                os.ftruncate(descriptor, 0)
            os.close(descriptor)


def holder(database: Path) -> int | None:
    """The pid of the genbot holding ``database``'s lock (0 when unknown), or None when no
    process holds it. Takes nothing: a shared probe released at once."""
    try:
        descriptor = os.open(lock_path(database), os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return _read_pid(descriptor) or 0
        fcntl.flock(descriptor, fcntl.LOCK_UN)
        return None
    finally:
        os.close(descriptor)


def _read_pid(descriptor: int) -> int | None:
    try:
        text = os.pread(descriptor, 32, 0).decode().strip()
        return int(text) if text else None
    except (OSError, ValueError, UnicodeDecodeError):
        return None
