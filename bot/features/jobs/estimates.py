"""How long jobs take on this deployment, and what they cost: the latest durations (created to
finished) and charged credits of each kind of job it has seen finish, by task type and, for image
tasks, mode — what a progress line's time left is read from
(:func:`bot.features.jobs.wording.status_text`), and a preview's estimated credits
(:meth:`Estimates.credits`; :data:`DEFAULT_CREDITS` before any was recorded)."""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from bot.features.jobs.params import asked_mode
from storage import Job

OBSERVED_KEPT = 20
"""How many of the latest durations (and charges) of one kind of job are kept."""
DEFAULT_CREDITS: dict[str, int] = {
    "task:imagine:relax": 4,
    "task:imagine:mixed": 8,
    "task:imagine:fast": 8,
    "task:imagine:turbo": 16,
}
"""What genbot estimates a job costs before it recorded a charge of its kind
(docs/provider.md#estimated-credits): an imagine is priced by its mode; any other kind, 4."""
UNKNOWN_CREDITS = 4


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
        self._charged: dict[str, deque[int]] = {}

    def observe(self, job: Job) -> None:
        """Remember how long a finished job took, and what it was charged."""
        self._duration(job)
        self._charge(job)

    def learn(self, jobs: Iterable[Job]) -> None:
        """Remember the durations and charges of finished jobs given newest first (the stored
        history, at start), without displacing the ones seen since."""
        for job in reversed(list(jobs)):
            kind = kind_of(job)
            if len(self._seen.get(kind, ())) < OBSERVED_KEPT:
                self._duration(job)
            if len(self._charged.get(kind, ())) < OBSERVED_KEPT:
                self._charge(job)

    def _duration(self, job: Job) -> None:
        if job.finished_at is None or job.finished_at <= job.created_at:
            return
        seen = self._seen.setdefault(kind_of(job), deque(maxlen=OBSERVED_KEPT))
        seen.append(job.finished_at - job.created_at)

    def _charge(self, job: Job) -> None:
        if job.credits is None or job.credits <= 0:
            return
        charged = self._charged.setdefault(kind_of(job), deque(maxlen=OBSERVED_KEPT))
        charged.append(job.credits)

    def usual(self, job: Job) -> Usual | None:
        """How long a job like ``job`` usually takes here; None before one was measured."""
        seen = self._seen.get(kind_of(job))
        if not seen:
            return None
        return Usual(statistics.median(seen), max(seen))

    def credits(self, kind: str) -> tuple[int, bool]:
        """What a job of ``kind`` (:func:`kind_of`) is estimated to cost: the median of its
        latest charges here, and True; before any, :data:`DEFAULT_CREDITS`' and False."""
        charged = self._charged.get(kind)
        if charged:
            return round(statistics.median(charged)), True
        return DEFAULT_CREDITS.get(kind, UNKNOWN_CREDITS), False
