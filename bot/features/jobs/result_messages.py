"""The messages that show a job's outcome: its result (images, title, buttons) and its failure
report, and the same result again with its pressed buttons marked.

The buttons under a result are arranged here, from the vocabulary of
:mod:`bot.features.jobs.buttons` (actions, rows, labels): an image task's follow-ups (what it
offers is :func:`bot.features.jobs.follow_ups.offer`), a describe's picks, a diffusion image's
reworks, then ℹ️. A pressed button is remembered in the job's ``result["pressed"]`` (the actions
whose derivative was started) and drawn primary, as Midjourney marks used buttons.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from typing import Final

from bot.features.jobs import wording
from bot.features.jobs.buttons import (
    DESCRIBE_ACTIONS,
    DIFFUSION_ACTIONS,
    GRID_ROWS,
    LABELS,
    MAX_BUTTONS_PER_ROW,
    MAX_ROWS,
    REFERENCE_ACTION,
    UPSCALE_ACTIONS,
    UPSCALE_ROWS,
)
from bot.features.jobs.follow_ups import offer
from bot.features.jobs.params import DescribeParams, JobResult
from bot.kernel import (
    INFO_ACTION,
    REMIX_ACTIONS,
    REMIX_PREFIX,
    Button,
    ButtonDraft,
    ButtonStyle,
    ImageBytes,
    ImageFile,
    MediaError,
    MediaFetcher,
    OutMessage,
    PlatformProfile,
    UnreadableImage,
    _,
    button_rows,
)
from storage import Job

log = logging.getLogger(__name__)

Buttons = tuple[tuple[Button, ...], ...]
NO_IMAGE_TYPES: Final = frozenset({"describe", "seed"})
"""The job types whose results are not an image they made."""


def pressed_actions(job: Job) -> frozenset[str]:
    """The actions of ``job``'s buttons that started a derivative."""
    return frozenset(str(action) for action in JobResult.of(job).pressed)


def drawn_marks(job: Job) -> tuple[frozenset[str], frozenset[str]]:
    """What ``job``'s result buttons show of what happened since it was posted: the actions
    pressed (drawn primary) and those the provider refused (disabled)."""
    return pressed_actions(job), frozenset(JobResult.of(job).refused_actions)


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
            text = wording.unavailable_image_text(job, error.told(), url)
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

    def most_bytes(self, job: Job) -> int:
        """The most bytes of images :meth:`result` may download for ``job``'s message (the
        upload limit for each image it may show)."""
        if job.family == "task" and job.type == "seed":
            return 0
        if job.family == "task" and job.type == "describe":
            return self._media.max_bytes
        return len(self.image_urls(job)) * self._media.max_bytes

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


# The buttons under a result ------------------------------------------------------------------


def _draft(
    action: str,
    pressed: Collection[str],
    disabled: Collection[str] = (),
    remix: bool = False,
) -> ButtonDraft:
    style: ButtonStyle = "primary" if action in pressed else "secondary"
    remixed = REMIX_PREFIX + action
    drawn = remixed if remix and remixed in REMIX_ACTIONS else action
    return (_(LABELS[action]), drawn, style, action in disabled)


def _rows(
    groups: list[list[str]], tail: Sequence[str], max_per_row: int, max_rows: int
) -> list[list[str]]:
    """``groups`` cut into rows, then each of ``tail`` (🌱 Seed, ℹ️) on the last row when it has
    room, else on a new one."""
    rows = [g[i : i + max_per_row] for g in groups for i in range(0, len(g), max_per_row)]
    for action in tail:
        if rows and len(rows[-1]) < max_per_row:
            rows[-1].append(action)
        else:
            rows.append([action])
    if len(rows) > max_rows:
        flat = [action for row in rows for action in row]
        rows = [flat[i : i + max_per_row] for i in range(0, len(flat), max_per_row)]
    return rows[:max_rows]


