"""The :class:`Store`: every storage port on one database, whichever backend it is."""

from __future__ import annotations

from types import TracebackType
from typing import Final, Self

from storage.queries.admission import AdmissionQueries
from storage.queries.conversations import ConversationQueries
from storage.queries.events import EventQueries
from storage.queries.jobs import JobQueries
from storage.queries.leasing import LeaseQueries
from storage.queries.ledger import LedgerQueries
from storage.queries.playground import PlaygroundQueries
from storage.queries.settings import SettingsQueries
from storage.queries.slack import SlackQueries
from storage.queries.tracking import TrackingQueries
from storage.queries.write_windows import WriteWindowQueries
from storage.sql.migrations import current_version

SQL_PROBE: Final = (
    "INSERT INTO storage_probes (process_id, probed_at) VALUES (?, ?)"
    " ON CONFLICT (process_id) DO UPDATE SET probed_at = excluded.probed_at"
)


class Store(
    JobQueries,
    AdmissionQueries,
    TrackingQueries,
    LeaseQueries,
    ConversationQueries,
    SettingsQueries,
    LedgerQueries,
    EventQueries,
    SlackQueries,
    PlaygroundQueries,
    WriteWindowQueries,
):
    """Every interface of :mod:`storage.interfaces` on one database (:class:`storage.Storage`):
    the query classes of :mod:`storage.queries`, each a port or two written once, together for
    the features that take one object for the few ports they declare.

    Open one with :meth:`storage.SqliteStore.open` or :meth:`storage.postgres.PostgresStore.open`;
    close it with ``await store.close()`` (or ``async with``). Every method is a coroutine;
    writes return after their commit; failures raise :class:`storage.StorageError`.
    """

    async def schema_version(self) -> int:
        """The database's schema version (the latest, once open)."""
        return await current_version(self.db)

    async def probe_write(self) -> None:
        """Upsert this process's probe row (see :meth:`storage.Storage.probe_write`)."""
        await self.db.execute(SQL_PROBE, (self.process_id, self._clock()), repeatable=True)

    async def close(self) -> None:
        """Finish the calls under way, then release the database; closing twice is harmless
        and any call after closing raises :class:`storage.StoreClosedError`."""
        await self.db.close()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.close()
