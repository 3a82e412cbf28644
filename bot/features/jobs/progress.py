"""What a job's progress message says while it runs: the status in words, the time since it
started (in steps of the progress tick, :data:`ELAPSED_STEP` s by default, so the text changes
only that often), the time left as this deployment has measured it for jobs of the same kind
(task type and mode; nothing before it has measured one), and the job's place among the
requester's running jobs. Pure, apart from :class:`Estimates`' memory of recent durations.
"""

from __future__ import annotations

import statistics
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass

from bot.features.jobs.params import asked_mode
from storage import Job

ELAPSED_STEP = 5
OBSERVED_KEPT = 20
"""How many of the latest durations of one kind of job are kept."""


@dataclass(frozen=True)
class Position:
    """A job's place (1-based) among its requester's running jobs, oldest first."""

    index: int
    total: int


def work_of(job: Job) -> str:
    """The kind of work, for status words: draw, upscale or describe."""
    if job.type == "describe":
        return "describe"
    if job.type == "upscale":
        return "upscale"
    return "draw"


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


def status_word(job: Job, status: str) -> str:
    """``Queued``, ``Starting``, ``Drawing``, ``Upscaling``, ``Describing``, ``Retrying``…"""
    if status == "creating":
        return "Sending"
    if status in ("submitted", "pending"):
        return "Queued"
    if status == "staged":
        return "Starting"
    if status == "retry":
        return "Retrying"
    if status in ("finished", "posting"):
        return "Finishing"
    if status == "processing":
        work = work_of(job)
        if job.type == "seed":
            return "Looking up the seed"
        return {"upscale": "Upscaling", "describe": "Describing"}.get(work, "Drawing")
    return "Waiting"


def stepped(seconds: float, step: float = ELAPSED_STEP) -> int:
    """``seconds`` floored to whole ``step`` s (at least 1 s steps)."""
    size = max(int(step), 1)
    return max(int(seconds) // size * size, 0)


def clock_text(seconds: float, step: float = ELAPSED_STEP) -> str:
    """``0:35``, ``12:05``: minutes and seconds, floored to ``step``."""
    whole = stepped(seconds, step)
    return f"{whole // 60}:{whole % 60:02d}"


def left_text(usual: Usual | None, elapsed: float) -> str:
    """``about 25 s left``, ``about 3 min left``, nothing (nothing measured yet, or past the
    median but within what has been seen), or ``taking longer than usual`` (past the longest
    seen)."""
    if usual is None:
        return ""
    left = usual.median - elapsed
    if left >= ELAPSED_STEP / 2:
        if left < 90:
            return f"about {max(round(left / ELAPSED_STEP) * ELAPSED_STEP, ELAPSED_STEP)} s left"
        return f"about {round(left / 60)} min left"
    if elapsed > usual.longest + ELAPSED_STEP:
        return "taking longer than usual"
    return ""


def position_text(position: Position | None) -> str:
    """``your job 2 of 3``, or nothing for a lone job."""
    if position is None or position.total < 2:
        return ""
    return f"your job {position.index} of {position.total}"


def status_text(
    job: Job,
    status: str,
    elapsed: float,
    estimates: Estimates,
    position: Position | None = None,
    step: float = ELAPSED_STEP,
) -> str:
    """The progress line: ``Drawing (fast) · 0:35 · about 25 s left · your job 2 of 3``. The
    time moves in ``step``-second steps, so the line changes only that often; the time left is
    read from ``estimates`` only when the line shows it (not while sending or finishing)."""
    elapsed = stepped(elapsed, step)
    word = status_word(job, status)
    if job.family == "task" and status not in ("creating",):
        word = f"{word} ({asked_mode(job)})"
    parts = [word, clock_text(elapsed, step)]
    if status not in ("creating", "finished", "posting"):
        parts.append(left_text(estimates.usual(job), elapsed))
    parts.append(position_text(position))
    return " · ".join(part for part in parts if part)
