"""``genbot doctor``: every configured service is reached, and each problem gets its own line and
exit status 1. The provider is the simulator; Discord and Slack are stubs on 127.0.0.1 that accept
one token each."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from aiohttp import web

from bot.config import Settings, StorageSettings
from genbot.doctor import check_storage
from simulator.server import serve
from simulator.state import SimulatorConfig
from tests.genbot.process import clean_env, free_port, genbot

DISCORD_TOKEN = "discord-good-token"
SLACK_TOKEN = "xoxb-good-slack-token"
REQUESTS = web.AppKey("requests", list[tuple[str, str]])


async def discord_me(request: web.Request) -> web.Response:
    request.app[REQUESTS].append((request.path, request.headers.get("Authorization", "")))
    if request.headers.get("Authorization") != f"Bot {DISCORD_TOKEN}":
        return web.json_response({"message": "401: Unauthorized", "code": 0}, status=401)
    return web.json_response({"id": "4242", "username": "genbot-test", "bot": True})


async def slack_auth_test(request: web.Request) -> web.Response:
    request.app[REQUESTS].append((request.path, request.headers.get("Authorization", "")))
    if request.headers.get("Authorization") != f"Bearer {SLACK_TOKEN}":
        return web.json_response({"ok": False, "error": "invalid_auth"})
    return web.json_response({"ok": True, "team": "Fox Team", "user": "genbot", "team_id": "T1"})


async def a_web_page(request: web.Request) -> web.Response:
    return web.Response(text="<html><body>Welcome!</body></html>", content_type="text/html")


@pytest.fixture
async def platforms() -> AsyncIterator[tuple[str, list[tuple[str, str]]]]:
    """Discord's ``/users/@me`` and Slack's ``auth.test`` on loopback; their base URL and log."""
    app = web.Application()
    app[REQUESTS] = []
    app.router.add_get("/discord/api/v10/users/@me", discord_me)
    app.router.add_post("/slack/api/auth.test", slack_auth_test)
    app.router.add_route("*", "/elsewhere/{tail:.*}", a_web_page)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", app[REQUESTS]
    finally:
        await runner.cleanup()


def write_config(
    path: Path,
    *,
    api_url: str,
    platforms_url: str,
    discord_token: str,
    slack_token: str,
    webhook_url: str,
    storage: Path,
) -> Path:
    path.write_text(
        f"""
[api]
base_url = "{api_url}"

[storage]
path = "{storage}"

[discord]
token = "{discord_token}"
api_base = "{platforms_url}/discord/api/v10"

[slack]
bot_token = "{slack_token}"
signing_secret = "slack-signing-secret"
api_url = "{platforms_url}/slack/api/"

