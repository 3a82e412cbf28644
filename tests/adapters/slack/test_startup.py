"""Start-up refusals are one-line :class:`AdapterStartError` messages naming the setting."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest
from pydantic import SecretStr

from adapters import AdapterStartError
from adapters.slack import SlackAdapter
from adapters.slack.settings import SlackSettings
from bot.kernel import LimitsSettings, Sealer
from storage import SqliteStore
from tests.adapters.slack.conftest import RecordingCore, slack_settings
from tests.fakes.router import FakeRouter
from tests.fakes.slack import FakeSlack


async def refusal(settings: SlackSettings, core: RecordingCore) -> str:
    adapter = SlackAdapter(settings, LimitsSettings())
    try:
        with pytest.raises(AdapterStartError) as refused:
            await adapter.start(FakeRouter(core, [adapter.surface]))
    finally:
        await adapter.stop()
    return str(refused.value)


async def test_a_refused_bot_token_names_the_setting(fake: FakeSlack, core: RecordingCore) -> None:
    values = slack_settings(fake).model_dump() | {"bot_token": "xoxb-wrong"}

    message = await refusal(SlackSettings.model_validate(values), core)

    assert message == (
        "Slack auth.test refused the bot token: invalid_auth (check [slack] bot_token)"
    )
    assert [c.error for c in fake.calls] == ["invalid_auth"]


async def test_a_refused_app_token_fails_socket_mode_at_once(
    fake: FakeSlack, core: RecordingCore
) -> None:
    values = slack_settings(fake, socket_mode=True).model_dump() | {"app_token": "xapp-wrong"}

    message = await refusal(SlackSettings.model_validate(values), core)

    assert message == (
        "Slack apps.connections.open refused the app token: invalid_auth (check [slack] app_token)"
    )
    assert fake.socket_connections == 0


async def test_http_mode_needs_a_signing_secret(fake: FakeSlack, core: RecordingCore) -> None:
    values = slack_settings(fake).model_dump() | {"signing_secret": ""}

    message = await refusal(SlackSettings.model_validate(values), core)

    assert "[slack] signing_secret is required" in message
    assert fake.calls == []


async def test_an_unreachable_api_and_a_busy_port_are_named(core: RecordingCore) -> None:
    async with FakeSlack() as gone:
        settings = slack_settings(gone)
    assert (await refusal(settings, core)).startswith(f"cannot reach Slack at {gone.api_url}")

    async with FakeSlack() as fake:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            port = taken.getsockname()[1]
            values = slack_settings(fake).model_dump() | {"http_port": port}
            message = await refusal(SlackSettings.model_validate(values), core)
    assert message.startswith(f"cannot listen on 127.0.0.1:{port}")


async def test_an_app_installed_by_oauth_serves_http_only(
    fake: FakeSlack, core: RecordingCore, tmp_path: Path
) -> None:
    settings = slack_settings(fake, distributed=True, socket_mode=True)
    async with await SqliteStore.open(tmp_path / "g.db") as store:
        adapter = SlackAdapter(
            settings, LimitsSettings(), installations=store.installations, sealer=Sealer(["k" * 32])
        )
        with pytest.raises(AdapterStartError, match="leave app_token empty"):
            await adapter.start(FakeRouter(core, [adapter.surface]))
        await adapter.stop()
    assert fake.calls == [], "no token to check before a workspace installs genbot"


def test_one_workspace_or_distribution_not_both(fake: FakeSlack, core: RecordingCore) -> None:
    both = slack_settings(fake, distributed=True).model_copy(
        update={"bot_token": SecretStr(fake.bot_token)}
    )
    with pytest.raises(ValueError, match="not both"):
        SlackAdapter(both, LimitsSettings())
    with pytest.raises(ValueError, match="keeps its workspaces in storage, sealed"):
        SlackAdapter(slack_settings(fake, distributed=True), LimitsSettings())
