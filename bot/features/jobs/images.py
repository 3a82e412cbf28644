"""The image engine (family B): ``/imagine``, ``/describe``, ``/blend`` and every button under
their results.

Commands use the user's (or channel's, workspace's) stored defaults for ``process_mode`` and
``aspect_ratio`` when the command gives none. Derivatives keep their origin's aspect ratio
(sent explicitly: the provider's default is 1:1) and inherit its mode. Every request is built —
and so validated — before anything is stored or posted, so bad input never leaves genbot.

A press is idempotent per (pressed job, action); a form submission per (pressed job, action,
digest of the normalised values), so a second Custom Zoom of 1.8 finds the first while a zoom of
1.6 is a new job. Derivatives that failed to start may be pressed again.

Remix (``/settings remix true``, each user's own) is read when a button is pressed: for a user
with Remix on, a press of a follow-up that takes a prompt (🔄, V1–V4, vary, zoom 2x/1.5x, pan)
opens a form pre-filled with the prompt, and the prompt submitted is sent (when changed) and
becomes the new job's prompt; with Remix off it runs at once. Results are drawn with ``remix_``
buttons for a requester with Remix on, so that Discord, which must not acknowledge a press
that opens a form, opens it at once (a press drawn otherwise opens it through a note).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, get_args

from bot.api import (
    BlendDimension,
    BlendRequest,
    DescribeRequest,
    ImagineRequest,
    ProcessMode,
    ProviderClient,
)
from bot.features.jobs import wording
from bot.features.jobs.buttons import GRID_ACTIONS, REFERENCE_ACTION, UPSCALE_ACTIONS
from bot.features.jobs.follow_up_calls import (
    FOLLOW_UPS,
    FollowUp,
    FollowUpInput,
    choice,
    values_digest,
)
from bot.features.jobs.follow_ups import ParentTask, parent_task, version_for
from bot.features.jobs.form_prompts import FormPrompts, read_form_prompt
from bot.features.jobs.forms import (
    ReferenceInput,
    RegionInput,
    ZoomInput,
    blend_upload_form,
    describe_upload_form,
    form_for,
    read_reference,
    read_region,
    read_remix,
    read_zoom,
    shape_key,
)
from bot.features.jobs.input_checks import check_attachment, check_prompt
from bot.features.jobs.masks import build_mask
from bot.features.jobs.params import BlendParams, DescribeParams, ImageParams, JobResult
from bot.features.jobs.region_preview import RegionPreviews
from bot.features.jobs.retention import check_job_kept
from bot.features.jobs.starter import JobSpec, JobStarter, TaskCall
from bot.kernel import (
    MODAL_ACTIONS,
    REFERENCE_OPTIONS,
    REMIX_ACTIONS,
    REMIX_PREFIX,
    UPLOAD_PREFIX,
    Attachment,
    ButtonPress,
    Command,
    CommandError,
    Event,
    MediaError,
    MediaFetcher,
    ModalSubmit,
    OptionValue,
    Reference,
    UserError,
    _,
    named,
    read_references,
)
from bot.outbox import OpenForm, WritePolicy
from bot.refs import JobReferent, RefKind, Work
from storage import EffectiveSettings, Job, SettingsReader

PROCESS_MODES: tuple[ProcessMode, ...] = get_args(ProcessMode)
BLEND_DIMENSIONS: tuple[BlendDimension, ...] = get_args(BlendDimension)
BLEND_DEFAULT_DIMENSION: BlendDimension = "square"
"""Sent when the user picks no dimension: the API documentation gives blend no default
(docs/provider.md#undocumented-defaults)."""
IMAGE_ACTIONS = frozenset(
    {*GRID_ACTIONS, *UPSCALE_ACTIONS, *REMIX_ACTIONS, "seed", REFERENCE_ACTION}
)
RESUBMITTING = frozenset(
    {*REMIX_ACTIONS, *(a.removeprefix(REMIX_PREFIX) for a in REMIX_ACTIONS), "outpaint_square"}
)
"""The follow-ups that generate from the pressed job's prompt again (those Remix may change,
and Make Square)."""
RESULT = "result"
"""The key a Use-as-reference form's image has among the prompt's references."""
BLEND_OPTIONS = ("image1", "image2", "image3", "image4", "image5")
NAMED_UPLOADS = "named_uploads"
"""The option of one job of a command whose ``{…}`` choices expand into several prompts: the
keys of the images sent with it that some of its prompts name (space-separated), each used only
where named (:func:`bot.kernel.named_uploads`)."""


def _named(key: str, file: Attachment) -> str:
    """What names the image sent as ``key`` for its user: ``#2`` on text platforms, else (an
    option naming its role) the file's name."""
    number = key.removeprefix(UPLOAD_PREFIX)
    return f"#{number}" if key.startswith(UPLOAD_PREFIX) and number.isdigit() else file.filename


def sent_images(event: Command) -> tuple[int, list[Reference]]:
    """How many images came with ``event`` named by number (``#2``: text platforms), and those
    whose role the platform's option gave (Discord's)."""
    uploads = sum(1 for key in event.attachments if key.startswith(UPLOAD_PREFIX))
    given = [
        Reference(role, name)
        for name, role in REFERENCE_OPTIONS.items()
        if name in event.attachments
    ]
    return uploads, given


def read_form(event: ModalSubmit) -> ZoomInput | RegionInput | ReferenceInput | str:
    """A submitted Custom Zoom, Vary (Region), Use as reference or Remix form (a remix form is
    its prompt), validated (its prompt as typed: :func:`read_form_prompt`; the user's saved
    options are put in when it runs, :class:`FormPrompts`); :class:`CommandError` says what is
    wrong."""
    form: ZoomInput | RegionInput
    if event.action == REFERENCE_ACTION:
        reference = read_reference(event.values)
        read_form_prompt(reference.prompt, attached=(Reference(reference.role, RESULT),))
        return reference
    if event.action in REMIX_ACTIONS:
        prompt = read_remix(event.values)
        read_form_prompt(prompt)
        return prompt
    if event.action == "outpaint_custom":
        form = read_zoom(event.values)
    elif event.action == "vary_region":
        form = read_region(event.values)
    else:
        raise UserError(_("This form is no longer supported."))
    if form.prompt is not None:
        read_form_prompt(form.prompt)
    return form


def _text(options: Mapping[str, OptionValue], name: str) -> str | None:
    value = options.get(name)
    return str(value) if value not in (None, "") else None


class ImageJobs:
    """The image task feature (see the module docstring)."""

    commands = frozenset({"describe", "blend"})
    """It starts ``/imagine``'s jobs too, for :class:`~bot.features.jobs.batches.Batches`."""
    actions: ClassVar[Mapping[str, RefKind]] = dict.fromkeys(IMAGE_ACTIONS, RefKind.JOB)
    work: ClassVar[Mapping[str, Work]] = {
        action: Work.RESUBMIT if action in RESUBMITTING else Work.PAID for action in IMAGE_ACTIONS
    }

    def __init__(
        self,
        starter: JobStarter,
        provider: ProviderClient,
        media: MediaFetcher,
        settings: SettingsReader,
        prompts: FormPrompts | None = None,
    ) -> None:
        """``prompts`` reads the prompts typed in its forms (None: without saved options or
        moderation, :class:`FormPrompts`)."""
        self._starter = starter
        self._prompts = prompts or FormPrompts(None, None)
        self._settings = settings
        self._tasks = provider.tasks
        self._media = media
        self._previews = RegionPreviews(starter.store.jobs, starter.outbox, media)

    # Commands ---------------------------------------------------------------------------------

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Start ``/imagine``, ``/describe`` or ``/blend``."""
        if event.name == "imagine":
            await self._imagine_command(event, options)
        elif event.name == "describe":
            await self._describe_command(event, options)
        elif event.name == "blend":
            await self._blend(event, options)

    async def _imagine_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """``/imagine``: its references read and checked (:mod:`bot.kernel.references`);
        the images sent with it (each checked to be an image first) hosted once the user's caps
        admit a job, and the prompt written with their URLs."""
        skip = options.get("skip_prompt_check")
        prompt = str(options["prompt"])
        uploads, given = sent_images(event)
        elsewhere = str(options.get(NAMED_UPLOADS, "")).split()
        read = read_references(prompt, uploads=uploads, attached=given, named_elsewhere=elsewhere)
        files = {key: event.attachments[key] for key in read.attached}
        aspect_ratio, process_mode = _text(options, "aspect_ratio"), _text(options, "process_mode")
        skip_check = bool(skip) if skip is not None else None
        # The options carry what became of the prompt's language (translated_from,
        # not_translated: bot.features.jobs.prompt_translation.Translation.into).
        translation = ImageParams.from_json(options)
        if not files:
            await self.imagine(
                event,
                prompt,
                aspect_ratio=aspect_ratio,
                process_mode=process_mode,
                skip_prompt_check=skip_check,
                translation=translation,
            )
            return
        for file in files.values():
            check_attachment(file, self._starter.max_upload_bytes)
        async with self._starter.admitted(event):
            urls = {
                key: await self._starter.attachment_url(event, file, cdn_ok=False, rehost=True)
                for key, file in files.items()
            }
            await self.imagine(
                event,
                read.written(urls),
                aspect_ratio=aspect_ratio,
                process_mode=process_mode,
                skip_prompt_check=skip_check,
                references=tuple(urls.values()),
                reference_names=tuple((urls[key], _named(key, files[key])) for key in urls),
                translation=translation,
            )

    async def imagine(
        self,
        event: Event,
        prompt: str,
        *,
        aspect_ratio: str | None = None,
        process_mode: str | None = None,
        skip_prompt_check: bool | None = None,
        references: tuple[str, ...] = (),
        reference_names: tuple[tuple[str, str], ...] = (),
        translation: ImageParams | None = None,
    ) -> Job:
        """Start an imagine job for ``event``'s user in ``event``'s place (``references``: the
        URLs genbot hosted for its reference images, already in ``prompt``; ``reference_names``:
        what names each for the user, :attr:`ImageParams.reference_names`; ``translation``:
        what became of its prompt's language, :mod:`bot.features.jobs.prompt_translation`)."""
        if not skip_prompt_check:
            check_prompt(prompt)
        aspect_ratio, process_mode, remix = await self._defaults(event, aspect_ratio, process_mode)
        request = ImagineRequest(
            prompt=prompt,
            aspect_ratio=aspect_ratio,
            process_mode=choice(process_mode, PROCESS_MODES, "process_mode"),
            skip_prompt_check=skip_prompt_check,
        )
        params = ImageParams(
            aspect_ratio=request.aspect_ratio,
            process_mode=process_mode,
            model_version=version_for(prompt, None),
            remix=remix,
            references=references,
            reference_names=reference_names,
            translated_from=translation.translated_from if translation else None,
            not_translated=translation.not_translated if translation else None,
        )
        spec = JobSpec("task", "imagine", prompt, params, webhook=True)
        return await self._starter.start(event, spec, TaskCall(request, self._tasks.imagine))

    async def describe(
        self, event: Event, image_url: str, *, process_mode: str | None = None
    ) -> Job:
        """Start a describe job for an image link."""
        __, process_mode, _remix = await self._defaults(event, None, process_mode)
        mode = choice(process_mode, PROCESS_MODES, "process_mode")
        request = DescribeRequest(image_url=image_url, process_mode=mode)
        self._tasks.check(request)
        params = DescribeParams(image_url=request.image_url, process_mode=process_mode)
        spec = JobSpec("task", "describe", "", params, webhook=True)
        return await self._starter.start(event, spec, TaskCall(request, self._tasks.describe))

    async def _describe_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        attachment = event.attachments.get("image")
        url = _text(options, "url")
        if attachment is None and url is None:
            needs = _(
                "{describe} needs an image: attach one, or give its https link.",
                describe=named("describe"),
            )
            await self._starter.offer_upload(event, describe_upload_form(), needs)
            return
        async with self._starter.admitted(event):
            if attachment is not None:
                url = await self._starter.attachment_url(event, attachment, cdn_ok=False)
            assert url is not None
            await self.describe(event, url, process_mode=_text(options, "process_mode"))

    async def _blend(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        attachments: list[Attachment] = [
            event.attachments[name] for name in BLEND_OPTIONS if name in event.attachments
        ]
        if len(attachments) < 2:
            needs = _(
                "{blend} needs at least two images (image1 and image2).", blend=named("blend")
            )
            await self._starter.offer_upload(event, blend_upload_form(), needs)
            return
        await self.blend(
            event,
            attachments,
            dimension=_text(options, "dimension"),
            process_mode=_text(options, "process_mode"),
        )

    async def blend(
        self,
        event: Event,
        attachments: Sequence[Attachment],
        *,
        dimension: str | None = None,
        process_mode: str | None = None,
    ) -> None:
        """Start a blend of two to five images for ``event``'s user (their caps are checked,
        and the options, before any image is downloaded)."""
        if not 2 <= len(attachments) <= len(BLEND_OPTIONS):
            raise UserError(_("A blend takes two to five images."))
        __, mode, remix = await self._defaults(event, None, process_mode)
        dimension = dimension or BLEND_DEFAULT_DIMENSION
        shape = choice(dimension, BLEND_DIMENSIONS, "dimension")
        speed = choice(mode, PROCESS_MODES, "process_mode")
        async with self._starter.admitted(event):
            urls = [
                await self._starter.attachment_url(event, attachment, cdn_ok=False)
                for attachment in attachments
            ]
            request = BlendRequest(image_urls=urls, dimension=shape, process_mode=speed)
            self._tasks.check(request)
            params = BlendParams(
                image_urls=tuple(urls), dimension=dimension, process_mode=mode, remix=remix
            )
            spec = JobSpec("task", "blend", "", params, webhook=True)
            await self._starter.start(event, spec, TaskCall(request, self._tasks.blend))

    async def _defaults(
        self, event: Event, aspect_ratio: str | None, process_mode: str | None
    ) -> tuple[str | None, str | None, bool]:
        """The aspect ratio and mode to use (given, else the user's defaults), and whether
        the user has Remix on."""
        stored = await self._stored(event)
        aspect = aspect_ratio or stored.aspect_ratio
        return aspect, process_mode or stored.process_mode, bool(stored.remix)

    async def mode_for(self, event: Event) -> str | None:
        """The process mode ``event``'s user's jobs get when they name none (their default,
        the channel's or the workspace's), if any."""
        return (await self._stored(event)).process_mode

    async def _stored(self, event: Event) -> EffectiveSettings:
        place = event.place
        return await self._settings.effective_settings(
            place.platform,
            user_id=event.user.id,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id or None,
        )

    async def _remix(self, event: Event) -> bool:
        """Whether ``event``'s user has Remix on (their results get remix forms)."""
        return bool((await self._stored(event)).remix)

    # Buttons and forms ------------------------------------------------------------------------

    async def on_button(self, event: ButtonPress, referent: JobReferent) -> None:
        """Open a form, or start the follow-up the pressed button asks for. Remix is the
        presser's setting when they press: a follow-up that takes a prompt opens the Remix
        form when it is on, and runs at once when it is off, whatever the button was drawn
        as."""
        parent = referent.job
        action = event.action
        if action == REFERENCE_ACTION:
            self._reference_image(parent)
            modal = form_for(action, parent.id, "")
            assert modal is not None
            await self._starter.outbox.write(event.place, OpenForm(event, modal), WritePolicy.NOW)
            return
        base = action.removeprefix(REMIX_PREFIX)
        if REMIX_PREFIX + base in REMIX_ACTIONS:
            action = REMIX_PREFIX + base if await self.opens_form(event, referent) else base
        if action in MODAL_ACTIONS:
            self._check_origin(parent, base)
            image = parent.result_urls[0] if parent.result_urls else ""
            modal = form_for(action, parent.id, parent.prompt, image_url=image)
            assert modal is not None
            await self._starter.outbox.write(event.place, OpenForm(event, modal), WritePolicy.NOW)
            return
        follow_up = FOLLOW_UPS.get(base)
        if follow_up is None:
            raise UserError(_("This button is no longer supported."))
        origin = self._check_origin(parent, action)
        given = FollowUpInput(origin.task_id, origin.aspect_ratio)
        await self._derive(event, parent, origin, follow_up, given, action)

    async def opens_form(self, event: ButtonPress, referent: JobReferent) -> bool:
        """Whether ``event`` opens the Remix form: a follow-up that takes a prompt, pressed by a
        user with Remix on (the router then screens the prompt the form sends, as it is
        submitted, not the image's stored one: it may be edited out of what a rule refuses)."""
        base = event.action.removeprefix(REMIX_PREFIX)
        return REMIX_PREFIX + base in REMIX_ACTIONS and await self._remix(event)

    def check_modal(self, event: ModalSubmit) -> None:
        """A Custom Zoom, Vary (Region) or Remix form's own checks (see :func:`read_form`)."""
        read_form(event)

    async def on_modal(self, event: ModalSubmit, referent: JobReferent) -> None:
        """Start a Custom Zoom, Vary (Region) or remixed job from a submitted form."""
        parent = referent.job
        if event.action == REFERENCE_ACTION:
            await self._use_as_reference(event, parent)
            return
        action = event.action.removeprefix(REMIX_PREFIX)
        origin = self._check_origin(parent, action)
        follow_up = FOLLOW_UPS.get(action)
        try:
            form = await self._read(event, read_form(event))
        except CommandError as error:
            image = parent.result_urls[0] if parent.result_urls else ""
            again = form_for(
                event.action, parent.id, parent.prompt, image_url=image, values=event.values
            )
            await self._starter.reopen(event, again, error)
            return
        if follow_up is None or isinstance(form, ReferenceInput):
            raise UserError(_("This form is no longer supported."))
        aspect = origin.aspect_ratio
        if isinstance(form, str):
            changed = form if form != parent.prompt else None
            given = FollowUpInput(origin.task_id, aspect, prompt=changed)
            key = f"{action}:{values_digest(read_remix(event.values))}"
            await self._derive(event, parent, origin, follow_up, given, key, prompt=form)
        elif isinstance(form, ZoomInput):
            given = FollowUpInput(
                origin.task_id, aspect, prompt=form.prompt, zoom_ratio=form.zoom_ratio
            )
            as_typed = read_zoom(event.values).prompt
            key = f"{event.action}:{values_digest(form.zoom_ratio, as_typed)}"
            await self._derive(
                event,
                parent,
                origin,
                follow_up,
                given,
                key,
                prompt=form.prompt,
                zoom_ratio=form.zoom_ratio,
            )
        else:
            area = read_region(event.values)
            digest = values_digest([shape_key(shape) for shape in area.regions], area.prompt)
            if not await self._previews.offer(event, parent, form, digest, event.values):
                await self._vary_region(event, parent, form, digest)

    async def _read(
        self, event: ModalSubmit, form: ZoomInput | RegionInput | ReferenceInput | str
    ) -> ZoomInput | RegionInput | ReferenceInput | str:
        """``form`` (:func:`read_form`'s) with its prompt read as ``/imagine``'s is
        (:class:`FormPrompts`: the user's saved options put in, screened)."""
        if isinstance(form, str):
            return await self._prompts.read(event, form)
        if isinstance(form, ReferenceInput):
            attached = (Reference(form.role, RESULT),)
            read = await self._prompts.read(event, form.prompt, new=True, attached=attached)
            return replace(form, prompt=read)
        if form.prompt is None:
            return form
        return replace(form, prompt=await self._prompts.read(event, form.prompt))

    async def _use_as_reference(self, event: ModalSubmit, parent: Job) -> None:
        """Imagine the submitted prompt with ``parent``'s image in the chosen role: the image is
        hosted again (like an attached one) where genbot hosts images, else its provider link
        is passed on."""
        image = self._reference_image(parent)
        try:
            form = await self._read(event, read_form(event))
        except CommandError as error:
            again = form_for(event.action, parent.id, "", values=event.values)
            await self._starter.reopen(event, again, error)
            return
        assert isinstance(form, ReferenceInput)
        read = read_references(form.prompt, attached=(Reference(form.role, RESULT),))
        async with self._starter.admitted(event):
            host = self._starter.media_host
            hosted: tuple[str, ...] = ()
            if host is not None:
                try:
                    fetched = await self._media.fetch(image)
                except MediaError as error:
                    raise UserError(
                        _(
                            "That image can no longer be read ({reason}); upscale it again first.",
                            reason=error.told(),
                        )
                    ) from None
                image = await host.put(fetched, f"{event.place.platform}:{event.user.id}")
                hosted = (image,)
            await self.imagine(event, read.written({RESULT: image}), references=hosted)

    def _reference_image(self, parent: Job) -> str:
        """The link of ``parent``'s image, once it is finished, while its provider keeps it
        (a diffusion image: :mod:`bot.features.jobs.retention`)."""
        if parent.status not in ("finished", "posting", "posted") or not parent.result_urls:
            raise UserError(_("That image is not finished yet; wait for its result."))
        check_job_kept(parent, self._starter.store.admission.clock())
        return parent.result_urls[0]

    async def vary_region(self, event: Event, parent: Job, form: RegionInput, digest: str) -> None:
        """Start Vary (Region) of ``parent`` with ``form`` (``digest``: its values'), its prompt
        read as typed in the form (a preview's ▶️ Run: :class:`FormPrompts`)."""
        if form.prompt is not None and isinstance(event, ModalSubmit | ButtonPress):
            form = replace(form, prompt=await self._prompts.read(event, form.prompt))
        await self._vary_region(event, parent, form, digest)

    async def _vary_region(self, event: Event, parent: Job, form: RegionInput, digest: str) -> None:
        """Start Vary (Region) of ``parent`` with ``form``, its prompt read."""
        origin = self._check_origin(parent, "vary_region")
        follow_up = FOLLOW_UPS["vary_region"]
        size = await self._image_size(parent)
        mask = await asyncio.to_thread(build_mask, form.regions, size)
        given = FollowUpInput(
            origin.task_id, origin.aspect_ratio, prompt=form.prompt, mask=mask.base64
        )
        key = f"vary_region:{digest}"
        await self._derive(event, parent, origin, follow_up, given, key, prompt=form.prompt)

    def _check_origin(self, parent: Job, action: str) -> ParentTask:
        """``parent`` as the parent of ``action``'s follow-up, once it is finished and offers
        ``action`` (see :func:`bot.features.jobs.follow_ups.parent_task`) and the provider has
        not refused it."""
        origin = parent_task(parent)
        if origin is None:
            raise UserError(_("That button does not work on this message."))
        if parent.status not in ("finished", "posting", "posted"):
            raise UserError(_("That image is not finished yet; wait for its result."))
        if action not in origin.offered:
            raise UserError(_("That button does not apply to this image."))
        if action in origin.refused:
            raise UserError(_("The service refused that on this image, so the button is disabled."))
        return origin

    async def _image_size(self, parent: Job) -> tuple[int, int]:
        stored = JobResult.of(parent).size
        if stored is not None:
            return stored
        for url in parent.result_urls:
            try:
                image = await self._media.fetch(url)
            except MediaError:
                continue
            return image.width, image.height
        raise UserError(_("The image to change is no longer available; upscale it again first."))

    async def _derive(
        self,
        event: Event,
        parent: Job,
        origin: ParentTask,
        follow_up: FollowUp[Any],
        given: FollowUpInput,
        key: str,
        *,
        prompt: str | None = None,
        zoom_ratio: str | None = None,
    ) -> Job:
        """Start ``follow_up`` of ``parent`` (``origin``: it as a parent; ``key``: the press,
        or the form and its values); its request is built before anything is stored."""
        call = follow_up.prepare(key.partition(":")[0], self._tasks, given)
        about = None if (prompt or parent.prompt).strip() else wording.subject(parent)
        names = ImageParams.of(parent).reference_names
        params = ImageParams(subject=about, reference_names=names)
        if follow_up.inherits:
            params = ImageParams(
                aspect_ratio=origin.aspect_ratio,
                process_mode=origin.process_mode,
                model_version=origin.model_version,
                remix=await self._remix(event),
                zoom_ratio=zoom_ratio,
                subject=about,
                reference_names=names,
            )
        spec = JobSpec(
            "task",
            follow_up.task_type,
            prompt or parent.prompt,
            params,
            parent,
            key,
            webhook=follow_up.webhook,
        )
        return await self._starter.start(event, spec, call)