[webhook]
public_url = "{webhook_url}"
""",
        encoding="utf-8",
    )
    return path


async def doctor(tmp_path: Path, config: Path, api_key: str) -> tuple[int, list[str]]:
    """Run ``genbot --config CONFIG doctor`` with the API key in the environment."""
    env = clean_env({"GENBOT_API__KEY": api_key})
    async with genbot(
        "--config", str(config), "doctor", env=env, cwd=tmp_path, log=tmp_path / "doctor.log"
    ) as process:
        status = await process.exit_status()
        assert "Traceback" not in process.errors()
        return status, process.printed


async def test_a_good_configuration_reaches_every_service_and_exits_0(
    tmp_path: Path, platforms: tuple[str, list[tuple[str, str]]]
) -> None:
    platforms_url, requests = platforms
    async with serve(SimulatorConfig()) as sim:
        config = write_config(
            tmp_path / "genbot.toml",
            api_url=sim.base_url,
            platforms_url=platforms_url,
            discord_token=DISCORD_TOKEN,
            slack_token=SLACK_TOKEN,
            webhook_url="https://genbot.example.com/webhooks/tasks",
            storage=tmp_path / "data" / "genbot.db",
        )
        (tmp_path / "data").mkdir()
        status, lines = await doctor(tmp_path, config, "sim-key")
        assert sim.state.requests_to("/gen/v2/multi_fetch")

    assert status == 0, lines
    assert lines == [
        f"✔ storage   database at {tmp_path / 'data' / 'genbot.db'}",
        f"✔ provider  {sim.base_url} accepts the key",
        "✔ discord   logged in as genbot-test",
        "✔ slack     Fox Team as genbot, HTTP mode",
        "✔ webhook   the provider will notify https://genbot.example.com/webhooks/tasks",
        "everything works",
    ]
    assert sorted(requests) == [
        ("/discord/api/v10/users/@me", f"Bot {DISCORD_TOKEN}"),
        ("/slack/api/auth.test", f"Bearer {SLACK_TOKEN}"),
    ]
    assert list((tmp_path / "data").iterdir()) == []


async def test_a_bad_configuration_names_each_problem_and_exits_1(
    tmp_path: Path, platforms: tuple[str, list[tuple[str, str]]]
) -> None:
    platforms_url, _ = platforms
    secrets = ("wrong-key", "discord-wrong-token", "xoxb-wrong")
    async with serve(SimulatorConfig()) as sim:
        config = write_config(
            tmp_path / "genbot.toml",
            api_url=sim.base_url,
            platforms_url=platforms_url,
            discord_token=secrets[1],
            slack_token=secrets[2],
            webhook_url="http://example.com:8080",
            storage=tmp_path / "a-file" / "data" / "genbot.db",
        )
        (tmp_path / "a-file").write_text("not a folder")
        status, lines = await doctor(tmp_path, config, secrets[0])

    assert status == 1
    assert lines == [
        f"✘ storage   {tmp_path / 'a-file'} is a file, so {tmp_path / 'a-file' / 'data'} "
        "cannot be created",
        "✘ provider  the API key was refused (401): check [api] key",
        "✘ discord   the bot token was refused: check [discord] token",
        "✘ slack     auth.test refused the bot token: invalid_auth",
        "✘ webhook   [webhook] public_url must look like https://your.domain "
        "(got 'http://example.com:8080')",
        "fix the ✘ lines above, then run genbot doctor again",
    ]
    assert not any(secret in line for line in lines for secret in secrets)


async def test_unreachable_or_wrong_addresses_are_reported(
    tmp_path: Path, platforms: tuple[str, list[tuple[str, str]]]
) -> None:
    platforms_url, _ = platforms
    unreachable = f"http://127.0.0.1:{free_port()}"
    config = write_config(
        tmp_path / "genbot.toml",
        api_url=unreachable,
        platforms_url=f"{platforms_url}/elsewhere",
        discord_token=DISCORD_TOKEN,
        slack_token=SLACK_TOKEN,
        webhook_url="https://genbot.example.com:8443",
        storage=tmp_path / "genbot.db",
    )
    status, lines = await doctor(tmp_path, config, "sim-key")

    assert status == 1
    [storage, provider, discord, slack, webhook, advice] = lines
    assert storage.startswith("✔ storage")
    assert provider.startswith(f"✘ provider  cannot reach {unreachable}: ")
    assert discord == (
        f"✘ discord   {platforms_url}/elsewhere/discord/api/v10/users/@me is not Discord's API: "
        "check [discord] api_base"
    )
    assert slack == (
        f"✘ slack     {platforms_url}/elsewhere/slack/api/auth.test is not Slack's API: "
        "check [slack] api_url"
    )
    assert webhook == "✘ webhook   [webhook] public_url may only use port 443 (got 8443)"
    assert advice == "fix the ✘ lines above, then run genbot doctor again"


def test_a_missing_database_folder_is_fine_when_it_can_be_created(tmp_path: Path) -> None:
    settings = Settings(storage=StorageSettings(path=tmp_path / "new" / "deeper" / "genbot.db"))
    finding = check_storage(settings)
    assert finding.ok
    assert finding.detail.startswith(f"{tmp_path / 'new' / 'deeper'} will be created")
