"""Discord's command mentions (``</settings:123>``): how a text names genbot's commands there.

A mention shows the command in the reader's own language (``/einstellungen`` to a German client)
and runs it when clicked. It needs the id Discord gave the command when genbot registered it:
global commands have one id everywhere, a guild's commands (``[discord] guild_ids``) one per
guild, so the ids are kept per guild.
"""

from __future__ import annotations

from collections.abc import Iterable

import discord

from bot.kernel import COMMANDS, CommandNames, Place

GLOBAL = ""
"""Where the ids of the commands registered for every guild and DM are kept."""


class CommandMentions:
    """The ids of genbot's registered slash commands, and the mentions they make."""

    def __init__(self) -> None:
        self._ids: dict[str, dict[str, int]] = {}

    def registered(
        self, guild_id: int | None, commands: Iterable[discord.app_commands.AppCommand]
    ) -> None:
        """Keep the ids Discord answered a registration with (``guild_id``: a guild's commands;
        ``None``: the global ones)."""
        self._ids[GLOBAL if guild_id is None else str(guild_id)] = {
            command.name: command.id
            for command in commands
            if command.type is discord.AppCommandType.chat_input
        }

    def names(self, place: Place) -> CommandNames:
        """Every catalogue command registered where ``place`` is, as its mention (a group's
        command with its group: ``</diffusion txt2img:123>``); none before registration."""
        ids = self._ids.get(place.workspace_id) or self._ids.get(GLOBAL) or {}
        mentions: dict[str, str] = {}
        for spec in COMMANDS:
            words = spec.name.replace(".", " ")
            command_id = ids.get(words.split()[0])
            if command_id is not None:
                mentions[spec.name] = f"</{words}:{command_id}>"
        return CommandNames(mentions=mentions)
