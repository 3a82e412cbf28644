"""Answers left streaming, and messages left unanswered, by a process that ended (killed, or
stopped mid-answer): settled by the next process that can, at its start and then every
``every`` seconds.

An answer's turn is stored ``streaming`` from its first message on, with the text its messages
show, rewritten at each platform write (:class:`bot.features.chat.replies.StoredReply`); the end
of the answer clears the state. Settling one left ``streaming`` edits its last message to the
text stored with an _(interrupted)_ note, without ⏹ Stop and with the controls of a complete
answer (👍, 👎, and 🔁 unless a newer answer was shown meanwhile), and stores that same text as
the turn (state ``interrupted``): the history the model reads next is what the user sees. The
answer shown before it then loses its 🔁, as under any newer answer
(:func:`~bot.features.chat.controls.retire_previous`; an answer finished after it skipped it).
The answer's usage, recorded with its prompt tokens as it began, gets the completion tokens of
the text shown.

A user's turn is stored ``streaming`` too, until the process answering it is done with it (the
answer finished or failed, or none was needed); a process stopped or killed first leaves it so.
Settling one that is still the conversation's newest turn posts a note under it, _(not
answered… press 🔁)_, stored as its answer (state ``interrupted``), with the controls of a
complete answer: 🔁 answers the message as it regenerates any answer. One answered since (its
answer began before the process ended: settled as above) or followed by a newer message is only
marked done. A message is stored so whenever an answer to it starts: when it comes, and when it
is answered again (its edit, the vision switch, 🔁; the answers 🔁 replaced do not count as
answering it).

Answers carry no owner. Whether one still has a live writer is read from the locks its turn holds
while it streams: the chat engine's lock of the conversation in its own process, and the
conversation's lock across processes (:class:`storage.ConversationLocks`, a PostgreSQL session
advisory lock, which the server drops when the holder's connection goes with its process). An answer
stored ``streaming`` whose conversation this process is not answering and whose conversation lock it
can take at once has nobody to finish it — provided the lock stays free a while: a live holder's
lock is dropped with its connection too (a terminated backend, a server restart), and the holder
takes it again at once (:mod:`storage.postgres.kept_lock`), so a sweep that finds it free looks
again :data:`LOST_LOCK_SECONDS` later and settles only an answer whose conversation is still free
then (one that ended meanwhile is no longer ``streaming``). On SQLite one process owns the database:
the engine's lock alone says it. A conversation busy elsewhere is left for the next sweep: the
answer streams there, or that process answers a newer turn and the answer is settled once it is
done.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from bot.features.chat.answer import answer_usage
from bot.features.chat.controls import final_buttons, retire_previous
from bot.features.chat.redraw import is_newest_answer
from bot.features.chat.renderer import MARKER
from bot.features.chat.replies import reply_tokens
from bot.features.chat.tokens import count_text
from bot.kernel import (
    FENCE,
    N_,
    MessageRef,
    OutMessage,
    Place,
    Stored,
    SurfaceError,
    _,
    speaking,
    split_chunks,
    spoken,
)
from bot.outbox import Edit, Outbox, Post, WritePolicy
from storage import (
    AnswerFeedback,
    ChatMessage,
    Conversation,
    ConversationLocks,
    ConversationStore,
    SettingsReader,
    StorageError,
    UsageLedger,
)

log = logging.getLogger(__name__)

# Translators: under an answer left unfinished because the genbot process writing it stopped.
INTERRUPTED_NOTE = N_("_(interrupted: genbot stopped while writing this answer)_")
# Translators: under a message genbot took but never began answering because the genbot process
# stopped; 🔁 is the button that answers it.
NOT_ANSWERED_NOTE = N_(
    "_(not answered: genbot stopped before answering this message; press 🔁 to answer it)_"
)
SWEEP_SECONDS = 60.0
"""How often a process looks for answers another process left streaming."""
BUSY_WAIT_SECONDS = 1.0
"""How long a sweep waits for a conversation's lock before leaving it for the next."""
BATCH = 100
"""The most answers one sweep settles."""
LOST_LOCK_SECONDS = 5.0
"""How long a conversation's lock must stay free, from a first look to a second, before its
answer left streaming is settled (PostgreSQL): a live holder whose connection failed holds it
again within a second of the server answering (:mod:`storage.postgres.kept_lock`)."""


