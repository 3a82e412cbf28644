"""Retention on both backends: every table is either erased for a forgotten user or names
none; after forgetting, no table of either backend has the user's id in any column, while
everyone else's rows stay and usage totals stay as anonymous aggregates; the purge deletes
exactly what is older than each kind's cutoff, by one process an hour, and forgets the processes
(and their write probes) gone for a day."""

from __future__ import annotations

import asyncio
import hashlib

from storage import (
    ConversationKey,
    Cutoffs,
    JobQuota,
    KeptAbout,
    PlaygroundImage,
    PlaygroundMessage,
    ProcessInfo,
    Purged,
    QuotaRefusal,
    Store,
)
from storage.queries.retention import ERASED, NAMES_NO_USER, erased_name
from storage.queries.user_data import USER_DATA
from storage.records.moderation import Offence
from storage.records.usage import utc_day
from tests.storage.conftest import START, ManualClock, new_job
from tests.storage.helpers import create_job, everything_about, posted, rows_naming, tables

DAY = 86400.0
USER = "web-5e1f0c2a9b7d"
OTHER = "web-77aa00bb11cc"
DM = "dm-5e1f0c2a9b7d"


async def test_every_table_is_erased_for_a_user_or_names_none(store: Store) -> None:
    unclassified = set(await tables(store)) - set(ERASED) - NAMES_NO_USER
    assert not {t for t in unclassified if not t.startswith("job_words_")}, (
        "a new table: add it to storage/queries/retention.py, to ERASED (and erase its rows in"
        " Retention.forget) when it can name a user, else to NAMES_NO_USER"
    )


async def test_forgetting_leaves_no_row_naming_the_user_in_any_table(
    store: Store, clock: ManualClock
) -> None:
    await everything_about(store, USER, OTHER, dm=DM)
    before = await rows_naming(store, USER)
    follow = {"job_words", "conversation_links", "job_messages", "playground_images"}
    assert set(before) == set(ERASED) - follow, "rows naming them in every table that can"
    kept = await store.retention.kept("web", USER)
    assert kept == KeptAbout(
        {
            "conversations": 1, "messages": 1, "messages_in_others": 1, "answers": 1,
            "feedback": 1, "jobs": 1,
            "settings": 1, "saved_options": 1, "batches": 1, "uploads": 1, "usage_days": 1,
            "moderation_days": 1, "rules": 1, "audit_entries": 4,
        },
        running=0,
        banned_until=kept.banned_until,
    )  # fmt: skip
    assert kept.banned_until > 0
    on_slack = await store.retention.kept("slack", USER)
    assert on_slack.kinds["channel_in_view"] == 1
    assert [d.kind for d in USER_DATA] == [*kept.kinds, "channel_in_view"], "one of every kind"
    others = await rows_naming(store, OTHER)

    gone, pseudonym = await store.retention.forget("web", USER)
    about = await store.playground.about_user(USER, DM)
    deleted, pictures = await store.playground.forget_user(USER, DM)
    assert (deleted, pictures) == about, "what went is what was counted"
    gone_on_slack, _ = await store.retention.forget("slack", USER)
    assert gone_on_slack == on_slack.kinds

    assert await rows_naming(store, USER) == {}
    assert sorted(deleted) == ["p1", "p2", "p4"], "theirs, their DM, an admin's about them"
    assert sorted(pictures) == ["p1", "p2"], "the images only those messages showed"
    assert gone == kept.kinds, "what went is what the preview counted"
    for platform in ("web", "slack"):
        after = await store.retention.kept(platform, USER)
        assert set(after.kinds.values()) == {0} and after.banned_until == 0
    assert await rows_naming(store, OTHER) == others, "everyone else's rows stay"
    assert await rows_naming(store, pseudonym) == {"audit_log": 4, "moderation_rules": 1}
    refused = await store.audit.entries("web", "web", kind="moderation.refused")
    assert refused[0].target == pseudonym and refused[0].after is None, "their text is gone"
    erased = erased_name("web", USER)
    assert await rows_naming(store, erased) == {"usage": 2, "moderation_offences": 1}
    assert await usage_totals(store) == [(erased, 4, 10), (OTHER, 2, 0)], "today's still counts"
    clock.advance(DAY)
    assert await store.retention.purge(Cutoffs()) is not None
    assert await usage_totals(store) == [("", 4, 10), (OTHER, 2, 0)], "then anonymous"
    assert await rows_naming(store, erased) == {}
    upscale = await store.db.fetch_one("SELECT parent_job_id FROM jobs")
    assert upscale == {"parent_job_id": None}
    images = await store.db.fetch_all("SELECT key FROM playground_images")
    assert images == [], "the images only their messages showed"
    for table in ("job_messages", "conversation_links"):
        row = await store.db.fetch_one(f"SELECT COUNT(*) AS n FROM {table}")
        assert row == {"n": 0}, f"{table} went with what it belonged to"
    left = await store.db.fetch_all("SELECT content, author, asked_by FROM messages ORDER BY id")
    assert left == [
        {"content": "a riddle?", "author": OTHER, "asked_by": None},
        {"content": "is it a map?", "author": None, "asked_by": None},
        {"content": "hello", "author": None, "asked_by": None},
    ], "in another's thread, their turn and the answer to them stay, naming nobody"


