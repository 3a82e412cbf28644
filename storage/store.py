"""The :class:`Store`: every storage port on one database, whichever backend it is."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Final, Self, Unpack

from storage.queries.admission import JobAdmission
from storage.queries.base import DEFAULT_LEASE_SECONDS, Identity, new_process_id
from storage.queries.conversations import ConversationLocks, ConversationStore
from storage.queries.events import EventDedupe
from storage.queries.jobs import JobWriter, MessageLinks, TaskLookup
from storage.queries.leasing import JobLeasing
from storage.queries.ledger import UsageLedger
from storage.queries.moderation import ModerationStore
from storage.queries.playground import PlaygroundQueries
from storage.queries.settings import SettingsStore
from storage.queries.slack import SlackInstallations
from storage.queries.tracking import DeliveryClaims, JobHistory, JobTracking
from storage.queries.write_windows import WriteWindowQueries
from storage.sql.migrations import current_version
from storage.sql.session import Database

SQL_PROBE: Final = (
    "INSERT INTO storage_probes (process_id, probed_at) VALUES (?, ?)"
    " ON CONFLICT (process_id) DO UPDATE SET probed_at = excluded.probed_at"
)


class Store(
    JobWriter,
    TaskLookup,
    MessageLinks,
    JobAdmission,
    JobTracking,
    JobHistory,
    DeliveryClaims,
    JobLeasing,
    ConversationStore,
    ConversationLocks,
    SettingsStore,
    UsageLedger,
    EventDedupe,
    SlackInstallations,
    WriteWindowQueries,
    PlaygroundQueries,
):
    """Every port of storage on one database, each query written once (:mod:`storage.queries`):
    what the composition root opens and closes, and hands to each feature as the few ports it
    declares.

    Open one with :meth:`storage.SqliteStore.open` or :meth:`storage.postgres.PostgresStore.open`;
    close it with ``await store.close()`` (or ``async with``).
    """

    db: Database

    def __init__(self, db: Database, **identity: Unpack[Identity]) -> None:
        self.db = db
        self._clock = identity.get("clock", time.time)
        self.process_id = identity.get("process_id") or new_process_id()
        self.lease_seconds = identity.get("lease_seconds", DEFAULT_LEASE_SECONDS)
        self.event_retention = identity.get("event_retention", 24 * 3600.0)
        self.shared = db.dialect.shared
        self.moderation = ModerationStore(db, self._clock)
        """Moderation's rules, offences and bans (:mod:`storage.queries.moderation`)."""

    async def schema_version(self) -> int:
        """The database's schema version (the latest, once open)."""
        return await current_version(self.db)

    async def probe_write(self) -> None:
        """Commit a small write (this process's latest probe, one row per process): raises
        :class:`storage.StorageError` when the database cannot take writes now (unreachable,
        disk full, read-only)."""
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
