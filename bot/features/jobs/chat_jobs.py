"""What the chat engine's built-in functions call: start an imagine or describe job in a
conversation and, when the model needs the answer, wait for it."""

from __future__ import annotations

from bot.features.jobs.images import ImageJobs
from bot.features.jobs.params import JobResult
from bot.features.jobs.tracking.watch import JobWatch
from bot.kernel import Event
from storage import Job, JobStatus

DONE_STATUSES: frozenset[JobStatus] = frozenset(
    {"finished", "posting", "posted", "failed", "reporting", "failed_posted", "create_failed"}
)


class ChatJobs:
    """The job handle given to the chat engine (``generate_image``, ``describe_image``)."""

    def __init__(self, images: ImageJobs, watch: JobWatch) -> None:
        self._images = images
        self._watch = watch

    async def generate_image(
        self, event: Event, prompt: str, *, aspect_ratio: str | None = None
    ) -> Job:
        """Start an imagine job whose progress and grid are posted in ``event``'s place
        (the conversation's thread or channel). Raises :class:`bot.kernel.errors.UserError` (caps,
        budget) or :class:`bot.api.InvalidRequest` (bad prompt) before anything starts, and
        :class:`~bot.kernel.errors.UserError` with the provider's reason when it refuses the
        request as invalid (no card is left); another refusal by the provider returns the job
        in ``create_failed`` with ``error`` set, a creation
        the provider never confirmed returns it in ``unknown`` (its progress message says so;
        it may still be adopted and posted)."""
        return await self._images.imagine(event, prompt, aspect_ratio=aspect_ratio)

    async def describe_image(self, event: Event, image_url: str) -> Job:
        """Start a describe job for ``image_url``; its four prompts are posted with buttons."""
        return await self._images.describe(event, image_url)

    async def wait(self, job_id: str, timeout: float = 300.0) -> Job:
        """The job once the provider is done with it (finished, failed or refused).
        ``JobResult.of(job).prompts`` holds a describe job's prompts. ``TimeoutError`` after
        ``timeout`` seconds."""
        return await self._watch.wait(job_id, DONE_STATUSES, timeout)

    async def describe_prompts(
        self, event: Event, image_url: str, timeout: float = 300.0
    ) -> list[str]:
        """Describe ``image_url`` and return its four prompts (empty when the job failed; the
        failure is reported in the conversation)."""
        job = await self.describe_image(event, image_url)
        done = await self.wait(job.id, timeout)
        return list(JobResult.of(done).prompts)