async def usage_totals(store: Store) -> list[tuple[object, ...]]:
    """Credits and prompt tokens in the ledger, per user."""
    totals = await store.db.fetch_all(
        "SELECT user_id, SUM(credits) AS credits, SUM(tokens_prompt) AS tokens FROM usage"
        " GROUP BY user_id ORDER BY user_id"
    )
    return [tuple(row.values()) for row in totals]


async def test_what_counts_against_a_forgotten_users_limits_still_counts_until_it_refills(
    store: Store, clock: ManualClock
) -> None:
    """/forget-me resets no limit: what the user spent in a budget's window (today; the last
    24 hours when refilled hourly) still counts against their credit and chat token budgets, and
    the day's refused prompts toward their next ban, under the name derived from their id —
    not their id, and linked to no job or answer that is gone. Older usage is folded into
    anonymous totals at once; the kept rows when they no longer count (the purge)."""
    ledger, day_start = store.ledger, START - START % DAY
    running = await create_job(store.admission, new_job(requester_id=USER, platform="web"))
    spent = (
        (START - 2 * DAY, 5, 0, "gone-job"),
        (day_start - 3600, 2, 0, None),
        (START - 600, 3, 0, "done-job"),
        (START - 300, 1, 0, running.id),
        (START - 60, 0, 10, "chat-answer:1"),
    )
    for at, credits, tokens, job_id in spent:
        kind = "chat" if tokens else "credits"
        await ledger.add_usage(
            "web", USER, credits=credits, tokens_prompt=tokens, kind=kind, job_id=job_id, at=at
        )
    await ledger.add_usage("web", OTHER, credits=1, tokens_prompt=7)
    for _ in range(2):
        await store.moderation.record_offence("web", USER, [0, 0, 60])

    await store.retention.forget("web", USER)
    assert await rows_naming(store, USER) == {}
    erased = erased_name("web", USER)
    kept = await store.db.fetch_all(
        "SELECT job_id, credits FROM usage WHERE user_id = ? ORDER BY created_at", (erased,)
    )
    assert kept == [
        {"job_id": None, "credits": 2},
        {"job_id": None, "credits": 3},
        {"job_id": running.id, "credits": 1},
        {"job_id": None, "credits": 0},
    ], "what a window may count, linked only to the job still running (it is charged once)"
    old = await ledger.usage_for_user("web", "", day=utc_day(START - 2 * DAY))
    assert old.credits == 5, "older usage: anonymous at once"

    daily = await ledger.spent("web", USER, "daily")
    assert (daily.credits, daily.tokens) == (4, 10)
    assert (await ledger.spent("web", USER, "hourly")).credits == 6
    assert (await ledger.usage_for_user("web", USER)).credits == 4, "/usage says so too"
    budget = JobQuota(max_daily_credits=4)
    refused = QuotaRefusal("max_daily_credits", 4, 4, day_start + DAY)
    assert await store.admission.quota_refusal("web", USER, budget) == refused
    again = new_job(requester_id=USER, platform="web")
    assert await store.admission.create_job_within(again, budget) == refused
    assert await store.admission.quota_refusal("web", OTHER, budget) is None
    assert (await ledger.spent("discord", USER, "daily")).credits == 0, "per platform"
    third = await store.moderation.record_offence("web", USER, [0, 0, 60])
    assert third == Offence(3, START + 3600), "the day's third refused prompt"

    await store.retention.forget("web", USER)
    fourth = await store.moderation.record_offence("web", USER, [0, 0, 60, 120])
    assert fourth.count == 4, "forgetting twice in a day adds up"

    clock.advance(DAY)
    assert await store.retention.purge(Cutoffs()) is not None
    kept_on = {"usage": 1, "jobs": 1}
    assert await rows_naming(store, erased) == kept_on, "the running job and its charge"
    assert (await ledger.spent("web", USER, "daily")).credits == 0
    assert (await ledger.usage_for_user("web", "", day=utc_day(START))).tokens == 10
    assert (await store.moderation.record_offence("web", USER, [0, 60])).count == 1


