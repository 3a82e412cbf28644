"""Conversations, their turns and the platform messages linked to them (the chat engine's
history), and one turn of a conversation at a time across processes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final

from storage.errors import StorageError, check_word
from storage.queries.base import Clock
from storage.records.chat import (
    AnswerState,
    ChatMessage,
    ChatRole,
    Conversation,
    ConversationKey,
    ConversationKind,
)
from storage.records.settings import UNSET, _Unset
from storage.sql.session import Database, Row, Session, from_json, record, to_json

LOCK_WAIT_SECONDS = 120.0
"""How long a turn waits for its conversation before giving up."""
TAIL_PAGE: Final = 64
"""Turns whose token counts :meth:`ConversationStore.conversation_tail` reads at a time."""
SQL_CREATE_CONVERSATION: Final = (
    "INSERT INTO conversations (platform, workspace_id, channel_id, thread_key, kind,"
    " created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
    " ON CONFLICT (platform, workspace_id, channel_id, thread_key) DO NOTHING RETURNING *"
)
SQL_CONVERSATION_BY_KEY: Final = (
    "SELECT * FROM conversations"
    " WHERE platform = ? AND workspace_id = ? AND channel_id = ? AND thread_key = ?"
)
SQL_CONVERSATION_BY_ID: Final = "SELECT * FROM conversations WHERE id = ?"
SQL_CONVERSATION_BY_MESSAGE: Final = (
    "SELECT c.* FROM conversation_links AS l JOIN conversations AS c ON c.id = l.conversation_id"
    " WHERE l.platform = ? AND l.channel_id = ? AND l.message_id = ?"
)
SQL_APPEND: Final = (
    "INSERT INTO messages (conversation_id, role, content, parts, function_call, name,"
    " token_count, created_at, model, asked_by, author)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
    " RETURNING id"
)
SQL_TOUCH: Final = "UPDATE conversations SET updated_at = ? WHERE id = ?"
SQL_STATE: Final = "UPDATE messages SET state = ? WHERE id = ?"
SQL_LINK: Final = (
    "INSERT INTO conversation_links (platform, channel_id, message_id, conversation_id,"
    " chat_message_id) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (platform, channel_id, message_id) DO UPDATE SET"
    " conversation_id = excluded.conversation_id, chat_message_id = excluded.chat_message_id"
)
SQL_TURN_OWNER: Final = "SELECT conversation_id FROM messages WHERE id = ?"
SQL_TURN_OF_MESSAGE: Final = (
    "SELECT chat_message_id FROM conversation_links"
    " WHERE platform = ? AND channel_id = ? AND message_id = ?"
)
SQL_NEWEST_USER_TURN: Final = (
    "SELECT MAX(id) AS id FROM messages WHERE conversation_id = ? AND role = 'user'"
    " AND branch IS NULL"
)
SQL_TAIL_PAGE: Final = (
    "SELECT id, token_count FROM messages WHERE conversation_id = ? AND id < ?"
    " AND branch IS NULL ORDER BY id DESC LIMIT ?"
)
SQL_HISTORY_FROM: Final = (
    "SELECT * FROM messages WHERE conversation_id = ? AND id >= ? AND branch IS NULL ORDER BY id"
)
SQL_EVERY_BRANCH_FROM: Final = (
    "SELECT * FROM messages WHERE conversation_id = ? AND id >= ? ORDER BY id"
)
SQL_TURN: Final = "SELECT * FROM messages WHERE id = ? AND conversation_id = ?"
SQL_STREAMING: Final = (
    "SELECT id, conversation_id FROM messages WHERE state = 'streaming' ORDER BY id LIMIT ?"
)
"""Answers being streamed, through ``messages_streaming`` (its predicate spelled out)."""
SQL_TURN_LINKS: Final = (
    "SELECT chat_message_id, message_id FROM conversation_links WHERE chat_message_id = ?"
    " ORDER BY id"
)
SQL_LINKS_FROM: Final = (
    "SELECT chat_message_id, message_id FROM conversation_links"
    " WHERE conversation_id = ? AND chat_message_id >= ? ORDER BY id"
)
SQL_FROM_ANSWER_BEFORE: Final = (
    "SELECT * FROM messages WHERE conversation_id = ? AND id >= (SELECT MAX(id)"
    " FROM messages WHERE conversation_id = ? AND id < ? AND role = 'assistant'"
    " AND function_call IS NULL AND name IS NULL) ORDER BY id LIMIT ?"
)
_NEWEST: Final = 2**63 - 1


@dataclass
class ConversationStore:
    """Conversations, their turns and the platform messages linked to them."""

    db: Database
    clock: Clock

    async def get_or_create_conversation(
        self, key: ConversationKey, *, kind: ConversationKind, created_by: str | None = None
    ) -> tuple[Conversation, bool]:
        """The conversation for ``key``, created when missing: ``(conversation, created)``."""
        check_word(kind, ConversationKind, "conversation kind")
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)
        now = self.clock()
        created = await self.db.fetch_one(
            SQL_CREATE_CONVERSATION, (*args, kind, created_by, now, now), repeatable=False
        )
        if created is not None:
            return record(Conversation, created), True
        row = await self.db.fetch_one(SQL_CONVERSATION_BY_KEY, args)
        if row is None:
            raise StorageError("the conversation vanished while it was being created")
        return record(Conversation, row), False

    async def find_conversation(self, key: ConversationKey) -> Conversation | None:
        """The conversation for ``key``, or None (never creates)."""
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)
        row = await self.db.fetch_one(SQL_CONVERSATION_BY_KEY, args)
        return None if row is None else record(Conversation, row)

    async def get_conversation(self, conversation_id: int) -> Conversation | None:
        """The conversation with this id, or None."""
        row = await self.db.fetch_one(SQL_CONVERSATION_BY_ID, (conversation_id,))
        return None if row is None else record(Conversation, row)

    async def find_conversation_by_message(
        self, platform: str, channel_id: str, message_id: str
    ) -> Conversation | None:
        """The conversation a platform message was linked to, or None."""
        row = await self.db.fetch_one(
            SQL_CONVERSATION_BY_MESSAGE, (platform, channel_id, message_id)
        )
        return None if row is None else record(Conversation, row)

    async def append_message(
        self,
        conversation_id: int,
        role: ChatRole,
        content: str | None = None,
        *,
        parts: Sequence[dict[str, Any]] | None = None,
        function_call: dict[str, Any] | None = None,
        name: str | None = None,
        token_count: int = 0,
        platform_message_ids: Sequence[str] = (),
        channel_id: str | None = None,
        model: str | None = None,
        asked_by: str | None = None,
        author: str | None = None,
        state: AnswerState | None = None,
    ) -> int:
        """Append a turn and link ``platform_message_ids`` to it; returns the turn's id. An
        answer records its ``model`` and the user it is for (``asked_by``), a user's turn the
        user who wrote it (``author``); ``state`` as :meth:`update_message` sets it."""
        check_turn(role, name)
        if state is not None:
            check_word(state, AnswerState, "answer state")
        now = self.clock()
        turn = (
            conversation_id, role, content, None if parts is None else to_json(list(parts)),
            None if function_call is None else to_json(function_call), name, token_count, now,
            model, asked_by, author,
        )  # fmt: skip

        async def work(tx: Session) -> int:
            conversation = await _conversation_row(tx, conversation_id)
            appended = await tx.fetch_one(SQL_APPEND, turn)
            assert appended is not None
            turn_id = int(appended["id"])
            if state is not None:
                await tx.execute(SQL_STATE, (state, turn_id))
            await _link(tx, conversation, platform_message_ids, turn_id, channel_id)
            await tx.execute(SQL_TOUCH, (now, conversation_id))
            return turn_id

        return await self.db.transaction(work)

    async def link_conversation_messages(
        self,
        conversation_id: int,
        platform_message_ids: Sequence[str],
        *,
        chat_message_id: int | None = None,
        channel_id: str | None = None,
    ) -> None:
        """Link more platform messages to a conversation (optionally to one of its turns)."""

        async def work(tx: Session) -> None:
            conversation = await _conversation_row(tx, conversation_id)
            if chat_message_id is not None:
                owner = await tx.fetch_one(SQL_TURN_OWNER, (chat_message_id,))
                if owner is None or owner["conversation_id"] != conversation_id:
                    raise StorageError(
                        f"message {chat_message_id} is not in conversation {conversation_id}"
                    )
            await _link(tx, conversation, platform_message_ids, chat_message_id, channel_id)

        await self.db.transaction(work)

    async def conversation_tail(
        self, conversation_id: int, *, max_tokens: int, set_aside: bool = False
    ) -> list[ChatMessage]:
        """The newest turns, oldest first, whose ``token_count`` values fit ``max_tokens``;
        every turn from the newest user turn on is included whatever its count. Older turns'
        counts are read newest first, a page at a time, only until the budget is spent: the
        cost follows what fits, not the conversation's length. With ``set_aside``, the turns
        of set-aside branches stored among them come too (their ``branch`` set), in the same
        read."""
        newest_user = await self.db.fetch_one(SQL_NEWEST_USER_TURN, (conversation_id,))
        required_from = None if newest_user is None else newest_user["id"]
        first_id: int | None = None
        used = 0
        below = _NEWEST
        while True:
            page = await self.db.fetch_all(SQL_TAIL_PAGE, (conversation_id, below, TAIL_PAGE))
            for row in page:
                required = first_id is None or (
                    required_from is not None and row["id"] >= required_from
                )
                if not required and used + row["token_count"] > max_tokens:
                    break
                used += row["token_count"]
                first_id = row["id"]
            else:
                if len(page) == TAIL_PAGE:
                    below = page[-1]["id"]
                    continue
            break
        if first_id is None:
            return []
        query = SQL_EVERY_BRANCH_FROM if set_aside else SQL_HISTORY_FROM
        rows = await self.db.fetch_all(query, (conversation_id, first_id))
        links = await self.db.fetch_all(SQL_LINKS_FROM, (conversation_id, first_id))
        return messages_with_links(rows, links)

    async def answer_before(
        self, conversation_id: int, below: int, *, turns: int = 32
    ) -> list[ChatMessage]:
        """The newest answer stored below turn ``below`` (on any branch; not a function call or
        an alternative) and the turns stored after it, ``turns`` in all at most, oldest first,
        with their platform messages; [] when no answer came before."""
        values = (conversation_id, conversation_id, below, turns)
        rows = await self.db.fetch_all(SQL_FROM_ANSWER_BEFORE, values)
        if not rows:
            return []
        links = await self.db.fetch_all(SQL_LINKS_FROM, (conversation_id, rows[0]["id"]))
        return messages_with_links(rows, links)

    async def turn_of_message(self, platform: str, channel_id: str, message_id: str) -> int | None:
        """The turn a platform message was linked to, or None."""
        row = await self.db.fetch_one(SQL_TURN_OF_MESSAGE, (platform, channel_id, message_id))
        return (
            None if row is None or row["chat_message_id"] is None else int(row["chat_message_id"])
        )

    async def get_turn(self, conversation_id: int, message_id: int) -> ChatMessage | None:
        """Turn ``message_id`` of ``conversation_id`` with its platform messages, or None."""
        row = await self.db.fetch_one(SQL_TURN, (message_id, conversation_id))
        if row is None:
            return None
        links = await self.db.fetch_all(SQL_TURN_LINKS, (message_id,))
        return messages_with_links([row], links)[0]

    async def streaming_answers(self, limit: int) -> list[tuple[int, int]]:
        """The oldest ``limit`` turns stored as ``streaming`` (answers being written, and user
        turns whose answer has not begun), as (conversation, turn)."""
        rows = await self.db.fetch_all(SQL_STREAMING, (limit,))
        return [(int(row["conversation_id"]), int(row["id"])) for row in rows]

    async def delete_message(self, message_id: int) -> bool:
        """Delete one turn; False if there was none."""
        return await self.db.execute("DELETE FROM messages WHERE id = ?", (message_id,)) == 1

    async def update_message(
        self,
        message_id: int,
        *,
        content: str | _Unset | None = UNSET,
        function_call: dict[str, Any] | _Unset | None = UNSET,
        token_count: int | _Unset = UNSET,
        state: AnswerState | _Unset | None = UNSET,
    ) -> bool:
        """Change a stored turn; False if unknown."""
        if isinstance(state, str):
            check_word(state, AnswerState, "answer state")
        call = to_json(function_call) if isinstance(function_call, dict) else function_call
        changes = {
            "content": content, "function_call": call, "token_count": token_count, "state": state
        }  # fmt: skip
        return await _update(self.db, "messages", message_id, changes)

    async def update_conversation(
        self,
        conversation_id: int,
        *,
        model: str | _Unset | None = UNSET,
        system_prompt: str | _Unset | None = UNSET,
    ) -> bool:
        """Set (or clear with None) the conversation's own model / system prompt."""
        changes = {"model": model, "system_prompt": system_prompt}
        return await _update(self.db, "conversations", conversation_id, changes, self.clock())


