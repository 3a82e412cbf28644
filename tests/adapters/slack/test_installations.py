"""bolt's installation and OAuth-state stores over genbot's storage, on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.installations import InstallationStore, OAuthStateStore
from storage import Storage
from tests.postgres import PostgresCluster
from tests.storage.conftest import (
    START,
    Database,
    ManualClock,
    PostgresSchema,
    SqliteFile,
)


@pytest.fixture(params=["sqlite", "postgres"])
async def storage(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[Storage, ManualClock]]:
    clock = ManualClock()
    database: Database
    if request.param == "sqlite":
        database = SqliteFile(tmp_path / "genbot.db")
    else:
        cluster: PostgresCluster = request.getfixturevalue("postgres")
        database = PostgresSchema(cluster.create_schema())
    opened = await database.open(clock)
    try:
        yield opened, clock
    finally:
        await opened.close()


def installation(team: str, user: str, token: str, **extra: object) -> Installation:
    return Installation(
        app_id="AFAKE",
        team_id=team,
        team_name=f"Team {team}",
        bot_token=token,
        bot_id="BBOT",
        bot_user_id="UBOT",
        bot_scopes="chat:write,commands",
        user_id=user,
        installed_at=START,
        **extra,  # type: ignore[arg-type]
    )


async def test_installations_round_trip_and_carry_the_newest_bot_token(
    storage: tuple[Storage, ManualClock],
) -> None:
    store = InstallationStore(storage[0])
    expires = int(START) + 43200
    await store.async_save(
        installation("T1", "U1", "xoxb-old", bot_refresh_token="r1", bot_token_expires_at=expires)
    )
    newer = installation("T1", "U2", "xoxb-new")
    newer.installed_at = START + 60
    await store.async_save(newer)
    await store.async_save(installation("T2", "U9", "xoxb-other"))

    found = await store.async_find_installation(enterprise_id=None, team_id="T1")
    mine = await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")

    assert found is not None and (found.user_id, found.bot_token) == ("U2", "xoxb-new")
    assert mine is not None and (mine.user_id, mine.bot_token) == ("U1", "xoxb-new")
    assert bot is not None and bot.bot_token == "xoxb-new" and bot.team_name == "Team T1"
    old = await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    assert old is not None and old.installed_at == START
    assert await store.async_find_installation(enterprise_id=None, team_id="T3") is None


async def test_a_rotated_bot_token_and_expiry_are_kept(
    storage: tuple[Storage, ManualClock],
) -> None:
    store = InstallationStore(storage[0])
    await store.async_save(installation("T1", "U1", "xoxb-1", bot_refresh_token="r1"))
    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
    assert bot is not None
    bot.bot_token, bot.bot_refresh_token = "xoxb-2", "r2"
    bot.bot_token_expires_at = int(START) + 3600

    await store.async_save_bot(bot)
    found = await store.async_find_installation(enterprise_id=None, team_id="T1")

    assert found is not None and found.bot_token == "xoxb-2"
    assert (found.bot_refresh_token, found.bot_token_expires_at) == ("r2", int(START) + 3600)
    assert found.user_id == "U1" and found.team_name == "Team T1"


async def test_revoking_a_user_keeps_the_bot_and_uninstalling_forgets_the_team(
    storage: tuple[Storage, ManualClock],
) -> None:
    store = InstallationStore(storage[0])
    await store.async_save(installation("T1", "U1", "xoxb-1", user_token="xoxp-u1"))
    await store.async_save(installation("T2", "U2", "xoxb-2"))

    await store.async_delete_installation(enterprise_id=None, team_id="T1", user_id="U1")
    kept = await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    await store.async_delete_all(enterprise_id=None, team_id="T1")

    assert kept is not None and kept.bot_token == "xoxb-1" and kept.user_token is None
    assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
    assert await store.async_find_bot(enterprise_id=None, team_id="T2") is not None


async def test_an_oauth_state_is_good_once_and_only_until_it_expires(
    storage: tuple[Storage, ManualClock],
) -> None:
    backend, clock = storage
    states = OAuthStateStore(backend, expiration_seconds=600, clock=clock)
    fresh, stale = await states.async_issue(), await states.async_issue()

    assert fresh != stale and len(fresh) >= 32
    assert await states.async_consume(fresh) is True
    assert await states.async_consume(fresh) is False
    clock.advance(601)
    assert await states.async_consume(stale) is False
    assert await states.async_consume("never-issued") is False
