"""A conversation's branches: editing a user's turn answers again from that point, and what
followed it is set aside (``messages.branch``), kept, and can be made live again.

A *fork* is the turn first edited (``fork_turn``); each edit of a fork's branch's first turn
adds a branch to the same fork (branch 1 is the original). Making branch k live sets aside every
live turn from the fork on under the live branch's row, and brings back the turns set aside
under branch k's; branches nested in one keep their own state. The history
(:meth:`storage.ConversationStore.conversation_tail`) reads live turns only.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from storage.errors import StorageError
from storage.queries.base import Clock
from storage.queries.conversations import SQL_APPEND, SQL_TOUCH, _conversation_row, _link
from storage.records.chat import Fork
from storage.sql.session import Database, Session, to_json

SQL_TURN: Final = "SELECT role, branch FROM messages WHERE id = ? AND conversation_id = ?"
SQL_FORK_OF: Final = (
    "SELECT fork_turn FROM chat_branches WHERE conversation_id = ? AND first_turn = ?"
)
SQL_BRANCHES: Final = (
    "SELECT b.id, b.fork_turn, b.number, b.first_turn, m.branch AS set_aside"
    " FROM chat_branches AS b JOIN messages AS m ON m.id = b.first_turn"
    " WHERE b.conversation_id = ?{} ORDER BY b.fork_turn, b.number"
)
SQL_ADD_BRANCH: Final = (
    "INSERT INTO chat_branches (conversation_id, fork_turn, number, first_turn)"
    " VALUES (?, ?, ?, ?) RETURNING id"
)
SQL_SET_ASIDE: Final = (
    "UPDATE messages SET branch = ? WHERE conversation_id = ? AND id >= ? AND branch IS NULL"
)
SQL_BRING_BACK: Final = "UPDATE messages SET branch = NULL WHERE branch = ?"
SQL_SHOWN_AFTER: Final = (
    "SELECT COUNT(*) AS n FROM messages AS m JOIN chat_branches AS b ON m.branch = b.id"
    " WHERE b.conversation_id = ? AND b.first_turn = ? AND m.id > b.first_turn AND (m.role = 'user'"
    " OR (m.role = 'assistant' AND m.function_call IS NULL AND m.name IS NULL))"
)


@dataclass
class ConversationBranches:
    """Editing a turn (a new branch from it), the forks of a conversation, and switching the
    live branch (see the module docstring)."""

    db: Database
    clock: Clock

    async def edit(
        self,
        conversation_id: int,
        turn_id: int,
        content: str,
        *,
        parts: Sequence[dict[str, Any]] | None = None,
        token_count: int = 0,
        platform_message_ids: Sequence[str] = (),
        channel_id: str | None = None,
        author: str | None = None,
    ) -> int:
        """Branch at live user turn ``turn_id``: what follows it from its fork on is set aside,
        and ``content`` is stored as the new branch's first turn, written by ``author``
        (``platform_message_ids`` are linked to it); returns its id. :class:`StorageError` when
        ``turn_id`` is not a live user turn of the conversation."""
        now = self.clock()
        stored_parts = None if parts is None else to_json(list(parts))

        async def work(tx: Session) -> int:
            conversation = await _conversation_row(tx, conversation_id)
            turn = await tx.fetch_one(SQL_TURN, (turn_id, conversation_id))
            if turn is None or turn["role"] != "user" or turn["branch"] is not None:
                raise StorageError(f"turn {turn_id} is not a live message of the conversation")
            fork = await tx.fetch_one(SQL_FORK_OF, (conversation_id, turn_id))
            fork_turn = turn_id if fork is None else int(fork["fork_turn"])
            rows = await tx.fetch_all(SQL_BRANCHES.format(" AND b.fork_turn = ?"),
                                      (conversation_id, fork_turn))  # fmt: skip
            if not rows:
                added = await tx.fetch_one(SQL_ADD_BRANCH, (conversation_id, fork_turn, 1, turn_id))
                assert added is not None
                live_id, numbers = int(added["id"]), 1
            else:
                live_id = next(int(r["id"]) for r in rows if r["first_turn"] == turn_id)
                numbers = max(int(r["number"]) for r in rows)
            await tx.execute(SQL_SET_ASIDE, (live_id, conversation_id, fork_turn))
            values = (conversation_id, "user", content, stored_parts, None, None, token_count,
                      now, None, None, author)  # fmt: skip
            appended = await tx.fetch_one(SQL_APPEND, values)
            assert appended is not None
            new_turn = int(appended["id"])
            await tx.execute(SQL_ADD_BRANCH, (conversation_id, fork_turn, numbers + 1, new_turn))
            await _link(tx, conversation, platform_message_ids, new_turn, channel_id)
            await tx.execute(SQL_TOUCH, (now, conversation_id))
            return new_turn

        return await self.db.transaction(work)

    async def forks(self, conversation_id: int) -> list[Fork]:
        """The conversation's forks, oldest first."""
        rows = await self.db.fetch_all(SQL_BRANCHES.format(""), (conversation_id,))
        forks: dict[int, list[dict[str, Any]]] = {}
        for row in rows:
            forks.setdefault(int(row["fork_turn"]), []).append(row)
        return [
            Fork(
                fork_turn,
                tuple(int(r["first_turn"]) for r in branches),
                next((int(r["number"]) for r in branches if r["set_aside"] is None), 0),
            )
            for fork_turn, branches in forks.items()
        ]

    async def shown_after(self, conversation_id: int, first_turn: int) -> int:
        """How many messages and answers (turns shown, not function calls or alternatives)
        after ``first_turn`` are set aside with the branch it begins."""
        row = await self.db.fetch_one(SQL_SHOWN_AFTER, (conversation_id, first_turn))
        return 0 if row is None else int(row["n"])

    async def switch(self, conversation_id: int, fork_turn: int, number: int) -> bool:
        """Make branch ``number`` of the fork at ``fork_turn`` live; False when the fork is not
        on the live path (none of its branches is live) or has no such branch."""

        async def work(tx: Session) -> bool:
            rows = await tx.fetch_all(SQL_BRANCHES.format(" AND b.fork_turn = ?"),
                                      (conversation_id, fork_turn))  # fmt: skip
            live = next((r for r in rows if r["set_aside"] is None), None)
            wanted = next((r for r in rows if r["number"] == number), None)
            if live is None or wanted is None:
                return False
            if live is wanted:
                return True
            await tx.execute(SQL_SET_ASIDE, (live["id"], conversation_id, fork_turn))
            await tx.execute(SQL_BRING_BACK, (wanted["id"],))
            await tx.execute(SQL_TOUCH, (self.clock(), conversation_id))
            return True

        return await self.db.transaction(work)
