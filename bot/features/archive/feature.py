"""The archive's commands and buttons: ``/jobs`` (a private, paged search of the user's
finished jobs; admins: the workspace's; ``/jobs export …``: what it finds as a zip handed
privately, :mod:`bot.features.archive.export`), ``/show <job id>`` (a finished job posted again
here, its buttons working) and ℹ️ (a result's info, privately).

Every job named comes through the one ref check (:mod:`bot.refs`): a button's ref is resolved
by the router before the feature sees it, ``/show``'s id by :meth:`bot.refs.Refs.job_to_show`;
a search finds only what its user may see (:meth:`ArchiveQuery.search`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import ClassVar, Final, Protocol

from bot.features.archive.export import ArchiveExport
from bot.features.archive.info import MOST_ANCESTORS, info_text
from bot.features.archive.pages import PAGE_ACTION, PAGE_SIZE, SHOW_ACTION, ArchivePages
from bot.features.archive.search import ArchiveQuery
from bot.features.jobs.copies import ResultCopies
from bot.kernel import (
    INFO_ACTION,
    N_,
    ButtonPress,
    Command,
    Event,
    ModalSubmit,
    OptionValue,
    OutMessage,
    SendsFilesPrivately,
    SendsPrivately,
    UserError,
    _,
    written,
)
from bot.outbox import Notice, Outbox, Private, PrivateFile, WritePolicy
from bot.refs import JobReferent, PageReferent, RefKind, Work
from storage import Job, JobArchive, JobReader

JOB_ID: Final = re.compile(r"^[A-Za-z0-9_-]{12}$")
SHOW_HOW: Final = N_("Say which job: {show} (a result's ℹ️ info gives its id).")
NO_FILES_HERE: Final = N_(
    "This platform cannot hand you a file privately: run /jobs export on Discord or in the "
    "playground."
)


class ShowCheck(Protocol):
    """The ref check of a job named by ``/show`` (:meth:`bot.refs.Refs.job_to_show`)."""

    async def job_to_show(self, event: Command, job_id: str) -> Job:
        """The job, when ``event``'s user may show it where they are; raises otherwise."""
        ...


@dataclass(frozen=True)
class ArchiveStorage:
    """What the archive reads: the search, and jobs (parents) by id."""

    archive: JobArchive
    jobs: JobReader


class ArchiveFeature:
    """``/jobs``, ``/show`` and ℹ️ (see the module docstring)."""

    commands = frozenset({"jobs", "show"})
    actions: ClassVar[Mapping[str, RefKind]] = {
        PAGE_ACTION: RefKind.PAGE,
        SHOW_ACTION: RefKind.JOB,
        INFO_ACTION: RefKind.JOB,
    }
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys(actions, Work.FREE)

    def __init__(
        self,
        store: ArchiveStorage,
        outbox: Outbox,
        pages: ArchivePages,
        copies: ResultCopies,
        check: ShowCheck,
        clock: Callable[[], float],
        export: ArchiveExport,
    ) -> None:
        self.store = store
        self.outbox = outbox
        self.pages = pages
        self.export = export
        self.copies = copies
        self.check = check
        self.clock = clock

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        """``/jobs``: the first page; ``/show``: the job posted again here."""
        if event.name == "show":
            job_id = str(options.get("job_id") or "").strip().strip("`")
            if not job_id:
                raise UserError(_(SHOW_HOW, show=written("show", "<job id>")))
            if not JOB_ID.match(job_id):
                raise UserError(
                    _(
                        "`{given}` is not a job id: a job id is 12 letters, digits, - or _ "
                        "(a result's ℹ️ info gives it).",
                        given=job_id[:40],
                    )
                )
            await self._show(event, await self.check.job_to_show(event, job_id))
            return
        text = str(options.get("text") or "").strip()
        exporting = options.get("export") is True or text.lower().split(" ")[0] == "export"
        if text.lower().split(" ")[0] == "export":
            options = {**options, "text": text[len("export") :]}
        query = ArchiveQuery.of(event, options, self.clock())
        if exporting:
            await self._export(event, query)
            return
        await self._page(event, query, None)

    async def on_button(self, event: ButtonPress, referent: JobReferent | PageReferent) -> None:
        """``Older ▶``, ``Show N`` and ℹ️."""
        if isinstance(referent, PageReferent):
            await self._page(event, ArchiveQuery.from_ref(referent.query), referent.job.id)
        elif event.action == SHOW_ACTION:
            await self._show(event, referent.job)
        else:
            await self._private(event, OutMessage(text=await self.info(referent.job)))

    async def on_modal(self, event: ModalSubmit, referent: JobReferent | PageReferent) -> None:
        """It has no forms."""
        raise UserError(_("This form is no longer supported."))

    async def info(self, job: Job) -> str:
        """The info of ``job`` with its parent chain."""
        ancestors: list[Job] = []
        parent_id = job.parent_job_id
        while parent_id is not None and len(ancestors) < MOST_ANCESTORS:
            parent = await self.store.jobs.get_job(parent_id)
            if parent is None:
                break
            ancestors.append(parent)
            parent_id = parent.parent_job_id
        return info_text(job, ancestors)

    async def _page(self, event: Event, query: ArchiveQuery, after: str | None) -> None:
        search = query.search(event, self.clock(), after)
        jobs = await self.store.archive.search(search, PAGE_SIZE + 1)
        shown = jobs[:PAGE_SIZE]
        message = await self.pages.page(
            shown, query, more=len(jobs) > PAGE_SIZE, first=after is None
        )
        await self._private(event, message)

    async def _export(self, event: Command, query: ArchiveQuery) -> None:
        place = event.place
        if query.workspace:
            raise UserError(
                _(
                    "An export holds your own jobs: run {export} without a scope.",
                    export=written("jobs", "export"),
                )
            )
        if not self.outbox.can(place.platform, SendsFilesPrivately):
            raise UserError(_(NO_FILES_HERE))
        export = await self.export.build(query.search(event, self.clock()))
        if not export.jobs:
            raise UserError(_("No finished job of yours matches: nothing to export."))
        stamp = datetime.fromtimestamp(self.clock(), UTC).strftime("%Y%m%d-%H%M")
        await self.outbox.write(
            place,
            PrivateFile(
                event,
                _("Your jobs, as a zip: {summary}", summary=export.summary()),
                f"genbot-jobs-{stamp}.zip",
                export.data,
            ),
            WritePolicy.NOW,
        )

    async def _show(self, event: Event, job: Job) -> None:
        if job.status in ("failed", "failed_posted", "create_failed"):
            raise UserError(_("Job `{job}` failed: it has no result to show.", job=job.id))
        if job.status != "posted" or job.result_message_id is None:
            raise UserError(
                _("Job `{job}` is not finished yet: show it once its result is in.", job=job.id)
            )
        await self.copies.post_again(job, event)

    async def _private(self, event: Event, message: OutMessage) -> None:
        if self.outbox.can(event.place.platform, SendsPrivately):
            await self.outbox.write(event.place, Private(event, message), WritePolicy.NOW)
        else:
            await self.outbox.write(event.place, Notice(event, message.text), WritePolicy.NOW)
