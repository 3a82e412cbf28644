"""The :class:`PostgresStore`: genbot's storage on PostgreSQL, shared by many processes."""

from __future__ import annotations

import time
from typing import Unpack

from storage.errors import StorageError
from storage.postgres.database import PostgresDatabase
from storage.queries.base import Identity
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
        pool_size: int = 10,
        statement_timeout: float | None = None,
        **identity: Unpack[Identity],
    ) -> PostgresStore:
        """Connect to ``url`` (``postgresql://user[:password]@host:port/database``), apply every
        pending migration under the migration lock, and open a pool of up to ``pool_size``
        connections; the server cancels a statement running longer than ``statement_timeout``
        seconds, and a call gives up a little later. ``identity``: see
        :class:`storage.queries.base.Identity`; the store's clock, unless one is given, is the
        server's (:class:`storage.sql.server_clock.ServerClock`), measured before this
        returns."""
        migrator = PostgresDatabase(url, pool_size=1)
        try:
            await migrate(migrator, clock=identity.get("clock", time.time))
        except StorageError as error:
            raise _not_opened(migrator, error) from error
        finally:
            await migrator.close()
        store = cls(
            PostgresDatabase(url, pool_size=pool_size, statement_timeout=statement_timeout),
            **identity,
        )
        try:
            await store.synced()
        except StorageError as error:
            await store.close()
            raise _not_opened(store.db, error) from error
        except BaseException:
            await store.close()
            raise
        return store


def _not_opened(db: PostgresDatabase, error: StorageError) -> StorageError:
    reason = str(error).removeprefix("database error: ")
    return StorageError(f"cannot open the database at {db.where}: {reason}")
