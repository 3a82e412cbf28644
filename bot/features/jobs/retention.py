"""The provider's retention of diffusion images: it keeps each for :data:`RETENTION_DAYS` days
after processing, and genbot keeps no copy it could send instead, so every path that sends a
diffusion image's URL back (Upscale, Use as init, Use as reference, 🔄 of a job that reworks
one) refuses an older image up front, without a call."""

from __future__ import annotations

from typing import Final

from bot.kernel import UserError, _
from storage import Job

RETENTION_DAYS: Final = 7
"""Days the provider keeps a diffusion output after processing (the documentation: "Generated
images are kept for 7 days after processing")."""


def processed_at(job: Job) -> float:
    """When ``job``'s image was processed: its finish, else its creation."""
    return job.finished_at if job.finished_at is not None else job.created_at


def check_kept(processed: float, now: float) -> None:
    """Refuse an image processed at ``processed`` that the provider no longer keeps at ``now``:
    one processed :data:`RETENTION_DAYS` days ago or more."""
    if now - processed >= RETENTION_DAYS * 86400:
        raise UserError(
            _(
                "This image is more than {days} days old: the image service keeps its images "
                "only {days} days and genbot keeps no copy it could send instead. Make a new "
                "image first.",
                days=RETENTION_DAYS,
            )
        )


def check_job_kept(job: Job, now: float) -> None:
    """Refuse to send ``job``'s image when it is a diffusion image the provider no longer keeps
    (:func:`check_kept`); other families' images are not checked."""
    if job.family == "diffusion":
        check_kept(processed_at(job), now)
