"""The playground's messages and images, kept so that a restart (or another process) shows
them too; where processes share the database, the saves are announced to the others
(``NOTIFY``, sent at commit; a transaction's saves together: :func:`packed`). The saves asked
for while one is under way go together in one transaction
(:class:`~storage.queries.grouped.Grouped`), in the order they were asked."""

from __future__ import annotations

import functools
import hashlib
import secrets
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock, Owner
from storage.queries.grouped import GATHER, Grouped
from storage.records.platforms import ImageToSave, MessageToSave, PlaygroundImage, PlaygroundMessage
from storage.sql.dialect import marks, text_inside
from storage.sql.session import Database, Row, Session, Values, from_json, record, to_json

CHANNEL: Final = "genbot_playground"
SQL_SAVE: Final = (
    "INSERT INTO playground_messages (id, channel, pending, image_keys, body, owner)"
    " VALUES (?, ?, ?, ?, ?, CASE WHEN ? THEN ? END) ON CONFLICT (id) DO UPDATE SET"
    " pending = excluded.pending, image_keys = excluded.image_keys, body = excluded.body,"
    " version = playground_messages.version + 1 RETURNING version"
)
SQL_ANSWERED: Final = "UPDATE playground_messages SET pending = ? WHERE id = ? AND pending"
SQL_CLAIM_PENDING: Final = (
    "UPDATE playground_messages SET owner = ? WHERE id IN (SELECT id FROM playground_messages"
    " WHERE pending AND {} < ?{}{}) RETURNING id"
)
"""The commands another claimer holds are skipped, not waited for: a waiting claim would
re-check them against its own older snapshot, where the other claimer is not yet alive, and
take them too."""
SQL_ALIVE: Final = (
    "INSERT INTO processes (id, host, pid, started_at, seen_at) VALUES (?, '', 0, ?, ?)"
    " ON CONFLICT (id) DO UPDATE SET seen_at = excluded.seen_at"
)
SQL_NOT_LIVE: Final = (
    " AND (owner IS NULL OR owner = ? OR owner NOT IN (SELECT id FROM processes"
    " WHERE seen_at >= ?))"
)
"""Where processes share the database, a command a live process accepted stays its own."""
OWNER_SILENCE_LEASES: Final = 2
"""A command's owner is taken for gone when it has not beaten for this many leases (by the
claimer's clock when it asked). One lease would do between processes that beat on time, but a
claim asked while the database stalls runs only when it is back, judged by the time it was asked
at, before anyone could beat again: with two leases, a process that was beating when the stall
began still counts as alive (the stall-20s fault run took live processes' commands with one)."""
SQL_SAVE_IMAGE: Final = (
    "INSERT INTO playground_images (key, filename, content_type, width, height, data,"
    " created_at) VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING"
)
SQL_SHOWN: Final = "SELECT id, image_keys FROM playground_messages WHERE id IN ({})"
SQL_TRIM: Final = (
    "DELETE FROM playground_messages WHERE channel = ? AND seq <= (SELECT seq FROM"
    " playground_messages WHERE channel = ? ORDER BY seq DESC LIMIT 1 OFFSET ?)"
    " RETURNING image_keys"
)
SQL_SWEEP_IMAGES: Final = (
    "DELETE FROM playground_images WHERE key IN (SELECT key FROM playground_images EXCEPT {})"
)
"""The images no message shows. As ``key NOT IN (…)`` PostgreSQL searched the messages' keys once
per image (a list too large to hash in ``work_mem``): 0.38 s for 2,500 images under 5,000
messages, against 7.5 ms as one set difference."""
SQL_SWEEP_UNSHOWN: Final = (
    "DELETE FROM playground_images WHERE key IN ({}) AND NOT EXISTS"
    " (SELECT 1 FROM playground_messages WHERE {})"
)
"""Those of the images named that no message shows: what a save sweeps (each image named is
looked for among the messages until one shows it)."""
NAMING_USER: Final = "(channel = ? OR CAST(body AS TEXT) LIKE ? ESCAPE '\\')"
"""The messages of a user's DM (the channel) or naming them (its pattern)."""
ABOUT_USER: Final = (
    f"({NAMING_USER} OR COALESCE({{reply_to}}, '') IN"
    f" (SELECT id FROM playground_messages WHERE {NAMING_USER}))"
)
"""The messages of :data:`NAMING_USER` and those answering one of them (``reply_to``: the
dialect's text of the body's ``reply_to``; genbot's answer to a user's message names neither the
user nor their DM): the channel and the pattern, twice. A message answering none is '' there,
never NULL: else ``NOT`` of it would be NULL too, and :data:`SQL_IMAGES_ONLY_OF` would count an
image another user's message shows as the user's alone."""
SQL_ABOUT_USER: Final = f"SELECT id FROM playground_messages WHERE {ABOUT_USER}"
SQL_IMAGES_ONLY_OF: Final = (
    "SELECT key FROM playground_images WHERE key IN ({shown} WHERE "
    + ABOUT_USER
    + " EXCEPT {shown} WHERE NOT "
    + ABOUT_USER
    + ")"
)
"""The images that only the messages of :data:`ABOUT_USER` show (``shown``: the dialect's
elements of ``image_keys``), as one set difference, like :data:`SQL_SWEEP_IMAGES`."""
SQL_FORGET_USER: Final = "DELETE FROM playground_messages WHERE id IN ({})"
"""The messages :data:`SQL_ABOUT_USER` found (by id: read again as the ``DELETE`` goes, the
answers to the messages it deleted first would name no one any more)."""
SQL_LOAD: Final = (
    "SELECT * FROM (SELECT *, ROW_NUMBER() OVER"
    " (PARTITION BY channel ORDER BY seq DESC) AS n FROM playground_messages{}) AS latest"
    " WHERE n <= ? ORDER BY seq"
)
"""Each channel's latest messages (``{}``: nothing, or :data:`FEWER_DMS`)."""
FEWER_DMS: Final = (
    " WHERE channel NOT LIKE ? ESCAPE '\\' OR channel IN (SELECT channel FROM"
    " playground_messages WHERE channel LIKE ? ESCAPE '\\' GROUP BY channel"
    " ORDER BY MAX(seq) DESC LIMIT ?)"
)
"""Every channel but the DMs (the pattern of their prefix, twice), and the DMs a message was
saved in last (as many as the limit): a load reads no DM past its bound."""
SQL_EXPIRE: Final = (
    "DELETE FROM playground_messages WHERE channel IN (SELECT channel FROM playground_messages"
    " WHERE channel NOT LIKE ? ESCAPE '\\'{spared} GROUP BY channel"
    " HAVING MAX({created}) < ? AND MAX(CASE WHEN pending THEN 1 ELSE 0 END) = 0)"
    " RETURNING channel"
)
"""The messages of the channels (not a DM: the prefix's pattern; nor those ``spared``) whose
newest message was made before a time and none of whose commands waits for its handler."""
SQL_CHANNEL: Final = "SELECT * FROM playground_messages WHERE channel = ? ORDER BY seq DESC LIMIT ?"
"""One channel's latest messages, newest first, among the channel's only (its index)."""
SQL_ONE: Final = "SELECT * FROM playground_messages WHERE id = ?"
SQL_KEYED: Final = (
    "SELECT * FROM playground_messages WHERE channel = ? AND {key} = ? AND COALESCE({thread}, '')"
    " = ? ORDER BY seq DESC LIMIT 1"
)
"""The message of a channel (or thread: '' for none) with a key, among the channel's only (its
index), each body's key and thread read from its JSON."""
SQL_SOME: Final = "SELECT * FROM playground_messages WHERE id IN ({})"
SQL_SETTLE: Final = "UPDATE playground_messages SET pending = ? WHERE id = ?"
SQL_IMAGE_SIZES: Final = "SELECT key, length(data) AS size FROM playground_images"
SQL_IMAGES: Final = (
    "SELECT key, filename, content_type, width, height, data FROM playground_images"
    " WHERE key IN ({})"
)
SQL_NEW_KEY: Final = (
    "INSERT INTO playground_meta (name, value) VALUES ('session_key', ?)"
    " ON CONFLICT (name) DO NOTHING"
)
SQL_KEY: Final = "SELECT value FROM playground_meta WHERE name = 'session_key'"
FORGOTTEN_MARK: Final = "forgotten "
"""What the name of a forget's mark (:meth:`PlaygroundHistory.forget_user`) starts with."""
FORGOTTEN_MARK_SECONDS: Final = 3600.0
"""How long a forget's mark is kept: as long as the playground holds a file for a user (an
upload not sent yet, an export to download), so a process that missed the forget's notice finds
it for every file held at the forget."""
SQL_MARK_FORGOTTEN: Final = (
    "INSERT INTO playground_meta (name, value) VALUES (?, ?)"
    " ON CONFLICT (name) DO UPDATE SET value = excluded.value"
)
SQL_FORGOTTEN_MARKS: Final = "SELECT name, value FROM playground_meta WHERE name IN ({})"
SQL_DROP_FORGOTTEN_MARKS: Final = (
    "DELETE FROM playground_meta WHERE name LIKE 'forgotten %' AND value < ?"
)
"""The marks made before a time (their value: the time, fixed-width, see :func:`mark_time`)."""
SAVES_APART: Final = "\n"
"""Between the saves of a payload (a notice is one line: the playground's is compact JSON)."""
PAYLOAD_MOST_BYTES: Final = 7000
"""The longest payload a batch's saves are packed into: PostgreSQL refuses one of 8000 bytes
and more (in the server's encoding; counted here in UTF-8, with room to spare)."""
IMAGES_PER_QUERY: Final = 500
MESSAGES_PER_QUERY: Final = 500

