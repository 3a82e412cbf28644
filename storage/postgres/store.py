"""The :class:`PostgresStore`: genbot's storage on PostgreSQL, shared by many processes."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from storage.errors import StorageError
from storage.postgres.database import PostgresDatabase
from storage.postgres.pool import Connection
from storage.process import DEFAULT_LEASE_SECONDS, new_process_id
from storage.queries.base import Clock
from storage.sql.migrations import migrate
from storage.store import Store


class PostgresStore(Store):
    """:class:`storage.Store` on PostgreSQL, safe for many processes at once (see
    :mod:`storage.postgres.database`)."""

    db: PostgresDatabase

    @classmethod
    async def open(
        cls,
        url: str,
        *,
        clock: Clock = time.time,
        pool_size: int = 10,
        event_retention: float = 24 * 3600.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        process_id: str | None = None,
        statement_timeout: float | None = None,
    ) -> PostgresStore:
        """Connect to ``url`` (``postgresql://user[:password]@host:port/database``), apply every
        pending migration under the migration lock, and open a pool of up to ``pool_size``
        connections. ``clock`` gives timestamps (Unix seconds); jobs this handle creates or
        claims are leased to ``process_id`` (a fresh one by default) for ``lease_seconds``.
        With ``statement_timeout`` (seconds), the server cancels a longer statement and a call
        gives up a little later."""
        migrator = PostgresDatabase(url, pool_size=1)
        try:
            await migrate(migrator, clock=clock)
        except StorageError as error:
            reason = str(error).removeprefix("database error: ")
            raise StorageError(f"cannot open the database at {migrator.where}: {reason}") from error
        finally:
            await migrator.close()
        database = PostgresDatabase(url, pool_size=pool_size, statement_timeout=statement_timeout)
        return cls(
            database,
            clock,
            process_id=process_id or new_process_id(),
            lease_seconds=lease_seconds,
            event_retention=event_retention,
        )

    @property
    def where(self) -> str:
        """The server and database (no credentials), for messages and diagnostics."""
        return self.db.where

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[Connection]:
        """A pooled connection (autocommit, rows as dicts, ``%s`` placeholders): an escape
        hatch for benchmarks, diagnostics and tests; features use the typed methods."""
        async with self.db.connection() as conn:
            yield conn
