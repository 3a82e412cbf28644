"""A prompt the chat model writes for its ``generate_image`` tool is checked: one breaking a
rule starts no job and the model is told why (the real chat world and the simulator)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bot.api import FunctionCall
from bot.features.audit import AuditTrail
from bot.features.chat.tools import ChatImageTools, ToolContext, run_tool
from bot.features.moderation import Moderation
from bot.kernel import ModerationSettings
from tests.bot.features.chat.support import ALICE, DM, ChatWorld, chat_world


@pytest.fixture
async def world(tmp_path: Path) -> AsyncIterator[ChatWorld]:
    async with chat_world(tmp_path) as started:
        yield started


async def test_a_tool_prompt_breaking_a_rule_starts_no_job(world: ChatWorld) -> None:
    rules = ModerationSettings(words={"gore": ["gory"]})
    moderation = Moderation(rules, world.store.moderation, audit=AuditTrail(world.store.audit, 90))
    tools = ChatImageTools(world.genbot.jobs.chat_jobs, moderation=moderation)
    context = ToolContext(ALICE, DM, None)

    def draw(prompt: str) -> FunctionCall:
        return FunctionCall(name="generate_image", arguments=json.dumps({"prompt": prompt}))

    refused = await run_tool(tools, draw("a g.o.r.y fox"), context)
    assert refused.startswith("Error: genbot's moderation refused this prompt")
    assert "gore" in refused and "g.o.r.y" not in refused
    assert await world.genbot.all_jobs() == []
    assert await world.store.moderation.banned_until("fake", ALICE.id) is None, "no offence"
    started = await run_tool(tools, draw("a calm fox"), context)
    assert started.startswith("Started image job")
