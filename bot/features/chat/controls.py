"""An answer's controls: ⏹ Stop while it streams; 🔁 (regenerate), 👍 and 👎 once it is complete.

Each button names the answer's stored turn (``<conversation>.<turn>``, :data:`RefKind.TURN`):
the core lets only someone who sees the conversation press it (:mod:`bot.refs`). Stop and
regenerate are for the user the answer is for (and admins), as are the chat engine's ``Use N``
and vision switch (:func:`check_asked_by`, the one check); anyone in the conversation may rate
an answer, once (a second press changes their rating). Stop ends the provider's stream on the
process that streams it (:mod:`bot.features.chat.stops`); 🔁 is the chat engine's (it answers
again), and only the newest answer carries it: once a newer one is shown, the answer shown before
it is drawn again without it (:func:`retire_previous`). Feedback is stored with the turn
(:class:`storage.AnswerFeedback`), counted in ``genbot_chat_feedback_total`` and shown to admins
by ``/usage``; a press that changes nothing (the same rating again) records, counts and posts
nothing. The buttons show the rating of the user the answer is for (its 👍 or 👎 drawn
chosen), which is how that user is answered; anyone else is thanked privately, and so is that
user where 👍/👎 cannot be drawn chosen (``PlatformProfile.shows_chosen_rating``: Slack).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from bot.features.chat.redraw import is_newest_answer, redraw
from bot.features.chat.stops import StopRequests
from bot.kernel import (
    BAD_ACTION,
    GOOD_ACTION,
    N_,
    STOP_ACTION,
    Button,
    ButtonPress,
    ButtonRows,
    Command,
    ModalSubmit,
    OptionValue,
    Place,
    UserError,
    _,
    metrics,
)
from bot.outbox import Notice, Outbox, WritePolicy
from bot.refs import RefKind, TurnReferent, Work
from storage import AnswerFeedback, ChatMessage, ConversationStore

REGENERATE_ACTION = "chat_again"
# Translators: the button stopping an answer while it is written.
STOP_LABEL = N_("⏹ Stop")
REGENERATE_LABEL = "🔁"
GOOD_LABEL = "👍"
BAD_LABEL = "👎"
ANSWER_TURNS = 32
"""The turns an answer is drawn again from: it and those stored after it (its alternatives)."""
NOT_YOUR_ANSWER = N_("Only the person this answer is for can use this button.")


def turn_ref(conversation_id: int, turn_id: int) -> str:
    """The ref of an answer's controls."""
    return f"{conversation_id}.{turn_id}"


def live_buttons(conversation_id: int, turn_id: int) -> ButtonRows:
    """What a streaming answer carries: ⏹ Stop."""
    return ((Button(_(STOP_LABEL), STOP_ACTION, turn_ref(conversation_id, turn_id)),),)


def final_buttons(
    conversation_id: int, turn_id: int, *, regenerate: bool = True, rating: bool | None = None
) -> ButtonRows:
    """What a complete answer carries: 🔁 (unless ``regenerate`` is false), 👍, 👎; the one
    ``rating`` names (True 👍, False 👎) drawn chosen (``primary``)."""
    ref = turn_ref(conversation_id, turn_id)
    again = (Button(REGENERATE_LABEL, REGENERATE_ACTION, ref),) if regenerate else ()
    good = Button(GOOD_LABEL, GOOD_ACTION, ref, "primary" if rating is True else "secondary")
    bad = Button(BAD_LABEL, BAD_ACTION, ref, "primary" if rating is False else "secondary")
    return ((*again, good, bad),)


async def retire_previous(
    store: ConversationStore,
    feedback: AnswerFeedback | None,
    outbox: Outbox,
    place: Place,
    conversation_id: int,
    turn_id: int,
    *,
    read: Sequence[ChatMessage] = (),
) -> None:
    """A newer answer (turn ``turn_id``) is shown in ``place``: the answer shown before it is
    drawn again without 🔁, its rating kept. One already drawn without controls (``replaced``:
    its 🔁 was pressed) or still ``streaming`` (whoever settles it draws its controls,
    :mod:`bot.features.chat.interrupted`) is left alone. ``read``: the turns the answer's
    history was read from, every branch's, oldest first, under the conversation's turn lock
    (so no answer came or changed since); the answer before is taken from them when they hold
    it, and read from storage only when not."""
    turns = answer_read_before(read, turn_id) or await store.answer_before(
        conversation_id, turn_id, turns=ANSWER_TURNS
    )
    if not turns or turns[0].state in ("replaced", "streaming"):
        return
    previous = turns[0]
    rating = None
    if feedback is not None and previous.asked_by is not None:
        rating = await feedback.rating(previous.id, previous.asked_by)
    buttons = final_buttons(conversation_id, previous.id, regenerate=False, rating=rating)
    await redraw(outbox, place, previous, turns[1:], buttons)