async def test_a_running_job_is_not_forgotten_until_it_finishes(store: Store) -> None:
    running = await create_job(store.admission, new_job(requester_id=USER, platform="web"))
    assert (await store.retention.kept("web", USER)).running == 1
    gone, _ = await store.retention.forget("web", USER)
    assert gone["jobs"] == 0
    assert await store.jobs.get_job(running.id) is not None


async def test_a_forgotten_users_running_jobs_still_count_under_their_cap(store: Store) -> None:
    """Renamed by a name derived from their id (not the random pseudonym), the unfinished jobs
    of a user who deleted their data still hold their places: /forget-me frees none."""
    cap = JobQuota(max_active=2)
    mine = new_job(requester_id=USER, platform="web")
    running = [await create_job(store.admission, mine) for _ in range(2)]
    await store.jobs.transition(running[1].id, "creating", "processing", provider_id="t1")
    await store.jobs.transition(running[1].id, "processing", "cancelled")
    _, pseudonym = await store.retention.forget("web", USER)

    erased = "erased-" + hashlib.sha256(f"web:{USER}".encode()).hexdigest()[:8]
    for job in running:
        renamed = await store.jobs.get_job(job.id)
        assert renamed is not None and renamed.requester_id == erased != pseudonym
    refused = QuotaRefusal("max_active", 2, 2, cancelled=1)
    assert await store.admission.quota_refusal("web", USER, cap) == refused
    assert await store.admission.create_job_within(mine, cap) == refused
    assert await store.admission.quota_refusal("discord", USER, cap) is None, "per platform"
    assert await store.admission.quota_refusal("web", OTHER, cap) is None


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


async def test_the_purge_forgets_processes_gone_for_a_day_and_their_jobs_are_still_taken(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """A process that died without a clean stop kept its row in ``processes`` for ever (every
    restart on SQLite left one too)."""
    await other_store.leasing.heartbeat(ProcessInfo("h", 2, ("discord",), clock()))
    left = await create_job(other_store.admission, new_job(status="pending"))
    clock.advance(DAY - 60)
    await store.leasing.heartbeat(ProcessInfo("h", 1, ("discord",), clock()))
    kept = await store.retention.purge(Cutoffs(None, None, None))
    assert kept is not None and kept.processes == 0, "gone for less than a day"

    clock.advance(3600)
    await store.leasing.heartbeat(ProcessInfo("h", 1, ("discord",), clock()))
    assert await store.retention.purge(Cutoffs(None, None, None)) == Purged(processes=1)
    rows = await store.db.fetch_all("SELECT id FROM processes")
    assert [row["id"] for row in rows] == [store.owner.process_id]
    [taken] = await store.leasing.claim_jobs(["discord"], limit=10)
    assert (taken.id, taken.owner) == (left.id, store.owner.process_id)


async def test_the_purge_forgets_the_write_probes_of_processes_gone_for_a_day(
    store: Store, other_store: Store, clock: ManualClock
) -> None:
    """Every process that answered a readiness check kept its row in ``storage_probes`` for
    ever, one per process ever started."""
    await other_store.probe_write()
    clock.advance(DAY - 60)
    await store.probe_write()
    assert await store.retention.purge(Cutoffs(None, None, None)) is not None
    assert len(await store.db.fetch_all("SELECT process_id FROM storage_probes")) == 2

    clock.advance(3600)
    assert await store.retention.purge(Cutoffs(None, None, None)) is not None
    rows = await store.db.fetch_all("SELECT process_id FROM storage_probes")
    assert [row["process_id"] for row in rows] == [store.owner.process_id]


async def test_the_purge_drops_the_playground_s_marks_of_forgets_past_an_hour(
    store: Store, clock: ManualClock
) -> None:
    """A forget's mark (for the processes that missed its notice) is kept no longer than it
    serves, even when no later forget sweeps it."""
    await store.playground.forget_user("web-ann00000000000000000000", "dm-ann")
    marks = "SELECT name FROM playground_meta WHERE name LIKE 'forgotten %'"
    assert len(await store.db.fetch_all(marks)) == (1 if store.db.dialect.shared else 0)
    assert await store.retention.purge(Cutoffs(None, None, None)) is not None
    assert len(await store.db.fetch_all(marks)) == (1 if store.db.dialect.shared else 0)

    clock.advance(3601)
    assert await store.retention.purge(Cutoffs(None, None, None)) is not None
    assert await store.db.fetch_all(marks) == []
