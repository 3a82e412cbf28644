"""What a job's progress message says while it runs: the status in words, the time since it
started (in steps of the progress tick, :data:`ELAPSED_STEP` s by default, so the text changes
only that often), an
estimate of the time left from the mode's typical duration, and the job's place among the
requester's running jobs. Pure, apart from :class:`Estimates`' memory of recent durations.
"""

from __future__ import annotations

import statistics
from collections import deque
from dataclasses import dataclass

from bot.jobs.titles import base_action
from storage import DiffusionParams, Job, params_of

ELAPSED_STEP = 5
TYPICAL_SECONDS: dict[str, dict[str, float]] = {
    "relax": {"draw": 60.0, "upscale": 30.0, "describe": 20.0},
    "fast": {"draw": 30.0, "upscale": 15.0, "describe": 10.0},
    "turbo": {"draw": 15.0, "upscale": 8.0, "describe": 5.0},
}
"""How long a job usually takes at the provider, by mode and kind of work, until genbot has
seen enough jobs of its own (see :class:`Estimates`)."""
DIFFUSION_TYPICAL_SECONDS = 20.0
OBSERVED_KEPT = 20
OBSERVED_NEEDED = 3


@dataclass(frozen=True)
class Position:
    """A job's place (1-based) among its requester's running jobs, oldest first."""

    index: int
    total: int


def mode_of(job: Job) -> str:
    """The process mode a job runs in: its ``process_mode``, else one written in the prompt
    (``--fast``), else relax, as the provider decides it."""
    params = params_of(job)
    mode = "" if isinstance(params, DiffusionParams) else params.process_mode or ""
    if mode in TYPICAL_SECONDS:
        return mode
    written = [word for word in job.prompt.split() if word in ("--relax", "--fast", "--turbo")]
    return written[-1].removeprefix("--") if written else "relax"


def work_of(job: Job) -> str:
    """The kind of work, for status words and estimates: draw, upscale or describe."""
    if job.type == "describe":
        return "describe"
    if job.type == "upscale":
        return "upscale"
    return "draw"


def _kind(job: Job) -> str:
    return "diffusion" if job.family == "diffusion" else f"{mode_of(job)}:{work_of(job)}"


class Estimates:
    """Typical durations: the median of the last jobs genbot saw finish of the same kind, or the
    table (:data:`TYPICAL_SECONDS`) until it has seen :data:`OBSERVED_NEEDED`."""

    def __init__(self) -> None:
        self._seen: dict[str, deque[float]] = {}

    def observe(self, job: Job) -> None:
        """Remember how long a finished job took."""
        if job.finished_at is None or job.finished_at <= job.created_at:
            return
        seen = self._seen.setdefault(_kind(job), deque(maxlen=OBSERVED_KEPT))
        seen.append(job.finished_at - job.created_at)

    def typical(self, job: Job) -> float:
        """How long a job like ``job`` usually takes, in seconds."""
        seen = self._seen.get(_kind(job))
        if seen is not None and len(seen) >= OBSERVED_NEEDED:
            return statistics.median(seen)
        if job.family == "diffusion":
            return DIFFUSION_TYPICAL_SECONDS
        return TYPICAL_SECONDS[mode_of(job)][work_of(job)]


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
        if base_action(job.action) == "seed":
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


def left_text(typical: float, elapsed: float) -> str:
    """``about 25 s left``, ``about 3 min left``, or ``taking longer than usual``."""
    left = typical - elapsed
    if left < ELAPSED_STEP / 2:
        return "taking longer than usual"
    if left < 90:
        return f"about {max(round(left / ELAPSED_STEP) * ELAPSED_STEP, ELAPSED_STEP)} s left"
    return f"about {round(left / 60)} min left"


def position_text(position: Position | None) -> str:
    """``your job 2 of 3``, or nothing for a lone job."""
    if position is None or position.total < 2:
        return ""
    return f"your job {position.index} of {position.total}"


def status_text(
    job: Job,
    status: str,
    elapsed: float,
    typical: float,
    position: Position | None = None,
    step: float = ELAPSED_STEP,
) -> str:
    """The progress line: ``Drawing (fast) · 0:35 · about 25 s left · your job 2 of 3``. The
    time moves in ``step``-second steps, so the line changes only that often."""
    elapsed = stepped(elapsed, step)
    word = status_word(job, status)
    if job.family == "task" and status not in ("creating",):
        word = f"{word} ({mode_of(job)})"
    parts = [word, clock_text(elapsed, step)]
    if status not in ("creating", "finished", "posting"):
        parts.append(left_text(typical, elapsed))
    parts.append(position_text(position))
    return " · ".join(part for part in parts if part)
