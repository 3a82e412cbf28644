"""``/forget-me`` while an answer to the user streams (the chat world of
``tests/bot/features/chat/support.py``, the simulator over HTTP): the answer is stopped before
the deletion, so nothing of it — its turn, the usage it recorded, the user's message — is left
naming the user, and the provider's stream is closed long before the end."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bot.features.audit import AuditTrail
from bot.features.chat import ChatDefaults
from bot.features.chat.controls import STOP_LABEL
from bot.features.chat.renderer import STOPPED_NOTE
from bot.features.retention import ForgetFeature, UserAnswers
from bot.kernel import ButtonPress, Command
from bot.router import Feature
from simulator.server import serve
from storage import SqliteStore
from tests.bot.features.chat.support import ALICE, DM, ChatWorld, sim_config
from tests.bot.features.chat.test_controls import SLOW, WORDS, answer_in
from tests.bot.features.jobs.test_batches import PrivatePlatform
from tests.bot.harness import Parts
from tests.fakes.platform import PostedMessage
from tests.storage.helpers import rows_naming


@dataclass
class ForgettingWorld(ChatWorld):
    """The chat world with ``/forget-me``, wired to the chat's stop requests as
    ``genbot/compose.py`` wires it."""

    def _features(self, parts: Parts) -> list[Feature[Any]]:
        features = super()._features(parts)
        answers = UserAnswers(
            self.stops.request, self.engine.turn_lock, parts.store.conversation_locks
        )
        forget = ForgetFeature(
            parts.store.retention,
            parts.outbox,
            AuditTrail(parts.store.audit, 90),
            parts.store.clock,
            answers=answers,
        )
        return [*features, forget]


async def test_a_streaming_answer_is_stopped_and_erased_with_the_conversation(
    tmp_path: Path,
) -> None:
    platform = PrivatePlatform()
    async with serve(sim_config(time_scale=SLOW)) as sim:
        world = ForgettingWorld(
            sim, tmp_path / "genbot.db", platform, "developer", ChatDefaults(), True
        )
        await world.start()
        try:
            alice = world.actor()
            asking = asyncio.create_task(alice.say(f"echo: {WORDS}"))

            def streaming_now() -> PostedMessage | None:
                message = answer_in(world, STOP_LABEL)
                return message if message is not None and "fox3 " in message.text else None

            streaming = await platform.wait_for(streaming_now, 20, "the answer streaming")
            await world.core.handle(Command(user=ALICE, place=DM, name="forget-me"))
            [preview] = platform.privates
            [button] = [b for row in preview.buttons for b in row if b.label == "Delete all of it"]
            press = ButtonPress(
                user=ALICE, place=DM, message_id="preview", action=button.action, ref=button.ref
            )
            await world.core.handle(press)
            [done] = platform.ephemerals_for(ALICE.id)
            assert done.startswith("**Your data on fake is deleted.**")
            await asyncio.wait_for(asking, 10)

            stopped = platform.messages[streaming.ref.message_id]
            assert stopped.text.endswith(STOPPED_NOTE)
            assert "fox119" not in stopped.text
            assert await world.store.retention.answering("fake", ALICE.id) == []
            assert set((await world.store.retention.kept("fake", ALICE.id)).kinds.values()) == {0}
            assert await rows_naming(world.store, ALICE.id) == {}
        finally:
            await world.stop()


async def test_one_bound_covers_the_wait_for_every_answer_that_does_not_end(
    tmp_path: Path,
) -> None:
    """Three answers whose turns never end: the deletion waits at most one bound for all of
    them, not one bound each — once the first has used it up, no other is waited for."""
    held = {conversation: asyncio.Lock() for conversation in (1, 2, 3)}
    asked: list[int] = []

    def turn_lock(conversation: int) -> asyncio.Lock:
        asked.append(conversation)
        return held[conversation]

    async def stop(turn: int) -> bool:
        return True

    for lock in held.values():
        await lock.acquire()
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        answers = UserAnswers(stop, turn_lock, store.conversation_locks, wait=0.05)
        await asyncio.wait_for(answers.end([(1, 10), (2, 20), (3, 30)]), 10)
    assert asked == [1]