@dataclass
class ConversationLocks:
    """One turn of a conversation at a time, across processes."""

    db: Database

    @property
    def shared(self) -> bool:
        """Whether other processes take these locks too (PostgreSQL); on SQLite one process
        owns the database and the lock is nothing to take."""
        return self.db.dialect.shared

    @asynccontextmanager
    async def conversation_lock(
        self, conversation_id: int, *, wait: float | None = None
    ) -> AsyncIterator[None]:
        """Held while a turn of the conversation is stored and answered: processes that take
        it for the same conversation get it one after the other, in the order they asked
        (PostgreSQL advisory lock; released if the holder's process dies). Raises
        :class:`StorageError` when it cannot be had in time.

        The lock is held on a connection of its own (PostgreSQL). When that connection is
        lost in the middle of a turn (a server restart, a terminated backend), the server drops
        the lock with it: the holder logs it at once and takes the lock again as soon as the
        server answers (:mod:`storage.postgres.kept_lock`), so the others see the turn under way
        again within moments (:mod:`bot.features.chat.interrupted` allows for them). The turn
        itself goes on meanwhile (its answer is already streaming) and is saved; a turn of the
        same conversation reaching another process in that moment may start before it ends,
        answering from the history as it was — the holder then queues behind it to hold the
        lock again. Both answers are kept in the order they were saved. Aborting the turn would
        throw away an answer that is almost always fine; making it wait for the lock would stall
        a streaming answer behind the next turn. Within one process, turns of one conversation
        are serialized anyway (:mod:`adapters.runner`). ``wait`` bounds the wait for it
        (``LOCK_WAIT_SECONDS`` as it is when asked, unless given)."""
        key = f"genbot.conversation.{conversation_id}"
        bound = LOCK_WAIT_SECONDS if wait is None else wait
        async with self.db.lock(key, wait=bound, name="a conversation lock"):
            yield


