"""🔁 Regenerate: the newest answer of a conversation asked again, with the same history.

Every turn after the newest user turn (the answer, its function calls and their results, its
alternatives) is marked ``replaced``: it stays stored and visible, and leaves the history
(:class:`bot.features.chat.history.History`), so the new answer — rendered as any answer, with
``n`` > 1's alternatives — replaces it as what the model said. The pressed message (the old
answer's last) loses its controls and says it was replaced: it keeps the text it showed
(:func:`bot.features.chat.redraw.controls_message`), the note added when it fits.
"""

from __future__ import annotations

from dataclasses import dataclass

from bot.features.chat.controls import check_answer_for
from bot.features.chat.redraw import controls_message, shown_text
from bot.kernel import N_, ButtonPress, MessageRef, OutMessage, UserError, _
from bot.outbox import Edit, Outbox, WritePolicy
from storage import ChatMessage, Conversation, ConversationStore

REPLACED_NOTE = N_("_(replaced by a newer answer)_")
ONLY_THE_NEWEST = N_("Only the newest answer of a conversation can be regenerated.")
ALREADY_REGENERATED = N_("This answer was already regenerated: the new one is below.")


@dataclass(frozen=True)
class Replacing:
    """What one 🔁 press replaces: the newest answer as stored now, with every turn after the
    message it answers (``after``: the answer among them), and that message (``asked``), which
    the new answer answers again."""

    asked: ChatMessage
    answer: ChatMessage
    after: list[ChatMessage]


async def replaceable(
    store: ConversationStore, event: ButtonPress, conversation: Conversation, turn: ChatMessage
) -> Replacing:
    """What replacing ``turn`` (the newest answer) replaces; :class:`UserError` when ``turn``
    is not the newest answer or not the presser's, or was replaced since it was read (🔁
    pressed twice at once: the presses wait for the conversation's lock in turn, and only the
    first regenerates). Nothing is changed."""
    check_answer_for(event, turn)
    current = await store.get_turn(conversation.id, turn.id)
    if current is None or current.state == "replaced":
        raise UserError(_(ALREADY_REGENERATED))
    newest = await store.conversation_tail(conversation.id, max_tokens=0)
    after = newest[1:] if newest and newest[0].role == "user" else []
    if turn.id not in {later.id for later in after}:
        raise UserError(_(ONLY_THE_NEWEST))
    return Replacing(newest[0], current, after)


async def replace_answer(
    store: ConversationStore, outbox: Outbox, event: ButtonPress, replacing: Replacing
) -> None:
    """Mark the answer :func:`replaceable` found and what came with it replaced, and say so
    on the pressed message."""
    current, after = replacing.answer, replacing.after
    max_text = outbox.profile(event.place.platform).max_text
    position = next(index for index, later in enumerate(after) if later.id == current.id)
    drawn = controls_message(current, after[position + 1 :], max_text)
    kept = shown_text(current) if drawn is None else drawn.text
    noted = f"{kept}\n\n{_(REPLACED_NOTE)}"
    last = noted if len(noted) <= max_text else kept
    pressed = MessageRef(event.place, event.message_id)
    await outbox.write(
        event.place, Edit(pressed, OutMessage(last, from_model=True)), WritePolicy.RAISE
    )
    for later in after:
        if later.state != "replaced":
            await store.update_message(later.id, state="replaced")
