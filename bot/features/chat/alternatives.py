"""Alternative answers (``n`` > 1): shown under the reply, and picked to continue from.

When a channel asks for several answers per message (``/settings --scope channel --n 3``), the first
is rendered as the reply and stored as the conversation's assistant turn, as usual. Every answer
is also stored as a turn of its own named ``alternative`` with no tokens: such turns stay out of
every request (:class:`bot.features.chat.history.History`) and out of the history count. A message
under the reply previews them with a ``Use N`` button each (the one in use is primary); its
reference carries the conversation, the reply's turn and the alternative's turn, so a press
after a restart still finds them. Pressing ``Use N`` puts answer N's text in the reply's turn —
the conversation continues from it — redraws the buttons, and posts the chosen answer in full
(answer 1 is the reply above). Only the newest answer of a conversation can be changed. Answers
moderation withheld are not among them; its notice heads the first drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.features.chat.history import ALTERNATIVE_NAME
from bot.features.chat.replies import reply_tokens
from bot.features.chat.scoping import Target
from bot.kernel import Button, MessageRef, OutMessage, Place, UserError, _, ngettext, split_text
from bot.outbox import Edit, Outbox, Post, WritePolicy
from storage import ChatMessage, ConversationStore

PICK_ACTION = "chat_pick"
ALL_TURNS = 10**12
PREVIEW_CHARS = 300


@dataclass(frozen=True)
class Pick:
    """What a ``Use N`` button refers to."""

    conversation_id: int
    turn_id: int
    alternative_id: int

    @property
    def ref(self) -> str:
        return f"{self.conversation_id}.{self.turn_id}.{self.alternative_id}"

    @classmethod
    def parse(cls, ref: str) -> Pick:
        parts = ref.split(".")
        if len(parts) != 3 or not all(part.isdigit() for part in parts):
            raise UserError(_("This button is no longer supported."))
        conversation_id, turn_id, alternative_id = (int(part) for part in parts)
        return cls(conversation_id, turn_id, alternative_id)


def _preview(text: str, limit: int) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1] + "…"


def alternatives_message(
    texts: Sequence[str],
    picks: Sequence[Pick],
    chosen: int,
    max_text: int,
    withheld: str = "",
) -> OutMessage:
    """The message under a reply: every answer previewed, ``Use N`` buttons, ``chosen`` (0-based)
    marked; ``withheld`` (moderation's notice of answers left out) under the head."""
    head = ngettext(
        "The model gave {n} answer; the conversation continues from answer {chosen}. Pick "
        "another to continue from it instead:",
        "The model gave {n} answers; the conversation continues from answer {chosen}. Pick "
        "another to continue from it instead:",
        len(texts),
        chosen=chosen + 1,
    )
    if withheld:
        head = f"{withheld}\n{head}"
    room = max((max_text - len(head)) // max(len(texts), 1) - 12, 40)
    lines = [
        head,
        *(f"**{i + 1}.** {_preview(t, min(room, PREVIEW_CHARS))}" for i, t in enumerate(texts)),
    ]
    buttons = tuple(
        # Translators: a button continuing the conversation from answer number {number}.
        Button(
            _("Use {number}", number=i + 1),
            PICK_ACTION,
            pick.ref,
            "primary" if i == chosen else "secondary",
        )
        for i, pick in enumerate(picks)
    )
    return OutMessage("\n".join(lines)[:max_text], buttons=(buttons,), from_model=True)


async def offer_alternatives(
    store: ConversationStore,
    outbox: Outbox,
    target: Target,
    turn_id: int,
    texts: Sequence[str],
    *,
    withheld: str = "",
) -> None:
    """Store every answer (``texts[0]`` is the reply) and post the message to pick from, with
    ``withheld`` (moderation's notice of answers left out); only that notice, nothing stored,
    when the reply is the one answer left."""
    conversation_id = target.conversation.id
    max_text = outbox.profile(target.place.platform).max_text
    if len(texts) > 1:
        picks = [
            Pick(
                conversation_id,
                turn_id,
                await store.append_message(
                    conversation_id, "assistant", text, name=ALTERNATIVE_NAME, token_count=0
                ),
            )
            for text in texts
        ]
        message = alternatives_message(texts, picks, 0, max_text, withheld)
    else:
        message = OutMessage(withheld[:max_text])
    posted = await outbox.write(target.place, Post(message, target.origin), WritePolicy.RAISE)
    await store.link_conversation_messages(
        conversation_id,
        [posted.message_id],
        chat_message_id=turn_id,
        channel_id=target.place.channel_id,
    )


def _answers_of(turns: Sequence[ChatMessage], turn_id: int) -> list[ChatMessage]:
    """The alternatives stored right after the reply ``turn_id``."""
    after = [turn for turn in turns if turn.id > turn_id]
    answers: list[ChatMessage] = []
    for turn in after:
        if turn.role != "assistant" or turn.name != ALTERNATIVE_NAME:
            break
        answers.append(turn)
    return answers


async def pick_alternative(
    store: ConversationStore,
    outbox: Outbox,
    place: Place,
    message_id: str,
    pick: Pick,
) -> None:
    """Continue the conversation from the picked answer (see the module docstring)."""
    turns = await store.conversation_tail(pick.conversation_id, max_tokens=ALL_TURNS)
    reply = next((turn for turn in turns if turn.id == pick.turn_id), None)
    answers = _answers_of(turns, pick.turn_id)
    chosen = next((i for i, turn in enumerate(answers) if turn.id == pick.alternative_id), None)
    if reply is None or chosen is None:
        raise UserError(_("Those answers are no longer stored."))
    later = [t for t in turns if t.id > answers[-1].id and t.name != ALTERNATIVE_NAME]
    if later:
        raise UserError(_("The conversation has moved on; only its newest answer can be changed."))
    text = answers[chosen].content or ""
    await store.update_message(reply.id, content=text, token_count=reply_tokens(text))
    texts = [answer.content or "" for answer in answers]
    picks = [Pick(pick.conversation_id, pick.turn_id, answer.id) for answer in answers]
    max_text = outbox.profile(place.platform).max_text
    redrawn = alternatives_message(texts, picks, chosen, max_text)
    shown_at = MessageRef(place, message_id)
    await outbox.write(place, Edit(shown_at, redrawn), WritePolicy.RAISE)
    if chosen == 0:
        return
    shown = _(
        "**Answer {number}** — the conversation continues from it:\n\n{text}",
        number=chosen + 1,
        text=text,
    )
    for piece in split_text(shown, max_text):
        piece_message = OutMessage(piece, from_model=True)
        posted = await outbox.write(place, Post(piece_message), WritePolicy.RAISE)
        await store.link_conversation_messages(
            pick.conversation_id,
            [posted.message_id],
            chat_message_id=reply.id,
            channel_id=place.channel_id,
        )
