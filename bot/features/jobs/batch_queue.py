"""The queue of a run batch's jobs: started in order, each as soon as its user has a free place
among their jobs at once (the tier's cap), by whichever process gets there first.

A batch that was run (:meth:`storage.Preferences.settle_batch`) and still has jobs to start is
in storage; every process looks at those every ``every`` seconds (and Run starts what fits at
once), so the jobs of a batch start after a restart too. Job ``n`` of batch ``b`` is created with
the command key ``b#n``: two processes starting it make one job (the starter finds the first).
A batch's jobs are ``/imagine`` commands, or of the kind its command names (:data:`START`:
Imagine all's, the prompts of a ``/describe``). A job is started as its user is when it starts:
within their tier as configured now (with the roles they had when they acted last on it: the
Run press as it starts what fits, else the command; the platform says a user's roles and admin
status only as they act), never as an admin's (an admin's jobs pass the cap, so only those of a
user no more an admin as Run was pressed wait), and screened as the router screens a command
(``screen``, moderation: a user banned since, a rule added since) — except as Run is pressed,
which screened them all just before. A job whose start is refused for another reason than a
full cap (a ban, a moderation rule, the daily budget, a prompt the provider's rules refuse) is
given up, and its user told privately where the batch was run (:func:`not_started`: a line per
reason, with the prompts it stopped), as privately as the platform allows outside an
interaction (Slack's and the playground's ephemeral messages; on Discord their direct messages
with genbot, else a message in the channel addressed to them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import secrets
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Final, Protocol

from bot.features.jobs.admission import Tiers
from bot.features.jobs.images import ImageJobs
from bot.features.jobs.screens import ScreensPrompts
from bot.kernel import (
    LANGUAGES,
    Attachment,
    Command,
    CommandError,
    Event,
    OptionValue,
    Place,
    User,
    UserError,
    language,
    ngettext,
    public_language,
    sentences,
    speaking,
    written_literally,
)
from bot.outbox import Notice, Outbox, WritePolicy
from storage import Batch, JobAdmission, Preferences, StorageError

log = logging.getLogger(__name__)

QUEUE_SECONDS: Final = 2.0
"""How often each process looks for queued jobs that may start."""
START: Final = "start"
"""The entry of a batch's command naming how its jobs start (none: as ``/imagine`` commands)."""
SHOWN_PROMPT: Final = 60
"""How much of a prompt :func:`not_started` shows (longer ones end with …)."""


class QueuedStarts(Protocol):
    """How the jobs of one kind of batch start (:data:`START`)."""

    async def start_queued(self, command: Command, options: Mapping[str, OptionValue]) -> None:
        """Start the job of ``options``; ``command`` carries the batch's key for it."""
        ...

    async def started_before(self, batch: Batch) -> str | None:
        """Why ``batch`` is not to run (what it would start was started already by another
        batch), or None."""
        ...


@dataclass
class Advanced:
    """What one pass over a batch did: jobs ``started`` now, ``waiting`` for a place, and the
    ``refused`` ones (each its prompt and why)."""

    started: int = 0
    waiting: int = 0
    refused: list[tuple[str, str]] = field(default_factory=list)


def not_started(refused: Sequence[tuple[str, str]], *, queued: bool) -> str:
    """What the user is told of the jobs ``refused`` (prompt, why): a line per reason, with the
    prompts it stopped, in order (``queued``: jobs the queue started later, not Run)."""
    stopped: dict[str, list[str]] = {}
    for prompt, reason in refused:
        stopped.setdefault(reason, []).append(_shown(prompt))
    lines = []
    for reason, prompts in stopped.items():
        listed = ", ".join(prompts)
        told = (
            ngettext(
                "{n} queued job of yours did not start: {prompts}.",
                "{n} queued jobs of yours did not start: {prompts}.",
                len(prompts),
                prompts=listed,
            )
            if queued
            else ngettext(
                "{n} job did not start: {prompts}.",
                "{n} jobs did not start: {prompts}.",
                len(prompts),
                prompts=listed,
            )
        )
        lines.append(sentences(told, reason))
    return "\n".join(lines)


