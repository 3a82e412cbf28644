"""Retention on both backends: every table is either erased for a forgotten user or names
none; after forgetting, no table of either backend has the user's id in any column, while
everyone else's rows stay and usage totals stay as anonymous aggregates; the purge deletes
exactly what is older than each kind's cutoff, by one process an hour."""

from __future__ import annotations

import asyncio

from storage import (
    Batch,
    ConversationKey,
    Cutoffs,
    Job,
    JobStatus,
    MediaCaps,
    ModerationRule,
    PlaygroundImage,
    PlaygroundMessage,
    Purged,
    SavedOption,
    Store,
)
from storage.queries.retention import ERASED, NAMES_NO_USER
from tests.storage.conftest import ManualClock, new_job
from tests.storage.helpers import create_job, rows_naming, tables

DAY = 86400.0
USER = "web-5e1f0c2a9b7d"
OTHER = "web-77aa00bb11cc"
DM = "dm-5e1f0c2a9b7d"


async def posted(store: Store, **fields: object) -> Job:
    job = await create_job(store.admission, new_job(**fields))
    moves: tuple[tuple[JobStatus, JobStatus], ...] = (
        ("creating", "finished"),
        ("finished", "posting"),
        ("posting", "posted"),
    )
    for before, after in moves:
        await store.jobs.transition(job.id, before, after)
    return job


async def everything_about(store: Store, clock: ManualClock, user: str, other: str) -> None:
    """``user`` has done all genbot keeps something about, alongside ``other``."""
    mine = {"requester_id": user, "platform": "web", "workspace_id": "web"}
    grid = await posted(store, prompt="a fox", channel_id=DM, **mine)
    await store.message_links.link_message("web", DM, "m-grid", grid.id)
    theirs = {"requester_id": other, "platform": "web", "workspace_id": "web"}
    await create_job(store.admission, new_job(prompt="an owl", parent_job_id=grid.id, **theirs))
    key = ConversationKey("web", "web", DM, "")
    talk, _ = await store.conversations.get_or_create_conversation(key, kind="dm", created_by=user)
    await store.conversations.append_message(
        talk.id, "user", f"I am {user}", platform_message_ids=["m-1"], channel_id=DM
    )
    group = ConversationKey("web", "web", "general", "t1")
    thread, _ = await store.conversations.get_or_create_conversation(
        group, kind="thread", created_by=other
    )
    answer = await store.conversations.append_message(
        thread.id, "assistant", "hello", model="llm-4", asked_by=user
    )
    for rater, good in ((user, True), (other, False)):
        await store.feedback.rate(
            answer, rater, platform="web", workspace_id="web", model="llm-4", good=good
        )
    await store.ledger.add_usage("web", user, credits=4, kind="imagine", job_id=grid.id)
    await store.ledger.add_usage("web", user, tokens_prompt=10, kind="chat")
    await store.ledger.add_usage("web", other, credits=2, kind="imagine")
    await store.settings.set_scope_settings("user", "web", user, model="llm-4")
    await store.moderation.record_offence("web", user, [1])
    await store.moderation.add_rule("web", "web", ModerationRule("nsfw", "nude"), user)
    caps = MediaCaps(total=10**6, per_owner=10**6)
    for owner in (user, other):
        await store.media.put(f"{owner}.png", f"web:{owner}", "image/png", b"\x89PNG", 3600, caps)
    await store.preferences.set_option("web", user, SavedOption("neon", "--style raw"))
    batch = Batch(
        id="b1", platform="web", workspace_id="web", channel_id=DM, requester_id=user,
        command={"jobs": [{"prompt": "a fox"}] * 2}, created_at=clock(),
        expires_at=clock() + 300, total=2,
    )  # fmt: skip
    await store.preferences.save_batch(batch)
    for viewer in (user, other):
        await store.channels_in_view.save_channel_in_view("T1", viewer, "C1")
    for kind, actor, target in (
        ("moderation.refused", "genbot", user),
        ("moderation.banned", other, user),
        ("settings.changed", user, "channel general"),
        ("moderation.unbanned", other, "a ban"),
    ):
        await store.db.execute(
            "INSERT INTO audit_log (at, platform, workspace_id, channel_id, actor_id, kind,"
            " target, state_before, state_after) VALUES (?, 'web', 'web', 'general', ?, ?, ?,"
            " NULL, ?)",
            (clock(), actor, kind, target, f'{{"user": "{user}", "text": "nude"}}'),
        )
    for message_id, channel, author in (("p1", "general", user), ("p2", DM, "genbot")):
        body = {"author": {"id": author}, "text": "hi"}
        saved = PlaygroundMessage(message_id, channel, False, (message_id,), body)
        picture = PlaygroundImage(message_id, "a.png", "image/png", 1, 1, b"png")
        await store.playground.save_playground_message(saved, [picture], keep=50)
    kept = PlaygroundMessage("p3", "general", False, (), {"author": {"id": other}})
    await store.playground.save_playground_message(kept, [], keep=50)
    about = {"author": {"id": "genbot"}, "visible_to": "web-admin", "text": f"about `{user}`"}
    admins = PlaygroundMessage("p4", "general", False, (), about)
    await store.playground.save_playground_message(admins, [], keep=50)


