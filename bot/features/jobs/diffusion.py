"""The diffusion engine (family C): ``/diffusion txt2img|img2img|upscale|controlnet`` and the
buttons under its images: 🔄 (same options, new seed), Upscale, Use as init (a form → img2img).
``img2img`` and ``controlnet`` without their starting image open a form that takes it (with
the command's prompt and options, editable) where the platform's forms take files.

Each endpoint is one entry of :data:`bot.features.jobs.diffusion_calls.DIFFUSION_ENDPOINTS` (its
request model, client method and price). A job's request body is kept in its parameters
(``endpoint`` and ``body``), so 🔄 can replay it. Images given as attachments are passed by their
URL (re-hosted when they have none and a media host exists).

Use as init keeps its image's aspect ratio (:func:`init_size`): img2img is asked for the size of
the diffusion job it reworks when that job chose one, else the image's shape at about the area of
the provider's default 512×512, each side a multiple of :data:`SIDE_STEP` and at most the
provider's maximum (1024).

Upscale and Use as init send the provider the URL of the image they rework. The provider keeps
its images for :data:`~bot.features.jobs.retention.RETENTION_DAYS` days after processing, and
genbot keeps no copy it could send instead, so on an older image both are refused up front
(:mod:`bot.features.jobs.retention`), without a call; so is 🔄 of a job they started, whose body
sends the same URL (its parameters keep when that image was processed).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar, Final

from bot.api import MAX_SIDE, ProviderClient
from bot.features.jobs import wording
from bot.features.jobs.buttons import DIFFUSION_ACTIONS
from bot.features.jobs.diffusion_calls import (
    DIFFUSION_ENDPOINTS,
    Clock,
    DiffusionEndpoint,
    endpoint_named,
)
from bot.features.jobs.diffusion_models import DiffusionModels
from bot.features.jobs.follow_up_calls import values_digest
from bot.features.jobs.forms import (
    DIFFUSION_UPLOADS,
    OPTIONS_FIELD,
    PROMPT_FIELD,
    diffusion_upload_form,
    form_for,
    read_init,
)
from bot.features.jobs.params import DiffusionParams, ImageParams, JobResult
from bot.features.jobs.result_messages import NO_IMAGE_TYPES
from bot.features.jobs.retention import check_job_kept, check_kept, processed_at
from bot.features.jobs.starter import JobSpec, JobStarter
from bot.kernel import (
    Attachment,
    ButtonPress,
    Command,
    CommandError,
    Event,
    FormError,
    LimitsSettings,
    ModalSubmit,
    OptionValue,
    UserError,
    _,
    command,
    named,
    parse_command_text,
    validate_options,
)
from bot.outbox import OpenForm, WritePolicy
from bot.refs import JobReferent, NoReferent, RefKind, Work
from storage import Job

COMMON_FIELDS: dict[str, str] = {
    "prompt": "prompt",
    "negative_prompt": "negative_prompt",
    "model_id": "model_id",
    "width": "width",
    "height": "height",
    "steps": "num_inference_steps",
    "guidance_scale": "guidance_scale",
    "seed": "seed",
    "lora_model": "lora_model",
    "lora_strength": "lora_strength",
}
CONTROLNET_FIELDS: dict[str, str] = {
    "controlnet_model": "controlnet_model",
    "controlnet_type": "controlnet_type",
    "strength": "strength",
    "controlnet_conditioning_scale": "controlnet_conditioning_scale",
}


def _body(options: Mapping[str, OptionValue], fields: Mapping[str, str]) -> dict[str, Any]:
    return {field: options[name] for name, field in fields.items() if name in options}


class DiffusionJobs:
    """The diffusion feature (see the module docstring)."""

    commands = frozenset(f"diffusion.{endpoint}" for endpoint in DIFFUSION_ENDPOINTS)
    actions: ClassVar[Mapping[str, RefKind]] = {
        **dict.fromkeys(DIFFUSION_ACTIONS, RefKind.JOB),
        **dict.fromkeys(DIFFUSION_UPLOADS.values(), RefKind.NONE),
    }
    work: ClassVar[Mapping[str, Work]] = {
        **dict.fromkeys(actions, Work.PAID),
        "diff_reroll": Work.RESUBMIT,
    }

    def __init__(
        self,
        starter: JobStarter,
        provider: ProviderClient,
        limits: LimitsSettings,
        clock: Clock,
        *,
        models: DiffusionModels | None = None,
    ) -> None:
        self._starter = starter
        self._diffusion = provider.diffusion
        self._limits = limits
        self._clock = clock
        self.models = models or DiffusionModels()
        """The checkpoint models genbot knows (ControlNet's default among them)."""

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Start the diffusion job the command names; an img2img or controlnet command without
        its starting image opens a form for it where forms take files."""
        endpoint = endpoint_named(event.name.removeprefix("diffusion."))
        if endpoint in DIFFUSION_UPLOADS and "init_image" not in event.attachments:
            needs = _(
                "/{command} needs {option} (attach a file).",
                command=event.name.replace(".", " "),
                option="init_image",
            )
            form = diffusion_upload_form(endpoint, options)
            await self._starter.offer_upload(event, form, needs)
            return
        await self._start(event, endpoint, options, event.attachments)

    async def _start(
        self,
        event: Event,
        endpoint: DiffusionEndpoint,
        options: Mapping[str, OptionValue],
        files: Mapping[str, Attachment],
    ) -> None:
        if endpoint == "controlnet" and "model_id" not in options:
            options = {**options, "model_id": self._default_model()}
        async with self._starter.admitted(event):
            body = await self._body_with_images(event, endpoint, options, files)
            upload = files.get("image") if endpoint == "upscale" else None
            await self.run(event, endpoint, body, subject=upload.filename if upload else None)

    async def _body_with_images(
        self,
        event: Event,
        endpoint: DiffusionEndpoint,
        options: Mapping[str, OptionValue],
        files: Mapping[str, Attachment],
    ) -> dict[str, Any]:
        """The request body of ``endpoint`` from the command's options and files (re-hosted
        when they must be)."""
        body = _body(options, COMMON_FIELDS)
        if endpoint == "img2img":
            body["init_image"] = await self._url(event, files, "init_image", endpoint)
            if "strength" in options:
                body["strength"] = options["strength"]
        elif endpoint == "upscale":
            body = {"url": await self._url(event, files, "image", endpoint)}
            if "scale" in options:
                body["scale"] = options["scale"]
        elif endpoint == "controlnet":
            body.update(_body(options, CONTROLNET_FIELDS))
            body["init_image"] = await self._url(event, files, "init_image", endpoint)
            for name in ("control_image", "mask_image"):
                if name in files:
                    body[name] = await self._url(event, files, name, endpoint)
        return body

    def _default_model(self) -> str:
        """The checkpoint model ControlNet runs with when the command names none."""
        default = self.models.default()
        if default is None:
            raise UserError(
                _(
                    "{controlnet} needs a checkpoint model, and genbot knows none yet: "
                    "add --model <model id> (your provider lists them; an admin can name them in "
                    "[api] diffusion_models), or run a {txt2img} first to learn the "
                    "provider's default.",
                    controlnet=named("diffusion.controlnet"),
                    txt2img=named("diffusion.txt2img"),
                )
            )
        return default

    async def _upload_submitted(self, event: ModalSubmit, endpoint: DiffusionEndpoint) -> None:
        """Start the job of a submitted img2img/controlnet upload form; one that cannot start
        comes back with the user's values and the reason."""
        spec = command(f"diffusion.{endpoint}")
        files = {name: found[0] for name, found in event.attachments.items() if found}
        text = f"{event.values.get(PROMPT_FIELD, '')} {event.values.get(OPTIONS_FIELD, '')}"
        try:
            raw = parse_command_text(spec, text)
            options = validate_options(spec, raw, attachments=files, text_style=True)
            await self._start(event, endpoint, options, files)
        except (CommandError, UserError) as error:
            again = diffusion_upload_form(endpoint, values=event.values)
            await self._starter.reopen(event, again, error)

    async def run(
        self,
        event: Event,
        endpoint: DiffusionEndpoint,
        body: Mapping[str, Any],
        *,
        parent: Job | None = None,
        action: str | None = None,
        subject: str | None = None,
        source: float | None = None,
    ) -> Job:
        """Start ``endpoint`` with ``body`` (validated first: nothing is stored on bad input);
        ``subject``: what a job without a prompt works on (else its parent's subject);
        ``source``: when the diffusion image ``body`` sends was processed, if it sends one."""
        call = DIFFUSION_ENDPOINTS[endpoint].prepare(
            self._diffusion, body, self._limits, self._clock
        )
        sent = call.request.to_body()
        prompt = str(sent.get("prompt") or "")
        if not prompt and subject is None and parent is not None:
            subject = wording.subject(parent)
        params = DiffusionParams(
            endpoint=endpoint, body=sent, subject=subject, source_processed_at=source
        )
        spec = JobSpec("diffusion", endpoint, prompt, params, parent, action)
        return await self._starter.start(event, spec, call)

    async def _url(
        self, event: Event, files: Mapping[str, Attachment], option: str, endpoint: str
    ) -> str:
        attachment = files.get(option)
        if attachment is None:
            raise UserError(
                _(
                    "/{command} needs {option} (attach a file).",
                    command="diffusion " + endpoint,
                    option=option,
                )
            )
        return await self._starter.attachment_url(event, attachment, cdn_ok=True)

    # Buttons and forms ------------------------------------------------------------------------

    async def on_button(self, event: ButtonPress, referent: JobReferent | NoReferent) -> None:
        """🔄, Upscale, or open the Use-as-init form."""
        if not isinstance(referent, JobReferent):
            raise UserError(_("This button is no longer supported."))
        parent = referent.job
        image = self._output(parent)
        if event.action in ("diff_init", "diff_upscale"):
            check_job_kept(parent, self._clock())
        if event.action == "diff_init":
            modal = form_for(event.action, parent.id, parent.prompt)
            assert modal is not None
            await self._starter.outbox.write(event.place, OpenForm(event, modal), WritePolicy.NOW)
        elif event.action == "diff_reroll":
            stored = DiffusionParams.of(parent)
            source = stored.source_processed_at
            if source is not None:
                check_kept(source, self._clock())
            endpoint = endpoint_named(stored.endpoint or parent.type)
            body = dict(stored.body)
            body.pop("seed", None)
            await self.run(event, endpoint, body, parent=parent, action=event.action, source=source)
        elif event.action == "diff_upscale":
            body = {"url": image}
            await self.run(
                event,
                "upscale",
                body,
                parent=parent,
                action=event.action,
                source=processed_at(parent),
            )
        else:
            raise UserError(_("This button is no longer supported."))

    def check_modal(self, event: ModalSubmit) -> None:
        """A Use-as-init form's own checks, or an upload form's options."""
        if event.action == "diff_init":
            read_init(event.values)
            return
        for endpoint, action in DIFFUSION_UPLOADS.items():
            if event.action == action:
                try:
                    parse_command_text(
                        command(f"diffusion.{endpoint}"), event.values.get(OPTIONS_FIELD, "")
                    )
                except CommandError as error:
                    raise FormError(OPTIONS_FIELD, str(error)) from None

    async def on_modal(self, event: ModalSubmit, referent: JobReferent | NoReferent) -> None:
        """Start img2img from a submitted Use-as-init form, or the job of an upload form."""
        for endpoint, action in DIFFUSION_UPLOADS.items():
            if event.action == action:
                await self._upload_submitted(event, endpoint_named(endpoint))
                return
        if event.action != "diff_init" or not isinstance(referent, JobReferent):
            raise UserError(_("This form is no longer supported."))
        parent = referent.job
        image = self._output(parent, any_family=True)
        check_job_kept(parent, self._clock())
        try:
            form = read_init(event.values)
        except CommandError as error:
            again = form_for(event.action, parent.id, parent.prompt, values=event.values)
            await self._starter.reopen(event, again, error)
            return
        kept = DiffusionParams.of(parent).body if parent.family == "diffusion" else {}
        body: dict[str, Any] = {
            name: kept[name] for name in ("model_id", "width", "height") if name in kept
        }
        shape = _shape(parent)
        if ("width" not in body or "height" not in body) and shape is not None:
            width, height = init_size(*shape)
            body.update(width=width, height=height)
        body.update(prompt=form.prompt, init_image=image)
        if form.strength is not None:
            body["strength"] = form.strength
        key = f"{event.action}:{values_digest(form.prompt, form.strength)}"
        source = processed_at(parent) if parent.family == "diffusion" else None
        await self.run(event, "img2img", body, parent=parent, action=key, source=source)

    @staticmethod
    def _output(parent: Job, *, any_family: bool = False) -> str:
        """The image ``parent`` made; ``any_family``: any result with an image (Use as init
        from the playground's gallery), else only a diffusion image (its buttons)."""
        if parent.family != "diffusion" and (not any_family or parent.type in NO_IMAGE_TYPES):
            raise UserError(_("That button does not work on this message."))
        if parent.status not in ("finished", "posting", "posted") or not parent.result_urls:
            raise UserError(_("That image is not finished yet; wait for its result."))
        return parent.result_urls[0]


