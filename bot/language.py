"""Which language genbot speaks for an event: the user's for what only they read, the place's
for what everyone there reads.

The router decides, once per event (:func:`decide`), and speaks it around the event's handling
(:func:`bot.kernel.i18n.speaking`); feature code only calls ``_()``, and builds a message
posted for everyone in a place inside :func:`bot.kernel.i18n.publicly`.

- **Private** (ephemeral answers, DMs, a user's home, forms): the user's own choice
  (``/settings language``), else their platform's locale (Discord's interaction ``locale``,
  Slack's user locale, the browser's language or the playground's switch), else the place's
  language, else English.
- **Public** (a job's messages in a channel, which others read and press): the channel's
  language (``/settings language`` with ``scope channel``, admins), else the workspace's
  (``scope workspace``), else the platform's language of the place (a Discord guild's
  ``preferred_locale``), else the private language: in a DM, and in a place whose language
  nobody set (a Slack channel), the one who asked is the reader genbot knows.

A job stores the public language it was asked in (its parameters), so its result, delivered
later by the tracker (or after a restart), speaks the language chosen at submission.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from bot.kernel import LANGUAGES, Event, supported
from storage import SettingsReader

log = logging.getLogger(__name__)

AUTO = "auto"
"""``/settings language auto``: clear the user's choice (their platform's locale applies)."""
CACHE_SECONDS = 60.0
"""How long a process trusts the stored choices it read (another process's ``/settings
language`` shows here within this; this process's own at once)."""
CACHE_SIZE = 10_000


@dataclass(frozen=True)
class Stored:
    """The languages set with ``/settings language`` that apply to an event (None: unset)."""

    user: str | None = None
    channel: str | None = None
    workspace: str | None = None


@dataclass(frozen=True)
class Spoken:
    """The languages of an event: ``private`` for what only its user reads, ``public`` for
    what everyone in its place reads."""

    private: str
    public: str


def decide(event: Event, stored: Stored = Stored()) -> Spoken:
    """The languages genbot speaks for ``event`` (the rules of the module docstring)."""
    place = (
        _known(stored.channel)
        or _known(stored.workspace)
        or (None if event.place.is_dm else supported(event.place_locale))
    )
    private = _known(stored.user) or supported(event.locale) or place or LANGUAGES[0]
    public = private if event.place.is_dm else place or private
    return Spoken(private, public)


def _known(tag: str | None) -> str | None:
    return tag if tag in LANGUAGES else None


class LanguageChoices:
    """The languages set with ``/settings language``, read from the settings store with a
    bounded cache (one query per user and place per :data:`CACHE_SECONDS` at most)."""

    def __init__(
        self, settings: SettingsReader, *, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.settings = settings
        self.clock = clock
        self._cache: dict[tuple[str, str, str, str], tuple[float, Stored]] = {}

    async def stored(self, event: Event) -> Stored:
        """The choices that apply to ``event``'s user and place."""
        place = event.place
        key = (place.platform, event.user.id, place.channel_id, place.workspace_id)
        now = self.clock()
        cached = self._cache.get(key)
        if cached is not None and cached[0] > now:
            return cached[1]
        scopes = await self.settings.scopes(
            place.platform,
            user_id=event.user.id,
            channel_id=place.channel_id,
            workspace_id=place.workspace_id,
        )
        found = Stored(
            user=getattr(scopes.get("user"), "language", None),
            channel=getattr(scopes.get("channel"), "language", None),
            workspace=getattr(scopes.get("workspace"), "language", None),
        )
        self._cache.pop(key, None)
        self._cache[key] = (now + CACHE_SECONDS, found)
        while len(self._cache) > CACHE_SIZE:
            del self._cache[next(iter(self._cache))]
        return found

    def forget(self) -> None:
        """Drop what was read: a choice changed (``/settings language``)."""
        self._cache.clear()
