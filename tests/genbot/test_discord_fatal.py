"""``genbot run`` with Discord, as a separate process against the fake Discord: a gateway that
refuses genbot at startup, or ends its connection for good later, stops genbot with one
``Error:`` line and exit status 1 (never a traceback, never a process that no longer hears
Discord)."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.discord import FakeDiscord
from tests.genbot.process import CHILD_WAIT, clean_env, genbot

TOKEN = "fake-bot-token.never-print-me"


def discord_env(fake: FakeDiscord, tmp_path: Path) -> dict[str, str]:
    return clean_env(
        {
            "GENBOT_DISCORD__TOKEN": TOKEN,
            "GENBOT_DISCORD__API_BASE": fake.api_base,
            "GENBOT_DISCORD__GATEWAY_URL": fake.gateway_url,
            "GENBOT_DISCORD__GUILD_IDS": f"[{fake.guild_id}]",
            "GENBOT_STORAGE__PATH": str(tmp_path / "genbot.db"),
        }
    )


async def test_a_disallowed_intent_at_startup_is_one_line(tmp_path: Path) -> None:
    async with FakeDiscord(token=TOKEN, message_content_intent=False) as fake:
        env = discord_env(fake, tmp_path)
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            status = await run.exit_status()

    assert status == 1
    assert run.error_line().startswith("Error: ") and "4014" in run.error_line()
    assert "Message Content" in run.error_line()
    assert "Traceback" not in run.errors() and TOKEN not in run.errors()
    assert run.printed == []


async def test_a_connection_ended_for_good_stops_genbot_with_the_reason(tmp_path: Path) -> None:
    async with FakeDiscord(token=TOKEN) as fake:
        env = discord_env(fake, tmp_path)
        async with genbot("run", env=env, cwd=tmp_path, log=tmp_path / "run.log") as run:
            await run.line_matching("^genbot running: discord ")
            await fake.wait_connected(timeout=CHILD_WAIT)
            await fake.close_gateway(4004)
            status = await run.exit_status()

    assert status == 1
    assert run.printed[-1] == "genbot stopped"
    line = run.error_line()
    assert line.startswith("Error: the Discord connection ended: ") and "4004" in line
    assert "Traceback" not in run.errors() and TOKEN not in run.errors()
