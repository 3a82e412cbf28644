"""What every port's queries work with: the database, the clock, and the identity of this
process as an owner of jobs."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol, TypedDict

from storage.sql.session import Database

Clock = Callable[[], float]
DEFAULT_LEASE_SECONDS = 10.0


def new_process_id() -> str:
    """``host-pid-random``: unique per process start, readable in ``genbot status``."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class Identity(TypedDict, total=False):
    """Who a store acts as: ``clock`` (default ``time.time``), ``process_id`` (a fresh one),
    ``lease_seconds`` (10) and ``event_retention`` (a day); see :class:`Queries`."""

    clock: Clock
    process_id: str | None
    lease_seconds: float
    event_retention: float


class Queries(Protocol):
    """The base of storage's ports. Each port is a protocol that carries its one
    implementation, portable SQL on :attr:`db` (:mod:`storage.queries`): a feature declares
    the ports it uses, and :class:`storage.Store` is all of them on one database. Jobs this
    handle creates or claims are leased to :attr:`process_id` (a fresh one by default) for
    :attr:`lease_seconds`; inbound event ids are remembered for ``event_retention`` seconds."""

    if TYPE_CHECKING:  # read-only for the ports, so that each backend's store narrows it

        @property
        def db(self) -> Database:
            """The database the queries run on."""

    _clock: Clock
    process_id: str
    """This process's identity as an owner of jobs."""
    lease_seconds: float
    """How long a lease lasts without a heartbeat."""
    event_retention: float
    shared: bool
    """Whether other processes may use this database at the same time (PostgreSQL); SQLite
    belongs to one process at a time."""