Save = tuple[MessageToSave, Sequence[ImageToSave], int]
"""A message, the images it shows, and how many messages its channel keeps."""


def _message(row: Row) -> PlaygroundMessage:
    keys, body = tuple(from_json(row["image_keys"], [])), from_json(row["body"], {})
    return record(PlaygroundMessage, row, pending=bool(row["pending"]), image_keys=keys, body=body)


@dataclass
class PlaygroundHistory:
    """The playground's messages, images and commands (the web adapter's journal)."""

    db: Database
    clock: Clock
    owner: Owner
    released: Callable[[], bool] = lambda: False
    """Whether this process's leases were released (:attr:`storage.JobLeasing.released`)."""

    async def load_playground(
        self,
        keep: int,
        *,
        max_image_bytes: int | None = None,
        dm_prefix: str = "",
        most_dms: int | None = None,
    ) -> tuple[list[PlaygroundMessage], list[PlaygroundImage]]:
        """Each channel's ``keep`` latest messages, oldest first, and the images of the newest
        that fit in ``max_image_bytes``; with ``most_dms``, of the channels named with
        ``dm_prefix`` (users' DMs), only the ``most_dms`` a message was last saved in."""
        sql = SQL_LOAD.format("")
        values: list[object] = [keep]
        if most_dms is not None:
            prefix = prefix_pattern(dm_prefix)
            sql, values = SQL_LOAD.format(FEWER_DMS), [prefix, prefix, most_dms, keep]
        messages = [_message(row) for row in await self.db.fetch_all(sql, values)]
        sizes = {row["key"]: row["size"] for row in await self.db.fetch_all(SQL_IMAGE_SIZES)}
        wanted = newest_images(messages, sizes, max_image_bytes)
        images = await self._images(wanted)
        order = {key: n for n, key in enumerate(wanted)}
        return messages, sorted(images, key=lambda image: order[image.key])

    async def playground_channel(self, channel: str, keep: int) -> list[PlaygroundMessage]:
        """The ``keep`` latest messages of ``channel``, oldest first, without their images."""
        rows = await self.db.fetch_all(SQL_CHANNEL, (channel, keep))
        return [_message(row) for row in reversed(rows)]

    async def _images(self, keys: Sequence[str]) -> list[PlaygroundImage]:
        found: list[PlaygroundImage] = []
        for start in range(0, len(keys), IMAGES_PER_QUERY):
            chunk = keys[start : start + IMAGES_PER_QUERY]
            rows = await self.db.fetch_all(SQL_IMAGES.format(marks(len(chunk))), chunk)
            found.extend(record(PlaygroundImage, row, data=bytes(row["data"])) for row in rows)
        return found

    async def save_playground_message(
        self, message: MessageToSave, images: Sequence[ImageToSave], *, keep: int
    ) -> int:
        """Store a message and its images (a message that answers a command marks it handled
        in the same transaction); trim the channel to ``keep`` when the message is new, sweep
        the images no message shows any more, and tell the other processes (the message's id
        and its ``notice``). Saving again does
        no harm: a save whose connection was lost runs once more. Where processes share the
        database, a save first locks its channels (in name order, for its transaction; the
        sweep too): two processes trimming the same channels in different orders deadlocked."""
        return await self._saves((message, images, keep))

    @functools.cached_property
    def _saves(self) -> Grouped[Save, int]:
        return Grouped(self._save_together, gather=GATHER)

    async def _save_together(self, batch: Sequence[Save]) -> list[int]:
        """The batch's statements go together in order (one round trip on PostgreSQL: the
        channels' locks in one statement, the images the messages showed until now, the images —
        each key once, the first as ``DO NOTHING`` keeps —, each message and the command it
        answers, the notices in one statement), then the trims of the channels that got a new
        message, then the sweep of the images a message trimmed or saved showed and no longer
        does, when there are any (once at each trim, it read every message whatever they showed:
        15 % of PostgreSQL's statement time in the 3000-job burst, where the messages trimmed
        showed none)."""
        now = self.clock()
        shown: dict[str, Values] = {}
        for _, images, _ in batch:
            for i in images:
                shown.setdefault(
                    i.key, (i.key, i.filename, i.content_type, i.width, i.height, i.data, now)
                )
        channels = sorted({message.channel for message, _, _ in batch})
        ids = list(dict.fromkeys(message.id for message, _, _ in batch))

        async def work(tx: Session) -> list[int]:
            lock, locks = tx.dialect.transaction_lock, tx.dialect.transaction_locks
            notify = tx.dialect.notify_each
            statements: list[tuple[str, Values]] = []
            if locks is not None:
                statements.append((locks, ([f"{CHANNEL}.{c}" for c in channels],)))
            before = len(statements)
            statements.append((SQL_SHOWN.format(marks(len(ids))), ids))
            statements += [(SQL_SAVE_IMAGE, row) for row in shown.values()]
            saves = []
            for message, _, _ in batch:
                saves.append(len(statements))
                statements.append((SQL_SAVE, self._save_row(message)))
                if message.answers is not None:
                    statements.append((SQL_ANSWERED, (False, message.answers)))
            if notify is not None:
                notices = packed(self.owner.process_id, [(m.id, m.notice) for m, _, _ in batch])
                statements.append((notify, (CHANNEL, notices)))
            results = await tx.fetch_each(statements)
            versions = [int(results[n][0]["version"]) for n in saves]
            trim = {
                m.channel: keep for (m, _, keep), v in zip(batch, versions, strict=True) if v == 1
            }
            trimmed = await tx.fetch_each([(SQL_TRIM, (c, c, n)) for c, n in trim.items()])
            was_shown = {row["id"]: from_json(row["image_keys"], []) for row in results[before]}
            unshown = sorted(
                no_longer_shown(batch, was_shown).union(
                    *(from_json(row["image_keys"], []) for rows in trimmed for row in rows)
                )
            )
            if unshown:
                shows = tx.dialect.json_contains("image_keys", "playground_images.key")
                sweep = (SQL_SWEEP_UNSHOWN.format(marks(len(unshown)), shows), tuple(unshown))
                images_lock = [] if lock is None else [(lock, (f"{CHANNEL}.images",))]
                await tx.fetch_each([*images_lock, sweep])
            return versions

        return await self.db.transaction(work, repeatable=True)

    def _save_row(self, message: MessageToSave) -> Values:
        return (
            message.id,
            message.channel,
            message.pending,
            to_json(sorted(message.image_keys)),
            to_json(dict(message.body)),
            message.pending,
            self.owner.process_id,
        )

    async def about_user(self, user_id: str, channel: str) -> tuple[list[str], list[str]]:
        """The messages naming ``user_id`` anywhere (theirs, answers to them, those only they
        see, an admin's about them; playground ids are long enough never to be part of
        another) and those of ``channel`` (their DM): their ids, and the keys of the images
        only they show — what :meth:`forget_user` deletes."""
        return await _about_user(self.db, user_id, channel)

    async def forget_user(
        self, user_id: str, channel: str, *, notice: str = ""
    ) -> tuple[list[str], list[str]]:
        """Delete the messages of :meth:`about_user`, then the images no message shows any
        more; what :meth:`about_user` found, in the same transaction. Where processes share
        the database, the others are told with it (at its commit, whatever it found: they may
        hold more of the user than the history does), as of a save: ``user_id`` where a save
        tells the message's id, and ``notice`` (:meth:`playground_updates`); and the forget is
        marked, under a name derived from ``user_id`` (:func:`forgotten_mark`), for
        :data:`FORGOTTEN_MARK_SECONDS`, for a process that misses the notice
        (:meth:`forgotten_among`; the marks older go with it, and at the hourly purge)."""

        async def work(tx: Session) -> tuple[list[str], list[str]]:
            about = await _about_user(tx, user_id, channel)
            if tx.dialect.shared:
                now = self.clock()
                await tx.execute(
                    SQL_DROP_FORGOTTEN_MARKS, (mark_time(now - FORGOTTEN_MARK_SECONDS),)
                )
                await tx.execute(SQL_MARK_FORGOTTEN, (forgotten_mark(user_id), mark_time(now)))
            if about[0]:
                ids = about[0]
                for start in range(0, len(ids), MESSAGES_PER_QUERY):
                    chunk = ids[start : start + MESSAGES_PER_QUERY]
                    await tx.execute(SQL_FORGET_USER.format(marks(len(chunk))), chunk)
                in_use = tx.dialect.json_elements("playground_messages", "image_keys")
                await tx.execute(SQL_SWEEP_IMAGES.format(in_use))
            notify = tx.dialect.notify_each
            if notify is not None:
                told = packed(self.owner.process_id, [(user_id, notice)])
                await tx.execute(notify, (CHANNEL, told))
            return about

        return await self.db.transaction(work, repeatable=True)

    async def forgotten_among(self, user_ids: Sequence[str]) -> dict[str, float]:
        """Which of ``user_ids`` were forgotten (:meth:`forget_user`) in the last
        :data:`FORGOTTEN_MARK_SECONDS`, each with when (the latest forget), where processes
        share the database (nothing where one process has it: it missed no notice)."""
        if not self.db.dialect.shared or not user_ids:
            return {}
        whose = {forgotten_mark(user_id): user_id for user_id in user_ids}
        names, found = list(whose), {}
        since = mark_time(self.clock() - FORGOTTEN_MARK_SECONDS)
        for start in range(0, len(names), MESSAGES_PER_QUERY):
            chunk = names[start : start + MESSAGES_PER_QUERY]
            rows = await self.db.fetch_all(SQL_FORGOTTEN_MARKS.format(marks(len(chunk))), chunk)
            for row in rows:
                if str(row["value"]) >= since:
                    found[whose[str(row["name"])]] = int(row["value"]) / 1000
        return found

    async def expire_playground_channels(
        self, made_before: float, *, dm_prefix: str, spared: Sequence[str] = ()
    ) -> list[str]:
        """Delete the channels left quiet: every message of a channel whose newest message was
        made (its record's ``created``) before ``made_before``, but of users' DMs (named with
        ``dm_prefix``), of ``spared`` and of a channel with a command waiting for its handler;
        then the images no message shows any more. Only the playground's messages go: the jobs
        they showed stay in the archive (for ``/forget-me`` too). A message saved there while
        this runs stays (with it the channel). The channels deleted, in name order."""
        created = self.db.dialect.json_number("body", "created")
        spare = f" AND channel NOT IN ({marks(len(spared))})" if spared else ""
        sql = SQL_EXPIRE.format(spared=spare, created=created)

        async def work(tx: Session) -> list[str]:
            rows = await tx.fetch_all(sql, (prefix_pattern(dm_prefix), *spared, made_before))
            if rows:
                in_use = tx.dialect.json_elements("playground_messages", "image_keys")
                await tx.execute(SQL_SWEEP_IMAGES.format(in_use))
            return sorted({str(row["channel"]) for row in rows})

        return await self.db.transaction(work, repeatable=True)

    async def claim_pending_commands(self, accepted_before: float) -> list[str]:
        """One statement, so concurrent claimers never get the same command (one holding a
        command makes the others skip it). Where processes share the database, the claimer
        is recorded as alive with its claim (a process claims before its first heartbeat), so
        no other process takes what it just took. Once this process's leases were released (a
        clean stop) it claims nothing, and records nothing: the others take its commands at
        once instead of taking it for alive again."""
        now = self.clock()
        values: tuple[object, ...] = (self.owner.process_id, accepted_before)
        if self.db.dialect.shared:
            values += (self.owner.process_id, now - OWNER_SILENCE_LEASES * self.owner.lease_seconds)
        created = self.db.dialect.json_number("body", "created")
        not_live = SQL_NOT_LIVE if self.db.dialect.shared else ""
        claim = SQL_CLAIM_PENDING.format(created, not_live, self.db.dialect.skip_locked)

        async def work(tx: Session) -> list[str]:
            if self.released():
                return []
            if self.db.dialect.shared:
                await tx.execute(SQL_ALIVE, (self.owner.process_id, now, now))
            return [str(row["id"]) for row in await tx.fetch_all(claim, values)]

        return await self.db.transaction(work, repeatable=True)

    async def settle_playground_message(self, message_id: str) -> None:
        """Mark a command's message as handled."""
        await self.db.execute(SQL_SETTLE, (False, message_id), repeatable=True)

    async def playground_message(
        self, message_id: str, *, with_images: bool = True
    ) -> tuple[PlaygroundMessage, list[PlaygroundImage]] | None:
        """One stored message and the images it shows (with ``with_images``), or None."""
        row = await self.db.fetch_one(SQL_ONE, (message_id,))
        if row is None:
            return None
        message = _message(row)
        return message, await self._images(message.image_keys if with_images else ())

    async def playground_keyed(
        self, channel: str, thread: str | None, key: str
    ) -> PlaygroundMessage | None:
        """The stored message of ``channel`` (in ``thread``) whose record has ``key``, without
        its images, or None."""
        dialect = self.db.dialect
        sql = SQL_KEYED.format(
            key=dialect.json_text("body", "key"), thread=dialect.json_text("body", "thread")
        )
        row = await self.db.fetch_one(sql, (channel, key, thread or ""))
        return None if row is None else _message(row)

    async def playground_messages(self, message_ids: Sequence[str]) -> list[PlaygroundMessage]:
        """The stored messages among ``message_ids``, without their images, in no particular
        order (one statement per ``MESSAGES_PER_QUERY`` ids)."""
        found: list[PlaygroundMessage] = []
        for start in range(0, len(message_ids), MESSAGES_PER_QUERY):
            chunk = message_ids[start : start + MESSAGES_PER_QUERY]
            rows = await self.db.fetch_all(SQL_SOME.format(marks(len(chunk))), chunk)
            found.extend(_message(row) for row in rows)
        return found

    async def playground_image(self, key: str) -> PlaygroundImage | None:
        """One stored image (its bytes read on demand), or None."""
        images = await self._images((key,))
        return images[0] if images else None

    async def playground_session_key(self) -> bytes:
        """The session-cookie key, made on first use, the same for every process."""

        async def work(tx: Session) -> Row | None:
            await tx.execute(SQL_NEW_KEY, (secrets.token_hex(32),))
            return await tx.fetch_one(SQL_KEY)

        row = await self.db.transaction(work)
        assert row is not None
        return bytes.fromhex(row["value"])

    async def playground_updates(self) -> AsyncIterator[tuple[str, str] | None]:
        """None once following has started, then the id and the ``notice`` of each message
        other processes save, and the user's id and the ``notice`` of each user they forget
        (:meth:`forget_user`), in the order they were saved (only the None where the database
        has one process): a payload (:func:`packed`) of this process's own is dropped on its
        origin alone, the others are split into their saves."""
        async for payload in self.db.listen(CHANNEL):
            if payload is None:
                yield None
                continue
            origin, _, saves = payload.partition(" ")
            if origin == self.owner.process_id:
                continue
            for save in saves.split(SAVES_APART):
                message_id, _, told = save.partition(" ")
                if message_id:
                    yield message_id, told


