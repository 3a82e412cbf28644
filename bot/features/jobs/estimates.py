"""How long jobs take on this deployment: the latest durations (created to finished) of each kind
of job it has seen finish, by task type and, for image tasks, mode — what a progress line's time
left is read from (:func:`bot.features.jobs.wording.status_text`)."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from bot.features.jobs.params import asked_mode
from storage import Job

OBSERVED_KEPT = 20
"""How many of the latest durations of one kind of job are kept."""


def kind_of(job: Job) -> str:
    """What durations are measured by: the family, the task type and, for image tasks, the
    mode (``task:upscale:fast``, ``diffusion:txt2img``)."""
    if job.family == "diffusion":
        return f"diffusion:{job.type}"
    return f"task:{job.type}:{asked_mode(job)}"


@dataclass(frozen=True)
class Usual:
    """How long jobs of one kind took here lately: the median and the longest."""

    median: float
    longest: float


class Estimates:
    """How long jobs take on this deployment: the latest :data:`OBSERVED_KEPT` durations
    (created to finished) of each kind of job it has seen finish (:func:`kind_of`)."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {}

    def observe(self, job: Job) -> None:
        """Remember how long a finished job took."""
        if job.finished_at is None or job.finished_at <= job.created_at:
            return
        seen = self._seen.setdefault(kind_of(job), deque(maxlen=OBSERVED_KEPT))
        seen.append(job.finished_at - job.created_at)

    def learn(self, jobs: Iterable[Job]) -> None:
        """Remember the durations of finished jobs given newest first (the stored history, at
        start), without displacing the ones seen since."""
        for job in reversed(list(jobs)):
            seen = self._seen.get(kind_of(job))
            if seen is None or len(seen) < OBSERVED_KEPT:
                self.observe(job)

    def usual(self, job: Job) -> Usual | None:
        """How long a job like ``job`` usually takes here; None before one was measured."""
        seen = self._seen.get(kind_of(job))
        if not seen:
            return None
        return Usual(statistics.median(seen), max(seen))
