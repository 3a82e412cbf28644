"""Retention's records: how long each kind of data is kept, and what a purge deleted."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Cutoffs:
    """Per kind, the time (Unix seconds) before which its rows go; None keeps them all.
    ``conversations`` by their last message, ``job_results`` (finished jobs, their records and
    message links) by when they were asked for, ``images`` (the playground's stored images) by
    when they were stored."""

    conversations: float | None = None
    job_results: float | None = None
    images: float | None = None


@dataclass(frozen=True)
class Purged:
    """How many rows of each kind one purge deleted."""

    conversations: int = 0
    job_results: int = 0
    images: int = 0
    processes: int = 0
    """Rows of processes gone for a day (:data:`storage.queries.retention.GONE_PROCESS_SECONDS`)."""


@dataclass(frozen=True)
class KeptAbout:
    """What the store keeps about one user on one platform: ``kinds``, how many of each kind of
    their data (:data:`storage.queries.user_data.USER_DATA`'s kinds of that platform, in its
    order); ``running``, their unfinished jobs (which a deletion leaves); ``banned_until``, the
    end of their latest ban (Unix seconds; 0: never banned)."""

    kinds: dict[str, int]
    running: int = 0
    banned_until: float = 0.0