def forgotten_mark(user_id: str) -> str:
    """The name a forget of ``user_id`` is marked under: :data:`FORGOTTEN_MARK` and the first
    32 hex digits of the SHA-256 of their id (no id is kept)."""
    digest = hashlib.sha256(f"playground:{user_id}".encode()).hexdigest()
    return FORGOTTEN_MARK + digest[:32]


def mark_time(when: float) -> str:
    """``when`` as a mark's value: whole milliseconds, 16 digits, so that their text orders as
    their times do."""
    return f"{max(0, round(when * 1000)):016d}"


def packed(origin: str, saves: Sequence[tuple[str, str]]) -> list[str]:
    """The payloads announcing a batch's saves (``saves``: each message's id and notice, in the
    order saved) from process ``origin``: ``origin id notice``, then a line ``id notice`` for
    each further save, in as few payloads as keep each within :data:`PAYLOAD_MOST_BYTES` (a
    save too long for that alone goes alone; as before packing, PostgreSQL refuses one of 8000
    bytes and more, failing its batch). A save told twice alike is told once, in its first
    place, as PostgreSQL delivered the alike notices of a transaction when each save had its
    own; a notice with a line break is sent empty (as the playground sends one too long: its
    message is then read). A save whose id has a space or a line break is not told: no payload
    can carry that id so that a process reads it back (it would read other ids, found nowhere),
    so the others show that message as they show one they missed live (none is made so: ids
    are tokens).

    A payload of one save is the format of the genbot before packing, whose processes read
    only the first save of a longer one, as a notice saying nothing (so they read that message
    and miss the others): see docs/operations.md, "A rolling restart onto this version (packed
    playground notices)"."""
    payloads: list[str] = []
    lines: list[str] = []
    size = 0
    written = (
        f"{m} {'' if SAVES_APART in notice else notice}"
        for m, notice in saves
        if " " not in m and SAVES_APART not in m
    )
    for save in dict.fromkeys(written):
        length = len(save.encode())
        if lines and size + len(SAVES_APART) + length > PAYLOAD_MOST_BYTES:
            payloads.append(SAVES_APART.join(lines))
            lines = []
        if lines:
            lines.append(save)
            size += len(SAVES_APART) + length
        else:
            lines.append(f"{origin} {save}")
            size = len(origin.encode()) + 1 + length
    if lines:
        payloads.append(SAVES_APART.join(lines))
    return payloads