def _shown(prompt: str) -> str:
    """``prompt`` in inline code, cut to :data:`SHOWN_PROMPT` characters."""
    flat = " ".join(prompt.replace("`", "'").split())
    return f"`{flat[: SHOWN_PROMPT - 1]}…`" if len(flat) > SHOWN_PROMPT else f"`{flat}`"


def new_batch(
    event: Event,
    attachments: Mapping[str, Attachment],
    command: Mapping[str, Any],
    *,
    total: int,
    now: float,
    seconds: float,
) -> Batch:
    """A batch of ``event``'s command holding ``command`` with ``attachments`` (their links,
    without bytes: :func:`attachments_of` reads them back) and who ran it where
    (:func:`requester`), ``total`` jobs, expiring ``seconds`` after ``now``."""
    return Batch(
        id=secrets.token_urlsafe(9),
        platform=event.place.platform,
        workspace_id=event.place.workspace_id,
        channel_id=event.place.channel_id,
        requester_id=event.user.id,
        command={
            **command,
            "attachments": {name: _link_only(a) for name, a in attachments.items()},
            "user": {**asdict(event.user), "roles": sorted(event.user.roles)},
            "place": asdict(event.place),
            "languages": [language(), public_language()],
        },
        total=total,
        created_at=now,
        expires_at=now + seconds,
    )


def _link_only(attachment: Attachment) -> dict[str, Any]:
    kept = asdict(attachment)
    kept.pop("data", None)
    return kept


def attachments_of(batch: Batch) -> dict[str, Attachment]:
    """The images sent with ``batch``'s command (links only)."""
    kept: Mapping[str, Mapping[str, Any]] = batch.command.get("attachments", {})
    return {name: Attachment(**fields) for name, fields in kept.items()}


def spoken(batch: Batch) -> AbstractContextManager[None]:
    """Speak the languages ``batch``'s command was run in (English for batches made before
    they were kept): its queued jobs start, and are refused, as if it were run now."""
    private, public = batch.command.get("languages") or (LANGUAGES[0], LANGUAGES[0])
    return speaking(str(private), public=str(public))


def requester(batch: Batch) -> tuple[User, Place]:
    """Who ran ``batch`` and where (as stored with it)."""
    who: Mapping[str, Any] = batch.command["user"]
    where: Mapping[str, Any] = batch.command["place"]
    user = User(
        id=str(who["id"]),
        name=str(who.get("name", "")),
        is_admin=bool(who.get("is_admin")),
        roles=frozenset(who.get("roles", ())),
    )
    return user, Place(**where)


