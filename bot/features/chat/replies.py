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
from storage import UNSET, ConversationStore

log = logging.getLogger(__name__)


class WaitNotice:
    """The message telling a user their answer waits for the provider's rate limit: posted at
    the first wait worth showing, edited as the queue moves, and left as a short note of how
    long it took."""

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

    async def finish(self) -> None:
        if self.ref is None:
            return
        waited = self.outbox.pacer.clock.monotonic() - self.started
        note = OutMessage(
            _(
                "⏳ Your answer waited {time} for the provider's rate limit.",
                time=about(waited),
            )
        )
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

    async def posted(self, ref: MessageRef, text_so_far: str) -> None:
        await self.store.link_conversation_messages(
            self.target.conversation.id,
            [ref.message_id],
            chat_message_id=self.turn_id,
            channel_id=self.target.place.channel_id,
        )
        await self.finish(text_so_far)

    async def finish(self, content: str, *, stopped: bool = False) -> None:
        """The answer's text now (``stopped``: the user stopped it there)."""
        await self.store.update_message(
            self.turn_id,
            content=content,
            token_count=reply_tokens(content),
            state="stopped" if stopped else UNSET,
        )

    async def abandon(self, partial: RenderResult) -> None:
        """The rendering failed: keep what was posted, forget a turn nothing shows."""
        try:
            if partial.messages:
                await self.finish(partial.reply)
            else:
                await self.store.delete_message(self.turn_id)
        except Exception:
            log.exception("could not record the unfinished reply %s", self.turn_id)


def reply_tokens(content: str) -> int:
    """Prompt tokens of an assistant turn holding ``content``."""
    return count_message({"role": "assistant", "content": content})
