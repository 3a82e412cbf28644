"""What ``/jobs`` searches for (:class:`ArchiveQuery`): read from the command's options, and
carried in an ``Older ▶`` button's ref to the next page.

- **text**: the words of the prompt (letters and digits; every one must be there, in any case);
- **type**: ``imagine`` (grids: imagine, reroll, variations, zoom, pan, Vary (Region)),
  ``upscale``, ``describe``, ``blend`` or ``diffusion``;
- **channel**: a channel mention (``<#C1>``, ``<#C1|general>``), its id, or ``here``;
- **date** (UTC): a day ``2026-11-29``, a month ``2026-11``, a year ``2026``, ``today``,
  ``yesterday``, or a range ``2026-11-01..2026-11-15`` (both days included);
- **scope**: ``me`` (default) or ``workspace`` (admins: everyone's jobs in the workspace,
  outside DMs).
"""

from __future__ import annotations

import calendar
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Final

from bot.kernel import N_, Event, OptionValue, UserError, _, sentences
from storage import JobFamily, JobSearch, JobType

ARCHIVE_TYPES: Final[Mapping[str, tuple[tuple[JobType, ...], JobFamily | None]]] = {
    "imagine": (("imagine", "reroll", "variation", "inpaint", "outpaint", "pan"), "task"),
    "upscale": (("upscale",), None),
    "describe": (("describe",), "task"),
    "blend": (("blend",), "task"),
    "diffusion": ((), "diffusion"),
}
"""Each ``type`` filter: the job types and family it finds."""
SCOPES: Final = ("me", "workspace")
SEPARATOR: Final = "~"
"""Between the parts of a page's ref (never in a word, a channel id, a date or a job id)."""
MOST_WORDS: Final = 8
DAY_SECONDS: Final = 86400.0
_WORD: Final = re.compile(r"[^\W_]+")
_CHANNEL: Final = re.compile(r"^<#([^>|]+)(?:\|[^>]*)?>$")
_DAY: Final = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
# Translators: today and yesterday are words the date filter takes: keep them in English.
DATE_HELP: Final = N_(
    "Give a date as 2026-11-29, a month as 2026-11, a year as 2026, today, yesterday, "
    "or a range such as 2026-11-01..2026-11-15 (UTC)."
)


def words_of(text: str) -> tuple[str, ...]:
    """The words a search looks for in prompts: lower-case letters and digits, in order,
    without repeats (at most :data:`MOST_WORDS`)."""
    words = dict.fromkeys(word.lower() for word in _WORD.findall(text))
    return tuple(words)[:MOST_WORDS]


def channel_of(value: str, here: str) -> str:
    """The channel id a ``channel`` filter names (``here``: the current channel's)."""
    value = value.strip().removeprefix("#")
    if value.lower() == "here":
        return here
    mention = _CHANNEL.match(value.strip())
    channel = mention.group(1) if mention else value
    if not channel or not channel.isprintable() or any(c in channel for c in f" {SEPARATOR}<>|"):
        raise UserError(
            _("`{value}` is not a channel: mention it (#channel) or say `here`.", value=value)
        )
    return channel


def _day(text: str, last: bool) -> date:
    if not _DAY.match(text):
        raise UserError(sentences(_("`{text}` is not a date.", text=text), _(DATE_HELP)))
    parts = [int(part) for part in text.split("-")]
    try:
        if len(parts) == 3:
            return date(parts[0], parts[1], parts[2])
        if len(parts) == 2:
            days = calendar.monthrange(parts[0], parts[1])[1] if last else 1
            return date(parts[0], parts[1], days)
        return date(parts[0], 12, 31) if last else date(parts[0], 1, 1)
    except ValueError:
        raise UserError(sentences(_("`{text}` is not a date.", text=text), _(DATE_HELP))) from None


def date_range(text: str, now: float) -> tuple[float, float]:
    """``[since, until)`` in seconds for a ``date`` filter (see the module docstring); any
    day of the years 1 to 9999 (``until`` of the last one is past what a date can hold, so it is
    counted in seconds)."""
    text = text.strip().lower()
    today = datetime.fromtimestamp(now, UTC).date()
    named = {"today": today, "yesterday": today - timedelta(days=1)}
    first, sep, second = text.partition("..")
    start = named.get(first) or _day(first, last=False)
    end = named.get(second or first) or _day(second or first, last=True)
    if sep and not second:
        raise UserError(sentences(_("`{text}` is not a range.", text=text), _(DATE_HELP)))
    if end < start:
        raise UserError(_("`{text}` ends before it starts.", text=text))

    def seconds(day: date) -> float:
        return datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp()

    return seconds(start), seconds(end) + DAY_SECONDS


