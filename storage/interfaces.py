"""The storage interfaces: one protocol per need, so each feature depends on what it uses
(the job interfaces are in :mod:`storage.job_interfaces`).

Every backend (SQLite: :class:`storage.sqlite.SqliteStore`) implements all of them; a feature
declares the few it needs (often as a protocol combining two or three of these) and the
composition root hands it the one store. Every method is a coroutine; writes return after their
commit; failures raise :class:`storage.StorageError`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import AbstractAsyncContextManager
from datetime import date
from typing import Any, Protocol

from storage.job_interfaces import (
    DeliveryClaims,
    JobAdmission,
    JobCounts,
    JobHistory,
    JobLeasing,
    JobTracking,
    JobWriter,
    MessageLinks,
    TaskLookup,
)
from storage.records.chat import (
    ChatMessage,
    ChatRole,
    Conversation,
    ConversationKey,
    ConversationKind,
)
from storage.records.platforms import (
    ImageToSave,
    InstallationToSave,
    MessageToSave,
    PlaygroundImage,
    PlaygroundMessage,
    SlackInstallation,
    WriteWindow,
)
from storage.records.settings import (
    UNSET,
    EffectiveSettings,
    ScopeKind,
    ScopeSettings,
    SettingValues,
    _Unset,
)
from storage.records.usage import UsageTotals


class ConversationStore(Protocol):
    """Conversations, their turns and the platform messages linked to them."""

    async def get_or_create_conversation(
        self, key: ConversationKey, *, kind: ConversationKind, created_by: str | None = None
    ) -> tuple[Conversation, bool]:
        """The conversation for ``key``, created when missing: ``(conversation, created)``."""

    async def find_conversation(self, key: ConversationKey) -> Conversation | None:
        """The conversation for ``key``, or None (never creates)."""

    async def get_conversation(self, conversation_id: int) -> Conversation | None:
        """The conversation with this id, or None."""

    async def find_conversation_by_message(
        self, platform: str, channel_id: str, message_id: str
    ) -> Conversation | None:
        """The conversation a platform message was linked to, or None."""

    async def append_message(
        self,
        conversation_id: int,
        role: ChatRole,
        content: str | None = None,
        *,
        parts: Sequence[dict[str, Any]] | None = None,
        function_call: dict[str, Any] | None = None,
        name: str | None = None,
        token_count: int = 0,
        platform_message_ids: Sequence[str] = (),
        channel_id: str | None = None,
    ) -> int:
        """Append a turn and link ``platform_message_ids`` to it; returns the turn's id."""

    async def link_conversation_messages(
        self,
        conversation_id: int,
        platform_message_ids: Sequence[str],
        *,
        chat_message_id: int | None = None,
        channel_id: str | None = None,
    ) -> None:
        """Link more platform messages to a conversation (optionally to one of its turns)."""

    async def conversation_tail(
        self, conversation_id: int, *, max_tokens: int
    ) -> list[ChatMessage]:
        """The newest turns, oldest first, whose ``token_count`` values fit ``max_tokens``;
        every turn from the newest user turn on is included whatever its count."""

    async def delete_message(self, message_id: int) -> bool:
        """Delete one turn; False if there was none."""

    async def update_message(
        self,
        message_id: int,
        *,
        content: str | _Unset | None = UNSET,
        function_call: dict[str, Any] | _Unset | None = UNSET,
        token_count: int | _Unset = UNSET,
    ) -> bool:
        """Change a stored turn; False if unknown."""

    async def update_conversation(
        self,
        conversation_id: int,
        *,
        model: str | _Unset | None = UNSET,
        system_prompt: str | _Unset | None = UNSET,
    ) -> bool:
        """Set (or clear with None) the conversation's own model / system prompt."""


class ConversationLocks(Protocol):
    """One turn of a conversation at a time, across processes."""

    def conversation_lock(self, conversation_id: int) -> AbstractAsyncContextManager[None]:
        """Held while a turn of the conversation is stored and answered: processes that take
        it for the same conversation get it one after the other, in the order they asked
        (PostgreSQL advisory lock; released if the holder's process dies). Raises
        :class:`StorageError` when it cannot be had in time."""


class WriteWindows(Protocol):
    """Platform write limits counted across processes, so N processes writing into one
    channel or workspace stay within what the platform allows."""

    async def reserve_writes(
        self, windows: Sequence[WriteWindow], *, spacing: float = 0.0
    ) -> float:
        """Count one write in every window when each has room (and, with ``spacing``, the
        first window's previous write is at least that many seconds old): returns 0. Else
        nothing is counted and the answer is how many seconds to wait before asking again.
        A write counts for its window's length from now, plus a short allowance for the
        request to reach the platform. Always 0 where the database has one process."""


