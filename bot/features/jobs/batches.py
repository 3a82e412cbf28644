"""Several jobs from one ``/imagine``, and the cost before the click.

``{red, blue} fox`` expands into one job per combination and ``--repeat N`` runs each N times
(:func:`bot.kernel.permutations`), at most ``[limits] max_jobs_per_command``: past it the command
is refused, saying why, before anything is stored or sent. A command that would start more than
one job, or whose jobs are estimated to cost more than ``[limits] confirm_above_credits``, first
shows its user a private preview — the prompts that will run, the estimated credits (what this
deployment was charged lately for such jobs, :meth:`Estimates.credits`, else genbot's defaults),
and the user's budget left — with Run and Cancel. Anything else starts at once, as before.

The preview is stored (a :class:`storage.Batch`) and expires after :data:`PREVIEW_SECONDS`;
images sent with the command that have no link the provider can fetch (the playground's
uploads, Slack's private files) are hosted first, so the batch keeps links only.
Imagine all under a ``/describe`` answer is such a batch too (:meth:`Batches.preview`, with the
describe job's prompts: :mod:`bot.features.jobs.describe`). Run checks every prompt of the batch
against the moderation rules in force first (``screen``, as if typed: they may have changed while
the preview waited; a refusal cancels the batch), then settles it in the database
(:meth:`storage.Preferences.settle_batch`: one press, in one process, wins; the others are told
what became of it), then starts exactly the stored jobs, each keyed ``<batch>#<n>`` so that no
job of it can start twice. Run or Cancel shows the preview again (its text is kept with the
batch) with its buttons disabled, where the platform can change the message pressed
(:class:`bot.kernel.EditsPressed`; Slack, which has no disabled buttons, without them). The ref
check (:mod:`bot.refs`) lets only the user who ran the command press them, in its workspace.

The jobs of a batch count against the user's cap on jobs at once like any other: Run starts
those that fit, and the rest wait in the queue (:mod:`bot.features.jobs.batch_queue`), each
starting when one of the user's jobs ends; the preview and Run's answer say how many wait, and
each job's progress shows its place among the user's jobs ("your job 3 of 4").
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, Final

from bot.features.jobs.admission import Tiers
from bot.features.jobs.batch_queue import BatchQueue, new_batch, not_started
from bot.features.jobs.estimates import Estimates
from bot.features.jobs.images import NAMED_UPLOADS, ImageJobs, sent_images
from bot.features.jobs.prompt_translation import PromptTranslation
from bot.features.jobs.screens import ScreensPrompts
from bot.features.jobs.starter import JobStarter
from bot.kernel import (
    PROCESS_MODES,
    Attachment,
    Button,
    ButtonPress,
    Command,
    EditsPressed,
    Event,
    LimitsSettings,
    ModalSubmit,
    OptionValue,
    OutMessage,
    RateLimited,
    SendsPrivately,
    SurfaceError,
    UserError,
    _,
    expansion,
    named,
    named_uploads,
    ngettext,
    read_references,
    sentences,
    take_repeat,
)
from bot.outbox import EditPressed, Notice, Outbox, Private, WritePolicy
from bot.refs import BatchReferent, RefKind, Work
from storage import Batch, BatchOutcome, JobAdmission, Preferences, UsageLedger

log = logging.getLogger(__name__)

PREVIEW_SECONDS: Final = 300.0
"""How long a preview's Run and Cancel work."""
RUN: Final = "batch_run"
CANCEL: Final = "batch_cancel"
SHOWN_PROMPTS: Final = 10
WRITTEN_MODES: Final = ("--relax", "--fast", "--turbo")
"""Modes a prompt may name itself (the last one counts)."""


