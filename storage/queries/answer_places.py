"""Chat answers being written, counted per user over every process on the database.

Each answer holds one row of ``write_slots`` (``key`` the user's, hashed: the table names no
user) while it is written, its ``until`` a lease its writer renews
(:meth:`AnswerPlaces.answer_goes_on`); the end of the answer deletes it
(:meth:`AnswerPlaces.answer_ended`), and the row of a process that died stops counting when its
lease runs out. A start counts the user's rows still counting and inserts one only when fewer
than the most allowed are, in one transaction that holds the user's key (PostgreSQL: a
transaction advisory lock; SQLite: the write lock every transaction takes at its start), so two
processes cannot both take the last place.
"""

from __future__ import annotations

import hashlib
import itertools
import secrets
from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.chat import AnswerPlace
from storage.sql.session import Database, Session, Values

LEASE_SECONDS: Final = 120.0
"""How long an answer's place lasts without being renewed."""
SQL_EXPIRED: Final = "DELETE FROM write_slots WHERE key = ? AND until <= ?"
SQL_RUNNING: Final = "SELECT COUNT(*) AS n FROM write_slots WHERE key = ? AND until > ?"
SQL_TAKE: Final = "INSERT INTO write_slots (key, granted_at, until, slot) VALUES (?, ?, ?, ?)"
SQL_RENEW: Final = "UPDATE write_slots SET until = ? WHERE key = ? AND slot = ?"
SQL_END: Final = "DELETE FROM write_slots WHERE key = ? AND slot = ?"


def answers_key(platform: str, user_id: str) -> str:
    """The ``write_slots`` key of a user's answers (a hash: no user id is stored)."""
    digest = hashlib.sha256(f"{platform}\x1f{user_id}".encode()).hexdigest()[:32]
    return f"chat:answers:{digest}"


@dataclass
class AnswerPlaces:
    """The places of each user's chat answers being written, shared by the processes of one
    database (see the module docstring)."""

    db: Database
    clock: Clock

    def __post_init__(self) -> None:
        self._slots = itertools.count(secrets.randbits(31) << 32)

    async def answer_starts(
        self, platform: str, user_id: str, most: int, *, lease: float = LEASE_SECONDS
    ) -> AnswerPlace:
        """Take a place for one more answer of the user when fewer than ``most`` are being
        written (its slot, for :meth:`answer_goes_on` and :meth:`answer_ended`), else none;
        either way, how many were."""
        key = answers_key(platform, user_id)
        lock = self.db.dialect.transaction_lock
        slot = next(self._slots)

        async def work(tx: Session) -> AnswerPlace:
            now = self.clock()
            statements: list[tuple[str, Values]] = []
            if lock is not None:
                statements.append((lock, (f"genbot.{key}",)))
            statements += [(SQL_EXPIRED, (key, now)), (SQL_RUNNING, (key, now))]
            found = await tx.fetch_each(statements)
            running = int(found[-1][0]["n"])
            if running >= most:
                return AnswerPlace(None, running)
            await tx.execute(SQL_TAKE, (key, now, now + lease, slot))
            return AnswerPlace(slot, running)

        return await self.db.transaction(work)

    async def answer_goes_on(
        self, platform: str, user_id: str, slot: int, *, lease: float = LEASE_SECONDS
    ) -> None:
        """Renew the place in ``slot`` for ``lease`` seconds from now."""
        key = answers_key(platform, user_id)
        await self.db.execute(SQL_RENEW, (self.clock() + lease, key, slot), repeatable=True)

    async def answer_ended(self, platform: str, user_id: str, slot: int) -> None:
        """Free the place in ``slot``; harmless twice."""
        key = answers_key(platform, user_id)
        await self.db.execute(SQL_END, (key, slot), repeatable=True)
