"""Conversations and their turns, as the chat engine stores them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

ChatRole = Literal["system", "user", "assistant", "function"]
ConversationKind = Literal["dm", "thread", "reply_chain"]
AnswerState = Literal["stopped", "replaced", "streaming", "interrupted"]


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
    state: AnswerState | None = None
    """An answer's state: ``streaming`` (posted and being written; its text is what was shown
    last), ``interrupted`` (its process ended while it streamed; its text is what was shown),
    ``stopped`` (the user stopped it; its text is what was shown), ``replaced`` (regenerated:
    kept, shown, out of the history); None otherwise. A user's turn is ``streaming`` from
    when it is stored until its answer's process is done with it (its answer finished, failed
    or was not needed), so one whose process ended first is found
    (:mod:`bot.features.chat.interrupted`)."""
    model: str | None = None
    """The model that wrote an answer."""
    asked_by: str | None = None
    """The user an answer was for."""
    author: str | None = None
    """The user who wrote a user turn (None: unknown, for turns stored before genbot recorded
    it where it could not be derived, or forgotten by ``/forget-me``)."""
    branch: int | None = None
    """Set while the turn is on a branch that is not the conversation's live one (the
    :class:`storage.ConversationBranches` row it was set aside under)."""


@dataclass(frozen=True)
class FeedbackCount:
    """Ratings of one model's answers: 👍 ``good``, 👎 ``bad``."""

    model: str
    good: int
    bad: int


@dataclass(frozen=True)
class Fork:
    """Where a conversation branches: the turn ``fork_turn`` was edited, each edit a branch
    (1 the original); ``first_turns`` holds each branch's first turn, ``live`` the number of
    the branch the conversation continues (0 when none of them is on its live path)."""

    fork_turn: int
    first_turns: tuple[int, ...]
    live: int


@dataclass(frozen=True)
class AnswerPlace:
    """The answer of :meth:`storage.AnswerPlaces.answer_starts`: the ``slot`` it took (None
    when the user had no place left) and how many answers of the user were being written
    before it asked (over every process)."""

    slot: int | None
    running: int
