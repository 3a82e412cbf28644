"""Images asked for in a form: ``/describe`` without an image and ``/blend`` with fewer than two
open a form with file uploads where the platform's forms take files (Discord); elsewhere the
command is refused with what it needs, as before. The submitted form starts the job."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from bot.features.jobs.forms import (
    DIMENSION_FIELD,
    IMAGE_FIELD,
    IMAGES_FIELD,
    URL_FIELD,
    blend_upload_form,
    describe_upload_form,
)
from bot.features.jobs.images import ImageJobs
from bot.features.jobs.starter import JobStarter
from bot.kernel import ButtonPress, Command, ModalSubmit, OptionValue, UserError, _
from bot.refs import NoReferent, RefKind, Work

DESCRIBE = "describe_upload"
BLEND = "blend_upload"


class UploadForms:
    """The submitted upload forms (a feature of the core)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = dict.fromkeys((DESCRIBE, BLEND), RefKind.NONE)
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys((DESCRIBE, BLEND), Work.PAID)

    def __init__(self, starter: JobStarter, images: ImageJobs) -> None:
        self._starter = starter
        self._images = images

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("genbot has no such command."))

    async def on_button(self, event: ButtonPress, referent: NoReferent) -> None:
        raise UserError(_("This button is no longer supported."))

    async def on_modal(self, event: ModalSubmit, referent: NoReferent) -> None:
        """Describe the uploaded (or linked) image, or blend the uploaded images; a form
        missing what it needs comes back with the reason."""
        if event.action == DESCRIBE:
            files = event.attachments.get(IMAGE_FIELD, ())
            link = event.values.get(URL_FIELD, "").strip()
            if not files and not link:
                error = UserError(_("Upload an image, or give its https link."))
                await self._starter.reopen(event, describe_upload_form(), error)
                return
            async with self._starter.admitted(event):
                url = link
                if files:
                    url = await self._starter.attachment_url(event, files[0], cdn_ok=False)
                await self._images.describe(event, url)
        elif event.action == BLEND:
            files = event.attachments.get(IMAGES_FIELD, ())
            if not 2 <= len(files) <= 5:
                error = UserError(
                    _("A blend takes two to five images (got {count}).", count=len(files))
                )
                await self._starter.reopen(event, blend_upload_form(), error)
                return
            shape = event.values.get(DIMENSION_FIELD, "").strip() or None
            await self._images.blend(event, files, dimension=shape)
        else:
            raise UserError(_("This form is no longer supported."))
