"""``genbot doctor`` for a Slack app installed by OAuth (no token to try yet)."""

from __future__ import annotations

from pydantic import SecretStr

from adapters.slack.settings import SlackSettings
from genbot.doctor import check_slack_distribution
from genbot.settings import Settings


def distributed(**changes: object) -> Settings:
    slack = SlackSettings(
        client_id="123.456",
        client_secret=SecretStr("oauth-client-secret"),
        signing_secret=SecretStr("signing-secret"),
        http_port=3999,
    )
    return Settings(slack=slack.model_copy(update=changes))


async def test_a_distributed_app_says_where_workspaces_install_it() -> None:
    finding = await check_slack_distribution(distributed())
    assert finding.ok and "http://127.0.0.1:3999/slack/install" in finding.detail


async def test_a_distributed_app_needs_http_mode_and_its_signing_secret() -> None:
    socket = await check_slack_distribution(distributed(app_token=SecretStr("xapp-1")))
    unsigned = await check_slack_distribution(distributed(signing_secret=SecretStr("")))
    assert not socket.ok and "app_token" in socket.detail
    assert not unsigned.ok and "signing_secret" in unsigned.detail
