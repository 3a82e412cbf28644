"""Typed records returned by the storage backends (jobs and their status vocabulary:
:mod:`storage.job_records`).

Everything here is a plain frozen dataclass: storage depends on nothing else in genbot.
Timestamps are Unix seconds (``float``) from the store's clock; days are UTC ``YYYY-MM-DD``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

ChatRole = Literal["system", "user", "assistant", "function"]
ConversationKind = Literal["dm", "thread", "reply_chain"]
ScopeKind = Literal["user", "channel", "workspace"]


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


ESTIMATED_CREDITS = "credits_estimate"
"""The ledger ``kind`` of credits genbot estimated from its configured prices, because the
provider did not say what it charged (diffusion; docs/provider.md#diffusion-prices)."""


@dataclass(frozen=True)
class UsageTotals:
    """Sums over usage ledger entries; ``estimated_credits`` is the part of ``credits``
    recorded as :data:`ESTIMATED_CREDITS`."""

    tokens_prompt: int = 0
    tokens_completion: int = 0
    credits: int = 0
    entries: int = 0
    estimated_credits: int = 0

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
    version: int = 0
    """How often it was saved (the store counts): of two copies, the higher version is the
    newer, whichever process saved it."""
    answers: str | None = None
    """The pending command this message answers: saving it marks that command handled, in the
    same transaction, so no process handles an answered command again."""


@dataclass(frozen=True)
class PlaygroundImage:
    """An image the playground shows, stored once whatever the number of messages showing it."""

    key: str
    filename: str
    content_type: str
    width: int | None
    height: int | None
    data: bytes = field(repr=False)
