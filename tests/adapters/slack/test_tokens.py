"""Bot tokens per workspace: rotated before they expire, also when several genbot processes
rotate the same workspace's tokens at once (a refresh token works only once)."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from slack_sdk.oauth.installation_store import Installation
from slack_sdk.oauth.token_rotation.async_rotator import AsyncTokenRotator
from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.installations import InstallationStore
from adapters.slack.tokens import InstalledWorkspaces
from bot.kernel import Sealer
from storage import SqliteStore
from tests.fakes.slack import FakeSlack

SEALER = Sealer(["k" * 32])


def rotating(fake: FakeSlack, store: InstallationStore) -> InstalledWorkspaces:
    """One genbot process's tokens, rotated against ``fake``."""
    client = AsyncWebClient(base_url=fake.api_url)
    rotator = AsyncTokenRotator(
        client_id=fake.client_id, client_secret=fake.client_secret, client=client
    )
    return InstalledWorkspaces(store, rotator)


async def test_two_processes_rotating_at_once_both_get_the_new_token(tmp_path: Path) -> None:
    async with FakeSlack(token_rotation=True) as fake:
        team = fake.teams[fake.default_team]
        team.bot_token, team.refresh_token = "xoxe.xoxb-old", "xoxe-1-old"
        storage = await SqliteStore.open(tmp_path / "genbot.db")
        try:
            await InstallationStore(storage.installations, SEALER).async_save(
                Installation(
                    app_id=fake.app_id,
                    team_id=team.team_id,
                    bot_token="xoxe.xoxb-old",
                    bot_refresh_token="xoxe-1-old",
                    bot_token_expires_at=int(time.time()) + 60,
                    bot_id=team.bot_id,
                    bot_user_id=team.bot_user_id,
                    user_id="U1",
                )
            )
            first = rotating(fake, InstallationStore(storage.installations, SEALER))
            second = rotating(fake, InstallationStore(storage.installations, SEALER))

            tokens = await asyncio.gather(
                first.bot_token(team.team_id), second.bot_token(team.team_id)
            )
        finally:
            await storage.close()

    refreshes = [c for c in fake.calls_to("oauth.v2.access") if "refresh_token" in c.args]
    assert [c.ok for c in refreshes] == [True, False], "one rotation, one refused"
    assert list(tokens) == [team.bot_token, team.bot_token] and team.bot_token != "xoxe.xoxb-old"
