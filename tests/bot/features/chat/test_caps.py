"""Per-user chat caps (bot/features/chat/caps.py): answers at once (over every process on the
database), answers a minute, admins uncapped; a tier's chat token budget (read from the ledger)
and its chat models."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bot.features.chat import ChatEngine
from bot.features.chat.caps import ChatCaps
from bot.features.chat.engine import ChatStorage
from bot.features.jobs import Tiers
from bot.kernel import LimitsSettings, QuotasSettings, User, UserError
from simulator.server import serve
from storage import SqliteStore
from tests.bot.features.chat.support import (
    BOB_DM,
    CHANNEL,
    CHAT_PATH,
    DM,
    ROOMY,
    chat_world,
    sim_config,
)
from tests.bot.features.chat.test_cluster import HeldPlatform
from tests.bot.harness import Parts, running_genbot
from tests.fakes.platform import Actor

ALICE, BOB, ROOT = User("alice"), User("bob"), User("root", is_admin=True)


async def test_answers_at_once_are_capped_per_user_and_freed_when_done(tmp_path: Path) -> None:
    async with await SqliteStore.open(tmp_path / "genbot.db") as store:
        caps = ChatCaps(max_concurrent=2, places=store.answer_places)
        async with caps.answering("web", ALICE), caps.answering("web", ALICE):
            with pytest.raises(UserError, match="already writing 2 answers for you — at most 2"):
                async with caps.answering("web", ALICE):
                    pass
            async with caps.answering("web", BOB), caps.answering("slack", ALICE):
                pass
            async with (
                caps.answering("web", ROOT),
                caps.answering("web", ROOT),
                caps.answering("web", ROOT),
            ):
                pass
        async with caps.answering("web", ALICE):
            pass


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_answers_at_once_are_capped_over_two_processes_on_one_database(
    backend: str, request: pytest.FixtureRequest, tmp_path: Path
) -> None:
    """Alice's answer streams on one process while she asks the other for a second one: it
    is refused at once (nothing stored, no provider call), and answered once the first is
    done."""
    platform = HeldPlatform(ROOMY)
    url = request.getfixturevalue("postgres").create_database() if backend == "postgres" else None
    engines: dict[int, ChatEngine] = {}

    def capped(parts: Parts) -> ChatEngine:
        if id(parts) not in engines:
            store = parts.store
            storage = ChatStorage(
                store.conversations, store.conversation_locks, store.settings, store.ledger
            )
            caps = ChatCaps(max_concurrent=1, places=store.answer_places)
            engines[id(parts)] = ChatEngine(storage, parts.provider, parts.outbox, caps=caps)
        return engines[id(parts)]

    shared: dict[str, Any] = {
        "platform": platform,
        "storage_url": url,
        "conversations": capped,
        "features": lambda parts: [capped(parts)],
    }
    async with (
        serve(sim_config()) as sim,
        running_genbot(sim, tmp_path / "genbot.db", **shared) as first,
        running_genbot(sim, tmp_path / "genbot.db", **shared) as second,
        asyncio.timeout(60),
    ):
        platform.hold_next = True
        one = asyncio.create_task(Actor(first.core, platform, ALICE, DM).say("echo: one"))
        await platform.holding.wait()
        asked = len(sim.state.requests_to(CHAT_PATH))
        await Actor(second.core, platform, ALICE, CHANNEL).command("chat", prompt="echo: two")
        assert platform.ephemerals_for(ALICE.id) == [
            "genbot is already writing 1 answer for you — at most 1 at once; send this again "
            "when one is done."
        ]
        assert len(sim.state.requests_to(CHAT_PATH)) == asked, "no provider call"
        platform.released.set()
        await one
        await Actor(second.core, platform, ALICE, CHANNEL).command("chat", prompt="echo: two")
        assert [m.text for m in platform.messages.values() if m.message.from_model] == [
            "one",
            "two",
        ]


async def test_answers_a_minute_are_capped_and_the_refusal_says_when_to_try_again() -> None:
    now = [1000.0]
    caps = ChatCaps(per_minute=3, monotonic=lambda: now[0])
    for second in range(3):
        now[0] = 1000.0 + second
        async with caps.answering("web", ALICE):
            pass
    with pytest.raises(UserError, match=r"3 answers in the last minute.*try again in 58 s"):
        async with caps.answering("web", ALICE):
            pass
    async with caps.answering("web", BOB):
        pass
    now[0] = 1060.5
    async with caps.answering("web", ALICE):
        pass


async def test_a_tier_budgets_chat_tokens_in_the_shared_ledger_and_limits_models(
    tmp_path: Path,
) -> None:
    quotas = QuotasSettings.model_validate(
        {"tiers": [{"name": "default", "daily_chat_tokens": 5, "models": ["llm-3.5-turbo"]}]}
    )
    async with chat_world(tmp_path, tiers=Tiers(LimitsSettings(), quotas)) as world:
        alice = world.actor()
        await alice.say("echo: a lighthouse")
        assert len(world.chat_bodies()) == 1
        used = (await world.store.ledger.usage_for_user("fake", "alice")).tokens
        assert used >= 5

        await alice.say("echo: another lighthouse")
        await world.actor(BOB, BOB_DM).command("chat", prompt="echo: hi", model="llm-4")
        [budget] = world.platform.ephemerals_for("alice")
        [model] = world.platform.ephemerals_for("bob")
        assert budget == (
            f"You have used {used:,} of your 5 chat tokens today — the chat budget of your "
            "tier **default**; it refills at 00:00 UTC."
        )
        assert model.startswith("The model llm-4 is not in your tier **default**")
        assert len(world.chat_bodies()) == 1, "no provider call"

        await world.actor(ROOT).say("echo: the admin's lighthouse")
        assert len(world.chat_bodies()) == 2

        await alice.command("usage")
        usage = world.platform.ephemerals_for("alice")[-1]
        assert f"Chat tokens today (UTC): {used:,} of 5 used, 0 left, more at 00:00 UTC." in usage
        assert "Models: llm-3.5-turbo." in usage and "Image jobs at once: no limit." in usage
