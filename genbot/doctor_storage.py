"""``genbot doctor``'s look at an existing SQLite database, read-only: that it is a database,
passes ``PRAGMA quick_check``, and has a schema this genbot can run (not a newer one, not
someone else's tables). ``genbot run`` would fail on each of these."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from storage import LATEST_VERSION
from storage.lock import holder


def database_problem(path: Path) -> str | None:
    """Why ``genbot run`` cannot use the existing database at ``path``, or None."""
    try:
        with contextlib.closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
            checked = [row[0] for row in db.execute("PRAGMA quick_check").fetchall()]
            if checked != ["ok"]:
                first = str(checked[0]).splitlines()[-1] if checked else "no answer"
                return (
                    f"{path} is damaged (PRAGMA quick_check: {first}); restore it from a "
                    "backup or move it away"
                )
            tables = {row[0] for row in db.execute("SELECT name FROM sqlite_master")}
            version = _version(db) if "schema_version" in tables else None
    except sqlite3.DatabaseError as error:
        if "not a database" in str(error) or "malformed" in str(error):
            return f"{path} is not a genbot database ({error}); move it away or fix [storage] path"
        return f"cannot read {path} ({error}): check its permissions and [storage] path"
    if version is None and tables - {"sqlite_sequence"}:
        return (
            f"{path} holds tables genbot did not create ({', '.join(sorted(tables)[:3])}…); "
            "point [storage] path at genbot's own database"
        )
    if version is not None and version > LATEST_VERSION:
        return (
            f"{path} has schema version {version}, newer than this genbot's ({LATEST_VERSION}): "
            "run the genbot that wrote it, or upgrade this one"
        )
    return None


def database_note(path: Path) -> str:
    """What to say about a usable database: its path, and who runs on it."""
    pid = holder(path)
    if pid is None:
        return f"database at {path}"
    running = f"pid {pid}" if pid else "pid unknown"
    return f"database at {path} (in use by genbot, {running}: a second genbot run will refuse)"


def _version(db: sqlite3.Connection) -> int:
    row = db.execute("SELECT MAX(version) FROM schema_version").fetchone()
    return int(row[0] or 0)
