"""Moderation's storage on both backends: workspace rules, offences counted per user per UTC
day, and the bans they earn, seen by every process."""

from __future__ import annotations

import asyncio

from storage import AuditEntry, Ban, ConversationKey, ModerationRule, SavedOption, Store
from storage.queries import moderation
from tests.storage.conftest import ManualClock, new_job
from tests.storage.helpers import create_job

BANS = (60, 120, 600)
MINUTE = 60.0


async def test_a_workspace_rule_is_added_once_listed_and_removed(store: Store) -> None:
    rules = store.moderation
    nude = ModerationRule("nsfw", "nude")
    assert await rules.add_rule("slack", "T1", nude, "U0")
    assert not await rules.add_rule("slack", "T1", ModerationRule("other", "nude"), "U0")
    assert await rules.add_rule("slack", "T1", ModerationRule("gore", r"gor+e", pattern=True), "U0")
    assert await rules.add_rule("slack", "T2", ModerationRule("spam", "buy now"), "U9")
    assert await rules.rules("slack", "T1") == [
        ModerationRule("gore", r"gor+e", pattern=True),
        nude,
    ]
    assert await rules.rules("discord", "T1") == []
    assert await rules.remove_rule("slack", "T1", "nude")
    assert not await rules.remove_rule("slack", "T1", "nude")
    assert [r.entry for r in await rules.rules("slack", "T1")] == [r"gor+e"]