STOP_CHANNEL: Final = "genbot_chat_stop"
"""The ``LISTEN``/``NOTIFY`` channel on which a process asks the others to stop an answer."""


@dataclass
class AnswerStops:
    """Stopping an answer that another process streams: a request names the answer's turn,
    and every process hears it (the one streaming it stops it)."""

    db: Database

    @property
    def shared(self) -> bool:
        """Whether other processes use this database (PostgreSQL)."""
        return self.db.dialect.shared

    async def ask(self, turn_id: int) -> bool:
        """Ask the other processes to stop the answer of ``turn_id``; False where the database
        has one process (nobody else could be streaming it)."""
        notify = self.db.dialect.notify
        if notify is None:
            return False
        await self.db.execute(notify, (STOP_CHANNEL, str(turn_id)), repeatable=True)
        return True

    async def requests(self) -> AsyncIterator[int | None]:
        """None once listening has started, then the turn of each answer some process was
        asked to stop; :class:`StorageError` when the connection is lost."""
        async for notice in self.db.listen(STOP_CHANNEL):
            if notice is None:
                yield None
            elif notice.isdigit():
                yield int(notice)


async def _update(
    db: Database, table: str, row_id: int, changes: dict[str, Any], stamp: float | None = None
) -> bool:
    """Set the given ``changes`` (``UNSET`` left out) on one row; with ``stamp``, its
    ``updated_at`` too. False if there is no such row."""
    given = {name: value for name, value in changes.items() if value is not UNSET}
    if not given:
        found = await db.fetch_one(f"SELECT 1 AS found FROM {table} WHERE id = ?", (row_id,))
        return found is not None
    if stamp is not None:
        given["updated_at"] = stamp
    assignments = ", ".join(f"{column} = ?" for column in given)
    update = f"UPDATE {table} SET {assignments} WHERE id = ?"
    return await db.execute(update, (*given.values(), row_id)) == 1