async def test_every_table_is_erased_for_a_user_or_names_none(store: Store) -> None:
    unclassified = set(await tables(store)) - set(ERASED) - NAMES_NO_USER
    assert not {t for t in unclassified if not t.startswith("job_words_")}, (
        "a new table: add it to storage/queries/retention.py, to ERASED (and erase its rows in"
        " Retention.forget) when it can name a user, else to NAMES_NO_USER"
    )


async def test_forgetting_leaves_no_row_naming_the_user_in_any_table(
    store: Store, clock: ManualClock
) -> None:
    await everything_about(store, clock, USER, OTHER)
    before = await rows_naming(store, USER)
    follow = {"job_words", "conversation_links", "job_messages", "playground_images"}
    assert set(before) == set(ERASED) - follow, "rows naming them in every table that can"
    kept = await store.retention.kept("web", USER)
    assert kept | {"banned_until": 0} == {
        "conversations": 1, "messages": 1, "jobs": 1, "results": 1, "running": 0, "settings": 1,
        "usage_days": 1, "moderation_days": 1, "banned_until": 0, "audit_entries": 4,
    }  # fmt: skip
    others = await rows_naming(store, OTHER)

    gone, pseudonym = await store.retention.forget("web", USER)
    deleted = await store.playground.forget_user(USER, DM)
    await store.retention.forget("slack", USER)  # slack_channels_in_view is Slack's only

    assert await rows_naming(store, USER) == {}
    assert sorted(deleted) == ["p1", "p2", "p4"], "theirs, their DM, an admin's about them"
    assert gone == {
        "jobs": 1, "conversations": 1, "feedback": 1, "usage": 2, "settings": 1,
        "moderation": 1, "uploads": 1, "saved_options": 1, "batches": 1, "audit_entries": 4,
    }  # fmt: skip
    assert await rows_naming(store, OTHER) == others, "everyone else's rows stay"
    assert await rows_naming(store, pseudonym) == {"audit_log": 4, "moderation_rules": 1}
    refused = await store.audit.entries("web", "web", kind="moderation.refused")
    assert refused[0].target == pseudonym and refused[0].after is None, "their text is gone"
    totals = await store.db.fetch_all(
        "SELECT user_id, SUM(credits) AS credits, SUM(tokens_prompt) AS tokens FROM usage"
        " GROUP BY user_id ORDER BY user_id"
    )
    assert [tuple(row.values()) for row in totals] == [("", 4, 10), (OTHER, 2, 0)]
    upscale = await store.db.fetch_one("SELECT parent_job_id FROM jobs")
    assert upscale == {"parent_job_id": None}
    images = await store.db.fetch_all("SELECT key FROM playground_images")
    assert images == [], "the images only their messages showed"
    for table in ("job_messages", "conversation_links"):
        row = await store.db.fetch_one(f"SELECT COUNT(*) AS n FROM {table}")
        assert row == {"n": 0}, f"{table} went with what it belonged to"
    left = await store.db.fetch_all("SELECT content, asked_by FROM messages")
    assert left == [{"content": "hello", "asked_by": None}], "the answer in another's thread"


async def test_a_running_job_is_not_forgotten_until_it_finishes(store: Store) -> None:
    running = await create_job(store.admission, new_job(requester_id=USER, platform="web"))
    assert (await store.retention.kept("web", USER))["running"] == 1
    gone, _ = await store.retention.forget("web", USER)
    assert gone["jobs"] == 0
    assert await store.jobs.get_job(running.id) is not None


async def test_the_purge_deletes_exactly_what_is_past_each_cutoff_once_an_hour(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    async def add(label: str) -> None:
        await posted(store, prompt=label)
        key = ConversationKey("discord", "g1", "c1", label)
        await store.conversations.get_or_create_conversation(key, kind="thread")
        picture = PlaygroundImage(label, "a.png", "image/png", 1, 1, b"png")
        await store.playground.save_playground_message(
            PlaygroundMessage(label, "general", False, (label,), {}), [picture], keep=50
        )

    await add("old")
    unfinished = await create_job(store.admission, new_job(prompt="old and running"))
    clock.advance(10 * DAY)
    await add("new")
    clock.advance(DAY)
    cutoff = clock() - 5 * DAY

    both = await asyncio.gather(
        store.retention.purge(Cutoffs(cutoff, cutoff, cutoff)),
        other_store.retention.purge(Cutoffs(cutoff, cutoff, cutoff)),
    )
    assert sorted(both, key=str) == [None, Purged(1, 1, 1)], "one process purges"
    jobs = await store.db.fetch_all("SELECT prompt FROM jobs ORDER BY prompt")
    assert [row["prompt"] for row in jobs] == ["new", "old and running"]
    assert await store.jobs.get_job(unfinished.id) is not None
    talks = await store.db.fetch_all("SELECT thread_key FROM conversations")
    assert [row["thread_key"] for row in talks] == ["new"]
    images = await store.db.fetch_all("SELECT key FROM playground_images")
    assert [row["key"] for row in images] == ["new"]

    clock.advance(60)
    assert await store.retention.purge(Cutoffs(clock(), clock(), clock())) is None
    clock.advance(3600)
    assert await store.retention.purge(Cutoffs(conversations=clock())) == Purged(1, 0, 0)
