"""Drawing a complete answer's controls again, on the message that carries them: without 🔁 once
a newer answer is shown, with the rating chosen (:mod:`bot.features.chat.controls`).

A platform edit replaces a message's text with its buttons, and genbot keeps no copy of what its
messages show, so the text is made again from the stored turn as the stream renderer made it:
the reply with the note it was shown with (:data:`~bot.features.chat.renderer.STOPPED_NOTE`,
:data:`~bot.features.chat.renderer.EMPTY_NOTE`; the others are stored with the text), cut
where the renderer cuts a streamed answer: with room for its cursor kept in every message but the
last. That is exact for an answer in one message; an answer in several messages whose cuts the
renderer made otherwise (not streamed, or its whole text there before a write) can show a few
words moved between its last two messages. An answer whose ``Use N`` picked another alternative
is drawn from its first alternative, the text its messages show. Everything is read from
storage, so it holds after a restart.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.features.chat.history import ALTERNATIVE_NAME
from bot.features.chat.renderer import EMPTY_NOTE, MARKER, STOPPED_NOTE
from bot.kernel import FENCE, ButtonRows, MessageRef, OutMessage, Place, _, split_chunks
from bot.outbox import Edit, Outbox, WritePolicy
from storage import ChatMessage, ConversationStore

STREAM_RESERVE = len(FENCE) + 1 + len(MARKER)
"""What the stream renderer keeps free in a message while it streams."""


@dataclass(frozen=True)
class Drawn:
    """The message of an answer that carries its controls, and the text it shows."""

    message_id: str
    text: str


def shown_text(turn: ChatMessage, first_alternative: ChatMessage | None = None) -> str:
    """The text ``turn``'s messages show, its note included (see the module docstring)."""
    reply = turn.content or ""
    original = first_alternative.content if first_alternative is not None else None
    if original is not None and not reply.startswith(original):
        reply = original
    reply = reply.rstrip()
    note = _(STOPPED_NOTE) if turn.state == "stopped" else "" if reply else _(EMPTY_NOTE)
    return f"{reply}\n\n{note}" if reply and note else reply or note


def controls_message(turn: ChatMessage, later: list[ChatMessage], limit: int) -> Drawn | None:
    """Where ``turn``'s controls are and what that message shows; ``later`` are the turns stored
    after it (its alternatives first, when it has any). None when it has no message."""
    alternatives = []
    for other in later:
        if other.role != "assistant" or other.name != ALTERNATIVE_NAME:
            break
        alternatives.append(other)
    links = turn.platform_message_ids
    if not links:
        return None
    text = shown_text(turn, alternatives[0] if alternatives else None)
    streamed = split_chunks(text, limit, reserve=STREAM_RESERVE)
    count = min(len(streamed), len(links)) if alternatives else len(links)
    start = streamed[min(count, len(streamed)) - 2].end if count > 1 and len(streamed) > 1 else 0
    return Drawn(links[count - 1], split_chunks(text, limit, start=start)[0].text)


async def is_newest_answer(store: ConversationStore, turn: ChatMessage) -> bool:
    """Whether ``turn`` is the answer 🔁 may replace: after the conversation's newest message,
    on its live branch, not replaced."""
    newest = await store.conversation_tail(turn.conversation_id, max_tokens=0)
    after = newest[1:] if newest and newest[0].role == "user" else []
    return turn.state != "replaced" and turn.id in {later.id for later in after}


async def redraw(
    outbox: Outbox,
    place: Place,
    turn: ChatMessage,
    later: list[ChatMessage],
    buttons: ButtonRows,
) -> None:
    """Edit the message carrying ``turn``'s controls to carry ``buttons`` instead (``later``:
    the turns stored after it); nothing when it has no message."""
    drawn = controls_message(turn, later, outbox.profile(place.platform).max_text)
    if drawn is None:
        return
    message = OutMessage(drawn.text, buttons=buttons, from_model=True)
    await outbox.write(place, Edit(MessageRef(place, drawn.message_id), message), WritePolicy.RAISE)
