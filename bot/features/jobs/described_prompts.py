"""Starting the prompts a ``/describe`` answered, each as an imagine derivative of the describe
job: a pick (``1``–``4``, :mod:`bot.features.jobs.describe`) and the jobs of an Imagine all
batch, which the batch queue starts (:mod:`bot.features.jobs.batch_queue`).

These prompts are text the user never typed, so each is screened (moderation: the router's
screen, :class:`~bot.features.jobs.prompt_translation.ScreensPrompts`) as if typed before it
starts (:meth:`DescribedPrompts.screened`): the same refusal, nothing stored, no provider call.
An Imagine all batch's are screened as Imagine all is pressed, again as its Run is
(:meth:`bot.features.jobs.batches.Batches.on_button`) and again as a queued one starts
(:class:`bot.features.jobs.batch_queue.BatchQueue`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from bot.api import ImagineRequest, ProcessMode, ProviderClient
from bot.features.jobs.follow_up_calls import choice
from bot.features.jobs.follow_ups import version_for
from bot.features.jobs.images import PROCESS_MODES
from bot.features.jobs.params import DescribeParams, ImageParams, JobResult
from bot.features.jobs.screens import ScreensPrompts
from bot.features.jobs.starter import JobSpec, JobStarter, TaskCall
from bot.kernel import ButtonPress, Command, ModalSubmit, OptionValue, UserError, _
from bot.refs import NO_JOB
from storage import Batch, Job

ALL: Final = "describe_all"
"""Imagine all's action; job ``n`` of its batch is the derivative ``describe_all:n``."""
DONE: Final = ("finished", "posting", "posted")
PARENT: Final = "describe"
"""The option of an Imagine all job naming its describe job."""
NUMBER: Final = "number"
"""The option of an Imagine all job naming which of the prompts it is."""


def described(parent: Job) -> list[str]:
    """The prompts of the finished describe job ``parent`` (at most four)."""
    if parent.family != "task" or parent.type != "describe" or parent.status not in DONE:
        raise UserError(_("That button does not work on this message."))
    return list(JobResult.of(parent).prompts[:4])


def pressed_already() -> str:
    """The answer to Imagine all once its prompts were started."""
    return _(
        "Imagine all was pressed already: its prompts have started, or wait in the queue for a "
        "free place among your jobs."
    )


class DescribedPrompts:
    """Starts a described prompt (see the module docstring); ``screen`` is the moderation
    check (None: none)."""

    def __init__(
        self, starter: JobStarter, provider: ProviderClient, screen: ScreensPrompts | None
    ) -> None:
        self._starter = starter
        self._tasks = provider.tasks
        self._screen = screen

    async def screened(self, event: Command | ButtonPress | ModalSubmit, prompt: str) -> None:
        """Refuse (:class:`UserError`) ``prompt`` as the same prompt typed would be."""
        if self._screen is not None:
            await self._screen.screen(event, {"prompt": prompt})

    @staticmethod
    def mode(parent: Job) -> ProcessMode | None:
        """The process mode the describe job ran in, which its prompts are imagined in."""
        return choice(DescribeParams.of(parent).process_mode, PROCESS_MODES, "process_mode")

    async def start(
        self, event: Command | ButtonPress | ModalSubmit, parent: Job, prompt: str, key: str
    ) -> Job:
        """Start ``prompt``, a derivative of ``parent`` under ``key`` (a second start of the
        same key finds the first job), screened before (:meth:`screened`)."""
        mode = self.mode(parent)
        request = ImagineRequest(prompt=prompt, process_mode=mode)
        params = ImageParams(process_mode=mode, model_version=version_for(prompt, None))
        spec = JobSpec("task", "imagine", prompt, params, parent, key, webhook=True)
        return await self._starter.start(event, spec, TaskCall(request, self._tasks.imagine))

    async def started_before(self, batch: Batch) -> str | None:
        """Why an Imagine all ``batch`` is not to run: Imagine all started the prompts of its
        describe job already (another preview's Run), or None."""
        jobs: list[Mapping[str, OptionValue]] = batch.command.get("jobs", [])
        parent = await self._starter.store.jobs.get_job(str(jobs[0][PARENT])) if jobs else None
        if parent is not None and ALL in JobResult.of(parent).pressed:
            return pressed_already()
        return None

    async def start_queued(self, command: Command, options: Mapping[str, OptionValue]) -> None:
        """Start job ``options[NUMBER]`` of an Imagine all batch (the queue's start for such
        batches: ``command`` carries the batch's key for it; the queue screened its prompt)."""
        parent = await self._starter.store.jobs.get_job(str(options[PARENT]))
        if parent is None:
            raise UserError(_(NO_JOB))
        described(parent)
        key = f"{ALL}:{options[NUMBER]}"
        await self.start(command, parent, str(options["prompt"]), key)
