"""Showing a user that their request waits for the provider's rate limit.

A :class:`ShownWait` is the observer a flow passes to :func:`bot.api.ratelimit.observe_waits`:
each report (queue position, seconds left) becomes a text written in the background through the
flow's own ``write`` (edit the job's progress message, post or edit a chat notice). Writes are
coalesced (only the newest text is written) and never block the waiting call; waits too short
to notice are not shown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from bot.api.errors import rounded_wait
from bot.api.ratelimit import Wait
from bot.kernel import _, ngettext

log = logging.getLogger(__name__)

SHOW_WAITS_FROM_SECONDS = 1.0
CLOSE_TIMEOUT = 5.0


def about(seconds: float) -> str:
    """A wait in words, in the language spoken: ``about 40 s``, ``about 3 min``, ``about 2 h``
    (:func:`bot.api.errors.about`'s rounding)."""
    amount, unit = rounded_wait(seconds)
    # Translators: a wait, put into sentences such as "trying again in {wait}".
    if unit == "s":
        return _("about {amount} s", amount=amount)
    if unit == "min":
        return _("about {amount} min", amount=amount)
    return _("about {amount} h", amount=amount)


def wait_text(wait: Wait) -> str:
    """``queued, 3 ahead of you (about 40 s)`` or ``the provider is rate-limiting; trying
    again in about 20 s``."""
    if wait.ahead > 0:
        if wait.seconds is not None:
            return ngettext(
                "queued for the provider, {n} ahead of you ({wait})",
                "queued for the provider, {n} ahead of you ({wait})",
                wait.ahead,
                wait=about(wait.seconds),
            )
        return ngettext(
            "queued for the provider, {n} ahead of you",
            "queued for the provider, {n} ahead of you",
            wait.ahead,
        )
    if wait.seconds is None:
        return _("the provider is rate-limiting; waiting for it")
    return _("the provider is rate-limiting; trying again in {wait}", wait=about(wait.seconds))


class ShownWait:
    """Writes each reported wait with ``write`` (see the module docstring); :meth:`close` when
    the call is done."""

    def __init__(self, write: Callable[[str], Awaitable[object]]) -> None:
        self._write = write
        self._latest: str | None = None
        self._task: asyncio.Task[None] | None = None
        self.shown = False
        self.waited = False

    def __call__(self, wait: Wait) -> None:
        if wait.ahead == 0 and (wait.seconds or 0.0) < SHOW_WAITS_FROM_SECONDS:
            return
        self.waited = True
        self._latest = wait_text(wait)
        if self._task is None or self._task.done():
            self._task = asyncio.create_task(self._run(), name="genbot-shown-wait")

    async def _run(self) -> None:
        while self._latest is not None:
            text, self._latest = self._latest, None
            try:
                await self._write(text)
                self.shown = True
            except Exception as error:
                log.warning("could not show a rate-limit wait: %r", error)

    async def close(self) -> None:
        """Let the last write land (bounded), then stop."""
        task = self._task
        if task is None:
            return
        try:
            async with asyncio.timeout(CLOSE_TIMEOUT):
                await asyncio.shield(task)
        except TimeoutError:
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await task