def task_buttons(
    actions: Iterable[str],
    ref: str,
    *,
    with_seed: bool | None = None,
    pressed: Collection[str] = (),
    disabled: Collection[str] = (),
    remix: bool = False,
    max_per_row: int = MAX_BUTTONS_PER_ROW,
    max_rows: int = MAX_ROWS,
    info: bool = False,
) -> tuple[tuple[Button, ...], ...]:
    """Button rows for an image task's follow-ups (genbot's action names, see
    :func:`bot.features.jobs.follow_ups.offered_follow_ups`); with ``remix`` the follow-ups that
    take a prompt are drawn as their ``remix_`` actions (a press opens the prompt form).

    A grid gets ``U1 U2 U3 U4 🔄`` / ``V1 V2 V3 V4``; an upscale its follow-ups in rows
    (vary, zoom, pan, second upscales); ``🌱 Seed`` comes last when ``seed`` is among
    ``actions``, then (upscales) ``Use as reference``, then ℹ️ with ``info``. ``with_seed``
    forces the seed button on or off (default: on when offered, or for upscales). Unknown
    action names are ignored; ``pressed`` actions are styled primary, ``disabled`` ones shown
    disabled. At most ``max_per_row`` per
    row and ``max_rows`` rows: when the natural rows would be too many, buttons are packed
    densely and any excess is dropped.
    """
    offered = set(actions)
    groups = [[a for a in row if a in offered] for row in (*GRID_ROWS, *UPSCALE_ROWS)]
    if with_seed is None:
        with_seed = "seed" in offered or bool(offered & UPSCALE_ACTIONS)
    single = bool(offered & UPSCALE_ACTIONS)
    tail = [
        *(["seed"] if with_seed else []),
        *([REFERENCE_ACTION] if single else []),
        *([INFO_ACTION] if info else []),
    ]
    rows = _rows([g for g in groups if g], tail, max_per_row, max_rows)
    return button_rows(ref, [[_draft(a, pressed, disabled, remix) for a in row] for row in rows])


def describe_buttons(
    ref: str, count: int = 4, *, pressed: Collection[str] = (), info: bool = False
) -> tuple[tuple[Button, ...], ...]:
    """``1 2 3 4 🔄`` and ``Imagine all`` under a describe result: a number imagines that
    prompt (after editing it, see :mod:`bot.features.jobs.describe`), 🔄 describes the image again,
    Imagine all imagines the four prompts (then ℹ️ with ``info``)."""
    picks = [_draft(a, pressed) for a in (*DESCRIBE_ACTIONS[:count], "describe_again")]
    last = ["describe_all", *([INFO_ACTION] if info else [])]
    return button_rows(ref, [picks, [_draft(a, pressed) for a in last]])


def diffusion_buttons(
    ref: str, *, upscale: bool = True, pressed: Collection[str] = (), info: bool = False
) -> tuple[tuple[Button, ...], ...]:
    """``🔄`` (same options, new seed), ``Upscale``, ``Use as init`` and ``Use as reference``
    under a diffusion image (then ℹ️ with ``info``)."""
    actions = [a for a in DIFFUSION_ACTIONS if upscale or a != "diff_upscale"]
    actions += [REFERENCE_ACTION, *([INFO_ACTION] if info else [])]
    return button_rows(ref, [[_draft(a, pressed) for a in actions]])


def follow_up_buttons(
    job: Job,
    max_per_row: int = MAX_BUTTONS_PER_ROW,
    size: tuple[int, int] | None = None,
    *,
    pressed: Collection[str] = (),
    info: bool = False,
) -> tuple[tuple[Button, ...], ...]:
    """The buttons under a family B job's result: its follow-ups (:func:`offer`), those the
    provider refused shown disabled, ``pressed`` ones marked; remix forms when the job's
    requester had Remix on; then ℹ️ with ``info``."""
    offered = offer(job, size)
    if not offered.actions and not info:
        return ()
    return task_buttons(
        offered.actions,
        job.id,
        pressed=pressed,
        disabled=offered.refused,
        remix=offered.remix,
        max_per_row=max_per_row,
        info=info,
    )
