"""Discord adapter: discord.py translating Discord traffic to and from genbot's event model."""

import warnings

with warnings.catch_warnings():
    # discord.py imports the stdlib audioop (voice support), deprecated since Python 3.11.
    warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)
    import discord  # noqa: F401

from adapters.discord.adapter import DiscordAdapter, point_discord_py_at
from adapters.discord.surface import DiscordSurface

__all__ = ["DiscordAdapter", "DiscordSurface", "point_discord_py_at"]
