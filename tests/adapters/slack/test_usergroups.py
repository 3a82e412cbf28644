"""The user groups of Slack users (adapters/slack/usergroups.py), read from the fake Slack with
the real slack_sdk client: one read per workspace for many users, a bounded wait, kept for the
ttl, a failed read keeping what was read before."""

from __future__ import annotations

from slack_sdk.web.async_client import AsyncWebClient

from adapters.slack.usergroups import UserGroups
from tests.fakes.slack import FakeSlack


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


async def test_groups_are_read_once_kept_for_the_ttl_and_waited_for_a_bounded_time(
    fake: FakeSlack,
) -> None:
    fake.usergroups = {"S1": ("patrons", ["U1", "U2"]), "S2": ("staff", ["U2"])}
    client = AsyncWebClient(token=fake.bot_token, base_url=fake.api_url)
    monotonic = Clock()
    groups = UserGroups(ttl=60, wait=0.05, monotonic=monotonic)

    fake.answer_delays["usergroups.list"] = 0.5
    assert await groups.of(client, "T0FAKE", "U1") == frozenset(), "not waited for beyond 0.05 s"
    groups.wait = 5.0
    assert await groups.of(client, "T0FAKE", "U2") == {"S1", "S2"}, "the read under way"
    assert await groups.of(client, "T0FAKE", "U9") == frozenset()
    assert len(fake.calls_to("usergroups.list")) == 1
    assert fake.calls_to("usergroups.list")[0].args["include_users"] in ("1", "true", True)

    del fake.answer_delays["usergroups.list"]
    fake.usergroups["S1"] = ("patrons", ["U2"])
    monotonic.now += 59
    assert await groups.of(client, "T0FAKE", "U1") == {"S1"}, "kept for the ttl"
    monotonic.now += 1
    assert await groups.of(client, "T0FAKE", "U1") == frozenset(), "read again after it"
    assert len(fake.calls_to("usergroups.list")) == 2

    fake.fail_next("usergroups.list", "missing_scope")
    monotonic.now += 60
    assert await groups.of(client, "T0FAKE", "U2") == {"S1", "S2"}, "a failed read keeps them"
    monotonic.now += 30
    assert await groups.of(client, "T0FAKE", "U2") == {"S1", "S2"}
    assert len(fake.calls_to("usergroups.list")) == 3, "not read again before the ttl"
    await groups.close()
