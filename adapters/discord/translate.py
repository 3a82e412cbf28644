"""Pure translations from discord.py objects into genbot's event model (the way out is
:class:`~adapters.discord.surface.DiscordSurface`'s)."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

import discord

from adapters.discord.interaction_source import InteractionSource
from bot.kernel import Attachment, Place, User, _

PLATFORM = "discord"
DM_WORKSPACE = "dm"


@dataclass
class InteractionContext:
    """What a surface needs to answer an interaction-born event (``Event.context``).

    ``placeholder`` is true while an ephemeral "thinking…" response awaits completion: the
    first ephemeral text replaces it; a public post elsewhere removes it.
    """

    interaction: discord.Interaction[Any]
    placeholder: bool = False
    hook_only: bool = False
    """genbot can answer only through the interaction here (it is not in the server or the
    chat): messages go out as the interaction's follow-ups, valid for 15 minutes."""


def answers_by_hook_only(interaction: discord.Interaction[Any]) -> bool:
    """Whether genbot may answer only through ``interaction``: a group DM or a DM between
    other people, or a server where only the user (not the server) added genbot."""
    if interaction.context.private_channel:
        return True
    return interaction.guild_id is not None and not interaction.is_guild_integration()


def place_of(channel: Any, guild_id: int | None) -> Place:
    """The :class:`Place` of a channel; threads map to their parent channel plus ``thread_id``."""
    if guild_id is None:
        return Place(PLATFORM, DM_WORKSPACE, str(channel.id), None, True)
    if isinstance(channel, discord.Thread):
        return Place(PLATFORM, str(guild_id), str(channel.parent_id), str(channel.id))
    return Place(PLATFORM, str(guild_id), str(channel.id))


def interaction_place(interaction: discord.Interaction[Any]) -> Place:
    channel: Any = interaction.channel or discord.Object(interaction.channel_id or 0)
    return place_of(channel, interaction.guild_id)


def user_of(user: discord.abc.User, admin_ids: Collection[int]) -> User:
    """The core's user; a guild member's roles (``@everyone``'s id is the guild's) go with it."""
    roles = (
        frozenset(str(role.id) for role in user.roles)
        if isinstance(user, discord.Member)
        else frozenset[str]()
    )
    return User(id=str(user.id), name=user.display_name, is_admin=user.id in admin_ids, roles=roles)


def source_of(
    interaction: discord.Interaction[Any],
    admin_ids: Collection[int],
    allowed_channel_ids: Collection[int],
) -> InteractionSource:
    """Where ``interaction`` was made and by whom, read at once."""
    place = interaction_place(interaction)
    guild_locale = interaction.guild_locale if interaction.guild_id is not None else None
    return InteractionSource(
        place,
        user_of(interaction.user, admin_ids),
        answers_by_hook_only(interaction),
        is_allowed(place, allowed_channel_ids),
        locale=interaction.locale.value,
        place_locale=None if guild_locale is None else guild_locale.value,
    )


def attachment_of(attachment: discord.Attachment) -> Attachment:
    return Attachment(
        filename=attachment.filename,
        url=attachment.url,
        content_type=attachment.content_type,
        size=attachment.size,
    )


def is_allowed(place: Place, allowed_channel_ids: Collection[int]) -> bool:
    """DMs are always allowed; guild channels (and their threads) when listed or none are."""
    return place.is_dm or not allowed_channel_ids or int(place.channel_id) in allowed_channel_ids


def not_allowed_text(allowed_channel_ids: Collection[int]) -> str:
    channels = ", ".join(f"<#{cid}>" for cid in list(allowed_channel_ids)[:10])
    return _(
        "genbot is not enabled in this channel. Use it in {channels} or in a DM.", channels=channels
    )


def strip_mention(text: str, user_id: int) -> str:
    """``text`` without mentions of ``user_id`` (the bot), trimmed."""
    return re.sub(rf"<@!?{user_id}>", "", text).strip()


def modal_values(data: Any) -> dict[str, str]:
    """Field id → value from a modal submission (action rows or labels around text inputs and
    select menus; a select gives its first chosen value, or "" when none)."""
    values: dict[str, str] = {}

    def walk(components: list[dict[str, Any]]) -> None:
        for component in components:
            walk(component.get("components", []))
            if "component" in component:
                walk([component["component"]])
            if "custom_id" in component and "value" in component:
                values[component["custom_id"]] = str(component["value"])
            elif "custom_id" in component and "values" in component and component.get("type") != 19:
                chosen = component["values"] or [""]
                values[component["custom_id"]] = str(chosen[0])

    walk(list((data or {}).get("components", [])))
    return values


def modal_attachments(data: Any) -> dict[str, tuple[Attachment, ...]]:
    """Field id → the files a modal submission's file uploads carry (from ``resolved``)."""
    resolved = ((data or {}).get("resolved") or {}).get("attachments") or {}
    files: dict[str, tuple[Attachment, ...]] = {}

    def walk(components: list[dict[str, Any]]) -> None:
        for component in components:
            walk(component.get("components", []))
            if "component" in component:
                walk([component["component"]])
            if component.get("type") == 19 and "custom_id" in component:
                chosen = [resolved.get(str(i)) for i in component.get("values", [])]
                files[component["custom_id"]] = tuple(
                    Attachment(
                        filename=str(found.get("filename", "image")),
                        url=str(found.get("url", "")),
                        content_type=found.get("content_type"),
                        size=found.get("size"),
                    )
                    for found in chosen
                    if found
                )

    walk(list((data or {}).get("components", [])))
    return files
