"""Which conversation a message belongs to, and where its answer goes.

- A DM is one conversation (key: platform, workspace, channel, thread key ``""``).
- A thread with a stored conversation is that conversation; a mention of the bot (or ``/chat``)
  inside a thread without one makes the thread a conversation.
- A mention in a channel (outside threads) opens a thread on the message; the conversation lives
  there (kind ``thread``, thread key = the thread's id). When the platform cannot open a thread,
  the message starts a reply chain instead (kind ``reply_chain``, key = the message's id).
- In a channel, a reply to any linked message (the bot's answers, the user turns) continues its
  conversation: reply chains answer as a reply in the channel, threads answer in their thread.
- Anything else is not genbot's business.
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass

from bot.kernel import N_, Event, MessageRef, Place, SurfaceError, User, UserMessage, _
from bot.outbox import Outbox, StartThread, WritePolicy
from storage import Conversation, ConversationKey, ConversationStore

log = logging.getLogger(__name__)

TITLE_MAX_CHARS = 60
# Translators: the title of a thread genbot opens for a conversation.
DEFAULT_TITLE = N_("Chat with genbot")
_MARKUP_RE = re.compile(r"<[@#!][^>]*>|[*_~`>#|]")


@dataclass(frozen=True)
class Target:
    """A conversation and where to answer in it; ``origin`` is the event being answered (a
    reply reference on platforms that have them), if any."""

    conversation: Conversation
    place: Place
    origin: Event | None


def dm_key(place: Place) -> ConversationKey:
    """The key of a DM conversation: the whole DM channel."""
    return ConversationKey(place.platform, place.workspace_id, place.channel_id, "")


def thread_key(place: Place, thread_id: str) -> ConversationKey:
    """The key of a thread (or reply chain rooted at ``thread_id``) in ``place``'s channel."""
    return ConversationKey(place.platform, place.workspace_id, place.channel_id, thread_id)


def thread_title(text: str) -> str:
    """A short thread name from a message: markup and mentions dropped, whole words kept."""
    words = _MARKUP_RE.sub(" ", text).split()
    title = ""
    for word in words:
        candidate = f"{title} {word}".strip()
        if len(candidate) > TITLE_MAX_CHARS:
            break
        title = candidate
    if not title and words:
        title = words[0][: TITLE_MAX_CHARS - 1] + "…"
    return title or _(DEFAULT_TITLE)


async def dm_target(store: ConversationStore, user: User, place: Place, origin: Event) -> Target:
    """The DM conversation of ``place`` (created on first use)."""
    conversation, _ = await store.get_or_create_conversation(
        dm_key(place), kind="dm", created_by=user.id
    )
    return Target(conversation, place, origin)


async def thread_target(
    store: ConversationStore, user: User, place: Place, origin: Event | None, *, create: bool
) -> Target | None:
    """The conversation of the thread ``place`` is in; created only when ``create``."""
    assert place.thread_id is not None
    key = thread_key(place, place.thread_id)
    if create:
        conversation, _ = await store.get_or_create_conversation(
            key, kind="thread", created_by=user.id
        )
        return Target(conversation, place, origin)
    found = await store.find_conversation(key)
    return None if found is None else Target(found, place, origin)


async def existing_target(store: ConversationStore, event: UserMessage) -> Target | None:
    """The conversation ``event`` continues (a DM is always one), or ``None``. Creates nothing
    but DM conversations: a mention starts one only after the caller's checks passed."""
    place = event.place
    if place.is_dm:
        return await dm_target(store, event.user, place, event)
    if place.thread_id is not None:
        return await thread_target(store, event.user, place, event, create=False)
    if event.reply_to_message_id is None:
        return None
    found = await store.find_conversation_by_message(
        place.platform, place.channel_id, event.reply_to_message_id
    )
    if found is None:
        return None
    if found.kind == "thread":
        return Target(found, place.in_thread(found.thread_key), None)
    return Target(found, place, event)


async def open_thread(
    store: ConversationStore,
    outbox: Outbox,
    root: MessageRef,
    title: str,
    user: User,
    origin: Event | None,
) -> Target:
    """Open a thread on ``root`` and make it a conversation. When the platform refuses, fall
    back to a reply chain rooted at ``root`` (answers reply to ``origin``)."""
    try:
        inside = await outbox.write(root.place, StartThread(root, title), WritePolicy.NOW)
    except SurfaceError as error:
        log.info("no thread on %s (%s); using a reply chain", root.message_id, error)
        conversation, _ = await store.get_or_create_conversation(
            thread_key(root.place, root.message_id), kind="reply_chain", created_by=user.id
        )
        await store.link_conversation_messages(conversation.id, [root.message_id])
        return Target(conversation, root.place, origin)
    assert inside.thread_id is not None
    conversation, _ = await store.get_or_create_conversation(
        thread_key(inside, inside.thread_id), kind="thread", created_by=user.id
    )
    return Target(conversation, inside, None)
