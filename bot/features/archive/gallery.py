"""The playground's gallery (:class:`bot.kernel.ResultGallery`): a user's results with images,
found by the search of ``/jobs`` (:class:`ArchiveQuery` over the archive port: their own
results, or an admin's workspace search), each job's first image (whole, or as a thumbnail),
and the forms it offers on it (:data:`FORMS`: "Use as init", img2img from that image; "Use as
reference", an /imagine with that image as an image prompt, style, character or object).

Every job named (an image, a form, the job a page starts after) is checked by
:meth:`bot.refs.Refs.job_to_see`, the one job check; one the user may not see reads as one
genbot has no record of."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Mapping
from typing import Final, Protocol

from bot.features.archive.feature import JOB_ID
from bot.features.archive.pages import shrunk
from bot.features.archive.search import ArchiveQuery
from bot.features.jobs import wording
from bot.features.jobs.buttons import LABELS, REFERENCE_ACTION
from bot.features.jobs.forms import form_for
from bot.features.jobs.result_messages import NO_IMAGE_TYPES
from bot.kernel import (
    N_,
    Button,
    Event,
    GalleryPage,
    GalleryResult,
    ImageBytes,
    ImageFile,
    MediaError,
    Modal,
    Place,
    User,
    UserError,
    _,
)
from bot.refs import NO_JOB, RefRefused
from storage import Job, JobArchive

log = logging.getLogger(__name__)

MOST_RESULTS: Final = 48
"""The most results one page asks for (a larger ``limit`` asks for this many)."""
STALE_PAGE: Final = N_(
    "This page link no longer works (the result it continues from is gone, or it never named "
    "one): start again from the first page."
)
NO_RESULTS_ASKED: Final = N_("A page shows at least one result: ask for a limit of 1 to {most}.")
NO_DESCRIBE: Final = N_(
    "The gallery shows images; describe results have none (`/jobs` finds them)."
)
NO_IMAGE: Final = N_("That result has no image to show.")
IMAGE_GONE: Final = N_("That image can no longer be fetched from the provider.")
NO_FORM: Final = N_("The gallery has no such form.")
FORMS: Final = ("diff_init", REFERENCE_ACTION)
"""The result forms the gallery opens (their labels are the buttons'): "Use as init" on any
result with an image, the others where the result's own buttons offer them ("Use as
reference": upscales and diffusion images)."""
ON_ANY_IMAGE: Final = frozenset({"diff_init"})


class JobCheck(Protocol):
    """The ref check of a job a link names (:meth:`bot.refs.Refs.job_to_see`)."""

    async def job_to_see(self, event: Event, job_id: str) -> Job:
        """The job, when ``event``'s user may see it where they are; raises otherwise."""
        ...


class ResultImages(Protocol):
    """A result's images (:class:`bot.features.jobs.result_messages.ResultMessages`)."""

    def image_urls(self, job: Job) -> list[str]:
        """The links of ``job``'s images, one each."""
        ...

    async def download(self, job: Job, url: str) -> ImageBytes:
        """The image at ``url`` (or the job's fallback links)."""
        ...

    def buttons(self, job: Job) -> tuple[tuple[Button, ...], ...]:
        """The buttons under ``job``'s result."""
        ...


def has_images(job: Job) -> bool:
    """Whether ``job`` is a posted result with an image."""
    return job.status == "posted" and job.type not in NO_IMAGE_TYPES and bool(job.result_urls)


class Gallery:
    """The gallery's core (see the module docstring)."""

    def __init__(
        self,
        archive: JobArchive,
        images: ResultImages,
        check: JobCheck,
        clock: Callable[[], float],
    ) -> None:
        self.archive = archive
        self.images = images
        self.check = check
        self.clock = clock

    async def page(
        self, user: User, place: Place, filters: Mapping[str, str], after: str | None, limit: int
    ) -> GalleryPage:
        """Up to ``limit`` results ``filters`` find, newest first, after the job ``after`` (the
        last of the page before, which the user may see; a page link naming another is stale).
        A ``limit`` under 1 is refused; above :data:`MOST_RESULTS`, that many are shown."""
        event = Event(user=user, place=place)
        if filters.get("type", "").strip().lower() == "describe":
            raise UserError(_(NO_DESCRIBE))
        if limit < 1:
            raise UserError(_(NO_RESULTS_ASKED, most=MOST_RESULTS))
        now = self.clock()
        query = ArchiveQuery.of(event, filters, now)
        if after:
            try:
                await self._job(event, after)
            except UserError:
                raise UserError(_(STALE_PAGE)) from None
        limit = min(limit, MOST_RESULTS)
        jobs = await self.archive.search(query.search(event, now, after or None), limit + 1)
        shown = jobs[:limit]
        results = tuple(self._result(job) for job in shown if has_images(job))
        return GalleryPage(
            heading=_heading(query),
            results=results,
            after=shown[-1].id if len(jobs) > limit else None,
        )

    async def image(self, user: User, place: Place, job_id: str, *, small: bool) -> ImageFile:
        """The first image of ``job_id`` (``small``: a JPEG thumbnail)."""
        job = await self._with_image(Event(user=user, place=place), job_id)
        try:
            fetched = await self.images.download(job, self.images.image_urls(job)[0])
        except MediaError as error:
            log.info("gallery: no image of job %s: %s", job.id, error)
            raise UserError(_(IMAGE_GONE)) from None
        name = f"{job.type}-{job.id}"
        if small:
            thumbnail = await asyncio.to_thread(shrunk, fetched.data)
            return ImageFile(f"{name}.jpg", thumbnail, "image/jpeg")
        return ImageFile(f"{name}.{fetched.extension}", fetched.data, fetched.content_type)

    async def form(self, user: User, place: Place, job_id: str, action: str) -> Modal:
        """The form ``action`` (one of :data:`FORMS`) of ``job_id``, its prompt to edit."""
        if action not in FORMS:
            raise UserError(_(NO_FORM))
        job = await self._with_image(Event(user=user, place=place), job_id)
        modal = form_for(action, job.id, job.prompt) if action in self._forms(job) else None
        if modal is None:
            raise UserError(_(NO_FORM))
        return modal

    async def _with_image(self, event: Event, job_id: str) -> Job:
        job = await self._job(event, job_id)
        if not has_images(job):
            raise UserError(_(NO_IMAGE))
        return job

    async def _job(self, event: Event, job_id: str) -> Job:
        if not JOB_ID.match(job_id):
            raise UserError(_(NO_JOB))
        try:
            return await self.check.job_to_see(event, job_id)
        except RefRefused as refused:
            raise UserError(str(refused)) from None

    def _result(self, job: Job) -> GalleryResult:
        return GalleryResult(
            job_id=job.id,
            title=wording.done_title(job),
            prompt=job.prompt or wording.subject(job),
            type=job.type,
            created_at=job.created_at,
            where="" if job.is_dm else job.channel_id,
            images=len(self.images.image_urls(job)),
            forms=tuple((action, _(LABELS[action])) for action in self._forms(job)),
        )

    def _forms(self, job: Job) -> tuple[str, ...]:
        offered = {button.action for row in self.images.buttons(job) for button in row}
        return tuple(a for a in FORMS if a in ON_ANY_IMAGE or a in offered)


def _heading(query: ArchiveQuery) -> str:
    """The gallery's heading, one line: whose results, then the search's filters."""
    heading = (
        _("The workspace's results — newest first")
        if query.workspace
        else _("Your results — newest first")
    )
    filters = query.filters(lambda channel: f"#{channel}")
    return " · ".join((heading, *filters))
