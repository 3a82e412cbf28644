"""What every query class works with: the database, the clock, and the identity of this
process as an owner of jobs."""

from __future__ import annotations

import os
import secrets
import socket
import time
from collections.abc import Callable
from typing import TypedDict

from storage.sql.session import Database

Clock = Callable[[], float]
DEFAULT_LEASE_SECONDS = 10.0


def new_process_id() -> str:
    """``host-pid-random``: unique per process start, readable in ``genbot status``."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class Identity(TypedDict, total=False):
    """How a store opener passes :class:`Queries`' keywords on."""

    clock: Clock
    process_id: str | None
    lease_seconds: float
    event_retention: float


class Queries:
    """The base of the query classes, each one or a few ports of :mod:`storage.interfaces`
    on any :class:`Database`. Jobs this handle creates or claims are leased to ``process_id``
    (a fresh one by default) for ``lease_seconds``; inbound event ids are remembered for
    ``event_retention`` seconds."""

    def __init__(
        self,
        db: Database,
        clock: Clock = time.time,
        *,
        process_id: str | None = None,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        event_retention: float = 24 * 3600.0,
    ) -> None:
        self.db = db
        self._clock = clock
        self.process_id = process_id or new_process_id()
        self.lease_seconds = lease_seconds
        self.event_retention = event_retention
        self.shared = db.dialect.shared

    @property
    def closed(self) -> bool:
        """True once the store was closed."""
        return self.db.closed
