"""The :class:`SqliteStore`: genbot's storage in one SQLite file (the default backend)."""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Unpack

from storage.queries.base import Identity
from storage.sql.migrations import migrate
from storage.sqlite.database import SqliteDatabase
from storage.store import Store


class SqliteStore(Store):
    """:class:`storage.Store` on one SQLite file (see :mod:`storage.sqlite.database`)."""

    db: SqliteDatabase

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        busy_timeout: float = 5.0,
        statement_timeout: float | None = None,
        **identity: Unpack[Identity],
    ) -> SqliteStore:
        """Open (creating if needed) the database at ``path`` with every pending migration
        applied; a statement running longer than ``statement_timeout`` seconds is interrupted
        and fails. ``identity``: see :class:`storage.queries.base.Identity`."""
        database = await SqliteDatabase.open(Path(path), busy_timeout=busy_timeout)
        try:
            await migrate(database, clock=identity.get("clock", time.time))
            await database.time_limit(statement_timeout)
        except BaseException:
            await database.close()
            raise
        return cls(database, **identity)
