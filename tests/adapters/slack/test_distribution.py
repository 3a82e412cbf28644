"""genbot installed by OAuth into several workspaces, end to end: the real bolt OAuth flow on
genbot's HTTP listener, installations in genbot's database, per-workspace tokens, rotation and
uninstall, against the fake Slack."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.transport import INSTALLS_PER_CLIENT
from simulator.server import RunningSimulator, serve
from simulator.state import SimulatorConfig
from tests.adapters.slack.end_to_end import (
    FIRST,
    SECOND,
    WAIT,
    SlackGenbot,
    answer_in,
    ask,
    slack_genbot,
    two_workspaces,
)

pytestmark = pytest.mark.usefixtures("errors_fail_the_test")


async def installed_in(bot: SlackGenbot, team: str) -> Installation | None:
    """``team``'s installation as genbot reads it (tokens opened)."""
    assert bot.adapter.distribution is not None
    store = bot.adapter.distribution.installations
    return await store.async_find_installation(enterprise_id=None, team_id=team)


@pytest.fixture
async def sim() -> AsyncIterator[RunningSimulator]:
    async with serve(SimulatorConfig(time_scale=1.0)) as running:
        yield running


async def test_two_workspaces_install_and_each_is_answered_with_its_own_token(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with (
        two_workspaces() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db", distributed=True) as bot,
    ):
        assert bot.adapter.install_url is not None
        first = await fake.install(bot.adapter.install_url, FIRST)
        second = await fake.install(bot.adapter.install_url, SECOND, user="U3")

        await ask(fake, bot.url, FIRST, "C1", "hello first")
        await ask(fake, bot.url, SECOND, "C2", "hello second")
        in_first = await fake.wait_for(lambda: answer_in(fake, "C1", "hello first"), WAIT)
        in_second = await fake.wait_for(lambda: answer_in(fake, "C2", "hello second"), WAIT)
        stored = [await installed_in(bot, team) for team in (FIRST, SECOND)]

    assert (first.status, second.status) == (200, 200)
    assert [c.args["client_id"] for c in fake.calls_to("oauth.v2.access")] == [fake.client_id] * 2
    assert [s.user_id if s else None for s in stored] == ["U1", "U3"]
    assert stored[1] is not None and stored[1].bot_token == fake.teams[SECOND].bot_token
    by_thread = {c.args["thread_ts"]: c for c in fake.calls_to("chat.startStream")}
    assert by_thread[in_first.thread_ts].token == fake.teams[FIRST].bot_token
    assert by_thread[in_second.thread_ts].token == fake.teams[SECOND].bot_token
    assert in_second.user == "UBOT2", "answered by genbot's bot user in that workspace"
    assert {c.team for c in fake.calls if c.method == "chat.stopStream"} == {FIRST, SECOND}


async def test_an_install_whose_state_does_not_check_out_is_refused(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with (
        two_workspaces() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db", distributed=True) as bot,
    ):
        assert fake.redirect_url is not None and fake._session is not None
        forged = f"{fake.redirect_url}?code=code-forged&state=made-up"
        async with fake._session.get(
            forged, headers={"Cookie": "slack-app-oauth-state=made-up"}
        ) as answer:
            status = answer.status
        installed = await bot.store.installations.find_slack_installation("", FIRST)

    assert status in (400, 401)
    assert installed is None
    assert fake.calls_to("oauth.v2.access") == [], "no code traded without a valid state"


async def test_uninstalling_one_workspace_forgets_it_and_leaves_the_other(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with (
        two_workspaces() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db", distributed=True) as bot,
    ):
        assert bot.adapter.install_url is not None
        await fake.install(bot.adapter.install_url, FIRST)
        await fake.install(bot.adapter.install_url, SECOND, user="U3")
        await ask(fake, bot.url, SECOND, "C2", "before")
        await fake.wait_for(lambda: answer_in(fake, "C2", "before"), WAIT)

        deliveries = [await fake.post_event(bot.url, e) for e in fake.uninstall(SECOND)]
        await ask(fake, bot.url, SECOND, "C2", "after")
        await ask(fake, bot.url, FIRST, "C1", "still here")
        await fake.wait_for(lambda: answer_in(fake, "C1", "still here"), WAIT)
        gone = await bot.store.installations.find_slack_installation("", SECOND)
        kept = await bot.store.installations.find_slack_installation("", FIRST)

    assert [d.status for d in deliveries] == [200, 200]
    assert gone is None and kept is not None
    assert answer_in(fake, "C2", "after") is None
    assert [c for c in fake.calls if c.error == "token_revoked"] == []


async def test_rotating_tokens_are_refreshed_and_stored(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    async with (
        two_workspaces(token_rotation=True, token_lifetime_seconds=3600) as fake,
        slack_genbot(fake, sim, tmp_path / "g.db", distributed=True) as bot,
    ):
        assert bot.adapter.install_url is not None
        await fake.install(bot.adapter.install_url, SECOND, user="U3")
        installed_token = fake.teams[SECOND].bot_token
        await ask(fake, bot.url, SECOND, "C2", "fresh token please")
        await fake.wait_for(lambda: answer_in(fake, "C2", "fresh token please"), WAIT)
        stored = await installed_in(bot, SECOND)

    refreshes = [c for c in fake.calls_to("oauth.v2.access") if "refresh_token" in c.args]
    assert refreshes and all(c.ok for c in refreshes)
    assert stored is not None and stored.bot_token == fake.teams[SECOND].bot_token
    assert stored.bot_token != installed_token
    assert stored.bot_refresh_token == fake.teams[SECOND].refresh_token
    (stop,) = fake.calls_to("chat.stopStream")
    assert stop.token == fake.teams[SECOND].bot_token


async def test_one_address_starts_few_installs_and_the_rest_write_nothing(
    sim: RunningSimulator, tmp_path: Path
) -> None:
    """Each install page stores an OAuth state: an address asking for it again and again gets
    429 past the per-address limit, and the database keeps only the states it allowed."""
    async with (
        two_workspaces() as fake,
        slack_genbot(fake, sim, tmp_path / "g.db", distributed=True) as bot,
        aiohttp.ClientSession() as browser,
    ):
        assert bot.adapter.install_url is not None
        statuses = []
        for _ in range(INSTALLS_PER_CLIENT + 15):
            async with browser.get(bot.adapter.install_url, allow_redirects=False) as answer:
                statuses.append(answer.status)
                retry_after = answer.headers.get("Retry-After")
        [row] = await bot.store.db.fetch_all("SELECT COUNT(*) AS states FROM oauth_states")
        states = row["states"]

    assert statuses.count(429) == 15 and 429 not in statuses[:INSTALLS_PER_CLIENT]
    assert retry_after is not None and 1 <= int(retry_after) <= 60
    assert states == INSTALLS_PER_CLIENT
