"""Vary (Region) shown before it runs, where the form cannot draw on the image.

Discord's and Slack's forms take the area as a preset or typed coordinates and cannot change
while the user types, so a submitted Vary (Region) form does not start the job at once there:
the user first gets, privately (:class:`bot.kernel.surface.SendsPrivately`), the image
with the chosen area marked — the rest dimmed, the area tinted and outlined — with ▶️ Run and
✏️ Edit. Run starts the job exactly as the form would have (the same idempotency key, so a
second press finds the first job); Edit opens the form again with the values. The playground
draws the area on the image in its form, so it has no private previews and runs at once.

The submitted values wait in the image's own job (``result["region_drafts"]``, the last
:data:`DRAFTS_KEPT`), so Run and Edit work after a restart and on any process. A preview whose
image cannot be fetched any more shows the area as a small map of squares instead.
"""

from __future__ import annotations

import asyncio
import io
import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, ClassVar, Protocol

from PIL import Image, ImageFilter

from bot.features.jobs.forms import RegionInput, form_for, read_region, region_map
from bot.features.jobs.masks import build_mask
from bot.features.jobs.starter import JobStarter
from bot.kernel import (
    Button,
    ButtonPress,
    Command,
    CommandError,
    Event,
    ImageFile,
    MediaError,
    MediaFetcher,
    ModalSubmit,
    OptionValue,
    OutMessage,
    SendsPrivately,
    SurfaceError,
    UserError,
    _,
)
from bot.outbox import OpenForm, Outbox, Private, WritePolicy
from bot.refs import PREVIEW_SEPARATOR, PreviewReferent, RefKind, Work
from storage import Job, JobWriter

log = logging.getLogger(__name__)

RUN_ACTION = "region_run"
EDIT_ACTION = "region_edit"
PREVIEW_ACTIONS = frozenset({RUN_ACTION, EDIT_ACTION})
DRAFTS = "region_drafts"
DRAFTS_KEPT = 8
PREVIEW_SIDE = 384
_DIM = 0.6
_TINT = (88, 101, 242)


def preview_ref(job_id: str, digest: str) -> str:
    """The ``ref`` of a preview's buttons: the image's job and the submission's digest (read
    back by :class:`bot.refs.Refs`)."""
    return f"{job_id}{PREVIEW_SEPARATOR}{digest}"


def draft_of(job: Job, digest: str) -> Mapping[str, str]:
    """The form values previewed under ``digest``; :class:`UserError` once forgotten."""
    drafts = job.result.get(DRAFTS)
    values = drafts.get(digest) if isinstance(drafts, dict) else None
    if not isinstance(values, dict):
        raise UserError(_("This preview has expired: press Vary (Region) again."))
    return {str(k): str(v) for k, v in values.items()}


def marked_image(data: bytes, form: RegionInput) -> bytes:
    """``data`` (a checked image) at most :data:`PREVIEW_SIDE` pixels wide and high, as PNG,
    with ``form``'s areas tinted and outlined and the rest dimmed."""
    with Image.open(io.BytesIO(data)) as opened:
        picture = opened.convert("RGB")
    picture.thumbnail((PREVIEW_SIDE, PREVIEW_SIDE))
    with Image.open(io.BytesIO(build_mask(form.regions, picture.size).png)) as drawn:
        area = drawn.convert("L")
    dimmed = Image.blend(picture, Image.new("RGB", picture.size, "black"), _DIM)
    tinted = Image.blend(picture, Image.new("RGB", picture.size, _TINT), 0.3)
    marked = Image.composite(tinted, dimmed, area)
    edge = area.filter(ImageFilter.FIND_EDGES).filter(ImageFilter.MaxFilter(3))
    marked.paste((255, 255, 255), mask=edge)
    buffer = io.BytesIO()
    marked.save(buffer, format="PNG")
    return buffer.getvalue()


