"""Login, gateway identify and command sync against the fake Discord."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import discord
import pytest

from bot.api.chat import allowed_chat_models
from bot.kernel import COMMANDS, PROCESS_MODES, Plan
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness, RecordingCore
from tests.adapters.discord.real_core import real_genbot
from tests.fakes.discord import FakeDiscord

OPTION_TYPES = {"string": 3, "integer": 4, "boolean": 5, "number": 10, "attachment": 11}


def synced_options(fake: FakeDiscord, dotted: str) -> dict[str, dict[str, Any]]:
    commands = {c["name"]: c for c in fake.guild_commands[fake.guild_id]}
    group, _, leaf = dotted.rpartition(".")
    if group:
        sub = next(o for o in commands[group]["options"] if o["name"] == leaf)
        assert sub["type"] == 1
        return {o["name"]: o for o in sub["options"]}
    return {o["name"]: o for o in commands[dotted]["options"]}


async def test_login_identifies_with_message_content_intent(bot: Harness) -> None:
    fake = bot.fake
    paths = [r.path for r in fake.requests]
    assert paths[:2] == ["/users/@me", "/oauth2/applications/@me"]
    intents = discord.Intents._from_value(fake.identifies[0]["intents"])
    assert intents.message_content and intents.guild_messages and intents.dm_messages
    assert bot.adapters[0].client.user is not None
    assert bot.adapters[0].client.user.id == fake.bot.id


async def test_commands_sync_to_configured_guilds_with_the_catalogue_schema(bot: Harness) -> None:
    fake = bot.fake
    assert fake.requests_to("PUT", rf"/applications/{fake.app_id}/guilds/{fake.guild_id}/commands")
    assert not fake.requests_to("PUT", rf"/applications/{fake.app_id}/commands")
    names = {c["name"] for c in fake.guild_commands[fake.guild_id]}
    assert names == {
        "chat",
        "imagine",
        "describe",
        "blend",
        "diffusion",
        "settings",
        "usage",
        "jobs",
        "show",
        "forget-me",
        "help",
        "admin",
        "prefer",
        "Image info",
    }
    [menu] = [c for c in fake.guild_commands[fake.guild_id] if c["name"] == "Image info"]
    assert menu["type"] == 3, "a message menu entry"
    admin = next(c for c in fake.guild_commands[fake.guild_id] if c["name"] == "admin")
    assert [o["name"] for o in admin["options"]] == ["moderation", "audit"]
    manage_server = discord.Permissions(manage_guild=True).value
    shown_to = {
        c["name"]: c.get("default_member_permissions") for c in fake.guild_commands[fake.guild_id]
    }
    assert shown_to.pop("admin") == manage_server
    assert set(shown_to.values()) == {None}
    diffusion = next(c for c in fake.guild_commands[fake.guild_id] if c["name"] == "diffusion")
    assert {o["name"] for o in diffusion["options"]} == {
        "txt2img",
        "img2img",
        "upscale",
        "controlnet",
    }
    for spec in COMMANDS:
        synced = synced_options(fake, spec.name)
        assert list(synced) == sorted(synced, key=lambda n: not synced[n]["required"])
        assert set(synced) == {o.name for o in spec.options}, spec.name
        for option in spec.options:
            got = synced[option.name]
            assert got["type"] == OPTION_TYPES[option.type], (spec.name, option.name)
            asked_later = spec.files_by_form and option.type == "attachment"
            assert got["required"] == (option.required and not asked_later)
            assert got["description"] == option.description
            if option.min_value is not None:
                assert got["min_value"] == option.min_value
            if option.max_value is not None:
                assert got["max_value"] == option.max_value
            if option.autocomplete:
                assert got["autocomplete"] is True and "choices" not in got
            elif option.choices:
                assert [c["value"] for c in got["choices"]] == list(option.choices)
    assert [c["value"] for c in synced_options(fake, "imagine")["process_mode"]["choices"]] == list(
        PROCESS_MODES
    )
    assert synced_options(fake, "diffusion.txt2img")["width"]["max_value"] == 1024


async def test_without_guild_ids_commands_sync_globally(
    harness: Harness, core: RecordingCore
) -> None:
    await harness.start(core, guild_ids=[])
    fake = harness.fake
    assert fake.requests_to("PUT", rf"/applications/{fake.app_id}/commands")
    assert {c["name"] for c in fake.global_commands} >= {"chat", "diffusion", "help"}
    assert fake.guild_id not in fake.guild_commands


async def test_model_autocomplete_suggests_matching_chat_models(bot: Harness) -> None:
    fake = bot.fake
    interaction = await fake.autocomplete(
        fake.user("alice"), fake.channel("general"), "chat", "model", "16k"
    )
    assert await fake.answered(interaction) == 8
    choices = [c["value"] for c in interaction.callbacks[0]["data"]["choices"]]
    assert choices == ["llm-3.5-turbo-16k", "llm-3.5-turbo-16k-0613"]


@pytest.mark.parametrize("plan", ["free", "developer"])
async def test_model_autocomplete_offers_what_the_configured_plan_allows(
    harness: Harness, plan: Plan, tmp_path: Path
) -> None:
    fake = harness.fake
    async with (
        serve(SimulatorConfig()) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", plan=plan),
    ):
        interaction = await fake.autocomplete(
            fake.user("alice"), fake.channel("general"), "chat", "model", "llm-"
        )
        assert await fake.answered(interaction) == 8
    choices = [c["value"] for c in interaction.callbacks[0]["data"]["choices"]]
    assert choices == allowed_chat_models(plan)
    assert any(model.startswith("llm-4") for model in choices) == (plan == "developer")


async def test_model_id_autocomplete_offers_the_diffusion_models_genbot_knows(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    async with (
        serve(SimulatorConfig()) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", diffusion_models=("sd15", "sdxl")),
    ):
        interaction = await fake.autocomplete(
            fake.user("alice"), fake.channel("general"), "diffusion txt2img", "model_id", "xl"
        )
        assert await fake.answered(interaction) == 8
    assert [c["value"] for c in interaction.callbacks[0]["data"]["choices"]] == ["sdxl"]
