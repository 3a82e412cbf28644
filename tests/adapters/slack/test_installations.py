"""bolt's installation and OAuth-state stores over genbot's storage, on SQLite and PostgreSQL:
tokens stored sealed, installations from before sealing and from an older key still read."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from slack_sdk.oauth.installation_store import Installation

from adapters.slack.installations import (
    KEY_CHECK_TEAM,
    InstallationStore,
    OAuthStateStore,
    installation_data,
)
from bot.kernel import Sealer, SealError
from storage import SlackInstallation, Store
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
) -> AsyncIterator[tuple[Store, ManualClock]]:
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


KEY, OLD_KEY = "k" * 32, "o" * 32
SEALER = Sealer([KEY])


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
    storage: tuple[Store, ManualClock],
) -> None:
    store = InstallationStore(storage[0].installations, SEALER)
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
    storage: tuple[Store, ManualClock],
) -> None:
    store = InstallationStore(storage[0].installations, SEALER)
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
    storage: tuple[Store, ManualClock],
) -> None:
    store = InstallationStore(storage[0].installations, SEALER)
    await store.async_save(installation("T1", "U1", "xoxb-1", user_token="xoxp-u1"))
    await store.async_save(installation("T2", "U2", "xoxb-2"))

    await store.async_delete_installation(enterprise_id=None, team_id="T1", user_id="U1")
    kept = await store.async_find_installation(enterprise_id=None, team_id="T1", user_id="U1")
    await store.async_delete_all(enterprise_id=None, team_id="T1")

    assert kept is not None and kept.bot_token == "xoxb-1" and kept.user_token is None
    assert await store.async_find_bot(enterprise_id=None, team_id="T1") is None
    assert await store.async_find_bot(enterprise_id=None, team_id="T2") is not None


async def test_an_oauth_state_is_good_once_and_only_until_it_expires(
    storage: tuple[Store, ManualClock],
) -> None:
    backend, clock = storage
    states = OAuthStateStore(backend.installations, expiration_seconds=600, clock=clock)
    fresh, stale = await states.async_issue(), await states.async_issue()

    assert fresh != stale and len(fresh) >= 32
    assert await states.async_consume(fresh) is True
    assert await states.async_consume(fresh) is False
    clock.advance(601)
    assert await states.async_consume(stale) is False
    assert await states.async_consume("never-issued") is False


async def test_tokens_are_stored_sealed_and_nothing_else_is_hidden(
    storage: tuple[Store, ManualClock],
) -> None:
    store = InstallationStore(storage[0].installations, SEALER)
    await store.async_save(
        installation(
            "T1",
            "U1",
            "xoxb-111-secret",
            bot_refresh_token="xoxe-1-refresh",
            user_token="xoxp-user-secret",
        )
    )

    stored = await storage[0].installations.find_slack_installation("", "T1")
    found = await store.async_find_installation(enterprise_id=None, team_id="T1")

    assert stored is not None
    written = json.dumps(stored.data)
    for token in ("xoxb-111-secret", "xoxe-1-refresh", "xoxp-user-secret"):
        assert token not in written
    assert stored.data["team_name"] == "Team T1" and stored.data["sealed"].startswith("sealed:")
    assert found is not None and found.bot_token == "xoxb-111-secret"
    assert (found.bot_refresh_token, found.user_token) == ("xoxe-1-refresh", "xoxp-user-secret")


async def test_an_installation_stored_before_sealing_is_read_and_stored_again_sealed(
    storage: tuple[Store, ManualClock],
) -> None:
    backend = storage[0]
    plain = installation_data(installation("T1", "U1", "xoxb-plain-token"))
    await backend.installations.save_slack_installation(
        SlackInstallation("", "T1", "U1", START, plain)
    )
    store = InstallationStore(backend.installations, SEALER)

    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
    stored = await backend.installations.find_slack_installation("", "T1")

    assert bot is not None and bot.bot_token == "xoxb-plain-token"
    assert stored is not None and "xoxb-plain-token" not in json.dumps(stored.data)
    assert stored.installed_at == START and stored.user_id == "U1"


async def test_a_rotating_installation_stored_plain_is_sealed_by_its_next_rotation(
    storage: tuple[Store, ManualClock],
) -> None:
    backend = storage[0]
    plain = installation_data(installation("T1", "U1", "xoxe.xoxb-1", bot_refresh_token="r1"))
    await backend.installations.save_slack_installation(
        SlackInstallation("", "T1", "U1", START, plain)
    )
    store = InstallationStore(backend.installations, SEALER)

    bot = await store.async_find_bot(enterprise_id=None, team_id="T1")
    untouched = await backend.installations.find_slack_installation("", "T1")
    assert bot is not None and untouched is not None and untouched.data == plain
    bot.bot_token, bot.bot_refresh_token = "xoxe.xoxb-2", "r2"
    await store.async_save_bot(bot)
    rotated = await backend.installations.find_slack_installation("", "T1")

    assert rotated is not None and "xoxe.xoxb-2" not in json.dumps(rotated.data)
    found = await store.async_find_bot(enterprise_id=None, team_id="T1")
    assert found is not None and (found.bot_token, found.bot_refresh_token) == ("xoxe.xoxb-2", "r2")


async def test_a_new_key_reads_what_the_previous_key_sealed_and_seals_it_again(
    storage: tuple[Store, ManualClock],
) -> None:
    backend = storage[0]
    before = InstallationStore(backend.installations, Sealer([OLD_KEY]))
    await before.check_key()
    await before.async_save(installation("T1", "U1", "xoxb-kept"))

    during = InstallationStore(backend.installations, Sealer([KEY, OLD_KEY]))
    await during.check_key()
    read_during = await during.async_find_bot(enterprise_id=None, team_id="T1")
    after = InstallationStore(backend.installations, Sealer([KEY]))
    await after.check_key()
    read_after = await after.async_find_bot(enterprise_id=None, team_id="T1")

    assert read_during is not None and read_during.bot_token == "xoxb-kept"
    assert read_after is not None and read_after.bot_token == "xoxb-kept"
    with pytest.raises(SealError):
        await InstallationStore(backend.installations, Sealer([OLD_KEY])).check_key()


async def test_a_wrong_key_stops_startup_and_reads_no_installation(
    storage: tuple[Store, ManualClock], caplog: pytest.LogCaptureFixture
) -> None:
    backend = storage[0]
    right = InstallationStore(backend.installations, SEALER)
    await right.check_key()
    await right.async_save(installation("T1", "U1", "xoxb-sealed"))
    wrong = InstallationStore(backend.installations, Sealer([OLD_KEY]))

    with pytest.raises(SealError, match=r"Slack installations cannot be read.*secret_key"):
        await wrong.check_key()
    with caplog.at_level(logging.ERROR):
        found = await wrong.async_find_bot(enterprise_id=None, team_id="T1")

    assert found is None
    assert "T1 cannot be opened" in caplog.text
    assert await backend.installations.find_slack_installation("", KEY_CHECK_TEAM) is not None
    assert await right.async_find_bot(enterprise_id=None, team_id="T1") is not None
