"""Chat under rate limits: answers queue instead of failing, and the waiting user sees it."""

from __future__ import annotations

import asyncio
import dataclasses
from pathlib import Path

from bot.api.ratelimit import RequestPacer
from bot.kernel import Place, User
from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    BOB_DM,
    CHAT_PATH,
    DM,
    chat_world,
    sim_config,
)
from tests.sim_time import a_minute_passes_after_a_429, freeze

CAROL = User("carol", "Carol")
CAROL_DM = Place("fake", "w1", "dm-carol", is_dm=True)


async def test_paced_answers_queue_and_show_the_position(tmp_path: Path) -> None:
    async with chat_world(tmp_path, tools=False) as world:
        world.engine.api.chat.pacer = RequestPacer(per_minute=1, minute=1.2)
        users = [(ALICE, DM), (BOB, BOB_DM), (CAROL, CAROL_DM)]
        await asyncio.gather(
            *(world.actor(user, place).say(f"echo: hello {user.id}") for user, place in users)
        )

        for user, place in users:
            assert f"hello {user.id}" in world.texts_in(place)[-1]
        notices = {
            place.channel_id: [m.text for m in world.posted_in(place)[0].history]
            for _, place in users
            if world.posted_in(place)[0].text.startswith("⏳")
        }
        assert len(notices) == 2, notices
        last = next(history for history in notices.values() if len(history) == 3)
        assert "queued for the provider, 1 ahead of you" in last[0]
        assert "rate-limiting" in last[1]
        assert last[2].startswith("⏳ Your answer waited about 2 s")
        assert len(world.chat_bodies()) == 3


async def test_a_provider_429_is_waited_out_and_past_the_bound_explained(
    tmp_path: Path,
) -> None:
    config = sim_config(chat_rpm=1, time_scale=0.01)
    async with chat_world(tmp_path, config=config, tools=False) as world:
        alice, bob = world.actor(ALICE, DM), world.actor(BOB, BOB_DM)
        freeze(world.sim)
        await alice.say("echo: one")
        await asyncio.gather(bob.say("echo: two"), a_minute_passes_after_a_429(world.sim))
        assert world.texts_in(BOB_DM)[-1] == "two"
        assert world.texts_in(BOB_DM)[0].startswith("⏳ Your answer waited")

        # The simulator's minute now lasts 600 s: far past genbot's wait of 60 s.
        world.sim.state.config = dataclasses.replace(world.sim.state.config, time_scale=10.0)
        await alice.say("echo: three")
        assert world.platform.ephemerals_for("alice") == [
            "The provider is rate-limiting genbot; try again in about 10 min."
        ]


async def test_a_wait_whose_retry_is_refused_says_the_answer_was_not_given(
    tmp_path: Path,
) -> None:
    config = sim_config(chat_rpm=1, time_scale=0.05)
    async with chat_world(tmp_path, config=config, tools=False) as world:
        alice, bob = world.actor(ALICE, DM), world.actor(BOB, BOB_DM)
        freeze(world.sim)
        await alice.say("echo: one")

        async def refuse_the_retry() -> None:
            """Once genbot waits out the first 429, the simulator's minute lasts 600 s: its
            next try is refused far past genbot's wait of 60 s."""
            async with asyncio.timeout(10):
                while 429 not in [r.status for r in world.sim.state.requests_to(CHAT_PATH)]:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)
            world.sim.state.config = dataclasses.replace(world.sim.state.config, time_scale=10.0)

        await asyncio.gather(bob.say("echo: two"), refuse_the_retry())
        [notice] = world.posted_in(BOB_DM)
        *waiting, last = [message.text for message in notice.history]
        assert waiting
        assert all(text.startswith("⏳ Your answer is waiting: the provider") for text in waiting)
        assert last.startswith("⏳ Your answer waited about ")
        assert last.endswith(" for the provider's rate limit and was not given.")
        assert world.platform.ephemerals_for("bob") == [
            "The provider is rate-limiting genbot; try again in about 10 min."
        ]
        assert [r.status for r in world.sim.state.requests_to(CHAT_PATH)] == [200, 429, 429]
