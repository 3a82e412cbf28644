"""Feedback on chat answers: each user's 👍 or 👎 on an answer, counted per model."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from storage.queries.base import Clock
from storage.records.chat import FeedbackCount
from storage.sql.session import Database

SQL_RATE: Final = (
    "INSERT INTO chat_feedback (message_id, user_id, platform, workspace_id, model, rating, at)"
    " VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (message_id, user_id) DO UPDATE SET"
    " rating = excluded.rating, at = excluded.at WHERE chat_feedback.rating <> excluded.rating"
)
SQL_RATING: Final = "SELECT rating FROM chat_feedback WHERE message_id = ? AND user_id = ?"
SQL_COUNTS: Final = (
    "SELECT model, SUM(CASE WHEN rating > 0 THEN 1 ELSE 0 END) AS good,"
    " SUM(CASE WHEN rating < 0 THEN 1 ELSE 0 END) AS bad FROM chat_feedback"
    " WHERE platform = ? AND workspace_id = ? GROUP BY model ORDER BY model"
)


@dataclass
class AnswerFeedback:
    """Each user's rating of a chat answer (one per user and answer: the newest counts)."""

    db: Database
    clock: Clock

    async def rate(
        self,
        message_id: int,
        user_id: str,
        *,
        platform: str,
        workspace_id: str,
        model: str,
        good: bool,
    ) -> bool:
        """Record ``user_id``'s rating of the answer stored as turn ``message_id``; whether it
        changed anything (False: the user had rated the answer so already)."""
        rating = 1 if good else -1
        row = (message_id, user_id, platform, workspace_id, model, rating, self.clock())
        return await self.db.execute(SQL_RATE, row, repeatable=True) > 0

    async def rating(self, message_id: int, user_id: str) -> bool | None:
        """``user_id``'s rating of the answer stored as turn ``message_id``: True 👍, False 👎,
        None when they have not rated it."""
        row = await self.db.fetch_one(SQL_RATING, (message_id, user_id))
        return None if row is None else int(row["rating"]) > 0

    async def counts(self, platform: str, workspace_id: str) -> list[FeedbackCount]:
        """The ratings of the workspace's answers, per model."""
        rows = await self.db.fetch_all(SQL_COUNTS, (platform, workspace_id))
        return [FeedbackCount(row["model"], int(row["good"]), int(row["bad"])) for row in rows]
