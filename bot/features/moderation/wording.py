"""What moderation tells users: a refusal names the rule's category, never the matched word."""

from __future__ import annotations

from datetime import UTC, datetime

from storage import Offence

CHECK_FAILED_TEXT = (
    "genbot could not check this prompt against its rules just now, so it did not run it. "
    "Try again in a moment."
)
ORDINALS = {1: "1st", 2: "2nd", 3: "3rd"}


def _clock_time(stamp: float) -> str:
    return datetime.fromtimestamp(stamp, UTC).strftime("%H:%M UTC")


def _ordinal(count: int) -> str:
    return ORDINALS.get(count, f"{count}th")


def refusal_text(category: str, offence: Offence | None, now: float, echo: str = "") -> str:
    """The refusal of a prompt matching a rule of ``category``; ``offence``: what it earned
    (None: nothing, as for an admin); ``echo``: the prompt, given back so nothing is lost."""
    text = f"Refused: this matches genbot's rules on **{category}**, so nothing was run."
    if offence is not None and offence.banned_until > now:
        minutes = round((offence.banned_until - now) / 60)
        text += (
            f" It is your {_ordinal(offence.count)} refused prompt today: genbot takes no "
            f"prompts from you for {minutes} min, until {_clock_time(offence.banned_until)}."
        )
    if echo:
        fenced = echo.replace("```", "'''")
        text += f"\nYour text, to edit:\n```\n{fenced}\n```"
    return text


def banned_text(until: float) -> str:
    """The answer to a banned user's prompt."""
    return (
        f"genbot takes no prompts from you until {_clock_time(until)}: your prompts were "
        "refused by its rules today. Nothing was run."
    )