class RegionPreviews:
    """Shows Vary (Region) previews and keeps what they preview."""

    def __init__(self, store: JobWriter, outbox: Outbox, media: MediaFetcher) -> None:
        self._store = store
        self._outbox = outbox
        self._media = media

    async def offer(
        self, event: Event, parent: Job, form: RegionInput, digest: str, values: Mapping[str, str]
    ) -> bool:
        """Show ``event``'s user the preview of ``form`` on ``parent``'s image; ``False``
        where the platform shows no private messages, or its forms draw the region already
        (the job then runs at once)."""
        platform = event.place.platform
        if not self._outbox.can(platform, SendsPrivately):
            return False
        if self._outbox.profile(platform).forms_draw_regions:
            return False
        await self._keep(parent, digest, values)
        try:
            private = Private(event, await self._message(parent, form, digest))
            await self._outbox.write(event.place, private, WritePolicy.NOW)
        except SurfaceError as error:
            log.warning("no preview of %s for job %s: %s", digest, parent.id, error)
            return False
        return True

    async def _keep(self, parent: Job, digest: str, values: Mapping[str, str]) -> None:
        def keeping(result: dict[str, Any]) -> dict[str, Any]:
            kept: dict[str, Any] = dict(result.get(DRAFTS) or {})
            kept.pop(digest, None)
            kept[digest] = dict(values)
            while len(kept) > DRAFTS_KEPT:
                kept.pop(next(iter(kept)))
            return {**result, DRAFTS: kept}

        await self._store.change_job_result(parent.id, keeping)

    async def _message(self, parent: Job, form: RegionInput, digest: str) -> OutMessage:
        ref = preview_ref(parent.id, digest)
        buttons = (
            # Translators: buttons under a Vary (Region) preview: run it, or edit the areas.
            Button(_("▶️ Run"), RUN_ACTION, ref, style="primary"),
            Button(_("✏️ Edit"), EDIT_ACTION, ref),
        )
        if form.prompt:
            text = _(
                "**Vary (Region)** — the marked area will be repainted with “{prompt}”.",
                prompt=form.prompt,
            )
        else:
            text = _("**Vary (Region)** — the marked area will be repainted.")
        image = await self.image(parent, form)
        if image is None:
            text += f"\n{region_map(form.regions)}"
        images = (image,) if image is not None else ()
        return OutMessage(text=text, images=images, buttons=(buttons,))

    async def image(self, parent: Job, form: RegionInput) -> ImageFile | None:
        """``parent``'s image with ``form``'s areas marked (:func:`marked_image`), or ``None``
        when it cannot be fetched any more."""
        if not parent.result_urls:
            return None
        try:
            fetched = await self._media.fetch(parent.result_urls[0])
            png = await asyncio.to_thread(marked_image, fetched.data, form)
        except (MediaError, OSError, ValueError) as error:
            log.info("no preview image for job %s: %s", parent.id, error)
            return None
        return ImageFile(f"region-{parent.id}.png", png, "image/png")


class RegionRunner(Protocol):
    """What runs a previewed Vary (Region) (:class:`bot.features.jobs.images.ImageJobs`)."""

    async def vary_region(self, event: Event, parent: Job, form: RegionInput, digest: str) -> None:
        """Start Vary (Region) of ``parent`` with ``form``."""
        ...


class PreviewButtons:
    """▶️ Run and ✏️ Edit under a preview (a feature of the core)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = dict.fromkeys(PREVIEW_ACTIONS, RefKind.PREVIEW)
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys(PREVIEW_ACTIONS, Work.PAID)

    def __init__(self, starter: JobStarter, runner: RegionRunner, media: MediaFetcher) -> None:
        self._starter = starter
        self._runner = runner
        self._previews = RegionPreviews(starter.store.jobs, starter.outbox, media)

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("genbot has no such command."))

    async def on_modal(self, event: ModalSubmit, referent: PreviewReferent) -> None:
        raise UserError(_("This form is no longer supported."))

    async def on_button(self, event: ButtonPress, referent: PreviewReferent) -> None:
        """Run the previewed job, or open its form again with its values (and, where forms
        show images, the preview)."""
        parent, digest = referent.job, referent.digest
        pressed = replace(event, ref=parent.id)
        values = draft_of(parent, digest)
        try:
            form = read_region(values)
        except CommandError as error:
            raise UserError(str(error)) from None
        if event.action == RUN_ACTION:
            await self._runner.vary_region(pressed, parent, form, digest)
            return
        image = parent.result_urls[0] if parent.result_urls else ""
        modal = form_for("vary_region", parent.id, parent.prompt, image_url=image, values=values)
        assert modal is not None
        if self._starter.outbox.profile(event.place.platform).forms_show_images:
            modal = replace(modal, preview=await self._previews.image(parent, form))
        await self._starter.outbox.write(event.place, OpenForm(event, modal), WritePolicy.NOW)