INIT_AREA: Final = 512 * 512
"""The area Use as init asks img2img for: the provider's default size's (512×512)."""
SIDE_STEP: Final = 8
"""Use as init's sides are multiples of this: the step of Stable Diffusion's latent image (the
API names no step; a side off it is cropped or padded by such models)."""


def init_size(width: int, height: int) -> tuple[int, int]:
    """The img2img size for an init image of ``width``×``height``: its aspect ratio, at about
    :data:`INIT_AREA`, each side a multiple of :data:`SIDE_STEP` from it up to the provider's
    ``MAX_SIDE`` (a ratio too long for that area keeps its long side at the maximum)."""
    ratio = width / height
    wide, high = math.sqrt(INIT_AREA * ratio), math.sqrt(INIT_AREA / ratio)
    scale = min(1.0, MAX_SIDE / max(wide, high))

    def side(length: float) -> int:
        return min(max(round(length * scale / SIDE_STEP), 1) * SIDE_STEP, MAX_SIDE)

    return side(wide), side(high)


def _shape(job: Job) -> tuple[int, int] | None:
    """The shape of ``job``'s image: its size as posted, else (an image task not posted yet)
    the aspect ratio it was asked with; None when neither is known."""
    size = JobResult.of(job).size
    if size is not None and size[0] > 0 and size[1] > 0:
        return size
    if job.family != "task":
        return None
    aspect = ImageParams.of(job).aspect_ratio or ""
    width, sep, height = aspect.partition(":")
    if sep and width.strip().isdigit() and height.strip().isdigit() and int(width) * int(height):
        return int(width), int(height)
    return None
