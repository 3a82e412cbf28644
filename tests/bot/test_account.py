"""``/settings`` (options, form, text style), ``/usage`` and ``/help``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.events import Command
from bot.tokens import count_functions, count_messages, count_text
from tests.bot.chat.support import ALICE, BOB, CHANNEL, DM, ChatWorld, chat_world


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[ChatWorld]:
    async with chat_world(tmp_path) as started:
        yield started


async def test_settings_options_are_stored_and_confirmed(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command(
        "settings", model="llm-3.5-turbo-16k", temperature=0.3, aspect_ratio="16 : 9"
    )
    await alice.command("settings", system_prompt="Be brief.", process_mode="fast")
    await alice.command("settings", model="llm-3.5-turbo-16k")
    assert world.platform.ephemerals_for("alice") == [
        "Saved your defaults: model → llm-3.5-turbo-16k, aspect ratio → 16:9, temperature → 0.3.",
        "Saved your defaults: image speed → fast. Saved this channel's system prompt: “Be brief.”.",
        "Nothing changed: those are already your settings.",
    ]
    mine = await world.store.get_scope_settings("user", "fake", "alice")
    assert mine is not None
    assert (mine.model, mine.temperature, mine.aspect_ratio, mine.process_mode) == (
        "llm-3.5-turbo-16k",
        0.3,
        "16:9",
        "fast",
    )
    channel = await world.store.get_scope_settings("channel", "fake", CHANNEL.channel_id)
    assert channel is not None and channel.system_prompt == "Be brief."
    await world.actor(BOB, CHANNEL).command("settings", system_prompt="-")
    assert world.platform.ephemerals_for("bob") == [
        "This channel's system prompt is back to the default."
    ]
    channel = await world.store.get_scope_settings("channel", "fake", CHANNEL.channel_id)
    assert channel is not None and channel.system_prompt is None


async def test_settings_form_round_trip(world: ChatWorld) -> None:
    alice = world.actor(ALICE, CHANNEL)
    await alice.command("settings", temperature=1.5, system_prompt="Speak like a sailor.")
    await alice.command("settings")
    ((origin, modal),) = world.platform.modals
    assert isinstance(origin, Command) and modal.action == "settings"
    defaults = {field.id: field.default for field in modal.fields}
    assert defaults == {
        "model": "",
        "system_prompt": "Speak like a sailor.",
        "process_mode": "",
        "aspect_ratio": "",
        "temperature": "1.5",
    }
    await alice.submit(modal, **{**defaults, "model": "LLM-4", "temperature": "0.2"})
    mine = await world.store.get_scope_settings("user", "fake", "alice")
    assert mine is not None and (mine.model, mine.temperature) == ("llm-4", 0.2)
    assert world.platform.ephemerals_for("alice")[-1] == (
        "Saved your defaults: model → llm-4, temperature → 0.2."
    )
    await alice.submit(modal, temperature="7", model="llm-3.5-turbo")
    assert "temperature must be at most 2" in world.platform.ephemerals_for("alice")[-1]
    mine = await world.store.get_scope_settings("user", "fake", "alice")
    assert mine is not None and (mine.model, mine.temperature) == ("llm-4", 0.2)


async def test_text_style_settings(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("settings", "")
    assert len(world.platform.modals) == 1
    await alice.command("settings", "--temp 0.5 --mode relax")
    assert world.platform.ephemerals_for("alice") == [
        "Saved your defaults: image speed → relax, temperature → 0.5."
    ]


async def test_free_plan_cannot_choose_llm_4(tmp_path: Path) -> None:
    async with chat_world(tmp_path, plan="free") as world:
        await world.actor().command("settings", model="llm-4-vision-preview")
        (refusal,) = world.platform.ephemerals_for("alice")
        assert "needs the Developer plan" in refusal and "llm-3.5-turbo-16k" in refusal
        assert await world.store.get_scope_settings("user", "fake", "alice") is None


async def test_usage_counts_the_chat_tokens_of_today(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("usage")
    await alice.say("echo: count these tokens please")
    await alice.say("echo: and these")
    await alice.command("usage")
    before, after = world.platform.ephemerals_for("alice")
    assert before == (
        "Your usage today (UTC): 0 chat tokens (0 prompt + 0 completion) and 0 image credits."
    )
    prompt = completion = 0
    for body in world.chat_bodies():
        prompt += count_messages(body["messages"]) + count_functions(body.get("functions") or [])
        completion += count_text(await world.replay(body))
    assert prompt > 0 and completion > 0
    assert after == (
        f"Your usage today (UTC): {prompt + completion:,} chat tokens ({prompt:,} prompt + "
        f"{completion:,} completion) and 0 image credits."
    )
    await world.actor(BOB, DM).command("usage")
    assert "0 chat tokens" in world.platform.ephemerals_for("bob")[0]


async def test_help_lists_every_command_within_the_length_limit(world: ChatWorld) -> None:
    await world.actor().command("help")
    pieces = world.platform.ephemerals_for("alice")
    assert len(pieces) >= 2
    assert all(len(piece) <= world.platform.limits.max_text for piece in pieces)
    text = "".join(pieces)
    for name in ("/chat", "/imagine", "/describe", "/blend", "/diffusion txt2img", "/settings"):
        assert f"**{name}**" in text
    assert "**Chat**" in text and "`/settings model`" in text


async def test_usage_includes_the_credits_of_image_jobs(world: ChatWorld) -> None:
    alice = world.actor()
    await alice.command("imagine", prompt="a fox in the snow")
    await world.genbot.settled((await world.genbot.latest_job()).id)
    totals = await world.store.usage_for_user("fake", "alice")
    assert totals.credits > 0
    await alice.command("usage")
    assert world.platform.ephemerals_for("alice")[-1].endswith(
        f"and {totals.credits:,} image credits."
    )
