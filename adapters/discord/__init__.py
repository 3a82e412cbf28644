"""Discord adapter: discord.py translating Discord traffic to and from genbot's event model.

The package's names load discord.py when first used, so reading the settings
(:mod:`adapters.discord.settings`) costs nothing in a process that runs no Discord adapter.
"""

from __future__ import annotations

import importlib
import warnings
from typing import TYPE_CHECKING

# discord.py imports the stdlib audioop (voice support), deprecated since Python 3.11.
warnings.filterwarnings("ignore", "'audioop' is deprecated", DeprecationWarning)

if TYPE_CHECKING:
    from adapters.discord.adapter import DiscordAdapter, point_discord_py_at
    from adapters.discord.surface import DiscordSurface

__all__ = ["DiscordAdapter", "DiscordSurface", "point_discord_py_at"]
_HOMES = {
    "DiscordAdapter": "adapters.discord.adapter",
    "point_discord_py_at": "adapters.discord.adapter",
    "DiscordSurface": "adapters.discord.surface",
}


def __getattr__(name: str) -> object:
    if name not in _HOMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
