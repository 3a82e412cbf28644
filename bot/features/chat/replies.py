"""The messages of one answer besides its text: the notice shown while it waits for the
provider's rate limit, and the stored assistant turn kept in step with what is posted."""

from __future__ import annotations

import logging

from bot.features.chat.renderer import RenderResult
from bot.features.chat.scoping import Target
from bot.features.chat.tokens import count_message
from bot.features.provider_waits import about
from bot.kernel import MessageRef, OutMessage, _
from bot.outbox import Edit, Outbox, Post, WritePolicy
from storage import ConversationStore

log = logging.getLogger(__name__)


class WaitNotice:
    """The message telling a user their answer waits for the provider's rate limit: posted at
    the first wait worth showing, edited as the queue moves, and left as a short note of how
    long it took and whether the request then went through."""

    def __init__(self, outbox: Outbox, target: Target) -> None:
        self.outbox = outbox
        self.target = target
        self.ref: MessageRef | None = None
        self.started = outbox.pacer.clock.monotonic()

    async def write(self, text: str) -> None:
        # Translators: {wait} says what the answer waits for (the provider's rate limit…).
        message = OutMessage(_("⏳ Your answer is waiting: {wait}.", wait=text))
        if self.ref is None:
            self.ref = await self.outbox.write(
                self.target.place, Post(message, self.target.origin), WritePolicy.RAISE
            )
        else:
            await self.outbox.write(self.ref.place, Edit(self.ref, message), WritePolicy.RAISE)

    async def finish(self, *, through: bool) -> None:
        """The wait is over: the request went through (``through``), or it ended otherwise
        (refused, failed or cancelled: no answer follows, whatever the notice said last)."""
        if self.ref is None:
            return
        waited = about(self.outbox.pacer.clock.monotonic() - self.started)
        if through:
            text = _("⏳ Your answer waited {time} for the provider's rate limit.", time=waited)
        else:
            text = _(
                "⏳ Your answer waited {time} for the provider's rate limit and was not given.",
                time=waited,
            )
        note = OutMessage(text)
        try:
            await self.outbox.write(self.ref.place, Edit(self.ref, note), WritePolicy.RAISE)
        except Exception as error:
            log.warning("could not settle the rate-limit notice: %r", error)


class StoredReply:
    """The assistant turn of one rendered reply, kept in step with what is posted."""

    def __init__(self, store: ConversationStore, target: Target) -> None:
        self.store = store
        self.target = target
        self.turn_id = 0
        self._stored: str | None = None

    async def begin(self, model: str, asked_by: str) -> None:
        """Store the (empty) turn of the answer ``model`` writes for ``asked_by``."""
        self.turn_id = await self.store.append_message(
            self.target.conversation.id,
            "assistant",
            "",
            token_count=reply_tokens(""),
            model=model,
            asked_by=asked_by,
        )

    async def posted(self, ref: MessageRef) -> None:
        """Link the answer's new message ``ref`` to its turn."""
        await self.store.link_conversation_messages(
            self.target.conversation.id,
            [ref.message_id],
            chat_message_id=self.turn_id,
            channel_id=self.target.place.channel_id,
        )

    async def shown(self, text: str) -> None:
        """The answer's messages now show ``text``: store it as the turn, still ``streaming``
        (one write per platform write, which the stream renderer makes at most at the
        platform's pace; none when the text did not change). Its token count is left for
        :meth:`finish` (or for settling it, :mod:`bot.features.chat.interrupted`)."""
        if text == self._stored:
            return
        await self.store.update_message(self.turn_id, content=text, state="streaming")
        self._stored = text

    async def finish(self, content: str, *, stopped: bool = False) -> None:
        """The answer's text now (``stopped``: the user stopped it there); it no longer streams."""
        await self.store.update_message(
            self.turn_id,
            content=content,
            token_count=reply_tokens(content),
            state="stopped" if stopped else None,
        )
        self._stored = content

    async def abandon(self, partial: RenderResult) -> None:
        """The rendering failed or was cancelled: a turn nothing shows is forgotten; one that
        was posted keeps the text shown, still ``streaming``, for a process to settle it (mark
        it interrupted, :mod:`bot.features.chat.interrupted`)."""
        if partial.messages:
            return
        try:
            await self.store.delete_message(self.turn_id)
        except Exception:
            log.exception("could not forget the unposted reply %s", self.turn_id)


def reply_tokens(content: str) -> int:
    """Prompt tokens of an assistant turn holding ``content``."""
    return count_message({"role": "assistant", "content": content})
