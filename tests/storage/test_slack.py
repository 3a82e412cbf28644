"""Slack installations per team and installing user, and single-use OAuth states."""

from __future__ import annotations

from storage import SlackInstallation, Store
from tests.storage.conftest import START, ManualClock


def installation(
    team: str, user: str, at: float, token: str, enterprise: str = ""
) -> SlackInstallation:
    return SlackInstallation(enterprise, team, user, at, {"bot_token": token, "team_id": team})


async def test_the_newest_installation_of_a_team_is_found(store: Store) -> None:
    await store.installations.save_slack_installation(installation("T1", "U1", START, "xoxb-1"))
    await store.installations.save_slack_installation(installation("T1", "U2", START + 5, "xoxb-2"))
    await store.installations.save_slack_installation(installation("T2", "U1", START + 9, "xoxb-3"))

    newest = await store.installations.find_slack_installation("", "T1")
    assert newest is not None and (newest.user_id, newest.data["bot_token"]) == ("U2", "xoxb-2")
    by_user = await store.installations.find_slack_installation("", "T1", "U1")
    assert by_user is not None and by_user.data == {"bot_token": "xoxb-1", "team_id": "T1"}
    assert await store.installations.find_slack_installation("", "T3") is None
    assert await store.installations.find_slack_installation("E1", "T1") is None


async def test_a_new_save_replaces_the_same_users_installation(store: Store) -> None:
    await store.installations.save_slack_installation(installation("T1", "U1", START, "xoxb-old"))
    await store.installations.save_slack_installation(
        installation("T1", "U1", START + 1, "xoxb-rotated")
    )
    found = await store.installations.find_slack_installation("", "T1")
    assert found == installation("T1", "U1", START + 1, "xoxb-rotated")
    assert "xoxb" not in repr(found)


async def test_uninstalling_deletes_a_teams_installations(store: Store) -> None:
    for user in ("U1", "U2"):
        await store.installations.save_slack_installation(installation("T1", user, START, "xoxb"))
    await store.installations.save_slack_installation(
        installation("", "U1", START, "xoxb", enterprise="E1")
    )
    assert await store.installations.delete_slack_installations("", "T1", "U2") == 1
    assert await store.installations.delete_slack_installations("", "T1") == 1
    assert await store.installations.find_slack_installation("", "T1") is None
    assert await store.installations.find_slack_installation("E1", "") is not None


async def test_an_oauth_state_is_consumed_once_and_only_before_it_expires(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.installations.issue_oauth_state("s-1", expires_at=clock.now + 600)
    await store.installations.issue_oauth_state("s-2", expires_at=clock.now + 600)
    assert await other_store.installations.consume_oauth_state("s-1")
    assert not await store.installations.consume_oauth_state("s-1")
    assert not await store.installations.consume_oauth_state("never-issued")
    clock.advance(601)
    assert not await store.installations.consume_oauth_state("s-2")


async def test_the_channel_in_view_is_shared_replaced_and_ignored_once_old(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    views = store.channels_in_view
    await views.save_channel_in_view("T1", "U1", "C1")
    await views.save_channel_in_view("T2", "U1", "C9")
    assert await other_store.channels_in_view.find_channel_in_view("T1", "U1", 3600) == "C1"
    clock.advance(60)
    await other_store.channels_in_view.save_channel_in_view("T1", "U1", "C2")
    assert await views.find_channel_in_view("T1", "U1", 3600) == "C2"
    assert await views.find_channel_in_view("T1", "U2", 3600) is None
    clock.advance(3601)
    assert await views.find_channel_in_view("T1", "U1", 3600) is None
    assert await views.find_channel_in_view("T2", "U1", 7200) == "C9"


async def test_forgetting_a_slack_user_erases_the_channel_they_looked_at(store: Store) -> None:
    await store.channels_in_view.save_channel_in_view("T1", "U1", "C1")
    await store.retention.forget("discord", "U1")
    assert await store.channels_in_view.find_channel_in_view("T1", "U1", 3600) == "C1"
    await store.retention.forget("slack", "U1")
    assert await store.channels_in_view.find_channel_in_view("T1", "U1", 3600) is None
