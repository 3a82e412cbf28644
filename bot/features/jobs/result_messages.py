"""The messages that show a job's outcome: its result (images, title, buttons) and its failure
report, and the same result again with its pressed buttons marked.

A pressed button is remembered in the job's ``result["pressed"]`` (the actions whose derivative
was started) and drawn primary, as Midjourney marks used buttons.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping
from typing import Final

from bot.features.jobs import wording
from bot.features.jobs.buttons import describe_buttons, diffusion_buttons
from bot.features.jobs.follow_ups import follow_up_buttons
from bot.features.jobs.params import DescribeParams, JobResult
from bot.kernel import (
    Button,
    ImageBytes,
    ImageFile,
    MediaError,
    MediaFetcher,
    OutMessage,
    PlatformProfile,
    UnreadableImage,
)
from storage import Job

log = logging.getLogger(__name__)

Buttons = tuple[tuple[Button, ...], ...]
NO_IMAGE_TYPES: Final = frozenset({"describe", "seed"})
"""The job types whose results are not an image they made."""


def pressed_actions(job: Job) -> frozenset[str]:
    """The actions of ``job``'s buttons that started a derivative."""
    return frozenset(str(action) for action in JobResult.of(job).pressed)


class ResultMessages:
    """Builds result messages (downloading the images to re-upload) for the platforms of
    ``profiles`` (what each allows)."""

    def __init__(self, profiles: Mapping[str, PlatformProfile], media: MediaFetcher) -> None:
        self._profiles = profiles
        self._media = media

    async def result(
        self, job: Job, *, link_instead: bool
    ) -> tuple[OutMessage, tuple[int, int] | None]:
        """The result message and its (first) image's size, to remember. When an image
        cannot be downloaded :class:`MediaError` propagates, unless ``link_instead`` or the image
        arrived unreadable: then the message carries the provider's (expiring) link instead."""
        mention = job.requester_id
        if job.family == "task" and job.type == "seed":
            text = wording.seed_text(job, JobResult.of(job).seed or "")
            return OutMessage(text=text, mention_user_id=mention), None
        if job.family == "task" and job.type == "describe":
            prompts = list(JobResult.of(job).prompts)
            text = wording.describe_text(job, prompts)
            described = await self._described_image(job)
            return OutMessage(
                text=text, images=described, buttons=self.buttons(job), mention_user_id=mention
            ), None
        images: list[ImageFile] = []
        size: tuple[int, int] | None = None
        try:
            for number, url in enumerate(self.image_urls(job), start=1):
                image = await self.download(job, url)
                suffix = f"-{number}" if number > 1 else ""
                filename = f"{job.type}-{job.id}{suffix}.{image.extension}"
                images.append(ImageFile(filename, image.data, image.content_type, url))
                if number == 1:
                    size = (image.width, image.height)
        except MediaError as error:
            if not link_instead and not isinstance(error, UnreadableImage):
                raise
            url = job.result_urls[0] if job.result_urls else ""
            text = wording.unavailable_image_text(job, str(error), url)
            buttons = self.buttons(job)
            return OutMessage(text=text, buttons=buttons, mention_user_id=mention), None
        message = OutMessage(
            text=wording.result_text(job),
            images=tuple(images),
            buttons=self.buttons(job, size=size),
            mention_user_id=mention,
        )
        return message, size

    def marked(self, job: Job) -> OutMessage:
        """A posted result's text and buttons (pressed ones marked), without its images: the
        edit that marks a pressed button leaves the images as they are."""
        text = wording.result_text(job)
        if job.family == "task" and job.type == "describe":
            text = wording.describe_text(job, list(JobResult.of(job).prompts))
        return OutMessage(
            text=text, buttons=self.buttons(job), mention_user_id=job.requester_id, card=True
        )

    def buttons(
        self,
        job: Job,
        pressed: Collection[str] | None = None,
        *,
        size: tuple[int, int] | None = None,
    ) -> Buttons:
        """The buttons under ``job``'s result, ℹ️ (its info) last (``pressed``: default the
        remembered ones; ``size``: its image's, when known)."""
        used = pressed_actions(job) if pressed is None else frozenset(pressed)
        if job.family == "diffusion":
            upscale = job.type != "upscale"
            return diffusion_buttons(job.id, upscale=upscale, pressed=used, info=True)
        if job.type == "describe":
            count = min(len(JobResult.of(job).prompts), 4)
            return describe_buttons(job.id, count, pressed=used, info=True) if count else ()
        per_row = self._profiles[job.platform].max_buttons_per_row
        return follow_up_buttons(job, per_row, size, pressed=used, info=True)

    async def _described_image(self, job: Job) -> tuple[ImageFile, ...]:
        """The image a describe job described, shown with its prompts (none when it cannot be
        fetched any more: the prompts still stand)."""
        url = DescribeParams.of(job).image_url
        if not url:
            return ()
        try:
            image = await self._media.fetch(url)
        except MediaError as error:
            log.info("job %s: the described image is not shown: %s", job.id, error)
            return ()
        return (ImageFile(f"described-{job.id}.{image.extension}", image.data, image.content_type),)

    def image_urls(self, job: Job) -> list[str]:
        """The links of ``job``'s images, one each (a task's other links are fallbacks of its
        one image)."""
        if job.family == "diffusion":
            return list(job.result_urls)
        return job.result_urls[:1]

    async def download(self, job: Job, url: str) -> ImageBytes:
        """The image at ``url``, else at the task's next link (image, permanent, host URL, in
        that order: docs/provider.md#image-url-fields)."""
        if job.family == "diffusion":
            return await self._media.fetch(url)
        last: MediaError | None = None
        for candidate in [url, *job.result_urls[1:]]:
            try:
                return await self._media.fetch(candidate)
            except MediaError as error:
                last = error
        assert last is not None
        raise last
