"""``genbot doctor``: every configured service is reached, and each problem gets its own line and
exit status 1; a limitation gets a ⚠ note and keeps exit status 0. The provider is the simulator
(its key checked with a chat body it must refuse, so nothing is charged); Discord and Slack are
stubs on 127.0.0.1 that accept one token each."""

from __future__ import annotations

import contextlib
import os
import socket
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from aiohttp import web
from pydantic import SecretStr

from adapters.discord.settings import DiscordSettings
from adapters.slack.settings import SlackSettings
from adapters.web.settings import WebSettings
from bot.api.settings import KeySettings
from bot.kernel import ApiSettings, OpsSettings, StorageSettings, WebhookSettings
from genbot.demo import free_port
from genbot.doctor import (
    DERIVED_KEY_NOTE,
    PUBLIC_URL_NOTE,
    Finding,
    check_listeners,
    check_playground_access,
    check_provider,
    check_sealing,
    check_storage,
    check_webhook,
    diagnose,
    report,
)
from genbot.settings import Settings
from genbot.webhooks import webhook_base_url
from simulator.server import serve
from simulator.state import SimulatorConfig
from simulator.task_model import account_id
from storage import ProcessLock
from storage.sqlite import SqliteStore
from tests.genbot.process import clean_env, genbot

DISCORD_TOKEN = "discord-good-token"
SECRET_KEY = "doctor-secret-key-0123456789abcdef"
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
    backup_urls: tuple[str, ...] = (),
    proxy_url: str = "",
    webhook_port: int = 0,
    secret_key: str = "",
) -> Path:
    backups = ", ".join(f'"{url}"' for url in backup_urls)
    path.write_text(
        f"""
[api]
base_url = "{api_url}"
backup_urls = [{backups}]
proxy_url = "{proxy_url}"

[storage]
path = "{storage}"
secret_key = "{secret_key}"

[discord]
token = "{discord_token}"
api_base = "{platforms_url}/discord/api/v10"

[slack]
bot_token = "{slack_token}"
signing_secret = "slack-signing-secret"
api_url = "{platforms_url}/slack/api/"

[webhook]
public_url = "{webhook_url}"
port = {webhook_port}
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
    async with serve(SimulatorConfig()) as sim, serve(SimulatorConfig()) as backup:
        config = write_config(
            tmp_path / "genbot.toml",
            api_url=sim.base_url,
            platforms_url=platforms_url,
            discord_token=DISCORD_TOKEN,
            slack_token=SLACK_TOKEN,
            webhook_url="https://genbot.example.com/webhooks/tasks",
            storage=tmp_path / "data" / "genbot.db",
            backup_urls=(backup.base_url,),
            proxy_url=backup.base_url + "/",
            secret_key=SECRET_KEY,
        )
        (tmp_path / "data").mkdir()
        status, lines = await doctor(tmp_path, config, "sim-key")

    assert status == 0, lines
    assert lines == [
        f"✔ storage   database at {tmp_path / 'data' / 'genbot.db'}",
        f"✔ provider  {sim.base_url} accepts the key",
        f"✔ backup    {backup.base_url} accepts the key",
        f"✔ proxy     {backup.base_url}/ accepts the key",
        "✔ discord   logged in as genbot-test",
        "✔ slack     Fox Team as genbot, HTTP mode",
        "✔ webhook   the provider will notify https://genbot.example.com/webhooks/tasks",
        "✔ secrets   the webhook secrets are sealed with [storage] secret_key",
        "✔ receiver  the webhook receiver can listen on 127.0.0.1 (any free port)",
        "everything works",
    ]
    for provider, calls in ((sim, 1), (backup, 2)):
        assert [(r.path, r.status) for r in provider.state.requests] == [
            ("/v1/chat/completions", 400)
        ] * calls
        assert provider.state.accounts["sim-key"].charged == 0
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
    dead = f"http://127.0.0.1:{free_port()}"
    async with serve(SimulatorConfig()) as sim:
        config = write_config(
            tmp_path / "genbot.toml",
            api_url=sim.base_url,
            platforms_url=platforms_url,
            discord_token=secrets[1],
            slack_token=secrets[2],
            webhook_url="http://example.com:8080",
            storage=tmp_path / "a-file" / "data" / "genbot.db",
            backup_urls=(dead,),
            proxy_url=f"{platforms_url}/elsewhere",
        )
        (tmp_path / "a-file").write_text("not a folder")
        status, lines = await doctor(tmp_path, config, secrets[0])

    assert status == 1
    [storage, provider, backup, proxy, *rest] = lines
    assert storage == (
        f"✘ storage   {tmp_path / 'a-file'} is a file, so {tmp_path / 'a-file' / 'data'} "
        "cannot be created"
    )
    assert provider == f"✘ provider  {sim.base_url} refused the API key (401): check [api] key"
    assert backup.startswith(f"✘ backup    cannot reach {dead}: ")
    assert proxy == (
        f"✘ proxy     {platforms_url}/elsewhere is not the provider's API (HTTP 200): "
        "check [api] proxy_url"
    )
    assert rest == [
        "✘ discord   the bot token was refused: check [discord] token",
        "✘ slack     auth.test refused the bot token: invalid_auth",
        "✘ webhook   [webhook] public_url must be an https://domain address on port 443 "
        "(got 'http://example.com:8080')",
        "fix the ✘ lines above, then run genbot doctor again",
    ]
    assert not any(secret in line for line in lines for secret in secrets)


def test_the_key_sealing_the_secrets_kept_in_the_database_is_reported_where_one_is_needed() -> None:
    hooks = WebhookSettings(public_url="https://genbot.example.com")
    oauth = SlackSettings(client_id="1.2", client_secret=SecretStr("client-secret"))
    api = ApiSettings(key=SecretStr("sk-provider"))
    keyed = StorageSettings(secret_key=SecretStr(SECRET_KEY))

    nothing_kept = check_sealing(Settings(api=api))
    configured = check_sealing(Settings(api=api, webhook=hooks, slack=oauth, storage=keyed))
    derived = check_sealing(Settings(api=api, webhook=hooks))
    missing = check_sealing(Settings(slack=oauth))

    assert nothing_kept == []
    assert [(f.name, f.ok, f.warning, f.detail) for f in configured] == [
        ("secrets", True, False, "the Slack tokens and the webhook secrets are sealed with "
         "[storage] secret_key"),
    ]  # fmt: skip
    assert [(f.ok, f.warning, f.detail) for f in derived] == [
        (True, True, f"the webhook secrets are sealed with {DERIVED_KEY_NOTE}")
    ]
    assert [(f.ok, f.detail) for f in missing] == [
        (False, "the Slack tokens need a key: set [storage] secret_key")
    ]


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
    assert webhook == (
        "✘ webhook   [webhook] public_url must be an https://domain address on port 443 "
        "(got 'https://genbot.example.com:8443')"
    )
    assert advice == "fix the ✘ lines above, then run genbot doctor again"


PROBE_KEY = "the-right-key"


async def lenient_multi_fetch(request: web.Request) -> web.Response:
    """A provider whose multi_fetch answers any key (the spec leaves its auth "not shown")."""
    return web.json_response({"code": 200, "data": [None], "message": "success"})


async def strict_chat(request: web.Request) -> web.Response:
    if request.headers.get("Authorization") != f"Bearer {PROBE_KEY}":
        return web.json_response({"error": {"message": "Incorrect API key"}}, status=401)
    return web.json_response({"error": {"message": "'messages' must be non-empty"}}, status=400)


@pytest.fixture
async def lenient_provider() -> AsyncIterator[str]:
    app = web.Application()
    app.router.add_post("/gen/v2/multi_fetch", lenient_multi_fetch)
    app.router.add_post("/v1/chat/completions", strict_chat)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}"
    finally:
        await runner.cleanup()


@pytest.mark.parametrize(("key", "ok"), [("a-wrong-key", False), (PROBE_KEY, True)])
async def test_the_key_is_checked_where_the_spec_says_keys_are_checked(
    tmp_path: Path, lenient_provider: str, key: str, ok: bool
) -> None:
    settings = Settings(
        api=ApiSettings(base_url=lenient_provider, key=SecretStr(key)),
        storage=StorageSettings(path=tmp_path / "genbot.db"),
    )
    [_, provider, nothing_enabled] = await diagnose(settings)
    assert (provider.name, provider.ok) == ("provider", ok)
    assert (nothing_enabled.name, nothing_enabled.ok) == ("adapters", False)


@pytest.mark.parametrize(
    ("public_url", "insecure"),
    [
        ("http://127.0.0.2:8788", True),
        ("http://127.0.0.1:8788", True),
        ("http://localhost:8788", False),
        ("https://hooks.example.com", False),
        ("https://hooks.example.com:443/genbot", False),
        ("https://hooks.example.com:8443", False),
    ],
)
def test_the_webhook_verdict_is_the_provider_clients_and_shows_no_password(
    public_url: str, insecure: bool
) -> None:
    settings = Settings(
        webhook=WebhookSettings(public_url=public_url, allow_insecure_loopback=insecure)
    )
    finding = check_webhook(settings)
    assert finding is not None and finding.name == "webhook"
    assert finding.ok == (webhook_base_url(settings) is not None)
    assert "hunter2" not in finding.detail


def test_the_addresses_genbot_run_listens_on_are_checked_for_a_listener_already_there() -> None:
    assert check_listeners(Settings()) == []
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        free = free_port()
        settings = Settings(
            web=WebSettings(enabled=True, port=busy),
            webhook=WebhookSettings(
                public_url="http://127.0.0.1:9/hooks", allow_insecure_loopback=True, port=free
            ),
        )
        web, receiver = check_listeners(settings)
    assert not web.ok and web.detail == (
        f"the playground cannot listen on 127.0.0.1:{busy} (Address already in use); "
        "choose another [web] port or host"
    )
    assert receiver.ok and receiver.detail == f"the webhook receiver can listen on 127.0.0.1:{free}"


def test_the_ops_listener_is_reported_when_enabled() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        busy = taken.getsockname()[1]
        [ops] = check_listeners(Settings(ops=OpsSettings(enabled=True, port=busy)))
    assert (ops.name, ops.ok) == ("ops", False)
    assert ops.detail == (
        f"the ops listener cannot listen on 127.0.0.1:{busy} (Address already in use); "
        "choose another [ops] port or host"
    )
    free = free_port()
    [ops] = check_listeners(Settings(ops=OpsSettings(enabled=True, port=free)))
    assert ops.ok and ops.detail == f"the ops listener can listen on 127.0.0.1:{free}"


def test_a_chat_platform_without_a_public_url_gets_a_note_not_a_failure(tmp_path: Path) -> None:
    for platform in (
        {"discord": DiscordSettings(token=SecretStr(DISCORD_TOKEN))},
        {"slack": SlackSettings(bot_token=SecretStr(SLACK_TOKEN))},
    ):
        finding = check_webhook(Settings(**platform))
        assert finding is not None
        assert (finding.ok, finding.warning, finding.detail) == (True, True, PUBLIC_URL_NOTE)
    assert check_webhook(Settings()) is None


async def test_doctor_with_only_a_note_exits_0(
    tmp_path: Path, platforms: tuple[str, list[tuple[str, str]]]
) -> None:
    platforms_url, _ = platforms
    async with serve(SimulatorConfig()) as sim:
        config = write_config(
            tmp_path / "genbot.toml",
            api_url=sim.base_url,
            platforms_url=platforms_url,
            discord_token=DISCORD_TOKEN,
            slack_token=SLACK_TOKEN,
            webhook_url="",
            storage=tmp_path / "genbot.db",
        )
        status, lines = await doctor(tmp_path, config, "sim-key")

    assert status == 0, lines
    assert lines[-2:] == [
        f"⚠ webhook   {PUBLIC_URL_NOTE}",
        "everything works; see the ⚠ note above",
    ]


def test_the_report_marks_notes_and_failures() -> None:
    text, healthy = report([Finding("a", True, "fine"), Finding("b", True, "but", warning=True)])
    assert healthy and text.splitlines()[:2] == ["✔ a         fine", "⚠ b         but"]
    _, healthy = report([Finding("a", False, "broken"), Finding("b", True, "but", warning=True)])
    assert not healthy


def test_a_missing_database_folder_is_fine_when_it_can_be_created(tmp_path: Path) -> None:
    settings = Settings(storage=StorageSettings(path=tmp_path / "new" / "deeper" / "genbot.db"))
    finding = check_storage(settings)
    assert finding.ok
    assert finding.detail.startswith(f"{tmp_path / 'new' / 'deeper'} will be created")


async def test_a_secret_inside_an_address_is_redacted(
    tmp_path: Path, platforms: tuple[str, list[tuple[str, str]]]
) -> None:
    platforms_url, _ = platforms
    key = "sk-secret-key-in-the-wrong-place"
    config = write_config(
        tmp_path / "genbot.toml",
        api_url=f"http://127.0.0.1:{free_port()}/{key}",
        platforms_url=platforms_url,
        discord_token=DISCORD_TOKEN,
        slack_token=SLACK_TOKEN,
        webhook_url="",
        storage=tmp_path / "genbot.db",
    )
    status, lines = await doctor(tmp_path, config, key)
    assert status == 1
    assert lines[1].startswith("✘ provider  cannot reach http://127.0.0.1:")
    assert "/[redacted]: " in lines[1]
    assert not any(key in line for line in lines)


def test_a_playground_exposed_without_a_token_is_a_failure() -> None:
    exposed = Settings(web=WebSettings(enabled=True, host="0.0.0.0"))
    [finding] = check_playground_access(exposed)
    assert not finding.ok and finding.name == "access"
    assert "without [web] access_token" in finding.detail
    guarded = WebSettings(enabled=True, host="0.0.0.0", access_token=SecretStr("x" * 24))
    [ok] = check_playground_access(Settings(web=guarded))
    assert ok.ok and ok.detail == "the playground asks for its access token"
    assert check_playground_access(Settings(web=WebSettings(enabled=False, host="0.0.0.0"))) == []


def broken_database(path: Path, how: str) -> None:
    """A database ``genbot run`` cannot use, made ``how``."""
    if how == "garbage":
        path.write_bytes(b"these are not the pages of a SQLite database " * 200)
        return
    with contextlib.closing(sqlite3.connect(path)) as db:
        if how == "someone else's":
            db.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
        else:
            db.execute("CREATE TABLE schema_version (version INTEGER, name TEXT, applied_at REAL)")
            db.execute("INSERT INTO schema_version VALUES (999, 'from the future', 0)")
            db.execute("CREATE TABLE filler (a INTEGER PRIMARY KEY, b TEXT)")
            db.executemany("INSERT INTO filler (b) VALUES (?)", [("x" * 100,)] * 2000)
        db.commit()
    if how == "corrupted":
        data = bytearray(path.read_bytes())
        page = 4096 * 5
        data[page + 8 : page + 200] = b"\xab" * 192
        path.write_bytes(bytes(data))


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("garbage", "is not a genbot database"),
        ("corrupted", "is damaged (PRAGMA quick_check"),
        ("from the future", "schema version 999, newer than this genbot's"),
        ("someone else's", "holds tables genbot did not create"),
    ],
)
def test_a_database_genbot_run_cannot_use_is_a_failure(
    tmp_path: Path, how: str, words: str
) -> None:
    path = tmp_path / "genbot.db"
    broken_database(path, how)
    before = path.read_bytes()
    finding = check_storage(Settings(storage=StorageSettings(path=path)))
    assert not finding.ok and words in finding.detail, finding
    assert path.read_bytes() == before


async def test_a_database_in_use_names_the_genbot_using_it(tmp_path: Path) -> None:
    path = tmp_path / "genbot.db"
    store = await SqliteStore.open(path)
    lock = ProcessLock.acquire(path)
    try:
        finding = check_storage(Settings(storage=StorageSettings(path=path)))
    finally:
        lock.release()
        await store.close()
    assert finding.ok and f"in use by genbot, pid {os.getpid()}" in finding.detail


async def test_nothing_enabled_and_a_simulator_not_running_say_what_to_do(tmp_path: Path) -> None:
    port = free_port()
    settings = Settings(
        api=ApiSettings(base_url=f"http://127.0.0.1:{port}", key=SecretStr("sim-key")),
        storage=StorageSettings(path=tmp_path / "genbot.db"),
    )
    findings = {f.name: f for f in await diagnose(settings)}
    assert not findings["provider"].ok
    assert f"`genbot sim --port {port}`" in findings["provider"].detail
    assert not findings["adapters"].ok and "nothing to run" in findings["adapters"].detail


async def test_every_key_of_a_pool_is_checked_and_named_never_shown() -> None:
    pool = [
        KeySettings(name="main", key=SecretStr("sim-key")),
        KeySettings(name="spare", key=SecretStr("spare-secret")),
        KeySettings(name="gone", key=SecretStr("gone-secret")),
    ]
    async with serve(SimulatorConfig(accounts=(("spare-secret", 10),))) as sim:
        settings = Settings(api=ApiSettings(base_url=sim.base_url, keys=pool))
        async with aiohttp.ClientSession() as session:
            found = await check_provider(session, settings)
    assert [(f.name, f.ok, f.detail) for f in found] == [
        ("provider", True, f"{sim.base_url} accepts main"),
        ("key spare", True, f"{sim.base_url} accepts spare"),
        ("key gone", False, f"{sim.base_url} refused the API key (401): check [[api.keys]] gone"),
    ]
    ids = [account_id("sim-key"), account_id("spare-secret"), None]
    assert [r.account for r in sim.state.requests] == ids
