"""The :class:`Store`: one database and its ports, whichever backend it is."""

from __future__ import annotations

import time
from types import TracebackType
from typing import Final, Self, Unpack

from storage.queries.admission import JobAdmission
from storage.queries.answer_places import AnswerPlaces
from storage.queries.archive import JobArchive
from storage.queries.audit import AuditLog
from storage.queries.base import DEFAULT_LEASE_SECONDS, Clock, Identity, Owner, new_process_id
from storage.queries.branches import ConversationBranches
from storage.queries.conversations import AnswerStops, ConversationLocks, ConversationStore
from storage.queries.events import EventDedupe
from storage.queries.feedback import AnswerFeedback
from storage.queries.jobs import JobWriter, MessageLinks
from storage.queries.leasing import JobLeasing
from storage.queries.ledger import UsageLedger
from storage.queries.media import HostedMedia
from storage.queries.moderation import ModerationStore
from storage.queries.playground import PlaygroundHistory
from storage.queries.preferences import Preferences
from storage.queries.retention import Retention
from storage.queries.settings import SettingsStore
from storage.queries.slack import SlackInstallations
from storage.queries.tracking import DeliveryClaims, JobHistory, JobTracking
from storage.queries.viewing import ChannelsInView
from storage.queries.write_windows import WriteWindows
from storage.sql.migrations import current_version
from storage.sql.server_clock import ServerClock
from storage.sql.session import Database


def default_clock(db: Database) -> Clock:
    """A store's clock when none is given: the database server's where it has one (several
    hosts share it: see :class:`ServerClock`), else this host's wall clock."""
    return ServerClock() if db.dialect.server_time is not None else time.time


SQL_PROBE: Final = (
    "INSERT INTO storage_probes (process_id, probed_at) VALUES (?, ?)"
    " ON CONFLICT (process_id) DO UPDATE SET probed_at = excluded.probed_at"
)


class Store:
    """One database and its ports, each a class of its own (:mod:`storage.queries`): what
    the composition root opens and closes, and whose ports it hands to each feature.

    Open one with :meth:`storage.SqliteStore.open` or :meth:`storage.postgres.PostgresStore.open`;
    close it with ``await store.close()`` (or ``async with``).
    """

    db: Database

    def __init__(self, db: Database, **identity: Unpack[Identity]) -> None:
        self.db = db
        self.clock = clock = identity.get("clock") or default_clock(db)
        """The wall clock every port stamps and compares stored times with (see
        :class:`storage.queries.base.Identity`)."""
        self.owner = owner = Owner(
            identity.get("process_id") or new_process_id(),
            identity.get("lease_seconds", DEFAULT_LEASE_SECONDS),
        )
        self.jobs = JobWriter(db, clock)
        self.message_links = MessageLinks(db)
        self.admission = JobAdmission(db, clock, owner)
        self.tracking = JobTracking(db, clock)
        self.history = JobHistory(db)
        self.archive = JobArchive(db)
        self.claims = DeliveryClaims(db, clock, owner)
        self.leasing = JobLeasing(
            db, clock, owner, observe=clock.observe if isinstance(clock, ServerClock) else None
        )
        """Shares :attr:`owner` with :attr:`admission`, :attr:`claims` and
        :attr:`playground`: a job this process creates, claims or takes over is leased to it."""
        self.conversations = ConversationStore(db, clock)
        self.conversation_locks = ConversationLocks(db)
        self.answer_stops = AnswerStops(db)
        self.answer_places = AnswerPlaces(db, clock)
        self.branches = ConversationBranches(db, clock)
        self.feedback = AnswerFeedback(db, clock)
        self.settings = SettingsStore(db, clock)
        self.ledger = UsageLedger(db, clock)
        self.dedupe = EventDedupe(db, clock, identity.get("event_retention", 24 * 3600.0))
        self.installations = SlackInstallations(db, clock)
        self.channels_in_view = ChannelsInView(db, clock)
        self.write_windows = WriteWindows(db, clock)
        self.playground = PlaygroundHistory(db, clock, owner, lambda: self.leasing.released)
        self.moderation = ModerationStore(db, clock)
        self.audit = AuditLog(db, clock)
        self.retention = Retention(db, clock)
        self.media = HostedMedia(db, clock)
        self.preferences = Preferences(db, clock)

    async def synced(self) -> None:
        """Measure the store's clock against the database server's when it is a
        :class:`ServerClock` (the backends' ``open`` does, before anything is stamped)."""
        if isinstance(self.clock, ServerClock):
            await self.clock.measure(self.db)

    async def schema_version(self) -> int:
        """The database's schema version (the latest, once open)."""
        return await current_version(self.db)

    async def probe_write(self) -> None:
        """Commit a small write (this process's latest probe, one row per process): raises
        :class:`storage.StorageError` when the database cannot take writes now (unreachable,
        disk full, read-only)."""
        await self.db.execute(SQL_PROBE, (self.owner.process_id, self.clock()), repeatable=True)

    async def close(self) -> None:
        """Finish the calls under way, then release the database; closing twice is harmless
        and any call after closing raises :class:`storage.StoreClosedError`. The write slots
        given back are told first (for a bounded time)."""
        if not self.db.closed:
            await self.write_windows.tell_given_back()
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
