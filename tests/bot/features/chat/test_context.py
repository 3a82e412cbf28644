"""A provider that refuses a prompt as too long for the model's context."""

from __future__ import annotations

from pathlib import Path

from tests.bot.features.chat.support import (
    ALICE,
    BOB,
    BOB_DM,
    CHAT_PATH,
    DM,
    chat_world,
    sim_config,
)

WORDS = "alpha " * 60


async def test_a_refused_context_drops_older_turns_and_tries_once_more(tmp_path: Path) -> None:
    # genbot believes llm-3.5-turbo holds 4096 tokens; this provider takes 400.
    async with chat_world(tmp_path, config=sim_config(context_tokens=400), tools=False) as world:
        alice = world.actor(ALICE, DM)
        for number in range(4):
            await alice.say(f"echo: {number} {WORDS}")
            assert world.texts_in(DM)[-1].startswith(f"{number} alpha")

        statuses = [r.status for r in world.sim.state.requests_to(CHAT_PATH)]
        assert 400 in statuses and statuses[-1] == 200
        refused = statuses.index(400)
        assert statuses[refused + 1] == 200
        sent = world.chat_bodies()
        assert len(sent[refused + 1]["messages"]) < len(sent[refused]["messages"])
        assert sent[refused + 1]["messages"][-1] == sent[refused]["messages"][-1]
        assert world.platform.ephemerals_for("alice") == []


async def test_the_context_the_provider_showed_is_kept_for_later_turns(tmp_path: Path) -> None:
    async with chat_world(tmp_path, config=sim_config(context_tokens=400), tools=False) as world:
        alice, bob = world.actor(ALICE, DM), world.actor(BOB, BOB_DM)
        for number in range(8):
            await (alice if number % 2 else bob).say(f"echo: {number} {WORDS}")

        statuses = [r.status for r in world.sim.state.requests_to(CHAT_PATH)]
        assert statuses.count(400) == 1, statuses
        assert len(statuses) == 9
        assert world.texts_in(DM)[-1].startswith("7 alpha")


async def test_a_message_too_long_on_its_own_is_explained(tmp_path: Path) -> None:
    async with chat_world(tmp_path, config=sim_config(context_tokens=60), tools=False) as world:
        await world.actor(BOB, BOB_DM).say(f"echo: {WORDS}")

        assert world.platform.ephemerals_for("bob") == [
            "Your message is too long for llm-3.5-turbo: the service refused it as longer than "
            "the model's context. Shorten it, or pick a model with a larger context."
        ]
        assert [r.status for r in world.sim.state.requests_to(CHAT_PATH)] == [400]