class BatchQueue:
    """Starts the jobs of run batches as places free (see the module docstring); a service.
    ``starts`` starts the jobs of a batch whose command's :data:`START` names a kind (the
    others are ``/imagine`` commands); ``screen`` checks each as it starts (None: none)."""

    def __init__(
        self,
        images: ImageJobs,
        store: Preferences,
        admission: JobAdmission,
        tiers: Tiers,
        outbox: Outbox,
        *,
        every: float = QUEUE_SECONDS,
        starts: Mapping[str, QueuedStarts] | None = None,
        screen: ScreensPrompts | None = None,
    ) -> None:
        self._starts = dict(starts or {})
        self._screen = screen
        self._images = images
        self._store = store
        self._admission = admission
        self._tiers = tiers
        self._outbox = outbox
        self._every = every
        self._locks: dict[str, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None

    async def started_before(self, batch: Batch) -> str | None:
        """Why ``batch``, about to run, is not to (its kind's
        :meth:`QueuedStarts.started_before`), or None."""
        kind = batch.command.get(START)
        return None if kind is None else await self._starts[str(kind)].started_before(batch)

    async def start(self) -> None:
        """Start looking for queued jobs."""
        self._task = asyncio.create_task(self._loop(), name="genbot-batch-queue")

    async def stop(self) -> None:
        """Stop looking (a job being started finishes its start first: the task is cancelled
        between batches only when it sleeps)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self._every)
            try:
                for batch in await self._store.running_batches():
                    await self.advance(batch)
            except StorageError as error:
                log.warning("could not read the queued jobs: %s", error)
            except Exception:
                log.exception("starting queued jobs failed")

    async def advance(self, batch: Batch, origin: Event | None = None) -> Advanced:
        """Start the jobs of ``batch`` that fit now, in order (``origin``: the Run press they
        answer, if any)."""
        async with self._locks.setdefault(batch.id, asyncio.Lock()):
            done = await self._advance(batch.id, origin)
        if done.waiting == 0:
            self._locks.pop(batch.id, None)
        return done

    async def _advance(self, batch_id: str, origin: Event | None) -> Advanced:
        batch = await self._store.batch(batch_id)
        done = Advanced()
        if batch is None or batch.outcome != "run":
            return done
        if origin is None:
            with spoken(batch):
                return await self._start_queued(batch, done, origin)
        return await self._start_queued(batch, done, origin)

    async def _start_queued(self, batch: Batch, done: Advanced, origin: Event | None) -> Advanced:
        user, place = requester(batch)
        user = origin.user if origin is not None else replace(user, is_admin=False)
        jobs: list[dict[str, OptionValue]] = batch.command["jobs"]
        attachments = attachments_of(batch)
        kind = batch.command.get(START)
        start = self._images.on_command if kind is None else self._starts[str(kind)].start_queued
        started = batch.started
        while started < len(jobs):
            if await self._full(user, place):
                break
            options = jobs[started]
            command = Command(
                user=user,
                place=place,
                context=origin.context if origin is not None else None,
                name="imagine",
                options=options,
                attachments=attachments,
                key=f"{batch.id}#{started + 1}",
            )
            try:
                if origin is None:
                    await self._screened(command, options, literal=kind is not None)
                await start(command, options)
                done.started += 1
            except (UserError, CommandError) as error:
                if await self._full(user, place):
                    break
                done.refused.append((str(options.get("prompt", "")), str(error)))
            started += 1
            await self._store.mark_started(batch.id, started)
        done.waiting = len(jobs) - started
        if done.refused and origin is None:
            await self._tell(user, place, done.refused)
        return done

    async def _screened(
        self, command: Command, options: Mapping[str, OptionValue], *, literal: bool
    ) -> None:
        """Refuse (:class:`UserError`) a queued job as the router refuses a command as it is
        run: its user banned, or its prompt breaking a rule in force now (``literal``: a prompt
        sent as it is, not expanded as ``/imagine``'s)."""
        if self._screen is None:
            return
        prompt = str(options.get("prompt", ""))
        shown = {**options, "prompt": written_literally(prompt) if literal else prompt}
        await self._screen.screen(command, shown)

    async def _full(self, user: User, place: Place) -> bool:
        """Whether ``user`` is at their cap of jobs at once."""
        quota = self._tiers.quota_for(place.platform, user)
        if quota.max_active <= 0:
            return False
        refusal = await self._admission.quota_refusal(place.platform, user.id, quota)
        return refusal is not None and refusal.limit == "max_active"

    async def _tell(self, user: User, place: Place, refused: list[tuple[str, str]]) -> None:
        """Tell ``user`` privately in ``place`` which queued jobs did not start, and why: there
        is no interaction to answer, so the notice answers a command of theirs made for it."""
        told = Command(user=user, place=place, name="imagine")
        notice = Notice(told, not_started(refused, queued=True))
        try:
            await self._outbox.write(place, notice, WritePolicy.MUST_DELIVER)
        except Exception as error:
            log.warning("could not tell %s why queued jobs did not start: %s", user.id, error)