def place_of(conversation: Conversation) -> Place:
    """Where ``conversation``'s answers are posted."""
    thread = conversation.thread_key if conversation.kind != "dm" else ""
    return Place(
        conversation.platform,
        conversation.workspace_id,
        conversation.channel_id,
        thread or None,
        is_dm=conversation.kind == "dm",
    )


class InterruptedAnswers:
    """Settles the answers left streaming (see the module docstring); a service, started and
    stopped with the router. ``turn_lock`` is the chat engine's lock of a conversation's turns
    in this process; ``feedback`` holds the ratings kept when controls are drawn again;
    ``ledger`` gets the completion tokens of each answer settled."""

    def __init__(
        self,
        conversations: ConversationStore,
        locks: ConversationLocks,
        settings: SettingsReader,
        outbox: Outbox,
        turn_lock: Callable[[int], asyncio.Lock],
        *,
        every: float = SWEEP_SECONDS,
        feedback: AnswerFeedback | None = None,
        ledger: UsageLedger | None = None,
    ) -> None:
        self.feedback = feedback
        self.ledger = ledger
        self.conversations = conversations
        self.locks = locks
        self.settings = settings
        self.outbox = outbox
        self.turn_lock = turn_lock
        self.every = every
        self.settled = 0
        """How many answers this process settled."""
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        """Settle what is left now (in the background), then every ``every`` seconds."""
        if self._task is None:
            self._task = asyncio.create_task(self._sweeping(), name="genbot-chat-interrupted")

    async def stop(self) -> None:
        """Stop sweeping."""
        task, self._task = self._task, None
        if task is not None:
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)

    async def sweep(self) -> int:
        """Settle the answers nobody streams any more; how many were settled. Where other
        processes share the locks, an answer is settled only when its conversation was free
        at a first look and still is :data:`LOST_LOCK_SECONDS` later (see the module
        docstring)."""
        found = await self.conversations.streaming_answers(BATCH)
        if self.locks.shared and found:
            found = [answer for answer in found if await self._free(*answer)]
            if found:
                await asyncio.sleep(LOST_LOCK_SECONDS)
        settled = 0
        for conversation_id, turn_id in found:
            lock = self.turn_lock(conversation_id)
            if lock.locked():
                continue
            async with lock:
                try:
                    async with self.locks.conversation_lock(
                        conversation_id, wait=BUSY_WAIT_SECONDS
                    ):
                        settled += await self._settle(conversation_id, turn_id)
                except StorageError as error:
                    log.info("left the answer of turn %d streaming for now: %s", turn_id, error)
        self.settled += settled
        return settled

    async def _free(self, conversation_id: int, turn_id: int) -> bool:
        """Whether nobody answers the conversation now: this process does not, and its lock
        across processes can be had (it is let go at once)."""
        if self.turn_lock(conversation_id).locked():
            return False
        try:
            async with self.locks.conversation_lock(conversation_id, wait=BUSY_WAIT_SECONDS):
                return True
        except StorageError as error:
            log.info("left the answer of turn %d streaming for now: %s", turn_id, error)
            return False

    async def _sweeping(self) -> None:
        while True:
            try:
                if settled := await self.sweep():
                    log.info("settled %d answer(s) left streaming by a process that ended", settled)
            except Exception:
                log.exception("settling the answers left streaming failed")
            await asyncio.sleep(self.every)

    async def _settle(self, conversation_id: int, turn_id: int) -> int:
        turn = await self.conversations.get_turn(conversation_id, turn_id)
        conversation = await self.conversations.get_conversation(conversation_id)
        if turn is None or conversation is None or turn.state != "streaming":
            return 0
        if turn.role == "user":
            return await self._settle_asked(conversation, turn)
        place = place_of(conversation)
        shown = (turn.content or "").rstrip()
        language = await self._language(conversation, turn.asked_by)
        with speaking(language):
            note = _(INTERRUPTED_NOTE)
        text = f"{shown}\n\n{note}" if shown else note
        try:
            await self._show(place, conversation_id, turn, shown, text)
            with speaking(language):
                await retire_previous(
                    self.conversations, self.feedback, self.outbox, place, conversation_id, turn_id
                )
        except SurfaceError as error:
            log.warning("could not mark the answer of turn %d interrupted: %s", turn_id, error)
        await self.conversations.update_message(
            turn_id, content=text, token_count=reply_tokens(text), state="interrupted"
        )
        if self.ledger is not None:
            await self.ledger.complete_usage(answer_usage(turn_id), count_text(shown))
        return 1

    async def _settle_asked(self, conversation: Conversation, turn: ChatMessage) -> int:
        """A user's turn whose process ended before its answer began: when it is still the
        newest turn, a note says it was not answered, with 🔁 to answer it (stored as its
        answer, ``interrupted``, so 🔁 regenerates it as any answer); a turn answered since,
        or followed by a newer one, is only marked done. The answers a 🔁 replaced (and what
        came with them) do not count: that 🔁's answer is the one it waited for."""
        newest = await self.conversations.conversation_tail(conversation.id, max_tokens=0)
        if [later.id for later in newest if later.state != "replaced"] != [turn.id]:
            await self.conversations.update_message(turn.id, state=None)
            return 0
        place = place_of(conversation)
        with speaking(await self._language(conversation, turn.author)):
            note = _(NOT_ANSWERED_NOTE)
        answer_id = await self.conversations.append_message(
            conversation.id,
            "assistant",
            note,
            token_count=reply_tokens(note),
            model=conversation.model,
            asked_by=turn.author,
            state="interrupted",
        )
        await self.conversations.update_message(turn.id, state=None)
        buttons = final_buttons(conversation.id, answer_id)
        try:
            posted = await self.outbox.write(
                place, Post(OutMessage(note, buttons=buttons)), WritePolicy.RAISE
            )
            await self.conversations.link_conversation_messages(
                conversation.id,
                [posted.message_id],
                chat_message_id=answer_id,
                channel_id=place.channel_id,
            )
            await retire_previous(
                self.conversations, self.feedback, self.outbox, place, conversation.id, answer_id
            )
        except SurfaceError as error:
            log.warning("could not say that turn %d was not answered: %s", turn.id, error)
        return 1

    async def _show(
        self, place: Place, conversation_id: int, turn: ChatMessage, shown: str, text: str
    ) -> None:
        """Edit the answer's last message to the rest of ``text`` (the earlier ones are
        complete: they hold what the stream renderer cut off ``shown``), posting what does not
        fit after it."""
        limit = self.outbox.profile(place.platform).max_text
        refs = [MessageRef(place, message_id) for message_id in turn.platform_message_ids]
        if not refs:
            return
        start = 0
        if len(refs) > 1 and shown:
            streaming = split_chunks(shown, limit, reserve=len(FENCE) + 1 + len(MARKER))
            start = streaming[min(len(refs), len(streaming)) - 2].end if len(streaming) > 1 else 0
        chunks = split_chunks(text, limit, start=start)
        newest = await is_newest_answer(self.conversations, turn)
        buttons = final_buttons(conversation_id, turn.id, regenerate=newest)
        for index, chunk in enumerate(chunks):
            message = OutMessage(
                chunk.text, buttons=buttons if index == len(chunks) - 1 else (), from_model=True
            )
            if index == 0:
                await self.outbox.write(place, Edit(refs[-1], message), WritePolicy.RAISE)
                continue
            posted = await self.outbox.write(place, Post(message), WritePolicy.RAISE)
            await self.conversations.link_conversation_messages(
                conversation_id,
                [posted.message_id],
                chat_message_id=turn.id,
                channel_id=place.channel_id,
            )

    async def _language(self, conversation: Conversation, user_id: str | None) -> str:
        """The language ``user_id`` is spoken to in the conversation's place
        (:func:`~bot.kernel.spoken`, as the router decides; the platform's locales are not
        stored, so only the languages set apply)."""
        scopes = await self.settings.scopes(
            conversation.platform,
            user_id=user_id,
            channel_id=conversation.channel_id,
            workspace_id=conversation.workspace_id,
        )
        return spoken(Stored.of(scopes), is_dm=conversation.kind == "dm").private
