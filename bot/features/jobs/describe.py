"""The buttons under a ``/describe`` result, as Midjourney's: ``1``–``4`` imagine that prompt,
``🔄`` describes the image again, ``Imagine all`` imagines the four prompts.

A number opens the prompt for editing first (a form pre-filled with it), unless the user has
``remix`` set to off in ``/settings``: then it runs at once. Each start is a derivative of the
describe job (so a second press says where the first one is): ``describe_pickN`` (at once) or
``describe_pickN:<digest of the edited prompt>``, ``describe_again``. Each prompt
picked is screened as if typed (:mod:`bot.features.jobs.described_prompts`; an edited one by the
router, as any form). Imagine all is a batch of the prompts, as ``/imagine {a, b, c, d}`` is
(:mod:`bot.features.jobs.batches`): each screened as if typed, then the private preview with
the estimated credits and Run and Cancel; Run starts those that fit under the user's cap and
queues the rest, job ``n`` the derivative ``describe_all:n`` (so that it starts once, however
often Imagine all or Run is pressed), and once one started Imagine all says so instead.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from bot.api import DescribeRequest, ProviderClient
from bot.features.jobs.batch_queue import START
from bot.features.jobs.batches import Batches
from bot.features.jobs.buttons import DESCRIBE_ACTIONS
from bot.features.jobs.described_prompts import (
    ALL,
    NUMBER,
    PARENT,
    DescribedPrompts,
    described,
    pressed_already,
)
from bot.features.jobs.follow_up_calls import values_digest
from bot.features.jobs.form_prompts import FormPrompts, read_form_prompt
from bot.features.jobs.forms import PROMPT_FIELD, form_for
from bot.features.jobs.params import DescribeParams, JobResult
from bot.features.jobs.starter import JobSpec, JobStarter, TaskCall
from bot.kernel import (
    ButtonPress,
    Command,
    CommandError,
    FormError,
    Modal,
    ModalSubmit,
    OptionValue,
    UserError,
    _,
)
from bot.outbox import OpenForm, WritePolicy
from bot.refs import JobReferent, RefKind, Work
from storage import Job, SettingsReader

AGAIN = "describe_again"


class DescribeButtons:
    """The describe result's buttons (a feature of the core)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = dict.fromkeys(
        (*DESCRIBE_ACTIONS, AGAIN, ALL), RefKind.JOB
    )
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys((*DESCRIBE_ACTIONS, AGAIN, ALL), Work.PAID)

    def __init__(
        self,
        starter: JobStarter,
        provider: ProviderClient,
        settings: SettingsReader,
        prompts: DescribedPrompts,
        batches: Batches,
        form_prompts: FormPrompts | None = None,
    ) -> None:
        """``form_prompts`` reads an edited prompt (None: without saved options or moderation,
        :class:`FormPrompts`)."""
        self._starter = starter
        self._form_prompts = form_prompts or FormPrompts(None, None)
        self._tasks = provider.tasks
        self._settings = settings
        self._described = prompts
        self._batches = batches

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("genbot has no such command."))

    async def on_button(self, event: ButtonPress, referent: JobReferent) -> None:
        """Edit-then-imagine (or imagine) a prompt, describe again, or imagine all four."""
        parent = referent.job
        prompts = self._prompts(parent)
        if event.action == AGAIN:
            await self._describe_again(event, parent)
        elif event.action == ALL:
            await self._imagine_all(event, parent, prompts)
        else:
            number = self._number(event.action, prompts)
            prompt = prompts[number - 1]
            if await self._runs_at_once(event):
                await self._described.screened(event, prompt)
                await self._described.start(event, parent, prompt, event.action)
                return
            form = OpenForm(event, self._pick_form(event.action, parent.id, prompt))
            await self._starter.outbox.write(event.place, form, WritePolicy.NOW)

    def check_modal(self, event: ModalSubmit) -> None:
        """The edited prompt's own checks (:class:`~bot.kernel.FormError` beside it): an
        ``/imagine`` prompt's (:func:`read_form_prompt`)."""
        prompt = event.values.get(PROMPT_FIELD, "").strip()
        if not prompt:
            raise FormError(PROMPT_FIELD, _("The prompt is empty; write what to imagine."))
        read_form_prompt(prompt)

    async def on_modal(self, event: ModalSubmit, referent: JobReferent) -> None:
        """Imagine the edited prompt, read as ``/imagine``'s is (:class:`FormPrompts`: the
        user's saved options and suffix put in); the form comes back when it is refused."""
        parent = referent.job
        prompts = self._prompts(parent)
        described_prompt = prompts[self._number(event.action, prompts) - 1]
        prompt = event.values.get(PROMPT_FIELD, "").strip()
        try:
            self.check_modal(event)
            read = await self._form_prompts.read(event, prompt, new=True)
        except CommandError as error:
            values = {**event.values, PROMPT_FIELD: prompt}
            again = self._pick_form(event.action, parent.id, described_prompt, values)
            await self._starter.reopen(event, again, error)
            return
        key = f"{event.action}:{values_digest(prompt)}"
        await self._described.start(event, parent, read, key)

    @staticmethod
    def _pick_form(
        action: str, ref: str, prompt: str, values: Mapping[str, str] | None = None
    ) -> Modal:
        """The pick's form: the described ``prompt`` shown as the form reads it back
        (:func:`form_for`, as every editor of a prompt genbot did not take from the user)."""
        form = form_for(action, ref, prompt, values=values)
        assert form is not None
        return form

    @staticmethod
    def _prompts(parent: Job) -> list[str]:
        return described(parent)

    @staticmethod
    def _number(action: str, prompts: list[str]) -> int:
        if action not in DESCRIBE_ACTIONS:
            raise UserError(_("This button is no longer supported."))
        number = int(action[-1])
        if number > len(prompts):
            raise UserError(_("This description has no prompt {number}.", number=number))
        return number

    async def _runs_at_once(self, event: ButtonPress) -> bool:
        place = event.place
        stored = await self._settings.effective_settings(
            place.platform,
            user_id=event.user.id,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id or None,
        )
        return stored.remix is False

    async def _describe_again(self, event: ButtonPress, parent: Job) -> None:
        image_url = DescribeParams.of(parent).image_url
        mode = self._described.mode(parent)
        request = DescribeRequest(image_url=image_url, process_mode=mode)
        self._tasks.check(request)
        params = DescribeParams(image_url=image_url, process_mode=mode)
        spec = JobSpec("task", "describe", "", params, parent, AGAIN, webhook=True)
        await self._starter.start(event, spec, TaskCall(request, self._tasks.describe))

    async def _imagine_all(self, event: ButtonPress, parent: Job, prompts: list[str]) -> None:
        if ALL in JobResult.of(parent).pressed:
            raise UserError(pressed_already())
        for prompt in prompts:
            await self._described.screened(event, prompt)
        jobs = [
            {"prompt": prompt, PARENT: parent.id, NUMBER: number}
            for number, prompt in enumerate(prompts, start=1)
        ]
        mode = self._described.mode(parent)
        await self._batches.preview(event, prompts, mode, {START: ALL, "jobs": jobs})
