"""The job records: the job vocabulary (types, families, statuses and their transitions), a
new job, a stored job, quota checks and the platform messages that belong to a job.

A job's parameters and result are JSON here; the processes that hold jobs (leases) are
described here too.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from storage.records.usage import Refill

TaskType = Literal[
    "imagine",
    "describe",
    "blend",
    "upscale",
    "variation",
    "reroll",
    "inpaint",
    "outpaint",
    "pan",
    "seed",
]
"""The image task API's jobs (family ``task``)."""
DiffusionType = Literal["txt2img", "img2img", "upscale", "controlnet"]
"""The diffusion API's jobs (family ``diffusion``): the endpoint called."""
JobType = Literal[TaskType, DiffusionType]

JobFamily = Literal["task", "diffusion"]
"""``task``: the image task API (family B); ``diffusion``: the diffusion API (family C)."""

JobStatus = Literal[
    "creating",
    "submitted",
    "pending",
    "staged",
    "processing",
    "retry",
    "finished",
    "failed",
    "posting",
    "posted",
    "reporting",
    "failed_posted",
    "create_failed",
    "unknown",
    "cancelled",
]
"""Our own job lifecycle (see ``JOB_TRANSITIONS``).

- ``creating``: the row is committed *before* the provider's create call; ``provider_id`` is NULL.
- ``submitted``: the provider accepted the job; ``provider_id`` is set; no status seen yet.
- ``pending`` / ``staged`` / ``processing`` / ``retry``: mirror the provider's status
  (diffusion ``processing`` → ``processing``).
- ``finished``: the provider finished; ``result_urls`` / ``actions`` / ``result`` are stored,
  nothing is posted yet.
- ``failed``: the provider failed (or the job timed out); ``error`` is set, nothing reported yet.
- ``posting``: claimed for posting the result (``finished → posting`` by compare-and-set: only
  one poster wins). A job found in ``posting`` after a restart is posted again.
- ``posted``: terminal; the result is on the platform (``result_message_id`` set).
- ``reporting``: claimed for reporting the failure (``failed → reporting``), like ``posting``.
- ``failed_posted``: terminal; the failure was shown to the user.
- ``create_failed``: terminal; the creation certainly did not reach the provider, or the
  provider refused it (``error`` set); the flow that tried to create it answered the user.
- ``unknown``: the create call may have reached the provider but it never confirmed the job
  (a 5xx, a read timeout or a reset after sending, a restart while creating): it may be running
  and charged. Never created again; a webhook naming the job may adopt it (``provider_id`` taken
  from the notification), else it times out into ``failed``.
- ``cancelled``: the user cancelled it while the provider's task ran (the provider cannot stop
  a task: it runs to its end and is charged). Nothing more is shown to the user, but the job
  keeps its place under the user's cap (unless the provider never confirmed it: cancelled while
  ``unknown``, without a ``provider_id``) and is followed like one in flight until the provider is
  done; then it moves to ``failed`` (its ``error`` and ``result["cancelled"]`` kept, the
  ``credits`` the provider reports stored), whose delivery charges the credits and shows nothing.
"""

ALL_STATUSES: Final[frozenset[JobStatus]] = frozenset(get_args(JobStatus))
IN_FLIGHT_STATUSES: Final[frozenset[JobStatus]] = frozenset(
    ("submitted", "pending", "staged", "processing", "retry")
)
"""Known to the provider and not done there: what the tracker polls (with ``cancelled``)."""
ACTIVE_STATUSES: Final[frozenset[JobStatus]] = IN_FLIGHT_STATUSES | {
    "creating",
    "unknown",
    "cancelled",
}
"""What counts toward a user's concurrent-job cap and a provider key's ``max_concurrent`` (and
what a webhook may still change); a ``cancelled`` job without a ``provider_id`` does not count
(:data:`storage.queries.admission.COUNTS_TOWARD_CAP`)."""
UNFINISHED_STATUSES: Final[frozenset[JobStatus]] = ACTIVE_STATUSES | {
    "finished",
    "failed",
    "posting",
    "reporting",
}
"""Everything a restarted process must resume."""
TERMINAL_STATUSES: Final[frozenset[JobStatus]] = frozenset(
    ("posted", "failed_posted", "create_failed")
)

_PROVIDER_DONE: Final[frozenset[JobStatus]] = frozenset(("finished", "failed"))
JOB_TRANSITIONS: Final[Mapping[JobStatus, frozenset[JobStatus]]] = {
    "creating": IN_FLIGHT_STATUSES | _PROVIDER_DONE | {"create_failed", "unknown"},
    "unknown": IN_FLIGHT_STATUSES | _PROVIDER_DONE | {"cancelled"},
    **{
        status: IN_FLIGHT_STATUSES | _PROVIDER_DONE | {"cancelled"} for status in IN_FLIGHT_STATUSES
    },
    "cancelled": frozenset(("failed",)),
    "finished": frozenset(("posting", "posted", "failed")),
    "failed": frozenset(("reporting", "failed_posted")),
    "posting": frozenset(("posted", "failed_posted", "finished")),
    "reporting": frozenset(("failed_posted", "failed")),
    "posted": frozenset(),
    "failed_posted": frozenset(),
    "create_failed": frozenset(),
}
"""Allowed ``from → to`` moves. Staying in the same status (to update fields) is always allowed.
``posting → finished`` and ``reporting → failed`` release a claim so another attempt can run;
``unknown`` may only be adopted (in flight, finished, failed), never created again; a
``cancelled`` job only ends as ``failed`` (hidden by its delivery)."""

