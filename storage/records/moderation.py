"""Moderation's records: a workspace's rule, and what an offence earned."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModerationRule:
    """A word or phrase (or, with ``pattern``, a regular expression) refused in prompts, and the
    category a refusal names."""

    category: str
    entry: str
    pattern: bool = False


@dataclass(frozen=True)
class Offence:
    """A refused prompt as counted: the user's ``count`` th offence of the UTC day and the end of
    the ban it earned (Unix seconds)."""

    count: int
    banned_until: float
