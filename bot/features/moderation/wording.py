"""What moderation tells users: a refusal names the rule's category, never the matched word."""

from __future__ import annotations

from bot.kernel import N_, _, format_clock, sentences
from storage import Ban, Offence

CHECK_FAILED_TEXT = N_(
    "genbot could not check this prompt against its rules just now, so it did not run it. "
    "Try again in a moment."
)
ORDINALS = {
    # Translators: an ordinal, as in "It is your 1st refused prompt today".
    1: N_("1st"),
    # Translators: an ordinal, as in "It is your 2nd refused prompt today".
    2: N_("2nd"),
    # Translators: an ordinal, as in "It is your 3rd refused prompt today".
    3: N_("3rd"),
}


def _clock_time(stamp: float) -> str:
    return format_clock(stamp)


def _ordinal(count: int) -> str:
    if count in ORDINALS:
        return _(ORDINALS[count])
    # Translators: an ordinal of 4 and more, as in "It is your 4th refused prompt today".
    return _("{count}th", count=count)


def refusal_text(
    category: str, offence: Offence | None, now: float, echo: str = "", document: str = ""
) -> str:
    """The refusal of a prompt matching a rule of ``category``; ``offence``: what it earned
    (None: nothing, as for an admin); ``echo``: the prompt, given back so nothing is lost;
    ``document``: the name of the attached document that matched (the refusal names it)."""
    if document:
        text = _(
            "Refused: the document {name} matches genbot's rules on **{category}**, so nothing "
            "was sent.",
            name=document,
            category=category,
        )
    else:
        text = _(
            "Refused: this matches genbot's rules on **{category}**, so nothing was run.",
            category=category,
        )
    if offence is not None and offence.banned_until > now:
        minutes = round((offence.banned_until - now) / 60)
        text = sentences(
            text,
            _(
                "It is your {ordinal} refused prompt today: genbot takes no prompts from you for "
                "{minutes} min, until {time}.",
                ordinal=_ordinal(offence.count),
                minutes=minutes,
                time=_clock_time(offence.banned_until),
            ),
        )
    if echo:
        fenced = echo.replace("```", "'''")
        text += "\n" + _("Your text, to edit:\n```\n{text}\n```", text=fenced)
    return text


def banned_text(ban: Ban) -> str:
    """The answer to a banned user's prompt, saying why: an admin banned them, or their
    prompts refused today earned it."""
    if ban.by_admin:
        return _(
            "genbot takes no prompts from you until {time}: an admin has banned you. Nothing "
            "was run.",
            time=_clock_time(ban.until),
        )
    return _(
        "genbot takes no prompts from you until {time}: your prompts were refused by its rules "
        "today. Nothing was run.",
        time=_clock_time(ban.until),
    )
