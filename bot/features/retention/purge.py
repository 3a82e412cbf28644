"""The purge: every :data:`PURGE_SECONDS` each process asks whether it is the one to purge this
hour (:meth:`storage.Retention.purge` and :meth:`storage.AuditLog.purge` each elect one per hour
in the shared database; the retention purge runs under the cluster's lock), and that one deletes
what is older than each kind's ``[storage.keep_days]`` and the processes gone for a day; hosted
uploads past theirs are removed from the shared database too (by any process: the deletion is
idempotent)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Final, Protocol

from bot.features.audit import AuditTrail
from bot.kernel import KeepDays
from storage import Cutoffs, Purged, Retention, StorageError

log = logging.getLogger("genbot.retention")

PURGE_SECONDS: Final = 600.0
DAY: Final = 86400.0


class HostedUploads(Protocol):
    """Images users attached, hosted for the provider (:class:`bot.kernel.MediaHost`)."""

    async def sweep(self, max_age: float) -> int:
        """Remove the images kept longer than ``max_age`` seconds (or than they are served);
        how many."""
        ...


class RetentionPurge:
    """Purges past ``keep_days`` (a router service: started and stopped with the core): the
    kinds of :class:`storage.Retention`, the audit log (``audit``) and hosted uploads."""

    def __init__(
        self,
        store: Retention,
        keep: KeepDays,
        clock: Callable[[], float],
        *,
        audit: AuditTrail | None = None,
        uploads: HostedUploads | None = None,
    ) -> None:
        self.store = store
        self.keep = keep
        self.clock = clock
        self.audit = audit
        self.uploads = uploads
        self._purging: asyncio.Task[None] | None = None

    def cutoffs(self) -> Cutoffs:
        """Per kind, the time before which its data goes now (None: kept until deleted)."""
        now = self.clock()

        def before(days: float) -> float | None:
            return now - days * DAY if days > 0 else None

        k = self.keep
        return Cutoffs(before(k.conversations), before(k.job_results), before(k.images))

    async def purge(self) -> Purged | None:
        """One purge of every kind (None: another process's turn for the store's kinds)."""
        if self.uploads is not None and self.keep.uploads > 0:
            await self.uploads.sweep(self.keep.uploads * DAY)
        if self.audit is not None:
            await self.audit.purge()
        purged = await self.store.purge(self.cutoffs())
        if purged is not None and purged.processes:
            log.info("forgot %d processes not seen for a day", purged.processes)
        if purged is not None and replace(purged, processes=0) != Purged():
            log.info(
                "purged past keep_days: %d conversations, %d job results, %d images",
                purged.conversations,
                purged.job_results,
                purged.images,
            )
        return purged

    async def start(self) -> None:
        """Start purging (every :data:`PURGE_SECONDS`, the first at once)."""
        self._purging = asyncio.create_task(self._loop(), name="retention purge")

    async def stop(self) -> None:
        """Stop purging."""
        task, self._purging = self._purging, None
        if task is not None:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task

    async def _loop(self) -> None:
        while True:
            try:
                await self.purge()
            except StorageError as error:
                log.warning("could not purge past keep_days: %s", error)
            await asyncio.sleep(PURGE_SECONDS)
