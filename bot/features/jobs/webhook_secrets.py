"""The jobs' webhook secrets, sealed in the database (:mod:`bot.kernel.sealer`).

A job asking for webhooks gets a random secret, stored sealed; the starter opens it to hand
it to the provider, and the tracker to check a notification's ``x-webhook-secret``. A secret
stored before sealing (plain) or sealed with an older key works, and is stored again sealed
with the current key when it is read. At startup :meth:`WebhookSecrets.check` opens every
unfinished job's secret, so a key that opens none of them stops genbot with a clear message
instead of failing each notification later.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from dataclasses import dataclass

from bot.kernel import Opened, Sealer, SealError
from storage import Job, JobTracking, JobWriter

log = logging.getLogger(__name__)

SECRET_BYTES = 24
PAGE_SIZE = 500


@dataclass(frozen=True)
class SecretStorage:
    """What the webhook secrets use: unfinished jobs and their fields."""

    jobs: JobWriter
    tracking: JobTracking


class WebhookSecrets:
    """Makes, opens and checks the jobs' webhook secrets."""

    def __init__(self, sealer: Sealer, store: SecretStorage) -> None:
        self._sealer = sealer
        self._store = store

    def new(self) -> str:
        """A new job's secret, sealed (what its row stores)."""
        return self._sealer.seal(secrets.token_urlsafe(SECRET_BYTES))

    async def of(self, job: Job) -> str | None:
        """``job``'s secret; None when it has none. :class:`SealError` when no key opens it."""
        if not job.webhook_secret:
            return None
        return (await self._opened(job.id, job.webhook_secret)).secret

    async def matches(self, job: Job | None, given: str | None) -> bool:
        """Whether ``given`` is ``job``'s secret (compared in constant time). A secret no key
        opens matches nothing."""
        if job is None or not job.webhook_secret:
            return False
        try:
            expected = await self.of(job)
        except SealError:
            log.warning("job %s: its webhook secret is sealed with an unknown key", job.id)
            return False
        return hmac.compare_digest((given or "").encode(), (expected or "").encode())

    async def check(self) -> int:
        """Open every unfinished job's secret (sealing again those stored plain or with an
        older key); the number opened. :class:`SealError` when one cannot be opened, or when
        there is no key to seal new secrets with."""
        self._sealer.require_key()
        opened = 0
        after: Job | None = None
        while True:
            page = await self._store.tracking.list_unfinished_jobs(limit=PAGE_SIZE, after=after)
            for job in page:
                if job.webhook_secret:
                    await self._opened(job.id, job.webhook_secret)
                    opened += 1
            if len(page) < PAGE_SIZE:
                return opened
            after = page[-1]

    async def _opened(self, job_id: str, stored: str) -> Opened:
        opened = self._sealer.open(stored)
        if opened.stale and self._sealer.can_seal:
            await self._store.jobs.update_job(
                job_id, webhook_secret=self._sealer.seal(opened.secret)
            )
        return opened
