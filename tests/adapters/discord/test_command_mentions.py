"""Discord's texts name genbot's commands by their command mentions (``</settings:123>``), made
with the ids Discord gave the commands at registration: a German reader's client shows them as
``/einstellungen`` and runs them when clicked. Through the real discord.py, the fake Discord, the
real core and the simulator."""

from __future__ import annotations

from pathlib import Path

import pytest

from bot.kernel import command
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.adapters.discord.harness import Harness
from tests.adapters.discord.real_core import (
    QUICK_BUCKET,
    QUICK_WINDOW,
    ephemeral_texts,
    real_genbot,
)
from tests.language import german


@pytest.mark.parametrize("fake", [QUICK_BUCKET], indirect=True)
async def test_a_german_users_help_mentions_the_registered_commands(
    harness: Harness, tmp_path: Path
) -> None:
    fake = harness.fake
    fake.guild_locale = "de"
    alice, general = fake.user("alice"), fake.channel("general")
    alice.locale = "de"
    described = german(command("imagine").description)

    async with (
        serve(SimulatorConfig(time_scale=0.003)) as sim,
        real_genbot(harness, sim, tmp_path / "genbot.db", edit_window_seconds=QUICK_WINDOW),
    ):
        ids = {c["name"]: c["id"] for c in fake.guild_commands[fake.guild_id]}
        await fake.slash(alice, general, "help", {})
        await fake.wait_for(
            lambda: any(described in text for text in ephemeral_texts(fake, alice)),
            what="/help in German",
        )
        await fake.slash(alice, general, "settings", {"scope": "channel"})
        await fake.wait_for(lambda: len(ephemeral_texts(fake, alice)) > 1, what="the refusal")

    *shown, refusal = ephemeral_texts(fake, alice)
    help_text = "\n".join(shown)
    assert f"</imagine:{ids['imagine']}> — {described}" in help_text
    assert f"</diffusion txt2img:{ids['diffusion']}> — " in help_text
    assert f"</settings:{ids['settings']}> `--model llm-4 --ar 16:9`" in help_text
    assert f"</chat:{ids['chat']}> max_tokens" in help_text
    assert "/settings" not in help_text.replace(f"</settings:{ids['settings']}>", "")
    assert f"</settings:{ids['settings']}>" in refusal and "/settings" not in refusal.replace(
        f"</settings:{ids['settings']}>", ""
    )
