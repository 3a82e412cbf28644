"""``[api] chat_requests_per_minute`` / ``_per_day`` over every genbot process on one database:
the chat client's pacer (:class:`bot.api.ratelimit.RequestPacer`) also counts each request in
the storage's shared write windows, so N processes on one key send what one would."""

from __future__ import annotations

from typing import Final

from bot.api.ratelimit import SharedPacing
from storage import WriteWindow, WriteWindows

CHAT_PER_MINUTE: Final = "provider:chat:minute"
CHAT_PER_DAY: Final = "provider:chat:day"


def shared_chat_pacing(budgets: WriteWindows) -> SharedPacing:
    """The chat pacer's count across processes, kept in ``budgets`` (on a database only one
    process uses, every request may go at once: the pacer's own count is the whole count)."""

    async def reserve(per_minute: int, minute: float, per_day: int, day: float) -> float:
        windows = [
            WriteWindow(key, capacity, seconds)
            for key, capacity, seconds in (
                (CHAT_PER_MINUTE, per_minute, minute),
                (CHAT_PER_DAY, per_day, day),
            )
            if capacity > 0
        ]
        return await budgets.reserve_writes(windows) if windows else 0.0

    return reserve
