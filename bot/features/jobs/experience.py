"""What this deployment has seen its jobs do: how long each kind of job takes (the progress
messages' estimates, :class:`bot.features.jobs.estimates.Estimates`) and which diffusion models ran
(:class:`bot.features.jobs.diffusion_models.DiffusionModels`). Learned from the stored history when
genbot starts (so a restart, or another process, knows as much), then from every result it posts.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from bot.features.jobs.diffusion_models import DiffusionModels
from bot.features.jobs.estimates import Estimates
from storage import JobHistory, StorageError

log = logging.getLogger(__name__)

LEARNED_AT_START = 500
"""How many of the newest posted jobs are read when genbot starts."""


class Experience:
    """The deployment's job experience; a service of the core (``start`` learns the history
    of ``store``, when given). The job messages tell ``estimates`` (and ``models``, for a
    diffusion job) of every result they post."""

    def __init__(self, store: JobHistory | None = None, models: Sequence[str] = ()) -> None:
        self._store = store
        self.estimates = Estimates()
        self.models = DiffusionModels(models)

    async def start(self) -> None:
        """Learn from the newest posted jobs in storage (best effort: without them genbot
        starts knowing nothing, and learns as results are posted)."""
        if self._store is None:
            return
        try:
            jobs = await self._store.recent_posted_jobs(LEARNED_AT_START)
        except StorageError as error:
            log.warning("could not read the job history to learn from: %s", error)
            return
        self.estimates.learn(jobs)
        self.models.learn(jobs)

    async def stop(self) -> None:
        """Nothing to stop."""
