"""What the ports share: the clock, and this process's identity as an owner of jobs."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

Clock = Callable[[], float]
Observe = Callable[[float, float, float], None]
"""Told a round trip to the database: this process's clock when it was sent, the server's
clock read in it, this process's clock when it was answered."""
DEFAULT_LEASE_SECONDS = 10.0


def new_process_id() -> str:
    """``host-pid-random``: unique per process start, readable in ``genbot status``."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class Identity(TypedDict, total=False):
    """Who a store acts as: ``clock``, the wall clock it stamps and compares stored times
    with (used as given; by default, on a database with a server of its own (PostgreSQL) the
    server's, :class:`storage.sql.server_clock.ServerClock`, which the store measures and its
    lease heartbeat keeps in line, else ``time.time``), ``process_id`` (a fresh one),
    ``lease_seconds`` (10) and ``event_retention`` (seconds an inbound event id is
    remembered: a day)."""

    clock: Clock
    process_id: str | None
    lease_seconds: float
    event_retention: float


@dataclass(frozen=True)
class Owner:
    """This process as an owner of jobs, one value shared by the ports that lease or claim for
    it (admission, delivery claims, leasing, the playground's commands)."""

    process_id: str
    lease_seconds: float
    """How long a lease lasts without a heartbeat."""
