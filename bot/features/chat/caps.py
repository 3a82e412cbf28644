"""Per-user caps on chat answers, and what a user's tier allows them in chat.

A user may have at most ``[limits] max_concurrent_chats_per_user`` answers being written at
once and start at most ``chat_answers_per_minute_per_user`` in any minute (``0`` turns a cap
off; admins have none). A message, ``/chat`` or button press beyond a cap is refused at once —
the answer says which cap and when to try again — before anything is stored, posted or sent to
the provider. The answers at once are counted over every genbot process on the database
(:class:`storage.AnswerPlaces`: each holds a place, renewed while it is written and freed at its
end, so the place of a process that died frees itself within a lease); the answers a minute are
counted by each process.

A user's tier (:class:`Tiers`: :class:`bot.features.jobs.admission.Tiers`, wired by
``genbot/compose.py``) adds a budget of chat tokens, read from the shared ledger (so it holds
across processes), and the chat models it may use: a user
whose tokens in the tier's window reached ``daily_chat_tokens`` gets no new answer until they
refill (the answers being written when it was reached still count, so it can be overshot by
them), and a model outside ``models`` is refused.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
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
from storage import AnswerPlaces, Refill, Spent, StorageError
from storage.queries.answer_places import LEASE_SECONDS

MINUTE = 60.0
USERS_REMEMBERED = 4096
RENEW_EVERY = LEASE_SECONDS / 4
"""Seconds between two renewals of an answer's place while it is written."""

log = logging.getLogger(__name__)


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
        places: AnswerPlaces | None = None,
    ) -> None:
        """``tiers`` and ``spent`` (the ledger's :meth:`storage.UsageLedger.spent`) add the
        tiers' chat budgets and models; ``places`` (the store's) counts the answers at once,
        needed with ``max_concurrent``."""
        if max_concurrent and places is None:
            raise ValueError("a cap of chat answers at once needs the store's answer places")
        self.max_concurrent = max_concurrent
        self.per_minute = per_minute
        self.tiers = tiers
        self._spent = spent
        self._places = places
        self._started = RateWindow(
            per_minute, MINUTE, max_keys=USERS_REMEMBERED, monotonic=monotonic
        )

    @contextlib.asynccontextmanager
    async def answering(self, platform: str, user: User) -> AsyncIterator[None]:
        """Count one answer for ``user`` while the block runs, over every process;
        :class:`UserError` when a cap refuses it."""
        if user.is_admin:
            yield
            return
        slot = await self._take_place(platform, user)
        if slot is None:
            self._start(f"{platform}\x1f{user.id}")
            yield
            return
        renewing: asyncio.Task[None] | None = None
        try:
            self._start(f"{platform}\x1f{user.id}")
            renewing = asyncio.create_task(self._renew(platform, user, slot))
            yield
        finally:
            if renewing is not None:
                renewing.cancel()
            await self._end(platform, user, slot)

    async def _take_place(self, platform: str, user: User) -> int | None:
        """The slot of the place taken for ``user``'s answer (None without a cap), or
        :class:`UserError` when they have none left."""
        if not self.max_concurrent or self._places is None:
            return None
        place = await self._places.answer_starts(platform, user.id, self.max_concurrent)
        if place.slot is None:
            raise UserError(
                ngettext(
                    "genbot is already writing {n} answer for you — at most {most} at once; "
                    "send this again when one is done.",
                    "genbot is already writing {n} answers for you — at most {most} at once; "
                    "send this again when one is done.",
                    place.running,
                    most=self.max_concurrent,
                )
            )
        return place.slot

    async def _renew(self, platform: str, user: User, slot: int) -> None:
        assert self._places is not None
        while True:
            await asyncio.sleep(RENEW_EVERY)
            try:
                await self._places.answer_goes_on(platform, user.id, slot)
            except StorageError as error:
                log.warning("could not renew a chat answer's place: %s", error)

    async def _end(self, platform: str, user: User, slot: int) -> None:
        """Free the answer's place (when the database fails, it frees itself at its lease's
        end)."""
        assert self._places is not None
        try:
            await asyncio.shield(self._places.answer_ended(platform, user.id, slot))
        except StorageError as error:
            log.warning("could not free a chat answer's place: %s", error)

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
