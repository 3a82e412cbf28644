"""The one way a job starts, shared by commands, buttons, forms and chat tools.

1. the job row, committed in status ``creating`` — only while the user is within the caps and
   budget (:class:`~bot.features.jobs.admission.Tiers`), checked in the same transaction; a
   derivative finds the job an earlier press created instead;
2. the progress message, linked to the job (so a job with a progress message may have been
   sent to the provider; one without was not);
3. the provider's create call, made once and never repeated by genbot (except after a 429,
   which started nothing: the client waits it out, and the progress message shows the wait);
4. ``submitted`` (or ``finished`` / ``processing`` for diffusion) with the provider's id,
   shown in the progress message at once;
   ``create_failed`` when the call certainly did not start anything (not sent, refused,
   invalid, still rate-limited after genbot's wait) — when the provider refused the request
   itself as invalid (a 400: a ratio or version it does not take), the progress message is
   removed and the reason raised to the user, privately (the progress message is posted
   before the call because a job with one may have reached the provider, which is what
   restarts and takeovers rely on; a refused job is recorded without it); ``unknown`` when
   the provider may have received it but never confirmed it (a 5xx, a read timeout or a
   reset after sending, an unreadable answer, cancellation): then the user is told, the job
   is never created again, a webhook may adopt it and the tracker times it out;
5. the tracker takes over.

A step whose record the database refuses (an outage) is not retried here, except the provider's
id for an accepted job (retried with backoff for ``RECORD_SECONDS``): the job's progress message
is its one answer, and the tracker settles the job once the database answers again (stranded
``creating`` jobs, see :mod:`bot.features.jobs.tracking.tracker`). Only a failure to store the job's
row reaches the user as an error (nothing was started).

Attachments the provider must fetch are passed as their URLs; when ``[webhook] public_url`` is
set, images without a usable URL (none, or a chat-platform CDN link that describe and blend
refuse) are re-hosted on the webhook receiver (see :mod:`bot.kernel.media`).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any, Generic, TypeVar

from bot.api import CreateTaskResponse, RequestModel, WebhookFields
from bot.api.errors import (
    ApiError,
    ApiTimeout,
    AuthenticationError,
    BadRequest,
    ConnectionFailed,
    DiffusionFailed,
    InvalidRequest,
    InvalidResponse,
    PermissionDenied,
    ProviderRateLimited,
    ServerError,
    TaskCreationRefused,
    UnexpectedStatus,
)
from bot.api.keys import KeyPool, NoKey, key_failure
from bot.api.ratelimit import Wait, observe_waits
from bot.api.validation import DEFAULT_UPSTREAM_CDN_HOSTS, check_http_url
from bot.features.jobs.admission import Admission, Tiers
from bot.features.jobs.forms import show_refused
from bot.features.jobs.input_checks import check_attachment
from bot.features.jobs.messages import JobMessages, TakenOver, cancel_buttons
from bot.features.jobs.params import (
    ImageParams,
    JobParams,
    JobResult,
    job_language,
    run_mode,
    with_language,
)
from bot.features.jobs.refusals import (
    FollowUpRefused,
    disable_follow_up,
    refuses_follow_up,
    refuses_request,
)
from bot.features.jobs.webhook_addresses import Webhook, WebhookAddresses
from bot.features.jobs.webhook_secrets import WebhookSecrets
from bot.features.jobs.wording import LOST_BEFORE_SUBMIT, RESTARTED_BEFORE_SUBMIT, heading
from bot.features.provider_waits import ShownWait
from bot.kernel import (
    N_,
    Attachment,
    Command,
    Event,
    MediaError,
    MediaHost,
    Modal,
    ModalSubmit,
    UserError,
    _,
    backoff,
    inspect_image,
    metrics,
    provider_text,
    speaking,
)
from bot.outbox import OpenForm, Outbox, WritePolicy
from storage import (
    ESTIMATED_CREDITS,
    Job,
    JobAdmission,
    JobFamily,
    JobStatus,
    JobType,
    JobWriter,
    KeyRoom,
    NewJob,
    NoKeyRoom,
    StorageError,
    UsageLedger,
)

log = logging.getLogger(__name__)

RequestT = TypeVar("RequestT", bound=RequestModel)

MAX_DERIVATIVE_ATTEMPTS = 20
CREATING_GRACE_SECONDS = 30.0
"""A ``creating`` job nobody is starting is settled after this long (the start of a job takes
far less: its row, its progress message and one create call)."""
RECHECK_SECONDS = 1.0
"""How often a command handled again looks whether another process started its job."""
RECORD_SECONDS = 60.0
"""How long recording a job the provider accepted is retried while storage fails."""
REPEATABLE_ACTIONS = frozenset({"reroll", "diff_reroll", "describe_again"})
"""Buttons that start a new job at each press (🔄), once the previous one has ended; a press
while it runs is answered like any used button (so a double click starts one)."""
REPEATED_AFTER = frozenset({"posted", "failed_posted"})
MAX_REPEATS = 50
ATTACHMENT_TIMEOUT_SECONDS = 30.0
UNEXPECTED = N_("genbot hit an unexpected error while starting it")
_REFUSED = (
    FollowUpRefused,
    InvalidRequest,
    TaskCreationRefused,
    BadRequest,
    AuthenticationError,
    PermissionDenied,
    DiffusionFailed,
    ProviderRateLimited,
    NoKey,
)
ALL_KEYS_BUSY = N_(
    "Every provider account genbot uses is at its limit (tasks at once, or tasks today); "
    "try again in a few minutes."
)


def creation_not_started(error: BaseException) -> bool:
    """Whether a create call that raised ``error`` certainly started nothing at the provider
    (docs/provider.md#unconfirmed-creation): it was never sent
    (``ConnectionFailed(request_sent=False)``, a request genbot refused to build) or the
    provider refused it (creation refused, 400, 401, 403 — docs/provider.md#forbidden —,
    another 4xx, a diffusion error status). Anything else (5xx, timeouts and resets after
    sending, unreadable answers, cancellation, unexpected errors) leaves the outcome unknown."""
    if isinstance(error, ConnectionFailed):
        return not error.request_sent
    if isinstance(error, UnexpectedStatus):
        return 400 <= error.status < 500
    return isinstance(error, _REFUSED)


def unconfirmed_reason(error: BaseException) -> str:
    """Why the provider's answer to a create call is missing, in a few words for users."""
    # Translators: why the service may not have got a job ("the service did not confirm this
    # job (it did not answer in time)"); "it" is the service.
    if isinstance(error, ServerError):
        return _("it answered with a server error ({status})", status=error.status)
    if isinstance(error, ApiTimeout):
        return _("it did not answer in time")
    if isinstance(error, ConnectionFailed):
        return _("the connection broke after the request was sent")
    if isinstance(error, InvalidResponse):
        return _("its answer could not be read")
    if isinstance(error, UnexpectedStatus):
        return _("it answered HTTP {status}, which its API does not document", status=error.status)
    if isinstance(error, asyncio.CancelledError):
        return _("genbot was interrupted while sending it")
    if isinstance(error, ApiError):
        return _("the call failed after the request was sent")
    return _("genbot hit an unexpected error while sending it")


@dataclass(frozen=True)
class JobSpec:
    """What a flow wants started. ``action`` is the derivative key (with ``parent``): the
    button's action, plus a digest of the form's values for forms. ``webhook`` asks for a
    completion webhook when webhooks are configured (family B, except seed)."""

    family: JobFamily
    type: JobType
    prompt: str = ""
    parameters: JobParams = field(default_factory=ImageParams)
    parent: Job | None = None
    action: str | None = None
    webhook: bool = False

    @property
    def base_action(self) -> str | None:
        """The pressed button's action: ``action`` without a form's digest (``None`` for a
        job that is no derivative)."""
        if self.parent is None or self.action is None:
            return None
        return self.action.partition(":")[0]


@dataclass(frozen=True)
class Submitted:
    """What the provider answered: its id for the job (None when it sent none), our next
    status, fields to store and credits to record now (diffusion charges when it accepts a
    job; ``credits_estimated``: genbot's price, not the provider's word)."""

    provider_id: str | None
    status: JobStatus = "submitted"
    fields: Mapping[str, Any] = field(default_factory=dict)
    credits: int = 0
    credits_estimated: bool = False


Submit = Callable[[Job, Webhook | None], Awaitable[Submitted]]


def with_webhook(request: RequestT, hook: Webhook | None) -> RequestT:
    """``request`` with the job's webhook address and secret, when it has them and the
    endpoint takes them."""
    if hook is None or not isinstance(request, WebhookFields):
        return request
    return request.model_copy(update={"webhook_endpoint": hook[0], "webhook_secret": hook[1]})


@dataclass(frozen=True)
class TaskCall(Generic[RequestT]):
    """An image task's create call (a :data:`Submit`): ``send(request)`` once the job exists,
    with the job's webhook and provider key (a follow-up's key is its parent's: task ids
    belong to the account that made them); ``refusable``: the follow-up action whose refusal
    by the provider is the button's fault (None for commands), raised as
    :class:`~bot.features.jobs.refusals.FollowUpRefused`."""

    request: RequestT
    send: Callable[..., Awaitable[CreateTaskResponse]]
    """The :class:`bot.api.TaskClient` method: ``send(request, key=…)``."""
    refusable: str | None = None

    async def __call__(self, job: Job, hook: Webhook | None) -> Submitted:
        try:
            answer = await self.send(with_webhook(self.request, hook), key=job.provider_key or "")
        except ApiError as error:
            if self.refusable is None or not refuses_follow_up(error):
                raise
            raise FollowUpRefused(self.refusable, error) from error
        return Submitted(answer.task_id)


@dataclass(frozen=True)
class StarterStorage:
    """What starting jobs uses: job creation within limits (leased to this process: the
    admission's owner), job moves and the usage ledger."""

    jobs: JobWriter
    admission: JobAdmission
    ledger: UsageLedger


class WaitsShown:
    """The :class:`~bot.features.provider_waits.ShownWait` of one provider call, made only once
    the client reports a wait (most calls never wait); :meth:`close` when the call is done."""

    def __init__(self, write: Callable[[str], Awaitable[object]]) -> None:
        self._write = write
        self._shown: ShownWait | None = None

    def __call__(self, wait: Wait) -> None:
        if self._shown is None:
            self._shown = ShownWait(self._write)
        self._shown(wait)

    async def close(self) -> None:
        """Let the last write land (bounded), when there was one."""
        if self._shown is not None:
            await self._shown.close()


class JobStarter:
    """Starts jobs (see the module docstring)."""

    def __init__(
        self,
        store: StarterStorage,
        outbox: Outbox,
        tiers: Tiers,
        delivery: JobMessages,
        starting: set[str],
        on_submitted: Callable[[str], None],
        webhook_secrets: WebhookSecrets,
        *,
        webhook_base: str | None = None,
        media_host: MediaHost | None = None,
        max_upload_bytes: int = 8 * 1024 * 1024,
        upstream_cdn_hosts: Collection[str] = DEFAULT_UPSTREAM_CDN_HOSTS,
        keys: KeyPool | None = None,
    ) -> None:
        self.store = store
        self.keys = keys
        """The provider keys a new job may go to (None: every job uses the first key)."""
        self.outbox = outbox
        self.tiers = tiers
        self.delivery = delivery
        self.starting = starting
        """The ids of the jobs this process is starting right now (added for the start, taken
        out when it returns): the tracker, which reads the same set, leaves their ``creating``
        rows alone."""
        self._on_submitted = on_submitted
        self.webhook_base = webhook_base
        self.webhook_secrets = webhook_secrets
        self.webhooks = WebhookAddresses(webhook_base) if webhook_base is not None else None
        """Which webhook address the provider accepts
        (:mod:`bot.features.jobs.webhook_addresses`)."""
        self.media_host = media_host
        self.max_upload_bytes = max_upload_bytes
        self.upstream_cdn_hosts = tuple(upstream_cdn_hosts)
        self.admission = Admission(store.admission, tiers)
        self.admitted = self.admission.admitted
        """Wraps a command's costly work before its job starts
        (:mod:`bot.features.jobs.admission`)."""

    async def start(self, event: Event, spec: JobSpec, submit: Submit) -> Job:
        """Start a job for ``event``'s user in ``event``'s place; returns it: in flight, or
        ``create_failed`` (certainly not started; the progress message says why), or
        ``unknown`` (the provider may have it; the progress message says so). Raises
        :class:`UserError` for caps, budgets and repeated presses, and with the provider's
        reason when it refused the request itself (:func:`refuses_request`): that job is
        ``create_failed`` and its progress message is gone, so the router's answer, private
        where the platform allows, is the only word of it."""
        try:
            job = await self._create_row(event, spec)
        except AlreadyStarted as before:
            return await self._started_before(before.job)
        metrics.LOG_JOB_ID.set(job.id)
        with self._starting(job.id):
            try:
                job = await self.delivery.post_progress(job, event)
            except StorageError as error:
                return self._left_to_the_tracker(job, error)
            except TakenOver:
                log.info("job %s was taken over before it was sent; not sending it", job.id)
                return await self.store.jobs.get_job(job.id) or job
            except BaseException:
                await asyncio.shield(self.delivery.mark_not_started(job, UNEXPECTED))
                raise
            shown = WaitsShown(
                lambda text: self.delivery.edit(
                    job,
                    f"⏳ {heading(job)}\n{text}",
                    policy=WritePolicy.SKIP_IF_BUSY,
                    buttons=cancel_buttons(job),
                )
            )
            try:
                with observe_waits(shown):
                    outcome = await self._submit_keyed(job, spec, submit)
            except ApiError as error:
                await shown.close()
                try:
                    settled = await asyncio.shield(self._not_confirmed(job, error))
                except StorageError as lost:
                    return self._left_to_the_tracker(job, lost)
                await self._disable_refused(spec, error)
                if (
                    refuses_request(error)
                    and settled.status == "create_failed"
                    and settled.progress_message_id is None
                ):
                    raise UserError(provider_text(error)) from None
                return settled
            except BaseException as error:
                await asyncio.shield(self._not_confirmed(job, error))
                raise
            await shown.close()
            try:
                started = await asyncio.shield(self._recorded(job, outcome))
            except StorageError as error:
                return self._left_to_the_tracker(job, error)
            await self.delivery.show_progress(started)
        pressed = spec.base_action
        if spec.parent is not None and pressed is not None and started.status != "create_failed":
            await self.delivery.marks.mark_pressed(spec.parent, pressed)
        return started

    @contextmanager
    def _starting(self, job_id: str) -> Iterator[None]:
        self.starting.add(job_id)
        try:
            yield
        finally:
            self.starting.discard(job_id)

    async def _disable_refused(self, spec: JobSpec, error: ApiError) -> None:
        """Disable the button whose follow-up the provider refused (not a form's: its values
        may be what was refused)."""
        if (
            isinstance(error, FollowUpRefused)
            and spec.parent is not None
            and spec.action is not None
            and ":" not in spec.action
        ):
            await disable_follow_up(self.store.jobs, self.delivery, spec.parent.id, error.action)

    async def _started_before(self, job: Job) -> Job:
        """A command handled again (after a restart, or by the process that took it over)
        whose job exists: that job's message is the answer. A job that never got one (its
        progress message could not be posted, so it never reached the provider) is answered
        here with why it did not start, once nobody can be starting it any more: it is this
        process's (which is not starting it), or another process got its message posted or
        settled it meanwhile (waited for up to ``CREATING_GRACE_SECONDS`` from its creation,
        on the store's clock, which stamped it), or it is older than any start takes (then
        settled here)."""
        log.info(
            "command %s already started job %s; not starting it again", job.command_key, job.id
        )
        if job.id in self.starting:
            return job
        admission = self.store.admission
        deadline = job.created_at + CREATING_GRACE_SECONDS
        while job.progress_message_id is None and job.status == "creating":
            if job.owner == admission.owner.process_id or admission.clock() >= deadline:
                job = await self.delivery.mark_not_started(job, self._why_not_started(job))
                break
            await asyncio.sleep(RECHECK_SECONDS)
            job = await self.store.jobs.get_job(job.id) or job
        if job.progress_message_id is not None:
            return job
        reason = job.error if job.status == "create_failed" and job.error else None
        reason = reason or _(self._why_not_started(job))
        raise UserError(
            _("{heading} could not start: {reason}", heading=heading(job), reason=reason)
        )

    def _why_not_started(self, job: Job) -> str:
        """Why a job nobody is starting never reached the provider: the process that created
        it stopped (it was taken over, or is another's), or this one lost its database (a
        catalog text, said by whoever shows it)."""
        if job.lease_generation > 0 or job.owner != self.store.admission.owner.process_id:
            return RESTARTED_BEFORE_SUBMIT
        return LOST_BEFORE_SUBMIT

    def _left_to_the_tracker(self, job: Job, error: StorageError) -> Job:
        """A step of starting ``job`` could not be recorded: its progress message is the one
        answer, and the tracker settles the job once the database answers (see
        :mod:`bot.features.jobs.tracking.tracker`: stranded ``creating`` jobs), so nothing is raised
        to the user on top of it."""
        log.warning("job %s: a step of its start could not be recorded (%s)", job.id, error)
        return job

    async def _recorded(self, job: Job, outcome: Submitted) -> Job:
        """:meth:`_submitted`, retried with backoff for up to ``RECORD_SECONDS`` while storage
        fails: the provider's id for the job exists nowhere else."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + RECORD_SECONDS
        failures = 0
        while True:
            try:
                return await self._submitted(job, outcome)
            except StorageError:
                failures += 1
                pause = backoff(failures, first=0.5, most=5.0)
                if loop.time() + pause > deadline:
                    raise
                await asyncio.sleep(pause)

    async def _submitted(self, job: Job, outcome: Submitted) -> Job:
        """Record ``outcome`` for ``job`` (``creating``, or ``unknown`` if it was settled as
        unconfirmed meanwhile) and answer the job as stored: as the move left it, or, when
        it had moved on first (an early webhook, an earlier try whose answer was lost), read
        again once the usage is recorded and the tracker told."""
        fields = dict(outcome.fields)
        if outcome.provider_id is not None:
            fields["provider_id"] = outcome.provider_id
        moved = await self.store.jobs.transition_answering(
            job.id, ("creating", "unknown"), outcome.status, **fields
        )
        if moved is None:
            log.info("job %s changed before its creation was recorded (early webhook)", job.id)
        if outcome.credits:
            await self.store.ledger.add_usage(
                job.platform,
                job.requester_id,
                credits=outcome.credits,
                kind=ESTIMATED_CREDITS if outcome.credits_estimated else "credits",
                job_id=job.id,
            )
        self._on_submitted(job.id)
        return moved or await self.store.jobs.get_job(job.id) or job

    async def _not_confirmed(self, job: Job, error: BaseException) -> Job:
        """Settle a job whose create call raised ``error``."""
        with speaking(job_language(job)):
            if creation_not_started(error):
                assert isinstance(error, ApiError)
                if refuses_request(error):
                    return await self.delivery.mark_refused(job, provider_text(error))
                return await self.delivery.mark_not_started(job, provider_text(error))
            log.warning("job %s may have reached the provider unconfirmed: %r", job.id, error)
            return await self.delivery.mark_unconfirmed(job, unconfirmed_reason(error))

    async def _submit_keyed(self, job: Job, spec: JobSpec, submit: Submit) -> Submitted:
        """:meth:`_submit`; a new job (no derivative: those keep their parent's key) that the
        provider refuses for its key (401, 403, insufficient credit: nothing started) is moved
        to another key with room and sent again, once per key."""
        tried = {job.provider_key}
        while True:
            try:
                return await self._submit(job, submit)
            except ApiError as error:
                if spec.parent is not None or self.keys is None or key_failure(error) is None:
                    raise
                rooms = [room for room in self._rooms(job) if room.name not in tried]
                if not rooms:
                    raise
                try:
                    name = await self.store.admission.move_to_key(job.id, rooms)
                except (NoKeyRoom, StorageError):
                    raise error from None
                if name is None:
                    raise
                log.info(
                    "job %s: key %s refused it; sent with key %s", job.id, job.provider_key, name
                )
                tried.add(name)
                job = replace(job, provider_key=name)

    def _rooms(self, job: Job | NewJob) -> list[KeyRoom]:
        """The keys a new job may go to, in the order to try (:meth:`KeyPool.order`): those
        that are in and allow its mode, else (every one is out) those that allow it anyway,
        so the provider says what is wrong. :class:`UserError` when no key allows its mode."""
        if self.keys is None:
            return []
        mode = run_mode(job) if job.family == "task" else None
        ordered = self.keys.order(mode) or self.keys.order(mode, include_out=True)
        if not ordered:
            raise UserError(
                _(
                    "No provider account genbot uses may run {mode} jobs; pick another mode.",
                    mode=mode,
                )
            )
        return [KeyRoom(key.name, key.max_concurrent, key.daily_tasks) for key in ordered]

    async def _submit(self, job: Job, submit: Submit) -> Submitted:
        """``submit`` ``job``, with its webhook in the form the provider accepts when it asked
        for one (its secret is opened only where webhooks are configured)."""
        if self.webhooks is None:
            return await submit(job, None)
        secret = await self.webhook_secrets.of(job)
        if secret is None:
            return await submit(job, None)
        return await self.webhooks.submit(job.id, secret, lambda hook: submit(job, hook))

    async def _create_row(self, event: Event, spec: JobSpec) -> Job:
        place = event.place
        new = NewJob(
            family=spec.family,
            type=spec.type,
            requester_id=event.user.id,
            platform=place.platform,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id,
            thread_id=place.thread_id,
            prompt=spec.prompt,
            parameters=with_language(spec.parameters.to_json()),
            is_dm=place.is_dm,
            parent_job_id=spec.parent.id if spec.parent is not None else None,
            action=spec.action if spec.parent is not None else None,
            webhook_secret=self.webhook_secrets.new()
            if spec.webhook and self.webhook_base
            else None,
            command_key=event.key if isinstance(event, Command) else None,
            provider_key=spec.parent.provider_key if spec.parent is not None else None,
        )
        rooms = self._rooms(new) if spec.parent is None else []
        derivative = spec.base_action is not None
        repeats = derivative and spec.base_action in REPEATABLE_ACTIONS
        attempts = MAX_REPEATS if repeats else MAX_DERIVATIVE_ATTEMPTS if derivative else 1
        for attempt in range(1, attempts + 1):
            key = new.action if attempt == 1 else f"{new.action}#{attempt}"
            try:
                job, created = await self.admission.create(
                    replace(new, action=key), event.user, rooms
                )
            except NoKeyRoom:
                raise UserError(_(ALL_KEYS_BUSY)) from None
            if created:
                metrics.JOBS_CREATED.labels(job.type).inc()
                return job
            if new.command_key is not None:
                raise AlreadyStarted(job)
            done = job.status == "create_failed" or (repeats and job.status in REPEATED_AFTER)
            if not done:
                link = await self.delivery.marks.link(job)
                raise UserError(_already(job, link, mine=job.requester_id == event.user.id))
        if repeats:
            raise UserError(
                _("🔄 ran {most} times on this image; start a new job.", most=MAX_REPEATS)
            )
        raise UserError(_("That button has failed too many times on this image; start a new job."))

    async def offer_upload(self, event: Event, form: Modal, needs: str) -> None:
        """Open ``form`` (it asks for files) where the platform's forms take files; else
        refuse with ``needs``."""
        if not self.outbox.profile(event.place.platform).forms_take_files:
            raise UserError(needs)
        await self.outbox.write(event.place, OpenForm(event, form), WritePolicy.NOW)

    async def reopen(self, event: ModalSubmit, modal: Modal | None, error: Exception) -> None:
        """Show a refused form again with the user's values and what was wrong (beside the
        field, where the platform can show it; see :func:`bot.features.jobs.forms.show_refused`)."""
        await show_refused(self.outbox, event, modal, error)

    async def attachment_url(
        self, event: Event, attachment: Attachment, *, cdn_ok: bool, rehost: bool = False
    ) -> str:
        """A URL the provider can fetch for ``attachment``: its own URL, or a re-hosted copy of
        its bytes when it has none, when it is private (a Slack file), when it is a CDN link
        and ``cdn_ok`` is false, or always with ``rehost`` (references: every process serves
        them). Without a media host such files are refused with a way out. Only inside
        :attr:`admitted` (the user's caps are checked before any download)."""
        Admission.require()
        check_attachment(attachment, self.max_upload_bytes)
        url = attachment.url.strip()
        unusable = attachment.private or (
            not cdn_ok and bool(url) and is_upstream_cdn(url, self.upstream_cdn_hosts)
        )
        hosted = self.media_host is not None and self.media_host.name_of(url) is not None
        if url and not unusable and (hosted or not rehost):
            return url
        if self.media_host is None:
            name = attachment.filename or _("That file")
            if rehost:
                raise UserError(
                    _(
                        "{name}: genbot passes attached images on to the image service only "
                        "when an admin sets [webhook] public_url. Put an https link to the image "
                        "in the prompt instead.",
                        name=name,
                    )
                )
            if unusable:
                raise UserError(
                    _(
                        "{name}: the image service cannot open files shared on {platform}. Give "
                        "an https link to the image instead, or ask an admin to set [webhook] "
                        "public_url so genbot can pass images on.",
                        name=name,
                        platform=event.place.platform.title(),
                    )
                )
            raise UserError(
                _(
                    "{name} has no link the image service could fetch; attach it somewhere that "
                    "gives a public https link.",
                    name=name,
                )
            )
        data = attachment.data
        if data is None:
            async with asyncio.timeout(ATTACHMENT_TIMEOUT_SECONDS):
                data = await self.outbox.download(event.place, attachment)
        check_attachment(replace(attachment, size=len(data)), self.max_upload_bytes)
        try:
            image = inspect_image(data)
        except MediaError as error:
            raise UserError(
                # Translators: {reason} says what is wrong with the file ("the file is empty").
                _("{name}: {reason}.", name=attachment.filename, reason=error.told())
            ) from None
        return await self.media_host.put(image, f"{event.place.platform}:{event.user.id}")


class AlreadyStarted(Exception):
    """The command asking for a job already started ``job`` (its key is the job's)."""

    def __init__(self, job: Job) -> None:
        super().__init__(job.id)
        self.job = job


def is_upstream_cdn(url: str, hosts: Collection[str]) -> bool:
    """Whether the provider refuses ``url`` as an image link for describe and blend (a link on
    one of ``hosts``, ``[api] upstream_cdn_hosts``, by the rule of
    :func:`bot.api.validation.check_http_url`; other malformed links are left to the request's
    validation)."""
    try:
        check_http_url("url", url)
    except InvalidRequest:
        return False
    try:
        check_http_url("url", url, cdn_hosts=hosts)
    except InvalidRequest:
        return True
    return False


def _already(job: Job, link: str | None, *, mine: bool) -> str:
    """What a second press of a used button says: where that job's result is (``mine``: the
    presser pressed it first; else someone else did, in an open channel or as an admin)."""
    if job.status == "unknown":
        return _(
            "That job was sent, but the service never confirmed it; genbot is watching for it "
            "and will post the result if it arrives — don't press again."
        )
    if job.status == "posted":
        state = "posted"
    elif JobResult.of(job).cancelled:
        return _(_PRESSED_MINE["cancelled"] if mine else _PRESSED_OTHER["cancelled"])
    elif job.status in ("failed", "reporting", "failed_posted"):
        state = "failed"
    else:
        state = "running"
    key = f"{state}_link" if link else state
    return _(_PRESSED_MINE[key] if mine else _PRESSED_OTHER[key], link=link)


_PRESSED_MINE = {
    "posted_link": N_("You already pressed this — [here is the result]({link})."),
    "posted": N_("You already pressed this: the result is above."),
    "cancelled": N_("You already pressed this, then cancelled that job."),
    "failed_link": N_("You already pressed this — [that job failed]({link})."),
    "failed": N_("You already pressed this — that job failed; see its report above."),
    "running_link": N_(
        "You already pressed this — [that job is running]({link}); its result will be posted there."
    ),
    "running": N_(
        "You already pressed this — that job is running; its result will be posted there."
    ),
}
"""What a second press of a button the presser pressed first says (:func:`_already`)."""
_PRESSED_OTHER = {
    "posted_link": N_("Someone already pressed this — [here is the result]({link})."),
    "posted": N_("Someone already pressed this: the result is above."),
    "cancelled": N_("Someone already pressed this, then cancelled that job."),
    "failed_link": N_("Someone already pressed this — [that job failed]({link})."),
    "failed": N_("Someone already pressed this — that job failed; see its report above."),
    "running_link": N_(
        "Someone already pressed this — [that job is running]({link}); its result will be "
        "posted there."
    ),
    "running": N_(
        "Someone already pressed this — that job is running; its result will be posted there."
    ),
}
"""What a press of a button someone else pressed first says (:func:`_already`)."""
