"""Where a Discord interaction comes from, read once when it arrives."""

from __future__ import annotations

from dataclasses import dataclass

from bot.kernel import Place, User


@dataclass(frozen=True)
class InteractionSource:
    """Where an interaction was made and by whom: its ``place``, its ``user``; ``hook_only``
    when genbot may answer only through the interaction (see
    :func:`~adapters.discord.translate.answers_by_hook_only`); ``allowed`` when genbot is
    enabled there (see :func:`~adapters.discord.translate.is_allowed`)."""

    place: Place
    user: User
    hook_only: bool
    allowed: bool
    locale: str | None = None
    """The language of the user's Discord client (the interaction's ``locale``: ``de``)."""
    place_locale: str | None = None
    """The guild's language (the interaction's ``guild_locale``); ``None`` outside a guild."""
