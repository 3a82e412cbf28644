"""Typed records returned by the storage backends, and the job status vocabulary.

Everything here is a plain frozen dataclass: storage depends on nothing else in genbot.
Timestamps are Unix seconds (``float``) from the store's clock; days are UTC ``YYYY-MM-DD``.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal, get_args

from storage.job_data import JobType

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
"""

ALL_STATUSES: Final[frozenset[JobStatus]] = frozenset(get_args(JobStatus))
IN_FLIGHT_STATUSES: Final[frozenset[JobStatus]] = frozenset(
    ("submitted", "pending", "staged", "processing", "retry")
)
"""Known to the provider and not done there: what the tracker polls."""
ACTIVE_STATUSES: Final[frozenset[JobStatus]] = IN_FLIGHT_STATUSES | {"creating", "unknown"}
"""What counts toward a user's concurrent-job cap (and what a webhook may still change)."""
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
    "unknown": IN_FLIGHT_STATUSES | _PROVIDER_DONE,
    **{status: IN_FLIGHT_STATUSES | _PROVIDER_DONE for status in IN_FLIGHT_STATUSES},
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
``unknown`` may only be adopted (in flight, finished, failed), never created again."""

ChatRole = Literal["system", "user", "assistant", "function"]
ConversationKind = Literal["dm", "thread", "reply_chain"]
ScopeKind = Literal["user", "channel", "workspace"]

JOB_ID_MAX = 16


def new_job_id() -> str:
    """A fresh job id: 12 URL-safe characters (``A-Z a-z 0-9 - _``), fits in a custom id."""
    return secrets.token_urlsafe(9)


class _Unset:
    """Marker for "leave this field as it is" in partial updates (``None`` clears a field)."""

    _instance: _Unset | None = None

    def __new__(cls) -> _Unset:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNSET"

    def __bool__(self) -> bool:
        return False


UNSET: Final = _Unset()


@dataclass(frozen=True)
class ConversationKey:
    """Identifies a conversation.

    ``thread_key`` is the thread id for a thread conversation, the root message id for a reply
    chain in a channel, and ``""`` for a DM (the whole DM channel is one conversation).
    """

    platform: str
    workspace_id: str
    channel_id: str
    thread_key: str = ""


@dataclass(frozen=True)
class Conversation:
    """A stored conversation; ``model`` / ``system_prompt`` are its own overrides (or None)."""

    id: int
    platform: str
    workspace_id: str
    channel_id: str
    thread_key: str
    kind: ConversationKind
    created_by: str | None
    model: str | None
    system_prompt: str | None
    created_at: float
    updated_at: float

    @property
    def key(self) -> ConversationKey:
        return ConversationKey(self.platform, self.workspace_id, self.channel_id, self.thread_key)


@dataclass(frozen=True)
class ChatMessage:
    """One turn of a conversation.

    ``content`` is the text (None for an assistant function call); ``parts`` the vision content
    parts (then sent instead of ``content``); ``function_call`` is ``{"name", "arguments"}``;
    ``name`` is the function's name for a ``function`` message. ``platform_message_ids`` lists
    the platform messages this turn was posted as (several when split), in link order.
    """

    id: int
    conversation_id: int
    role: ChatRole
    content: str | None
    parts: list[dict[str, Any]] | None
    function_call: dict[str, Any] | None
    name: str | None
    token_count: int
    platform_message_ids: tuple[str, ...]
    created_at: float

    def to_api(self) -> dict[str, Any]:
        """The message as the chat completion API expects it."""
        message: dict[str, Any] = {
            "role": self.role,
            "content": self.parts if self.parts is not None else self.content,
        }
        if self.name is not None:
            message["name"] = self.name
        if self.function_call is not None:
            message["function_call"] = self.function_call
        return message


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


@dataclass(frozen=True)
class JobQuota:
    """Limits checked when a job row is created (see ``JobAdmission.create_job_within``):
    at most ``max_active`` of the requester's jobs in ``ACTIVE_STATUSES`` and less than
    ``max_daily_credits`` credits in the ledger today (UTC). ``0`` disables a limit."""

    max_active: int = 0
    max_daily_credits: int = 0


@dataclass(frozen=True)
class QuotaRefusal:
    """Why ``JobAdmission.create_job_within`` created nothing: ``limit`` is ``max_active`` or
    ``max_daily_credits``; ``used`` what the requester has (active jobs, credits today)."""

    limit: Literal["max_active", "max_daily_credits"]
    used: int
    allowed: int


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
class SettingValues:
    """A set of setting values; None means "not set here". Used for defaults."""

    model: str | None = None
    system_prompt: str | None = None
    process_mode: str | None = None
    aspect_ratio: str | None = None
    temperature: float | None = None
    stream: bool | None = None
    remix: bool | None = None
    top_p: float | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    stop: str | None = None
    """Stop sequences as a JSON array of strings (see :func:`encode_stop`)."""
    n: int | None = None

    @property
    def stop_sequences(self) -> tuple[str, ...]:
        """``stop`` decoded (none when unset or unreadable)."""
        if not self.stop:
            return ()
        try:
            loaded = json.loads(self.stop)
        except ValueError:
            return ()
        return tuple(str(item) for item in loaded) if isinstance(loaded, list) else ()


def encode_stop(sequences: Sequence[str]) -> str:
    """Stop sequences as the ``stop`` setting stores them."""
    return json.dumps(list(sequences))


SETTING_NAMES: Final[tuple[str, ...]] = (
    "model",
    "system_prompt",
    "process_mode",
    "aspect_ratio",
    "temperature",
    "stream",
    "remix",
    "top_p",
    "presence_penalty",
    "frequency_penalty",
    "stop",
    "n",
)


@dataclass(frozen=True)
class ScopeSettings(SettingValues):
    """The settings stored for one scope (a user, a channel or a workspace on a platform)."""

    kind: ScopeKind = "user"
    platform: str = ""
    scope_id: str = ""
    updated_at: float = 0.0


SettingSource = Literal["conversation", "user", "channel", "workspace", "default"]


@dataclass(frozen=True)
class EffectiveSettings(SettingValues):
    """Merged settings; ``sources`` names where each non-None value came from."""

    sources: Mapping[str, SettingSource] = field(default_factory=dict)


@dataclass(frozen=True)
class UsageTotals:
    """Sums over usage ledger entries."""

    tokens_prompt: int = 0
    tokens_completion: int = 0
    credits: int = 0
    entries: int = 0

    @property
    def tokens(self) -> int:
        return self.tokens_prompt + self.tokens_completion


@dataclass(frozen=True)
class SlackInstallation:
    """A Slack app installation: a workspace (``team_id``) or an organization
    (``enterprise_id`` with ``team_id`` ``""``), installed by ``user_id``. ``data`` is the
    installation as the Slack adapter serializes it (JSON values; tokens included, so it is
    kept out of ``repr``)."""

    enterprise_id: str
    team_id: str
    user_id: str
    installed_at: float
    data: Mapping[str, Any] = field(repr=False)


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


@dataclass(frozen=True)
class WriteWindow:
    """A platform's write limit that several processes share: at most ``capacity`` writes
    under ``key`` (a channel, or a workspace's budget of one kind of write) in any
    ``seconds``."""

    key: str
    capacity: int
    seconds: float


@dataclass(frozen=True)
class PlaygroundMessage:
    """A message the playground shows: ``body`` is the playground's own JSON record of it,
    ``image_keys`` the images it shows; ``pending`` marks a command not handled yet."""

    id: str
    channel: str
    pending: bool
    image_keys: tuple[str, ...]
    body: Mapping[str, Any]


@dataclass(frozen=True)
class PlaygroundImage:
    """An image the playground shows, stored once whatever the number of messages showing it."""

    key: str
    filename: str
    content_type: str
    width: int | None
    height: int | None
    data: bytes = field(repr=False)
