"""Per-user chat caps (bot/features/chat/caps.py): answers at once, answers a minute, admins
uncapped; a tier's chat token budget (read from the ledger) and its chat models."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.features.chat.caps import ChatCaps
from bot.features.jobs import Tiers
from bot.kernel import LimitsSettings, QuotasSettings, User, UserError
from tests.bot.features.chat.support import BOB_DM, chat_world

ALICE, BOB, ROOT = User("alice"), User("bob"), User("root", is_admin=True)


def test_answers_at_once_are_capped_per_user_and_freed_when_done() -> None:
    caps = ChatCaps(max_concurrent=2)
    with caps.answering("web", ALICE), caps.answering("web", ALICE):
        with (
            pytest.raises(UserError, match="already writing 2 answers for you — at most 2"),
            caps.answering("web", ALICE),
        ):
            pass
        with caps.answering("web", BOB), caps.answering("slack", ALICE):
            pass
        with caps.answering("web", ROOT), caps.answering("web", ROOT), caps.answering("web", ROOT):
            pass
    with caps.answering("web", ALICE):
        pass


def test_answers_a_minute_are_capped_and_the_refusal_says_when_to_try_again() -> None:
    now = [1000.0]
    caps = ChatCaps(per_minute=3, monotonic=lambda: now[0])
    for second in range(3):
        now[0] = 1000.0 + second
        with caps.answering("web", ALICE):
            pass
    with (
        pytest.raises(UserError, match=r"3 answers in the last minute.*try again in 58 s"),
        caps.answering("web", ALICE),
    ):
        pass
    with caps.answering("web", BOB):
        pass
    now[0] = 1060.5
    with caps.answering("web", ALICE):
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
