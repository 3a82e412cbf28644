"""Saved options and the suffix (``/prefer``): what a user's ``--name`` in a prompt stands for
(:mod:`~bot.features.prefer.command`, :mod:`~bot.features.prefer.expansion`)."""

from bot.features.prefer.command import PreferCommands
from bot.features.prefer.expansion import SUFFIX_KEY, SavedExpansion

__all__ = ["SUFFIX_KEY", "PreferCommands", "SavedExpansion"]
