"""Showing that genbot is working: the platform's status line where it has one (Slack's
"genbot is thinking…" in a thread), else its typing indicator while genbot thinks.

Each :func:`show_status` is matched by one :func:`end_status` of the same status (an answer
thinks, a job draws; both can overlap in one thread). Best effort: a platform that refuses or
rate-limits the status changes nothing else.
"""

from __future__ import annotations

import logging

from bot.kernel import Event, Place, RateLimited, ShowsStatus, Surface, SurfaceError, WorkStatus

log = logging.getLogger(__name__)


async def show_status(
    surface: Surface, place: Place, status: WorkStatus, *, origin: Event | None = None
) -> None:
    """Show that genbot is ``status`` (thinking, drawing) in ``place`` for ``origin``."""
    try:
        if isinstance(surface, ShowsStatus):
            await surface.show_status(place, status, origin=origin)
        elif status == "thinking":
            await surface.typing(place)
    except (RateLimited, SurfaceError) as error:
        log.info("could not show %s in %s: %s", status, place, error)


async def end_status(
    surface: Surface, place: Place, status: WorkStatus, *, origin: Event | None = None
) -> None:
    """Genbot is no longer ``status`` in ``place`` (where the platform shows it)."""
    if not isinstance(surface, ShowsStatus):
        return
    try:
        await surface.end_status(place, status, origin=origin)
    except (RateLimited, SurfaceError) as error:
        log.info("could not end %s in %s: %s", status, place, error)
