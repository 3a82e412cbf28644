"""Discord application commands built from the catalogue in :mod:`bot.kernel.commands`.

Each catalogue entry becomes an ``app_commands.Command`` whose callback signature is generated
from the entry's options (types, ranges, choices, descriptions, model autocomplete), so
discord.py syncs the right schema and hands the callback typed values. Dotted names become
subcommands of a group (``diffusion.txt2img`` → ``/diffusion txt2img``).
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Coroutine, Mapping, Sequence
from typing import Any, Optional

import discord
from discord import app_commands

from adapters.discord.translator import choice_name
from bot.kernel import COMMANDS, N_, CommandSpec, Offered, Option, completions

CommandCallback = Callable[[discord.Interaction[Any], str, dict[str, Any]], Awaitable[None]]
"""Receives the interaction, the dotted command name and the option values given."""

GROUP_DESCRIPTIONS = {
    "diffusion": N_("Diffusion images: text to image, image to image, upscale, controlnet"),
    "admin": N_("Admins: genbot's rules for this server"),
    "prefer": N_("Your saved options and prompt suffix for /imagine"),
}
GROUP_PERMISSIONS = {"admin": discord.Permissions(manage_guild=True)}
"""Who sees a group in a server's command list by default: ``/admin`` only members who may
manage the server (a server's admins can change this under Integrations). genbot still checks
``admin_ids`` on every use; this only keeps the group out of everyone else's list."""
_TYPES: dict[str, type] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "attachment": discord.Attachment,
}


OfferedNow = Callable[[], Mapping[Offered, Sequence[str]]]
"""The values pickers offer now, by list (:func:`bot.kernel.commands.offered`: the core's plan's
chat models, the diffusion models it knows)."""


SavedNow = Callable[[discord.Interaction[Any]], Awaitable[Sequence[str]]]
"""The names of the interacting user's saved options where they type (the core's
:class:`bot.kernel.SavedOptionChoices`)."""
Completer = Callable[
    [discord.Interaction[Any], str], Coroutine[Any, Any, list[app_commands.Choice[str]]]
]


def saved_completer(saved: SavedNow) -> Completer:
    """Autocomplete of a prompt: typing ``--`` offers the prompt completed with each of the
    user's saved options (:func:`bot.kernel.completions`)."""

    async def complete(
        interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        if not current.rpartition(" ")[2].startswith(("--", "—")):
            return []
        texts = completions(current, await saved(interaction))
        return [app_commands.Choice(name=text, value=text) for text in texts]

    return complete


def model_completer(
    offered: OfferedNow, listed: Offered
) -> Callable[[discord.Interaction[Any], str], Coroutine[Any, Any, list[app_commands.Choice[str]]]]:
    """Autocomplete of a model option: the offered models of the ``listed`` kind containing
    what the user typed (at most 25, Discord's limit)."""

    async def complete(
        interaction: discord.Interaction[Any], current: str
    ) -> list[app_commands.Choice[str]]:
        typed = current.strip().lower()
        models = [m for m in offered().get(listed, ()) if typed in m.lower()][:25]
        return [app_commands.Choice(name=m, value=m) for m in models]

    return complete


def _annotation(option: Option) -> Any:
    base: Any = _TYPES[option.type]
    if option.type in ("integer", "number") and (
        option.min_value is not None or option.max_value is not None
    ):
        low = None if option.min_value is None else base(option.min_value)
        high = None if option.max_value is None else base(option.max_value)
        base = app_commands.Range[base, low, high]
    return base if option.required else Optional[base]  # noqa: UP045


def _required(spec: CommandSpec, option: Option) -> bool:
    """Required on Discord: attachments a form can ask for later are not."""
    return option.required and not (spec.files_by_form and option.type == "attachment")


INSTALLS = app_commands.AppInstallationType(guild=True, user=True)
"""Servers can add genbot, and people can add it to their account (it then answers wherever
they use it, also in servers it is not a member of)."""
CONTEXTS = app_commands.AppCommandContext(guild=True, dm_channel=True, private_channel=True)
"""Commands work in servers, in DMs with genbot and in other DMs and group DMs."""


def _command(
    spec: CommandSpec,
    name: str,
    on_command: CommandCallback,
    offered: OfferedNow,
    saved: SavedNow,
    *,
    parent_group: bool = False,
) -> app_commands.Command[Any, ..., None]:
    async def callback(interaction: discord.Interaction[Any], **values: Any) -> None:
        await on_command(interaction, spec.name, values)

    parameters = [
        inspect.Parameter(
            "interaction", inspect.Parameter.POSITIONAL_OR_KEYWORD, annotation=discord.Interaction
        )
    ]
    for option in spec.options:
        parameters.append(
            inspect.Parameter(
                option.name,
                inspect.Parameter.KEYWORD_ONLY,
                annotation=_annotation(option),
                default=inspect.Parameter.empty if _required(spec, option) else None,
            )
        )
    callback.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    descriptions = {o.name: o.description[:100] for o in spec.options}
    if descriptions:
        app_commands.describe(**descriptions)(callback)
    choices = {
        o.name: [app_commands.Choice(name=choice_name(o.name, c), value=c) for c in o.choices[:25]]
        for o in spec.options
        if o.choices and o.autocomplete is None
    }
    if choices:
        app_commands.choices(**choices)(callback)
    completers: dict[str, Completer] = {
        o.name: model_completer(offered, o.autocomplete)
        for o in spec.options
        if o.autocomplete is not None
    }
    if spec.expands and spec.free_text is not None:
        completers[spec.free_text] = saved_completer(saved)
    if completers:
        app_commands.autocomplete(**completers)(callback)
    if parent_group:
        return app_commands.Command(
            name=name, description=spec.description[:100], callback=callback
        )
    return app_commands.Command(
        name=name,
        description=spec.description[:100],
        callback=callback,
        allowed_installs=INSTALLS,
        allowed_contexts=CONTEXTS,
    )


INFO_MENU = N_("Image info")
"""The message menu that shows a result's info (the core's ℹ️)."""


def info_menu(
    on_info: Callable[[discord.Interaction[Any], discord.Message], Awaitable[None]],
) -> app_commands.ContextMenu:
    """The "Image info" entry of a message's Apps menu, everywhere genbot's commands are."""

    async def callback(interaction: discord.Interaction[Any], message: discord.Message) -> None:
        await on_info(interaction, message)

    return app_commands.ContextMenu(
        name=INFO_MENU, callback=callback, allowed_installs=INSTALLS, allowed_contexts=CONTEXTS
    )


def build_commands(
    on_command: CommandCallback, offered: OfferedNow, saved: SavedNow
) -> list[app_commands.Command[Any, ..., None] | app_commands.Group]:
    """Every catalogue command, groups holding their subcommands, ready for a CommandTree."""
    built: list[app_commands.Command[Any, ..., None] | app_commands.Group] = []
    groups: dict[str, app_commands.Group] = {}
    for spec in COMMANDS:
        group_name, _, leaf = spec.name.rpartition(".")
        command = _command(spec, leaf, on_command, offered, saved, parent_group=bool(group_name))
        if not group_name:
            built.append(command)
            continue
        group = groups.get(group_name)
        if group is None:
            description = GROUP_DESCRIPTIONS.get(group_name, group_name)
            group = groups[group_name] = app_commands.Group(
                name=group_name,
                description=description,
                allowed_installs=INSTALLS,
                allowed_contexts=CONTEXTS,
                default_permissions=GROUP_PERMISSIONS.get(group_name),
            )
            built.append(group)
        group.add_command(command)
    return built