async def _conversation_row(tx: Session, conversation_id: int) -> Row:
    row = await tx.fetch_one(SQL_CONVERSATION_BY_ID, (conversation_id,))
    if row is None:
        raise StorageError(f"no conversation {conversation_id}")
    return row


async def _link(
    tx: Session,
    conversation: Row,
    message_ids: Iterable[str],
    chat_message_id: int | None,
    channel_id: str | None,
) -> None:
    channel = conversation["channel_id"] if channel_id is None else channel_id
    rows = [
        (conversation["platform"], channel, message_id, conversation["id"], chat_message_id)
        for message_id in message_ids
    ]
    if rows:
        await tx.execute_many(SQL_LINK, rows)


def messages_with_links(rows: list[Row], links: list[Row]) -> list[ChatMessage]:
    """Turns in row order, each with the platform message ids linked to it (link order)."""
    platform_ids: dict[int, list[str]] = {}
    for link in links:
        platform_ids.setdefault(link["chat_message_id"], []).append(link["message_id"])
    return [_turn(row, tuple(platform_ids.get(row["id"], ()))) for row in rows]


def _turn(row: Row, platform_ids: tuple[str, ...]) -> ChatMessage:
    parts, call = from_json(row.pop("parts"), None), from_json(row.pop("function_call"), None)
    return ChatMessage(**row, parts=parts, function_call=call, platform_message_ids=platform_ids)


def check_turn(role: str, name: str | None) -> None:
    """A chat turn's role is known, and a function turn names its function."""
    check_word(role, ChatRole, "chat role")
    if role == "function" and not name:
        raise StorageError("a function message needs the function's name")