JOB_ID_MAX = 16
ResultChange = Callable[[dict[str, Any]], dict[str, Any] | None]
"""A job's stored result → the result to store instead (None: leave it as it is); its typed
reading is the jobs feature's (:mod:`bot.features.jobs.params`)."""


def new_job_id() -> str:
    """A fresh job id: 12 URL-safe characters (``A-Z a-z 0-9 - _``), fits in a custom id."""
    return secrets.token_urlsafe(9)


@dataclass(frozen=True, kw_only=True)
class NewJob:
    """What a caller knows when creating a job (see ``JobAdmission.create_job_within``)."""

    family: JobFamily
    type: JobType
    requester_id: str
    platform: str
    channel_id: str
    workspace_id: str = ""
    thread_id: str | None = None
    prompt: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    parent_job_id: str | None = None
    action: str | None = None
    status: JobStatus = "creating"
    provider_id: str | None = None
    webhook_secret: str | None = field(default=None, repr=False)
    id: str | None = None
    is_dm: bool = False
    command_key: str | None = None
    """The idempotency key of the command that asks for the job (the platform's stable id of
    that command): at most one job per key, whatever handles the command how often."""
    provider_key: str | None = None
    """The name of the provider key the job is sent with (a derivative: its parent's); None
    lets :meth:`storage.JobAdmission.create_job_within` choose among its ``keys``."""


@dataclass(frozen=True)
class Job:
    """A stored job. ``webhook_secret`` is kept out of ``repr`` so it never reaches a log."""

    id: str
    family: JobFamily
    type: JobType
    status: JobStatus
    provider_id: str | None
    parent_job_id: str | None
    action: str | None
    requester_id: str
    platform: str
    workspace_id: str
    channel_id: str
    thread_id: str | None
    progress_message_id: str | None
    result_message_id: str | None
    prompt: str
    parameters: dict[str, Any]
    result_urls: list[str]
    actions: list[str]
    result: dict[str, Any]
    error: str | None
    webhook_secret: str | None = field(repr=False)
    credits: int | None
    created_at: float
    updated_at: float
    finished_at: float | None
    last_polled_at: float | None
    last_webhook_at: float | None
    next_poll_at: float | None
    """When the tracker next acts on the job: a diffusion fetch while in flight, the next
    delivery attempt once ``finished`` / ``failed`` after a failed one (None: now)."""
    delivery_attempts: int = 0
    """Failed attempts to post the result or the failure report so far."""
    post_claims: int = 0
    """How often delivery claimed the job (``posting`` / ``reporting``); more than one means
    an earlier attempt may have reached the platform before it failed or the process died."""
    owner: str | None = None
    """The process that follows the job (polls, delivers) while its lease holds."""
    lease_until: float | None = None
    """When the owner's lease ends unless its heartbeat renews it; after that (or with no
    owner) another process with an adapter for the job's platform may take the job over."""
    is_dm: bool = False
    """The job was asked for in a direct message (its place's ``is_dm``)."""
    lease_generation: int = 0
    """How often the job was taken over: each claim by another process makes a new lease."""
    command_key: str | None = None
    """The idempotency key of the command that asked for it (see :class:`NewJob`)."""
    provider_key: str | None = None
    """The name of the provider key every call about the job uses (None: made before the
    pool, with its first key)."""

    @property
    def lease(self) -> Lease | None:
        """The lease this record shows (None for a job nobody holds): a write fenced with it
        happens only while it is still the job's current lease."""
        return None if self.owner is None else Lease(self.owner, self.lease_generation)


@dataclass(frozen=True, kw_only=True)
class JobSearch:
    """Which posted jobs :meth:`storage.JobArchive.search` finds on ``platform``: a
    requester's (None: everyone's outside DMs), in a workspace (None: all of them), whose
    prompt has every one of ``words``, of ``types`` (and ``family``), in a channel, created in
    ``[since, until)``, older than the job ``after`` (the last one of the page before)."""

    platform: str
    requester_id: str | None
    workspace_id: str | None
    words: tuple[str, ...] = ()
    types: tuple[JobType, ...] = ()
    family: JobFamily | None = None
    channel_id: str | None = None
    since: float | None = None
    until: float | None = None
    after: str | None = None


