"""Per-user caps on chat answers, and what a user's tier allows them in chat.

A user may have at most ``[limits] max_concurrent_chats_per_user`` answers being written at
once and start at most ``chat_answers_per_minute_per_user`` in any minute (``0`` turns a cap
off; admins have none). A message, ``/chat`` or button press beyond a cap is refused at once —
the answer says which cap and when to try again — before anything is stored, posted or sent to
the provider. Each genbot process keeps its own count.

A user's tier (:class:`Tiers`: :class:`bot.features.jobs.admission.Tiers`, wired by
``genbot/compose.py``) adds a budget of chat tokens, read from the shared ledger (so it holds
across processes), and the chat models it may use: a user
whose tokens in the tier's window reached ``daily_chat_tokens`` gets no new answer until they
refill (the answers being written when it was reached still count, so it can be overshot by
them), and a model outside ``models`` is refused.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Iterator
from typing import Protocol

from bot.kernel import (
    RateWindow,
    TierSettings,
    User,
    UserError,
    _,
    format_number,
    model_not_in_tier,
    ngettext,
    refill_time,
)
from storage import Refill, Spent

MINUTE = 60.0
USERS_REMEMBERED = 4096


class Tiers(Protocol):
    """Which tier a user is in."""

    def tier_of(self, platform: str, user: User) -> TierSettings: ...


class ChatCaps:
    """The chat caps of one process (see the module docstring)."""

    def __init__(
        self,
        max_concurrent: int = 0,
        per_minute: int = 0,
        *,
        monotonic: Callable[[], float] = time.monotonic,
        tiers: Tiers | None = None,
        spent: Callable[[str, str, Refill], Awaitable[Spent]] | None = None,
    ) -> None:
        """``tiers`` and ``spent`` (the ledger's :meth:`storage.UsageLedger.spent`) add the
        tiers' chat budgets and models."""
        self.max_concurrent = max_concurrent
        self.per_minute = per_minute
        self.tiers = tiers
        self._spent = spent
        self._answering: Counter[str] = Counter()
        self._started = RateWindow(
            per_minute, MINUTE, max_keys=USERS_REMEMBERED, monotonic=monotonic
        )

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
            raise UserError(
                ngettext(
                    "genbot is already writing {n} answer for you — at most {most} at once; "
                    "send this again when one is done.",
                    "genbot is already writing {n} answers for you — at most {most} at once; "
                    "send this again when one is done.",
                    running,
                    most=self.max_concurrent,
                )
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
                ngettext(
                    "You asked for {n} answer in the last minute — the most genbot writes for "
                    "one person; try again in {wait} s.",
                    "You asked for {n} answers in the last minute — the most genbot writes for "
                    "one person; try again in {wait} s.",
                    self.per_minute,
                    wait=wait,
                )
            )

    async def check_budget(self, platform: str, user: User) -> None:
        """:class:`UserError` when ``user``'s tier has a chat token budget and they used it."""
        if self.tiers is None or self._spent is None or user.is_admin:
            return
        tier = self.tiers.tier_of(platform, user)
        if not tier.daily_chat_tokens:
            return
        spent = await self._spent(platform, user.id, tier.refill)
        if spent.tokens < tier.daily_chat_tokens:
            return
        figures = {
            "used": format_number(spent.tokens),
            "budget": format_number(tier.daily_chat_tokens),
            "tier": tier.name,
            "time": refill_time(spent.refills_at(tier.daily_chat_tokens, tokens=True)),
        }
        raise UserError(
            _(
                "You have used {used} of your {budget} chat tokens today — the chat budget of "
                "your tier **{tier}**; it refills at {time}.",
                **figures,
            )
            if tier.refill == "daily"
            else _(
                "You have used {used} of your {budget} chat tokens in the last 24 hours — the "
                "chat budget of your tier **{tier}**; it refills at {time}.",
                **figures,
            )
        )

    def check_model(self, platform: str, user: User, model: str) -> None:
        """:class:`UserError` when ``user``'s tier lists models and ``model`` is not one."""
        if self.tiers is None or user.is_admin:
            return
        tier = self.tiers.tier_of(platform, user)
        if tier.models and model not in tier.models:
            raise UserError(model_not_in_tier(tier, model))