def answer_read_before(read: Sequence[ChatMessage], turn_id: int) -> list[ChatMessage]:
    """The newest answer in ``read`` below turn ``turn_id`` (not a function call or an
    alternative) and the turns after it, as :meth:`storage.ConversationStore.answer_before`
    gives them; [] when ``read`` has none."""
    for index in range(len(read) - 1, -1, -1):
        turn = read[index]
        if turn.id >= turn_id or turn.role != "assistant":
            continue
        if turn.function_call is not None or turn.name is not None:
            continue
        return list(read[index : index + ANSWER_TURNS])
    return []


def check_answer_for(event: ButtonPress, turn: ChatMessage) -> None:
    """``turn`` is an answer, and the presser is the user it is for or an admin."""
    if turn.role != "assistant":
        raise UserError(_("This button is no longer supported."))
    check_asked_by(event, turn.asked_by)


def check_asked_by(event: ButtonPress, user_id: str | None) -> None:
    """The presser is ``user_id``, the user an answer is (or would be) for, or an admin
    (``None``, not recorded: anyone). The one check of the buttons that act on an answer for
    its user — ⏹ Stop, 🔁, ``Use N`` and ``Use llm-4-vision-preview`` — made before anything
    is stored, posted or asked of the provider."""
    if user_id not in (None, event.user.id) and not event.user.is_admin:
        raise UserError(_(NOT_YOUR_ANSWER))


class AnswerControls:
    """⏹ Stop, 👍 and 👎 under chat answers (see the module docstring)."""

    commands = frozenset[str]()
    actions: ClassVar[Mapping[str, RefKind]] = {
        STOP_ACTION: RefKind.TURN,
        GOOD_ACTION: RefKind.TURN,
        BAD_ACTION: RefKind.TURN,
    }
    work: ClassVar[Mapping[str, Work]] = dict.fromkeys(actions, Work.FREE)

    def __init__(
        self,
        stops: StopRequests,
        feedback: AnswerFeedback,
        outbox: Outbox,
        conversations: ConversationStore,
    ) -> None:
        self.stops = stops
        self.feedback = feedback
        self.outbox = outbox
        self.conversations = conversations

    async def on_command(self, event: Command, options: Mapping[str, OptionValue]) -> None:
        raise UserError(_("This command is no longer supported."))

    async def on_button(self, event: ButtonPress, referent: TurnReferent) -> None:
        """Stop the answer, or record the presser's rating of it."""
        turn = referent.turn
        platform = event.place.platform
        if event.action == STOP_ACTION:
            check_answer_for(event, turn)
            metrics.CHAT_CONTROLS.labels(platform, "stop").inc()
            if not await self.stops.request(turn.id):
                await self._tell(event, _("This answer has already finished."))
            return
        if turn.role != "assistant":
            raise UserError(_("This button is no longer supported."))
        good = event.action == GOOD_ACTION
        model = turn.model or "unknown"
        changed = await self.feedback.rate(
            turn.id,
            event.user.id,
            platform=platform,
            workspace_id=event.place.workspace_id,
            model=model,
            good=good,
        )
        if not changed:
            return
        metrics.CHAT_FEEDBACK.labels(platform, model, "good" if good else "bad").inc()
        chosen_shown = self.outbox.profile(platform).shows_chosen_rating
        if turn.asked_by == event.user.id and chosen_shown:
            await self._show_rating(event, turn, good)
            return
        await self._tell(
            event, _("Thanks for the feedback {rating}.", rating=GOOD_LABEL if good else BAD_LABEL)
        )

    async def _show_rating(self, event: ButtonPress, turn: ChatMessage, good: bool) -> None:
        """Draw the answer's controls again with the rating of the user it is for chosen."""
        turns = await self.conversations.answer_before(turn.conversation_id, turn.id + 1)
        if not turns or turns[0].id != turn.id:
            return
        regenerate = await is_newest_answer(self.conversations, turn)
        buttons = final_buttons(turn.conversation_id, turn.id, regenerate=regenerate, rating=good)
        await redraw(self.outbox, event.place, turns[0], turns[1:], buttons)

    async def on_modal(self, event: ModalSubmit, referent: TurnReferent) -> None:
        raise UserError(_("This form is no longer supported."))

    async def _tell(self, event: ButtonPress, text: str) -> None:
        await self.outbox.write(event.place, Notice(event, text), WritePolicy.NOW)