@dataclass(frozen=True)
class Lease:
    """One process's hold on one job: its ``owner`` and the ``generation`` of the claim.
    A process that lost a job (taken over while it stalled) holds an older generation, so
    its fenced writes change nothing."""

    owner: str
    generation: int


@dataclass(frozen=True)
class JobChannel:
    """A job's id and the channel its messages go to: what the tracker's delivery pass reads
    of each job waiting for delivery (:meth:`storage.JobTracking.unfinished_job_channels`),
    to share the delivery slots fairly among channels."""

    id: str
    platform: str
    workspace_id: str
    channel_id: str


@dataclass(frozen=True)
class JobBrief:
    """What the tracker's poll round reads of a job in flight
    (:meth:`storage.JobTracking.list_job_briefs`): enough to decide whether to poll it and to
    ask the provider; the whole row is read only for a job whose task moved."""

    id: str
    family: JobFamily
    status: JobStatus
    provider_id: str | None
    provider_key: str | None
    created_at: float
    last_polled_at: float | None
    webhook: bool
    """The job asked for webhook notifications (it has a webhook secret)."""


@dataclass(frozen=True)
class RunningJob:
    """What the progress ticker reads of every job in flight, whichever process holds it
    (:meth:`storage.JobTracking.list_running`): whose it is, for its place among its
    requester's jobs, and which process holds it; a process reads whole only the rows of the
    jobs it ticks."""

    id: str
    platform: str
    requester_id: str
    owner: str | None
    progress_message_id: str | None


@dataclass(frozen=True)
class JobMove:
    """One compare-and-set move of :meth:`storage.JobWriter.transition_many`: ``job_id`` to
    ``to_status`` with ``fields``, only from one of ``from_statuses`` (and, with ``fence``,
    only while that lease holds)."""

    job_id: str
    from_statuses: JobStatus | Iterable[JobStatus]
    to_status: JobStatus
    fields: dict[str, Any] = field(default_factory=dict)
    fence: Lease | None = None


@dataclass(frozen=True)
class JobQuota:
    """Limits checked when a job row is created (see ``JobAdmission.create_job_within``):
    at most ``max_active`` of the requester's jobs in ``ACTIVE_STATUSES`` and less than
    ``max_daily_credits`` credits in the ledger's window of ``refill`` (today, UTC, or the
    last 24 whole hours). ``0`` disables a limit."""

    max_active: int = 0
    max_daily_credits: int = 0
    refill: Refill = "daily"


@dataclass(frozen=True)
class QuotaRefusal:
    """Why ``JobAdmission.create_job_within`` created nothing: ``limit`` is ``max_active`` or
    ``max_daily_credits``; ``used`` what the requester has (active jobs, credits in the
    window); ``refills_at`` when the credits are below ``allowed`` again; ``cancelled`` how
    many of the active jobs are cancelled ones the provider still runs."""

    limit: Literal["max_active", "max_daily_credits"]
    used: int
    allowed: int
    refills_at: float | None = None
    cancelled: int = 0


@dataclass(frozen=True)
class KeyRoom:
    """A provider key a new job may go to: its ``name``, at most ``max_concurrent`` of its
    jobs in ``ACTIVE_STATUSES`` (counted as a requester's cap counts them: a job cancelled
    while ``unknown`` holds no place) and ``daily_tasks`` created per UTC day (0: no cap)."""

    name: str
    max_concurrent: int = 0
    daily_tasks: int = 0


@dataclass(frozen=True)
class KeyUsage:
    """One provider key's jobs: ``active`` now, and ``tasks`` created and ``credits`` charged
    since the start of the UTC day."""

    active: int = 0
    tasks: int = 0
    credits: int = 0


class NoKeyRoom(Exception):
    """Every provider key offered is at one of its caps: no job was created."""


JobMessageKind = Literal["progress", "result", "other"]


@dataclass(frozen=True)
class JobMessage:
    """A platform message that belongs to a job (progress, result, or a part of a result)."""

    platform: str
    channel_id: str
    message_id: str
    job_id: str
    kind: JobMessageKind = "result"


@dataclass(frozen=True)
class ProcessInfo:
    """What a genbot process tells the others about itself with each heartbeat."""

    host: str
    pid: int
    platforms: tuple[str, ...]
    started_at: float
    shards: str | None = None
    """The Discord shards it runs (``"0,1 of 4"``), when it runs Discord."""


@dataclass(frozen=True)
class Heartbeat:
    """What a heartbeat learnt (:meth:`storage.JobLeasing.heartbeat`): the jobs its process
    still holds, and how many unfinished jobs it should hold (its fair share)."""

    held: frozenset[str]
    share: int


@dataclass(frozen=True)
class ProcessStatus:
    """A process as the cluster sees it: ``live`` while its heartbeat is recent; ``leases``
    is how many unfinished jobs it holds."""

    id: str
    host: str
    pid: int
    platforms: tuple[str, ...]
    shards: str | None
    started_at: float
    seen_at: float
    live: bool
    leases: int
