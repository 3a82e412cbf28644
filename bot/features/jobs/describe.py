"""The buttons under a ``/describe`` result, as Midjourney's: ``1``–``4`` imagine that prompt,
``🔄`` describes the image again, ``Imagine all`` imagines the four prompts.

A number opens the prompt for editing first (a form pre-filled with it), unless the user has
``remix`` set to off in ``/settings``: then it runs at once. Each start is a derivative of the
describe job (so a second press says where the first one is): ``describe_pickN`` (at once) or
``describe_pickN:<digest of the edited prompt>``, ``describe_again``, ``describe_all:N``.
Imagine all starts what the user's caps allow and names the prompts it could not start.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from bot.api import DescribeRequest, ImagineRequest, ProcessMode, ProviderClient
from bot.features.jobs.buttons import DESCRIBE_ACTIONS
from bot.features.jobs.follow_up_calls import choice, values_digest
from bot.features.jobs.follow_ups import version_for
from bot.features.jobs.forms import PROMPT_FIELD, pick_form
from bot.features.jobs.images import PROCESS_MODES
from bot.features.jobs.input_checks import check_form_prompt
from bot.features.jobs.params import DescribeParams, ImageParams, JobResult
from bot.features.jobs.starter import JobSpec, JobStarter, TaskCall
from bot.kernel import (
    ButtonPress,
    Command,
    CommandError,
    FormError,
    ModalSubmit,
    OptionValue,
    UserError,
    _,
)
from bot.outbox import OpenForm, WritePolicy
from bot.refs import JobReferent, RefKind, Work
from storage import Job, SettingsReader

AGAIN = "describe_again"
ALL = "describe_all"
DONE = ("finished", "posting", "posted")


class DescribeButtons:
    """The describe result's buttons (a feature of the core)."""

    commands: frozenset[str] = frozenset()
    actions: ClassVar[Mapping[str, RefKind]] = dict.fromkeys(
        (*DESCRIBE_ACTIONS, AGAIN, ALL), RefKind.JOB
    )
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys((*DESCRIBE_ACTIONS, AGAIN, ALL), Work.PAID)

    def __init__(
        self, starter: JobStarter, provider: ProviderClient, settings: SettingsReader
    ) -> None:
        self._starter = starter
        self._tasks = provider.tasks
        self._settings = settings

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
                await self._imagine(event, parent, prompt, event.action)
                return
            form = OpenForm(event, pick_form(event.action, parent.id, prompt))
            await self._starter.outbox.write(event.place, form, WritePolicy.NOW)

    def check_modal(self, event: ModalSubmit) -> None:
        """The edited prompt's own checks (:class:`~bot.kernel.FormError` beside it)."""
        prompt = event.values.get(PROMPT_FIELD, "").strip()
        if not prompt:
            raise FormError(PROMPT_FIELD, _("The prompt is empty; write what to imagine."))
        check_form_prompt(prompt)

    async def on_modal(self, event: ModalSubmit, referent: JobReferent) -> None:
        """Imagine the edited prompt (the form comes back when it is refused)."""
        parent = referent.job
        self._number(event.action, self._prompts(parent))
        prompt = event.values.get(PROMPT_FIELD, "").strip()
        try:
            self.check_modal(event)
        except CommandError as error:
            again = pick_form(event.action, parent.id, prompt)
            await self._starter.reopen(event, again, error)
            return
        key = f"{event.action}:{values_digest(prompt)}"
        await self._imagine(event, parent, prompt, key)

    @staticmethod
    def _prompts(parent: Job) -> list[str]:
        if parent.family != "task" or parent.type != "describe" or parent.status not in DONE:
            raise UserError(_("That button does not work on this message."))
        return list(JobResult.of(parent).prompts[:4])

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

    @staticmethod
    def _mode(parent: Job) -> ProcessMode | None:
        return choice(DescribeParams.of(parent).process_mode, PROCESS_MODES, "process_mode")

    async def _imagine(self, event: ButtonPress | ModalSubmit, parent: Job, prompt: str,
                       key: str) -> Job:  # fmt: skip
        mode = self._mode(parent)
        request = ImagineRequest(prompt=prompt, process_mode=mode)
        params = ImageParams(process_mode=mode, model_version=version_for(prompt, None))
        spec = JobSpec("task", "imagine", prompt, params, parent, key, webhook=True)
        return await self._starter.start(event, spec, TaskCall(request, self._tasks.imagine))

    async def _describe_again(self, event: ButtonPress, parent: Job) -> None:
        image_url = DescribeParams.of(parent).image_url
        mode = self._mode(parent)
        request = DescribeRequest(image_url=image_url, process_mode=mode)
        self._tasks.check(request)
        params = DescribeParams(image_url=image_url, process_mode=mode)
        spec = JobSpec("task", "describe", "", params, parent, AGAIN, webhook=True)
        await self._starter.start(event, spec, TaskCall(request, self._tasks.describe))

    async def _imagine_all(self, event: ButtonPress, parent: Job, prompts: list[str]) -> None:
        refused: list[str] = []
        for number, prompt in enumerate(prompts, start=1):
            try:
                await self._imagine(event, parent, prompt, f"{ALL}:{number}")
            except UserError as error:
                refused.append(f"{number}: {error}")
        if refused:
            listed = "\n".join(refused)
            raise UserError(_("Imagine all could not start every prompt:\n{listed}", listed=listed))