def no_longer_shown(batch: Sequence[Save], was_shown: Mapping[str, Sequence[str]]) -> set[str]:
    """The keys of the images the messages of ``batch`` showed (``was_shown``: as stored before
    it, by message id; or in an earlier save of the batch) and their last save does not."""
    showed = {message_id: set(keys) for message_id, keys in was_shown.items()}
    last: dict[str, set[str]] = {}
    for message, images, _ in batch:
        last[message.id] = set(message.image_keys)
        showed.setdefault(message.id, set()).update(last[message.id], (i.key for i in images))
    return set().union(*(showed[message_id] - keys for message_id, keys in last.items()))


def newest_images(
    messages: Sequence[PlaygroundMessage], sizes: Mapping[str, int], max_bytes: int | None
) -> list[str]:
    """The keys of the images ``messages`` (oldest first) show, those of the newest messages
    first, as many as fit in ``max_bytes`` (None: all), returned oldest first; ``sizes``: the
    stored images' sizes."""
    chosen: dict[str, None] = {}
    total = 0
    for message in reversed(messages):
        for key in message.image_keys:
            size = sizes.get(key)
            if size is None or key in chosen:
                continue
            if max_bytes is not None and total + size > max_bytes:
                return list(chosen)[::-1]
            chosen[key] = None
            total += size
    return list(chosen)[::-1]


def prefix_pattern(prefix: str) -> str:
    """A ``LIKE … ESCAPE '\\'`` pattern matching text that starts with ``prefix``."""
    return text_inside(prefix).removeprefix("%")


async def _about_user(
    db: Session | Database, user_id: str, channel: str
) -> tuple[list[str], list[str]]:
    about = (channel, text_inside(user_id)) * 2
    reply_to = db.dialect.json_text("body", "reply_to")
    sql = SQL_ABOUT_USER.format(reply_to=reply_to)
    ids = [str(row["id"]) for row in await db.fetch_all(sql, about)]
    shown = db.dialect.json_elements("playground_messages", "image_keys")
    images_sql = SQL_IMAGES_ONLY_OF.format(shown=shown, reply_to=reply_to)
    images = await db.fetch_all(images_sql, about * 2)
    return ids, [str(row["key"]) for row in images]
