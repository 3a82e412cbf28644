"""What the ports share: the clock, and this process's identity as an owner of jobs."""

from __future__ import annotations

import os
import secrets
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypedDict

Clock = Callable[[], float]
DEFAULT_LEASE_SECONDS = 10.0


def new_process_id() -> str:
    """``host-pid-random``: unique per process start, readable in ``genbot status``."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


class Identity(TypedDict, total=False):
    """Who a store acts as: ``clock`` (default ``time.time``), ``process_id`` (a fresh one),
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
