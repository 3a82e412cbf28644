"""One page of ``/jobs``: up to :data:`PAGE_SIZE` jobs, newest first, each with its thumbnail,
title and prompt, type, time and place, a ``Show N`` button (``/show`` it here) and, when there
may be more, ``Older ▶`` (its ref carries the search: :class:`ArchiveQuery`). Thumbnails are
the result's first image made small; one that cannot be fetched is left out (the line stays)."""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Sequence
from typing import Final

from PIL import Image

from bot.features.archive.info import when, where
from bot.features.archive.search import ArchiveQuery
from bot.features.jobs import wording
from bot.features.jobs.result_messages import NO_IMAGE_TYPES
from bot.kernel import (
    Button,
    ImageFile,
    MediaError,
    MediaFetcher,
    Mention,
    OutMessage,
    _,
    named,
)
from storage import Job

log = logging.getLogger(__name__)

PAGE_SIZE: Final = 5
THUMBNAIL_PIXELS: Final = 256
SHOW_ACTION: Final = "show"
PAGE_ACTION: Final = "jobs_page"


def shrunk(data: bytes) -> bytes:
    """``data`` (an image) as a JPEG thumbnail of at most :data:`THUMBNAIL_PIXELS` a side."""
    with Image.open(io.BytesIO(data)) as image:
        small = image.convert("RGB")
        small.thumbnail((THUMBNAIL_PIXELS, THUMBNAIL_PIXELS))
        buffer = io.BytesIO()
        small.save(buffer, format="JPEG", quality=80)
        return buffer.getvalue()


class ArchivePages:
    """Builds pages (fetching thumbnails with ``media``)."""

    def __init__(self, media: MediaFetcher) -> None:
        self._media = media

    async def page(
        self, jobs: Sequence[Job], query: ArchiveQuery, *, more: bool, first: bool
    ) -> OutMessage:
        """The page showing ``jobs``; ``more``: older ones may follow; ``first``: the page
        the command opened."""
        if not jobs:
            return OutMessage(text=_empty(query, first))
        lines = [_heading(query)]
        for number, job in enumerate(jobs, start=1):
            title = f"**{wording.done_title(job)}** — {wording.clip(wording.subject(job), 120)}"
            lines.append(
                f"{number}. {title} · {job.type} · {when(job.created_at)} · {where(job)}"
                f" · `{job.id}`"
            )
        shows = tuple(
            # Translators: a button showing the result numbered {number} in a list of jobs.
            Button(_("Show {number}", number=n), SHOW_ACTION, job.id)
            for n, job in enumerate(jobs, 1)
        )
        rows: list[tuple[Button, ...]] = [shows]
        older = _older(query, jobs[-1]) if more else None
        if older is not None:
            rows.append((older,))
        elif more:
            lines.append(_("_Older jobs match too: narrow the search to see them._"))
        thumbnails = await asyncio.gather(*(self._thumbnail(n, j) for n, j in enumerate(jobs, 1)))
        images = tuple(image for image in thumbnails if image is not None)
        return OutMessage(text="\n".join(lines), images=images, buttons=tuple(rows))

    async def _thumbnail(self, number: int, job: Job) -> ImageFile | None:
        if job.type in NO_IMAGE_TYPES or not job.result_urls:
            return None
        try:
            fetched = await self._media.fetch(job.result_urls[0])
            small = await asyncio.to_thread(shrunk, fetched.data)
        except (MediaError, OSError, ValueError) as error:
            log.info("no thumbnail of job %s: %s", job.id, error)
            return None
        return ImageFile(f"{number}-{job.id}.jpg", small, "image/jpeg")


def _heading(query: ArchiveQuery) -> str:
    """The page's heading, and the search's filters on a line of their own."""
    heading = (
        _("**The workspace's jobs** — newest first")
        if query.workspace
        else _("**Your jobs** — newest first")
    )
    filters = query.filters(lambda channel: str(Mention.channel(channel)))
    if not filters:
        return heading
    # Translators: the line under a search's heading; {filters} is "Words: “fox” · Type: upscale".
    return heading + "\n" + _("Search: {filters}", filters=" · ".join(filters))


def _empty(query: ArchiveQuery, first: bool) -> str:
    if not first:
        return _("No older jobs.")
    searched = query.words or query.type or query.channel or query.date
    if searched:
        return _("No finished job matches that search. Try fewer words or filters.")
    return _("You have no finished jobs here yet: {imagine} something!", imagine=named("imagine"))


def _older(query: ArchiveQuery, last: Job) -> Button | None:
    try:
        # Translators: a button showing the next page of older jobs.
        return Button(_("Older ▶"), PAGE_ACTION, query.ref(last.id))
    except ValueError:
        return None
