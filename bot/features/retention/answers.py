"""The answers being written to a user who deletes their data (``/forget-me``): stopped on
whichever process streams them (the chat's stop requests), and waited for until their turn is
over — the answer's last writes, its usage — so that the deletion that follows erases all of it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence

from storage import ConversationLocks, StorageError

log = logging.getLogger(__name__)

END_WAIT_SECONDS = 10.0
"""The longest wait for the user's stopped answers to end (all of them together) before deleting
anyway."""


class UserAnswers:
    """Stops a user's answers and waits for their turns to end. ``stop`` asks whichever process
    streams a turn's answer to end it (:meth:`bot.features.chat.stops.StopRequests.request`);
    ``turn_lock`` is the chat engine's lock of a conversation's turns in this process, ``locks``
    the conversations' locks across processes: the answering turn holds both to its end."""

    def __init__(
        self,
        stop: Callable[[int], Awaitable[bool]],
        turn_lock: Callable[[int], asyncio.Lock],
        locks: ConversationLocks,
        *,
        wait: float = END_WAIT_SECONDS,
    ) -> None:
        self.stop = stop
        self.turn_lock = turn_lock
        self.locks = locks
        self.wait = wait

    async def end(self, answers: Sequence[tuple[int, int]]) -> None:
        """Stop the answers ``answers`` names (conversation, turn), then wait until their turns
        are over: at most :attr:`wait` seconds for all of them, however many there are."""
        for _, turn_id in answers:
            try:
                await self.stop(turn_id)
            except StorageError as error:
                log.warning("could not ask to stop the answer of turn %d: %s", turn_id, error)
        waiting = list(dict.fromkeys(conversation for conversation, _ in answers))
        try:
            async with asyncio.timeout(self.wait):
                while waiting:
                    await self._ended(waiting[0])
                    waiting.pop(0)
        except TimeoutError:
            log.warning("the answers in conversations %s did not end in time", waiting)

    async def _ended(self, conversation_id: int) -> None:
        """Wait until the turn answering in ``conversation_id`` is over (a lock that cannot be
        had is logged, not waited for again)."""
        try:
            async with (
                self.turn_lock(conversation_id),
                self.locks.conversation_lock(conversation_id, wait=self.wait),
            ):
                pass
        except StorageError as error:
            log.warning(
                "the answer in conversation %d did not end in time: %s", conversation_id, error
            )
