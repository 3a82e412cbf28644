"""Conversations and their turns on PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from psycopg import sql
from psycopg.types.json import Jsonb

from storage.errors import StorageError
from storage.postgres.base import Connection, PostgresBase, Query
from storage.records import (
    UNSET,
    ChatMessage,
    ChatRole,
    Conversation,
    ConversationKey,
    ConversationKind,
    _Unset,
)
from storage.rows import Row, conversation_from_row, messages_with_links
from storage.rules import check_conversation_kind, check_turn

SQL_CREATE_CONVERSATION: Final[Query] = (
    "INSERT INTO conversations (platform, workspace_id, channel_id, thread_key, kind,"
    " created_by, created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (platform, workspace_id, channel_id, thread_key) DO NOTHING RETURNING *"
)
SQL_CONVERSATION_BY_KEY: Final[Query] = (
    "SELECT * FROM conversations"
    " WHERE platform = %s AND workspace_id = %s AND channel_id = %s AND thread_key = %s"
)
SQL_CONVERSATION_BY_ID: Final[Query] = "SELECT * FROM conversations WHERE id = %s"
SQL_CONVERSATION_BY_MESSAGE: Final[Query] = (
    "SELECT c.* FROM conversation_links AS l JOIN conversations AS c ON c.id = l.conversation_id"
    " WHERE l.platform = %s AND l.channel_id = %s AND l.message_id = %s"
)
SQL_APPEND: Final[Query] = (
    "INSERT INTO messages (conversation_id, role, content, parts, function_call, name,"
    " token_count, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s) RETURNING id"
)
SQL_TOUCH: Final[Query] = "UPDATE conversations SET updated_at = %s WHERE id = %s"
SQL_LINK: Final[Query] = (
    "INSERT INTO conversation_links (platform, channel_id, message_id, conversation_id,"
    " chat_message_id) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (platform, channel_id, message_id) DO UPDATE SET"
    " conversation_id = excluded.conversation_id, chat_message_id = excluded.chat_message_id"
)
SQL_NEWEST_USER_TURN: Final[Query] = (
    "SELECT MAX(id) AS id FROM messages WHERE conversation_id = %s AND role = 'user'"
)
SQL_TAIL_PAGE: Final[Query] = (
    "SELECT id, token_count FROM messages WHERE conversation_id = %s AND id < %s"
    " ORDER BY id DESC LIMIT %s"
)
SQL_HISTORY_FROM: Final[Query] = (
    "SELECT * FROM messages WHERE conversation_id = %s AND id >= %s ORDER BY id"
)
SQL_LINKS_FROM: Final[Query] = (
    "SELECT chat_message_id, message_id FROM conversation_links"
    " WHERE conversation_id = %s AND chat_message_id >= %s ORDER BY id"
)
TAIL_PAGE = 64
_NEWEST: Final = 2**63 - 1


async def _conversation_row(conn: Connection, conversation_id: int) -> Row:
    cursor = await conn.execute(SQL_CONVERSATION_BY_ID, (conversation_id,))
    row = await cursor.fetchone()
    if row is None:
        raise StorageError(f"no conversation {conversation_id}")
    return row


async def _link(
    conn: Connection,
    conversation: Row,
    message_ids: Sequence[str],
    chat_message_id: int | None,
    channel_id: str | None,
) -> None:
    channel = conversation["channel_id"] if channel_id is None else channel_id
    rows = [
        (conversation["platform"], channel, message_id, conversation["id"], chat_message_id)
        for message_id in message_ids
    ]
    if rows:
        async with conn.cursor() as cursor:
            await cursor.executemany(SQL_LINK, rows)


class PostgresConversations(PostgresBase):
    """Conversation methods of :class:`storage.postgres.PostgresStore`."""

    async def get_or_create_conversation(
        self, key: ConversationKey, *, kind: ConversationKind, created_by: str | None = None
    ) -> tuple[Conversation, bool]:
        """The conversation for ``key``, created when missing: ``(conversation, created)``."""
        check_conversation_kind(kind)
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)
        now = self._now()
        async with self._connection() as conn:
            cursor = await conn.execute(
                SQL_CREATE_CONVERSATION, (*args, kind, created_by, now, now)
            )
            created = await cursor.fetchone()
            if created is not None:
                return conversation_from_row(created), True
            cursor = await conn.execute(SQL_CONVERSATION_BY_KEY, args)
            row = await cursor.fetchone()
        if row is None:
            raise StorageError("the conversation vanished while it was being created")
        return conversation_from_row(row), False

    async def find_conversation(self, key: ConversationKey) -> Conversation | None:
        """The conversation for ``key``, or None (never creates)."""
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)
        row = await self._fetch_one(SQL_CONVERSATION_BY_KEY, args)
        return None if row is None else conversation_from_row(row)

    async def get_conversation(self, conversation_id: int) -> Conversation | None:
        """The conversation with this id, or None."""
        row = await self._fetch_one(SQL_CONVERSATION_BY_ID, (conversation_id,))
        return None if row is None else conversation_from_row(row)

    async def find_conversation_by_message(
        self, platform: str, channel_id: str, message_id: str
    ) -> Conversation | None:
        """The conversation a platform message was linked to, or None."""
        row = await self._fetch_one(SQL_CONVERSATION_BY_MESSAGE, (platform, channel_id, message_id))
        return None if row is None else conversation_from_row(row)

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
    ) -> int:
        """Append a turn and link ``platform_message_ids`` to it; returns the turn's id."""
        check_turn(role, name)
        now = self._now()
        values = (
            conversation_id,
            role,
            content,
            None if parts is None else Jsonb(list(parts)),
            None if function_call is None else Jsonb(function_call),
            name,
            token_count,
            now,
        )
        async with self._transaction() as conn:
            conversation = await _conversation_row(conn, conversation_id)
            cursor = await conn.execute(SQL_APPEND, values)
            row = await cursor.fetchone()
            assert row is not None
            turn_id = int(row["id"])
            await _link(conn, conversation, platform_message_ids, turn_id, channel_id)
            await conn.execute(SQL_TOUCH, (now, conversation_id))
        return turn_id

    async def link_conversation_messages(
        self,
        conversation_id: int,
        platform_message_ids: Sequence[str],
        *,
        chat_message_id: int | None = None,
        channel_id: str | None = None,
    ) -> None:
        """Link more platform messages to a conversation (optionally to one of its turns)."""
        async with self._transaction() as conn:
            conversation = await _conversation_row(conn, conversation_id)
            if chat_message_id is not None:
                cursor = await conn.execute(
                    "SELECT conversation_id FROM messages WHERE id = %s", (chat_message_id,)
                )
                owner = await cursor.fetchone()
                if owner is None or owner["conversation_id"] != conversation_id:
                    raise StorageError(
                        f"message {chat_message_id} is not in conversation {conversation_id}"
                    )
            await _link(conn, conversation, platform_message_ids, chat_message_id, channel_id)

    async def conversation_tail(
        self, conversation_id: int, *, max_tokens: int
    ) -> list[ChatMessage]:
        """The newest turns that fit ``max_tokens`` (see
        :meth:`storage.ConversationStore.conversation_tail`); counts are read a page at a
        time, newest first, only until the budget is spent."""
        async with self._connection() as conn:
            cursor = await conn.execute(SQL_NEWEST_USER_TURN, (conversation_id,))
            newest_user = await cursor.fetchone()
            required_from = None if newest_user is None else newest_user["id"]
            first_id: int | None = None
            used = 0
            below = _NEWEST
            while True:
                cursor = await conn.execute(SQL_TAIL_PAGE, (conversation_id, below, TAIL_PAGE))
                page = await cursor.fetchall()
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
            cursor = await conn.execute(SQL_HISTORY_FROM, (conversation_id, first_id))
            rows = await cursor.fetchall()
            cursor = await conn.execute(SQL_LINKS_FROM, (conversation_id, first_id))
            links = await cursor.fetchall()
        return messages_with_links(rows, links)

    async def delete_message(self, message_id: int) -> bool:
        """Delete one turn; its platform messages stay linked to the conversation."""
        sql: Query = "DELETE FROM messages WHERE id = %s"
        return await self._execute(sql, (message_id,), repeatable=False) == 1

    async def update_message(
        self,
        message_id: int,
        *,
        content: str | _Unset | None = UNSET,
        function_call: dict[str, Any] | _Unset | None = UNSET,
        token_count: int | _Unset = UNSET,
    ) -> bool:
        """Change a stored turn; False if unknown."""
        changes: dict[str, Any] = {}
        if not isinstance(content, _Unset):
            changes["content"] = content
        if not isinstance(function_call, _Unset):
            changes["function_call"] = None if function_call is None else Jsonb(function_call)
        if not isinstance(token_count, _Unset):
            changes["token_count"] = token_count
        return await self._update("messages", message_id, changes)

    async def update_conversation(
        self,
        conversation_id: int,
        *,
        model: str | _Unset | None = UNSET,
        system_prompt: str | _Unset | None = UNSET,
    ) -> bool:
        """Set (or clear with None) the conversation's own model / system prompt."""
        changes: dict[str, Any] = {}
        if not isinstance(model, _Unset):
            changes["model"] = model
        if not isinstance(system_prompt, _Unset):
            changes["system_prompt"] = system_prompt
        if changes:
            changes["updated_at"] = self._now()
        return await self._update("conversations", conversation_id, changes)

    async def _update(self, table: str, row_id: int, changes: dict[str, Any]) -> bool:
        if not changes:
            found = sql.SQL("SELECT 1 FROM {} WHERE id = %s").format(sql.Identifier(table))
            async with self._connection() as conn:
                cursor = await conn.execute(found, (row_id,))
                return await cursor.fetchone() is not None
        statement = sql.SQL("UPDATE {} SET {} WHERE id = %s").format(
            sql.Identifier(table),
            sql.SQL(", ").join(sql.SQL("{} = %s").format(sql.Identifier(c)) for c in changes),
        )
        async with self._connection() as conn:
            cursor = await conn.execute(statement, (*changes.values(), row_id))
            return cursor.rowcount == 1