class PlaygroundHistory(Protocol):
    """What the playground shows, kept so that a restart (or another process) shows it too."""

    async def load_playground(
        self, keep: int, *, max_image_bytes: int | None = None
    ) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
        """Each channel's ``keep`` latest messages (oldest first) and the images they show:
        with ``max_image_bytes``, only those of the newest messages that fit in it (oldest
        first; :meth:`playground_image` reads the others when they are asked for)."""

    async def save_playground_message(
        self, message: MessageToSave, images: Sequence[ImageToSave], *, keep: int
    ) -> int:
        """Store a message (new or changed) and the images it shows (each image once); the
        channel's messages beyond the ``keep`` latest, and images no message shows any more,
        go. Other processes hear of it through :meth:`playground_updates`. A pending command
        is this process's to handle (it accepted it); a message that ``answers`` one marks it
        handled in the same transaction. Returns the version saved (1 for a new
        message, one more for each save after)."""

    async def claim_pending_commands(self, accepted_before: float) -> list[str]:
        """Take over the commands accepted before ``accepted_before`` (Unix seconds) that still
        wait for their handler and that no live process is handling: this process's own (a
        handler that could not record its end), those of processes that stopped or died (no
        heartbeat within two leases), and unowned ones. Their ids; concurrent claimers never get
        the same command."""

    async def settle_playground_message(self, message_id: str) -> None:
        """Mark a command's message as handled."""

    async def playground_message(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[PlaygroundMessage, list[PlaygroundImage]] | None:
        """One stored message and the images it shows (none read when ``with_images`` is
        False: :meth:`playground_image` reads one when it is wanted), or None."""

    async def playground_image(self, key: str) -> PlaygroundImage | None:
        """One stored image (its bytes read on demand), or None when no message shows it."""

    async def playground_session_key(self) -> bytes:
        """The key that signs the playground's session cookies (made on first use), the same
        for every process and every restart."""

    def playground_updates(self) -> AsyncIterator[str | None]:
        """None once following has started (what was saved before may have been missed: read
        the history again if it was read before), then the ids of the messages other processes
        save, as they come; raises :class:`StorageError` when the connection is lost. Only the
        None on an unshared database."""


class SettingsReader(Protocol):
    """Effective settings, merged from the scopes."""

    async def effective_settings(
        self,
        platform: str,
        *,
        user_id: str | None,
        channel_id: str | None,
        workspace_id: str | None,
        defaults: SettingValues | None = None,
        conversation: Conversation | None = None,
    ) -> EffectiveSettings:
        """Merge conversation, user, channel, workspace and defaults by ``PRECEDENCE``."""


class SettingsStore(SettingsReader, Protocol):
    """Settings per user, channel and workspace."""

    async def set_scope_settings(
        self,
        kind: ScopeKind,
        platform: str,
        scope_id: str,
        *,
        model: str | _Unset | None = UNSET,
        system_prompt: str | _Unset | None = UNSET,
        process_mode: str | _Unset | None = UNSET,
        aspect_ratio: str | _Unset | None = UNSET,
        temperature: float | _Unset | None = UNSET,
        stream: bool | _Unset | None = UNSET,
        remix: bool | _Unset | None = UNSET,
        top_p: float | _Unset | None = UNSET,
        presence_penalty: float | _Unset | None = UNSET,
        frequency_penalty: float | _Unset | None = UNSET,
        stop: str | _Unset | None = UNSET,
        n: int | _Unset | None = UNSET,
    ) -> ScopeSettings:
        """Partial update: given values are set, None clears, omitted ones stay."""

    async def get_scope_settings(
        self, kind: ScopeKind, platform: str, scope_id: str
    ) -> ScopeSettings | None:
        """One scope's stored settings, or None."""


class UsageLedger(Protocol):
    """Tokens and credits per user per UTC day."""

    async def add_usage(
        self,
        platform: str,
        user_id: str,
        *,
        tokens_prompt: int = 0,
        tokens_completion: int = 0,
        credits: int = 0,
        kind: str = "chat",
        job_id: str | None = None,
        at: float | None = None,
    ) -> bool:
        """Record one usage event; with ``job_id`` the pair (``job_id``, ``kind``) is recorded
        once (a repeat returns False)."""

    async def usage_for_user(
        self, platform: str, user_id: str, day: str | date | None = None
    ) -> UsageTotals:
        """A user's totals for one UTC day (default: today)."""


class EventDedupe(Protocol):
    """Inbound platform events handled once, across restarts and processes."""

    async def remember_event(self, platform: str, event_id: str) -> bool:
        """True the first time an event id is seen (within the retention), False for a repeat:
        handle the event only on True."""


class SlackInstallations(Protocol):
    """Slack OAuth installations per workspace (or organization), and OAuth states.

    Platform-free: the Slack adapter turns ``data`` to and from its SDK's installation objects.
    ``enterprise_id`` / ``team_id`` / ``user_id`` are ``""`` when absent."""

    async def save_slack_installation(self, installation: InstallationToSave) -> None:
        """Store an installation; one per (enterprise, team, installing user), replaced by a
        newer save (a reinstall, a token rotation)."""

    async def find_slack_installation(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> SlackInstallation | None:
        """The newest installation of a team (or an organization, ``team_id`` ``""``), by
        ``user_id`` when given; None when there is none."""

    async def delete_slack_installations(
        self, enterprise_id: str, team_id: str, user_id: str | None = None
    ) -> int:
        """Forget a team's installations (only ``user_id``'s when given); how many."""

    async def issue_oauth_state(self, state: str, expires_at: float) -> None:
        """Remember an OAuth ``state`` value until ``expires_at``."""

    async def consume_oauth_state(self, state: str) -> bool:
        """True once for a remembered, unexpired ``state`` (it is forgotten), else False."""


class Storage(
    JobWriter,
    TaskLookup,
    JobAdmission,
    JobTracking,
    JobCounts,
    JobLeasing,
    DeliveryClaims,
    MessageLinks,
    ConversationStore,
    ConversationLocks,
    WriteWindows,
    PlaygroundHistory,
    SettingsStore,
    UsageLedger,
    EventDedupe,
    SlackInstallations,
    JobHistory,
    Protocol,
):
    """Everything a backend offers: what the composition root opens and closes."""

    async def schema_version(self) -> int:
        """The database's schema version (the latest, once open)."""

    async def probe_write(self) -> None:
        """Commit a small write (this process's latest probe, one row per process): raises
        :class:`storage.StorageError` when the database cannot take writes now (unreachable,
        disk full, read-only)."""

    async def close(self) -> None:
        """Finish queued calls, then release the database; closing twice is harmless."""
