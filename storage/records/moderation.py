"""Moderation's records: a workspace's rule, what an offence earned, and a running ban."""

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


@dataclass(frozen=True)
class Ban:
    """A user's running ban: when it ends (Unix seconds), and whether an admin set it (else the
    user's refused prompts earned it)."""

    until: float
    by_admin: bool
