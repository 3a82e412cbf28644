"""Platform adapters: translators between chat platforms and genbot's event model.

Every adapter is an :class:`Adapter`: built from its settings, it offers the core its
:attr:`~Adapter.surface` at once, and from :meth:`~Adapter.start` on submits the events it
translates to the intake genbot's router gives it (:class:`bot.kernel.events.EventSink`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Protocol

from bot.kernel import EventRouter, Surface

FatalHandler = Callable[[BaseException], None]
"""Told, once, why a started adapter's connection ended for good (it no longer hears its
platform, so the process should stop)."""


def log_fatal(error: BaseException) -> None:
    """The default :data:`FatalHandler`: an ERROR line."""
    logging.getLogger("genbot.adapters").error("an adapter no longer hears its platform: %s", error)


class AdapterStartError(Exception):
    """An adapter could not start for a reason the operator must fix (a refused token, a
    missing intent, an unreachable endpoint). ``str(error)`` is one line fit to show as is."""


class Adapter(Protocol):
    """What every platform adapter offers the composition root."""

    @property
    def surface(self) -> Surface:
        """How the core answers on this platform (usable before :meth:`start`)."""
        ...

    async def connected(self) -> bool:
        """Whether the adapter hears its platform now (for readiness)."""
        ...

    async def start(self, router: EventRouter, on_fatal: FatalHandler) -> None:
        """Connect and submit every event to the intake ``router`` gives; ``on_fatal`` hears
        when the connection later ends for good. :class:`AdapterStartError` says what the
        operator must fix."""
        ...

    async def stop(self) -> None:
        """Take no more events, let running ones finish (bounded) and disconnect."""
        ...


__all__ = ["Adapter", "AdapterStartError", "FatalHandler", "log_fatal"]
