"""Bringing a database to the schema of this code: :func:`migrate`.

The applied versions are rows of ``schema_version`` (version, name, applied_at), the same table
on both backends since the first release. Each migration above the database's version runs in
its own transaction together with its row, so a crash leaves the database at the last complete
version. Processes that start together apply each migration once: PostgreSQL's run under an
advisory lock (the key every genbot has used), and each step re-checks the version inside its
transaction (SQLite's ``BEGIN IMMEDIATE`` serialises them). A database newer than this code is
refused.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from string import Template
from typing import Final

from storage.errors import StorageError
from storage.sql.schema import LATEST_VERSION, MIGRATIONS, TYPES, Migration
from storage.sql.session import Database, Session

log = logging.getLogger("genbot.storage")

MIGRATION_LOCK: Final = 0x67656E626F74
"""The lock held while migrating (``genbot`` in ASCII)."""
LOCK_WAIT_SECONDS: Final = 600.0
"""How long a process waits for another one's migrations before giving up."""
SQL_VERSIONS: Final = Template(
    "CREATE TABLE IF NOT EXISTS schema_version"
    " (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at $real NOT NULL)"
)
SQL_CURRENT: Final = "SELECT COALESCE(MAX(version), 0) AS version FROM schema_version"
SQL_RECORD: Final = "INSERT INTO schema_version (version, name, applied_at) VALUES (?, ?, ?)"


async def current_version(session: Session) -> int:
    """The schema version (0 for an empty database); ``schema_version`` must exist."""
    row = await session.fetch_one(SQL_CURRENT)
    return 0 if row is None else int(row["version"])


async def migrate(
    db: Database, *, target: int = LATEST_VERSION, clock: Callable[[], float] = time.time
) -> int:
    """Bring ``db`` up to ``target`` (default: the latest); the resulting version."""
    async with db.lock(MIGRATION_LOCK, wait=LOCK_WAIT_SECONDS, name="the migration lock"):
        await db.execute(SQL_VERSIONS.substitute(TYPES[db.dialect.name]), repeatable=True)
        version = await current_version(db)
        if version > LATEST_VERSION:
            raise StorageError(
                f"database schema version {version} is newer than this genbot supports "
                f"({LATEST_VERSION}); upgrade genbot"
            )
        for migration in MIGRATIONS:
            if not version < migration.version <= target:
                continue

            async def step(tx: Session, migration: Migration = migration) -> bool:
                if await current_version(tx) >= migration.version:
                    return False
                for statement in migration.statements(tx.dialect):
                    await tx.execute(statement)
                await tx.execute(SQL_RECORD, (migration.version, migration.name, clock()))
                return True

            if await db.transaction(step):
                log.info(
                    "database migrated to schema version %d (%s)", migration.version, migration.name
                )
            version = migration.version
    return version