async def test_offences_escalate_within_a_day_and_start_again_the_next(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    first = await store.moderation.record_offence("discord", "u1", BANS)
    assert (first.count, first.banned_until) == (1, clock.now + 60 * MINUTE)
    assert await other_store.moderation.banned_until("discord", "u1") == first.banned_until
    assert await store.moderation.banned_until("discord", "u2") is None
    assert await store.moderation.banned_until("slack", "u1") is None

    clock.advance(61 * MINUTE)
    assert await other_store.moderation.banned_until("discord", "u1") is None
    second = await other_store.moderation.record_offence("discord", "u1", BANS)
    assert (second.count, second.banned_until) == (2, clock.now + 120 * MINUTE)
    clock.advance(121 * MINUTE)
    third = await store.moderation.record_offence("discord", "u1", BANS)
    assert (third.count, third.banned_until) == (3, clock.now + 600 * MINUTE)
    clock.advance(MINUTE)
    fourth = await store.moderation.record_offence("discord", "u1", BANS)
    assert (fourth.count, fourth.banned_until) == (4, clock.now + 600 * MINUTE), "the last again"

    clock.advance(24 * 3600.0)
    assert await store.moderation.banned_until("discord", "u1") is None
    assert (await store.moderation.record_offence("discord", "u1", BANS)).count == 1


async def test_a_longer_ban_is_kept_and_concurrent_offences_count_each(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    offences = await asyncio.gather(
        *((store if n % 2 else other_store).moderation.record_offence("slack", "U1", BANS)
          for n in range(4))
    )  # fmt: skip
    assert sorted(o.count for o in offences) == [1, 2, 3, 4]
    assert await store.moderation.banned_until("slack", "U1") == clock.now + 600 * MINUTE
    again = await store.moderation.record_offence("slack", "U1", (1,))
    assert again.banned_until == clock.now + 600 * MINUTE, "a shorter ban never shortens it"


def test_the_queries_are_written_once() -> None:
    assert "?" in moderation.SQL_COUNT_OFFENCE and "RETURNING" in moderation.SQL_COUNT_OFFENCE


async def test_a_lifted_ban_ends_at_once_and_the_day_still_counts(
    store: Store, other_store: Store
) -> None:
    assert not await store.moderation.lift_ban("discord", "u1")
    await store.moderation.record_offence("discord", "u1", BANS)
    assert await other_store.moderation.lift_ban("discord", "u1")
    assert await store.moderation.banned_until("discord", "u1") is None
    assert (await store.moderation.record_offence("discord", "u1", BANS)).count == 2


async def test_an_admins_ban_counts_no_offence_and_never_shortens_one(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    assert await store.moderation.ban("slack", "U1", 30) == clock.now + 30 * MINUTE
    assert await other_store.moderation.banned_until("slack", "U1") == clock.now + 30 * MINUTE
    assert (await store.moderation.record_offence("slack", "U1", BANS)).count == 1, "no offence"
    assert await store.moderation.ban("slack", "U1", 5) == clock.now + 60 * MINUTE
    assert await store.moderation.lift_ban("slack", "U1")
    assert await store.moderation.ban("slack", "U1", 5) == clock.now + 5 * MINUTE


async def test_the_running_bans_of_a_platform(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    await store.moderation.ban("slack", "U2", 30)
    await store.moderation.record_offence("slack", "U1", BANS)
    await store.moderation.record_offence("discord", "U1", BANS)
    await store.moderation.ban("slack", "U3", 5)
    assert await store.moderation.lift_ban("slack", "U3")
    assert await other_store.moderation.bans("slack") == [
        ("U1", clock.now + 60 * MINUTE),
        ("U2", clock.now + 30 * MINUTE),
    ]
    clock.advance(31 * MINUTE)
    assert [user for user, _ in await store.moderation.bans("slack")] == ["U1"]


async def test_a_running_ban_says_whether_an_admin_set_it(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    moderation = store.moderation
    assert await moderation.running_ban("slack", "U1") is None
    await moderation.record_offence("slack", "U1", BANS)
    assert await other_store.moderation.running_ban("slack", "U1") == Ban(
        clock.now + 60 * MINUTE, by_admin=False
    )
    clock.advance(61 * MINUTE)
    await moderation.ban("slack", "U1", 30)
    assert await other_store.moderation.running_ban("slack", "U1") == Ban(
        clock.now + 30 * MINUTE, by_admin=True
    ), "an admin's ban of a user with a refused prompt today"

    assert await moderation.lift_ban("slack", "U1")
    assert await moderation.running_ban("slack", "U1") is None
    await moderation.record_offence("slack", "U1", BANS)
    assert await moderation.running_ban("slack", "U1") == Ban(
        clock.now + 120 * MINUTE, by_admin=False
    ), "after an unban, an offence's ban is the rules' again"

    await moderation.record_offence("slack", "U2", BANS)
    await moderation.ban("slack", "U2", 5)
    assert await moderation.running_ban("slack", "U2") == Ban(
        clock.now + 60 * MINUTE, by_admin=False
    ), "a shorter admin's ban leaves the running one as it was"
    await moderation.ban("slack", "U2", 1440)
    assert await moderation.running_ban("slack", "U2") == Ban(
        clock.now + 1440 * MINUTE, by_admin=True
    )
    clock.advance(720 * MINUTE)
    await moderation.record_offence("slack", "U2", (1,))
    assert await moderation.running_ban("slack", "U2") == Ban(
        clock.now + 720 * MINUTE, by_admin=True
    ), "the ban ending last runs, whichever day's row holds it"


async def test_a_user_is_seen_by_what_genbot_keeps_of_them_in_the_workspace(store: Store) -> None:
    """qa2 D12: a ban by a typed id asks whether genbot has seen the id there (so that a typo
    bans nobody): by their jobs, conversations, turns and audit entries in that workspace, or
    their offences, settings, saved options and usage on the platform."""
    seen = store.moderation.has_seen
    assert not await seen("web", "web", "nobody-here")
    await create_job(store.admission, new_job(requester_id="u-job", workspace_id="web"))
    talk, _ = await store.conversations.get_or_create_conversation(
        ConversationKey("discord", "web", "c1", "t1"), kind="thread", created_by="u-talk"
    )
    await store.conversations.append_message(talk.id, "user", "hi", author="u-turn")
    await store.audit.record(AuditEntry("settings.changed", "discord", "web", "c1", "u-act", "x"))
    await store.audit.record(AuditEntry("moderation.banned", "discord", "web", "c1", "a", "u-tgt"))
    await store.moderation.record_offence("discord", "u-offence", BANS)
    await store.settings.set_scope_settings("user", "discord", "u-settings", model="llm-4")
    await store.preferences.set_option("discord", "u-option", SavedOption("neon", "--style raw"))
    await store.ledger.add_usage("discord", "u-usage", credits=1, kind="imagine")
    for user in ("u-job", "u-talk", "u-turn", "u-act", "u-tgt"):
        assert await seen("discord", "web", user), user
        assert not await seen("discord", "elsewhere", user), f"{user} only in that workspace"
        assert not await seen("slack", "web", user), f"{user} only on that platform"
    for user in ("u-offence", "u-settings", "u-option", "u-usage"):
        assert await seen("discord", "elsewhere", user), user
        assert not await seen("slack", "web", user), f"{user} only on that platform"
    assert not await seen("discord", "web", "u-jo"), "an id is not a prefix"
