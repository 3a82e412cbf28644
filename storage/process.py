"""A genbot process's identity as an owner of jobs."""

from __future__ import annotations

import hashlib
import os
import secrets
import socket

DEFAULT_LEASE_SECONDS = 10.0


def new_process_id() -> str:
    """``host-pid-random``: unique per process start, readable in ``genbot status``."""
    host = socket.gethostname().split(".")[0][:40] or "host"
    return f"{host}-{os.getpid()}-{secrets.token_hex(3)}"


def wakeup_channel(process_id: str) -> str:
    """The ``LISTEN``/``NOTIFY`` channel of a process (a short identifier)."""
    return "genbot_" + hashlib.sha256(process_id.encode()).hexdigest()[:24]
