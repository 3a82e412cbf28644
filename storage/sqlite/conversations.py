"""Conversations and their messages (the chat engine's history)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any, Final

from sqlite_utils import Database

from storage.errors import StorageError
from storage.records import (
    UNSET,
    ChatMessage,
    ChatRole,
    Conversation,
    ConversationKey,
    ConversationKind,
    _Unset,
)
from storage.rows import Row, conversation_from_row, messages_with_links, to_json
from storage.rules import check_conversation_kind, check_turn
from storage.sqlite.base import StoreBase
from storage.sqlite.sql import fetch_all, fetch_one, write_transaction

SQL_CONVERSATION_BY_KEY: Final = (
    "SELECT * FROM conversations"
    " WHERE platform = ? AND workspace_id = ? AND channel_id = ? AND thread_key = ?"
)
SQL_CONVERSATION_BY_ID: Final = "SELECT * FROM conversations WHERE id = ?"
SQL_CONVERSATION_BY_MESSAGE: Final = (
    "SELECT c.* FROM conversation_links AS l JOIN conversations AS c ON c.id = l.conversation_id"
    " WHERE l.platform = ? AND l.channel_id = ? AND l.message_id = ?"
)
SQL_NEWEST_USER_TURN: Final = (
    "SELECT id FROM messages WHERE conversation_id = ? AND role = 'user' ORDER BY id DESC LIMIT 1"
)
SQL_TAIL_COUNTS: Final = (
    "SELECT id, token_count FROM messages WHERE conversation_id = ? ORDER BY id DESC"
)
SQL_HISTORY_FROM: Final = "SELECT * FROM messages WHERE conversation_id = ? AND id >= ? ORDER BY id"
SQL_LINKS_FROM: Final = (
    "SELECT chat_message_id, message_id FROM conversation_links"
    " WHERE chat_message_id >= ? AND conversation_id = ? ORDER BY id"
)
SQL_LINK: Final = (
    "INSERT INTO conversation_links (platform, channel_id, message_id, conversation_id,"
    " chat_message_id) VALUES (?, ?, ?, ?, ?)"
    " ON CONFLICT (platform, channel_id, message_id) DO UPDATE SET"
    " conversation_id = excluded.conversation_id, chat_message_id = excluded.chat_message_id"
)


def _require_conversation(db: Database, conversation_id: int) -> Row:
    row = fetch_one(db, SQL_CONVERSATION_BY_ID, (conversation_id,))
    if row is None:
        raise StorageError(f"no conversation {conversation_id}")
    return row


def _link(
    db: Database,
    conversation: Row,
    message_ids: Iterable[str],
    chat_message_id: int | None,
    channel_id: str | None,
) -> None:
    channel = conversation["channel_id"] if channel_id is None else channel_id
    db.conn.executemany(
        SQL_LINK,
        [
            (conversation["platform"], channel, message_id, conversation["id"], chat_message_id)
            for message_id in message_ids
        ],
    )


class SqliteConversations(StoreBase):
    """Conversation methods of :class:`storage.sqlite.SqliteStore`."""

    async def get_or_create_conversation(
        self, key: ConversationKey, *, kind: ConversationKind, created_by: str | None = None
    ) -> tuple[Conversation, bool]:
        """The conversation for ``key``, created (with ``kind``, ``created_by``) when missing.
        Returns ``(conversation, created)``; ``kind`` and ``created_by`` of an existing one are
        kept."""
        check_conversation_kind(kind)
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)

        def work(db: Database) -> tuple[Conversation, bool]:
            with write_transaction(db):
                now = self._now()
                cursor = db.conn.execute(
                    "INSERT INTO conversations (platform, workspace_id, channel_id, thread_key,"
                    " kind, created_by, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)"
                    " ON CONFLICT (platform, workspace_id, channel_id, thread_key) DO NOTHING",
                    (*args, kind, created_by, now, now),
                )
                row = fetch_one(db, SQL_CONVERSATION_BY_KEY, args)
            assert row is not None
            return conversation_from_row(row), cursor.rowcount == 1

        return await self._call(work)

    async def find_conversation(self, key: ConversationKey) -> Conversation | None:
        """The conversation for ``key``, or None (never creates)."""
        args = (key.platform, key.workspace_id, key.channel_id, key.thread_key)
        row = await self._call(lambda db: fetch_one(db, SQL_CONVERSATION_BY_KEY, args))
        return None if row is None else conversation_from_row(row)

    async def get_conversation(self, conversation_id: int) -> Conversation | None:
        """The conversation with this id, or None."""
        row = await self._call(lambda db: fetch_one(db, SQL_CONVERSATION_BY_ID, (conversation_id,)))
        return None if row is None else conversation_from_row(row)

    async def find_conversation_by_message(
        self, platform: str, channel_id: str, message_id: str
    ) -> Conversation | None:
        """The conversation a platform message was linked to (a user's or the bot's), or None.
        This is how a reply to any message of a reply chain continues its conversation."""
        args = (platform, channel_id, message_id)
        row = await self._call(lambda db: fetch_one(db, SQL_CONVERSATION_BY_MESSAGE, args))
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
        """Append a turn; returns its id. ``platform_message_ids`` are linked to it (in the
        conversation's channel unless ``channel_id`` is given)."""
        check_turn(role, name)

        def work(db: Database) -> int:
            with write_transaction(db):
                conversation = _require_conversation(db, conversation_id)
                now = self._now()
                cursor = db.conn.execute(
                    "INSERT INTO messages (conversation_id, role, content, parts, function_call,"
                    " name, token_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        conversation_id,
                        role,
                        content,
                        None if parts is None else to_json(list(parts)),
                        None if function_call is None else to_json(function_call),
                        name,
                        token_count,
                        now,
                    ),
                )
                message_id = cursor.lastrowid
                assert message_id is not None
                _link(db, conversation, platform_message_ids, message_id, channel_id)
                db.conn.execute(
                    "UPDATE conversations SET updated_at = ? WHERE id = ?", (now, conversation_id)
                )
            return message_id

        return await self._call(work)

    async def link_conversation_messages(
        self,
        conversation_id: int,
        platform_message_ids: Sequence[str],
        *,
        chat_message_id: int | None = None,
        channel_id: str | None = None,
    ) -> None:
        """Link more platform messages to a conversation (optionally to one of its turns, e.g.
        the continuation messages of a split answer, or a user message that started a chain).
        Re-linking an already linked platform message moves it."""

        def work(db: Database) -> None:
            with write_transaction(db):
                conversation = _require_conversation(db, conversation_id)
                if chat_message_id is not None:
                    owner = fetch_one(
                        db, "SELECT conversation_id FROM messages WHERE id = ?", (chat_message_id,)
                    )
                    if owner is None or owner["conversation_id"] != conversation_id:
                        raise StorageError(
                            f"message {chat_message_id} is not in conversation {conversation_id}"
                        )
                _link(db, conversation, platform_message_ids, chat_message_id, channel_id)

        await self._call(work)

    async def conversation_tail(
        self, conversation_id: int, *, max_tokens: int
    ) -> list[ChatMessage]:
        """The newest turns, oldest first, whose stored ``token_count`` values add up to at
        most ``max_tokens``. Every turn from the newest user turn on is included whatever its
        count (without a user turn, at least the newest turn). Older turns' counts are read
        newest first only until the budget is spent, so the cost follows what fits, not the
        conversation's length. A count of 0 (unknown) costs nothing here: callers count such
        turns themselves."""

        def work(db: Database) -> list[ChatMessage]:
            newest_user = fetch_one(db, SQL_NEWEST_USER_TURN, (conversation_id,))
            required_from = newest_user["id"] if newest_user is not None else None
            first_id: int | None = None
            used = 0
            cursor = db.conn.execute(SQL_TAIL_COUNTS, (conversation_id,))
            try:
                for message_id, token_count in cursor:
                    required = first_id is None or (
                        required_from is not None and message_id >= required_from
                    )
                    if not required and used + token_count > max_tokens:
                        break
                    used += token_count
                    first_id = message_id
            finally:
                cursor.close()
            if first_id is None:
                return []
            rows = fetch_all(db, SQL_HISTORY_FROM, (conversation_id, first_id))
            links = fetch_all(db, SQL_LINKS_FROM, (first_id, conversation_id))
            return messages_with_links(rows, links)

        return await self._call(work)

    async def delete_message(self, message_id: int) -> bool:
        """Delete one turn (e.g. an answer that was never posted). Platform messages linked to
        it stay linked to its conversation. False if there was no such turn."""

        def work(db: Database) -> bool:
            with write_transaction(db):
                cursor = db.conn.execute("DELETE FROM messages WHERE id = ?", (message_id,))
            return cursor.rowcount == 1

        return await self._call(work)

    async def update_message(
        self,
        message_id: int,
        *,
        content: str | _Unset | None = UNSET,
        function_call: dict[str, Any] | _Unset | None = UNSET,
        token_count: int | _Unset = UNSET,
    ) -> bool:
        """Change a stored turn (e.g. the final text of a streamed answer). False if unknown."""
        changes: dict[str, Any] = {}
        if not isinstance(content, _Unset):
            changes["content"] = content
        if not isinstance(function_call, _Unset):
            changes["function_call"] = None if function_call is None else to_json(function_call)
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
        """Set (or clear with None) the conversation's own model / system prompt. False if
        the conversation does not exist."""
        changes: dict[str, Any] = {}
        if not isinstance(model, _Unset):
            changes["model"] = model
        if not isinstance(system_prompt, _Unset):
            changes["system_prompt"] = system_prompt
        if changes:
            changes["updated_at"] = self._now()
        return await self._update("conversations", conversation_id, changes)

    async def _update(self, table: str, row_id: int, changes: dict[str, Any]) -> bool:
        def work(db: Database) -> bool:
            with write_transaction(db):
                if not changes:
                    exists = db.conn.execute(f"SELECT 1 FROM {table} WHERE id = ?", (row_id,))
                    return exists.fetchone() is not None
                assignments = ", ".join(f"{column} = ?" for column in changes)
                cursor = db.conn.execute(
                    f"UPDATE {table} SET {assignments} WHERE id = ?", (*changes.values(), row_id)
                )
                return cursor.rowcount == 1

        return await self._call(work)