@dataclass(frozen=True)
class ArchiveQuery:
    """One archive search as its user asked it (see the module docstring); ``date`` is kept
    as they wrote it."""

    words: tuple[str, ...] = ()
    type: str = ""
    channel: str = ""
    date: str = ""
    workspace: bool = False

    @classmethod
    def of(cls, event: Event, options: Mapping[str, OptionValue], now: float) -> ArchiveQuery:
        """The query ``/jobs`` (or the playground's gallery) asks for; :class:`UserError` for a
        filter genbot cannot use."""

        def text(name: str) -> str:
            value = options.get(name)
            return "" if value is None else str(value).strip()

        kind = text("type").lower()
        if kind and kind not in ARCHIVE_TYPES:
            raise UserError(
                _(
                    "`{kind}` is not a type: use one of {types}.",
                    kind=kind,
                    types=", ".join(ARCHIVE_TYPES),
                )
            )
        scope = text("scope").lower() or "me"
        if scope not in SCOPES:
            raise UserError(_("The scope is `me` or `workspace`."))
        channel, when = text("channel"), text("date").replace(" ", "")
        if when:
            date_range(when, now)
        query = cls(
            words=words_of(text("text")),
            type=kind,
            channel=channel_of(channel, event.place.channel_id) if channel else "",
            date=when,
            workspace=scope == "workspace",
        )
        query.check(event)
        return query

    def filters(self, channel: Callable[[str], str]) -> tuple[str, ...]:
        """The filters of this query, each a phrase of its own ("Words: “fox”", "Type:
        upscale"), the channel written by ``channel`` (from its id); none when none is set."""
        # Translators: the filters of a search, listed under its heading ("Search: Words: “fox”
        # · Type: upscale · Channel: #art · Date: 2026-11"); {date} is as the user wrote it.
        found = (
            _("Words: “{words}”", words=" ".join(self.words)) if self.words else "",
            _("Type: {type}", type=self.type) if self.type else "",
            _("Channel: {channel}", channel=channel(self.channel)) if self.channel else "",
            _("Date: {date}", date=self.date) if self.date else "",
        )
        return tuple(phrase for phrase in found if phrase)

    def check(self, event: Event) -> None:
        """Refuse a workspace search to anyone but an admin in one of its channels."""
        if self.workspace and not event.user.is_admin:
            raise UserError(_("Only genbot admins can search everyone's jobs in the workspace."))
        if self.workspace and event.place.is_dm:
            raise UserError(_("Search the workspace's jobs from one of its channels."))

    def search(self, event: Event, now: float, after: str | None = None) -> JobSearch:
        """The storage search for this query, for ``event``'s user where they are: their own
        jobs in this workspace (in a DM with genbot: in every workspace, as their buttons
        reach them there), or, for a workspace search, everyone's outside DMs."""
        self.check(event)
        place = event.place
        types, family = ARCHIVE_TYPES.get(self.type, ((), None))
        since, until = date_range(self.date, now) if self.date else (None, None)
        return JobSearch(
            platform=place.platform,
            requester_id=None if self.workspace else event.user.id,
            workspace_id=None if place.is_dm and not self.workspace else place.workspace_id,
            words=self.words,
            types=types,
            family=family,
            channel_id=self.channel or None,
            since=since,
            until=until,
            after=after,
        )

    def ref(self, after: str) -> str:
        """A page's ref: the last job shown, then this query."""
        scope = "w" if self.workspace else ""
        parts = (after, self.type, self.channel, self.date, scope, " ".join(self.words))
        return SEPARATOR.join(parts)

    @classmethod
    def from_ref(cls, detail: str) -> ArchiveQuery:
        """The query of a page's ref (what follows its job id); :class:`UserError` when it is
        not one."""
        parts = detail.split(SEPARATOR)
        if len(parts) != 5 or (parts[0] and parts[0] not in ARCHIVE_TYPES):
            raise UserError(_("This button is no longer supported."))
        kind, channel, when, scope, words = parts
        return cls(words_of(words), kind, channel, when, scope == "w")
