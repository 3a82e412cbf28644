"""Moderation: word and pattern rules (global in ``[moderation]``, per workspace by admins),
checked on every prompt and chat message before any provider call, with offences that escalate
into temporary bans. Matching: :mod:`~bot.features.moderation.folding` and
:mod:`~bot.features.moderation.rules`; the check: :mod:`~bot.features.moderation.screen`; a
workspace's own rules: :mod:`~bot.features.moderation.admin`."""

from bot.features.moderation.admin import ModerationAdmin
from bot.features.moderation.model_check import ModelCheck
from bot.features.moderation.rules import BadPattern, Match, RuleSet
from bot.features.moderation.screen import Judge, Moderation

__all__ = [
    "BadPattern",
    "Judge",
    "Match",
    "ModelCheck",
    "Moderation",
    "ModerationAdmin",
    "RuleSet",
]