class Batches:
    """``/imagine`` of one job or several, with the preview (see the module docstring)."""

    commands = frozenset({"imagine"})
    actions: ClassVar[Mapping[str, RefKind]] = {RUN: RefKind.BATCH, CANCEL: RefKind.BATCH}
    work: ClassVar[Mapping[str, Work]] = {RUN: Work.PAID, CANCEL: Work.FREE}

    def __init__(
        self,
        images: ImageJobs,
        starter: JobStarter,
        queue: BatchQueue,
        store: Preferences,
        admission: JobAdmission,
        ledger: UsageLedger,
        outbox: Outbox,
        tiers: Tiers,
        estimates: Estimates,
        limits: LimitsSettings,
        prompts: PromptTranslation,
        screen: ScreensPrompts | None = None,
    ) -> None:
        self._images = images
        self._starter = starter
        self._queue = queue
        self._store = store
        self._admission = admission
        self._ledger = ledger
        self._outbox = outbox
        self._tiers = tiers
        self._estimates = estimates
        self._limits = limits
        self._prompts = prompts
        self._screen = screen

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Run the command once its prompt is in the language it is sent in (translated first,
        or a translation offered: :mod:`bot.features.jobs.prompt_translation`)."""
        prepared = await self._prompts.prepared(event, options, self.hosted)
        if prepared is not None:
            await self.run(event, prepared)

    async def run(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """Start the job at once, or show the preview of the jobs (see the module docstring)."""
        prompt, written = take_repeat(str(options["prompt"]))
        if written is not None and "repeat" in options:
            raise UserError(_("--repeat was given twice (in the prompt and as an option)."))
        repeat = written or int(options.get("repeat") or 1)
        single = {name: value for name, value in options.items() if name != "repeat"}
        expanded = expansion(prompt, self._limits.max_jobs_per_command, repeat)
        prompts, dropped = expanded.prompts, expanded.dropped
        if len(set(prompts)) > 1:
            single.update(self._references_checked(event, prompts))
        jobs = [{**single, "prompt": prompt} for prompt in prompts]
        alone = len(jobs) == 1 and not dropped
        if alone and not self._may_cost_over(self._limits.confirm_above_credits):
            await self._images.on_command(event, jobs[0])
            return
        mode = await self._mode(event, single)
        if not dropped and not self.previews(len(jobs), mode):
            await self._images.on_command(event, jobs[0])
            return
        self._refuse_without_privates(event)
        attachments = await self.hosted(event)
        await self.preview(event, prompts, mode, {"jobs": jobs}, attachments, dropped=dropped)

    @staticmethod
    def _references_checked(event: Command, prompts: Sequence[str]) -> dict[str, OptionValue]:
        """Check the references of each of a command's ``prompts`` (what its ``{…}`` choices
        expand into) before any preview, deciding across them all which images sent with it
        are named (:func:`bot.kernel.named_uploads`: each used only where named; one no prompt
        names goes to every job); the option telling each job which, when images came."""
        uploads, given = sent_images(event)
        named = named_uploads(prompts, uploads)
        for prompt in dict.fromkeys(prompts):
            read_references(prompt, uploads=uploads, attached=given, named_elsewhere=named)
        return {NAMED_UPLOADS: " ".join(sorted(named))} if uploads else {}

    def previews(self, count: int, mode: str) -> bool:
        """Whether ``count`` imagines in ``mode`` are shown in a preview first: several, or
        one estimated above ``[limits] confirm_above_credits``."""
        each = self._estimates.credits(f"task:imagine:{mode}")[0]
        return count > 1 or each > self._limits.confirm_above_credits

    async def preview(
        self,
        event: Event,
        prompts: Sequence[str],
        mode: str | None,
        command: Mapping[str, Any],
        attachments: Mapping[str, Attachment] | None = None,
        *,
        dropped: int = 0,
    ) -> None:
        """Store the batch of ``prompts`` (``command``: what its queue's start reads, with
        ``"jobs"``, the options of each) and show ``event``'s user its preview, with Run and
        Cancel; ``mode`` (None: the user's default) prices them; ``dropped``: how many
        combinations the preview says were left out as duplicates."""
        self._refuse_without_privates(event)
        mode = mode or await self._images.mode_for(event) or "relax"
        each, recorded = self._estimates.credits(f"task:imagine:{mode}")
        text = await self._preview_text(event, prompts, mode, each, recorded, dropped)
        batch = new_batch(
            event,
            attachments or {},
            {**command, "preview": text},
            total=len(prompts),
            now=self._store.clock(),
            seconds=PREVIEW_SECONDS,
        )
        await self._store.save_batch(batch)
        message = OutMessage(text, buttons=(preview_buttons(batch),))
        await self._outbox.write(event.place, Private(event, message), WritePolicy.NOW)

    def _refuse_without_privates(self, event: Event) -> None:
        if not self._outbox.can(event.place.platform, SendsPrivately):
            raise UserError(
                _("This platform cannot show a private preview: run one job at a time.")
            )

    async def hosted(self, event: Command) -> dict[str, Attachment]:
        """``event``'s images, those the provider could not fetch from their own link (bytes
        only, a platform's private file) hosted first: a batch keeps links, and any process may
        run it (its hosted images are in the shared storage for ``[webhook]``'s hour)."""
        kept = dict(event.attachments)
        unlinked = {n: a for n, a in kept.items() if a.private or (a.data and not a.url)}
        if not unlinked:
            return kept
        async with self._starter.admitted(event):
            for name, attachment in unlinked.items():
                url = await self._starter.attachment_url(
                    event, attachment, cdn_ok=False, rehost=True
                )
                kept[name] = replace(attachment, url=url, data=None, private=False)
        return kept

    def _may_cost_over(self, threshold: int) -> bool:
        """Whether one imagine, in some mode, is estimated above ``threshold`` (``0``: never
        asks): else a single job starts without reading the user's default mode."""
        if threshold == 0:
            return False
        return any(
            self._estimates.credits(f"task:imagine:{mode}")[0] > threshold for mode in PROCESS_MODES
        )

    async def _mode(self, event: Command, options: Mapping[str, OptionValue]) -> str:
        given = options.get("process_mode")
        if isinstance(given, str) and given:
            return given
        written = [w for w in str(options.get("prompt", "")).split() if w in WRITTEN_MODES]
        if written:
            return written[-1].removeprefix("--")
        return await self._images.mode_for(event) or "relax"

    async def _free(self, event: Event, count: int) -> int | None:
        """How many of ``count`` jobs may start now within the user's cap of jobs at once
        (None: no cap)."""
        platform, user = event.place.platform, event.user
        quota = self._tiers.quota_for(platform, user)
        if quota.max_active <= 0:
            return None
        refusal = await self._admission.quota_refusal(platform, user.id, quota, pending=count - 1)
        if refusal is None or refusal.limit != "max_active":
            return None
        running = max(0, refusal.used - (count - 1))
        return max(0, refusal.allowed - running)

    async def _preview_text(
        self,
        event: Event,
        prompts: Sequence[str],
        mode: str,
        each: int,
        recorded: bool,
        dropped: int,
    ) -> str:
        count = len(prompts)
        total = each * count
        if recorded:
            head = ngettext(
                "**{n} job** of {imagine} in {mode} mode — estimated **{total} credits** (what "
                "such a job was charged here lately):",
                "**{n} jobs** of {imagine} in {mode} mode — estimated **{total} credits** ({n} × "
                "{each}: what such jobs were charged here lately):",
                count,
                imagine=named("imagine"),
                mode=mode,
                total=total,
                each=each,
            )
        else:
            head = ngettext(
                "**{n} job** of {imagine} in {mode} mode — estimated **{total} credits** "
                "(genbot's default price, until it has recorded what such jobs cost here):",
                "**{n} jobs** of {imagine} in {mode} mode — estimated **{total} credits** ({n} × "
                "{each}: genbot's default price, until it has recorded what such jobs cost here):",
                count,
                imagine=named("imagine"),
                mode=mode,
                total=total,
                each=each,
            )
        lines = [head]
        lines += [f"{n}. {prompt}" for n, prompt in enumerate(prompts[:SHOWN_PROMPTS], 1)]
        if count > SHOWN_PROMPTS:
            lines.append(ngettext("… and {n} more", "… and {n} more", count - SHOWN_PROMPTS))
        if dropped:
            lines.append(
                ngettext(
                    "{n} duplicate left out: a combination of the {{…}} choices gave the "
                    "same prompt as one above.",
                    "{n} duplicates left out: combinations of the {{…}} choices gave the "
                    "same prompt as one above.",
                    dropped,
                )
            )
        lines.append(await self._budget_line(event, total, count))
        free = await self._free(event, count)
        if free == 0:
            lines.append(
                ngettext(
                    "Your cap of jobs at once is reached: this job waits in the queue, starting "
                    "when one of your jobs finishes.",
                    "Your cap of jobs at once is reached: all {n} wait in the queue, each "
                    "starting when one of your jobs finishes.",
                    count,
                )
            )
        elif free is not None and free < count:
            capped = ngettext(
                "Your cap of jobs at once lets {n} start now.",
                "Your cap of jobs at once lets {n} start now.",
                free,
            )
            queued = ngettext(
                "The other {n} waits in the queue, starting when one of your jobs finishes.",
                "The other {n} wait in the queue, each starting when one of your jobs finishes.",
                count - free,
            )
            lines.append(sentences(capped, queued))
        minutes = round(PREVIEW_SECONDS / 60)
        lines.append(
            ngettext(
                "Press Run to start it, or Cancel; this preview expires in {minutes} min.",
                "Press Run to start them, or Cancel; this preview expires in {minutes} min.",
                count,
                minutes=minutes,
            )
        )
        return "\n".join(lines)

    async def _budget_line(self, event: Event, total: int, count: int) -> str:
        """What is left of the user's daily budget, and whether the ``count`` jobs, estimated
        at ``total`` credits, may go past it."""
        platform, user = event.place.platform, event.user
        quota = self._tiers.quota_for(platform, user)
        if quota.max_daily_credits <= 0:
            return _("Your daily budget has no limit.")
        spent = (await self._ledger.spent(platform, user.id, quota.refill)).credits
        left = max(0, quota.max_daily_credits - spent)
        budget = ngettext(
            "Your daily budget left: {left} of {n} credit.",
            "Your daily budget left: {left} of {n} credits.",
            quota.max_daily_credits,
            left=left,
        )
        if total <= left:
            return budget
        over = ngettext(
            "This job may cost more than that: if it does, it is refused.",
            "These jobs may cost more than that: those past it are refused.",
            count,
        )
        return sentences(budget, over)

    async def on_button(self, event: ButtonPress, referent: BatchReferent) -> None:
        """Run the previewed jobs (once), or cancel them; either way the preview's buttons are
        disabled (a press on them again, from a stale copy, is told what became of it)."""
        batch = referent.batch
        outcome: BatchOutcome = "cancelled" if event.action == CANCEL else "run"
        if outcome == "run":
            await self._screened(event, batch)
            before = await self._queue.started_before(batch)
            if before is not None:
                await self._drop(event, batch)
                await self._tell(event, before)
                return
        settled = await self._store.settle_batch(batch.id, outcome)
        await self._close_preview(event, batch)
        if not settled:
            await self._tell(event, await self._settled(batch.id))
            return
        if outcome == "cancelled":
            await self._tell(event, _("Cancelled: nothing was started."))
            return
        done = await self._queue.advance(batch, event)
        waiting, total = done.waiting, batch.total
        notes: list[str] = []
        if not waiting and not done.refused:
            notes.append(
                ngettext("All {n} job started.", "All {n} jobs started.", total)
                if total > 1
                else _("Started.")
            )
        elif waiting or done.started:
            notes.append(
                ngettext(
                    "{started} of {n} job started.",
                    "{started} of {n} jobs started.",
                    total,
                    started=done.started,
                )
            )
        if waiting:
            notes.append(
                ngettext(
                    "{n} waits in the queue, starting when one of your jobs finishes (your "
                    "cap of jobs at once).",
                    "{n} wait in the queue, each starting when one of your jobs finishes (your "
                    "cap of jobs at once).",
                    waiting,
                )
            )
        refused = not_started(done.refused, queued=False)
        told = "\n".join(text for text in (sentences(*notes), refused) if text)
        await self._tell(event, told)

    async def _screened(self, event: ButtonPress, batch: Batch) -> None:
        """Check the prompts of ``batch`` against the moderation rules in force as Run is
        pressed (they may have changed while the preview waited): a refusal cancels the batch,
        closes its preview and is the answer."""
        if self._screen is None:
            return
        jobs: list[Mapping[str, OptionValue]] = batch.command.get("jobs", [])
        try:
            for job in jobs:
                await self._screen.screen(event, {"prompt": str(job.get("prompt", ""))})
        except UserError:
            await self._drop(event, batch)
            raise

    async def _drop(self, event: ButtonPress, batch: Batch) -> None:
        """Cancel ``batch`` instead of running it, closing its preview."""
        if await self._store.settle_batch(batch.id, "cancelled"):
            await self._close_preview(event, batch)

    async def _close_preview(self, event: ButtonPress, batch: Batch) -> None:
        """The preview ``event`` was pressed on, shown again with its buttons disabled (where
        the platform has none, without them), where the platform can change it."""
        text = batch.command.get("preview")
        if not isinstance(text, str) or not self._outbox.can(event.place.platform, EditsPressed):
            return
        closed = OutMessage(text, buttons=(preview_buttons(batch, disabled=True),))
        try:
            await self._outbox.write(event.place, EditPressed(event, closed), WritePolicy.NOW)
        except (SurfaceError, RateLimited) as error:
            log.info("could not close the preview of batch %s: %s", batch.id, error)

    async def _settled(self, batch_id: str) -> str:
        batch = await self._store.batch(batch_id)
        if batch is not None and batch.outcome == "run":
            return _("These jobs were started already (their progress is in the channel).")
        if batch is not None and batch.outcome == "cancelled":
            return _("You cancelled these jobs: run the command again to start them.")
        return _("This preview expired: run the command again.")

    async def _tell(self, event: ButtonPress, text: str) -> None:
        await self._outbox.write(event.place, Notice(event, text), WritePolicy.NOW)

    async def on_modal(self, event: ModalSubmit, referent: BatchReferent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))


def preview_buttons(batch: Batch, *, disabled: bool = False) -> tuple[Button, ...]:
    """A preview's Run and Cancel (``disabled`` once one was pressed)."""
    # Translators: the button that starts the jobs a preview shows.
    run = ngettext("Run {n} job", "Run {n} jobs", batch.total)
    if batch.total == 1:
        # Translators: the button that starts the one job a preview shows.
        run = _("Run")
    return (
        Button(run, RUN, batch.id, "primary", disabled=disabled),
        # Translators: the button that drops the jobs a preview shows.
        Button(_("Cancel"), CANCEL, batch.id, "secondary", disabled=disabled),
    )
