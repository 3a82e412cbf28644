"""Per-user caps on chat answers.

A user may have at most ``[limits] max_concurrent_chats_per_user`` answers being written at
once and start at most ``chat_answers_per_minute_per_user`` in any minute (``0`` turns a cap
off; admins have none). A message, ``/chat`` or button press beyond a cap is refused at once —
the answer says which cap and when to try again — before anything is stored, posted or sent to
the provider. Each genbot process keeps its own count.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable, Iterator

from bot.kernel import RateWindow, User, UserError

MINUTE = 60.0
USERS_REMEMBERED = 4096


class ChatCaps:
    """The chat caps of one process (see the module docstring)."""

    def __init__(
        self,
        max_concurrent: int = 0,
        per_minute: int = 0,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_concurrent = max_concurrent
        self.per_minute = per_minute
        self._answering: Counter[str] = Counter()
        self._started = RateWindow(per_minute, MINUTE, max_keys=USERS_REMEMBERED, clock=clock)

    @contextlib.contextmanager
    def answering(self, platform: str, user: User) -> Iterator[None]:
        """Count one answer for ``user`` while the block runs; :class:`UserError` when a cap
        refuses it."""
        if user.is_admin:
            yield
            return
        key = f"{platform}\x1f{user.id}"
        running = self._answering[key]
        if self.max_concurrent and running >= self.max_concurrent:
            answers = "answer" if running == 1 else "answers"
            raise UserError(
                f"genbot is already writing {running} {answers} for you — at most "
                f"{self.max_concurrent} at once; send this again when one is done."
            )
        self._start(key)
        self._answering[key] += 1
        try:
            yield
        finally:
            self._answering[key] -= 1
            if self._answering[key] <= 0:
                del self._answering[key]

    def _start(self, key: str) -> None:
        """Count an answer started now, unless ``per_minute`` were already started in the
        last minute (then :class:`UserError` says when the next may start)."""
        if self.per_minute and not self._started.allow(key):
            wait = max(1, round(self._started.retry_after(key)))
            raise UserError(
                f"You asked for {self.per_minute} answers in the last minute — the most genbot "
                f"writes for one person; try again in {wait} s."
            )
