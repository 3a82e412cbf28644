"""Test-only storage helpers: what tests need to set up or inspect, kept off the interfaces."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager

import psycopg

from storage import (
    Batch,
    ChatMessage,
    ConversationKey,
    ConversationStore,
    Job,
    JobAdmission,
    JobMessage,
    JobQuota,
    JobStatus,
    MediaCaps,
    ModerationRule,
    NewJob,
    PlaygroundImage,
    PlaygroundMessage,
    QuotaRefusal,
    SavedOption,
    Store,
)
from storage.sql.session import Database, Session, Values
from tests.storage.conftest import new_job

LOCK_WAITERS = (
    "pg_locks WHERE locktype = 'advisory' AND NOT granted AND objsubid = 1"
    " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)"
)
SQL_LOCK_WAITERS = "SELECT COUNT(*) FROM " + LOCK_WAITERS
SQL_LOCK_HOLDERS = (
    "SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1"
    " AND ((classid::bigint << 32) | objid::bigint) = hashtextextended(%s, 0)"
)
SQL_TERMINATE_LOCK_WAITERS = "SELECT pg_terminate_backend(pid) FROM " + LOCK_WAITERS
TABLE_WAITERS = "pg_locks WHERE relation = %s::regclass AND NOT granted"
SQL_STATEMENT_WAITERS = (
    "SELECT COUNT(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'"
    " AND starts_with(query, %s)"
)
SQL_MESSAGES_OF_JOB = (
    "SELECT platform, channel_id, message_id, job_id, kind FROM job_messages"
    " WHERE job_id = ? ORDER BY id"
)


LONG_GATHER = 0.2
"""A gather long enough that no loop stall splits the calls a few turns apart (tests patch a
port's ``GATHER`` to it, so those calls go together only when the port gathers)."""


async def after_turns(turns: int) -> None:
    """Let the event loop turn ``turns`` times (the next caller wakes a moment later)."""
    for _ in range(turns):
        await asyncio.sleep(0)


async def create_job(store: JobAdmission, new: NewJob) -> Job:
    """Create ``new`` with no limits (a derivative whose pair exists: the existing job)."""
    outcome = await store.create_job_within(new, JobQuota())
    assert not isinstance(outcome, QuotaRefusal)
    return outcome[0]


async def conversation_history(store: ConversationStore, conversation_id: int) -> list[ChatMessage]:
    """Every turn of a conversation, oldest first."""
    return await store.conversation_tail(conversation_id, max_tokens=sys.maxsize)


async def messages_for_job(store: Store, job_id: str) -> list[JobMessage]:
    """Every platform message linked to a job, in link order."""
    return [JobMessage(**row) for row in await store.db.fetch_all(SQL_MESSAGES_OF_JOB, (job_id,))]


@asynccontextmanager
async def holding(db: Database, sql: str, values: Values = ()) -> AsyncIterator[None]:
    """Inside the block, a transaction of ``db`` that ran ``sql`` (a lock) stays open; it
    commits when the block ends."""
    held_now, release = asyncio.Event(), asyncio.Event()

    async def hold(tx: Session) -> None:
        await tx.execute(sql, values)
        held_now.set()
        await release.wait()

    held = asyncio.create_task(db.transaction(hold))
    try:
        async with asyncio.timeout(10.0):
            await held_now.wait()
        yield
    finally:
        release.set()
        await held


async def until_waiting_for_lock(url: str, key: str, count: int = 1) -> None:
    """Until ``count`` sessions wait on the PostgreSQL server at ``url`` for the lock of ``key``
    (a conversation's is ``genbot.conversation.<id>``): what orders their turns, seen on the
    server instead of guessed with sleeps. At most 30 s."""
    await _until_counted(url, SQL_LOCK_WAITERS, key, count)


def lock_holders(url: str, key: str) -> list[int]:
    """The backends holding the lock of ``key`` on the PostgreSQL server at ``url`` now."""
    with psycopg.connect(url, autocommit=True) as conn:
        return [int(row[0]) for row in conn.execute(SQL_LOCK_HOLDERS, (key,))]


def cut_lock_holders(url: str, key: str) -> list[int]:
    """Terminate the backends holding the lock of ``key`` (their connections fail under
    their holders, which live on); their pids."""
    holders = lock_holders(url, key)
    with psycopg.connect(url, autocommit=True) as conn:
        for pid in holders:
            conn.execute("SELECT pg_terminate_backend(%s)", (pid,))
    return holders


async def until_lock_held_again(url: str, key: str, lost: Iterable[int]) -> int:
    """Until a backend not among ``lost`` holds the lock of ``key`` (asked again through a
    new connection each time: the server may be restarting); its pid. At most 30 s."""
    gone = set(lost)
    async with asyncio.timeout(30):
        while True:
            with contextlib.suppress(psycopg.OperationalError):
                holders = await asyncio.to_thread(lock_holders, url, key)
                if fresh := [pid for pid in holders if pid not in gone]:
                    return fresh[0]
            await asyncio.sleep(0.05)


async def until_waiting_for_table(url: str, table: str) -> None:
    """Until a session waits on the PostgreSQL server at ``url`` for a lock on ``table``. At
    most 30 s."""
    await _until_counted(url, "SELECT COUNT(*) FROM " + TABLE_WAITERS, table, 1)


async def until_waiting_in(url: str, statement: str) -> None:
    """Until a session waits on the PostgreSQL server at ``url`` for a lock while it runs a
    statement that starts with ``statement``. At most 30 s."""
    await _until_counted(url, SQL_STATEMENT_WAITERS, statement, 1)


async def _until_counted(url: str, sql: str, value: str, count: int) -> None:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        async with asyncio.timeout(30):
            while True:
                found = await (await conn.execute(sql, (value,))).fetchone()
                if found is not None and found[0] >= count:
                    return
                await asyncio.sleep(0.01)


async def tables(store: Store) -> list[str]:
    if store.db.dialect.name == "sqlite":
        sql = "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
    else:
        sql = (
            "SELECT table_name AS name FROM information_schema.tables"
            " WHERE table_schema = current_schema()"
        )
    return sorted(str(row["name"]) for row in await store.db.fetch_all(sql))


async def columns(store: Store, table: str) -> list[str]:
    if store.db.dialect.name == "sqlite":
        return [str(row["name"]) for row in await store.db.fetch_all(f"PRAGMA table_info({table})")]
    sql = (
        "SELECT column_name AS name FROM information_schema.columns"
        " WHERE table_schema = current_schema() AND table_name = ?"
    )
    return [str(row["name"]) for row in await store.db.fetch_all(sql, (table,))]


async def rows_naming(store: Store, text: str) -> dict[str, int]:
    """Per table of ``store``'s database, the rows with ``text`` in any column (read as text:
    JSON and blobs included), where there are any."""
    found: dict[str, int] = {}
    for table in await tables(store):
        names = await columns(store, table)
        where = " OR ".join(f"CAST({name} AS TEXT) LIKE ?" for name in names)
        row = await store.db.fetch_one(
            f"SELECT COUNT(*) AS n FROM {table} WHERE {where}", [f"%{text}%"] * len(names)
        )
        if row is not None and int(row["n"]):
            found[table] = int(row["n"])
    return found


async def posted(store: Store, **fields: object) -> Job:
    """A new job (``new_job``'s fields), moved to ``posted``."""
    job = await create_job(store.admission, new_job(**fields))
    moves: tuple[tuple[JobStatus, JobStatus], ...] = (
        ("creating", "finished"),
        ("finished", "posting"),
        ("posting", "posted"),
    )
    for before, after in moves:
        await store.jobs.transition(job.id, before, after)
    return job


async def everything_about(
    store: Store,
    user: str,
    other: str,
    *,
    platform: str = "web",
    dm: str = "dm-5e1f0c2a9b7d",
    playground: bool = True,
    in_view: bool = True,
) -> None:
    """``user`` has done all genbot keeps something about on ``platform`` (in the workspace
    ``web``; ``dm``: their DM channel), alongside ``other``: one of every kind of
    :data:`storage.queries.user_data.USER_DATA` (their turn and an answer to them in ``other``'s
    thread; four audit entries; with ``in_view``, Slack's channel in view whatever the
    platform), and with ``playground`` the playground's messages (theirs, one in their DM, an
    admin's about them, one of ``other``'s) and the two images only theirs show."""
    clock = store.clock
    mine = {"requester_id": user, "platform": platform, "workspace_id": "web"}
    grid = await posted(store, prompt="a fox", channel_id=dm, **mine)
    await store.message_links.link_message(platform, dm, "m-grid", grid.id)
    theirs = {"requester_id": other, "platform": platform, "workspace_id": "web"}
    await create_job(store.admission, new_job(prompt="an owl", parent_job_id=grid.id, **theirs))
    key = ConversationKey(platform, "web", dm, "")
    talk, _ = await store.conversations.get_or_create_conversation(key, kind="dm", created_by=user)
    await store.conversations.append_message(
        talk.id, "user", f"I am {user}", platform_message_ids=["m-1"], channel_id=dm, author=user
    )
    group = ConversationKey(platform, "web", "general", "t1")
    thread, _ = await store.conversations.get_or_create_conversation(
        group, kind="thread", created_by=other
    )
    for author, text in ((other, "a riddle?"), (user, "is it a map?")):
        await store.conversations.append_message(thread.id, "user", text, author=author)
    answer = await store.conversations.append_message(
        thread.id, "assistant", "hello", model="llm-4", asked_by=user
    )
    for rater, good in ((user, True), (other, False)):
        await store.feedback.rate(
            answer, rater, platform=platform, workspace_id="web", model="llm-4", good=good
        )
    await store.ledger.add_usage(platform, user, credits=4, kind="imagine", job_id=grid.id)
    await store.ledger.add_usage(platform, user, tokens_prompt=10, kind="chat")
    await store.ledger.add_usage(platform, other, credits=2, kind="imagine")
    await store.settings.set_scope_settings("user", platform, user, model="llm-4")
    await store.moderation.record_offence(platform, user, [1])
    await store.moderation.ban(platform, user, 30)
    await store.moderation.add_rule(platform, "web", ModerationRule("nsfw", "nude"), user)
    caps = MediaCaps(total=10**6, per_owner=10**6)
    for owner in (user, other):
        owned = f"{platform}:{owner}"
        await store.media.put(f"{owner}.png", owned, "image/png", b"\x89PNG", 3600, caps)
    await store.preferences.set_option(platform, user, SavedOption("neon", "--style raw"))
    batch = Batch(
        id="b1", platform=platform, workspace_id="web", channel_id=dm, requester_id=user,
        command={"jobs": [{"prompt": "a fox"}] * 2}, created_at=clock(),
        expires_at=clock() + 300, total=2,
    )  # fmt: skip
    await store.preferences.save_batch(batch)
    for viewer in (user, other) if in_view else ():
        await store.channels_in_view.save_channel_in_view("T1", viewer, "C1")
    for kind, actor, target in (
        ("moderation.refused", "genbot", user),
        ("moderation.banned", other, user),
        ("settings.changed", user, "channel general"),
        ("moderation.unbanned", other, "a ban"),
    ):
        await store.db.execute(
            "INSERT INTO audit_log (at, platform, workspace_id, channel_id, actor_id, kind,"
            " target, state_before, state_after) VALUES (?, ?, 'web', 'general', ?, ?, ?,"
            " NULL, ?)",
            (clock(), platform, actor, kind, target, f'{{"user": "{user}", "text": "nude"}}'),
        )
    if playground:
        await _playground_about(store, user, other, dm)


async def _playground_about(store: Store, user: str, other: str, dm: str) -> None:
    for message_id, channel, author in (("p1", "general", user), ("p2", dm, "genbot")):
        body = {"author": {"id": author}, "text": "hi"}
        saved = PlaygroundMessage(message_id, channel, False, (message_id,), body)
        picture = PlaygroundImage(message_id, "a.png", "image/png", 1, 1, b"png")
        await store.playground.save_playground_message(saved, [picture], keep=50)
    kept = PlaygroundMessage("p3", "general", False, (), {"author": {"id": other}})
    await store.playground.save_playground_message(kept, [], keep=50)
    about = {"author": {"id": "genbot"}, "visible_to": "web-admin", "text": f"about `{user}`"}
    admins = PlaygroundMessage("p4", "general", False, (), about)
    await store.playground.save_playground_message(admins, [], keep=50)


async def terminate_lock_waiters(url: str, key: str) -> None:
    """Cut the connections waiting on the PostgreSQL server at ``url`` for the lock of ``key``
    (their calls fail as the connection is lost)."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        await conn.execute(SQL_TERMINATE_LOCK_WAITERS, (key,))


async def terminate_table_waiters(url: str, table: str) -> int:
    """Cut the connections waiting on the PostgreSQL server at ``url`` for a lock on
    ``table``; how many."""
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT pg_terminate_backend(pid) FROM " + TABLE_WAITERS, (table,)
        )
        return len(await cursor.fetchall())
