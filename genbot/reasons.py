"""One-line accounts of failures, for users (no traceback, no exception repr)."""

from __future__ import annotations

import os
import socket
import sqlite3

PLAIN_ERRORS: tuple[type[BaseException], ...] = (OSError, ValueError, RuntimeError, sqlite3.Error)
"""Errors whose message reads well alone; others are prefixed with their type name."""
PLAIN_MODULES = ("adapters", "bot", "storage", "discord", "slack_sdk", "slack_bolt", "aiohttp")


class StartupError(Exception):
    """genbot could not start; ``str(error)`` is one line for the user (what failed and why)."""


def reason(error: BaseException) -> str:
    """``error`` in one line: its message, or its type name when the message is empty or does not
    read well alone (``KeyError: 'x'``)."""
    if isinstance(error, TimeoutError):
        return "timed out"
    strerror = error.strerror if isinstance(error, OSError) else None
    text = " ".join((strerror or str(error)).split())
    if not text:
        return type(error).__name__
    plain = isinstance(error, PLAIN_ERRORS) or type(error).__module__.split(".")[0] in PLAIN_MODULES
    return text if plain else f"{type(error).__name__}: {text}"


def os_reason(error: OSError) -> str:
    """The system's words for ``error`` ("Address already in use")."""
    if isinstance(error, socket.gaierror) or not error.errno or error.errno < 0:
        return error.strerror or str(error)
    return os.strerror(error.errno)
