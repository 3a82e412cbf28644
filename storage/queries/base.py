"""What every query class works with: the database, the clock, and the identity of this
process as an owner of jobs."""

from __future__ import annotations

from collections.abc import Callable

from storage.sql.session import Database

Clock = Callable[[], float]


class Queries:
    """The base of the query classes: each implements one or a few ports of
    :mod:`storage.interfaces` on any :class:`Database`, each query written once."""

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        process_id: str,
        lease_seconds: float,
        event_retention: float,
    ) -> None:
        self.db = db
        self._clock = clock
        self._process_id = process_id
        self._lease_seconds = lease_seconds
        self.event_retention = event_retention
        """Seconds an inbound event id is remembered (platform retries come within minutes)."""

    @property
    def process_id(self) -> str:
        """This process's identity as an owner of jobs."""
        return self._process_id

    @property
    def lease_seconds(self) -> float:
        """How long a lease lasts without a heartbeat."""
        return self._lease_seconds

    @property
    def shared(self) -> bool:
        """Whether other processes may use this database at the same time (PostgreSQL);
        SQLite belongs to one process at a time."""
        return self.db.dialect.shared

    @property
    def closed(self) -> bool:
        """True once the store was closed."""
        return self.db.closed
